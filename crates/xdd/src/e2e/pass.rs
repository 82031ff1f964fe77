//! The QThread loops of a copy. The source's loop reads request n of its
//! share (or, on the `null` target, generates it), sends it as one frame
//! and goes on to n + Q; the destination's receives a frame, checks it
//! is request n (offset, length, checksum), writes it and goes on. Both
//! reuse the QThread's one buffer: nothing is allocated, formatted or
//! locked per request; only errors make text.

use super::sum::FrameSums;
use super::{DestinationPath, Link, SourcePath, END_ABORTED, END_COMPLETE, END_TIME_LIMIT};
use crate::parse::values::Ordering;
use crate::plan::throttle::Pacer;
use crate::record::results::{Counts, Latency};
use crate::run::iopath::{IoPath, SyncPath, Transfer};
use crate::run::qstate::{PassCtx, QState};
use crate::run::steps::{
    admit, count, flush_if_due, note_error, stamp, thread_cpu, timing, verified, LockstepLocal,
};
use iolab_core::clock::mono_ns;
use iolab_core::Failure;
use iolab_net::frame::Kind;
use iolab_net::{Cancel, NetError};
use std::sync::atomic::Ordering::Release;
use std::time::Duration;

impl IoPath for SourcePath {
    fn name(&self) -> &'static str {
        "e2e-source"
    }
    fn threads(&self, queuedepth: u64) -> usize {
        queuedepth as usize
    }
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts {
        source(st, cx)
    }
}

impl IoPath for DestinationPath {
    fn name(&self) -> &'static str {
        "e2e-destination"
    }
    fn threads(&self, queuedepth: u64) -> usize {
        queuedepth as usize
    }
    fn run_pass(&self, st: &mut QState, cx: &PassCtx) -> Counts {
        destination(st, cx)
    }
}

/// Counters of one QThread's pass, ready for recording.
fn fresh() -> Counts {
    let mut c = Counts {
        latency: Latency::live(),
        ..Default::default()
    };
    c.e2e.qthreads = 1;
    c
}

/// Closes the counters of a pass: elapsed and CPU time.
fn close(mut c: Counts, cx: &PassCtx, cpu0: &crate::run::steps::ThreadCpu) -> Counts {
    c.elapsed_ns = mono_ns().saturating_sub(cx.start_ns);
    c.e2e.elapsed_sum_ns = c.elapsed_ns;
    (c.cpu_user_ns, c.cpu_sys_ns) = thread_cpu().since(cpu0);
    c
}

/// An error that ends the copy: counted, kept, and the run stopped (a
/// copy with a hole in it is no copy).
fn fatal(st: &mut QState, cx: &PassCtx, c: &mut Counts, op: &'static str, msg: String) {
    c.errors += 1;
    note_error(st, cx, msg.clone(), op, None);
    cx.run.fail(Failure {
        op: op.to_string(),
        path: Some(cx.path.to_string()),
        errno: None,
        message: msg,
        kind: iolab_core::FailureKind::Failed,
    });
}

/// Tells the peer why this side stops, then closes the connection so
/// that a peer blocked in a send or receive sees it at once.
fn tell_and_close(link: &mut Link, msg: &str) {
    let _ = link
        .conn
        .send(Kind::Error, 0, 0, msg.as_bytes(), Cancel::process());
    link.conn.shutdown();
}

/// The message the peer sent before it closed, if one is waiting.
fn peer_reason(link: &mut Link) -> Option<String> {
    link.conn.idle_timeout = Duration::from_secs(1);
    let (h, body) = link.conn.recv_owned(Cancel::process()).ok()?;
    (h.kind == Kind::Error).then(|| iolab_net::peer_text(&body))
}

