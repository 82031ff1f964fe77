//! Where threads run and how they are treated: processor affinity
//! (`-processor`, `-singleproc`, `-roundrobin`), real-time priority
//! (`-maxpri`) and memory locking (`-processlock`). Each returns the
//! system's refusal as text for the report instead of failing the run.

use crate::parse::config::GlobalOpts;
use crate::parse::values::RoundRobin;

/// The processor for a thread: `-processor` of its target wins, then
/// `-singleproc`, then `-roundrobin` over the thread's run-wide ordinal.
pub fn cpu_for(
    g: &GlobalOpts,
    target_cpu: Option<usize>,
    ordinal: usize,
    cpus: usize,
) -> Option<usize> {
    if target_cpu.is_some() {
        return target_cpu;
    }
    if g.singleproc.is_some() {
        return g.singleproc;
    }
    match g.roundrobin? {
        RoundRobin::All => Some(ordinal % cpus.max(1)),
        RoundRobin::Count(n) => Some(ordinal % n.min(cpus).max(1)),
    }
}

/// A placement the system refused; the run goes on without it (a note).
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The thread could not be pinned.
    #[error("cannot pin to processor {cpu}: {source}")]
    Pin {
        /// The processor.
        cpu: usize,
        /// Why.
        source: std::io::Error,
    },
    /// `-maxpri` not permitted.
    #[error("-maxpri: real-time priority not permitted: {0}")]
    Priority(#[source] std::io::Error),
    /// `-processlock` not permitted.
    #[error("-processlock: mlockall not permitted: {0}")]
    Lock(#[source] std::io::Error),
}

/// Pins the calling thread to `cpu`.
pub fn pin_current(cpu: usize) -> Result<(), PlacementError> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; the
    // syscall reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(PlacementError::Pin {
                cpu,
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

/// Gives the calling thread the highest SCHED_FIFO priority.
pub fn max_priority_current() -> Result<(), PlacementError> {
    // SAFETY: sched_param is plain data passed by pointer.
    unsafe {
        let max = libc::sched_get_priority_max(libc::SCHED_FIFO);
        let p = libc::sched_param {
            sched_priority: max,
        };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
            return Err(PlacementError::Priority(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Locks the whole process in memory (`-processlock`).
pub fn lock_process() -> Result<(), PlacementError> {
    // SAFETY: mlockall has no memory-safety preconditions.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(PlacementError::Lock(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Undoes `lock_process` at the end of the run.
pub fn unlock_process() {
    // SAFETY: as above.
    unsafe { libc::munlockall() };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_of_placement_options() {
        let mut g = GlobalOpts::default();
        assert_eq!(cpu_for(&g, None, 3, 8), None);
        g.roundrobin = Some(RoundRobin::Count(2));
        assert_eq!(
            (cpu_for(&g, None, 0, 8), cpu_for(&g, None, 3, 8)),
            (Some(0), Some(1))
        );
        g.singleproc = Some(5);
        assert_eq!(cpu_for(&g, None, 3, 8), Some(5));
        assert_eq!(cpu_for(&g, Some(1), 3, 8), Some(1));
    }

    #[test]
    fn pinning_to_cpu0_works() {
        std::thread::spawn(|| pin_current(0).unwrap())
            .join()
            .unwrap();
    }
}
