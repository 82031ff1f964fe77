//! Process-level transports. Only one thread per process (the team
//! leader) calls a transport, and never two at once.

/// Connects the processes of a run: the single process, or MPI ranks.
pub trait Transport: Send + Sync {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// Number of processes.
    fn size(&self) -> usize;
    /// Waits for every process.
    fn barrier(&self);
    /// Every process contributes bytes; returns all of them by rank.
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// A sub-group of the processes that pass `Some(color)` with the same
    /// color (MPI_Comm_split); `None` for processes that pass `None`.
    /// Collective over this transport.
    fn split(&self, color: Option<u32>) -> Option<Box<dyn Transport>>;
    /// A short name for reports (`threads`, `mpi`).
    fn kind(&self) -> &'static str;
    /// Ends every process of the job after a failure that left this one
    /// unable to take part in collectives (a task died): the others would
    /// otherwise wait forever. A single process has nobody to tell.
    fn abort(&self, code: i32) {
        let _ = code;
    }
}

/// The transport of a run without MPI: one process, nothing to exchange.
#[derive(Debug, Default)]
pub struct SingleProcess;

impl SingleProcess {
    /// The single process.
    pub fn new() -> Self {
        Self
    }
}

impl Transport for SingleProcess {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn barrier(&self) {}
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn split(&self, color: Option<u32>) -> Option<Box<dyn Transport>> {
        color.map(|_| Box::new(SingleProcess) as Box<dyn Transport>)
    }
    fn kind(&self) -> &'static str {
        "threads"
    }
}
