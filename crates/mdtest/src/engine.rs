//! Runs one mdtest test (one task count) on every task: iterations, and in
//! each the phases in mdtest's order, with barriers, timing and the
//! exchange of per-task reports. Engines never print: progress goes to an
//! [`Observer`] (called on task 0 only) and to per-task counters.

use crate::config::{Config, ConfigError};
use crate::exchange::{exchange, PhaseTrouble, TaskReport};
use crate::names::test_dir;
use crate::plan::Plan;
use crate::results::{summarize, IterationResult, Phase, PhaseResult, TestResult};
use crate::stonewall::{self, WallCounts};
use crate::work::TaskState;
use iolab_backend::Backend;
use iolab_comm::{Comm, CommExt};
use iolab_core::clock::wall_ns;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Receives progress events from task 0.
pub trait Observer: Sync {
    /// A phase starts; `items_per_task` is what each task will do.
    fn phase_started(&self, _iteration: u64, _phase: Phase, _items_per_task: u64) {}
    /// A phase ended with this result (over all tasks).
    fn phase_done(&self, _iteration: u64, _result: &PhaseResult) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

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

/// A run that did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong (path and errno for I/O errors).
    pub message: String,
    /// The run was stopped by the user.
    pub interrupted: bool,
    /// Paths the cleanup had to leave behind.
    pub left: Vec<PathBuf>,
}

/// One test, ready to run on every task.
pub struct Engine<'a> {
    cfg: &'a Config,
    plan: Plan,
    backend: &'a dyn Backend,
    observer: &'a dyn Observer,
    progress: &'a Progress,
    wall: Option<WallCounts>,
    cancel: AtomicBool,
}

impl<'a> Engine<'a> {
    /// Prepares a test. `wall` are the counts read from -x by
    /// [`preflight`], for runs without a create phase.
    pub fn new(
        cfg: &'a Config,
        plan: Plan,
        backend: &'a dyn Backend,
        observer: &'a dyn Observer,
        progress: &'a Progress,
        wall: Option<WallCounts>,
    ) -> Self {
        Engine {
            cfg,
            plan,
            backend,
            observer,
            progress,
            wall,
            cancel: AtomicBool::new(false),
        }
    }

