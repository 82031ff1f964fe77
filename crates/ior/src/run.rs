//! The tests of a run, one after the other, each on its first `-N`
//! tasks: per iteration the write, `-W`'s read-back, the read and the
//! removal, as IOR's TestIoSys orders them; the stonewall status file;
//! the summary. Before the first test, every name a test would use is
//! looked at (`preflight.rs`): a file that exists and was not made by
//! this run (unless `-E`), a symbolic link at a test file's or a `-u`
//! directory's name, or a missing directory is refused, so that nothing
//! the run did not make is written over or removed.

use crate::config::{Config, Test};
use crate::ctx::{self, Ctx};
use crate::file::{Files, Layout};
use crate::params::Params;
use crate::phase::{Kind, Step};
use crate::plan;
use crate::preflight;
use crate::results::{self, Access, AccessResult, FsSpace, Iteration, TestResult};
use iolab_backend::{c_path, Backend};
use iolab_comm::{run_subset, Comm, CommExt, Transport};
use iolab_core::{Failure, FailureKind, Outcome};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Receives a run's progress on task 0 (to print IOR's report as it goes).
pub trait Observer: Sync {
    /// A test starts (its result has no iteration yet).
    fn test_started(&self, _t: &TestResult) {}
    /// A write or read ended.
    fn access_done(&self, _t: &Test, _r: &AccessResult) {}
    /// The files of an iteration were removed, in `_s` seconds.
    fn removed(&self, _t: &Test, _iteration: u64, _s: f64) {}
    /// A test ended.
    fn test_done(&self, _t: &TestResult) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// Everything a run needs, built before it starts.
pub struct Runner<'a> {
    /// The validated tests.
    pub cfg: &'a Config,
    /// The processes.
    pub transport: Arc<dyn Transport>,
    /// Tasks (threads) per process.
    pub threads: usize,
    /// The storage backend.
    pub backend: &'a dyn Backend,
    /// Progress.
    pub observer: &'a dyn Observer,
    /// The run's cancellation token (the session's).
    pub cancel: &'a iolab_core::CancelToken,
    /// Live figures (`--live`): each task records its transfers here,
    /// under the access's name (`write`, `read`).
    pub live: Option<&'a iolab_core::live::Board>,
}

/// What a run gave (the tests on rank 0; other ranks hold none).
pub struct RunResult {
    /// Each test's results.
    pub tests: Vec<TestResult>,
    /// How the run ended.
    pub outcome: Outcome,
    /// Files and directories left behind.
    pub left_behind: Vec<String>,
}

/// Paths this run made (its files may be removed and written again).
#[derive(Default)]
struct Made(Mutex<HashSet<PathBuf>>);

impl Made {
    fn add(&self, p: &Path) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(p.to_path_buf());
    }
    fn has(&self, p: &Path) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).contains(p)
    }
}

fn files_of<'b>(backend: &'b dyn Backend, test: &Test) -> Result<Files<'b>, crate::IorError> {
    Ok(Files {
        be: backend,
        layout: Layout::of(&backend.capabilities())?,
        api: test.api,
        direct: test.params.odirect,
        use_existing: test.params.use_existing,
    })
}

/// Looks at every name the tests of `cfg` would use (`preflight.rs`),
/// before the run is opened (no store, no live stream made yet): a file
/// there (unless `-E`), a symbolic link, a missing directory is
/// refused. Rank 0 looks; every rank gets the answer.
pub fn preflight(
    cfg: &Config,
    transport: &Arc<dyn Transport>,
    threads: usize,
    backend: &dyn Backend,
) -> Result<(), Failure> {
    let mut why = String::new();
    if transport.rank() == 0 {
        let all = threads * transport.size();
        if let Err(f) = preflight_tasks(cfg, all, 0..all as u64, backend) {
            why = f.message;
        }
    }
    // A leading byte: MPI refuses a gather of nothing from everyone.
    let all = transport.all_gather(format!("-{why}").as_bytes());
    match all
        .first()
        .map(|b| &b[1.min(b.len())..])
        .filter(|b| !b.is_empty())
    {
        None => Ok(()),
        Some(b) => {
            Err(Failure::other("preflight", String::from_utf8_lossy(b))
                .of_kind(FailureKind::Refused))
        }
    }
}

