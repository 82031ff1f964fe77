//! What every step of one test needs on one task, made once when the
//! test starts: the communicator, the files, the test, where the tasks
//! sit, and the seeds all tasks agree on.

use crate::config::Test;
use crate::file::Files;
use crate::plan::{self, Geometry, Offsets};
use crate::results::Access;
use iolab_comm::{Comm, CommExt, Transport};
use iolab_core::live::{Board, Recorder};
use std::path::PathBuf;

/// Where the tasks record their transfers for live figures (`--live`):
/// the run's board, and the phase name the rows carry in place of IOR's
/// access name (io500 names its phases `ior-easy-write`, ...).
#[derive(Debug, Clone, Copy, Default)]
pub struct Live<'a> {
    /// The board; None: nothing is recorded.
    pub board: Option<&'a Board>,
    /// The rows' phase for every access of the test, in place of
    /// `write` and `read`.
    pub name: Option<&'a str>,
}

impl Live<'_> {
    /// Task `task`'s recorder for `access` (taken once per access, before
    /// its transfers; one that records nothing without a board).
    pub fn recorder(&self, access: Access, task: u64) -> Recorder {
        match self.board {
            Some(b) => b.recorder(self.name.unwrap_or(access.name()), task as usize),
            None => Recorder::off(),
        }
    }
}

/// One task's view of a running test.
pub struct Ctx<'a> {
    /// The test's tasks.
    pub comm: &'a dyn Comm,
    /// Its files on the backend.
    pub files: Files<'a>,
    /// The test.
    pub test: &'a Test,
    /// Tasks and nodes.
    pub geo: Geometry,
    /// Host of each task (for outlier warnings).
    pub hosts: Vec<String>,
    /// Seed of `-z` (the user's, or task 0's clock).
    pub random_seed: u32,
    /// Wall time the test started (for `-T`), ns.
    pub started_ns: u64,
    /// The run's cancellation token: the transfer loops stop at their
    /// next transfer once it is cancelled (Ctrl-C, SIGTERM).
    pub cancel: &'a iolab_core::CancelToken,
    /// Live figures.
    pub live: Live<'a>,
}

impl Ctx<'_> {
    /// This task's number.
    pub fn rank(&self) -> u64 {
        self.comm.task() as u64
    }

    /// The file task `pretend` works on in iteration `rep`, and the
    /// directory `-u` gives it.
    pub fn file(&self, pretend: u64, rep: u64) -> (PathBuf, Option<PathBuf>) {
        plan::file_name(&self.test.params, pretend, self.geo.tasks, rep)
    }

    /// The offsets of task `pretend`'s transfers (for `-z -z`, within a
    /// file of `file_bytes`; None when that holds no block).
    pub fn offsets(&self, pretend: u64, file_bytes: u64, rep: u64) -> Option<Offsets> {
        let p = &self.test.params;
        match p.random_offset {
            0 => Some(Offsets::sequential(p, self.geo.tasks, pretend)),
            1 => {
                let seed = match p.file_per_proc {
                    true => self.random_seed.wrapping_add(pretend as u32),
                    false => self.random_seed,
                };
                Some(Offsets::shuffled(p, self.geo.tasks, pretend, seed))
            }
            _ => {
                let seed = iolab_core::random::mix(
                    u64::from(self.random_seed) << 32 ^ (pretend + 1) ^ rep << 20,
                );
                Offsets::random_blocks(p, file_bytes, seed)
            }
        }
    }

    /// `-T`: the test's time is up; no further step starts.
    pub fn out_of_time(&self) -> bool {
        let m = self.test.params.max_time_min;
        m > 0 && iolab_core::clock::wall_ns() >= self.started_ns + m * 60_000_000_000
    }
}

/// Every task's host in the whole run, in task order: each rank's host
/// once per task thread it runs. Collective over `t`.
pub fn world_hosts(t: &dyn Transport, threads: usize) -> Vec<String> {
    let mut mine = (threads as u64).to_le_bytes().to_vec();
    mine.extend_from_slice(iolab_core::env::hostname().as_bytes());
    t.all_gather(&mine)
        .iter()
        .filter(|b| b.len() >= 8)
        .flat_map(|b| {
            let n = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
            let host = String::from_utf8_lossy(&b[8..]).into_owned();
            std::iter::repeat_n(host, n as usize)
        })
        .collect()
}

/// Where the tasks of `comm` run, and every task's host. The node
/// figures (nodes, tasks on node 0, block mapping) come from `world`,
/// every task of the run, as IOR takes them from MPI_COMM_WORLD even
/// when `-N` runs a test on fewer tasks; None: from `comm` itself.
/// `-O numNodes` and `-O numTasksOnNode0` override them.
pub fn geometry(comm: &dyn Comm, test: &Test, world: Option<&[String]>) -> (Geometry, Vec<String>) {
    let me = iolab_core::env::hostname();
    let hosts: Vec<String> = comm
        .all_gather(me.as_bytes())
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    let all = world.unwrap_or(&hosts);
    let first = all.first().cloned().unwrap_or_default();
    let mut distinct = all.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let p = &test.params;
    let geo = Geometry {
        tasks: hosts.len() as u64,
        nodes: p.num_nodes.unwrap_or(distinct.len() as u64).max(1),
        tasks_on_node0: p
            .tasks_on_node0
            .unwrap_or(all.iter().filter(|h| **h == first).count() as u64)
            .max(1),
        block_mapping: all.len() > 1 && all[1] == first,
    };
    (geo, hosts)
}

/// Task 0's number, known to every task (a seed or signature from its
/// clock when the user gave none).
pub fn agreed(comm: &dyn Comm, given: Option<u32>) -> u32 {
    let mine = given.unwrap_or_else(|| (iolab_core::clock::wall_ns() / 1_000_000_000) as u32);
    let b = comm.broadcast(0, &mine.to_le_bytes());
    b.as_slice().try_into().map_or(mine, u32::from_le_bytes)
}

/// Now, as IOR prints times (ctime(3) without its newline:
/// `Sat Nov 28 17:53:10 2026`), in the local zone.
pub fn ctime_now() -> String {
    iolab_core::clock::format_local(
        iolab_core::clock::wall_ns() / 1_000_000_000,
        "%a %b %e %H:%M:%S %Y",
    )
}
