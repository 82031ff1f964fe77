//! `iolab lst`'s console sessions as LNet selftest users script them:
//! the console script, run by bash in a network namespace of a
//! fake cluster, against agents in the other namespaces (two started by
//! hand and named by NID range, one started by the session itself).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{skip_or_fail, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_iolab");

/// A scratch directory (the session directory and key live there),
/// removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("iolab-lstsess-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An agent started by hand in a namespace, killed on drop (`ip netns
/// exec` execs it, so the child is the agent).
struct HandAgent(Child);

impl HandAgent {
    fn start(ns: &str, key: &Path) -> HandAgent {
        let c = Command::new("ip")
            .args(["netns", "exec", ns, BIN, "lst", "agent", "--key"])
            .arg(key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        HandAgent(c)
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for HandAgent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Processes whose environment carries `marker` (the session's
/// IOLAB_LST_DIR, which the daemon and the agents it starts inherit).
fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) || pid == std::process::id().to_string() {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == marker.as_bytes()) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            out.push(format!(
                "{pid}: {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            ));
        }
    }
    out
}

/// Kills, on drop, every process a session left (the daemon, the agents
/// it started), so that a failing test leaves nothing running.
struct Leftovers(String);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for p in processes_with(&self.0) {
            let pid = p.split(':').next().unwrap_or("").to_string();
            let _ = Command::new("kill").args(["-9", &pid]).status();
        }
    }
}

