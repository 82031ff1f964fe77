//! `mds`: the mds-survey on directories of any file system. Threads
//! thrlo..thrhi (doubling), `dir_count` directories (one shared when 1,
//! else thread t works in directory t mod dir_count), `file_count` files
//! per run split over the threads, and tests in order: `create`
//! (open-create), `lookup` (does the name exist), `md_getattr` (stat),
//! `setxattr` (a user xattr), `destroy` (unlink). Per test: operations
//! per second over all targets and the `[min,max]` instantaneous rate of
//! any one target, or ERROR when an operation failed.
//!
//! On Lustre ([`MdsLustre`], planned by [`crate::mds_plan`]) each target's
//! directories are made on its MDT with `lfs mkdir -i`, and with
//! `stripe_count` above 0 they get that default stripe count with
//! `lfs setstripe -c`, before any test runs.

use crate::io::cpath;
use crate::sampler::{self, Bracket, Counters, TargetRates};
use crate::{check_range, doubling, Header, ParamError};
use iolab_backend::{Backend, OpenOptions};
use iolab_core::live::{Board, Recorder};
use iolab_core::{Failure, Outcome};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

/// iolab's one layer: the file system's interface, as a client uses it.
pub const FS_LAYER: &str = "fs";

/// Most threads.
pub const MAX_THREADS: u64 = 1024;
/// Most directories.
pub const MAX_DIRS: u64 = 1024;
/// Most files per run.
pub const MAX_FILES: u64 = 100_000_000;
/// The tests the survey knows.
pub const TEST_NAMES: &[&str] = &["create", "lookup", "md_getattr", "setxattr", "destroy"];
/// The extended attribute `setxattr` sets.
pub const XATTR_NAME: &std::ffi::CStr = c"user.iolab_survey";
/// The value it sets.
const XATTR_VALUE: &[u8] = b"iolab-survey-xattr";

/// The metadata survey's parameters (the kit's names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdsConfig {
    /// Directories standing for MDTs.
    pub targets: Vec<PathBuf>,
    /// Fewest threads (`thrlo`).
    pub thrlo: u64,
    /// Most threads (`thrhi`).
    pub thrhi: u64,
    /// Directories per target (`dir_count`).
    pub dir_count: u64,
    /// Files per run over all threads (`file_count`).
    pub file_count: u64,
    /// Tests in order (`tests_str`): first create, last destroy.
    pub tests: Vec<String>,
    /// First file number (`start_number`).
    pub start_number: u64,
    /// Sampling interval for the bracket, milliseconds.
    pub interval_ms: u64,
    /// Stripes of every file created (`stripe_count`; 0: the directory's
    /// default layout). Above 0 only on Lustre.
    #[serde(default)]
    pub stripe_count: u64,
    /// The layer the survey enters (`layer`): always `fs`, the file
    /// system's interface ([`crate::mds_plan`] refuses the others).
    #[serde(default = "fs_layer")]
    pub layer: String,
    /// Set when the targets are on Lustre: directories are then made and
    /// striped with `lfs`.
    #[serde(default)]
    pub lustre: Option<MdsLustre>,
}

fn fs_layer() -> String {
    FS_LAYER.to_string()
}

/// Lustre placement of the survey's directories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdsLustre {
    /// The MDT each target's directories are made on (`lfs mkdir -i`), in
    /// target order; empty when the targets are directories (made where
    /// Lustre puts them).
    pub mdt_indices: Vec<u32>,
    /// Those MDTs' names (`lustre-MDT0000`), reported as the targets.
    pub mdt_names: Vec<String>,
}

