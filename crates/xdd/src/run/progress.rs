//! Live progress that threads publish and others read: the heartbeat
//! reporter, lockstep slaves, start/stop triggers and -syncio. Workers
//! only add to relaxed atomics; no lock is taken on the I/O path.

use crate::parse::values::Measure;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// One target's progress in its current pass.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct TargetProgress {
    /// Current pass, from 1 (0 before the first).
    pub pass: AtomicU64,
    /// Monotonic time the current pass started, ns.
    pub pass_start_ns: AtomicU64,
    /// Operations completed in this pass.
    pub ops: AtomicU64,
    /// Bytes transferred in this pass.
    pub bytes: AtomicU64,
    /// Operations planned per pass (u64::MAX when only time-limited).
    pub planned_ops: AtomicU64,
    /// Operations completed in earlier passes.
    pub earlier_ops: AtomicU64,
    /// Bytes transferred in earlier passes.
    pub earlier_bytes: AtomicU64,
    /// The current pass has ended.
    pub pass_done: AtomicBool,
    /// Monotonic time the current pass ended, ns (0 while it runs): a
    /// heartbeat's rates of a finished pass stop there, as XDD's do,
    /// instead of falling as the other targets go on.
    pub pass_end_ns: AtomicU64,
    /// The target has finished the run.
    pub run_done: AtomicBool,
    /// Someone (a stop trigger) asked this target to stop its pass.
    pub stop: AtomicBool,
    /// The turns of the `-lockstep` pair this target is the slave of.
    pub turns: crate::run::lockstep::Turns,
}

impl TargetProgress {
    /// Clears the per-pass counters before pass `pass`. Called before the
    /// start barrier, so that no other target can read the previous pass's
    /// progress once the barrier has released everyone.
    pub fn prepare_pass(&self, pass: u64) {
        self.earlier_ops
            .fetch_add(self.ops.swap(0, Relaxed), Relaxed);
        self.earlier_bytes
            .fetch_add(self.bytes.swap(0, Relaxed), Relaxed);
        self.pass_start_ns.store(0, Relaxed);
        self.pass_end_ns.store(0, Relaxed);
        self.pass_done.store(false, Relaxed);
        self.stop.store(false, Relaxed);
        self.pass.store(pass, Relaxed);
    }

    /// Marks the start of pass `pass` (after barrier and start delays).
    pub fn begin_pass(&self, pass: u64, start_ns: u64) {
        if self.pass.load(Relaxed) != pass {
            self.prepare_pass(pass);
        }
        self.pass_start_ns.store(start_ns, Relaxed);
    }

    /// Marks the end of the current pass at `end_ns`.
    pub fn end_pass(&self, end_ns: u64) {
        self.pass_end_ns.store(end_ns, Relaxed);
        self.pass_done.store(true, Relaxed);
    }

    /// Seconds of the current pass by `now_ns`: to its end once it has
    /// ended, 0 before it starts.
    pub fn pass_elapsed_s(&self, now_ns: u64) -> f64 {
        let start = self.pass_start_ns.load(Relaxed);
        let end = match self.pass_end_ns.load(Relaxed) {
            0 => now_ns,
            e => e,
        };
        match start {
            0 => 0.0,
            s => end.saturating_sub(s) as f64 / 1e9,
        }
    }

    /// Records one completed operation.
    #[inline]
    pub fn add(&self, bytes: u64) {
        self.ops.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }

    /// True when this target's pass has reached `m` at time `now_ns`.
    pub fn reached(&self, m: Measure, now_ns: u64) -> bool {
        let ops = self.ops.load(Relaxed);
        let bytes = self.bytes.load(Relaxed);
        match m {
            Measure::Time(s) => {
                let start = self.pass_start_ns.load(Relaxed);
                start != 0 && now_ns.saturating_sub(start) as f64 >= s * 1e9
            }
            Measure::Op(n) => ops >= n,
            Measure::Percent(p) => {
                let planned = self.planned_ops.load(Relaxed).max(1);
                ops as f64 * 100.0 >= p * planned as f64
            }
            Measure::Mbytes(n) => bytes >= n << 20,
            Measure::Kbytes(n) => bytes >= n << 10,
        }
    }
}

/// A wait for `-starttime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartWait {
    /// The global time waited for, seconds since the epoch.
    pub global_s: u64,
    /// How long the wait is.
    pub left: std::time::Duration,
}

