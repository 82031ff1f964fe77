//! What one pass measured: a QThread's and a target's counts and
//! service times, kept apart from the run's results so that the pass log
//! (`passlog`), which spools them, and the results, which read them back,
//! both depend on it and not on each other.

use iolab_core::stats::{HistogramWire, Percentiles};
use iolab_core::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Service-time histogram of a span. While a QThread records into it it
/// is the full (fixed-size, allocation-free) histogram; once a pass is
/// over it is kept in the sparse form (only the non-empty buckets), so
/// that a run's memory does not grow with its number of passes.
#[derive(Debug, Clone)]
pub enum Latency {
    /// Being recorded into: about 43 KiB.
    Live(Histogram),
    /// Kept for the report: a few hundred bytes.
    Kept(HistogramWire),
}

impl Default for Latency {
    /// Empty and compact: allocates nothing until a value is recorded.
    fn default() -> Self {
        Latency::Kept(HistogramWire::default())
    }
}

/// Kept in the compact form whatever the state (the pass spool).
impl Serialize for Latency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Latency::Kept(w) => w.serialize(s),
            Latency::Live(h) => h.to_wire().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        HistogramWire::deserialize(d).map(Latency::Kept)
    }
}

impl Latency {
    /// A histogram ready for recording without allocating later.
    pub fn live() -> Self {
        Latency::Live(Histogram::new())
    }

    /// Records one value (turning a kept form live first).
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.live_mut().record(v);
    }

    fn live_mut(&mut self) -> &mut Histogram {
        if let Latency::Kept(w) = self {
            *self = Latency::Live(Histogram::from_wire(w));
        }
        match self {
            Latency::Live(h) => h,
            // Just made live above.
            Latency::Kept(_) => unreachable!(),
        }
    }

    /// The full histogram (rebuilt from the kept form when needed).
    pub fn histogram(&self) -> std::borrow::Cow<'_, Histogram> {
        match self {
            Latency::Live(h) => std::borrow::Cow::Borrowed(h),
            Latency::Kept(w) => std::borrow::Cow::Owned(Histogram::from_wire(w)),
        }
    }

    /// Adds every value of `o`.
    pub fn merge(&mut self, o: &Latency) {
        if o.count() > 0 {
            let h = o.histogram();
            self.live_mut().merge(&h);
        }
    }

    /// Switches to the compact form.
    pub fn compact(&mut self) {
        if let Latency::Live(h) = self {
            *self = Latency::Kept(h.to_wire());
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        match self {
            Latency::Live(h) => h.count(),
            Latency::Kept(w) => w.count,
        }
    }

    /// Mean value (0 when empty).
    pub fn mean(&self) -> f64 {
        self.histogram().mean()
    }

    /// Largest value.
    pub fn max(&self) -> u64 {
        self.histogram().max()
    }

    /// Value at quantile `q`.
    pub fn percentile(&self, q: f64) -> u64 {
        self.histogram().percentile(q)
    }

    /// The standard percentiles.
    pub fn percentiles(&self) -> Percentiles {
        self.histogram().percentiles()
    }
}

/// Counters of one QThread, target or run over some span.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Bytes actually read (as returned by the system).
    pub read_bytes: u64,
    /// Bytes actually written.
    pub write_bytes: u64,
    /// Completed read operations.
    pub read_ops: u64,
    /// Completed write operations.
    pub write_ops: u64,
    /// Elapsed wall time in ns (pass start to last completion).
    pub elapsed_ns: u64,
    /// Time from pass start to the first completion, ns.
    pub first_op_ns: u64,
    /// User CPU time of the QThreads, ns.
    pub cpu_user_ns: u64,
    /// System CPU time of the QThreads, ns.
    pub cpu_sys_ns: u64,
    /// Sum of per-operation service times, ns.
    pub io_ns: u64,
    /// Time spent filling/patching write buffers, ns.
    pub pattern_fill_ns: u64,
    /// Time spent in fsync/fdatasync (-flushwrite, -syncwrite), ns.
    pub flush_ns: u64,
    /// Operations that failed or transferred less than asked.
    pub errors: u64,
    /// Reads whose data failed -verify.
    pub verify_failed_ops: u64,
    /// Bad bytes (contents) or words (location) found by -verify.
    pub verify_bad_units: u64,
    /// Lowest file offset where -verify found bad data.
    pub first_bad_offset: Option<u64>,
    /// Operations slower than -reportthreshold: (op, offset, ns).
    pub slow_ops: Vec<(u64, u64, u64)>,
    /// Service time of every operation, ns.
    pub latency: Latency,
    /// End-to-end figures (zero on other targets).
    pub e2e: crate::e2e::counts::E2eCounts,
}

