//! Removal through the queue (`--engine uring`) that follows no link
//! below `-d`: each directory whose entries are removed is opened from
//! its `-d` directory without following links
//! ([`crate::at_dirs::AtDirs::open_owned`]) and its entries are
//! removed relative to that descriptor (unlinkat of one name), so a link
//! planted on the way stops the phase as it stops the sync engine.
//!
//! The kernel serialises removals in one directory (its lock), so
//! several directories are emptied at once, each a lane: up to the queue
//! depth and at most [`MAX_OPEN_DIRS`] lanes are open, the queue is
//! filled from them in turn, and a lane's directory is closed once all
//! its entries were sent and the last of them completed. Directories are
//! taken in the sync engine's order (items directory by directory, a
//! tree deepest level first, grouped by parent).

use super::{link_failure, op_name, path_failure, Op, Target, TaskState};
use crate::exchange::TaskReport;
use crate::names::Names;
use crate::plan::Plan;
use iolab_backend::{Dir, MetaDone, MetaOp, MetaQueue};
use iolab_core::Failure;
use std::ffi::CStr;
use std::ops::Range;

/// Most directories one task holds open for queued removal (a task's
/// descriptors stay far below the usual limit of 1024 at any depth).
pub(super) const MAX_OPEN_DIRS: usize = 64;

/// Descriptors left free beside the lanes under a low open-file limit:
/// the removal opens a `-d` directory of its own when it starts, and
/// other threads may open a few.
const SPARE_FDS: u64 = 4;

/// How many directories a task may hold open at once for removal: the
/// queue depth, at most [`MAX_OPEN_DIRS`], and no more than the
/// open-file limit leaves beside what is open (`ulimit -n 64` with 64
/// lanes failed with EMFILE where the sync engine, one directory at a
/// time, passed). At least one.
pub(super) fn lane_width(depth: usize, limit: Option<u64>, open: u64) -> usize {
    let room = limit.map_or(u64::MAX, |l| l.saturating_sub(open + SPARE_FDS));
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    depth.clamp(1, MAX_OPEN_DIRS).min(room).max(1)
}

/// A directory being emptied.
struct Lane {
    /// Opened without following a link below `-d`.
    dir: Dir,
    /// The tags of its entries (a run of consecutive tags).
    run: Range<u64>,
    /// The next tag to send in it.
    next: u64,
    /// Its removals in flight.
    in_flight: usize,
}

impl Lane {
    fn has_more(&self) -> bool {
        self.next < self.run.end
    }
}

/// Where the entries a removal pass removes are: a phase's items (tagged
/// by item number) or a tree's directories (tagged by directory id).
pub(super) struct Doomed<'n> {
    names: &'n mut Names,
    /// The items' target; None for tree directories.
    items: Option<&'n Target>,
    /// The test-dir loop `names` points at.
    cur: u64,
}

impl<'n> Doomed<'n> {
    /// A phase's items of `tg`.
    pub(super) fn items(names: &'n mut Names, tg: &'n Target) -> Self {
        Doomed {
            names,
            items: Some(tg),
            cur: 0,
        }
    }

    /// A tree's directories.
    pub(super) fn dirs(names: &'n mut Names) -> Self {
        Doomed {
            names,
            items: None,
            cur: 0,
        }
    }

    /// The full path of entry `tag`.
    fn path(&mut self, plan: &Plan, leaf: bool, tag: u64) -> &CStr {
        let Some(tg) = self.items else {
            return self.names.dir(tag);
        };
        let (lp, d, m) = plan.locate(tag, leaf);
        if lp != self.cur {
            self.names.set_test_dir(&tg.test_dirs[lp as usize]);
            self.cur = lp;
        }
        self.names.item(d, &tg.prefix, m)
    }

    /// The end of the run of tags from `tag` that share its directory:
    /// items lie `items_per_dir` to a directory, tree directories
    /// `branch` to a parent (the root alone in the test directory).
    fn run_end(&self, plan: &Plan, tag: u64, end: u64) -> u64 {
        let e = match self.items {
            Some(_) => (tag / plan.items_per_dir.max(1) + 1) * plan.items_per_dir.max(1),
            None if tag == 0 => 1,
            None => (plan.parent(tag) + 1) * plan.branch + 1,
        };
        e.min(end)
    }
}