/// Waits (bounded) until no process carries `marker`; returns those left.
fn wait_gone(marker: &str, within: Duration) -> Vec<String> {
    let until = Instant::now() + within;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `script` with bash in namespace `ns`, `lst` being iolab's.
fn bash_in(ns: &str, script: &str, env: &[(&str, &str)]) -> std::process::Output {
    let full = format!("lst() {{ {BIN} lst \"$@\"; }}\nset -e\n{script}");
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "timeout", "120", "bash", "-c", &full])
        .env_remove("LST_SESSION")
        .env_remove("IOLAB_KEY_FILE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// One `[R]`/`[W]` line's Avg figure.
fn avg(line: &str) -> f64 {
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// The stat blocks of one group in one interval: the 6 lines after its
/// rates header, checked for lst's layout; returns (R RPC/s, W RPC/s,
/// R MiB/s, W MiB/s) averages.
fn block(lines: &[&str], group: &str) -> (f64, f64, f64, f64) {
    assert_eq!(lines[0], format!("[LNet Rates of {group}]"));
    assert_eq!(lines[3], format!("[LNet Bandwidth of {group}]"));
    for (i, unit) in [(1, "RPC/s"), (2, "RPC/s"), (4, "MiB/s"), (5, "MiB/s")] {
        let rw = if i % 3 == 1 { "[R]" } else { "[W]" };
        let w: Vec<&str> = lines[i].split_whitespace().collect();
        assert_eq!(
            (w[0], w[1], w[3], w[4], w[6], w[7], w[9]),
            (rw, "Avg:", unit, "Min:", unit, "Max:", unit),
            "layout of {:?}",
            lines[i]
        );
    }
    (avg(lines[1]), avg(lines[2]), avg(lines[4]), avg(lines[5]))
}

#[test]
fn the_console_script_runs_a_batch_with_live_stat_and_leaves_nothing_running() {
    let cluster = match iolab_testkit::FakeCluster::new(4) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session", &e),
    };
    let dir = Dir::new("script");
    let key = dir.0.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let run_dir = dir.0.join("sessions");
    let _hands = [1, 2].map(|i| HandAgent::start(&cluster.host(i).0, &key));
    let (ns0, _) = cluster.host(0);
    let (ns3, a3) = cluster.host(3);
    let (_, a1) = cluster.host(1);
    let net = a1.to_string().rsplit_once('.').unwrap().0.to_string();
    let bg = dir.0.join("stat-bg.txt");
    let bg = bg.display();
    let dup = dir.0.join("dup.txt");
    let dup = dup.display();
    let script = format!(
        "export LST_SESSION=$$
lst new_session --timeout 100 read_write
if lst new_session again 2>{dup}; then exit 9; fi
lst add_group servers {ns3}@{a3}:7820
lst add_group clients {net}.[2-3]@tcp
lst add_batch bulk_rw
lst add_test --batch bulk_rw --concurrency 4 --from clients --to servers \\
    brw write check=simple size=4K
lst run bulk_rw
lst stat servers --delay 1 > {bg} & sleep 3; kill $!
wait $! || true
lst stat servers clients --delay 1 --count 3
lst list_batch bulk_rw
lst stop bulk_rw
lst query bulk_rw
lst end_session
"
    );
    let dir_env = run_dir.to_str().unwrap();
    let _leftovers = Leftovers(format!("IOLAB_LST_DIR={dir_env}"));
    let o = bash_in(
        &ns0,
        &script,
        &[
            ("IOLAB_LST_DIR", dir_env),
            ("IOLAB_KEY_FILE", key.to_str().unwrap()),
            ("IOLAB_RSH", cluster.rsh()),
        ],
    );
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    assert!(
        out.starts_with("SESSION: read_write TIMEOUT: 100 FORCE: No\n"),
        "{t}"
    );
    assert!(out.contains("bulk_rw is running now\n"), "{t}");
    assert!(
        out.contains("Batch: bulk_rw Tests: 1 State: Running\n"),
        "{t}"
    );

    // Three intervals, each with both groups' blocks in lst's layout.
    let lines: Vec<&str> = out.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i] == "[LNet Rates of servers]")
        .collect();
    assert_eq!(starts.len(), 3, "--count 3 prints three intervals: {t}");
    for &s in &starts {
        let (srv_r_rpc, srv_w_rpc, srv_r_mib, srv_w_mib) = block(&lines[s..s + 6], "servers");
        let (cl_r_rpc, cl_w_rpc, cl_r_mib, cl_w_mib) = block(&lines[s + 6..s + 12], "clients");
        assert!(srv_r_rpc > 0.0 && srv_r_mib > 0.0 && cl_w_mib > 0.0, "{t}");
        // Writes: the servers receive the bulk, the clients send it;
        // the replies carry no payload.
        assert_eq!((srv_w_mib, cl_r_mib), (0.0, 0.0), "{t}");
        // True figures: each message the server received carried 4 KiB...
        let per_rpc = srv_r_mib * 1048576.0 / srv_r_rpc;
        assert!(
            (per_rpc - 4096.0).abs() < 4096.0 * 0.02,
            "{per_rpc} B/RPC: {t}"
        );
        // ...it answered every one, and what the one server received is
        // what the two clients sent (their average times two), as both
        // sides counted it independently.
        assert!((srv_w_rpc - srv_r_rpc).abs() <= srv_r_rpc * 0.1, "{t}");
        let (sent, got) = (2.0 * cl_w_mib, srv_r_mib);
        assert!(
            (sent - got).abs() <= got * 0.15,
            "clients sent {sent}, server got {got}: {t}"
        );
        assert!(
            (2.0 * cl_w_rpc - srv_r_rpc).abs() <= srv_r_rpc * 0.15,
            "{t}"
        );
        assert!((cl_r_rpc - cl_w_rpc).abs() <= cl_w_rpc * 0.1, "{t}");
    }

    // A second session under the same LST_SESSION is refused.
    let dup_err = std::fs::read_to_string(dir.0.join("dup.txt")).unwrap();
    assert!(dup_err.contains("already open"), "{dup_err}");

    // The form the runbook uses, ended by kill: at least the
    // baseline was read; whatever it printed is whole blocks.
    let bg_out = std::fs::read_to_string(dir.0.join("stat-bg.txt")).unwrap();
    assert_eq!(
        bg_out.lines().filter(|l| !l.is_empty()).count() % 6,
        0,
        "{bg_out}"
    );
    assert!(!bg_out.contains("clients"), "{bg_out}");

    // After stop: idle, and the clients' own counts agree with the size.
    let q = lines
        .iter()
        .find(|l| l.starts_with("[last run] RPCs: "))
        .unwrap_or_else(|| panic!("query shows the last run: {t}"));
    let w: Vec<&str> = q.split_whitespace().collect();
    let (rpcs, errors, sent): (u64, u64, u64) = (
        w[3].parse().unwrap(),
        w[5].parse().unwrap(),
        w[7].parse().unwrap(),
    );
    assert!(rpcs > 0 && errors == 0, "{t}");
    assert!(
        !out.contains("[last run] failed"),
        "a halted job reports whole: {t}"
    );
    assert_eq!(sent, rpcs * 4096, "{t}");
    assert!(out.contains("Batch is idle\n"), "{t}");
    assert!(out.ends_with("session is ended\n"), "{t}");

    // Nothing of the session remains: the daemon, the agent it started
    // in host 3; the socket is gone. The agents started by hand remain.
    let marker = format!("IOLAB_LST_DIR={dir_env}");
    let left = wait_gone(&marker, Duration::from_secs(10));
    assert!(left.is_empty(), "left running: {left:?}");
    assert_eq!(
        std::fs::read_dir(&run_dir).unwrap().count(),
        0,
        "socket removed"
    );
    let mut hands = _hands;
    assert!(
        hands.iter_mut().all(HandAgent::alive),
        "hand agents are the user's"
    );
}

