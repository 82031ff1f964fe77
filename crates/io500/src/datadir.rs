//! The datadir of a run: checked whole before anything is created (the
//! lengths of its path, the nearest directory that exists, a link to
//! nothing on its way, what an earlier run left, a link where the phases
//! make a directory), and the resultdir against it (not inside what the
//! run removes, no entry of a stonewall file's name), then
//! made with its phase directories, and at the end removed as far as
//! this run made it, parents included, and no further.

use crate::cleanup::{self, RUN_DIRS};
use crate::phase::Layout;
use iolab_backend::{c_path, not_a_directory, Backend};
use std::ffi::CString;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The longest name Linux file systems take (NAME_MAX).
pub const NAME_MAX: usize = 255;
/// The longest path a system call takes, its NUL included (PATH_MAX).
pub const PATH_MAX: usize = 4096;
/// What the phases add below the datadir at most (mdtest-easy's
/// `/mdtest-easy/test-dir.0-0/mdtest_tree.<task>.0/file.mdtest.<task>.<n>`
/// with 7-digit tasks and 20-digit items is 87 bytes), with room left.
pub const DEEPEST_BELOW: usize = 128;

/// Why a datadir (or result directory) cannot be used, made or checked;
/// each names the directory and, below it, the path at fault.
#[derive(Debug, thiserror::Error)]
pub enum DatadirError {
    /// A name in the path is longer than NAME_MAX.
    #[error("{what} {}: a name in it is {len} bytes long; a file system takes at most {NAME_MAX} (NAME_MAX)", path.display())]
    NameTooLong {
        /// Which directory (`datadir`, `resultdir`).
        what: String,
        /// The path.
        path: PathBuf,
        /// The long name's length.
        len: usize,
    },
    /// The path, with what the run adds below it, passes PATH_MAX.
    #[error("{what} {}: {len} bytes long; with the {below} bytes the run adds below it a path would pass the system's {PATH_MAX}-byte limit (PATH_MAX)", path.display())]
    PathTooLong {
        /// Which directory.
        what: String,
        /// The path.
        path: PathBuf,
        /// Its length.
        len: usize,
        /// What the run adds below it.
        below: usize,
    },
    /// The datadir was made by someone else between the check and its
    /// making (another run that took the same timestamp).
    #[error("datadir {}: made by someone else since it was checked (another run started in the same second?); nothing of it is used; start again", datadir.display())]
    Taken {
        /// The datadir.
        datadir: PathBuf,
    },
    /// Something on the way to the datadir is not a directory.
    #[error("datadir {}: {} is not a directory", datadir.display(), at.display())]
    NotADirectory {
        /// The datadir.
        datadir: PathBuf,
        /// What is not a directory.
        at: PathBuf,
    },
    /// A path of (or below) the datadir could not be looked at.
    #[error("datadir {}: {}: {source}", datadir.display(), at.display())]
    Stat {
        /// The datadir.
        datadir: PathBuf,
        /// The path.
        at: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The nearest existing directory takes nothing new.
    #[error("datadir {}: cannot create anything in {} (read-only, or no permission)", datadir.display(), existing.display())]
    ReadOnly {
        /// The datadir.
        datadir: PathBuf,
        /// The nearest directory that exists.
        existing: PathBuf,
    },
    /// The datadir could not be opened.
    #[error("datadir {}: {source}", datadir.display())]
    Open {
        /// The datadir.
        datadir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A directory could not be made.
    #[error("{}: cannot create: {source}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A path below the datadir failed otherwise.
    #[error("{}: {source}", path.display())]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A phase directory could not be listed.
    #[error("{}: cannot list: {source}", path.display())]
    List {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A link or a file where a phase directory goes.
    #[error("datadir {}: {} is a symbolic link or a file; iolab io500 follows no link below the datadir (remove it, or name the other directory as datadir)", datadir.display(), at.display())]
    Link {
        /// The datadir.
        datadir: PathBuf,
        /// The link or file.
        at: PathBuf,
    },
    /// A phase directory that holds something.
    #[error("datadir {}: {} is not empty (left by an earlier run?); remove it with iolab io500 --cleanup on the same ini, or use another datadir", datadir.display(), at.display())]
    NotEmpty {
        /// The datadir.
        datadir: PathBuf,
        /// The directory.
        at: PathBuf,
    },
    /// A private file of an earlier run (or anything else of its name).
    #[error("datadir {}: {} exists (left by an earlier run?); a run writes over nothing it did not make: remove it (iolab io500 --cleanup on the same ini removes a run's own)", datadir.display(), file.display())]
    Leftover {
        /// The datadir.
        datadir: PathBuf,
        /// The file.
        file: PathBuf,
    },
    /// A symbolic link to nothing on the way to the datadir: a directory
    /// made there would go wherever it points.
    #[error("datadir {}: {} is a symbolic link to nothing (a dangling link); iolab io500 makes no directory through it (make what it points to, or name another datadir)", datadir.display(), at.display())]
    Dangling {
        /// The datadir.
        datadir: PathBuf,
        /// The link.
        at: PathBuf,
    },
    /// A resultdir inside what the run's cleanup removes.
    #[error("resultdir {}: the run removes {} at its end, and the results with it; name a resultdir outside the datadir's phase directories", resultdir.display(), at.display())]
    ResultdirInside {
        /// The resultdir.
        resultdir: PathBuf,
        /// What the cleanup removes.
        at: PathBuf,
    },
    /// An entry in the resultdir with the name of one of mdtest's
    /// stonewall files.
    #[error("resultdir {}: {} exists; iolab io500 keeps mdtest's stonewall file under that name and writes over or removes nothing it did not make: move it away (iolab io500 --cleanup on the same ini removes one an earlier run left)", resultdir.display(), file.display())]
    PrivateFile {
        /// The resultdir.
        resultdir: PathBuf,
        /// The entry.
        file: PathBuf,
    },
}

/// Checks that every name of `path` and `path` with `below` more bytes
/// fit what the system takes, naming what does not.
pub fn check_lengths(what: &str, path: &Path, below: usize) -> Result<(), DatadirError> {
    if let Some(long) = path
        .components()
        .map(|c| c.as_os_str().as_bytes())
        .find(|c| c.len() > NAME_MAX)
    {
        return Err(DatadirError::NameTooLong {
            what: what.to_string(),
            path: path.to_path_buf(),
            len: long.len(),
        });
    }
    let len = path.as_os_str().len();
    if len + below >= PATH_MAX {
        return Err(DatadirError::PathTooLong {
            what: what.to_string(),
            path: path.to_path_buf(),
            len,
            below,
        });
    }
    Ok(())
}

/// Checks the datadir before anything is created and returns the
/// directories the run will make for it: its missing ancestors,
/// outermost first, and the datadir itself (none when it exists, in
/// which case its phase directories must hold nothing).
pub fn check_datadir(be: &dyn Backend, layout: &Layout) -> Result<Vec<PathBuf>, DatadirError> {
    let datadir = &layout.datadir;
    let local = be.capabilities().local;
    if local {
        check_lengths("datadir", datadir, DEEPEST_BELOW)?;
    }
    let mut missing = Vec::new();
    let mut p = datadir.as_path();
    let mut existing = Path::new(".");
    loop {
        let st = c_path(p).and_then(|c| be.stat(&c));
        match st {
            Ok(s) if s.is_dir => {
                existing = p;
                break;
            }
            Ok(_) => {
                return Err(DatadirError::NotADirectory {
                    datadir: datadir.clone(),
                    at: p.to_path_buf(),
                })
            }
            // stat follows links: a name it does not find may still be
            // a link to nothing, which a mkdir would not replace (an
            // object store has no links).
            Err(e) if e.kind() == ErrorKind::NotFound && local && entry_exists(be, p)? => {
                return Err(DatadirError::Dangling {
                    datadir: datadir.clone(),
                    at: p.to_path_buf(),
                })
            }
            Err(e) if e.kind() == ErrorKind::NotFound => missing.push(p.to_path_buf()),
            Err(source) => {
                return Err(DatadirError::Stat {
                    datadir: datadir.clone(),
                    at: p.to_path_buf(),
                    source,
                })
            }
        }
        match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => p = q,
            _ => break,
        }
    }
    missing.reverse();
    let writable = c_path(existing).and_then(|c| be.can_write(&c));
    if !writable.unwrap_or(false) {
        return Err(DatadirError::ReadOnly {
            datadir: datadir.clone(),
            existing: existing.to_path_buf(),
        });
    }
    if missing.is_empty() {
        check_leftovers(be, layout)?;
    }
    Ok(missing)
}

/// What [`prepare_datadir`] made, and what was there before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The directories made for the datadir (its missing ancestors,
    /// outermost first, and the datadir), for [`remove_made`].
    pub made: Vec<PathBuf>,
    /// The run's directories (of [`RUN_DIRS`]) that were there before the
    /// run, empty (a site makes them beforehand for their layout, a
    /// Lustre stripe count say): the final cleanup empties them and keeps
    /// them.
    pub kept: Vec<&'static str>,
}

/// Makes the datadir (and its missing ancestors) and the phase
/// directories in it, through the backend, after [`check_datadir`].
/// Returns the directories it made for the datadir, for [`remove_made`],
/// and the run directories that were there already.
pub fn prepare_datadir(be: &dyn Backend, layout: &Layout) -> Result<Prepared, DatadirError> {
    let missing = check_datadir(be, layout)?;
    let mut made = Vec::new();
    for d in &missing {
        // The datadir itself is made here or not at all: one that
        // appeared since the check is another run's (its parents may be
        // shared).
        let made_here = mkdir(be, d, d == &layout.datadir);
        if let Err(e) = made_here {
            remove_made(be, &made);
            return Err(e);
        }
        made.push(d.clone());
    }
    // A datadir made just now holds nothing of the site's.
    let kept = match missing.is_empty() {
        true => existing_run_dirs(be, layout),
        false => Vec::new(),
    };
    for d in cleanup::PHASE_DIRS {
        if let Err(e) = mkdir(be, &layout.path(d), false) {
            remove_made(be, &made);
            return Err(e);
        }
    }
    Ok(Prepared { made, kept })
}

/// The run directories that are in the datadir (checked empty by
/// [`check_leftovers`]).
fn existing_run_dirs(be: &dyn Backend, layout: &Layout) -> Vec<&'static str> {
    RUN_DIRS
        .into_iter()
        .filter(|d| {
            c_path(&layout.path(d))
                .and_then(|c| be.exists(&c))
                .unwrap_or(false)
        })
        .collect()
}

