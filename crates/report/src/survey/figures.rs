//! The surveys' headline figures for the results envelope, from their
//! typed reports (the disk survey: each point's action bandwidth; the
//! target survey: read and write bandwidth over the targets).

use iolab_results::{Figure, Spread};
use iolab_survey::disk::{DiskPoint, PointResult};
use iolab_survey::ost::OstReport;

fn bandwidth(phase: &str, scope: String, stat: Spread) -> Figure {
    Figure {
        phase: phase.to_string(),
        metric: "bandwidth".into(),
        unit: "MB/s".into(),
        scope,
        stat,
    }
}

/// Each point's actions that measured a bandwidth (a failed action or a
/// point without memory has none), scoped by the point's counts when the
/// survey ran several.
pub fn disk(points: &[DiskPoint]) -> Vec<Figure> {
    let mut out = Vec::new();
    for p in points {
        let PointResult::Ran { actions } = &p.result else {
            continue;
        };
        let scope = match points.len() {
            1 => String::new(),
            _ => format!(
                "crg={},rsz_kb={},thr={},total_size_kb={}",
                p.crg, p.rsz_kb, p.thr, p.total_size_kb
            ),
        };
        for a in actions {
            if let Some(v) = a.mb_per_s {
                out.push(bandwidth(a.action.name(), scope.clone(), Spread::one(v)));
            }
        }
    }
    out
}

/// Write and read bandwidth: the mean over the targets that gave one,
/// with their spread (the slow target is the minimum).
pub fn ost(r: &OstReport) -> Vec<Figure> {
    let ok: Vec<_> = r.targets.iter().filter(|t| t.error.is_none()).collect();
    let mut out = Vec::new();
    for (phase, values) in [
        (
            "write",
            ok.iter().map(|t| t.write_mb_per_s).collect::<Vec<_>>(),
        ),
        ("read", ok.iter().map(|t| t.read_mb_per_s).collect()),
    ] {
        if let Some(s) = Spread::of(&values) {
            out.push(bandwidth(phase, String::new(), s));
        }
    }
    out
}
