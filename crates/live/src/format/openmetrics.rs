//! OpenMetrics text for node_exporter's textfile collector: the run's
//! state now, every counter cumulative since the start (so a scrape that
//! misses a file loses nothing), ending in `# EOF`. Encoded by
//! `prometheus-client`.
//!
//! Metrics, each labelled `tool`, `run_id` and `phase`:
//! - `iolab_live_ops_total`, `iolab_live_bytes_total`,
//!   `iolab_live_errors_total` (counters);
//! - `iolab_live_latency_seconds` (histogram of every timed operation
//!   since the start, buckets 1 µs to 10 s in 1-2-5 steps; an operation
//!   is counted in the first bucket at or above the top of its
//!   log-linear bucket, at most 0.8 % off);
//! - `iolab_live_elapsed_seconds` (gauge, no `phase`: the run's age);
//! - `iolab_live_ops_per_second`, `iolab_live_bytes_per_second`,
//!   `iolab_live_latency_p99_seconds` (gauges: the last interval);
//! - `iolab_live_missing_ranks` (gauge: how many ranks' reports the
//!   last aggregate row lacks, 0 when every rank's came; its `missing`).

use crate::row::{Header, Row};
use iolab_core::stats::{Histogram, HistogramWire};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::borrow::Cow;

/// One phase's state since the start of the run.
#[derive(Debug, Clone)]
pub struct PhaseState {
    /// The phase.
    pub phase: String,
    /// Its last aggregate row (its totals and the last interval's rates).
    pub last: Row,
    /// Every latency of the phase since the start, in the file's buckets.
    pub latency: Buckets,
}

/// Latencies in the file's buckets ([`bounds`], then +Inf), added
/// interval by interval: a few non-empty buckets each, never the whole
/// 43 KiB histogram.
#[derive(Debug, Clone)]
pub struct Buckets {
    counts: Vec<u64>,
    sum_ns: u128,
    count: u64,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            counts: vec![0; bounds().len() + 1],
            sum_ns: 0,
            count: 0,
        }
    }
}

impl Buckets {
    /// Adds an interval's latencies: each of its buckets goes to the
    /// first of the file's at or above the bucket's top.
    pub fn add(&mut self, w: &HistogramWire) {
        let le = bounds();
        for &(i, c) in &w.buckets {
            if i as usize >= iolab_core::stats::BUCKETS {
                continue;
            }
            let (lo, width) = Histogram::bounds(i as usize);
            let top_s = (lo + width - 1) as f64 / 1e9;
            let at = le.iter().position(|&b| top_s <= b).unwrap_or(le.len());
            self.counts[at] += c;
        }
        self.sum_ns += w.sum;
        self.count += w.count;
    }
}

/// Upper bounds of the histogram's buckets, in seconds: 1, 2 and 5 of
/// each decade from 1 us to 10 s. Each is read from its decimal text, so
/// it is the double nearest to it and its label reads as written
/// (`le="0.000005"`, not a product's `0.0000049999999999999999`), and a
/// query can name it.
fn bounds() -> &'static [f64] {
    static LE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    LE.get_or_init(|| {
        (-6..=0)
            .flat_map(|e| [1, 2, 5].map(|m| format!("{m}e{e}")))
            .chain(["1e1".to_string()])
            .filter_map(|t| t.parse().ok())
            .collect()
    })
}

/// The text of the whole file, `t_s` seconds into the run.
pub fn render(h: &Header, t_s: f64, phases: &[PhaseState]) -> Vec<u8> {
    let labels = [("tool", h.tool.clone()), ("run_id", h.run_id.clone())]
        .into_iter()
        .map(|(k, v)| (Cow::Borrowed(k), Cow::Owned(v)));
    let mut registry = Registry::with_prefix_and_labels("iolab_live", labels);
    registry.register(
        "elapsed_seconds",
        "seconds since the run started",
        ConstGauge::new(t_s),
    );
    // Before the first phase the file holds no phase's family: a family
    // without samples is one some parsers refuse.
    if !phases.is_empty() {
        let om = phases.iter().map(OmPhase::of).collect();
        registry.register_collector(Box::new(Phases(om)));
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out.into_bytes()
}

/// What the file says of one phase: its last row, and its latency in
/// the file's buckets (not the 43 KiB histogram, copied each interval).
#[derive(Debug)]
struct OmPhase {
    phase: String,
    last: Row,
    /// (upper bound in seconds, operations in that bucket); the last
    /// bound is infinity.
    buckets: Vec<(f64, u64)>,
    sum_s: f64,
    count: u64,
}

impl OmPhase {
    fn of(p: &PhaseState) -> OmPhase {
        let le = bounds().iter().copied().chain([f64::INFINITY]);
        OmPhase {
            phase: p.phase.clone(),
            last: p.last.clone(),
            buckets: le.zip(p.latency.counts.iter().copied()).collect(),
            sum_s: p.latency.sum_ns as f64 / 1e9,
            count: p.latency.count,
        }
    }
}

#[derive(Debug)]
struct Phases(Vec<OmPhase>);

impl Collector for Phases {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        type Get = fn(&Row) -> u64;
        let counters: [(&str, &str, Get); 3] = [
            ("ops", "operations finished", |r| r.ops_total),
            ("bytes", "bytes moved by finished operations", |r| {
                r.bytes_total
            }),
            ("errors", "operations that failed", |r| r.errors_total),
        ];
        for (name, help, get) in counters {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for p in &self.0 {
                let labels = [("phase", p.phase.as_str())];
                let fam = m.encode_family(&labels)?;
                ConstCounter::new(get(&p.last)).encode(fam)?;
            }
        }
        self.encode_latency(&mut enc)?;
        type Rate = fn(&Row) -> f64;
        let gauges: [(&str, &str, Rate); 4] = [
            (
                "ops_per_second",
                "operations per second in the last interval",
                |r| r.ops_per_sec,
            ),
            (
                "bytes_per_second",
                "bytes per second in the last interval",
                |r| r.bytes_per_sec,
            ),
            (
                "latency_p99_seconds",
                "99th latency percentile of the last interval",
                |r| r.latency.map_or(0.0, |l| l.p99_ns as f64 / 1e9),
            ),
            (
                "missing_ranks",
                "ranks whose report the last interval's figures lack",
                |r| r.missing.len() as f64,
            ),
        ];
        for (name, help, get) in gauges {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for p in &self.0 {
                let labels = [("phase", p.phase.as_str())];
                let fam = m.encode_family(&labels)?;
                ConstGauge::new(get(&p.last)).encode(fam)?;
            }
        }
        Ok(())
    }
}

