//! One pass of a target on the io_uring engine (`-engine uring`): the
//! data-path module keeps `-queuedepth` requests in flight from one thread;
//! this adapter feeds it the pass's requests (paced by the throttle, cut
//! off by time limits and stops) and does per completion what a QThread
//! does per operation: count, verify, time-stamp, publish progress.

use crate::parse::values::Op;
use crate::plan::datapat::Verifier;
use crate::plan::throttle::Pacer;
use crate::record::results::Counts;
use crate::run::buffer::IoBuffer;
use crate::run::iopath::{IoPath, UringPath};
use crate::run::qstate::{PassCtx, QState};
use crate::run::steps::{
    count, error, flush_if_due, more_allowed, stamp, thread_cpu, timing, verified,
};
use crate::run::uring::{
    Completion, IoOp, Request, Tuning, UringConfig, UringEngine, UringError, UringHooks,
};
use iolab_core::clock::mono_ns;

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
        run_pass(st, cx)
    }
}

struct Hooks<'a, 'b> {
    cx: &'a PassCtx<'b>,
    st: &'a mut QState,
    verifier: Option<Verifier>,
    c: Counts,
    writes: u64,
}

impl UringHooks for Hooks<'_, '_> {
    fn place(&mut self, req: Request, slot: &mut [u8]) -> usize {
        let (plan, pass) = (self.cx.plan, self.cx.pass);
        let p = &plan.pattern;
        if plan.opts.op != Op::Write || !p.varies_per_request() {
            return 0;
        }
        let t = mono_ns();
        let at = p.place(slot, req.offset_bytes, plan.xfer_bytes as usize, pass);
        self.c.pattern_fill_ns += mono_ns() - t;
        at
    }

    fn complete(&mut self, k: &Completion<'_>) -> bool {
        let (cx, plan) = (self.cx, self.cx.plan);
        let (n, off, len) = (k.req.index, k.req.offset_bytes, plan.xfer_bytes as usize);
        let read = plan.opts.op == Op::Read;
        timing(&mut self.c, cx, n, off, k.start_ns, k.end_ns);
        let done = k.result.max(0) as usize;
        if let Some(ts) = self.st.ts.as_mut() {
            ts.record(stamp(cx, 0, n, read, off, len, done, k.start_ns, k.end_ns));
        }
        if k.result < 0 {
            let e = std::io::Error::from_raw_os_error(-k.result);
            let what = if read { "read" } else { "write" };
            error(
                self.st,
                cx,
                &mut self.c,
                format!(
                    "target {} op {n}: io_uring {what} of {len} bytes at offset {off} failed: {e}",
                    plan.index,
                ),
                what,
                Some(-k.result),
            );
            return more_allowed(cx) && !cx.ending();
        }
        count(&mut self.c, read, done as u64);
        self.st
            .live
            .op(read, done as u64, k.end_ns.saturating_sub(k.start_ns));
        cx.progress.targets[plan.index].add(done as u64);
        if done < len && plan.opts.op != Op::Noop {
            let what = if read { "read" } else { "write" };
            error(self.st, cx, &mut self.c, format!("target {} op {n}: transferred {done} of {len} bytes at offset {off} (end of file?)", plan.index), what, None);
            return more_allowed(cx) && !cx.ending();
        }
        if let (true, Some(v)) = (read, &self.verifier) {
            let m = v.check(&k.buf[..done], off);
            if !verified(self.st, cx, &mut self.c, n, off, &m) {
                return false;
            }
        } else if !read {
            flush_if_due(self.st, cx, &mut self.c, &mut self.writes);
        }
        !cx.ending()
    }
}

/// The one buffer holding every slot, as the QThreads' buffers are made:
/// in shared memory with `-sharedmemory`, locked with `-memlock` (a lock
/// refused is a note, as for QThreads).
fn slot_buffer(st: &mut QState, cx: &PassCtx, cfg: &UringConfig) -> Result<IoBuffer, UringError> {
    let bytes = cfg
        .buffer_bytes()
        .ok_or(UringError::Config("slot buffers larger than memory"))?;
    let mut buf = IoBuffer::new(bytes, cfg.align, cx.plan.opts.sharedmemory)
        .map_err(|_| UringError::Config("cannot allocate the slot buffers"))?;
    if cx.global.memlock {
        if let Err(e) = buf.lock() {
            let note = format!(
                "target {}: cannot lock the io_uring slot buffers in memory ({e}); continuing unlocked",
                cx.plan.index
            );
            // The buffer is made again every pass: say it once.
            if !st.notes.contains(&note) {
                st.notes.push(note);
            }
        }
    }
    Ok(buf)
}

