//! `obdfilter`: the object survey on target directories (mount points
//! standing for OSTs). Per target, `nobj` objects (files) and `thr`
//! threads (`thr / nobj` per object, each its own stretch of the object);
//! each test (`write rewrite read` by default) moves `size` MB per target
//! in `rsz` KB records, sequentially, O_DIRECT when the file system allows.
//! The aggregate is all data over the elapsed time; the bracket is the
//! least and greatest instantaneous bandwidth of any one target, sampled
//! every interval (see [`crate::sampler`]).

use crate::io::{cpath, open_data, read_full_at, write_all_at, WriteData};
pub use crate::object::{Shape, TargetResult};
use crate::sampler::{self, Bracket, Counters, TargetRates};
use crate::SurveyError;
use crate::{check_range, doubling, Header, ParamError, MB};
use iolab_backend::{Backend, Handle, OpenOptions};
use iolab_core::buffer::IoBuffer;
use iolab_core::live::{Board, Recorder};
use iolab_core::CancelToken;
use iolab_core::{Failure, Outcome};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

/// The kit's limit on threads per target.
pub const MAX_THREADS: u64 = 1024;
/// Most objects per target (the kit's old default ceiling).
pub const MAX_OBJECTS: u64 = 512;
/// Largest record size, KB.
pub const MAX_RSZ_KB: u64 = 64 * 1024;
/// Test names the kit knows; a name with `write` in it writes, others read.
pub const TEST_NAMES: &[&str] = &["write", "rewrite", "read", "reread", "rewrite_again"];

/// The object survey's parameters (the kit's names and units).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObdConfig {
    /// Target directories or mount points.
    pub targets: Vec<PathBuf>,
    /// MB per target per test (`size`).
    pub size_mb: u64,
    /// Smallest record size, KB (`rszlo`).
    pub rszlo_kb: u64,
    /// Largest record size, KB (`rszhi`).
    pub rszhi_kb: u64,
    /// Fewest objects per target (`nobjlo`).
    pub nobjlo: u64,
    /// Most objects per target (`nobjhi`).
    pub nobjhi: u64,
    /// Fewest threads per target (`thrlo`).
    pub thrlo: u64,
    /// Most threads per target (`thrhi`).
    pub thrhi: u64,
    /// Tests in order (`tests_str`); the first must be `write`.
    pub tests: Vec<String>,
    /// Sampling interval for the bracket, milliseconds.
    pub interval_ms: u64,
    /// Most buffer memory, KB (the kit's max_buffer_mem: 1 GiB).
    pub max_buffer_kb: u64,
    /// Targets on other hosts (`host:/path`), after the local ones in
    /// the results; reached through the remote shell.
    pub remote: Vec<crate::remote::RemoteTarget>,
    /// The remote shell (default: $IOLAB_RSH, else ssh).
    pub rsh: Option<String>,
    /// The iolab binary on the other hosts.
    pub remote_iolab: String,
}

impl ObdConfig {
    /// Checks every parameter and that each target is a directory.
    pub fn validate(&self, b: &dyn Backend) -> Result<(), ParamError> {
        self.validate_params()?;
        self.check_backend(b)?;
        self.distinct_remote()?;
        if self.targets.is_empty() && !self.remote.is_empty() {
            // Every target is on another host: checked there, at setup.
            return Ok(());
        }
        crate::io::distinct_targets(b, "targets", &self.targets, None)?;
        crate::io::check_target_dirs(&self.targets, b)
    }

