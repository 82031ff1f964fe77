//! Running a plan: every repeat of every point is the iolab binary run as
//! a child process (through the plan's launcher when there is one) with
//! `--json` to a file of the sweep's own, so every tool is swept the same
//! way and a failing point cannot take the sweep down. Each finished
//! repeat is recorded in the store at once, attributed to its point; a
//! rerun of the same plan with the same store skips the repeats that
//! completed.
//!
//! A child runs in its own process group: Ctrl-C at the terminal reaches
//! only the sweep, which passes one SIGTERM to the child's group (under
//! mpirun each rank's relay, in that group, passes it on at once) so
//! that the tool cleans up once, then ends.
//! An srun launcher is not signalled (it would kill the ranks): the
//! sweep has Slurm send SIGTERM to the step's tasks ([`crate::slurm`]).

use crate::plan::{Plan, PlanError, PointSpec};
use iolab_store::{Attribution, Figure, NewPoint, NewSeries, Store, StoreError};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a child has to end after SIGTERM (its cleanup) before it is
/// killed.
pub const GRACE: Duration = Duration::from_secs(120);

/// How often a running child is looked at.
const POLL: Duration = Duration::from_millis(20);

/// How long a stop looks for the Slurm step of an srun launcher (its
/// tasks may be starting) before it signals srun after all.
const STEP_WAIT: Duration = Duration::from_secs(5);

/// Why a sweep could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The plan (bad usage).
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// The store.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The plan's launcher could not start the tool: the first repeat
    /// run through it left no results (mpirun refusing root, no mpirun,
    /// a build without MPI). Every other repeat would fail the same way,
    /// so the sweep stops there (bad usage: nothing was recorded).
    #[error("the launcher `{launcher}` could not start the tool: {reason}; {advice}")]
    Launcher {
        /// The launcher's words, as the first repeat ran them.
        launcher: String,
        /// Its reason, one line (from its standard error, or the spawn error).
        reason: String,
        /// What to do.
        advice: &'static str,
    },
    /// Another sweep on the same store is running the same series: two
    /// side by side would each measure its repeats with the other's
    /// running, and record them as ordinary ones.
    #[error("series '{label}' is being swept into this store by another sweep ({}); wait for it to end (a rerun then resumes what is left), or give this plan another label", holder(by))]
    Busy {
        /// The series.
        label: String,
        /// The other sweep's process and directory, when its directory is
        /// beside this one's (as it is for every path to the store's
        /// directory).
        by: Option<(u32, PathBuf)>,
    },
    /// The sweep's own files.
    #[error("{what}: {err}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        err: io::Error,
    },
}

/// Which sweep holds a series, as [`SweepError::Busy`] says it.
fn holder(by: &Option<(u32, PathBuf)>) -> String {
    match by {
        Some((pid, dir)) => format!("pid {pid}, {}", dir.display()),
        None => "its directory is not beside this one's".into(),
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> SweepError {
    let what = what.into();
    move |err| SweepError::Io { what, err }
}

/// What the sweep tells its caller as it goes (the engine prints nothing).
#[derive(Debug)]
pub enum Event<'a> {
    /// Before the first run: the series, points and repeats to do.
    Planned {
        /// Points in the plan.
        points: usize,
        /// Repeats to run now.
        to_run: usize,
        /// Repeats already recorded (skipped).
        done: usize,
        /// Seconds the repeats to run should take, from the repeats of
        /// the series recorded already (each point's mean, or the mean
        /// of those for a point with none); None when nothing is recorded.
        estimate_s: Option<f64>,
    },
    /// A repeat starts.
    Started {
        /// Its number among those run now (from 1).
        n: usize,
        /// How many run now.
        of: usize,
        /// The point.
        point: &'a PointSpec,
        /// The repeat.
        repeat: u32,
        /// The command line.
        argv: &'a [String],
    },
    /// A repeat ended and was recorded.
    Recorded {
        /// The point.
        point: &'a PointSpec,
        /// The repeat.
        repeat: u32,
        /// Its run id.
        run_id: i64,
        /// How it ended (`completed`, `error`).
        outcome: String,
        /// Its figures.
        figures: Vec<Figure>,
        /// Wall time of the child, seconds.
        elapsed_s: f64,
    },
    /// A repeat ended, but another sweep of the plan on the store had
    /// recorded that repeat meanwhile: not recorded twice.
    Duplicate {
        /// The point.
        point: &'a PointSpec,
        /// The repeat.
        repeat: u32,
        /// The run the store has for it.
        run_id: i64,
    },
    /// A repeat ended without results to record.
    Failed {
        /// The point.
        point: &'a PointSpec,
        /// The repeat.
        repeat: u32,
        /// Why.
        why: String,
        /// The last lines the child wrote to standard error.
        stderr_tail: String,
    },
}

/// How a sweep ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Repeats recorded now.
    pub recorded: usize,
    /// Of those, repeats whose run did not complete, plus repeats that
    /// left nothing to record.
    pub failed: usize,
    /// Repeats skipped as already recorded.
    pub skipped: usize,
    /// Whether Ctrl-C/SIGTERM stopped it.
    pub interrupted: bool,
}

