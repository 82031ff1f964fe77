//! Before the first test: every name a test would use is looked at, so
//! that what would go wrong is refused (exit 2) before anything is made.
//!
//! - a file a writing test would make that is already there, unless
//!   `-E` asks to write over it (iolab never writes over or removes a
//!   file it did not make);
//! - a symbolic link at a test file's name or at a `-u` directory's,
//!   `-E` or not, dangling or not: opening or removing through it would
//!   touch what is elsewhere;
//! - a test file's directory that does not exist (iolab makes only
//!   `-u`'s), which would otherwise fail at the first open, after the
//!   tests before it ran;
//! - a directory a writing test would make its file in that cannot be
//!   written (a read-only mount, no permission), which would otherwise
//!   fail at the first create, after the header and a row of zeros.
//!
//! Each rank looks at the files of its own tasks (a shared file: every
//! rank), so that a path that one rank cannot use is found there.
//!
//! Links and directories are looked at on local backends only: an
//! object store has neither (its "directories" are key prefixes).

use crate::config::Test;
use crate::file::Files;
use crate::plan;
use iolab_backend::{c_path, not_a_directory, Backend, Dir};
use std::collections::HashSet;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// One test, the tasks it runs on and how to reach its files.
pub(crate) struct Look<'a> {
    /// The test.
    pub test: &'a Test,
    /// Its files on the backend.
    pub files: Files<'a>,
    /// Tasks the test runs on (after `-N`).
    pub tasks: u64,
    /// The tasks whose files are looked at: this rank's.
    pub mine: std::ops::Range<u64>,
}

/// Why `look` cannot run, as the message of an exit-2 refusal, prefixed
/// with the test's number in a script of several.
pub(crate) fn look(l: &Look, several: bool) -> Result<(), String> {
    look_test(l).map_err(|e| match several {
        true => format!("test {}: {e}", l.test.params.id),
        false => e,
    })
}

fn look_test(l: &Look) -> Result<(), String> {
    let p = &l.test.params;
    let caps = l.files.be.capabilities();
    if caps.discards {
        // The null backend keeps nothing: there is nothing to find.
        return Ok(());
    }
    let mut dirs_seen = HashSet::new();
    let names = if p.file_per_proc { l.tasks.max(1) } else { 1 };
    let writes = (p.write || p.check_write) && !p.use_existing;
    for (i, (rep, path, unique)) in plan::test_files(p, l.tasks).enumerate() {
        if p.file_per_proc && !l.mine.contains(&(i as u64 % names)) {
            continue;
        }
        if caps.local {
            let must_exist = parent(unique.as_deref().unwrap_or(&path));
            if dirs_seen.insert(must_exist.clone()) {
                directory_exists(&l.files, Path::new(&p.test_file), &must_exist)?;
                if p.write {
                    writable(l.files.be, Path::new(&p.test_file), &must_exist)?;
                }
            }
            if let Some(d) = unique.as_deref().filter(|_| rep == 0) {
                unique_dir_usable(l.files.be, d)?;
            }
            not_a_link(&path)?;
        }
        if writes {
            not_there(&l.files, &path)?;
        }
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `dir` is a directory (links in the path the user named are followed).
fn directory_exists(files: &Files, test_file: &Path, dir: &Path) -> Result<(), String> {
    let test_file = test_file.display();
    let look = c_path(dir).and_then(|c| files.be.stat(&c));
    match look {
        Ok(s) if s.is_dir => Ok(()),
        Ok(_) => Err(format!(
            "-o {test_file}: {} is not a directory",
            dir.display()
        )),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Err(format!(
            "-o {test_file}: {} is not a directory",
            dir.display()
        )),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(format!(
            "-o {test_file}: the directory {} does not exist; make it first (iolab ior makes only -u's directories)",
            dir.display()
        )),
        Err(e) => Err(format!("-o {test_file}: cannot look at {}: {e}", dir.display())),
    }
}

/// A writing test can make its file (or `-u` directory) in `dir`.
fn writable(be: &dyn Backend, test_file: &Path, dir: &Path) -> Result<(), String> {
    match c_path(dir).and_then(|c| be.can_write(&c)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!(
            "-o {}: {} is not writable (a read-only file system, or no permission); a writing test makes its file there",
            test_file.display(),
            dir.display()
        )),
        Err(e) => Err(format!(
            "-o {}: cannot tell whether {} is writable: {e}",
            test_file.display(),
            dir.display()
        )),
    }
}

/// `-u`'s directory is absent (the run makes it) or a real directory:
/// never a link, which would put the task's file wherever it points.
fn unique_dir_usable(be: &dyn Backend, dir: &Path) -> Result<(), String> {
    match open_unfollowed(be, dir) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) if not_a_directory(&e) => Err(format!(
            "-u: {} is a symbolic link or a file; iolab ior never follows a link where a task's directory goes: remove it",
            dir.display()
        )),
        Err(e) => Err(format!("-u: cannot look at {}: {e}", dir.display())),
    }
}

/// Opens directory `dir` through the backend without following a link
/// at its last name (ELOOP or ENOTDIR, see [`not_a_directory`]); the
/// path above it, which the user named, is followed.
pub(crate) fn open_unfollowed(be: &dyn Backend, dir: &Path) -> io::Result<Dir> {
    let name = dir.file_name().map_or(Path::new("."), Path::new);
    let above = be.open_dir(&c_path(&parent(dir))?)?;
    be.open_dir_at(&above, &c_path(name)?)
}

/// No symbolic link, dangling or not, at a test file's name. Asked of
/// the file system itself (lstat, on local backends only): the backend
/// has no call that tells a link from a file (its stat follows links,
/// and a dangling one looks like no file at all).
fn not_a_link(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(format!(
            "{}: a symbolic link; iolab ior never writes, reads or removes through a link at a test file's name (-E or not): remove it, or name the file it points to",
            path.display()
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        // Under a -u directory that is a file, say: told by the -u check.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Ok(()),
        Err(e) => Err(format!("{}: cannot look for it: {e}", path.display())),
    }
}

/// A file a writing test would make is not there yet.
fn not_there(files: &Files, path: &Path) -> Result<(), String> {
    match files.exists(path) {
        Ok(false) => Ok(()),
        Ok(true) => Err(format!(
            "{}: the file exists; iolab ior never writes over or removes a file it did not make: remove it, or give -E to write over it",
            path.display()
        )),
        Err(e) => Err(format!("{}: cannot look for it: {e}", path.display())),
    }
}