    /// Refuses a `HOST:/DIR` given twice (its `.` parts and a trailing
    /// `/` aside): its agent would make its objects twice in one directory.
    fn distinct_remote(&self) -> Result<(), ParamError> {
        let key = |r: &crate::remote::RemoteTarget| {
            (r.host.clone(), r.path.components().collect::<PathBuf>())
        };
        for (i, r) in self.remote.iter().enumerate() {
            if self.remote[..i].iter().any(|o| key(o) == key(r)) {
                return Err(ParamError::new(
                    "targets",
                    format!(
                        "{}:{} is given twice: give each target once",
                        r.host,
                        r.path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks that backend `b` can do what the sweep asks: several threads
    /// on one object need shared writes; remote targets are surveyed by
    /// agents on their hosts' own file systems, beside local ones.
    fn check_backend(&self, b: &dyn Backend) -> Result<(), ParamError> {
        let caps = b.capabilities();
        let shared = points(self).iter().any(|&(_, nobj, thr)| thr > nobj);
        if shared && !caps.shared_writes && !caps.discards {
            return Err(crate::io::lacks(
                b,
                &format!(
                    "thrhi={} threads on nobjlo={} objects write one object from several threads at once",
                    self.thrhi, self.nobjlo
                ),
                "lower thrhi to nobjlo (one thread per object) or use --backend posix",
            ));
        }
        let several = points(self).iter().any(|&(rsz, _, thr)| {
            rsz * 1024 < caps.min_part_bytes && records_per_thread(self, rsz, thr) > 1
        });
        if several {
            return Err(crate::io::lacks(
                b,
                &format!(
                    "rszlo={} KB records are each one write, below the {} KB least part of the backend's multi-request writes",
                    self.rszlo_kb,
                    caps.min_part_bytes >> 10
                ),
                &format!("give rszlo of {} KB or more", caps.min_part_bytes >> 10),
            ));
        }
        if !self.remote.is_empty() && !caps.local {
            return Err(crate::io::lacks(
                b,
                "remote targets (HOST:/DIR) are surveyed by agents on those hosts' file systems",
                "survey them with the default backend, or drop them",
            ));
        }
        Ok(())
    }

    /// Checks the sweep's parameters alone (sizes, counts, tests).
    pub fn validate_params(&self) -> Result<(), ParamError> {
        check_range("rszlo", self.rszlo_kb, "rszhi", self.rszhi_kb, MAX_RSZ_KB)?;
        check_range("nobjlo", self.nobjlo, "nobjhi", self.nobjhi, MAX_OBJECTS)?;
        check_range("thrlo", self.thrlo, "thrhi", self.thrhi, MAX_THREADS)?;
        if !self.rszlo_kb.is_multiple_of(page_kb()) {
            return Err(ParamError::new(
                "rszlo",
                format!("must be a multiple of the {} KB page", page_kb()),
            ));
        }
        if self.size_mb == 0 || self.size_mb * 1024 < self.rszhi_kb * self.thrhi {
            return Err(ParamError::new(
                "size",
                format!(
                    "{} MB per target gives thrhi={} threads less than one rszhi={} KB record each; raise size",
                    self.size_mb, self.thrhi, self.rszhi_kb
                ),
            ));
        }
        if self.interval_ms == 0 {
            return Err(ParamError::new("interval-ms", "must be at least 1"));
        }
        if points(self).is_empty() {
            return Err(ParamError::new(
                "thrlo",
                format!(
                    "nobjlo..nobjhi={}..{} and thrlo..thrhi={}..{} select no point (a thread count must be a multiple of the object count); widen thrlo..thrhi or lower nobjlo",
                    self.nobjlo, self.nobjhi, self.thrlo, self.thrhi
                ),
            ));
        }
        check_tests(&self.tests)
    }
}

/// The system page size in KB (record sizes are whole pages, as the kit's).
pub fn page_kb() -> u64 {
    (iolab_core::buffer::page_size() as u64 / 1024).max(1)
}

fn check_tests(tests: &[String]) -> Result<(), ParamError> {
    if tests.first().map(String::as_str) != Some("write") {
        return Err(ParamError::new(
            "tests_str",
            format!("the first test must be 'write' (got '{}')", tests.join(" ")),
        ));
    }
    if let Some(bad) = tests.iter().find(|t| !TEST_NAMES.contains(&t.as_str())) {
        return Err(ParamError::new(
            "tests_str",
            format!("unknown test '{bad}': use {}", TEST_NAMES.join(", ")),
        ));
    }
    Ok(())
}

fn is_write(test: &str) -> bool {
    test.contains("write")
}

/// How a test's bracket came out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BracketResult {
    /// MB/s on any one target.
    Ok {
        /// Least and greatest MB/s.
        mb_per_s: Bracket,
    },
    /// A worker failed (the kit's ERROR).
    Error,
    /// Nothing was moved and nothing failed (the kit's SHORT).
    Short,
}

/// One test at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// The test's name.
    pub test: String,
    /// Aggregate MB/s over all targets.
    pub mb_per_s: f64,
    /// The bracket.
    pub bracket: BracketResult,
    /// Per target.
    pub targets: Vec<TargetResult>,
}

/// What a point came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ObdPointResult {
    /// threads x record size above the buffer limit (the kit skips it).
    TooMuchBuffer,
    /// Objects could not be created.
    CreateFailed {
        /// Why.
        message: String,
    },
    /// The tests ran.
    Ran {
        /// One per test, in order.
        tests: Vec<TestResult>,
    },
}

/// One line of the survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObdPoint {
    /// Targets.
    pub ost: u64,
    /// KB per test over all targets.
    pub total_size_kb: u64,
    /// Record size, KB.
    pub rsz_kb: u64,
    /// Objects over all targets.
    pub obj: u64,
    /// Threads over all targets.
    pub thr: u64,
    /// What happened.
    pub result: ObdPointResult,
}

/// The whole survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObdReport {
    /// When and where.
    pub header: Header,
    /// Every point, in order.
    pub points: Vec<ObdPoint>,
    /// How it ended.
    pub outcome: Outcome,
    /// Things the reader should know (a target without O_DIRECT...).
    pub notes: Vec<String>,
}

/// (rsz KB, nobj, thr) per target, in the kit's order, skipping thr not a
/// multiple of nobj.
pub fn points(cfg: &ObdConfig) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for rsz in doubling(cfg.rszlo_kb, cfg.rszhi_kb) {
        for nobj in doubling(cfg.nobjlo, cfg.nobjhi) {
            for thr in doubling(cfg.thrlo, cfg.thrhi) {
                if thr % nobj == 0 {
                    out.push((rsz, nobj, thr));
                }
            }
        }
    }
    out
}

