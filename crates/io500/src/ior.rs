//! The data phases (ior-easy, ior-hard): IOR's access patterns through
//! the backend, on every task of a communicator. A write phase is
//! stonewalled with IO500's wear-out rule: each task stops at the wall,
//! then every task writes on to the count the furthest one reached, so
//! that the file layout is complete and the read phase knows it exactly.

use crate::config::HARD_TRANSFER;
use crate::failure::first_failure;
use iolab_backend::{c_path, Backend, Handle, OpenOptions};
use iolab_comm::{Comm, CommExt};
use iolab_core::clock::wall_ns;
use iolab_core::random::scramble;
use iolab_core::Failure;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which IOR pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// ior-easy: `block_bytes` per task in `transfer_bytes` transfers.
    Easy {
        /// Bytes per transfer.
        transfer_bytes: u64,
        /// Bytes per task.
        block_bytes: u64,
        /// A file per task (else one shared file, a block per task).
        file_per_proc: bool,
        /// A directory per task for its file.
        unique_dir: bool,
    },
    /// ior-hard: one shared file; segment s of task t at
    /// `(s * tasks + t) * 47008`.
    Hard {
        /// Segments per task.
        segments: u64,
    },
}

/// One data phase to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorSpec {
    /// The phase's directory (`<datadir>/ior-easy`).
    pub dir: PathBuf,
    /// The access pattern.
    pub pattern: Pattern,
    /// Stonewall of the write phase, seconds (0: none).
    pub stonewall_s: u64,
    /// Readers shift by this many tasks (IOR's -C: read what another
    /// node wrote); the threads of one process.
    pub reorder_shift: usize,
    /// Seed of the written data.
    pub seed: u64,
}

/// What a data phase did, over all tasks (every task gets the same).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IorResult {
    /// Bytes moved by all tasks, as the backend returned them.
    pub bytes: u64,
    /// Transfers each task made (after the wear-out, the same for all).
    pub transfers_per_task: u64,
    /// Bytes per transfer.
    pub transfer_bytes: u64,
    /// Latest end minus earliest start, seconds.
    pub elapsed_s: f64,
    /// Write phases: the size of the phase's files as the backend's stat
    /// reports them once every task closed its file (0 for reads).
    pub file_bytes: u64,
    /// Whether the stonewall fired in a task.
    pub stonewall_hit: bool,
    /// Fewest transfers a task had made when it stopped at the wall.
    pub min_at_wall: u64,
    /// The error of a task that failed, if any.
    pub failure: Option<Failure>,
    /// A stop was requested (Ctrl-C) during the phase.
    pub interrupted: bool,
}

impl IorSpec {
    fn transfer(&self) -> u64 {
        match self.pattern {
            Pattern::Easy { transfer_bytes, .. } => transfer_bytes,
            Pattern::Hard { .. } => HARD_TRANSFER,
        }
    }

    fn max_transfers(&self) -> u64 {
        match self.pattern {
            Pattern::Easy {
                transfer_bytes,
                block_bytes,
                ..
            } => block_bytes / transfer_bytes,
            Pattern::Hard { segments } => segments,
        }
    }

    fn shared(&self) -> bool {
        !matches!(
            self.pattern,
            Pattern::Easy {
                file_per_proc: true,
                ..
            }
        )
    }

    /// The directory a task's file sits in (IOR's -u: one per task).
    pub fn task_dir(&self, task: usize) -> PathBuf {
        match self.pattern {
            Pattern::Easy {
                unique_dir: true, ..
            } => self.dir.join(task.to_string()),
            _ => self.dir.clone(),
        }
    }

    /// The file task `task` writes (IOR's names).
    pub fn file_of(&self, task: usize) -> PathBuf {
        match self.pattern {
            Pattern::Easy {
                file_per_proc: true,
                ..
            } => self.task_dir(task).join(format!("ior_file_easy.{task:08}")),
            Pattern::Easy { .. } => self.dir.join("ior_file_easy"),
            Pattern::Hard { .. } => self.dir.join("file"),
        }
    }

