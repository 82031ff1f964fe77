//! Per-operation latency histograms of md-workbench's object operations
//! (stat, read, delete, create), merged over every task as the app
//! aggregates its timers, and their bytes on the wire between tasks.

use iolab_core::stats::{Histogram, HistogramWire, Percentiles};
use serde::{Deserialize, Serialize};

/// The object operations md-workbench times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// stat of an object.
    Stat = 0,
    /// Open, read whole and close.
    Read = 1,
    /// Unlink.
    Delete = 2,
    /// Create, write whole and close.
    Create = 3,
}

/// One histogram per [`Op`], of nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct OpHistograms([Histogram; 4]);

/// The percentiles of each operation that ran (None for one that did
/// not), over all tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpLatency {
    /// stat.
    pub stat: Option<Percentiles>,
    /// read.
    pub read: Option<Percentiles>,
    /// delete.
    pub delete: Option<Percentiles>,
    /// create.
    pub create: Option<Percentiles>,
}

impl OpHistograms {
    /// Records one operation's time (no allocation).
    pub fn record(&mut self, op: Op, ns: u64) {
        self.0[op as usize].record(ns);
    }

    /// The wire form of the four histograms, appended to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for h in &self.0 {
            let w = h.to_wire();
            let words = [
                w.count,
                w.sum as u64,
                (w.sum >> 64) as u64,
                w.min,
                w.max,
                w.buckets.len() as u64,
            ];
            for v in words {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for (i, c) in w.buckets {
                out.extend_from_slice(&u64::from(i).to_le_bytes());
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
    }

    /// Reads what [`OpHistograms::encode`] wrote (a short or damaged
    /// form reads as empty histograms).
    pub fn decode(b: &[u8]) -> OpHistograms {
        let mut words = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        let mut out = OpHistograms::default();
        for h in out.0.iter_mut() {
            let mut next = || words.next().unwrap_or(0);
            let (count, lo, hi, min, max, n) = (next(), next(), next(), next(), next(), next());
            let mut w = HistogramWire {
                buckets: Vec::new(),
                count,
                sum: u128::from(lo) | (u128::from(hi) << 64),
                min,
                max,
            };
            for _ in 0..n.min(1 << 20) {
                let (i, c) = (next(), next());
                w.buckets.push((i as u32, c));
            }
            *h = Histogram::from_wire(&w);
        }
        out
    }

    /// Adds another task's histograms.
    pub fn merge(&mut self, o: &OpHistograms) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            a.merge(b);
        }
    }

    /// The percentiles of each operation.
    pub fn latency(&self) -> OpLatency {
        let p = |op: Op| {
            let h = &self.0[op as usize];
            (h.count() > 0).then(|| h.percentiles())
        };
        OpLatency {
            stat: p(Op::Stat),
            read: p(Op::Read),
            delete: p(Op::Delete),
            create: p(Op::Create),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_cross_the_wire_and_merge() {
        let mut a = OpHistograms::default();
        for ns in [1_000, 2_000, 3_000] {
            a.record(Op::Read, ns);
        }
        a.record(Op::Create, 5_000_000);
        let mut bytes = Vec::new();
        a.encode(&mut bytes);
        let mut b = OpHistograms::decode(&bytes);
        b.merge(&a);
        let l = b.latency();
        assert!(l.stat.is_none() && l.delete.is_none());
        let r = l.read.unwrap();
        assert_eq!((r.count, r.min_ns, r.max_ns), (6, 1_000, 3_000));
        assert_eq!(l.create.unwrap().max_ns, 5_000_000);
        assert_eq!(OpHistograms::decode(&[]).latency(), OpLatency::default());
    }
}