/// Records each thread moves at a point (the kit's size per target
/// shared by its threads).
fn records_per_thread(cfg: &ObdConfig, rsz_kb: u64, thr: u64) -> u64 {
    cfg.size_mb * 1024 / (rsz_kb * thr)
}

/// The targets as given, split into this host's directories and other
/// hosts' `HOST:/DIR`.
pub fn split_targets(given: &[String]) -> (Vec<PathBuf>, Vec<crate::remote::RemoteTarget>) {
    use crate::remote::RemoteTarget;
    let remote = given
        .iter()
        .filter_map(|t| RemoteTarget::parse(t))
        .collect();
    let local = given
        .iter()
        .filter(|t| RemoteTarget::parse(t).is_none())
        .map(PathBuf::from)
        .collect();
    (local, remote)
}

/// The private directory the survey makes in each target (and removes).
pub fn work_dir(target: &std::path::Path) -> PathBuf {
    target.join(format!("iolab-obdfilter.{}", std::process::id()))
}

/// The name of the private directory the survey makes in each target.
pub fn work_name() -> String {
    format!("iolab-obdfilter.{}", std::process::id())
}

/// Makes `work` in each target; on failure removes what it made.
pub fn setup_dirs(
    b: &dyn Backend,
    targets: &[PathBuf],
    work: &str,
) -> Result<Vec<PathBuf>, SurveyError> {
    let mut made = Vec::new();
    for t in targets {
        let dir = t.join(work);
        if let Err(source) = cpath(&dir).and_then(|c| b.mkdir(&c, 0o755)) {
            remove_dirs(b, &made);
            return Err(SurveyError::Mkdir { dir, source });
        }
        made.push(dir);
    }
    Ok(made)
}