    /// Offset of transfer `i` of task `task` among `tasks`.
    #[inline]
    fn offset(&self, i: u64, task: u64, tasks: u64) -> u64 {
        match self.pattern {
            Pattern::Easy {
                transfer_bytes,
                file_per_proc: true,
                ..
            } => i * transfer_bytes,
            Pattern::Easy {
                transfer_bytes,
                block_bytes,
                ..
            } => task * block_bytes + i * transfer_bytes,
            Pattern::Hard { .. } => (i * tasks + task) * HARD_TRANSFER,
        }
    }

    /// Every file the phase may make, for `tasks` tasks.
    pub fn files(&self, tasks: usize) -> Vec<PathBuf> {
        match self.shared() {
            true => vec![self.file_of(0)],
            false => (0..tasks).map(|t| self.file_of(t)).collect(),
        }
    }
}

/// Per-task figures exchanged at the end of a phase.
#[derive(Default, Clone, Copy)]
struct TaskFigures {
    bytes: u64,
    file_bytes: u64,
    start_ns: u64,
    end_ns: u64,
    at_wall: u64,
    hit: bool,
    failed: bool,
    interrupted: bool,
}

impl TaskFigures {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(43);
        for x in [
            self.bytes,
            self.start_ns,
            self.end_ns,
            self.at_wall,
            self.file_bytes,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&[self.hit as u8, self.failed as u8, self.interrupted as u8]);
        v
    }

    fn decode(b: &[u8]) -> TaskFigures {
        let u = |i: usize| {
            b.get(i * 8..i * 8 + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_le_bytes)
                .unwrap_or(0)
        };
        let flag = |i: usize| b.get(40 + i) == Some(&1);
        TaskFigures {
            bytes: u(0),
            file_bytes: u(4),
            start_ns: u(1),
            end_ns: u(2),
            at_wall: u(3),
            hit: flag(0),
            failed: flag(1),
            interrupted: flag(2),
        }
    }
}

/// A task's state through a phase: the first error stops its I/O, but
/// it still takes part in every collective so that no task waits for it.
struct TaskRun<'a> {
    be: &'a dyn Backend,
    fig: TaskFigures,
    failure: Option<Failure>,
}

impl TaskRun<'_> {
    fn fail(&mut self, op: &str, path: &std::path::Path, e: &std::io::Error) {
        if self.failure.is_none() {
            self.failure = Some(Failure::io(op, Some(path.display().to_string()), e));
            self.fig.failed = true;
        }
    }

    fn ok(&self) -> bool {
        self.failure.is_none()
    }
}

/// Waits for every task, then starts the phase's clock; returns the
/// wall-clock time of its stonewall (`u64::MAX` without one).
fn start(comm: &dyn Comm, run: &mut TaskRun<'_>, spec: &IorSpec) -> u64 {
    comm.barrier();
    run.fig.start_ns = wall_ns();
    match spec.stonewall_s {
        0 => u64::MAX,
        s => run.fig.start_ns.saturating_add(s * 1_000_000_000),
    }
}