/// The sweep's private directory for each run's JSON and output, next to
/// the store; removed with everything in it when dropped (it is created
/// new, so everything in it is the sweep's). A `lock` file in it, held
/// locked (flock) while the sweep lives, tells a later sweep whether its
/// owner is still running: the kernel drops the lock when the owner
/// dies, kill -9 included.
pub struct WorkDir {
    dir: PathBuf,
    /// Where the sweeps of the same store keep theirs, and their prefix.
    parent: PathBuf,
    prefix: String,
    _lock: File,
    taken_over: Vec<PathBuf>,
    /// The sweep's cancellation token: the process's root (its stop
    /// flag, which Ctrl-C raises) unless the caller hands one
    /// ([`WorkDir::with_cancel`]). A cancelled sweep runs no further
    /// repeat and stops the one running.
    cancel: iolab_core::CancelToken,
}

/// The lock file inside a sweep's directory.
const LOCK_FILE: &str = "lock";

/// The file inside a sweep's directory that names the series it runs
/// ([`WorkDir::claim`]).
const SERIES_FILE: &str = "series";

impl WorkDir {
    /// Creates `.NAME.sweep.PID` beside `store`, first taking over (removing)
    /// any `.NAME.sweep.OTHER` whose sweep is no longer running.
    pub fn create(store: &Path) -> Result<WorkDir, SweepError> {
        let parent = store
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = store
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.sweep.");
        let taken_over = take_over_stale(parent, &prefix);
        let dir = parent.join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(io_err(format!("cannot create {}", dir.display())))?;
        let lock = File::create(dir.join(LOCK_FILE))
            .and_then(|f| f.lock().map(|()| f))
            .map_err(io_err(format!("cannot lock {}", dir.display())))?;
        Ok(WorkDir {
            dir,
            parent: parent.to_path_buf(),
            prefix,
            _lock: lock,
            taken_over,
            cancel: iolab_core::CancelToken::process(),
        })
    }

    /// Runs under `token` (the caller's run token).
    pub fn with_cancel(mut self, token: &iolab_core::CancelToken) -> WorkDir {
        self.cancel = token.clone();
        self
    }

    /// True once the sweep was cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The sweep's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The directories of dead sweeps removed when this one was made.
    pub fn taken_over(&self) -> &[PathBuf] {
        &self.taken_over
    }