/// Removes the work directories (they are empty between points).
pub fn teardown_dirs(b: &dyn Backend, work_dirs: &[PathBuf]) {
    remove_dirs(b, work_dirs);
}

/// The objects of each work directory: `o0`, `o1`, ...
pub fn objects_in(work_dirs: &[PathBuf], nobj: u64) -> Vec<Vec<PathBuf>> {
    work_dirs
        .iter()
        .map(|d| (0..nobj).map(|k| d.join(format!("o{k}"))).collect())
        .collect()
}

/// Creates `nobj` objects in each work directory; on failure removes
/// those it made and says why.
pub fn create_in(b: &dyn Backend, work_dirs: &[PathBuf], nobj: u64) -> Result<(), SurveyError> {
    let (made, r) = create_objects(b, &objects_in(work_dirs, nobj));
    if r.is_err() {
        destroy(b, &made);
    }
    r
}

/// Removes the objects (those already gone are skipped).
pub fn destroy_in(b: &dyn Backend, work_dirs: &[PathBuf], nobj: u64) {
    let all: Vec<PathBuf> = objects_in(work_dirs, nobj).into_iter().flatten().collect();
    destroy(b, &all);
}

/// Where a survey's live figures go.
#[derive(Clone, Copy, Default)]
pub struct LiveTo<'a> {
    /// Every record moved on a local target, timed and counted under its
    /// test's name.
    pub board: Option<&'a Board>,
    /// The remote targets' agents record their own and print them every
    /// so many ms; their intervals are handed on here as they come.
    pub remote: Option<(crate::remote::LiveFeed<'a>, u64)>,
}

