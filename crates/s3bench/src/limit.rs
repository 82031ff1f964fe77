//! `--rps-limit`: a token bucket of `burst` requests refilled at `rate`
//! a second (warp's limiter: the burst is the concurrency), kept as one
//! atomic time (the generic cell rate algorithm): each request takes
//! the next free slot and waits for it, so the workers share the rate
//! without a lock. Over `t` seconds at most `rate t + burst` requests
//! start.

use std::sync::atomic::{AtomicU64, Ordering};

/// A shared rate limit.
#[derive(Debug)]
pub struct Limiter {
    interval_ns: u64,
    /// How far before now a slot may lie: the burst.
    tolerance_ns: u64,
    /// The next free slot (monotonic ns).
    next_ns: AtomicU64,
}

impl Limiter {
    /// `rate` requests a second, `burst` at once at most.
    pub fn new(rate: f64, burst: u32) -> Self {
        let interval_ns = (1e9 / rate).max(1.0) as u64;
        Limiter {
            interval_ns,
            tolerance_ns: interval_ns * u64::from(burst.max(1) - 1),
            next_ns: AtomicU64::new(0),
        }
    }

    /// Takes the next slot at or after `now_ns`; returns when it comes
    /// (monotonic ns). The caller waits until then.
    pub fn reserve(&self, now_ns: u64) -> u64 {
        let earliest = now_ns.saturating_sub(self.tolerance_ns);
        let mut cur = self.next_ns.load(Ordering::Relaxed);
        loop {
            let slot = cur.max(earliest);
            match self.next_ns.compare_exchange_weak(
                cur,
                slot + self.interval_ns,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return slot.max(now_ns),
                Err(seen) => cur = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holds_the_rate_and_the_burst() {
        let l = Limiter::new(100.0, 4);
        let start = 5_000_000_000;
        // Asked as fast as possible from `start`: the slots before
        // start + 1 s are the rate plus the burst.
        let slots: Vec<u64> = (0..200).map(|_| l.reserve(start)).collect();
        let in_first_second = slots.iter().filter(|&&s| s < start + 1_000_000_000).count();
        assert_eq!(in_first_second, 100 + 4 - 1);
        assert!(slots.windows(2).all(|w| w[0] <= w[1]));
        // After an idle spell the burst is back, no more.
        let later = start + 10_000_000_000;
        let burst = (0..10).filter(|_| l.reserve(later) == later).count();
        assert_eq!(burst, 4);
    }
}
