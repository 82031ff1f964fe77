//! A target: its file (opened, created, preallocated, checked for safety),
//! its QThreads' state, and its pass loop with the barrier, delays and
//! per-pass file handling. One target thread runs `run_target`; it spawns
//! the QThreads of each pass as scoped threads that borrow their state.

use crate::buffer::IoBuffer;
use crate::config::GlobalOpts;
use crate::datapat::Verifier;
use crate::error::RunError;
use crate::placement;
use crate::plan::TargetPlan;
use crate::progress::{wait_until, Progress};
use crate::qthread::{run_pass, PassCtx, PassShared, QState};
use crate::results::{Counts, QthreadPass, TargetInfo, TargetPass};
use iolab_backend::{Backend, Handle, OpenOptions};
use iolab_core::clock::mono_ns;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Barrier;
use std::time::Duration;

/// A target ready to run: file open, buffers filled.
pub struct Target<'a> {
    /// Its plan.
    pub plan: &'a TargetPlan,
    /// The path of the current pass's file.
    pub path: String,
    /// Open handle (None for `null`).
    pub handle: Option<Handle>,
    /// QThread states.
    pub qthreads: Vec<QState>,
    /// Facts for the report.
    pub info: TargetInfo,
    /// Things to tell the user.
    pub notes: Vec<String>,
    /// The target file was created by this run.
    pub created: bool,
}

/// What the target threads share.
pub struct RunShared<'a> {
    /// Run-wide options.
    pub global: &'a GlobalOpts,
    /// The backend.
    pub backend: &'a dyn Backend,
    /// Everyone's progress.
    pub progress: &'a Progress,
    /// Start-of-pass barrier for all targets.
    pub barrier: Barrier,
    /// Run-wide stop.
    pub stop: AtomicBool,
    /// Monotonic run start, ns.
    pub run_start_ns: u64,
    /// Monotonic end of -runtime (u64::MAX = none).
    pub run_deadline_ns: u64,
    /// Processors online.
    pub cpus: usize,
}

fn cpath(p: &str) -> CString {
    CString::new(p.as_bytes()).unwrap_or_default()
}

fn fail(plan: &TargetPlan, path: &str, what: &'static str, source: std::io::Error) -> RunError {
    RunError::Target {
        target: plan.index,
        path: path.to_string(),
        what,
        err: source,
    }
}

/// Opens a target (never creating anything for a read-only target) and
/// falls back from O_DIRECT with a note when the file system refuses it.
fn open(
    be: &dyn Backend,
    plan: &TargetPlan,
    path: &str,
    notes: &mut Vec<String>,
) -> Result<(Handle, bool, bool), RunError> {
    let t = &plan.opts;
    let writes = t.writes();
    let exists = be.stat(&cpath(path)).is_ok();
    let mut o = OpenOptions {
        read: true,
        write: writes,
        create: writes && !exists,
        ..Default::default()
    };
    o.direct = t.dio;
    match be.open(&cpath(path), o) {
        Ok(h) => Ok((h, o.direct, o.create)),
        Err(e) if t.dio && e.raw_os_error() == Some(libc::EINVAL) => {
            let fs = iolab_core::env::fs_info(std::path::Path::new(path)).fs_type;
            notes.push(format!("target {} ({path}): -dio: O_DIRECT is not supported here (file system '{fs}': {e}); running with buffered I/O", plan.index));
            o.direct = false;
            let h = be
                .open(&cpath(path), o)
                .map_err(|e| fail(plan, path, "open", e))?;
            Ok((h, false, o.create))
        }
        Err(e) => Err(fail(
            plan,
            path,
            if o.create { "create" } else { "open" },
            e,
        )),
    }
}

/// Refuses to write a block device that looks in use, unless -force.
fn check_safety(be: &dyn Backend, plan: &TargetPlan, g: &GlobalOpts) -> Result<bool, RunError> {
    let Ok(st) = be.stat(&cpath(&plan.opts.path)) else {
        return Ok(false);
    };
    if st.is_block_device && plan.opts.writes() && !g.force {
        if let Some(why) = crate::safety::block_device_in_use(&plan.opts.path, st.rdev) {
            return Err(RunError::Refused(format!(
                "target {} ({}): refusing to write to this block device because {why}; add -force to overwrite it",
                plan.index, plan.opts.path
            )));
        }
    }
    Ok(st.is_block_device)
}

