//! The one place where how a subcommand ended becomes the process exit
//! status. Every subcommand returns an [`Ended`]: the [`Outcome`] of its
//! run, or a [`Halt`] (help shown, bad usage, a step that failed without
//! a results document) of a typed kind; `main` hands it to [`end`], the
//! only code that makes an `ExitCode`. So the numbers the README promises
//! (0, 1, 2, 130) are written once, and no module picks a number.

use iolab_core::{Failure, FailureKind, Outcome};
use std::fmt::Display;
use std::process::ExitCode;

/// Bad usage: nothing was created or written.
pub const USAGE: u8 = 2;
/// The run met an error (I/O, a dead worker, an output it could not write).
pub const FAILED: u8 = 1;
/// Stopped by Ctrl-C or SIGTERM (the shell's 128 + SIGINT).
pub const INTERRUPTED: u8 = 130;

/// How a subcommand ended: the outcome of its run, or a halt.
pub type Ended = Result<Outcome, Halt>;

/// Why a legacy tool's run (mdtest, ior, io500) did not start: bad input
/// (exit 2), or a backend that could not start, such as a storage
/// service refusing the credentials (exit 1).
pub struct NotStarted {
    /// What to say, without the tool's name.
    pub msg: String,
    /// Set when it is a failure rather than bad input.
    pub failure: Option<Failure>,
}

impl From<String> for NotStarted {
    fn from(msg: String) -> Self {
        NotStarted { msg, failure: None }
    }
}

impl NotStarted {
    /// Backend `name`'s `init` failed with `e`: a place that is not
    /// there (a missing bucket) or an option it refuses is bad input; a
    /// service that fails or refuses is an I/O error.
    pub fn backend_init(name: &str, e: &std::io::Error) -> Self {
        use std::io::ErrorKind;
        NotStarted {
            msg: format!("cannot start the {name} backend: {e}"),
            failure: (!matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput))
                .then(|| Failure::io("backend init", None, e)),
        }
    }

    /// Refuses any of `paths` (given with option `opt`) that `backend`
    /// cannot address as given ([`iolab_backend::Backend::check_path`]:
    /// an S3 key climbing out with `..`, another bucket than
    /// `--s3.bucket`): bad input, found before anything is sent.
    pub fn check_paths<'p>(
        backend: &dyn iolab_backend::Backend,
        opt: &str,
        paths: impl IntoIterator<Item = &'p [u8]>,
    ) -> Result<(), Self> {
        for p in paths {
            let bad = |why: String| NotStarted::from(format!("{opt}: {why}"));
            let c = std::ffi::CString::new(p).map_err(|_| {
                bad(format!(
                    "{}: a path holds no NUL byte",
                    String::from_utf8_lossy(p)
                ))
            })?;
            backend.check_path(&c).map_err(|e| bad(e.to_string()))?;
        }
        Ok(())
    }

    /// The runner's checks (`Run::open`) refused the run with `h`: its
    /// message, without the `prog: ` that [`NotStarted::halt`] puts back.
    pub fn refused(prog: &str, h: Halt) -> Self {
        let said = h.message.unwrap_or_default();
        let msg = said.strip_prefix(&format!("{prog}: ")).unwrap_or(&said);
        NotStarted::from(msg.to_string())
    }

    /// Bad input is a usage halt, a backend that could not start a
    /// failed one. Said by rank 0 alone under a launcher: used as is
    /// where MPI could not start (every rank finds the same fault);
    /// once it has, the ranks agree first (`crate::ranks::settle`), and
    /// a fault found on another rank is said by rank 0 too.
    pub fn halt(self, prog: &str) -> Halt {
        let kind = match self.failure {
            Some(_) => HaltKind::Failed,
            None => HaltKind::Usage,
        };
        match iolab_comm::launcher_rank().unwrap_or(0) {
            0 => Halt::new(kind, format!("{prog}: {}", self.msg)),
            _ => Halt::said(kind),
        }
    }
}

/// A subcommand that ended without a run's outcome: help shown, a
/// command line refused, or a step that keeps no results document
/// (a node-side `stats` step, a store that cannot be read) that failed.
/// Its kind decides the exit status; its message, when it has one, is
/// said once on standard error by [`end`].
#[derive(Debug)]
pub struct Halt {
    /// What kind of end it is.
    pub kind: HaltKind,
    /// What to say (the tool's prefix included), unless already said.
    pub message: Option<String>,
}

/// The kinds of [`Halt`], each with its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaltKind {
    /// Help, a version or a listing was asked for and printed: 0.
    Shown,
    /// Bad usage, or a refusal before anything ran: 2.
    Usage,
    /// The step failed: 1.
    Failed,
    /// An output could not be written: 1.
    Output,
    /// Stopped by Ctrl-C or SIGTERM: 130.
    Interrupted,
    /// A failure of the given kind (a refusal the far side made, the
    /// status of a command a step ran).
    Of(FailureKind),
}

impl Halt {
    /// A halt of `kind` saying `message`.
    pub fn new(kind: HaltKind, message: impl Display) -> Halt {
        Halt {
            kind,
            message: Some(message.to_string()),
        }
    }

    /// A halt of `kind` whose message was already said (or is said by
    /// another rank).
    pub fn said(kind: HaltKind) -> Halt {
        Halt {
            kind,
            message: None,
        }
    }

    /// Bad usage, saying `message` (exit 2).
    pub fn usage(message: impl Display) -> Halt {
        Halt::new(HaltKind::Usage, message)
    }

