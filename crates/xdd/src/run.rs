//! Stage four: runs a plan. Every target is prepared (safety check, open,
//! buffers) before any thread starts, so a refusal or a missing file ends
//! the run having done no I/O. Then one thread per target runs its passes
//! and the results are assembled into plain report data.

use crate::error::RunError;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::results::RunResults;
use crate::target::{close, finish, prepare, run_target, RunShared, Target};
use iolab_backend::Posix;
use iolab_core::clock::{mono_ns, wall_ns};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Barrier;

/// Runs `plan`, publishing live progress in `progress` (which must have
/// one entry per target). Never prints.
pub fn run(
    plan: &Plan,
    cfg: &crate::config::Config,
    progress: &Progress,
) -> Result<RunResults, RunError> {
    let backend = Posix;
    let g = &plan.global;
    let host = iolab_core::env::host_info();
    let mut notes = Vec::new();
    if g.processlock {
        if let Err(e) = crate::placement::lock_process() {
            notes.push(e);
        }
    }
    if g.maxpri {
        if let Err(e) = crate::placement::max_priority_current() {
            notes.push(e);
        }
    }
    let run_start_ns = mono_ns();
    let sh = RunShared {
        global: g,
        backend: &backend,
        progress,
        barrier: Barrier::new(plan.targets.len()),
        stop: Default::default(),
        run_start_ns,
        run_deadline_ns: if g.runtime_s > 0.0 {
            run_start_ns + (g.runtime_s * 1e9) as u64
        } else {
            u64::MAX
        },
        cpus: host.cpus,
    };
    let mut targets = prepare_all(plan, &sh)?;
    for (t, p) in plan.targets.iter().zip(&progress.targets) {
        p.planned_ops.store(t.ops, Relaxed);
    }
    progress.run_start_ns.store(run_start_ns, Relaxed);
    let start_wall_ns = wall_ns();
    let outcome: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = targets
            .iter_mut()
            .map(|tg| {
                let sh = &sh;
                s.spawn(move || run_target(tg, sh))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    progress.finished.store(true, Relaxed);
    targets.iter_mut().for_each(|tg| finish(tg, &backend));
    if g.processlock {
        crate::placement::unlock_process();
    }
    Ok(assemble(
        plan,
        cfg,
        host,
        start_wall_ns,
        targets,
        outcome,
        notes,
        &sh,
    ))
}

/// Prepares every target; on failure closes the ones already opened and
/// removes files this run created.
fn prepare_all<'a>(plan: &'a Plan, sh: &RunShared) -> Result<Vec<Target<'a>>, RunError> {
    let mut out: Vec<Target> = Vec::new();
    let mut ordinal = 0;
    for tp in &plan.targets {
        match prepare(tp, sh, ordinal) {
            Ok(t) => {
                ordinal += t.qthreads.len();
                out.push(t)
            }
            Err(e) => {
                for mut t in out {
                    let created = t.created;
                    let path = t.path.clone();
                    close(&mut t, sh.backend);
                    if created {
                        let _ = std::fs::remove_file(path);
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &Plan,
    cfg: &crate::config::Config,
    host: iolab_core::env::HostInfo,
    start_wall_ns: u64,
    targets: Vec<Target>,
    outcome: Vec<(Vec<crate::results::TargetPass>, Vec<String>)>,
    mut notes: Vec<String>,
    sh: &RunShared,
) -> RunResults {
    let g = &plan.global;
    let mut passes: Vec<Vec<_>> = vec![Vec::new(); g.passes as usize];
    let mut error_messages = Vec::new();
    for (tps, msgs) in outcome {
        for tp in tps {
            passes[(tp.pass - 1) as usize].push(tp);
        }
        error_messages.extend(msgs);
    }
    passes.retain(|p| !p.is_empty());
    error_messages.truncate(g.maxerrorstoprint as usize);
    let mut infos = Vec::new();
    for t in targets {
        notes.extend(t.notes);
        infos.push(t.info);
    }
    let stopped_early = if iolab_core::stop::requested() {
        Some("interrupted (Ctrl-C)".to_string())
    } else if sh.stop.load(Relaxed) {
        Some("stopped after an error (-stoponerror or a failed file operation)".to_string())
    } else if mono_ns() >= sh.run_deadline_ns {
        Some(format!("-runtime {} seconds reached", g.runtime_s))
    } else {
        None
    };
    RunResults {
        config: cfg.clone(),
        host,
        sys: crate::results::SystemFacts::collect(),
        start_wall_ns,
        end_wall_ns: wall_ns(),
        passes,
        targets: infos,
        notes,
        error_messages,
        stopped_early,
    }
}
