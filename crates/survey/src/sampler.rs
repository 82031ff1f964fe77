//! Instantaneous rates per target, as the kit's `[min, max]` bracket
//! reports them. Workers add what they move (bytes or operations) to
//! their target's counter; one sampler thread reads every counter each
//! interval (the kit's `lctl ... -1`: one second by default). A target's
//! sample for an interval is its counter's growth divided by the
//! interval's length, while the target is busy; its last sample runs from
//! the last reading to its last worker's end and is divided by that time
//! (not by a whole interval, which would show a falsely low rate). A
//! target's samples therefore cover its whole run, start to end, with no
//! gap and no overlap, and its whole-run rate (what the survey line's
//! aggregate is for one target) is their time-weighted mean: it always
//! lies within the bracket. A run shorter than one interval has one
//! sample, its whole-run rate. The bracket is the least and the greatest
//! of all targets' samples.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The counters the workers of one test bump.
pub struct Counters {
    start: OnceLock<Instant>,
    amount: Vec<AtomicU64>,
    busy: Vec<AtomicUsize>,
    /// Nanoseconds after `start` at which the target's last worker ended,
    /// plus one (0: still busy).
    finished_ns: Vec<AtomicU64>,
}

impl Counters {
    /// Counters for `workers.len()` targets with that many workers each;
    /// the clock starts at [`Counters::begin`] (or at the first reading).
    pub fn new(workers: &[usize]) -> Self {
        Self {
            start: OnceLock::new(),
            amount: workers.iter().map(|_| AtomicU64::new(0)).collect(),
            busy: workers.iter().map(|&w| AtomicUsize::new(w)).collect(),
            finished_ns: workers.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Starts the clock (as the workers are released), once.
    pub fn begin(&self) {
        let _ = self.start.set(Instant::now());
    }

    /// The instant the test started.
    pub fn start(&self) -> Instant {
        *self.start.get_or_init(Instant::now)
    }

    /// Adds `n` to target `t`.
    pub fn add(&self, t: usize, n: u64) {
        self.amount[t].fetch_add(n, Ordering::Relaxed);
    }

    /// One worker of target `t` ended (well or not).
    pub fn worker_done(&self, t: usize) {
        if self.busy[t].fetch_sub(1, Ordering::AcqRel) == 1 {
            let ns = self.start().elapsed().as_nanos() as u64 + 1;
            self.finished_ns[t].store(ns, Ordering::Release);
        }
    }

    /// What target `t` has moved so far.
    pub fn amount(&self, t: usize) -> u64 {
        self.amount[t].load(Ordering::Relaxed)
    }

    /// Seconds from the start to target `t`'s end (None while busy).
    pub fn finished_s(&self, t: usize) -> Option<f64> {
        match self.finished_ns[t].load(Ordering::Acquire) {
            0 => None,
            ns => Some((ns - 1) as f64 / 1e9),
        }
    }

    fn targets(&self) -> usize {
        self.amount.len()
    }
}

/// Samples `c` every `interval` until `done` is set; returns each target's
/// samples in units per second.
pub fn sample(c: &Counters, interval: Duration, done: &AtomicBool) -> Vec<Vec<f64>> {
    let n = c.targets();
    let mut samples = vec![Vec::new(); n];
    // Each target's last two readings: (seconds after the start, amount).
    let mut last = vec![(0.0f64, 0u64); n];
    let mut before_last = vec![(0.0f64, 0u64); n];
    let step = Duration::from_millis(5).min(interval);
    let mut tick = c.start();
    loop {
        // Ticks fall on start + k * interval, however late a sleep wakes.
        tick += interval;
        while Instant::now() < tick && !done.load(Ordering::Acquire) {
            std::thread::sleep(step.min(tick.saturating_duration_since(Instant::now())));
        }
        if done.load(Ordering::Acquire) {
            break;
        }
        let now_s = c.start().elapsed().as_secs_f64();
        for (t, s) in samples.iter_mut().enumerate() {
            let a = c.amount(t);
            // Read after the amount: a target still busy now was busy
            // when its amount was read.
            if c.finished_s(t).is_none() && now_s > last[t].0 {
                s.push((a - last[t].1) as f64 / (now_s - last[t].0));
                before_last[t] = last[t];
                last[t] = (now_s, a);
            }
        }
    }
    // Every worker has ended: each target's last stretch, from its last
    // reading to its end. One shorter than half an interval joins the
    // sample before it (a record landing in a few microseconds would
    // otherwise read as an absurd rate); the samples still cover the run.
    let half = interval.as_secs_f64() / 2.0;
    for (t, s) in samples.iter_mut().enumerate() {
        let end_s = c
            .finished_s(t)
            .unwrap_or_else(|| c.start().elapsed().as_secs_f64());
        let from = if end_s - last[t].0 < half && s.pop().is_some() {
            before_last[t]
        } else {
            last[t]
        };
        if end_s > from.0 {
            s.push((c.amount(t) - from.1) as f64 / (end_s - from.0));
        }
    }
    samples
}

/// Least and greatest instantaneous rate over all targets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bracket {
    /// The least rate seen on any one target (units per second).
    pub min: f64,
    /// The greatest.
    pub max: f64,
}

/// One target's figures for one test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRates {
    /// What the target moved (bytes or operations).
    pub amount: u64,
    /// Seconds from the start to its last worker's end.
    pub elapsed_s: f64,
    /// Per-interval rates while it was busy for a whole interval.
    pub samples: Vec<f64>,
}

