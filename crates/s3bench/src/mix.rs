//! Mixed's order of operations: the weights are rounded to a cycle of
//! [`CYCLE`] slots, as warp rounds them, and the slots are dealt by
//! smooth weighted round-robin, so every prefix of the cycle holds each
//! op within one of its share (a PUT is never far behind a DELETE, and a
//! worker's pool does not run dry). Each worker starts at its own place
//! in the cycle, so the workers do not all send the same op at once.

use crate::config::{Distrib, Op};

/// Slots in a cycle.
pub const CYCLE: usize = 1000;

/// One cycle of ops, shared by the workers.
#[derive(Debug, Clone)]
pub struct Mix {
    slots: Vec<Op>,
}

impl Mix {
    /// The cycle of `d` (at least one weight above 0).
    pub fn new(d: &Distrib) -> Self {
        let w = d.weights();
        let total: f64 = w.iter().map(|(_, v)| v).sum();
        let counts: Vec<(Op, i64)> = w
            .iter()
            .map(|(op, v)| (*op, (v / total * CYCLE as f64).round() as i64))
            .filter(|(_, n)| *n > 0)
            .collect();
        let sum: i64 = counts.iter().map(|(_, n)| n).sum();
        let mut current = vec![0i64; counts.len()];
        let mut slots = Vec::with_capacity(sum as usize);
        for _ in 0..sum {
            for (c, (_, n)) in current.iter_mut().zip(&counts) {
                *c += n;
            }
            let best = (0..counts.len()).max_by_key(|&i| (current[i], -(i as i64)));
            let Some(best) = best else { break };
            current[best] -= sum;
            slots.push(counts[best].0);
        }
        Mix { slots }
    }

    /// Length of the cycle.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True for an empty cycle (no weight above 0).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The op at step `n` of worker `w` of `workers`.
    #[inline]
    pub fn at(&self, w: usize, workers: usize, n: u64) -> Op {
        let len = self.slots.len().max(1);
        let start = w * len / workers.max(1);
        self.slots[(start + (n % len as u64) as usize) % len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_keeps_the_shares() {
        let d = Distrib {
            get: 40.0,
            stat: 25.0,
            put: 15.0,
            delete: 10.0,
            list: 10.0,
        };
        let m = Mix::new(&d);
        assert_eq!(m.len(), CYCLE);
        let mut counts = std::collections::HashMap::new();
        for n in 0..CYCLE as u64 {
            *counts.entry(m.at(0, 1, n)).or_insert(0i64) += 1;
            let done = n as f64 + 1.0;
            for (op, w) in d.weights() {
                let got = *counts.get(&op).unwrap_or(&0) as f64;
                assert!((got - done * w / 100.0).abs() <= 1.0, "{op:?} at {n}");
            }
            // A DELETE never runs ahead of the PUTs by more than one.
            let puts = *counts.get(&Op::Put).unwrap_or(&0);
            assert!(*counts.get(&Op::Delete).unwrap_or(&0) <= puts + 1);
        }
        assert_eq!(counts[&Op::Get], 400);
        assert_eq!(counts[&Op::List], 100);
    }

    #[test]
    fn workers_start_apart_and_zero_weights_never_run() {
        let d = Distrib {
            get: 1.0,
            stat: 0.0,
            put: 1.0,
            delete: 0.0,
            list: 0.0,
        };
        let m = Mix::new(&d);
        assert!((0..CYCLE as u64).all(|n| matches!(m.at(1, 2, n), Op::Get | Op::Put)));
        assert_ne!(m.at(0, 2, 0), m.at(1, 2, 1));
    }
}
