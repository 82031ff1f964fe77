//! The temporary names outputs are written under before they take their
//! own: `.NAME.PID.XXXXXX.iolab-tmp` beside the target (XXXXXX random),
//! a file for one output or a directory for a report's. The process id
//! says whose it is, and the process holds it locked (flock) while it
//! writes, so what a process killed with -9 left can be told from what
//! a live one is writing: [`remove_stale`] removes the former, never the
//! latter.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How every temporary name ends.
pub(crate) const SUFFIX: &str = ".iolab-tmp";

/// The part of the temporary name of `name`'s output before its random
/// part: `.NAME.PID.`, this process's id.
pub(crate) fn prefix(name: &str) -> String {
    format!(".{name}.{}.", std::process::id())
}

/// Marks `f` (a temporary file or directory just made) as this
/// process's while it lives. A file system that cannot lock (an NFS
/// mount without a lock manager) leaves the process id to say it, as
/// [`remove_stale`] asks for both.
pub(crate) fn hold(f: &File) {
    let _ = f.lock();
}

/// A temporary file or directory that a process now gone left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// What was removed.
    pub path: PathBuf,
    /// The process that made it.
    pub pid: u32,
}

/// Removes from `dir` the temporary names (`.NAME.PID.XXXXXX.iolab-tmp`,
/// of the output NAME when `name` is given, else of any) whose process
/// has ended: a run killed with -9 leaves them, and nothing else ever
/// would. Only a file or directory (never a link) of this user whose
/// process id no process has and whose lock nobody holds; one of this
/// process, or of one still running, is left alone. Returns what was
/// removed.
pub fn remove_stale(dir: &Path, name: Option<&str>) -> Vec<Stale> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut gone = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = owner(&e.file_name().to_string_lossy(), name) else {
            continue;
        };
        let path = e.path();
        if pid == std::process::id() || !is_stale(&path, pid) {
            continue;
        }
        let removed = match e.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if removed.is_ok() {
            gone.push(Stale { path, pid });
        }
    }
    gone
}

/// The process id in `file`, a temporary name of output `name` (any
/// output when None); None for any other name.
fn owner(file: &str, name: Option<&str>) -> Option<u32> {
    let body = file.strip_prefix('.')?.strip_suffix(SUFFIX)?;
    let mut parts = body.rsplitn(3, '.');
    let random = parts.next()?;
    let pid = parts.next()?;
    let output = parts.next()?;
    let plain = random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric());
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    let named = name.is_none_or(|n| n == output);
    (plain && digits && named).then(|| pid.parse().ok())?
}

/// Whether `path` (made by process `pid`) is this user's, not a link,
/// its process gone and its lock free.
fn is_stale(path: &Path, pid: u32) -> bool {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !(m.is_dir() || m.is_file()) || m.uid() != me || alive(pid) {
        return false;
    }
    // A lock taken here means nobody holds it: checked as well as the
    // pid, which a process in another pid namespace would not see.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .is_ok_and(|f| f.try_lock().is_ok())
}

/// Whether a process has id `pid` (one of another user's counts).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_their_owner_and_output() {
        assert_eq!(owner(".rep.123.aB3xY9.iolab-tmp", Some("rep")), Some(123));
        assert_eq!(owner(".a.b.svg.7.aB3xY9.iolab-tmp", None), Some(7));
        assert_eq!(
            owner(".a.b.svg.7.aB3xY9.iolab-tmp", Some("a.b.svg")),
            Some(7)
        );
        assert_eq!(owner(".rep.123.aB3xY9.iolab-tmp", Some("other")), None);
        for not in [
            ".rep.aB3xY9.iolab-tmp",
            ".rep.12x.aB3xY9.iolab-tmp",
            ".rep.123.aB3.iolab-tmp",
            "rep.123.aB3xY9.iolab-tmp",
            ".rep.123.aB3xY9",
        ] {
            assert_eq!(owner(not, None), None, "{not}");
        }
    }

    /// A dead process's temporaries go; a live one's (this process's, or
    /// another's by its pid or its lock) and a link stay.
    #[test]
    fn only_a_dead_processs_temporaries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale_dir = dir.path().join(format!(".rep.{dead}.abcdef.iolab-tmp"));
        std::fs::create_dir(&stale_dir).unwrap();
        std::fs::write(stale_dir.join("a.svg"), b"x").unwrap();
        let stale_file = dir.path().join(format!(".f.svg.{dead}.abcdeg.iolab-tmp"));
        std::fs::write(&stale_file, b"x").unwrap();
        let link = dir.path().join(format!(".l.{dead}.abcdeh.iolab-tmp"));
        std::os::unix::fs::symlink(&stale_dir, &link).unwrap();
        let live = dir.path().join(".rep.1.abcdef.iolab-tmp");
        std::fs::create_dir(&live).unwrap();
        let locked = dir.path().join(format!(".g.{dead}.abcdei.iolab-tmp"));
        let held = File::create(&locked).unwrap();
        hold(&held);
        let mine = dir.path().join(format!("{}abcdef{SUFFIX}", prefix("rep")));
        std::fs::create_dir(&mine).unwrap();
        let gone = remove_stale(dir.path(), Some("rep"));
        assert_eq!(
            gone,
            [Stale {
                path: stale_dir.clone(),
                pid: dead
            }]
        );
        assert!(stale_file.exists(), "another output's, not asked for");
        let gone = remove_stale(dir.path(), None);
        assert_eq!(
            gone,
            [Stale {
                path: stale_file,
                pid: dead
            }]
        );
        for kept in [&link, &live, &locked, &mine] {
            assert!(
                std::fs::symlink_metadata(kept).is_ok(),
                "{}",
                kept.display()
            );
        }
    }
}
