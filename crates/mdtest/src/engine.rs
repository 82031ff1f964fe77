//! Runs one mdtest test (one task count) on every task: iterations, and in
//! each the phases in mdtest's order, with barriers, timing and the
//! exchange of per-task reports. Engines never print: progress goes to an
//! [`Observer`] (called on task 0 only) and to per-task counters.

use crate::config::Config;
use crate::ctx::RunCtx;
use crate::exchange::{exchange, PhaseTrouble, TaskReport};
use crate::plan::Plan;
use crate::results::{CutShort, IterationResult, Phase, PhaseResult, TestResult};
use crate::stonewall::{self, WallCounts};
use crate::work::TaskState;
use iolab_backend::remove::{Left, Why};
use iolab_backend::Backend;
use iolab_comm::{Comm, CommExt};
use iolab_core::clock::wall_ns;
use iolab_core::{Failure, Outcome};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

pub use crate::ctx::Progress;
pub use crate::preflight::preflight;

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

/// A test that did not complete: how it ended and what stayed on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfinished {
    /// [`Outcome::Interrupted`] or [`Outcome::Error`] with op, path, errno.
    pub outcome: Outcome,
    /// What the cleanup had to leave, with why: not made by this run (a
    /// link planted where it made a directory among them), or where it
    /// could not see its removal through (a listing or removal that
    /// failed, as when an object store stops answering: what this run
    /// made may remain there; see [`Unfinished::confirmed`]).
    pub left: Vec<Left>,
    /// The phase it cut short and how far its tasks got there (boxed:
    /// the error side of every task's result stays small).
    pub cut_short: Option<Box<CutShort>>,
}

impl Unfinished {
    /// An unfinished test whose cleanup had nothing to say.
    pub fn new(outcome: Outcome) -> Self {
        Unfinished {
            outcome,
            left: Vec::new(),
            cut_short: None,
        }
    }

    /// Whether the cleanup saw every removal through, so that what is
    /// left is only what is not the run's.
    pub fn confirmed(&self) -> bool {
        self.left.iter().all(Left::known)
    }
}

/// One leftover as a line for the gather across ranks: a tag for why,
/// the path, a tab, the failure's message.
fn encode(l: &Left) -> String {
    let (tag, msg) = match &l.why {
        Why::NotOurs => ('O', ""),
        Why::NotADirectory => ('D', ""),
        Why::Failed(m) => ('F', m.as_str()),
        Why::Stopped => ('S', ""),
        Why::TooDeep => ('T', ""),
    };
    let msg = msg.replace(['\t', '\n'], " ");
    format!("{tag}{}\t{msg}", l.path.display())
}

fn decode(line: &str) -> Option<Left> {
    let (tag, rest) = line.split_at_checked(1)?;
    let (path, msg) = rest.rsplit_once('\t')?;
    let why = match tag {
        "O" => Why::NotOurs,
        "D" => Why::NotADirectory,
        "F" => Why::Failed(msg.to_string()),
        "S" => Why::Stopped,
        "T" => Why::TooDeep,
        _ => return None,
    };
    Some(Left {
        path: PathBuf::from(path),
        why,
    })
}

