//! The item loops of `--engine uring`: the same items, names, data and
//! counts as the sync loops, with up to `--qd` operations in flight per
//! task through the backend's [`MetaQueue`]. Each operation's latency runs
//! from the submission that sent it to the reap that saw it complete.
//!
//! Order is kept where a phase needs it: a file's create, write, fsync
//! and close are one chain the backend runs in order; tree directories
//! are made one level at a time (a level is sent only once the one above
//! it completed) and removed deepest level first; items live in
//! directories the tree phase made before. Removals (items and tree) go
//! through `queued_remove.rs`: one name relative to a directory opened
//! without following links, never a path.
//!
//! Items are made, stat'ed and read by their name in their directory,
//! held open for the phase ([`ItemDirs`]): the kernel then walks one
//! name per item rather than the whole path (a -R order goes by path).
//!
//! Items in flight are spread over the directories that hold them
//! ([`Spread`]; removal: lanes of open directories): the kernel
//! serialises creates and removes in one directory (its inode lock), so
//! in-order items would queue behind one lock; a stonewall (-W) or -R
//! keeps the sync engine's order.

use super::queued_remove::{lane_width, split, Doomed, MAX_OPEN_DIRS};
use super::{link_failure, message_failure, path_failure, End, Op, Target, TaskState};
use crate::exchange::TaskReport;
use crate::names::Names;
use crate::plan::Plan;
use crate::rng::{first_mismatch_for, stamp_item_for, Permutation};
use iolab_backend::{Dir, MetaDone, MetaError, MetaOp, MetaQueue};
use iolab_core::clock::mono_ns;
use iolab_core::Failure;
use std::ffi::CStr;
use std::ops::Range;

/// The order in which a full phase's items are sent: column by column
/// over the directories of each test-dir loop (item 0 of every
/// directory, then item 1, ...), so that the operations in flight lie in
/// different directories. A bijection on `0..n`.
pub(super) struct Spread {
    n: u64,
    per_dir: u64,
    cap: u64,
    /// Current loop's first item, its directories, column and row.
    base: u64,
    rows: u64,
    col: u64,
    row: u64,
}

impl Spread {
    pub(super) fn new(plan: &Plan, n: u64) -> Spread {
        let mut s = Spread {
            n,
            per_dir: plan.items_per_dir.max(1),
            cap: plan.loop_capacity().max(1),
            base: 0,
            rows: 0,
            col: 0,
            row: 0,
        };
        s.rows = s.rows_from(0);
        s
    }

    fn rows_from(&self, base: u64) -> u64 {
        (self.n.saturating_sub(base))
            .min(self.cap)
            .div_ceil(self.per_dir)
    }
}

impl Iterator for Spread {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        loop {
            if self.base >= self.n {
                return None;
            }
            if self.col >= self.per_dir {
                self.base += self.cap;
                self.rows = self.rows_from(self.base);
                (self.col, self.row) = (0, 0);
                continue;
            }
            let k = self.base + self.row * self.per_dir + self.col;
            self.row += 1;
            if self.row >= self.rows {
                (self.row, self.col) = (0, self.col + 1);
            }
            if k < self.n && k < self.base + self.cap {
                return Some(k);
            }
        }
    }
}

/// The directories a phase's items are sent in by name, each kept open
/// until the phase's last operation completed (the queue holds their
/// descriptors' numbers): up to `cap` of them, the rest by path. A
/// directory that could not be opened is kept as None: its items go by
/// path, and meet what stopped the open themselves.
struct ItemDirs {
    /// (test-dir loop, directory id) and the directory.
    open: Vec<((u64, u64), Option<Dir>)>,
    cap: usize,
    /// Where the last lookup found its directory.
    last: usize,
}

impl ItemDirs {
    fn new(cap: usize) -> Self {
        ItemDirs {
            open: Vec::with_capacity(cap),
            cap,
            last: 0,
        }
    }

    /// The place of `key` among the open ones; a spread phase visits
    /// them in turn, so the one after the last is looked at first.
    fn find(&mut self, key: (u64, u64)) -> Option<usize> {
        let n = self.open.len();
        let i = (0..n)
            .map(|j| (self.last + j) % n)
            .find(|&i| self.open[i].0 == key)?;
        self.last = i;
        Some(i)
    }
}

/// The items of one loop, in the order they are sent.
enum Order {
    /// In order, from the range's start (the sync engine's).
    Plain(Range<u64>),
    /// -R's permutation over the range.
    Random(Range<u64>, Permutation),
    /// Spread over the directories ([`Spread`]).
    Spread(Spread),
}

