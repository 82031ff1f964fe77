//! Stage four: runs a plan. Every target is prepared (safety check, open,
//! buffers) before any thread starts, so a refusal or a missing file ends
//! the run having done no I/O. Then one thread per target runs its passes
//! and the results are assembled into plain report data.

// The run stage: a Plan to results, through the I/O paths.
pub mod buffer;
pub(crate) mod fault;
pub mod gate;
pub mod iopath;
pub mod lockstep;
pub mod paths;
pub mod progress;
pub mod qstate;
pub mod qthread;
pub mod runstate;
pub mod safety;
pub mod steps;
pub mod target;
pub mod uring;
pub mod uring_pass;

use crate::error::RunError;
use crate::plan::Plan;
use crate::record::passlog::{PassLog, PassSpool};
use crate::record::results::RunResults;
use crate::run::gate::Gate;
use crate::run::progress::Progress;
use crate::run::target::{finish, prepare, remove_created, run_target, RunShared, Target};
use iolab_backend::Backend;
use iolab_core::clock::{mono_ns, wall_ns};
use iolab_core::{Failure, Outcome};
use iolab_net::clock::Estimate;
use std::sync::atomic::Ordering::Relaxed;

/// Runs `plan`, publishing live progress in `progress` (which must have
/// one entry per target), until done or `cancel` (the run's token) is
/// cancelled. Never prints.
pub fn run(
    plan: &Plan,
    cfg: &crate::parse::config::Config,
    progress: &Progress,
    cancel: &iolab_core::CancelToken,
) -> Result<RunResults, RunError> {
    run_plan(plan, cfg, progress, cancel)
}

fn run_plan(
    plan: &Plan,
    cfg: &crate::parse::config::Config,
    progress: &Progress,
    cancel: &iolab_core::CancelToken,
) -> Result<RunResults, RunError> {
    // First: a TMPDIR that takes no file is found before anything is
    // started, bound or created.
    let mut spools = spools(plan)?;
    let backends = backends(plan)?;
    let g = &plan.global;
    let clock = global_clock(g, cancel)?;
    // A start time too far off is bad input, refused before anything
    // is prepared.
    let start_wait = match (&clock, g.starttime_s) {
        (Some(c), Some(t)) => c.wait_until(t).map_err(|e| {
            RunError::Usage(crate::error::UsageError::new("starttime", e.to_string()))
        })?,
        _ => None,
    };
    let host = iolab_core::env::host_info();
    let mut notes = start_notes(plan);
    let sh = shared(plan, progress, cancel, host.cpus);
    let (mut targets, monitors) = prepare_attached(plan, &backends, &sh, cancel)?;
    if let (Some(c), Some(t)) = (&clock, g.starttime_s) {
        wait_for_start(c, (t, start_wait), progress, &mut notes, cancel);
    }
    progress.run_start_ns.store(sh.run_start_ns, Relaxed);
    let start_wall_ns = wall_ns();
    let per_target = crate::e2e::monitor::run_with(&monitors, &sh.state, || {
        run_targets(&mut targets, &mut spools, &sh)
    });
    monitors
        .into_iter()
        .for_each(crate::e2e::monitor::Monitor::close);
    progress.finished.store(true, Relaxed);
    let outcome = wind_down(&mut targets, &sh);
    if g.processlock {
        crate::plan::placement::unlock_process();
    }
    notes.extend(finalize(&backends));
    let (log, outcome) = pass_log(spools, outcome);
    let mut r = assemble(
        plan,
        cfg,
        host,
        start_wall_ns,
        targets,
        (log, per_target),
        notes,
        outcome,
    );
    if let Some(c) = clock {
        on_global_clock(&mut r, &c);
    }
    Ok(r)
}

/// The notes a run starts with: its data's and its engine's, and a
/// process lock or priority that could not be had.
fn start_notes(plan: &Plan) -> Vec<String> {
    let g = &plan.global;
    let mut notes = data_notes(plan);
    notes.extend(engine_notes(plan));
    if g.processlock {
        if let Err(e) = crate::plan::placement::lock_process() {
            notes.push(e.to_string());
        }
    }
    if g.maxpri {
        if let Err(e) = crate::plan::placement::max_priority_current() {
            notes.push(e.to_string());
        }
    }
    notes
}

