//! MPI's end: `MPI_Finalize` runs when the last holder of the
//! [`Finalizer`] (the runtime, every transport, the side channel) is gone.

use super::lock::serialized;
use mpi::environment::Universe;
use std::mem::ManuallyDrop;

/// Calls `MPI_Finalize` once the runtime and every transport made from it
/// are gone, so no communicator is freed after finalisation.
pub(super) struct Finalizer(pub(super) ManuallyDrop<Universe>);

impl Drop for Finalizer {
    fn drop(&mut self) {
        let _mpi = serialized();
        // SAFETY: dropped exactly once, here; nothing reads it afterwards.
        unsafe { ManuallyDrop::drop(&mut self.0) };
    }
}