/// One test, ready to run on every task.
pub struct Engine<'a> {
    ctx: RunCtx<'a>,
    observer: &'a dyn Observer,
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
            ctx: RunCtx::new(cfg, plan, backend, progress, wall),
            observer,
        }
    }

    /// Places this test in a task sweep (-f/-l/-s). A create-only sweep
    /// makes the tree once and later counts find it (and the smaller
    /// counts' items) in place; a remove-only sweep removes each count's
    /// items and leaves the tree to the last count.
    pub fn in_sweep(mut self, first: bool, last: bool) -> Self {
        let p = self.ctx.cfg.phases;
        self.ctx.reuse_existing = !first && p.create && !p.remove;
        self.ctx.keep_tree = !last && p.remove && !p.create;
        self
    }

    /// Runs under the caller's cancellation token (a session's): its
    /// cancellation stops every task at its next item and reads as
    /// interrupted. Without it the test runs under a root token of its
    /// own tied to the process's stop flag (Ctrl-C).
    pub fn with_cancel(mut self, token: &iolab_core::CancelToken) -> Self {
        self.ctx.set_token(token);
        self
    }

    /// Records every task's items on `board` as they finish (`--live`).
    pub fn with_live(mut self, board: Option<&'a iolab_core::live::Board>) -> Self {
        self.ctx.live = board;
        self
    }

    /// Records the item phases under `name` (a benchmark that runs mdtest
    /// as one of its phases, as io500 does) and the tree phases not at all.
    pub fn with_live_name(mut self, name: &'a str) -> Self {
        self.ctx.live_name = Some(name);
        self
    }

    /// Leaves what the test made in place when it fails or is
    /// interrupted, for a caller that removes it itself (io500's final
    /// cleanup): [`Unfinished::left`] is then empty.
    pub fn leave_on_failure(mut self) -> Self {
        self.ctx.leave_on_failure = true;
        self
    }

    /// Runs the test on this task; every task returns the same result.
    /// A task that panics cancels the others (through the communicator),
    /// removes what it made and returns an error outcome.
    pub fn run(&self, comm: &dyn Comm) -> Result<TestResult, Unfinished> {
        let be = self.ctx.backend;
        if be.capabilities().thread_private_fds {
            // A task on a thread of its own stops sharing the process's
            // descriptor table (and its lock) with the other tasks; the
            // backend holds no descriptor another thread would need.
            let _ = iolab_core::threads::own_fd_table();
        }
        let queue = match self.make_queue() {
            Ok(q) => q,
            Err(f) => {
                comm.cancel();
                self.ctx.cancel();
                return Err(Unfinished::new(Outcome::Error(f)));
            }
        };
        let seed = self.agree_seed(comm);
        let mut st = TaskState::new(&self.ctx, comm, seed);
        st.set_queue(queue);
        match catch_unwind(AssertUnwindSafe(|| self.run_task(&mut st))) {
            Ok(r) => r,
            Err(panic) => {
                comm.cancel();
                self.ctx.cancel();
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(Unfinished {
                    left: st.cleanup_after_failure().left,
                    ..Unfinished::new(Outcome::Error(Failure::other(
                        "task",
                        format!("task {} panicked: {why}", comm.task()),
                    )))
                })
            }
        }
    }

    fn run_task(&self, st: &mut TaskState) -> Result<TestResult, Unfinished> {
        let cfg = self.ctx.cfg;
        let comm = st.comm();
        let mut iterations = Vec::new();
        let mut summary = crate::results::Summarizer::default();
        let (mut count, mut missing) = (0u64, 0u64);
        // What each task really worked on: a stonewall may level it below the plan.
        let mut items_per_task = if cfg.do_files {
            self.ctx.file_count()
        } else {
            self.ctx.dir_count()
        };
        for iter in 0..cfg.iterations {
            match self.iteration(st, iter) {
                Ok((mut r, items)) => {
                    summary.add(&r);
                    count += 1;
                    missing += r.phases.iter().map(|p| p.missing).sum::<u64>();
                    if iterations.len() < crate::results::KEPT_ITERATIONS {
                        // Kept for the run's length: without the room a
                        // growing Vec leaves (16 phases' for 9).
                        r.phases.shrink_to_fit();
                        iterations.push(r);
                    }
                    items_per_task = items;
                }
                Err(t) => return Err(self.fail(st, t, iter)),
            }
        }
        // A stop request that came after the last operation (as the last
        // phase ended) interrupts the run all the same, as one a phase
        // saw does: what it made is removed and no summary is given.
        // Agreed, so that every task takes the same way.
        if comm.any(self.ctx.interrupted()) {
            let t = PhaseTrouble {
                error: None,
                interrupted: true,
                cut: None,
            };
            return Err(self.fail(st, t, cfg.iterations));
        }
        st.remove_root_if_created();
        // Shared files (-S) are the same files for every task: count once.
        let total_items = match cfg.shared_file {
            true => items_per_task,
            false => items_per_task * comm.tasks() as u64,
        };
        Ok(TestResult {
            tasks: comm.tasks() as u64,
            nodes: comm.nodes() as u64,
            items_per_task,
            total_items,
            random_seed: st.seed(),
            stonewall_file_error: st.take_output_failure(),
            summary: summary.rows(),
            iterations,
            iterations_count: count,
            missing_items: missing,
        })
    }

    /// This task's metadata queue (`--engine uring`), made on the task's
    /// own thread, which alone submits on it.
    fn make_queue(&self) -> Result<Option<Box<dyn iolab_backend::MetaQueue>>, Failure> {
        let cfg = self.ctx.cfg;
        let Some(qd) = cfg.engine.queue_depth() else {
            return Ok(None);
        };
        let bytes = cfg.write_bytes.max(cfg.read_bytes) as usize;
        self.ctx
            .backend
            .metadata_queue(qd, bytes)
            .map(Some)
            .map_err(|e| Failure::io("--engine uring", None, &e))
    }

    fn agree_seed(&self, comm: &dyn Comm) -> Option<u64> {
        match self.ctx.cfg.random_seed {
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
        let cfg = self.ctx.cfg;
        let p = cfg.phases;
        let mut files = self.ctx.file_count();
        let mut dirs = self.ctx.dir_count();
        if p.create {
            self.phase(st, &mut run, Phase::TreeCreate, 0, |st, rep| {
                st.tree(iter, true, rep)
            })?;
        }
        if cfg.do_dirs {
            dirs = self.dir_phases(st, &mut run, dirs)?;
        }
        if cfg.do_files {
            files = self.file_phases(st, &mut run, files)?;
        }
        if p.create {
            self.record_counts(st, files, dirs);
        }
        if p.remove && !self.ctx.keep_tree {
            self.phase(st, &mut run, Phase::TreeRemove, 0, |st, rep| {
                st.tree(iter, false, rep)
            })?;
        }
        self.flush(st, &mut run)?;
        if p.remove {
            st.remove_test_dirs(iter);
        }
        let items = if cfg.do_files { files } else { dirs };
        let result = IterationResult {
            iteration: iter,
            phases: run.results,
        };
        Ok((result, items))
    }

    /// The directory phases; returns the count every task ended with.
    fn dir_phases(
        &self,
        st: &mut TaskState,
        run: &mut PhaseRun,
        mut dirs: u64,
    ) -> Result<u64, PhaseTrouble> {
        let (cfg, iter) = (self.ctx.cfg, run.iter);
        st.pre_delay();
        if cfg.phases.create {
            dirs = self.phase_with_count(st, run, Phase::DirCreate, dirs)?;
        }
        if cfg.phases.stat {
            self.item_phase(st, run, Phase::DirStat, dirs)?;
        }
        if self.renames(dirs) {
            self.phase(st, run, Phase::DirRename, dirs, |st, rep| {
                st.rename(iter, dirs, rep)
            })?;
        }
        if cfg.phases.remove {
            self.item_phase(st, run, Phase::DirRemove, dirs)?;
        }
        Ok(dirs)
    }

    /// Whether the rename phase runs over `dirs` per task: asked for (-U,
    /// or no phase option), more than one directory (as in mdtest), and a
    /// backend that renames; one that cannot is refused at preflight when
    /// -U was given, and left out of a run without phase options, where
    /// IOR's mdtest warns and times an empty phase.
    fn renames(&self, dirs: u64) -> bool {
        self.ctx.cfg.phases.rename && dirs > 1 && self.ctx.backend.capabilities().rename
    }

    /// The file phases; returns the count every task ended with.
    fn file_phases(
        &self,
        st: &mut TaskState,
        run: &mut PhaseRun,
        mut files: u64,
    ) -> Result<u64, PhaseTrouble> {
        let p = self.ctx.cfg.phases;
        st.pre_delay();
        if p.create {
            files = self.phase_with_count(st, run, Phase::FileCreate, files)?;
        }
        if p.stat {
            self.item_phase(st, run, Phase::FileStat, files)?;
        }
        if p.read {
            self.item_phase(st, run, Phase::FileRead, files)?;
        }
        if p.remove {
            self.item_phase(st, run, Phase::FileRemove, files)?;
        }
        Ok(files)
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

    fn record_counts(&self, st: &mut TaskState, files: u64, dirs: u64) {
        if let (Some(path), 0) = (&self.ctx.cfg.stonewall_file, st.task()) {
            let c = WallCounts {
                files,
                dirs: self.ctx.cfg.do_dirs.then_some(dirs),
            };
            // The measurement stands, but the run must not end as a
            // success: a later -T/-E/-r run depends on this file.
            if let Err(e) = stonewall::write(path, c) {
                let path = Some(path.display().to_string());
                st.set_output_failure(
                    Failure::io("write -x", path, &e).of_kind(iolab_core::FailureKind::Output),
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
        let cfg = self.ctx.cfg;
        let comm = st.comm();
        // -B drops the barriers between item phases, but the tree must
        // exist before anyone creates items in it and outlive their
        // removal: mdtest fences tree creation and removal even with -B.
        let fenced = cfg.barriers || matches!(phase, Phase::TreeCreate | Phase::TreeRemove);
        if fenced {
            comm.barrier();
        }
        if comm.task() == 0 {
            self.observer.phase_started(run.iter, phase, items_per_task);
        }
        self.ctx.counter(comm.task()).store(0, Ordering::Relaxed);
        // The last remove phase's directories are closed here, not in
        // this phase's time.
        st.close_dirs();
        if matches!(phase, Phase::TreeRemove) {
            st.prepare_tree_removal(run.iter);
        }
        let mut rep = TaskReport::start(phase, wall_ns());
        st.live = self.ctx.recorder(phase, comm.task());
        work(st, &mut rep);
        // Dropping the recorder closes its slot: the phase is over here.
        st.live = iolab_core::live::Recorder::off();
        if cfg.sync_phases {
            self.ctx.backend.sync_all();
        }
        rep.end_ns = wall_ns();
        rep.latency = st.take_latency().to_wire();
        rep.interrupted |= self.ctx.interrupted();
        run.pending.push(rep);
        if fenced {
            comm.barrier();
        }
        if cfg.barriers {
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

    /// Cleans up after `t` in iteration `iter`: what stayed, over all
    /// tasks, and how far the phase it cut short got.
    fn fail(&self, st: &mut TaskState, t: PhaseTrouble, iter: u64) -> Unfinished {
        st.comm().barrier();
        let cut_short = t.cut.map(|(phase, items)| {
            Box::new(CutShort {
                iteration: iter,
                phase,
                items,
                measurement: false,
            })
        });
        let outcome = match t.error {
            Some(e) => Outcome::Error(e),
            None => Outcome::Interrupted,
        };
        let mine = st.cleanup_after_failure().left;
        let text: Vec<String> = mine.iter().map(encode).collect();
        let all = st.comm().all_gather(text.join("\n").as_bytes());
        let left = match st.comm().cancelled() {
            // The gather above came back empty: keep at least our own list.
            true => mine,
            false => all
                .iter()
                .flat_map(|b| {
                    let text = String::from_utf8_lossy(b);
                    text.lines().filter_map(decode).collect::<Vec<_>>()
                })
                .collect(),
        };
        Unfinished {
            outcome,
            left,
            cut_short,
        }
    }
}

struct PhaseRun {
    iter: u64,
    pending: Vec<TaskReport>,
    results: Vec<PhaseResult>,
}