/// The preflight of the tasks in `mine` (of `all_tasks`), with no
/// collective: what one rank checks of the files its own tasks use (a
/// shared file by every rank), refused as [`preflight`] refuses. Under
/// MPI the caller gathers every rank's answer, so that a path one rank
/// cannot use stops them all (`iolab_comm::agree`).
pub fn preflight_tasks(
    cfg: &Config,
    all_tasks: usize,
    mine: std::ops::Range<u64>,
    backend: &dyn Backend,
) -> Result<(), Failure> {
    look_at_tasks(cfg, all_tasks, mine, backend)
        .map_err(|e| Failure::other("preflight", e).of_kind(FailureKind::Refused))
}

fn look_at_tasks(
    cfg: &Config,
    all_tasks: usize,
    mine: std::ops::Range<u64>,
    backend: &dyn Backend,
) -> Result<(), String> {
    let several = cfg.tests.len() > 1;
    for t in &cfg.tests {
        let tasks = crate::plan::test_tasks(&t.params, all_tasks as u64);
        let files = files_of(backend, t).map_err(|e| e.to_string())?;
        preflight::look(
            &preflight::Look {
                test: t,
                files,
                tasks,
                mine: mine.clone(),
            },
            several,
        )?;
    }
    Ok(())
}

impl Runner<'_> {
    /// All tasks of the run.
    pub fn tasks(&self) -> usize {
        self.threads * self.transport.size()
    }

    fn files(&self, test: &Test) -> Result<Files<'_>, crate::IorError> {
        files_of(self.backend, test)
    }

    /// [`preflight`] for this run.
    pub fn preflight(&self) -> Result<(), Failure> {
        preflight(self.cfg, &self.transport, self.threads, self.backend)
    }

    /// Runs every test; rank 0 gets their results.
    pub fn run(&self) -> RunResult {
        let made = Made::default();
        let mut out = RunResult {
            tests: Vec::new(),
            outcome: Outcome::Completed,
            left_behind: Vec::new(),
        };
        let world = ctx::world_hosts(&*self.transport, self.threads);
        for t in &self.cfg.tests {
            let files = match self.files(t) {
                Ok(f) => f,
                Err(e) => {
                    out.outcome = Outcome::Error(
                        Failure::other("backend", e.to_string()).of_kind(FailureKind::Refused),
                    );
                    break;
                }
            };
            let active = t
                .params
                .num_tasks
                .unwrap_or(u64::MAX)
                .min(self.tasks() as u64) as usize;
            let live = ctx::Live {
                board: self.live,
                name: None,
            };
            let mut results = run_subset(self.transport.clone(), self.threads, active, |c| {
                let env = Env {
                    world: Some(&world),
                    observer: self.observer,
                    made: &made,
                    cancel: self.cancel,
                    live,
                };
                run_test(c, files, t, &env)
            });
            let mine = match results.is_empty() {
                true => None,
                false => Some(results.swap_remove(0)),
            };
            let outcome = agree(&*self.transport, mine.as_ref().map(|r| &r.outcome));
            if let Some(mut r) = mine.filter(|_| self.transport.rank() == 0) {
                // Another rank's interrupt interrupts this test here too.
                if matches!(outcome, Outcome::Interrupted) {
                    r.outcome = r.outcome.clone().worst(Outcome::Interrupted);
                    unsummarised(&mut r);
                }
                out.tests.push(r);
            }
            out.outcome = out.outcome.clone().worst(outcome.clone());
            // Differences a check found do not stop the run (IOR's
            // errors); anything else does.
            if !matches!(outcome, Outcome::Completed) && !data_only(&outcome) {
                break;
            }
        }
        // A stop request after the last test's agreement (as it ended)
        // interrupts the test that was ending.
        if self.cancel.is_cancelled() {
            out.outcome = out.outcome.clone().worst(Outcome::Interrupted);
            if let Some(last) = out.tests.last_mut() {
                last.outcome = last.outcome.clone().worst(Outcome::Interrupted);
                unsummarised(last);
            }
        }
        out
    }
}

/// The worst outcome any rank holding tasks saw, on every rank.
fn agree(t: &dyn Transport, mine: Option<&Outcome>) -> Outcome {
    let text = mine.map(encode_outcome).unwrap_or_default();
    let all = t.all_gather(text.as_bytes());
    all.iter()
        .filter_map(|b| outcome_from(b))
        .fold(Outcome::Completed, Outcome::worst)
}

