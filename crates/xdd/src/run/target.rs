//! A target: its file (opened, created, preallocated, checked for safety),
//! its QThreads' state, and its pass loop with the barrier, delays and
//! per-pass file handling. One target thread runs `run_target`; it spawns
//! the QThreads of each pass as scoped threads that borrow their state.

use crate::error::RunError;
use crate::parse::config::GlobalOpts;
use crate::plan::datapat::Verifier;
use crate::plan::placement;
use crate::plan::TargetPlan;
use crate::record::passlog::PassSpool;
use crate::record::results::{Counts, QthreadPass, TargetInfo, TargetPass};
use crate::run::buffer::IoBuffer;
use crate::run::gate::Gate;
use crate::run::iopath::IoPath;
use crate::run::progress::{wait_until, Progress};
use crate::run::qstate::{PassCtx, PassShared, QState};
use crate::run::runstate::RunState;
use iolab_backend::{Backend, Handle, OpenOptions};
use iolab_core::clock::mono_ns;
use iolab_core::Failure;
use std::ffi::CString;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// A target ready to run: file open, buffers filled.
pub struct Target<'a> {
    /// Its plan.
    pub plan: &'a TargetPlan,
    /// The backend its file lives on.
    pub be: &'a dyn Backend,
    /// How its requests reach the backend.
    pub io: &'static dyn IoPath,
    /// The path of the current pass's file.
    pub path: String,
    /// Open handle (None between per-pass files).
    pub handle: Option<Handle>,
    /// QThread states.
    pub qthreads: Vec<QState>,
    /// Facts for the report.
    pub info: TargetInfo,
    /// Things to tell the user.
    pub notes: Vec<String>,
    /// Files this run created, oldest first: removed when the run fails
    /// or is interrupted (unless -keepfiles), never any other file.
    pub created: Vec<String>,
    /// The target file was there before the run (a recreated file of the
    /// user's stays theirs).
    pub existed_before: bool,
    /// -createnewfiles' per-pass files that were there before the run:
    /// written, but the user's, so -deletefile keeps them (and says so).
    pub kept: Vec<String>,
    /// The first pass this run does: a resumed copy of several passes
    /// skips the passes its restart record says are done.
    pub first_pass: u64,
    /// A block device written without -force, held exclusively for the
    /// run (nothing mounts it meanwhile; see [`check_safety`]).
    pub claim: iolab_backend::safety::DeviceClaim,
    /// The destination `path` becomes once the copy is complete: an
    /// end-to-end copy built under a temporary name
    /// ([`crate::e2e::partial`]).
    pub rename_to: Option<String>,
}

/// What the target threads share.
pub struct RunShared<'a> {
    /// Run-wide options.
    pub global: &'a GlobalOpts,
    /// Everyone's progress.
    pub progress: &'a Progress,
    /// Start-of-pass barrier for all targets; gives up when the run stops.
    pub gate: Gate,
    /// Run-wide stop, failure and first error.
    pub state: RunState,
    /// Monotonic run start, ns.
    pub run_start_ns: u64,
    /// Monotonic end of -runtime (u64::MAX = none).
    pub run_deadline_ns: u64,
    /// Processors online.
    pub cpus: usize,
}

