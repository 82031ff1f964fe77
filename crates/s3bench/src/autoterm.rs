//! `--autoterm`, as warp decides it: the timed phase so far is cut into
//! 25 equal slices; the run is steady when the rate of each of the last
//! 7 lies within `--autoterm.pct` percent of their mean and those 7
//! slices last at least `--autoterm.dur`. The rate is bytes a second for
//! benchmarks that move data, requests a second otherwise. A drift wider
//! than the percentage never ends the run, by design.

use crate::config::AutoTerm;

/// Slices of the phase so far.
pub const SLICES: usize = 25;
/// The last slices that must agree.
pub const STEADY: usize = 7;

/// A running total sampled over time: (ns into the timed phase, total).
#[derive(Debug, Default, Clone)]
pub struct Series {
    points: Vec<(u64, u64)>,
}

impl Series {
    /// A series starting at 0 at time 0.
    pub fn new() -> Self {
        Series {
            points: vec![(0, 0)],
        }
    }

    /// Adds a sample (times rising).
    pub fn push(&mut self, at_ns: u64, total: u64) {
        if self.points.last().is_none_or(|(t, _)| at_ns > *t) {
            self.points.push((at_ns, total));
        }
    }

    /// The total at `t_ns`, read linearly between samples.
    fn at(&self, t_ns: u64) -> f64 {
        let i = self.points.partition_point(|(t, _)| *t <= t_ns);
        match (i.checked_sub(1).map(|k| self.points[k]), self.points.get(i)) {
            (Some((t0, v0)), Some(&(t1, v1))) => {
                v0 as f64 + (v1 as f64 - v0 as f64) * (t_ns - t0) as f64 / (t1 - t0) as f64
            }
            (Some((_, v)), None) => v as f64,
            _ => 0.0,
        }
    }

    /// When the run is steady by `rule`: how long it has been (seconds).
    pub fn steady(&self, rule: &AutoTerm) -> Option<f64> {
        let &(end, _) = self.points.last()?;
        let slice_ns = end / SLICES as u64;
        let window_s = (slice_ns * STEADY as u64) as f64 / 1e9;
        if slice_ns == 0 || window_s < rule.min_stable_s {
            return None;
        }
        let rates: Vec<f64> = (SLICES - STEADY..SLICES)
            .map(|k| {
                let (a, b) = (k as u64 * slice_ns, (k as u64 + 1) * slice_ns);
                self.at(b) - self.at(a)
            })
            .collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let tolerance = mean * rule.pct / 100.0;
        (mean > 0.0 && rates.iter().all(|r| (r - mean).abs() <= tolerance)).then_some(window_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: AutoTerm = AutoTerm {
        min_stable_s: 2.0,
        pct: 7.5,
    };

    #[test]
    fn a_steady_rate_ends_once_long_enough() {
        let mut s = Series::new();
        // 100 a second, sampled every 0.1 s.
        for i in 1..=50u64 {
            s.push(i * 100_000_000, i * 10);
        }
        // 5 s: the last 7 slices are 1.4 s, under 2 s.
        assert_eq!(s.steady(&RULE), None);
        for i in 51..=80u64 {
            s.push(i * 100_000_000, i * 10);
        }
        let w = s.steady(&RULE).unwrap();
        assert!((w - 2.24).abs() < 0.01, "{w}");
    }

    #[test]
    fn a_drift_or_a_stall_does_not() {
        let mut s = Series::new();
        let mut total = 0;
        for i in 1..=200u64 {
            // Speeding up by 1 % a tenth of a second.
            total += 10 + i / 10;
            s.push(i * 100_000_000, total);
        }
        assert_eq!(s.steady(&RULE), None);
        let mut stalled = Series::new();
        for i in 1..=200u64 {
            stalled.push(i * 100_000_000, 10);
        }
        assert_eq!(stalled.steady(&RULE), None);
    }
}
