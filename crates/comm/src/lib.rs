//! One communicator abstraction for every engine. A *task* is what mdtest
//! calls a rank: the unit that owns a share of the work. Tasks run as
//! threads in one process, as MPI ranks, or as ranks x threads; engines see
//! only [`Comm`], whose task ids are global (rank x threads + thread).
//!
//! The design is two-level: a [`Transport`] connects processes (the single
//! process, or MPI), and a [`Team`] runs a process's tasks as threads and
//! funnels every collective through one leader thread per process.
//! [`connect`] picks the transport once at start-up: MPI (module `mpi`,
//! feature `mpi`) when a launcher started the process, else threads.
//! Before a run the ranks [`agree`](agree::agree) on their options and
//! on what their checks found, so that none starts alone, and a step
//! that failed on some task tells every task what failed
//! ([`failure::first_failure`]).
//!
//! ```
//! use iolab_comm::{run_local, CommExt};
//! let sums = run_local(4, |c| c.sum_u64(c.task() as u64 + 1));
//! assert_eq!(sums, vec![10, 10, 10, 10]);
//! ```

pub mod agree;
pub mod failure;
mod launch;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod side;
mod subset;
mod team;
mod transport;
mod world;

pub use launch::{launched_under_mpi, launcher_rank, launcher_world_size};
pub use subset::run_subset;
pub use team::{run_team, TaskComm, Team};
pub use transport::{SingleProcess, Transport};
pub use world::{connect, CommMode, ConnectError, UnknownMode, World};

use std::sync::Arc;

/// What a task sees of its peers. Object-safe; engines take `&dyn Comm`.
pub trait Comm: Sync {
    /// This task's global id, 0..tasks().
    fn task(&self) -> usize;
    /// Total number of tasks.
    fn tasks(&self) -> usize;
    /// Number of distinct nodes (host names) the tasks run on.
    fn nodes(&self) -> usize;
    /// Waits until every task reaches the barrier.
    fn barrier(&self);
    /// Every task contributes bytes; every task gets all contributions,
    /// indexed by task id.
    fn all_gather(&self, mine: &[u8]) -> Arc<Vec<Vec<u8>>>;
    /// Cancels every task's waits: barriers and collectives return at once
    /// (collectives with empty contributions) from now on, so that tasks
    /// never wait for one that failed or died. Local to this process's
    /// tasks; across MPI ranks a cancelled team aborts the job.
    fn cancel(&self) {}
    /// True once [`Comm::cancel`] was called, or a task panicked. A task
    /// that sees it must stop: collective answers are no longer real.
    fn cancelled(&self) -> bool {
        false
    }
    /// True if any task reported failure or a stop was requested anywhere;
    /// a collective, so every task gets the same answer.
    fn any(&self, flag: bool) -> bool {
        self.all_gather(&[flag as u8])
            .iter()
            .any(|v| v.first() == Some(&1))
    }
}

/// Reductions built on `all_gather`, for any communicator.
pub trait CommExt: Comm {
    /// Maximum of one u64 per task.
    fn max_u64(&self, v: u64) -> u64 {
        self.gather_u64(v).into_iter().max().unwrap_or(0)
    }
    /// Minimum of one u64 per task.
    fn min_u64(&self, v: u64) -> u64 {
        self.gather_u64(v).into_iter().min().unwrap_or(0)
    }
    /// Sum of one u64 per task.
    fn sum_u64(&self, v: u64) -> u64 {
        self.gather_u64(v).into_iter().sum()
    }
    /// One u64 per task, indexed by task id.
    fn gather_u64(&self, v: u64) -> Vec<u64> {
        self.all_gather(&v.to_le_bytes())
            .iter()
            .map(|b| u64::from_le_bytes(b.as_slice().try_into().unwrap_or([0; 8])))
            .collect()
    }
    /// Task `root`'s bytes, delivered to every task.
    fn broadcast(&self, root: usize, mine: &[u8]) -> Vec<u8> {
        let me = self.task() == root;
        let all = self.all_gather(if me { mine } else { &[] });
        all.get(root).cloned().unwrap_or_default()
    }
}

impl<C: Comm + ?Sized> CommExt for C {}

/// Runs `f` on `tasks` threads of this process (no MPI) and returns each
/// task's result in task order.
pub fn run_local<R: Send>(tasks: usize, f: impl Fn(&dyn Comm) -> R + Sync) -> Vec<R> {
    run_team(Arc::new(SingleProcess::new()), tasks, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_agree_on_every_task() {
        let out = run_local(5, |c| {
            (
                c.max_u64(c.task() as u64 * 3),
                c.min_u64(c.task() as u64 + 7),
                c.tasks(),
                c.nodes(),
            )
        });
        assert!(out.iter().all(|&o| o == (12, 7, 5, 1)));
    }

    #[test]
    fn gather_is_in_task_order_and_reusable() {
        let out = run_local(3, |c| {
            let mut seen = Vec::new();
            for round in 0..50u8 {
                let all = c.all_gather(&[c.task() as u8, round]);
                seen.push(all.iter().map(|v| (v[0], v[1])).collect::<Vec<_>>());
            }
            seen
        });
        for per_task in out {
            for (round, v) in per_task.into_iter().enumerate() {
                assert_eq!(
                    v,
                    vec![(0, round as u8), (1, round as u8), (2, round as u8)]
                );
            }
        }
    }

    #[test]
    fn broadcast_and_any() {
        let out = run_local(4, |c| {
            let b = c.broadcast(2, format!("from {}", c.task()).as_bytes());
            (
                String::from_utf8(b).unwrap(),
                c.any(c.task() == 3),
                c.any(false),
            )
        });
        assert!(out
            .iter()
            .all(|o| o == &("from 2".to_string(), true, false)));
    }

    #[test]
    fn barrier_orders_phases() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let hits = AtomicUsize::new(0);
        let out = run_local(4, |c| {
            hits.fetch_add(1, Ordering::SeqCst);
            c.barrier();
            hits.load(Ordering::SeqCst)
        });
        assert_eq!(out, vec![4; 4]);
    }
}
