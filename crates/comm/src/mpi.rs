//! Processes as MPI ranks, through rsmpi (the `mpi` crate).
//!
//! ```no_run
//! # fn main() -> Result<(), iolab_comm::mpi::MpiInitError> {
//! use iolab_comm::{mpi, run_team, CommExt};
//! let runtime = mpi::init()?;
//! // Two threads per rank; task ids are rank x 2 + thread.
//! let sums = run_team(runtime.world(), 2, |c| c.sum_u64(1));
//! assert!(sums.iter().all(|&s| s as usize == sums.len() * runtime.world().size()));
//! # Ok(()) }
//! ```
//!
//! MPI is initialised at `MPI_THREAD_SERIALIZED`: a process runs its tasks
//! as threads, and any one of them may be the team leader that talks to
//! MPI, but the team guarantees only one leader per process is in a
//! collective at a time. A process-wide lock makes that hold even if
//! two teams were ever run at once, so the wrappers below are sound to
//! share between threads.

use crate::Transport;
use mpi::environment::Universe;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use mpi::{Count, Threading};
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, MutexGuard};

pub use crate::launch::launched_under_mpi;

/// Held around every MPI call. MPI_THREAD_SERIALIZED lets any thread call
/// MPI but never two at once, over all communicators of the process.
static MPI_CALLS: Mutex<()> = Mutex::new(());

fn serialized() -> MutexGuard<'static, ()> {
    // A panic while holding the lock leaves MPI no worse off than before
    // the call, so a poisoned lock is still usable.
    MPI_CALLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why MPI could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MpiInitError {
    /// `MPI_Init` already ran in this process (`init` called twice).
    AlreadyInitialized,
    /// The library cannot let threads other than the main one call MPI.
    ThreadingTooLow {
        /// The level the library offered (`single` or `funneled`).
        provided: &'static str,
    },
}

impl fmt::Display for MpiInitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyInitialized => write!(f, "MPI is already initialised in this process"),
            Self::ThreadingTooLow { provided } => write!(
                f,
                "the MPI library offers only MPI_THREAD_{} but iolab needs \
                 MPI_THREAD_SERIALIZED (tasks run as threads); use an MPI build \
                 with thread support",
                provided.to_uppercase()
            ),
        }
    }
}

impl std::error::Error for MpiInitError {}

/// Calls `MPI_Finalize` once the runtime and every transport made from it
/// are gone, so no communicator is freed after finalisation.
struct Finalizer(ManuallyDrop<Universe>);

impl Drop for Finalizer {
    fn drop(&mut self) {
        let _mpi = serialized();
        // SAFETY: dropped exactly once, here; nothing reads it afterwards.
        unsafe { ManuallyDrop::drop(&mut self.0) };
    }
}

/// MPI, initialised. Dropping it (and every transport made from it)
/// finalises MPI; do that on the thread that called [`init`].
pub struct MpiRuntime {
    world: Arc<MpiTransport>,
}

/// Initialises MPI at `MPI_THREAD_SERIALIZED` and fails if the library
/// offers less.
pub fn init() -> Result<MpiRuntime, MpiInitError> {
    let lock = serialized();
    let (universe, provided) = mpi::initialize_with_threading(Threading::Serialized)
        .ok_or(MpiInitError::AlreadyInitialized)?;
    let finalizer = Arc::new(Finalizer(ManuallyDrop::new(universe)));
    if provided < Threading::Serialized {
        let provided = match provided {
            Threading::Single => "single",
            _ => "funneled",
        };
        // Finalises MPI, which needs the lock released first.
        drop(lock);
        drop(finalizer);
        return Err(MpiInitError::ThreadingTooLow { provided });
    }
    let world = MpiTransport::new(SimpleCommunicator::world(), finalizer);
    Ok(MpiRuntime {
        world: Arc::new(world),
    })
}

impl MpiRuntime {
    /// The world communicator: every process `mpirun` started.
    pub fn world(&self) -> Arc<dyn Transport> {
        self.world.clone()
    }

