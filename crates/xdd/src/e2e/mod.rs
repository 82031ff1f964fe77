//! End-to-end copies (`-endtoend`, XDD 7.0 section 10.5): the source
//! instance reads its target and sends it over TCP; the destination
//! instance receives it and writes its target. QThread k of the source
//! talks to QThread k of the destination over one connection of its
//! own, on the base port of its destination address plus its rank
//! there; several destination addresses (section 10.6) each bring their
//! own range.
//!
//! The wire is `iolab_net`'s: 32-byte frame headers with a CRC-32C over
//! header and payload, the parameter handshake judged by the receiving
//! side, optional shared-key authentication. On top of it:
//!
//! 1. Setup ([`session`]): the destination binds every port and waits;
//!    the source connects each QThread (retrying while the destination
//!    starts) and both run the handshake with their [`terms::Terms`]. The
//!    destination judges the rules and answers with where the copy
//!    resumes ([`resume`]). All of this happens before either side opens
//!    its target, so a refusal leaves nothing behind.
//! 2. Data ([`pass`]): QThread k moves requests k, k+Q, k+2Q, ... of the
//!    pass (Q the queue depth), in order, one `Data` frame each: offset,
//!    length and checksum in the header, the request as payload. The
//!    destination checks that each frame is the request it expects
//!    (offset and length) and that its checksum holds before writing it.
//! 3. End of pass: the source sends `End` (payload empty, offset = data
//!    frames sent, flags: 0 complete, 1 time limit reached, 2 stopped
//!    early); the destination answers `End` once every request of its
//!    QThread is written, or `Error` with the reason. Either side that
//!    fails sends `Error` with its message and closes.
//!
//! A destination with `-restart` publishes, per QThread, the offset of
//! its first unwritten request; the restart monitor records the lowest
//! ([`crate::record::restart`]).

pub mod args;
pub mod counts;
mod error;
pub mod link;
pub mod lock;
pub mod monitor;
pub mod opts;
pub mod partial;
pub mod pass;
pub mod resume;
pub mod samples;
pub mod session;
pub mod sum;
pub mod terms;
pub mod validate;

pub use error::E2eError;

/// `End` flag: every request of the pass was sent.
pub const END_COMPLETE: u8 = 0;
/// `End` flag: the pass ended at its time limit (-timelimit, -runtime).
pub const END_TIME_LIMIT: u8 = 1;
/// `End` flag: the source stopped early (interrupted or failed).
pub const END_ABORTED: u8 = 2;

pub use crate::run::qstate::Link;

/// The source side of a copy: read, then send (its loop: [`pass`]).
pub struct SourcePath;

/// The destination side of a copy: receive, check, then write (its loop:
/// [`pass`]).
pub struct DestinationPath;
