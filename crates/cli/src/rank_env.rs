//! Whether a launcher (mpirun, srun) started this process as one of
//! several ranks. Only some tools run across ranks (`Tool::ranks`); any
//! other, started so, would run a benchmark of its own in every rank, on
//! the same targets, and is refused ([`crate::tools::refuse_as_rank`]).
//! The processes a rank starts itself (`--stats`' collectors, `iolab
//! stats ...`) inherit the launcher's variables without being ranks, so a
//! rank marks its environment with its pid ([`mark`]) and only the
//! process whose pid the mark holds counts as the rank.

/// The variable a rank sets to its own pid; what it starts inherits it.
pub const MARK: &str = "IOLAB_RANK_PID";

/// Marks this process as a rank when a launcher started it as one of
/// several and no rank above it marked it already. Call it first in
/// `main`, before any thread starts (setting the environment while
/// another thread reads it is unsound).
pub fn mark() {
    if several().is_some() && std::env::var_os(MARK).is_none() {
        std::env::set_var(MARK, std::process::id().to_string());
    }
}

/// The launcher's process count (None when it does not say) when it
/// started this very process as one of several ranks; None for a
/// process started otherwise, `mpirun -n 1` and a process a rank started.
pub fn one_of_several() -> Option<Option<usize>> {
    let size = several()?;
    let own = std::process::id().to_string();
    (std::env::var(MARK).ok()? == own).then_some(size)
}

/// As [`one_of_several`], from the environment alone: the rule comm's
/// `connect` applies to a build without MPI (several copies unless the
/// launcher says one).
fn several() -> Option<Option<usize>> {
    if !iolab_comm::launched_under_mpi() {
        return None;
    }
    match iolab_comm::launcher_world_size() {
        Some(1) => None,
        n => Some(n),
    }
}
