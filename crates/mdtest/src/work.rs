//! What one task does inside each phase: the item loops. Names are built
//! in reused buffers and data buffers are filled once, so the loops do
//! nothing per item but the system calls and two clock reads.

mod queued;
mod queued_remove;

use crate::at_dirs::AtDirs;
use crate::cleanup;
use crate::ctx::RunCtx;
use crate::exchange::{PhaseTrouble, TaskReport};
use crate::names::{prefix, test_dir, Names};
use crate::results::Phase;
use crate::rng::{
    fill_pattern_for, first_mismatch_for, packet_writer, stamp_item_for, Permutation,
};
use iolab_backend::{c_path, Backend, Dir, Handle, OpenOptions};
use iolab_comm::{Comm, CommExt};
use iolab_core::clock::{mono_ns, wall_ns};
use iolab_core::live::Recorder;
use iolab_core::{Failure, Histogram};
use std::ffi::CStr;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// What the loop does to each item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Mkdir,
    Rmdir,
    Create,
    Stat,
    Read,
    Unlink,
}

/// How an item loop ended.
enum End {
    /// All items done.
    Done,
    /// The stonewall fired after this many items.
    Wall(u64),
    /// An error or a stop request; the error is in the report.
    Stopped,
}

/// Where a phase's items live, for one target task.
struct Target {
    /// Test directory of each loop.
    test_dirs: Vec<PathBuf>,
    /// Tree owner with -u.
    unique: Option<usize>,
    /// `file.mdtest.<t>.` and the like.
    prefix: Vec<u8>,
}

/// One task's state, built before its thread starts its first phase.
pub struct TaskState<'a> {
    ctx: &'a RunCtx<'a>,
    comm: &'a dyn Comm,
    seed: Option<u64>,
    /// The task whose files a read phase verifies (IOR's -G data names
    /// its writer).
    writer: u64,
    /// -R's order, built before the first phase as mdtest builds its
    /// rand_array (not inside a timed phase): (items, seed, order).
    order: Option<(u64, u64, Permutation)>,
    hist: Histogram,
    /// The live recorder of the phase under way (off between phases).
    pub(crate) live: Recorder,
    /// The last operation's latency, for the live recorder.
    last_ns: u64,
    /// In a create phase that ends on its steady state like at a wall.
    steady_ends: bool,
    pattern: Vec<u8>,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    created_root: bool,
    created_dirs: Vec<PathBuf>,
    output_failure: Option<Failure>,
    /// The metadata queue of `--engine uring` (None: the sync engine).
    queue: Option<Box<dyn iolab_backend::MetaQueue>>,
    /// The directories the item phases work in by name (no link followed
    /// below -d).
    dirs: AtDirs,
    /// Items go by their whole path (a -R order, whose consecutive items
    /// seldom share a directory), not by name in their open directory.
    by_path: bool,
}

impl<'a> TaskState<'a> {
    /// State for the calling task.
    pub fn new(ctx: &'a RunCtx<'a>, comm: &'a dyn Comm, seed: Option<u64>) -> Self {
        let cfg = ctx.cfg;
        let mut pattern = vec![0u8; cfg.write_bytes.max(cfg.read_bytes) as usize];
        fill_pattern_for(&mut pattern, cfg.data_seed, comm.task() as u64);
        TaskState {
            wbuf: pattern[..cfg.write_bytes as usize].to_vec(),
            rbuf: vec![0u8; cfg.read_bytes as usize],
            pattern,
            ctx,
            comm,
            seed,
            writer: comm.task() as u64,
            order: seed.map(|s| {
                let (n, s) = (ctx.plan.items_per_task, s.wrapping_add(comm.task() as u64));
                (n, s, Permutation::new(n, s))
            }),
            hist: Histogram::new(),
            live: Recorder::off(),
            last_ns: 0,
            steady_ends: false,
            created_root: false,
            created_dirs: Vec::new(),
            output_failure: None,
            queue: None,
            dirs: AtDirs::new(&cfg.dirs),
            by_path: false,
        }
    }

