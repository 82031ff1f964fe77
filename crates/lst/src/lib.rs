//! `iolab lst`: a network self-test in the manner of LNet selftest, over
//! TCP for any cluster. Agents run on the nodes; a console opens a
//! session on each, has the client group keep N RPCs in flight to the
//! server group (`ping`, or bulk read/write with payload checks), and
//! returns per-node counters and lst stat's group summaries. The engine
//! prints nothing; `iolab_report::lst` formats.
//!
//! ```
//! use iolab_lst::spec::{Test, BrwOp, Check};
//! let words: Vec<String> = ["brw", "read", "size=4k", "check=simple"].map(String::from).to_vec();
//! let t = Test::parse(&words).unwrap();
//! assert_eq!(t, Test::Brw { op: BrwOp::Read, size: 4096, check: Check::Simple });
//! assert_eq!((t.request_bytes(), t.reply_bytes()), (0, 4096));
//! ```

pub mod agent;
mod client;
pub mod console;
pub mod hosts;
mod input;
pub mod live;
pub mod pattern;
pub mod proto;
pub mod result;
pub mod server;
pub mod session;
pub mod spec;
pub mod stat;
pub mod watch;

pub use console::{Node, Plan, Report};
pub use input::InputError;
pub use result::{ClientStats, GroupSummary, PointResult, RunResult, ServerStats};

/// Test hook: an agent started with this set to N damages every Nth
/// payload it sends, after the pattern and before the frame checksum.
pub const CORRUPT_ENV: &str = "IOLAB_LST_CORRUPT_EVERY";

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum LstError {
    /// A node failed: unreachable, refused, died, or its job failed.
    #[error("node {0}: {1}")]
    Node(String, String),
    /// Agents could not be started, or the session could not be set up.
    #[error("{0}")]
    Launch(String),
    /// The remote shell would not start the agent on a node (srun made
    /// no step: an unknown node, no such allocation): bad usage.
    #[error("node {0}: the remote shell refused to start the agent: {1}")]
    Refused(String, String),
    /// The wait on a node was cancelled because another node failed or
    /// the run was stopped: never the telling error of a failed run.
    #[error("node {0}: cancelled (another node failed or the run was stopped)")]
    Cancelled(String),
}

/// The failure's `op` when the remote shell refused to start an agent
/// (its kind is `refused`: bad usage, exit 2).
pub const REFUSED_OP: &str = "remote shell refused";

/// A fresh random session token (128 bits, hex).
pub fn new_token() -> Result<String, LstError> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)
        .map_err(|e| LstError::Launch(format!("no random source for the session token: {e}")))?;
    Ok(iolab_net::key::hex(&b))
}
