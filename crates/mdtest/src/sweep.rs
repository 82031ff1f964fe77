//! mdtest's `-f/-l/-s` sweep: one test per task count, run by the tasks
//! that count holds, recorded into the results document, stopped at the
//! first count that does not complete (on every rank). The binary gives
//! what is its own through [`Hooks`]: the observer that shows progress,
//! and the printing and exports after each count.

use crate::engine::{Engine, Observer, Progress, Unfinished};
use crate::results::{MdtestDocument, TestResult};
use crate::stonewall::WallCounts;
use crate::{Config, Plan};
use iolab_backend::Backend;
use iolab_comm::failure::{first_rank_failure, peer_stopped};
use iolab_comm::{run_subset, Transport};
use iolab_core::Outcome;
use std::sync::Arc;

/// What the tasks of one count here answer: one result per task.
pub type Answers = Vec<Result<TestResult, Unfinished>>;

/// What the binary does around the sweep's counts. Called on every rank;
/// the binary decides what its leader alone prints.
pub trait Hooks: Sync {
    /// Runs one count's `f` with an observer of this process's
    /// `local_tasks` tasks (a progress display, or none).
    fn watch(
        &self,
        local_tasks: usize,
        progress: &Progress,
        f: &mut dyn FnMut(&dyn Observer) -> Answers,
    ) -> Answers;
    /// The first task of a count is about to start: `tasks` on `nodes`.
    fn header(&self, doc: &MdtestDocument, tasks: u64, nodes: u64);
    /// A count completed with these figures.
    fn completed(&self, t: &TestResult);
    /// A note for the user (also kept in the document).
    fn note(&self, note: &str);
    /// A count did not complete.
    fn unfinished(&self, u: &Unfinished);
    /// A count ended (the document holds it): the exports are rewritten.
    fn count_ended(&self, doc: &mut MdtestDocument);
}

/// The run's fixed parts: what each count runs.
pub struct Sweep<'a> {
    /// The validated configuration.
    pub cfg: &'a Config,
    /// Its plan.
    pub plan: Plan,
    /// The backend every task works through.
    pub backend: &'a dyn Backend,
    /// The stonewall counts read back (`-W` with a stonewall file).
    pub wall: Option<WallCounts>,
    /// The processes of the job.
    pub transport: Arc<dyn Transport>,
    /// Where the tasks record their items for live figures (`--live`).
    pub live: Option<&'a iolab_core::live::Board>,
    /// The run's cancellation token (the session's).
    pub cancel: &'a iolab_core::CancelToken,
}

