//! Which endpoint a request goes to: warp's default rule, the host with
//! the fewest requests in flight, and among those the one whose last
//! request ended longest ago. A faster host frees its requests sooner,
//! so it gets more of them. With one host there is nothing to choose
//! and no lock is taken.

use std::sync::Mutex;

/// The endpoints' load, shared by a process's workers.
#[derive(Debug)]
pub struct Hosts {
    n: usize,
    load: Mutex<Vec<Load>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Load {
    in_flight: u32,
    /// When its last request ended (monotonic ns); 0 before any.
    last_done_ns: u64,
}

impl Hosts {
    /// `n` endpoints, none busy.
    pub fn new(n: usize) -> Self {
        Hosts {
            n,
            load: Mutex::new(vec![Load::default(); n]),
        }
    }

    /// Picks the endpoint of the next request and counts it in flight;
    /// [`Hosts::done`] must follow.
    pub fn pick(&self) -> usize {
        if self.n <= 1 {
            return 0;
        }
        let mut load = self.load.lock().unwrap_or_else(|p| p.into_inner());
        let best = (0..load.len())
            .min_by_key(|&i| (load[i].in_flight, load[i].last_done_ns))
            .unwrap_or(0);
        load[best].in_flight += 1;
        best
    }

    /// The request sent to `host` ended at `now_ns`.
    pub fn done(&self, host: usize, now_ns: u64) {
        if self.n <= 1 {
            return;
        }
        let mut load = self.load.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = load.get_mut(host) {
            l.in_flight = l.in_flight.saturating_sub(1);
            l.last_done_ns = now_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_busy_host_and_then_the_longest_idle() {
        let h = Hosts::new(3);
        let (a, b, c) = (h.pick(), h.pick(), h.pick());
        assert_eq!((a, b, c), (0, 1, 2));
        h.done(1, 10);
        assert_eq!(h.pick(), 1, "the only idle host");
        h.done(0, 20);
        h.done(2, 15);
        h.done(1, 30);
        // All idle: 2 ended longest ago.
        assert_eq!(h.pick(), 2);
        assert_eq!(h.pick(), 0);
        assert_eq!(Hosts::new(1).pick(), 0);
    }
}