/// Runs the survey; `on_point` sees each point as it completes.
/// It stops between points, tests and records once `cancel` (the run's
/// token) is cancelled. Live figures go to `live`.
pub fn run(
    cfg: &ObdConfig,
    b: &dyn Backend,
    on_point: &mut dyn FnMut(&ObdPoint),
    (cancel, live): (&CancelToken, LiveTo<'_>),
) -> ObdReport {
    let mut report = ObdReport {
        header: Header::now(),
        points: Vec::new(),
        outcome: Outcome::Completed,
        notes: Vec::new(),
    };
    let work = work_name();
    let hosts = match crate::remote::Hosts::new(
        &cfg.remote,
        cfg.rsh.as_deref(),
        &cfg.remote_iolab,
        &work,
        cancel,
    ) {
        Ok(h) => h,
        Err(e) => {
            report.outcome = Outcome::Error(Failure::other("remote shell", e.to_string()));
            return report;
        }
    };
    let made = match setup_dirs(b, &cfg.targets, &work) {
        Ok(m) => m,
        Err(e) => {
            report.outcome = Outcome::Error(Failure::other("mkdir", e.to_string()));
            return report;
        }
    };
    if let Err(e) = hosts.setup() {
        report.outcome = Outcome::Error(Failure::other("remote setup", e.to_string()));
        teardown_dirs(b, &made);
        return report;
    }
    let mut errors = 0;
    for (rsz_kb, nobj, thr) in points(cfg) {
        let point = run_point(
            cfg,
            b,
            &made,
            &hosts,
            (rsz_kb, nobj, thr),
            &mut report.notes,
            (cancel, live),
        );
        if cancel.is_cancelled() {
            report.outcome = Outcome::Interrupted;
            break;
        }
        errors += count_errors(&point);
        on_point(&point);
        let create_failed = matches!(point.result, ObdPointResult::CreateFailed { .. });
        report.points.push(point);
        if create_failed {
            break;
        }
    }
    teardown_dirs(b, &made);
    hosts.teardown();
    if errors > 0 && report.outcome == Outcome::Completed {
        report.outcome = Outcome::Error(Failure::other(
            "obdfilter survey",
            format!("{errors} test(s) failed; the .detail file says why"),
        ));
    }
    report.notes.dedup();
    report
}

/// Tests that failed at a point (a failed create counts one).
pub fn count_errors(p: &ObdPoint) -> usize {
    match &p.result {
        ObdPointResult::TooMuchBuffer => 0,
        ObdPointResult::CreateFailed { .. } => 1,
        ObdPointResult::Ran { tests } => tests
            .iter()
            .filter(|t| t.bracket == BracketResult::Error)
            .count(),
    }
}

fn remove_dirs(b: &dyn Backend, dirs: &[PathBuf]) {
    for d in dirs {
        if let Ok(c) = cpath(d) {
            let _ = b.rmdir(&c);
        }
    }
}

/// One point: create the objects, run each test (local and remote
/// targets at once), destroy the objects.
fn run_point(
    cfg: &ObdConfig,
    b: &dyn Backend,
    dirs: &[PathBuf],
    hosts: &crate::remote::Hosts,
    (rsz_kb, nobj, thr): (u64, u64, u64),
    notes: &mut Vec<String>,
    (cancel, live): (&CancelToken, LiveTo<'_>),
) -> ObdPoint {
    let ndevs = (dirs.len() + cfg.remote.len()) as u64;
    let count = records_per_thread(cfg, rsz_kb, thr);
    let mut point = ObdPoint {
        ost: ndevs,
        total_size_kb: rsz_kb * count * thr * ndevs,
        rsz_kb,
        obj: nobj * ndevs,
        thr: thr * ndevs,
        result: ObdPointResult::TooMuchBuffer,
    };
    if thr * ndevs * rsz_kb > cfg.max_buffer_kb {
        return point;
    }
    if let Err(e) = create_in(b, dirs, nobj).and_then(|_| hosts.create(nobj)) {
        destroy_in(b, dirs, nobj);
        hosts.destroy(nobj);
        point.result = ObdPointResult::CreateFailed {
            message: e.to_string(),
        };
        return point;
    }
    let shape = Shape {
        rsz_bytes: rsz_kb * 1024,
        count,
        thr,
        per_obj: thr / nobj,
    };
    let objects = objects_in(dirs, nobj);
    let mut tests = Vec::new();
    for name in &cfg.tests {
        let live_ms = live.remote.map(|r| r.1);
        let pending = hosts.start_test(name, nobj, shape, (cfg.interval_ms, live_ms));
        let test = |objects: &[Vec<PathBuf>]| {
            run_test(
                b,
                objects,
                name,
                shape,
                cfg.interval_ms,
                (cancel, live.board),
            )
        };
        let (local, pending, seen, failed) = match live.remote {
            None => (test(&objects), pending, Vec::new(), false),
            Some((feed, ms)) => tailing(pending, feed, ms, cancel, || test(&objects)),
        };
        if failed {
            notes.push(
                "the reader of the remote agents' live figures failed; their intervals came at the test's end"
                    .into(),
            );
        }
        let feed = live.remote.map(|r| r.0);
        let (remote, wall_s) = hosts.finish_test(pending, (feed, seen));
        // Only remote targets are timed by the wall clock (from starting
        // their agents); local ones by the same clock as their samples, so
        // a local target's aggregate lies within its bracket.
        let wall_s = if remote.is_empty() { 0.0 } else { wall_s };
        let elapsed = local
            .iter()
            .map(|t| t.rates.elapsed_s)
            .fold(wall_s, f64::max);
        let t = combine(name, local.into_iter().chain(remote).collect(), elapsed);
        for r in t.targets.iter().filter(|r| !r.direct && r.error.is_none()) {
            notes.push(format!(
                "{}: no O_DIRECT here; buffered I/O, writes fdatasync'd",
                r.target
            ));
        }
        tests.push(t);
        if cancel.is_cancelled() {
            break;
        }
    }
    destroy_in(b, dirs, nobj);
    hosts.destroy(nobj);
    point.result = ObdPointResult::Ran { tests };
    point
}

/// Runs `local` while a thread hands on the remote agents' live lines
/// every `ms` (at most 100 ms), until every agent has exited or `cancel`;
/// returns what `local` did, the agents, how far their output was read,
/// and whether that thread failed (it panicked: what it had not handed
/// on is then handed on at the end).
fn tailing<R: Send>(
    pending: crate::remote::Pending,
    feed: crate::remote::LiveFeed<'_>,
    ms: u64,
    cancel: &CancelToken,
    local: impl FnOnce() -> R,
) -> (R, crate::remote::Pending, Vec<usize>, bool) {
    let state = Mutex::new((pending, Vec::new()));
    let every = Duration::from_millis(ms.clamp(10, 100));
    let (r, failed) = std::thread::scope(|sc| {
        let tail = sc.spawn(|| loop {
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            let (p, seen) = &mut *st;
            p.hand_on(seen, feed);
            if p.all_exited() || cancel.is_cancelled() {
                return;
            }
            drop(st);
            std::thread::sleep(every);
        });
        let r = local();
        (r, tail.join().is_err())
    });
    let (pending, seen) = state.into_inner().unwrap_or_else(|e| e.into_inner());
    (r, pending, seen, failed)
}

/// Creates every object; returns those made and the first error.
fn create_objects(
    b: &dyn Backend,
    objects: &[Vec<PathBuf>],
) -> (Vec<PathBuf>, Result<(), SurveyError>) {
    let mut made = Vec::new();
    for p in objects.iter().flatten() {
        let r = cpath(p)
            .and_then(|c| b.open(&c, OpenOptions::create_new()))
            .and_then(|h| b.close(h));
        match r {
            Ok(()) => made.push(p.clone()),
            Err(source) => {
                let path = p.clone();
                return (made, Err(SurveyError::Create { path, source }));
            }
        }
    }
    (made, Ok(()))
}

fn destroy(b: &dyn Backend, paths: &[PathBuf]) {
    for p in paths {
        if let Ok(c) = cpath(p) {
            let _ = b.unlink(&c);
        }
    }
}

/// One worker, prepared before any thread starts.
struct Worker {
    target: usize,
    handle: Option<(Handle, bool)>,
    /// Names its object in the stamps of what it writes.
    file: u64,
    base: u64,
    buf: IoBuffer,
    error: Option<String>,
}

/// One test on every target at once, sampled as it runs.
/// Runs test `name` on the local targets whose objects are `objects`
/// (one list per target), all at once, sampled every `interval_ms`.
pub fn run_test(
    b: &dyn Backend,
    objects: &[Vec<PathBuf>],
    name: &str,
    s: Shape,
    interval_ms: u64,
    (cancel, live): (&CancelToken, Option<&Board>),
) -> Vec<TargetResult> {
    if objects.is_empty() {
        return Vec::new();
    }
    let write = is_write(name);
    let data = write.then(|| WriteData::new(s.rsz_bytes as usize));
    let workers = prepare(b, objects, data.as_ref(), s);
    let counters = Counters::new(&vec![s.thr as usize; objects.len()]);
    let errors: Vec<Mutex<Option<String>>> = objects.iter().map(|_| Mutex::new(None)).collect();
    let direct: Vec<AtomicBool> = objects.iter().map(|_| AtomicBool::new(true)).collect();
    let barrier = Barrier::new(workers.len() + 1);
    let done = AtomicBool::new(false);
    let samples = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                let (counters, barrier, errors, direct) = (&counters, &barrier, &errors, &direct);
                let data = data.as_ref();
                let target = w.target;
                // Before the barrier: no lock or allocation per record.
                let rec = live.map_or_else(Recorder::off, |l| l.recorder(name, i));
                let h = scope.spawn(move || {
                    barrier.wait();
                    let t = w.target;
                    if !w.handle.as_ref().is_some_and(|h| h.1) {
                        direct[t].store(false, Ordering::Relaxed);
                    }
                    if let Some(e) = worker(b, w, data, s, counters, (cancel, &rec)) {
                        if let Ok(mut slot) = errors[t].lock() {
                            slot.get_or_insert(e);
                        }
                    }
                    counters.worker_done(t);
                });
                (target, h)
            })
            .collect();
        // The clock starts here, before the sampler first reads it.
        counters.begin();
        let sampler =
            scope.spawn(|| sampler::sample(&counters, Duration::from_millis(interval_ms), &done));
        barrier.wait();
        for (t, h) in handles {
            if h.join().is_err() {
                crate::sampler::note_panic(&errors[t..=t], "a worker thread");
            }
        }
        done.store(true, Ordering::Release);
        // A sampler that panicked is the test's error, not empty samples.
        sampler.join().unwrap_or_else(|_| {
            crate::sampler::note_panic(&errors, "the sampler thread");
            Default::default()
        })
    });
    summarise(objects, &counters, samples, &errors, &direct)
}

