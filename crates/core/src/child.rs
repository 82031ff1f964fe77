//! Child processes that end with this one. A child whose parent dies
//! (kill -9 included) is adopted by init and runs on unless it was told
//! otherwise before it started: [`end_with_parent`] asks the kernel to
//! signal it then (`PR_SET_PDEATHSIG`).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child `cmd` starts receive `signal` when its parent dies.
/// The kernel ties this to the thread that starts the child, so start
/// it from a thread that lives as long as the child should (the main
/// thread, or the one that waits for it). A child whose parent died
/// between fork and this request exits at once with status 130.
pub fn end_with_parent(cmd: &mut Command, signal: libc::c_int) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent died between fork and prctl: no signal will come.
            if libc::getppid() != parent {
                libc::_exit(130);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The kernel signals the child when the thread that started it
    /// ends, as it does when the whole parent dies (kill -9 included):
    /// a thread of this test starts `sleep 30` and ends.
    #[test]
    fn a_child_ends_when_the_thread_that_started_it_does() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        end_with_parent(&mut cmd, libc::SIGTERM);
        let pid = std::thread::spawn(move || cmd.spawn().unwrap().id())
            .join()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        let gone = loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for this process to reap it.
            if stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z") {
                break true;
            }
            if Instant::now() > until {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Reap it (or end it, should the test fail).
        // SAFETY: kill and waitpid on a pid this process started.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
        assert!(gone, "the child outlived the thread that started it");
    }
}
