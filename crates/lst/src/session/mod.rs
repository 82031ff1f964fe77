//! lst's console sessions: `new_session` starts a session daemon that
//! owns the session's agents and state (groups, batches, running tests);
//! each later console command (`add_group`, `run`, `stat`, ...) is a
//! separate process that sends the daemon one [`Request`] over a unix
//! socket and prints its [`Reply`]. The socket lives in a 0700 directory
//! of the user's, named after `LST_SESSION`. The daemon ends, and with
//! it every agent it started, on `end_session` or when no console
//! command has reached it for the session's timeout.

pub mod batch;
pub mod daemon;
mod slot;

use crate::result::LiveStats;
use crate::spec::{Distribute, Test};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable that keys a session, as LNet's lst has it.
pub const SESSION_ENV: &str = "LST_SESSION";
/// Overrides the directory of session sockets (default: `iolab-lst-UID`
/// under the temporary directory).
pub const DIR_ENV: &str = "IOLAB_LST_DIR";

/// The batch every session starts with, as LNet's: the one `run`,
/// `stop`, `query` and `add_test` name when given none.
pub const DEFAULT_BATCH: &str = "batch";
/// LNet's default session timeout, in seconds.
pub const DEFAULT_TIMEOUT_S: u64 = 300;
/// Why a session's socket could not be found, made or asked.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// An `LST_SESSION` value that cannot name a file (bad usage).
    #[error("{SESSION_ENV}={0:?}: use 1 to 64 letters, digits, '_', '-' or '.' (e.g. export {SESSION_ENV}=$$)")]
    Id(String),
    /// This process's owner could not be read.
    #[error("cannot read /proc/self: {0}")]
    Owner(#[source] std::io::Error),
    /// The socket's directory (or the socket) could not be looked at.
    #[error("{}: {source}", path.display())]
    Path {
        /// The directory or socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The socket's directory could not be made.
    #[error("{}: cannot make the session directory: {source}", dir.display())]
    MakeDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The socket's directory is not ours alone: a planted one could
    /// hold a fake daemon.
    #[error("{}: not a directory of yours closed to others (mode 0700): refusing to use it for session sockets", dir.display())]
    NotPrivate {
        /// The directory.
        dir: PathBuf,
    },
    /// A live session already holds the socket.
    #[error("a session is already open under this {SESSION_ENV} (end it with `lst end_session`, or use new_session --force)")]
    Open,
    /// Something that is not a socket is where the socket goes.
    #[error("{}: exists and is not a socket", path.display())]
    NotSocket {
        /// The path.
        path: PathBuf,
    },
    /// No daemon answers at the socket.
    #[error("no session here ({}: {source}): start one with `lst new_session NAME`, with {SESSION_ENV} exported", path.display())]
    NoSession {
        /// The socket.
        path: PathBuf,
        /// Why the connect failed.
        source: std::io::Error,
    },
    /// The daemon could not be written to or read from in time.
    #[error("the session daemon: {0}")]
    Daemon(#[source] std::io::Error),
    /// The request could not be encoded.
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
    /// The daemon's answer does not parse.
    #[error("the session daemon answered garbage: {0}")]
    Garbage(#[source] serde_json::Error),
    /// No session token could be drawn.
    #[error(transparent)]
    Token(#[from] crate::LstError),
}

/// Largest request or reply line.
const MAX_LINE_BYTES: u64 = 16 << 20;

/// A test of a batch, as `add_test` gives it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestDef {
    /// The test.
    pub test: Test,
    /// Client group.
    pub from: String,
    /// Server group.
    pub to: String,
    /// RPCs in flight per client.
    pub concurrency: u32,
    /// How clients map to servers.
    pub distribute: Distribute,
    /// RPCs per client (`--loop`); none runs until `stop`.
    pub loop_count: Option<u64>,
    /// Seconds an RPC may wait for its reply (`--timeout`); none: 30.
    #[serde(default)]
    pub rpc_timeout_s: Option<u32>,
}

/// A node's state, in lst's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Its agent is in this session and answered last time it was asked.
    Active,
    /// Its agent serves another console (a node outside the session).
    Busy,
    /// Its agent did not answer (connection lost or refused).
    Down,
    /// Not asked yet (a node outside the session that accepts connections).
    Unknown,
}

impl NodeState {
    /// As lst prints it.
    pub fn word(self) -> &'static str {
        match self {
            NodeState::Active => "Active",
            NodeState::Busy => "Busy",
            NodeState::Down => "Down",
            NodeState::Unknown => "Unknown",
        }
    }

    /// lst's `--clean` words: `active`, `busy`, `down`, `unknown`, and
    /// `invalid` (any state but active).
    pub fn parse_set(word: &str) -> Result<Vec<NodeState>, crate::input::InputError> {
        use NodeState::*;
        Ok(match word.to_ascii_lowercase().as_str() {
            "active" => vec![Active],
            "busy" => vec![Busy],
            "down" => vec![Down],
            "unknown" => vec![Unknown],
            "invalid" => vec![Busy, Down, Unknown],
            _ => {
                return Err(crate::input::InputError::invalid(
                    format!("{word:?}"),
                    "a state is active, busy, down, unknown or invalid",
                ))
            }
        })
    }
}

/// One node and its state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node as written in its group.
    pub node: String,
    /// Its state.
    pub state: NodeState,
    /// In a batch's listing: whether its job runs now.
    #[serde(default)]
    pub running: bool,
}