impl TargetRates {
    /// Its whole-run rate (0 when it has no elapsed time).
    pub fn overall(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.amount as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

/// Records that `what` panicked as the error of each target in
/// `errors` (keeping an earlier error), so a panic ends the test as an
/// error instead of vanishing into empty samples.
pub fn note_panic(errors: &[std::sync::Mutex<Option<String>>], what: &str) {
    for e in errors {
        let mut slot = e.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert_with(|| format!("{what} panicked"));
    }
}

/// Gathers the per-target figures once every worker has ended.
pub fn per_target(c: &Counters, samples: Vec<Vec<f64>>) -> Vec<TargetRates> {
    let end = c.start().elapsed().as_secs_f64();
    samples
        .into_iter()
        .enumerate()
        .map(|(t, s)| TargetRates {
            amount: c.amount(t),
            elapsed_s: c.finished_s(t).unwrap_or(end),
            samples: s,
        })
        .collect()
}

/// The bracket over `targets`: every sample, and the whole-run rate of
/// targets that have none (results from an agent that sent no samples).
/// None when there is nothing to go on (no target moved anything).
pub fn bracket(targets: &[TargetRates]) -> Option<Bracket> {
    let mut all = Vec::new();
    for t in targets {
        if t.samples.is_empty() {
            if t.amount > 0 {
                all.push(t.overall());
            }
        } else {
            all.extend_from_slice(&t.samples);
        }
    }
    let min = all.iter().copied().reduce(f64::min)?;
    let max = all.iter().copied().reduce(f64::max)?;
    Some(Bracket { min, max })
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_panic_is_every_targets_error_and_keeps_an_earlier_one() {
        let errors = vec![
            std::sync::Mutex::new(None),
            std::sync::Mutex::new(Some("ENOSPC".to_string())),
        ];
        note_panic(&errors, "the sampler thread");
        let got: Vec<Option<String>> = errors
            .into_iter()
            .map(|m| m.into_inner().unwrap())
            .collect();
        assert_eq!(
            got,
            [
                Some("the sampler thread panicked".into()),
                Some("ENOSPC".into())
            ]
        );
    }

    use super::*;

    #[test]
    fn a_short_run_falls_back_to_whole_run_rates() {
        let t = vec![
            TargetRates {
                amount: 100,
                elapsed_s: 1.0,
                samples: vec![],
            },
            TargetRates {
                amount: 100,
                elapsed_s: 4.0,
                samples: vec![],
            },
        ];
        assert_eq!(
            bracket(&t),
            Some(Bracket {
                min: 25.0,
                max: 100.0
            })
        );
    }

    #[test]
    fn samples_win_over_the_whole_run_rate() {
        let t = vec![TargetRates {
            amount: 100,
            elapsed_s: 1.0,
            samples: vec![30.0, 70.0],
        }];
        assert_eq!(
            bracket(&t),
            Some(Bracket {
                min: 30.0,
                max: 70.0
            })
        );
        assert_eq!(bracket(&[]), None);
    }

    #[test]
    fn a_targets_whole_run_rate_lies_within_its_samples() {
        let c = Counters::new(&[1]);
        let done = AtomicBool::new(false);
        c.begin();
        let out = std::thread::scope(|s| {
            let h = s.spawn(|| sample(&c, Duration::from_millis(20), &done));
            // Fast, then slow, then a stall at the end.
            for i in 0..12u64 {
                c.add(0, if i < 6 { 1000 } else { 10 });
                std::thread::sleep(Duration::from_millis(7));
            }
            std::thread::sleep(Duration::from_millis(30));
            c.worker_done(0);
            done.store(true, Ordering::Release);
            h.join().unwrap()
        });
        let rates = per_target(&c, out);
        let b = bracket(&rates).unwrap();
        let whole = rates[0].overall();
        assert!(b.min <= whole && whole <= b.max, "{b:?} {whole} {rates:?}");
    }

    #[test]
    fn a_finished_target_is_not_sampled() {
        let c = Counters::new(&[1, 1]);
        let done = AtomicBool::new(false);
        c.add(0, 10);
        c.worker_done(0);
        c.begin();
        let out = std::thread::scope(|s| {
            let h = s.spawn(|| sample(&c, Duration::from_millis(20), &done));
            for _ in 0..10 {
                c.add(1, 5);
                std::thread::sleep(Duration::from_millis(10));
            }
            c.worker_done(1);
            done.store(true, Ordering::Release);
            h.join().unwrap()
        });
        // No interval sample for the finished target: one, its whole run.
        assert_eq!(out[0].len(), 1, "{out:?}");
        assert!(out[1].len() >= 2, "{out:?}");
    }
}
