//! One agent of a session, as the daemon holds it and a running batch
//! borrows it: its own module so that the daemon (which owns the slots)
//! and the batch (which drives them) both use it without naming each
//! other.

use crate::console::Node;
use iolab_launch::Remote;
use iolab_net::Conn;

/// One agent of the session.
pub(crate) struct Slot {
    pub(crate) node: Node,
    /// The control connection; a running batch holds it meanwhile.
    pub(crate) ctl: Option<Conn>,
    /// The connection that answers live-counter reads (`stat`).
    pub(crate) stat: Conn,
    /// The agent's process, when the session started it.
    pub(crate) remote: Option<Remote>,
    /// Its state as last seen.
    pub(crate) state: super::NodeState,
    /// Its error count when it joined (for `show_error --session`).
    pub(crate) errors_at_join: u64,
}
