//! One writer per destination file: a destination holds an exclusive
//! `flock` on its file for the whole run, so a second writer (a resume
//! started while the first copy still runs) is refused with exit 2
//! naming the holder, instead of two writers interleaving on one file.

use crate::error::{RunError, UsageError};
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::sync::Mutex;

/// Locks taken by this process, held until it exits (the kernel drops
/// them then, kill -9 included).
static HELD: Mutex<Vec<(String, File)>> = Mutex::new(Vec::new());

/// Locks `path` when it exists (a file made later by this run is made
/// exclusively, so nobody else writes it). A block device or another
/// special file is not locked: flock there says nothing to other tools.
pub fn take(path: &str) -> Result<(), RunError> {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    // flock locks belong to an open file: a second one of ours would
    // conflict with the first.
    if held.iter().any(|(p, _)| p == path) {
        return Ok(());
    }
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(_) => return Ok(()),
    };
    if !f.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Ok(());
    }
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let holder = iolab_core::env::flock_holder(&f).unwrap_or_else(|| "another process".into());
        return Err(RunError::Usage(UsageError::new(
            "endtoend",
            format!("{path} is locked by {holder}, which is writing it: wait for it to end (or stop it), then run again"),
        )));
    }
    held.push((path.to_string(), f));
    Ok(())
}
