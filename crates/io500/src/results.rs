//! What a run returns: one report per scored phase, the score, and why
//! the run cannot be submitted. Plain data; `crates/report` and the cli
//! render it.

use crate::find::FindResult;
use crate::ior::IorResult;
use crate::mdworkbench::MdwbResult;
use crate::phase::{Group, Phase};
use iolab_core::Outcome;
use serde::{Deserialize, Serialize};

/// Schema of the io500 payload in the results envelope.
pub const SCHEMA: &str = "iolab.io500/1";

/// A mdtest phase's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MdtestFigures {
    /// Items (files) all tasks worked on in the phase.
    pub items: u64,
    /// Items each task worked on.
    pub items_per_task: u64,
    /// The engine's phase time, seconds.
    pub elapsed_s: f64,
    /// Items per second.
    pub rate: f64,
    /// Whether the stonewall fired (write phases).
    pub stonewall_hit: bool,
}

/// The figures behind a phase's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// ior-easy or ior-hard.
    Ior(IorResult),
    /// An mdtest phase.
    Mdtest(MdtestFigures),
    /// The find phase.
    Find(FindResult),
    /// An md-workbench phase.
    Mdworkbench(MdwbResult),
    /// Not run: why.
    Skipped(String),
    /// Failed: what happened.
    Failed(String),
    /// Stopped by Ctrl-C or SIGTERM while it ran: no failure of the
    /// storage, and no figure.
    Interrupted,
}

/// One scored phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Which phase.
    pub phase: Phase,
    /// IO500's name of it.
    pub name: String,
    /// GiB/s (bandwidth phases) or kIOPS.
    pub score: f64,
    /// `GiB/s` or `kIOPS`.
    pub unit: String,
    /// Wall time of the whole phase, seconds.
    pub time_s: f64,
    /// The equivalent command (what `--dry-run` prints).
    pub command: String,
    /// The figures behind the score.
    pub detail: Detail,
}

impl PhaseReport {
    /// A phase that did not run, scored 0.
    pub fn not_run(phase: Phase, command: String, detail: Detail) -> PhaseReport {
        PhaseReport {
            phase,
            name: phase.name().into(),
            score: 0.0,
            unit: unit(phase).into(),
            time_s: 0.0,
            command,
            detail,
        }
    }
}

/// The unit of a phase's score: GiB/s for the ior phases, kIOPS for the
/// others (as the app decides it, by the name).
pub fn unit(phase: Phase) -> &'static str {
    match phase.name().starts_with("ior") {
        true => "GiB/s",
        false => "kIOPS",
    }
}

/// The score lines' figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Geometric mean of the bandwidth phases, GiB/s.
    pub bandwidth: f64,
    /// Geometric mean of the other phases, kIOPS.
    pub iops: f64,
    /// sqrt(bandwidth * iops).
    pub total: f64,
}

/// Geometric mean; 0 when a value is 0 or less (or there is none).
pub fn geometric_mean(values: &[f64]) -> f64 {
    if values.is_empty() || values.iter().any(|v| *v <= 0.0 || !v.is_finite()) {
        return 0.0;
    }
    let logs: f64 = values.iter().map(|v| v.ln()).sum();
    (logs / values.len() as f64).exp()
}

/// The score of a set of phase reports (the `[SCORE ]` line): the 12
/// scored phases, extended ones left out.
pub fn score(phases: &[PhaseReport]) -> Score {
    score_of(phases, false)
}

/// The extended score (the `[SCOREX]` line): find-easy, find-hard and
/// mdworkbench-bench join the IOPS mean, as in the io500 app's extended
/// mode.
pub fn score_extended(phases: &[PhaseReport]) -> Score {
    score_of(phases, true)
}

/// As the app's calc_score: a group's mean is over its phases that
/// scored above 0 (one that did not run, failed or scored 0 is left out,
/// and the run is invalid for it), and 0 when none did.
fn score_of(phases: &[PhaseReport], extended: bool) -> Score {
    let of = |g: Group| -> Vec<f64> {
        phases
            .iter()
            .filter(|p| p.phase.group() == g && (extended || !p.phase.is_extended()))
            .map(|p| p.score)
            .filter(|s| *s > 0.0 && s.is_finite())
            .collect()
    };
    let bandwidth = geometric_mean(&of(Group::Bandwidth));
    let iops = geometric_mean(&of(Group::Iops));
    Score {
        bandwidth,
        iops,
        total: (bandwidth * iops).sqrt(),
    }
}

/// How the tasks ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommInfo {
    /// `threads` or `mpi`.
    pub kind: String,
    /// Processes.
    pub ranks: u64,
    /// Threads per process.
    pub tasks_per_rank: u64,
    /// All tasks.
    pub tasks: u64,
}

/// The io500 payload of the results envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Io500Payload {
    /// The datadir the run used (with its timestamp).
    pub datadir: String,
    /// The resultdir (with its timestamp).
    pub resultdir: String,
    /// How the tasks ran.
    pub comm: CommInfo,
    /// The 12 scored phases in order (in extended mode, with the
    /// extended phases among them, in the io500 app's order).
    pub phases: Vec<PhaseReport>,
    /// The score.
    pub score: Score,
    /// Extended mode's score (`[SCOREX]`), None in standard mode.
    #[serde(default)]
    pub score_extended: Option<Score>,
    /// Whether every phase of extended mode was valid, None in standard mode.
    #[serde(default)]
    pub valid_extended: Option<bool>,
    /// Whether the run could be submitted.
    pub valid: bool,
    /// Why not.
    pub invalid_reasons: Vec<String>,
    /// What the run has to tell (a cache drop that failed).
    pub notes: Vec<String>,
}

/// A finished run: the payload and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// What the run measured.
    pub payload: Io500Payload,
    /// How it ended.
    pub outcome: Outcome,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_means() {
        assert!((geometric_mean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
        assert!((geometric_mean(&[2.0, 2.0, 2.0, 2.0]) - 2.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[1.0, 0.0]), 0.0);
    }
}