impl Iterator for Order {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        match self {
            Order::Plain(r) => r.next(),
            Order::Random(r, p) => r.next().map(|k| p.apply(k)),
            Order::Spread(s) => s.next(),
        }
    }
}

impl TaskState<'_> {
    /// [`TaskState::loop_items`] through the queue.
    pub(super) fn loop_queued(
        &mut self,
        tg: &Target,
        op: Op,
        range: Range<u64>,
        order: Option<Permutation>,
        deadline: Option<u64>,
        rep: &mut TaskReport,
    ) -> End {
        let Some(mut q) = self.queue.take() else {
            return End::Stopped;
        };
        if matches!(op, Op::Unlink | Op::Rmdir) {
            // Relative to directories opened without following links.
            let mut names = Names::new(&tg.test_dirs[0], tg.unique, self.ctx.plan.branch);
            let mut doomed = Doomed::items(&mut names, tg);
            let ok = self.remove_queued(&mut *q, &mut doomed, op, range, rep);
            self.queue = Some(q);
            return if ok { End::Done } else { End::Stopped };
        }
        let full = range.start == 0 && range.end == self.ctx.plan.items_per_task;
        let spread = order.is_none() && deadline.is_none() && self.ctx.cfg.stonewall_s == 0;
        let order = match (order, spread && full) {
            (Some(p), _) => Order::Random(range.clone(), p),
            (None, true) => Order::Spread(Spread::new(&self.ctx.plan, range.end)),
            (None, false) => Order::Plain(range.clone()),
        };
        let width = match order {
            Order::Random(..) => 0,
            _ => lane_width(
                MAX_OPEN_DIRS,
                iolab_core::env::open_files_limit(),
                iolab_core::env::open_files_now(),
            ),
        };
        let mut dirs = ItemDirs::new(width);
        let end = self.drive(
            &mut *q,
            tg,
            op,
            range.start,
            order,
            deadline,
            &mut dirs,
            rep,
        );
        // Every operation completed (drive waits for them): the
        // directories may close.
        drop(dirs);
        self.queue = Some(q);
        end
    }

    /// Keeps the queue full from `order` until the items run out, the
    /// wall is reached or an error stops the task; then waits for what is
    /// in flight. The count at the wall is of items sent, all completed.
    #[allow(clippy::too_many_arguments)]
    fn drive(
        &mut self,
        q: &mut dyn MetaQueue,
        tg: &Target,
        op: Op,
        first: u64,
        mut order: Order,
        deadline: Option<u64>,
        dirs: &mut ItemDirs,
        rep: &mut TaskReport,
    ) -> End {
        let plan = self.ctx.plan;
        let leaf = self.ctx.cfg.leaf_only;
        let mut names = Names::new(&tg.test_dirs[0], tg.unique, plan.branch);
        let mut cur = 0;
        let (mut sent, mut stopped, mut wall) = (first, false, None);
        loop {
            while !stopped && wall.is_none() && q.has_room() {
                if self.cancelled() {
                    stopped = true;
                    break;
                }
                if deadline.is_some_and(|d| mono_ns() >= d) {
                    wall = Some(sent);
                    break;
                }
                let Some(k) = order.next() else { break };
                let (lp, d, m) = plan.locate(k, leaf);
                if lp != cur {
                    names.set_test_dir(&tg.test_dirs[lp as usize]);
                    cur = lp;
                }
                let path = names.item(d, &tg.prefix, m);
                let pushed = self.item_dir(dirs, op, (lp, d), path).and_then(|at| {
                    let dir = at.and_then(|i| dirs.open[i].1.as_ref());
                    self.push(q, op, k, m, path, dir)
                });
                if let Err(f) = pushed {
                    rep.error.get_or_insert(f);
                    self.ctx.cancel();
                    stopped = true;
                    break;
                }
                sent += 1;
            }
            if q.in_flight() == 0 {
                break;
            }
            if !self.reap(q, tg, op, &mut names, rep) {
                stopped = true;
            }
        }
        match (stopped, wall) {
            (true, _) => End::Stopped,
            (false, Some(k)) => End::Wall(k),
            (false, None) => End::Done,
        }
    }

    /// The place in `dirs` of the directory of the item at `path`
    /// (directory `key`), opened (no link followed below -d) on its first
    /// item; None when the item goes by its path. A link on the way is
    /// the item's failure, as in the sync engine.
    fn item_dir(
        &mut self,
        dirs: &mut ItemDirs,
        op: Op,
        key: (u64, u64),
        path: &CStr,
    ) -> Result<Option<usize>, Failure> {
        if dirs.cap == 0 {
            return Ok(None);
        }
        if let Some(i) = dirs.find(key) {
            return Ok(Some(i));
        }
        if dirs.open.len() >= dirs.cap {
            return Ok(None);
        }
        let (parent, _) = split(path);
        let dir = match self.dirs.open_owned(self.ctx.backend, parent) {
            Ok(d) => Some(d),
            Err(e) if iolab_backend::not_a_directory(&e) => return Err(link_failure(op, path, &e)),
            Err(_) => None,
        };
        dirs.open.push((key, dir));
        dirs.last = dirs.open.len() - 1;
        Ok(Some(dirs.last))
    }

    /// Queues item `k` (item number `m` in its directory) at `path`, by
    /// its name in `dir` when it has one.
    fn push(
        &mut self,
        q: &mut dyn MetaQueue,
        op: Op,
        k: u64,
        m: u64,
        path: &CStr,
        dir: Option<&Dir>,
    ) -> Result<(), Failure> {
        let cfg = self.ctx.cfg;
        let name = match dir {
            Some(_) => split(path).1,
            None => path,
        };
        let mop = match op {
            Op::Mkdir => MetaOp::Mkdir {
                path: name,
                dir,
                mode: 0o775,
            },
            // Removals go through `queued_remove.rs`, never by path.
            Op::Rmdir | Op::Unlink => {
                return Err(message_failure(
                    super::op_name(op),
                    path,
                    "a removal through the queue names its directory by descriptor".into(),
                ))
            }
            Op::Stat => MetaOp::Stat { path: name, dir },
            Op::Read => MetaOp::Read {
                path: name,
                dir,
                len: self.rbuf.len(),
            },
            Op::Create => {
                if !self.wbuf.is_empty() {
                    stamp_item_for(&mut self.wbuf, m, cfg.data_seed);
                }
                MetaOp::Create {
                    path: name,
                    dir,
                    data: &self.wbuf,
                    exclusive: !cfg.shared_file,
                    fsync: cfg.fsync,
                }
            }
        };
        q.push(k, &mop)
            .map_err(|e| path_failure(super::op_name(op), path, &e))
    }

    /// Reaps what completed: times, verifies (-X) and counts each item;
    /// false once an item failed.
    fn reap(
        &mut self,
        q: &mut dyn MetaQueue,
        tg: &Target,
        op: Op,
        names: &mut Names,
        rep: &mut TaskReport,
    ) -> bool {
        let mut ok = true;
        let r = q.complete(&mut |d: &MetaDone<'_>| {
            self.hist.record(d.end_ns.saturating_sub(d.start_ns));
            let r = self
                .check(op, d)
                .map_err(|e| self.failure(tg, d.tag, e, names));
            ok &= self.account(op, r, rep);
        });
        if let Err(e) = r {
            let f = Failure::io("io_uring_enter", None, &e);
            rep.error.get_or_insert(f);
            self.ctx.cancel();
            return false;
        }
        ok
    }

    /// What a completion means for the item: its error, or for a read
    /// with -X the data checked against what was written.
    fn check(&self, op: Op, d: &MetaDone<'_>) -> Result<(), Check> {
        d.result.map_err(Check::Failed)?;
        let cfg = self.ctx.cfg;
        if op == Op::Read && cfg.verify_read && !self.rbuf.is_empty() {
            let (_, _, m) = self.ctx.plan.locate(d.tag, cfg.leaf_only);
            let (seed, writer) = (cfg.data_seed, self.writer_of(d.data));
            if let Some(off) = first_mismatch_for(d.data, &self.pattern, m, seed, writer) {
                return Err(Check::Differs(off));
            }
        }
        Ok(())
    }

    /// The failure of item `k`, named as the sync engine names it.
    fn failure(&self, tg: &Target, k: u64, why: Check, names: &mut Names) -> Failure {
        let (lp, d, m) = self.ctx.plan.locate(k, self.ctx.cfg.leaf_only);
        names.set_test_dir(&tg.test_dirs[lp as usize]);
        let path = names.item(d, &tg.prefix, m);
        match why {
            Check::Failed(MetaError {
                step: "read",
                short: Some((got, want)),
                ..
            }) => message_failure(
                "read",
                path,
                format!("short read: {got} of {want} bytes (the file is shorter than -e)"),
            ),
            Check::Failed(e) => path_failure(e.step, path, &e.to_io()),
            Check::Differs(off) => message_failure(
                "verify (-X)",
                path,
                format!("data differs from what was written, first at byte {off}"),
            ),
        }
    }

    /// Tree creation (parents first: a level is sent once the level
    /// above completed) or removal (deepest level first, each directory
    /// relative to its parent opened without following links), through
    /// the queue; false once a directory failed or the task was stopped.
    pub(super) fn tree_queued(
        &mut self,
        names: &mut Names,
        create: bool,
        rep: &mut TaskReport,
    ) -> bool {
        let Some(mut q) = self.queue.take() else {
            return false;
        };
        let mut levels = tree_levels(&self.ctx.plan);
        if !create {
            levels.reverse();
        }
        let mut ok = true;
        for level in levels {
            ok = match create {
                true => self.tree_level(&mut *q, names, level, rep),
                false => {
                    let mut doomed = Doomed::dirs(names);
                    self.remove_queued(&mut *q, &mut doomed, Op::Rmdir, level, rep)
                }
            };
            if !ok {
                break;
            }
        }
        self.queue = Some(q);
        ok
    }

    /// Makes the directories of one tree level.
    fn tree_level(
        &mut self,
        q: &mut dyn MetaQueue,
        names: &mut Names,
        level: Range<u64>,
        rep: &mut TaskReport,
    ) -> bool {
        let op = Op::Mkdir;
        let mut ids = level;
        let mut ok = true;
        loop {
            while ok && q.has_room() {
                if self.cancelled() {
                    ok = false;
                    break;
                }
                let Some(d) = ids.next() else { break };
                let path = names.dir(d);
                if let Err(e) = q.push(
                    d,
                    &MetaOp::Mkdir {
                        path,
                        dir: None,
                        mode: 0o775,
                    },
                ) {
                    rep.error
                        .get_or_insert(path_failure(super::op_name(op), path, &e));
                    self.ctx.cancel();
                    ok = false;
                }
            }
            if q.in_flight() == 0 {
                return ok;
            }
            let r = q.complete(&mut |c: &MetaDone<'_>| {
                self.hist.record(c.end_ns.saturating_sub(c.start_ns));
                let r = c.result.map(|_| ()).map_err(|e| {
                    let path = names.dir(c.tag);
                    path_failure(e.step, path, &e.to_io())
                });
                ok &= self.account(op, r, rep);
            });
            if let Err(e) = r {
                rep.error
                    .get_or_insert(Failure::io("io_uring_enter", None, &e));
                self.ctx.cancel();
                ok = false;
            }
        }
    }
}