    /// Claims `label` as the series this sweep runs on `store`
    /// ([`Store::claim`]: a lock in the store file itself, so a sweep that
    /// reached the store by another name, a hard link or a bind mount,
    /// meets it too, and it goes with the sweep, kill -9 included), or
    /// refuses ([`SweepError::Busy`]) while another sweep holds it: never
    /// do two run one series side by side, and of two started at once
    /// exactly one runs. The series is named in the sweep's directory
    /// too (`series`), so that a refused sweep of the same name can say
    /// which sweep holds it.
    pub fn claim(&self, store: &Store, label: &str) -> Result<(), SweepError> {
        let named = self.dir.join(SERIES_FILE);
        let part = self.dir.join(format!("{SERIES_FILE}.part"));
        std::fs::write(&part, label)
            .and_then(|()| std::fs::rename(&part, &named))
            .map_err(io_err(format!("cannot write {}", named.display())))?;
        match store.claim(label)? {
            true => Ok(()),
            false => Err(SweepError::Busy {
                label: label.to_string(),
                by: self.live_sweep_of(label),
            }),
        }
    }

    /// The pid and directory of a live sweep beside this one that names
    /// `label` as its series.
    fn live_sweep_of(&self, label: &str) -> Option<(u32, PathBuf)> {
        let entries = std::fs::read_dir(&self.parent).ok()?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(&self.prefix)
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir || pid == std::process::id() {
                continue;
            }
            let same =
                std::fs::read(e.path().join(SERIES_FILE)).is_ok_and(|l| l == label.as_bytes());
            if same && !owner_is_dead(&e.path(), pid) {
                return Some((pid, e.path()));
            }
        }
        None
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes each `PREFIX<pid>` directory in `parent` whose sweep is dead,
/// and returns them. Dead: its lock file can be locked, or (a directory
/// made before the lock file, or by an older iolab) no process has its
/// pid. A live sweep's directory is left alone.
fn take_over_stale(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut gone = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // Only real directories: a link planted under that name is not followed.
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || pid == std::process::id() || !owner_is_dead(&e.path(), pid) {
            continue;
        }
        if std::fs::remove_dir_all(e.path()).is_ok() {
            gone.push(e.path());
        }
    }
    gone
}

/// Whether the sweep that made `dir` (process `pid`) has ended.
fn owner_is_dead(dir: &Path, pid: u32) -> bool {
    match File::open(dir.join(LOCK_FILE)) {
        Ok(f) => f.try_lock().is_ok(),
        Err(_) => {
            // SAFETY: kill(2) with signal 0 only checks that the process exists.
            let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
            r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        }
    }
}

/// A repeat to run.
struct Job<'a> {
    point: &'a PointSpec,
    point_id: i64,
    repeat: u32,
}

/// Creates (or resumes) the series, then runs every repeat not yet
/// recorded, in plan order. `iolab` is the binary the children run.
pub fn run(
    plan: &Plan,
    store: &mut Store,
    iolab: &Path,
    work: &WorkDir,
    on: &mut dyn FnMut(Event),
) -> Result<Summary, SweepError> {
    run_selected(plan, store, iolab, work, &|_| true, on)
}

/// As [`run`], for the points `select` picks only: the others are
/// neither run nor entered in the store. A caller that decides point by
/// point how far to go (`iolab qualify`, growing a curve until it stops
/// growing) runs one point at a time; a rerun skips what is recorded.
pub fn run_selected(
    plan: &Plan,
    store: &mut Store,
    iolab: &Path,
    work: &WorkDir,
    select: &dyn Fn(&PointSpec) -> bool,
    on: &mut dyn FnMut(Event),
) -> Result<Summary, SweepError> {
    let points: Vec<PointSpec> = plan.points().into_iter().filter(select).collect();
    let (jobs, done, point_ids) = jobs(plan, store, &points)?;
    on(Event::Planned {
        points: points.len(),
        to_run: jobs.len(),
        done,
        estimate_s: estimate(store, &point_ids, &jobs)?,
    });
    let mut sum = Summary {
        skipped: done,
        ..Summary::default()
    };
    for (i, job) in jobs.iter().enumerate() {
        if work.cancelled() {
            sum.interrupted = true;
            break;
        }
        let at = Ctx {
            plan,
            iolab,
            work,
            n: (i + 1, jobs.len()),
        };
        run_job(&at, store, job, &mut sum, on)?;
    }
    sum.interrupted |= work.cancelled();
    Ok(sum)
}