/// A group and its nodes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupInfo {
    /// Group name.
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<NodeInfo>,
}

/// The nodes of one test of a batch.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TestNodes {
    /// Its clients (`--from`), with whether each one's job runs.
    pub clients: Vec<NodeInfo>,
    /// Its servers (`--to`).
    pub servers: Vec<NodeInfo>,
}

/// What `update_group` does.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupUpdate {
    /// `--refresh`: reconnect the nodes that are not active.
    Refresh,
    /// `--clean STATE`: remove the nodes in these states.
    Clean(Vec<NodeState>),
    /// `--remove LIST`: remove these nodes (host words, ranges allowed).
    Remove(Vec<String>),
}

/// Whom `ping` asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PingTarget {
    /// Every node of the session.
    Session,
    /// A group's nodes.
    Group(String),
    /// Nodes (host words, ranges allowed), in the session or not.
    Nodes(Vec<String>),
    /// A batch's clients, or its servers.
    Batch {
        /// Batch name.
        name: String,
        /// The servers rather than the clients.
        server: bool,
    },
}

/// One node's answer to `ping`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PingEntry {
    /// The node as written.
    pub node: String,
    /// Its state.
    pub state: NodeState,
    /// The session it serves (this one's name when active), if known.
    pub session: Option<String>,
}

/// `show_session`'s facts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Name given to new_session.
    pub name: String,
    /// The LST_SESSION value.
    pub key: String,
    /// When the session started (Unix milliseconds).
    pub started_ms: u64,
    /// The console's host name.
    pub host: String,
    /// The session's timeout, in seconds.
    pub timeout_s: u64,
    /// Nodes (agents) in the session.
    pub nodes: usize,
}

/// What a console command asks the daemon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "req", rename_all = "snake_case")]
pub enum Request {
    /// `add_group NAME HOST...` (hosts as written: ranges, NIDs).
    AddGroup {
        /// Group name.
        name: String,
        /// Host words.
        hosts: Vec<String>,
    },
    /// `add_batch NAME`.
    AddBatch {
        /// Batch name.
        name: String,
    },
    /// `add_test --batch NAME ...`.
    AddTest {
        /// Batch name.
        batch: String,
        /// The test.
        def: TestDef,
    },
    /// `run NAME`.
    Run {
        /// Batch name.
        batch: String,
    },
    /// `stop NAME`.
    Stop {
        /// Batch name.
        batch: String,
    },
    /// `list_batch [NAME]`.
    ListBatch {
        /// One batch, or all.
        name: Option<String>,
    },
    /// `query NAME`.
    Query {
        /// Batch name.
        batch: String,
    },
    /// One reading of `lst stat` (and `show_error`): every node's live
    /// counters.
    Sample {
        /// Group names, or node words (NIDs, ranges) of the session.
        groups: Vec<String>,
        /// How long each agent may take to answer, in seconds.
        timeout_s: f64,
    },
    /// `list_group [NAME]`: one group's nodes, or every group.
    ListGroup {
        /// One group, or all.
        name: Option<String>,
    },
    /// `del_group NAME`.
    DelGroup {
        /// Group name.
        name: String,
    },
    /// `update_group NAME --refresh|--clean S|--remove LIST`.
    UpdateGroup {
        /// Group name.
        name: String,
        /// What to do.
        op: GroupUpdate,
    },
    /// `ping`.
    Ping {
        /// Whom.
        target: PingTarget,
        /// How long each node may take to answer, in seconds.
        timeout_s: f64,
    },
    /// `show_session`.
    ShowSession,
    /// `end_session`.
    End,
}