pub(crate) fn cpath(p: &str) -> CString {
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
/// Returns (handle, O_DIRECT used, created by this call). A missing file
/// is created exclusively, so that a file someone else made meanwhile is
/// never counted as ours (and never removed by our cleanup).
fn open(
    be: &dyn Backend,
    plan: &TargetPlan,
    path: &str,
    notes: &mut Vec<String>,
) -> Result<(Handle, bool, bool), RunError> {
    let t = &plan.opts;
    let create = t.writes() && be.stat(&cpath(path)).is_err();
    // A copy that never overwrites makes its file itself or not at all.
    let strict = t.e2e.noclobber && t.e2e.role() == Some(crate::e2e::opts::Role::Destination);
    let mut o = OpenOptions {
        read: true,
        write: t.writes(),
        create,
        exclusive: create,
        // O_DIRECT only where the backend has it (the null backend does not).
        direct: t.dio && be.capabilities().direct_io,
        // One request a pass: an object store sends it during the timed
        // write, not at close after the pass.
        whole_len: (plan.ops == 1 && t.startoffset == 0).then_some(plan.last_bytes),
        ..Default::default()
    };
    let what = if create { "create" } else { "open" };
    match be.open(&cpath(path), o) {
        Ok(h) => Ok((h, o.direct, create)),
        Err(e) if create && !strict && e.raw_os_error() == Some(libc::EEXIST) => {
            // Made by someone else since we looked: theirs, not ours.
            o.create = false;
            o.exclusive = false;
            let h = be
                .open(&cpath(path), o)
                .map_err(|e| fail(plan, path, "open", e))?;
            Ok((h, o.direct, false))
        }
        Err(e) if o.direct && e.raw_os_error() == Some(libc::EINVAL) => {
            let fs = iolab_core::env::fs_info(std::path::Path::new(path)).fs_type;
            notes.push(format!("target {} ({path}): -dio: O_DIRECT is not supported here (file system '{fs}': {e}); running with buffered I/O", plan.index));
            // Some file systems create the file before refusing O_DIRECT.
            o.direct = false;
            o.exclusive = false;
            let h = be
                .open(&cpath(path), o)
                .map_err(|e| fail(plan, path, what, e))?;
            Ok((h, false, create))
        }
        Err(e) => Err(fail(plan, path, what, e)),
    }
}

/// Refuses a directory, and a block device that looks in use for
/// writing unless -force. Returns whether the target is a block device,
/// and the exclusive claim of one it will write
/// ([`iolab_backend::safety::claim_unused`]): nothing mounts it or makes
/// a file system on it during the run.
fn check_safety(
    be: &dyn Backend,
    plan: &TargetPlan,
    g: &GlobalOpts,
) -> Result<(bool, iolab_backend::safety::DeviceClaim), RunError> {
    let none = iolab_backend::safety::DeviceClaim::none;
    let Ok(st) = be.stat(&cpath(&plan.opts.path)) else {
        return Ok((false, none()));
    };
    if st.is_dir {
        return Err(RunError::Refused(format!(
            "target {} ({}): is a directory; give a file or a block device",
            plan.index, plan.opts.path
        )));
    }
    if !(st.is_block_device && plan.opts.writes() && !g.force) {
        return Ok((st.is_block_device, none()));
    }
    let claim = iolab_backend::safety::claim_unused(be, &cpath(&plan.opts.path), st.rdev)
        .map_err(|why| {
            RunError::Refused(format!(
                "target {} ({}): refusing to write to this block device because {why}; add -force to overwrite it",
                plan.index, plan.opts.path
            ))
        })?;
    Ok((true, claim))
}

/// Prepares a target: safety check, open, preallocate, buffers. `work`
/// is the temporary name an end-to-end destination builds its copy
/// under, renamed to the target's once complete.
pub fn prepare<'a>(
    plan: &'a TargetPlan,
    be: &'a dyn Backend,
    sh: &RunShared,
    ordinal0: usize,
    work: Option<&str>,
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
    let mut created = Vec::new();
    let mut existed_before = false;
    let io = crate::run::paths::choose(plan);
    let (is_block, claim) = check_safety(be, plan, sh.global)?;
    info.block_device = is_block;
    // Only a backend of local files has a file system to describe.
    if be.capabilities().local {
        info.fs = Some(iolab_core::env::fs_info(std::path::Path::new(&t.path)));
    }
    let path = work.unwrap_or(&t.path);
    // -createnewfiles opens a new file before each pass instead.
    if !t.createnewfiles {
        let (h, direct, c) = open(be, plan, path, &mut notes)?;
        // A destination of a copy has one writer (see e2e::lock).
        if t.e2e.role() == Some(crate::e2e::opts::Role::Destination) && plan.caps.local {
            if let Err(e) = crate::e2e::lock::take(path) {
                let _ = be.close(h);
                if c {
                    let _ = be.unlink(&cpath(path));
                }
                return Err(e);
            }
        }
        handle = Some(h);
        info.direct_io = direct;
        if c {
            created.push(path.to_string());
        } else {
            existed_before = true;
        }
    }
    let mut tg = Target {
        plan,
        be,
        io,
        path: path.to_string(),
        handle,
        qthreads: Vec::new(),
        info,
        notes,
        created,
        existed_before,
        kept: Vec::new(),
        first_pass: 1,
        claim,
        rename_to: work.map(|_| t.path.clone()),
    };
    match fill(&mut tg, sh, ordinal0) {
        Ok(()) => Ok(tg),
        Err(e) => {
            // Nothing ran: undo what this target made before failing.
            close(&mut tg);
            remove_created(&mut tg);
            Err(e)
        }
    }
}

