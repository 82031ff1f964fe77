//! JSON: the results envelope with schema `iolab.lst/1` (made by the
//! binary's runner) has the validated plan as its configuration and the
//! points as its payload; this module states the run's headline figures.

use iolab_core::stats::Summary;
use iolab_lst::spec::{BrwOp, Test};
use iolab_lst::{GroupSummary, Plan, PointResult};
use iolab_results::{Figure, Spread};

/// The payload schema.
pub const SCHEMA: &str = "iolab.lst/1";

/// Reads one figure of a group.
type Reader = fn(&GroupSummary) -> f64;

/// The headline figures: per point, the client group's RPC rate (and
/// bandwidth for brw) per client node, spread over the point's repeats;
/// scoped by clients and concurrency when the run swept several points.
pub fn figures(plan: &Plan, points: &[PointResult]) -> Vec<Figure> {
    let (phase, bandwidth): (&str, Option<Reader>) = match plan.test {
        Test::Ping => ("ping", None),
        Test::Brw {
            op: BrwOp::Read, ..
        } => ("brw read", Some(|g| g.r_mib_per_s.avg)),
        Test::Brw {
            op: BrwOp::Write, ..
        } => ("brw write", Some(|g| g.w_mib_per_s.avg)),
    };
    let mut out = Vec::new();
    for p in points {
        let scope = match points.len() {
            1 => String::new(),
            _ => format!("clients={},concurrency={}", p.clients, p.concurrency),
        };
        let over_runs = |get: Reader| {
            let v: Vec<f64> = p.runs.iter().map(|r| get(&r.clients)).collect();
            Spread::from(&Summary::of(&v))
        };
        let figure = |metric: &str, unit: &str, stat| Figure {
            phase: phase.to_string(),
            metric: metric.to_string(),
            unit: unit.to_string(),
            scope: scope.clone(),
            stat,
        };
        out.push(figure(
            "rpc_rate",
            "RPC/s",
            over_runs(|g| g.r_rpc_per_s.avg),
        ));
        if let Some(get) = bandwidth {
            out.push(figure("bandwidth", "MiB/s", over_runs(get)));
        }
    }
    out
}
