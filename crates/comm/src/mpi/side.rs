//! The MPI side channel ([`crate::side::SideChannel`]): a duplicate of the
//! world communicator, made collectively when MPI starts, on which any
//! thread sends with `MPI_Isend` and receives what `MPI_Iprobe` finds,
//! each call under the process-wide MPI lock and returning at once.

use super::finalizer::Finalizer;
use super::lock::serialized;
use mpi::ffi;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long dropping the channel waits for its sends to leave.
const FLUSH: Duration = Duration::from_secs(2);

/// Most messages one `receive` takes in (the rest wait for the next).
const BATCH: usize = 4096;

/// The channel; MPI is finalised only after it is dropped.
pub struct MpiSide {
    comm: ffi::MPI_Comm,
    rank: c_int,
    size: c_int,
    /// Sends under way, each with the bytes MPI reads from.
    sends: Vec<(ffi::MPI_Request, Vec<u8>)>,
    _mpi: Arc<Finalizer>,
}

// SAFETY: an MPI communicator and requests are plain handles any thread
// may use under MPI_THREAD_SERIALIZED; every use here holds the MPI lock.
unsafe impl Send for MpiSide {}

impl MpiSide {
    /// Duplicates `world`. Collective: every rank calls it at the same
    /// point, with the MPI lock held. `None` if MPI refused.
    pub(super) fn new(world: ffi::MPI_Comm, fin: Arc<Finalizer>) -> Option<Self> {
        let mut comm = world;
        // SAFETY: `world` is valid and `comm` a place for the new handle;
        // the caller holds the MPI lock.
        if unsafe { ffi::MPI_Comm_dup(world, &mut comm) } != ffi::MPI_SUCCESS as c_int {
            return None;
        }
        let (mut rank, mut size) = (0, 1);
        // SAFETY: the communicator just made; errors are returned (a
        // message to a rank that ended must not abort the job).
        unsafe {
            ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN);
            ffi::MPI_Comm_rank(comm, &mut rank);
            ffi::MPI_Comm_size(comm, &mut size);
        }
        Some(MpiSide {
            comm,
            rank,
            size,
            sends: Vec::new(),
            _mpi: fin,
        })
    }

    /// Drops the sends that completed. Call with the lock held.
    fn reap(&mut self) {
        self.sends.retain_mut(|(r, _)| !completed(r));
    }
}

impl crate::side::SideChannel for MpiSide {
    fn rank(&self) -> usize {
        self.rank as usize
    }

    fn size(&self) -> usize {
        self.size as usize
    }

    fn send(&mut self, to: usize, tag: u8, bytes: Vec<u8>) {
        let _mpi = serialized();
        self.reap();
        // SAFETY: RSMPI_REQUEST_NULL is a predefined handle.
        let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: the bytes live in `self.sends` until the send completed
        // (they move with the Vec, whose heap buffer stays put); a valid
        // communicator and rank; the lock is held.
        let rc = unsafe {
            ffi::MPI_Isend(
                bytes.as_ptr().cast::<c_void>(),
                bytes.len() as c_int,
                ffi::RSMPI_UINT8_T,
                to as c_int,
                c_int::from(tag),
                self.comm,
                &mut req,
            )
        };
        if rc == ffi::MPI_SUCCESS as c_int {
            self.sends.push((req, bytes));
        }
    }

    fn receive(&mut self, tag: u8) -> Vec<(usize, Vec<u8>)> {
        let _mpi = serialized();
        self.reap();
        let mut out = Vec::new();
        while out.len() < BATCH {
            let mut flag: c_int = 0;
            // SAFETY: all-zero is a valid MPI_Status (plain integers).
            let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: valid communicator, tag and out-places; lock held.
            let rc = unsafe {
                ffi::MPI_Iprobe(
                    ffi::RSMPI_ANY_SOURCE,
                    c_int::from(tag),
                    self.comm,
                    &mut flag,
                    &mut st,
                )
            };
            if rc != ffi::MPI_SUCCESS as c_int || flag == 0 {
                break;
            }
            let mut n: c_int = 0;
            // SAFETY: the status MPI_Iprobe filled in.
            unsafe { ffi::MPI_Get_count(&st, ffi::RSMPI_UINT8_T, &mut n) };
            let mut buf = vec![0u8; n.max(0) as usize];
            // SAFETY: receives the probed message (only this channel's
            // owner receives on `comm`) into a buffer of its size.
            unsafe {
                ffi::MPI_Recv(
                    buf.as_mut_ptr().cast::<c_void>(),
                    n,
                    ffi::RSMPI_UINT8_T,
                    st.MPI_SOURCE,
                    c_int::from(tag),
                    self.comm,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            out.push((st.MPI_SOURCE as usize, buf));
        }
        out
    }
}

impl Drop for MpiSide {
    fn drop(&mut self) {
        let until = Instant::now() + FLUSH;
        loop {
            {
                let _mpi = serialized();
                self.reap();
            }
            if self.sends.is_empty() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _mpi = serialized();
        // Sends still pending (their rank ended) are left to
        // MPI_Finalize; MPI frees the communicator once they are done.
        // SAFETY: the communicator this channel made, freed once, here.
        unsafe { ffi::MPI_Comm_free(&mut self.comm) };
        // Their buffers must outlive the sends: leaked on purpose.
        std::mem::forget(std::mem::take(&mut self.sends));
    }
}

/// True once the send `req` is done (or failed). Lock held.
fn completed(req: &mut ffi::MPI_Request) -> bool {
    let mut flag: c_int = 0;
    // SAFETY: a request from MPI_Isend not yet completed; MPI sets it
    // to MPI_REQUEST_NULL when it completes.
    let rc = unsafe { ffi::MPI_Test(req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
    rc != ffi::MPI_SUCCESS as c_int || flag != 0
}