/// Debug builds only, for the integrity test: `IOLAB_E2E_DAMAGE=N`
/// makes source QThread 0 flip one bit of the payload of its Nth data
/// frame (from 1) on its way out, after its checksum and (with a key)
/// its tag were computed ([`iolab_net::Conn::damage_next`]).
fn damage_at(q: usize) -> u64 {
    if !cfg!(debug_assertions) || q != 0 {
        return 0;
    }
    std::env::var("IOLAB_E2E_DAMAGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Why a source's loop ended.
fn end_flag(cx: &PassCtx) -> u8 {
    if cx.run.stopping() {
        END_ABORTED
    } else {
        END_TIME_LIMIT
    }
}

/// The QThread's connection, set up before the pass; its absence is a
/// fatal error of the run (counted in `c`).
fn take_link(st: &mut QState, cx: &PassCtx, c: &mut Counts) -> Option<crate::e2e::Link> {
    let link = st.link.take();
    if link.is_none() {
        let msg = "no connection for this QThread".to_string();
        fatal(st, cx, c, "e2e", msg);
    }
    link
}

/// Source QThread: read (or generate) each request of its share and
/// send it; then `End`, and wait for the destination's word.
pub fn source(st: &mut QState, cx: &PassCtx) -> Counts {
    let mut c = fresh();
    let cpu0 = thread_cpu();
    let Some(mut link) = take_link(st, cx, &mut c) else {
        return close(c, cx, &cpu0);
    };
    let (sent, flag) = send_share(st, cx, &mut link, &mut c);
    if flag != END_ABORTED || !cx.run.stopping() {
        finish_source(st, cx, &mut link, &mut c, sent, flag);
    } else {
        let _ = link
            .conn
            .send(Kind::End, flag, sent, &[], Cancel::process());
    }
    st.link = Some(link);
    close(c, cx, &cpu0)
}

/// The source's loop over its share; returns the frames sent and the
/// `End` flag.
fn send_share(st: &mut QState, cx: &PassCtx, link: &mut Link, c: &mut Counts) -> (u64, u8) {
    let plan = cx.plan;
    let qd = plan.opts.queuedepth.max(1);
    let generate = plan.caps.discards;
    let len0 = plan.xfer_bytes as usize;
    let mut sums = FrameSums::new(&plan.pattern, generate, st.buf.as_slice(), len0, cx.pass);
    let damage = damage_at(st.q);
    let mut pacer = plan.schedule.map(|s| Pacer::start_at(s, cx.start_ns));
    let mut lock = LockstepLocal::default();
    let first = link.first_op_in(cx.pass);
    let mut n = first + st.q as u64;
    let mut sent = 0u64;
    while n < plan.ops {
        let j = n - first;
        if cx.ending() || !admit(cx, j, &mut lock) {
            return (sent, end_flag(cx));
        }
        if let Some(p) = pacer.as_mut() {
            if !p.wait_for_slot_unless(j, || cx.ending()) {
                lock.done(cx);
                return (sent, end_flag(cx));
            }
        }
        let hurt = damage != 0 && sent + 1 == damage;
        let sent_ok = send_one(st, cx, link, c, &mut sums, hurt, n, j);
        lock.done(cx);
        if !sent_ok {
            return (sent, END_ABORTED);
        }
        sent += 1;
        n += qd;
    }
    (sent, END_COMPLETE)
}

/// Reads request `n` (the `j`th of this run's share) and sends it as one
/// frame (`hurt`: damaged on its way, for the integrity test); false when
/// the copy must end.
#[allow(clippy::too_many_arguments)]
fn send_one(
    st: &mut QState,
    cx: &PassCtx,
    link: &mut Link,
    c: &mut Counts,
    sums: &mut FrameSums,
    hurt: bool,
    n: u64,
    j: u64,
) -> bool {
    let plan = cx.plan;
    let cancel = Cancel::token_with(cx.run.token(), cx.run.stop_flag());
    let generate = plan.caps.discards;
    let len = plan.op_bytes(n) as usize;
    let offset = cx.seeks.offset(n % plan.wrap);
    let t0 = mono_ns();
    let Some(at) = read_request(st, cx, c, n, offset, len, generate) else {
        return false;
    };
    let t1 = mono_ns();
    c.e2e.storage_ns += t1 - t0;
    if c.e2e.first_read_ns == 0 {
        c.e2e.first_read_ns = (t1 - cx.start_ns).max(1);
    }
    if plan.opts.ordering == Ordering::Loose {
        cx.shared.issued.store(j + 1, Release);
    }
    let sum = sums.sum(st.buf.as_slice(), at, offset, len);
    let buf = &st.buf.as_slice()[at..at + len];
    if hurt {
        link.conn.damage_next();
    }
    let r = match sum {
        Some(sum) => link
            .conn
            .send_summed(Kind::Data, 0, offset, buf, sum, cancel),
        None => link.conn.send(Kind::Data, 0, offset, buf, cancel),
    };
    let t2 = mono_ns();
    if plan.opts.ordering == Ordering::Serial {
        cx.shared.completed.store(j + 1, Release);
    }
    c.e2e.sr_ns += t2 - t1;
    if let Err(e) = r {
        sent_failed(st, cx, link, c, offset, e);
        return false;
    }
    c.e2e.frames += 1;
    if c.e2e.lag_ns == 0 {
        c.e2e.lag_ns = (t2 - cx.start_ns).max(1);
    }
    c.e2e.last_write_ns = t2 - cx.start_ns;
    done_op(st, cx, c, n, true, offset, len, t0, t2);
    true
}

/// Counts, time-stamps and publishes one completed request.
#[allow(clippy::too_many_arguments)]
#[inline]
fn done_op(
    st: &mut QState,
    cx: &PassCtx,
    c: &mut Counts,
    n: u64,
    read: bool,
    offset: u64,
    len: usize,
    t0: u64,
    t1: u64,
) {
    timing(c, cx, n, offset, t0, t1);
    count(c, read, len as u64);
    st.live.op(read, len as u64, t1.saturating_sub(t0));
    cx.progress.targets[cx.plan.index].add(len as u64);
    if let Some(ts) = st.ts.as_mut() {
        ts.record(stamp(cx, st.q, n, read, offset, len, len, t0, t1));
    }
}

/// Fills the buffer with request `n`: read from the target, or (the
/// `null` target) the data pattern. Returns where in the buffer the
/// request starts (unique data is a window on a longer base), or None
/// when the copy must stop.
#[allow(clippy::too_many_arguments)]
fn read_request(
    st: &mut QState,
    cx: &PassCtx,
    c: &mut Counts,
    n: u64,
    offset: u64,
    len: usize,
    generate: bool,
) -> Option<usize> {
    let plan = cx.plan;
    if generate {
        let mut at = 0;
        if plan.pattern.varies_per_request() {
            let t = mono_ns();
            at = plan
                .pattern
                .place(st.buf.as_mut_slice(), offset, len, cx.pass);
            c.pattern_fill_ns += mono_ns() - t;
        }
        return Some(at);
    }
    let buf = &mut st.buf.as_mut_slice()[..len];
    let why = match SyncPath.transfer(cx, buf, offset, true) {
        Ok(k) if k == len => None,
        Ok(k) => Some(format!(
            "read {k} of {len} bytes (the source is shorter than the amount to copy?)"
        )),
        Err(e) => Some(format!("read of {len} bytes failed: {e}")),
    };
    if let Some(why) = why {
        let msg = format!("target {} op {n} at offset {offset}: {why}", plan.index);
        fatal(st, cx, c, "read", msg);
        return None;
    }
    let go_on = match &st.verifier {
        Some(v) => {
            let m = v.check(&st.buf.as_slice()[..len], offset);
            verified(st, cx, c, n, offset, &m) || !cx.run.stopping()
        }
        None => true,
    };
    go_on.then_some(0)
}

/// A send failed: the error, with the destination's reason when it
/// left one.
fn sent_failed(
    st: &mut QState,
    cx: &PassCtx,
    link: &mut Link,
    c: &mut Counts,
    offset: u64,
    e: NetError,
) {
    if matches!(e, NetError::Cancelled) {
        return;
    }
    let said = peer_reason(link)
        .map(|r| format!("; the destination said: {r}"))
        .unwrap_or_default();
    let msg = format!(
        "target {} qthread {}: sending the request at offset {offset} failed: {e}{said}",
        cx.plan.index, st.q
    );
    fatal(st, cx, c, "send", msg);
}

/// Sends `End` and waits for the destination to confirm its share is
/// written (or to say why not).
fn finish_source(
    st: &mut QState,
    cx: &PassCtx,
    link: &mut Link,
    c: &mut Counts,
    sent: u64,
    flag: u8,
) {
    let cancel = Cancel::token_with(cx.run.token(), cx.run.stop_flag());
    let r = link
        .conn
        .send(Kind::End, flag, sent, &[], cancel)
        .and_then(|_| link.conn.recv_owned(cancel));
    let why = match r {
        Ok((h, _)) if h.kind == Kind::End => return,
        Ok((h, body)) if h.kind == Kind::Error => {
            format!("the destination failed: {}", iolab_net::peer_text(&body))
        }
        Ok((h, _)) => format!("unexpected {:?} frame from the destination", h.kind),
        Err(NetError::Cancelled) => return,
        // A destination that refused a frame closes once it has said
        // why: the End may meet a broken pipe with that reason waiting.
        Err(e) => match peer_reason(link) {
            Some(r) => format!("the destination failed: {r}"),
            None => format!("no word from the destination after the last request: {e}"),
        },
    };
    let msg = format!("target {} qthread {}: {why}", cx.plan.index, st.q);
    fatal(st, cx, c, "e2e", msg);
}

/// Destination QThread: receive each request of its share, check it,
/// write it; answer the source's `End`.
pub fn destination(st: &mut QState, cx: &PassCtx) -> Counts {
    let mut c = fresh();
    let cpu0 = thread_cpu();
    let Some(mut link) = take_link(st, cx, &mut c) else {
        return close(c, cx, &cpu0);
    };
    if let Err(msg) = receive_share(st, cx, &mut link, &mut c) {
        if !msg.is_empty() {
            fatal(st, cx, &mut c, "e2e", msg.clone());
        }
        let why = if msg.is_empty() {
            "the destination stopped (interrupted, or another QThread failed)".to_string()
        } else {
            msg
        };
        tell_and_close(&mut link, &why);
    }
    st.link = Some(link);
    close(c, cx, &cpu0)
}

/// The byte after request `n` of this QThread's share, i.e. its low
/// mark once `n` is written: the offset of its next request, or
/// u64::MAX when it has none left.
fn low_after(cx: &PassCtx, next: u64) -> u64 {
    if next < cx.plan.ops {
        cx.seeks.offset(next % cx.plan.wrap)
    } else {
        u64::MAX
    }
}

/// The destination's loop. Err(message) when the copy cannot go on
/// (an empty message: stopped from outside, nothing new to say).
fn receive_share(
    st: &mut QState,
    cx: &PassCtx,
    link: &mut Link,
    c: &mut Counts,
) -> Result<(), String> {
    let plan = cx.plan;
    let qd = plan.opts.queuedepth.max(1);
    let cancel = Cancel::token_with(cx.run.token(), cx.run.stop_flag());
    let mut lock = LockstepLocal::default();
    let mut writes = 0u64;
    let mut n = link.first_op_in(cx.pass) + st.q as u64;
    let mut got = 0u64;
    link.mark_low(st.q, cx.pass, low_after(cx, n));
    loop {
        // A steady stream never makes a read wait, so the stop (Ctrl-C,
        // a failed QThread) is looked at between frames too.
        if cx.run.stopping() {
            return Err(String::new());
        }
        let t0 = mono_ns();
        let h = match link.conn.recv_header(cancel) {
            Ok(h) => h,
            Err(NetError::Cancelled) => return Err(String::new()),
            Err(e) => return Err(lost(cx, st.q, got, n, e)),
        };
        match h.kind {
            Kind::Data => {}
            Kind::End => return end_of_share(cx, link, st.q, &h, got, n),
            Kind::Error => {
                let mut body = vec![0u8; h.len as usize];
                // A reason that fails its check is not the source's.
                let said = match link.conn.recv_payload(&h, &mut body, cancel) {
                    Ok(b) => format!("the source failed: {}", iolab_net::peer_text(b)),
                    Err(e) => format!("a frame that says the source failed: {e}"),
                };
                return Err(format!("target {} qthread {}: {said}", plan.index, st.q));
            }
            Kind::Control => {
                return Err(format!(
                    "target {} qthread {}: a handshake message in the data stream",
                    plan.index, st.q
                ))
            }
        }
        let len = expect(cx, st.q, &h, n)?;
        let offset = h.offset;
        match link.conn.recv_payload(&h, st.buf.as_mut_slice(), cancel) {
            Ok(_) => {}
            Err(NetError::Cancelled) => return Err(String::new()),
            // Damage (CRC) or, with a key, a change made on the way
            // (tag): either way not one byte of it is written.
            Err(e @ (NetError::Checksum { .. } | NetError::Forged { .. })) => {
                c.e2e.checksum_errors += 1;
                return Err(format!(
                    "target {} qthread {}: request {n}: {e}; nothing of it was written",
                    plan.index, st.q
                ));
            }
            Err(e) => return Err(lost(cx, st.q, got, n, e)),
        }
        let t1 = mono_ns();
        c.e2e.sr_ns += t1 - t0;
        c.e2e.frames += 1;
        if c.e2e.lag_ns == 0 {
            c.e2e.lag_ns = (t1 - cx.start_ns).max(1);
            c.e2e.first_read_ns = c.e2e.lag_ns;
        }
        got += 1;
        write_request(st, cx, c, link, n, offset, len, t0, &mut lock, &mut writes)?;
        n += qd;
    }
}

/// Checks that frame `h` is request `n` of this QThread's share; its
/// length in bytes.
fn expect(cx: &PassCtx, q: usize, h: &iolab_net::frame::Header, n: u64) -> Result<usize, String> {
    let plan = cx.plan;
    if n >= plan.ops {
        return Err(format!(
            "target {} qthread {q}: the source sent more requests than the copy has ({})",
            plan.index, plan.ops
        ));
    }
    let len = plan.op_bytes(n);
    let offset = cx.seeks.offset(n % plan.wrap);
    if h.offset != offset || u64::from(h.len) != len {
        return Err(format!(
            "target {} qthread {q}: expected request {n} ({len} bytes at offset {offset}), got {} bytes at offset {}",
            plan.index, h.len, h.offset
        ));
    }
    Ok(len as usize)
}

/// Verifies (when asked), orders (when asked) and writes one received
/// request, then moves the QThread's low mark past it.
#[allow(clippy::too_many_arguments)]
fn write_request(
    st: &mut QState,
    cx: &PassCtx,
    c: &mut Counts,
    link: &Link,
    n: u64,
    offset: u64,
    len: usize,
    t0: u64,
    lock: &mut LockstepLocal,
    writes: &mut u64,
) -> Result<(), String> {
    let plan = cx.plan;
    if let Some(v) = &st.verifier {
        let m = v.check(&st.buf.as_slice()[..len], offset);
        if !verified(st, cx, c, n, offset, &m) && cx.run.stopping() {
            return Err(String::new());
        }
    }
    let j = n - link.first_op_in(cx.pass);
    if !admit(cx, j, lock) {
        return Err(String::new());
    }
    if plan.opts.ordering == Ordering::Loose {
        cx.shared.issued.store(j + 1, Release);
    }
    let t2 = mono_ns();
    let r = SyncPath.transfer(cx, &mut st.buf.as_mut_slice()[..len], offset, false);
    let t3 = mono_ns();
    lock.done(cx);
    if plan.opts.ordering == Ordering::Serial {
        cx.shared.completed.store(j + 1, Release);
    }
    c.e2e.storage_ns += t3 - t2;
    match r {
        Ok(k) if k == len => {}
        Ok(k) => {
            return Err(format!(
                "target {} op {n}: wrote {k} of {len} bytes at offset {offset}",
                plan.index
            ))
        }
        Err(e) => {
            return Err(format!(
                "target {} op {n}: write of {len} bytes at offset {offset} failed: {e}",
                plan.index
            ))
        }
    }
    link.mark_low(
        st.q,
        cx.pass,
        low_after(cx, n + plan.opts.queuedepth.max(1)),
    );
    c.e2e.last_write_ns = t3 - cx.start_ns;
    done_op(st, cx, c, n, false, offset, len, t0, t3);
    flush_if_due(st, cx, c, writes);
    Ok(())
}

/// The source's `End`: every request of the share arrived (or the
/// source reached its time limit); answer it.
fn end_of_share(
    cx: &PassCtx,
    link: &mut Link,
    q: usize,
    h: &iolab_net::frame::Header,
    got: u64,
    next: u64,
) -> Result<(), String> {
    let plan = cx.plan;
    if cx.run.stopping() {
        // This side is stopping already: the source's word adds nothing.
        return Err(String::new());
    }
    let whole = next >= plan.ops;
    let why = match h.flags {
        _ if h.offset != got => Some(format!(
            "the source says it sent {} requests, {got} arrived",
            h.offset
        )),
        END_COMPLETE if !whole => Some(format!(
            "the source ended the pass with request {next} of {} still to come",
            plan.ops
        )),
        END_COMPLETE | END_TIME_LIMIT => None,
        _ => Some(format!(
            "the source stopped before the end (interrupted or failed) after {got} requests of this QThread"
        )),
    };
    if let Some(w) = why {
        return Err(format!("target {} qthread {q}: {w}", plan.index));
    }
    let cancel = Cancel::token_with(cx.run.token(), cx.run.stop_flag());
    link.conn
        .send(Kind::End, 0, got, &[], cancel)
        .map(drop)
        .map_err(|e| {
            format!(
                "target {} qthread {q}: answering the source: {e}",
                plan.index
            )
        })?;
    Ok(())
}

/// The message for a connection that broke mid-copy.
fn lost(cx: &PassCtx, q: usize, got: u64, next: u64, e: NetError) -> String {
    let what = match e {
        NetError::Closed => "the source closed the connection".to_string(),
        NetError::Protocol(m) if m.contains("closed") => {
            "the source closed the connection in the middle of a request".to_string()
        }
        NetError::Io(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            "the source closed the connection (reset)".to_string()
        }
        e => e.to_string(),
    };
    format!(
        "target {} qthread {q}: {what} after {got} requests, before request {next} of {}",
        cx.plan.index, cx.plan.ops
    )
}
