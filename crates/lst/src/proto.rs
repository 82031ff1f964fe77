//! The wire protocol, above iolab_net's frames.
//!
//! Control (console <-> agent): JSON in `Control` frames, one request and
//! one answer at a time ([`Command`], [`Answer`]).
//!
//! Data (client agent -> server agent): a `Data` frame per request, whose
//! `flags` is the operation ([`OP_PING`], [`OP_READ`], [`OP_WRITE`]) and
//! whose `offset` is the RPC's tag; the reply is a `Data` frame with the
//! same tag and `flags` = [`REPLY_OK`] or [`REPLY_BAD_DATA`]. A client
//! ends with an `End` frame, which the server answers with `End`.

use crate::input::InputError;
use crate::result::{ClientStats, LiveStats, ServerStats};
use crate::spec::Test;
use serde::{Deserialize, Serialize};

/// Request: empty, answered with an empty reply.
pub const OP_PING: u8 = 1;
/// Request: empty, answered with `size` bytes.
pub const OP_READ: u8 = 2;
/// Request: `size` bytes, answered with an empty reply.
pub const OP_WRITE: u8 = 3;
/// Reply: the request was served.
pub const REPLY_OK: u8 = 0;
/// Reply: the request's payload failed the check.
pub const REPLY_BAD_DATA: u8 = 1;

/// The operation code of `test`'s requests.
pub fn op_of(test: &Test) -> u8 {
    match test {
        Test::Ping => OP_PING,
        Test::Brw {
            op: crate::spec::BrwOp::Read,
            ..
        } => OP_READ,
        Test::Brw { .. } => OP_WRITE,
    }
}

/// The payload limit of a data connection for `test`, both ways: the
/// largest request or reply (iolab_net checks it on send and receive),
/// and never less than the handshake needs.
pub fn frame_limit(test: &Test) -> u32 {
    test.request_bytes().max(test.reply_bytes()).max(64 << 10)
}

/// Handshake parameters of a connection to an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Hello {
    /// The console opens a session.
    Console {
        /// The session token every data connection must present.
        token: String,
    },
    /// A client agent opens a data connection for `test`.
    Data {
        /// The session token.
        token: String,
        /// The test, so the server knows sizes and checks.
        test: Test,
    },
    /// A session's console opens a second connection that only reads
    /// live counters (`lst stat`), while the first one runs jobs.
    Stat {
        /// The session token.
        token: String,
    },
}

/// What the console asks an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Zero the server counters before a run.
    Reset,
    /// Run as a client: connect to `servers` and keep `concurrency` RPCs
    /// in flight in all until the limit.
    Start(ClientJob),
    /// Send the server counters since the last reset.
    Stats,
    /// The session is over.
    Bye,
    /// Sent during a job: end it now and answer with its stats (`lst
    /// stop`).
    Halt,
    /// Send the live counters (on a [`Hello::Stat`] connection).
    Live,
    /// Send the session's live figures: each phase's RPCs, bytes,
    /// errors and latency buckets since the session opened (the console
    /// diffs successive readings for `--live`).
    Figures,
}

/// A client's share of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientJob {
    /// The test.
    pub test: Test,
    /// `host:port` of each server agent this client talks to.
    pub servers: Vec<String>,
    /// RPCs in flight, over all its servers.
    pub concurrency: u32,
    /// When to stop.
    pub limit: crate::spec::Limit,
    /// Seconds an RPC may wait for its reply (`add_test --timeout`);
    /// none: 30.
    #[serde(default)]
    pub rpc_timeout_s: Option<u32>,
}

/// Longest `add_test --timeout`, in seconds.
pub const MAX_RPC_TIMEOUT_S: u32 = 3600;

/// Most servers one client job may name.
pub const MAX_JOB_SERVERS: usize = 4096;

impl ClientJob {
    /// Checks a job before the agent starts anything for it: an agent
    /// never trusts a number it did not check.
    pub fn validate(&self) -> Result<(), InputError> {
        self.test.validate()?;
        self.limit.validate()?;
        if self.servers.is_empty() || self.servers.len() > MAX_JOB_SERVERS {
            return Err(InputError::invalid(
                format!("a client job names {} servers", self.servers.len()),
                format!("1 to {MAX_JOB_SERVERS}"),
            ));
        }
        if let Some(t) = self
            .rpc_timeout_s
            .filter(|t| !(1..=MAX_RPC_TIMEOUT_S).contains(t))
        {
            return Err(InputError::invalid(
                format!("RPC timeout {t} s"),
                format!("1 to {MAX_RPC_TIMEOUT_S}"),
            ));
        }
        if !(1..=crate::spec::MAX_CONCURRENCY).contains(&self.concurrency) {
            return Err(InputError::invalid(
                format!("concurrency {}", self.concurrency),
                format!("1 to {}", crate::spec::MAX_CONCURRENCY),
            ));
        }
        Ok(())
    }
}

/// An agent's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Done.
    Ok,
    /// A client's run ended (its stats, errors included).
    Done(ClientStats),
    /// Server counters.
    Server(ServerStats),
    /// Live counters of every data connection, both roles, since the
    /// agent started.
    Live(LiveStats),
    /// The session's live figures, per phase (`ping`, `read`, `write`),
    /// cumulative: what this agent's client jobs did.
    Figures(Vec<iolab_core::live::Totals>),
    /// The command failed; the message says why.
    Failed {
        /// What went wrong.
        message: String,
        /// A client job that failed: what it had done by then (RPCs
        /// completed, payload errors, bytes, and the RPCs in flight as
        /// `lost`); none for other commands, and from older agents.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial: Option<ClientStats>,
    },
}

/// The phase a test's RPCs are counted under in live figures: `ping`,
/// or the bulk op (`read`, `write`), as xdd and the surveys name op types.
pub fn phase_of(test: &crate::spec::Test) -> &'static str {
    match test {
        crate::spec::Test::Ping => "ping",
        crate::spec::Test::Brw {
            op: crate::spec::BrwOp::Read,
            ..
        } => "read",
        crate::spec::Test::Brw {
            op: crate::spec::BrwOp::Write,
            ..
        } => "write",
    }
}

/// Whether a data connection checksums payloads. Both sides derive it from
/// the test they agreed on in the handshake: `check=none` (and ping) moves
/// payloads unchecked, as LNet selftest does, so the test measures the
/// network rather than the checksum; `simple` and `full` keep the frame
/// CRC under their own pattern checks. Headers are always checksummed.
pub fn payload_crc(test: &crate::spec::Test) -> bool {
    test.check() != crate::spec::Check::None
}
