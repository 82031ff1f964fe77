//! The analysis warp prints, from a merged record: per op type and per
//! endpoint, requests, errors, bytes, rates over the timed phase,
//! latency and time-to-first-byte percentiles, object sizes, and the
//! fastest, median and slowest time segment.
//!
//! Rates are counts over the timed phase's length (from the start all
//! workers waited for to the end of the last request, and at least
//! `--duration` when the duration ended it). A segment's rate
//! is what ended in it over its length; only whole segments are ranked,
//! by bytes when the op moves data (GET, PUT, multipart) and by requests
//! otherwise.

use crate::config::Op;
use crate::record::{Counts, Recorder, Seg};
use iolab_core::stats::Percentiles;
use serde::{Deserialize, Serialize};

/// One op type's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpReport {
    /// The op.
    pub op: Op,
    /// Its phase name in the figures (`get`, `multipart.part`).
    pub name: String,
    /// Requests sent, failed ones included.
    pub requests: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Body bytes moved by the requests that succeeded.
    pub bytes: u64,
    /// Objects touched (keys returned, for LIST).
    pub objects: u64,
    /// Share of the run's requests, percent (mixed's distribution as
    /// run; the multipart pieces are left out of the total).
    pub share_pct: f64,
    /// Requests a second over the timed phase.
    pub requests_per_s: f64,
    /// Bytes a second over the timed phase.
    pub bytes_per_s: f64,
    /// Objects a second over the timed phase.
    pub objects_per_s: f64,
    /// Latency of the requests that succeeded (request sent to answer read).
    pub latency: Percentiles,
    /// Time to the answer's first byte.
    pub ttfb: Percentiles,
    /// Sizes of the objects moved.
    pub sizes: Option<SizeStats>,
    /// Fastest, median and slowest time segment.
    pub segments: Option<Segments>,
    /// Per endpoint.
    pub hosts: Vec<HostReport>,
    /// The first failure's message.
    pub first_error: Option<String>,
}

/// Smallest, mean and largest object size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizeStats {
    /// Smallest, bytes.
    pub min: u64,
    /// Mean, bytes.
    pub mean: f64,
    /// Largest, bytes.
    pub max: u64,
}

/// The time segments of one op type (or of one op type on one endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Segments {
    /// Length of a segment, seconds.
    pub segment_s: f64,
    /// Whole segments ranked.
    pub count: usize,
    /// What they are ranked by: `bytes` or `requests`.
    pub by_bytes: bool,
    /// The fastest.
    pub fastest: SegPoint,
    /// The median (the lower middle of an even count).
    pub median: SegPoint,
    /// The slowest.
    pub slowest: SegPoint,
}

/// One time segment's rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SegPoint {
    /// Its start, seconds into the timed phase.
    pub start_s: f64,
    /// Requests a second.
    pub requests_per_s: f64,
    /// Bytes a second.
    pub bytes_per_s: f64,
    /// Objects a second.
    pub objects_per_s: f64,
}

/// One op type on one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    /// The endpoint's URL.
    pub host: String,
    /// Requests sent to it, failed ones included.
    pub requests: u64,
    /// Those that failed.
    pub errors: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Objects touched.
    pub objects: u64,
    /// Requests a second over the timed phase.
    pub requests_per_s: f64,
    /// Bytes a second over the timed phase.
    pub bytes_per_s: f64,
    /// Latency.
    pub latency: Percentiles,
    /// Time to first byte.
    pub ttfb: Percentiles,
    /// Its time segments.
    pub segments: Option<Segments>,
}

/// Whether an op's segments are ranked by bytes.
fn moves_data(op: Op) -> bool {
    matches!(op, Op::Get | Op::Put | Op::Multipart | Op::MpPart)
}