/// Buffers and handles for every worker of every target.
fn prepare(
    b: &dyn Backend,
    objects: &[Vec<PathBuf>],
    data: Option<&WriteData>,
    s: Shape,
) -> Vec<Worker> {
    let write = data.is_some();
    let rsz = s.rsz_bytes as usize;
    let len = data.map_or(rsz, |d| d.buffer_len(rsz));
    let mut out = Vec::new();
    for (t, objs) in objects.iter().enumerate() {
        for k in 0..s.thr {
            let obj = &objs[(k / s.per_obj) as usize];
            let opts = if write {
                OpenOptions::write()
            } else {
                OpenOptions::read()
            };
            let opened = cpath(obj).and_then(|c| open_data(b, &c, opts, true));
            let mut error = opened
                .as_ref()
                .err()
                .map(|e| format!("open {}: {e}", obj.display()));
            let buf = match IoBuffer::heap(len, 4096) {
                Ok(mut x) => {
                    if let Some(d) = data {
                        d.fill(x.as_mut_slice());
                    }
                    x
                }
                Err(e) => {
                    error.get_or_insert(format!("buffer: {e}"));
                    // A zero-length stand-in: the worker reports the error and moves nothing.
                    match IoBuffer::heap(0, 4096) {
                        Ok(x) => x,
                        Err(_) => continue,
                    }
                }
            };
            out.push(Worker {
                target: t,
                handle: opened.ok(),
                file: ((t as u64) << 32) | (k / s.per_obj),
                base: (k % s.per_obj) * s.count * s.rsz_bytes,
                buf,
                error,
            });
        }
    }
    out
}