    pub(crate) fn cfg(&self) -> &Config {
        self.cfg
    }
    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }
    pub(crate) fn backend(&self) -> &dyn Backend {
        self.backend
    }
    pub(crate) fn counter(&self, task: usize) -> &AtomicU64 {
        self.progress.slot(task)
    }
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || iolab_core::stop::requested()
    }
    pub(crate) fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Runs the test on this task; every task returns the same result.
    pub fn run(&self, comm: &dyn Comm) -> Result<TestResult, Failure> {
        let seed = self.agree_seed(comm);
        let mut st = TaskState::new(self, comm, seed);
        let mut iterations = Vec::new();
        // What each task really worked on: a stonewall may level it below the plan.
        let mut items_per_task = if self.cfg.do_files {
            self.file_count()
        } else {
            self.dir_count()
        };
        for iter in 0..self.cfg.iterations {
            match self.iteration(&mut st, iter) {
                Ok((r, items)) => {
                    iterations.push(r);
                    items_per_task = items;
                }
                Err(t) => return Err(self.fail(&mut st, t)),
            }
        }
        st.remove_root_if_created();
        Ok(TestResult {
            tasks: comm.tasks() as u64,
            nodes: comm.nodes() as u64,
            items_per_task,
            total_items: items_per_task * comm.tasks() as u64,
            random_seed: seed,
            summary: summarize(&iterations),
            iterations,
        })
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

    fn agree_seed(&self, comm: &dyn Comm) -> Option<u64> {
        match self.cfg.random_seed {
            None => None,
            Some(Some(s)) => Some(s),
            Some(None) => {
                let mine = (wall_ns() / 1_000_000_000).to_le_bytes();
                let b = comm.broadcast(0, &mine);
                Some(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
        }
    }

    /// Runs one iteration; returns it and the items per task it ended with
    /// (files, or directories with -D).
    fn iteration(
        &self,
        st: &mut TaskState,
        iter: u64,
    ) -> Result<(IterationResult, u64), PhaseTrouble> {
        st.setup_test_dirs(iter)?;
        let mut run = PhaseRun {
            iter,
            pending: Vec::new(),
            results: Vec::new(),
        };
        let p = self.cfg.phases;
        let mut files = self.file_count();
        let mut dirs = self.dir_count();
        if p.create {
            self.phase(st, &mut run, Phase::TreeCreate, 0, |st, rep| {
                st.tree(iter, true, rep)
            })?;
        }
        if self.cfg.do_dirs {
            st.pre_delay();
            if p.create {
                dirs = self.phase_with_count(st, &mut run, Phase::DirCreate, dirs)?;
            }
            if p.stat {
                self.item_phase(st, &mut run, Phase::DirStat, dirs)?;
                if self.cfg.rename_dirs && dirs > 1 {
                    self.phase(st, &mut run, Phase::DirRename, dirs, |st, rep| {
                        st.rename(iter, dirs, rep)
                    })?;
                }
            }
            if p.remove {
                self.item_phase(st, &mut run, Phase::DirRemove, dirs)?;
            }
        }
        if self.cfg.do_files {
            st.pre_delay();
            if p.create {
                files = self.phase_with_count(st, &mut run, Phase::FileCreate, files)?;
            }
            if p.stat {
                self.item_phase(st, &mut run, Phase::FileStat, files)?;
            }
            if p.read {
                self.item_phase(st, &mut run, Phase::FileRead, files)?;
            }
            if p.remove {
                self.item_phase(st, &mut run, Phase::FileRemove, files)?;
            }
        }
        if p.create {
            self.record_counts(st, files, dirs);
        }
        if p.remove {
            self.phase(st, &mut run, Phase::TreeRemove, 0, |st, rep| {
                st.tree(iter, false, rep)
            })?;
        }
        self.flush(st, &mut run)?;
        if p.remove {
            st.remove_test_dirs(iter);
        }
        let items = if self.cfg.do_files { files } else { dirs };
        let result = IterationResult {
            iteration: iter,
            phases: run.results,
        };
        Ok((result, items))
    }

    /// A stat, read or remove phase over `n` items per task.
    fn item_phase(
        &self,
        st: &mut TaskState,
        run: &mut PhaseRun,
        phase: Phase,
        n: u64,
    ) -> Result<(), PhaseTrouble> {
        let iter = run.iter;
        self.phase(st, run, phase, n, |st, rep| st.items(iter, phase, n, rep))
    }

    /// A create phase: returns the count every task ended with (the
    /// stonewall may have levelled it).
    fn phase_with_count(
        &self,
        st: &mut TaskState,
        run: &mut PhaseRun,
        phase: Phase,
        n: u64,
    ) -> Result<u64, PhaseTrouble> {
        let (iter, mut done) = (run.iter, n);
        self.phase(st, run, phase, n, |st, rep| {
            done = st.create(iter, phase, n, rep)
        })?;
        Ok(done)
    }

    fn record_counts(&self, st: &TaskState, files: u64, dirs: u64) {
        if let (Some(path), 0) = (&self.cfg.stonewall_file, st.task()) {
            let c = WallCounts {
                files,
                dirs: self.cfg.do_dirs.then_some(dirs),
            };
            // A failed write is reported but does not void the measurement.
            if let Err(e) = stonewall::write(path, c) {
                eprintln!(
                    "mdtest: warning: -x {}: cannot write the stonewall file: {e}",
                    path.display()
                );
            }
        }
    }

    fn phase(
        &self,
        st: &mut TaskState,
        run: &mut PhaseRun,
        phase: Phase,
        items_per_task: u64,
        work: impl FnOnce(&mut TaskState, &mut TaskReport),
    ) -> Result<(), PhaseTrouble> {
        let comm = st.comm();
        // -B drops the barriers between item phases, but the tree must
        // exist before anyone creates items in it and outlive their
        // removal: mdtest fences tree creation and removal even with -B.
        let fenced = self.cfg.barriers || matches!(phase, Phase::TreeCreate | Phase::TreeRemove);
        if fenced {
            comm.barrier();
        }
        if comm.task() == 0 {
            self.observer.phase_started(run.iter, phase, items_per_task);
        }
        self.counter(comm.task()).store(0, Ordering::Relaxed);
        let mut rep = TaskReport::start(phase, wall_ns());
        work(st, &mut rep);
        if self.cfg.sync_phases {
            self.backend.sync_all();
        }
        rep.end_ns = wall_ns();
        rep.latency = st.take_latency().to_wire();
        rep.interrupted |= iolab_core::stop::requested();
        run.pending.push(rep);
        if fenced {
            comm.barrier();
        }
        if self.cfg.barriers {
            self.flush(st, run)?;
        }
        Ok(())
    }

    fn flush(&self, st: &TaskState, run: &mut PhaseRun) -> Result<(), PhaseTrouble> {
        if run.pending.is_empty() {
            return Ok(());
        }
        let (results, trouble) = exchange(st.comm(), &run.pending);
        run.pending.clear();
        if st.task() == 0 {
            results
                .iter()
                .for_each(|r| self.observer.phase_done(run.iter, r));
        }
        run.results.extend(results);
        trouble.map_or(Ok(()), Err)
    }

    fn fail(&self, st: &mut TaskState, t: PhaseTrouble) -> Failure {
        st.comm().barrier();
        let mine = st.cleanup_after_failure();
        let all = st.comm().all_gather(mine.join("\n").as_bytes());
        let left = all
            .iter()
            .flat_map(|b| {
                String::from_utf8_lossy(b)
                    .lines()
                    .map(PathBuf::from)
                    .collect::<Vec<_>>()
            })
            .collect();
        Failure {
            message: t.error.unwrap_or_else(|| "interrupted".into()),
            interrupted: t.interrupted,
            left,
        }
    }
}

struct PhaseRun {
    iter: u64,
    pending: Vec<TaskReport>,
    results: Vec<PhaseResult>,
}

/// Checks made once before any task starts and before anything is
/// created: test directories left by earlier runs, and the -x file.
/// Returns the counts read from -x for runs without a create phase.
pub fn preflight(cfg: &Config, plan: &Plan) -> Result<Option<WallCounts>, ConfigError> {
    for root in &cfg.dirs {
        for iter in 0..cfg.iterations {
            for lp in 0..plan.loops {
                let td = test_dir(root, iter, lp);
                if cfg.phases.create && td.exists() {
                    return Err(ConfigError(format!(
                        "-d {}: {} already exists (left by an earlier run?); remove it with a -r run of the same options, or use another -d",
                        root.display(),
                        td.display()
                    )));
                }
                if !cfg.phases.create && lp == 0 && !td.exists() {
                    return Err(ConfigError(format!(
                        "-d {}: {} does not exist; run the create phase (-C) with the same options first",
                        root.display(),
                        td.display()
                    )));
                }
            }
        }
    }
    match (&cfg.stonewall_file, cfg.phases.create) {
        (Some(f), false) => stonewall::read(f).map(Some).map_err(ConfigError),
        _ => Ok(None),
    }
}

impl Engine<'_> {
    /// The stride shift for phase `j` of task `t`, as global task ids.
    pub(crate) fn neighbour(&self, comm: &dyn Comm, j: u64) -> usize {
        let n = comm.tasks() as u64;
        ((comm.task() as u64 + j * self.cfg.stride) % n) as usize
    }
}
