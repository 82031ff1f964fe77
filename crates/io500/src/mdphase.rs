//! The mdtest phases: IO500's mdtest command line read by iolab's mdtest
//! option table, checked as `iolab mdtest` checks it, and run by its
//! engine (stonewall, wear-out and the -x file included).

use crate::phase::Phase;
use crate::results::MdtestFigures;
use iolab_backend::Backend;
use iolab_comm::{run_subset, Transport};
use iolab_core::CancelToken;
use iolab_core::{Failure, Outcome};
use iolab_mdtest::{args, preflight, Config, Engine, Plan, Progress, Quiet, TestResult};
use std::sync::Arc;

type PhaseError = (Outcome, String);

/// A phase refused before it ran: interrupted when a stop was asked
/// (mdtest's checks give up on Ctrl-C), else an error.
fn usage(msg: String, cancel: &CancelToken) -> PhaseError {
    match cancel.is_cancelled() {
        true => (Outcome::Interrupted, "interrupted".into()),
        false => (Outcome::Error(Failure::other("mdtest", msg.clone())), msg),
    }
}

/// Checks an mdtest phase's command line without running it (what the
/// cli does before the run, so that bad values are exit 2).
pub fn check(argv: &[String], tasks: u64) -> Result<(), CheckError> {
    let raw = args::parse(argv)?;
    let cfg = Config::from_raw(&raw)?;
    Plan::new(&cfg)?;
    Ok(cfg.check_tasks(tasks)?)
}

/// Why an mdtest phase's command line is refused: mdtest's own errors.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// An option mdtest does not take, or a value it cannot read.
    #[error(transparent)]
    Args(#[from] iolab_mdtest::args::ArgError),
    /// Values mdtest takes but not together, or out of bounds.
    #[error(transparent)]
    Config(#[from] iolab_mdtest::ConfigError),
}

/// The phase's validated config, plan and -x counts, on this rank.
fn prepare(
    argv: &[String],
    tasks: u64,
    be: &dyn Backend,
    cancel: &CancelToken,
) -> Result<(Config, Plan, Option<iolab_mdtest::stonewall::WallCounts>), String> {
    let raw = args::parse(argv).map_err(|e| e.to_string())?;
    let cfg = Config::from_raw(&raw).map_err(|e| e.to_string())?;
    let plan = Plan::new(&cfg).map_err(|e| e.to_string())?;
    cfg.check_tasks(tasks).map_err(|e| e.to_string())?;
    cfg.check_environment(be).map_err(|e| e.to_string())?;
    let wall = preflight(&cfg, &plan, be, cancel).map_err(|e| e.to_string())?;
    Ok((cfg, plan, wall))
}

/// Runs one mdtest phase on every task; returns the figures of the phase
/// IO500 scores (file create, stat, read or remove).
pub fn run(
    argv: &[String],
    phase: Phase,
    transport: Arc<dyn Transport>,
    threads: usize,
    be: &dyn Backend,
    live: Option<&iolab_core::live::Board>,
    cancel: &CancelToken,
) -> Result<MdtestFigures, PhaseError> {
    let tasks = threads * transport.size();
    let prepared = prepare(argv, tasks as u64, be, cancel);
    // Every rank must start the phase, or none: a rank whose checks
    // failed (a -x file it cannot read) must not leave the others
    // waiting in the engine's collectives.
    let ready = transport.all_gather(&[u8::from(prepared.is_ok())]);
    let (cfg, plan, wall) = match (prepared, ready.iter().all(|v| v.first() == Some(&1))) {
        (Ok(p), true) => p,
        (Err(e), _) => return Err(usage(e, cancel)),
        (Ok(_), false) => {
            return Err(usage(
                "another rank could not start the phase".into(),
                cancel,
            ))
        }
    };
    let progress = Progress::new(threads);
    // What an interrupted or failed phase made is left to the run's final
    // cleanup, which says how much there is and how far it got.
    let engine = Engine::new(&cfg, plan, be, &Quiet, &progress, wall)
        .with_live(live)
        .with_live_name(phase.name())
        .with_cancel(cancel)
        .leave_on_failure();
    let out = run_subset(transport, threads, tasks, |c| engine.run(c));
    let mut first = None;
    for r in out {
        match r {
            Err(u) => {
                let msg = match &u.outcome {
                    Outcome::Error(f) => f.to_string(),
                    o => format!("{o:?}"),
                };
                return Err((u.outcome, msg));
            }
            Ok(t) => {
                first.get_or_insert(t);
            }
        }
    }
    let t = first.ok_or_else(|| usage("no task ran the phase".into(), cancel))?;
    if let Some(f) = &t.stonewall_file_error {
        // The stat, read and delete phases could not know the counts.
        return Err((Outcome::Error(f.clone()), f.to_string()));
    }
    figures(&t, phase).ok_or_else(|| {
        usage(
            format!("mdtest returned no figures for {}", phase.name()),
            cancel,
        )
    })
}

fn figures(t: &TestResult, phase: Phase) -> Option<MdtestFigures> {
    use iolab_mdtest::Phase as M;
    let want = match phase {
        Phase::MdtestEasyWrite | Phase::MdtestHardWrite => M::FileCreate,
        Phase::MdtestEasyStat | Phase::MdtestHardStat => M::FileStat,
        Phase::MdtestHardRead => M::FileRead,
        _ => M::FileRemove,
    };
    let p = t
        .iterations
        .first()?
        .phases
        .iter()
        .find(|p| p.phase == want)?;
    Some(MdtestFigures {
        items: p.items,
        items_per_task: t.items_per_task,
        elapsed_s: p.elapsed_s,
        rate: p.rate,
        stonewall_hit: p.stonewall.map(|s| s.hit).unwrap_or(false),
    })
}