/// Progress of every target of a run.
#[derive(Debug, Default)]
pub struct Progress {
    /// One per target, in target order.
    pub targets: Vec<TargetProgress>,
    /// Monotonic time the run started, ns (0 before).
    pub run_start_ns: AtomicU64,
    /// The run has ended (the heartbeat reporter stops).
    pub finished: AtomicBool,
    /// Where the end-to-end destination targets listen, set once they
    /// all do (the CLI says so, and xddcp waits for it).
    pub e2e_listening: std::sync::OnceLock<Vec<String>>,
    /// `-starttime`: the global time the run waits for and how long the
    /// wait is, set as it begins (the CLI says so; `run_start_ns` is set
    /// when it is over).
    pub start_wait: std::sync::OnceLock<StartWait>,
    /// Where each QThread records its operations for the live figures
    /// (`--live`), per op type (`read`, `write`); none: nothing recorded.
    pub live: Option<std::sync::Arc<iolab_core::live::Board>>,
    /// The live link of an end-to-end copy (its other side's figures),
    /// shared with whoever streams them.
    pub e2e_live: std::sync::Arc<crate::e2e::link::LiveLink>,
}

impl Progress {
    /// Progress for `n` targets.
    pub fn new(n: usize) -> Self {
        Self {
            targets: (0..n).map(|_| TargetProgress::default()).collect(),
            ..Self::default()
        }
    }

    /// Records every operation on `board` too (`--live`).
    pub fn with_live(mut self, board: Option<std::sync::Arc<iolab_core::live::Board>>) -> Self {
        self.live = board;
        self
    }

    /// Shares `link` with the copy's setup, which makes the live link
    /// of an end-to-end copy when both sides stream live figures.
    pub fn with_e2e_live(mut self, link: std::sync::Arc<crate::e2e::link::LiveLink>) -> Self {
        self.e2e_live = link;
        self
    }
}

/// Waits until `ready()` holds; returns false if `give_up()` holds first.
/// Spins briefly, then yields, then sleeps 50 us, so a long wait costs
/// little CPU and a short one little latency.
pub fn wait_until(mut ready: impl FnMut() -> bool, mut give_up: impl FnMut() -> bool) -> bool {
    let mut i = 0u32;
    loop {
        if ready() {
            return true;
        }
        if give_up() {
            return false;
        }
        match i {
            0..=63 => std::hint::spin_loop(),
            64..=1023 => std::thread::yield_now(),
            _ => std::thread::sleep(std::time::Duration::from_micros(50)),
        }
        i = i.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heartbeat's rates of a pass that ended stop at its end; they
    /// fell for as long as the other targets ran on.
    #[test]
    fn a_finished_pass_keeps_its_time() {
        let t = TargetProgress::default();
        assert_eq!(t.pass_elapsed_s(5_000_000_000), 0.0, "not started");
        t.begin_pass(1, 1_000_000_000);
        assert_eq!(t.pass_elapsed_s(2_000_000_000), 1.0);
        t.end_pass(3_000_000_000);
        assert_eq!(t.pass_elapsed_s(10_000_000_000), 2.0);
        t.prepare_pass(2);
        assert_eq!(t.pass_elapsed_s(10_000_000_000), 0.0, "waiting for pass 2");
    }

    #[test]
    fn measures_compare_with_progress() {
        let t = TargetProgress::default();
        t.planned_ops.store(10, Relaxed);
        t.begin_pass(1, 1_000);
        for _ in 0..5 {
            t.add(1 << 20);
        }
        assert!(t.reached(Measure::Op(5), 0));
        assert!(!t.reached(Measure::Op(6), 0));
        assert!(t.reached(Measure::Percent(50.0), 0));
        assert!(t.reached(Measure::Mbytes(5), 0));
        assert!(!t.reached(Measure::Kbytes(5121), 0));
        assert!(t.reached(Measure::Time(1.0), 1_000_001_000));
        t.begin_pass(2, 5);
        assert_eq!(t.earlier_ops.load(Relaxed), 5);
    }

    #[test]
    fn wait_gives_up() {
        assert!(!wait_until(|| false, || true));
        let mut n = 0;
        assert!(wait_until(
            || {
                n += 1;
                n > 2000
            },
            || false
        ));
    }
}