/// The series and points in the store, and the repeats left to run.
/// The repeats to run, how many are recorded already, and every point's
/// id in the store.
fn jobs<'a>(
    plan: &Plan,
    store: &mut Store,
    points: &'a [PointSpec],
) -> Result<(Vec<Job<'a>>, usize, Vec<i64>), SweepError> {
    let key = plan.key();
    let series = store.series_for(&NewSeries {
        label: &plan.label,
        tool: &plan.tool,
        plan: &plan.text,
        plan_key: &key,
        x_label: &plan.x_label,
    })?;
    let mut jobs = Vec::new();
    let mut done = 0;
    let mut ids = Vec::with_capacity(points.len());
    for p in points {
        let point_id = store.point(
            series,
            &NewPoint {
                idx: p.idx as u32,
                key: &p.key,
                line: &p.line,
                x: p.x,
                axes: &p.axes,
            },
        )?;
        ids.push(point_id);
        let have = store.completed_repeats(point_id)?;
        for repeat in 1..=plan.repeats {
            match have.contains(&repeat) {
                true => done += 1,
                false => jobs.push(Job {
                    point: p,
                    point_id,
                    repeat,
                }),
            }
        }
    }
    Ok((jobs, done, ids))
}

/// How long `jobs` should take by the repeats of the series' points
/// (`point_ids`) recorded already (a resumed sweep, or one whose
/// `repeats` was raised): each job its point's mean, a job of a point
/// without one the mean of the points with one. None when no point has
/// a recorded repeat.
fn estimate(store: &Store, point_ids: &[i64], jobs: &[Job]) -> Result<Option<f64>, SweepError> {
    let mut mean = std::collections::HashMap::new();
    for &id in point_ids {
        if let Some(m) = store.mean_run_seconds(id)? {
            mean.insert(id, m);
        }
    }
    if mean.is_empty() {
        return Ok(None);
    }
    let fill = mean.values().sum::<f64>() / mean.len() as f64;
    Ok(Some(
        jobs.iter()
            .map(|j| mean.get(&j.point_id).copied().unwrap_or(fill))
            .sum(),
    ))
}

/// What every repeat of a sweep shares, and this repeat's place in it.
struct Ctx<'a> {
    plan: &'a Plan,
    iolab: &'a Path,
    work: &'a WorkDir,
    /// (number from 1, repeats run now).
    n: (usize, usize),
}

/// A repeat's files in the work directory: its JSON, standard output
/// and standard error, removed once it is recorded.
struct JobFiles {
    json: PathBuf,
    out: PathBuf,
    err: PathBuf,
}

impl JobFiles {
    fn new(work: &WorkDir, job: &Job) -> JobFiles {
        let stem = work
            .path()
            .join(format!("point{}-repeat{}", job.point.idx, job.repeat));
        JobFiles {
            json: stem.with_extension("json"),
            out: stem.with_extension("out"),
            err: stem.with_extension("err"),
        }
    }