/// A batch as `list_batch` and `query` show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchInfo {
    /// Name.
    pub name: String,
    /// Its tests.
    pub tests: Vec<TestDef>,
    /// Whether it runs now.
    pub running: bool,
    /// What its last run moved, once that run has ended (sums over its
    /// clients' reports).
    pub last: Option<BatchTotals>,
    /// Each test's nodes, in the order of `tests`.
    #[serde(default)]
    pub nodes: Vec<TestNodes>,
}

/// Sums over the clients of a batch's run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BatchTotals {
    /// RPCs completed.
    pub rpcs: u64,
    /// RPCs that failed: their payload check, or (when the run failed)
    /// in flight when a connection broke.
    pub errors: u64,
    /// Payload bytes the clients sent.
    pub tx_bytes: u64,
    /// Payload bytes the clients received.
    pub rx_bytes: u64,
    /// Why the run failed, if it did.
    pub failure: Option<String>,
}

/// One node's reading.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeSample {
    /// The node as written in its group.
    pub node: String,
    /// When the daemon got the answer (monotonic, nanoseconds).
    pub at_ns: u64,
    /// The counters.
    pub live: LiveStats,
    /// Its error count when it joined the session (`show_error
    /// --session` counts from there).
    #[serde(default)]
    pub errors_at_join: u64,
}

/// One group's reading.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupSample {
    /// Group name.
    pub name: String,
    /// Its nodes that answered.
    pub nodes: Vec<NodeSample>,
    /// Its nodes that did not answer within the timeout.
    #[serde(default)]
    pub failed: Vec<String>,
}

/// The daemon's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// Done.
    Ok,
    /// Batches, for list_batch and query.
    Batches {
        /// The batches asked for.
        batches: Vec<BatchInfo>,
    },
    /// A stat reading.
    Sample {
        /// One per group asked for.
        groups: Vec<GroupSample>,
    },
    /// Groups, for list_group.
    Groups {
        /// The groups asked for.
        groups: Vec<GroupInfo>,
    },
    /// Ping answers.
    Pinged {
        /// One per node.
        nodes: Vec<PingEntry>,
    },
    /// show_session's facts.
    Session(SessionInfo),
    /// The request failed; the message says why.
    Failed {
        /// Why.
        message: String,
    },
}

/// Most characters of a session's, group's or batch's name.
pub const NAME_MAX_CHARS: usize = 64;

/// Checks the name of a session, group or batch (`what`): 1 to
/// [`NAME_MAX_CHARS`] characters, no spaces and no control characters,
/// so that every listing prints it as one word and no name moves the
/// terminal's cursor or colours its output.
pub fn check_name(what: &str, name: &str) -> Result<(), crate::InputError> {
    let n = name.chars().count();
    let bad = name.chars().any(|c| c.is_whitespace() || c.is_control());
    if n == 0 || n > NAME_MAX_CHARS || bad {
        let shown: String = name.chars().take(NAME_MAX_CHARS + 1).collect();
        return Err(crate::InputError::invalid(
            format!("{what} name {shown:?}"),
            format!("1 to {NAME_MAX_CHARS} characters, no spaces or control characters"),
        ));
    }
    Ok(())
}

/// Checks an `LST_SESSION` value: it names a file.
pub fn check_id(id: &str) -> Result<(), SessionError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !id.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(SessionError::Id(id.to_string()))
    }
}

/// The session's socket path. Its directory, when it exists, must be a
/// real directory of ours that nobody else can enter (a planted one
/// could hold a fake daemon); it is made by the session's daemon
/// ([`make_dir`]), not by the commands that only look for a session.
pub fn socket_path(id: &str) -> Result<PathBuf, SessionError> {
    check_id(id)?;
    let me = my_uid()?;
    socket_in(&session_dir(me), id, me)
}

fn my_uid() -> Result<u32, SessionError> {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(SessionError::Owner)
}

/// Where the session sockets of user `me` go: `IOLAB_LST_DIR`, else
/// `iolab-lst-UID` in the temporary directory.
fn session_dir(me: u32) -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(d) => PathBuf::from(d),
        None => default_dir(me),
    }
}

fn default_dir(me: u32) -> PathBuf {
    std::env::temp_dir().join(format!("iolab-lst-{me}"))
}

/// [`socket_path`] in `dir`, for user `me`.
fn socket_in(dir: &Path, id: &str, me: u32) -> Result<PathBuf, SessionError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(SessionError::Path {
                path: dir.to_path_buf(),
                source,
            })
        }
        Ok(m) => check_dir(dir, &m, me)?,
    }
    Ok(dir.join(format!("{id}.sock")))
}