/// An outcome as bytes for the ranks' exchange: a kind letter, then the
/// failure's fields separated by NULs.
fn encode_outcome(o: &Outcome) -> String {
    match o {
        Outcome::Completed | Outcome::TimeLimit { .. } => "c".into(),
        Outcome::Interrupted => "i".into(),
        Outcome::Error(f) => format!(
            "e\0{}\0{}\0{}\0{}\0{}",
            f.op,
            f.path.clone().unwrap_or_default(),
            f.message,
            match f.kind {
                FailureKind::Refused => "r",
                FailureKind::Output => "o",
                _ => "f",
            },
            f.errno.map_or(String::new(), |n| n.to_string())
        ),
    }
}

fn outcome_from(b: &[u8]) -> Option<Outcome> {
    let s = String::from_utf8_lossy(b);
    let mut parts = s.split('\0');
    match parts.next()? {
        "c" => Some(Outcome::Completed),
        "i" => Some(Outcome::Interrupted),
        "e" => {
            let (op, path, msg, kind) =
                (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
            let mut f = Failure::other(op, msg);
            f.path = (!path.is_empty()).then(|| path.to_string());
            // The OS error number, which `--json` reports ("errno": 28).
            f.errno = parts.next().and_then(|n| n.parse().ok());
            f.kind = match kind {
                "r" => FailureKind::Refused,
                "o" => FailureKind::Output,
                _ => FailureKind::Failed,
            };
            Some(Outcome::Error(f))
        }
        _ => None,
    }
}

/// One test run by every task of `comm`, on `be`, without the look
/// for existing files and without an observer: for engines that run
/// IOR's phases as parts of their own benchmark (io500), which check
/// their directories themselves; each task records its transfers on
/// `live` (under the benchmark's phase name).
pub fn test(
    comm: &dyn Comm,
    be: &dyn Backend,
    test: &Test,
    cancel: &iolab_core::CancelToken,
    live: ctx::Live<'_>,
) -> Result<TestResult, crate::IorError> {
    let files = Files {
        be,
        layout: Layout::of(&be.capabilities())?,
        api: test.api,
        direct: test.params.odirect,
        use_existing: test.params.use_existing,
    };
    let env = Env {
        world: None,
        observer: &Silent,
        made: &Made::default(),
        cancel,
        live,
    };
    Ok(run_test(comm, files, test, &env))
}

/// What a test runs in besides its communicator and files.
struct Env<'a> {
    /// Every task's host in the whole run (None: the test's
    /// communicator is the whole run).
    world: Option<&'a [String]>,
    observer: &'a dyn Observer,
    made: &'a Made,
    cancel: &'a iolab_core::CancelToken,
    live: ctx::Live<'a>,
}

/// One test on this task.
fn run_test(comm: &dyn Comm, files: Files, test: &Test, env: &Env<'_>) -> TestResult {
    let Env {
        world,
        observer,
        made,
        cancel,
        live,
    } = *env;
    if files.be.capabilities().thread_private_fds {
        // As mdtest's tasks: a task thread takes a descriptor table of
        // its own, so that its system calls on a descriptor take the
        // single-table fast path a process's do (no reference counting
        // of the open file per call, no table lock on open and close).
        let _ = iolab_core::threads::own_fd_table();
    }
    let (geo, hosts) = ctx::geometry(comm, test, world);
    let p = &test.params;
    let given = (p.random_seed != -1).then_some(p.random_seed as u32);
    let ctx = Ctx {
        comm,
        files,
        test,
        geo,
        hosts,
        random_seed: ctx::agreed(comm, given),
        cancel,
        started_ns: iolab_core::clock::wall_ns(),
        live,
    };
    let mut res = start(&ctx);
    let leader = comm.task() == 0;
    if leader {
        observer.test_started(&res);
    }
    let held = crate::hog::hold(p, &ctx.geo);
    let ready = held.as_ref().map(|_| ());
    // Every task learns whether any could not hold its memory: the test
    // is then an error, never run without it.
    match agree_failure(comm, ready.map_err(|e| Failure::other("-M", e.to_string()))) {
        Ok(()) => iterations(&ctx, made, observer, &mut res),
        Err(f) => fail(&mut res, f),
    }
    drop(held);
    finish(&ctx, &mut res);
    // A stop request seen at any point makes the test interrupted, not
    // only one a transfer loop saw: one that lands in `-e`'s fsync, a
    // close or a removal after the last transfer was said ("stopping")
    // and must not end as completed (exit 0).
    if cancel.is_cancelled() {
        res.outcome = res.outcome.clone().worst(Outcome::Interrupted);
    }
    unsummarised(&mut res);
    if leader {
        observer.test_done(&res);
    }
    res
}

