//! Ctrl-C to `mpirun` reaches the ranks on other hosts during a phase:
//! real `mpirun` ranks on two fake hosts (network namespaces of a
//! FakeCluster; mpirun in the first, the second reached through its
//! remote shell, `ip netns exec` in a session of its own as sshd gives).
//! Built with MPI only (`--features iolab/mpi,iolab-comm/mpi`).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]
#![cfg(feature = "mpi")]

mod common;

use common::{fake_cluster, skip_or_fail, tree, OmpiSession, Scratch};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Items each of the two tasks is asked to create: far more than a rank
/// makes between Ctrl-C and hearing of it, and small enough for the
/// scratch tmpfs should a rank make them all.
const ITEMS: usize = 400_000;

/// Longest the whole run may take after Ctrl-C (mpirun alone waits
/// `odls_base_sigkill_timeout` twice, 20 s here).
const RUN_LIMIT: Duration = Duration::from_secs(150);

/// mpirun, started in host 0's namespace in a process group of its own
/// (as a shell starts a job), with readers of its output. Everything it
/// started is killed on drop, should the test fail first.
struct Job {
    child: Child,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
    _session: OmpiSession,
}

impl Job {
    fn start(mut c: Command, session: OmpiSession) -> Job {
        let mut child = c
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let read = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let out = read(Box::new(child.stdout.take().unwrap()));
        let err = read(Box::new(child.stderr.take().unwrap()));
        Job {
            child,
            out: Some(out),
            err: Some(err),
            _session: session,
        }
    }

    /// What a terminal does on Ctrl-C: SIGINT to the foreground group.
    fn ctrl_c(&self) {
        // SAFETY: kill(2) on the process group our child leads.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGINT) };
    }

    fn exited(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().unwrap().map(|s| s.code())
    }

