//! What a run found: per test, per iteration, per access (IOR's
//! `IOR_point_t`), the summary over iterations (IOR's "Summary of all
//! tests"), and the headline figures of iolab's envelope.
//!
//! How each figure is computed (all times from the wall clock, so that
//! tasks on different nodes compare):
//! - `total_s`: the latest close end minus the earliest open start;
//!   `open_s`, `rdwr_s`, `close_s` likewise for each step;
//! - `bytes`: the bytes every task moved (IOR's aggFileSizeForBW; it is
//!   also what the bandwidth counts); `file_bytes`: the files' sizes as
//!   the backend states them afterwards (IOR's aggFileSizeFromStat);
//! - `bw_bytes_per_s` = bytes / total_s; `iops` = bytes / transfer /
//!   rdwr_s; `latency_s`: task 0's transfer time over its transfers (what
//!   IOR 4.1 prints);
//! - summary: over iterations, bandwidth = bytes / total_s and OPs =
//!   bytes / transfer / total_s, their maximum, minimum, mean and
//!   population standard deviation; `Stonewall(s)` the mean of task 0's
//!   time to the wall, `Stonewall(MiB)` the bytes per task at the wall
//!   summed over iterations over the summed times (IOR's formulas).

use crate::config::Test;
use crate::file::Layout;
use crate::plan::Geometry;
use iolab_core::Outcome;
use serde::{Deserialize, Serialize};

/// Schema of iolab ior's JSON document.
pub const SCHEMA: &str = "iolab.ior/1";

/// A write or a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Writing the file(s).
    Write,
    /// Reading them.
    Read,
}

impl Access {
    /// IOR's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Access::Write => "write",
            Access::Read => "read",
        }
    }
}

/// Where the stonewall stopped the tasks (with `-O stoneWallingWearOut=1`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stonewall {
    /// Task 0's time from the start of its transfers to the end of the
    /// tasks' agreement on the furthest count (IOR's stonewall_time).
    pub time_s: f64,
    /// Fewest transfers a task had made at the wall.
    pub min_transfers: u64,
    /// Most transfers a task had made: every task then went on to it.
    pub max_transfers: u64,
    /// Fewest bytes a task had moved at the wall.
    pub min_bytes: u64,
    /// Bytes all tasks had moved at the wall.
    pub total_bytes: u64,
    /// total_bytes / tasks, in whole bytes (IOR's stonewall_avg_data_accessed).
    pub avg_bytes: u64,
}

/// The first byte a check found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataError {
    /// The file.
    pub path: String,
    /// Its offset in the file.
    pub offset: u64,
    /// The task that read it.
    pub task: u64,
}

/// One task's times in one access, for `saveRankPerformanceDetailsCSV`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskTimes {
    /// Open start to close end, seconds.
    pub total_s: f64,
    /// Its transfers, seconds.
    pub access_s: f64,
}

/// One write or read of one iteration, over all tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessResult {
    /// Write or read (`-R` reads are reads).
    pub access: Option<Access>,
    /// The iteration (from 0).
    pub iteration: u64,
    /// The read checked what it read (`-R`).
    pub checked: bool,
    /// Bytes moved by every task.
    pub bytes: u64,
    /// The files' sizes afterwards, as the backend states them.
    pub file_bytes: u64,
    /// What the test's geometry says the files hold (block x segments x tasks).
    pub expected_bytes: u64,
    /// Transfers made by every task.
    pub transfers: u64,
    /// Bytes per transfer.
    pub transfer_bytes: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// bytes / total_s.
    pub bw_bytes_per_s: f64,
    /// Transfers per second of transfer time.
    pub iops: f64,
    /// Task 0's mean time per transfer, seconds.
    pub latency_s: f64,
    /// Open step, seconds.
    pub open_s: f64,
    /// Transfer step, seconds.
    pub rdwr_s: f64,
    /// Close step, seconds.
    pub close_s: f64,
    /// Open start to close end, seconds.
    pub total_s: f64,
    /// Transfers per task (the most any task made: every task makes as
    /// many after a wear-out).
    pub pairs_accessed: u64,
    /// The deadline (-D) stopped a task.
    pub deadline_hit: bool,
    /// The stonewall's figures (wear-out only).
    pub stonewall: Option<Stonewall>,
    /// Transfers whose check found a difference (IOR's error count).
    pub errors: u64,
    /// The first difference found.
    pub first_error: Option<DataError>,
    /// Each task's times.
    pub tasks: Vec<TaskTimes>,
    /// What IOR would warn of (file sizes, outliers), in order.
    pub warnings: Vec<String>,
    /// The stop request (Ctrl-C, SIGTERM) cut it short: its figures are
    /// what it did before, not a measurement, and no summary counts it.
    #[serde(default)]
    pub interrupted: bool,
    /// A task's call failed (the disk full, a close refused): what it
    /// did before is not a measurement either, and no summary counts it.
    #[serde(default)]
    pub failed: bool,
}

