//! How a run ended, as data: written into every result document and mapped
//! to the process exit status in exactly one place (the CLI's `exit` module).
//!
//! ```
//! use iolab_core::outcome::{Failure, Outcome};
//! let o = Outcome::Error(Failure::io("write", Some("/mnt/x/f".into()), &std::io::Error::from_raw_os_error(28)));
//! assert!(o.is_failure());
//! assert_eq!(o.to_string(), "write /mnt/x/f: No space left on device (os error 28)");
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;

/// The end of a run. Engines return it; formatters print it; the CLI turns
/// it into an exit status (0 completed or time limit, 1 error, 130
/// interrupted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Every planned operation ran.
    Completed,
    /// Ctrl-C or SIGTERM stopped the run early; results cover what ran.
    Interrupted,
    /// A time limit the user set (XDD `-runtime`, a stonewall) ended it.
    TimeLimit {
        /// The limit, in seconds.
        limit_s: f64,
    },
    /// An operation failed (or a worker died) and the run stopped.
    Error(Failure),
}

/// What failed: the operation, the path it touched and the errno, when
/// there are such things, and a message that reads on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The operation (`open`, `write`, `mkdir`, `worker`, `json output`...).
    pub op: String,
    /// The path or target, when the failure concerns one.
    pub path: Option<String>,
    /// The OS error number, when the failure came from a system call.
    pub errno: Option<i32>,
    /// A one-line explanation.
    pub message: String,
    /// What kind of failure it is, which decides the exit status
    /// (`failed` is the usual one and is left out of the JSON).
    #[serde(default, skip_serializing_if = "FailureKind::is_failed")]
    pub kind: FailureKind,
}

/// The kinds of failure the exit status tells apart. The CLI's `exit`
/// module maps each to its status; nothing matches a failure's text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// An operation failed (I/O, a dead worker, a peer, a check): exit 1.
    #[default]
    Failed,
    /// An output the user asked for could not be written after the run: exit 1.
    Output,
    /// The run was refused before data moved (a peer said no, a file
    /// would be overwritten, the ports were taken): exit 2, as bad usage.
    Refused,
    /// A command the tool ran for the user (`iolab stats run -- CMD`)
    /// ended with this status, which becomes the tool's.
    Command(u8),
}

impl FailureKind {
    /// The usual kind (for serde's skip).
    pub fn is_failed(&self) -> bool {
        *self == FailureKind::Failed
    }
}

impl Failure {
    /// The same failure, of kind `kind`.
    pub fn of_kind(mut self, kind: FailureKind) -> Self {
        self.kind = kind;
        self
    }

    /// A failure from an I/O error on `path`.
    pub fn io(op: &str, path: Option<String>, e: &std::io::Error) -> Self {
        Self {
            op: op.to_string(),
            path,
            errno: e.raw_os_error(),
            message: e.to_string(),
            kind: FailureKind::Failed,
        }
    }

    /// A failure that is not a system call's (a worker panicked, a peer
    /// vanished, a check failed).
    pub fn other(op: &str, message: impl Into<String>) -> Self {
        Self {
            op: op.to_string(),
            path: None,
            errno: None,
            message: message.into(),
            kind: FailureKind::Failed,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{} {}: {}", self.op, p, self.message),
            None => write!(f, "{}: {}", self.op, self.message),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Completed => f.write_str("completed"),
            Outcome::Interrupted => f.write_str("interrupted (Ctrl-C or SIGTERM)"),
            Outcome::TimeLimit { limit_s } => write!(f, "time limit of {limit_s} seconds reached"),
            Outcome::Error(e) => e.fmt(f),
        }
    }
}

impl Outcome {
    /// True for an error outcome (exit status 1).
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Error(_))
    }

    /// Keeps the most serious of two outcomes, so that tasks' outcomes can
    /// be merged: an error beats an interruption beats a time limit beats
    /// completion; between two errors the first is kept.
    pub fn worst(self, other: Outcome) -> Outcome {
        fn rank(o: &Outcome) -> u8 {
            match o {
                Outcome::Completed => 0,
                Outcome::TimeLimit { .. } => 1,
                Outcome::Interrupted => 2,
                Outcome::Error(_) => 3,
            }
        }
        if rank(&other) > rank(&self) {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_keeps_the_most_serious() {
        let e = Outcome::Error(Failure::other("worker", "panicked"));
        assert_eq!(
            Outcome::Completed.worst(Outcome::Interrupted),
            Outcome::Interrupted
        );
        assert_eq!(Outcome::Interrupted.worst(e.clone()), e);
        assert_eq!(e.clone().worst(Outcome::Completed), e);
        let tl = Outcome::TimeLimit { limit_s: 1.0 };
        assert_eq!(tl.clone().worst(Outcome::Completed), tl);
    }

    #[test]
    fn serialises_with_a_status_tag() {
        let s = serde_json::to_string(&Outcome::Error(Failure::other("worker", "x"))).unwrap();
        assert!(s.contains(r#""status":"error""#), "{s}");
        let back: Outcome = serde_json::from_str(&s).unwrap();
        assert!(back.is_failure());
    }
}
