//! The steps of one operation that every I/O path takes the same way
//! (the QThread loop, the io_uring ring, both sides of an end-to-end
//! copy): waiting its turn (ordering, lockstep, -syncio, the throttle),
//! timing, verifying, time-stamping and counting it, flushing, and
//! keeping errors. Nothing here allocates or formats except the error
//! path.

use crate::parse::values::{Op, Ordering};
use crate::plan::throttle::Pacer;
use crate::record::results::Counts;
use crate::run::lockstep::{pair, Side, Turns};
use crate::run::progress::wait_until;
use crate::run::qstate::{PassCtx, QState};
use iolab_core::clock::mono_ns;
use iolab_core::Failure;
use std::sync::atomic::Ordering::*;

/// Slow operations remembered per QThread for -reportthreshold.
pub(crate) const SLOW_OPS_KEPT: usize = 1000;

/// Ends a throttled pass at its schedule's end ([`Pacer::pass_end_ns`])
/// and returns the pass's elapsed time. When the I/O finished before that
/// end, the pass lasted exactly until it: the few microseconds the sleep
/// overshoots are the timer's, not the target's, and counting them would
/// report 3.999 MB/s for a 4 MB/s throttle.
pub(crate) fn hold_to_schedule_end(p: &mut Pacer, cx: &PassCtx, next_slot: u64) -> u64 {
    let end = p.pass_end_ns(next_slot, cx.deadline_ns);
    let io_done = mono_ns();
    if io_done >= end {
        return io_done.saturating_sub(cx.start_ns);
    }
    if p.wait_until_unless(end, || cx.shared.stop.load(Relaxed) || cx.run.stopping()) {
        end.saturating_sub(cx.start_ns)
    } else {
        mono_ns().saturating_sub(cx.start_ns)
    }
}

/// Waits until operation `n` may be issued; false when the pass ends
/// first. Stop triggers, -syncio, lockstep and serial/loose ordering.
pub(crate) fn admit(cx: &PassCtx, n: u64, lock: &mut LockstepLocal) -> bool {
    let now = || mono_ns();
    let p = &cx.progress.targets;
    if cx
        .plan
        .stop_when
        .iter()
        .any(|&(from, m)| p[from].reached(m, now()))
    {
        cx.stop_pass();
        return false;
    }
    let every = cx.global.syncio;
    if every > 0 && n > 0 && n.is_multiple_of(every) {
        let me = cx.plan.index;
        let others_there = || {
            p.iter()
                .enumerate()
                .all(|(i, t)| i == me || t.pass_done.load(Relaxed) || t.ops.load(Relaxed) >= n)
        };
        if !wait_until(others_there, || cx.ending()) {
            return false;
        }
    }
    if let Some((turns, side)) = lock.side(cx) {
        if !turns.admit(&side, u64::from(cx.pass), || cx.ending()) {
            // The other side's pass ended and this side had its last
            // turn (`stop`): the pass ends for every QThread.
            if !cx.ending() {
                cx.stop_pass();
            }
            return false;
        }
    }
    let gate = match cx.plan.opts.ordering {
        Ordering::Serial => &cx.shared.completed,
        Ordering::Loose => &cx.shared.issued,
        Ordering::None => return true,
    };
    wait_until(|| gate.load(Acquire) >= n, || cx.ending())
}

/// A QThread's side of the `-lockstep` pair its target is in, looked up
/// at its first operation.
#[derive(Default)]
pub(crate) struct LockstepLocal {
    pair: Option<Option<(usize, Side)>>,
}

impl LockstepLocal {
    /// The pair's turns and this target's side; None outside a pair.
    fn side<'a>(&mut self, cx: &PassCtx<'a>) -> Option<(&'a Turns, Side)> {
        let p = *self.pair.get_or_insert_with(|| pair(cx.plan));
        p.map(|(at, side)| (&cx.progress.targets[at].turns, side))
    }

    /// An operation [`admit`] let through is over (done, failed or not
    /// issued after all): the turn passes once all of its are.
    pub(crate) fn done(&mut self, cx: &PassCtx) {
        if let Some((turns, side)) = self.side(cx) {
            turns.finished(&side);
        }
    }
}

/// Where reads land in a QThread's buffer: its last `len` bytes. Unique
/// write data is a window on the buffer's first `period + len` bytes
/// ([`crate::plan::unique`]), and a read of a mixed (`-rwratio`) target must
/// not overwrite that base; for other patterns the buffer is `len` long
/// and this is 0.
#[inline]
pub(crate) fn read_start(buf_len: usize, len: usize) -> usize {
    buf_len.saturating_sub(len)
}

/// Records one operation's service time.
#[inline]
pub(crate) fn timing(c: &mut Counts, cx: &PassCtx, n: u64, offset: u64, t0: u64, t1: u64) {
    let lat = t1.saturating_sub(t0);
    c.latency.record(lat);
    c.io_ns += lat;
    if c.first_op_ns == 0 {
        c.first_op_ns = t1.saturating_sub(cx.start_ns).max(1);
    }
    let th = cx.plan.opts.reportthreshold_s;
    if th > 0.0 && lat as f64 > th * 1e9 && c.slow_ops.len() < SLOW_OPS_KEPT {
        c.slow_ops.push((n, offset, lat));
    }
}

