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
        Outcome::Error(f) => match f.kind {
            FailureKind::Failed | FailureKind::Output => FAILED,
            FailureKind::Refused => USAGE,
            FailureKind::Command(status) => status,
        },
    }
}

/// Exit status for bad usage.
pub fn usage() -> ExitCode {
    ExitCode::from(USAGE)
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
}
