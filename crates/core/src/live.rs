//! Live counters: what an engine bumps while it runs so that a sampler
//! thread can report each interval (`iolab --live`, crates/live).
//!
//! An engine asks the [`Board`] for one [`Recorder`] per worker and phase
//! (or op type) before the worker's loop, then calls [`Recorder::op`]
//! once per finished operation. A recorder owns one [`Slot`]: counters
//! and the buckets of a [`Histogram`](crate::stats::Histogram) as relaxed
//! atomics written by that one worker only (a load and a store each, no
//! read-modify-write, no lock, no allocation). The sampler reads the
//! cumulative values; an interval is the difference between two reads,
//! so counts stay exact however the reads fall, and the interval's
//! latency histogram is the difference of the bucket counts.
//!
//! A run without `--live` hands its engine [`Recorder::off`] (or a board
//! nobody samples): `op` is then one predictable branch.
//!
//! ```
//! use iolab_core::live::Board;
//! let board = Board::new();
//! {
//!     let rec = board.recorder("read", 0);
//!     rec.op(4096, 1_500);
//!     rec.op(4096, 2_500);
//! }
//! let mut seen = Vec::new();
//! board.visit(|s| seen.push((s.phase().to_string(), s.ops(), s.bytes())));
//! assert_eq!(seen, vec![("read".to_string(), 2, 8192)]);
//! ```

use crate::stats::{Histogram, BUCKETS};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One phase (or op type) as the board knows it.
#[derive(Debug)]
struct Phase {
    name: String,
    /// Raised by the sampler when the phase reached its steady state:
    /// the engine ends the phase at its next operation.
    ended: AtomicBool,
}

/// One worker's counters for one phase, written by that worker alone.
/// Cumulative since the slot was made; aligned so that two workers'
/// slots never share a cache line.
#[repr(align(128))]
#[derive(Debug)]
pub struct Slot {
    ops: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    latency_sum_ns: AtomicU64,
    latency_max_ns: AtomicU64,
    buckets: Box<[AtomicU64]>,
    phase: Arc<Phase>,
    worker: usize,
    /// A recorder holds the slot; a closed slot may be handed out again
    /// (the same phase's next iteration) and keeps counting from where it
    /// was.
    open: AtomicBool,
}

impl Slot {
    fn new(phase: Arc<Phase>, worker: usize) -> Self {
        Slot {
            ops: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            latency_sum_ns: AtomicU64::new(0),
            latency_max_ns: AtomicU64::new(0),
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            phase,
            worker,
            open: AtomicBool::new(true),
        }
    }

    /// The phase's name, as the tool's results JSON spells it.
    pub fn phase(&self) -> &str {
        &self.phase.name
    }

    /// The worker (local task, thread or target) that writes this slot.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Operations finished so far. Read before the buckets: the worker
    /// publishes the count last, so every operation counted here is in
    /// the buckets too.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::Acquire)
    }

    /// Bytes moved by the operations finished so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Operations that failed so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Sum of the latencies recorded so far, in ns.
    pub fn latency_sum_ns(&self) -> u64 {
        self.latency_sum_ns.load(Ordering::Relaxed)
    }

    /// Largest latency recorded so far, in ns.
    pub fn latency_max_ns(&self) -> u64 {
        self.latency_max_ns.load(Ordering::Relaxed)
    }

    /// Cumulative count of bucket `i` (as [`Histogram::index`] numbers
    /// them).
    pub fn bucket(&self, i: usize) -> u64 {
        self.buckets.get(i).map_or(0, |b| b.load(Ordering::Relaxed))
    }

    /// Every bucket's cumulative count, in index order (a reader that
    /// scans them all: no bounds check per bucket).
    pub fn bucket_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed))
    }

    /// Number of buckets ([`crate::stats::BUCKETS`]).
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Whether a recorder holds the slot now.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }
}

/// Adds `n` to a counter only this thread writes: a load and a store,
/// which on common CPUs are plain moves (no locked instruction).
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One phase's counters over every slot of a board, cumulative
/// ([`Board::totals`]): the latency buckets as (index, count) pairs,
/// empty ones left out.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    /// The phase.
    pub phase: String,
    /// Operations finished.
    pub ops: u64,
    /// Bytes they moved.
    pub bytes: u64,
    /// Operations that failed.
    pub errors: u64,
    /// Sum of their latencies, ns.
    pub latency_sum_ns: u64,
    /// Largest latency, ns.
    pub latency_max_ns: u64,
    /// Non-empty latency buckets (as [`Histogram::index`] numbers them).
    pub buckets: Vec<(u32, u64)>,
}

impl Totals {
    fn empty(phase: &str) -> Self {
        Totals {
            phase: phase.to_string(),
            ..Totals::default()
        }
    }
}

/// Where one worker records one phase's operations. Not `Clone` and not
/// `Sync`: one writer per slot is what keeps the counters exact without
/// atomic read-modify-writes. Dropping it closes the slot.
#[derive(Debug)]
pub struct Recorder {
    slot: Option<Arc<Slot>>,
    _not_sync: std::marker::PhantomData<std::cell::Cell<()>>,
}

