//! How a target's requests reach its backend: the I/O path. Chosen once
//! per target, here and nowhere else, from its options and what its
//! backend can do:
//!
//! - `sync`: one OS thread per QThread, each issuing one request at a
//!   time through the backend (`read_at`/`write_at`);
//! - `uring`: one thread keeping `-queuedepth` requests in flight on an
//!   io_uring ring; needs a backend that hands out file descriptors;
//! - `null`: `-op noop`: the request is counted but never issued, which
//!   measures the tool's own per-operation cost;
//! - `e2e-source`, `e2e-destination`: one side of an end-to-end copy
//!   (`-endtoend`, [`crate::e2e`]), one connection per QThread.
//!
//! The thread-per-request paths share the QThread loop, made generic over
//! [`Transfer`] so that the per-operation call is static, not virtual.

use crate::plan::TargetPlan;
use crate::qthread::{PassCtx, QState};
use crate::results::Counts;
use crate::values::{EngineKind, Op};
use std::io;

/// A way of running a target's passes.
pub trait IoPath: Sync {
    /// Its name, for notes and errors.
    fn name(&self) -> &'static str;
    /// OS threads (QThreads) a target with this queue depth runs.
    fn threads(&self, queuedepth: u64) -> usize;
    /// True when it needs the backend's file descriptor.
    fn needs_raw_fd(&self) -> bool {
        false
    }
    /// Runs one QThread's share of one pass.
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts;
}

/// Moves one request's data (the per-operation step of the QThread loop).
pub trait Transfer: Sync {
    /// Reads into or writes from `buf` at `offset`; the bytes moved.
    fn transfer(&self, cx: &PassCtx, buf: &mut [u8], offset: u64, read: bool) -> io::Result<usize>;
}

/// Synchronous calls through the backend.
pub struct SyncPath;

/// io_uring on the backend's file descriptor.
pub struct UringPath;

/// No transfer at all (`-op noop`).
pub struct NullPath;

impl Transfer for SyncPath {
    #[inline]
    fn transfer(&self, cx: &PassCtx, buf: &mut [u8], offset: u64, read: bool) -> io::Result<usize> {
        let Some(h) = cx.handle else {
            return Err(io::Error::other("the target file is not open"));
        };
        if read {
            cx.backend.read_at(h, buf, offset)
        } else {
            cx.backend.write_at(h, buf, offset)
        }
    }
}

impl Transfer for NullPath {
    #[inline]
    fn transfer(&self, _: &PassCtx, buf: &mut [u8], _: u64, _: bool) -> io::Result<usize> {
        Ok(buf.len())
    }
}

impl IoPath for SyncPath {
    fn name(&self) -> &'static str {
        "sync"
    }
    fn threads(&self, queuedepth: u64) -> usize {
        queuedepth as usize
    }
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts {
        crate::qthread::run_pass(st, cx, self)
    }
}

impl IoPath for NullPath {
    fn name(&self) -> &'static str {
        "null"
    }
    fn threads(&self, queuedepth: u64) -> usize {
        queuedepth as usize
    }
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts {
        crate::qthread::run_pass(st, cx, self)
    }
}

impl IoPath for UringPath {
    fn name(&self) -> &'static str {
        "uring"
    }
    /// The ring keeps the queue depth in flight from one thread.
    fn threads(&self, _queuedepth: u64) -> usize {
        1
    }
    fn needs_raw_fd(&self) -> bool {
        true
    }
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts {
        crate::uring_pass::run_pass(st, cx)
    }
}

/// The path for a target: the one place that looks at `-engine` and
/// `-op noop`.
pub fn choose(plan: &TargetPlan) -> &'static dyn IoPath {
    use crate::e2e::opts::Role;
    match plan.opts.e2e.role() {
        Some(Role::Source) => return &crate::e2e::SourcePath,
        Some(Role::Destination) => return &crate::e2e::DestinationPath,
        None => {}
    }
    match (plan.opts.engine, plan.opts.op) {
        // A ring of NOPs still measures the ring.
        (EngineKind::Uring, _) => &UringPath,
        (_, Op::Noop) => &NullPath,
        _ => &SyncPath,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse, Parsed};

    fn path_of(line: &str) -> (&'static str, usize) {
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        let Ok(Parsed::Run(c)) = parse(&args) else {
            panic!("{line}")
        };
        let p = crate::plan::plan(&c).unwrap();
        let io = choose(&p.targets[0]);
        (io.name(), io.threads(p.targets[0].opts.queuedepth))
    }

    #[test]
    fn one_place_picks_the_path() {
        let base = "-target f -reqsize 1 -numreqs 8 -qd 4";
        assert_eq!(path_of(&format!("-op read {base}")), ("sync", 4));
        assert_eq!(path_of(&format!("-op noop {base}")), ("null", 4));
        assert_eq!(
            path_of(&format!("-op read {base} -engine uring")),
            ("uring", 1)
        );
        assert_eq!(path_of("-op write -target null -numreqs 8").0, "sync");
    }
}
