//! A process's tasks as threads. Collectives go through the leader
//! (local task 0): threads deposit into slots, the leader exchanges one
//! framed buffer per process over the transport, and everyone reads the
//! shared answer.

use crate::{Comm, Transport};
use std::sync::{Arc, Barrier, Mutex, RwLock};

/// The tasks of this process and how they map onto global task ids.
pub struct Team {
    transport: Arc<dyn Transport>,
    local_tasks: usize,
    first_task: usize,
    /// Number of tasks on each rank, by rank.
    tasks_per_rank: Vec<usize>,
    total: usize,
    nodes: usize,
    barrier: Barrier,
    slots: Mutex<Vec<Vec<u8>>>,
    answer: RwLock<Arc<Vec<Vec<u8>>>>,
}

impl Team {
    /// Builds the team of this process: `local_tasks` threads here (may be
    /// 0 on a rank that only watches). Collective over the transport.
    pub fn new(transport: Arc<dyn Transport>, local_tasks: usize) -> Self {
        let host = iolab_core::env::hostname();
        let mut mine = (local_tasks as u64).to_le_bytes().to_vec();
        mine.extend_from_slice(host.as_bytes());
        let all = transport.all_gather(&mine);
        let tasks_per_rank: Vec<usize> = all
            .iter()
            .map(|b| u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])) as usize)
            .collect();
        let mut hosts: Vec<&[u8]> = all.iter().map(|b| &b[8..]).collect();
        hosts.sort();
        hosts.dedup();
        let first_task = tasks_per_rank[..transport.rank()].iter().sum();
        Self {
            total: tasks_per_rank.iter().sum(),
            nodes: hosts.len(),
            tasks_per_rank,
            first_task,
            local_tasks,
            barrier: Barrier::new(local_tasks.max(1)),
            slots: Mutex::new(vec![Vec::new(); local_tasks]),
            answer: RwLock::new(Arc::new(Vec::new())),
            transport,
        }
    }

    /// The handle task `local` of this process works through.
    pub fn task(&self, local: usize) -> TaskComm<'_> {
        TaskComm { team: self, local }
    }

    /// Total tasks over all ranks.
    pub fn total_tasks(&self) -> usize {
        self.total
    }

    /// Tasks on this rank.
    pub fn local_tasks(&self) -> usize {
        self.local_tasks
    }

    fn leader_exchange(&self) {
        let slots = std::mem::take(&mut *self.slots.lock().unwrap());
        let mut framed = Vec::new();
        for s in &slots {
            framed.extend_from_slice(&(s.len() as u64).to_le_bytes());
            framed.extend_from_slice(s);
        }
        *self.slots.lock().unwrap() = vec![Vec::new(); self.local_tasks];
        let per_rank = self.transport.all_gather(&framed);
        let mut all = Vec::with_capacity(self.total);
        for (rank, buf) in per_rank.iter().enumerate() {
            let mut at = 0;
            for _ in 0..self.tasks_per_rank[rank] {
                let len = u64::from_le_bytes(buf[at..at + 8].try_into().unwrap()) as usize;
                all.push(buf[at + 8..at + 8 + len].to_vec());
                at += 8 + len;
            }
        }
        *self.answer.write().unwrap() = Arc::new(all);
    }
}

/// One task's view of the team.
pub struct TaskComm<'a> {
    team: &'a Team,
    local: usize,
}

impl Comm for TaskComm<'_> {
    fn task(&self) -> usize {
        self.team.first_task + self.local
    }

    fn tasks(&self) -> usize {
        self.team.total
    }

    fn nodes(&self) -> usize {
        self.team.nodes
    }

    fn barrier(&self) {
        self.team.barrier.wait();
        if self.team.transport.size() > 1 {
            if self.local == 0 {
                self.team.transport.barrier();
            }
            self.team.barrier.wait();
        }
    }

    fn all_gather(&self, mine: &[u8]) -> Arc<Vec<Vec<u8>>> {
        self.team.slots.lock().unwrap()[self.local] = mine.to_vec();
        self.team.barrier.wait();
        if self.local == 0 {
            self.team.leader_exchange();
        }
        self.team.barrier.wait();
        self.team.answer.read().unwrap().clone()
    }
}

/// Runs `f` once per local task, each on its own thread (task 0 of this
/// process on the calling thread, which MPI's funneled mode prefers), and
/// returns the local results in task order.
pub fn run_team<R: Send>(
    transport: Arc<dyn Transport>,
    local_tasks: usize,
    f: impl Fn(&dyn Comm) -> R + Sync,
) -> Vec<R> {
    let team = Team::new(transport, local_tasks);
    if local_tasks == 0 {
        return Vec::new();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..local_tasks)
            .map(|i| {
                let team = &team;
                let f = &f;
                s.spawn(move || f(&team.task(i)))
            })
            .collect();
        let mut out = vec![f(&team.task(0))];
        out.extend(handles.into_iter().map(|h| match h.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }));
        out
    })
}