impl Recorder {
    /// A recorder that records nothing (a run without live figures).
    pub fn off() -> Self {
        Recorder {
            slot: None,
            _not_sync: std::marker::PhantomData,
        }
    }

    /// Whether this recorder counts anything.
    pub fn is_on(&self) -> bool {
        self.slot.is_some()
    }

    /// One finished operation that moved `bytes` and took `latency_ns`.
    #[inline]
    pub fn op(&self, bytes: u64, latency_ns: u64) {
        let Some(s) = &self.slot else { return };
        bump(&s.buckets[Histogram::index(latency_ns)], 1);
        bump(&s.latency_sum_ns, latency_ns);
        if latency_ns > s.latency_max_ns.load(Ordering::Relaxed) {
            s.latency_max_ns.store(latency_ns, Ordering::Relaxed);
        }
        bump(&s.bytes, bytes);
        // Published last (release): a sampler that sees this count sees
        // the buckets above.
        s.ops.store(
            s.ops.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Release,
        );
    }

    /// `ops` finished operations moving `bytes` in all, whose latencies
    /// are not timed one by one (a batch, a transfer counted by bytes).
    #[inline]
    pub fn ops(&self, ops: u64, bytes: u64) {
        let Some(s) = &self.slot else { return };
        bump(&s.bytes, bytes);
        s.ops.store(
            s.ops.load(Ordering::Relaxed).wrapping_add(ops),
            Ordering::Release,
        );
    }

    /// One operation that failed.
    #[inline]
    pub fn error(&self) {
        if let Some(s) = &self.slot {
            bump(&s.errors, 1);
        }
    }

    /// True once the sampler ended this phase on its steady state
    /// (`--steady`): the engine ends the phase as at a time limit.
    #[inline]
    pub fn phase_ended(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|s| s.phase.ended.load(Ordering::Relaxed))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(s) = &self.slot {
            s.open.store(false, Ordering::Relaxed);
        }
    }
}

/// Every slot of a run: engines take recorders from it, the sampler
/// reads it. Taking a recorder locks (once per worker and phase); an
/// operation never does.
#[derive(Debug, Default)]
pub struct Board {
    inner: Mutex<Inner>,
    /// `--steady` was given: engines prepare phases to end early.
    steady: AtomicBool,
}

#[derive(Debug, Default)]
struct Inner {
    phases: Vec<Arc<Phase>>,
    /// Phases the engine can end early (a create phase, a timed pass).
    endable: Vec<String>,
    slots: Vec<Arc<Slot>>,
}

