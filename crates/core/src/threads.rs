//! What a task thread keeps to itself. Threads of one process share one
//! descriptor table, and every open and close takes its lock and bounces
//! its cache lines between CPUs; `--tasks N` on threads then costs more
//! per operation than N processes (issue 34 measured 0.80-0.85 x IOR's
//! mdtest under `mpirun` on open/close). [`own_fd_table`] gives the
//! calling thread a table of its own, as a process has.
//!
//! ```
//! let t = std::thread::spawn(|| iolab_core::threads::own_fd_table().unwrap());
//! assert!(t.join().unwrap(), "a spawned thread takes its own table");
//! assert!(!iolab_core::threads::own_fd_table().unwrap(), "the main thread keeps the process's");
//! ```

use std::io;

/// True on the process's main thread (its thread id is the process id).
pub fn is_main_thread() -> bool {
    // SAFETY: getpid and gettid take no arguments and cannot fail.
    unsafe { libc::getpid() == libc::gettid() }
}

/// Gives the calling thread a descriptor table of its own
/// (`unshare(CLONE_FILES)`), unless it is the process's main thread,
/// which keeps the process's table: MPI's and the reporter's threads
/// share it, and a descriptor they open must stay visible to it.
/// Returns whether the thread has a table of its own.
///
/// What follows for the caller: the thread starts with a copy of every
/// descriptor open at that moment (the same open files; closing one copy
/// leaves the others open until the thread ends), and a descriptor it
/// opens afterwards is unknown to every other thread. A backend that hands
/// descriptors between threads (a connection pool) must not be used from
/// such a thread: engines call this only when the backend says
/// `thread_private_fds`.
///
/// Once per thread: a second call keeps the table the first made. The
/// kernel's io_uring workers of a thread share the table it had when
/// they started, so a second unshare would leave them the old one, and
/// a directory the thread opened afterwards would be a bad descriptor
/// to them (md-workbench's queued deletes met exactly that, phase after
/// phase on one thread).
pub fn own_fd_table() -> io::Result<bool> {
    thread_local! {
        static OWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if is_main_thread() {
        return Ok(false);
    }
    if OWN.with(|o| o.get()) {
        return Ok(true);
    }
    // SAFETY: unshare only changes the calling thread's own table.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return Err(io::Error::last_os_error());
    }
    OWN.with(|o| o.set(true));
    Ok(true)
}