impl MdsConfig {
    /// Checks every parameter and that each target is a directory.
    pub fn validate(&self, b: &dyn Backend) -> Result<(), ParamError> {
        check_range("thrlo", self.thrlo, "thrhi", self.thrhi, MAX_THREADS)?;
        check_range("dir_count", self.dir_count, "thrhi", self.thrhi, MAX_DIRS).map_err(|e| {
            ParamError::new(
                "dir_count",
                format!("{}; dir_count must be 1..=thrhi", e.message),
            )
        })?;
        if self.file_count < self.thrhi || self.file_count > MAX_FILES {
            return Err(ParamError::new(
                "file_count",
                format!(
                    "{} must be at least thrhi={} (one file per thread) and at most {MAX_FILES}",
                    self.file_count, self.thrhi
                ),
            ));
        }
        if self.interval_ms == 0 {
            return Err(ParamError::new("interval-ms", "must be at least 1"));
        }
        // File numbers run from start_number to start_number + file_count
        // - 1 (file_count is at least 1, above); past u64 the names would
        // wrap, and the last may be u64::MAX itself.
        if self.start_number.checked_add(self.file_count - 1).is_none() {
            return Err(ParamError::new(
                "start_number",
                format!(
                    "{} + file_count {} - 1 passes the largest file number ({}); give at most {}",
                    self.start_number,
                    self.file_count,
                    u64::MAX,
                    u64::MAX - (self.file_count - 1)
                ),
            ));
        }
        if points(self).is_empty() {
            return Err(ParamError::new(
                "dir_count",
                format!(
                    "thrlo..thrhi={}..{} with dir_count={} select no point (a run needs at least as many threads as directories); lower dir_count or widen thrlo..thrhi",
                    self.thrlo, self.thrhi, self.dir_count
                ),
            ));
        }
        check_tests(&self.tests)?;
        let caps = b.capabilities();
        if self.stripe_count > 0 && self.lustre.is_none() {
            return Err(ParamError::new(
                "stripe_count",
                "striping the survey's files needs its targets on Lustre",
            ));
        }
        if let Some(l) = &self.lustre {
            if !l.mdt_indices.is_empty() && l.mdt_indices.len() != self.targets.len() {
                return Err(ParamError::new(
                    "targets",
                    "one MDT index per target is needed on Lustre",
                ));
            }
            if !caps.local {
                return Err(crate::io::lacks(
                    b,
                    "making the survey's directories on Lustre runs `lfs mkdir` / `lfs setstripe`",
                    "use --backend posix",
                ));
            }
        }
        if self.tests.iter().any(|t| t == "setxattr") && !caps.xattrs && !caps.discards {
            return Err(crate::io::lacks(
                b,
                "the setxattr test sets an extended attribute on every file",
                "drop setxattr from tests",
            ));
        }
        let mdts = self.lustre.as_ref().map(|l| l.mdt_indices.as_slice());
        crate::io::distinct_targets(b, "targets", &self.targets, mdts.filter(|m| !m.is_empty()))?;
        crate::io::check_target_dirs(&self.targets, b)
    }
}

fn check_tests(tests: &[String]) -> Result<(), ParamError> {
    if let Some(bad) = tests.iter().find(|t| !TEST_NAMES.contains(&t.as_str())) {
        return Err(ParamError::new(
            "tests_str",
            format!("unknown test '{bad}': use {}", TEST_NAMES.join(", ")),
        ));
    }
    // A test run twice measures nothing the second time (a create of
    // files that exist, a destroy of files already gone): its figures
    // would read 0.00 without an error.
    if let Some((i, dup)) = tests
        .iter()
        .enumerate()
        .find(|(i, t)| tests[..*i].contains(t))
    {
        return Err(ParamError::new(
            "tests_str",
            format!(
                "'{dup}' is given twice (test {} of '{}'): each test runs once",
                i + 1,
                tests.join(" ")
            ),
        ));
    }
    if tests.first().map(String::as_str) != Some("create")
        || tests.last().map(String::as_str) != Some("destroy")
    {
        return Err(ParamError::new(
            "tests_str",
            format!(
                "the first test must be 'create' and the last 'destroy' (got '{}')",
                tests.join(" ")
            ),
        ));
    }
    Ok(())
}

/// One target's share of a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdsTarget {
    /// The target directory.
    pub target: String,
    /// Operations, elapsed time, per-interval operations/s.
    pub rates: TargetRates,
    /// The first error, if any.
    pub error: Option<String>,
}

/// One test at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdsTestResult {
    /// The test's name.
    pub test: String,
    /// Operations per second over all targets.
    pub ops_per_sec: f64,
    /// Least and greatest per-target rate; None when an operation failed (ERROR).
    pub bracket: Option<Bracket>,
    /// Per target.
    pub targets: Vec<MdsTarget>,
}

