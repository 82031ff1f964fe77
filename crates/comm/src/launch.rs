//! How this process was started. Compiled with or without MPI support, so
//! a binary built without it can still tell that `mpirun` started it and
//! refuse to run N independent copies of a benchmark.

/// Variables that a launcher sets in every process it starts:
/// Open MPI's `mpirun`, PMI-1/PMI-2 (MPICH's hydra, `srun --mpi=pmi2`),
/// PMIx (`srun --mpi=pmix`, Open MPI 5) and MPICH's hydra.
const LAUNCHER_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMI_RANK",
    "PMIX_RANK",
    "MPI_LOCALNRANKS",
];

/// True if an MPI launcher (`mpirun`, `mpiexec`, `srun`) started this
/// process, judged from the environment it leaves behind.
pub fn launched_under_mpi() -> bool {
    launched_under_mpi_in(|name| std::env::var_os(name).is_some())
}

/// The number of processes the launcher started, where it says so.
pub fn launcher_world_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// This process's rank as the launcher numbered it, where it says so;
/// used to let only rank 0 report errors met before MPI is started.
pub fn launcher_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// The rule behind [`launched_under_mpi`], over any environment.
fn launched_under_mpi_in(has: impl Fn(&str) -> bool) -> bool {
    // A Slurm batch script also has SLURM_PROCID; only a job step started
    // by srun has SLURM_STEP_ID as well, so both are required.
    LAUNCHER_VARS.iter().any(|v| has(v)) || (has("SLURM_PROCID") && has("SLURM_STEP_ID"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [&'static str]) -> impl Fn(&str) -> bool {
        move |name| vars.contains(&name)
    }

    #[test]
    fn plain_shell_is_not_mpi() {
        assert!(!launched_under_mpi_in(env(&["HOME", "PATH"])));
    }

    #[test]
    fn launchers_are_recognised() {
        assert!(launched_under_mpi_in(env(&["OMPI_COMM_WORLD_SIZE"])));
        assert!(launched_under_mpi_in(env(&["PMI_RANK", "PMI_SIZE"])));
        assert!(launched_under_mpi_in(env(&["PMIX_RANK"])));
        assert!(launched_under_mpi_in(env(&[
            "SLURM_PROCID",
            "SLURM_STEP_ID"
        ])));
    }

    #[test]
    fn slurm_batch_script_is_not_a_launch() {
        assert!(!launched_under_mpi_in(env(&[
            "SLURM_PROCID",
            "SLURM_JOB_ID"
        ])));
    }
}