/// The parts of preparing a target that come after its file is open:
/// preallocation, QThread buffers, -seek outputs.
fn fill(tg: &mut Target, sh: &RunShared, ordinal0: usize) -> Result<(), RunError> {
    let (plan, t) = (tg.plan, &tg.plan.opts);
    if let Some(h) = &tg.handle {
        if tg.io.needs_raw_fd() && tg.be.raw_fd(h).is_none() {
            return Err(RunError::Refused(format!(
                "target {} ({}): the {} I/O path needs a file descriptor, which the {} backend does not have",
                plan.index, t.path, tg.io.name(), tg.be.name()
            )));
        }
        preallocate(tg.be, plan, h, &t.path, &mut tg.notes)?;
    }
    // io_uring keeps the queue depth in flight from one thread.
    let threads = tg.io.threads(t.queuedepth);
    for q in 0..threads {
        let st = qstate(plan, sh, q, ordinal0 + q, &mut tg.notes)?;
        tg.qthreads.push(st);
    }
    seek_outputs(plan, &mut tg.info)
}

/// -preallocate: a file system or backend that cannot reserve space is
/// a note (the run writes as it would have). What cannot fit in the free
/// space is refused before the file is touched (exit 2); any other
/// failure (the space taken meanwhile, a size past the file system's
/// limit) ends the run before its I/O, as the other preparations do,
/// with the file put back to its size (ext4 keeps what a failed
/// fallocate got, the file grown and the file system full).
fn preallocate(
    be: &dyn Backend,
    plan: &TargetPlan,
    h: &Handle,
    path: &str,
    notes: &mut Vec<String>,
) -> Result<(), RunError> {
    let bytes = plan.opts.preallocate;
    if bytes == 0 || !plan.opts.writes() {
        return Ok(());
    }
    // Only a regular file grows; a device or an object has no size to keep.
    let before = be.fstat(h).ok().filter(|st| st.is_file);
    if let Some(st) = &before {
        room_for(be, plan, path, st)?;
    }
    match be.preallocate(h, 0, bytes) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            notes.push(format!(
                "target {} ({path}): -preallocate {bytes}: {e}; the target is written without it",
                plan.index
            ));
            Ok(())
        }
        Err(e) => Err(fail(plan, path, "-preallocate", put_back(be, h, before, e))),
    }
}

