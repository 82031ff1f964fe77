//! Core types shared by every iolab engine: size parsing, clocks,
//! mergeable statistics (Welford summaries and a latency histogram),
//! environment facts, the outcome of a run, cancellation tokens and the
//! stop flag used for Ctrl-C.
//!
//! ```
//! use iolab_core::{units::parse_size, stats::Histogram};
//! assert_eq!(parse_size("4k").unwrap(), 4096);
//! let mut h = Histogram::new();
//! h.record(1_000);
//! h.record(3_000);
//! assert_eq!(h.count(), 2);
//! assert!(h.percentile(1.0) >= 2_970);
//! ```

pub mod buffer;
pub mod cancel;
pub mod clock;
pub mod env;
pub mod input;
pub mod live;
pub mod outcome;
pub mod ports;
pub mod random;
pub mod stats;
pub mod stop;
pub mod text;
pub mod threads;
pub mod tmp;
pub mod trust;
pub mod unique;
pub mod units;

pub use cancel::CancelToken;
pub use outcome::{Failure, FailureKind, Outcome};
pub use stats::{Histogram, Percentiles, Summary};

/// `eprintln!` that never panics: a standard error that cannot be
/// written (`2>/dev/full`, a closed pipe) loses the message, not the
/// run (`eprintln!` panics there, and the run would end with 101 instead
/// of its own status). Every message iolab writes to standard error goes
/// through here.
///
/// ```
/// iolab_core::say!("iolab: note: {} files kept", 2);
/// ```
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that never panics, as [`say!`] (no newline added).
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}