/// Prepares a target: safety check, open, preallocate, buffers.
pub fn prepare<'a>(
    plan: &'a TargetPlan,
    sh: &RunShared,
    ordinal0: usize,
) -> Result<Target<'a>, RunError> {
    let t = &plan.opts;
    let mut notes = Vec::new();
    let mut info = TargetInfo {
        path: t.path.clone(),
        planned_ops: plan.ops,
        range_blocks: plan.seek.range_blocks(),
        pid: std::process::id(),
        ..Default::default()
    };
    let mut handle = None;
    let mut created = false;
    if !t.is_null() {
        info.block_device = check_safety(sh.backend, plan, sh.global)?;
        info.fs = Some(iolab_core::env::fs_info(std::path::Path::new(&t.path)));
        if !t.createnewfiles {
            let (h, direct, c) = open(sh.backend, plan, &t.path, &mut notes)?;
            handle = Some(h);
            info.direct_io = direct;
            created = c;
            preallocate(sh.backend, plan, h, &t.path, &mut notes);
        }
    }
    // io_uring keeps the queue depth in flight from one thread.
    let threads = if t.engine == crate::values::EngineKind::Uring {
        1
    } else {
        t.queuedepth as usize
    };
    let qthreads = (0..threads)
        .map(|q| qstate(plan, sh, q, ordinal0 + q, &mut notes))
        .collect::<Result<_, _>>()?;
    seek_outputs(plan, &mut info)?;
    Ok(Target {
        plan,
        path: t.path.clone(),
        handle,
        qthreads,
        info,
        notes,
        created,
    })
}

fn preallocate(
    be: &dyn Backend,
    plan: &TargetPlan,
    h: Handle,
    path: &str,
    notes: &mut Vec<String>,
) {
    let bytes = plan.opts.preallocate;
    if bytes == 0 || !plan.opts.writes() {
        return;
    }
    if let Err(e) = be.preallocate(h, 0, bytes) {
        notes.push(format!(
            "target {} ({path}): -preallocate {bytes}: {e}",
            plan.index
        ));
    }
}

fn qstate(
    plan: &TargetPlan,
    sh: &RunShared,
    q: usize,
    ordinal: usize,
    notes: &mut Vec<String>,
) -> Result<QState, RunError> {
    let t = &plan.opts;
    let len = plan.xfer_bytes as usize;
    let align = (t.memalign as usize).max(crate::buffer::page_size());
    let mut buf = if t.sharedmemory {
        IoBuffer::shared(len)
    } else {
        IoBuffer::heap(len, align)
    }
    .map_err(|e| fail(plan, &t.path, "allocate the I/O buffer", e))?;
    if sh.global.memlock {
        if let Err(e) = buf.lock() {
            if q == 0 {
                notes.push(format!(
                    "target {}: cannot lock I/O buffers in memory ({e}); continuing unlocked",
                    plan.index
                ));
            }
        }
    }
    plan.pattern
        .prefill(buf.as_mut_slice(), plan.seek.pass(1).offset(0));
    Ok(QState {
        q,
        buf,
        verifier: plan.verify.map(|m| Verifier::new(&plan.pattern, m, len)),
        cpu: placement::cpu_for(sh.global, t.processor, ordinal, sh.cpus),
        messages: Vec::new(),
        notes: Vec::new(),
        error_count: 0,
        ts: t.timestamps.enabled.then(|| {
            let o = ts_options(plan, sh.global.passes);
            crate::timestamp::TsTable::new(&o, plan.index as u32, q as u32, sh.run_start_ns)
        }),
    })
}

/// The data-path module's time stamp options for a target. The table
/// size per QThread is `-ts size`, or every operation of the run capped at
/// 2^18 entries so that a long run cannot exhaust memory (64 bytes each).
pub fn ts_options(plan: &TargetPlan, passes: u64) -> crate::timestamp::TsOptions {
    const CAP: u64 = 1 << 18;
    let ts = &plan.opts.timestamps;
    let all = plan.ops.saturating_mul(passes).min(CAP);
    let size = ts.size.unwrap_or(all) as usize;
    crate::timestamp::TsOptions {
        size,
        mode: if ts.oneshot {
            crate::timestamp::TsMode::Oneshot
        } else {
            crate::timestamp::TsMode::Wrap
        },
        summary: ts.summary,
        detailed: ts.detailed,
        normalize: ts.normalize,
        trigger_time_s: ts.trigger_time_s,
        trigger_op: ts.trigger_op,
        output: ts.output.as_ref().map(Into::into),
        append: ts.append,
        dump: ts.dump.as_ref().map(Into::into),
    }
}

