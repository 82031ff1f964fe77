//! CSV: the fields of the JSON rows, the latency object flattened into
//! `latency_*` columns, and the run's schema and id on every line so
//! each line stands for itself.

use crate::row::{Header, Row};

/// The columns, in order.
pub const COLUMNS: [&str; 24] = [
    "schema",
    "run_id",
    "tool",
    "t",
    "interval_s",
    "phase",
    "host",
    "rank",
    "ops",
    "bytes",
    "errors",
    "ops_total",
    "bytes_total",
    "errors_total",
    "ops_per_sec",
    "bytes_per_sec",
    "latency_count",
    "latency_p50_ns",
    "latency_p90_ns",
    "latency_p99_ns",
    "latency_p999_ns",
    "latency_max_ns",
    "missing",
    "last",
];

/// The header line.
pub fn header() -> Vec<u8> {
    record(COLUMNS.iter().map(|c| c.to_string()).collect())
}

/// The lines of one interval's rows.
pub fn rows(h: &Header, rows: &[Row]) -> Vec<u8> {
    rows.iter().flat_map(|r| record(fields(h, r))).collect()
}

fn fields(h: &Header, r: &Row) -> Vec<String> {
    let l = r.latency.unwrap_or_default();
    let lat = |v: u64| {
        if r.latency.is_some() {
            v.to_string()
        } else {
            String::new()
        }
    };
    vec![
        h.schema.clone(),
        h.run_id.clone(),
        h.tool.clone(),
        r.t.to_string(),
        r.interval_s.to_string(),
        r.phase.clone(),
        r.host.clone().unwrap_or_default(),
        r.rank.map(|x| x.to_string()).unwrap_or_default(),
        r.ops.to_string(),
        r.bytes.to_string(),
        r.errors.to_string(),
        r.ops_total.to_string(),
        r.bytes_total.to_string(),
        r.errors_total.to_string(),
        format!("{:.3}", r.ops_per_sec),
        format!("{:.3}", r.bytes_per_sec),
        lat(l.count),
        lat(l.p50_ns),
        lat(l.p90_ns),
        lat(l.p99_ns),
        lat(l.p999_ns),
        lat(l.max_ns),
        missing(&r.missing),
        r.last.to_string(),
    ]
}

/// The ranks missing from an aggregate row, separated by spaces.
fn missing(ranks: &[u64]) -> String {
    let ranks: Vec<String> = ranks.iter().map(u64::to_string).collect();
    ranks.join(" ")
}

fn record(fields: Vec<String>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail.
    let _ = w.write_record(&fields);
    w.into_inner().unwrap_or_default()
}
