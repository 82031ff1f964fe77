//! md-workbench, the io500 app's extended metadata phases: each task
//! owns [`SETS`] directories (data sets) of objects of [`OBJECT_BYTES`]
//! bytes, under `<datadir>/mdworkbench/<task>_<set>/file-<index>`.
//!
//! - precreate (mdworkbench-create): each task makes its sets and
//!   `precreate_per_set` objects in each;
//! - benchmark (mdworkbench-bench): [`ITERATIONS`] iterations; in each,
//!   for `files_per_proc` objects of every set, a task stats, reads
//!   (checking the bytes) and deletes the oldest object of set `d` of the
//!   task `OFFSET x (d + 1)` below it ([`OFFSET`]), and creates a new one in set `d`
//!   of the task as far above it, so every set keeps its size and moves
//!   on by `files_per_proc` indices per iteration;
//! - cleanup (mdworkbench-delete): each task deletes its objects and sets.
//!
//! Each phase returns the figures of every task summed, with
//! md-workbench's rate: operations over the slowest task's time.

use crate::latency::{Op, OpHistograms, OpLatency};
use iolab_backend::{c_path, Backend, Dir, MetaQueue, OpenOptions};
use iolab_comm::{failure::first_failure, Comm};
use iolab_core::live::Recorder;
use iolab_core::random::scramble;
use iolab_core::Failure;
use iolab_mdtest::names::push_u64;
use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod queued;

/// Data sets per task (md-workbench's `-D`, 10 as the io500 app passes it).
pub const SETS: u64 = 10;
/// Benchmark iterations (`-R`, 2 as the app passes it).
pub const ITERATIONS: u64 = 2;
/// Bytes per object (md-workbench's default `-S`, which the app keeps).
pub const OBJECT_BYTES: usize = 3901;
/// Tasks between a set's owner and the task that works on it (`-O`).
pub const OFFSET: u64 = 1;
/// The directory of the phases under the datadir.
pub const DIR: &str = "mdworkbench";
/// Largest `waitingTime` accepted: a wait of 1000 times each operation.
pub const MAX_WAITING_FACTOR: f64 = 1000.0;
/// The seed of the objects' bytes (`-G`).
pub const SEED: u64 = 0x6d64_7762;

/// The objects of a run: how many per set, where.
#[derive(Debug, Clone, PartialEq)]
pub struct MdwbSpec {
    /// `<datadir>/mdworkbench`.
    pub dir: PathBuf,
    /// Objects each set holds (`precreatePerSet`, `-P`).
    pub precreate_per_set: u64,
    /// Objects of each set worked on per iteration (`filesPerProc`, `-I`).
    pub files_per_proc: u64,
    /// After each operation, wait this many times its duration
    /// (`waitingTime`, `-t`).
    pub waiting_factor: f64,
    /// Objects each task keeps in flight through the backend's metadata
    /// queue (io500 `--engine uring --qd N`); None: one operation at a
    /// time.
    pub queue_depth: Option<u32>,
}

/// One precreate, one benchmark iteration or one cleanup, over all tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MdwbFigures {
    /// Sets (directories) made.
    pub dsets_created: u64,
    /// Sets removed.
    pub dsets_deleted: u64,
    /// Objects made (and written whole).
    pub objects_created: u64,
    /// Objects stat'ed (with the size they were written with).
    pub objects_stated: u64,
    /// Objects read whole, their bytes checked.
    pub objects_read: u64,
    /// Objects deleted.
    pub objects_deleted: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// The slowest task's time, seconds (md-workbench's `max`).
    pub elapsed_s: f64,
    /// Operations (set and object operations) per second over `elapsed_s`.
    pub ops_per_sec: f64,
    /// The longest single operation of any task, seconds.
    pub max_op_s: f64,
    /// The object operations' latencies over all tasks.
    #[serde(default)]
    pub latency: OpLatency,
}

impl MdwbFigures {
    /// Every operation counted by the rate.
    pub fn ops(&self) -> u64 {
        self.dsets_created
            + self.dsets_deleted
            + self.objects_created
            + self.objects_stated
            + self.objects_read
            + self.objects_deleted
    }
}

/// What an md-workbench phase did (every task returns the same).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MdwbResult {
    /// Objects per set.
    pub precreate_per_set: u64,
    /// Objects of each set per benchmark iteration.
    pub files_per_proc: u64,
    /// Sets per task.
    pub sets: u64,
    /// Tasks.
    pub tasks: u64,
    /// The index of each set's oldest object when the phase started.
    pub first_index: u64,
    /// The same when it ended (the benchmark moves it on).
    pub next_index: u64,
    /// One entry (precreate, cleanup) or one per benchmark iteration.
    pub iterations: Vec<MdwbFigures>,
    /// The error of a task that failed, if any.
    pub failure: Option<Failure>,
    /// A stop was requested during the phase.
    pub interrupted: bool,
}