/// Makes `d`; one already there is fine unless `new` asks that this run
/// make it ([`DatadirError::Taken`]).
fn mkdir(be: &dyn Backend, d: &Path, new: bool) -> Result<(), DatadirError> {
    let c = c_path(d).map_err(|source| DatadirError::Path {
        path: d.to_path_buf(),
        source,
    })?;
    match be.mkdir(&c, 0o755) {
        Err(e) if e.kind() == ErrorKind::AlreadyExists && new => Err(DatadirError::Taken {
            datadir: d.to_path_buf(),
        }),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(DatadirError::Create {
            path: d.to_path_buf(),
            source,
        }),
        Ok(()) => Ok(()),
    }
}

/// Removes the directories [`prepare_datadir`] made, innermost first,
/// each only when empty; stops at the first that stays.
pub fn remove_made(be: &dyn Backend, made: &[PathBuf]) {
    for d in made.iter().rev() {
        let gone = c_path(d).and_then(|c| be.rmdir(&c));
        if gone.is_err() {
            break;
        }
    }
}

/// Refuses a datadir whose phase directories hold anything, are not
/// directories (a symbolic link is not followed below the datadir), or
/// whose timestamp file's name is taken by anything, a link included.
pub fn check_leftovers(be: &dyn Backend, layout: &Layout) -> Result<(), DatadirError> {
    let datadir = &layout.datadir;
    let data = match c_path(datadir).and_then(|c| be.open_dir(&c)) {
        Ok(d) => Some(d),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(source) => {
            return Err(DatadirError::Open {
                datadir: datadir.clone(),
                source,
            })
        }
    };
    for d in RUN_DIRS.iter().filter(|_| data.is_some()) {
        let p = layout.path(d);
        // RUN_DIRS are iolab's own names, without a NUL.
        let name = CString::new(*d).map_err(|e| DatadirError::Path {
            path: p.clone(),
            source: e.into(),
        })?;
        let dir = match data.as_ref().map(|data| be.open_dir_at(data, &name)) {
            Some(Ok(dir)) => dir,
            Some(Err(e)) if e.kind() == ErrorKind::NotFound => continue,
            Some(Err(e)) if not_a_directory(&e) => {
                return Err(DatadirError::Link {
                    datadir: datadir.clone(),
                    at: p,
                })
            }
            Some(Err(source)) => return Err(DatadirError::Path { path: p, source }),
            None => continue,
        };
        let mut any = false;
        be.list_at(&dir, &mut |_| {
            any = true;
            false
        })
        .map_err(|source| DatadirError::List {
            path: p.clone(),
            source,
        })?;
        if any {
            return Err(DatadirError::NotEmpty {
                datadir: datadir.clone(),
                at: p,
            });
        }
    }
    let ts = layout.timestamp_file();
    if entry_exists(be, &ts)? {
        return Err(DatadirError::Leftover {
            datadir: datadir.clone(),
            file: ts,
        });
    }
    Ok(())
}

