//! What each task reports at the end of a phase, and how the reports of
//! all tasks (threads and MPI ranks alike) combine into one result.

use crate::results::{Phase, PhaseResult, Stonewall};
use iolab_comm::failure::{from_task, peer_stopped};
use iolab_comm::Comm;
use iolab_core::stats::{Histogram, HistogramWire};
use iolab_core::Failure;
use serde::{Deserialize, Serialize};

/// One task's account of one phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskReport {
    /// Which phase.
    pub phase: Phase,
    /// Operations this task completed.
    pub items: u64,
    /// Wall-clock start, ns since the epoch.
    pub start_ns: u64,
    /// Wall-clock end, ns since the epoch.
    pub end_ns: u64,
    /// (items done, wall-clock ns) when the stonewall stopped this task, or
    /// when it finished before the wall; `hit` tells which.
    pub wall: Option<(u64, u64, bool)>,
    /// Latencies of this task's operations.
    pub latency: HistogramWire,
    /// Items a remove-only run (-r) found already gone.
    pub missing: u64,
    /// The first error this task met, with path and errno.
    pub error: Option<Failure>,
    /// The task stopped because a stop was requested (Ctrl-C).
    pub interrupted: bool,
}

impl TaskReport {
    /// An empty report for `phase` starting now.
    pub fn start(phase: Phase, start_ns: u64) -> Self {
        TaskReport {
            phase,
            items: 0,
            start_ns,
            end_ns: start_ns,
            wall: None,
            latency: HistogramWire::default(),
            missing: 0,
            error: None,
            interrupted: false,
        }
    }
}

/// What went wrong in a phase, over all tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseTrouble {
    /// This task's own first error; else the first of the lowest task
    /// that failed, whole (op, path, errno, kind), its message naming
    /// that task.
    pub error: Option<Failure>,
    /// A stop was requested somewhere.
    pub interrupted: bool,
    /// The phase it cut short and the operations every task completed
    /// in it.
    pub cut: Option<(Phase, u64)>,
}

/// Exchanges the reports of a list of phases among all tasks and combines
/// each. Collective: every task must call it with the same phases.
pub fn exchange(comm: &dyn Comm, mine: &[TaskReport]) -> (Vec<PhaseResult>, Option<PhaseTrouble>) {
    let bytes = serde_json::to_vec(mine).unwrap_or_default();
    let all = comm.all_gather(&bytes);
    let per_task: Vec<Vec<TaskReport>> = all
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap_or_default())
        .collect();
    let mut results = Vec::new();
    let mut trouble = PhaseTrouble {
        error: None,
        interrupted: false,
        cut: None,
    };
    // The first failure of the earliest phase, lowest task first.
    let mut first: Option<(usize, &Failure)> = None;
    for (i, r) in mine.iter().enumerate() {
        let reports: Vec<(usize, &TaskReport)> = per_task
            .iter()
            .enumerate()
            .filter_map(|(task, v)| v.get(i).map(|rep| (task, rep)))
            .collect();
        for (task, rep) in &reports {
            trouble.interrupted |= rep.interrupted;
            if let (None, Some(e)) = (first, &rep.error) {
                first = Some((*task, e));
            }
        }
        let reports: Vec<&TaskReport> = reports.into_iter().map(|(_, rep)| rep).collect();
        let result = combine(r.phase, &reports);
        if trouble.cut.is_none() && (first.is_some() || trouble.interrupted) {
            trouble.cut = Some((r.phase, result.items));
        }
        results.push(result);
    }
    let own = mine.iter().find_map(|r| r.error.clone());
    trouble.error = match (own, first) {
        (Some(e), _) => Some(e),
        (None, Some((task, e))) => Some(from_task(task, e.clone())),
        // The answers above are empty: a task died or failed mid-phase
        // and could not say what.
        (None, None) if comm.cancelled() => Some(peer_stopped()),
        (None, None) => None,
    };
    let bad = trouble.error.is_some() || trouble.interrupted;
    (results, bad.then_some(trouble))
}

/// Combines the tasks' reports of one phase: rate = all items / (latest
/// end - earliest start) of the tasks that did any. A task with nothing
/// to do in the phase (every task but the tree's owner in a tree phase,
/// all but task 0 in a collective remove) takes no part in its time:
/// as mdtest takes a tree phase's time on rank 0 alone. Were it counted,
/// the phase would measure how late that idle thread woke from the
/// opening barrier (30-50 us on a VM) more than the one mkdir it times.
pub fn combine(phase: Phase, reports: &[&TaskReport]) -> PhaseResult {
    let items: u64 = reports.iter().map(|r| r.items).sum();
    let timed = |r: &&&TaskReport| items == 0 || r.items > 0;
    let start = reports
        .iter()
        .filter(timed)
        .map(|r| r.start_ns)
        .min()
        .unwrap_or(0);
    let end = reports
        .iter()
        .filter(timed)
        .map(|r| r.end_ns)
        .max()
        .unwrap_or(start);
    let elapsed_s = end.saturating_sub(start) as f64 / 1e9;
    let mut h = Histogram::new();
    for r in reports {
        h.merge(&Histogram::from_wire(&r.latency));
    }
    PhaseResult {
        phase,
        items,
        tasks: reports.len() as u64,
        elapsed_s,
        rate: rate(items, elapsed_s),
        missing: reports.iter().map(|r| r.missing).sum(),
        stonewall: wall_figures(reports, start),
        latency: h.percentiles(),
    }
}

