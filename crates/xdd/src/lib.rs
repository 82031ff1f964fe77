//! The XDD data I/O benchmark engine: XDD 7.0's command line, passes,
//! targets and QThreads, measured without printing anything.
//!
//! ```
//! use iolab_xdd::parse::{parse, Parsed};
//! let args: Vec<String> = "-op read -target null -reqsize 8 -numreqs 16"
//!     .split(' ').map(String::from).collect();
//! let Parsed::Run(cfg) = parse(&args).unwrap() else { panic!() };
//! assert_eq!(cfg.targets[0].xfer_bytes(), 8192);
//! ```

pub mod config;
pub mod cursor;
pub mod error;
mod handlers;
pub mod options;
pub mod parse;
pub mod tokens;
pub mod validate;
pub mod values;

// Data-path modules (branch xdd-io): keep these lines together.
pub mod datapat;
pub mod seek;
pub mod throttle;
pub mod timestamp;
pub mod unique;
pub mod uring;

pub mod blkid;
pub mod buffer;
pub mod e2e;
mod fault;
pub mod figures;
pub mod gate;
pub mod iopath;
pub mod outputs;
pub mod paths;
pub mod placement;
pub mod plan;
pub mod progress;
pub mod qstate;
pub mod qthread;
pub mod restart;
pub mod results;
pub mod run;
pub mod runstate;
pub mod safety;
pub mod target;
pub mod uring_pass;