/// The test's iterations, until one stops it or `-T`'s time is up.
fn iterations(ctx: &Ctx, made: &Made, observer: &dyn Observer, res: &mut TestResult) {
    let p = &ctx.test.params;
    for rep in 0..p.repetitions {
        let it = iteration(ctx, rep, made, observer, res);
        res.iterations.push(it);
        if !matches!(res.outcome, Outcome::Completed) && !data_only(&res.outcome) {
            break;
        }
        if ctx.out_of_time() {
            res.notes.push(format!(
                "-T {}: the test's time is up after iteration {rep}",
                p.max_time_min
            ));
            break;
        }
    }
}

/// A data error (a check found differences): the run goes on, as IOR's.
fn data_only(o: &Outcome) -> bool {
    matches!(o, Outcome::Error(f) if f.op == "check")
}

/// The test's result before its first iteration.
fn start(ctx: &Ctx) -> TestResult {
    let (path, _) = ctx.file(0, 0);
    let fs = match ctx.comm.task() {
        0 => fs_space(ctx.files.be, &path),
        _ => None,
    };
    TestResult {
        test: ctx.test.clone(),
        geometry: ctx.geo,
        layout: ctx.files.layout,
        started: ctx::ctime_now(),
        path: path.display().to_string(),
        fs,
        iterations: Vec::new(),
        summary: Vec::new(),
        outcome: Outcome::Completed,
        notes: Vec::new(),
        pairs_note: None,
    }
}

/// The space of the file system holding `path` (its directory's).
fn fs_space(be: &dyn Backend, path: &Path) -> Option<FsSpace> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let s = be.statfs(&c_path(dir).ok()?).ok()?;
    Some(FsSpace {
        total_bytes: s.blocks * s.block_bytes,
        free_bytes: s.blocks_available * s.block_bytes,
        inodes: s.inodes,
        inodes_free: s.inodes_free,
    })
}

/// One iteration: write, check, read, remove.
fn iteration(
    ctx: &Ctx,
    rep: u64,
    made: &Made,
    observer: &dyn Observer,
    res: &mut TestResult,
) -> Iteration {
    let p = &ctx.test.params;
    let signature = match p.signature {
        0 => ctx::agreed(ctx.comm, None),
        s => s,
    };
    let mut it = Iteration {
        index: rep,
        ..Iteration::default()
    };
    let leader = ctx.comm.task() == 0;
    let mut stop_after = p.wearout_iterations;
    let mut wrote = false;
    if p.write && !ctx.out_of_time() {
        let (path, dir) = ctx.file(ctx.rank(), rep);
        let mine = p.file_per_proc || leader;
        // A file there before the run (-E writes over it) is the user's:
        // it is never counted as made, so never removed.
        let theirs = mine && !made.has(&path) && ctx.files.exists(&path).unwrap_or(false);
        let ready = prepare_write(ctx, &path, dir.as_deref(), made);
        if let Err(f) = agree_failure(ctx.comm, ready) {
            res.outcome = res.outcome.clone().worst(Outcome::Error(f));
            return it;
        }
        let done = ctx.access(&Step {
            kind: Kind::Write,
            rep,
            signature,
            pretend: ctx.rank(),
            stop_after,
        });
        wrote = true;
        if mine && !theirs {
            made.add(&path);
        }
        // IOR's read stops where the write did: at the tasks' furthest
        // count after a wear-out, else at this task's own.
        if p.deadline_s > 0 {
            stop_after = match p.wearout {
                true => done.result.pairs_accessed,
                false => done.own_transfers,
            };
        }
        if leader {
            observer.access_done(ctx.test, &done.result);
        }
        warnings_as_errors(ctx, &done.result, res);
        it.write = Some(done.result);
        if !settle(res, done.failure, done.interrupted) {
            remove(ctx, (rep, wrote), made, &mut it, observer, res);
            return it;
        }
    }
    if p.check_write && !ctx.out_of_time() {
        check_write(ctx, rep, signature, &mut it, res);
    }
    if (p.read || p.check_read) && !ctx.out_of_time() && !stopped(res) {
        read(ctx, rep, signature, stop_after, observer, &mut it, res);
    }
    remove(ctx, (rep, wrote), made, &mut it, observer, res);
    it
}