    /// A failed step, saying `message` (exit 1).
    pub fn failed(message: impl Display) -> Halt {
        Halt::new(HaltKind::Failed, message)
    }

    /// What was asked for was printed; nothing more to do (exit 0).
    pub fn shown() -> Halt {
        Halt::said(HaltKind::Shown)
    }

    /// The exit status of this halt.
    pub fn code(&self) -> u8 {
        match self.kind {
            HaltKind::Shown => 0,
            HaltKind::Usage => kind_code(FailureKind::Refused),
            HaltKind::Failed => kind_code(FailureKind::Failed),
            HaltKind::Output => kind_code(FailureKind::Output),
            HaltKind::Interrupted => code(&Outcome::Interrupted),
            HaltKind::Of(k) => kind_code(k),
        }
    }
}

/// Says a halt's message and gives the exit status of `ended`: the one
/// place a subcommand's end becomes an `ExitCode` (`main` calls it).
pub fn end(ended: Ended) -> ExitCode {
    ExitCode::from(match ended {
        Ok(outcome) => code(&outcome),
        Err(h) => {
            if let Some(m) = &h.message {
                iolab_core::say!("{m}");
            }
            h.code()
        }
    })
}

/// `ended`, once a write to standard output failed with `failed` (other
/// than a closed pipe): the report is not whole, so the run failed. Said
/// here, once, whatever the tool; a run that ended otherwise than with
/// success (or help shown) keeps its own status, and its message.
pub fn with_stdout(ended: Ended, failed: Option<&str>) -> Ended {
    let Some(why) = failed else {
        return ended;
    };
    iolab_core::say!("iolab: cannot write the report to standard output: {why}");
    match ended_code(&ended) {
        0 => Err(match ended {
            Err(h) => Halt {
                kind: HaltKind::Output,
                ..h
            },
            Ok(_) => Halt::said(HaltKind::Output),
        }),
        _ => ended,
    }
}

/// The exit status after a write to standard output met a closed pipe:
/// 128 + SIGPIPE, as a shell shows for a tool SIGPIPE ended.
pub fn closed_stdout() -> ExitCode {
    ExitCode::from(crate::output::CLOSED_STATUS)
}

/// The number a run that ended with `outcome` exits with, for the signal
/// handler and MPI's bounded finalisation: a failure's kind, never its
/// text, decides it. A time limit the user set is a normal end.
pub fn code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Completed | Outcome::TimeLimit { .. } => 0,
        Outcome::Interrupted => INTERRUPTED,
        Outcome::Error(f) => kind_code(f.kind),
    }
}

/// The code of an [`Ended`] (what [`end`] will exit with).
pub fn ended_code(ended: &Ended) -> u8 {
    match ended {
        Ok(o) => code(o),
        Err(h) => h.code(),
    }
}

fn kind_code(kind: FailureKind) -> u8 {
    match kind {
        FailureKind::Failed | FailureKind::Output => FAILED,
        FailureKind::Refused => USAGE,
        FailureKind::Command(status) => status,
    }
}

/// Parses a clap command line (`iolab NAME ARGS...`) for the new
/// commands. Help and version print and end the subcommand with exit 0;
/// bad usage prints clap's message and exits 2, as every iolab tool does.
pub fn parse_clap<T: clap::Parser>(name: &str, args: Vec<std::ffi::OsString>) -> Result<T, Halt> {
    let argv = std::iter::once(std::ffi::OsString::from(format!("iolab {name}"))).chain(args);
    T::try_parse_from(argv).map_err(|e| {
        let _ = e.print();
        match e.use_stderr() {
            true => Halt::said(HaltKind::Usage),
            false => Halt::shown(),
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
    fn a_failed_stdout_fails_a_run_that_succeeded_and_keeps_other_ends() {
        let full = Some("No space left on device");
        assert_eq!(
            ended_code(&with_stdout(Ok(Outcome::Completed), full)),
            FAILED
        );
        assert_eq!(ended_code(&with_stdout(Err(Halt::shown()), full)), FAILED);
        assert_eq!(ended_code(&with_stdout(Ok(Outcome::Completed), None)), 0);
        let kept = [
            (Ok(Outcome::Interrupted), INTERRUPTED),
            (Err(Halt::usage("x")), USAGE),
        ];
        for (ended, status) in kept {
            assert_eq!(ended_code(&with_stdout(ended, full)), status);
        }
    }

    #[test]
    fn halts_map_as_outcomes_do() {
        for (kind, status) in [
            (FailureKind::Failed, FAILED),
            (FailureKind::Output, FAILED),
            (FailureKind::Refused, USAGE),
            (FailureKind::Command(7), 7),
        ] {
            let o = Outcome::Error(Failure::other("x", "y").of_kind(kind));
            assert_eq!(Halt::said(HaltKind::Of(kind)).code(), status);
            assert_eq!(code(&o), status);
        }
        assert_eq!(Halt::usage("x").code(), USAGE);
        assert_eq!(Halt::failed("x").code(), FAILED);
        assert_eq!(Halt::said(HaltKind::Output).code(), FAILED);
        assert_eq!(Halt::said(HaltKind::Interrupted).code(), INTERRUPTED);
        assert_eq!(Halt::shown().code(), 0);
        assert_eq!(ended_code(&Ok(Outcome::Interrupted)), INTERRUPTED);
        // The stats console reads the node check's usage status as a
        // refusal: the two must agree.
        assert_eq!(i32::from(USAGE), iolab_stats::cluster::NODE_CHECK_REFUSED);
    }
}