/// Refuses a -preallocate that the file system's free space cannot hold
/// beyond what the file has already (root may take ext4's reserve, which
/// statvfs counts as free for root only). A file system that does not
/// say is not judged here.
fn room_for(
    be: &dyn Backend,
    plan: &TargetPlan,
    path: &str,
    st: &iolab_backend::Stat,
) -> Result<(), RunError> {
    let bytes = plan.opts.preallocate;
    let Ok(fs) = be.statfs(&cpath(path)) else {
        return Ok(());
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let blocks = if root {
        fs.blocks_free
    } else {
        fs.blocks_available
    };
    let free = blocks.saturating_mul(fs.block_bytes);
    let need = bytes - st.allocated_bytes.min(bytes);
    if need <= free {
        return Ok(());
    }
    Err(RunError::Usage(crate::error::UsageError::new(
        "preallocate",
        format!(
            "target {} ({path}): {bytes} bytes need {need} bytes more than the file holds, and its file system has {free} bytes free; nothing was reserved or changed: lower -preallocate or free space",
            plan.index
        ),
    )))
}

/// After a failed fallocate, sets a regular file back to the size it had
/// before (`before`), which frees whatever the call reserved past it,
/// and says so in the error.
fn put_back(
    be: &dyn Backend,
    h: &Handle,
    before: Option<iolab_backend::Stat>,
    e: std::io::Error,
) -> std::io::Error {
    let Some(st) = before else {
        return e;
    };
    let said = match be.set_len(h, st.size) {
        Ok(()) => format!("{e}; the file was put back to its {} bytes", st.size),
        Err(t) => format!(
            "{e}; and the file could not be put back to its {} bytes ({t}): it may hold space the call reserved",
            st.size
        ),
    };
    // Holes inside the old size that the call filled stay filled (they
    // read as zeros, as before): say how much, as the space is taken.
    let kept = be.fstat(h).map_or(0, |now| {
        now.allocated_bytes.saturating_sub(st.allocated_bytes)
    });
    let said = match kept {
        0 => said,
        k => format!("{said} ({k} bytes it reserved in the file's holes stay reserved)"),
    };
    std::io::Error::new(e.kind(), said)
}

/// Bytes of a QThread's buffer: the request, or for unique write data
/// its base too (and room for reads beside it on a target that both reads
/// and writes). A reading target needs the base only when it generates
/// what it sends (the `null` source of an end-to-end copy).
fn buffer_len(plan: &TargetPlan) -> usize {
    let xfer = plan.xfer_bytes as usize;
    match plan.read_e4 {
        10_000 if !plan.caps.discards => xfer,
        10_000 => plan.pattern.buffer_len(xfer),
        0 => plan.pattern.buffer_len(xfer),
        _ => plan.pattern.mixed_buffer_len(xfer),
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
    let len = buffer_len(plan);
    let align = (t.memalign as usize).max(crate::run::buffer::page_size());
    let mut buf = IoBuffer::new(len, align, t.sharedmemory)
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
            crate::record::timestamp::TsTable::new(&o, plan.index as u32, q as u32, sh.run_start_ns)
        }),
        link: None,
        live: crate::run::qstate::LiveOps::on(
            sh.progress.live.as_deref(),
            plan.index,
            q,
            plan.read_e4,
        ),
    })
}

