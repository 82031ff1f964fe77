//! Mergeable statistics. Every worker keeps its own and the results are
//! merged afterwards, across threads and across MPI ranks alike, so the
//! hot path takes no lock.

use serde::{Deserialize, Serialize};

/// Count, mean, variance (Welford), min and max of a series of samples.
/// Two summaries merge exactly (Chan et al.), in any order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Running mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
    /// Smallest sample (0 when empty).
    pub min: f64,
    /// Largest sample (0 when empty).
    pub max: f64,
}

impl Summary {
    /// Adds one sample.
    pub fn add(&mut self, x: f64) {
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        let d = x - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (x - self.mean);
    }

    /// Builds a summary from a slice of samples.
    pub fn of(samples: &[f64]) -> Self {
        let mut s = Self::default();
        samples.iter().for_each(|&x| s.add(x));
        s
    }

    /// Folds another summary into this one.
    pub fn merge(&mut self, o: &Summary) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        let n = (self.count + o.count) as f64;
        let d = o.mean - self.mean;
        self.m2 += o.m2 + d * d * self.count as f64 * o.count as f64 / n;
        self.mean += d * o.count as f64 / n;
        self.count += o.count;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// Sample standard deviation (n - 1 in the denominator); 0 for fewer
    /// than two samples.
    pub fn sample_std_dev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).sqrt()
        }
    }

    /// Population standard deviation (n in the denominator).
    pub fn population_std_dev(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            (self.m2 / self.count as f64).sqrt()
        }
    }
}

/// Values below this are counted exactly; above, each power of two is cut
/// into this many buckets, so a bucket is at most 1/128 (0.78 %) of its
/// lower bound wide.
const SUB: u64 = 128;
const SUB_BITS: u32 = 7;
/// Highest power of two tracked (2^48 ns is 78 hours); larger values
/// land in the last bucket and still count towards `max` exactly.
const TOP_BIT: u32 = 47;
/// Number of buckets of a [`Histogram`]: the live counters (`live.rs`)
/// keep the same buckets so that their counts merge into one exactly.
pub const BUCKETS: usize = (SUB + (TOP_BIT as u64 - SUB_BITS as u64 + 1) * SUB) as usize;

/// A log-linear histogram of u64 values (latencies in ns) with at most
/// 1 % relative error, fixed memory and an allocation-free `record`.
#[derive(Clone, PartialEq)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Latency percentiles in nanoseconds, as iolab reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Number of samples behind the figures.
    pub count: u64,
    /// Mean in ns.
    pub mean_ns: f64,
    /// Smallest sample in ns.
    pub min_ns: u64,
    /// Median in ns.
    pub p50_ns: u64,
    /// 90th percentile in ns.
    pub p90_ns: u64,
    /// 99th percentile in ns.
    pub p99_ns: u64,
    /// 99.9th percentile in ns.
    pub p999_ns: u64,
    /// Largest sample in ns.
    pub max_ns: u64,
}

/// Sparse wire form of a histogram: (bucket, count) pairs plus exact
/// extremes. Used to merge histograms across MPI ranks. The empty form
/// (`default()`) has the largest minimum, so that it merges as the
/// identity: a minimum of 0 would win every merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramWire {
    /// Non-empty buckets as (index, count).
    pub buckets: Vec<(u32, u64)>,
    /// Total samples.
    pub count: u64,
    /// Sum of all samples.
    pub sum: u128,
    /// Exact minimum.
    pub min: u64,
    /// Exact maximum.
    pub max: u64,
}