impl AccessResult {
    /// True when it ran to its end: neither stopped nor failed, so its
    /// figures are a measurement.
    pub fn measured(&self) -> bool {
        !self.interrupted && !self.failed
    }
}

/// One iteration of a test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// Its number (from 0).
    pub index: u64,
    /// The write, when the test writes.
    pub write: Option<AccessResult>,
    /// Transfers the read-back of `-W` found wrong.
    pub check_write_errors: Option<u64>,
    /// The read, when the test reads.
    pub read: Option<AccessResult>,
    /// Time to remove the files, seconds (when removed).
    pub remove_s: Option<f64>,
}

/// The summary of one access over a test's iterations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    /// Write or read.
    pub access: Option<Access>,
    /// Bandwidth, bytes/s: maximum, minimum, mean, standard deviation.
    pub bw_max: f64,
    /// Minimum bandwidth.
    pub bw_min: f64,
    /// Mean bandwidth.
    pub bw_mean: f64,
    /// Population standard deviation of the bandwidth.
    pub bw_sd: f64,
    /// Transfers/s over the total time: maximum.
    pub ops_max: f64,
    /// Minimum.
    pub ops_min: f64,
    /// Mean.
    pub ops_mean: f64,
    /// Population standard deviation.
    pub ops_sd: f64,
    /// Mean total time, seconds.
    pub mean_time_s: f64,
    /// Mean stonewall time (wear-out only).
    pub stonewall_time_s: Option<f64>,
    /// Bytes per task at the wall per second of stonewall time.
    pub stonewall_bytes_per_s: Option<f64>,
    /// The first iteration's bytes (IOR's aggs(MiB)).
    pub agg_bytes: u64,
    /// Iterations summarised.
    pub iterations: u64,
}

/// One test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestResult {
    /// The validated test.
    pub test: Test,
    /// Its tasks and nodes.
    pub geometry: Geometry,
    /// How its files map onto the backend.
    pub layout: Layout,
    /// Its start, as IOR prints times (`Sat Nov 28 17:53:10 2026`).
    pub started: String,
    /// Task 0's file.
    pub path: String,
    /// The file system holding it, when the backend can tell.
    pub fs: Option<FsSpace>,
    /// Its iterations, in order.
    pub iterations: Vec<Iteration>,
    /// The summary of its writes and reads.
    pub summary: Vec<OpSummary>,
    /// How it ended.
    pub outcome: Outcome,
    /// What the test has to say (warnings that concern no one access).
    pub notes: Vec<String>,
    /// `-O stoneWallingWearOut` without a status file: IOR prints the
    /// write's transfer count.
    pub pairs_note: Option<u64>,
}

/// The space of the file system holding a test's file (IOR's `FS` line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FsSpace {
    /// Bytes in all.
    pub total_bytes: u64,
    /// Bytes free.
    pub free_bytes: u64,
    /// Inodes in all.
    pub inodes: u64,
    /// Inodes free.
    pub inodes_free: u64,
}

impl TestResult {
    /// The accesses of its iterations, in order.
    pub fn accesses(&self) -> impl Iterator<Item = &AccessResult> {
        self.iterations
            .iter()
            .flat_map(|i| i.write.iter().chain(i.read.iter()))
    }

    /// The first access the stop request cut short, if any.
    pub fn stopped(&self) -> Option<&AccessResult> {
        self.accesses().find(|a| a.interrupted)
    }

    /// The first access a failed call cut short, if any.
    pub fn failed(&self) -> Option<&AccessResult> {
        self.accesses().find(|a| a.failed)
    }

    /// The accesses that are measurements (ran to their end).
    pub fn measured(&self) -> impl Iterator<Item = &AccessResult> {
        self.accesses().filter(|a| a.measured())
    }
}

/// The summary of `access` over `iterations` (None when none has it).
/// Only accesses that ran to their end are measurements: one the stop
/// request or a failed call cut short is never counted (the caller leaves a test with
/// one out of the summary altogether, as mdtest does).
pub fn summarise(iterations: &[Iteration], access: Access) -> Option<OpSummary> {
    let points: Vec<&AccessResult> = iterations
        .iter()
        .filter_map(|i| match access {
            Access::Write => i.write.as_ref(),
            Access::Read => i.read.as_ref(),
        })
        .filter(|r| r.measured())
        .collect();
    let first = points.first()?;
    let per = |r: &AccessResult, div: f64| match r.total_s > 0.0 {
        true => r.bytes as f64 / div / r.total_s,
        false => 0.0,
    };
    let bw: Vec<f64> = points.iter().map(|r| per(r, 1.0)).collect();
    let ops: Vec<f64> = points
        .iter()
        .map(|r| per(r, r.transfer_bytes.max(1) as f64))
        .collect();
    let (bw_max, bw_min, bw_mean, bw_sd) = spread(&bw);
    let (ops_max, ops_min, ops_mean, ops_sd) = spread(&ops);
    let n = points.len() as f64;
    let walls: Vec<&Stonewall> = points.iter().filter_map(|r| r.stonewall.as_ref()).collect();
    let wall_time: f64 = walls.iter().map(|w| w.time_s).sum();
    let wall_bytes: f64 = walls.iter().map(|w| w.avg_bytes as f64).sum();
    Some(OpSummary {
        access: Some(access),
        bw_max,
        bw_min,
        bw_mean,
        bw_sd,
        ops_max,
        ops_min,
        ops_mean,
        ops_sd,
        mean_time_s: points.iter().map(|r| r.total_s).sum::<f64>() / n,
        stonewall_time_s: (!walls.is_empty()).then(|| wall_time / n),
        stonewall_bytes_per_s: (!walls.is_empty() && wall_time > 0.0)
            .then(|| wall_bytes / wall_time),
        agg_bytes: first.bytes,
        iterations: points.len() as u64,
    })
}

