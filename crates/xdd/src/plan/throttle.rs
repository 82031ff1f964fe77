//! `-throttle ops N | bw N | var N`: a smooth pacer.
//!
//! Request `k` of a target (its target-wide index) is due at a fixed time
//! after the pass start, [`Schedule::due_ns`]; a QThread about to issue
//! request `k` sleeps until then ([`Pacer::wait_for_slot`]). Requests are
//! therefore spread evenly over time, never issued as a burst followed by a
//! pause. Every QThread of a target holds a clone of the same [`Pacer`]
//! (same schedule, same start), so each one paces its own share of the
//! requests and together they hold the target's rate whatever the split.
//!
//! Like XDD, the rate is an average from the pass start: a QThread that fell
//! behind (a slow device) issues its late requests at once until it is back
//! on schedule, and never runs ahead of it.
//!
//! ```
//! use iolab_xdd::plan::throttle::{Schedule, ThrottleSpec};
//! let s = Schedule::new(ThrottleSpec::Ops(1000.0), 4096).unwrap();
//! assert_eq!(s.due_ns(0), 0);
//! assert_eq!(s.due_ns(250), 250_000_000); // 1 ms apart
//! let bw = Schedule::new(ThrottleSpec::BandwidthMb(100.0), 1_000_000).unwrap();
//! assert_eq!(bw.due_ns(3), 30_000_000); // 1 MB per 10 ms = 100 MB/s (10^6)
//! ```
//!
//! # Units and `var`
//! `ops` is operations per second; `bw` is megabytes per second with
//! 1 MB = 10^6 bytes, as XDD reports bandwidth. `var P` adds a deterministic
//! jitter to each request's due time: uniform in `±P/2` percent of the
//! interval around its nominal slot (P is clamped to 0..=100, so due times
//! never go backwards and the long-run rate is exact). It models bursty
//! arrivals without changing the average; it needs `ops` or `bw` as well.

use iolab_core::clock::mono_ns;

/// The rate part of `-throttle`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleSpec {
    /// Operations per second.
    Ops(f64),
    /// Megabytes (10^6 bytes) per second.
    BandwidthMb(f64),
}

/// Why a throttle cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ThrottleError {
    /// Rates must be positive and finite (the guide: "greater than 0.000").
    #[error("-throttle value {0} must be a positive number greater than 0.000")]
    NotPositive(f64),
    /// `bw` needs to know how many bytes a request moves.
    #[error("-throttle bw needs a request size of at least one byte")]
    ZeroRequest,
}

/// The pure schedule: when request `k` is due, relative to the pass start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    interval_ns: f64,
    /// `var` as a fraction of the interval (0.0..=1.0).
    jitter: f64,
    seed: u64,
}

impl Schedule {
    /// A schedule for requests of `request_bytes` each.
    pub fn new(spec: ThrottleSpec, request_bytes: u64) -> Result<Self, ThrottleError> {
        let interval_ns = match spec {
            ThrottleSpec::Ops(ops) => 1e9 / positive(ops)?,
            ThrottleSpec::BandwidthMb(mb) => {
                if request_bytes == 0 {
                    return Err(ThrottleError::ZeroRequest);
                }
                request_bytes as f64 * 1e9 / (positive(mb)? * 1e6)
            }
        };
        Ok(Self {
            interval_ns,
            jitter: 0.0,
            seed: 0,
        })
    }

    /// Adds `-throttle var percent` jitter (see the module doc).
    pub fn with_variance(mut self, percent: f64, seed: u64) -> Self {
        self.jitter = if percent.is_finite() {
            percent.clamp(0.0, 100.0) / 100.0
        } else {
            0.0
        };
        self.seed = seed;
        self
    }

    /// Nominal nanoseconds between requests.
    pub fn interval_ns(&self) -> f64 {
        self.interval_ns
    }

    /// When request `k` (target-wide index) is due, in ns after the pass
    /// start. Pure, so tests check the schedule rather than the clock.
    #[inline]
    pub fn due_ns(&self, k: u64) -> u64 {
        let nominal = k as f64 * self.interval_ns;
        if self.jitter == 0.0 || k == 0 {
            return nominal.round() as u64;
        }
        // Uniform in [-0.5, 0.5) from the request index alone.
        let u = (iolab_core::random::splitmix_nth(self.seed, k) >> 11) as f64 / (1u64 << 53) as f64
            - 0.5;
        (nominal + u * self.jitter * self.interval_ns)
            .max(0.0)
            .round() as u64
    }
}

fn positive(x: f64) -> Result<f64, ThrottleError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(ThrottleError::NotPositive(x))
    }
}

/// A per-QThread pacer; clone one per QThread of a target after
/// [`Pacer::start`] so all share the same start time.
#[derive(Debug, Clone)]
pub struct Pacer {
    schedule: Schedule,
    start_ns: u64,
    /// Total time this QThread slept waiting for its slots.
    pub waited_ns: u64,
    /// Requests that were already late when asked for.
    pub late_requests: u64,
}

impl Pacer {
    /// A pacer whose pass starts now (monotonic clock).
    pub fn start(schedule: Schedule) -> Self {
        Self::start_at(schedule, mono_ns())
    }

    /// A pacer whose pass started at `start_ns` (monotonic clock), for
    /// passes whose start is decided by a barrier elsewhere.
    pub fn start_at(schedule: Schedule, start_ns: u64) -> Self {
        Self {
            schedule,
            start_ns,
            waited_ns: 0,
            late_requests: 0,
        }
    }

    /// Absolute monotonic time request `k` is due.
    pub fn due_at_ns(&self, k: u64) -> u64 {
        self.start_ns.saturating_add(self.schedule.due_ns(k))
    }