#[test]
fn force_replaces_a_session_a_loop_batch_ends_by_itself_and_a_session_after_its_timeout() {
    let cluster = match iolab_testkit::FakeCluster::new(2) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session_timeout", &e),
    };
    let dir = Dir::new("timeout");
    let run_dir = dir.0.join("sessions");
    let dir_env = run_dir.to_str().unwrap();
    let _leftovers = Leftovers(format!("IOLAB_LST_DIR={dir_env}"));
    let (ns0, _) = cluster.host(0);
    let (ns1, a1) = cluster.host(1);
    let script = format!(
        "export LST_SESSION=short
lst new_session --timeout 100 first
lst add_group g {ns1}@{a1}:7822
lst new_session --force --timeout 2 quick
lst add_group g {ns1}@{a1}:7821
lst add_batch counted
lst add_test --batch counted --loop 200 --concurrency 8 --from g --to g brw read size=1k check=full
lst run counted
for i in $(seq 300); do lst query counted | grep -q idle && break; sleep 0.1; done
lst query counted
lst add_batch b
lst add_test --batch b --from g --to g ping
lst run b
"
    );
    let env = [("IOLAB_LST_DIR", dir_env), ("IOLAB_RSH", cluster.rsh())];
    let o = bash_in(&ns0, &script, &env);
    let t = format!("stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{t}");
    // A --loop batch ends by itself, having done exactly its count.
    assert!(
        stdout(&o).contains(
            "Batch is idle\n[last run] RPCs: 200 errors: 0 sent: 0 bytes received: 204800 bytes\n"
        ),
        "{t}"
    );
    let marker = format!("IOLAB_LST_DIR={dir_env}");
    let running = processes_with(&marker);
    assert!(running.len() >= 2, "daemon and agent run: {running:?}");
    let left = wait_gone(&marker, Duration::from_secs(20));
    assert!(left.is_empty(), "left after the timeout: {left:?}");
    // The session is gone: a command now says so.
    let o = bash_in(&ns0, "export LST_SESSION=short\nlst query b", &env);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no session"), "{}", stderr(&o));
}

#[test]
fn console_commands_refuse_bad_input_before_asking_anything() {
    let dir = Dir::new("usage");
    let run_dir = dir.0.join("sessions");
    let run = |args: &[&str], session: Option<&str>| {
        let mut c = Command::new(BIN);
        c.arg("lst").args(args).env("IOLAB_LST_DIR", &run_dir);
        match session {
            Some(s) => c.env("LST_SESSION", s),
            None => c.env_remove("LST_SESSION"),
        };
        c.output().unwrap()
    };
    let cases: &[(&[&str], Option<&str>, &str)] = &[
        (&["new_session", "x"], None, "LST_SESSION"),
        (&["new_session", "x"], Some("../up"), "LST_SESSION"),
        (
            &["new_session", "--timeout", "0", "x"],
            Some("s1"),
            "--timeout",
        ),
        (&["add_group", "g", "10.0.0.[5-1]@tcp"], Some("s1"), "range"),
        (
            &["add_test", "--from", "a", "--to", "b", "brw", "copy"],
            Some("s1"),
            "brw",
        ),
        (
            &[
                "add_test", "--from", "a", "--to", "b", "--loop", "0", "ping",
            ],
            Some("s1"),
            "--loop",
        ),
        (&["stat", "--delay", "0", "g"], Some("s1"), "--delay"),
        (&["stat", "--count", "0", "g"], Some("s1"), "--count"),
        (&["list_batch", "--active"], Some("s1"), "--active"),
        (&["run", "b"], None, "LST_SESSION"),
        (&["run", "b", "--json", "x.json"], Some("s1"), "--json"),
    ];
    for (args, session, says) in cases {
        let o = run(args, *session);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(says),
            "{args:?} names {says}: {}",
            stderr(&o)
        );
    }
    // No session was started by any of them.
    let socks = std::fs::read_dir(&run_dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(socks, 0);
    // A command without a session says how to open one (exit 1: the
    // input was fine, the session is not there).
    let o = run(&["query", "b"], Some("nosuch"));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("new_session"), "{}", stderr(&o));
}