/// Why a completed item did not pass.
#[derive(Debug, Clone, Copy)]
enum Check {
    Failed(MetaError),
    Differs(usize),
}

/// The directory ids of each level of a tree, root first.
fn tree_levels(plan: &Plan) -> Vec<Range<u64>> {
    let mut out = Vec::with_capacity(plan.depth as usize + 1);
    let (mut start, mut width) = (0u64, 1u64);
    while start < plan.dirs_per_tree {
        let end = start.saturating_add(width).min(plan.dirs_per_tree);
        out.push(start..end);
        start = end;
        width = width.saturating_mul(plan.branch.max(1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Shape;

    fn plan(b: u64, z: u64, n: u64, i: u64) -> Plan {
        Plan::from_shape(&Shape {
            branch: b,
            depth: z,
            leaf_only: false,
            items_asked: n,
            items_per_dir_asked: i,
        })
        .unwrap()
    }

    #[test]
    fn spread_visits_every_item_once_across_directories() {
        for (b, z, n, i) in [
            (3, 2, 130, 0),
            (1, 0, 7, 0),
            (2, 1, 30, 4),
            (3, 2, 0, 5),
            (2, 2, 50, 5),
        ] {
            let p = plan(b, z, n, i);
            let order: Vec<u64> = Spread::new(&p, p.items_per_task).collect();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..p.items_per_task).collect::<Vec<_>>(), "{p:?}");
            if p.item_dirs > 1 && p.items_per_task >= p.item_dirs {
                // The first item_dirs sent lie in as many directories.
                let dirs: std::collections::BTreeSet<u64> = order[..p.item_dirs as usize]
                    .iter()
                    .map(|&k| p.locate(k, false).1)
                    .collect();
                assert_eq!(dirs.len() as u64, p.item_dirs, "{p:?}");
            }
        }
    }

    #[test]
    fn tree_levels_are_breadth_first_ranges() {
        assert_eq!(tree_levels(&plan(3, 2, 13, 0)), vec![0..1, 1..4, 4..13]);
        assert_eq!(tree_levels(&plan(1, 2, 3, 0)), vec![0..1, 1..2, 2..3]);
        assert_eq!(tree_levels(&plan(5, 0, 1, 0)), vec![0..1]);
    }
}