/// What every target's thread shares; the run's clock starts here.
fn shared<'a>(
    plan: &'a Plan,
    progress: &'a Progress,
    cancel: &iolab_core::CancelToken,
    cpus: usize,
) -> RunShared<'a> {
    let g = &plan.global;
    let run_start_ns = mono_ns();
    RunShared {
        global: g,
        progress,
        gate: Gate::new(plan.targets.len()),
        state: runstate::RunState::with_token(cancel),
        run_start_ns,
        run_deadline_ns: if g.runtime_s > 0.0 {
            run_start_ns + (g.runtime_s * 1e9) as u64
        } else {
            u64::MAX
        },
        cpus,
    }
}

/// Connects the end-to-end sessions, prepares every target and attaches
/// the sessions' monitors to them; a failure to attach closes the
/// targets and removes what they created.
fn prepare_attached<'a>(
    plan: &'a Plan,
    backends: &'a [Box<dyn Backend>],
    sh: &RunShared<'_>,
    cancel: &iolab_core::CancelToken,
) -> Result<(Vec<Target<'a>>, Vec<crate::e2e::monitor::Monitor<'a>>), RunError> {
    let progress = sh.progress;
    let sessions = crate::e2e::session::connect_all(
        plan,
        |at| {
            let _ = progress.e2e_listening.set(at);
        },
        &progress.e2e_live,
        cancel,
    )?;
    let first_ops: Vec<u64> = sessions
        .iter()
        .map(|s| s.as_ref().map_or(0, |s| s.first_op))
        .collect();
    let works: Vec<Option<String>> = sessions
        .iter()
        .map(|s| s.as_ref().and_then(|s| s.work.clone()))
        .collect();
    let mut targets = prepare_all(plan, backends, sh, &works)?;
    for ((t, p), skip) in plan.targets.iter().zip(&progress.targets).zip(first_ops) {
        p.planned_ops.store(t.ops.saturating_sub(skip), Relaxed);
    }
    match crate::e2e::monitor::attach(&mut targets, sessions) {
        Ok(m) => Ok((targets, m)),
        Err(e) => {
            for tg in &mut targets {
                crate::run::target::close(tg);
                remove_created(tg);
            }
            Err(e)
        }
    }
}