/// Whether there is an entry of any kind named `path`, a link to
/// nothing included: on a local file system its last name is looked at
/// without following a link (lstat); an object store has no links.
fn entry_exists(be: &dyn Backend, path: &Path) -> Result<bool, DatadirError> {
    let found = match be.capabilities().local {
        true => std::fs::symlink_metadata(path).map(drop),
        false => c_path(path).and_then(|c| be.stat(&c)).map(drop),
    };
    match found {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(source) => Err(DatadirError::Path {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Refuses a resultdir (the layout's private directory) that holds an
/// entry of any kind, a link included, named as one of mdtest's
/// stonewall files: the run would write over it and remove it at its
/// end. Call it once the resultdir's nearest existing ancestor is known
/// to be a directory.
pub fn check_private_files(layout: &Layout) -> Result<(), DatadirError> {
    for f in cleanup::STONEWALL_BASES.map(|b| layout.stonewall_file(b)) {
        match std::fs::symlink_metadata(&f) {
            Ok(_) => {
                return Err(DatadirError::PrivateFile {
                    resultdir: layout.private_dir.clone(),
                    file: f,
                })
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(source) => return Err(DatadirError::Path { path: f, source }),
        }
    }
    Ok(())
}

/// Refuses a resultdir (the layout's private directory) inside what the
/// run's cleanup removes: a directory the phases make in the datadir,
/// or its timestamp file. Both paths are compared as the system will
/// find them (links followed), so a relative or linked name is caught.
/// Only a local backend's datadir can hold the resultdir.
pub fn check_resultdir(be: &dyn Backend, layout: &Layout) -> Result<(), DatadirError> {
    if !be.capabilities().local {
        return Ok(());
    }
    let (results, data) = (resolved(&layout.private_dir), resolved(&layout.datadir));
    let mut removed = RUN_DIRS.iter().chain([&cleanup::TIMESTAMP_FILE]);
    match removed.find(|n| results.starts_with(data.join(n))) {
        Some(n) => Err(DatadirError::ResultdirInside {
            resultdir: layout.private_dir.clone(),
            at: layout.path(n),
        }),
        None => Ok(()),
    }
}

/// `p` as the system will find it once made: its longest leading part
/// that exists with every link resolved, then the rest as written (`.`
/// dropped, `..` taking back a name), which is right because what does
/// not exist yet will be made as plain directories.
fn resolved(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let parts: Vec<_> = abs.components().collect();
    let (mut out, from) = (0..=parts.len())
        .rev()
        .find_map(|n| {
            let head: PathBuf = parts[..n].iter().collect();
            head.canonicalize().ok().map(|c| (c, n))
        })
        .unwrap_or_default();
    for c in &parts[from..] {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked_against_the_system_s_limits() {
        let long = "a".repeat(NAME_MAX + 1);
        let e = check_lengths("datadir", &Path::new("/x").join(&long), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("256 bytes") && e.contains("NAME_MAX"), "{e}");
        let deep = format!("/{}", vec!["b".repeat(200); 20].join("/"));
        let e = check_lengths("datadir", Path::new(&deep), DEEPEST_BELOW)
            .unwrap_err()
            .to_string();
        assert!(e.contains("PATH_MAX"), "{e}");
        assert!(check_lengths("datadir", Path::new("/mnt/fs/io500/data"), DEEPEST_BELOW).is_ok());
    }

    /// Missing parents are made and, at the end, removed with the
    /// datadir, up to the directory that existed and no further.
    #[test]
    fn the_run_removes_the_parents_it_made() {
        let be = iolab_backend::Posix;
        let root = std::env::temp_dir().join(format!("iolab-io500-made-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let layout = Layout {
            datadir: root.join("a/b/data"),
            private_dir: root.clone(),
        };
        let made = prepare_datadir(&be, &layout).unwrap().made;
        assert_eq!(made, ["a", "a/b", "a/b/data"].map(|p| root.join(p)));
        assert!(root.join("a/b/data/ior-easy").is_dir());
        for d in cleanup::PHASE_DIRS {
            std::fs::remove_dir(layout.path(d)).unwrap();
        }
        std::fs::write(root.join("a/mine"), b"x").unwrap();
        remove_made(&be, &made);
        assert!(!root.join("a/b").exists() && root.join("a/mine").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