/// Moves one worker's records (writes records of `data`, reads when
/// there is none); returns its error.
fn worker(
    b: &dyn Backend,
    mut w: Worker,
    data: Option<&WriteData>,
    s: Shape,
    c: &Counters,
    (cancel, rec): (&CancelToken, &Recorder),
) -> Option<String> {
    let write = data.is_some();
    if let Some(e) = w.error.take() {
        return Some(e);
    }
    let (h, direct) = w.handle?;
    let mut err = None;
    for i in 0..s.count {
        if cancel.is_cancelled() {
            break;
        }
        let off = w.base + i * s.rsz_bytes;
        let len = s.rsz_bytes as usize;
        let t0 = iolab_core::clock::mono_ns();
        let r = match data {
            Some(d) => {
                let at = d.place(w.buf.as_mut_slice(), w.file, off, len);
                write_all_at(b, &h, &w.buf.as_slice()[at..at + len], off)
            }
            None => read_full_at(b, &h, &mut w.buf.as_mut_slice()[..len], off),
        };
        if let Err(e) = r {
            rec.error();
            err = Some(format!(
                "{} at offset {off}: {e}",
                if write { "write" } else { "read" }
            ));
            break;
        }
        rec.op(s.rsz_bytes, iolab_core::clock::mono_ns().saturating_sub(t0));
        c.add(w.target, s.rsz_bytes);
    }
    if write && !direct && err.is_none() {
        err = b.fdatasync(&h).err().map(|e| format!("fdatasync: {e}"));
    }
    let _ = b.close(h);
    err
}

