//! Steady state (fio's `ss=`, warp's autoterm): `--steady
//! METRIC:PCT:SECONDS` ends a phase once the metric's intervals over the
//! last SECONDS all lie within PCT percent of their mean.

use crate::row::Row;
use std::collections::VecDeque;
use std::str::FromStr;

/// What steady state watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Operations per second (`ops`, `iops`).
    Ops,
    /// Bytes per second (`bytes`, `bw`).
    Bytes,
    /// The interval's 99th latency percentile (`p99`).
    P99,
}

impl Metric {
    /// The metric's value in a row (`None`: the row has no latency).
    pub fn of(self, row: &Row) -> Option<f64> {
        match self {
            Metric::Ops => Some(row.ops_per_sec),
            Metric::Bytes => Some(row.bytes_per_sec),
            Metric::P99 => row.latency.map(|l| l.p99_ns as f64),
        }
    }

    /// The name `--steady` takes.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ops => "ops",
            Metric::Bytes => "bytes",
            Metric::P99 => "p99",
        }
    }
}

/// A parsed `--steady` value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steady {
    /// The metric watched.
    pub metric: Metric,
    /// How far from the mean every interval may lie, in percent.
    pub pct: f64,
    /// How long the window is, in seconds.
    pub seconds: f64,
}

/// Why a `--steady` value was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("--steady {value}: {why} (give METRIC:PCT:SECONDS, METRIC one of ops, bytes, p99, e.g. ops:5:10)")]
pub struct SteadyError {
    value: String,
    why: &'static str,
}

impl FromStr for Steady {
    type Err = SteadyError;
    fn from_str(s: &str) -> Result<Self, SteadyError> {
        let err = |why| SteadyError {
            value: s.to_string(),
            why,
        };
        let mut it = s.split(':');
        let (Some(m), Some(p), Some(sec), None) = (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(err("three fields separated by ':'"));
        };
        let metric = match m {
            "ops" | "iops" => Metric::Ops,
            "bytes" | "bw" => Metric::Bytes,
            "p99" => Metric::P99,
            _ => return Err(err("unknown metric")),
        };
        let pct: f64 = p
            .trim_end_matches('%')
            .parse()
            .map_err(|_| err("PCT is not a number"))?;
        if !(pct > 0.0 && pct <= 100.0) {
            return Err(err("PCT must be above 0 and at most 100"));
        }
        let seconds: f64 = sec
            .trim_end_matches('s')
            .parse()
            .map_err(|_| err("SECONDS is not a number"))?;
        if !(seconds > 0.0 && seconds <= 86_400.0) {
            return Err(err("SECONDS must be above 0 and at most a day"));
        }
        Ok(Steady {
            metric,
            pct,
            seconds,
        })
    }
}

/// Watches each phase's aggregate rows.
#[derive(Debug)]
pub struct Detector {
    spec: Steady,
    window: usize,
    seen: Vec<(String, VecDeque<f64>)>,
}

impl Detector {
    /// A detector for intervals of `interval_s` seconds: the window is
    /// SECONDS of whole intervals, at least two.
    pub fn new(spec: Steady, interval_s: f64) -> Self {
        let window = ((spec.seconds / interval_s).round() as usize).max(2);
        Detector {
            spec,
            window,
            seen: Vec::new(),
        }
    }

    /// Takes one aggregate row of a whole interval; true once its phase
    /// is steady.
    pub fn observe(&mut self, row: &Row) -> bool {
        let Some(v) = self.spec.metric.of(row) else {
            return false;
        };
        let at = match self.seen.iter().position(|(p, _)| *p == row.phase) {
            Some(at) => at,
            None => {
                self.seen.push((row.phase.clone(), VecDeque::new()));
                self.seen.len() - 1
            }
        };
        let q = &mut self.seen[at].1;
        q.push_back(v);
        if q.len() > self.window {
            q.pop_front();
        }
        q.len() == self.window && within(q, self.spec.pct)
    }

    /// Forgets `phase` (it ended; a later run of it starts afresh).
    pub fn forget(&mut self, phase: &str) {
        self.seen.retain(|(p, _)| p != phase);
    }
}

/// Every value within `pct` percent of the values' mean (a mean of 0,
/// a phase that did nothing, is never steady).
fn within(q: &VecDeque<f64>, pct: f64) -> bool {
    let mean = q.iter().sum::<f64>() / q.len() as f64;
    mean > 0.0 && q.iter().all(|v| (v - mean).abs() <= mean * pct / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::{row, Source};
    use crate::sample::Part;

    fn r(ops: u64) -> Row {
        let part = Part {
            ops,
            ..Part::empty("write")
        };
        row(&part, &Source::aggregate(), 1.0, 1.0, false)
    }

    #[test]
    fn parses_and_refuses() {
        let s: Steady = "iops:5:10".parse().unwrap();
        assert_eq!((s.metric, s.pct, s.seconds), (Metric::Ops, 5.0, 10.0));
        assert!("ops:5".parse::<Steady>().is_err());
        assert!("lat:5:10".parse::<Steady>().is_err());
        assert!("ops:0:10".parse::<Steady>().is_err());
        assert!("ops:5:-1".parse::<Steady>().is_err());
        let e = "ops:x:1".parse::<Steady>().unwrap_err().to_string();
        assert!(e.contains("--steady ops:x:1"), "{e}");
    }

    #[test]
    fn steady_after_a_window_within_pct() {
        let mut d = Detector::new("ops:5:3".parse().unwrap(), 1.0);
        assert!(!d.observe(&r(10)));
        assert!(!d.observe(&r(100)));
        assert!(!d.observe(&r(102)));
        assert!(d.observe(&r(98)), "100, 102, 98 lie within 5 % of 100");
        assert!(!d.observe(&r(200)));
    }

    #[test]
    fn nothing_done_is_not_steady() {
        let mut d = Detector::new("ops:5:2".parse().unwrap(), 1.0);
        assert!(!d.observe(&r(0)));
        assert!(!d.observe(&r(0)));
    }
}
