//! The find phases: the tasks walk the tree through the backend level by
//! level, each directory read by one task (as pfind has each directory
//! read by one process), and check its entries against IO500's criteria:
//! a name matching `*01*` and, for find and find-hard, a size of 3901
//! bytes and a modification after the timestamp file (from the listing
//! itself where it gives them, as an object store's LIST gives each
//! object's Size and LastModified; else one stat per name). After each level
//! the tasks exchange the subdirectories they found, so that all know the
//! next level and share it out the same way. Only directory paths are
//! kept (one level at a time), never a list of files. With live figures
//! each entry checked is one operation of the phase (no bytes, not timed
//! one by one), so the intervals sum to the phase's `total`.

use crate::config::HARD_FILE_BYTES;
use iolab_backend::{c_path, Backend};
use iolab_comm::{failure::first_failure, Comm, CommExt};
use iolab_core::clock::wall_ns;
use iolab_core::live::Recorder;
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

struct Counts {
    found: u64,
    total: u64,
    failure: Option<Failure>,
    live: Recorder,
}

impl Counts {
    /// One entry checked.
    fn checked(&mut self) {
        self.total += 1;
        self.live.ops(1, 0);
    }

    fn failed(&mut self, f: Failure) {
        self.live.error();
        self.failure = Some(f);
    }
}

/// Runs the find on this task over `roots` (the phases' directories),
/// counting the files named `*01*` that meet `crit`; `live` counts each
/// entry checked ([`Recorder::off`] without live figures).
pub fn run(
    comm: &dyn Comm,
    be: &dyn Backend,
    roots: &[PathBuf],
    crit: Criteria,
    cancel: &iolab_core::CancelToken,
    live: Recorder,
) -> FindResult {
    if be.capabilities().thread_private_fds {
        // Every directory is an open and a close: a table of its own.
        let _ = iolab_core::threads::own_fd_table();
    }
    comm.barrier();
    let start = wall_ns();
    let mut c = Counts {
        found: 0,
        total: 0,
        failure: None,
        live,
    };
    let (me, tasks) = (comm.task(), comm.tasks().max(1));
    let mut level: Vec<PathBuf> = roots.to_vec();
    while !level.is_empty() {
        let mut next = Vec::new();
        // Directory i of the level is task (i mod tasks)'s: the list is
        // the same on every task, so each directory is read once.
        for dir in level.iter().skip(me).step_by(tasks) {
            if c.failure.is_some() || cancel.is_cancelled() {
                break;
            }
            walk_dir(be, dir, crit, &mut next, &mut c);
        }
        let stop = c.failure.is_some() || cancel.is_cancelled();
        level = match exchange(comm, &next, stop) {
            Some(l) => l,
            None => break,
        };
    }
    let end = wall_ns();
    // The phase is over for the live figures before the tasks' sums.
    c.live = Recorder::off();
    // Every task learns what failed on the lowest task that failed.
    let failure = first_failure(comm, c.failure.take());
    let found = comm.sum_u64(c.found);
    let total = comm.sum_u64(c.total);
    let start = comm.min_u64(start);
    let end = comm.max_u64(end);
    FindResult {
        found,
        total,
        elapsed_s: end.saturating_sub(start) as f64 / 1e9,
        failure,
    }
}

/// Every task's subdirectories of this level, in task order: the next
/// level, the same on every task. None when a task stopped (a failure
/// or a stop request), so that all stop together.
fn exchange(comm: &dyn Comm, found: &[PathBuf], stop: bool) -> Option<Vec<PathBuf>> {
    // A stop flag, then the paths, each ended by a NUL (no path holds one).
    let mut mine = vec![u8::from(stop)];
    for d in found {
        mine.extend_from_slice(d.as_os_str().as_bytes());
        mine.push(0);
    }
    let all = comm.all_gather(&mine);
    if all.iter().any(|b| b.first() != Some(&0)) {
        return None;
    }
    let paths = all.iter().flat_map(|b| {
        b.get(1..)
            .unwrap_or_default()
            .split(|&x| x == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(OsStr::from_bytes(p)))
    });
    Some(paths.collect())
}