/// One line of the survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdsPoint {
    /// Targets.
    pub mdt: u64,
    /// Files per run.
    pub file_count: u64,
    /// Directories.
    pub dir_count: u64,
    /// Threads.
    pub thr: u64,
    /// One per test.
    pub tests: Vec<MdsTestResult>,
}

/// The whole survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdsReport {
    /// When and where.
    pub header: Header,
    /// Every point, in order.
    pub points: Vec<MdsPoint>,
    /// How it ended.
    pub outcome: Outcome,
}

/// The thread counts that run: doubling, skipping fewer threads than
/// directories (as the kit skips thr / dir_count == 0).
pub fn points(cfg: &MdsConfig) -> Vec<u64> {
    doubling(cfg.thrlo, cfg.thrhi)
        .into_iter()
        .filter(|t| t / cfg.dir_count > 0)
        .collect()
}

impl MdsConfig {
    /// The private directory the survey makes in target `i` (and
    /// removes); on an MDT, named after it.
    pub fn work_dir(&self, i: usize) -> PathBuf {
        let base = work_dir(&self.targets[i]);
        match self.mdt_index(i) {
            Some(mdt) => base.with_extension(format!("{}.mdt{mdt:04x}", std::process::id())),
            None => base,
        }
    }

    /// The MDT target `i`'s directories are made on, if one was named.
    fn mdt_index(&self, i: usize) -> Option<u32> {
        self.lustre.as_ref()?.mdt_indices.get(i).copied()
    }

    /// What target `i` is called in the report: its MDT's name, or the
    /// directory.
    fn target_name(&self, i: usize) -> String {
        self.lustre
            .as_ref()
            .and_then(|l| l.mdt_names.get(i).cloned())
            .unwrap_or_else(|| self.targets[i].display().to_string())
    }
}

/// The private directory the survey makes in a target directory.
pub fn work_dir(target: &Path) -> PathBuf {
    target.join(format!("iolab-mds.{}", std::process::id()))
}

/// The kit's directory names: `tests`, `tests1`, `tests2`...
fn dir_name(i: u64) -> String {
    if i == 0 {
        "tests".into()
    } else {
        format!("tests{i}")
    }
}

/// Runs the survey; `on_point` sees each point as it completes.
/// It stops between points, tests and operations once `cancel` (the
/// run's token) is cancelled. With a `live` board every operation is
/// timed and counted there, under its test's name (a phase that
/// recurs at each point).
pub fn run(
    cfg: &MdsConfig,
    b: &dyn Backend,
    on_point: &mut dyn FnMut(&MdsPoint),
    (cancel, live): (&iolab_core::CancelToken, Option<&Board>),
) -> MdsReport {
    let mut report = MdsReport {
        header: Header::now(),
        points: Vec::new(),
        outcome: Outcome::Completed,
    };
    let mut made: Vec<PathBuf> = Vec::new();
    let dirs = match make_dirs(cfg, b, &mut made) {
        Ok(d) => d,
        Err((dir, e)) => {
            report.outcome = Outcome::Error(Failure::io("mkdir", Some(dir), &e));
            remove_dirs(b, &made);
            return report;
        }
    };
    let mut errors = 0;
    for thr in points(cfg) {
        let point = run_point(cfg, b, &dirs, thr, (cancel, live));
        if cancel.is_cancelled() {
            report.outcome = Outcome::Interrupted;
            break;
        }
        errors += point.tests.iter().filter(|t| t.bracket.is_none()).count();
        on_point(&point);
        report.points.push(point);
    }
    remove_dirs(b, &made);
    if errors > 0 && report.outcome == Outcome::Completed {
        report.outcome = Outcome::Error(Failure::other(
            "mds survey",
            format!("{errors} test(s) failed (ERROR); the .detail file says why"),
        ));
    }
    report
}

