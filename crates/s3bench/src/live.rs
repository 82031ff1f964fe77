//! What a running s3bench shows while it runs: the phase, when the timed
//! phase began, and each local worker's running totals, one cache line
//! per worker (written by that worker alone with plain stores, read by
//! the progress display, `--autoterm` and live figures).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// The phases of a run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Checking the bucket, listing, connecting.
    Starting,
    /// Uploading (or listing) the objects the timed phase uses.
    Preparing,
    /// The timed phase.
    Timed,
    /// Deleting what the run made, checking what is left.
    Cleaning,
    /// Over.
    Done,
}

/// One worker's running totals (timed phase only).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Slot {
    /// Requests finished.
    pub requests: AtomicU64,
    /// Bytes moved.
    pub bytes: AtomicU64,
    /// Objects prepared (uploaded before the timed phase).
    pub prepared: AtomicU64,
}

/// A process's live view of its run.
#[derive(Debug)]
pub struct Live {
    phase: AtomicU8,
    timed_start_ns: AtomicU64,
    slots: Box<[Slot]>,
}

impl Live {
    /// The view of a process running `workers` workers.
    pub fn new(workers: usize) -> Self {
        Live {
            phase: AtomicU8::new(Phase::Starting as u8),
            timed_start_ns: AtomicU64::new(0),
            slots: (0..workers.max(1)).map(|_| Slot::default()).collect(),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::Starting,
            1 => Phase::Preparing,
            2 => Phase::Timed,
            3 => Phase::Cleaning,
            _ => Phase::Done,
        }
    }

    /// Moves to `p` (never back).
    pub fn set_phase(&self, p: Phase) {
        self.phase.fetch_max(p as u8, Ordering::Relaxed);
    }

    /// Marks the timed phase's start (monotonic ns).
    pub fn start_timed(&self, now_ns: u64) {
        let _ =
            self.timed_start_ns
                .compare_exchange(0, now_ns, Ordering::Relaxed, Ordering::Relaxed);
        self.set_phase(Phase::Timed);
    }

    /// When the timed phase began (monotonic ns), if it has.
    pub fn timed_start_ns(&self) -> Option<u64> {
        Some(self.timed_start_ns.load(Ordering::Relaxed)).filter(|t| *t > 0)
    }

    /// Worker `i`'s slot (`i` modulo the workers).
    pub fn slot(&self, i: usize) -> &Slot {
        &self.slots[i % self.slots.len()]
    }

    /// Requests the local workers finished in the timed phase.
    pub fn requests(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.requests.load(Ordering::Relaxed))
            .sum()
    }

    /// Bytes they moved.
    pub fn bytes(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Objects they prepared.
    pub fn prepared(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.prepared.load(Ordering::Relaxed))
            .sum()
    }
}