fn summarise(
    objects: &[Vec<PathBuf>],
    c: &Counters,
    samples: Vec<Vec<f64>>,
    errors: &[Mutex<Option<String>>],
    direct: &[AtomicBool],
) -> Vec<TargetResult> {
    sampler::per_target(c, samples)
        .into_iter()
        .enumerate()
        .map(|(t, rates)| TargetResult {
            target: objects[t]
                .first()
                .and_then(|o| o.parent()?.parent())
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            rates,
            direct: direct[t].load(Ordering::Relaxed),
            error: errors[t].lock().ok().and_then(|e| e.clone()),
        })
        .collect()
}

/// A test's line figures from every target's results: all bytes over
/// `elapsed_s`, and the bracket over all targets.
pub fn combine(name: &str, targets: Vec<TargetResult>, elapsed_s: f64) -> TestResult {
    let total: u64 = targets.iter().map(|t| t.rates.amount).sum();
    let bracket = if targets.iter().any(|t| t.error.is_some()) {
        BracketResult::Error
    } else {
        let per: Vec<TargetRates> = targets.iter().map(|t| t.rates.clone()).collect();
        match sampler::bracket(&per) {
            Some(b) => BracketResult::Ok {
                mb_per_s: Bracket {
                    min: b.min / MB,
                    max: b.max / MB,
                },
            },
            None => BracketResult::Short,
        }
    };
    TestResult {
        test: name.to_string(),
        mb_per_s: if elapsed_s > 0.0 {
            total as f64 / MB / elapsed_s
        } else {
            0.0
        },
        bracket,
        targets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(targets: Vec<PathBuf>) -> ObdConfig {
        ObdConfig {
            targets,
            size_mb: 4,
            rszlo_kb: 256,
            rszhi_kb: 256,
            nobjlo: 1,
            nobjhi: 2,
            thrlo: 1,
            thrhi: 2,
            tests: vec!["write".into(), "rewrite".into(), "read".into()],
            interval_ms: 1000,
            max_buffer_kb: 1 << 20,
            remote: vec![],
            rsh: None,
            remote_iolab: "iolab".into(),
        }
    }

    #[test]
    fn points_skip_thread_counts_not_divisible_by_objects() {
        assert_eq!(
            points(&cfg(vec![])),
            vec![(256, 1, 1), (256, 1, 2), (256, 2, 2)]
        );
    }

    #[test]
    fn tests_must_start_with_write_and_be_known() {
        assert!(check_tests(&["read".into()]).is_err());
        assert!(check_tests(&["write".into(), "scribble".into()]).is_err());
        assert!(check_tests(&["write".into(), "reread".into()]).is_ok());
    }

    #[test]
    fn a_survey_of_two_directories_moves_the_data_and_cleans_up() {
        let base = std::env::temp_dir().join(format!("iolab-obd-unit-{}", std::process::id()));
        let dirs: Vec<PathBuf> = (0..2).map(|i| base.join(format!("t{i}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        let c = cfg(dirs.clone());
        let b = iolab_backend::by_name("posix").unwrap();
        c.validate(b.as_ref()).unwrap();
        let r = run(
            &c,
            b.as_ref(),
            &mut |_| {},
            (&iolab_core::CancelToken::new(), LiveTo::default()),
        );
        let left: usize = dirs
            .iter()
            .map(|d| std::fs::read_dir(d).unwrap().count())
            .sum();
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.points);
        assert_eq!(left, 0, "the survey removes what it made");
        assert_eq!(r.points.len(), 3);
        let ObdPointResult::Ran { tests } = &r.points[2].result else {
            panic!()
        };
        assert_eq!(tests.len(), 3);
        for t in tests {
            assert!(matches!(t.bracket, BracketResult::Ok { .. }), "{t:?}");
            assert_eq!(
                t.targets.iter().map(|x| x.rates.amount).sum::<u64>(),
                8 << 20
            );
        }
        assert_eq!(r.points[2].total_size_kb, 8192);
        assert_eq!((r.points[2].obj, r.points[2].thr), (4, 4));
    }
}