/// The parent directory and the last name of a path.
pub(super) fn split(path: &CStr) -> (&[u8], &CStr) {
    let bytes = path.to_bytes_with_nul();
    match bytes.iter().rposition(|&b| b == b'/') {
        // Part of a C string after a byte of it: still NUL-terminated.
        Some(i) => (
            &bytes[..i],
            CStr::from_bytes_with_nul(&bytes[i + 1..]).unwrap_or(c""),
        ),
        None => (b".", path),
    }
}

impl TaskState<'_> {
    /// Removes the entries tagged `tags` through the queue, lane by lane;
    /// false once a removal failed (recorded in `rep`) or the task was
    /// stopped. Entries found missing are counted as the sync engine
    /// counts them.
    pub(super) fn remove_queued(
        &mut self,
        q: &mut dyn MetaQueue,
        doomed: &mut Doomed,
        op: Op,
        tags: Range<u64>,
        rep: &mut TaskReport,
    ) -> bool {
        let width = lane_width(
            q.depth(),
            iolab_core::env::open_files_limit(),
            iolab_core::env::open_files_now(),
        );
        let mut lanes: Vec<Lane> = Vec::with_capacity(width);
        let (mut next, mut turn, mut ok) = (tags.start, 0, true);
        loop {
            lanes.retain(|l| l.has_more() || l.in_flight > 0);
            while ok && q.has_room() {
                if self.cancelled() {
                    ok = false;
                    break;
                }
                while ok && lanes.len() < width && next < tags.end {
                    let run = next..doomed.run_end(&self.ctx.plan, next, tags.end);
                    next = run.end;
                    match self.open_lane(doomed, op, run, rep) {
                        Ok(Some(lane)) => lanes.push(lane),
                        Ok(None) => {}
                        Err(()) => ok = false,
                    }
                }
                let n = lanes.len();
                let Some(i) = (0..n)
                    .map(|j| (turn + j) % n)
                    .find(|&i| lanes[i].has_more())
                else {
                    break;
                };
                turn = i + 1;
                ok = ok && self.push_removal(q, doomed, op, &mut lanes[i], rep);
            }
            if q.in_flight() == 0 {
                let more = next < tags.end || lanes.iter().any(Lane::has_more);
                if ok && more {
                    continue;
                }
                return ok;
            }
            ok &= self.reap_removals(q, doomed, op, &mut lanes, rep);
        }
    }

    /// Opens the directory of the entries `run` (no link followed below
    /// `-d`). None when it is missing and missing entries are tolerated
    /// (each counted missing); Err once the failure is recorded. A
    /// missing directory or a link fails each entry, as in the sync
    /// engine; any other failure (EMFILE) is the open's, named so.
    fn open_lane(
        &mut self,
        doomed: &mut Doomed,
        op: Op,
        run: Range<u64>,
        rep: &mut TaskReport,
    ) -> Result<Option<Lane>, ()> {
        let (plan, leaf) = (self.ctx.plan, self.ctx.cfg.leaf_only);
        let path = doomed.path(&plan, leaf, run.start);
        let (parent, _) = split(path);
        let be = self.ctx.backend;
        let e = match self.dirs.open_owned(be, parent) {
            Ok(dir) => {
                let next = run.start;
                return Ok(Some(Lane {
                    dir,
                    run,
                    next,
                    in_flight: 0,
                }));
            }
            Err(e) => e,
        };
        let per_entry =
            e.raw_os_error() == Some(libc::ENOENT) || iolab_backend::not_a_directory(&e);
        if !per_entry {
            let dir = String::from_utf8_lossy(parent).into_owned();
            let mut f = Failure::io("open", Some(dir), &e);
            f.message = format!("{e} (the directory whose entries the phase removes)");
            self.account(op, Err(f), rep);
            return Err(());
        }
        // As the sync engine fails each entry of the directory.
        let f = removal_failure(op, op_name(op), path, &e);
        for _ in run {
            if !self.account(op, Err(f.clone()), rep) {
                return Err(());
            }
        }
        Ok(None)
    }

    /// Sends the next removal of `lane`; false once it could not be sent.
    fn push_removal(
        &mut self,
        q: &mut dyn MetaQueue,
        doomed: &mut Doomed,
        op: Op,
        lane: &mut Lane,
        rep: &mut TaskReport,
    ) -> bool {
        let (plan, leaf) = (self.ctx.plan, self.ctx.cfg.leaf_only);
        let k = lane.next;
        let path = doomed.path(&plan, leaf, k);
        let (_, name) = split(path);
        let dir = &lane.dir;
        let mop = match op {
            Op::Rmdir => MetaOp::Rmdir { dir, name },
            _ => MetaOp::Unlink { dir, name },
        };
        if let Err(e) = q.push(k, &mop) {
            rep.error.get_or_insert(path_failure(op_name(op), path, &e));
            self.ctx.cancel();
            return false;
        }
        lane.next += 1;
        lane.in_flight += 1;
        true
    }

    /// Reaps completed removals: times and counts each; false once one
    /// failed.
    fn reap_removals(
        &mut self,
        q: &mut dyn MetaQueue,
        doomed: &mut Doomed,
        op: Op,
        lanes: &mut [Lane],
        rep: &mut TaskReport,
    ) -> bool {
        let (plan, leaf) = (self.ctx.plan, self.ctx.cfg.leaf_only);
        let mut ok = true;
        let r = q.complete(&mut |d: &MetaDone<'_>| {
            self.last_ns = d.end_ns.saturating_sub(d.start_ns);
            self.hist.record(self.last_ns);
            if let Some(l) = lanes.iter_mut().find(|l| l.run.contains(&d.tag)) {
                l.in_flight -= 1;
            }
            let r = d.result.map(|_| ()).map_err(|e| {
                let path = doomed.path(&plan, leaf, d.tag);
                removal_failure(op, e.step, path, &e.to_io())
            });
            ok &= self.account(op, r, rep);
        });
        if let Err(e) = r {
            rep.error
                .get_or_insert(Failure::io("io_uring_enter", None, &e));
            self.ctx.cancel();
            return false;
        }
        ok
    }
}