    /// Makes the item loops go through `queue` (`--engine uring`).
    pub fn set_queue(&mut self, queue: Option<Box<dyn iolab_backend::MetaQueue>>) {
        self.queue = queue;
    }

    /// This task's communicator.
    pub fn comm(&self) -> &'a dyn Comm {
        self.comm
    }

    /// This task's global id.
    pub fn task(&self) -> usize {
        self.comm.task()
    }

    /// The -R seed every task agreed on.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// Records that a user output file (-x) could not be written.
    pub fn set_output_failure(&mut self, f: Failure) {
        self.output_failure.get_or_insert(f);
    }

    /// Hands over the output failure, if any.
    pub fn take_output_failure(&mut self) -> Option<Failure> {
        self.output_failure.take()
    }

    /// Hands over the latencies of the phase just done.
    pub fn take_latency(&mut self) -> Histogram {
        std::mem::take(&mut self.hist)
    }

    fn backend(&self) -> &'a dyn Backend {
        self.ctx.backend
    }

    fn cancelled(&self) -> bool {
        self.ctx.cancelled(self.comm)
    }

    /// The path index a task owns (creates the shared tree and the test
    /// directories in), if any: tasks 0..paths each own one path.
    fn owned_path(&self) -> Option<&'a Path> {
        self.ctx.cfg.dirs.get(self.task()).map(PathBuf::as_path)
    }

    /// Where `task`'s items of `kind` ("file", "dir") live; `shared` for
    /// -S names and for trees (whose item prefix is unused). With -u the
    /// items named after task t live in the tree of task t + N, as in
    /// mdtest 4.x; `tree` gives that owner.
    fn target(&self, iter: u64, task: usize, kind: &str, shared: bool) -> Target {
        let tree = self.ctx.tree_of_items(self.comm, task);
        self.target_in(iter, task, tree, kind, shared)
    }

    /// Like [`TaskState::target`] with the -u tree given.
    fn target_in(&self, iter: u64, task: usize, tree: usize, kind: &str, shared: bool) -> Target {
        let cfg = self.ctx.cfg;
        let root = &cfg.dirs[task % cfg.dirs.len()];
        Target {
            test_dirs: (0..self.ctx.plan.loops)
                .map(|l| test_dir(root, iter, l))
                .collect(),
            unique: cfg.unique_dir.then_some(tree),
            prefix: prefix(kind, (!shared).then_some(task)),
        }
    }

    /// Creates the -d directory (first iteration, if missing) and the
    /// test directories this task owns, through the backend. Collective.
    pub fn setup_test_dirs(&mut self, iter: u64) -> Result<(), PhaseTrouble> {
        let error = match (self.owned_path(), self.ctx.cfg.phases.create) {
            (Some(root), true) => self.make_test_dirs(root, iter).err(),
            _ => None,
        };
        match iolab_comm::failure::first_failure(self.comm, error) {
            Some(e) => Err(PhaseTrouble {
                error: Some(e),
                interrupted: false,
                cut: None,
            }),
            None => Ok(()),
        }
    }

    fn make_test_dirs(&mut self, root: &'a Path, iter: u64) -> Result<(), Failure> {
        let be = self.backend();
        let c = |p: &Path| c_path(p).map_err(|e| fs_failure("mkdir", p, &e));
        if iter == 0 && !be.exists(&c(root)?).unwrap_or(true) {
            be.mkdir(&c(root)?, 0o775)
                .map_err(|e| fs_failure("mkdir", root, &e))?;
            self.created_root = true;
        }
        for l in 0..self.ctx.plan.loops {
            let td = test_dir(root, iter, l);
            match be.mkdir(&c(&td)?, 0o775) {
                Ok(()) => self.created_dirs.push(td),
                // A later task count of a create-only sweep finds the
                // directory the first count made, as mdtest does.
                Err(e) if self.ctx.reuse_existing && e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(fs_failure("mkdir", &td, &e)),
            }
        }
        Ok(())
    }

    /// Closes the directories a remove phase held open.
    pub fn close_dirs(&mut self) {
        self.dirs.reset();
    }

    /// Removes this task's (now empty) test directories after a remove pass.
    pub fn remove_test_dirs(&mut self, iter: u64) {
        if self.ctx.keep_tree {
            return;
        }
        self.dirs.reset();
        if let Some(root) = self.owned_path() {
            for l in 0..self.ctx.plan.loops {
                let td = test_dir(root, iter, l);
                let be = self.backend();
                let gone = c_path(&td).and_then(|c| self.dirs.remove(be, &c, true));
                if gone.is_ok() {
                    self.created_dirs.retain(|d| d != &td);
                }
            }
        }
    }

    /// Removes the -d directory at the end if this run made it and it is empty.
    pub fn remove_root_if_created(&mut self) {
        self.dirs.close_all();
        if let (Some(root), true, true) = (
            self.owned_path(),
            self.created_root,
            self.ctx.cfg.phases.remove,
        ) {
            let _ = c_path(root).and_then(|c| self.backend().rmdir(&c));
        }
    }

    /// After a failure: removes what this run created under the test
    /// directories this task made; returns what it removed and what had
    /// to stay (or could not be seen removed).
    pub fn cleanup_after_failure(&mut self) -> iolab_backend::remove::Removal {
        self.dirs.close_all();
        let mut all = iolab_backend::remove::Removal::default();
        if self.ctx.leave_on_failure {
            return all;
        }
        let bounds = cleanup::Bounds::of(&self.ctx.plan, self.comm.tasks() as u64);
        for d in std::mem::take(&mut self.created_dirs) {
            let mut here = cleanup::remove_ours(self.backend(), &d, bounds);
            if !here.left.is_empty() && self.comm.cancelled() {
                // Without a last barrier a peer may have finished the item
                // it was making after our sweep: give it that moment.
                std::thread::sleep(std::time::Duration::from_millis(100));
                let again = cleanup::remove_ours(self.backend(), &d, bounds);
                here = iolab_backend::remove::Removal {
                    removed: here.removed + again.removed,
                    left: again.left,
                };
            }
            all.merge(here);
        }
        if let (true, Some(root)) = (self.created_root, self.owned_path()) {
            let _ = c_path(root).and_then(|c| self.backend().rmdir(&c));
        }
        all
    }

    /// Sleeps for -p seconds, waking early on a stop request.
    pub fn pre_delay(&self) {
        let until = mono_ns() + self.ctx.cfg.pre_delay_s * 1_000_000_000;
        while mono_ns() < until && !self.cancelled() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Trees this task creates or removes: (path owner task, -u owner).
    fn trees(&self) -> Vec<(usize, Option<usize>)> {
        let cfg = self.ctx.cfg;
        let (t, n) = (self.task(), self.comm.tasks());
        match (cfg.unique_dir, cfg.collective) {
            (true, true) if t == 0 => (0..n).map(|u| (u, Some(u))).collect(),
            (true, true) => Vec::new(),
            (true, false) => vec![(t, Some(t))],
            (false, _) if t < cfg.dirs.len() => vec![(t, None)],
            (false, _) => Vec::new(),
        }
    }

    /// Before tree removal's clock starts: opens the directory the
    /// task's first removal is made in (the sync engine's; the queue
    /// opens its own), as mdtest's rmdir of a path has no open to pay.
    pub fn prepare_tree_removal(&mut self, iter: u64) {
        let plan = self.ctx.plan;
        let (None, Some(last)) = (&self.queue, plan.dirs_per_tree.checked_sub(1)) else {
            return;
        };
        let Some(&(owner, unique)) = self.trees().first() else {
            return;
        };
        let tg = self.target_in(iter, owner, owner, "dir", true);
        let Some(td) = tg.test_dirs.first() else {
            return;
        };
        let mut names = Names::new(td, unique, plan.branch);
        let be = self.ctx.backend;
        self.dirs.prepare(be, names.dir(last));
    }

    /// Tree creation (parents first) or removal (children first). The
    /// phase closed the directories removals were made in before it
    /// ([`Self::close_dirs`]), and opened the first one of a removal
    /// ([`Self::prepare_tree_removal`]).
    pub fn tree(&mut self, iter: u64, create: bool, rep: &mut TaskReport) {
        let plan = self.ctx.plan;
        // A tree's directories change parent every -b of them (each of
        // a -b 1 tree): made by path, not by name in an open parent.
        // Removed in an open parent all the same (no link followed).
        self.by_path = create;
        for (owner, unique) in self.trees() {
            let tg = self.target_in(iter, owner, owner, "dir", true);
            for td in &tg.test_dirs {
                let mut names = Names::new(td, unique, plan.branch);
                if self.queue.is_some() {
                    if !self.tree_queued(&mut names, create, rep) {
                        return;
                    }
                    continue;
                }
                let ids: Box<dyn Iterator<Item = u64>> = if create {
                    Box::new(0..plan.dirs_per_tree)
                } else {
                    Box::new((0..plan.dirs_per_tree).rev())
                };
                for d in ids {
                    if self.cancelled() {
                        return;
                    }
                    let op = if create { Op::Mkdir } else { Op::Rmdir };
                    if !self.one(op, names.dir(d), 0, rep) {
                        return;
                    }
                }
            }
        }
    }

    /// Phase index j for -N: create 0, stat (and rename) 1, read 2, remove 3.
    fn stride_index(phase: Phase) -> u64 {
        match phase {
            Phase::DirStat | Phase::FileStat | Phase::DirRename => 1,
            Phase::FileRead => 2,
            Phase::DirRemove | Phase::FileRemove => 3,
            _ => 0,
        }
    }

    /// Whose items this task works on in `phase`.
    fn targets(&self, phase: Phase) -> Vec<usize> {
        let cfg = self.ctx.cfg;
        let (t, n) = (self.task(), self.comm.tasks());
        let create_or_remove = matches!(
            phase,
            Phase::DirCreate | Phase::FileCreate | Phase::DirRemove | Phase::FileRemove
        );
        if cfg.collective && create_or_remove {
            return if t == 0 { (0..n).collect() } else { Vec::new() };
        }
        if cfg.shared_file && phase == Phase::FileRemove {
            return if t == 0 { vec![0] } else { Vec::new() };
        }
        vec![self.ctx.neighbour(self.comm, Self::stride_index(phase))]
    }

    fn op_of(phase: Phase) -> Op {
        match phase {
            Phase::DirCreate | Phase::TreeCreate => Op::Mkdir,
            Phase::DirRemove | Phase::TreeRemove => Op::Rmdir,
            Phase::FileCreate => Op::Create,
            Phase::DirStat | Phase::FileStat | Phase::DirRename => Op::Stat,
            Phase::FileRead => Op::Read,
            Phase::FileRemove => Op::Unlink,
        }
    }

    fn kind(phase: Phase) -> &'static str {
        match phase {
            Phase::FileCreate | Phase::FileStat | Phase::FileRead | Phase::FileRemove => "file",
            _ => "dir",
        }
    }

    /// A non-create item phase (stat, read, remove) over `n` items.
    pub fn items(&mut self, iter: u64, phase: Phase, n: u64, rep: &mut TaskReport) {
        self.dirs.reset();
        let cfg = self.ctx.cfg;
        let random = matches!(phase, Phase::DirStat | Phase::FileStat | Phase::FileRead);
        let order = match (random, self.seed) {
            (true, Some(s)) => Some(self.order_of(n, s.wrapping_add(self.task() as u64))),
            _ => None,
        };
        for target in self.targets(phase) {
            // A shared file's writer is read from its packets (read_file).
            self.writer = if cfg.shared_file { self.task() } else { target } as u64;
            let tg = self.target(iter, target, Self::kind(phase), cfg.shared_file);
            let order = order.clone();
            if let End::Stopped = self.loop_items(&tg, Self::op_of(phase), 0..n, order, None, rep) {
                return;
            }
        }
    }

    /// The -R order of `n` items for `seed`: the one built up front, or a
    /// new one when a stonewall changed the item count.
    fn order_of(&mut self, n: u64, seed: u64) -> Permutation {
        match &self.order {
            Some((m, s, p)) if (*m, *s) == (n, seed) => p.clone(),
            _ => {
                let p = Permutation::new(n, seed);
                self.order = Some((n, seed, p.clone()));
                p
            }
        }
    }

    /// A create phase with the stonewall: stops at the wall, agrees with
    /// every task on the largest count reached, and catches up to it.
    /// Returns the count every task ends with.
    pub fn create(&mut self, iter: u64, phase: Phase, n: u64, rep: &mut TaskReport) -> u64 {
        let cfg = self.ctx.cfg;
        let wall_s = cfg.stonewall_s;
        let deadline = (wall_s > 0).then(|| mono_ns() + wall_s * 1_000_000_000);
        // A steady state (--steady) ends the phase as a wall would.
        let walled = wall_s > 0 || self.ctx.steady_watched();
        self.steady_ends = self.ctx.steady_watched();
        let op = Self::op_of(phase);
        let targets = self.targets(phase);
        self.dirs.reset();
        let mut done = n;
        for &target in &targets {
            let tg = self.target(iter, target, Self::kind(phase), cfg.shared_file);
            match self.loop_items(&tg, op, 0..n, None, deadline, rep) {
                End::Done => {}
                End::Wall(k) => done = k,
                End::Stopped => done = rep.items,
            }
        }
        self.steady_ends = false;
        if !walled {
            return n;
        }
        rep.wall = Some((done, wall_ns(), done < n));
        let max = self.comm.max_u64(if targets.is_empty() { 0 } else { done });
        if done < max && rep.error.is_none() {
            for &target in &targets {
                let tg = self.target(iter, target, Self::kind(phase), cfg.shared_file);
                self.loop_items(&tg, op, done..max, None, None, rep);
            }
        }
        max
    }

    /// The rename phase (-U): item 0 moves aside, each item i takes the
    /// name of item i-1, and item 0 lands on the name of item n-2: n
    /// renames that leave the same set of names, as mdtest does it.
    pub fn rename(&mut self, iter: u64, n: u64, rep: &mut TaskReport) {
        let target = self.targets(Phase::DirRename)[0];
        let tg = self.target(iter, target, "dir", false);
        let plan = self.ctx.plan;
        let leaf = self.ctx.cfg.leaf_only;
        let mut from = Names::new(&tg.test_dirs[0], tg.unique, plan.branch);
        let mut to = Names::new(&tg.test_dirs[0], tg.unique, plan.branch);
        let mut step =
            |k_from: u64, sfx_from: &[u8], k_to: u64, sfx_to: &[u8], st: &mut Self| -> bool {
                let (lf, df, mf) = plan.locate(k_from, leaf);
                let (lt, dt, mt) = plan.locate(k_to, leaf);
                from.set_test_dir(&tg.test_dirs[lf as usize]);
                to.set_test_dir(&tg.test_dirs[lt as usize]);
                let a = from.item_with_suffix(df, &tg.prefix, mf, sfx_from);
                let b = to.item_with_suffix(dt, &tg.prefix, mt, sfx_to);
                st.rename_one(a, b, rep)
            };
        if !step(0, b"", 0, b"-XX", self) {
            return;
        }
        for i in 1..n - 1 {
            if self.cancelled() || !step(i, b"", i - 1, b"", self) {
                return;
            }
        }
        step(0, b"-XX", n - 2, b"", self);
    }

    fn rename_one(&mut self, a: &CStr, b: &CStr, rep: &mut TaskReport) -> bool {
        let t0 = mono_ns();
        let r = self.backend().rename(a, b);
        self.last_ns = mono_ns() - t0;
        self.hist.record(self.last_ns);
        let r = r.map_err(|e| {
            let mut f = path_failure("rename", a, &e);
            f.message = format!("-> {}: {e}", b.to_string_lossy());
            f
        });
        // Counted like a stat: no missing or existing name is tolerated.
        self.account(Op::Stat, r, rep)
    }

    fn loop_items(
        &mut self,
        tg: &Target,
        op: Op,
        range: std::ops::Range<u64>,
        order: Option<Permutation>,
        deadline: Option<u64>,
        rep: &mut TaskReport,
    ) -> End {
        if self.queue.is_some() {
            return self.loop_queued(tg, op, range, order, deadline, rep);
        }
        let plan = self.ctx.plan;
        let leaf = self.ctx.cfg.leaf_only;
        let mut names = Names::new(&tg.test_dirs[0], tg.unique, plan.branch);
        let mut cur = 0;
        self.by_path = order.is_some();
        for k in range {
            if self.cancelled() {
                return End::Stopped;
            }
            if deadline.is_some_and(|d| mono_ns() >= d)
                || (self.steady_ends && self.live.phase_ended())
            {
                return End::Wall(k);
            }
            let (lp, d, m) = plan.locate(order.as_ref().map_or(k, |p| p.apply(k)), leaf);
            if lp != cur {
                names.set_test_dir(&tg.test_dirs[lp as usize]);
                cur = lp;
            }
            if !self.one(op, names.item(d, &tg.prefix, m), m, rep) {
                return End::Stopped;
            }
        }
        End::Done
    }

    /// One timed operation; false (and the error recorded) on failure.
    #[inline]
    fn one(&mut self, op: Op, path: &CStr, item: u64, rep: &mut TaskReport) -> bool {
        let t0 = mono_ns();
        let r = self.apply(op, path, item);
        self.last_ns = mono_ns() - t0;
        self.hist.record(self.last_ns);
        self.account(op, r, rep)
    }

    /// Counts an operation's result. A remove-only run counts an item
    /// already gone as missing; a later count of a create-only sweep
    /// counts an item already made as done; anything else that failed
    /// stops this task and, through the cancel flag, the others.
    fn account(&mut self, op: Op, r: Result<(), Failure>, rep: &mut TaskReport) -> bool {
        let errno = r.as_ref().err().and_then(|f| f.errno);
        let removing = matches!(op, Op::Unlink | Op::Rmdir);
        let creating = matches!(op, Op::Mkdir | Op::Create);
        match r {
            Err(_) if removing && errno == Some(libc::ENOENT) && self.ctx.tolerates_missing() => {
                rep.missing += 1;
                true
            }
            Err(_) if creating && errno == Some(libc::EEXIST) && self.ctx.reuse_existing => {
                self.done(rep);
                true
            }
            Ok(()) => {
                self.done(rep);
                true
            }
            Err(e) => {
                self.live.error();
                rep.error.get_or_insert(e);
                self.ctx.cancel();
                false
            }
        }
    }

    fn done(&self, rep: &mut TaskReport) {
        rep.items += 1;
        self.live.op(self.op_bytes(rep.phase), self.last_ns);
        self.ctx
            .counter(self.task())
            .store(rep.items, Ordering::Relaxed);
    }

    /// Bytes one finished item of `phase` moved (-w, -e), for the live
    /// figures.
    fn op_bytes(&self, phase: Phase) -> u64 {
        let cfg = self.ctx.cfg;
        match phase {
            Phase::FileCreate if !cfg.mknod => cfg.write_bytes,
            Phase::FileRead => cfg.read_bytes,
            _ => 0,
        }
    }

    fn apply(&mut self, op: Op, path: &CStr, item: u64) -> Result<(), Failure> {
        let be = self.backend();
        let r = match op {
            Op::Mkdir => self.mkdir_item(path),
            // Relative to the item's directory, no link followed below -d.
            Op::Rmdir => self.dirs.remove(be, path, true),
            Op::Stat => self.stat_item(path),
            Op::Unlink => self.dirs.remove(be, path, false),
            Op::Create => return self.create_file(path, item),
            Op::Read => return self.read_file(path, item),
        };
        r.map_err(|e| item_failure(op, op_name(op), path, &e))
    }

    /// The open directory of an item at `path` and its name there, or
    /// None for an item that goes by its path ([`AtDirs::place`]).
    fn at<'p>(&mut self, path: &'p CStr) -> std::io::Result<Option<(&Dir, &'p CStr)>> {
        if self.by_path {
            return Ok(None);
        }
        self.dirs.place(self.ctx.backend, path)
    }

    /// [`Backend::mkdir`] of the item at `path`, in its open directory
    /// where it has one.
    fn mkdir_item(&mut self, path: &CStr) -> std::io::Result<()> {
        let be = self.backend();
        match self.at(path)? {
            Some((dir, leaf)) => be.mkdir_at(dir, leaf, 0o775),
            None => be.mkdir(path, 0o775),
        }
    }

    /// [`Backend::stat`] of the item at `path`, as [`Self::mkdir_item`].
    fn stat_item(&mut self, path: &CStr) -> std::io::Result<()> {
        let be = self.backend();
        match self.at(path)? {
            Some((dir, leaf)) => be.stat_at(dir, leaf).map(drop),
            None => be.stat(path).map(drop),
        }
    }

    /// [`Backend::open`] of the item at `path`, as [`Self::mkdir_item`].
    fn open_item(&mut self, path: &CStr, opts: OpenOptions) -> std::io::Result<Handle> {
        let be = self.backend();
        match self.at(path)? {
            Some((dir, leaf)) => be.open_at(dir, leaf, opts),
            None => be.open(path, opts),
        }
    }

    fn create_file(&mut self, path: &CStr, item: u64) -> Result<(), Failure> {
        let cfg = self.ctx.cfg;
        let be = self.backend();
        let fail = |what: &str, e: std::io::Error| path_failure(what, path, &e);
        if cfg.mknod {
            // A regular file made by mknod(S_IFREG), never opened (mdtest -k).
            return be.mknod_file(path).map_err(|e| fail("mknod", e));
        }
        // Shared files are opened by every task; private ones must be new.
        let opts = OpenOptions {
            write: true,
            create: true,
            exclusive: !cfg.shared_file,
            // The file is written in one write: an object store sends it
            // as it comes instead of copying it to send at close.
            whole_len: (!self.wbuf.is_empty()).then_some(self.wbuf.len() as u64),
            ..Default::default()
        };
        let h = self
            .open_item(path, opts)
            .map_err(|e| item_failure(Op::Create, "create", path, &e))?;
        let mut r = Ok(());
        if !self.wbuf.is_empty() {
            stamp_item_for(&mut self.wbuf, item, cfg.data_seed);
            r = write_all(be, &h, &self.wbuf).map_err(|e| fail("write", e));
        }
        if r.is_ok() && cfg.fsync {
            r = be.fsync(&h).map_err(|e| fail("fsync", e));
        }
        let c = be.close(h).map_err(|e| fail("close", e));
        r.and(c)
    }

    /// The rank whose data `got` (a file read back) should hold. Under -S
    /// every task wrote each file, the last one's data kept: any task's
    /// packets are right, and the whole file is then checked against that
    /// one writer (IOR's mdtest checks its own rank's and fails a correct
    /// file).
    pub(crate) fn writer_of(&self, got: &[u8]) -> u64 {
        let cfg = self.ctx.cfg;
        match (cfg.shared_file, cfg.data_seed) {
            (true, Some(_)) => packet_writer(got, self.comm.tasks() as u64),
            _ => None,
        }
        .unwrap_or(self.writer)
    }

    fn read_file(&mut self, path: &CStr, item: u64) -> Result<(), Failure> {
        let be = self.backend();
        let cfg = self.ctx.cfg;
        let h = self
            .open_item(path, OpenOptions::read())
            .map_err(|e| item_failure(Op::Read, "open", path, &e))?;
        let mut r = Ok(());
        if !self.rbuf.is_empty() {
            // Files made by -k are empty: reading them reads nothing.
            r = read_full(be, &h, &mut self.rbuf, cfg.mknod)
                .map_err(|m| message_failure("read", path, m));
            if r.is_ok() && cfg.verify_read {
                let (seed, writer) = (cfg.data_seed, self.writer_of(&self.rbuf));
                if let Some(off) = first_mismatch_for(&self.rbuf, &self.pattern, item, seed, writer)
                {
                    r = Err(message_failure(
                        "verify (-X)",
                        path,
                        format!("data differs from what was written, first at byte {off}"),
                    ));
                }
            }
        }
        let c = be.close(h).map_err(|e| path_failure("close", path, &e));
        r.and(c)
    }
}

