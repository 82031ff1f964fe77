//! Private temporary directories: a fresh directory of mode 0700 with a
//! random name (mkdtemp(3)) under the temporary directory, removed with
//! everything in it when dropped. A shared /tmp then gives nobody a name
//! to plant a link at beforehand, as `/tmp/tool-PID` names do, and what
//! the run writes inside cannot be reached by other users.
//!
//!
//! A directory made by [`PrivateDir::claimed`] also says whose it is:
//! an owner file (the process id and its start time) that the process
//! holds locked (flock) while it lives. The kernel drops the lock when
//! the process dies, kill -9 included, so a later run of the same tool
//! removes what a killed one left ([`remove_stale`]), and nothing else.
//!
//! ```
//! let d = iolab_core::tmp::PrivateDir::new("iolab-doc").unwrap();
//! std::fs::write(d.path().join("x"), b"1").unwrap();
//! let p = d.path().to_path_buf();
//! drop(d);
//! assert!(!p.exists());
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The file in a [`PrivateDir::claimed`] directory naming its owner,
/// held locked by it.
pub const OWNER_FILE: &str = ".iolab-owner";

/// A directory this process made for itself; removed on drop.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    /// The owner file, locked while this lives (claimed directories).
    _owner: Option<File>,
}

impl PrivateDir {
    /// Makes `TMPDIR/PREFIX-XXXXXX` (random, mode 0700), then marks it
    /// as this process's while it lives (see the module's
    /// documentation): the owner file is written and locked under
    /// another name, then renamed, so that a directory whose owner file
    /// can be locked by someone else is one whose owner is gone.
    pub fn claimed(prefix: &str) -> std::io::Result<PrivateDir> {
        let mut d = PrivateDir::new(prefix)?;
        let part = d.path.join(".iolab-owner.part");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&part)?;
        f.lock()?;
        writeln!(
            f,
            "iolab pid {} started {}",
            std::process::id(),
            start_ticks(std::process::id()).unwrap_or(0)
        )?;
        std::fs::rename(&part, d.path.join(OWNER_FILE))?;
        d._owner = Some(f);
        Ok(d)
    }

    /// Makes `TMPDIR/PREFIX-XXXXXX` (random, mode 0700).
    pub fn new(prefix: &str) -> std::io::Result<PrivateDir> {
        let mut template = std::env::temp_dir()
            .join(format!("{prefix}-XXXXXX"))
            .into_os_string()
            .into_vec();
        template.push(0);
        // SAFETY: template is a writable, NUL-terminated buffer ending in
        // XXXXXX, which mkdtemp fills in place; it is not used meanwhile.
        let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        template.pop();
        Ok(PrivateDir {
            path: PathBuf::from(OsString::from_vec(template)),
            _owner: None,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The start time of process `pid` (clock ticks after boot, field 22 of
/// /proc/PID/stat): with the pid, what names a process over time.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Removes the directories `TMPDIR/PREFIX-XXXXXX` that a
/// [`PrivateDir::claimed`] of a process now gone left (a run killed
/// with kill -9), and returns them. Only a real directory (never a link)
/// of this user, closed to others, holding an iolab owner file whose lock
/// nobody holds; a directory without one (not made so, or whose owner
/// is still making it) is left alone, as is one whose owner lives.
pub fn remove_stale(prefix: &str) -> Vec<PathBuf> {
    let dir = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let lead = format!("{prefix}-");
    let mut gone = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = name
            .strip_prefix(&lead)
            .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()));
        if !ours {
            continue;
        }
        let path = e.path();
        if is_stale(&path, me) && std::fs::remove_dir_all(&path).is_ok() {
            gone.push(path);
        }
    }
    gone
}

/// Whether `path` is a claimed directory of user `me` whose owner is gone.
fn is_stale(path: &Path, me: u32) -> bool {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !m.is_dir() || m.uid() != me || m.mode() & 0o077 != 0 {
        return false;
    }
    let owner = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path.join(OWNER_FILE));
    let Ok(mut f) = owner else {
        return false;
    };
    let mut head = [0u8; 10];
    let made_by_iolab =
        std::io::Read::read(&mut f, &mut head).is_ok_and(|n| head[..n].starts_with(b"iolab pid "));
    // A lock taken here means nobody holds it: the owner has died. The
    // lock goes with `f` once the directory is removed.
    made_by_iolab && f.try_lock().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_directory_is_stale_only_once_its_owner_lets_go() {
        let mut d = PrivateDir::claimed("iolab-tmp-unit").unwrap();
        let p = d.path().to_path_buf();
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        assert!(!is_stale(&p, me), "its owner holds the lock");
        let text = std::fs::read_to_string(p.join(OWNER_FILE)).unwrap();
        assert!(text.starts_with(&format!("iolab pid {} started ", std::process::id())));
        // The owner gone (its lock dropped, the directory left behind as
        // a kill -9 leaves it).
        drop(d._owner.take());
        std::mem::forget(d);
        assert!(is_stale(&p, me), "nobody holds the lock");
        assert!(!is_stale(&p, me + 1), "someone else's");
        let plain = PrivateDir::new("iolab-tmp-unit").unwrap();
        assert!(!is_stale(plain.path(), me), "no owner file: not claimed");
        std::fs::remove_dir_all(&p).unwrap();
    }
}
