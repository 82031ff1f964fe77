//! A real one-node Slurm for tests: Debian's `slurm-wlm` and `munge`
//! (installed by scripts/install-deps.sh), started by hand (no systemd)
//! from a private `slurm.conf`, `cgroup.conf` and munge key in a
//! temporary directory. munged, slurmctld and slurmd run in the
//! foreground as children of the test process (and die with it,
//! PR_SET_PDEATHSIG); every port is free-picked, and job ids start at a
//! number of the test process's own so that two clusters on one machine
//! never share a cgroup path. Drop cancels every job, stops the daemons
//! and removes the directory; [`Slurm::shared`] does the same at exit.
//!
//! Process tracking is `proctrack/cgroup` (what most sites run) where the
//! machine's cgroups allow it (a writable cgroup v1 freezer hierarchy),
//! else `proctrack/linuxproc`, with the reason printed.
//!
//! ```no_run
//! let s = iolab_testkit::slurm::Slurm::shared().unwrap();
//! let out = std::process::Command::new("srun")
//!     .envs(s.env())
//!     .args(["-n", "2", "hostname"])
//!     .output()
//!     .unwrap();
//! assert!(out.status.success());
//! ```

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Longest wait for the node to show as idle after the daemons start.
const START_WAIT: Duration = Duration::from_secs(60);
/// Longest wait for cancelled jobs to leave.
const STOP_WAIT: Duration = Duration::from_secs(15);
const DIR_PREFIX: &str = "iolab-slurm-";
/// CPUs the node claims (`SlurmdParameters=config_overrides` lets it
/// claim more than the machine has), so that tests running at once each
/// get the CPUs of their allocation.
pub const CPUS: u32 = 16;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// How slurmd tracks the processes of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proctrack {
    /// `proctrack/linuxproc`: by parent process id.
    Linuxproc,
    /// `proctrack/cgroup`: a freezer cgroup per step; everything in it is
    /// killed when the step ends.
    Cgroup,
}

impl Proctrack {
    /// The plugin's name in slurm.conf.
    pub fn plugin(self) -> &'static str {
        match self {
            Proctrack::Linuxproc => "proctrack/linuxproc",
            Proctrack::Cgroup => "proctrack/cgroup",
        }
    }
}

/// A running one-node Slurm cluster.
#[derive(Debug)]
pub struct Slurm {
    dir: PathBuf,
    node: String,
    proctrack: Proctrack,
    daemons: Mutex<Vec<Child>>,
}

