//! The XDD data I/O benchmark engine.

// Data-path modules (branch xdd-io): keep these lines together.
pub mod datapat;
pub mod seek;
pub mod throttle;
pub mod timestamp;
pub mod uring;