    /// mpirun's stdout and stderr once it has ended.
    fn output(&mut self) -> (String, String) {
        let out = self.out.take().map(|h| h.join().unwrap());
        let err = self.err.take().map(|h| h.join().unwrap());
        (out.unwrap_or_default(), err.unwrap_or_default())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        // The ranks live in groups (the remote ones in sessions) of their
        // own: kill every descendant by pid, then mpirun's group.
        let mut pids = descendants(self.child.id());
        pids.push(self.child.id());
        for pid in pids {
            // SAFETY: kill(2) on processes this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        // SAFETY: as above, on the group our child leads.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Every descendant of `pid` (from /proc/PID/task/*/children).
fn descendants(pid: u32) -> Vec<u32> {
    let mut all = Vec::new();
    let mut next = vec![pid];
    while let Some(p) = next.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for k in kids.split_whitespace().filter_map(|k| k.parse().ok()) {
                all.push(k);
                next.push(k);
            }
        }
    }
    all
}

/// Task `task`'s files in the one directory of a `-F` run (none when it
/// is not there).
fn files_of(dir: &Path, task: usize) -> usize {
    let prefix = format!("file.mdtest.{task}.");
    std::fs::read_dir(dir).map_or(0, |r| {
        r.flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count()
    })
}

/// The remote shell mpirun uses for host 1: `HOST COMMAND...` runs the
/// command in host 1's namespace, in a session of its own (as sshd
/// does, so the terminal's Ctrl-C cannot reach it), and notes the host
/// in `mark`.
fn remote_shell(s: &Scratch, host1: &str, ns1: &str, mark: &Path) -> String {
    let rsh = s.path("rsh");
    let script = format!(
        "#!/bin/sh\nh=$1; shift\n[ \"$h\" = {host1} ] || {{ echo \"rsh: no host $h\" >&2; exit 255; }}\n\
         echo \"$h\" >> {}\nexec ip netns exec {ns1} setsid sh -c \"$*\"\n",
        mark.display()
    );
    std::fs::write(&rsh, script).unwrap();
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    rsh.display().to_string()
}

/// Ctrl-C at the terminal during a long create phase, rank 0 on mpirun's
/// host and rank 1 on another one, with `odls_base_sigkill_timeout 10`:
/// rank 1's orted would pass the stop on only at three timeouts (30 s),
/// long after the phase would have ended. Rank 1 stops in the phase
/// (it makes a small part of its items), every rank removes what it
/// made, rank 1 exits 130, rank 0's report says interrupted and mpirun
/// exits 1. Before the stop message between ranks, rank 1 made all its
/// items and the ranks stopped only when they agreed at the phase's end.
/// The two hosts share the file system (namespaces of one machine), so
/// the test directory is where both hosts' items were, and must be empty.
#[test]
fn ctrl_c_stops_a_rank_on_another_host_within_the_phase() {
    let name = "ctrl_c_stops_a_rank_on_another_host_within_the_phase";
    if Command::new("mpirun").arg("--version").output().is_err() {
        skip_or_fail(name, "mpirun is not installed");
        return;
    }
    let Some(cluster) = fake_cluster(name, 2) else {
        return;
    };
    let s = Scratch::new("mpi-stop-remote");
    let (ns0, a0) = cluster.host(0);
    let (ns1, a1) = cluster.host(1);
    let mark = s.path("rsh.used");
    let rsh = remote_shell(&s, &a1.to_string(), &ns1, &mark);
    let d = s.path("c");
    let j = s.path("o.json");
    let iolab = env!("CARGO_BIN_EXE_iolab");
    let line = format!("-C -F -n {ITEMS} -d {} --json {}", d.display(), j.display());
    // Rank 1 runs under a shell that ignores the signals orted sends, to
    // outlive iolab and keep its exit status.
    let wrapped = format!(
        "trap '' INT TERM; {iolab} mdtest {line}; echo $? > {}",
        s.path("rc.1").display()
    );
    let hosts = format!("{a0}:1,{a1}:1");
    let mut c = Command::new("ip");
    let session = OmpiSession::attach(&mut c);
    c.args(["netns", "exec", &ns0, "mpirun", "--allow-run-as-root"])
        .args(["--mca", "odls_base_sigkill_timeout", "10"])
        .args(["--mca", "plm_rsh_agent", &rsh, "--host", &hosts])
        .args(["-n", "1", iolab, "mdtest"])
        .args(line.split_whitespace())
        .args([":", "-n", "1", "sh", "-c", &wrapped])
        .env("CI", "1");
    let mut job = Job::start(c, session);
    let items = d.join("test-dir.0-0/mdtest_tree.0");
    let t0 = Instant::now();
    while files_of(&items, 1) < 10_000 {
        if let Some(code) = job.exited() {
            let (out, err) = job.output();
            panic!("mpirun ended ({code:?}) before rank 1 made items:\n{out}\n{err}");
        }
        assert!(t0.elapsed().as_secs() < 120, "rank 1 made no items");
        std::thread::sleep(Duration::from_millis(20));
    }
    job.ctrl_c();
    // The most rank 1 ever had: it stops within the phase, or goes on
    // to all its items.
    let mut most = 0;
    let t0 = Instant::now();
    let code = loop {
        most = most.max(files_of(&items, 1));
        if let Some(code) = job.exited() {
            break code;
        }
        assert!(
            t0.elapsed() < RUN_LIMIT,
            "mpirun still running after {RUN_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = job.output();
    println!("rank 1 made at most {most} of its {ITEMS} items");
    assert!(
        std::fs::read_to_string(&mark)
            .unwrap_or_default()
            .contains(&a1.to_string()),
        "rank 1 was not started through the remote shell: {err}"
    );
    assert!(
        most < ITEMS / 4,
        "rank 1 went on to {most} of {ITEMS} items after Ctrl-C: {err}"
    );
    let left = tree(&d);
    assert!(left.is_empty(), "{err}\nleft: {} entries", left.len());
    let rc = std::fs::read_to_string(s.path("rc.1")).unwrap_or_default();
    assert_eq!(rc.trim(), "130", "rank 1's status: {err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(v["outcome"]["status"], "interrupted", "{out}");
    assert!(err.contains("interrupted; removed"), "{err}");
    assert_eq!(code, Some(1), "{err}");
}