    fn remove(&self) {
        for f in [&self.json, &self.out, &self.err] {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Runs one repeat and records what it left.
fn run_job(
    at: &Ctx,
    store: &mut Store,
    job: &Job,
    sum: &mut Summary,
    on: &mut dyn FnMut(Event),
) -> Result<(), SweepError> {
    // Another sweep of the plan on this store may have recorded it since
    // this one started.
    if store.completed_repeats(job.point_id)?.contains(&job.repeat) {
        sum.skipped += 1;
        return Ok(());
    }
    let files = JobFiles::new(at.work, job);
    let result = launch(at, job, &files, on);
    let recorded = match result {
        Ok(Ok(doc)) => record(store, job, &files, &doc, sum, on),
        Ok(Err((why, argv))) => failed(job, &files, why, &argv, sum, on),
        Err(e) => Err(e),
    };
    files.remove();
    recorded
}

/// A run's results document, as the store records it.
type Document = iolab_results::Envelope<serde_json::Value, serde_json::Value>;

/// A repeat's document and how long it ran, or why it has none and its
/// command line.
type Launched = Result<(Document, f64), (String, Vec<String>)>;

/// Runs one repeat's command. An error is one that stops the sweep: the
/// launcher cannot start anything, or refuses as it would at any point.
fn launch(
    at: &Ctx,
    job: &Job,
    files: &JobFiles,
    on: &mut dyn FnMut(Event),
) -> Result<Launched, SweepError> {
    let (plan, iolab, work, (n, of)) = (at.plan, at.iolab, at.work, at.n);
    let argv = plan.command(
        &iolab.to_string_lossy(),
        job.point,
        job.repeat,
        &files.json.to_string_lossy(),
    )?;
    on(Event::Started {
        n,
        of,
        point: job.point,
        repeat: job.repeat,
        argv: &argv,
    });
    if plan.sync {
        // What earlier repeats (or anything else) left dirty is written
        // back now, not while this repeat is timed.
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
    }
    let timeout = plan.timeout_s.map(Duration::from_secs_f64);
    // Only the first repeat run now can show that the launcher cannot
    // start anything; later ones fail one by one as any point may.
    let first_via_launcher = n == 1 && plan.launcher.is_some();
    let ended = match run_child(&argv, &files.out, &files.err, timeout, work) {
        Ok(e) => e,
        Err(e) if first_via_launcher => {
            return Err(launcher_error(
                &argv,
                &format!("cannot run {}: {e}", argv[0]),
                "",
            ))
        }
        Err(e) => return Err(io_err(format!("cannot run {}", argv[0]))(e)),
    };
    let result = read_result(&files.json, &ended);
    let stderr = std::fs::read_to_string(&files.err).unwrap_or_default();
    // A launcher may start one rank and not two (`mpirun -n 1` of a build
    // without MPI runs as threads): its known refusals stop the sweep at
    // any point.
    let launcher_refused = plan.launcher.is_some() && launcher_advice(&stderr).is_some();
    if let (Err(why), true) = (&result, first_via_launcher || launcher_refused) {
        if !files.json.exists() && !work.cancelled() && !ended.timed_out {
            return Err(launcher_error(&argv, why, &stderr));
        }
    }
    Ok(result
        .map(|doc| (doc, ended.elapsed_s))
        .map_err(|why| (why, argv)))
}

/// Records a repeat that left its document.
fn record(
    store: &mut Store,
    job: &Job,
    files: &JobFiles,
    (doc, elapsed_s): &(Document, f64),
    sum: &mut Summary,
    on: &mut dyn FnMut(Event),
) -> Result<(), SweepError> {
    // The payload goes from the file into the store as it is read: a
    // long run's document is never whole in memory.
    let at = Attribution {
        point_id: job.point_id,
        repeat: job.repeat,
    };
    let run_id = match store.record_file(&files.json, doc, Some(at))? {
        iolab_store::Recorded::New(id) => id,
        iolab_store::Recorded::Already(run_id) => {
            sum.skipped += 1;
            on(Event::Duplicate {
                point: job.point,
                repeat: job.repeat,
                run_id,
            });
            return Ok(());
        }
    };
    let outcome = store.run(run_id)?.row.outcome;
    sum.recorded += 1;
    if !iolab_store::counts(&outcome) {
        sum.failed += 1;
    }
    on(Event::Recorded {
        point: job.point,
        repeat: job.repeat,
        run_id,
        outcome,
        figures: store.figures(run_id)?,
        elapsed_s: *elapsed_s,
    });
    Ok(())
}

/// Counts a repeat that left no document; Slurm's refusal to make a
/// step stops the sweep.
fn failed(
    job: &Job,
    files: &JobFiles,
    why: String,
    argv: &[String],
    sum: &mut Summary,
    on: &mut dyn FnMut(Event),
) -> Result<(), SweepError> {
    sum.failed += 1;
    let refused = crate::slurm::is_srun(argv)
        .then(|| iolab_launch::srun_refusal(tail(&files.err).as_bytes()))
        .flatten();
    on(Event::Failed {
        point: job.point,
        repeat: job.repeat,
        why,
        stderr_tail: tail(&files.err),
    });
    match refused {
        Some(why) => Err(SweepError::Launcher {
            launcher: argv[0].clone(),
            reason: why,
            advice:
                "Slurm made no step: check the allocation and the node names the launcher asks for",
        }),
        None => Ok(()),
    }
}

/// The launcher's failure in one line, with what to do about it. The
/// reason is the first line of its standard error that says something
/// (mpirun frames its messages in dashes), else `how` it ended.
fn launcher_error(argv: &[String], how: &str, stderr: &str) -> SweepError {
    let launcher: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .take_while(|w| !w.ends_with("iolab"))
        .collect();
    let said = |l: &&str| l.chars().any(char::is_alphanumeric) && !l.starts_with("---");
    let reason = stderr
        .lines()
        .map(str::trim)
        .find(|l| said(l) && KNOWN_REFUSALS.iter().any(|k| l.contains(k)))
        .or_else(|| stderr.lines().map(str::trim).find(said))
        .map(|l| format!("{l} ({how})"))
        .unwrap_or_else(|| how.to_string());
    let advice = launcher_advice(stderr).unwrap_or(if how.starts_with("cannot run") {
        "install it or put it on PATH, or remove the launcher from the plan"
    } else {
        "run the first point's command line (iolab sweep --dry-run prints it) by hand to see why"
    });
    SweepError::Launcher {
        launcher: launcher.join(" "),
        reason,
        advice,
    }
}

/// What iolab says when a launcher started it as it cannot run: a build
/// without MPI as several ranks, or a tool that runs as one process
/// (xdd, lst, survey) as several ranks. The line saying it is the reason
/// given, before mpirun's own framed lines.
const KNOWN_REFUSALS: &[&str] = &["built without MPI", "runs as one process"];

/// What to do about a launcher's known refusal, recognised from its
/// standard error.
fn launcher_advice(stderr: &str) -> Option<&'static str> {
    if stderr.contains("attempt to run as root") || stderr.contains("allow-run-as-root") {
        Some("as root, Open MPI wants OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exported (or --allow-run-as-root in the launcher)")
    } else if stderr.contains("built without MPI support") {
        Some("rebuild iolab with --features mpi, or remove the launcher from the plan (threads: --tasks)")
    } else if stderr.contains("runs as one process") {
        Some("remove the launcher from the plan, or have it start one process: only mdtest runs across MPI ranks")
    } else {
        None
    }
}

/// How a child ended.
struct Ended {
    status: ExitStatus,
    timed_out: bool,
    elapsed_s: f64,
}

/// The child's document, or why there is none worth recording (an
/// interrupted run is not a result).
fn read_result(json: &Path, ended: &Ended) -> Result<Document, String> {
    let how = match (ended.timed_out, ended.status.code(), ended.status.signal()) {
        (true, _, _) => "reached the plan's timeout_s and was stopped".to_string(),
        (_, Some(c), _) => format!("exit status {c}"),
        (_, None, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".to_string(),
    };
    // The envelope's fields; the payload is checked and skipped.
    let file = std::fs::File::open(json).map_err(|_| format!("{how}, no results written"))?;
    let doc =
        iolab_results::stream::read_head(file).map_err(|e| format!("{how}; its JSON: {e}"))?;
    match doc.outcome {
        iolab_core::Outcome::Interrupted => Err(format!("{how}: interrupted, not recorded")),
        _ if ended.timed_out => Err(how),
        _ => Ok(doc),
    }
}

/// Sends `sig` to the process group `pgid`.
fn signal_group(pgid: u32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals the group we created
    // (process_group(0) made the child its leader); no memory is shared.
    unsafe {
        libc::kill(-(pgid as i32), sig);
    }
}

/// Asks the child to stop; true once asked. Through srun (`mark` given)
/// the step's tasks get SIGTERM from Slurm; srun itself is signalled only
/// when no task of the step shows up on this node within [`STEP_WAIT`].
fn terminate(pgid: u32, mark: Option<&str>, waited: Duration) -> bool {
    if let Some(mark) = mark {
        let step = crate::slurm::find_step(mark, pgid);
        if let Some(step) = &step {
            if crate::slurm::terminate_step(step) {
                return true;
            }
        }
        if waited < STEP_WAIT {
            return false;
        }
        // Said, because srun then ends its tasks without their cleanup:
        // a run that leaves files after Ctrl-C names why.
        iolab_core::say!(
            "iolab sweep: {} within {} s; SIGTERM to srun, whose tasks may stop without removing what they made",
            match &step {
                Some(s) => format!("scancel did not signal step {s}"),
                None => "no task of the step showed up on this node".to_string(),
            },
            STEP_WAIT.as_secs()
        );
    }
    signal_group(pgid, libc::SIGTERM);
    true
}

/// Runs `argv` in its own process group, output to `out`/`err`, until it
/// ends; a stop request or the timeout sends it SIGTERM, and SIGKILL
/// [`GRACE`] later.
fn run_child(
    argv: &[String],
    out: &Path,
    err: &Path,
    timeout: Option<Duration>,
    work: &WorkDir,
) -> io::Result<Ended> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mark = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let srun = crate::slurm::is_srun(argv);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env(crate::slurm::MARK_ENV, &mark)
        .stdin(Stdio::null())
        .stdout(File::create(out)?)
        .stderr(File::create(err)?)
        .process_group(0);
    // SIGTERM when the sweep dies (kill -9 included): the child stops
    // and cleans up as after Ctrl-C, and mpirun passes the signal to its
    // ranks. In its own process group it would not see the terminal's
    // signals, so without this it would outlive the sweep.
    iolab_launch::end_with_parent(&mut cmd, libc::SIGTERM);
    let mut child = cmd.spawn()?;
    let t0 = Instant::now();
    // When a stop was wanted, and when SIGTERM reached the tool.
    let (mut asked, mut termed): (Option<Instant>, Option<Instant>) = (None, None);
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        let late = timeout.is_some_and(|t| t0.elapsed() > t);
        if asked.is_none() && (work.cancelled() || late) {
            timed_out = late && !work.cancelled();
            asked = Some(Instant::now());
        }
        if let (Some(at), None) = (asked, termed) {
            if terminate(child.id(), srun.then_some(mark.as_str()), at.elapsed()) {
                termed = Some(Instant::now());
            }
        }
        if termed.is_some_and(|at| at.elapsed() > GRACE) {
            signal_group(child.id(), libc::SIGKILL);
            break child.wait()?;
        }
        std::thread::sleep(POLL);
    };
    Ok(Ended {
        status,
        timed_out,
        elapsed_s: t0.elapsed().as_secs_f64(),
    })
}

/// How a command run with [`run_unrecorded`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Unrecorded {
    /// Exit status 0.
    Done,
    /// Stopped by Ctrl-C or SIGTERM (the stop flag).
    Interrupted,
    /// Any other end: how, and the last lines of its standard error.
    Failed(String),
}

