//! The QThread: takes the next operation number of its target, waits for
//! whatever must happen first (ordering, lockstep, -syncio, the throttle),
//! issues one read or write, and counts it. The loop allocates nothing,
//! formats nothing and takes no lock (but a `-lockstep` target's turns);
//! only the error path formats text.

use crate::parse::values::Ordering;
use crate::plan::throttle::Pacer;
use crate::record::results::Counts;
use crate::run::iopath::{IoPath, NullPath, SyncPath, Transfer};
// The state a QThread carries and sees (qstate) and the steps of one
// operation (steps) are below the I/O paths so that every path can name
// them.
use crate::run::qstate::{PassCtx, QState};
use crate::run::steps::{
    admit, count, error, failure, flush_if_due, hold_to_schedule_end, more_allowed, read_start,
    stamp, storage_gone, thread_cpu, timing, verified, LockstepLocal, SLOW_OPS_KEPT,
};
use iolab_core::clock::mono_ns;
use std::sync::atomic::Ordering::*;

impl IoPath for SyncPath {
    fn name(&self) -> &'static str {
        "sync"
    }
    fn threads(&self, queuedepth: u64) -> usize {
        queuedepth as usize
    }
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts {
        run_pass(st, cx, self)
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
        run_pass(st, cx, self)
    }
}

/// Runs one QThread through one pass, moving data with `io`.
pub fn run_pass<T: Transfer>(st: &mut QState, cx: &PassCtx, io: &T) -> Counts {
    let mut c = Counts {
        latency: crate::record::results::Latency::live(),
        ..Default::default()
    };
    if cx.plan.opts.reportthreshold_s > 0.0 {
        // Reserved up front so that recording a slow op never allocates.
        c.slow_ops.reserve(SLOW_OPS_KEPT);
    }
    let cpu0 = thread_cpu();
    let mut pacer = cx.plan.schedule.map(|s| Pacer::start_at(s, cx.start_ns));
    let mut lock = LockstepLocal::default();
    let mut writes = 0u64;
    // Tests only (debug builds): die holding an operation number, so that
    // QThreads waiting for its turn must see the run fail.
    let die_at =
        crate::run::fault::injected(cx.plan.index, Some(st.q), u64::from(cx.pass)).then_some(5);
    // The request whose slot ends a throttled pass, once it runs out of
    // requests or of time (Pacer::pass_end_ns).
    let mut next_slot = None;
    loop {
        let n = cx.shared.next.fetch_add(1, Relaxed);
        if die_at.is_some_and(|k| n >= k) {
            panic!("IOLAB_XDD_PANIC_TARGET: qthread {} dies at op {n}", st.q);
        }
        if n >= cx.plan.ops {
            next_slot = Some(cx.plan.ops);
            break;
        }
        if cx.ending() || !admit(cx, n, &mut lock) {
            break;
        }
        if let Some(p) = pacer.as_mut() {
            // A request due at or after the time limit is not issued: a
            // 100 ops/s target limited to 1 s does 100 requests, not 101.
            if p.due_at_ns(n) >= cx.deadline_ns {
                next_slot = Some(n);
                lock.done(cx);
                break;
            }
            if !p.wait_for_slot_unless(n, || cx.ending()) {
                lock.done(cx);
                break;
            }
        }
        let more = one_op(st, cx, io, n, &mut c, &mut writes);
        lock.done(cx);
        if !more {
            cx.stop_pass();
            break;
        }
    }
    c.elapsed_ns = match (pacer.as_mut(), next_slot) {
        (Some(p), Some(k)) => hold_to_schedule_end(p, cx, k),
        _ => mono_ns().saturating_sub(cx.start_ns),
    };
    (c.cpu_user_ns, c.cpu_sys_ns) = thread_cpu().since(&cpu0);
    c
}

/// Issues operation `n`; false when the pass must end (-maxerrors).
fn one_op<T: Transfer>(
    st: &mut QState,
    cx: &PassCtx,
    io: &T,
    n: u64,
    c: &mut Counts,
    writes: &mut u64,
) -> bool {
    let plan = cx.plan;
    let len = plan.op_bytes(n) as usize;
    let offset = cx.seeks.offset(n % plan.wrap);
    let read = plan.is_read(n);
    let (r, t0, t1) = issue(st, cx, io, c, n, read, offset, len);
    timing(c, cx, n, offset, t0, t1);
    if let Some(ts) = st.ts.as_mut() {
        let done = r.as_ref().map_or(0, |k| *k);
        ts.record(stamp(cx, st.q, n, read, offset, len, done, t0, t1));
    }
    let what = if read { "read" } else { "write" };
    let done = match r {
        Ok(k) => k,
        Err(e) => {
            let msg = format!(
                "target {} op {n}: {what} of {len} bytes at offset {offset} failed: {e}",
                plan.index
            );
            if storage_gone(&e) {
                cx.run.fail(failure(cx, what, e.raw_os_error(), &msg));
                cx.stop_pass();
            }
            error(st, cx, c, msg, what, e.raw_os_error());
            return more_allowed(cx);
        }
    };
    count(c, read, done as u64);
    st.live.op(read, done as u64, t1.saturating_sub(t0));
    cx.progress.targets[plan.index].add(done as u64);
    if done < len {
        let msg = format!("target {} op {n}: {what} moved {done} of {len} bytes at offset {offset} (end of file?)", plan.index);
        error(st, cx, c, msg, what, None);
        return more_allowed(cx);
    }
    if !read {
        flush_if_due(st, cx, c, writes);
        return true;
    }
    match &st.verifier {
        Some(v) => {
            let at = read_start(st.buf.len(), len);
            let m = v.check(&st.buf.as_slice()[at..at + len], offset);
            verified(st, cx, c, n, offset, &m)
        }
        None => true,
    }
}

/// Patches the buffer if needed, keeps the ordering promises, and does
/// the transfer: (result, start ns, end ns).
#[allow(clippy::too_many_arguments)]
#[inline]
fn issue<T: Transfer>(
    st: &mut QState,
    cx: &PassCtx,
    io: &T,
    c: &mut Counts,
    n: u64,
    read: bool,
    offset: u64,
    len: usize,
) -> (std::io::Result<usize>, u64, u64) {
    let plan = cx.plan;
    let whole = st.buf.as_mut_slice();
    let mut at = if read {
        read_start(whole.len(), len)
    } else {
        0
    };
    if !read && plan.pattern.varies_per_request() {
        let t = mono_ns();
        at = plan.pattern.place(whole, offset, len, cx.pass);
        c.pattern_fill_ns += mono_ns() - t;
    }
    let buf = &mut whole[at..at + len];
    if plan.opts.ordering == Ordering::Loose {
        cx.shared.issued.store(n + 1, Release);
    }
    let t0 = mono_ns();
    let r = io.transfer(cx, buf, offset, read);
    let t1 = mono_ns();
    if plan.opts.ordering == Ordering::Serial {
        cx.shared.completed.store(n + 1, Release);
    }
    (r, t0, t1)
}