/// The data-path module's time stamp options for a target. The table
/// size per QThread is `-ts size`, or every operation of the run capped at
/// 2^18 entries so that a long run cannot exhaust memory (64 bytes each).
pub fn ts_options(plan: &TargetPlan, passes: u64) -> crate::record::timestamp::TsOptions {
    const CAP: u64 = 1 << 18;
    let ts = &plan.opts.timestamps;
    let all = plan.ops.saturating_mul(passes).min(CAP);
    let size = ts.size.unwrap_or(all) as usize;
    crate::record::timestamp::TsOptions {
        size,
        mode: if ts.oneshot {
            crate::record::timestamp::TsMode::Oneshot
        } else {
            crate::record::timestamp::TsMode::Wrap
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
        let f = &crate::plan::seek::save_file_name(name, plan.index);
        // Whole or not at all, and a link at the made-up name replaced,
        // never followed.
        iolab_output::write_with(std::path::Path::new(f), |w| {
            pass.save_ops(w, |n| plan.is_read(n))
        })
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
    sh.state.stopping() || mono_ns() >= sh.run_deadline_ns
}

/// Runs every pass of a target, writing each to `spool` as it ends;
/// returns its passes merged one after another and its error messages.
pub fn run_target(tg: &mut Target, sh: &RunShared, spool: &mut PassSpool) -> (Counts, Vec<String>) {
    let (plan, g) = (tg.plan, sh.global);
    let me = &sh.progress.targets[plan.index];
    let mut total = Counts::default();
    let mut messages = Vec::new();
    for pass in 1..=g.passes {
        if pass > tg.first_pass && !stopping(sh) {
            sleep_s(g.passdelay_s, sh);
        }
        let file_ok = !stopping(sh) && per_pass_file(tg, sh, pass, &mut messages);
        me.prepare_pass(pass);
        if crate::run::fault::injected(plan.index, None, pass) {
            panic!(
                "IOLAB_XDD_PANIC_TARGET: target {} dies before its barrier",
                plan.index
            );
        }
        if !g.nobarrier && sh.gate.wait(|| stopping(sh)).is_err() {
            break;
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
        // A pass that does not run still begins and ends its lockstep
        // turns, so that the other side of the pair is not left waiting.
        let turns = crate::run::lockstep::pair(plan)
            .map(|(at, side)| (&sh.progress.targets[at].turns, side));
        if let Some((t, side)) = &turns {
            t.begin(side, pass);
        }
        // Passes a resumed copy already did still meet the barrier, so
        // that other targets' passes keep their numbers.
        if file_ok && !stopping(sh) && pass >= tg.first_pass {
            let tp = one_pass(tg, sh, pass);
            me.end_pass(mono_ns());
            total.merge_serial(&tp.counts);
            keep_pass(spool, &tp, sh);
        }
        if let Some((t, side)) = &turns {
            t.end(side, pass);
        }
    }
    me.run_done.store(true, Relaxed);
    for q in &mut tg.qthreads {
        messages.append(&mut q.messages);
        tg.notes.append(&mut q.notes);
    }
    collect_timestamps(tg);
    (total, messages)
}

/// Writes a pass to the target's spool; a spool that cannot be written
/// (a full TMPDIR) fails the run, whose reports would miss passes.
fn keep_pass(spool: &mut PassSpool, tp: &TargetPass, sh: &RunShared) {
    if spool.failed().is_some() {
        return;
    }
    spool.push(tp);
    if let Some(e) = spool.failed() {
        let dir = std::env::temp_dir().display().to_string();
        sh.state
            .fail(Failure::io("keep the pass figures", Some(dir), e));
    }
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
        backend: tg.be,
        handle: tg.handle.as_ref(),
        seeks: plan.seek.pass(pass as u32),
        shared: &shared,
        start_ns,
        deadline_ns: deadline.min(sh.run_deadline_ns),
        progress: sh.progress,
        run: &sh.state,
        path: &tg.path,
        pass: pass as u32,
    };
    let qs = run_qthreads(&mut tg.qthreads, tg.io, &cx, sh);
    let mut counts = Counts::default();
    qs.iter().for_each(|q| counts.merge_parallel(&q.counts));
    let threads_done = mono_ns();
    end_of_pass_sync(tg, sh, &mut counts);
    let end = mono_ns();
    // A throttled pass lasts until its schedule's end as its QThreads
    // measured it (qthread::hold_to_schedule_end), plus the end-of-pass
    // sync; the other passes last until now.
    counts.elapsed_ns = if plan.schedule.is_some() {
        counts.elapsed_ns + (end - threads_done)
    } else {
        end - start_ns
    };
    let rel = |t: u64| t.saturating_sub(sh.run_start_ns);
    // Kept compact from here on: memory stays flat in the pass count.
    counts.compact();
    let qthreads = qs
        .into_iter()
        .map(|mut q| {
            q.start_ns = rel(start_ns);
            q.counts.compact();
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

/// One scoped thread per QThread for one pass. A QThread that cannot be
/// started or that panics ends the run with an error; the others see the
/// stop and end their pass.
fn run_qthreads(
    qthreads: &mut [QState],
    io: &dyn IoPath,
    cx: &PassCtx,
    sh: &RunShared,
) -> Vec<QthreadPass> {
    let index = cx.plan.index;
    std::thread::scope(|s| {
        let mut hs = Vec::new();
        for st in qthreads.iter_mut() {
            let q = st.q;
            let b = std::thread::Builder::new().name(format!("xdd-t{index}-q{q}"));
            let who = move || format!("target {index} qthread {q}");
            let body = move || sh.state.guarded(who, || qthread_main(st, cx, io, sh));
            match b.spawn_scoped(s, body) {
                Ok(h) => hs.push((q, h)),
                Err(e) => {
                    let why = format!("target {index} qthread {q} cannot start: {e}");
                    sh.state.fail(Failure::other("worker", why));
                    cx.stop_pass();
                    break;
                }
            }
        }
        hs.into_iter()
            // A panic was caught in the thread (`guarded`) and already
            // failed the run; its pass counts nothing.
            .map(|(_, h)| h.join().ok().flatten().unwrap_or_default())
            .collect()
    })
}

fn qthread_main(st: &mut QState, cx: &PassCtx, io: &dyn IoPath, sh: &RunShared) -> QthreadPass {
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
    let counts = io.run_pass(st, cx);
    QthreadPass {
        qthread: st.q,
        start_ns: 0,
        counts,
    }
}

/// -syncwrite: flush at the end of the pass; the time counts in the pass.
fn end_of_pass_sync(tg: &Target, sh: &RunShared, c: &mut Counts) {
    if let (true, Some(h)) = (tg.plan.opts.syncwrite && tg.plan.opts.writes(), &tg.handle) {
        let t = mono_ns();
        let r = tg.be.fsync(h);
        c.flush_ns += mono_ns() - t;
        if let Err(e) = r {
            c.errors += 1;
            sh.state
                .error(|| Failure::io("fsync (-syncwrite)", Some(tg.path.clone()), &e));
        }
    }
}

/// -createnewfiles, -recreatefiles, -reopen before pass `pass`.
fn per_pass_file(tg: &mut Target, sh: &RunShared, pass: u64, msgs: &mut Vec<String>) -> bool {
    let (t, be) = (&tg.plan.opts, tg.be);
    let fresh = t.createnewfiles;
    let again = pass > 1 && (t.recreatefiles || t.reopen);
    if !fresh && !again {
        return true;
    }
    if let Err(e) = close_checked(tg) {
        // A backend may finish its writes at close (an S3 upload).
        sh.state
            .fail(Failure::io("close", Some(tg.path.clone()), &e));
    }
    let path = if fresh {
        pass_file_name(&t.path, pass)
    } else {
        t.path.clone()
    };
    if t.recreatefiles && !fresh && !tg.info.block_device {
        let _ = be.unlink(&cpath(&path));
    }
    let mut notes = Vec::new();
    match open(be, tg.plan, &path, &mut notes) {
        Ok((h, direct, made)) => {
            // A recreated file of the user's is theirs, not ours.
            if made && !tg.created.contains(&path) && (fresh || !tg.existed_before) {
                tg.created.push(path.clone());
            }
            if fresh && !made && !tg.created.contains(&path) && !tg.kept.contains(&path) {
                tg.kept.push(path.clone());
            }
            let reserved = preallocate(be, tg.plan, &h, &path, &mut tg.notes);
            tg.handle = Some(h);
            tg.info.direct_io = direct;
            tg.path = path.clone();
            tg.info.path = path;
            tg.notes.extend(notes);
            reserved
                .map_err(|e| {
                    tg.info.failures += 1;
                    msgs.push(e.to_string());
                    sh.state.fail(run_error_failure(&e));
                })
                .is_ok()
        }
        Err(e) => {
            tg.info.failures += 1;
            msgs.push(e.to_string());
            sh.state.fail(run_error_failure(&e));
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
    tg.info.timestamps = Some(crate::record::results::Timestamps {
        options: ts_options(tg.plan, 1),
        info,
        entries: crate::record::timestamp::merge_by_start(&tables),
    });
}

/// Closes the target's file.
pub fn close(tg: &mut Target) {
    let _ = close_checked(tg);
}

/// Closes the file, saying whether the close failed: a backend may
/// finish its writes there (an S3 object is uploaded whole at close).
/// A close that says the file already existed (an exclusive create of
/// an object refused, HTTP 412) leaves the file someone else made
/// meanwhile out of the files this run created: never removed as ours.
pub fn close_checked(tg: &mut Target) -> std::io::Result<()> {
    let r = match tg.handle.take() {
        Some(h) => tg.be.close(h),
        None => Ok(()),
    };
    if let Err(e) = &r {
        if e.kind() == std::io::ErrorKind::AlreadyExists && tg.created.contains(&tg.path) {
            tg.created.retain(|p| *p != tg.path);
            tg.notes.push(format!(
                "target {} ({}): made by someone else during the run; left as it is ({e})",
                tg.plan.index, tg.path
            ));
        }
    }
    r
}

/// Closes the file and applies -deletefile (never to a device, nor to a
/// file that was there before the run): the target file, or with
/// -createnewfiles every per-pass file made.
pub fn finish(tg: &mut Target) {
    close(tg);
    let (t, be) = (&tg.plan.opts, tg.be);
    if !t.deletefile {
        return;
    }
    if tg.info.block_device {
        tg.notes.push(format!(
            "target {} ({}): -deletefile does not delete a block device",
            tg.plan.index, tg.path
        ));
        return;
    }
    let files = if t.createnewfiles {
        for f in &tg.kept {
            tg.notes.push(format!(
                "target {} ({f}): kept: it was there before the run (-deletefile removes only what the run made)",
                tg.plan.index
            ));
        }
        std::mem::take(&mut tg.created)
    } else if tg.existed_before {
        // The user's file, there before the run: iolab deletes only what
        // it made (XDD deletes it).
        tg.notes.push(format!(
            "target {} ({}): kept: it was there before the run (-deletefile removes only what the run made)",
            tg.plan.index, tg.path
        ));
        return;
    } else {
        tg.created.retain(|p| *p != tg.path);
        vec![tg.path.clone()]
    };
    for f in files {
        if let Err(e) = be.unlink(&cpath(&f)) {
            tg.notes
                .push(format!("target {} ({f}): -deletefile: {e}", tg.plan.index));
        }
    }
}

/// Removes every file this run created for the target (after a failure
/// or an interruption); says what it removed and what it could not.
pub fn remove_created(tg: &mut Target) {
    for f in std::mem::take(&mut tg.created) {
        match tg.be.unlink(&cpath(&f)) {
            Ok(()) => tg.notes.push(format!(
                "target {} ({f}): removed (created by this run, which did not complete; -keepfiles keeps it)",
                tg.plan.index
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tg.notes.push(format!(
                "target {} ({f}): created by this run but cannot be removed: {e}",
                tg.plan.index
            )),
        }
    }
}

/// The file of pass `pass` under -createnewfiles: XDD appends the pass
/// number, eight digits wide, after a dot.
pub fn pass_file_name(path: &str, pass: u64) -> String {
    format!("{path}.{pass:08}")
}

/// The failure a target error stands for, with its op, path and errno.
pub fn run_error_failure(e: &RunError) -> Failure {
    match e {
        RunError::Target {
            path, what, err, ..
        } => Failure::io(what, Some(path.clone()), err),
        other => Failure::other("target", other.to_string()),
    }
}