/// Runs the write phase on this task; every task returns the same result.
pub fn write(comm: &dyn Comm, be: &dyn Backend, spec: &IorSpec) -> IorResult {
    let (task, tasks) = (comm.task(), comm.tasks());
    let mut run = TaskRun {
        be,
        fig: TaskFigures::default(),
        failure: None,
    };
    let path = spec.file_of(task);
    let handle = open_for_write(comm, &mut run, spec, &path);
    let mut buf = vec![0u8; spec.transfer() as usize];
    scramble(&mut buf, spec.seed ^ task as u64);
    let wall_ns_at = start(comm, &mut run, spec);
    let mut done = 0;
    if let Some(h) = &handle {
        done = write_until(
            &mut run,
            spec,
            h,
            &buf,
            (0, spec.max_transfers()),
            wall_ns_at,
            &path,
            (task as u64, tasks as u64),
        );
    }
    run.fig.at_wall = done;
    // IO500's wear-out: everybody writes on to the furthest count.
    let target = comm.max_u64(done);
    if let (Some(h), true) = (&handle, run.ok()) {
        write_until(
            &mut run,
            spec,
            h,
            &buf,
            (done, target),
            u64::MAX,
            &path,
            (task as u64, tasks as u64),
        );
    }
    if let Some(h) = handle {
        finish_file(&mut run, h, &path, true);
    }
    run.fig.end_ns = wall_ns();
    // Every file is closed once all tasks pass here: their sizes are final.
    comm.barrier();
    if !spec.shared() || task == 0 {
        run.fig.file_bytes = c_path(&path)
            .and_then(|c| be.stat(&c))
            .map(|s| s.size)
            .unwrap_or(0);
    }
    gather(comm, run, spec.transfer(), target)
}

/// Opens (creating) the file a task writes; shared files are created
/// by task 0 before the others open them.
fn open_for_write(
    comm: &dyn Comm,
    run: &mut TaskRun,
    spec: &IorSpec,
    path: &std::path::Path,
) -> Option<Handle> {
    let task = comm.task();
    if let Pattern::Easy {
        unique_dir: true,
        file_per_proc: true,
        ..
    } = spec.pattern
    {
        let dir = spec.task_dir(task);
        if let Err(e) = c_path(&dir).and_then(|c| run.be.mkdir(&c, 0o755)) {
            run.fail("mkdir", &dir, &e);
        }
    }
    let creator = !spec.shared() || task == 0;
    let mut h = None;
    if creator && run.ok() {
        match c_path(path).and_then(|c| run.be.open(&c, OpenOptions::create_new())) {
            Ok(x) => h = Some(x),
            Err(e) => run.fail("create", path, &e),
        }
    }
    if spec.shared() {
        comm.barrier();
        if task != 0 && run.ok() {
            match c_path(path).and_then(|c| run.be.open(&c, OpenOptions::write())) {
                Ok(x) => h = Some(x),
                Err(e) => run.fail("open", path, &e),
            }
        }
    }
    h
}

/// Writes transfers `from..to` until the wall; returns the count done.
#[allow(clippy::too_many_arguments)]
fn write_until(
    run: &mut TaskRun,
    spec: &IorSpec,
    h: &Handle,
    buf: &[u8],
    (from, to): (u64, u64),
    wall_at_ns: u64,
    path: &std::path::Path,
    (task, tasks): (u64, u64),
) -> u64 {
    let mut i = from;
    while i < to {
        if iolab_core::stop::requested() {
            run.fig.interrupted = true;
            break;
        }
        let off = spec.offset(i, task, tasks);
        if let Err(e) = write_all(run.be, h, buf, off) {
            run.fail("write", path, &e);
            break;
        }
        run.fig.bytes += buf.len() as u64;
        i += 1;
        if wall_ns() >= wall_at_ns {
            run.fig.hit = true;
            break;
        }
    }
    i
}

fn write_all(be: &dyn Backend, h: &Handle, mut buf: &[u8], mut off: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = be.write_at(h, buf, off)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                "the backend wrote 0 bytes",
            ));
        }
        buf = &buf[n..];
        off += n as u64;
    }
    Ok(())
}

fn finish_file(run: &mut TaskRun, h: Handle, path: &std::path::Path, sync: bool) {
    // IOR's -e: fsync before close, so the data is on storage in the time.
    if sync && run.ok() {
        if let Err(e) = run.be.fsync(&h) {
            run.fail("fsync", path, &e);
        }
    }
    if let Err(e) = run.be.close(h) {
        run.fail("close", path, &e);
    }
}