/// Makes every target's work directory and its `tests*` directories
/// (on Lustre: on the target's MDT, striped as asked), recording each
/// in `made`; the error names the directory.
fn make_dirs(
    cfg: &MdsConfig,
    b: &dyn Backend,
    made: &mut Vec<PathBuf>,
) -> Result<Vec<Vec<PathBuf>>, (String, std::io::Error)> {
    let mut dirs = Vec::new();
    for t in 0..cfg.targets.len() {
        let root = cfg.work_dir(t);
        let mdt = cfg.mdt_index(t);
        let shown = |p: &Path| p.display().to_string();
        mkdir(b, &root, mdt).map_err(|e| (shown(&root), e))?;
        made.push(root.clone());
        let mut list = Vec::new();
        for i in 0..cfg.dir_count {
            let d = root.join(dir_name(i));
            mkdir(b, &d, mdt).map_err(|e| (shown(&d), e))?;
            made.push(d.clone());
            if cfg.stripe_count > 0 {
                crate::lustre::stripe_dir(&d, cfg.stripe_count).map_err(|e| (shown(&d), e))?;
            }
            list.push(d);
        }
        dirs.push(list);
    }
    Ok(dirs)
}

/// A directory made through the backend, or on MDT `mdt` with `lfs`.
fn mkdir(b: &dyn Backend, p: &Path, mdt: Option<u32>) -> std::io::Result<()> {
    match mdt {
        Some(i) => crate::lustre::mkdir_on(p, i),
        None => b.mkdir(&cpath(p)?, 0o755),
    }
}

fn remove_dirs(b: &dyn Backend, made: &[PathBuf]) {
    for d in made.iter().rev() {
        if let Ok(c) = cpath(d) {
            let _ = b.rmdir(&c);
        }
    }
}

/// What each thread has created and destroyed so far: files
/// `destroyed..created` of its list still exist.
#[derive(Debug, Clone, Copy, Default)]
struct Alive {
    created: u64,
    destroyed: u64,
}

/// A thread's files: its directory and numbers.
struct Files<'a> {
    dir: &'a Path,
    first: u64,
}

impl Files<'_> {
    fn path(&self, i: u64) -> PathBuf {
        self.dir.join(format!("f{}", self.first + i))
    }

    /// A name buffer for [`Name::at`]: the directory and `/f`, kept.
    fn names(&self) -> Name {
        use std::os::unix::ffi::OsStrExt;
        let mut base = self.dir.as_os_str().as_bytes().to_vec();
        base.extend_from_slice(b"/f");
        Name {
            keep: base.len(),
            buf: base,
            first: self.first,
        }
    }
}

/// File `i`'s path as a C string, written over the same buffer each
/// time: no allocation per operation.
struct Name {
    buf: Vec<u8>,
    keep: usize,
    first: u64,
}

impl Name {
    fn at(&mut self, i: u64) -> std::io::Result<&std::ffi::CStr> {
        self.buf.truncate(self.keep);
        iolab_core::units::push_u64(&mut self.buf, self.first + i);
        self.buf.push(0);
        std::ffi::CStr::from_bytes_with_nul(&self.buf)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
    }
}

fn run_point(
    cfg: &MdsConfig,
    b: &dyn Backend,
    dirs: &[Vec<PathBuf>],
    thr: u64,
    (cancel, live): (&iolab_core::CancelToken, Option<&Board>),
) -> MdsPoint {
    let per_thread = cfg.file_count / thr;
    let alive: Vec<Mutex<Alive>> = (0..dirs.len() as u64 * thr)
        .map(|_| Mutex::new(Alive::default()))
        .collect();
    let mut tests = Vec::new();
    for name in &cfg.tests {
        tests.push(run_test(
            cfg,
            b,
            dirs,
            (thr, per_thread),
            name,
            &alive,
            (cancel, live),
        ));
        if cancel.is_cancelled() {
            break;
        }
    }
    clean_leftovers(cfg, b, dirs, thr, per_thread, &alive);
    MdsPoint {
        mdt: dirs.len() as u64,
        file_count: cfg.file_count,
        dir_count: cfg.dir_count,
        thr,
        tests,
    }
}

fn files<'a>(
    cfg: &MdsConfig,
    dirs: &'a [Vec<PathBuf>],
    thr_index: u64,
    target: usize,
    per_thread: u64,
) -> Files<'a> {
    Files {
        dir: &dirs[target][(thr_index % cfg.dir_count) as usize],
        first: cfg.start_number + thr_index * per_thread,
    }
}