fn check_dir(dir: &Path, m: &std::fs::Metadata, me: u32) -> Result<(), SessionError> {
    if !m.is_dir() || m.uid() != me || m.permissions().mode() & 0o077 != 0 {
        return Err(SessionError::NotPrivate {
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

/// Makes the directory of the session socket `path` (0700) when absent
/// and checks it as [`socket_path`] does; true when this call made it
/// (its session then removes it at its end, [`tidy_dir`]).
pub fn make_dir(path: &Path) -> Result<bool, SessionError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let made = match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(source) => {
            return Err(SessionError::MakeDir {
                dir: dir.to_path_buf(),
                source,
            })
        }
    };
    let m = std::fs::symlink_metadata(dir).map_err(|source| SessionError::Path {
        path: dir.to_path_buf(),
        source,
    })?;
    check_dir(dir, &m, my_uid()?)?;
    Ok(made)
}

/// After a session has removed its socket `path`: removes the socket's
/// directory when it is empty and this session made it (`made`), or it
/// is iolab's default directory (`iolab-lst-UID`, which only sessions
/// use). A directory with another session's socket stays; one the user
/// named (`IOLAB_LST_DIR`) and made stays.
pub fn tidy_dir(path: &Path, made: bool) {
    let Some(dir) = path.parent() else {
        return;
    };
    let ours = my_uid().is_ok_and(|me| dir == default_dir(me));
    if made || ours {
        // remove_dir removes only an empty directory, never follows a
        // link (a link is not a directory to it), and fails harmlessly
        // otherwise.
        let _ = std::fs::remove_dir(dir);
    }
}

/// Sends one request to the daemon at `path` and returns its reply;
/// `wait` bounds the reply (a request that starts agents takes longer).
pub fn call(path: &Path, req: &Request, wait: Duration) -> Result<Reply, SessionError> {
    let mut s = UnixStream::connect(path).map_err(|source| SessionError::NoSession {
        path: path.to_path_buf(),
        source,
    })?;
    let io = SessionError::Daemon;
    s.set_read_timeout(Some(wait)).map_err(io)?;
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(io)?;
    let mut line = serde_json::to_vec(req).map_err(SessionError::Encode)?;
    line.push(b'\n');
    s.write_all(&line).map_err(io)?;
    let text = read_line(&mut s).map_err(io)?;
    serde_json::from_str(&text).map_err(SessionError::Garbage)
}

/// One line, at most [`MAX_LINE_BYTES`].
pub(crate) fn read_line(s: &mut UnixStream) -> std::io::Result<String> {
    let mut text = String::new();
    BufReader::new(s.take(MAX_LINE_BYTES)).read_line(&mut text)?;
    if text.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed without an answer",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_name_files_only() {
        assert!(check_id("12345").is_ok());
        assert!(check_id("read_write-1").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_socket_directory_must_be_ours_and_closed() {
        let base = std::env::temp_dir().join(format!("iolab-lst-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let me = std::fs::metadata("/proc/self").unwrap().uid();
        let d = base.join("made");
        assert_eq!(socket_in(&d, "s1", me).unwrap(), d.join("s1.sock"));
        assert!(!d.exists(), "looking for a session makes nothing");
        assert!(make_dir(&d.join("s1.sock")).unwrap(), "the daemon makes it");
        assert!(!make_dir(&d.join("s1.sock")).unwrap(), "once");
        assert_eq!(socket_in(&d, "s1", me).unwrap(), d.join("s1.sock"));
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "made closed");
        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(
            socket_in(&open, "s1", me).is_err(),
            "a directory others can enter"
        );
        let link = base.join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(socket_in(&link, "s1", me).is_err(), "a planted symlink");
        assert!(socket_in(&d, "s1", me + 1).is_err(), "someone else's");
        // The session that made it removes it once empty; not before,
        // and not one it did not make.
        std::fs::write(d.join("other.sock"), b"").unwrap();
        tidy_dir(&d.join("s1.sock"), true);
        assert!(d.exists(), "another session's socket is there");
        std::fs::remove_file(d.join("other.sock")).unwrap();
        tidy_dir(&d.join("s1.sock"), false);
        assert!(d.exists(), "not made by this session");
        tidy_dir(&d.join("s1.sock"), true);
        assert!(!d.exists(), "made by it, empty: removed");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