impl Sweep<'_> {
    /// Runs every task count of the sweep into `doc`; stops at the first
    /// that does not complete.
    pub fn run(&self, doc: &mut MdtestDocument, hooks: &dyn Hooks) {
        let leader = self.transport.rank() == 0;
        let total = self.cfg.tasks_per_process as usize * self.transport.size();
        let counts = task_counts(self.cfg, total);
        for (i, &n) in counts.iter().enumerate() {
            let out = self.run_count(doc, hooks, n, (i == 0, i + 1 == counts.len()));
            let end = match out {
                Some(Ok(t)) => finished(doc, hooks, t),
                Some(Err(u)) => Err(u),
                // This rank holds none of this count's tasks: it sat out.
                None => Ok(()),
            };
            if let Err(u) = end {
                hooks.unfinished(&u);
                doc.outcome = u.outcome;
                // Each with why (not the run's, or removal not seen
                // through); the first few, and how many in all.
                doc.payload.left_behind = u
                    .left
                    .iter()
                    .take(crate::results::LEFT_LISTED)
                    .map(|l| l.to_string())
                    .collect();
                doc.payload.left_behind_count = u.left.len() as u64;
                doc.payload.cut_short = u.cut_short.map(|c| *c);
            }
            if leader {
                doc.payload.finished = iolab_core::clock::mdtest_timestamp();
                doc.finished_unix_ns = iolab_core::clock::wall_ns();
                hooks.count_ended(doc);
            }
            if !self.all_ranks_go_on(doc) {
                break;
            }
        }
        self.interrupted_at_the_end(doc, hooks);
    }

    /// A stop request that came after the last count's operations (as
    /// its figures were printed and exported): the run is interrupted
    /// all the same (exit 130, as "stopping" was said), its figures stay
    /// whole, and a note says that what it made is left as a completed
    /// run leaves it.
    fn interrupted_at_the_end(&self, doc: &mut MdtestDocument, hooks: &dyn Hooks) {
        if !self.cancel.is_cancelled() || doc.outcome != Outcome::Completed {
            return;
        }
        let note = "interrupted after the run's last operation: its figures are whole, and what it made is left as a completed run leaves it";
        hooks.note(note);
        doc.notes.push(note.to_string());
        doc.outcome = Outcome::Interrupted;
    }

    /// Runs one task count; returns the result of this process's first
    /// task or the most telling way the test ended over its tasks, and
    /// nothing on a rank that holds none of the count's tasks.
    fn run_count(
        &self,
        doc: &MdtestDocument,
        hooks: &dyn Hooks,
        n: usize,
        (first, last): (bool, bool),
    ) -> Option<Result<TestResult, Unfinished>> {
        let threads = self.cfg.tasks_per_process as usize;
        let progress = Progress::new(threads);
        let out = hooks.watch(threads.min(n), &progress, &mut |observer| {
            let engine = Engine::new(
                self.cfg,
                self.plan,
                self.backend,
                observer,
                &progress,
                self.wall,
            )
            .in_sweep(first, last)
            .with_live(self.live)
            .with_cancel(self.cancel);
            run_subset(self.transport.clone(), threads, n, |c| {
                if c.task() == 0 {
                    hooks.header(doc, c.tasks() as u64, c.nodes() as u64);
                }
                engine.run(c)
            })
        });
        merge_tasks(out)
    }

    /// Whether every rank completed this task count. Collective over all
    /// ranks, so that a rank that sat out a count (its tasks were not in
    /// it) learns of a failure instead of waiting for the next count, and
    /// what failed: the lowest failing rank's failure, whole.
    fn all_ranks_go_on(&self, doc: &mut MdtestDocument) -> bool {
        let mine = doc.outcome != Outcome::Completed;
        let any = self
            .transport
            .all_gather(&[u8::from(mine)])
            .iter()
            .any(|v| v.first() == Some(&1));
        if !any {
            return true;
        }
        // Every rank answered the gather above and saw the same `any`:
        // all of them are here for this one too.
        let failed = match &doc.outcome {
            Outcome::Error(f) => Some(f.clone()),
            _ => None,
        };
        let first = first_rank_failure(&*self.transport, failed);
        if !mine {
            doc.outcome = match (self.cancel.is_cancelled(), first) {
                (true, _) => Outcome::Interrupted,
                (false, Some(f)) => Outcome::Error(f),
                (false, None) => Outcome::Error(peer_stopped()),
            };
        }
        false
    }
}

/// Records a completed test. A -x file that could not be written turns
/// the run into an error after the figures are kept.
fn finished(doc: &mut MdtestDocument, hooks: &dyn Hooks, t: TestResult) -> Result<(), Unfinished> {
    let missing = t.missing_items;
    if missing > 0 {
        let note = format!(
            "{missing} items were already gone (removed earlier, or never made by an interrupted run); only what was there was removed and counted"
        );
        hooks.note(&note);
        doc.notes.push(note);
    }
    hooks.completed(&t);
    let failure = t.stonewall_file_error.clone();
    doc.payload.tests.push(t);
    match failure {
        Some(f) => Err(Unfinished::new(Outcome::Error(f))),
        None => Ok(()),
    }
}

/// One answer from this process's tasks: they agree when all went well;
/// otherwise the error of the task that failed beats "another task
/// failed", which beats an interruption. Left-behind lists are joined.
fn merge_tasks(out: Answers) -> Option<Result<TestResult, Unfinished>> {
    let mut worst: Option<Unfinished> = None;
    let mut first_ok = None;
    for r in out {
        match r {
            Ok(t) => {
                first_ok.get_or_insert(t);
            }
            Err(u) => worst = Some(pick(worst, u)),
        }
    }
    match (worst, first_ok) {
        (Some(u), _) => Some(Err(u)),
        (None, t) => t.map(Ok),
    }
}

fn pick(a: Option<Unfinished>, b: Unfinished) -> Unfinished {
    let Some(mut a) = a else { return b };
    let rank = |o: &Outcome| match o {
        Outcome::Error(f) if f.op != "peer" => 3,
        Outcome::Error(_) => 2,
        Outcome::Interrupted => 1,
        _ => 0,
    };
    let mut left = std::mem::take(&mut a.left);
    left.extend(b.left.iter().cloned());
    left.sort();
    left.dedup();
    let mut keep = if rank(&b.outcome) > rank(&a.outcome) {
        b
    } else {
        a
    };
    keep.left = left;
    keep
}