    /// Kills every rank of the job with exit `code` (`MPI_Abort`). For a
    /// failure on one rank while the others wait in a collective.
    pub fn abort(&self, code: i32) -> ! {
        // Not under the lock: the leader may hold it, blocked in a
        // collective that will never complete, and MPI_Abort is meant to
        // be callable in that state.
        self.world.comm.abort(code)
    }
}

/// A communicator as a [`Transport`].
pub struct MpiTransport {
    comm: ManuallyDrop<SimpleCommunicator>,
    rank: usize,
    size: usize,
    /// Keeps MPI alive while this communicator exists; dropped after it.
    _finalizer: Arc<Finalizer>,
}

// SAFETY: a communicator handle is a plain value that MPI lets any thread
// use. Every MPI call made through it, including `MPI_Comm_free` on drop,
// holds the process-wide `MPI_CALLS` lock, which is exactly the
// MPI_THREAD_SERIALIZED contract `init` checked for. In practice only team
// leaders call a transport, one collective at a time, so the lock is never
// contended.
unsafe impl Send for MpiTransport {}
// SAFETY: as for `Send`: `&MpiTransport` reaches MPI only under the lock.
unsafe impl Sync for MpiTransport {}

impl MpiTransport {
    /// Wraps `comm`; call with the MPI lock held.
    fn new(comm: SimpleCommunicator, finalizer: Arc<Finalizer>) -> Self {
        Self {
            // Rank and size never change for a communicator; cached so
            // that reading them takes no lock.
            rank: comm.rank() as usize,
            size: comm.size() as usize,
            comm: ManuallyDrop::new(comm),
            _finalizer: finalizer,
        }
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        let _mpi = serialized();
        // SAFETY: dropped exactly once, here, before `_finalizer`.
        unsafe { ManuallyDrop::drop(&mut self.comm) };
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn barrier(&self) {
        let _mpi = serialized();
        self.comm.barrier();
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let _mpi = serialized();
        let my_len = Count::try_from(mine.len()).expect("all_gather: contribution over 2 GiB");
        let mut lens: Vec<Count> = vec![0; self.size];
        self.comm.all_gather_into(&my_len, &mut lens[..]);
        let displs = displacements(&lens).expect("all_gather: contributions total over 2 GiB");
        let total: usize = lens.iter().map(|&n| n as usize).sum();
        let mut buf = vec![0u8; total];
        {
            let mut part = mpi::datatype::PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
            self.comm.all_gather_varcount_into(mine, &mut part);
        }
        let mut at = 0;
        lens.iter()
            .map(|&n| {
                at += n as usize;
                buf[at - n as usize..at].to_vec()
            })
            .collect()
    }

    fn split(&self, color: Option<u32>) -> Option<Box<dyn Transport>> {
        let color = match color {
            Some(c) => Color::with_value(i32::try_from(c).expect("split: color over i32::MAX")),
            None => Color::undefined(),
        };
        // Key 0 everywhere: the new ranks keep the order of the old ones,
        // which keeps task ids of a prefix of ranks unchanged.
        let _mpi = serialized();
        let sub = self.comm.split_by_color(color)?;
        Some(Box::new(MpiTransport::new(sub, self._finalizer.clone())))
    }

    fn kind(&self) -> &'static str {
        "mpi"
    }

    fn abort(&self, code: i32) {
        // Not under the lock, as in `MpiRuntime::abort`.
        self.comm.abort(code)
    }
}

/// Where each rank's bytes start in the gathered buffer, or `None` if the
/// total does not fit MPI's `int` counts.
fn displacements(lens: &[Count]) -> Option<Vec<Count>> {
    let mut at: Count = 0;
    let mut out = Vec::with_capacity(lens.len());
    for &n in lens {
        out.push(at);
        at = at.checked_add(n)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displacements_are_prefix_sums() {
        assert_eq!(displacements(&[3, 0, 5]), Some(vec![0, 3, 3]));
        assert_eq!(displacements(&[]), Some(vec![]));
        assert_eq!(displacements(&[Count::MAX, 1]), None);
    }
}