/// The figures of every op `rec` timed, over a timed phase of
/// `elapsed_s`, with the endpoints named `hosts`.
pub fn analyse(rec: &Recorder, elapsed_s: f64, hosts: &[String]) -> Vec<OpReport> {
    let segment_s = rec.segment_ns() as f64 / 1e9;
    let total: u64 = Op::ALL
        .iter()
        .filter(|o| !matches!(o, Op::MpCreate | Op::MpPart | Op::MpComplete))
        .filter_map(|o| rec.op(*o))
        .map(|r| r.all.requests)
        .sum();
    let per_s = |n: u64| {
        if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        }
    };
    let whole = (elapsed_s / segment_s + 1e-9).floor() as usize;
    Op::ALL
        .iter()
        .filter_map(|&op| rec.op(op).map(|r| (op, r)))
        .map(|(op, r)| {
            let c = &r.all;
            let in_total = !matches!(op, Op::MpCreate | Op::MpPart | Op::MpComplete);
            OpReport {
                op,
                name: op.name().to_string(),
                requests: c.requests,
                errors: c.errors,
                bytes: c.bytes,
                objects: c.objects,
                share_pct: match (in_total, total) {
                    (true, t) if t > 0 => c.requests as f64 * 100.0 / t as f64,
                    _ => 0.0,
                },
                requests_per_s: per_s(c.requests),
                bytes_per_s: per_s(c.bytes),
                objects_per_s: per_s(c.objects),
                latency: c.latency.percentiles(),
                ttfb: c.ttfb.percentiles(),
                sizes: sizes(c),
                segments: segments(&c.segments, whole, segment_s, moves_data(op)),
                hosts: r
                    .hosts
                    .iter()
                    .zip(hosts)
                    .map(|(h, name)| HostReport {
                        host: name.clone(),
                        requests: h.requests,
                        errors: h.errors,
                        bytes: h.bytes,
                        objects: h.objects,
                        requests_per_s: per_s(h.requests),
                        bytes_per_s: per_s(h.bytes),
                        latency: h.latency.percentiles(),
                        ttfb: h.ttfb.percentiles(),
                        segments: segments(&h.segments, whole, segment_s, moves_data(op)),
                    })
                    .collect(),
                first_error: r.first_error.clone(),
            }
        })
        .collect()
}

fn sizes(c: &Counts) -> Option<SizeStats> {
    (c.sizes.count > 0).then_some(SizeStats {
        min: c.sizes.min as u64,
        mean: c.sizes.mean,
        max: c.sizes.max as u64,
    })
}

/// Ranks the first `whole` segments; `None` when there is none.
pub fn segments(segs: &[Seg], whole: usize, segment_s: f64, by_bytes: bool) -> Option<Segments> {
    let n = whole.min(segs.len());
    if n == 0 || segment_s <= 0.0 {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    let key = |i: &usize| match by_bytes {
        true => segs[*i].bytes,
        false => segs[*i].requests,
    };
    // Ties: the earlier segment first.
    order.sort_by_key(|i| (key(i), *i));
    let point = |i: usize| SegPoint {
        start_s: i as f64 * segment_s,
        requests_per_s: segs[i].requests as f64 / segment_s,
        bytes_per_s: segs[i].bytes as f64 / segment_s,
        objects_per_s: segs[i].objects as f64 / segment_s,
    };
    Some(Segments {
        segment_s,
        count: n,
        by_bytes,
        fastest: point(order[n - 1]),
        median: point(order[(n - 1) / 2]),
        slowest: point(order[0]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Sample;

    #[test]
    fn rates_shares_and_segments() {
        let mut r = Recorder::new(&[Op::Get, Op::Stat], 1, 1_000_000_000, 4);
        for i in 0..30u64 {
            // GETs: 10 in second 0, 20 in second 1; HEADs: 10 in second 2.
            let end = if i < 10 { 100 } else { 1_500_000_000 };
            r.ok(
                Op::Get,
                0,
                &Sample {
                    end_ns: end,
                    latency_ns: 1_000,
                    ttfb_ns: 500,
                    bytes: 10,
                    objects: 1,
                    size: Some(10),
                },
            );
        }
        for _ in 0..10 {
            r.ok(
                Op::Stat,
                0,
                &Sample {
                    end_ns: 2_500_000_000,
                    latency_ns: 2_000,
                    ttfb_ns: 2_000,
                    bytes: 0,
                    objects: 1,
                    size: None,
                },
            );
        }
        let a = analyse(&r, 3.0, &["http://h".to_string()]);
        assert_eq!(a.len(), 2);
        let get = &a[0];
        assert_eq!((get.requests, get.bytes), (30, 300));
        assert!((get.share_pct - 75.0).abs() < 1e-9);
        assert!((get.requests_per_s - 10.0).abs() < 1e-9);
        let s = get.segments.unwrap();
        assert_eq!(s.count, 3);
        assert_eq!(s.fastest.requests_per_s, 20.0);
        assert_eq!(s.slowest.requests_per_s, 0.0);
        assert_eq!(s.median.start_s, 0.0);
        assert_eq!(a[1].hosts[0].requests, 10);
        assert!(a[1].sizes.is_none());
    }
}
