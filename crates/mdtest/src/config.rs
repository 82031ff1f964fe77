//! Validation: raw options become a [`Config`] whose every field is
//! meaningful, or a [`ConfigError`] naming the option, before anything
//! is created on disk.

use crate::args::RawOptions;
use crate::plan::{Plan, Shape};
use iolab_backend::{c_path, Backend};
use std::path::{Path, PathBuf};

/// Which phases a run performs (-C, -T, -E, -U, -r; all when none is
/// given, as IOR 4.1's mdtest does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PhaseSet {
    /// Tree creation and the create phases.
    pub create: bool,
    /// The stat phases.
    pub stat: bool,
    /// The file read phase.
    pub read: bool,
    /// The remove phases and tree removal.
    pub remove: bool,
    /// The directory rename phase (after stat and read, before remove).
    pub rename: bool,
}

/// How a task issues its operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase", tag = "name")]
pub enum EngineKind {
    /// One system call at a time, through the backend's calls.
    Sync,
    /// Through the backend's metadata queue (POSIX: io_uring), `qd`
    /// operations in flight per task.
    Uring {
        /// Operations in flight per task.
        qd: u32,
    },
}

impl EngineKind {
    /// The queue depth, for the queued engine.
    pub fn queue_depth(&self) -> Option<u32> {
        match self {
            EngineKind::Sync => None,
            EngineKind::Uring { qd } => Some(*qd),
        }
    }
}

/// Default `--qd` of `--engine uring`.
pub const DEFAULT_QD: u64 = 16;
/// Largest `--qd`: the slots' buffers (a path and max(-w, -e) bytes
/// each) are made per task before the run.
pub const MAX_QD: u64 = 4096;

/// A validated mdtest configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Config {
    /// Test directories; task t works in `dirs[t % dirs.len()]`.
    pub dirs: Vec<PathBuf>,
    /// Tree branching factor.
    pub branch: u64,
    /// Tree depth.
    pub depth: u64,
    /// Items per task, as asked (-n), 0 when derived from -I.
    pub items_asked: u64,
    /// Items per directory (-I), 0 when derived from -n.
    pub items_per_dir_asked: u64,
    /// Items only in leaf directories.
    pub leaf_only: bool,
    /// A tree per task (-u).
    pub unique_dir: bool,
    /// Time the unique-directory setup (-t).
    pub time_unique_dir: bool,
    /// Files are shared by all tasks (-S).
    pub shared_file: bool,
    /// Test directories.
    pub do_dirs: bool,
    /// Test files.
    pub do_files: bool,
    /// Phases to run.
    pub phases: PhaseSet,
    /// `-U` was given: the rename phase asked for by name, so a backend
    /// that cannot rename is refused rather than the phase left out.
    pub rename_dirs: bool,
    /// Task 0 creates and removes for everyone (-c).
    pub collective: bool,
    /// Barriers between phases (not -B).
    pub barriers: bool,
    /// Iterations.
    pub iterations: u64,
    /// Bytes written after create (-w).
    pub write_bytes: u64,
    /// Bytes read in the read phase (-e).
    pub read_bytes: u64,
    /// Verify data read (-X).
    pub verify_read: bool,
    /// fsync after writing (-y).
    pub fsync: bool,
    /// sync(2) at the end of each phase, timed (-Y).
    pub sync_phases: bool,
    /// mknod instead of create (-k).
    pub mknod: bool,
    /// Task stride between phases (-N).
    pub stride: u64,
    /// Random order for stat/read: the seed (-R, --random-seed).
    pub random_seed: Option<Option<u64>>,
    /// Seed of the written data (-G).
    pub data_seed: Option<u64>,
    /// Pre-iteration delay in seconds (-p).
    pub pre_delay_s: u64,
    /// Stonewall in seconds (-W), 0 = none.
    pub stonewall_s: u64,
    /// Stonewall status file (-x).
    pub stonewall_file: Option<PathBuf>,
    /// Task sweep: first, last, stride (-f, -l, -s).
    pub sweep: Option<(u64, u64, u64)>,
    /// Print the rate and the time table (-P).
    pub print_rate_and_time: bool,
    /// Print only the time table (-Z).
    pub print_time_only: bool,
    /// Verbosity (-v, -V).
    pub verbosity: u64,
    /// Threads per process (--tasks).
    pub tasks_per_process: u64,
    /// How tasks issue their operations (--engine, --qd).
    pub engine: EngineKind,
    /// JSON output path.
    pub json: Option<PathBuf>,
    /// CSV output path.
    pub csv: Option<PathBuf>,
    /// Statistics to collect during the run (--stats), as `iolab stats`
    /// reads them.
    #[serde(default)]
    pub stats: Option<String>,
    /// The results store to record the run in (--store).
    #[serde(default)]
    pub store: Option<PathBuf>,
    /// Backend name.
    pub backend: String,
}