/// After the passes: closes every target, takes the run's outcome, and
/// keeps, sets aside or removes what each target made.
fn wind_down(targets: &mut [Target<'_>], sh: &RunShared<'_>) -> Outcome {
    let g = sh.global;
    for tg in targets.iter_mut() {
        if let Err(e) = crate::run::target::close_checked(tg) {
            sh.state
                .fail(Failure::io("close", Some(tg.path.clone()), &e));
        }
    }
    let timed_out = mono_ns() >= sh.run_deadline_ns;
    let outcome = sh.state.outcome(timed_out.then_some(g.runtime_s));
    let outcome = counted_errors(targets, outcome);
    let outcome = put_in_place(targets, outcome);
    let stopped = matches!(outcome, Outcome::Error(_) | Outcome::Interrupted);
    for tg in targets.iter_mut() {
        finish(tg);
        // A copy built under a temporary name that is still there did
        // not complete (a time limit ended it): it is no finished copy.
        let unfinished = tg.rename_to.is_some();
        if !g.keepfiles && (stopped || unfinished) {
            leave(tg);
        }
    }
    outcome
}

/// Renames every copy built under a temporary name to its destination
/// once the run completed ([`crate::e2e::partial`]); one that cannot be
/// (a file appeared at its name meanwhile) fails the run and stays,
/// complete, where it is.
fn put_in_place(targets: &mut [Target<'_>], outcome: Outcome) -> Outcome {
    if outcome != Outcome::Completed {
        return outcome;
    }
    let mut outcome = outcome;
    for tg in targets.iter_mut() {
        let Some(dest) = tg.rename_to.clone() else {
            continue;
        };
        match crate::e2e::partial::put_in_place(&tg.path, &dest) {
            Ok(()) => {
                tg.created.retain(|p| *p != tg.path);
                tg.path = dest;
                tg.rename_to = None;
            }
            Err(e) => {
                // Complete, and not ours to remove: it is the copy.
                tg.created.retain(|p| *p != tg.path);
                tg.rename_to = None;
                let why = format!(
                    "target {} ({dest}): the copy is complete in {}, but it cannot be renamed to {dest} ({e}); iolab never replaces a file: move it there yourself",
                    tg.plan.index, tg.path
                );
                tg.notes.push(why.clone());
                let f = Failure::io("rename", Some(dest), &e);
                outcome = outcome.worst(Outcome::Error(Failure { message: why, ..f }));
            }
        }
    }
    outcome
}

/// What a target that is not kept leaves: an end-to-end copy's partial
/// file kept for -restart, anything else removed.
fn leave(tg: &mut Target<'_>) {
    if crate::e2e::monitor::keeps_partial(tg) {
        let dest = &tg.plan.opts.path;
        let record = tg.plan.opts.restart.file_for(dest);
        let note = crate::e2e::partial::kept(tg.plan.index, dest, &tg.path, &record);
        tg.notes.push(note);
    } else {
        remove_created(tg);
    }
}

/// Finishes every backend; what each says goes to the notes.
fn finalize(backends: &[Box<dyn Backend>]) -> Vec<String> {
    let mut notes = Vec::new();
    for be in backends {
        if let Err(e) = be.finalize() {
            notes.push(format!(
                "the {} backend did not finish cleanly: {e}",
                be.name()
            ));
        }
        notes.extend(be.notes());
    }
    notes
}

/// Measures the offset to the global clock (-timeserver) before any
/// target is prepared, so an unreachable server leaves nothing behind.
fn global_clock(
    g: &crate::parse::config::GlobalOpts,
    cancel: &iolab_core::CancelToken,
) -> Result<Option<Estimate>, RunError> {
    let Some(ts) = &g.timeserver else {
        return Ok(None);
    };
    let addr = format!("{}:{}", ts.host, ts.port);
    let wait = std::time::Duration::from_secs(10);
    let key = ts.shared_key().map_err(|e| {
        RunError::Usage(crate::error::UsageError::new(
            "timeserver",
            format!("key: {e}"),
        ))
    })?;
    let cancel = iolab_net::Cancel::token(cancel);
    match iolab_net::clock::estimate(&addr, ts.bounce, wait, key.as_ref(), cancel) {
        Ok(e) => Ok(Some(e)),
        // A host name that does not exist is bad input (exit 2); a server
        // that does not answer is a failed run (exit 1).
        Err(e @ iolab_net::NetError::Resolve { .. }) => Err(RunError::Usage(
            crate::error::UsageError::new("timeserver", e.to_string()),
        )),
        Err(e) => Err(RunError::Clock {
            addr,
            why: e.to_string(),
        }),
    }
}

/// Sleeps until the global clock reads `t_s` (Ctrl-C ends the wait; the
/// targets then see the stop). A time already past starts at once, with
/// a note.
/// Says which targets write data a compressing or deduplicating store
/// can shrink (the report must not pass that off as the store's speed).
fn data_notes(plan: &Plan) -> Vec<String> {
    plan.targets
        .iter()
        .filter(|t| t.read_e4 < 10_000 && t.opts.op != crate::parse::values::Op::Noop)
        .filter_map(|t| {
            let n = t.pattern.shrink_note()?;
            Some(format!("target {} {n}", t.index))
        })
        .collect()
}

/// Says where -engine uring leaves -createnewfiles's create: between the
/// passes, one open, as the sync engine does it (docs/xdd.md says why
/// no queue takes it).
fn engine_notes(plan: &Plan) -> Vec<String> {
    plan.targets
        .iter()
        .filter(|t| t.opts.createnewfiles && t.opts.engine == crate::parse::values::EngineKind::Uring)
        .map(|t| {
            format!(
                "target {}: -createnewfiles with -engine uring: each pass's file is created by one open between passes, outside the pass's time; io_uring carries the pass's requests, not that create",
                t.index
            )
        })
        .collect()
}

/// Waits until the global clock reads `-starttime`, `left` from now
/// (None: it already has, a note), telling the CLI through `progress`
/// how long the wait is (it says so, and counts down on a terminal).
fn wait_for_start(
    c: &Estimate,
    (t_s, left): (u64, Option<std::time::Duration>),
    progress: &Progress,
    notes: &mut Vec<String>,
    cancel: &iolab_core::CancelToken,
) {
    let Some(left) = left else {
        notes.push(format!(
            "-starttime {t_s} had already passed; started at once"
        ));
        return;
    };
    let _ = progress.start_wait.set(crate::run::progress::StartWait {
        global_s: t_s,
        left,
    });
    let local = c.local_at(t_s.saturating_mul(1_000_000_000));
    while !cancel.is_cancelled() {
        let now = wall_ns();
        if now >= local {
            return;
        }
        let left = std::time::Duration::from_nanos(local - now);
        std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
    }
}

/// Records the clock and puts time stamps on it, so `-ts normalize`
/// writes global time and runs on several hosts line up.
fn on_global_clock(r: &mut RunResults, c: &Estimate) {
    r.global_clock = Some(crate::record::results::GlobalClock {
        offset_ns: c.offset_ns,
        rtt_ns: c.rtt_ns,
    });
    for t in &mut r.targets {
        if let Some(ts) = &mut t.timestamps {
            ts.info.wall_minus_mono_ns += c.offset_ns;
        }
    }
}

/// Every error is reported through the run state as it happens; should a
/// counted error ever have missed it, the outcome still says error.
fn counted_errors(targets: &[Target], outcome: Outcome) -> Outcome {
    let failures: u64 = targets.iter().map(|t| t.info.failures).sum();
    let errors: u64 = targets
        .iter()
        .flat_map(|t| &t.qthreads)
        .map(|q| q.error_count)
        .sum();
    if outcome.is_failure() || failures + errors == 0 {
        return outcome;
    }
    outcome.worst(Outcome::Error(Failure::other(
        "io",
        format!("{} errors counted", failures + errors),
    )))
}

/// Each target's backend, by the name its plan chose, started (an
/// object store checks its settings; a refusal there is exit 1).
fn backends(plan: &Plan) -> Result<Vec<Box<dyn Backend>>, RunError> {
    plan.targets
        .iter()
        .map(|t| {
            let be = crate::plan::target_backend(&t.opts, &plan.global)
                .map_err(|e| RunError::Refused(e.to_string()))?;
            // A target the backend cannot address as given (an S3 key
            // with `..`, another bucket than --s3.bucket): nothing sent.
            be.check_path(&crate::run::target::cpath(&t.opts.path))
                .map_err(|err| start_error(t, err))?;
            be.init().map_err(|err| start_error(t, err))?;
            if let Some(bucket) = crate::plan::bucket(&t.opts) {
                // The bucket the target names, before anything is made
                // in it: a bad name sends nothing, a missing one is exit 2.
                be.stat(&crate::run::target::cpath(&bucket))
                    .map_err(|err| start_error(t, err))?;
            }
            Ok(be)
        })
        .collect()
}

/// A backend that cannot start: a place that is not there (a missing
/// bucket, a bad bucket name) is bad usage (exit 2), anything else an
/// I/O error (exit 1).
fn start_error(t: &crate::plan::TargetPlan, err: std::io::Error) -> RunError {
    match err.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidInput => {
            RunError::Usage(crate::error::UsageError::new(
                "target",
                format!("target {} ({}): {err}", t.index, t.opts.path),
            ))
        }
        _ => RunError::Target {
            target: t.index,
            path: t.opts.path.clone(),
            what: "start the backend",
            err,
        },
    }
}

/// What one target thread returns: its passes merged and its error
/// messages (its passes are in its spool).
type TargetOutput = (crate::record::results::Counts, Vec<String>);

/// One thread per target. A thread that panics ends the run with an
/// error outcome (the others see the stop and leave their barrier).
fn run_targets(
    targets: &mut [Target],
    spools: &mut [PassSpool],
    sh: &RunShared,
) -> Vec<TargetOutput> {
    std::thread::scope(|s| {
        let mut hs = Vec::new();
        for (tg, spool) in targets.iter_mut().zip(spools.iter_mut()) {
            let i = tg.plan.index;
            let b = std::thread::Builder::new().name(format!("xdd-target{i}"));
            let who = move || format!("target {i} thread");
            let body = move || sh.state.guarded(who, || run_target(tg, sh, spool));
            match b.spawn_scoped(s, body) {
                Ok(h) => hs.push(Some(h)),
                Err(e) => {
                    let why = format!("target {i} thread cannot start: {e}");
                    sh.state.fail(Failure::other("worker", why));
                    hs.push(None);
                }
            }
        }
        // A panic was caught in its thread (`guarded`) and already failed
        // the run, before anyone could wait for that thread.
        hs.into_iter()
            .map(|h| h.and_then(|h| h.join().ok().flatten()).unwrap_or_default())
            .collect()
    })
}

/// Prepares every target; on failure closes the ones already opened and
/// removes files this run created.
fn prepare_all<'a>(
    plan: &'a Plan,
    backends: &'a [Box<dyn Backend>],
    sh: &RunShared,
    works: &[Option<String>],
) -> Result<Vec<Target<'a>>, RunError> {
    let mut out: Vec<Target> = Vec::new();
    let mut ordinal = 0;
    for (i, (tp, be)) in plan.targets.iter().zip(backends).enumerate() {
        let work = works.get(i).and_then(|w| w.as_deref());
        match prepare(tp, be.as_ref(), sh, ordinal, work) {
            Ok(t) => {
                ordinal += t.qthreads.len();
                out.push(t)
            }
            Err(e) => {
                for mut t in out {
                    crate::run::target::close(&mut t);
                    remove_created(&mut t);
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// One pass spool per target. A TMPDIR that cannot hold them is bad
/// usage (exit 2), as an output path that cannot be written is.
fn spools(plan: &Plan) -> Result<Vec<PassSpool>, RunError> {
    plan.targets
        .iter()
        .map(|_| {
            PassSpool::new().map_err(|e| {
                let dir = std::env::temp_dir();
                RunError::Usage(crate::error::UsageError::new(
                    "",
                    format!(
                        "TMPDIR {}: cannot hold the file each pass's figures are kept in during the run ({e}); set TMPDIR to a writable directory",
                        dir.display()
                    ),
                ))
            })
        })
        .collect()
}

/// The targets' spools as one log; a spool that cannot be finished
/// makes the run an error (its reports would miss passes).
fn pass_log(spools: Vec<PassSpool>, outcome: Outcome) -> (PassLog, Outcome) {
    let mut done = Vec::new();
    let mut outcome = outcome;
    for s in spools {
        match s.finish() {
            Ok(s) => done.push(s),
            Err(e) => {
                let dir = std::env::temp_dir().display().to_string();
                let f = Failure::io("keep the pass figures", Some(dir), &e);
                outcome = outcome.worst(Outcome::Error(f));
                return (PassLog::default(), outcome);
            }
        }
    }
    (PassLog::spooled(done), outcome)
}

/// What an end-to-end destination that did not finish wrote, said in
/// one fixed form: xddcp reads it (`iolab_xddcp::run`) to report the
/// bytes that reached the destination rather than those the source sent.
fn written_note(index: usize, bytes: u64) -> String {
    format!("e2e destination target {index}: this run wrote {bytes} bytes before it stopped")
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &Plan,
    cfg: &crate::parse::config::Config,
    host: iolab_core::env::HostInfo,
    start_wall_ns: u64,
    targets: Vec<Target>,
    (passes, per_target): (PassLog, Vec<TargetOutput>),
    mut notes: Vec<String>,
    outcome: Outcome,
) -> RunResults {
    let g = &plan.global;
    let mut error_messages = Vec::new();
    let mut totals = Vec::with_capacity(per_target.len());
    for (total, msgs) in per_target {
        totals.push(total);
        error_messages.extend(msgs);
    }
    error_messages.truncate(g.maxerrorstoprint as usize);
    let stopped = matches!(outcome, Outcome::Error(_) | Outcome::Interrupted);
    let mut infos = Vec::new();
    for (t, counts) in targets.into_iter().zip(&totals) {
        if stopped && t.plan.opts.e2e.role() == Some(crate::e2e::opts::Role::Destination) {
            notes.push(written_note(t.plan.index, counts.write_bytes));
        }
        notes.extend(t.notes);
        infos.push(t.info);
    }
    RunResults {
        config: cfg.clone(),
        host,
        start_wall_ns,
        end_wall_ns: wall_ns(),
        passes,
        totals,
        targets: infos,
        notes,
        error_messages,
        peak_rss_bytes: iolab_core::env::peak_rss_bytes(),
        outcome,
        global_clock: None,
        stats: None,
    }
}

#[cfg(test)]
mod tests {
    /// xddcp reads this line (`iolab_xddcp::run`): its form is a contract.
    #[test]
    fn the_written_note_keeps_its_form() {
        assert_eq!(
            super::written_note(0, 69206016),
            "e2e destination target 0: this run wrote 69206016 bytes before it stopped"
        );
    }
}
