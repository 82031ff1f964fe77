//! The one place where how a run ended becomes the process exit status.
//! Every subcommand returns through here, so the numbers the README
//! promises (0, 1, 2, 130) are written once.

use iolab_core::{FailureKind, Outcome};
use std::process::ExitCode;

/// Bad usage: nothing was created or written.
pub const USAGE: u8 = 2;
/// The run met an error (I/O, a dead worker, an output it could not write).
pub const FAILED: u8 = 1;
/// Stopped by Ctrl-C or SIGTERM (the shell's 128 + SIGINT).
pub const INTERRUPTED: u8 = 130;

/// The exit status of a run that ended with `outcome`. A time limit the
/// user set is a normal end.
pub fn status(outcome: &Outcome) -> ExitCode {
    ExitCode::from(code(outcome))
}

/// The number behind [`status`], for the signal handler and tests: a
/// failure's kind, never its text, decides it.
pub fn code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Completed | Outcome::TimeLimit { .. } => 0,
        Outcome::Interrupted => INTERRUPTED,
        Outcome::Error(f) => kind_code(f.kind),
    }
}

fn kind_code(kind: FailureKind) -> u8 {
    match kind {
        FailureKind::Failed | FailureKind::Output => FAILED,
        FailureKind::Refused => USAGE,
        FailureKind::Command(status) => status,
    }
}

/// The exit status of a failure of kind `kind`, for a step that has no
/// results document of its own (a node-side step, a subcommand that
/// failed before its run): the same mapping as [`status`].
pub fn of_kind(kind: FailureKind) -> ExitCode {
    ExitCode::from(kind_code(kind))
}

/// Exit status for bad usage (bad input, an unwritable output, a refusal
/// before anything ran): [`FailureKind::Refused`].
pub fn usage() -> ExitCode {
    of_kind(FailureKind::Refused)
}

/// Exit status of a step whose work failed: [`FailureKind::Failed`].
pub fn failed() -> ExitCode {
    of_kind(FailureKind::Failed)
}

/// Exit status of a run whose output could not be written after it:
/// [`FailureKind::Output`].
pub fn output_failed() -> ExitCode {
    of_kind(FailureKind::Output)
}

/// Exit status of a run stopped by Ctrl-C or SIGTERM.
pub fn interrupted() -> ExitCode {
    status(&Outcome::Interrupted)
}

/// Parses a clap command line (`iolab NAME ARGS...`) for the new
/// commands. Help and version print and exit 0; bad usage prints clap's
/// message and exits 2, as every iolab tool does.
pub fn parse_clap<T: clap::Parser>(
    name: &str,
    args: Vec<std::ffi::OsString>,
) -> Result<T, ExitCode> {
    let argv = std::iter::once(std::ffi::OsString::from(format!("iolab {name}"))).chain(args);
    T::try_parse_from(argv).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            usage()
        } else {
            ExitCode::SUCCESS
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::Failure;

    #[test]
    fn each_outcome_has_its_documented_status() {
        assert_eq!(code(&Outcome::Completed), 0);
        assert_eq!(code(&Outcome::TimeLimit { limit_s: 3.0 }), 0);
        assert_eq!(code(&Outcome::Interrupted), 130);
        assert_eq!(code(&Outcome::Error(Failure::other("worker", "died"))), 1);
        let refused = Failure::other("copy", "would overwrite").of_kind(FailureKind::Refused);
        assert_eq!(code(&Outcome::Error(refused)), 2);
        let cmd = Failure::other("command", "exited 3").of_kind(FailureKind::Command(3));
        assert_eq!(code(&Outcome::Error(cmd)), 3);
    }

    #[test]
    fn kinds_without_a_document_map_as_outcomes_do() {
        for (kind, status) in [
            (FailureKind::Failed, FAILED),
            (FailureKind::Output, FAILED),
            (FailureKind::Refused, USAGE),
            (FailureKind::Command(7), 7),
        ] {
            let o = Outcome::Error(Failure::other("x", "y").of_kind(kind));
            assert_eq!(of_kind(kind), ExitCode::from(status));
            assert_eq!(code(&o), status);
        }
        assert_eq!(interrupted(), ExitCode::from(INTERRUPTED));
        // The stats console reads the node check's usage status as a
        // refusal: the two must agree.
        assert_eq!(i32::from(USAGE), iolab_stats::cluster::NODE_CHECK_REFUSED);
    }
}
