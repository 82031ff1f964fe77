//! Whether this rank's predecessor (rank r-1, in a ring) is still in the
//! run, so that no wait for a collective outlasts a peer that left it.
//!
//! The stop watcher ([`super::stop_watch`]) sends an empty *beat* to its
//! successor every second and a *left* message as MPI is finalised; it
//! records here what it hears from its predecessor. A collective that
//! waits ([`super::complete`]) asks [`lost`] between its tests: the
//! predecessor left (its `MPI_Finalize`) and the collective has still not
//! completed [`LEFT_GRACE`] later, or it has sent no beat for the peer
//! timeout, and the wait could only last for ever. Any rank that is
//! gone is the predecessor of some rank that still waits, so one rank
//! of the job finds out and ends the job.
//!
//! Silence is counted in the watcher's own ticks, not in wall time: a
//! job suspended (Ctrl-Z) and resumed does not count the pause. Only a
//! predecessor heard at least once can fall silent, so a rank whose
//! watcher never started is never taken for gone.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The variable that sets the peer timeout, in seconds.
pub const TIMEOUT_VAR: &str = "IOLAB_MPI_PEER_TIMEOUT";

/// How long a predecessor may send no beat (it beats every second from
/// a thread of its own, whatever its tasks do) before it is taken for
/// gone, unless [`TIMEOUT_VAR`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a collective still waits after its predecessor said it
/// left: the messages a rank sent just before it finalised may arrive
/// after its word that it left (they travel on another communicator).
pub const LEFT_GRACE: Duration = Duration::from_secs(2);

/// This rank and its predecessor, set when the watcher starts.
static RANKS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Seconds of silence of the predecessor; 0 while it is heard.
static SILENT_S: AtomicU64 = AtomicU64::new(0);

/// When the predecessor said it left.
static LEFT: Mutex<Option<Instant>> = Mutex::new(None);

/// Why a collective can no longer complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lost {
    /// The predecessor finalised MPI without joining the collective.
    Left { me: usize, peer: usize },
    /// The predecessor sent no beat for this many seconds.
    Silent { me: usize, peer: usize, secs: u64 },
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::Left { me, peer } => write!(
                f,
                "rank {me}: rank {peer} left the run (finalised MPI) while rank {me} waited for it in a collective"
            ),
            Lost::Silent { me, peer, secs } => write!(
                f,
                "rank {me}: rank {peer} gave no sign of life for {secs} s (killed, or its host unreachable) while rank {me} waited for it in a collective"
            ),
        }
    }
}

/// The peer timeout: [`TIMEOUT_VAR`] in whole seconds (at least 1), or
/// [`DEFAULT_TIMEOUT`].
pub(super) fn timeout() -> Duration {
    std::env::var(TIMEOUT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&s| s > 0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
}

/// Records this rank and its predecessor (the watcher, at its start).
pub(super) fn set_ranks(me: usize, predecessor: usize) {
    RANKS[0].store(me, Ordering::SeqCst);
    RANKS[1].store(predecessor, Ordering::SeqCst);
}

/// The predecessor said it left.
pub(super) fn left() {
    let mut at = LEFT.lock().unwrap_or_else(|e| e.into_inner());
    at.get_or_insert_with(Instant::now);
}

/// The predecessor has sent nothing for `secs` seconds (0: it is heard).
pub(super) fn silent_for(secs: u64) {
    SILENT_S.store(secs, Ordering::SeqCst);
}

/// Why the collective being waited for can never complete, if it can't.
pub(super) fn lost() -> Option<Lost> {
    let (me, peer) = (
        RANKS[0].load(Ordering::SeqCst),
        RANKS[1].load(Ordering::SeqCst),
    );
    let secs = SILENT_S.load(Ordering::SeqCst);
    if secs > 0 {
        return Some(Lost::Silent { me, peer, secs });
    }
    let at = *LEFT.lock().unwrap_or_else(|e| e.into_inner());
    at.filter(|t| t.elapsed() >= LEFT_GRACE)
        .map(|_| Lost::Left { me, peer })
}
