//! Ctrl-C at once to ranks that Open MPI started.
//!
//! A terminal sends Ctrl-C's SIGINT to its foreground process group.
//! Open MPI's mpirun and orted put each rank in a process group of its
//! own, so the ranks do not get it: mpirun passes it on as SIGTERM only
//! `odls_base_sigkill_timeout` seconds later and sends SIGKILL as long
//! again after that, which leaves the ranks one such period to stop and
//! remove what they made, after creating for one more.
//!
//! The rank cannot simply join mpirun's group: mpirun signals a rank's
//! whole group (`kill(-getpgid(rank))`), so its SIGCONT, SIGTERM and
//! SIGKILL would then hit mpirun itself and everything else in the
//! user's job (a `| tee`, the batch script). Tried with Open MPI 4.1:
//! mpirun took its own SIGTERM as a second Ctrl-C and exited at once,
//! leaving the ranks running without their output.
//!
//! Instead a small relay process, a child of the rank, joins the
//! launcher's group and passes each SIGINT or SIGTERM that group receives
//! to the rank at once, as SIGINT: a Ctrl-C to the rank, so that mpirun's
//! SIGTERM that follows is not taken for a second one. Not SIGHUP, which
//! iolab does not take for a stop either (Open MPI 4.1's mpirun aborts
//! the job on it, even under `nohup`: its ranks then get its SIGTERM). The rank keeps its own group, so what
//! mpirun sends it is unchanged; the relay blocks every other signal (so
//! Ctrl-Z, which mpirun passes to the ranks itself, does not stop it),
//! holds no file open, and dies with the rank (`PR_SET_PDEATHSIG`).

use libc::pid_t;

/// Starts the relay when Open MPI started this process in a process
/// group other than its launcher's (mpirun or orted, or the group of the
/// first ancestor outside this process's group, when a wrapper such as
/// `sh -c` stands between) within the same session. Call it once the
/// signal handlers are installed and before any thread or MPI is started;
/// it does nothing otherwise, or if the relay cannot start.
pub(super) fn start() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() {
        return;
    }
    // SAFETY: plain queries of this process's ids.
    let (rank, own) = unsafe { (libc::getpid(), libc::getpgid(0)) };
    if let Some(group) = launcher_group(own) {
        spawn(rank, group);
    }
}

/// The process group of the nearest ancestor outside group `own`, if
/// `own` was made below it (by this process or a wrapper: Open MPI makes
/// one per rank) and it is in this process's session (a group may only
/// be joined there). A group inherited from above is the launcher's own,
/// whose signals this process gets already.
fn launcher_group(own: pid_t) -> Option<pid_t> {
    // SAFETY: plain queries.
    let (mut pid, me) = unsafe { (libc::getppid(), libc::getpid()) };
    let mut made_below = me == own;
    // A few wrappers at most (sh -c, numactl, env); bounded in any case.
    for _ in 0..8 {
        // SAFETY: plain queries of another process's group and session.
        let (group, same_session) =
            unsafe { (libc::getpgid(pid), libc::getsid(pid) == libc::getsid(0)) };
        if group <= 0 || !same_session {
            return None;
        }
        if group != own {
            return made_below.then_some(group);
        }
        made_below |= pid == own;
        pid = parent_of(pid)?;
    }
    None
}

/// The parent of process `pid`, from the fourth field of
/// `/proc/PID/stat` (after the command name, which may hold spaces).
fn parent_of(pid: pid_t) -> Option<pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parent_in_stat(&stat)
}

/// The parent pid in the text of a `/proc/PID/stat` file.
fn parent_in_stat(stat: &str) -> Option<pid_t> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Forks the relay into `group`; the relay signals `rank`.
fn spawn(rank: pid_t, group: pid_t) {
    // Every signal blocked across the fork, so that none runs the
    // inherited handlers in the child before it waits for them.
    // SAFETY: sigset_t is plain data; sigfillset initialises it.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to local sets.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
    }
    // SAFETY: the child runs `relay`, which makes system calls only (no
    // allocation, no lock), as a child of a threaded process must.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        relay(rank, group);
    }
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
    if pid < 0 {
        return;
    }
    // Set from both sides (the usual idiom), so the relay is in the group
    // before the rank goes on, whichever runs first.
    // SAFETY: `pid` is our child, which has not called exec.
    let placed = unsafe { libc::setpgid(pid, group) == 0 || libc::getpgid(pid) == group };
    if !placed {
        // SAFETY: our own child; waitpid reaps it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// The relay's life: system calls only. Never returns.
fn relay(rank: pid_t, group: pid_t) -> ! {
    // SAFETY: each call below is a system call on this process alone
    // (setpgid, prctl, close_range, close, sigwaitinfo, kill, _exit), all
    // safe between fork and exec.
    unsafe {
        if libc::setpgid(0, group) != 0 && libc::getpgid(0) != group {
            libc::_exit(0);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != rank {
            libc::_exit(0);
        }
        libc::prctl(libc::PR_SET_NAME, c"iolab-relay".as_ptr() as libc::c_ulong);
        // Holding the rank's standard output open would keep mpirun
        // waiting for its end.
        if libc::close_range(0, libc::c_uint::MAX, 0) != 0 {
            for fd in 0..1024 {
                libc::close(fd);
            }
        }
        let mut wanted: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut wanted);
        for sig in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaddset(&mut wanted, sig);
        }
        loop {
            let sig = libc::sigwaitinfo(&wanted, std::ptr::null_mut());
            if sig > 0 {
                libc::kill(rank, libc::SIGINT);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_is_read_past_a_command_name_with_spaces_and_parentheses() {
        assert_eq!(parent_in_stat("42 (a b) c) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parent_in_stat("42 (sh) R"), None);
        assert_eq!(parent_in_stat(""), None);
    }

    #[test]
    fn this_process_has_a_parent() {
        // SAFETY: plain queries.
        let (me, parent) = unsafe { (libc::getpid(), libc::getppid()) };
        assert_eq!(parent_of(me), Some(parent));
    }
}