fn gather(comm: &dyn Comm, run: TaskRun, transfer: u64, target: u64) -> IorResult {
    let all = comm.all_gather(&run.fig.encode());
    let figs: Vec<TaskFigures> = all.iter().map(|b| TaskFigures::decode(b)).collect();
    let any_failed = figs.iter().any(|f| f.failed);
    let failure = match any_failed {
        false => None,
        true => first_failure(comm, run.failure),
    };
    let start = figs.iter().map(|f| f.start_ns).min().unwrap_or(0);
    let end = figs.iter().map(|f| f.end_ns).max().unwrap_or(0);
    IorResult {
        bytes: figs.iter().map(|f| f.bytes).sum(),
        file_bytes: figs.iter().map(|f| f.file_bytes).sum(),
        transfers_per_task: target,
        transfer_bytes: transfer,
        elapsed_s: end.saturating_sub(start) as f64 / 1e9,
        stonewall_hit: figs.iter().any(|f| f.hit),
        min_at_wall: figs.iter().map(|f| f.at_wall).min().unwrap_or(0),
        failure,
        interrupted: figs.iter().any(|f| f.interrupted),
    }
}

/// A read phase's start for `task`: the file that task
/// `(task + reorder_shift) % tasks` wrote, opened for reading (a failure
/// to open is the run's failure, and there is no handle).
fn open_source<'a>(
    be: &'a dyn Backend,
    spec: &IorSpec,
    task: usize,
    tasks: usize,
) -> (TaskRun<'a>, usize, std::path::PathBuf, Option<Handle>) {
    let source = (task + spec.reorder_shift) % tasks.max(1);
    let mut run = TaskRun {
        be,
        fig: TaskFigures::default(),
        failure: None,
    };
    let path = spec.file_of(source);
    let handle = match c_path(&path).and_then(|c| be.open(&c, OpenOptions::read())) {
        Ok(h) => Some(h),
        Err(e) => {
            run.fail("open", &path, &e);
            None
        }
    };
    (run, source, path, handle)
}

/// Runs the read phase of what `write` wrote (`transfers_per_task`
/// each); task t reads what task `(t + reorder_shift) % tasks` wrote.
pub fn read(
    comm: &dyn Comm,
    be: &dyn Backend,
    spec: &IorSpec,
    transfers_per_task: u64,
) -> IorResult {
    let tasks = comm.tasks();
    let (mut run, source, path, handle) = open_source(be, spec, comm.task(), tasks);
    let mut buf = vec![0u8; spec.transfer() as usize];
    // Reads are not stonewalled: they read what was written.
    start(comm, &mut run, spec);
    if let Some(h) = &handle {
        read_all_transfers(
            &mut run,
            spec,
            h,
            &mut buf,
            (source, tasks),
            transfers_per_task,
            &path,
        );
    }
    if let Some(h) = handle {
        finish_file(&mut run, h, &path, false);
    }
    run.fig.end_ns = wall_ns();
    gather(comm, run, spec.transfer(), transfers_per_task)
}

/// ior-rnd4K-easy-read's transfer size.
pub const RND_TRANSFER: u64 = 4096;
/// Most random reads a task makes (the app's `-s 10000000`).
pub const RND_MAX_TRANSFERS: u64 = 10_000_000;

