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
//!
//! This file holds the contract only; each path implements it next to
//! its loop ([`crate::run::qthread`], [`crate::run::uring_pass`], [`crate::e2e`]),
//! and [`crate::run::paths::choose`] picks one. The run core and the
//! end-to-end copy meet here and in the QThread state
//! ([`crate::run::qstate`]), never in each other's files.

use crate::record::results::Counts;
use crate::run::qstate::{PassCtx, QState};
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