/// -seek save and the seek histograms (computed from the plan, not timed).
fn seek_outputs(plan: &TargetPlan, info: &mut TargetInfo) -> Result<(), RunError> {
    let s = &plan.opts.seek;
    let pass = plan.seek.pass(1);
    if let Some(name) = &s.save {
        let f = &crate::seek::save_file_name(name, plan.index);
        let file = std::fs::File::create(f).map_err(|e| fail(plan, f, "-seek save", e))?;
        pass.save_ops(std::io::BufWriter::new(file), |n| plan.is_read(n))
            .map_err(|e| fail(plan, f, "-seek save", e))?;
    }
    info.disthist = s.disthist.map(|n| pass.distance_histogram(n as usize));
    info.seekhist = s.seekhist.map(|n| pass.location_histogram(n as usize));
    Ok(())
}

fn sleep_s(s: f64, sh: &RunShared) {
    let end = mono_ns() + (s * 1e9) as u64;
    while mono_ns() < end && !stopping(sh) {
        std::thread::sleep(
            Duration::from_millis(5).min(Duration::from_nanos(end.saturating_sub(mono_ns()))),
        );
    }
}

fn stopping(sh: &RunShared) -> bool {
    sh.stop.load(Relaxed) || iolab_core::stop::requested() || mono_ns() >= sh.run_deadline_ns
}

/// Runs every pass of a target; returns its passes and error messages.
pub fn run_target(tg: &mut Target, sh: &RunShared) -> (Vec<TargetPass>, Vec<String>) {
    let (plan, g) = (tg.plan, sh.global);
    let me = &sh.progress.targets[plan.index];
    let mut passes = Vec::new();
    let mut messages = Vec::new();
    for pass in 1..=g.passes {
        if pass > 1 && !stopping(sh) {
            sleep_s(g.passdelay_s, sh);
        }
        let file_ok = !stopping(sh) && per_pass_file(tg, sh, pass, &mut messages);
        me.prepare_pass(pass);
        if !g.nobarrier {
            sh.barrier.wait();
        }
        for &(from, m) in &plan.start_after {
            let p = &sh.progress.targets[from];
            wait_until(
                || p.reached(m, mono_ns()) || p.run_done.load(Relaxed),
                || stopping(sh),
            );
        }
        // After the barrier, so that a delayed target does not hold back
        // the others; neither delay counts in the pass time.
        if pass == 1 {
            sleep_s(plan.opts.startdelay_s, sh);
        }
        sleep_s(plan.index as f64 * plan.opts.targetstartdelay_s, sh);
        if !file_ok || stopping(sh) {
            continue;
        }
        passes.push(one_pass(tg, sh, pass));
        me.pass_done.store(true, Relaxed);
    }
    me.run_done.store(true, Relaxed);
    for q in &mut tg.qthreads {
        messages.append(&mut q.messages);
        tg.notes.append(&mut q.notes);
    }
    collect_timestamps(tg);
    (passes, messages)
}

