//! What a run measured, as plain data for the formatters.

use iolab_core::{Percentiles, Summary};
use serde::{Deserialize, Serialize};

/// The timed phases, in mdtest's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// mkdir of the tree directories.
    TreeCreate,
    /// mkdir of the item directories.
    DirCreate,
    /// stat of the item directories.
    DirStat,
    /// rename of the item directories (-U).
    DirRename,
    /// rmdir of the item directories.
    DirRemove,
    /// create (+write, +fsync) of the files.
    FileCreate,
    /// stat of the files.
    FileStat,
    /// open, read -e bytes, close.
    FileRead,
    /// unlink of the files.
    FileRemove,
    /// rmdir of the tree directories.
    TreeRemove,
}

impl Phase {
    /// Rows of the SUMMARY table, in print order.
    pub const TABLE_ORDER: [Phase; 10] = [
        Phase::DirCreate,
        Phase::DirStat,
        Phase::DirRename,
        Phase::DirRemove,
        Phase::FileCreate,
        Phase::FileStat,
        Phase::FileRead,
        Phase::FileRemove,
        Phase::TreeCreate,
        Phase::TreeRemove,
    ];

    /// The label mdtest 1.9.3 prints (18 characters, padded).
    pub fn label(self) -> &'static str {
        match self {
            Phase::TreeCreate => "Tree creation",
            Phase::DirCreate => "Directory creation",
            Phase::DirStat => "Directory stat",
            Phase::DirRename => "Directory rename",
            Phase::DirRemove => "Directory removal",
            Phase::FileCreate => "File creation",
            Phase::FileStat => "File stat",
            Phase::FileRead => "File read",
            Phase::FileRemove => "File removal",
            Phase::TreeRemove => "Tree removal",
        }
    }

    /// Stable key used in JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            Phase::TreeCreate => "tree_create",
            Phase::DirCreate => "dir_create",
            Phase::DirStat => "dir_stat",
            Phase::DirRename => "dir_rename",
            Phase::DirRemove => "dir_remove",
            Phase::FileCreate => "file_create",
            Phase::FileStat => "file_stat",
            Phase::FileRead => "file_read",
            Phase::FileRemove => "file_remove",
            Phase::TreeRemove => "tree_remove",
        }
    }

    /// A create phase (stonewall applies).
    pub fn is_create(self) -> bool {
        matches!(self, Phase::DirCreate | Phase::FileCreate)
    }
}

/// Figures up to the stonewall (-W) of a create phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stonewall {
    /// True if the wall fired in at least one task.
    pub hit: bool,
    /// Items all tasks had done when each stopped at the wall.
    pub items: u64,
    /// Fewest items one task had done at the wall.
    pub min_task_items: u64,
    /// Most items one task had done at the wall (all tasks then caught up to it).
    pub max_task_items: u64,
    /// From the phase start to the last task stopping at the wall, s.
    pub elapsed_s: f64,
    /// `items / elapsed_s`.
    pub rate: f64,
}

/// One phase of one iteration, over all tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// Which phase.
    pub phase: Phase,
    /// Operations completed by all tasks.
    pub items: u64,
    /// Tasks that took part.
    pub tasks: u64,
    /// Latest end minus earliest start, s.
    pub elapsed_s: f64,
    /// `items / elapsed_s`, operations per second.
    pub rate: f64,
    /// Items a remove-only run (-r) found already gone (not in `items`).
    #[serde(default)]
    pub missing: u64,
    /// Stonewall figures (create phases with -W).
    pub stonewall: Option<Stonewall>,
    /// Per-operation latency over all tasks.
    pub latency: Percentiles,
}

/// One iteration: its phases in the order they ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationResult {
    /// 0-based iteration number.
    pub iteration: u64,
    /// Phases that ran.
    pub phases: Vec<PhaseResult>,
}

/// Max, min, mean and sample standard deviation over iterations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat4 {
    /// Largest.
    pub max: f64,
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1), 0 for one iteration.
    pub std_dev: f64,
}

