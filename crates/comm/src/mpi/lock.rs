//! The process-wide lock around every MPI call.

use std::sync::{Mutex, MutexGuard};

/// Held around every MPI call. MPI_THREAD_SERIALIZED lets any thread call
/// MPI but never two at once, over all communicators of the process.
static MPI_CALLS: Mutex<()> = Mutex::new(());

/// Takes the lock; hold the guard for the MPI call and no longer.
pub(super) fn serialized() -> MutexGuard<'static, ()> {
    // A panic while holding the lock leaves MPI no worse off than before
    // the call, so a poisoned lock is still usable.
    MPI_CALLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