/// A removal's failure as the sync engine names it: a link (or a file)
/// where mdtest makes a directory is said to be one.
fn removal_failure(op: Op, step: &str, path: &CStr, e: &std::io::Error) -> Failure {
    match iolab_backend::not_a_directory(e) {
        true => link_failure(op, path, e),
        false => path_failure(step, path, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Shape;

    fn plan(b: u64, z: u64, i: u64, leaf: bool) -> Plan {
        Plan::from_shape(&Shape {
            branch: b,
            depth: z,
            leaf_only: leaf,
            items_asked: 0,
            items_per_dir_asked: i,
        })
        .unwrap()
    }

    /// Runs cover every tag once, each run inside one directory.
    #[test]
    fn runs_share_a_directory() {
        let tg = Target {
            test_dirs: vec!["/d/t0".into(), "/d/t1".into()],
            unique: None,
            prefix: b"file.mdtest.0.".to_vec(),
        };
        for (b, z, i, leaf) in [(3, 2, 4, false), (2, 1, 5, true), (1, 0, 7, false)] {
            let p = plan(b, z, i, leaf);
            let mut names = Names::new(&tg.test_dirs[0], None, p.branch);
            let mut items = Doomed::items(&mut names, &tg);
            let end = p.items_per_task - 1;
            let mut k = 0;
            while k < end {
                let e = items.run_end(&p, k, end);
                assert!(e > k && e <= end);
                let parent = split(items.path(&p, leaf, k)).0.to_vec();
                for j in k..e {
                    assert_eq!(split(items.path(&p, leaf, j)).0, parent, "{p:?} {j}");
                }
                if e < end {
                    assert_ne!(split(items.path(&p, leaf, e)).0, parent, "{p:?} {e}");
                }
                k = e;
            }
            let mut names = Names::new(&tg.test_dirs[0], Some(1), p.branch);
            let mut dirs = Doomed::dirs(&mut names);
            let mut d = 0;
            while d < p.dirs_per_tree {
                let e = dirs.run_end(&p, d, p.dirs_per_tree);
                let parent = split(dirs.path(&p, leaf, d)).0.to_vec();
                for j in d..e {
                    assert_eq!(split(dirs.path(&p, leaf, j)).0, parent);
                }
                d = e;
            }
        }
        assert_eq!(split(c"/a/b/c"), (&b"/a/b"[..], c"c"));
    }

    /// The lanes fit the open-file limit beside what is open: 64 lanes
    /// under `ulimit -n 64` met EMFILE.
    #[test]
    fn lanes_fit_the_open_file_limit() {
        assert_eq!(lane_width(64, None, 10), 64);
        assert_eq!(lane_width(256, Some(1024), 10), MAX_OPEN_DIRS);
        assert_eq!(lane_width(64, Some(64), 10), 50);
        assert_eq!(lane_width(8, Some(64), 10), 8);
        assert_eq!(lane_width(64, Some(16), 20), 1);
        assert_eq!(lane_width(0, None, 0), 1);
        assert_eq!(split(c"c"), (&b"."[..], c"c"));
    }
}
