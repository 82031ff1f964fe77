//! Parts to rows: the figures a reader sees, computed from the merged
//! counts and histograms (never from averaged percentiles).

use crate::row::{Latency, Row};
use crate::sample::Part;

/// Where a row's figures come from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Source {
    /// The host, for a per-host row.
    pub host: Option<String>,
    /// The rank, for a per-rank row.
    pub rank: Option<u64>,
}

impl Source {
    /// The whole run: no host, no rank.
    pub fn aggregate() -> Self {
        Self::default()
    }
}

/// The row of `part` for the interval ending at `t_s` that lasted
/// `interval_s` seconds.
pub fn row(part: &Part, src: &Source, t_s: f64, interval_s: f64, last: bool) -> Row {
    let per_s = |n: u64| {
        if interval_s > 0.0 {
            n as f64 / interval_s
        } else {
            0.0
        }
    };
    let latency = (part.latency.count > 0).then(|| {
        let p = part.latency.percentiles();
        Latency {
            count: p.count,
            mean_ns: p.mean_ns,
            p50_ns: p.p50_ns,
            p90_ns: p.p90_ns,
            p99_ns: p.p99_ns,
            p999_ns: p.p999_ns,
            max_ns: p.max_ns,
        }
    });
    Row {
        t: round_ms(t_s),
        interval_s: round_ms(interval_s),
        phase: part.phase.clone(),
        host: src.host.clone(),
        rank: src.rank,
        ops: part.ops,
        bytes: part.bytes,
        errors: part.errors,
        ops_total: part.ops_total,
        bytes_total: part.bytes_total,
        errors_total: part.errors_total,
        ops_per_sec: per_s(part.ops),
        bytes_per_sec: per_s(part.bytes),
        latency,
        missing: Vec::new(),
        last,
    }
}

/// Seconds to the millisecond, as the stream writes them.
fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}