impl Phases {
    fn encode_latency(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let help = "latency of the operations finished since the start";
        let mut m = enc.encode_descriptor("latency_seconds", help, None, MetricType::Histogram)?;
        for p in &self.0 {
            let labels = [("phase", p.phase.as_str())];
            let mut fam = m.encode_family(&labels)?;
            fam.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                p.sum_s, p.count, &p.buckets, None,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's header: tool `t`, run `r`.
    fn header() -> Header {
        Header {
            schema: "iolab.live/1".into(),
            envelope: 1,
            run_id: "r".into(),
            tool: "t".into(),
            interval_s: 1.0,
            started_unix_ns: 0,
        }
    }

    #[test]
    fn buckets_added_by_interval_are_those_of_every_value_at_once() {
        let values: Vec<u64> = (0..2000u64).map(|i| i * i * 37 + 500).collect();
        let mut whole = Buckets::default();
        for chunk in values.chunks(300) {
            let mut h = Histogram::new();
            chunk.iter().for_each(|&v| h.record(v));
            whole.add(&h.to_wire());
        }
        // Each value in the first bound at or above its bucket's top.
        let le = bounds();
        let mut want = vec![0u64; le.len() + 1];
        for &v in &values {
            let (lo, w) = Histogram::bounds(Histogram::index(v));
            let top_s = (lo + w - 1) as f64 / 1e9;
            want[le.iter().position(|&b| top_s <= b).unwrap_or(le.len())] += 1;
        }
        assert_eq!(whole.counts, want);
        assert_eq!(whole.count, values.len() as u64);
        assert_eq!(
            whole.sum_ns,
            values.iter().map(|&v| u128::from(v)).sum::<u128>()
        );
        let text = String::from_utf8(render(
            &header(),
            1.0,
            &[PhaseState {
                phase: "read".into(),
                last: Row::default(),
                latency: whole,
            }],
        ))
        .unwrap();
        let inf = format!(
            "iolab_live_latency_seconds_bucket{{tool=\"t\",run_id=\"r\",le=\"+Inf\",phase=\"read\"}} {}",
            values.len()
        );
        assert!(text.contains(&inf), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        // The bounds' labels read as their decimals, 1-2-5 per decade.
        let labels: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("iolab_live_latency_seconds_bucket"))
            .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next())
            .collect();
        let want = [
            "0.000001", "0.000002", "0.000005", "0.00001", "0.00002", "0.00005", "0.0001",
            "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2",
            "0.5", "1.0", "2.0", "5.0", "10.0", "+Inf",
        ];
        assert_eq!(labels, want, "{text}");
    }

    #[test]
    fn missing_ranks_counts_the_ranks_the_last_row_lacks() {
        let header = header();
        let gauge = |missing: Vec<u64>| {
            let phase = PhaseState {
                phase: "write".into(),
                last: Row {
                    missing,
                    ..Row::default()
                },
                latency: Buckets::default(),
            };
            let text = String::from_utf8(render(&header, 1.0, &[phase])).unwrap();
            let line = text
                .lines()
                .find(|l| l.starts_with("iolab_live_missing_ranks{"))
                .map(str::to_owned);
            line.unwrap_or_else(|| panic!("no missing_ranks in {text}"))
        };
        assert!(gauge(vec![1, 3]).ends_with(" 2.0"), "{}", gauge(vec![1, 3]));
        assert!(gauge(Vec::new()).ends_with(" 0.0"), "{}", gauge(Vec::new()));
    }
}