fn stopped(res: &TestResult) -> bool {
    !matches!(res.outcome, Outcome::Completed) && !data_only(&res.outcome)
}

/// Records how an access ended; false when the test must stop.
fn settle(res: &mut TestResult, failure: Option<Failure>, interrupted: bool) -> bool {
    if let Some(f) = failure {
        res.outcome = res.outcome.clone().worst(Outcome::Error(f));
        return false;
    }
    if interrupted {
        res.outcome = res.outcome.clone().worst(Outcome::Interrupted);
        return false;
    }
    true
}

/// Before a write: `-u`'s directory, and the file an earlier test or
/// iteration of this run left (with `-k`) removed.
fn prepare_write(ctx: &Ctx, path: &Path, dir: Option<&Path>, made: &Made) -> Result<(), Failure> {
    let p = &ctx.test.params;
    let mine = p.file_per_proc || ctx.rank() == 0;
    if let Some(d) = dir.filter(|_| mine) {
        unique_dir(ctx.files.be, d, made)?;
    }
    if mine && !p.use_existing && made.has(path) && ctx.files.exists(path).unwrap_or(false) {
        ctx.files
            .remove(path)
            .map_err(|e| Failure::io("remove", Some(path.display().to_string()), &e))?;
    }
    Ok(())
}

/// `-u`'s directory `d`: made, or one already there opened without
/// following links (on a local backend), so that a link planted since
/// the preflight is an error rather than a way to put the file wherever
/// it points (a dangling one makes mkdir fail).
fn unique_dir(be: &dyn Backend, d: &Path, made: &Made) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::io("mkdir", Some(d.display().to_string()), &e);
    let c = c_path(d).map_err(io)?;
    if !be.exists(&c).map_err(io)? {
        be.mkdir(&c, 0o700).map_err(io)?;
        made.add(d);
        return Ok(());
    }
    if !be.capabilities().local {
        // An object store's directories are key prefixes: no links.
        return Ok(());
    }
    match preflight::open_unfollowed(be, d) {
        Ok(_) => Ok(()),
        Err(e) if iolab_backend::not_a_directory(&e) => Err(Failure::other(
            "-u",
            format!(
                "{}: not a directory (a symbolic link?); iolab ior never follows a link where a task's directory goes",
                d.display()
            ),
        )),
        Err(e) => Err(io(e)),
    }
}

/// Every task's failure, the lowest task's known to all, whole
/// (collective).
fn agree_failure(comm: &dyn Comm, mine: Result<(), Failure>) -> Result<(), Failure> {
    iolab_comm::failure::first_failure(comm, mine.err()).map_or(Ok(()), Err)
}

/// `-W`: read back what was just written and count the differences.
fn check_write(ctx: &Ctx, rep: u64, signature: u32, it: &mut Iteration, res: &mut TestResult) {
    let pretend = match plan::pretend_rank(&ctx.test.params, &ctx.geo, ctx.rank(), rep, true) {
        Ok(t) => t,
        Err(e) => return fail(res, Failure::other("-C", e.to_string())),
    };
    ctx.comm.barrier();
    let done = ctx.access(&Step {
        kind: Kind::CheckWrite,
        rep,
        signature,
        pretend,
        stop_after: 0,
    });
    it.check_write_errors = Some(done.result.errors);
    data_errors(res, &done.result, "write");
    settle(res, done.failure, done.interrupted);
}

/// `--warningAsErrors`: an access's warning ends the test as an error.
fn warnings_as_errors(ctx: &Ctx, r: &AccessResult, res: &mut TestResult) {
    if let (true, Some(w)) = (ctx.test.params.warning_as_errors, r.warnings.first()) {
        fail(res, Failure::other("--warningAsErrors", w.clone()));
    }
}