/// Runs the QThreads of one pass and merges them.
fn one_pass(tg: &mut Target, sh: &RunShared, pass: u64) -> TargetPass {
    let plan = tg.plan;
    let shared = PassShared::default();
    let start_ns = mono_ns();
    sh.progress.targets[plan.index].begin_pass(pass, start_ns);
    let limit = plan.opts.timelimit_s;
    let deadline = if limit > 0.0 {
        start_ns + (limit * 1e9) as u64
    } else {
        u64::MAX
    };
    let cx = PassCtx {
        plan,
        global: sh.global,
        backend: sh.backend,
        handle: tg.handle,
        seeks: plan.seek.pass(pass as u32),
        shared: &shared,
        start_ns,
        deadline_ns: deadline.min(sh.run_deadline_ns),
        progress: sh.progress,
        run_stop: &sh.stop,
        pass: pass as u32,
    };
    let qs: Vec<QthreadPass> = std::thread::scope(|s| {
        let hs: Vec<_> = tg
            .qthreads
            .iter_mut()
            .map(|st| {
                let cx = &cx;
                s.spawn(move || qthread_main(st, cx, sh))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut counts = Counts::default();
    qs.iter().for_each(|q| counts.merge_parallel(&q.counts));
    end_of_pass_sync(tg, sh, &mut counts);
    let end = mono_ns();
    counts.elapsed_ns = end - start_ns;
    let rel = |t: u64| t.saturating_sub(sh.run_start_ns);
    let qthreads = qs
        .into_iter()
        .map(|mut q| {
            q.start_ns = rel(start_ns);
            q
        })
        .collect();
    TargetPass {
        target: plan.index,
        pass,
        start_ns: rel(start_ns),
        end_ns: rel(end),
        counts,
        qthreads,
    }
}

fn qthread_main(st: &mut QState, cx: &PassCtx, sh: &RunShared) -> QthreadPass {
    if let Some(cpu) = st.cpu {
        if let Err(e) = placement::pin_current(cpu) {
            if st.notes.is_empty() {
                st.notes
                    .push(format!("target {} qthread {}: {e}", cx.plan.index, st.q));
            }
        }
    }
    if sh.global.maxpri {
        let _ = placement::max_priority_current();
    }
    let counts = if cx.plan.opts.engine == crate::values::EngineKind::Uring {
        crate::uring_pass::run_pass(st, cx)
    } else {
        run_pass(st, cx)
    };
    QthreadPass {
        qthread: st.q,
        start_ns: 0,
        counts,
    }
}

/// -syncwrite: flush at the end of the pass; the time counts in the pass.
fn end_of_pass_sync(tg: &Target, sh: &RunShared, c: &mut Counts) {
    if let (true, Some(h)) = (tg.plan.opts.syncwrite && tg.plan.opts.writes(), tg.handle) {
        let t = mono_ns();
        if sh.backend.fsync(h).is_err() {
            c.errors += 1;
        }
        c.flush_ns += mono_ns() - t;
    }
}

/// -createnewfiles, -recreatefiles, -reopen before pass `pass`.
fn per_pass_file(tg: &mut Target, sh: &RunShared, pass: u64, msgs: &mut Vec<String>) -> bool {
    let t = &tg.plan.opts;
    if t.is_null() {
        return true;
    }
    let fresh = t.createnewfiles;
    let again = pass > 1 && (t.recreatefiles || t.reopen);
    if !fresh && !again {
        return true;
    }
    if let Some(h) = tg.handle.take() {
        let _ = sh.backend.close(h);
    }
    let path = if fresh {
        format!("{}.{pass}", t.path)
    } else {
        t.path.clone()
    };
    if t.recreatefiles && !fresh && !tg.info.block_device {
        let _ = sh.backend.unlink(&cpath(&path));
    }
    let mut notes = Vec::new();
    match open(sh.backend, tg.plan, &path, &mut notes) {
        Ok((h, direct, _)) => {
            tg.handle = Some(h);
            tg.info.direct_io = direct;
            tg.path = path.clone();
            tg.info.path = path;
            preallocate(sh.backend, tg.plan, h, &tg.path, &mut tg.notes);
            tg.notes.extend(notes);
            true
        }
        Err(e) => {
            tg.info.failures += 1;
            msgs.push(e.to_string());
            sh.stop.store(true, Relaxed);
            false
        }
    }
}

/// Moves the QThreads' time stamps into the report data, oldest first.
fn collect_timestamps(tg: &mut Target) {
    let tables: Vec<_> = tg.qthreads.iter_mut().filter_map(|q| q.ts.take()).collect();
    if tables.is_empty() {
        return;
    }
    let bs = tg.plan.opts.blocksize;
    let mut info = tables[0].info(bs);
    info.qthread = if tables.len() > 1 { u32::MAX } else { 0 };
    info.dropped = tables.iter().map(|t| t.dropped()).sum();
    info.wrapped = tables.iter().any(|t| t.info(bs).wrapped);
    tg.info.timestamps = Some(crate::results::Timestamps {
        options: ts_options(tg.plan, 1),
        info,
        entries: crate::timestamp::merge_by_start(&tables),
    });
}

/// Closes the target's file.
pub fn close(tg: &mut Target, be: &dyn Backend) {
    if let Some(h) = tg.handle.take() {
        let _ = be.close(h);
    }
}

/// Closes the file and applies -deletefile (never to a device).
pub fn finish(tg: &mut Target, be: &dyn Backend) {
    close(tg, be);
    let t = &tg.plan.opts;
    if !t.deletefile || t.is_null() {
        return;
    }
    if tg.info.block_device {
        tg.notes.push(format!(
            "target {} ({}): -deletefile does not delete a block device",
            tg.plan.index, tg.path
        ));
    } else if let Err(e) = be.unlink(&cpath(&tg.path)) {
        tg.notes.push(format!(
            "target {} ({}): -deletefile: {e}",
            tg.plan.index, tg.path
        ));
    }
}
