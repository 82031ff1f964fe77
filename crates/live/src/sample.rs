//! Reading the board: each interval, the difference between this read of
//! every slot and the last one, summed per phase into a [`Part`].

use iolab_core::live::{Board, Slot, Totals};
use iolab_core::stats::{Histogram, HistogramWire, BUCKETS};
use serde::{Deserialize, Serialize};

/// One phase's interval from one process (or, merged, from many): the
/// counts of the interval, the totals since the start, and the interval's
/// latency histogram in its sparse wire form. Parts merge exactly:
/// counts add, histograms add bucket by bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// The phase or op type.
    pub phase: String,
    /// Operations finished in the interval.
    pub ops: u64,
    /// Bytes they moved.
    pub bytes: u64,
    /// Operations that failed in the interval.
    pub errors: u64,
    /// Operations finished since the start.
    pub ops_total: u64,
    /// Bytes since the start.
    pub bytes_total: u64,
    /// Failures since the start.
    pub errors_total: u64,
    /// Exact largest latency since the start (bounds the interval's
    /// maximum, which the buckets give only to a bucket's width).
    pub max_total_ns: u64,
    /// Latencies of the interval.
    pub latency: HistogramWire,
}

impl Part {
    /// A part of `phase` with nothing counted yet.
    pub(crate) fn empty(phase: &str) -> Self {
        Part {
            phase: phase.to_string(),
            ops: 0,
            bytes: 0,
            errors: 0,
            ops_total: 0,
            bytes_total: 0,
            errors_total: 0,
            max_total_ns: 0,
            latency: HistogramWire::default(),
        }
    }

    /// The same phase and totals with nothing in the interval: a phase
    /// the final flush names although it did not move.
    pub fn idle(&self) -> Part {
        Part {
            ops: 0,
            bytes: 0,
            errors: 0,
            latency: HistogramWire::default(),
            ..self.clone()
        }
    }

    /// Adds `o` (the same phase from another worker, rank or host).
    pub fn merge(&mut self, o: &Part) {
        self.ops += o.ops;
        self.bytes += o.bytes;
        self.errors += o.errors;
        self.ops_total += o.ops_total;
        self.bytes_total += o.bytes_total;
        self.errors_total += o.errors_total;
        self.max_total_ns = self.max_total_ns.max(o.max_total_ns);
        // Sparse: a dense histogram is 43 KiB to make and to scan.
        self.latency.merge(&o.latency);
    }

    /// The interval's histogram.
    pub fn histogram(&self) -> Histogram {
        Histogram::from_wire(&self.latency)
    }
}

/// Merges parts by phase, keeping the order phases first appear in.
pub fn merge_by_phase<'a>(parts: impl IntoIterator<Item = &'a Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::new();
    for p in parts {
        match out.iter_mut().find(|o| o.phase == p.phase) {
            Some(o) => o.merge(p),
            None => out.push(p.clone()),
        }
    }
    out
}

/// What the last read of one slot saw.
struct Seen {
    ops: u64,
    bytes: u64,
    errors: u64,
    sum_ns: u64,
    buckets: Box<[u64]>,
}

/// Reads a board interval by interval. The board only ever appends
/// slots, so the n-th slot visited is the same slot every time.
#[derive(Default)]
pub struct Sampler {
    seen: Vec<Seen>,
}

impl Sampler {
    /// A sampler that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One interval: per phase, what every slot did since the last call.
    /// A phase appears while a worker holds it open or when it moved, and
    /// every phase ever seen when `all` (the final flush: each phase's
    /// last row carries its totals).
    pub fn sample(&mut self, board: &Board, all: bool) -> Vec<Part> {
        let active = self.active_phases(board, all);
        // Per phase: its part, its interval's buckets (sparse: an
        // interval touches few of the 5,376) and their latency sum.
        let mut acc: Vec<(Part, HistogramWire, u64)> = Vec::new();
        let mut i = 0;
        board.visit(|slot| {
            let seen = self.seen_at(i);
            i += 1;
            let ops = slot.ops();
            let errors = slot.errors();
            let moved = ops != seen.ops || errors != seen.errors;
            if !moved && !slot.is_open() && !active.iter().any(|p| p == slot.phase()) {
                return;
            }
            let at = match acc.iter().position(|a| a.0.phase == slot.phase()) {
                Some(at) => at,
                None => {
                    acc.push((Part::empty(slot.phase()), HistogramWire::default(), 0));
                    acc.len() - 1
                }
            };
            let (part, buckets, sum) = &mut acc[at];
            read_slot(slot, seen, ops, errors, moved, part, buckets, sum);
        });
        acc.into_iter()
            .map(|(p, b, s)| finish(p, b.buckets, s))
            .collect()
    }

