//! A phase's failure, told to every task: the engines' tasks stop their
//! I/O at their first error but all learn the failure of the run.

use iolab_comm::Comm;
use iolab_core::Failure;

/// The failure of the lowest task that failed, known to every task
/// (collective: every task calls it once some task failed). A task that
/// did not fail gets the failed one's message.
pub fn first_failure(comm: &dyn Comm, mine: Option<Failure>) -> Option<Failure> {
    let text = mine.as_ref().map(|f| f.to_string()).unwrap_or_default();
    let all = comm.all_gather(text.as_bytes());
    let first = all.iter().find(|b| !b.is_empty())?;
    Some(mine.unwrap_or_else(|| Failure::other("peer", String::from_utf8_lossy(first))))
}