impl MdwbResult {
    /// The figures the phase is scored by: the last iteration's (the
    /// app scores the benchmark's second iteration).
    pub fn scored(&self) -> Option<&MdwbFigures> {
        self.iterations.last()
    }
}

/// The io500 app's sizing when the ini does not give it: objects per set
/// (and per iteration) such that the precreate lasts about
/// `min(stonewall, 60)` seconds at mdtest-easy-write's rate (10 kIOPS
/// when that phase did not run): `rate x time / tasks / SETS`.
pub fn app_sizing(mdtest_easy_ops_per_sec: Option<f64>, stonewall_s: u64, tasks: u64) -> u64 {
    let rate = mdtest_easy_ops_per_sec
        .filter(|r| *r > 0.0 && r.is_finite())
        .unwrap_or(10_000.0);
    let time = stonewall_s.min(60) as f64;
    ((rate * time / tasks.max(1) as f64) as u64) / SETS
}

/// Object paths built in one reused buffer (no allocation per object).
struct Names {
    buf: Vec<u8>,
    base: usize,
}

impl Names {
    fn new(dir: &Path) -> io::Result<Names> {
        c_path(dir)?;
        let mut buf = dir.as_os_str().as_bytes().to_vec();
        buf.push(b'/');
        let base = buf.len();
        buf.reserve(64);
        Ok(Names { buf, base })
    }

    fn set(&mut self, task: u64, set: u64) -> &CStr {
        self.buf.truncate(self.base);
        push_u64(&mut self.buf, task);
        self.buf.push(b'_');
        push_u64(&mut self.buf, set);
        self.buf.push(0);
        // No NUL inside: the directory passed c_path, the rest is digits.
        CStr::from_bytes_with_nul(&self.buf).unwrap_or_default()
    }

    fn object(&mut self, task: u64, set: u64, index: u64) -> &CStr {
        self.set(task, set);
        self.buf.pop();
        self.buf.extend_from_slice(b"/file-");
        push_u64(&mut self.buf, index);
        self.buf.push(0);
        CStr::from_bytes_with_nul(&self.buf).unwrap_or_default()
    }
}

/// Bytes at the head of an object that name it: owner, set, index.
const STAMP_BYTES: usize = 24;

/// Makes `buf` (holding the base) the bytes of object `index` of set
/// `set` of task `owner`: the base with the object's name in its first
/// 24 bytes, so that every object differs and a read can be checked. A
/// 24-byte copy per object, as the app rewrites 8 bytes per 4 KiB of a
/// pattern made once: scrambling all 3901 bytes per object cost a tenth
/// of a create's time.
fn stamp(buf: &mut [u8], owner: u64, set: u64, index: u64) {
    let head = &mut buf[..STAMP_BYTES];
    for (word, v) in head.chunks_exact_mut(8).zip([owner, set, index]) {
        word.copy_from_slice(&v.to_le_bytes());
    }
}

/// An object buffer holding the base.
fn based() -> Vec<u8> {
    let mut buf = vec![0; OBJECT_BYTES];
    scramble(&mut buf, SEED);
    buf
}

/// One task's counts through a phase (or an iteration).
#[derive(Default, Clone, Copy)]
struct Tally {
    dsets_created: u64,
    dsets_deleted: u64,
    created: u64,
    stated: u64,
    read: u64,
    deleted: u64,
    bytes_written: u64,
    bytes_read: u64,
    elapsed_ns: u64,
    max_op_ns: u64,
    failed: bool,
    interrupted: bool,
}

impl Tally {
    const WORDS: usize = 12;

    fn encode(&self) -> Vec<u8> {
        [
            self.dsets_created,
            self.dsets_deleted,
            self.created,
            self.stated,
            self.read,
            self.deleted,
            self.bytes_written,
            self.bytes_read,
            self.elapsed_ns,
            self.max_op_ns,
            u64::from(self.failed),
            u64::from(self.interrupted),
        ]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
    }

    fn decode(b: &[u8]) -> [u64; Tally::WORDS] {
        let mut out = [0u64; Tally::WORDS];
        for (i, w) in out.iter_mut().enumerate() {
            *w = b
                .get(i * 8..i * 8 + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_le_bytes)
                .unwrap_or(0);
        }
        out
    }
}

