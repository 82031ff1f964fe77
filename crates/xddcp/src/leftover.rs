//! What a copy that did not finish leaves on the destination, when its
//! destination side could not say (killed: kill -9, a crash, the host
//! gone). xddcp, still alive, looks there through the remote shell: with
//! `-a` it says what is left for the resume (the partial copy, the
//! restart record and what it records); without, it removes the partial
//! copy, which can only be this run's (its name is this run's own,
//! [`crate::plan::Job::partial`], made exclusively by the destination
//! side), or says where it is when it cannot. The commands are POSIX
//! `test`, `rm` and `cat`, run as the remote shell runs every command.

use crate::plan::{Job, Plan};
use std::time::Duration;

/// A partial copy kept for a resume (`xddcp -a`): the file and the
/// restart record beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Left {
    /// The partial file (`DESTINATION.partial`); None when the
    /// destination side was killed before it made one.
    pub partial: Option<String>,
    /// The restart record (`DESTINATION.restart`).
    pub record: String,
    /// Bytes the record says are written and durable (None when it
    /// could not be read back).
    pub recorded_bytes: Option<u64>,
    /// Bytes this run wrote into the partial copy, as the destination
    /// said (None: it was killed before it could say). More than the
    /// record holds when the record could not keep up (a full file
    /// system); a resume sends again what the record does not cover.
    pub written: Option<u64>,
}

impl Left {
    /// One sentence for the user: what is there, and how to go on.
    pub fn said(&self) -> String {
        let recorded = match self.recorded_bytes {
            Some(b) => format!(", which records its first {b} bytes as written"),
            None => ", which cannot be read back".to_string(),
        };
        let what = match &self.partial {
            Some(p) => format!("left {p} and its restart record {}", self.record),
            None => format!(
                "left no partial copy (the destination side ended before it made one), and its restart record {}",
                self.record
            ),
        };
        let wrote = match self.written {
            Some(w) if Some(w) == self.recorded_bytes => String::new(),
            Some(w) => format!(
                " (this run wrote {w} bytes before it stopped; a resume sends again what the record does not cover)"
            ),
            None => " (the destination side was killed before it said how many bytes it wrote)".into(),
        };
        format!("{what}{recorded}; run the same command again (with -a) to resume the copy{wrote}")
    }
}

/// The partial copy a killed destination side left (without `-a`,
/// where nothing resumes it), and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cleanup {
    /// xddcp removed it through the remote shell: this run's own (its
    /// name is this run's, [`crate::plan::Job::partial`]).
    Removed(String),
    /// It is there and xddcp could not remove it (why).
    Stays {
        /// The partial copy.
        path: String,
        /// Why it could not be removed.
        why: String,
    },
    /// xddcp could not look whether it is there (the host unreachable).
    Unknown {
        /// The partial copy's name.
        path: String,
        /// Why it could not look.
        why: String,
    },
}

impl Cleanup {
    /// One sentence for the user.
    pub fn said(&self) -> String {
        match self {
            Cleanup::Removed(p) => format!(
                "removed {p}, the partial copy the destination side left when it was killed"
            ),
            Cleanup::Stays { path, why } => format!(
                "the destination side was killed and left its partial copy {path}, which xddcp could not remove ({why}): remove it"
            ),
            Cleanup::Unknown { path, why } => format!(
                "the destination side was killed, and xddcp cannot look whether it left its partial copy {path} ({why}): remove it if it is there"
            ),
        }
    }
}

/// How long one look on the destination host may take.
const PROBE_WAIT: Duration = Duration::from_secs(30);

/// What a look at a path on the destination host found.
enum Found {
    There,
    Absent,
    /// The look failed (the host unreachable, the remote shell refused).
    Unknown(String),
}

/// Runs `cmd` on the destination host; its exit code and standard
/// output, or why it could not run.
fn on_destination(p: &Plan, cmd: &[&str]) -> Result<(Option<i32>, Vec<u8>), String> {
    let argv: Vec<String> = cmd.iter().map(|w| w.to_string()).collect();
    let r = p
        .rsh
        .spawn(&p.shell_host, &argv, &[])
        .map_err(|e| e.to_string())?;
    let f = r.wait(PROBE_WAIT, || false).map_err(|e| e.to_string())?;
    if let Some(why) = p.rsh.refusal(&f.stderr) {
        return Err(why);
    }
    Ok((f.status.code(), f.stdout))
}

/// Whether anything is at `path` on the destination host (a link too).
fn look(p: &Plan, path: &str) -> Found {
    match on_destination(p, &["test", "-e", path, "-o", "-h", path]) {
        Ok((Some(0), _)) => Found::There,
        Ok((Some(1), _)) => Found::Absent,
        Ok((code, _)) => Found::Unknown(format!(
            "`test` through the remote shell ended with {}",
            code.map_or("a signal".into(), |c| format!("exit status {c}"))
        )),
        Err(why) => Found::Unknown(why),
    }
}

/// The `offset` of the restart record at `record` on the destination
/// host, when it can be read.
fn recorded(p: &Plan, record: &str) -> Option<u64> {
    match on_destination(p, &["cat", "--", record]) {
        Ok((Some(0), out)) => String::from_utf8_lossy(&out)
            .lines()
            .find_map(|l| l.strip_prefix("offset "))
            .and_then(|v| v.trim().parse().ok()),
        _ => None,
    }
}

/// With `-a`: what the destination side of `job` left for the resume,
/// found on the destination host (None when it left nothing).
pub fn kept(p: &Plan, job: &Job) -> Option<Left> {
    let record = format!("{}.restart", job.destination);
    let partial = match look(p, &job.partial) {
        Found::There | Found::Unknown(_) => Some(job.partial.clone()),
        Found::Absent => None,
    };
    let recorded_bytes = recorded(p, &record);
    if partial.is_none() && matches!(look(p, &record), Found::Absent) {
        return None;
    }
    Some(Left {
        partial,
        record,
        recorded_bytes,
        written: None,
    })
}

/// Without `-a`: removes the partial copy the destination side of `job`
/// left (None when it left none).
pub fn clean_up(p: &Plan, job: &Job) -> Option<Cleanup> {
    let path = job.partial.clone();
    match look(p, &path) {
        Found::Absent => None,
        Found::Unknown(why) => Some(Cleanup::Unknown { path, why }),
        Found::There => match on_destination(p, &["rm", "-f", "--", &path]) {
            Ok((Some(0), _)) => Some(Cleanup::Removed(path)),
            Ok((code, _)) => Some(Cleanup::Stays {
                path,
                why: format!(
                    "`rm` ended with {}",
                    code.map_or("a signal".into(), |c| format!("exit status {c}"))
                ),
            }),
            Err(why) => Some(Cleanup::Stays { path, why }),
        },
    }
}
