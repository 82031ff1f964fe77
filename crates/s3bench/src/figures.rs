//! The run's headline figures for the envelope: per op type (phase
//! `get`, `put`, `stat`, `delete`, `list`, and multipart's), the count
//! of requests, their rate, the bandwidth of ops that move data, and
//! the latency and time-to-first-byte percentiles; per endpoint (scope
//! `host=URL`) the requests and their rate.

use crate::result::Report;
use iolab_results::{Figure, Spread};

/// The figures of `r`.
pub fn of(r: &Report) -> Vec<Figure> {
    let mut out = Vec::new();
    for o in &r.ops {
        let fig = |metric: &str, unit: &str, scope: String, v: f64| Figure {
            phase: o.name.clone(),
            metric: metric.to_string(),
            unit: unit.to_string(),
            scope,
            stat: Spread::one(v),
        };
        out.push(fig(
            "requests",
            "requests",
            String::new(),
            o.requests as f64,
        ));
        out.push(fig("rate", "requests/s", String::new(), o.requests_per_s));
        if o.bytes > 0 {
            out.push(fig(
                "bandwidth",
                "MiB/s",
                String::new(),
                o.bytes_per_s / (1 << 20) as f64,
            ));
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        for (name, p) in [("latency", &o.latency), ("ttfb", &o.ttfb)] {
            for (q, v) in [("p50", p.p50_ns), ("p90", p.p90_ns), ("p99", p.p99_ns)] {
                out.push(fig(&format!("{name}_{q}"), "ms", String::new(), ms(v)));
            }
        }
        if o.hosts.len() > 1 {
            for h in &o.hosts {
                let scope = format!("host={}", h.host);
                out.push(fig(
                    "requests",
                    "requests",
                    scope.clone(),
                    h.requests as f64,
                ));
                out.push(fig("rate", "requests/s", scope, h.requests_per_s));
            }
        }
    }
    out
}
