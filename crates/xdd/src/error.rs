//! Errors of the XDD engine. Usage errors name the option and exit 2;
//! run errors name the target and path.

/// A command line that cannot run: the option and what is wrong with it
/// (the option-table engine's one error type).
pub type UsageError = iolab_opts::OptError;

/// The option exists in XDD 7.0 but iolab does not implement it.
pub fn unsupported(option: &str, why: &str) -> UsageError {
    UsageError::new(option, format!("not yet supported by iolab xdd ({why})"))
}

/// Why a run could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad usage discovered while planning (exit 2).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// A target could not be opened or prepared.
    #[error("target {target} ({path}): {what}: {err}")]
    Target {
        /// Target number.
        target: usize,
        /// Path.
        path: String,
        /// The step that failed.
        what: &'static str,
        /// The system error (not a `source`: the message already says it).
        err: std::io::Error,
    },
    /// Refused for safety (exit 2): the message says how to override.
    #[error("{0}")]
    Refused(String),
    /// An end-to-end connection could not be made (no peer, a peer
    /// that went away); nothing was written (exit 1).
    #[error("-endtoend: {0}")]
    Net(String),
    /// Ctrl-C or SIGTERM before the run started (exit 130).
    #[error("interrupted before any I/O")]
    Interrupted,
    /// The global clock (-timeserver) could not be read; nothing was
    /// prepared (exit 1).
    #[error("-timeserver {addr}: {why}")]
    Clock {
        /// `host:port`.
        addr: String,
        /// What went wrong.
        why: String,
    },
}
