//! One access of one iteration on one task, with IOR's steps and timers
//! (TestIoSys): a barrier; open (a shared file is created by task 0
//! before the others open it); `-g`'s barrier; the transfers, the
//! stonewall's wear-out and `-e`'s fsync; `-g`'s barrier; close; then
//! the file's size and every task's figures. A task whose call fails
//! stops its own I/O but takes part in every collective, so that no
//! task waits for it; every task returns the same result.

use crate::ctx::Ctx;
use crate::data::{Generator, Writer};
use crate::file::Open;
use crate::reduce::{
    self, Shape, TaskFigures, CLOSE_START, CLOSE_STOP, OPEN_START, OPEN_STOP, RDWR_START, RDWR_STOP,
};
use crate::results::{Access, AccessResult};
use crate::xfer::{Mode, Pass, Tally};
use iolab_comm::{failure::first_failure, CommExt};
use iolab_core::clock::wall_ns;
use iolab_core::Failure;
use std::path::Path;

/// What an access is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The timed write.
    Write,
    /// `-W`'s read-back (not timed, not reported but for its errors).
    CheckWrite,
    /// The timed read (`-r`), checked with `-R`.
    Read,
}

/// An access to run.
pub struct Step {
    /// Which.
    pub kind: Kind,
    /// Iteration.
    pub rep: u64,
    /// The data's signature.
    pub signature: u32,
    /// Whose data this task works on.
    pub pretend: u64,
    /// Stop after this many transfers (IOR's stoneWallingWearOutIterations).
    pub stop_after: u64,
}

/// What an access gave every task.
pub struct Done {
    /// The figures over all tasks.
    pub result: AccessResult,
    /// The first failure of any task.
    pub failure: Option<Failure>,
    /// A stop was requested.
    pub interrupted: bool,
    /// Transfers this task made (IOR's own pairs count, which its read
    /// takes as its limit after a write stopped by -D without a wear-out).
    pub own_transfers: u64,
}

/// One task's state through an access.
struct TaskRun {
    fig: TaskFigures,
    failure: Option<Failure>,
}

impl TaskRun {
    fn fail(&mut self, op: &str, path: &Path, e: &std::io::Error) {
        if self.failure.is_none() {
            self.failure = Some(Failure::io(op, Some(path.display().to_string()), e));
        }
    }

    /// A transfer's failure, naming its offset; the OS error number
    /// stays (`"errno": 28` in the JSON), which an `io::Error` rebuilt
    /// around the new text would drop.
    fn fail_at(&mut self, op: &str, path: &Path, offset: u64, e: &std::io::Error) {
        if self.failure.is_none() {
            let mut f = Failure::io(op, Some(path.display().to_string()), e);
            f.message = format!("at offset {offset}: {}", f.message);
            self.failure = Some(f);
        }
    }
}