impl From<&Summary> for Stat4 {
    fn from(s: &Summary) -> Self {
        Stat4 {
            max: s.max,
            min: s.min,
            mean: s.mean,
            std_dev: s.sample_std_dev(),
        }
    }
}

/// A SUMMARY row: one phase over all iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Which phase.
    pub phase: Phase,
    /// Rates, operations per second.
    pub rate: Stat4,
    /// Times, seconds.
    pub time_s: Stat4,
    /// Stonewall rates (create phases with -W).
    pub stonewall_rate: Option<Stat4>,
}

/// One test (one task count of a sweep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Tasks in this test.
    pub tasks: u64,
    /// Nodes they ran on.
    pub nodes: u64,
    /// Items each task worked on.
    pub items_per_task: u64,
    /// Items over all tasks (the `N tasks, M files/directories` line).
    pub total_items: u64,
    /// Random seed used for -R, if any.
    pub random_seed: Option<u64>,
    /// The -x file could not be written (the run then ends in error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_file_error: Option<iolab_core::Failure>,
    /// Iterations in order: the first [`KEPT_ITERATIONS`] of them (the
    /// summary covers every one), so memory stays flat however many run.
    pub iterations: Vec<IterationResult>,
    /// Iterations run, kept or not; 0 in documents of older versions,
    /// which kept them all (see [`TestResult::iterations_run`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub iterations_count: u64,
    /// Items already gone when removed, over every iteration.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missing_items: u64,
    /// The SUMMARY rows, in table order.
    pub summary: Vec<SummaryRow>,
}

/// How many iterations a test keeps in full; the summary covers all.
pub const KEPT_ITERATIONS: usize = 1000;

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl TestResult {
    /// Iterations run (those kept in full, or more).
    pub fn iterations_run(&self) -> u64 {
        self.iterations_count.max(self.iterations.len() as u64)
    }
}

/// The SUMMARY statistics as iterations complete, in constant memory.
#[derive(Debug, Default)]
pub struct Summarizer {
    /// Per phase in table order: rate, time, stonewall rate.
    acc: [(Summary, Summary, Summary); Phase::TABLE_ORDER.len()],
}

impl Summarizer {
    /// Adds one iteration's phases.
    pub fn add(&mut self, it: &IterationResult) {
        for p in &it.phases {
            let Some(i) = Phase::TABLE_ORDER.iter().position(|x| *x == p.phase) else {
                continue;
            };
            let (rate, time, wall) = &mut self.acc[i];
            rate.add(p.rate);
            time.add(p.elapsed_s);
            if let Some(s) = p.stonewall.filter(|s| s.hit) {
                wall.add(s.rate);
            }
        }
    }

    /// The SUMMARY rows, in table order.
    pub fn rows(&self) -> Vec<SummaryRow> {
        Phase::TABLE_ORDER
            .iter()
            .zip(&self.acc)
            .filter(|(_, (rate, _, _))| rate.count > 0)
            .map(|(phase, (rate, time, wall))| SummaryRow {
                phase: *phase,
                rate: rate.into(),
                time_s: time.into(),
                stonewall_rate: (wall.count > 0).then(|| wall.into()),
            })
            .collect()
    }
}

/// Builds the SUMMARY rows from the iterations.
pub fn summarize(iters: &[IterationResult]) -> Vec<SummaryRow> {
    let mut s = Summarizer::default();
    iters.iter().for_each(|i| s.add(i));
    s.rows()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(phase: Phase, rate: f64) -> PhaseResult {
        PhaseResult {
            phase,
            items: 10,
            tasks: 1,
            elapsed_s: 10.0 / rate,
            rate,
            missing: 0,
            stonewall: None,
            latency: Percentiles::default(),
        }
    }

    #[test]
    fn summary_uses_sample_std_dev_over_iterations() {
        let iters = vec![
            IterationResult {
                iteration: 0,
                phases: vec![pr(Phase::FileCreate, 100.0), pr(Phase::TreeCreate, 5.0)],
            },
            IterationResult {
                iteration: 1,
                phases: vec![pr(Phase::FileCreate, 300.0), pr(Phase::TreeCreate, 5.0)],
            },
        ];
        let rows = summarize(&iters);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].phase, Phase::FileCreate);
        assert_eq!(
            rows[1].phase,
            Phase::TreeCreate,
            "tree rows come last, as mdtest prints them"
        );
        let r = rows[0].rate;
        assert_eq!((r.max, r.min, r.mean), (300.0, 100.0, 200.0));
        assert!((r.std_dev - 200f64 / std::f64::consts::SQRT_2).abs() < 1e-9);
        assert_eq!(rows[1].rate.std_dev, 0.0);
    }
}