impl Board {
    /// An empty board.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A worker that panicked while holding the lock left the lists
        // whole (each change is one push).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recorder of `worker` for `phase`: the slot it had for that
    /// phase, counting on, or a new one (about 43 KiB, allocated here,
    /// never per operation). A phase that starts again once every slot
    /// of it was closed (the next iteration) starts without the steady
    /// mark of the last one.
    pub fn recorder(&self, phase: &str, worker: usize) -> Recorder {
        let mut inner = self.lock();
        let p = match inner.phases.iter().find(|p| p.name == phase) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(Phase {
                    name: phase.to_string(),
                    ended: AtomicBool::new(false),
                });
                inner.phases.push(p.clone());
                p
            }
        };
        let mine = |s: &&Arc<Slot>| Arc::ptr_eq(&s.phase, &p);
        if !inner.slots.iter().filter(mine).any(|s| s.is_open()) {
            p.ended.store(false, Ordering::Relaxed);
        }
        let free = inner
            .slots
            .iter()
            .filter(mine)
            .find(|s| s.worker == worker && !s.is_open())
            .cloned();
        let slot = match free {
            Some(s) => {
                s.open.store(true, Ordering::Relaxed);
                s
            }
            None => {
                let s = Arc::new(Slot::new(p, worker));
                inner.slots.push(s.clone());
                s
            }
        };
        Recorder {
            slot: Some(slot),
            _not_sync: std::marker::PhantomData,
        }
    }

    /// Says that the sampler watches for steady state (`--steady`).
    pub fn watch_steady(&self) {
        self.steady.store(true, Ordering::Relaxed);
    }

    /// Whether the sampler watches for steady state: an engine whose
    /// phase must agree on where it ended (mdtest's create phases, as
    /// after a stonewall) prepares for it only then.
    pub fn steady_watched(&self) -> bool {
        self.steady.load(Ordering::Relaxed)
    }

    /// The engine can end `phase` early on its steady state; the sampler
    /// ends no other phase.
    pub fn allow_steady(&self, phase: &str) {
        let mut inner = self.lock();
        if !inner.endable.iter().any(|p| p == phase) {
            inner.endable.push(phase.to_string());
        }
    }

    /// Whether `phase` may end on its steady state.
    pub fn steady_allowed(&self, phase: &str) -> bool {
        self.lock().endable.iter().any(|p| p == phase)
    }

    /// Calls `f` on every slot, in the order they were made.
    pub fn visit(&self, mut f: impl FnMut(&Slot)) {
        let slots: Vec<Arc<Slot>> = self.lock().slots.clone();
        for s in &slots {
            f(s);
        }
    }

    /// Every phase's counters summed over its slots, cumulative since
    /// the board was made: what a process reports to another that diffs
    /// successive readings (an lst agent to its console).
    pub fn totals(&self) -> Vec<Totals> {
        let mut out: Vec<(Totals, Vec<u64>)> = Vec::new();
        self.visit(|s| {
            let at = match out.iter().position(|(t, _)| t.phase == s.phase()) {
                Some(at) => at,
                None => {
                    out.push((Totals::empty(s.phase()), vec![0; BUCKETS]));
                    out.len() - 1
                }
            };
            let (t, buckets) = &mut out[at];
            // The count first: every operation it holds is in the
            // buckets read after it.
            t.ops += s.ops();
            t.bytes += s.bytes();
            t.errors += s.errors();
            t.latency_sum_ns += s.latency_sum_ns();
            t.latency_max_ns = t.latency_max_ns.max(s.latency_max_ns());
            for (i, b) in buckets.iter_mut().enumerate() {
                *b += s.bucket(i);
            }
        });
        out.into_iter()
            .map(|(mut t, b)| {
                t.buckets = (0..b.len())
                    .filter(|&i| b[i] > 0)
                    .map(|i| (i as u32, b[i]))
                    .collect();
                t
            })
            .collect()
    }

    /// Ends `phase` on its steady state: each worker's recorder says so
    /// at its next operation ([`Recorder::phase_ended`]).
    pub fn end_phase(&self, phase: &str) {
        if let Some(p) = self.lock().phases.iter().find(|p| p.name == phase) {
            p.ended.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a worker records into `phase` now (a recorder of it is
    /// open): a phase whose workers all finished ended by itself.
    pub fn phase_running(&self, phase: &str) -> bool {
        self.lock()
            .slots
            .iter()
            .any(|s| s.phase() == phase && s.is_open())
    }

    /// Whether `phase` was ended on its steady state (and has not
    /// started again since).
    pub fn phase_was_ended(&self, phase: &str) -> bool {
        self.lock()
            .phases
            .iter()
            .any(|p| p.name == phase && p.ended.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_cumulative_per_worker_and_phase() {
        let b = Board::new();
        let r0 = b.recorder("create", 0);
        let r1 = b.recorder("create", 1);
        for i in 0..10 {
            r0.op(100, 1000 + i);
        }
        r1.op(5, 70);
        r1.error();
        let mut rows = Vec::new();
        b.visit(|s| rows.push((s.worker(), s.ops(), s.bytes(), s.errors())));
        assert_eq!(rows, vec![(0, 10, 1000, 0), (1, 1, 5, 1)]);
    }

    #[test]
    fn buckets_match_a_histogram_of_the_same_values() {
        let b = Board::new();
        let r = b.recorder("read", 0);
        let mut h = Histogram::new();
        for v in [1u64, 127, 128, 1000, 99_999, 1 << 40] {
            r.op(0, v);
            h.record(v);
        }
        b.visit(|s| {
            let wire = h.to_wire();
            for (i, c) in wire.buckets {
                assert_eq!(s.bucket(i as usize), c);
            }
            assert_eq!(s.latency_max_ns(), 1 << 40);
        });
    }

    #[test]
    fn a_closed_slot_is_reused_and_an_open_one_never_shared() {
        let b = Board::new();
        let a = b.recorder("stat", 0);
        let again = b.recorder("stat", 0);
        a.op(0, 1);
        again.op(0, 1);
        drop((a, again));
        let third = b.recorder("stat", 0);
        third.op(0, 1);
        let mut n = 0;
        b.visit(|_| n += 1);
        assert_eq!(n, 2, "two were open at once, the third reused one");
    }

    #[test]
    fn totals_sum_every_slot_of_a_phase() {
        let b = Board::new();
        let (r0, r1, w) = (
            b.recorder("read", 0),
            b.recorder("read", 1),
            b.recorder("write", 0),
        );
        r0.op(10, 1000);
        r1.op(20, 3000);
        r1.error();
        w.op(5, 7);
        let t = b.totals();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].phase.as_str(), t[0].ops, t[0].bytes, t[0].errors),
            ("read", 2, 30, 1)
        );
        assert_eq!((t[0].latency_sum_ns, t[0].latency_max_ns), (4000, 3000));
        let idx = |v| Histogram::index(v) as u32;
        assert_eq!(t[0].buckets, vec![(idx(1000), 1), (idx(3000), 1)]);
        assert_eq!(t[1].buckets, vec![(idx(7), 1)]);
    }

    #[test]
    fn steady_mark_reaches_recorders_and_clears_on_restart() {
        let b = Board::new();
        let r = b.recorder("write", 0);
        assert!(!r.phase_ended());
        b.end_phase("write");
        assert!(r.phase_ended());
        assert!(b.phase_was_ended("write"));
        drop(r);
        let r = b.recorder("write", 0);
        assert!(!r.phase_ended());
        assert!(Recorder::off().phase_ended().eq(&false));
    }
}
