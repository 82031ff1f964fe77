//! CSV: one row per op type over every endpoint (`host` empty), then
//! one per op type and endpoint when there are several. Rates are over
//! the timed phase; latencies in milliseconds.

use crate::csvw::CsvText;
use iolab_core::stats::Percentiles;
use iolab_s3bench::analysis::Segments;
use iolab_s3bench::Report;

const HEADER: [&str; 24] = [
    "op",
    "host",
    "requests",
    "errors",
    "bytes",
    "objects",
    "duration_s",
    "requests_per_s",
    "mib_per_s",
    "objects_per_s",
    "latency_mean_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "ttfb_p50_ms",
    "ttfb_p90_ms",
    "ttfb_p99_ms",
    "fastest_segment_requests_per_s",
    "fastest_segment_mib_per_s",
    "median_segment_requests_per_s",
    "median_segment_mib_per_s",
    "slowest_segment_requests_per_s",
    "slowest_segment_mib_per_s",
];

/// The CSV text of a run.
pub fn render(r: &Report) -> String {
    let mut c = CsvText::new();
    c.record(HEADER);
    for o in &r.ops {
        let mut rows = vec![Row {
            host: "",
            requests: o.requests,
            errors: o.errors,
            bytes: o.bytes,
            objects: o.objects,
            latency: &o.latency,
            ttfb: &o.ttfb,
            segments: o.segments.as_ref(),
        }];
        if o.hosts.len() > 1 {
            rows.extend(o.hosts.iter().map(|h| Row {
                host: &h.host,
                requests: h.requests,
                errors: h.errors,
                bytes: h.bytes,
                objects: h.objects,
                latency: &h.latency,
                ttfb: &h.ttfb,
                segments: h.segments.as_ref(),
            }));
        }
        for row in rows {
            c.record(row.fields(&o.name, r.timed_s));
        }
    }
    c.finish()
}

struct Row<'a> {
    host: &'a str,
    requests: u64,
    errors: u64,
    bytes: u64,
    objects: u64,
    latency: &'a Percentiles,
    ttfb: &'a Percentiles,
    segments: Option<&'a Segments>,
}

impl Row<'_> {
    fn fields(&self, op: &str, secs: f64) -> Vec<String> {
        let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        let mut v = vec![
            op.to_string(),
            self.host.to_string(),
            self.requests.to_string(),
            self.errors.to_string(),
            self.bytes.to_string(),
            self.objects.to_string(),
            format!("{secs:.3}"),
            format!("{:.2}", per_s(self.requests as f64)),
            format!("{:.3}", per_s(self.bytes as f64) / (1 << 20) as f64),
            format!("{:.2}", per_s(self.objects as f64)),
            format!("{:.3}", self.latency.mean_ns / 1e6),
            ms(self.latency.p50_ns),
            ms(self.latency.p90_ns),
            ms(self.latency.p99_ns),
            ms(self.latency.max_ns),
            ms(self.ttfb.p50_ns),
            ms(self.ttfb.p90_ns),
            ms(self.ttfb.p99_ns),
        ];
        let points = self.segments.map(|s| [s.fastest, s.median, s.slowest]);
        for i in 0..3 {
            match points.map(|p| p[i]) {
                Some(p) => {
                    v.push(format!("{:.2}", p.requests_per_s));
                    v.push(format!("{:.3}", p.bytes_per_s / (1 << 20) as f64));
                }
                None => v.extend([String::new(), String::new()]),
            }
        }
        v
    }
}
