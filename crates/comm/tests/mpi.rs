//! The MPI transport under a real `mpirun`: runs the `mpi_selftest` binary
//! on several ranks x threads. Without `mpirun` it skips, saying why, or
//! fails under CI.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]
#![cfg(feature = "mpi")]

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const SELFTEST: &str = env!("CARGO_BIN_EXE_mpi_selftest");

/// A deadlocked collective must fail the test, not hang CI.
const TIMEOUT: Duration = Duration::from_secs(60);

/// `mpirun` and the flags this machine needs, or `None` if there is none.
/// A private Open MPI session directory for one mpirun, removed on drop:
/// Open MPI 4.1 fails ("File exists") when two mpiruns create the shared
/// per-user session directory at the same moment, as parallel tests do.
struct OmpiSession(std::path::PathBuf);

impl Drop for OmpiSession {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mpirun() -> Option<(Command, OmpiSession)> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let version = Command::new("mpirun").arg("--version").output().ok()?;
    let mut cmd = Command::new("mpirun");
    let dir = std::env::temp_dir().join(format!(
        "iolab-ompi-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).ok()?;
    cmd.env("OMPI_MCA_orte_tmpdir_base", &dir);
    let session = OmpiSession(dir);
    if String::from_utf8_lossy(&version.stdout).contains("Open MPI") {
        // Open MPI refuses root (CI runs as root) and more ranks than
        // cores (CI has 2) unless told; MPICH needs neither flag.
        cmd.args(["--allow-run-as-root", "--oversubscribe"]);
    }
    Some((cmd, session))
}

fn drain(mut from: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = from.read_to_string(&mut out);
        out
    })
}

/// Waits for `child` up to `TIMEOUT`; on time-out asks mpirun to stop
/// (SIGTERM, so it takes its ranks down with it), then kills it.
fn wait_or_stop(child: &mut Child) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < TIMEOUT {
        if let Some(status) = child.try_wait().expect("wait for mpirun") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    std::thread::sleep(Duration::from_secs(3));
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Runs `mpirun ARGS` (the self-test and its arguments) to its end or
/// [`TIMEOUT`]: its status (None when it had to be stopped), stdout and
/// stderr. None when mpirun is missing, which fails under CI.
fn run_mpirun(args: &[&str]) -> Option<(Option<std::process::ExitStatus>, String, String)> {
    let Some((mut cmd, _session)) = mpirun() else {
        if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
            panic!("mpirun not found under CI (apt-get install openmpi-bin)");
        }
        eprintln!("skipped: mpirun not found (apt-get install openmpi-bin)");
        return None;
    };
    let mut child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mpirun");
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let status = wait_or_stop(&mut child);
    Some((status, out.join().unwrap(), err.join().unwrap()))
}

/// Runs the self-test on `ranks` ranks of `threads` threads and asserts it
/// passed on all of them.
fn selftest(ranks: usize, threads: usize) {
    let (r, t) = (ranks.to_string(), threads.to_string());
    let Some((status, out, err)) = run_mpirun(&["-n", &r, SELFTEST, &t]) else {
        return;
    };
    let Some(status) = status else {
        panic!("{ranks} ranks x {threads} threads: no result after {TIMEOUT:?}\n{out}\n{err}");
    };
    assert!(
        status.success(),
        "{ranks} ranks x {threads} threads: {status}\n{out}\n{err}"
    );
    let want = format!("mpi_selftest: {ranks} ranks x {threads} threads: ok");
    assert!(out.contains(&want), "missing {want:?} in\n{out}\n{err}");
}

#[test]
fn two_ranks_of_two_threads() {
    selftest(2, 2);
}

#[test]
fn three_ranks_of_two_threads() {
    selftest(3, 2);
}

#[test]
fn two_ranks_of_one_thread() {
    selftest(2, 1);
}

#[test]
fn a_panicking_task_on_one_rank_ends_the_job_instead_of_hanging() {
    let Some((status, out, err)) = run_mpirun(&["-n", "2", SELFTEST, "2", "panic"]) else {
        return;
    };
    let Some(status) = status else {
        panic!("hung after a task panicked\n{out}\n{err}");
    };
    assert!(!status.success(), "{status}\n{out}\n{err}");
    assert!(err.contains("injected panic"), "{err}");
    assert!(!err.contains("was not aborted"), "{err}");
}

/// A stop raised on rank 0 (as Ctrl-C raises it) reaches the other ranks
/// while they make no MPI call and rank 0 waits in a collective.
#[test]
fn a_stop_on_one_rank_reaches_the_others_without_a_collective() {
    let Some((status, out, err)) = run_mpirun(&["-n", "3", SELFTEST, "1", "stop"]) else {
        return;
    };
    let Some(status) = status else {
        panic!("no result after {TIMEOUT:?}\n{out}\n{err}");
    };
    assert!(status.success(), "{status}\n{out}\n{err}");
    assert!(out.contains("the stop reached 3 ranks"), "{out}\n{err}");
}

/// A rank that finalises MPI while rank 0 waits for it in a collective
/// (as a rank whose checks failed did): rank 0 says so and ends the job
/// within the grace of `peers`, instead of waiting for ever.
#[test]
fn a_rank_that_leaves_never_leaves_the_others_waiting() {
    let Some((status, out, err)) = run_mpirun(&["-n", "2", SELFTEST, "1", "leave"]) else {
        return;
    };
    let Some(status) = status else {
        panic!("hung after a rank left\n{out}\n{err}");
    };
    assert!(!status.success(), "{status}\n{out}\n{err}");
    assert!(err.contains("rank 1 left the run"), "{err}");
    assert!(!err.contains("completed without"), "{err}");
}

/// A rank that is there but silent (stopped): rank 0 takes it for gone
/// after the peer timeout (3 s here) and ends the job.
#[test]
fn a_silent_rank_is_taken_for_gone_after_the_peer_timeout() {
    let args = [
        "-n",
        "2",
        "-x",
        "IOLAB_MPI_PEER_TIMEOUT=3",
        SELFTEST,
        "1",
        "silent",
    ];
    let Some((status, out, err)) = run_mpirun(&args) else {
        return;
    };
    let Some(status) = status else {
        panic!("hung with a silent rank\n{out}\n{err}");
    };
    assert!(!status.success(), "{status}\n{out}\n{err}");
    assert!(err.contains("rank 1 gave no sign of life"), "{err}");
}
