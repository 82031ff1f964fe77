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
//!
//! The folders are the stages a run goes through: [`parse`] (command line
//! to validated configuration), [`plan`] (what each target does), [`run`]
//! (QThreads and I/O paths), [`e2e`] (end-to-end copies, one more I/O
//! path) and [`record`] (results, output files, restart records).

pub mod error;

pub mod parse;
pub mod plan;
pub mod run;

pub mod e2e;
pub mod record;

// The paths these modules had before the stage folders, kept for the
// crates that name them (cli, report). Code in this crate names the stage
// paths.
pub use parse::{config, options, tokens, validate, values};
pub use plan::seek;
pub use record::{figures, outputs, results, timestamp};
pub use run::progress;
