//! The process-wide stop request raised by SIGINT/SIGTERM. Engines poll it
//! between operations (one relaxed atomic load), stop early and clean up.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// True once the user asked the run to stop (Ctrl-C) or an engine raised
/// it after a fatal error.
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Asks every engine loop to stop.
pub fn request() {
    STOP.store(true, Ordering::Relaxed);
}

/// Clears the request (between tests in one process).
pub fn reset() {
    STOP.store(false, Ordering::Relaxed);
}

/// The flag itself, for signal handlers that need a `&'static AtomicBool`.
pub fn flag() -> &'static AtomicBool {
    &STOP
}