/// A failed system call on `path`: op, path and errno kept apart.
fn path_failure(op: &str, path: &CStr, e: &std::io::Error) -> Failure {
    Failure::io(op, Some(path.to_string_lossy().into_owned()), e)
}

/// A removal refused because a link (or a file) stands where mdtest
/// makes a directory: said so, with the errno kept.
fn link_failure(op: Op, path: &CStr, e: &std::io::Error) -> Failure {
    let mut f = path_failure(op_name(op), path, e);
    f.message = format!(
        "{e}: a symbolic link or a file stands where mdtest makes a directory; no link below -d is followed"
    );
    f
}

/// A failed call `what` of an item of `op`: a link or a file on its way
/// below -d is said as such ([`link_failure`]).
fn item_failure(op: Op, what: &str, path: &CStr, e: &std::io::Error) -> Failure {
    match iolab_backend::not_a_directory(e) {
        true => link_failure(op, path, e),
        false => path_failure(what, path, e),
    }
}

fn fs_failure(op: &str, path: &Path, e: &std::io::Error) -> Failure {
    Failure::io(op, Some(path.display().to_string()), e)
}

fn message_failure(op: &str, path: &CStr, message: String) -> Failure {
    Failure {
        path: Some(path.to_string_lossy().into_owned()),
        ..Failure::other(op, message)
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Mkdir => "mkdir",
        Op::Rmdir => "rmdir",
        Op::Create => "create",
        Op::Stat => "stat",
        Op::Read => "read",
        Op::Unlink => "unlink",
    }
}

fn write_all(be: &dyn Backend, h: &iolab_backend::Handle, buf: &[u8]) -> std::io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        match be.write_at(h, &buf[at..], at as u64)? {
            0 => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "wrote 0 bytes",
                ))
            }
            n => at += n,
        }
    }
    Ok(())
}

/// Reads `buf.len()` bytes from the start of the file; with `to_eof` a
/// shorter file is not an error (files made by mknod are empty).
fn read_full(
    be: &dyn Backend,
    h: &iolab_backend::Handle,
    buf: &mut [u8],
    to_eof: bool,
) -> Result<(), String> {
    let mut at = 0;
    while at < buf.len() {
        match be
            .read_at(h, &mut buf[at..], at as u64)
            .map_err(|e| e.to_string())?
        {
            0 if to_eof => return Ok(()),
            0 => {
                return Err(format!(
                    "short read: {at} of {} bytes (the file is shorter than -e)",
                    buf.len()
                ))
            }
            n => at += n,
        }
    }
    Ok(())
}