/// (max, min, mean, population standard deviation).
fn spread(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (mean - x).powi(2)).sum::<f64>() / n;
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    let min = v.iter().copied().fold(f64::MAX, f64::min);
    (max, min, mean, var.sqrt())
}

/// The processes and threads of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommInfo {
    /// `threads`, `mpi`, or `mpi+threads`.
    pub kind: String,
    /// Processes.
    pub ranks: u64,
    /// Tasks (threads) per process.
    pub tasks_per_rank: u64,
}

/// Everything one `iolab ior` reports (the envelope's payload).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IorPayload {
    /// IOR's `Began`.
    pub began: String,
    /// IOR's `Finished`.
    pub finished: String,
    /// IOR's `Machine` (`Linux host`).
    pub machine: String,
    /// Processes and threads.
    pub comm: CommInfo,
    /// The tests, in order.
    pub tests: Vec<TestResult>,
    /// Files a stopped run could not remove.
    pub left_behind: Vec<String>,
}

impl IorPayload {
    /// The headline figures: each test's write and read bandwidth and
    /// OPs over its iterations.
    pub fn figures(&self) -> Vec<iolab_results::Figure> {
        let mut out = Vec::new();
        for t in &self.tests {
            let scope = match self.tests.len() {
                1 => String::new(),
                _ => format!("test={}", t.test.params.id),
            };
            for s in &t.summary {
                let Some(a) = s.access else { continue };
                let n = s.iterations.clamp(1, u64::from(u32::MAX)) as u32;
                let mib = (1u64 << 20) as f64;
                for (metric, unit, mean, min, max, sd) in [
                    (
                        "bw",
                        "MiB/s",
                        s.bw_mean / mib,
                        s.bw_min / mib,
                        s.bw_max / mib,
                        s.bw_sd / mib,
                    ),
                    ("ops", "ops/s", s.ops_mean, s.ops_min, s.ops_max, s.ops_sd),
                ] {
                    out.push(iolab_results::Figure {
                        phase: a.name().into(),
                        metric: metric.into(),
                        unit: unit.into(),
                        scope: scope.clone(),
                        stat: iolab_results::Spread {
                            n,
                            mean,
                            min,
                            max,
                            std_dev: sd,
                        },
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(bytes: u64, total_s: f64) -> AccessResult {
        AccessResult {
            access: Some(Access::Write),
            bytes,
            transfer_bytes: 1024,
            total_s,
            ..AccessResult::default()
        }
    }

    #[test]
    fn summary_is_ior_s() {
        let its: Vec<Iteration> = [(4096, 1.0), (4096, 2.0)]
            .iter()
            .enumerate()
            .map(|(i, &(b, t))| Iteration {
                index: i as u64,
                write: Some(point(b, t)),
                ..Iteration::default()
            })
            .collect();
        let s = summarise(&its, Access::Write).unwrap();
        assert_eq!((s.bw_max, s.bw_min, s.bw_mean), (4096.0, 2048.0, 3072.0));
        assert_eq!(s.bw_sd, 1024.0);
        assert_eq!((s.ops_max, s.ops_min), (4.0, 2.0));
        assert_eq!(s.mean_time_s, 1.5);
        assert!(s.stonewall_time_s.is_none());
        assert!(summarise(&its, Access::Read).is_none());
    }

    /// An access the stop request cut short is no measurement: it is
    /// never counted (it was, as 0 MiB/s in Min and Mean).
    #[test]
    fn a_stopped_access_is_not_summarised() {
        let stopped = AccessResult {
            interrupted: true,
            ..point(0, 0.5)
        };
        let its: Vec<Iteration> = [point(4096, 1.0), stopped]
            .into_iter()
            .enumerate()
            .map(|(i, w)| Iteration {
                index: i as u64,
                write: Some(w),
                ..Iteration::default()
            })
            .collect();
        let s = summarise(&its, Access::Write).unwrap();
        assert_eq!((s.bw_min, s.bw_mean, s.iterations), (4096.0, 4096.0, 1));
    }
}