/// Counts a -verify result; false when the pass must end.
pub(crate) fn verified(
    st: &mut QState,
    cx: &PassCtx,
    c: &mut Counts,
    n: u64,
    offset: u64,
    m: &crate::plan::datapat::Mismatch,
) -> bool {
    if m.is_ok() {
        return true;
    }
    c.verify_failed_ops += 1;
    c.verify_bad_units += m.bad_units;
    c.first_bad_offset = c
        .first_bad_offset
        .min(m.first_bad_offset)
        .or(m.first_bad_offset);
    let first = m.first_bad_offset.unwrap_or(offset);
    // `location` compares whole 8-byte words: it names the word, not a byte.
    let unit = match cx.plan.opts.verify {
        Some(crate::parse::values::VerifyKind::Location) => "8-byte word",
        _ => "byte",
    };
    let msg = format!("target {} op {n}: -verify found {} bad {unit}s in the data read at offset {offset}; the first bad {unit} is at offset {first}", cx.plan.index, m.bad_units);
    note_error(st, cx, msg, "verify", None);
    if cx.global.stoponerror {
        cx.run.request_stop();
    }
    more_allowed(cx)
}

/// The time stamp entry of one operation.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn stamp(
    cx: &PassCtx,
    q: usize,
    n: u64,
    read: bool,
    offset: u64,
    len: usize,
    done: usize,
    t0: u64,
    t1: u64,
) -> crate::record::timestamp::TsEntry {
    use crate::record::timestamp::OpType;
    crate::record::timestamp::TsEntry {
        pass: cx.pass,
        qthread: q as u32,
        op_number: n,
        op: match (cx.plan.opts.op, read) {
            (Op::Noop, _) => OpType::Noop,
            (_, true) => OpType::Read,
            _ => OpType::Write,
        },
        offset_bytes: offset,
        req_bytes: len as u64,
        xfer_bytes: done as u64,
        start_ns: t0,
        end_ns: t1,
    }
}

/// Adds one transfer to the read or write counters.
pub fn count(c: &mut Counts, read: bool, bytes: u64) {
    if bytes == 0 {
        return;
    }
    if read {
        c.read_ops += 1;
        c.read_bytes += bytes;
    } else {
        c.write_ops += 1;
        c.write_bytes += bytes;
    }
}

/// -flushwrite N: fdatasync after every N writes (timed).
/// A failed flush is an error like a failed write: the data may be lost.
pub(crate) fn flush_if_due(st: &mut QState, cx: &PassCtx, c: &mut Counts, writes: &mut u64) {
    *writes += 1;
    let every = cx.plan.opts.flushwrite;
    if let (true, Some(h)) = (every > 0 && (*writes).is_multiple_of(every), cx.handle) {
        let t = mono_ns();
        let r = cx.backend.fdatasync(h);
        c.flush_ns += mono_ns() - t;
        if let Err(e) = r {
            let msg = format!(
                "target {}: -flushwrite: fdatasync failed: {e}",
                cx.plan.index
            );
            error(st, cx, c, msg, "fdatasync", e.raw_os_error());
        }
    }
}

/// Counts a failed or short operation. Running out of space ends the
/// run: every later write would fail the same way.
pub(crate) fn error(
    st: &mut QState,
    cx: &PassCtx,
    c: &mut Counts,
    msg: String,
    op: &'static str,
    errno: Option<i32>,
) {
    c.errors += 1;
    st.live.error(op);
    if errno == Some(libc::ENOSPC) {
        cx.run.fail(failure(cx, op, errno, &msg));
        cx.stop_pass();
    }
    note_error(st, cx, msg, op, errno);
    if cx.global.stoponerror {
        cx.run.request_stop();
    }
}

/// The storage service cannot be reached (an object store that went
/// away or stopped answering): like a full disk, every later operation
/// would fail the same way, so the run ends instead of counting them.
pub(crate) fn storage_gone(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::TimedOut
    )
}

pub(crate) fn failure(cx: &PassCtx, op: &str, errno: Option<i32>, msg: &str) -> Failure {
    Failure {
        op: op.to_string(),
        path: Some(cx.path.to_string()),
        errno,
        message: msg.to_string(),
        kind: iolab_core::FailureKind::Failed,
    }
}

/// Keeps the message (up to -maxerrorstoprint) and tells the run an
/// error happened, so that its outcome is an error.
pub(crate) fn note_error(
    st: &mut QState,
    cx: &PassCtx,
    msg: String,
    op: &'static str,
    errno: Option<i32>,
) {
    st.error_count += 1;
    cx.run.error(|| failure(cx, op, errno, &msg));
    if (st.messages.len() as u64) < cx.global.maxerrorstoprint {
        st.messages.push(msg);
    }
}

/// Counts one error against the target's pass; false once -maxerrors
/// is reached (or at once under -stoponerror).
pub(crate) fn more_allowed(cx: &PassCtx) -> bool {
    let total = cx.shared.errors.fetch_add(1, Relaxed) + 1;
    let max = cx.global.maxerrors;
    !cx.global.stoponerror && (max == 0 || total < max)
}

/// CPU time of the calling thread: the exact total (thread CPU clock) and
/// getrusage's user/system split, which the kernel keeps only at tick
/// resolution.
pub struct ThreadCpu {
    total_ns: u64,
    user_ns: u64,
    sys_ns: u64,
}

/// Reads the calling thread's CPU time.
pub fn thread_cpu() -> ThreadCpu {
    // SAFETY: rusage is plain data, for which all zeroes is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a writable rusage; getrusage only fills it in.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ThreadCpu {
        total_ns: iolab_core::clock::thread_cpu_ns(),
        user_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
    }
}

impl ThreadCpu {
    /// (user, system) ns since `start`: the exact total, split in
    /// getrusage's proportion (all user when no tick fell in the span).
    pub fn since(&self, start: &ThreadCpu) -> (u64, u64) {
        let total = self.total_ns.saturating_sub(start.total_ns);
        let u = self.user_ns.saturating_sub(start.user_ns);
        let s = self.sys_ns.saturating_sub(start.sys_ns);
        if u + s == 0 {
            return (total, 0);
        }
        let user = (total as u128 * u as u128 / (u + s) as u128) as u64;
        (user, total - user)
    }
}
