//! Shared fixtures for the integration tests: a scratch directory on a
//! fresh tmpfs (when root), removed and unmounted on drop even when the
//! test fails, and a runner for the real `iolab` binary.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod e2e;
pub mod loopfs;
pub mod strangers;

/// A scratch directory; on a private tmpfs mount when we are root.
pub struct Scratch {
    pub root: PathBuf,
    mounted: bool,
}

impl Scratch {
    pub fn new(name: &str) -> Self {
        static REAPED: std::sync::Once = std::sync::Once::new();
        REAPED.call_once(reap_stale);
        let root = std::env::temp_dir().join(format!("iolab-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let mounted = is_root()
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=1g", "tmpfs"])
                .arg(&root)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
        if !mounted {
            skip_or_fail(
                name,
                "not root or no mount: using a plain directory instead of tmpfs",
            );
        }
        Scratch { root, mounted }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg("-l").arg(&self.root).status();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A small tmpfs of its own (to run out of space or inodes, or to be
/// made read-only), mounted at `dir` with mount options (`2m` stands
/// for `size=2m`); unmounted on drop, a failed test included, before
/// the scratch directory holding it is removed. Where it cannot be
/// mounted, `mounted` is false and the test is skipped or failed as
/// [`skip_or_fail`] says.
pub struct SmallFs {
    pub dir: PathBuf,
    pub mounted: bool,
}

impl SmallFs {
    /// At `name` in `s`; `name` also names the test in a skip.
    pub fn new(s: &Scratch, name: &str, opts: &str) -> SmallFs {
        SmallFs::at(s.path(name), name, opts)
    }

    /// At `dir`, made if missing.
    pub fn at(dir: PathBuf, test: &str, opts: &str) -> SmallFs {
        std::fs::create_dir_all(&dir).unwrap();
        let o = match opts.contains('=') {
            true => opts.to_string(),
            false => format!("size={opts}"),
        };
        let mounted = is_root()
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", &o, "tmpfs"])
                .arg(&dir)
                .status()
                .is_ok_and(|st| st.success());
        if !mounted {
            skip_or_fail(test, "cannot mount a small tmpfs (not root?)");
        }
        SmallFs { dir, mounted }
    }

    /// `f` inside it, as a string for a command line.
    pub fn path(&self, f: &str) -> String {
        self.dir.join(f).to_str().unwrap().to_string()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Scratch directories (their tmpfs unmounted first) and Open MPI
/// session bases of test processes that are gone: a test killed
/// outright (a timeout's SIGKILL) runs no Drop, so the next test process
/// removes what it left, as the testkit's fixtures do for theirs.
fn reap_stale() {
    let tmp = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return;
    };
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // iolab-it-NAME-PID, iolab-ompi-PID-N
        let pid = if let Some(rest) = name.strip_prefix("iolab-it-") {
            rest.rsplit('-').next()
        } else if let Some(rest) = name.strip_prefix("iolab-ompi-") {
            rest.split('-').next()
        } else {
            continue;
        };
        let Some(pid) = pid.filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let path = e.path();
        let mounted = mounts
            .lines()
            .any(|l| l.split(' ').nth(1) == Some(&*path.to_string_lossy()));
        if mounted {
            let _ = Command::new("umount").arg("-l").arg(&path).status();
        }
        let _ = std::fs::remove_dir_all(&path);
    }
}

/// A test whose setup cannot run here: under CI (`CI=true`, as `.ci/run`
/// sets it) that is a failure, so a machine that lost a package cannot pass
/// by skipping; on a developer's machine it prints SKIPPED and goes on.
pub fn skip_or_fail(test: &str, why: &str) {
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
        panic!("{test}: setup failed under CI: {why}");
    }
    println!("SKIPPED {test}: {why}");
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `iolab <words...>` with CI set (no progress bar).
pub fn iolab(words: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// Runs `iolab mdtest` with a command line split on spaces.
pub fn mdtest(line: &str) -> Output {
    let mut w = vec!["mdtest"];
    w.extend(line.split_whitespace());
    iolab(&w)
}

/// Asserts that `f`, a document's `outcome` (or a phase's failure), is
/// task `task`'s own failure, as a multi-task run reports it: its `op`
/// and `errno`, and a message led by `task N: `. Returns its path.
pub fn assert_task_failure(f: &serde_json::Value, task: usize, op: &str, errno: i32) -> String {
    assert_eq!(f["op"], op, "{f}");
    assert_eq!(f["errno"], errno, "{f}");
    let message = f["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("task {task}: ")), "{f}");
    f["path"].as_str().unwrap_or_default().to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every path under `dir`, relative, sorted (directories end in `/`).
pub fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(base).unwrap().display().to_string();
        if e.file_type().unwrap().is_dir() {
            out.push(format!("{rel}/"));
            walk(base, &p, out);
        } else {
            out.push(rel);
        }
    }
}

/// A private Open MPI session directory for one mpirun, removed on drop.
/// Open MPI 4.1 creates its per-user session directory with a
/// check-then-mkdir that fails ("File exists") when two mpiruns start at
/// the same moment, as parallel tests do; each mpirun gets its own base.
pub struct OmpiSession(PathBuf);

impl OmpiSession {
    /// Points `cmd`'s session directory at a fresh directory.
    pub fn attach(cmd: &mut Command) -> OmpiSession {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("iolab-ompi-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        cmd.env("OMPI_MCA_orte_tmpdir_base", &dir);
        OmpiSession(dir)
    }
}

impl Drop for OmpiSession {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `mpirun -n 2 iolab WORDS...` where rank 1 alone can write no file
/// past its first block (`ulimit -f 1`, SIGXFSZ ignored, so that such a
/// write fails with EFBIG on its real path) and rank 0 is unlimited: one
/// rank fails, the other does not. The ranks talk over TCP, as Open
/// MPI's shared-memory segment would meet rank 1's limit. `None` (the
/// test skipped, or failed under CI) without mpirun.
pub fn mpirun_rank1_file_limit(words: &[&str]) -> Option<(Command, OmpiSession)> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        skip_or_fail("mpirun_rank1_file_limit", "mpirun is not installed");
        return None;
    }
    let iolab = env!("CARGO_BIN_EXE_iolab");
    let limited = r#"trap '' XFSZ; ulimit -f 1; exec "$0" "$@""#;
    let mut c = Command::new("mpirun");
    let session = OmpiSession::attach(&mut c);
    c.args(["--allow-run-as-root", "--oversubscribe"])
        .args(["--mca", "btl", "self,tcp"])
        .args(["-n", "1", iolab])
        .args(words)
        .args([":", "-n", "1", "sh", "-c", limited, iolab])
        .args(words)
        .env("CI", "1");
    Some((c, session))
}

/// A remote shell that runs its command here, dropping the host: the
/// script `s/fake-rsh`, for tests whose "other hosts" are this one.
pub fn local_rsh(s: &Scratch) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = s.path("fake-rsh");
    std::fs::write(&p, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A fake cluster of `n` hosts (network namespaces), or None after
/// [`skip_or_fail`] when it cannot be made here.
pub fn fake_cluster(test: &str, n: usize) -> Option<iolab_testkit::FakeCluster> {
    match iolab_testkit::FakeCluster::new(n) {
        Ok(c) => Some(c),
        Err(why) => {
            skip_or_fail(test, &why);
            None
        }
    }
}

/// The Lustre I/O kit's variables a survey reads from the environment.
pub const SURVEY_KIT_VARS: &[&str] = &[
    "size",
    "rslt",
    "rslt_loc",
    "thrlo",
    "thrhi",
    "crglo",
    "crghi",
    "rszlo",
    "rszhi",
    "nobjlo",
    "nobjhi",
    "tests_str",
    "dir_count",
    "file_count",
    "actions",
    "targets",
    "scsidevs",
    "rawdevs",
    "tests",
    "rsz",
    "case",
    "stripe_count",
    "layer",
    "OSTS",
    "verify",
];

/// `iolab survey WORDS...` with the kit's variables `env` and none of
/// them from the test's own environment.
pub fn survey(words: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.arg("survey").args(words).env("CI", "1");
    for v in SURVEY_KIT_VARS {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The pids of the processes named `comm` (as /proc/PID/comm has it:
/// the program, not a shell or launcher around it) whose command line
/// holds every one of `words`.
pub fn pids_of(comm: &str, words: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
                && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    let c = String::from_utf8_lossy(&c).replace('\0', " ");
                    words.iter().all(|w| c.contains(w))
                })
        })
        .collect()
}

/// Kills `parent` with SIGKILL once a process `find` finds has started
/// (waiting at most 30 s), then waits at most 10 s for every one of them
/// to end, and kills those left (the test must leave nothing running).
/// Returns whether one had started, and those left.
pub fn orphans_after_kill(
    parent: &mut std::process::Child,
    find: impl Fn() -> Vec<u32>,
) -> (bool, Vec<u32>) {
    use std::time::{Duration, Instant};
    let wait = |limit: Duration, done: &dyn Fn(&[u32]) -> bool| {
        let until = Instant::now() + limit;
        let mut found = find();
        while !done(&found) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
            found = find();
        }
        found
    };
    let started = !wait(Duration::from_secs(30), &|f| !f.is_empty()).is_empty();
    parent.kill().unwrap();
    parent.wait().unwrap();
    let left = wait(Duration::from_secs(10), &|f| f.is_empty());
    for pid in &left {
        // SAFETY: kill(2) of a process the test started (through iolab).
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    (started, left)
}

/// Waits until a thread of `child` is in system call `nr` (as
/// /proc/PID/task/TID/syscall shows it; x86-64 numbers: fsync is 74) on
/// a descriptor whose file `on` accepts (the call's first argument), and
/// sends that thread `sig` (tgkill): its handler runs on that thread
/// before the thread runs any more of its own code, so the signal is
/// known to land at that point of the run, whatever the timing. False
/// when the child ended first (the call was too quick to be seen).
pub fn signal_in_syscall(
    child: &mut std::process::Child,
    nr: i64,
    on: impl Fn(&Path) -> bool,
    sig: i32,
) -> bool {
    let pid = child.id() as i64;
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(call) = std::fs::read_to_string(t.path().join("syscall")) else {
                continue;
            };
            let mut words = call.split_whitespace();
            if words.next() != Some(nr.to_string().as_str()) {
                continue;
            }
            let fd = words
                .next()
                .and_then(|a| i64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
            let file = fd.and_then(|fd| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok());
            let tid: i64 = t.file_name().to_string_lossy().parse().unwrap_or(0);
            if file.is_some_and(|f| on(&f)) && tid > 0 {
                // SAFETY: tgkill(2) of a thread of our own child.
                unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig as i64) };
                return true;
            }
        }
    }
}

/// An io500 ini of small phases (the hostile tester's) with `datadir = s/d`, `resultdir =
/// s/r`, timestamps off, and `extra` after it.
pub fn io500_small_ini(s: &Scratch, name: &str, extra: &str) -> PathBuf {
    let text = format!(
        "[global]\ndatadir = {}\nresultdir = {}\ntimestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\n\
         [debug]\nstonewall-time = 1\n[ior-easy]\ntransferSize = 1m\nblockSize = 2m\n\
         [ior-hard]\nsegmentCount = 10\n[mdtest-easy]\nn = 20\n[mdtest-hard]\nn = 20\n{extra}",
        s.path("d").display(),
        s.path("r").display()
    );
    let p = s.path(name);
    std::fs::write(&p, text).unwrap();
    p
}