/// A configuration that cannot run, naming the option at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

// Limits on numbers from the command line, checked before anything is
// allocated or created (the README's mdtest section, "Limits", lists them).

/// Tasks (threads) per process (`--tasks`).
pub const MAX_TASKS_PER_PROCESS: u64 = 4096;
/// Iterations (`-i`): each has its own test directories, all checked before
/// the run, so the count is bounded rather than left to spin.
pub const MAX_ITERATIONS: u64 = 1_000_000;
/// Items one task works on (`-n`, or `-I` x directories) and directories
/// in one tree (`-b`, `-z`).
pub const MAX_ITEMS_PER_TASK: u64 = 1 << 32;
/// Test directories of a run (iterations x test-dir loops).
pub const MAX_TEST_DIRS: u64 = 1_000_000;
/// Seconds of `-p` and `-W`, so they convert to nanoseconds exactly.
pub const MAX_SECONDS: u64 = 100_000_000;
/// Data buffers a task keeps, in multiples of max(-w, -e): the pattern,
/// the write buffer and the read buffer.
pub const BUFFERS_PER_TASK: u64 = 3;
/// Bytes of a queue slot's copy of a path (PATH_MAX).
const QUEUE_PATH_BYTES: u64 = 4096;

/// The engine named by --engine and --qd.
fn engine_kind(r: &RawOptions) -> Result<EngineKind, ConfigError> {
    match (r.engine.as_deref(), r.qd) {
        (None | Some("sync"), None) => Ok(EngineKind::Sync),
        (None | Some("sync"), Some(_)) => {
            err("--qd: operations in flight need --engine uring (the sync engine has one)")
        }
        (Some("uring"), qd) => {
            let qd = qd.unwrap_or(DEFAULT_QD);
            if qd == 0 || qd > MAX_QD {
                return err(format!("--qd {qd}: between 1 and {MAX_QD}"));
            }
            Ok(EngineKind::Uring { qd: qd as u32 })
        }
        (Some(other), _) => err(format!(
            "--engine {other}: unknown engine; choose sync or uring"
        )),
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

impl Plan {
    /// Derives the plan from a configuration. Here, not in the plan's
    /// file, so that the plan's arithmetic does not depend on the
    /// configuration that checks it.
    pub fn new(cfg: &Config) -> Result<Self, ConfigError> {
        Plan::from_shape(&Shape {
            branch: cfg.branch,
            depth: cfg.depth,
            leaf_only: cfg.leaf_only,
            items_asked: cfg.items_asked,
            items_per_dir_asked: cfg.items_per_dir_asked,
        })
        .map_err(|e| ConfigError(e.0))
    }
}

impl Config {
    /// Validates raw options. Checks that need the task count or the
    /// file system are in [`Config::check_environment`].
    pub fn from_raw(r: &RawOptions) -> Result<Self, ConfigError> {
        check_unsupported(r)?;
        let phases = phase_set(r);
        let (do_dirs, do_files) = match (r.dirs_only, r.files_only) {
            _ if r.shared_file => (false, true),
            (true, false) => (true, false),
            (false, true) => (false, true),
            _ => (true, true),
        };
        let cfg = Config {
            dirs: dir_list(r.dirs.as_deref())?,
            branch: r.branch.unwrap_or(1),
            depth: r.depth.unwrap_or(0),
            items_asked: r.items,
            items_per_dir_asked: r.items_per_dir,
            leaf_only: r.leaf_only,
            unique_dir: r.unique_dir,
            time_unique_dir: r.time_unique_dir,
            shared_file: r.shared_file,
            do_dirs,
            do_files,
            phases,
            rename_dirs: r.rename_dirs,
            collective: r.collective,
            barriers: !r.no_barriers,
            iterations: r.iterations.unwrap_or(1),
            write_bytes: r.write_bytes,
            read_bytes: r.read_bytes,
            verify_read: r.verify_read,
            fsync: r.fsync,
            sync_phases: r.sync_phases,
            mknod: r.mknod,
            stride: r.stride,
            random_seed: match (r.random, r.random_seed) {
                (_, Some(s)) => Some(Some(s)),
                (Some(s), None) => Some(s),
                (None, None) => None,
            },
            data_seed: r.data_seed,
            pre_delay_s: r.pre_delay_s,
            stonewall_s: r.stonewall_s,
            stonewall_file: r.stonewall_file.as_ref().map(PathBuf::from),
            sweep: sweep(r)?,
            print_rate_and_time: r.print_rate_and_time,
            print_time_only: r.print_time_only,
            verbosity: r.verbosity,
            tasks_per_process: r.tasks.unwrap_or(1),
            engine: engine_kind(r)?,
            json: r.json.as_ref().map(PathBuf::from),
            csv: r.csv.as_ref().map(PathBuf::from),
            stats: r.stats.clone(),
            store: r.store.as_ref().map(PathBuf::from),
            backend: r
                .api
                .clone()
                .unwrap_or_else(|| "posix".into())
                .to_ascii_lowercase(),
        };
        cfg.check_values()?;
        cfg.check_bounds(iolab_core::env::memory_limit())?;
        cfg.check_combinations()?;
        cfg.check_plan_bounds()?;
        Ok(cfg)
    }

    /// Every number against its limit, and the buffers against the memory
    /// this process may take (ulimit -v and the cgroup's limit included).
    fn check_bounds(&self, memory: iolab_core::env::MemoryLimit) -> Result<(), ConfigError> {
        let over = |opt: &str, what: &str, v: u64, max: u64| {
            if v > max {
                err(format!("{opt} {v}: {what} is above the limit of {max} (see Limits in the README's mdtest section)"))
            } else {
                Ok(())
            }
        };
        over(
            "--tasks",
            "tasks per process",
            self.tasks_per_process,
            MAX_TASKS_PER_PROCESS,
        )?;
        over("-i", "iterations", self.iterations, MAX_ITERATIONS)?;
        over("-n", "items per task", self.items_asked, MAX_ITEMS_PER_TASK)?;
        over(
            "-I",
            "items per directory",
            self.items_per_dir_asked,
            MAX_ITEMS_PER_TASK,
        )?;
        over("-p", "seconds", self.pre_delay_s, MAX_SECONDS)?;
        over("-W", "seconds", self.stonewall_s, MAX_SECONDS)?;
        let per_task = self.write_bytes.max(self.read_bytes);
        // The queued engine adds a slot per operation in flight: a path
        // (PATH_MAX) and max(-w, -e) bytes.
        let qd = u64::from(self.engine.queue_depth().unwrap_or(0));
        let buffers = BUFFERS_PER_TASK + qd;
        let need = per_task
            .saturating_mul(buffers)
            .saturating_add(qd * QUEUE_PATH_BYTES)
            .saturating_mul(self.tasks_per_process);
        if need > memory.bytes {
            let opt = match (qd, self.write_bytes >= self.read_bytes) {
                (0, true) => "-w",
                (0, false) => "-e",
                (_, _) => "--qd",
            };
            let shown = if qd > 0 { qd } else { per_task };
            return err(format!(
                "{opt} {shown}: the data buffers need {need} bytes ({buffers} x {per_task} bytes x {} tasks, with the queue's slots), above the {} bytes of {}; lower {opt}, -w/-e or --tasks",
                self.tasks_per_process, memory.bytes, memory.source
            ));
        }
        Ok(())
    }

    /// Bounds on the derived shape: the tree, the items per task and the
    /// test directories (preflight visits each of them).
    fn check_plan_bounds(&self) -> Result<(), ConfigError> {
        // A shape Plan::new refuses is reported when the caller plans.
        let Ok(plan) = Plan::new(self) else {
            return Ok(());
        };
        if plan.dirs_per_tree > MAX_ITEMS_PER_TASK {
            return err(format!(
                "-b {} -z {}: {} directories per tree is above the limit of {MAX_ITEMS_PER_TASK}",
                self.branch, self.depth, plan.dirs_per_tree
            ));
        }
        if plan.items_per_task > MAX_ITEMS_PER_TASK {
            return err(format!(
                "-I {}: {} items per task is above the limit of {MAX_ITEMS_PER_TASK}",
                self.items_per_dir_asked, plan.items_per_task
            ));
        }
        let dirs = plan.loops.saturating_mul(self.iterations);
        if dirs > MAX_TEST_DIRS {
            return err(format!(
                "-n {} -I {} -i {}: {dirs} test directories ({} per iteration) is above the limit of {MAX_TEST_DIRS}; raise -I or -b/-z, or lower -n or -i",
                self.items_asked, self.items_per_dir_asked, self.iterations, plan.loops
            ));
        }
        Ok(())
    }

    fn check_values(&self) -> Result<(), ConfigError> {
        if self.items_asked == 0 && self.items_per_dir_asked == 0 {
            return err("-n or -I: give the number of items per task (-n) or per directory (-I)");
        }
        if self.iterations == 0 {
            return err("-i: the number of iterations must be at least 1");
        }
        if self.depth > 0 && self.branch == 0 {
            return err("-b: the branching factor must be at least 1 when -z > 0");
        }
        if self.depth > 64 {
            return err("-z: a tree deeper than 64 levels is not supported");
        }
        if self.tasks_per_process == 0 {
            return err("--tasks: must be at least 1");
        }
        if self.leaf_only && self.depth > 0 && self.branch > 1 {
            self.branch
                .checked_pow(self.depth as u32)
                .ok_or_else(|| ConfigError("-b/-z: the tree is too large".into()))?;
        }
        // A backend without directories (null) cannot hold mdtest's
        // tree: it is refused here, naming -a, rather than by the check
        // of -d that would find no directory there.
        let with_dirs =
            |n: &str| iolab_backend::by_name(n).is_ok_and(|b| b.capabilities().directories);
        if !with_dirs(&self.backend) {
            let names: Vec<String> = iolab_backend::NAMES
                .iter()
                .filter(|n| with_dirs(n))
                .map(|n| n.to_ascii_uppercase())
                .collect();
            let what = match iolab_backend::by_name(&self.backend) {
                Ok(_) => format!(
                    "'{}' keeps no directories, which mdtest's tree needs",
                    self.backend
                ),
                Err(_) => format!("unknown API '{}'", self.backend),
            };
            return err(format!(
                "-a: {what}: iolab mdtest supports {}",
                names.join(", ")
            ));
        }
        Ok(())
    }

    fn check_combinations(&self) -> Result<(), ConfigError> {
        let p = &self.phases;
        if self.shared_file && self.collective {
            return err("-S with -c: collective creates are not compatible with shared files (as in mdtest)");
        }
        if self.collective && !self.barriers {
            return err(
                "-c with -B: collective creates need the barriers between phases (as in mdtest)",
            );
        }
        if self.stride > 0 && !self.barriers {
            return err("-N with -B: a task stats its neighbour's items, which needs the barriers between phases (as in mdtest)");
        }
        if self.shared_file && self.unique_dir {
            return err("-S with -u: shared files cannot live in a tree per task");
        }
        if self.stride > 0 && self.dirs.len() > 1 {
            return err("-N with several -d paths: a task stats its neighbour's items, which live under another task's path; give one -d path (as in mdtest)");
        }
        if self.collective && self.dirs.len() > 1 {
            return err("-c with several -d paths: collective creates need a single directory");
        }
        if self.mknod && self.write_bytes > 0 {
            return err("-k with -w: a file made by mknod is never opened, so nothing would be written (as in mdtest)");
        }
        if self.mknod && self.verify_read {
            return err("-X with -k: files made by mknod are empty, there is no data to verify");
        }
        if self.verify_read && self.read_bytes == 0 {
            return err("-X needs -e: there is nothing to verify when no bytes are read");
        }
        if self.verify_read && !p.read {
            return err("-X needs the read phase (-E, or no phase option)");
        }
        if p.create && p.read && self.read_bytes > self.write_bytes && !self.mknod {
            return err(format!(
                "-e {} > -w {}: a file cannot give more bytes than were written to it",
                self.read_bytes, self.write_bytes
            ));
        }
        if self.items_asked > 0
            && self.items_per_dir_asked > 0
            && !self.items_asked.is_multiple_of(self.items_per_dir_asked)
        {
            return err("-n with -I: the items per task (-n) must be a multiple of the items per directory (-I)");
        }
        if self.stonewall_s > 0 && self.collective {
            return err("-W with -c: stonewalling collective creates is not implemented");
        }
        if self.stonewall_s > 0 && !p.create {
            return err("-W needs a create phase (-C, or no phase option)");
        }
        if self.print_rate_and_time && self.print_time_only {
            return err(
                "-P with -Z: choose the rate and time tables (-P) or the time table only (-Z)",
            );
        }
        if self.mknod && self.engine != EngineKind::Sync {
            return err(
                "-k with --engine uring: io_uring has no mknod; drop -k or use --engine sync",
            );
        }
        if self.rename_dirs && !self.do_dirs {
            return err("-U needs directories (it renames them): drop -F/-S");
        }
        Ok(())
    }

    /// Checks that need the task count: strides, paths, sweep bounds.
    pub fn check_tasks(&self, tasks: u64) -> Result<(), ConfigError> {
        if self.stride > tasks {
            return err(format!(
                "-N {}: the task stride is above the limit, the number of tasks ({tasks})",
                self.stride
            ));
        }
        if self.dirs.len() as u64 > tasks {
            return err(format!(
                "-d: {} paths but only {tasks} task(s); give at most one path per task",
                self.dirs.len()
            ));
        }
        if let Some((first, last, _)) = self.sweep {
            if first > tasks || last > tasks {
                return err(format!(
                    "-f/-l: the sweep goes up to {last} tasks but the run has {tasks}"
                ));
            }
        }
        Ok(())
    }

    /// Checks the test directories through the backend: each must be a
    /// directory, or not exist yet with a parent directory; runs that
    /// create or remove need them writable, while stat and read runs
    /// (-T, -E) work on a read-only file system. Creates nothing.
    pub fn check_environment(&self, be: &dyn Backend) -> Result<(), ConfigError> {
        let writes = self.phases.create || self.phases.remove;
        for d in &self.dirs {
            check_dir(be, d, writes)?;
        }
        if let Some(f) = &self.stonewall_file {
            if !self.phases.create && !f.exists() {
                return err(format!("-x {}: the stonewall file does not exist (it is written by a create run with -W)", f.display()));
            }
        }
        Ok(())
    }
}

fn check_dir(be: &dyn Backend, d: &Path, writes: bool) -> Result<(), ConfigError> {
    let stat = |p: &Path| c_path(p).and_then(|c| be.stat(&c));
    let target = match stat(d) {
        Ok(st) if !st.is_dir => return err(format!("-d {}: not a directory", d.display())),
        Ok(_) => d.to_path_buf(),
        // A path the backend cannot take (an invalid bucket name): its reason.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return err(format!("-d {}: {e}", d.display()))
        }
        Err(_) => {
            let parent = d
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            match stat(parent) {
                Ok(st) if st.is_dir => {}
                // The backend's reason when it has one (a missing bucket
                // and the command that makes it).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && e.get_ref().is_some() => {
                    return err(format!("-d {}: {e}", d.display()))
                }
                _ => {
                    return err(format!(
                        "-d {}: neither it nor its parent directory exists",
                        d.display()
                    ))
                }
            }
            parent.to_path_buf()
        }
    };
    let writable = c_path(&target).and_then(|c| be.can_write(&c));
    if writes && !writable.unwrap_or(false) {
        return err(format!(
            "-d {}: {} is not writable",
            d.display(),
            target.display()
        ));
    }
    Ok(())
}

