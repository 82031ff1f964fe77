//! Running a benchmark on the first n tasks only, as mdtest's task sweep
//! (`-f`, `-l`, `-s`) does: ranks that hold none of those tasks sit out.

use crate::{run_team, Comm, Transport};
use std::sync::Arc;

/// Runs `f` on the first `active_tasks` global tasks and returns this
/// process's results in task order, empty on a rank that holds none of
/// them. Each rank offers `local_tasks` threads (as for [`run_team`]) and
/// runs only those whose global id is below `active_tasks`; the active
/// ranks get a transport of their own (`MPI_Comm_split`), so collectives
/// in `f` see exactly `min(active_tasks, all tasks)` tasks, with the same
/// ids they have in the full run. Collective over `transport`.
pub fn run_subset<R: Send>(
    transport: Arc<dyn Transport>,
    local_tasks: usize,
    active_tasks: usize,
    f: impl Fn(&dyn Comm) -> R + Sync,
) -> Vec<R> {
    let active_here = active_local_tasks(&*transport, local_tasks, active_tasks);
    let color = (active_here > 0).then_some(0);
    match transport.split(color) {
        Some(sub) => run_team(Arc::from(sub), active_here, f),
        None => Vec::new(),
    }
}

/// How many of this rank's `local_tasks` have a global id below
/// `active_tasks`. Collective: ranks may offer different thread counts.
fn active_local_tasks(transport: &dyn Transport, local_tasks: usize, active_tasks: usize) -> usize {
    let per_rank = transport.all_gather(&(local_tasks as u64).to_le_bytes());
    let first_task: usize = per_rank[..transport.rank()]
        .iter()
        .map(|b| u64::from_le_bytes(b.as_slice().try_into().unwrap_or([0; 8])) as usize)
        .sum();
    active_tasks.saturating_sub(first_task).min(local_tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CommExt, SingleProcess};

    fn local() -> Arc<dyn Transport> {
        Arc::new(SingleProcess::new())
    }

    #[test]
    fn runs_only_the_first_tasks() {
        for active in 1..=4 {
            let out = run_subset(local(), 4, active, |c| (c.task(), c.tasks(), c.sum_u64(1)));
            let want: Vec<_> = (0..active).map(|t| (t, active, active as u64)).collect();
            assert_eq!(out, want);
        }
    }

    #[test]
    fn more_active_than_tasks_runs_them_all() {
        let out = run_subset(local(), 3, 10, |c| c.tasks());
        assert_eq!(out, vec![3, 3, 3]);
    }

    #[test]
    fn no_active_task_sits_out() {
        let out = run_subset(local(), 3, 0, |c| c.task());
        assert!(out.is_empty());
    }
}