/// ior-rnd4K-easy-read: 4 KiB reads at random 4 KiB-aligned offsets in
/// what task `(t + reorder_shift) % tasks` wrote in ior-easy-write
/// (`transfers_per_task` of its transfers), stonewalled at the spec's
/// wall with the wear-out rule (every task reads on to the count the
/// furthest one reached), at most [`RND_MAX_TRANSFERS`] each.
pub fn read_random(
    comm: &dyn Comm,
    be: &dyn Backend,
    spec: &IorSpec,
    transfers_per_task: u64,
) -> IorResult {
    let (task, tasks) = (comm.task(), comm.tasks());
    let (mut run, source, path, mut handle) = open_source(be, spec, task, tasks);
    let base = spec.offset(0, source as u64, tasks as u64);
    let blocks = transfers_per_task.saturating_mul(spec.transfer()) / RND_TRANSFER;
    if blocks == 0 && handle.take().is_some() {
        let e = std::io::Error::other("ior-easy-write wrote less than 4 KiB per task");
        run.fail("read", &path, &e);
    }
    let mut buf = vec![0u8; RND_TRANSFER as usize];
    let reads = RandomReads {
        base,
        blocks,
        seed: spec.seed ^ 0x4b ^ task as u64,
    };
    let wall_at = start(comm, &mut run, spec);
    let mut done = 0;
    if let Some(h) = &handle {
        done = reads.run(
            &mut run,
            h,
            &mut buf,
            (0, RND_MAX_TRANSFERS),
            wall_at,
            &path,
        );
    }
    run.fig.at_wall = done;
    let target = comm.max_u64(done);
    if let (Some(h), true) = (&handle, run.ok()) {
        reads.run(&mut run, h, &mut buf, (done, target), u64::MAX, &path);
    }
    if let Some(h) = handle {
        finish_file(&mut run, h, &path, false);
    }
    run.fig.end_ns = wall_ns();
    gather(comm, run, RND_TRANSFER, target)
}

/// Where a task's random reads fall: `blocks` 4 KiB blocks from `base`.
struct RandomReads {
    base: u64,
    blocks: u64,
    seed: u64,
}

impl RandomReads {
    /// Reads number `from..to` until the wall; returns the count done.
    fn run(
        &self,
        run: &mut TaskRun,
        h: &Handle,
        buf: &mut [u8],
        (from, to): (u64, u64),
        wall_at_ns: u64,
        path: &std::path::Path,
    ) -> u64 {
        let mut i = from;
        while i < to {
            if iolab_core::stop::requested() {
                run.fig.interrupted = true;
                break;
            }
            let block = iolab_core::random::below(
                iolab_core::random::splitmix_nth(self.seed, i),
                self.blocks,
            );
            if let Err(e) = read_exact(run.be, h, buf, self.base + block * RND_TRANSFER) {
                run.fail("read", path, &e);
                break;
            }
            run.fig.bytes += buf.len() as u64;
            i += 1;
            if wall_ns() >= wall_at_ns {
                run.fig.hit = true;
                break;
            }
        }
        i
    }
}

fn read_all_transfers(
    run: &mut TaskRun,
    spec: &IorSpec,
    h: &Handle,
    buf: &mut [u8],
    (source, tasks): (usize, usize),
    count: u64,
    path: &std::path::Path,
) {
    for i in 0..count {
        if iolab_core::stop::requested() {
            run.fig.interrupted = true;
            return;
        }
        let off = spec.offset(i, source as u64, tasks as u64);
        match read_exact(run.be, h, buf, off) {
            Ok(()) => run.fig.bytes += buf.len() as u64,
            Err(e) => {
                run.fail("read", path, &e);
                return;
            }
        }
    }
}