/// Extra bytes per slot: unique write data needs its base period.
fn slack(plan: &crate::plan::TargetPlan) -> usize {
    let len = plan.xfer_bytes as usize;
    if plan.opts.op == Op::Write {
        plan.pattern.buffer_len(len) - len
    } else {
        0
    }
}

/// Runs one pass on io_uring; errors setting up the ring are recorded as
/// the pass's error.
pub fn run_pass(st: &mut QState, cx: &PassCtx) -> Counts {
    let plan = cx.plan;
    let cpu0 = thread_cpu();
    let Some(h) = cx.handle else {
        return Counts::default();
    };
    let fd = cx.backend.raw_fd(h).unwrap_or(-1);
    let mut engine = match ring(st, cx, fd) {
        Ok(e) => e,
        Err(e) => return setup_failed(st, cx, e),
    };
    let verifier = plan
        .verify
        .map(|m| Verifier::new(&plan.pattern, m, plan.xfer_bytes as usize));
    let mut hooks = Hooks {
        cx,
        st,
        verifier,
        c: Counts {
            latency: crate::record::results::Latency::live(),
            ..Default::default()
        },
        writes: 0,
    };
    let mut pacer = plan.schedule.map(|s| Pacer::start_at(s, cx.start_ns));
    // As in qthread::run_pass: the slot that ends a throttled pass.
    let mut next_slot = Some(plan.ops);
    let reqs = (0..plan.ops)
        .take_while(|&n| {
            // -stoptrigger: another target reached its mark, as
            // steps::admit checks it for a QThread.
            let stopped = |&(from, m): &(usize, _)| cx.progress.targets[from].reached(m, mono_ns());
            if plan.stop_when.iter().any(stopped) {
                cx.stop_pass();
                next_slot = None;
                return false;
            }
            let go = !cx.ending()
                && match pacer.as_mut() {
                    Some(p) if p.due_at_ns(n) >= cx.deadline_ns => {
                        next_slot = Some(n);
                        return false;
                    }
                    Some(p) => p.wait_for_slot_unless(n, || cx.ending()),
                    None => true,
                };
            if !go {
                next_slot = None;
            }
            go
        })
        .map(|n| Request {
            index: n,
            offset_bytes: cx.seeks.offset(n % plan.wrap),
        });
    let result = engine.run(reqs, &mut hooks);
    let Hooks { st, mut c, .. } = hooks;
    let ran = result.is_ok();
    // On success, latency was recorded per completion.
    if let Err(e) = result {
        let msg = format!("target {}: io_uring: {e}", plan.index);
        error(st, cx, &mut c, msg, "io_uring", e.raw_os_error());
    }
    c.elapsed_ns = match (pacer.as_mut(), next_slot, ran) {
        (Some(p), Some(k), true) => crate::run::steps::hold_to_schedule_end(p, cx, k),
        _ => mono_ns().saturating_sub(cx.start_ns),
    };
    (c.cpu_user_ns, c.cpu_sys_ns) = thread_cpu().since(&cpu0);
    c
}

/// The pass's ring on `fd`, every slot's buffer laid with the pattern
/// at the pass's first offset.
fn ring(st: &mut QState, cx: &PassCtx, fd: i32) -> Result<UringEngine, UringError> {
    let plan = cx.plan;
    let op = match plan.opts.op {
        Op::Read => IoOp::Read,
        Op::Write => IoOp::Write,
        Op::Noop => IoOp::Noop,
    };
    let cfg = UringConfig {
        depth: plan.opts.queuedepth as u32,
        buf_bytes: plan.xfer_bytes as usize,
        align: (plan.opts.memalign as usize).max(crate::run::buffer::page_size()),
        slack_bytes: slack(plan),
        tuning: Tuning::ALL,
    };
    let mut engine = UringEngine::with_buffer(fd, op, &cfg, slot_buffer(st, cx, &cfg)?)?;
    let first = cx.seeks.offset(0);
    for i in 0..engine.depth() {
        if let Some(b) = engine.buffer_mut(i) {
            plan.pattern.prefill(b, first);
        }
    }
    Ok(engine)
}

/// Records a ring that could not be set up as the pass's error and the
/// run's failure; the pass's counts.
fn setup_failed(st: &mut QState, cx: &PassCtx, e: UringError) -> Counts {
    let mut c = Counts::default();
    let msg = format!("target {}: -engine uring: {e}", cx.plan.index);
    error(st, cx, &mut c, msg, "io_uring setup", None);
    cx.run.fail(iolab_core::Failure {
        op: "io_uring setup".into(),
        path: Some(cx.path.to_string()),
        errno: None,
        message: e.to_string(),
        kind: iolab_core::FailureKind::Failed,
    });
    c
}
