//! What a worker records of its requests, per op type and per endpoint:
//! counts, bytes, latency and time-to-first-byte histograms, object
//! sizes and time segments. Everything merges exactly (counts add,
//! histograms add bucket by bucket), across threads and, through the
//! wire form, across ranks; nobody averages percentiles.

use crate::config::{Op, OPS};
use iolab_core::stats::{Histogram, HistogramWire, Summary};
use serde::{Deserialize, Serialize};

/// What one time segment saw end: requests, bytes and objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seg {
    /// Requests that ended in the segment.
    pub requests: u64,
    /// Bytes they moved.
    pub bytes: u64,
    /// Objects they touched (keys listed, for LIST).
    pub objects: u64,
}

/// One finished request, as the worker measured it.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When it ended, ns after the timed phase began.
    pub end_ns: u64,
    /// How long it took.
    pub latency_ns: u64,
    /// Until the answer's first byte.
    pub ttfb_ns: u64,
    /// Body bytes sent or received.
    pub bytes: u64,
    /// Objects touched (1; keys returned, for LIST).
    pub objects: u64,
    /// The object's size, when the request moved one.
    pub size: Option<u64>,
}

/// The counters and histograms of one op type, or of one op type on
/// one endpoint.
#[derive(Debug, Clone)]
pub struct Counts {
    /// Requests sent (failed ones included).
    pub requests: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Body bytes of the requests that succeeded.
    pub bytes: u64,
    /// Objects they touched.
    pub objects: u64,
    /// Latency of the requests that succeeded.
    pub latency: Histogram,
    /// Their time to first byte.
    pub ttfb: Histogram,
    /// Sizes of the objects moved.
    pub sizes: Summary,
    /// Per time segment, by the time each request ended.
    pub segments: Vec<Seg>,
}

impl Counts {
    fn new(segments: usize) -> Self {
        Counts {
            requests: 0,
            errors: 0,
            bytes: 0,
            objects: 0,
            latency: Histogram::new(),
            ttfb: Histogram::new(),
            sizes: Summary::default(),
            segments: vec![Seg::default(); segments],
        }
    }

    #[inline]
    fn add(&mut self, s: &Sample, seg: usize) {
        self.requests += 1;
        self.bytes += s.bytes;
        self.objects += s.objects;
        self.latency.record(s.latency_ns);
        self.ttfb.record(s.ttfb_ns);
        if let Some(size) = s.size {
            self.sizes.add(size as f64);
        }
        if seg >= self.segments.len() {
            self.segments.resize(seg + 1, Seg::default());
        }
        let g = &mut self.segments[seg];
        g.requests += 1;
        g.bytes += s.bytes;
        g.objects += s.objects;
    }

    fn merge(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.bytes += o.bytes;
        self.objects += o.objects;
        self.latency.merge(&o.latency);
        self.ttfb.merge(&o.ttfb);
        self.sizes.merge(&o.sizes);
        if o.segments.len() > self.segments.len() {
            self.segments.resize(o.segments.len(), Seg::default());
        }
        for (a, b) in self.segments.iter_mut().zip(&o.segments) {
            a.requests += b.requests;
            a.bytes += b.bytes;
            a.objects += b.objects;
        }
    }
}

/// One op type: all endpoints together, each endpoint, and the first
/// error met.
#[derive(Debug, Clone)]
pub struct OpRecord {
    /// Over every endpoint.
    pub all: Counts,
    /// Per endpoint, in `--host` order.
    pub hosts: Vec<Counts>,
    /// The first failure's message.
    pub first_error: Option<String>,
}

/// A worker's (or a merged) record of every op type it times.
#[derive(Debug, Clone)]
pub struct Recorder {
    ops: Vec<Option<OpRecord>>,
    segment_ns: u64,
}

impl Recorder {
    /// A record of `ops` on `hosts` endpoints, with segments of
    /// `segment_ns`, room made for `segments` of them.
    pub fn new(ops: &[Op], hosts: usize, segment_ns: u64, segments: usize) -> Self {
        let mut v: Vec<Option<OpRecord>> = vec![None; OPS];
        for op in ops {
            v[op.index()] = Some(OpRecord {
                all: Counts::new(segments),
                hosts: (0..hosts).map(|_| Counts::new(segments)).collect(),
                first_error: None,
            });
        }
        Recorder {
            ops: v,
            segment_ns: segment_ns.max(1),
        }
    }

    /// Records a request that succeeded.
    #[inline]
    pub fn ok(&mut self, op: Op, host: usize, s: &Sample) {
        let seg = (s.end_ns / self.segment_ns) as usize;
        if let Some(r) = self.ops[op.index()].as_mut() {
            r.all.add(s, seg);
            if let Some(h) = r.hosts.get_mut(host) {
                h.add(s, seg);
            }
        }
    }

    /// Records a request that failed; the first message is kept.
    pub fn failed(&mut self, op: Op, host: usize, message: impl FnOnce() -> String) {
        if let Some(r) = self.ops[op.index()].as_mut() {
            r.all.requests += 1;
            r.all.errors += 1;
            if let Some(h) = r.hosts.get_mut(host) {
                h.requests += 1;
                h.errors += 1;
            }
            if r.first_error.is_none() {
                r.first_error = Some(message());
            }
        }
    }

    /// The record of `op`, if the run times it.
    pub fn op(&self, op: Op) -> Option<&OpRecord> {
        self.ops[op.index()].as_ref()
    }

    /// Length of a segment.
    pub fn segment_ns(&self) -> u64 {
        self.segment_ns
    }