/// Runs `argv` as a repeat's child is run (its own process group,
/// SIGTERM on a stop and when this process dies, output to files in
/// the sweep's directory) and records nothing: what a caller needs done
/// before a point, such as writing the files a read point reads.
pub fn run_unrecorded(
    argv: &[String],
    work: &WorkDir,
    name: &str,
) -> Result<Unrecorded, SweepError> {
    let stem = work.path().join(name);
    let (out, err) = (stem.with_extension("out"), stem.with_extension("err"));
    let ended = run_child(argv, &out, &err, None, work).map_err(io_err(format!(
        "cannot run {}",
        argv.first().map_or("", String::as_str)
    )))?;
    let said = tail(&err);
    for f in [&out, &err] {
        let _ = std::fs::remove_file(f);
    }
    Ok(match ended.status.code() {
        Some(0) => Unrecorded::Done,
        _ if work.cancelled() => Unrecorded::Interrupted,
        Some(c) => Unrecorded::Failed(format!("exit status {c}: {said}")),
        None => Unrecorded::Failed(format!(
            "killed by signal {}: {said}",
            ended.status.signal().unwrap_or(0)
        )),
    })
}

/// The last lines (at most 2 KiB) of a file.
fn tail(path: &Path) -> String {
    const MAX: u64 = 2048;
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(MAX)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Taking over a dead sweep's directory removes it whole without
    /// following a link planted in it, at any depth (std's remove_dir_all
    /// opens each directory O_NOFOLLOW and removes relative to it): the
    /// files the links lead to stay.
    #[test]
    fn a_stale_directory_is_removed_without_following_links() {
        let root = std::env::temp_dir().join(format!("iolab-sweep-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let other = root.join("other");
        std::fs::create_dir_all(other.join("deep")).unwrap();
        std::fs::write(other.join("keep"), b"k").unwrap();
        std::fs::write(other.join("deep/keep"), b"k").unwrap();
        // A pid that has ended (ours would never be taken over).
        let dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        let mut dead = dead;
        dead.wait().unwrap();
        let stale = root.join(format!(".runs.sqlite.sweep.{pid}"));
        std::fs::create_dir_all(stale.join("sub")).unwrap();
        std::fs::write(stale.join("point.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(&other, stale.join("link")).unwrap();
        std::os::unix::fs::symlink(&other, stale.join("sub/link")).unwrap();
        let gone = take_over_stale(&root, ".runs.sqlite.sweep.");
        assert_eq!(gone, vec![stale.clone()]);
        assert!(!stale.exists());
        assert!(other.join("keep").exists() && other.join("deep/keep").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Two sweeps of one series on one store ran side by side, each
    /// measuring with the other running and recording it as ordinary:
    /// the second is refused while the first holds its claim (a lock in
    /// the store file, which a directory beside the store's name only
    /// names), and another series, or a series whose sweep has ended, is
    /// no obstacle.
    #[test]
    fn a_series_a_live_sweep_runs_is_refused() {
        let root = std::env::temp_dir().join(format!("iolab-sweep-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let path = root.join("s.sqlite");
        // The other sweep (pid 1 lives and is not ours): its store open,
        // the series claimed, its directory beside the store naming it.
        let theirs = Store::open(&path).unwrap();
        assert!(theirs.claim("threads").unwrap());
        let live = root.join(".s.sqlite.sweep.1");
        std::fs::create_dir_all(&live).unwrap();
        std::fs::write(live.join(SERIES_FILE), "threads").unwrap();
        let lock = File::create(live.join(LOCK_FILE)).unwrap();
        lock.lock().unwrap();
        let store = Store::open(&path).unwrap();
        let work = WorkDir::create(&path).unwrap();
        let busy = work.claim(&store, "threads");
        let other = work.claim(&store, "after upgrade");
        // A claim whose sweep has no directory beside this one's.
        assert!(theirs.claim("solo").unwrap());
        let unnamed = work.claim(&store, "solo");
        drop(theirs);
        // The lock goes with the last descriptor of its open file: a
        // process another test of this binary forks meanwhile holds a
        // copy until it execs (close-on-exec), so the claim may come
        // free a moment later. Bounded: 500 tries 10 ms apart.
        let mut after = work.claim(&store, "threads");
        for _ in 0..500 {
            if !matches!(after, Err(SweepError::Busy { .. })) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            after = work.claim(&store, "threads");
        }
        let named = std::fs::read_to_string(work.path().join(SERIES_FILE)).unwrap();
        drop((work, store, lock));
        std::fs::remove_dir_all(&root).unwrap();
        match busy {
            Err(SweepError::Busy { label, by }) => {
                assert_eq!((label.as_str(), by), ("threads", Some((1, live))));
            }
            e => panic!("{e:?}"),
        }
        match unnamed {
            Err(e @ SweepError::Busy { by: None, .. }) => {
                assert!(e.to_string().contains("not beside this one's"), "{e}");
            }
            e => panic!("{e:?}"),
        }
        other.unwrap();
        after.unwrap();
        assert_eq!(named, "threads");
    }
}
