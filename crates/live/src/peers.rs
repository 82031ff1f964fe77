//! Other processes of the same run (MPI ranks, a console's agents, the
//! two sides of a copy): each interval every process's parts go to one
//! root, which merges them; the root's steady-state decisions go back.
//! The transport is the caller's ([`Peers`]); this module says what
//! travels.

use crate::sample::Part;
use serde::{Deserialize, Serialize};

/// One process's interval, as it travels to the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The sender's rank (or agent number).
    pub rank: u64,
    /// The sender's host name.
    pub host: String,
    /// Its interval count (1, 2, ...): where the others line up by
    /// number ([`Peers::aligned`]), the root's interval it belongs to.
    pub seq: u64,
    /// True on the sender's final flush: nothing follows.
    pub last: bool,
    /// Its phases' parts for the interval.
    pub parts: Vec<Part>,
}

/// What the root tells every other process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Order {
    /// End this phase now: it reached its steady state.
    EndPhase(String),
}

/// A transport between the processes of one run. Every call returns at
/// once (no call waits for a peer): the root merges what has come.
pub trait Peers: Send {
    /// This process's rank; the root is the one that writes the stream.
    fn rank(&self) -> u64;
    /// Whether this process is the root.
    fn is_root(&self) -> bool;
    /// How many other processes report to the root.
    fn others(&self) -> usize;
    /// A process other than the root: sends its report's bytes.
    fn send_report(&mut self, bytes: Vec<u8>);
    /// The root: every report that came since the last call.
    fn take_reports(&mut self) -> Vec<Vec<u8>>;
    /// The root: sends an order to every other process.
    fn send_order(&mut self, bytes: Vec<u8>);
    /// A process other than the root: every order that came.
    fn take_orders(&mut self) -> Vec<Vec<u8>>;
    /// True when the root reads the others itself (a console polling
    /// its agents), so they report whatever was asked, a terminal view
    /// included; false when each reports only for what every process
    /// knows was asked (a stream or steady state: an MPI rank cannot
    /// know whether rank 0 has a terminal).
    fn polled(&self) -> bool {
        false
    }
    /// True for a root whose others join after the start (a copy's
    /// destination, whose source links once the copy is set up): the
    /// sampler is kept while [`Peers::others`] is still 0, counts the
    /// others each interval, and writes a row per rank from the first
    /// interval on.
    fn late(&self) -> bool {
        false
    }
    /// True when every other process samples from the same start at the
    /// same interval (MPI ranks, which start their samplers together),
    /// numbered 0 to [`Peers::others`] with the root among them: a
    /// report's `seq` is then the root's interval it belongs to, and the
    /// root writes each interval once every rank's report of it came
    /// (waiting a bounded time). False: reports are lined up as they
    /// come, one per process and row.
    fn aligned(&self) -> bool {
        false
    }
    /// True for a root of its own stream that also sends each of its
    /// intervals to another run's root (a copy's source side, whose
    /// figures the destination's stream holds too).
    fn forwards(&self) -> bool {
        false
    }
}

/// Encodes a report (JSON: a few hundred bytes per phase).
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// Decodes what [`encode`] made; `None` for bytes from elsewhere.
pub fn decode<T: for<'de> Deserialize<'de>>(b: &[u8]) -> Option<T> {
    serde_json::from_slice(b).ok()
}