    /// Sleeps until request `req_index` is due; returns at once when it is
    /// already late. No allocation, no lock.
    pub fn wait_for_slot(&mut self, req_index: u64) {
        self.wait_for_slot_unless(req_index, || false);
    }

    /// As [`Pacer::wait_for_slot`], but a long wait (a slow rate) is cut
    /// into steps of at most [`STOP_POLL_NS`] and given up, returning
    /// false, once `stopping()` holds: Ctrl-C must not wait for a slot
    /// minutes away. The last step sleeps to the exact due time.
    pub fn wait_for_slot_unless(&mut self, req_index: u64, stopping: impl Fn() -> bool) -> bool {
        self.wait_until_unless(self.due_at_ns(req_index), stopping)
    }

    /// Where a throttled pass ends once it has run out of requests or of
    /// time: at the slot of the next request it would have issued
    /// (`next_index`), or at `deadline_ns` if that comes first. A pass of
    /// N requests thus spans N whole intervals, so its reported rate is
    /// the rate asked for (N requests at 4 MB/s take N x interval, not
    /// N - 1 intervals plus one request).
    pub fn pass_end_ns(&self, next_index: u64, deadline_ns: u64) -> u64 {
        self.due_at_ns(next_index).min(deadline_ns)
    }

    /// Sleeps until the absolute monotonic time `due` (see
    /// [`Pacer::wait_for_slot_unless`] for `stopping`).
    pub fn wait_until_unless(&mut self, due: u64, stopping: impl Fn() -> bool) -> bool {
        let now = mono_ns();
        if now >= due {
            self.late_requests += u64::from(now > due);
            return true;
        }
        loop {
            let t = mono_ns();
            if t >= due {
                break;
            }
            if stopping() {
                self.waited_ns += t - now;
                return false;
            }
            sleep_until(due.min(t + STOP_POLL_NS));
        }
        self.waited_ns += due - now;
        true
    }
}

/// Longest sleep between two looks at the stop condition, ns.
pub const STOP_POLL_NS: u64 = 10_000_000;

/// Sleeps on the monotonic clock until `deadline_ns`, with an absolute
/// deadline so that repeated sleeps do not accumulate drift.
fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may
        // be null with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_schedule_is_evenly_spaced() {
        let s = Schedule::new(ThrottleSpec::Ops(7.8), 1).unwrap();
        let gap = 1e9 / 7.8;
        for k in [0u64, 1, 2, 78, 1_000_000] {
            assert_eq!(s.due_ns(k), (k as f64 * gap).round() as u64);
        }
        // No burst: consecutive requests are one interval apart.
        assert!((1..1000).all(|k| s.due_ns(k) - s.due_ns(k - 1) >= gap as u64));
    }

    #[test]
    fn bandwidth_uses_decimal_megabytes() {
        // 87.2 MB/s with 8 KiB requests.
        let s = Schedule::new(ThrottleSpec::BandwidthMb(87.2), 8192).unwrap();
        let k = 10_000u64;
        let bytes_per_s = (k * 8192) as f64 / (s.due_ns(k) as f64 / 1e9);
        assert!((bytes_per_s - 87.2e6).abs() < 1.0, "{bytes_per_s}");
    }

    #[test]
    fn qthreads_sharing_a_schedule_hold_the_target_rate() {
        // 4 QThreads taking i % 4 == q: each one's requests are 4 intervals
        // apart, and the union is the target's schedule.
        let s = Schedule::new(ThrottleSpec::Ops(1000.0), 4096).unwrap();
        for q in 0..4u64 {
            let mine: Vec<u64> = crate::plan::seek::qthread_requests(40, q, 4)
                .map(|k| s.due_ns(k))
                .collect();
            assert!(mine.windows(2).all(|w| w[1] - w[0] == 4_000_000));
        }
        assert_eq!(s.due_ns(39), 39_000_000);
    }

    #[test]
    fn variance_jitters_but_keeps_order_and_rate() {
        let s = Schedule::new(ThrottleSpec::Ops(100.0), 1)
            .unwrap()
            .with_variance(100.0, 9);
        let dues: Vec<u64> = (0..10_000).map(|k| s.due_ns(k)).collect();
        assert!(dues.windows(2).all(|w| w[1] >= w[0]), "monotone");
        let off_slot = (1..10_000)
            .filter(|&k| dues[k as usize] != k * 10_000_000)
            .count();
        assert!(off_slot > 9000);
        assert!((1..10_000).all(|k| dues[k as usize].abs_diff(k * 10_000_000) <= 5_000_000));
        // Deterministic.
        let again = Schedule::new(ThrottleSpec::Ops(100.0), 1)
            .unwrap()
            .with_variance(100.0, 9);
        assert_eq!(again.due_ns(1234), s.due_ns(1234));
    }

    #[test]
    fn rejects_bad_values() {
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Schedule::new(ThrottleSpec::Ops(v), 1).is_err());
        }
        assert_eq!(
            Schedule::new(ThrottleSpec::BandwidthMb(1.0), 0),
            Err(ThrottleError::ZeroRequest)
        );
    }

    #[test]
    fn pacer_due_times_and_late_requests() {
        let s = Schedule::new(ThrottleSpec::Ops(1e6), 1).unwrap();
        // A pass that started long ago: every slot is late, nothing sleeps.
        let mut p = Pacer::start_at(s, 0);
        assert_eq!(p.due_at_ns(5), 5_000);
        for k in 0..10 {
            p.wait_for_slot(k);
        }
        assert_eq!((p.waited_ns, p.late_requests), (0, 10));
        // A slot in the near future is waited for (how long is not asserted).
        let mut q = Pacer::start(s);
        q.wait_for_slot(2);
        assert!(mono_ns() >= q.due_at_ns(2));
    }
}