fn check_unsupported(r: &RawOptions) -> Result<(), ConfigError> {
    if r.lustre_layout && !lustre_present() {
        return err("-g: the Lustre directory layout needs a Lustre client (liblustreapi), which this machine lacks");
    }
    if r.lustre_layout {
        return err("-g: setting the Lustre default directory layout is not implemented yet");
    }
    Ok(())
}

fn lustre_present() -> bool {
    std::fs::read_to_string("/proc/filesystems")
        .map(|s| s.contains("lustre"))
        .unwrap_or(false)
}

fn phase_set(r: &RawOptions) -> PhaseSet {
    // -U selects a phase like -C/-T/-E/-r (IOR 4.1, mdtest.c's option
    // checks): `-C -U` creates and renames, `-U` alone only renames.
    if !(r.create || r.stat || r.read || r.remove || r.rename_dirs) {
        return PhaseSet {
            create: true,
            stat: true,
            read: true,
            remove: true,
            rename: true,
        };
    }
    PhaseSet {
        create: r.create,
        stat: r.stat,
        read: r.read,
        remove: r.remove,
        rename: r.rename_dirs,
    }
}

fn dir_list(d: Option<&std::ffi::OsStr>) -> Result<Vec<PathBuf>, ConfigError> {
    use std::os::unix::ffi::OsStrExt;
    let Some(d) = d else {
        return Ok(vec![PathBuf::from(".")]);
    };
    // Split as bytes: a path need not be UTF-8.
    let parts: Vec<PathBuf> = d
        .as_bytes()
        .split(|&b| b == b'@')
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect();
    if parts.iter().any(|p| p.as_os_str().is_empty()) {
        return err(format!(
            "-d '{}': empty path in the list",
            d.to_string_lossy()
        ));
    }
    Ok(parts)
}