fn read_exact(be: &dyn Backend, h: &Handle, buf: &mut [u8], mut off: u64) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let n = be.read_at(h, &mut buf[got..], off)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("short read at offset {off}: the file ends before what was written"),
            ));
        }
        got += n;
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("iolab-ior-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn expected_chunk(seed: u64, task: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        scramble(&mut v, seed ^ task);
        v
    }

    #[test]
    fn ior_hard_interleaves_47008_byte_transfers_between_tasks() {
        let dir = scratch("hard");
        let be = iolab_backend::by_name("posix").unwrap();
        let spec = IorSpec {
            dir: dir.clone(),
            pattern: Pattern::Hard { segments: 4 },
            stonewall_s: 0,
            reorder_shift: 1,
            seed: 27,
        };
        let w = iolab_comm::run_local(3, |c| write(c, &*be, &spec));
        assert!(w
            .iter()
            .all(|r| r.bytes == 3 * 4 * HARD_TRANSFER && r.failure.is_none()));
        let data = std::fs::read(dir.join("file")).unwrap();
        assert_eq!(data.len() as u64, w[0].file_bytes);
        let x = HARD_TRANSFER as usize;
        for s in 0..4 {
            for t in 0..3u64 {
                let at = (s * 3 + t as usize) * x;
                assert!(
                    data[at..at + x] == expected_chunk(27, t, x)[..],
                    "segment {s} task {t}"
                );
            }
        }
        let r = iolab_comm::run_local(3, |c| read(c, &*be, &spec, 4));
        assert!(r
            .iter()
            .all(|r| r.bytes == w[0].bytes && r.failure.is_none()));
        // Reading past what was written is a short read: an error, not a figure.
        let r = iolab_comm::run_local(3, |c| read(c, &*be, &spec, 5));
        assert!(r[0].failure.is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ior_easy_writes_a_block_per_task_and_the_stonewall_levels_the_counts() {
        let dir = scratch("easy");
        let be = iolab_backend::by_name("posix").unwrap();
        let mut spec = IorSpec {
            dir: dir.clone(),
            pattern: Pattern::Easy {
                transfer_bytes: 4096,
                block_bytes: 40960,
                file_per_proc: true,
                unique_dir: true,
            },
            stonewall_s: 0,
            reorder_shift: 2,
            seed: 271,
        };
        let w = iolab_comm::run_local(2, |c| write(c, &*be, &spec));
        assert_eq!(
            (w[0].bytes, w[0].file_bytes, w[0].transfers_per_task),
            (81920, 81920, 10)
        );
        for t in 0..2 {
            let f = dir.join(format!("{t}/ior_file_easy.{t:08}"));
            assert_eq!(
                std::fs::read(&f).unwrap()[..4096],
                expected_chunk(271, t, 4096)[..]
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
        // A huge block and a 1 s wall: every task stops near the wall and
        // then writes on to the furthest count (on the null backend, so
        // that a fast disk is not filled for a second).
        let null = iolab_backend::by_name("null").unwrap();
        spec.pattern = Pattern::Easy {
            transfer_bytes: 4096,
            block_bytes: 4096 << 30,
            file_per_proc: true,
            unique_dir: false,
        };
        spec.stonewall_s = 1;
        let w = iolab_comm::run_local(2, |c| write(c, &*null, &spec));
        assert!(w[0].stonewall_hit && w[0].transfers_per_task >= w[0].min_at_wall);
        assert!(w[0].transfers_per_task < 1 << 30, "stopped at the wall");
        assert_eq!(w[0].bytes, 2 * w[0].transfers_per_task * 4096);
    }

    #[test]
    fn random_4k_reads_stay_in_what_was_written_and_count_their_bytes() {
        let dir = scratch("rnd");
        let be = iolab_backend::by_name("posix").unwrap();
        let spec = IorSpec {
            dir: dir.clone(),
            pattern: Pattern::Easy {
                transfer_bytes: 16384,
                block_bytes: 65536,
                file_per_proc: true,
                unique_dir: false,
            },
            stonewall_s: 1,
            reorder_shift: 1,
            seed: 271,
        };
        let w = iolab_comm::run_local(2, |c| write(c, &*be, &spec));
        assert_eq!(w[0].transfers_per_task, 4);
        let r = iolab_comm::run_local(2, |c| read_random(c, &*be, &spec, 4));
        assert!(r[0].failure.is_none(), "{:?}", r[0].failure);
        assert!(r[0].stonewall_hit || r[0].transfers_per_task == RND_MAX_TRANSFERS);
        assert_eq!(r[0].bytes, 2 * r[0].transfers_per_task * RND_TRANSFER);
        // Told the files hold more than they do, a read falls past the end
        // sooner or later: an error, not a figure.
        let r = iolab_comm::run_local(2, |c| read_random(c, &*be, &spec, 1 << 20));
        assert!(r[0].failure.is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