/// A task's state: its buffers, its path builder, its first failure.
struct Task<'a> {
    be: &'a dyn Backend,
    spec: &'a MdwbSpec,
    names: Names,
    data: Vec<u8>,
    back: Vec<u8>,
    tally: Tally,
    lat: OpHistograms,
    failure: Option<Failure>,
    /// Deletes go through the sets' directories, opened without following
    /// a link below the datadir: md-workbench's own, then each set this
    /// task deletes from (at most [`SETS`] per phase).
    sets: SetDirs,
    /// The metadata queue of `--engine uring` (`mdworkbench/queued.rs`).
    queue: Option<Box<dyn MetaQueue>>,
    /// Live figures: every operation the rate counts (sets and objects),
    /// with the bytes it moved.
    live: Recorder,
    /// The last timed operation's latency, ns.
    last_ns: u64,
}

/// The directories a task removes from, opened once per phase.
#[derive(Default)]
struct SetDirs {
    top: Option<Dir>,
    sets: Vec<((u64, u64), Dir)>,
    name: Vec<u8>,
}

/// `<task>_<set>`, or with `index` `file-<index>`, as a C string in a
/// reused buffer.
fn leaf(buf: &mut Vec<u8>, owner: u64, set: u64, index: Option<u64>) -> &CStr {
    buf.clear();
    match index {
        Some(i) => {
            buf.extend_from_slice(b"file-");
            push_u64(buf, i);
        }
        None => {
            push_u64(buf, owner);
            buf.push(b'_');
            push_u64(buf, set);
        }
    }
    buf.push(0);
    // Digits and ASCII only: no NUL inside.
    CStr::from_bytes_with_nul(buf).unwrap_or_default()
}

impl SetDirs {
    /// md-workbench's directory, opened from the datadir without
    /// following a link.
    fn top(&mut self, be: &dyn Backend, dir: &Path) -> io::Result<&Dir> {
        if self.top.is_none() {
            let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            };
            let data = be.open_dir(&c_path(parent)?)?;
            self.top = Some(be.open_dir_at(&data, &c_path(Path::new(name))?)?);
        }
        self.top
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Set `set` of task `owner`, opened from md-workbench's directory
    /// without following a link (once per phase).
    fn set_dir(&mut self, be: &dyn Backend, dir: &Path, owner: u64, set: u64) -> io::Result<&Dir> {
        let at = match self.sets.iter().position(|(k, _)| *k == (owner, set)) {
            Some(at) => at,
            None => {
                self.top(be, dir)?;
                let top = self.top.as_ref().ok_or(io::ErrorKind::NotFound)?;
                let d = be.open_dir_at(top, leaf(&mut self.name, owner, set, None))?;
                self.sets.push(((owner, set), d));
                self.sets.len() - 1
            }
        };
        Ok(&self.sets[at].1)
    }

    /// Removes object `index` of set `set` of task `owner`.
    fn unlink(
        &mut self,
        be: &dyn Backend,
        dir: &Path,
        owner: u64,
        set: u64,
        index: u64,
    ) -> io::Result<()> {
        self.set_dir(be, dir, owner, set)?;
        let at = self.sets.iter().position(|(k, _)| *k == (owner, set));
        let d = &self.sets[at.ok_or(io::ErrorKind::NotFound)?].1;
        be.unlink_at(d, leaf(&mut self.name, owner, set, Some(index)))
    }

    /// Removes set `set` of task `owner` (empty by now).
    fn rmdir(&mut self, be: &dyn Backend, dir: &Path, owner: u64, set: u64) -> io::Result<()> {
        self.sets.retain(|(k, _)| *k != (owner, set));
        self.top(be, dir)?;
        let top = self.top.as_ref().ok_or(io::ErrorKind::NotFound)?;
        be.rmdir_at(top, leaf(&mut self.name, owner, set, None))
    }
}