    /// Phases with a slot held open or moved since the last read: every
    /// slot of these is read, so their totals are whole.
    fn active_phases(&mut self, board: &Board, all: bool) -> Vec<String> {
        let mut active: Vec<String> = Vec::new();
        let mut i = 0;
        board.visit(|slot| {
            let seen = self.seen_at(i);
            i += 1;
            let moved = slot.ops() != seen.ops || slot.errors() != seen.errors;
            if (all || moved || slot.is_open()) && !active.iter().any(|p| p == slot.phase()) {
                active.push(slot.phase().to_string());
            }
        });
        active
    }

    fn seen_at(&mut self, i: usize) -> &mut Seen {
        while self.seen.len() <= i {
            self.seen.push(Seen {
                ops: 0,
                bytes: 0,
                errors: 0,
                sum_ns: 0,
                buckets: vec![0; BUCKETS].into_boxed_slice(),
            });
        }
        &mut self.seen[i]
    }
}

/// Turns successive cumulative readings of another process's board
/// ([`Board::totals`], an lst agent's) into interval parts: each the
/// difference from the reading before, as [`Sampler`] takes it from
/// slots, so the intervals add up to the last reading exactly.
#[derive(Debug, Default)]
pub struct Differ {
    last: Vec<Totals>,
}

impl Differ {
    /// A differ whose first reading counts from zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The interval up to reading `now`: a part per phase that moved,
    /// and per phase ever read when `all` (the final flush).
    pub fn interval(&mut self, now: Vec<Totals>, all: bool) -> Vec<Part> {
        let zero = Totals::default();
        let mut parts = Vec::new();
        for t in &now {
            let before = self
                .last
                .iter()
                .find(|p| p.phase == t.phase)
                .unwrap_or(&zero);
            if !all && t.ops == before.ops && t.errors == before.errors {
                continue;
            }
            let mut part = Part::empty(&t.phase);
            part.ops = t.ops.saturating_sub(before.ops);
            part.bytes = t.bytes.saturating_sub(before.bytes);
            part.errors = t.errors.saturating_sub(before.errors);
            (part.ops_total, part.bytes_total, part.errors_total) = (t.ops, t.bytes, t.errors);
            part.max_total_ns = t.latency_max_ns;
            let buckets = difference(&t.buckets, &before.buckets);
            let sum = t.latency_sum_ns.saturating_sub(before.latency_sum_ns);
            parts.push(finish(part, buckets, sum));
        }
        if !now.is_empty() {
            self.last = now;
        }
        parts
    }
}

/// Adds one slot's interval to its phase's part.
#[allow(clippy::too_many_arguments)]
fn read_slot(
    slot: &Slot,
    seen: &mut Seen,
    ops: u64,
    errors: u64,
    moved: bool,
    part: &mut Part,
    buckets: &mut HistogramWire,
    sum: &mut u64,
) {
    let bytes = slot.bytes();
    part.ops += ops - seen.ops;
    part.bytes += bytes - seen.bytes;
    part.errors += errors - seen.errors;
    part.ops_total += ops;
    part.bytes_total += bytes;
    part.errors_total += errors;
    part.max_total_ns = part.max_total_ns.max(slot.latency_max_ns());
    (seen.ops, seen.bytes, seen.errors) = (ops, bytes, errors);
    if !moved {
        return;
    }
    let s = slot.latency_sum_ns();
    *sum += s - seen.sum_ns;
    seen.sum_ns = s;
    let mut diff = HistogramWire::default();
    for (b, (now, last)) in slot
        .bucket_counts()
        .zip(seen.buckets.iter_mut())
        .enumerate()
    {
        if now != *last {
            diff.buckets.push((b as u32, now - *last));
            diff.count += now - *last;
            *last = now;
        }
    }
    // Summed by bucket; count, sum and extremes are set by the finish.
    buckets.merge(&diff);
}