fn wall_figures(reports: &[&TaskReport], start: u64) -> Option<Stonewall> {
    let walls: Vec<(u64, u64, bool)> = reports.iter().filter_map(|r| r.wall).collect();
    if walls.is_empty() {
        return None;
    }
    let items = walls.iter().map(|w| w.0).sum();
    let end = walls.iter().map(|w| w.1).max().unwrap_or(start);
    let elapsed_s = end.saturating_sub(start) as f64 / 1e9;
    Some(Stonewall {
        hit: walls.iter().any(|w| w.2),
        items,
        min_task_items: walls.iter().map(|w| w.0).min().unwrap_or(0),
        max_task_items: walls.iter().map(|w| w.0).max().unwrap_or(0),
        elapsed_s,
        rate: rate(items, elapsed_s),
    })
}

fn rate(items: u64, secs: f64) -> f64 {
    if items == 0 || secs <= 0.0 {
        0.0
    } else {
        items as f64 / secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(items: u64, start: u64, end: u64) -> TaskReport {
        TaskReport {
            items,
            end_ns: end,
            ..TaskReport::start(Phase::FileCreate, start)
        }
    }

    /// A task that did nothing (its report's latency is the empty form,
    /// or an older peer's zeroed one) must not pull the phase's minimum
    /// to 0: the phase's figures are the merge of the tasks'.
    #[test]
    fn an_idle_task_leaves_the_latency_extremes_alone() {
        let mut busy = rep(2, 0, 10);
        let mut h = Histogram::new();
        h.record(500);
        h.record(900);
        busy.latency = h.to_wire();
        let idle = rep(0, 0, 10);
        let zeroed = TaskReport {
            latency: HistogramWire {
                min: 0,
                ..HistogramWire::default()
            },
            ..rep(0, 0, 10)
        };
        let p = combine(Phase::FileCreate, &[&idle, &busy, &zeroed]);
        let l = p.latency;
        assert_eq!((l.count, l.min_ns, l.max_ns), (2, 500, 900));
        assert_eq!(l.mean_ns, 700.0);
    }

    #[test]
    fn rate_spans_earliest_start_to_latest_end() {
        let a = rep(100, 1_000_000_000, 2_000_000_000);
        let b = rep(300, 1_500_000_000, 3_000_000_000);
        let r = combine(Phase::FileCreate, &[&a, &b]);
        assert_eq!(r.items, 400);
        assert!((r.elapsed_s - 2.0).abs() < 1e-12);
        assert!((r.rate - 200.0).abs() < 1e-9);
        assert!(r.stonewall.is_none());
    }

    /// A task with no item in the phase does not stretch its time; with
    /// no item anywhere every task's span counts.
    #[test]
    fn idle_tasks_take_no_part_in_the_time() {
        let owner = rep(1, 1_000, 5_000);
        let idle = rep(0, 0, 9_000);
        let r = combine(Phase::TreeRemove, &[&idle, &owner]);
        assert_eq!(r.elapsed_s, 4e-6);
        let none = combine(
            Phase::TreeRemove,
            &[&rep(0, 0, 9_000), &rep(0, 1_000, 2_000)],
        );
        assert_eq!((none.items, none.elapsed_s), (0, 9e-6));
    }

    #[test]
    fn stonewall_figures() {
        let mut a = rep(50, 0, 4_000_000_000);
        a.wall = Some((30, 1_000_000_000, true));
        let mut b = rep(50, 0, 4_000_000_000);
        b.wall = Some((50, 2_000_000_000, false));
        let s = combine(Phase::FileCreate, &[&a, &b]).stonewall.unwrap();
        assert!(s.hit);
        assert_eq!((s.items, s.min_task_items, s.max_task_items), (80, 30, 50));
        assert!((s.rate - 40.0).abs() < 1e-9);
    }

    #[test]
    fn trouble_is_shared() {
        let out = iolab_comm::run_local(3, |c| {
            let mut r = TaskReport::start(Phase::FileStat, 0);
            if c.task() == 2 {
                r.error = Some(Failure::io(
                    "stat",
                    Some("/x".into()),
                    &std::io::Error::from_raw_os_error(2),
                ));
            }
            exchange(c, &[r]).1
        });
        for (task, t) in out.into_iter().enumerate() {
            let e = t.unwrap().error.unwrap();
            assert_eq!((e.path.as_deref(), e.errno), (Some("/x"), Some(2)));
            // The task that failed keeps its own; the others are told
            // which task it was.
            let told = task != 2;
            assert_eq!(e.message.starts_with("task 2: "), told, "{}", e.message);
        }
    }
}