impl<'a> Task<'a> {
    fn new(be: &'a dyn Backend, spec: &'a MdwbSpec, live: Recorder) -> Task<'a> {
        if be.capabilities().thread_private_fds {
            // Every object is an open and a close: a task thread takes a
            // descriptor table of its own (before its ring, which it
            // alone uses), as mdtest's tasks do.
            let _ = iolab_core::threads::own_fd_table();
        }
        let (names, failure) = match Names::new(&spec.dir) {
            Ok(n) => (n, None),
            Err(e) => (
                Names {
                    buf: Vec::new(),
                    base: 0,
                },
                Some(Failure::io(
                    "md-workbench",
                    Some(spec.dir.display().to_string()),
                    &e,
                )),
            ),
        };
        // Made on the task's own thread, which alone submits on it.
        let (queue, failure) = match (spec.queue_depth, failure) {
            (Some(qd), None) => match be.metadata_queue(qd, OBJECT_BYTES) {
                Ok(q) => (Some(q), None),
                Err(e) => (None, Some(Failure::io("--engine uring", None, &e))),
            },
            (_, f) => (None, f),
        };
        Task {
            be,
            spec,
            names,
            data: based(),
            back: vec![0; OBJECT_BYTES],
            tally: Tally {
                failed: failure.is_some(),
                ..Tally::default()
            },
            lat: OpHistograms::default(),
            failure,
            sets: SetDirs::default(),
            queue,
            live,
            last_ns: 0,
        }
    }

    /// Whether the task goes on: no failure, no stop request.
    fn going(&mut self) -> bool {
        if iolab_core::stop::requested() {
            self.tally.interrupted = true;
        }
        self.failure.is_none() && !self.tally.interrupted
    }

    /// The last timed operation counted, moving `bytes`.
    fn counted(&self, bytes: u64) {
        self.live.op(bytes, self.last_ns);
    }

    fn fail(&mut self, op: &str, path: &CStr, e: &io::Error) {
        self.live.error();
        if self.failure.is_none() {
            let p = path.to_string_lossy().into_owned();
            self.failure = Some(Failure::io(op, Some(p), e));
            self.tally.failed = true;
        }
    }

    /// Times one operation (into its histogram, for an object's), keeps
    /// the longest, and waits the ini's `waitingTime` share of it.
    fn timed<T>(&mut self, kind: Option<Op>, op: impl FnOnce(&mut Self) -> T) -> T {
        let t0 = Instant::now();
        let out = op(self);
        let took = t0.elapsed();
        let ns = took.as_nanos() as u64;
        self.last_ns = ns;
        self.tally.max_op_ns = self.tally.max_op_ns.max(ns);
        if let Some(k) = kind {
            self.lat.record(k, ns);
        }
        if self.spec.waiting_factor > 0.0 {
            // Bounded by the ini's check (MAX_WAITING_FACTOR): no overflow.
            let d = Duration::try_from_secs_f64(took.as_secs_f64() * self.spec.waiting_factor);
            wait(d.unwrap_or(Duration::ZERO));
        }
        out
    }

    fn mkdir_set(&mut self, owner: u64, set: u64) {
        let r = self.timed(None, |t| {
            let p = t.names.set(owner, set);
            t.be.mkdir(p, 0o755).map_err(|e| (p.to_owned(), e))
        });
        match r {
            Ok(()) => {
                self.tally.dsets_created += 1;
                self.counted(0);
            }
            Err((p, e)) => self.fail("mkdir", &p, &e),
        }
    }

    fn rmdir_set(&mut self, owner: u64, set: u64) {
        let r = self.timed(None, |t| {
            // No link below the datadir is followed.
            let (be, dir) = (t.be, &t.spec.dir);
            let r = t.sets.rmdir(be, dir, owner, set);
            r.map_err(|e| (t.names.set(owner, set).to_owned(), e))
        });
        match r {
            Ok(()) => {
                self.tally.dsets_deleted += 1;
                self.counted(0);
            }
            Err((p, e)) => self.fail("rmdir", &p, &e),
        }
    }

    /// Creates an object and writes it whole.
    fn create(&mut self, owner: u64, set: u64, index: u64) {
        stamp(&mut self.data, owner, set, index);
        let r = self.timed(Some(Op::Create), |t| {
            let p = t.names.object(owner, set, index);
            write_object(t.be, p, &t.data).map_err(|e| (p.to_owned(), e))
        });
        match r {
            Ok(()) => {
                self.tally.created += 1;
                self.tally.bytes_written += OBJECT_BYTES as u64;
                self.counted(OBJECT_BYTES as u64);
            }
            Err((p, e)) => self.fail("create", &p, &e),
        }
    }

    /// Stats an object, checking its size.
    fn stat(&mut self, owner: u64, set: u64, index: u64) {
        let r = self.timed(Some(Op::Stat), |t| {
            let p = t.names.object(owner, set, index);
            t.be.stat(p).map_err(|e| (p.to_owned(), e))
        });
        match r {
            Ok(st) if st.size == OBJECT_BYTES as u64 => {
                self.tally.stated += 1;
                self.counted(0);
            }
            Ok(st) => {
                let p = self.names.object(owner, set, index).to_owned();
                let e = io::Error::other(format!("{} bytes, written with {OBJECT_BYTES}", st.size));
                self.fail("stat", &p, &e);
            }
            Err((p, e)) => self.fail("stat", &p, &e),
        }
    }

    /// Reads an object whole and checks its bytes (the app's `-X`).
    fn read(&mut self, owner: u64, set: u64, index: u64) {
        let r = self.timed(Some(Op::Read), |t| {
            let p = t.names.object(owner, set, index);
            read_object(t.be, p, &mut t.back).map_err(|e| (p.to_owned(), e))
        });
        if let Err((p, e)) = r {
            return self.fail("read", &p, &e);
        }
        stamp(&mut self.data, owner, set, index);
        if self.data != self.back {
            let p = self.names.object(owner, set, index).to_owned();
            let e = io::Error::new(
                io::ErrorKind::InvalidData,
                "the bytes differ from those written",
            );
            return self.fail("verify", &p, &e);
        }
        self.tally.read += 1;
        self.tally.bytes_read += OBJECT_BYTES as u64;
        self.counted(OBJECT_BYTES as u64);
    }

    fn delete(&mut self, owner: u64, set: u64, index: u64) {
        let r = self.timed(Some(Op::Delete), |t| {
            // In the set's directory, no link below the datadir followed.
            let (be, dir) = (t.be, &t.spec.dir);
            let r = t.sets.unlink(be, dir, owner, set, index);
            r.map_err(|e| (t.names.object(owner, set, index).to_owned(), e))
        });
        match r {
            Ok(()) => {
                self.tally.deleted += 1;
                self.counted(0);
            }
            Err((p, e)) => self.fail("delete", &p, &e),
        }
    }
}

