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
//!
//! The collectives are started non-blocking and tested with the lock
//! taken for each test only, so that a rank waiting for slower ones
//! leaves MPI free to the stop watcher ([`stop_watch`]), which tells the
//! other ranks of a Ctrl-C here, and hears of theirs, during a phase.
//!
//! Every wait is bounded by the peers being there: a collective whose
//! ring predecessor left the run or fell silent ([`peers`]) can never
//! complete, so the rank that finds it says why and ends the job
//! (`MPI_Abort`, exit 1) rather than wait for ever.

mod finalizer;
mod lock;
pub mod peers;
mod side;
mod stop_watch;

use crate::Transport;
use finalizer::Finalizer;
use lock::serialized;
use mpi::raw::AsRaw;
use mpi::request::{Request, Scope};
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use mpi::{Count, Threading};
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::{Duration, Instant};
use stop_watch::StopWatch;

pub use crate::launch::launched_under_mpi;

/// How long a wait for a collective tests it back to back (yielding the
/// CPU between tests, as Open MPI's own blocking calls spin) before it
/// tests every [`POLL_PAUSE`] only.
const SPIN: Duration = Duration::from_millis(10);

/// The pause between tests of a collective that has waited [`SPIN`]:
/// what it may add to a wait that already lasted far longer.
const POLL_PAUSE: Duration = Duration::from_micros(200);

/// How long the process may take to end after `MPI_Abort` before it
/// ends itself: the launcher that would kill it may be gone too.
const ABORT_WAIT: Duration = Duration::from_secs(5);

/// Completes `req`, holding the MPI lock for each test only; when
/// `guarded` (this rank's ring predecessor takes part in it), ends the
/// job should that peer be gone ([`peers::lost`]).
fn complete<'a, D: ?Sized, S: Scope<'a>>(mut req: Request<'a, D, S>, guarded: bool) {
    let started = Instant::now();
    loop {
        {
            let _mpi = serialized();
            match req.test() {
                Ok(_) => return,
                Err(pending) => req = pending,
            }
        }
        if let Some(lost) = peers::lost().filter(|_| guarded) {
            end_job(&lost);
        }
        if started.elapsed() < SPIN {
            std::thread::yield_now();
        } else {
            std::thread::sleep(POLL_PAUSE);
        }
    }
}

/// Says why the collective under way can never complete and ends the
/// job: `MPI_Abort` ends every rank (the pending request, and the
/// buffers it writes into, go with the process), and should that not
/// end this one within [`ABORT_WAIT`], it exits 1 itself.
fn end_job(lost: &peers::Lost) -> ! {
    iolab_core::say!(
        "iolab: {lost}; the collective can never complete: ending the job (exit 1); what the run made may be left"
    );
    std::thread::spawn(|| {
        std::thread::sleep(ABORT_WAIT);
        std::process::exit(1)
    });
    // Not under the lock, as in `MpiRuntime::abort`.
    SimpleCommunicator::world().abort(1)
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

/// MPI, initialised. Dropping it (and every transport made from it)
/// finalises MPI; do that on the thread that called [`init`].
pub struct MpiRuntime {
    /// Dropped first (fields drop in order): its thread ends and frees
    /// its communicator before `world` can finalise MPI.
    _stop_watch: Option<StopWatch>,
    /// The side channel, until someone takes it.
    side: std::sync::Mutex<Option<side::MpiSide>>,
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
    let world = MpiTransport::new(SimpleCommunicator::world(), finalizer.clone());
    let stop_watch = StopWatch::start(world.comm.as_raw());
    let side = side::MpiSide::new(world.comm.as_raw(), finalizer);
    Ok(MpiRuntime {
        _stop_watch: stop_watch,
        side: std::sync::Mutex::new(side),
        world: Arc::new(world),
    })
}

impl MpiRuntime {
    /// The world communicator: every process `mpirun` started.
    pub fn world(&self) -> Arc<dyn Transport> {
        self.world.clone()
    }

    /// The side channel ([`crate::side::SideChannel`]), once: later
    /// calls, or MPI having refused to make it, give `None`. Drop it
    /// before MPI is finalised would be (it keeps MPI alive until then).
    pub fn side_channel(&self) -> Option<Box<dyn crate::side::SideChannel>> {
        let mut side = self.side.lock().unwrap_or_else(|e| e.into_inner());
        side.take()
            .map(|s| Box::new(s) as Box<dyn crate::side::SideChannel>)
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
    /// This rank's ring predecessor (`peers`) is one of this
    /// communicator's ranks: its leaving ends a wait here. A rank of a
    /// sub-communicator may see its predecessor leave for good reason.
    guarded: bool,
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
        let world = SimpleCommunicator::world();
        let (me, all) = (world.rank(), world.size());
        let predecessor = (me + all - 1) % all.max(1);
        let guarded = all > 1
            && world
                .group()
                .translate_rank(predecessor, &comm.group())
                .is_some();
        Self {
            // Rank and size never change for a communicator; cached so
            // that reading them takes no lock.
            rank: comm.rank() as usize,
            size: comm.size() as usize,
            guarded,
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
        let req = {
            let _mpi = serialized();
            self.comm.immediate_barrier()
        };
        complete(req, self.guarded);
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let my_len = Count::try_from(mine.len()).expect("all_gather: contribution over 2 GiB");
        let mut lens: Vec<Count> = vec![0; self.size];
        mpi::request::scope(|scope| {
            let req = {
                let _mpi = serialized();
                self.comm
                    .immediate_all_gather_into(scope, &my_len, &mut lens[..])
            };
            complete(req, self.guarded);
        });
        let displs = displacements(&lens).expect("all_gather: contributions total over 2 GiB");
        let total: usize = lens.iter().map(|&n| n as usize).sum();
        if total == 0 {
            // Open MPI refuses a gather of nothing from everyone
            // (MPI_ERR_ARG); every rank saw the same lengths, so all skip it.
            return vec![Vec::new(); self.size];
        }
        let mut buf = vec![0u8; total];
        {
            let mut part = mpi::datatype::PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
            mpi::request::scope(|scope| {
                let req = {
                    let _mpi = serialized();
                    self.comm
                        .immediate_all_gather_varcount_into(scope, mine, &mut part)
                };
                complete(req, self.guarded);
            });
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