impl Slurm {
    /// Starts munged, slurmctld and slurmd with `proctrack` and waits
    /// (bounded) until the node is idle. The daemons die with the thread
    /// that calls this (PR_SET_PDEATHSIG), so call it from the test's own.
    pub fn start(proctrack: Proctrack) -> Result<Self, String> {
        remove_stale_dirs();
        for prog in ["munged", "slurmctld", "slurmd", "sinfo", "srun", "scancel"] {
            find(prog)?;
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{n}", std::process::id()));
        let s = Slurm {
            dir,
            node: hostname()?,
            proctrack,
            daemons: Mutex::new(Vec::new()),
        };
        s.write_files(first_job_id(n))?;
        s.spawn_daemons()?;
        s.wait_idle()?;
        Ok(s)
    }

    /// One cluster for the whole test process, started on first use with
    /// the best process tracking the machine allows, stopped and removed
    /// at exit.
    pub fn shared() -> Result<&'static Slurm, String> {
        static SHARED: OnceLock<Result<Slurm, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let tracking = match cgroup_unusable() {
                    None => Proctrack::Cgroup,
                    Some(why) => {
                        println!("slurm fixture: proctrack/linuxproc, not cgroup: {why}");
                        Proctrack::Linuxproc
                    }
                };
                // PR_SET_PDEATHSIG fires when the spawning thread ends:
                // spawn from one that lives as long as the process.
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let _ = tx.send(Slurm::start(tracking));
                    loop {
                        std::thread::park();
                    }
                });
                let s = rx
                    .recv_timeout(START_WAIT + Duration::from_secs(20))
                    .map_err(|e| format!("the Slurm fixture did not start: {e}"))?;
                if s.is_ok() {
                    // SAFETY: registers a plain extern "C" function with
                    // no arguments; it only touches SHARED, set by now.
                    unsafe { libc::atexit(stop_shared) };
                }
                s
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// `SLURM_CONF`, which points every Slurm command at this cluster.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![("SLURM_CONF", self.conf().display().to_string())]
    }

    /// The node's name (this machine's host name), for `srun -w`.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The process tracking it runs with.
    pub fn proctrack(&self) -> Proctrack {
        self.proctrack
    }

    /// A command for `prog` with this cluster's environment.
    pub fn command(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.envs(self.env());
        c
    }

    /// Job ids of this cluster's jobs still in the queue.
    pub fn jobs(&self) -> Vec<String> {
        self.command("squeue")
            .args(["-h", "-o", "%i"])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The last lines of the daemons' logs, for failure messages.
    pub fn log_tail(&self) -> String {
        ["slurmctld.log", "slurmd.log", "munged.log"]
            .iter()
            .map(|f| format!("{f}:\n{}", tail(&self.dir.join(f))))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    fn write_files(&self, first_job: u32) -> Result<(), String> {
        let d = &self.dir;
        let e = |e: std::io::Error| format!("{}: {e}", d.display());
        for sub in ["state", "spool", "munge"] {
            std::fs::create_dir_all(d.join(sub)).map_err(e)?;
        }
        // munged checks that its key is readable by its owner only.
        let key = d.join("munge/munge.key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(e)?;
        std::fs::write(&key, &bytes).map_err(e)?;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).map_err(e)?;
        std::fs::set_permissions(d.join("munge"), std::fs::Permissions::from_mode(0o755))
            .map_err(e)?;
        let ports = free_ports(2)?;
        std::fs::write(self.conf(), self.slurm_conf(ports[0], ports[1], first_job)).map_err(e)?;
        std::fs::write(d.join("cgroup.conf"), CGROUP_CONF).map_err(e)
    }

    fn slurm_conf(&self, ctld_port: u16, slurmd_port: u16, first_job: u32) -> String {
        let d = self.dir.display();
        let node = &self.node;
        let track = self.proctrack.plugin();
        format!(
            "ClusterName=iolabtest\n\
             SlurmctldHost={node}(127.0.0.1)\n\
             SlurmUser=root\nSlurmdUser=root\n\
             SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n\
             AuthType=auth/munge\nCredType=cred/munge\n\
             AuthInfo=socket={d}/munge/munge.sock\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ProctrackType={track}\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
             SlurmdParameters=config_overrides\n\
             MpiDefault=none\nReturnToService=2\nFirstJobId={first_job}\n\
             KillWait=10\nUnkillableStepTimeout=30\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             NodeName={node} NodeAddr=127.0.0.1 CPUs={CPUS} State=UNKNOWN\n\
             PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP\n"
        )
    }

    fn spawn_daemons(&self) -> Result<(), String> {
        let d = &self.dir;
        let p = |f: &str| d.join(f).display().to_string();
        let munged = vec![
            "munged".to_string(),
            "-F".into(),
            "--force".into(),
            format!("--key-file={}", p("munge/munge.key")),
            format!("--socket={}", p("munge/munge.sock")),
            format!("--pid-file={}", p("munge/munged.pid")),
            format!("--log-file={}", p("munged.log")),
            format!("--seed-file={}", p("munge/seed")),
        ];
        self.spawn(&munged, "munged.out")?;
        wait_for(&d.join("munge/munge.sock"), Duration::from_secs(10))
            .map_err(|e| format!("munged: {e}; {}", tail(&d.join("munged.out"))))?;
        self.spawn(
            &["slurmctld".into(), "-D".into(), "-i".into()],
            "slurmctld.out",
        )?;
        let node = self.node.clone();
        self.spawn(
            &["slurmd".into(), "-D".into(), "-N".into(), node],
            "slurmd.out",
        )
    }

    fn spawn(&self, argv: &[String], out: &str) -> Result<(), String> {
        let log = std::fs::File::create(self.dir.join(out)).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        // SAFETY: prctl only sets a flag of the child between fork and
        // exec; it allocates nothing and takes no lock.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
        self.daemons
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(child);
        Ok(())
    }

    fn wait_idle(&self) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            for c in self
                .daemons
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter_mut()
            {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(format!("a Slurm daemon ended ({st}): {}", self.log_tail()));
                }
            }
            let state = self
                .command("sinfo")
                .args(["-h", "-N", "-o", "%T"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            if state == "idle" {
                return Ok(());
            }
            if t0.elapsed() > START_WAIT {
                return Err(format!(
                    "the Slurm node was not idle within {START_WAIT:?} (state {state:?}): {}",
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Cancels every job (so that slurmstepd and the tasks end too),
    /// stops the daemons and removes the directory.
    fn stop(&self) {
        let _ = self
            .command("scancel")
            .args(["--full", "--user=root"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let t0 = Instant::now();
        while !self.jobs().is_empty() && t0.elapsed() < STOP_WAIT {
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut daemons = self.daemons.lock().unwrap_or_else(PoisonError::into_inner);
        // slurmd and slurmctld before munged, which they need to stop.
        for c in daemons.iter_mut().rev() {
            // SAFETY: kill(2) on the pid of our own child, not yet reaped.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let until = Instant::now() + Duration::from_secs(5);
            while matches!(c.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        daemons.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Stops the shared cluster when the test process exits (statics are
/// never dropped).
extern "C" fn stop_shared() {
    if let Ok(s) = Slurm::shared() {
        s.stop();
    }
}

/// Why `proctrack/cgroup` cannot run here, or None when it can: Slurm
/// 22.05 without systemd needs a cgroup v1 freezer hierarchy it may
/// write (its cgroup/v2 plugin needs systemd's delegation).
pub fn cgroup_unusable() -> Option<String> {
    let freezer = Path::new("/sys/fs/cgroup/freezer");
    if !freezer.join("tasks").exists() {
        return Some("no cgroup v1 freezer hierarchy at /sys/fs/cgroup/freezer (Slurm 22.05's cgroup/v2 needs systemd)".into());
    }
    let probe = freezer.join(format!("iolab-probe-{}", std::process::id()));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            None
        }
        Err(e) => Some(format!(
            "cannot make a cgroup in {}: {e}",
            freezer.display()
        )),
    }
}

const CGROUP_CONF: &str = "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n\
    CgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\nConstrainDevices=no\n";

/// A first job id of this process's own (a window of 100 jobs per
/// cluster, below Slurm's default MaxJobId of 67,043,328), so that
/// clusters of different test processes never make the same `job_N`
/// cgroup.
fn first_job_id(n: u32) -> u32 {
    1000 + (std::process::id() % 60_000) * 1000 + (n % 10) * 100
}

fn hostname() -> Result<String, String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().split('.').next().unwrap_or_default().to_string())
        .map_err(|e| format!("cannot read the host name: {e}"))
}

/// `prog` on PATH (or /usr/sbin, where Debian puts the daemons).
fn find(prog: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!("no `{prog}`: run scripts/install-deps.sh (Debian's slurm-wlm and munge)")
        })
}

fn wait_for(path: &Path, limit: Duration) -> Result<(), String> {
    let t0 = Instant::now();
    while !path.exists() {
        if t0.elapsed() > limit {
            return Err(format!(
                "{} did not appear within {limit:?}",
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// `n` loopback ports nobody listens on now, below the range outgoing
/// connections take their source ports from (`iolab_core::ports`).
fn free_ports(n: u16) -> Result<Vec<u16>, String> {
    iolab_core::ports::free_loopback_ports(n).map_err(|e| format!("cannot pick a free port: {e}"))
}

fn tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(6)..].join("\n")
}

/// Directories left by test processes that are gone (their daemons died
/// with them); slurmstepd and tasks of such a cluster, which outlive
/// slurmd, are killed first (they carry its SLURM_CONF).
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(DIR_PREFIX)
            .and_then(|r| r.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            kill_users_of(&e.path().join("slurm.conf"));
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// SIGKILL to every process whose environment has `SLURM_CONF=conf`.
fn kill_users_of(conf: &Path) {
    let want = format!("SLURM_CONF={}", conf.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(p.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            // SAFETY: kill(2) has no memory effects; the process belongs
            // to a cluster whose test process is gone.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