/// Busy-waits a short time (a sleep would last far longer), sleeps a
/// long one in slices that a stop request ends.
fn wait(d: Duration) {
    let until = Instant::now() + d;
    if d < Duration::from_millis(10) {
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        return;
    }
    while !iolab_core::stop::requested() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

fn write_object(be: &dyn Backend, p: &CStr, data: &[u8]) -> io::Result<()> {
    let h = be.open(p, OpenOptions::create_new())?;
    let mut off = 0;
    let written = loop {
        if off == data.len() {
            break Ok(());
        }
        match be.write_at(&h, &data[off..], off as u64) {
            Ok(0) => break Err(io::Error::new(io::ErrorKind::WriteZero, "wrote 0 bytes")),
            Ok(n) => off += n,
            Err(e) => break Err(e),
        }
    };
    let closed = be.close(h);
    written.and(closed)
}

fn read_object(be: &dyn Backend, p: &CStr, buf: &mut [u8]) -> io::Result<()> {
    let h = be.open(p, OpenOptions::read())?;
    let mut off = 0;
    let read = loop {
        if off == buf.len() {
            break Ok(());
        }
        match be.read_at(&h, &mut buf[off..], off as u64) {
            Ok(0) => {
                break Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("ended after {off} of {} bytes", buf.len()),
                ))
            }
            Ok(n) => off += n,
            Err(e) => break Err(e),
        }
    };
    let closed = be.close(h);
    read.and(closed)
}

/// The figures of all tasks: counts summed, times the largest,
/// latencies merged.
fn reduce(comm: &dyn Comm, t: &Tally, lat: &OpHistograms) -> (MdwbFigures, bool, bool) {
    let mut mine = t.encode();
    lat.encode(&mut mine);
    let all = comm.all_gather(&mine);
    let mut w = [0u64; Tally::WORDS];
    let mut merged = OpHistograms::default();
    for b in all.iter() {
        let v = Tally::decode(b);
        merged.merge(&OpHistograms::decode(
            b.get(Tally::WORDS * 8..).unwrap_or_default(),
        ));
        for i in 0..Tally::WORDS {
            w[i] = match i {
                8 | 9 => w[i].max(v[i]),
                _ => w[i] + v[i],
            };
        }
    }
    let elapsed_s = w[8] as f64 / 1e9;
    let mut f = MdwbFigures {
        dsets_created: w[0],
        dsets_deleted: w[1],
        objects_created: w[2],
        objects_stated: w[3],
        objects_read: w[4],
        objects_deleted: w[5],
        bytes_written: w[6],
        bytes_read: w[7],
        elapsed_s,
        ops_per_sec: 0.0,
        max_op_s: w[9] as f64 / 1e9,
        latency: merged.latency(),
    };
    if elapsed_s > 0.0 {
        f.ops_per_sec = f.ops() as f64 / elapsed_s;
    }
    (f, w[10] > 0, w[11] > 0)
}

impl MdwbResult {
    fn new(comm: &dyn Comm, spec: &MdwbSpec, first_index: u64) -> MdwbResult {
        MdwbResult {
            precreate_per_set: spec.precreate_per_set,
            files_per_proc: spec.files_per_proc,
            sets: SETS,
            tasks: comm.tasks() as u64,
            first_index,
            next_index: first_index,
            ..MdwbResult::default()
        }
    }

    /// Adds one iteration's figures; false when the phase must stop.
    fn add(&mut self, comm: &dyn Comm, task: &mut Task) -> bool {
        let (figures, failed, interrupted) = reduce(comm, &task.tally, &task.lat);
        self.iterations.push(figures);
        self.interrupted |= interrupted;
        if failed {
            self.failure = first_failure(comm, task.failure.take());
        }
        !failed && !interrupted
    }
}