/// Removes what a failed or stopped run left: files created, not destroyed.
fn clean_leftovers(
    cfg: &MdsConfig,
    b: &dyn Backend,
    dirs: &[Vec<PathBuf>],
    thr: u64,
    per_thread: u64,
    alive: &[Mutex<Alive>],
) {
    for (w, a) in alive.iter().enumerate() {
        let a = a.lock().map(|a| *a).unwrap_or_default();
        let f = files(cfg, dirs, w as u64 % thr, w / thr as usize, per_thread);
        for i in a.destroyed..a.created {
            if let Ok(c) = cpath(&f.path(i)) {
                let _ = b.unlink(&c);
            }
        }
    }
}

/// One test on every target at once, sampled as it runs.
fn run_test(
    cfg: &MdsConfig,
    b: &dyn Backend,
    dirs: &[Vec<PathBuf>],
    (thr, per_thread): (u64, u64),
    name: &str,
    alive: &[Mutex<Alive>],
    (cancel, live): (&iolab_core::CancelToken, Option<&Board>),
) -> MdsTestResult {
    let counters = Counters::new(&vec![thr as usize; dirs.len()]);
    let errors: Vec<Mutex<Option<String>>> = dirs.iter().map(|_| Mutex::new(None)).collect();
    let workers = dirs.len() * thr as usize;
    let barrier = Barrier::new(workers + 1);
    let done = AtomicBool::new(false);
    let samples = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (counters, barrier, errors) = (&counters, &barrier, &errors);
                let target = w / thr as usize;
                let f = files(cfg, dirs, w as u64 % thr, target, per_thread);
                let slot = &alive[w];
                // Taken here, before the barrier: a lock and an
                // allocation once per thread and test, none per operation.
                let rec = live.map_or_else(Recorder::off, |l| l.recorder(name, w));
                let h = scope.spawn(move || {
                    barrier.wait();
                    let work = (&f, per_thread);
                    let stop = (cancel, &rec);
                    if let Err(e) = thread_ops(b, name, work, slot, (counters, target), stop) {
                        if let Ok(mut s) = errors[target].lock() {
                            s.get_or_insert(e);
                        }
                    }
                    counters.worker_done(target);
                });
                (target, h)
            })
            .collect();
        // The clock starts here, before the sampler first reads it.
        counters.begin();
        let sampler = scope
            .spawn(|| sampler::sample(&counters, Duration::from_millis(cfg.interval_ms), &done));
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
    summarise(cfg, name, &counters, samples, &errors)
}

/// One thread's operations for one test; the first error ends it.
fn thread_ops(
    b: &dyn Backend,
    test: &str,
    (f, per_thread): (&Files, u64),
    slot: &Mutex<Alive>,
    (c, target): (&Counters, usize),
    (cancel, rec): (&iolab_core::CancelToken, &Recorder),
) -> Result<(), String> {
    let mut a = slot.lock().map(|a| *a).unwrap_or_default();
    let range = match test {
        "create" => a.created..per_thread,
        "destroy" => a.destroyed..a.created,
        _ => 0..per_thread,
    };
    let mut result = Ok(());
    let mut name = f.names();
    for i in range {
        if cancel.is_cancelled() {
            break;
        }
        let t0 = iolab_core::clock::mono_ns();
        let r = name.at(i).and_then(|c| one_op(b, test, c));
        let ns = iolab_core::clock::mono_ns().saturating_sub(t0);
        match r {
            Ok(()) => {
                rec.op(0, ns);
                match test {
                    "create" => a.created = i + 1,
                    "destroy" => a.destroyed = i + 1,
                    _ => {}
                }
                c.add(target, 1);
            }
            Err(e) => {
                rec.error();
                result = Err(format!("{test} {}: {e}", f.path(i).display()));
                break;
            }
        }
    }
    if let Ok(mut s) = slot.lock() {
        *s = a;
    }
    result
}

