//! Why a survey step could not be done: its work directories and
//! objects, the hosts and agents of its remote targets, and `lfs`.

use std::path::PathBuf;

/// A step of a survey that failed; each names the path, host or command
/// involved and keeps the underlying error as its source.
#[derive(Debug, thiserror::Error)]
pub enum SurveyError {
    /// A work directory could not be made.
    #[error("mkdir {}: {source}", dir.display())]
    Mkdir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An object could not be created.
    #[error("create {}: {source}", path.display())]
    Create {
        /// The object.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The remote shell cannot be used.
    #[error(transparent)]
    Shell(#[from] iolab_launch::LaunchError),
    /// The remote shell would not start on a host.
    #[error("{host}: {source}")]
    Spawn {
        /// The host.
        host: String,
        /// Why.
        source: iolab_launch::LaunchError,
    },
    /// The agents' ports would pass 65535.
    #[error("port {base} + {index} is above 65535")]
    Port {
        /// The base port.
        base: u16,
        /// The target's index.
        index: usize,
    },
    /// A step failed on remote hosts: one (host, why) per host.
    #[error("{}", joined(.0))]
    Remote(Vec<(String, String)>),
    /// An agent was asked for a step it does not know.
    #[error("unknown step '{0}'")]
    Step(String),
    /// An agent whose survey is gone (its parent is init).
    #[error("the survey that started this agent is gone")]
    Orphan,
    /// The key or the echo service failed.
    #[error(transparent)]
    Net(#[from] iolab_net::NetError),
    /// A result could not be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// `lfs` could not be run.
    #[error("cannot run '{lfs} {what}': {source} (set LFS to lfs's path)")]
    LfsRun {
        /// The lfs program.
        lfs: String,
        /// Its subcommand.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// `lfs` ran and failed.
    #[error("'{lfs} {what} {}' failed ({status}): {stderr}", mount.display())]
    LfsFailed {
        /// The lfs program.
        lfs: String,
        /// Its subcommand.
        what: String,
        /// The mount point asked about.
        mount: PathBuf,
        /// How it ended.
        status: std::process::ExitStatus,
        /// What it said.
        stderr: String,
    },
}

fn joined(failed: &[(String, String)]) -> String {
    let each: Vec<String> = failed.iter().map(|(h, e)| format!("{h}: {e}")).collect();
    each.join("; ")
}