/// mdworkbench-create: task 0 makes the directory, then each task its
/// sets and their objects (index `0..precreate_per_set`).
pub fn precreate(comm: &dyn Comm, be: &dyn Backend, spec: &MdwbSpec, live: Recorder) -> MdwbResult {
    let me = comm.task() as u64;
    let mut t = Task::new(be, spec, live);
    if me == 0 && t.going() {
        if let Ok(c) = c_path(&spec.dir) {
            match be.mkdir(&c, 0o755) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => t.fail("mkdir", &c, &e),
                _ => {}
            }
        }
    }
    comm.barrier();
    let t0 = Instant::now();
    match t.queue.is_some() {
        true => t.precreate_queued(me),
        false => precreate_sync(&mut t, me),
    }
    t.tally.elapsed_ns = t0.elapsed().as_nanos() as u64;
    let mut r = MdwbResult::new(comm, spec, 0);
    r.add(comm, &mut t);
    r
}

/// mdworkbench-create's loops, one operation at a time.
fn precreate_sync(t: &mut Task, me: u64) {
    for d in 0..SETS {
        if !t.going() {
            return;
        }
        t.mkdir_set(me, d);
    }
    for f in 0..t.spec.precreate_per_set {
        for d in 0..SETS {
            if !t.going() {
                return;
            }
            t.create(me, d, f);
        }
    }
}

/// The task `OFFSET x (d + 1)` below (`up` false) or above `me`.
fn peer(me: u64, d: u64, tasks: u64, up: bool) -> u64 {
    let shift = (OFFSET * (d + 1)) % tasks;
    match up {
        true => (me + shift) % tasks,
        false => (me + tasks - shift) % tasks,
    }
}

/// mdworkbench-bench: [`ITERATIONS`] iterations from `first_index`, the
/// index of every set's oldest object.
pub fn bench(
    comm: &dyn Comm,
    be: &dyn Backend,
    spec: &MdwbSpec,
    first_index: u64,
    live: Recorder,
) -> MdwbResult {
    let (me, tasks) = (comm.task() as u64, comm.tasks().max(1) as u64);
    let mut t = Task::new(be, spec, live);
    let mut r = MdwbResult::new(comm, spec, first_index);
    for _ in 0..ITERATIONS {
        let start = r.next_index;
        t.tally = Tally {
            failed: t.tally.failed,
            ..Tally::default()
        };
        t.lat = OpHistograms::default();
        comm.barrier();
        let t0 = Instant::now();
        match t.queue.is_some() {
            true => t.bench_queued(me, tasks, start),
            false => bench_sync(&mut t, me, tasks, start),
        }
        t.tally.elapsed_ns = t0.elapsed().as_nanos() as u64;
        let go_on = r.add(comm, &mut t);
        r.next_index = start + spec.files_per_proc;
        if !go_on {
            break;
        }
    }
    r
}

/// One mdworkbench-bench iteration, one operation at a time.
fn bench_sync(t: &mut Task, me: u64, tasks: u64, start: u64) {
    for f in 0..t.spec.files_per_proc {
        let old = start + f;
        for d in 0..SETS {
            if !t.going() {
                return;
            }
            let from = peer(me, d, tasks, false);
            t.stat(from, d, old);
            if t.going() {
                t.read(from, d, old);
            }
            if t.going() {
                t.delete(from, d, old);
            }
            if t.going() {
                let new = t.spec.precreate_per_set + old;
                t.create(peer(me, d, tasks, true), d, new);
            }
        }
    }
}

/// mdworkbench-delete: each task deletes the objects of its sets
/// (`first_index..first_index + precreate_per_set`) and the sets; task 0
/// then the directory.
pub fn cleanup(
    comm: &dyn Comm,
    be: &dyn Backend,
    spec: &MdwbSpec,
    first_index: u64,
    live: Recorder,
) -> MdwbResult {
    let me = comm.task() as u64;
    let mut t = Task::new(be, spec, live);
    comm.barrier();
    let t0 = Instant::now();
    match t.queue.is_some() {
        true => t.cleanup_queued(me, first_index),
        false => cleanup_sync(&mut t, me, first_index),
    }
    t.tally.elapsed_ns = t0.elapsed().as_nanos() as u64;
    let mut r = MdwbResult::new(comm, spec, first_index);
    if r.add(comm, &mut t) && me == 0 {
        // Left for the run's final cleanup to report if it cannot go;
        // removed from the datadir, no link followed.
        let dir = &spec.dir;
        let gone = match (dir.parent(), dir.file_name()) {
            (Some(p), Some(n)) => c_path(p)
                .and_then(|c| be.open_dir(&c))
                .and_then(|d| be.rmdir_at(&d, &c_path(Path::new(n))?)),
            _ => Ok(()),
        };
        let _ = gone;
    }
    r
}