/// The non-empty buckets, in index order, of a cumulative reading `now`
/// less the reading `before` it (another process's: in any order,
/// repeats summed, out-of-range ones left out). Sparse, as the
/// sampler's: an interval touches few of the 5,376 buckets.
fn difference(now: &[(u32, u64)], before: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut by = std::collections::BTreeMap::<u32, u64>::new();
    for &(i, c) in now.iter().filter(|p| (p.0 as usize) < BUCKETS) {
        *by.entry(i).or_default() += c;
    }
    for &(i, c) in before {
        if let Some(b) = by.get_mut(&i) {
            *b = b.saturating_sub(c);
        }
    }
    by.into_iter().filter(|p| p.1 > 0).collect()
}

/// Makes `pairs` (non-empty buckets in index order) the part's
/// histogram: its count, its sum, and extremes bounded by its buckets
/// and the part's exact largest latency.
fn finish(mut part: Part, pairs: Vec<(u32, u64)>, sum_ns: u64) -> Part {
    let (Some(first), Some(last)) = (pairs.first(), pairs.last()) else {
        return part;
    };
    let min = Histogram::bounds(first.0 as usize).0;
    let (lo, w) = Histogram::bounds(last.0 as usize);
    let max = (lo + w - 1).min(part.max_total_ns.max(lo));
    part.latency = HistogramWire {
        count: pairs.iter().map(|p| p.1).sum(),
        buckets: pairs,
        sum: u128::from(sum_ns),
        min,
        max,
    };
    part
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_add_up_to_the_totals() {
        let board = Board::new();
        let mut s = Sampler::new();
        let a = board.recorder("create", 0);
        let b = board.recorder("create", 1);
        for _ in 0..5 {
            a.op(10, 1000);
        }
        b.op(10, 5000);
        let one = s.sample(&board, false);
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].ops, one[0].bytes, one[0].ops_total), (6, 60, 6));
        assert_eq!(one[0].latency.count, 6);
        a.op(10, 1000);
        drop((a, b));
        let two = s.sample(&board, false);
        assert_eq!((two[0].ops, two[0].ops_total), (1, 7));
        let p50 = two[0].histogram().percentile(0.5);
        assert!((1000..1004).contains(&p50), "{p50}: the bucket of 1000");
        // Closed and still: the phase no longer shows.
        assert!(s.sample(&board, false).is_empty());
    }

    #[test]
    fn a_differ_gives_the_intervals_of_cumulative_readings() {
        let board = Board::new();
        let mut d = Differ::new();
        let r = board.recorder("write", 0);
        for _ in 0..3 {
            r.op(100, 2_000);
        }
        let one = d.interval(board.totals(), false);
        assert_eq!((one[0].ops, one[0].bytes, one[0].ops_total), (3, 300, 3));
        assert_eq!(one[0].latency.count, 3);
        r.op(100, 9_000);
        r.error();
        let two = d.interval(board.totals(), false);
        assert_eq!((two[0].ops, two[0].errors, two[0].ops_total), (1, 1, 4));
        assert_eq!(two[0].latency.count, 1, "only the interval's latency");
        assert!(two[0].histogram().percentile(0.5) >= 8_900);
        assert!(
            d.interval(board.totals(), false).is_empty(),
            "nothing moved"
        );
        let last = d.interval(board.totals(), true);
        assert_eq!(
            (last[0].ops, last[0].ops_total),
            (0, 4),
            "the final flush names it"
        );
    }

    #[test]
    fn a_difference_takes_readings_in_any_order() {
        let far = BUCKETS as u32;
        let now = [(9, 5), (2, 1), (9, 2), (far, 7), (4, 3)];
        let before = [(4, 3), (9, 1), (2, 5)];
        // 9: 5 + 2 - 1; 2 went back (another process restarted): none;
        // 4 did not move; the bucket past the end is left out.
        assert_eq!(difference(&now, &before), [(9, 6)]);
        assert_eq!(difference(&[(3, 2)], &[]), [(3, 2)]);
    }

    #[test]
    fn merged_parts_give_merged_percentiles() {
        let board = Board::new();
        let mut s = Sampler::new();
        let r = board.recorder("read", 0);
        for v in 1..=100u64 {
            r.op(0, v * 1000);
        }
        let p = s.sample(&board, false).remove(0);
        let mut two = p.clone();
        two.merge(&p);
        assert_eq!(two.ops, 200);
        assert_eq!(
            two.histogram().percentile(0.99),
            p.histogram().percentile(0.99)
        );
        assert!(two.latency.max >= 99_000 && two.latency.max <= 100_000);
    }
}