    /// Failed requests over every op: a failed multipart upload is
    /// counted once, by the request of it that failed (its whole,
    /// [`Op::Multipart`], is not a request of its own).
    pub fn errors(&self) -> u64 {
        Op::ALL
            .iter()
            .filter(|&&op| op != Op::Multipart)
            .filter_map(|&op| self.op(op))
            .map(|r| r.all.errors)
            .sum()
    }

    /// Adds `o` (same ops, same endpoints) into this record.
    pub fn merge(&mut self, o: &Recorder) {
        for (a, b) in self.ops.iter_mut().zip(&o.ops) {
            match (a.as_mut(), b) {
                (Some(a), Some(b)) => {
                    a.all.merge(&b.all);
                    for (x, y) in a.hosts.iter_mut().zip(&b.hosts) {
                        x.merge(y);
                    }
                    if a.first_error.is_none() {
                        a.first_error.clone_from(&b.first_error);
                    }
                }
                (None, Some(b)) => *a = Some(b.clone()),
                _ => {}
            }
        }
    }

    /// The sparse form sent between ranks.
    pub fn to_wire(&self) -> RecorderWire {
        RecorderWire {
            segment_ns: self.segment_ns,
            ops: self
                .ops
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
                .map(|(i, r)| OpWire {
                    op: i,
                    all: CountsWire::of(&r.all),
                    hosts: r.hosts.iter().map(CountsWire::of).collect(),
                    first_error: r.first_error.clone(),
                })
                .collect(),
        }
    }

    /// Rebuilds a record from its wire form.
    pub fn from_wire(w: &RecorderWire) -> Self {
        let mut ops: Vec<Option<OpRecord>> = vec![None; OPS];
        for o in &w.ops {
            if let Some(slot) = ops.get_mut(o.op) {
                *slot = Some(OpRecord {
                    all: o.all.counts(),
                    hosts: o.hosts.iter().map(CountsWire::counts).collect(),
                    first_error: o.first_error.clone(),
                });
            }
        }
        Recorder {
            ops,
            segment_ns: w.segment_ns.max(1),
        }
    }
}

/// A [`Recorder`] as sent between ranks: histograms sparse.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RecorderWire {
    segment_ns: u64,
    ops: Vec<OpWire>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct OpWire {
    op: usize,
    all: CountsWire,
    hosts: Vec<CountsWire>,
    first_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CountsWire {
    requests: u64,
    errors: u64,
    bytes: u64,
    objects: u64,
    latency: HistogramWire,
    ttfb: HistogramWire,
    sizes: Summary,
    segments: Vec<Seg>,
}

impl CountsWire {
    fn of(c: &Counts) -> Self {
        CountsWire {
            requests: c.requests,
            errors: c.errors,
            bytes: c.bytes,
            objects: c.objects,
            latency: c.latency.to_wire(),
            ttfb: c.ttfb.to_wire(),
            sizes: c.sizes,
            segments: c.segments.clone(),
        }
    }

    fn counts(&self) -> Counts {
        Counts {
            requests: self.requests,
            errors: self.errors,
            bytes: self.bytes,
            objects: self.objects,
            latency: Histogram::from_wire(&self.latency),
            ttfb: Histogram::from_wire(&self.ttfb),
            sizes: self.sizes,
            segments: self.segments.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(end_ns: u64, latency_ns: u64) -> Sample {
        Sample {
            end_ns,
            latency_ns,
            ttfb_ns: latency_ns / 2,
            bytes: 100,
            objects: 1,
            size: Some(100),
        }
    }

    #[test]
    fn merging_through_the_wire_is_exact() {
        let ops = [Op::Get, Op::Put];
        let mut a = Recorder::new(&ops, 2, 1_000, 2);
        let mut b = Recorder::new(&ops, 2, 1_000, 2);
        for i in 0..10 {
            a.ok(Op::Get, 0, &sample(i * 300, 1_000 + i));
            b.ok(Op::Get, 1, &sample(i * 500, 5_000 + i));
        }
        b.failed(Op::Put, 1, || "HTTP 500".into());
        let mut whole = a.clone();
        whole.merge(&b);
        let text = serde_json::to_string(&b.to_wire()).unwrap();
        let back = Recorder::from_wire(&serde_json::from_str(&text).unwrap());
        let mut through = a.clone();
        through.merge(&back);
        let get = through.op(Op::Get).unwrap();
        assert_eq!(get.all.requests, 20);
        assert_eq!(get.hosts[0].requests + get.hosts[1].requests, 20);
        assert_eq!(
            get.all.latency.percentiles(),
            whole.op(Op::Get).unwrap().all.latency.percentiles()
        );
        assert_eq!(get.all.segments.iter().map(|s| s.requests).sum::<u64>(), 20);
        assert_eq!(get.all.segments.len(), 5, "up to 4.5 us in 1 us segments");
        assert_eq!(through.errors(), 1);
        assert_eq!(
            through.op(Op::Put).unwrap().first_error.as_deref(),
            Some("HTTP 500")
        );
        assert!(through.op(Op::List).is_none());
    }

    #[test]
    fn a_failed_upload_is_one_failed_request() {
        let ops = [Op::Multipart, Op::MpCreate, Op::MpPart, Op::MpComplete];
        let mut r = Recorder::new(&ops, 1, 1_000, 2);
        r.failed(Op::MpPart, 0, || "no ETag".into());
        r.failed(Op::Multipart, 0, || "no ETag".into());
        assert_eq!(r.errors(), 1);
        assert_eq!(r.op(Op::Multipart).unwrap().all.errors, 1);
    }
}