/// mdworkbench-delete's loops, one operation at a time.
fn cleanup_sync(t: &mut Task, me: u64, first_index: u64) {
    for d in 0..SETS {
        for f in 0..t.spec.precreate_per_set {
            if !t.going() {
                return;
            }
            t.delete(me, d, first_index + f);
        }
        if t.going() {
            t.rmdir_set(me, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, p: u64, i: u64) -> MdwbSpec {
        MdwbSpec {
            dir: dir.join(DIR),
            precreate_per_set: p,
            files_per_proc: i,
            waiting_factor: 0.0,
            queue_depth: None,
        }
    }

    /// The engines a test runs with: the sync loops, and the queue at
    /// depth 8 where this kernel lets a process use io_uring (under CI
    /// it must).
    fn engines() -> Vec<Option<u32>> {
        let be = iolab_backend::by_name("posix").unwrap();
        match be.metadata_queue(1, 0) {
            Ok(_) => vec![None, Some(8)],
            Err(e) => {
                let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0");
                assert!(!ci, "no metadata queue under CI: {e}");
                iolab_core::say!("SKIP the queued engine: {e}");
                vec![None]
            }
        }
    }

    #[test]
    fn names_are_md_workbench_s() {
        let mut n = Names::new(Path::new("/d/mdworkbench")).unwrap();
        assert_eq!(n.set(3, 9).to_bytes(), b"/d/mdworkbench/3_9");
        assert_eq!(
            n.object(12, 0, 4500).to_bytes(),
            b"/d/mdworkbench/12_0/file-4500"
        );
    }

    #[test]
    fn peers_are_offset_by_set() {
        assert_eq!(peer(0, 0, 3, false), 2);
        assert_eq!(peer(0, 1, 3, true), 2);
        assert_eq!(peer(2, 2, 3, true), 2);
        assert_eq!(peer(0, 9, 1, false), 0);
    }

    #[test]
    fn sizing_is_the_app_s() {
        // 20 kIOPS for 1 s over 2 tasks: 10,000 objects each, 1,000 per set.
        assert_eq!(app_sizing(Some(20_000.0), 1, 2), 1000);
        // The stonewall counts up to 60 s; 10 kIOPS without mdtest-easy.
        assert_eq!(app_sizing(None, 300, 4), 15_000);
        assert_eq!(app_sizing(Some(0.0), 0, 4), 0);
    }

    #[test]
    fn every_object_made_is_moved_then_deleted() {
        for qd in engines() {
            every_object_made_is_moved_then_deleted_by(qd);
        }
    }

    fn every_object_made_is_moved_then_deleted_by(qd: Option<u32>) {
        let be = iolab_backend::by_name("posix").unwrap();
        let root = std::env::temp_dir().join(format!("iolab-mdwb-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let s = MdwbSpec {
            queue_depth: qd,
            ..spec(&root, 7, 4)
        };
        for tasks in [1, 3] {
            // Live figures count what the results count: every set and
            // object operation, and the bytes written and read.
            let board = iolab_core::live::Board::new();
            let rec = |c: &dyn Comm| board.recorder("mdwb", c.task());
            let live = |b: &iolab_core::live::Board| {
                let t = b.totals();
                (t[0].ops, t[0].bytes)
            };
            let made = iolab_comm::run_local(tasks, |c| precreate(c, &*be, &s, rec(c)));
            let m = &made[0].iterations[0];
            assert_eq!(live(&board), (m.ops(), m.bytes_written));
            let n = tasks as u64;
            assert_eq!((m.dsets_created, m.objects_created), (n * 10, n * 70));
            assert_eq!(m.bytes_written, n * 70 * OBJECT_BYTES as u64);
            let board = iolab_core::live::Board::new();
            let rec = |c: &dyn Comm| board.recorder("mdwb", c.task());
            let b = iolab_comm::run_local(tasks, |c| bench(c, &*be, &s, 0, rec(c)));
            assert!(b[0].failure.is_none(), "{:?}", b[0].failure);
            let its = &b[0].iterations;
            let sum = |f: fn(&MdwbFigures) -> u64| its.iter().map(f).sum::<u64>();
            let moved = sum(|i| i.bytes_written) + sum(|i| i.bytes_read);
            assert_eq!(live(&board), (sum(MdwbFigures::ops), moved));
            assert_eq!(b[0].iterations.len(), 2);
            for it in &b[0].iterations {
                let k = n * 4 * 10;
                assert_eq!(
                    (
                        it.objects_stated,
                        it.objects_read,
                        it.objects_deleted,
                        it.objects_created
                    ),
                    (k, k, k, k)
                );
                assert_eq!(it.ops(), 4 * k);
                let l = &it.latency;
                for p in [l.stat, l.read, l.delete, l.create] {
                    assert_eq!(p.map(|p| p.count), Some(k));
                }
            }
            assert_eq!(b[0].next_index, 8);
            let board = iolab_core::live::Board::new();
            let rec = |c: &dyn Comm| board.recorder("mdwb", c.task());
            let c = iolab_comm::run_local(tasks, |c| cleanup(c, &*be, &s, 8, rec(c)));
            let d = &c[0].iterations[0];
            assert_eq!(live(&board), (d.ops(), 0));
            assert!(c[0].failure.is_none(), "{:?}", c[0].failure);
            assert_eq!((d.objects_deleted, d.dsets_deleted), (n * 70, n * 10));
            assert!(!s.dir.exists());
        }
        std::fs::remove_dir(&root).unwrap();
    }

    #[test]
    fn a_waiting_time_keeps_the_counts() {
        let be = iolab_backend::by_name("posix").unwrap();
        let root = std::env::temp_dir().join(format!("iolab-mdwb-w-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        for qd in engines() {
            let s = MdwbSpec {
                waiting_factor: 0.5,
                queue_depth: qd,
                ..spec(&root, 3, 2)
            };
            let made = iolab_comm::run_local(2, |c| precreate(c, &*be, &s, Recorder::off()));
            assert_eq!(made[0].iterations[0].objects_created, 60, "{qd:?}");
            let b = iolab_comm::run_local(2, |c| bench(c, &*be, &s, 0, Recorder::off()));
            assert!(b[0].failure.is_none(), "{qd:?}: {:?}", b[0].failure);
            let it = &b[0].iterations[1];
            assert_eq!((it.objects_read, it.objects_created), (40, 40), "{qd:?}");
            let gone = iolab_comm::run_local(2, |c| cleanup(c, &*be, &s, 4, Recorder::off()));
            assert_eq!(gone[0].iterations[0].objects_deleted, 60, "{qd:?}");
            assert!(!s.dir.exists());
        }
        std::fs::remove_dir(&root).unwrap();
    }

    #[test]
    fn a_changed_object_fails_the_read_check() {
        let be = iolab_backend::by_name("posix").unwrap();
        let root = std::env::temp_dir().join(format!("iolab-mdwb-x-{}", std::process::id()));
        for qd in engines() {
            std::fs::create_dir_all(&root).unwrap();
            let s = MdwbSpec {
                queue_depth: qd,
                ..spec(&root, 2, 1)
            };
            iolab_comm::run_local(1, |c| precreate(c, &*be, &s, Recorder::off()));
            std::fs::write(s.dir.join("0_3/file-0"), vec![0u8; OBJECT_BYTES]).unwrap();
            let b = iolab_comm::run_local(1, |c| bench(c, &*be, &s, 0, Recorder::off()));
            let f = b[0].failure.as_ref().unwrap();
            assert!(f.to_string().contains("0_3/file-0"), "{qd:?}: {f}");
            assert_eq!(f.op, "verify", "{qd:?}: {f}");
            assert_eq!(b[0].iterations.len(), 1);
            std::fs::remove_dir_all(&root).unwrap();
        }
    }

    /// A set swapped for a link to another directory of md-workbench's
    /// names: the delete phase stops there, naming it, and the files the
    /// link leads to stay.
    #[test]
    fn a_set_swapped_for_a_link_is_not_followed() {
        for qd in engines() {
            a_set_swapped_for_a_link_is_not_followed_by(qd);
        }
    }

    fn a_set_swapped_for_a_link_is_not_followed_by(qd: Option<u32>) {
        let be = iolab_backend::by_name("posix").unwrap();
        let root = std::env::temp_dir().join(format!("iolab-mdwb-l-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("other")).unwrap();
        let s = MdwbSpec {
            queue_depth: qd,
            ..spec(&root, 2, 1)
        };
        iolab_comm::run_local(1, |c| precreate(c, &*be, &s, Recorder::off()));
        for f in ["file-0", "file-1"] {
            std::fs::write(root.join("other").join(f), b"keep").unwrap();
        }
        std::fs::remove_dir_all(s.dir.join("0_4")).unwrap();
        std::os::unix::fs::symlink(root.join("other"), s.dir.join("0_4")).unwrap();
        let c = iolab_comm::run_local(1, |c| cleanup(c, &*be, &s, 0, Recorder::off()));
        let f = c[0].failure.as_ref().unwrap();
        assert!(matches!(f.errno, Some(20 | 40)), "ENOTDIR or ELOOP: {f}");
        assert!(f.to_string().contains("0_4/file-0"), "{f}");
        // The sync loops empty set after set (sets 0 to 3 gone); the
        // queue deletes object after object over the sets, and stops at
        // set 4's first object (objects 0 of sets 0 to 3 gone).
        let deleted = if qd.is_some() { 4 } else { 8 };
        assert_eq!(c[0].iterations[0].objects_deleted, deleted, "{qd:?}");
        assert!(root.join("other/file-0").exists() && root.join("other/file-1").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
