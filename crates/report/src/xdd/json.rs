//! The `--json` document: versioned, with the configuration, the
//! environment, and every pass, target and QThread with latency
//! percentiles. Schema in docs/xdd.md; bump SCHEMA on breaking changes.

use super::rows::deskew;
use iolab_xdd::results::{Counts, RunResults};
use serde_json::{json, Value};

/// Identifies the document layout.
pub const SCHEMA: &str = "iolab.xdd/1";

fn figures(c: &Counts) -> Value {
    let secs = c.elapsed_ns as f64 / 1e9;
    let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
    let cpu_ns = c.cpu_user_ns + c.cpu_sys_ns;
    json!({
        "bytes": c.bytes(), "read_bytes": c.read_bytes, "write_bytes": c.write_bytes,
        "ops": c.ops(), "read_ops": c.read_ops, "write_ops": c.write_ops,
        "elapsed_s": secs,
        "bandwidth_mb_per_s": per_s(c.bytes()) / 1e6,
        "iops": per_s(c.ops()),
        "latency_ns": c.latency.percentiles(),
        "first_op_s": c.first_op_ns as f64 / 1e9,
        "cpu": {
            "user_s": c.cpu_user_ns as f64 / 1e9, "system_s": c.cpu_sys_ns as f64 / 1e9,
            "percent": if c.elapsed_ns > 0 { cpu_ns as f64 * 100.0 / c.elapsed_ns as f64 } else { 0.0 },
            "us_per_op": cpu_ns as f64 / 1e3 / c.ops().max(1) as f64,
        },
        "pattern_fill_s": c.pattern_fill_ns as f64 / 1e9,
        "flush_s": c.flush_ns as f64 / 1e9,
        "errors": c.errors,
        "verify": { "failed_ops": c.verify_failed_ops, "bad_units": c.verify_bad_units, "first_bad_offset": c.first_bad_offset },
    })
}

/// The document as pretty-printed JSON.
pub fn render(r: &RunResults) -> String {
    let passes: Vec<Value> = r.passes.iter().map(|p| json!({
        "pass": p.first().map_or(0, |t| t.pass),
        "targets": p.iter().map(|t| json!({
            "target": t.target, "start_s": t.start_ns as f64 / 1e9, "end_s": t.end_ns as f64 / 1e9,
            "figures": figures(&t.counts),
            "qthreads": t.qthreads.iter().map(|q| json!({"qthread": q.qthread, "figures": figures(&q.counts)})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })).collect();
    let targets: Vec<Value> = r.targets.iter().enumerate().map(|(i, t)| json!({
        "target": i, "path": t.path, "direct_io": t.direct_io, "block_device": t.block_device,
        "planned_ops_per_pass": if t.planned_ops == u64::MAX { Value::Null } else { t.planned_ops.into() },
        "range_blocks": t.range_blocks, "filesystem": t.fs, "failures": t.failures,
        "seek_distance_histogram": t.disthist, "seek_location_histogram": t.seekhist,
        "slow_ops": r.target_total(i).slow_ops.iter().map(|(op, off, ns)| json!({"op": op, "offset": off, "ns": ns})).collect::<Vec<_>>(),
        "totals": figures(&r.target_total(i)),
    })).collect();
    let doc = json!({
        "schema": SCHEMA,
        "tool": { "name": "iolab xdd", "version": env!("CARGO_PKG_VERSION"), "compatible_with": "XDD 7.0" },
        "config": r.config,
        "environment": { "host": r.host },
        "start_unix_ns": r.start_wall_ns, "end_unix_ns": r.end_wall_ns,
        "outcome": r.outcome,
        "passes": passes,
        "targets": targets,
        "combined": figures(&r.combined()),
        "deskew": if r.config.global.deskew { deskew(r).map(|c| figures(&c)) } else { None },
        "notes": r.notes,
        "errors": { "count": r.error_count(), "messages": r.error_messages },
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
