//! A process's tasks as threads. Collectives go through the leader
//! (local task 0): threads deposit into slots, the leader exchanges one
//! framed buffer per process over the transport, and everyone reads the
//! shared answer.

use crate::{Comm, Transport};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

/// Locks a mutex, also after a task panicked while holding it: the data
/// behind these locks (slots, a barrier count) stays consistent at every
/// step, and a cancelled team only needs to get out.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A barrier that [`Gate::cancel`] opens for good, so that no task waits
/// for one that failed or died.
struct Gate {
    n: usize,
    /// (tasks waiting, generation)
    state: Mutex<(usize, u64)>,
    /// The generation, readable without the lock, for the spin.
    passed: AtomicU64,
    turn: Condvar,
    cancelled: AtomicBool,
    /// How long a waiter spins before it sleeps: zero when the team has
    /// more tasks than the machine has CPUs (a spinner would hold the
    /// CPU the last task needs to arrive).
    spin: Duration,
}

/// How long a waiter spins at most. A thread woken from a futex takes
/// tens of microseconds on a VM (measured here: 30-50 us), and the
/// phases a barrier fences are timed from their first task's start, so
/// a one-directory tree phase measured the wake-up more than its mkdir;
/// MPI's barrier polls, and IOR's mdtest under mpirun paid none of it.
const SPIN: Duration = Duration::from_micros(100);

