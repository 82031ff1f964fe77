//! Choosing, once at start-up, how this process reaches its peers: alone
//! (tasks are threads) or through MPI (tasks are ranks x threads).

use crate::launch::{launched_under_mpi, launcher_world_size};
use crate::{SingleProcess, Transport};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// How tasks are spread: auto, threads or mpi (the CLI always asks for auto).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommMode {
    /// MPI if an MPI launcher started this process, else threads.
    #[default]
    Auto,
    /// One process; every task is a thread.
    Threads,
    /// MPI ranks x threads; an error in a build without MPI.
    Mpi,
}

/// A `--comm` word that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown comm mode '{0}': use auto, threads or mpi")]
pub struct UnknownMode(pub String);

impl FromStr for CommMode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, UnknownMode> {
        match s {
            "auto" => Ok(Self::Auto),
            "threads" => Ok(Self::Threads),
            "mpi" => Ok(Self::Mpi),
            _ => Err(UnknownMode(s.to_string())),
        }
    }
}

/// Why [`connect`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// MPI was asked for, or `mpirun` started several copies of a binary
    /// built without MPI, which would run as many independent benchmarks.
    NotBuiltWithMpi,
    /// MPI is there but would not start; the message says why.
    MpiInit(String),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotBuiltWithMpi => write!(
                f,
                "this iolab was built without MPI support: rebuild with \
                 `cargo build --release --features mpi`, or run it without \
                 mpirun/srun (`--tasks N` runs N tasks as threads of one process)"
            ),
            Self::MpiInit(why) => write!(f, "cannot start MPI: {why}"),
        }
    }
}

impl std::error::Error for ConnectError {}

/// This process's link to its peers. Keep it alive for the whole run:
/// dropping it finalises MPI.
pub struct World {
    transport: Arc<dyn Transport>,
    #[cfg(feature = "mpi")]
    _mpi: Option<crate::mpi::MpiRuntime>,
}

impl World {
    /// The transport to hand to `run_team` / `run_subset`.
    pub fn transport(&self) -> Arc<dyn Transport> {
        self.transport.clone()
    }

    /// A side channel between the processes (`None` in one process, or
    /// once taken): for the live-figures sampler to send each interval
    /// to rank 0.
    pub fn side_channel(&self) -> Option<Box<dyn crate::side::SideChannel>> {
        #[cfg(feature = "mpi")]
        if let Some(m) = &self._mpi {
            return m.side_channel();
        }
        None
    }

    fn single_process() -> Self {
        Self {
            transport: Arc::new(SingleProcess::new()),
            #[cfg(feature = "mpi")]
            _mpi: None,
        }
    }
}

/// Connects this process as `mode` says, initialising MPI if it is used.
/// Call once, early, on the main thread.
pub fn connect(mode: CommMode) -> Result<World, ConnectError> {
    let plan = plan(
        mode,
        launched_under_mpi(),
        launcher_world_size(),
        cfg!(feature = "mpi"),
    )?;
    match plan {
        Plan::Threads => Ok(World::single_process()),
        Plan::Mpi => connect_mpi(),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Plan {
    Threads,
    Mpi,
}

/// The decision behind [`connect`], from what the environment says.
fn plan(
    mode: CommMode,
    launched: bool,
    launcher_size: Option<usize>,
    built_with_mpi: bool,
) -> Result<Plan, ConnectError> {
    let want_mpi = match mode {
        CommMode::Threads => false,
        CommMode::Mpi => true,
        CommMode::Auto => launched,
    };
    if !want_mpi {
        return Ok(Plan::Threads);
    }
    if built_with_mpi {
        return Ok(Plan::Mpi);
    }
    // `mpirun -n 1` of a build without MPI is still one correct run.
    if mode == CommMode::Auto && launcher_size == Some(1) {
        return Ok(Plan::Threads);
    }
    Err(ConnectError::NotBuiltWithMpi)
}

#[cfg(feature = "mpi")]
fn connect_mpi() -> Result<World, ConnectError> {
    let runtime = crate::mpi::init().map_err(|e| ConnectError::MpiInit(e.to_string()))?;
    Ok(World {
        transport: runtime.world(),
        _mpi: Some(runtime),
    })
}

#[cfg(not(feature = "mpi"))]
fn connect_mpi() -> Result<World, ConnectError> {
    Err(ConnectError::NotBuiltWithMpi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommMode::*;

    #[test]
    fn threads_unless_launched_or_asked() {
        assert_eq!(plan(Auto, false, None, true), Ok(Plan::Threads));
        assert_eq!(plan(Threads, true, Some(4), true), Ok(Plan::Threads));
        assert_eq!(plan(Auto, true, Some(4), true), Ok(Plan::Mpi));
        assert_eq!(plan(Mpi, false, None, true), Ok(Plan::Mpi));
    }

    #[test]
    fn build_without_mpi_refuses_several_copies() {
        let refused = Err(ConnectError::NotBuiltWithMpi);
        assert_eq!(plan(Auto, true, Some(2), false), refused);
        assert_eq!(plan(Auto, true, None, false), refused);
        assert_eq!(plan(Mpi, false, None, false), refused);
        assert_eq!(plan(Auto, true, Some(1), false), Ok(Plan::Threads));
    }

    #[test]
    fn modes_parse() {
        assert_eq!("mpi".parse(), Ok(Mpi));
        assert_eq!("threads".parse(), Ok(Threads));
        assert!("ranks".parse::<CommMode>().is_err());
    }

    #[test]
    fn threads_mode_is_one_process() {
        let world = connect(Threads).unwrap();
        assert_eq!(world.transport().kind(), "threads");
        assert_eq!(world.transport().size(), 1);
    }
}