fn one_op(b: &dyn Backend, test: &str, c: &std::ffi::CStr) -> std::io::Result<()> {
    match test {
        "create" => b
            .open(c, OpenOptions::create_new())
            .and_then(|h| b.close(h)),
        "lookup" => match b.exists(c)? {
            true => Ok(()),
            false => Err(std::io::Error::from_raw_os_error(libc::ENOENT)),
        },
        "md_getattr" => b.stat(c).map(|_| ()),
        "setxattr" => b.setxattr(c, XATTR_NAME, XATTR_VALUE),
        _ => b.unlink(c),
    }
}

fn summarise(
    cfg: &MdsConfig,
    name: &str,
    c: &Counters,
    samples: Vec<Vec<f64>>,
    errors: &[Mutex<Option<String>>],
) -> MdsTestResult {
    let rates = sampler::per_target(c, samples);
    let elapsed = rates.iter().map(|r| r.elapsed_s).fold(0.0, f64::max);
    let total: u64 = rates.iter().map(|r| r.amount).sum();
    let targets: Vec<MdsTarget> = rates
        .into_iter()
        .enumerate()
        .map(|(t, rates)| MdsTarget {
            target: cfg.target_name(t),
            rates,
            error: errors[t].lock().ok().and_then(|e| e.clone()),
        })
        .collect();
    let failed = targets.iter().any(|t| t.error.is_some());
    let per: Vec<TargetRates> = targets.iter().map(|t| t.rates.clone()).collect();
    MdsTestResult {
        test: name.to_string(),
        ops_per_sec: if elapsed > 0.0 {
            total as f64 / elapsed
        } else {
            0.0
        },
        bracket: if failed {
            None
        } else {
            sampler::bracket(&per).or(Some(Bracket { min: 0.0, max: 0.0 }))
        },
        targets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(targets: Vec<PathBuf>, dir_count: u64) -> MdsConfig {
        MdsConfig {
            targets,
            thrlo: 1,
            thrhi: 4,
            dir_count,
            file_count: 64,
            tests: TEST_NAMES
                .iter()
                .map(|s| s.to_string())
                .filter(|t| t != "setxattr")
                .collect(),
            start_number: 2,
            interval_ms: 1000,
            stripe_count: 0,
            layer: "fs".into(),
            lustre: None,
        }
    }

    #[test]
    fn a_name_is_the_same_path_as_files_path() {
        let dir = PathBuf::from("/t/tests1");
        let f = Files {
            dir: &dir,
            first: 7,
        };
        let mut n = f.names();
        for i in [0, 3, 993, 12_345_678] {
            let c = n.at(i).unwrap().to_str().unwrap().to_string();
            assert_eq!(Path::new(&c), f.path(i));
        }
    }

    #[test]
    fn tests_must_start_with_create_and_end_with_destroy() {
        assert!(check_tests(&["create".into(), "destroy".into()]).is_ok());
        assert_eq!(
            check_tests(&["lookup".into(), "destroy".into()])
                .unwrap_err()
                .option,
            "tests_str"
        );
        assert!(check_tests(&["create".into(), "lookup".into()]).is_err());
        let twice = ["create", "create", "destroy"].map(String::from);
        assert!(check_tests(&twice).unwrap_err().message.contains("twice"));
        assert!(check_tests(&["create".into(), "stat".into(), "destroy".into()]).is_err());
    }

    #[test]
    fn points_skip_fewer_threads_than_directories() {
        assert_eq!(points(&cfg(vec![], 2)), vec![2, 4]);
        assert_eq!(points(&cfg(vec![], 1)), vec![1, 2, 4]);
    }

    #[test]
    fn a_run_counts_every_operation_and_leaves_nothing() {
        let base = std::env::temp_dir().join(format!("iolab-mds-unit-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let c = cfg(vec![base.clone()], 2);
        let b = iolab_backend::by_name("posix").unwrap();
        c.validate(b.as_ref()).unwrap();
        let r = run(
            &c,
            b.as_ref(),
            &mut |_| {},
            (&iolab_core::CancelToken::new(), None),
        );
        let left = std::fs::read_dir(&base).unwrap().count();
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        assert_eq!(left, 0);
        assert_eq!(r.points.len(), 2);
        for p in &r.points {
            for t in &p.tests {
                assert_eq!(t.targets[0].rates.amount, 64, "{t:?}");
                assert!(t.bracket.is_some());
            }
        }
    }
}