impl Gate {
    fn new(n: usize) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
        Self {
            n,
            state: Mutex::new((0, 0)),
            passed: AtomicU64::new(0),
            turn: Condvar::new(),
            cancelled: AtomicBool::new(false),
            spin: if n <= cpus { SPIN } else { Duration::ZERO },
        }
    }

    /// Waits for all `n` tasks; false if the gate was cancelled.
    fn wait(&self) -> bool {
        let mut st = lock(&self.state);
        if self.is_cancelled() {
            return false;
        }
        st.0 += 1;
        if st.0 == self.n {
            st.0 = 0;
            st.1 += 1;
            self.passed.store(st.1, Ordering::Release);
            self.turn.notify_all();
            return true;
        }
        let gen = st.1;
        drop(st);
        if self.spun(gen) {
            return true;
        }
        let mut st = lock(&self.state);
        while st.1 == gen && !self.is_cancelled() {
            st = self.turn.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.1 != gen
    }

    /// Spins up to `self.spin` for generation `gen` to pass; true if it
    /// did (a cancel is left to the sleeping wait to see).
    fn spun(&self, gen: u64) -> bool {
        if self.spin.is_zero() {
            return false;
        }
        let t0 = Instant::now();
        loop {
            for _ in 0..64 {
                if self.passed.load(Ordering::Acquire) != gen {
                    return true;
                }
                std::hint::spin_loop();
            }
            if self.is_cancelled() || t0.elapsed() >= self.spin {
                return false;
            }
        }
    }

    fn cancel(&self) {
        let _st = lock(&self.state);
        self.cancelled.store(true, Ordering::SeqCst);
        self.turn.notify_all();
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// The tasks of this process and how they map onto global task ids.
pub struct Team {
    transport: Arc<dyn Transport>,
    local_tasks: usize,
    first_task: usize,
    /// Number of tasks on each rank, by rank.
    tasks_per_rank: Vec<usize>,
    total: usize,
    nodes: usize,
    barrier: Gate,
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
            barrier: Gate::new(local_tasks.max(1)),
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

    /// Opens every wait of this team for good (see [`Comm::cancel`]).
    pub fn cancel(&self) {
        self.barrier.cancel();
    }

    /// True once the team was cancelled.
    pub fn cancelled(&self) -> bool {
        self.barrier.is_cancelled()
    }

    /// What a collective answers once the team is cancelled: one empty
    /// contribution per task.
    fn empty_answer(&self) -> Arc<Vec<Vec<u8>>> {
        Arc::new(vec![Vec::new(); self.total])
    }

    fn leader_exchange(&self) {
        let slots = std::mem::take(&mut *lock(&self.slots));
        let mut framed = Vec::new();
        for s in &slots {
            framed.extend_from_slice(&(s.len() as u64).to_le_bytes());
            framed.extend_from_slice(s);
        }
        *lock(&self.slots) = vec![Vec::new(); self.local_tasks];
        let per_rank = self.transport.all_gather(&framed);
        let mut all = Vec::with_capacity(self.total);
        for (rank, buf) in per_rank.iter().enumerate() {
            let mut at = 0;
            for _ in 0..self.tasks_per_rank[rank] {
                let len = u64::from_le_bytes(buf[at..at + 8].try_into().unwrap_or([0; 8])) as usize;
                all.push(buf[at + 8..at + 8 + len].to_vec());
                at += 8 + len;
            }
        }
        *self.answer.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(all);
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
        if !self.team.barrier.wait() {
            return;
        }
        if self.team.transport.size() > 1 {
            if self.local == 0 {
                self.team.transport.barrier();
            }
            self.team.barrier.wait();
        }
    }

    fn all_gather(&self, mine: &[u8]) -> Arc<Vec<Vec<u8>>> {
        lock(&self.team.slots)[self.local] = mine.to_vec();
        if !self.team.barrier.wait() {
            return self.team.empty_answer();
        }
        if self.local == 0 {
            self.team.leader_exchange();
        }
        if !self.team.barrier.wait() {
            return self.team.empty_answer();
        }
        self.team
            .answer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn cancel(&self) {
        self.team.cancel();
    }

    fn cancelled(&self) -> bool {
        self.team.cancelled()
    }
}

/// Runs `f` once per local task, each on its own thread (task 0 of this
/// process on the calling thread, which MPI's funneled mode prefers), and
/// returns the local results in task order.
///
/// A task that panics cancels the team, so the others return from their
/// waits instead of hanging; the first panic is then resumed on the
/// calling thread. Under MPI the job is then aborted, once every local
/// task has returned, since the other ranks cannot learn of it through
/// collectives this rank no longer joins.
pub fn run_team<R: Send>(
    transport: Arc<dyn Transport>,
    local_tasks: usize,
    f: impl Fn(&dyn Comm) -> R + Sync,
) -> Vec<R> {
    let team = Team::new(transport, local_tasks);
    if local_tasks == 0 {
        return Vec::new();
    }
    let guarded = |i: usize| {
        let r = catch_unwind(AssertUnwindSafe(|| f(&team.task(i))));
        if r.is_err() {
            team.cancel();
        }
        r
    };
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..local_tasks)
            .map(|i| {
                let guarded = &guarded;
                s.spawn(move || guarded(i))
            })
            .collect();
        let mut out = vec![guarded(0)];
        // `guarded` catches every panic, so a join cannot fail; should
        // one, it counts as that task's panic.
        out.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(Err)));
        out
    });
    // A team cancelled by a task (Comm::cancel) left this rank out of the
    // collectives the other ranks still wait in: only aborting the job
    // frees them. The local tasks have returned, so their cleanup is done.
    if team.cancelled() && team.transport.size() > 1 {
        team.transport.abort(1);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::{run_local, CommExt};

    #[test]
    fn a_panicking_task_never_leaves_the_others_waiting() {
        for victim in [0usize, 2] {
            let r = std::panic::catch_unwind(|| {
                run_local(3, |c| {
                    c.barrier();
                    if c.task() == victim {
                        panic!("task {victim} dies");
                    }
                    // The others go on to collectives the victim never joins.
                    for _ in 0..3 {
                        c.barrier();
                        c.sum_u64(1);
                    }
                    c.cancelled()
                })
            });
            assert!(r.is_err(), "the panic reaches the caller");
        }
    }

    #[test]
    fn cancel_opens_every_wait() {
        let out = run_local(4, |c| {
            if c.task() == 1 {
                c.cancel();
                return (true, 0);
            }
            c.barrier();
            let all = c.all_gather(b"x");
            (c.cancelled(), all.iter().filter(|v| !v.is_empty()).count())
        });
        assert!(out.iter().all(|&(cancelled, _)| cancelled));
        assert!(
            out.iter().all(|&(_, n)| n < 4),
            "no real answer once cancelled"
        );
    }

    /// A waiter that spins and one that sleeps both see the generation
    /// pass, round after round, and both see a cancel: one made while
    /// it spins (at once) and one made once it sleeps (after the spin).
    #[test]
    fn the_gate_passes_and_cancels_spinning_or_sleeping() {
        use super::Gate;
        use std::time::Duration;
        let gate = Gate::new(2);
        std::thread::scope(|s| {
            let w = s.spawn(|| (0..1000).all(|_| gate.wait()));
            for i in 0..1000u32 {
                if i % 100 == 0 {
                    // The other waits longer than its spin: it sleeps.
                    std::thread::sleep(Duration::from_millis(1));
                }
                assert!(gate.wait(), "round {i}");
            }
            assert!(w.join().unwrap());
        });
        for pause in [Duration::ZERO, Duration::from_millis(5)] {
            let gate = Gate::new(2);
            std::thread::scope(|s| {
                let w = s.spawn(|| gate.wait());
                std::thread::sleep(pause);
                gate.cancel();
                assert!(!w.join().unwrap(), "cancelled after {pause:?}");
            });
        }
    }
}