impl Counts {
    /// All bytes transferred.
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }

    /// All operations completed.
    pub fn ops(&self) -> u64 {
        self.read_ops + self.write_ops
    }

    /// Adds `o`'s counters; elapsed times are combined by the caller's
    /// rule (`max` for parallel spans, `sum` for consecutive ones).
    pub fn merge_counts(&mut self, o: &Counts) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.read_ops += o.read_ops;
        self.write_ops += o.write_ops;
        self.cpu_user_ns += o.cpu_user_ns;
        self.cpu_sys_ns += o.cpu_sys_ns;
        self.io_ns += o.io_ns;
        self.pattern_fill_ns += o.pattern_fill_ns;
        self.flush_ns += o.flush_ns;
        self.errors += o.errors;
        self.verify_failed_ops += o.verify_failed_ops;
        self.verify_bad_units += o.verify_bad_units;
        self.first_bad_offset = match (self.first_bad_offset, o.first_bad_offset) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.slow_ops.extend_from_slice(&o.slow_ops);
        self.latency.merge(&o.latency);
        self.e2e.merge(&o.e2e);
    }

    /// Merges spans that ran at the same time (QThreads of a pass,
    /// targets of a run): elapsed is the longest.
    pub fn merge_parallel(&mut self, o: &Counts) {
        self.merge_counts(o);
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
        self.first_op_ns = if self.first_op_ns == 0 {
            o.first_op_ns
        } else {
            self.first_op_ns.min(o.first_op_ns.max(1))
        };
    }

    /// Keeps the latency histogram in its compact form (end of a pass).
    pub fn compact(&mut self) {
        self.latency.compact();
    }

    /// Merges spans that ran one after another (passes): elapsed adds up.
    pub fn merge_serial(&mut self, o: &Counts) {
        self.merge_counts(o);
        self.elapsed_ns += o.elapsed_ns;
        if self.first_op_ns == 0 {
            self.first_op_ns = o.first_op_ns;
        }
    }
}

/// One QThread in one pass.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QthreadPass {
    /// QThread number within the target, from 0.
    pub qthread: usize,
    /// Pass start relative to the run start, ns.
    pub start_ns: u64,
    /// What it did.
    pub counts: Counts,
}

/// One target in one pass.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TargetPass {
    /// Target number, from 0.
    pub target: usize,
    /// Pass number, from 1.
    pub pass: u64,
    /// Pass start relative to the run start, ns.
    pub start_ns: u64,
    /// Pass end relative to the run start, ns.
    pub end_ns: u64,
    /// Merge of its QThreads (elapsed = pass start to last completion,
    /// including -syncwrite).
    pub counts: Counts,
    /// Its QThreads.
    pub qthreads: Vec<QthreadPass>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_add_counts_and_combine_time() {
        let mut a = Counts {
            read_ops: 2,
            read_bytes: 20,
            elapsed_ns: 5,
            ..Default::default()
        };
        let b = Counts {
            write_ops: 1,
            write_bytes: 10,
            elapsed_ns: 7,
            ..Default::default()
        };
        let mut s = a.clone();
        s.merge_serial(&b);
        a.merge_parallel(&b);
        assert_eq!((a.ops(), a.bytes(), a.elapsed_ns), (3, 30, 7));
        assert_eq!((s.ops(), s.bytes(), s.elapsed_ns), (3, 30, 12));
    }

    #[test]
    fn compact_latency_keeps_every_figure() {
        let mut live = Latency::live();
        for v in [100, 2_000, 30_000, 30_000, 4_000_000] {
            live.record(v);
        }
        let before = live.percentiles();
        let mut kept = live.clone();
        kept.compact();
        assert!(matches!(kept, Latency::Kept(ref w) if w.buckets.len() <= 5));
        assert_eq!(kept.percentiles(), before);
        // Merging a kept form into another gives the same as live merges.
        let mut a = Latency::default();
        a.merge(&kept);
        a.merge(&live);
        assert_eq!((a.count(), a.max()), (10, 4_000_000));
    }
}
