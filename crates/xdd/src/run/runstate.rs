//! How the run is going, shared by every thread: the run-wide stop, the
//! failure that stopped it, and the first error seen. At the end it gives
//! the run's one [`Outcome`]; nothing here is text to be matched later.

use iolab_core::{Failure, Outcome};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// Shared run state. Workers only set flags and, once, a failure.
#[derive(Debug, Default)]
pub struct RunState {
    /// The run's token (the caller's); a default state has a token of
    /// its own, never cancelled.
    run: iolab_core::CancelToken,
    stop: AtomicBool,
    fatal: Mutex<Option<Failure>>,
    saw_error: AtomicBool,
    first_error: Mutex<Option<Failure>>,
}

impl RunState {
    /// True once the run must end: a failure, -stoponerror, Ctrl-C or
    /// SIGTERM.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed) || self.run.is_cancelled()
    }

    /// A state whose run stops when `token` is cancelled (Ctrl-C,
    /// SIGTERM: the session's token).
    pub fn with_token(token: &iolab_core::CancelToken) -> RunState {
        RunState {
            run: token.clone(),
            ..RunState::default()
        }
    }

    /// The run's token.
    pub fn token(&self) -> &iolab_core::CancelToken {
        &self.run
    }

    /// The flag behind [`RunState::stopping`] (without Ctrl-C), for waits
    /// that take a cancel flag (network reads and writes).
    pub fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }

    /// Ends the run (-stoponerror): every loop sees it soon.
    pub fn request_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// A failure the run cannot go on after (a worker died, ENOSPC, a
    /// per-pass file could not be made): keeps the first and stops.
    pub fn fail(&self, f: Failure) {
        let mut slot = self.fatal.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(f);
        self.stop.store(true, Relaxed);
    }

    /// An operation failed but the run may go on (-maxerrors allows it):
    /// remembered, once, for the outcome. `f` runs only for the first.
    pub fn error(&self, f: impl FnOnce() -> Failure) {
        if !self.saw_error.swap(true, Relaxed) {
            let mut slot = self
                .first_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *slot = Some(f());
        }
    }

    /// Runs a worker's body. Should it panic, the run fails at once, so
    /// that no other thread waits for this one (at the barrier, for an
    /// ordering turn), and None is returned instead of its result.
    pub fn guarded<R>(&self, who: impl FnOnce() -> String, body: impl FnOnce() -> R) -> Option<R> {
        // The worker's state is only read afterwards to close files and
        // report, never to go on running, so a half-updated one is fine.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(r) => Some(r),
            Err(p) => {
                let why = format!("{} panicked: {}", who(), panic_text(p.as_ref()));
                self.fail(Failure::other("worker", why));
                None
            }
        }
    }

    /// True when a fatal failure was recorded.
    pub fn failed(&self) -> bool {
        self.fatal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// How the run ended. `time_limit_s` is Some when -runtime ended it.
    /// The most serious wins (an error over an interruption over a time
    /// limit); a fatal failure is reported before a later-counted error.
    pub fn outcome(&self, time_limit_s: Option<f64>) -> Outcome {
        let take = |m: &Mutex<Option<Failure>>| {
            m.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .map(Outcome::Error)
        };
        let mut o = take(&self.fatal).unwrap_or(Outcome::Completed);
        if let Some(e) = take(&self.first_error) {
            o = o.worst(e);
        }
        if self.run.is_cancelled() {
            o = o.worst(Outcome::Interrupted);
        }
        if let Some(limit_s) = time_limit_s {
            o = o.worst(Outcome::TimeLimit { limit_s });
        }
        o
    }
}

/// The text a panic carried, when it was a string.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fatal_failure_wins_and_stops() {
        let s = RunState::default();
        assert_eq!(s.outcome(None), Outcome::Completed);
        assert_eq!(s.outcome(Some(2.0)), Outcome::TimeLimit { limit_s: 2.0 });
        s.error(|| Failure::other("read", "short"));
        assert!(!s.stopping());
        s.fail(Failure::other("worker", "panicked"));
        s.fail(Failure::other("later", "ignored"));
        assert!(s.stopping() && s.failed());
        assert_eq!(s.guarded(|| "w".into(), || 3), Some(3));
        match s.outcome(None) {
            Outcome::Error(f) => assert_eq!(f.op, "worker"),
            o => panic!("{o:?}"),
        }
    }
}