impl Default for HistogramWire {
    fn default() -> Self {
        Self {
            buckets: Vec::new(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl HistogramWire {
    /// Its buckets as [`Histogram::from_wire`] counts them: in index
    /// order, repeats summed, out-of-range ones left out. Borrowed when
    /// they already are (as [`Histogram::to_wire`] makes them).
    fn normalised(&self) -> std::borrow::Cow<'_, [(u32, u64)]> {
        let ok = |&(i, _): &(u32, u64)| (i as usize) < BUCKETS;
        let tidy = self.buckets.windows(2).all(|w| w[0].0 < w[1].0);
        if tidy && self.buckets.iter().all(ok) {
            return std::borrow::Cow::Borrowed(&self.buckets);
        }
        let mut v: Vec<(u32, u64)> = self.buckets.iter().copied().filter(ok).collect();
        v.sort_unstable_by_key(|p| p.0);
        let mut out: Vec<(u32, u64)> = Vec::with_capacity(v.len());
        for (i, c) in v {
            match out.last_mut() {
                Some(last) if last.0 == i => last.1 += c,
                _ => out.push((i, c)),
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// Adds every value of `o`, as [`Histogram::merge`] of both dense
    /// forms would, without making them (each is about 43 KiB).
    pub fn merge(&mut self, o: &HistogramWire) {
        if o.count == 0 {
            return;
        }
        let (a, b) = (self.normalised(), o.normalised());
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut x, mut y) = (0, 0);
        while x < a.len() || y < b.len() {
            let next = match (a.get(x), b.get(y)) {
                (Some(p), Some(q)) if p.0 == q.0 => {
                    (x, y) = (x + 1, y + 1);
                    (p.0, p.1 + q.1)
                }
                (Some(p), Some(q)) if p.0 < q.0 => {
                    x += 1;
                    *p
                }
                (Some(p), None) => {
                    x += 1;
                    *p
                }
                (_, Some(q)) => {
                    y += 1;
                    *q
                }
                (None, None) => break,
            };
            out.push(next);
        }
        let empty = self.count == 0;
        self.buckets = out;
        self.count += o.count;
        self.sum += o.sum;
        (self.min, self.max) = match empty {
            true => (o.min, o.max),
            false => (self.min.min(o.min), self.max.max(o.max)),
        };
    }

    /// Value at quantile `q`, as [`Histogram::percentile`] of its dense
    /// form gives it.
    pub fn percentile(&self, q: f64) -> u64 {
        percentile_of(&self.normalised(), (self.count, self.min, self.max), q)
    }

    /// The standard set of percentiles, as [`Histogram::percentiles`] of
    /// its dense form gives them.
    pub fn percentiles(&self) -> Percentiles {
        let b = self.normalised();
        let at = |q| percentile_of(&b, (self.count, self.min, self.max), q);
        let empty = self.count == 0;
        Percentiles {
            count: self.count,
            mean_ns: if empty {
                0.0
            } else {
                self.sum as f64 / self.count as f64
            },
            min_ns: if empty { 0 } else { self.min },
            p50_ns: at(0.50),
            p90_ns: at(0.90),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns: if empty { 0 } else { self.max },
        }
    }
}

/// [`Histogram::percentile`] over `(index, count)` pairs in index order.
fn percentile_of(buckets: &[(u32, u64)], (count, min, max): (u64, u64, u64), q: f64) -> u64 {
    if count == 0 {
        return 0;
    }
    let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(i, c) in buckets {
        seen += c;
        if seen >= rank {
            let (lo, w) = Histogram::bounds(i as usize);
            return (lo + w / 2).clamp(min, max);
        }
    }
    max
}

impl Histogram {
    /// An empty histogram (about 43 KiB).
    pub fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// The bucket that counts `v`.
    #[inline]
    pub fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let e = (63 - v.leading_zeros()).min(TOP_BIT);
        let shift = e - SUB_BITS;
        let sub = ((v >> shift).min(2 * SUB - 1)) - SUB;
        (SUB + (e - SUB_BITS) as u64 * SUB + sub) as usize
    }

    /// Lowest value and width of bucket `i`.
    pub fn bounds(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < SUB {
            return (i, 1);
        }
        let e = (i - SUB) / SUB + SUB_BITS as u64;
        let sub = (i - SUB) % SUB;
        let shift = e - SUB_BITS as u64;
        ((SUB + sub) << shift, 1 << shift)
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean of the values recorded (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Exact smallest value (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Exact largest value.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Value at quantile `q` (0.0..=1.0): the middle of the bucket that
    /// holds it, clamped to the exact min and max.
    pub fn percentile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = Self::bounds(i);
                return (lo + w / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// The standard set of percentiles iolab reports.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            count: self.count,
            mean_ns: self.mean(),
            min_ns: self.min(),
            p50_ns: self.percentile(0.50),
            p90_ns: self.percentile(0.90),
            p99_ns: self.percentile(0.99),
            p999_ns: self.percentile(0.999),
            max_ns: self.max,
        }
    }

    /// Adds every value of `o` to this histogram. An empty `o` changes
    /// nothing, whatever extremes it carries.
    pub fn merge(&mut self, o: &Histogram) {
        if o.count == 0 {
            return;
        }
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.count += o.count;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// Sparse form for sending over the wire.
    pub fn to_wire(&self) -> HistogramWire {
        HistogramWire {
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
        }
    }

    /// Rebuilds a histogram from its wire form; out-of-range buckets are
    /// ignored rather than trusted.
    pub fn from_wire(w: &HistogramWire) -> Self {
        let mut h = Self::new();
        for &(i, c) in &w.buckets {
            if let Some(slot) = h.counts.get_mut(i as usize) {
                *slot += c;
            }
        }
        h.count = w.count;
        h.sum = w.sum;
        // An empty form from elsewhere (an older peer, a zeroed struct)
        // may say min 0: empty is the identity whatever it says.
        if w.count > 0 {
            h.min = w.min;
            h.max = w.max;
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A wire form as a peer may send it: buckets in any order, repeats,
    /// some out of range; extremes within the buckets' values.
    fn wire() -> impl Strategy<Value = HistogramWire> {
        let pair = (0u32..(BUCKETS as u32 + 50), 1u64..1000);
        proptest::collection::vec(pair, 0..40).prop_map(|buckets| {
            let count = buckets.iter().map(|p| p.1).sum();
            let vals = buckets
                .iter()
                .filter(|p| (p.0 as usize) < BUCKETS)
                .map(|p| Histogram::bounds(p.0 as usize).0);
            let (min, max) = vals.fold((u64::MAX, 0), |(a, b), v| (a.min(v), b.max(v)));
            let (min, max) = if min > max { (0, 0) } else { (min, max) };
            HistogramWire {
                sum: u128::from(count) * 7,
                buckets,
                count,
                min,
                max,
            }
        })
    }

    proptest! {
        #[test]
        fn the_sparse_forms_figures_are_the_dense_ones(a in wire(), b in wire()) {
            let dense = Histogram::from_wire(&a);
            prop_assert_eq!(a.percentiles(), dense.percentiles());
            let mut d = Histogram::from_wire(&a);
            d.merge(&Histogram::from_wire(&b));
            let mut w = a.clone();
            w.merge(&b);
            prop_assert_eq!(w.percentiles(), d.percentiles());
            if a.count > 0 && b.count > 0 {
                prop_assert_eq!(w, d.to_wire());
            }
        }
    }

    #[test]
    fn welford_matches_two_pass() {
        let xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        let s = Summary::of(&xs);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        assert!((s.mean - mean).abs() < 1e-12);
        assert!((s.sample_std_dev() - var.sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (1.0, 9.0));
    }

    #[test]
    fn summaries_merge_exactly() {
        let xs: Vec<f64> = (0..100).map(|i| (i * 37 % 101) as f64).collect();
        let whole = Summary::of(&xs);
        let mut a = Summary::of(&xs[..30]);
        a.merge(&Summary::of(&xs[30..]));
        assert_eq!(a.count, whole.count);
        assert!((a.mean - whole.mean).abs() < 1e-9);
        assert!((a.sample_std_dev() - whole.sample_std_dev()).abs() < 1e-9);
        let mut e = Summary::default();
        e.merge(&whole);
        assert_eq!(e, whole);
        assert_eq!(Summary::of(&[5.0]).sample_std_dev(), 0.0);
    }

    #[test]
    fn histogram_relative_error_under_one_percent() {
        for v in [1u64, 127, 128, 129, 1000, 4097, 123_456, 9_876_543, 1 << 40] {
            let mut h = Histogram::new();
            h.record(v);
            h.record(v * 3);
            let p = h.percentile(0.5);
            let err = (p as f64 - v as f64).abs() / v as f64;
            assert!(err <= 0.01, "v={v} p={p} err={err}");
        }
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        for (q, want) in [(0.5, 500_000.0), (0.9, 900_000.0), (0.99, 990_000.0)] {
            let got = h.percentile(q) as f64;
            assert!((got - want).abs() / want <= 0.01, "q={q} got={got}");
        }
        assert_eq!(h.percentile(1.0), 1_000_000);
        assert_eq!(h.min(), 10);
    }

    #[test]
    fn histogram_merge_and_wire_round_trip() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        (0..1000).for_each(|v| a.record(v));
        (1000..3000).for_each(|v| b.record(v));
        let b2 = Histogram::from_wire(&b.to_wire());
        assert_eq!(b2, b);
        a.merge(&b2);
        assert_eq!(a.count(), 3000);
        assert_eq!(a.max(), 2999);
        assert_eq!(a.min(), 0);
        let p50 = a.percentile(0.5);
        assert!((1480..=1520).contains(&p50), "{p50}");
    }

    /// Property: over random merge trees of random histograms and
    /// summaries, empty ones included (fresh, default wire forms, and a
    /// zeroed wire form with min 0), the merge's count, sum, min and max
    /// equal those of all the values merged. Seeded, so a failure repeats;
    /// the project's own generator, so no test-only dependency.
    #[test]
    fn merges_equal_their_parts_over_random_trees() {
        use crate::random::splitmix_nth;
        for case in 0..300u64 {
            let r = |i: u64| splitmix_nth(case, i);
            let parts = 1 + r(0) % 8;
            let (mut all, mut merged, mut sum_all) =
                (Vec::new(), Histogram::new(), Summary::default());
            for p in 0..parts {
                let n = match r(p * 1000 + 1) % 3 {
                    0 => 0, // an empty part
                    _ => r(p * 1000 + 2) % 50,
                };
                let vals: Vec<u64> = (0..n)
                    .map(|i| 1 + r(p * 1000 + 10 + i) % 1_000_000)
                    .collect();
                let mut h = Histogram::new();
                vals.iter().for_each(|&v| h.record(v));
                let part = match r(p * 1000 + 3) % 4 {
                    0 => Histogram::from_wire(&h.to_wire()),
                    1 if n == 0 => Histogram::from_wire(&HistogramWire::default()),
                    2 if n == 0 => Histogram::from_wire(&HistogramWire {
                        min: 0,
                        ..HistogramWire::default()
                    }),
                    _ => h,
                };
                // Merge into the running total or into a fresh one first.
                if r(p * 1000 + 4) % 2 == 0 {
                    merged.merge(&part);
                } else {
                    let mut fresh = Histogram::new();
                    fresh.merge(&part);
                    fresh.merge(&merged);
                    merged = fresh;
                }
                sum_all.merge(&Summary::of(
                    &vals.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                ));
                all.extend(vals);
            }
            let want_min = all.iter().copied().min().unwrap_or(0);
            let want_max = all.iter().copied().max().unwrap_or(0);
            let want_sum: u128 = all.iter().map(|&v| v as u128).sum();
            assert_eq!(merged.count(), all.len() as u64, "case {case}");
            assert_eq!(
                (merged.min(), merged.max()),
                (want_min, want_max),
                "case {case}"
            );
            assert_eq!(merged.sum, want_sum, "case {case}");
            let p = merged.percentiles();
            assert_eq!(
                (p.min_ns, p.max_ns, p.count),
                (want_min, want_max, all.len() as u64)
            );
            assert_eq!(sum_all.count, all.len() as u64);
            assert_eq!(
                (sum_all.min, sum_all.max),
                (want_min as f64, want_max as f64)
            );
            let w = merged.to_wire();
            assert_eq!(Histogram::from_wire(&w).min(), want_min);
        }
    }

    #[test]
    fn huge_values_are_clamped_not_lost() {
        let mut h = Histogram::new();
        h.record(u64::MAX);
        assert_eq!(h.count(), 1);
        assert_eq!(h.percentile(0.5), u64::MAX);
        assert_eq!(Histogram::new().percentile(0.5), 0);
    }
}