/// Reads one directory: its subdirectories go to `next` (the next
/// level), its files are checked.
fn walk_dir(be: &dyn Backend, dir: &Path, crit: Criteria, next: &mut Vec<PathBuf>, c: &mut Counts) {
    let cdir = match c_path(dir) {
        Ok(p) => p,
        Err(e) => {
            c.failed(Failure::io("find", Some(dir.display().to_string()), &e));
            return;
        }
    };
    let mut path_buf = dir.as_os_str().as_bytes().to_vec();
    let base_len = path_buf.len();
    let mut stat_failure = None;
    // The listing's own metadata when it has some (an object store's LIST
    // gives each object's Size and LastModified): no stat per file then.
    let listed = be.list_stat_each(&cdir, b"", &mut |e, listed_stat| {
        c.checked();
        if e.is_dir {
            next.push(dir.join(OsStr::from_bytes(&e.name)));
            return true;
        }
        if !name_matches(&e.name) {
            return true;
        }
        if !crit.needs_stat() {
            c.found += 1;
            return true;
        }
        if let Some(st) = listed_stat {
            c.found += u64::from(crit.matches(st));
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
        c.failed(Failure::io(
            "find list",
            Some(dir.display().to_string()),
            &e,
        ));
    }
    if let Some(f) = stat_failure {
        c.failed(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::CancelToken;

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
        let out = iolab_comm::run_local(3, |c| {
            run(
                c,
                &*be,
                &roots,
                Criteria::hard(ts),
                &CancelToken::new(),
                Recorder::off(),
            )
        });
        assert!(out.iter().all(|r| r.found == 2 && r.total == 5), "{out:?}");
        let later = Criteria::hard(wall_ns() + 1_000_000_000);
        let later = iolab_comm::run_local(1, |c| {
            run(c, &*be, &roots, later, &CancelToken::new(), Recorder::off())
        });
        assert_eq!(later[0].found, 0);
        // find-easy's criterion is the name alone: c01 (3900 bytes) counts.
        let easy = iolab_comm::run_local(2, |c| {
            run(
                c,
                &*be,
                &roots,
                Criteria::name_only(),
                &CancelToken::new(),
                Recorder::off(),
            )
        });
        assert!(
            easy.iter().all(|r| r.found == 3 && r.total == 5),
            "{easy:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn each_entry_is_counted_once_whatever_the_task_count() {
        let be = iolab_backend::by_name("posix").unwrap();
        let dir = std::env::temp_dir().join(format!("iolab-find-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // 3 levels, 7 directories, 40 files of which those named *01* match.
        for d in ["a", "b", "c", "a/x", "a/y", "b/z"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let mut expected = 0;
        for (i, d) in ["", "a", "b", "c", "a/x", "a/y", "b/z"]
            .iter()
            .cycle()
            .take(40)
            .enumerate()
        {
            let name = format!("f.{i:03}");
            expected += u64::from(name.contains("01"));
            std::fs::write(dir.join(d).join(&name), b"").unwrap();
        }
        assert_eq!(expected, 11, "f.001 and f.010 to f.019");
        let (files, dirs) = (40, 6);
        for tasks in [1, 2, 3, 5, 8] {
            let board = iolab_core::live::Board::new();
            let out = iolab_comm::run_local(tasks, |c| {
                run(
                    c,
                    &*be,
                    std::slice::from_ref(&dir),
                    Criteria::name_only(),
                    &CancelToken::new(),
                    board.recorder("find", c.task()),
                )
            });
            // The live figures count each entry checked once, as total.
            let live = board.totals();
            assert_eq!((live.len(), live[0].ops), (1, files + dirs));
            for r in &out {
                assert_eq!(
                    (r.found, r.total),
                    (expected, files + dirs),
                    "{tasks} tasks"
                );
                assert!(r.failure.is_none());
            }
        }
        // A root that is missing is a failure every task reports.
        let gone = vec![dir.join("missing")];
        let out = iolab_comm::run_local(3, |c| {
            run(
                c,
                &*be,
                &gone,
                Criteria::name_only(),
                &CancelToken::new(),
                Recorder::off(),
            )
        });
        assert!(out.iter().all(|r| r.failure.is_some()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
