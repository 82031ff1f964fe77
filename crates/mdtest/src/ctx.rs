//! The run context every task of one test shares: the validated options,
//! the plan, the backend, the progress counters and the cancel tokens. Both
//! the phase sequencing (engine.rs) and the item loops (work.rs) read it,
//! so neither needs the other.

use crate::config::Config;
use crate::plan::Plan;
use crate::stonewall::WallCounts;
use iolab_backend::Backend;
use iolab_comm::Comm;
use iolab_core::live::{Board, Recorder};
use iolab_core::CancelToken;
use std::sync::atomic::{AtomicU64, Ordering};

#[repr(align(64))]
struct Slot(AtomicU64);

/// Items done in the current phase, one counter per local task, each on
/// its own cache line so the hot loops never share one.
pub struct Progress {
    slots: Vec<Slot>,
}

impl Progress {
    /// Counters for `local_tasks` tasks.
    pub fn new(local_tasks: usize) -> Self {
        Progress {
            slots: (0..local_tasks.max(1))
                .map(|_| Slot(AtomicU64::new(0)))
                .collect(),
        }
    }
    /// Sum over local tasks.
    pub fn total(&self) -> u64 {
        self.slots.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
    pub(crate) fn slot(&self, task: usize) -> &AtomicU64 {
        &self.slots[task % self.slots.len()].0
    }
}

/// What every task of one test reads.
pub(crate) struct RunCtx<'a> {
    pub(crate) cfg: &'a Config,
    pub(crate) plan: Plan,
    pub(crate) backend: &'a dyn Backend,
    progress: &'a Progress,
    wall: Option<WallCounts>,
    /// The run's token (the caller's: Ctrl-C, SIGTERM, a failed peer
    /// process); cancelled means interrupted.
    run: CancelToken,
    /// A child of `run` that a failed local task cancels, stopping the
    /// others at their next item without stopping the process.
    cancel: CancelToken,
    /// A later task count of a create-only sweep: what an earlier count
    /// made (test directories, trees, items) is found, not an error.
    pub(crate) reuse_existing: bool,
    /// A task count of a remove-only sweep other than the last: the tree
    /// and test directories stay for the larger counts' items.
    pub(crate) keep_tree: bool,
    /// Live figures (`--live`): each task records its phase's items here.
    pub(crate) live: Option<&'a Board>,
    /// The phase name the live rows carry instead of mdtest's own (io500's
    /// `mdtest-easy-write`); the tree phases are then not recorded.
    pub(crate) live_name: Option<&'a str>,
    /// After a failure or interruption, leave what the test made to the
    /// caller's own cleanup (io500's, which reports its progress).
    pub(crate) leave_on_failure: bool,
}

impl<'a> RunCtx<'a> {
    pub(crate) fn new(
        cfg: &'a Config,
        plan: Plan,
        backend: &'a dyn Backend,
        progress: &'a Progress,
        wall: Option<WallCounts>,
    ) -> Self {
        RunCtx {
            cfg,
            plan,
            backend,
            progress,
            wall,
            run: CancelToken::process(),
            cancel: CancelToken::process().child(),
            reuse_existing: false,
            keep_tree: false,
            live: None,
            live_name: None,
            leave_on_failure: false,
        }
    }

    /// The recorder of `task` for `phase` (one that records nothing
    /// without live figures).
    pub(crate) fn recorder(&self, phase: crate::Phase, task: usize) -> Recorder {
        let Some(b) = self.live else {
            return Recorder::off();
        };
        let tree = matches!(phase, crate::Phase::TreeCreate | crate::Phase::TreeRemove);
        let name = match self.live_name {
            Some(_) if tree => return Recorder::off(),
            Some(n) => n,
            None => phase.key(),
        };
        if phase.is_create() {
            b.allow_steady(name);
        }
        b.recorder(name, task)
    }

    /// Whether a create phase may end on its steady state (`--steady`):
    /// its tasks then agree on a count as after a stonewall.
    pub(crate) fn steady_watched(&self) -> bool {
        self.live.is_some_and(Board::steady_watched)
    }

    pub(crate) fn counter(&self, task: usize) -> &AtomicU64 {
        self.progress.slot(task)
    }

    /// True once any local task failed, the user asked to stop, or the
    /// communicator was cancelled (a task died).
    pub(crate) fn cancelled(&self, comm: &dyn Comm) -> bool {
        self.cancel.is_cancelled() || comm.cancelled()
    }

    /// Stops the other local tasks' loops at their next item.
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// True once the run itself was cancelled (not only a local task).
    pub(crate) fn interrupted(&self) -> bool {
        self.run.is_cancelled()
    }

    /// Runs under `token` (the caller's run token).
    pub(crate) fn set_token(&mut self, token: &CancelToken) {
        self.run = token.clone();
        self.cancel = token.child();
    }

    /// A run that only removes what an earlier run made (-r without -C):
    /// an item that is already gone is counted as missing, not an error,
    /// so that a tree left by a killed run can be removed.
    pub(crate) fn tolerates_missing(&self) -> bool {
        self.cfg.phases.remove && !self.cfg.phases.create
    }

    /// Files each task works on: the plan's count, or what -x recorded.
    pub(crate) fn file_count(&self) -> u64 {
        match self.wall {
            Some(w) if !self.cfg.phases.create => w.files,
            _ => self.plan.items_per_task,
        }
    }

    /// Directories each task works on.
    pub(crate) fn dir_count(&self) -> u64 {
        match self.wall {
            Some(WallCounts { dirs: Some(d), .. }) if !self.cfg.phases.create => d,
            _ => self.plan.items_per_task,
        }
    }

    /// The task `j` strides away from this one (-N), as a global task id.
    pub(crate) fn neighbour(&self, comm: &dyn Comm, j: u64) -> usize {
        // In u128 so that any -N the user gives cannot overflow.
        let n = comm.tasks().max(1) as u128;
        ((comm.task() as u128 + u128::from(j) * u128::from(self.cfg.stride)) % n) as usize
    }

    /// The -u tree that holds the items named after `task`: mdtest 4.x
    /// puts task t's items in the tree of task t + N.
    pub(crate) fn tree_of_items(&self, comm: &dyn Comm, task: usize) -> usize {
        let n = comm.tasks().max(1) as u128;
        ((task as u128 + u128::from(self.cfg.stride)) % n) as usize
    }
}