impl Ctx<'_> {
    /// Runs `step` on this task.
    pub fn access(&self, step: &Step) -> Done {
        let p = &self.test.params;
        let mut run = TaskRun {
            fig: TaskFigures {
                first_error: u64::MAX,
                pretend: step.pretend,
                ..TaskFigures::default()
            },
            failure: None,
        };
        let (path, _) = self.file(step.pretend, step.rep);
        let file_bytes = match (step.kind, p.random_offset > 1) {
            (Kind::Read, true) => self.files.size(&path).unwrap_or(0),
            _ => 0,
        };
        let offsets = self.offsets(step.pretend, file_bytes, step.rep);
        if offsets.is_none() {
            let e = std::io::Error::other(format!(
                "-z -z: the file holds {file_bytes} bytes, less than a block ({})",
                p.block_bytes
            ));
            run.fail("read", &path, &e);
        }
        let mut mode_bufs = self.buffers(step, &mut run, &path);
        if p.inter_test_delay_s > 0 && step.kind != Kind::CheckWrite && self.rank() == 0 {
            std::thread::sleep(std::time::Duration::from_secs(p.inter_test_delay_s));
        }
        self.comm.barrier();
        run.fig.timers[OPEN_START] = wall_ns();
        let mut f = self.open(step, &path, &mut run);
        run.fig.timers[OPEN_STOP] = wall_ns();
        self.intra_barrier();
        run.fig.timers[RDWR_START] = wall_ns();
        if let (Some(o), Some(bufs)) = (&offsets, &mut mode_bufs) {
            self.transfers(step, o, &mut f, bufs, &mut run, &path);
        } else {
            self.transfers_skipped(step);
        }
        run.fig.timers[RDWR_STOP] = wall_ns();
        self.intra_barrier();
        run.fig.timers[CLOSE_START] = wall_ns();
        if let Some(f) = f {
            if let Err(e) = self.files.close(f) {
                run.fail("close", &path, &e);
            }
        }
        run.fig.timers[CLOSE_STOP] = wall_ns();
        if step.kind == Kind::Write {
            self.comm.barrier();
        }
        self.finish(step, run, &path)
    }

    /// The write's generator, or the read's buffer and check.
    fn buffers(&self, step: &Step, run: &mut TaskRun, path: &Path) -> Option<Bufs> {
        let p = &self.test.params;
        let len = p.transfer_bytes as usize;
        let who = Writer {
            signature: step.signature,
            rank: step.pretend as u32,
        };
        let check = step.kind == Kind::CheckWrite || (step.kind == Kind::Read && p.check_read);
        let shared_file = !p.file_per_proc && self.geo.tasks > 1;
        let made = match step.kind {
            Kind::Write => Generator::new(p.packet, who, len)
                .map(|g| Bufs::Write(Box::new(g.warming(shared_file)))),
            _ => iolab_core::buffer::IoBuffer::heap(len.max(1), iolab_core::buffer::page_size())
                .and_then(|b| {
                    let g = match check {
                        true => Some(Box::new(Generator::new(p.packet, who, len)?)),
                        false => None,
                    };
                    Ok(Bufs::Read(b, g))
                }),
        };
        made.map_err(|e| run.fail("allocate buffers", path, &e))
            .ok()
    }

    /// Opens (or creates) the file; a shared file is created by task 0
    /// before the others open it.
    fn open(&self, step: &Step, path: &Path, run: &mut TaskRun) -> Option<Open> {
        let p = &self.test.params;
        let shared = !p.file_per_proc;
        if step.kind != Kind::Write {
            return match run.failure.is_none() {
                true => self
                    .files
                    .open_read(path)
                    .map_err(|e| run.fail("open", path, &e))
                    .ok(),
                false => None,
            };
        }
        let extent = match shared {
            true => p.block_bytes * p.segments * self.geo.tasks,
            false => p.block_bytes * p.segments,
        };
        let creator = !shared || self.rank() == 0;
        let mut f = None;
        if creator && run.failure.is_none() {
            f = self
                .files
                .open_write(path, true, extent, p.transfer_bytes)
                .map_err(|e| run.fail("create", path, &e))
                .ok();
        }
        if shared {
            self.comm.barrier();
            if !creator && run.failure.is_none() {
                f = self
                    .files
                    .open_write(path, false, extent, p.transfer_bytes)
                    .map_err(|e| run.fail("open", path, &e))
                    .ok();
            }
        }
        f
    }

    fn intra_barrier(&self) {
        if self.test.params.intra_barriers {
            self.comm.barrier();
        }
    }

    /// The transfers, the wear-out and the fsync of `-e`.
    fn transfers(
        &self,
        step: &Step,
        offsets: &crate::plan::Offsets,
        f: &mut Option<Open>,
        bufs: &mut Bufs,
        run: &mut TaskRun,
        path: &Path,
    ) {
        let p = &self.test.params;
        // -W's read-back is no access of the results: not live either.
        let live = match step.kind {
            Kind::Write => self.live.recorder(Access::Write, self.rank()),
            Kind::Read => self.live.recorder(Access::Read, self.rank()),
            Kind::CheckWrite => iolab_core::live::Recorder::off(),
        };
        let start = wall_ns();
        let pass = Pass {
            files: &self.files,
            offsets,
            segments: p.segments,
            transfer: p.transfer_bytes as usize,
            deadline_ns: match (p.deadline_s, step.kind) {
                (0, _) | (_, Kind::CheckWrite) => u64::MAX,
                (s, _) => start.saturating_add(s * 1_000_000_000),
            },
            stop_after: step.stop_after,
            min_until_ns: start.saturating_add(p.min_time_s * 1_000_000_000),
            fsync_per_write: p.fsync_per_write && step.kind == Kind::Write,
            once: p.single_xfer_attempt,
            delay_us: p.inter_io_delay_us,
            cancel: self.cancel,
            live: &live,
        };
        let mut tally = Tally::default();
        if let Some(file) = f.as_mut().filter(|_| run.failure.is_none()) {
            if step.kind == Kind::Write && p.random_prefill_bytes > 0 {
                self.prefill(file, &mut tally);
                self.comm.barrier();
            }
            pass.run(file, &mut bufs.mode(), &mut tally, 0, None);
        } else if step.kind == Kind::Write && p.random_prefill_bytes > 0 {
            self.comm.barrier();
        }
        if p.wearout && step.kind != Kind::CheckWrite {
            run.fig.wall_transfers = tally.transfers;
            run.fig.wall_bytes = tally.bytes;
            let most = self.comm.max_u64(tally.transfers);
            run.fig.wall_ns = wall_ns().saturating_sub(start);
            let ok = tally.failure.is_none() && !tally.interrupted;
            if let (Some(file), true) = (f.as_mut(), ok && run.failure.is_none()) {
                let from = tally.transfers;
                pass.run(file, &mut bufs.mode(), &mut tally, from, Some(most));
            }
        }
        if let Some((offset, e)) = tally.failure.take() {
            let what = if step.kind == Kind::Write {
                "write"
            } else {
                "read"
            };
            run.fail_at(what, path, offset, &e);
        }
        if step.kind == Kind::Write && p.fsync && run.failure.is_none() {
            if let Some(file) = f.as_ref() {
                if let Err(e) = self.files.fsync(file) {
                    run.fail("fsync", path, &e);
                }
            }
        }
        run.fig.bytes = tally.bytes;
        run.fig.transfers = tally.transfers;
        run.fig.errors = tally.errors;
        run.fig.first_error = tally.first_error.unwrap_or(u64::MAX);
        run.fig.set(tally.hit, false, tally.interrupted);
    }

    /// A task that could not start its transfers still takes part in
    /// the collectives the others make.
    fn transfers_skipped(&self, step: &Step) {
        let p = &self.test.params;
        if step.kind == Kind::Write && p.random_prefill_bytes > 0 {
            self.comm.barrier();
        }
        if p.wearout && step.kind != Kind::CheckWrite {
            self.comm.max_u64(0);
        }
    }

    /// `--randomPrefill`: this task's blocks written whole beforehand in
    /// requests of the prefill size, with bytes no check accepts.
    fn prefill(&self, f: &mut Open, tally: &mut Tally) {
        let p = &self.test.params;
        let chunk = vec![0xffu8; p.random_prefill_bytes as usize];
        let seq = crate::plan::Offsets::sequential(p, self.geo.tasks, self.rank());
        for seg in 0..p.segments {
            let base = seq.at(seg, 0);
            for i in 0..p.block_bytes / p.random_prefill_bytes {
                let at = base + i * p.random_prefill_bytes;
                if let Err(e) = self.files.write_at(f, &chunk, at, p.single_xfer_attempt) {
                    tally.failure = Some((at, e.error));
                    return;
                }
            }
        }
    }

    /// The file's size, every task's figures, the result.
    fn finish(&self, step: &Step, mut run: TaskRun, path: &Path) -> Done {
        let own = run.fig.transfers;
        let p = &self.test.params;
        let kept = !self.files.be.capabilities().discards;
        if step.kind != Kind::CheckWrite && kept && (p.file_per_proc || self.rank() == 0) {
            run.fig.file_bytes = self.files.size(path).unwrap_or(0);
        }
        run.fig.set(false, run.failure.is_some(), false);
        let all = reduce::gather(self.comm, &run.fig);
        let failed = all.iter().any(|f| f.failed());
        let failure = match failed {
            true => first_failure(self.comm, run.failure),
            false => None,
        };
        let path_of = |t: u64| self.file(t, step.rep).0.display().to_string();
        let shape = Shape {
            access: match step.kind {
                Kind::Write => Access::Write,
                _ => Access::Read,
            },
            iteration: step.rep,
            checked: step.kind == Kind::CheckWrite || p.check_read,
            transfer_bytes: p.transfer_bytes,
            block_bytes: p.block_bytes,
            expected_bytes: p.block_bytes * p.segments * self.geo.tasks,
            file_per_proc: p.file_per_proc,
            wearout: p.wearout,
            deadline: p.deadline_s > 0,
            sizes_kept: kept,
            path_of: &path_of,
        };
        let mut result = reduce::reduce(&all, &shape);
        result
            .warnings
            .extend(crate::outliers::warnings(self, &all, &result));
        Done {
            interrupted: result.interrupted,
            result,
            failure,
            own_transfers: own,
        }
    }
}

/// The generator of a write, or the buffer (and check) of a read.
enum Bufs {
    Write(Box<Generator>),
    Read(iolab_core::buffer::IoBuffer, Option<Box<Generator>>),
}

impl Bufs {
    fn mode(&mut self) -> Mode<'_> {
        match self {
            Bufs::Write(g) => Mode::Write(g),
            Bufs::Read(b, g) => Mode::Read(b.as_mut_slice(), g.as_deref_mut()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transfer's failure keeps the OS error number beside the offset
    /// it names (it was `"errno": null`).
    #[test]
    fn a_failure_keeps_its_errno() {
        let mut run = TaskRun {
            fig: TaskFigures::default(),
            failure: None,
        };
        let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
        run.fail_at("write", Path::new("/x/f"), 65536, &e);
        let f = run.failure.unwrap_or_else(|| Failure::other("none", ""));
        assert_eq!(f.errno, Some(libc::ENOSPC));
        assert!(f.message.starts_with("at offset 65536: "), "{f}");
    }
}
