//! A start-of-pass barrier that can be cancelled. `std::sync::Barrier`
//! waits for ever: a target that failed or panicked before reaching it
//! would leave every other target blocked, and Ctrl-C could not end the
//! run. Here a waiter wakes every few milliseconds, and leaves with
//! `Err(Cancelled)` once the caller's stop condition holds.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// How often a waiter looks at the stop condition.
const POLL: Duration = Duration::from_millis(10);

/// The wait ended because the run is stopping, not because all arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// A reusable barrier for `parties` threads that gives up on request.
#[derive(Debug)]
pub struct Gate {
    parties: usize,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct State {
    arrived: usize,
    generation: u64,
}

impl Gate {
    /// A gate that opens when `parties` threads wait at it.
    pub fn new(parties: usize) -> Self {
        Self {
            parties: parties.max(1),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// Waits until every party has arrived, or `stopping()` holds.
    /// A poisoned lock (a waiter panicked while holding it, which the
    /// code here cannot do) is treated as still usable: the state is two
    /// counters that are never left half-updated.
    pub fn wait(&self, stopping: impl Fn() -> bool) -> Result<(), Cancelled> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.parties {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
            return Ok(());
        }
        while s.generation == generation {
            if stopping() {
                // Leave the count as if this party never came, so that a
                // gate shared with threads still running stays consistent.
                s.arrived -= 1;
                return Err(Cancelled);
            }
            s = self
                .cv
                .wait_timeout(s, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

    #[test]
    fn opens_when_all_arrive_and_is_reusable() {
        let g = Gate::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..5 {
                        assert_eq!(g.wait(|| false), Ok(()));
                    }
                });
            }
        });
    }

    #[test]
    fn a_missing_party_does_not_block_once_stopped() {
        let g = Gate::new(2);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| g.wait(|| stop.load(Relaxed)));
            std::thread::sleep(Duration::from_millis(30));
            stop.store(true, Relaxed);
            assert_eq!(h.join().unwrap(), Err(Cancelled));
        });
    }
}