fn sweep(r: &RawOptions) -> Result<Option<(u64, u64, u64)>, ConfigError> {
    if r.first.is_none() && r.last.is_none() && r.task_stride.is_none() {
        return Ok(None);
    }
    let first = r.first.unwrap_or(1).max(1);
    let last = r.last.unwrap_or(0);
    let stride = r.task_stride.unwrap_or(1);
    if stride == 0 {
        return err("-s: the stride of the task sweep must be at least 1");
    }
    if last == 0 {
        return Ok(None);
    }
    if last < first {
        return err(format!(
            "-f {first} -l {last}: the last task count is below the first"
        ));
    }
    Ok(Some((first, last, stride)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    fn cfg(line: &str) -> Result<Config, ConfigError> {
        Config::from_raw(
            &parse(
                &line
                    .split_whitespace()
                    .map(String::from)
                    .collect::<Vec<_>>(),
            )
            .unwrap(),
        )
    }

    #[test]
    fn an_api_without_directories_is_refused_by_name() {
        let e = cfg("-n 10 -a null").unwrap_err().to_string();
        assert!(e.contains("-a: 'null' keeps no directories"), "{e}");
        // S3 joins the list where the backend has its feature.
        assert!(e.contains("iolab mdtest supports POSIX"), "{e}");
        let e = cfg("-n 10 -a DFS").unwrap_err().to_string();
        assert!(e.contains("-a: unknown API 'dfs'"), "{e}");
        assert!(cfg("-n 10 -a POSIX").is_ok());
    }

    #[test]
    fn defaults_run_every_phase_on_files_and_dirs() {
        let c = cfg("-n 10").unwrap();
        assert!(c.do_dirs && c.do_files && c.barriers);
        assert_eq!(
            c.phases,
            PhaseSet {
                create: true,
                stat: true,
                read: true,
                remove: true,
                rename: true
            }
        );
        assert_eq!((c.branch, c.depth, c.iterations), (1, 0, 1));
        assert_eq!(c.dirs, vec![PathBuf::from(".")]);
    }

    #[test]
    fn contradictions_are_refused_with_the_option_named() {
        for (line, needle) in [
            ("-n 1 -S -u", "-S"),
            ("-n 1 -c -d /a@/b", "-c"),
            ("-n 1 -k -w 10", "-k"),
            ("-n 1 -e 10 -w 5", "-e"),
            ("-n 1 -X -e 0", "-X"),
            ("-n 1 -X -e 4 -w 4 -C", "-X"),
            ("-n 10 -I 3", "-n"),
            ("-n 1 -W 5 -T", "-W"),
            ("-n 1 -W 5 -c", "-W"),
            ("-i 0 -n 1", "-i"),
            ("-z 2 -b 0 -n 1", "-b"),
            ("", "-n"),
            ("-n 1 -P -Z", "-P"),
            ("-n 1 -a DFS", "-a"),
            ("-n 1 -f 4 -l 2", "-f"),
            ("-n 1 -s 0 -l 2", "-s"),
            ("-n 1 -g", "-g"),
            ("-n 1 -U -F", "-U"),
            ("-n 1 -d a@@b", "-d"),
            ("-n 1 --qd 4", "--qd"),
            ("-n 1 --engine uring --qd 5000", "--qd"),
            ("-n 1 --engine aio", "--engine"),
            ("-n 1 -k --engine uring", "-k"),
        ] {
            let e = cfg(line)
                .err()
                .unwrap_or_else(|| panic!("{line} accepted"))
                .0;
            assert!(e.contains(needle), "{line}: {e}");
        }
    }

    #[test]
    fn phase_options_select_phases() {
        let c = cfg("-n 1 -C -T").unwrap();
        assert_eq!(
            c.phases,
            PhaseSet {
                create: true,
                stat: true,
                read: false,
                remove: false,
                rename: false
            }
        );
        let c = cfg("-n 1 -S").unwrap();
        assert!(!c.do_dirs && c.do_files);
        let c = cfg("-n 1 -D").unwrap();
        assert!(c.do_dirs && !c.do_files);
    }

    #[test]
    fn engine_and_queue_depth() {
        assert_eq!(cfg("-n 1").unwrap().engine, EngineKind::Sync);
        assert_eq!(cfg("-n 1 --engine sync").unwrap().engine, EngineKind::Sync);
        assert_eq!(
            cfg("-n 1 --engine uring").unwrap().engine,
            EngineKind::Uring {
                qd: DEFAULT_QD as u32
            }
        );
        assert_eq!(
            cfg("-n 1 --engine uring --qd 64")
                .unwrap()
                .engine
                .queue_depth(),
            Some(64)
        );
    }

    #[test]
    fn task_dependent_checks() {
        let c = cfg("-n 1 -d /tmp@/var/tmp@/tmp").unwrap();
        assert!(c.check_tasks(2).is_err());
        assert!(c.check_tasks(3).is_ok());
        let c = cfg("-n 1 -f 1 -l 8").unwrap();
        assert!(c.check_tasks(4).unwrap_err().0.contains("-l"));
    }

    #[test]
    fn environment_checks() {
        let be = &iolab_backend::Posix;
        assert!(cfg("-n 1 -d /proc/self/status")
            .unwrap()
            .check_environment(be)
            .is_err());
        assert!(cfg("-n 1 -d /nonexistent/a/b")
            .unwrap()
            .check_environment(be)
            .is_err());
        assert!(cfg("-n 1 -d /tmp").unwrap().check_environment(be).is_ok());
        assert!(cfg("-n 1 -T -x /nonexistent-sw")
            .unwrap()
            .check_environment(be)
            .unwrap_err()
            .0
            .contains("-x"));
    }
}