/// Where the tasks ran: transport kind, ranks and threads per rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommInfo {
    /// `threads` or `mpi`.
    pub kind: String,
    /// MPI ranks (1 without MPI).
    pub ranks: u64,
    /// Tasks (threads) per rank.
    pub tasks_per_rank: u64,
}

/// mdtest's part of the results document: what each test measured and
/// how the tasks were laid out. The envelope around it
/// ([`MdtestDocument`]) holds the command line, the configuration, the
/// host, the file systems and how the run ended.
#[derive(Debug, Clone, Serialize)]
pub struct MdtestPayload {
    /// Start, local time as mdtest prints it.
    pub started: String,
    /// End, local time as mdtest prints it.
    pub finished: String,
    /// Derived tree and item plan.
    pub plan: crate::Plan,
    /// Transport and task layout.
    pub comm: CommInfo,
    /// One entry per task count (one unless -f/-l/-s sweep).
    pub tests: Vec<TestResult>,
    /// Paths a failed or interrupted run could not remove, each with
    /// why: the first [`LEFT_LISTED`] (a read-only remount mid-run
    /// leaves one per item, tens of thousands).
    pub left_behind: Vec<String>,
    /// How many paths it could not remove in all.
    #[serde(skip_serializing_if = "is_zero")]
    pub left_behind_count: u64,
    /// The phase an error or a stop cut short, with what its tasks had
    /// done by then: a count, not a measurement (no rate is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<CutShort>,
}

/// A phase an error or a stop cut short: how far its tasks got. Its
/// time and rate are no measurement, so it has neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutShort {
    /// The iteration (from 0).
    pub iteration: u64,
    /// The phase.
    pub phase: Phase,
    /// Operations completed by all tasks before it ended.
    pub items: u64,
    /// Always false: the phase is no measurement.
    pub measurement: bool,
}

/// How many leftovers the results and the last words name; the rest
/// are counted (as `iolab ior` lists the first 20 files of a run).
pub const LEFT_LISTED: usize = 20;

impl MdtestPayload {
    /// The headline figures for the envelope: each test's summary rates
    /// (mean, extremes and std dev over its iterations), scoped by task
    /// count when the run swept several.
    pub fn figures(&self) -> Vec<iolab_results::Figure> {
        let mut out = Vec::new();
        for t in &self.tests {
            let scope = match self.tests.len() {
                1 => String::new(),
                _ => format!("tasks={}", t.tasks),
            };
            // Every iteration run, also those not kept in full.
            let n = t.iterations_run().clamp(1, u64::from(u32::MAX)) as u32;
            for s in &t.summary {
                out.push(iolab_results::Figure {
                    phase: s.phase.key().to_string(),
                    metric: "rate".into(),
                    unit: "ops/s".into(),
                    scope: scope.clone(),
                    stat: iolab_results::Spread {
                        n,
                        mean: s.rate.mean,
                        min: s.rate.min,
                        max: s.rate.max,
                        std_dev: s.rate.std_dev,
                    },
                });
            }
        }
        out
    }
}

/// The whole JSON document of one `iolab mdtest` invocation (schema
/// [`SCHEMA`], documented in the README).
pub type MdtestDocument = iolab_results::Envelope<crate::Config, MdtestPayload>;

/// The schema tag of [`MdtestDocument`].
pub const SCHEMA: &str = "iolab.mdtest/2";
