//! JSON: the results envelope with schema `iolab.lst/1`; the validated
//! plan as its configuration and the points as its payload.

use iolab_core::stats::Summary;
use iolab_lst::spec::{BrwOp, Test};
use iolab_lst::{GroupSummary, Plan, PointResult, Report};
use iolab_results::{Envelope, Environment, Figure, Spread};

/// The payload schema.
pub const SCHEMA: &str = "iolab.lst/1";

/// The document, started at `started_unix_ns`. While the run goes on
/// (`finished` false) the end time stays 0, as the envelope defines.
pub fn render(
    plan: &Plan,
    report: &Report,
    command_line: &str,
    (started_unix_ns, finished): (u64, bool),
    stats: Option<&serde_json::Value>,
) -> String {
    let env = Environment {
        host: iolab_core::env::host_info(),
        filesystems: vec![],
    };
    let mut doc = Envelope::new(
        SCHEMA,
        "lst",
        command_line,
        plan,
        env,
        report.outcome.clone(),
        &report.points,
    );
    doc.tool.compatible_with = Some("LNet selftest (lst)".into());
    doc.started_unix_ns = started_unix_ns;
    doc.stats = stats.cloned();
    doc.finished_unix_ns = if finished {
        iolab_core::clock::wall_ns()
    } else {
        0
    };
    doc.figures = headline(plan, &report.points);
    doc.to_json()
}

/// Reads one figure of a group.
type Reader = fn(&GroupSummary) -> f64;

/// The headline figures: per point, the client group's RPC rate (and
/// bandwidth for brw) per client node, spread over the point's repeats;
/// scoped by clients and concurrency when the run swept several points.
fn headline(plan: &Plan, points: &[PointResult]) -> Vec<Figure> {
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
