//! The first failure among the tasks, told to every task whole: the
//! operation, path, errno and kind of the task that failed, its message
//! saying which task that was. Under MPI the rank that writes the
//! outputs (rank 0) is often one that did not fail; a line of text
//! about the failure would lose what the JSON's failure object is for.
//!
//! ```
//! use iolab_comm::{failure::first_failure, run_local};
//! use iolab_core::Failure;
//! let seen = run_local(3, |c| {
//!     let mine = (c.task() == 2).then(|| {
//!         Failure::io("mkdir", Some("/x/d.2".into()), &std::io::Error::from_raw_os_error(17))
//!     });
//!     first_failure(c, mine)
//! });
//! let told = seen[0].clone().unwrap();
//! assert_eq!((told.op.as_str(), told.path.as_deref(), told.errno), ("mkdir", Some("/x/d.2"), Some(17)));
//! assert!(told.message.starts_with("task 2: "), "{}", told.message);
//! assert!(!seen[2].clone().unwrap().message.starts_with("task "), "its own, as it was");
//! ```

use crate::{Comm, Transport};
use iolab_core::Failure;

/// The failure of the lowest-numbered task that failed, given to every
/// task: a task that failed keeps its own; the others get that task's
/// failure as [`from_task`] names it. When no task says it failed but
/// the communicator was cancelled (a task died, or stopped without
/// joining this collective), [`peer_stopped`]: what failed cannot be
/// known here. `None` when no task failed.
///
/// Collective: every task calls it once, at the same point, whether or
/// not it failed.
pub fn first_failure(comm: &dyn Comm, mine: Option<Failure>) -> Option<Failure> {
    let all = comm.all_gather(&encode(mine.as_ref()));
    if mine.is_some() {
        return mine;
    }
    match lowest(&all) {
        Some((task, f)) => Some(from_task(task, f)),
        None if comm.cancelled() => Some(peer_stopped()),
        None => None,
    }
}

/// As [`first_failure`], among the processes of `t` rather than tasks:
/// for a step that every process takes once (a sweep's agreement after
/// each task count), the message naming the rank.
///
/// Collective over `t`.
pub fn first_rank_failure(t: &dyn Transport, mine: Option<Failure>) -> Option<Failure> {
    let all = t.all_gather(&encode(mine.as_ref()));
    if mine.is_some() {
        return mine;
    }
    lowest(&all).map(|(rank, f)| named("rank", rank, f))
}

/// Task `task`'s failure as another task reports it: the same
/// operation, path, errno and kind, the message saying which task
/// failed (`task 3: No space left on device (os error 28)`).
pub fn from_task(task: usize, f: Failure) -> Failure {
    named("task", task, f)
}

/// What a task reports that stopped because another failed in a way
/// that left no word of what failed (it died, or cancelled the
/// communicator): the failed task's own failure is the one to show.
pub fn peer_stopped() -> Failure {
    Failure::other("peer", "another task failed; this one stopped with it")
}

fn named(who: &str, n: usize, f: Failure) -> Failure {
    Failure {
        message: format!("{who} {n}: {}", f.message),
        ..f
    }
}

/// A task's contribution: a leading byte (MPI refuses a gather in which
/// every contribution is empty), then its failure as JSON, if any.
fn encode(f: Option<&Failure>) -> Vec<u8> {
    let mut b = vec![b'-'];
    if let Some(f) = f {
        // A Failure is strings and numbers: serialising it cannot fail;
        // were it to, the task says so rather than pass for one that
        // did not fail.
        let json = serde_json::to_vec(f).unwrap_or_else(|e| {
            let stand_in = Failure::other(&f.op, format!("{f} (unsendable: {e})"));
            serde_json::to_vec(&stand_in).unwrap_or_default()
        });
        b.extend_from_slice(&json);
    }
    b
}

/// The lowest-numbered contribution that holds a failure, with its
/// number. One that cannot be read back (never sent by this code) still
/// counts as a failure, as text: it must not pass for success.
fn lowest(all: &[Vec<u8>]) -> Option<(usize, Failure)> {
    all.iter().enumerate().find_map(|(n, b)| {
        let body = b.get(1..).filter(|s| !s.is_empty())?;
        let f = serde_json::from_slice(body)
            .unwrap_or_else(|_| Failure::other("peer", String::from_utf8_lossy(body).into_owned()));
        Some((n, f))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_local;
    use iolab_core::FailureKind;

    fn enospc(path: &str) -> Failure {
        Failure::io(
            "write",
            Some(path.into()),
            &std::io::Error::from_raw_os_error(28),
        )
    }

    #[test]
    fn every_task_learns_the_lowest_failing_task_whole() {
        let out = run_local(4, |c| {
            let mine = match c.task() {
                1 => Some(enospc("/x/f.1").of_kind(FailureKind::Output)),
                3 => Some(enospc("/x/f.3")),
                _ => None,
            };
            first_failure(c, mine)
        });
        let [t0, t1, t2, t3] = out.try_into().unwrap();
        for told in [t0.unwrap(), t2.unwrap()] {
            assert_eq!(told.op, "write");
            assert_eq!(told.path.as_deref(), Some("/x/f.1"));
            assert_eq!(told.errno, Some(28));
            assert_eq!(told.kind, FailureKind::Output, "the kind decides the exit");
            assert_eq!(
                told.message,
                "task 1: No space left on device (os error 28)"
            );
        }
        assert_eq!(
            t1.unwrap(),
            enospc("/x/f.1").of_kind(FailureKind::Output),
            "its own"
        );
        assert_eq!(t3.unwrap(), enospc("/x/f.3"), "its own, not task 1's");
    }

    #[test]
    fn no_failure_is_none_and_a_cancel_is_a_peer() {
        assert!(run_local(3, |c| first_failure(c, None))
            .iter()
            .all(Option::is_none));
        let out = run_local(2, |c| {
            if c.task() == 1 {
                c.cancel();
                return None;
            }
            first_failure(c, None)
        });
        assert_eq!(out[0].as_ref().map(|f| f.op.as_str()), Some("peer"));
    }

    #[test]
    fn ranks_are_named_and_the_unreadable_still_fails() {
        let t = crate::SingleProcess::new();
        assert_eq!(first_rank_failure(&t, None), None);
        let own = enospc("/y");
        assert_eq!(first_rank_failure(&t, Some(own.clone())), Some(own.clone()));
        let (n, f) = lowest(&[b"-".to_vec(), encode(Some(&own))]).unwrap();
        assert_eq!(
            named("rank", n, f).message,
            "rank 1: No space left on device (os error 28)"
        );
        let (n, f) = lowest(&[b"".to_vec(), b"-{garbled".to_vec()]).unwrap();
        assert_eq!(
            (n, f.op.as_str(), f.message.as_str()),
            (1, "peer", "{garbled")
        );
    }
}
