//! The runner: what every run needs, done in one place for every tool.
//!
//! A tool describes its run as a [`Run`]: its document's identity
//! (tool, schema, command line), its validated config as data, the run
//! options it was given ([`Given`]: `--json`, `--csv`, `--stats`,
//! `--store`) and any output files of its own. [`Run::open`] checks every
//! planned output, loads `--stats` and opens `--store` before anything
//! starts (a [`Halt`] of kind usage, exit 2, nothing created). The
//! [`Session`] it gives then starts the watchers ([`Session::start`]:
//! `--stats`'s collectors, later the live sampler) just before the tool
//! runs, and [`Session::finish`] takes the tool's [`Report`] (outcome,
//! payload, stated figures, notes, what it left behind): it stops the
//! watchers, makes the envelope ([`envelope::make`], the only place one
//! is made), writes `--csv` and `--json` through `iolab_output` (whole or
//! absent), records the run in the store with the figures it states,
//! says what could not be written or recorded and what was left behind,
//! and returns the final [`Outcome`]. The tool returns that outcome from
//! its entry, and `main` maps it to the exit status ([`crate::exit::end`]).
//!
//! The process's root `CancelToken` is made here ([`root`]); the signal
//! handler cancels it, and each session hands out a child of it
//! ([`Session::cancel`]). The root is tied to `iolab_core::stop`, which
//! the engines still read, so either stops the run.

mod envelope;
pub mod options;
mod report;
mod run;
mod session;
pub mod stats;
pub mod store;
pub mod watch;

pub use options::{Given, RunOptions};
pub use report::{Render, Report};
pub use run::Run;
pub use session::{root, Session};

/// This host as the results state it (the envelope's `environment`),
/// for a report that shows it without a run (xdd's `-dryrun` preamble).
pub fn host() -> iolab_core::env::HostInfo {
    iolab_core::env::host_info()
}