fn fail(res: &mut TestResult, f: Failure) {
    res.outcome = res.outcome.clone().worst(Outcome::Error(f));
}

/// Differences a check found make the run an error (exit 1); the run
/// goes on, as IOR's does.
fn data_errors(res: &mut TestResult, r: &AccessResult, what: &str) {
    if r.errors == 0 {
        return;
    }
    let at = r
        .first_error
        .as_ref()
        .map(|e| {
            format!(
                "; the first wrong byte is at offset {} of {} (read by task {})",
                e.offset, e.path, e.task
            )
        })
        .unwrap_or_default();
    let msg = format!(
        "incorrect data on {what}: {} transfers differ from what was written{at}",
        r.errors
    );
    res.notes.push(msg.clone());
    fail(res, Failure::other("check", msg));
}

/// The read (and `-R`'s check).
fn read(
    ctx: &Ctx,
    rep: u64,
    signature: u32,
    stop_after: u64,
    observer: &dyn Observer,
    it: &mut Iteration,
    res: &mut TestResult,
) {
    let p = &ctx.test.params;
    let stop_after = match &p.status_file {
        Some(f) => read_status(ctx, f, res),
        None => stop_after,
    };
    let pretend = match plan::pretend_rank(p, &ctx.geo, ctx.rank(), rep, false) {
        Ok(t) => t,
        Err(e) => return fail(res, Failure::other("-Z", e.to_string())),
    };
    let done = ctx.access(&Step {
        kind: Kind::Read,
        rep,
        signature,
        pretend,
        stop_after,
    });
    if ctx.comm.task() == 0 {
        observer.access_done(ctx.test, &done.result);
    }
    data_errors(res, &done.result, "read");
    warnings_as_errors(ctx, &done.result, res);
    it.read = Some(done.result);
    settle(res, done.failure, done.interrupted);
}

/// The transfer count in the stonewall status file (task 0 reads it);
/// a file that cannot be read is IOR's warning, and no limit.
fn read_status(ctx: &Ctx, file: &Path, res: &mut TestResult) -> u64 {
    let mine = match ctx.comm.task() {
        0 => std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok()),
        _ => None,
    };
    let n = ctx
        .comm
        .broadcast(0, &mine.map_or(u64::MAX, |n| n).to_le_bytes());
    let n = n.as_slice().try_into().map_or(u64::MAX, u64::from_le_bytes);
    if n == u64::MAX {
        if ctx.comm.task() == 0 {
            res.notes.push(format!(
                "Could not read back the stonewalling status from the file {}!",
                file.display()
            ));
        }
        return 0;
    }
    n
}

/// Removes the iteration's files unless kept (`-k`, or `-K` with
/// errors), timed as IOR times it; only files this run made (a file
/// `-E` wrote over stays, said in a note). The time is reported when a
/// task removed a file.
fn remove(
    ctx: &Ctx,
    (rep, wrote): (u64, bool),
    made: &Made,
    it: &mut Iteration,
    observer: &dyn Observer,
    res: &mut TestResult,
) {
    let p = &ctx.test.params;
    let errors = it.read.as_ref().map_or(0, |r| r.errors) + it.check_write_errors.unwrap_or(0);
    if p.keep || (errors > 0 && p.keep_with_error) || !wrote {
        ctx.comm.barrier();
        return;
    }
    let t0 = iolab_core::clock::wall_ns();
    ctx.comm.barrier();
    let (path, dir) = ctx.file(ctx.rank(), rep);
    let mut failure = None;
    let mine = p.file_per_proc || ctx.rank() == 0;
    let ours = mine && made.has(&path);
    let kept = format!(
        "kept {}: it was there before the run (-E wrote over it)",
        path.display()
    );
    if mine && !ours && !res.notes.contains(&kept) {
        res.notes.push(kept);
    }
    if mine {
        if ours && ctx.files.exists(&path).unwrap_or(false) {
            if let Err(e) = ctx.files.remove(&path) {
                failure = Some(format!("{}: {e}", path.display()));
            }
        }
        if let Some(d) = dir.filter(|d| made.has(d)) {
            // The directory -u made, once empty.
            let _ = c_path(&d).and_then(|c| ctx.files.be.rmdir(&c));
        }
    }
    ctx.comm.barrier();
    let s = (iolab_core::clock::wall_ns() - t0) as f64 / 1e9;
    if let Some(f) = failure {
        res.notes.push(format!("left behind: cannot remove {f}"));
    }
    if !ctx.comm.any(ours) {
        return;
    }
    it.remove_s = Some(s);
    if ctx.comm.task() == 0 {
        observer.removed(ctx.test, rep, s);
    }
}

