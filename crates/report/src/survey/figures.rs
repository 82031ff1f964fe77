//! The surveys' headline figures for the results envelope, from their
//! typed reports: each point's tests (disk, object, metadata survey),
//! scoped by the point's counts when the survey ran several; the target
//! survey's read and write bandwidth over the targets.

use iolab_core::stats::Summary;
use iolab_results::{Figure, Spread};
use iolab_survey::disk::{DiskPoint, PointResult};
use iolab_survey::mds::MdsPoint;
use iolab_survey::obdfilter::{ObdPoint, ObdPointResult};
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

/// One measured value as a figure (a value that is not a number, from a
/// test that measured nothing, is left out).
fn one(phase: &str, metric: &str, unit: &str, scope: &str, v: f64) -> Option<Figure> {
    v.is_finite().then(|| Figure {
        phase: phase.to_string(),
        metric: metric.to_string(),
        unit: unit.to_string(),
        scope: scope.to_string(),
        stat: Spread::from(&Summary::of(&[v])),
    })
}

/// The object survey: each point's tests' bandwidth (MB/s).
pub fn obdfilter(points: &[ObdPoint]) -> Vec<Figure> {
    let mut out = Vec::new();
    for p in points {
        let ObdPointResult::Ran { tests } = &p.result else {
            continue;
        };
        let scope = match points.len() {
            1 => String::new(),
            _ => format!(
                "obj={},ost={},rsz_kb={},thr={},total_size_kb={}",
                p.obj, p.ost, p.rsz_kb, p.thr, p.total_size_kb
            ),
        };
        out.extend(
            tests
                .iter()
                .filter_map(|t| one(&t.test, "bandwidth", "MB/s", &scope, t.mb_per_s)),
        );
    }
    out
}

/// The metadata survey: each point's tests' rate (ops/s).
pub fn mds(points: &[MdsPoint]) -> Vec<Figure> {
    let mut out = Vec::new();
    for p in points {
        let scope = match points.len() {
            1 => String::new(),
            _ => format!(
                "dir_count={},file_count={},mdt={},thr={}",
                p.dir_count, p.file_count, p.mdt, p.thr
            ),
        };
        out.extend(
            p.tests
                .iter()
                .filter_map(|t| one(&t.test, "rate", "ops/s", &scope, t.ops_per_sec)),
        );
    }
    out
}