/// Task counts to run: the -f/-l/-s sweep, or all `total` tasks.
pub fn task_counts(cfg: &Config, total: usize) -> Vec<usize> {
    match cfg.sweep {
        Some((f, l, s)) => (f..=l)
            .step_by(s as usize)
            .map(|n| n as usize)
            .filter(|&n| n <= total)
            .collect(),
        None => vec![total],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_backend::remove::{Left, Why};
    use iolab_core::Failure;
    use std::path::PathBuf;

    fn unfinished(o: Outcome, left: &str) -> Unfinished {
        Unfinished {
            left: vec![Left {
                path: PathBuf::from(left),
                why: Why::NotOurs,
            }],
            ..Unfinished::new(o)
        }
    }

    #[test]
    fn the_failed_task_beats_a_peer_and_an_interruption_and_lists_join() {
        let own = Outcome::Error(Failure::other("create", "disk full"));
        let out = vec![
            Err(unfinished(Outcome::Interrupted, "/a")),
            Err(unfinished(own.clone(), "/b")),
            Err(unfinished(Outcome::Error(peer_stopped()), "/a")),
        ];
        let Some(Err(u)) = merge_tasks(out) else {
            panic!("an unfinished task makes the count unfinished");
        };
        assert_eq!(u.outcome, own);
        let paths: Vec<_> = u.left.iter().map(|l| l.path.clone()).collect();
        assert_eq!(paths, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    }

    /// Cancels the run's token as a count's figures are reported: a
    /// Ctrl-C that lands after the last operation, as the results print.
    struct StopAsReported(iolab_core::CancelToken, std::sync::Mutex<Vec<String>>);

    impl Hooks for StopAsReported {
        fn watch(
            &self,
            _local_tasks: usize,
            _progress: &Progress,
            f: &mut dyn FnMut(&dyn crate::engine::Observer) -> Answers,
        ) -> Answers {
            f(&crate::engine::Quiet)
        }
        fn header(&self, _doc: &MdtestDocument, _tasks: u64, _nodes: u64) {}
        fn completed(&self, _t: &TestResult) {
            self.0.cancel();
        }
        fn note(&self, note: &str) {
            self.1.lock().unwrap().push(note.to_string());
        }
        fn unfinished(&self, _u: &Unfinished) {}
        fn count_ended(&self, _doc: &mut MdtestDocument) {}
    }

    /// A stop that lands as the last count's figures are reported (the
    /// engine is done) still makes the run interrupted, with its figures
    /// whole and a note of what it left. It ended completed (exit 0)
    /// though "stopping" was said.
    #[test]
    fn a_stop_as_the_results_are_reported_interrupts_the_run() {
        let dir = std::env::temp_dir().join(format!("iolab-sweep-stop-{}", std::process::id()));
        let line = format!("-n 5 -d {}", dir.display());
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        let cfg = Config::from_raw(&crate::args::parse(&words).unwrap()).unwrap();
        let plan = Plan::new(&cfg).unwrap();
        let cancel = iolab_core::CancelToken::new();
        let sweep = Sweep {
            cfg: &cfg,
            plan,
            backend: &iolab_backend::Posix,
            wall: None,
            transport: Arc::new(iolab_comm::SingleProcess::new()),
            live: None,
            cancel: &cancel,
        };
        let payload = crate::results::MdtestPayload {
            started: String::new(),
            finished: String::new(),
            plan,
            comm: crate::results::CommInfo {
                kind: "threads".into(),
                ranks: 1,
                tasks_per_rank: 1,
            },
            tests: Vec::new(),
            left_behind: Vec::new(),
            left_behind_count: 0,
            cut_short: None,
        };
        let mut doc = MdtestDocument::new(
            crate::results::SCHEMA,
            "mdtest",
            &line,
            cfg.clone(),
            iolab_results::Environment::default(),
            Outcome::Completed,
            payload,
        );
        let hooks = StopAsReported(cancel.clone(), std::sync::Mutex::new(Vec::new()));
        sweep.run(&mut doc, &hooks);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(doc.outcome, Outcome::Interrupted);
        assert_eq!(doc.payload.tests.len(), 1, "its figures stay whole");
        let notes = hooks.1.lock().unwrap().clone();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("after the run's last operation")),
            "{notes:?}"
        );
        assert_eq!(doc.notes, notes);
    }

    #[test]
    fn no_task_here_is_no_answer() {
        assert!(merge_tasks(Vec::new()).is_none());
    }
}
