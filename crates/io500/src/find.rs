//! The find phase: every task walks the datadir through the backend and
//! checks its share of the entries (split by a hash of the name, so that
//! one huge directory is shared too) against IO500's criteria: a name
//! matching `*01*`, a size of 3901 bytes, modified after the timestamp
//! file. Only a stack of directory paths is kept, never a list of files.

use crate::config::HARD_FILE_BYTES;
use iolab_backend::{c_path, Backend};
use iolab_comm::{Comm, CommExt};
use iolab_core::clock::wall_ns;
use iolab_core::Failure;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What the find phase did, over all tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FindResult {
    /// Entries that matched every criterion.
    pub found: u64,
    /// Entries checked (files and directories), what the rate counts.
    pub total: u64,
    /// Latest end minus earliest start, seconds.
    pub elapsed_s: f64,
    /// The error of a task that failed, if any.
    pub failure: Option<Failure>,
}

/// What a matching file must be besides its name (`*01*`): find and
/// find-hard ask for both, find-easy for neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Criteria {
    /// Modified after this time (the timestamp file's), nanoseconds.
    pub newer_than_ns: Option<u64>,
    /// Exactly this many bytes.
    pub size: Option<u64>,
}

impl Criteria {
    /// find's and find-hard's: newer than the timestamp file, 3901 bytes.
    pub fn hard(newer_than_ns: u64) -> Criteria {
        Criteria {
            newer_than_ns: Some(newer_than_ns),
            size: Some(HARD_FILE_BYTES),
        }
    }

    /// find-easy's: the name only.
    pub fn name_only() -> Criteria {
        Criteria {
            newer_than_ns: None,
            size: None,
        }
    }

    fn needs_stat(&self) -> bool {
        self.newer_than_ns.is_some() || self.size.is_some()
    }

    fn matches(&self, st: &iolab_backend::Stat) -> bool {
        st.is_file
            && self.size.is_none_or(|n| st.size == n)
            && self.newer_than_ns.is_none_or(|t| st.mtime_ns > t)
    }
}

/// IO500's name criterion: `*01*`.
pub fn name_matches(name: &[u8]) -> bool {
    name.windows(2).any(|w| w == b"01")
}

/// FNV-1a: a stable hash, the same on every rank, to split entries.
fn share_of(name: &[u8], tasks: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h % tasks.max(1)
}

struct Counts {
    found: u64,
    total: u64,
    failure: Option<Failure>,
}

/// Runs the find on this task over `roots` (the phases' directories),
/// counting the files named `*01*` that meet `crit`.
pub fn run(comm: &dyn Comm, be: &dyn Backend, roots: &[PathBuf], crit: Criteria) -> FindResult {
    comm.barrier();
    let start = wall_ns();
    let mut c = Counts {
        found: 0,
        total: 0,
        failure: None,
    };
    let (me, tasks) = (comm.task() as u64, comm.tasks() as u64);
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        if c.failure.is_some() || iolab_core::stop::requested() {
            break;
        }
        walk_dir(be, &dir, (me, tasks), crit, &mut stack, &mut c);
    }
    let end = wall_ns();
    let failed = comm.any(c.failure.is_some());
    let found = comm.sum_u64(c.found);
    let total = comm.sum_u64(c.total);
    let start = comm.min_u64(start);
    let end = comm.max_u64(end);
    FindResult {
        found,
        total,
        elapsed_s: end.saturating_sub(start) as f64 / 1e9,
        failure: match failed {
            true => Some(
                c.failure
                    .unwrap_or_else(|| Failure::other("peer", "another task's find failed")),
            ),
            false => None,
        },
    }
}

/// Lists one directory: subdirectories go on the stack (every task
/// walks them), entries of this task's share are checked.
fn walk_dir(
    be: &dyn Backend,
    dir: &Path,
    (me, tasks): (u64, u64),
    crit: Criteria,
    stack: &mut Vec<PathBuf>,
    c: &mut Counts,
) {
    let cdir = match c_path(dir) {
        Ok(p) => p,
        Err(e) => {
            c.failure = Some(Failure::io("find", Some(dir.display().to_string()), &e));
            return;
        }
    };
    let mut path_buf = dir.as_os_str().as_bytes().to_vec();
    let base_len = path_buf.len();
    let mut stat_failure = None;
    let listed = be.list_each(&cdir, &mut |e| {
        let mine = share_of(&e.name, tasks) == me;
        if e.is_dir {
            stack.push(dir.join(OsStr::from_bytes(&e.name)));
            c.total += u64::from(mine);
            return true;
        }
        if !mine {
            return true;
        }
        c.total += 1;
        if !name_matches(&e.name) {
            return true;
        }
        if !crit.needs_stat() {
            c.found += 1;
            return true;
        }
        // The path in one reused buffer, NUL-terminated in place: no
        // allocation per file.
        path_buf.truncate(base_len);
        path_buf.push(b'/');
        path_buf.extend_from_slice(&e.name);
        path_buf.push(0);
        let cp = std::ffi::CStr::from_bytes_with_nul(&path_buf).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in a name")
        });
        let p = Path::new(OsStr::from_bytes(&path_buf[..path_buf.len() - 1]));
        match cp.and_then(|cp| be.stat(cp)) {
            Ok(st) => {
                if crit.matches(&st) {
                    c.found += 1;
                }
                true
            }
            Err(err) => {
                stat_failure = Some(Failure::io(
                    "find stat",
                    Some(p.display().to_string()),
                    &err,
                ));
                false
            }
        }
    });
    if let Err(e) = listed {
        c.failure = Some(Failure::io(
            "find list",
            Some(dir.display().to_string()),
            &e,
        ));
    }
    if stat_failure.is_some() {
        c.failure = stat_failure;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_criterion_is_star_01_star() {
        assert!(name_matches(b"file.mdtest.0.101"));
        assert!(name_matches(b"file.mdtest.01"));
        assert!(!name_matches(b"file.mdtest.1.10"));
        assert!(!name_matches(b"0"));
    }

    #[test]
    fn counts_only_matching_newer_files_once_over_tasks() {
        let be = iolab_backend::by_name("posix").unwrap();
        let dir = std::env::temp_dir().join(format!("iolab-find-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let ts = wall_ns() - 1_000_000_000;
        std::fs::write(dir.join("a01"), vec![0u8; 3901]).unwrap();
        std::fs::write(dir.join("sub/b010"), vec![0u8; 3901]).unwrap();
        std::fs::write(dir.join("c01"), vec![0u8; 3900]).unwrap();
        std::fs::write(dir.join("d10"), vec![0u8; 3901]).unwrap();
        let roots = vec![dir.clone()];
        let out = iolab_comm::run_local(3, |c| run(c, &*be, &roots, Criteria::hard(ts)));
        assert!(out.iter().all(|r| r.found == 2 && r.total == 5), "{out:?}");
        let later = Criteria::hard(wall_ns() + 1_000_000_000);
        let later = iolab_comm::run_local(1, |c| run(c, &*be, &roots, later));
        assert_eq!(later[0].found, 0);
        // find-easy's criterion is the name alone: c01 (3900 bytes) counts.
        let easy = iolab_comm::run_local(2, |c| run(c, &*be, &roots, Criteria::name_only()));
        assert!(
            easy.iter().all(|r| r.found == 3 && r.total == 5),
            "{easy:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