/// The status file or IOR's pairs line, and the summary.
fn finish(ctx: &Ctx, res: &mut TestResult) {
    let p = &ctx.test.params;
    if p.wearout && ctx.comm.task() == 0 {
        stonewall_count(p, res);
    }
    res.summary = [Access::Write, Access::Read]
        .into_iter()
        .filter_map(|a| results::summarise(&res.iterations, a))
        .collect();
}

/// An interrupted or failed test has no summary, as an interrupted
/// mdtest has none (and IOR, which aborts at an error, prints none):
/// what it asked for (-i iterations of whole accesses) was not all
/// measured, and a stopped or failed access's figures are no
/// measurement. Its rows stay, a stopped or failed one marked; a note
/// says why there is no summary.
fn unsummarised(res: &mut TestResult) {
    const NOTE: &str = "no summary: ";
    let noted = res.notes.iter().any(|n| n.starts_with(NOTE));
    let Some(why) = unsummarised_why(res).filter(|_| !noted) else {
        return;
    };
    res.notes.push(format!("{NOTE}{why}"));
    res.summary = Vec::new();
}

/// Why a test is not summarised, when it is not.
fn unsummarised_why(res: &TestResult) -> Option<String> {
    let name = |a: &AccessResult| {
        format!(
            "iteration {}'s {}",
            a.iteration,
            a.access.map_or("access", |a| a.name())
        )
    };
    let why = match &res.outcome {
        Outcome::Interrupted => match res.stopped() {
            Some(a) => format!("{} was stopped by the interrupt", name(a)),
            None => "the interrupt came after its last transfer".to_string(),
        },
        o @ Outcome::Error(_) if !data_only(o) => match res.failed() {
            Some(a) => format!("{} failed", name(a)),
            None if res.summary.is_empty() => return None,
            None => "it failed after its last transfer".to_string(),
        },
        _ => return None,
    };
    let what = match res.outcome {
        Outcome::Interrupted => "an interrupted",
        _ => "a failed",
    };
    Some(format!("{why}; {what} test is not summarised"))
}

/// The first write's count into the stonewall status file, or IOR's
/// pairs line without one. A write that failed or was stopped has no
/// count every task reached (and no stonewall figures): the file is not
/// written, and a note says so, since a read taking a count from it
/// would read transfers that were never written.
fn stonewall_count(p: &Params, res: &mut TestResult) {
    let write = res.iterations.first().and_then(|i| i.write.as_ref());
    let pairs = match write.map(|w| (w.stonewall.is_some(), w.pairs_accessed)) {
        Some((false, _)) => {
            if let Some(f) = &p.status_file {
                res.notes.push(format!(
                    "stonewall status file {} not written: the write did not end with every task level",
                    f.display()
                ));
            }
            return;
        }
        Some((true, n)) => Some(n),
        None => None,
    };
    match (&p.status_file, pairs) {
        (Some(f), Some(pairs)) => {
            if let Err(e) = iolab_output::write_atomically(f, pairs.to_string().as_bytes()) {
                let fl = Failure::io("stonewall status file", Some(f.display().to_string()), &e)
                    .of_kind(FailureKind::Output);
                res.outcome = res.outcome.clone().worst(Outcome::Error(fl));
            }
        }
        (None, pairs) => res.pairs_note = Some(pairs.unwrap_or(0)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outcome the ranks agree on keeps the OS error number: it was
    /// dropped there, and `--json` said `"errno": null` for a full disk.
    #[test]
    fn the_agreed_outcome_keeps_its_errno() {
        let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let f = Failure::io("write", Some("/x/f".into()), &e);
        let back = outcome_from(encode_outcome(&Outcome::Error(f.clone())).as_bytes());
        assert_eq!(back, Some(Outcome::Error(f)));
    }
}
