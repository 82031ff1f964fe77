//! `iolab lst`'s console sessions as LNet selftest users script them:
//! the issue's console script, run by bash in a network namespace of a
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
        HandAgent::start_with(ns, key, &[])
    }

    /// An agent with extra environment (the corruption test hook).
    fn start_with(ns: &str, key: &Path, env: &[(&str, &str)]) -> HandAgent {
        let c = Command::new("ip")
            .args(["netns", "exec", ns, BIN, "lst", "agent", "--key"])
            .arg(key)
            .envs(env.iter().copied())
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
    // A key file others may read is refused.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
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

    // The form the issue's runbook uses, ended by kill: at least the
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
    assert!(
        !run_dir.exists(),
        "socket removed, and the directory the session made"
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
        (&["list_batch", "b", "--test", "0"], Some("s1"), "--test"),
        (&["query", "b", "--test", "0"], Some("s1"), "--test"),
        (&["query", "b", "--loop", "0"], Some("s1"), "--loop"),
        (&["query", "b", "--delay", "0"], Some("s1"), "--delay"),
        (&["query", "b", "--server"], Some("s1"), "--server"),
        (&["list_batch", "b", "--server"], Some("s1"), "--server"),
        // Only the one-shot run records live figures.
        (&["run", "b", "--live", "x.jsonl"], Some("s1"), "--live"),
        (&["stat", "g", "--live-view"], Some("s1"), "--live-view"),
        (
            &[
                "add_test",
                "--from",
                "a",
                "--to",
                "b",
                "--timeout",
                "0",
                "ping",
            ],
            Some("s1"),
            "--timeout",
        ),
        (&["list_group", "--down"], Some("s1"), "--down"),
        (&["update_group", "g"], Some("s1"), "--refresh"),
        (
            &["update_group", "g", "--clean", "sideways"],
            Some("s1"),
            "--clean",
        ),
        (
            &["update_group", "g", "--refresh", "--remove", "n1"],
            Some("s1"),
            "--remove",
        ),
        (&["ping"], Some("s1"), "--session"),
        (
            &["ping", "--nodes", "10.0.0.[5-1]@tcp"],
            Some("s1"),
            "range",
        ),
        (
            &["ping", "--session", "--timeout", "0"],
            Some("s1"),
            "--timeout",
        ),
        (&["show_error", "--session"], Some("s1"), "GROUP"),
        (&["query", "b", "--error"], Some("s1"), "--error"),
        (&["stop", "--force", "b"], Some("s1"), "--force"),
        (&["run", "--timeout", "5", "b"], Some("s1"), "--timeout"),
        (&["stat", "--rpc", "g"], Some("s1"), "--rpc"),
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

/// The lines of `out` from the one equal to `from` (included) on.
fn after<'a>(out: &'a str, from: &str, t: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = out.lines().collect();
    let i = lines
        .iter()
        .position(|l| *l == from)
        .unwrap_or_else(|| panic!("no line {from:?}: {t}"));
    lines[i..].to_vec()
}

#[test]
fn list_batch_query_list_group_ping_show_session_and_stat_of_a_nid() {
    let cluster = match iolab_testkit::FakeCluster::new(5) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session_lists", &e),
    };
    let dir = Dir::new("lists");
    let key = dir.0.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let run_dir = dir.0.join("sessions");
    let _hands = [1, 2, 3].map(|i| HandAgent::start(&cluster.host(i).0, &key));
    let (ns0, _) = cluster.host(0);
    let (_, a1) = cluster.host(1);
    let (_, a2) = cluster.host(2);
    let (_, a3) = cluster.host(3);
    let (_, a4) = cluster.host(4);
    let net = a1.to_string().rsplit_once('.').unwrap().0.to_string();
    let last = |a: std::net::Ipv4Addr| a.to_string().rsplit_once('.').unwrap().1.to_string();
    let (o1, o4) = (last(a1), last(a4));
    // Host 4 runs no agent: a ping of it says it is down. Host 3's agent
    // joins first and leaves while the batch runs (del_group): the
    // batch's agents are found again by address, not by position.
    let script = format!(
        "export LST_SESSION=$$
lst new_session --timeout 100 lists
lst add_group first {a3}@tcp
lst add_group servers {a2}@tcp
lst add_group clients {a1}@tcp
lst add_batch b
lst add_test --batch b --concurrency 2 --from clients --to servers brw write size=4k
lst add_test --batch b --loop 50 --from servers --to clients ping
echo '== names'; lst list_batch
echo '== detail'; lst list_batch b
echo '== test 2'; lst list_batch b --test 2
echo '== servers'; lst list_batch b --all --server
lst run b
lst del_group first
for i in $(seq 100); do lst query b --test 2 | grep -q stopped && break; sleep 0.1; done
echo '== query'; lst query b --timeout 2; lst query b --test 1; lst query b --test 2
echo '== all'; lst query b --all --loop 2 --delay 0.2
echo '== active'; lst query b --active
echo '== groups'; lst list_group
echo '== counts'; lst list_group clients servers
echo '== active nodes'; lst list_group clients --active
echo '== ping session'; lst ping --session --timeout 2
echo '== ping nodes'; lst ping --nodes {net}.[{o1}-{o4}]@tcp --timeout 2
echo '== ping batch'; lst ping --batch b --server
echo '== session'; lst show_session
echo '== stat'; lst stat {a2}@tcp --delay 1 --count 1
if lst stat {net}.99@tcp --count 1 2>stat-err.txt; then exit 9; fi
echo '== stat into a pipe'; timeout 30 {BIN} lst stat {a2}@tcp --delay 1 | head -n 1; echo \"status ${{PIPESTATUS[0]}}\"
lst stop b
echo '== again'; lst run b; lst stop b; lst query b
lst end_session
"
    );
    let dir_env = run_dir.to_str().unwrap();
    let _leftovers = Leftovers(format!("IOLAB_LST_DIR={dir_env}"));
    let o = bash_in(
        &ns0,
        &format!("cd {}\n{script}", dir.0.display()),
        &[
            ("IOLAB_LST_DIR", dir_env),
            ("IOLAB_KEY_FILE", key.to_str().unwrap()),
            ("IOLAB_RSH", cluster.rsh()),
        ],
    );
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    let (n1, n2) = (format!("{a1}@tcp"), format!("{a2}@tcp"));
    let section = |name: &str| after(&out, &format!("== {name}"), &t)[1..].to_vec();
    // Every session has the batch `batch` (LNet's new_session makes it).
    assert_eq!(
        section("names")[..3],
        ["1) b", "2) batch", "Total 2 batches"],
        "{t}"
    );
    let table = ["\tACTIVE\tBUSY\tDOWN\tUNKNOWN\tTOTAL"];
    let one = ["client\t1\t0\t0\t0\t1", "server\t1\t0\t0\t0\t1"];
    let detail = section("detail");
    assert_eq!(detail[0], "Batch: b Tests: 2 State: Idle", "{t}");
    assert_eq!(
        detail[1..4],
        [table[0], "client\t2\t0\t0\t0\t2", "server\t2\t0\t0\t0\t2"],
        "{t}"
    );
    assert_eq!(detail[4], "\tTest 1(brw) (loop: -1, concurrency: 2)", "{t}");
    assert_eq!(detail[5..8], [table[0], one[0], one[1]], "{t}");
    assert_eq!(
        detail[8], "\tTest 2(ping) (loop: 50, concurrency: 1)",
        "{t}"
    );
    assert_eq!(
        section("test 2")[..4],
        [
            "\tTest 2(ping) (loop: 50, concurrency: 1)",
            table[0],
            one[0],
            one[1]
        ],
        "{t}"
    );
    // The servers of both tests: host 2 for test 1, host 1 for test 2.
    let servers = section("servers");
    assert_eq!(servers[2], "Total 2 nodes", "{t}");
    let mut s2 = servers[..2].to_vec();
    s2.sort();
    let mut want = vec![format!("\t{n1}: Active"), format!("\t{n2}: Active")];
    want.sort();
    assert_eq!(s2, want, "{t}");
    // Test 1 runs until stop; test 2 (--loop 50) ended by itself.
    assert_eq!(
        section("query")[..3],
        ["Batch is running", "b [1] is running", "b [2] is stopped"],
        "{t}"
    );
    let all = section("all");
    let running = format!("{n1} [Active]: Running");
    let idle = format!("{n2} [Active]: Idle");
    assert_eq!(
        all[..4],
        [&running, &idle, &running, &idle],
        "--loop 2: {t}"
    );
    assert_eq!(section("active")[0], running, "{t}");
    assert_eq!(
        section("groups")[..3],
        ["1) clients", "2) servers", "Total 2 groups"],
        "{t}"
    );
    assert_eq!(
        section("counts")[..3],
        [
            table[0],
            "\t1\t0\t0\t0\t1\tclients",
            "\t1\t0\t0\t0\t1\tservers"
        ],
        "{t}"
    );
    assert_eq!(
        section("active nodes")[..3],
        [
            "Group [ clients ]".to_string(),
            format!("\t{n1}: Active"),
            "Total 1 nodes [ clients ]".to_string()
        ],
        "{t}"
    );
    let ping = section("ping session");
    assert!(
        ping[..2]
            .iter()
            .all(|l| l.contains(": Active [session: lists id: ")),
        "{t}"
    );
    let nodes = section("ping nodes");
    assert!(
        nodes[0].starts_with(&format!("\t{n1}: Active [session: lists id: ")),
        "{t}"
    );
    assert!(
        nodes[1].starts_with(&format!("\t{n2}: Active [session: lists id: ")),
        "{t}"
    );
    // Host 3's agent left the session: it answers, but not for it.
    assert_eq!(
        nodes[2],
        format!("\t{a3}@tcp: Unknown [session: <NULL> id: LNET_NID_ANY]"),
        "{t}"
    );
    assert_eq!(
        nodes[3],
        format!("\t{a4}@tcp: Down [session: <NULL> id: LNET_NID_ANY]"),
        "{t}"
    );
    let batch_servers = section("ping batch");
    assert_eq!(
        batch_servers
            .iter()
            .filter(|l| l.contains(": Active ["))
            .count(),
        2,
        "{t}"
    );
    let sess = section("session");
    assert!(
        sess[0].starts_with("lists ID: ") && sess[0].ends_with(" FEATURES: 1 NODES: 2"),
        "{t}"
    );
    assert!(sess[0].contains(", KEY: "), "{t}");
    // A NID's own blocks, in lst's layout: the server receives the bulk.
    let stat = section("stat");
    let (r_rpc, _, r_mib, w_mib) = block(&stat[..6], &n2);
    assert!(r_rpc > 0.0 && r_mib > 0.0 && w_mib == 0.0, "{t}");
    let err = std::fs::read_to_string(dir.0.join("stat-err.txt")).unwrap();
    assert!(err.contains("not in this session"), "{err}");
    // Readings without end stop when their reader leaves (141, as
    // SIGPIPE would end them), not at timeout's 124.
    let piped = section("stat into a pipe");
    assert_eq!(
        piped[..2],
        [format!("[LNet Rates of {n2}]"), "status 141".to_string()],
        "{t}"
    );
    // The batch's agents came back whole after its first run: it runs
    // again, and its counts are the clients' own.
    let again = section("again");
    assert_eq!(again[..2], ["b is running now", "Batch is idle"], "{t}");
    assert!(again[2].starts_with("[last run] RPCs: "), "{t}");
    assert!(!out.contains("[last run] failed"), "{t}");
}

#[test]
fn nodes_that_go_down_are_shown_refreshed_cleaned_and_removed_and_groups_deleted() {
    let cluster = match iolab_testkit::FakeCluster::new(4) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session_groups", &e),
    };
    let dir = Dir::new("groups");
    let key = dir.0.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let run_dir = dir.0.join("sessions");
    let mut hands: Vec<HandAgent> = [1, 2, 3]
        .iter()
        .map(|&i| HandAgent::start(&cluster.host(i).0, &key))
        .collect();
    let (ns0, _) = cluster.host(0);
    let (_, a1) = cluster.host(1);
    let (_, a2) = cluster.host(2);
    let (ns3, a3) = cluster.host(3);
    let (pid1, pid3) = (hands[0].0.id(), hands[2].0.id());
    let bg = dir.0.join("again.pid");
    // Host 3's agent dies; the session sees it down; a refresh fails
    // while it is gone and brings it back once it runs again; it dies
    // again and --clean invalid drops it.
    let script = format!(
        "export LST_SESSION=$$
lst new_session --timeout 100 --connect-timeout 2 groups
lst add_group clients {a1}@tcp {a3}@tcp
lst add_group servers {a2}@tcp
lst add_batch b
lst add_test --batch b --from clients --to servers ping
kill {pid3}; sleep 0.5
echo '== ping'; lst ping --group clients --timeout 2
echo '== down'; lst list_group clients --down
echo '== counts'; lst list_group clients
echo '== invalid'; lst list_batch b --invalid
if lst update_group clients --refresh 2>refresh-err.txt; then exit 9; fi
ip netns exec {ns3} {BIN} lst agent --key {key} </dev/null >/dev/null 2>&1 & echo $! > {bg}
sleep 1
lst update_group clients --refresh
echo '== refreshed'; lst list_group clients --active
kill $(cat {bg}); sleep 0.5
lst ping --group clients --timeout 2 >/dev/null
lst update_group clients --clean invalid
echo '== cleaned'; lst list_group clients --all
lst add_group pair {a1}@tcp {a2}@tcp
lst update_group pair --remove {a2}@tcp
echo '== removed'; lst list_group pair --all
if lst del_group servers 2>del-err.txt; then exit 9; fi
echo '== deleted'; lst del_group pair
lst list_group
kill -STOP {pid1}
echo '== stopped'; lst ping --group clients --timeout 1
kill -CONT {pid1}
echo '== continued'; lst ping --group clients --timeout 5
lst end_session
",
        key = key.display(),
        bg = bg.display(),
    );
    let dir_env = run_dir.to_str().unwrap();
    let _leftovers = Leftovers(format!("IOLAB_LST_DIR={dir_env}"));
    let o = bash_in(
        &ns0,
        &format!("cd {}\n{script}", dir.0.display()),
        &[
            ("IOLAB_LST_DIR", dir_env),
            ("IOLAB_KEY_FILE", key.to_str().unwrap()),
            ("IOLAB_RSH", cluster.rsh()),
        ],
    );
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    let (n1, n3) = (format!("{a1}@tcp"), format!("{a3}@tcp"));
    let section = |name: &str| after(&out, &format!("== {name}"), &t)[1..].to_vec();
    let ping = section("ping");
    assert!(
        ping[0].starts_with(&format!("\t{n1}: Active [session: groups")),
        "{t}"
    );
    assert_eq!(
        ping[1],
        format!("\t{n3}: Down [session: <NULL> id: LNET_NID_ANY]"),
        "{t}"
    );
    assert_eq!(
        section("down")[..3],
        [
            "Group [ clients ]".to_string(),
            format!("\t{n3}: Down"),
            "Total 1 nodes [ clients ]".to_string()
        ],
        "{t}"
    );
    assert_eq!(section("counts")[1], "\t1\t0\t1\t0\t2\tclients", "{t}");
    // The batch's clients that are not active.
    assert_eq!(
        section("invalid")[..2],
        [format!("\t{n3}: Down"), "Total 1 nodes".to_string()],
        "{t}"
    );
    let err = std::fs::read_to_string(dir.0.join("refresh-err.txt")).unwrap();
    assert!(
        err.contains(&a3.to_string()),
        "the refresh names the node: {err}"
    );
    let refreshed = section("refreshed");
    assert_eq!(
        refreshed[1..4],
        [
            format!("\t{n1}: Active"),
            format!("\t{n3}: Active"),
            "Total 2 nodes [ clients ]".to_string()
        ],
        "{t}"
    );
    assert_eq!(
        section("cleaned")[1..3],
        [
            format!("\t{n1}: Active"),
            "Total 1 nodes [ clients ]".to_string()
        ],
        "{t}"
    );
    assert_eq!(
        section("removed")[1..3],
        [
            format!("\t{n1}: Active"),
            "Total 1 nodes [ pair ]".to_string()
        ],
        "{t}"
    );
    let err = std::fs::read_to_string(dir.0.join("del-err.txt")).unwrap();
    assert!(err.contains("batch \"b\""), "{err}");
    assert_eq!(
        section("deleted")[..4],
        [
            "Group is deleted",
            "1) clients",
            "2) servers",
            "Total 2 groups"
        ],
        "{t}"
    );
    // A stalled agent is down while it does not answer, and active
    // again once it does (ping opens a new stat connection).
    assert_eq!(
        section("stopped")[0],
        format!("\t{n1}: Down [session: <NULL> id: LNET_NID_ANY]"),
        "{t}"
    );
    assert!(
        section("continued")[0].starts_with(&format!("\t{n1}: Active [session: groups id: ")),
        "{t}"
    );
    assert!(
        hands[0].alive() && hands[1].alive(),
        "hand agents are the user's"
    );
}

#[test]
fn show_error_counts_damaged_payloads_and_add_test_timeout_fails_a_stalled_rpc() {
    let cluster = match iolab_testkit::FakeCluster::new(3) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session_errors", &e),
    };
    let dir = Dir::new("errors");
    let key = dir.0.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let run_dir = dir.0.join("sessions");
    // The server damages every 10th payload it sends.
    let server = HandAgent::start_with(&cluster.host(1).0, &key, &[(iolab_lst::CORRUPT_ENV, "10")]);
    let _client = HandAgent::start(&cluster.host(2).0, &key);
    let spid = server.0.id();
    let (ns0, _) = cluster.host(0);
    let (_, a1) = cluster.host(1);
    let (_, a2) = cluster.host(2);
    let wait_idle = |b: &str| {
        format!("for i in $(seq 150); do lst query {b} | grep -q idle && break; sleep 0.1; done")
    };
    let script = format!(
        "export LST_SESSION=$$
lst new_session --timeout 100 first
lst add_group servers {a1}@tcp
lst add_group clients {a2}@tcp
lst add_batch r
lst add_test --batch r --loop 100 --from clients --to servers brw read size=4k check=full
lst run r
{idle_r}
echo '== first'; lst query r; lst show_error clients servers
lst show_error --session {a2}@tcp
lst end_session
lst new_session --timeout 100 second
lst add_group servers {a1}@tcp
lst add_group clients {a2}@tcp
echo '== second'; lst show_error clients; lst show_error --session clients
lst add_batch w
lst add_test --batch w --timeout 1 --concurrency 2 --from clients --to servers brw write size=4k
lst run w
sleep 0.5; kill -STOP {spid}
{idle_w}
echo '== stat'; lst stat servers clients --delay 1 --count 1 --timeout 1
echo '== show'; lst show_error servers
kill -CONT {spid}
echo '== stalled'; lst query w
lst end_session
",
        idle_r = wait_idle("r"),
        idle_w = wait_idle("w"),
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
    // Whatever happened, the server runs on.
    let _ = Command::new("kill")
        .args(["-CONT", &spid.to_string()])
        .status();
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    let n2 = format!("{a2}@tcp");
    let section = |name: &str| after(&out, &format!("== {name}"), &t)[1..].to_vec();
    let first = section("first");
    assert_eq!(
        first[..9],
        [
            "Batch is idle".to_string(),
            "[last run] RPCs: 100 errors: 10 sent: 0 bytes received: 409600 bytes".to_string(),
            "clients:".to_string(),
            format!("{n2}: [Session 10 brw errors, 0 ping errors] [RPC: 10 errors, 0 dropped, 0 expired]"),
            "Total 1 error nodes in clients".to_string(),
            "servers:".to_string(),
            "Total 0 error nodes in servers".to_string(),
            format!("{n2}:"),
            format!("{n2}: [Session 10 brw errors, 0 ping errors]"),
        ],
        "{t}"
    );
    // A new session: the agent's earlier errors are history, not this
    // session's.
    assert_eq!(
        section("second")[..5],
        [
            "clients:".to_string(),
            format!("{n2}: [Session 0 brw errors, 0 ping errors] [RPC: 10 errors, 0 dropped, 0 expired]"),
            "Total 1 error nodes in clients".to_string(),
            "clients:".to_string(),
            "Total 0 error nodes in clients".to_string(),
        ],
        "{t}"
    );
    // While the server is stalled, stat and show_error count it as a
    // node that did not answer, and go on with the others, as lst.
    let n1 = format!("{a1}@tcp");
    let stat = section("stat");
    assert_eq!(stat[0], "Failed to stat on 1 nodes", "{t}");
    block(&stat[1..7], "clients");
    assert_eq!(
        section("show")[..3],
        [
            "servers:".to_string(),
            format!("RPC failure, can't show error on {n1}"),
            "Total 1 error nodes in servers".to_string(),
        ],
        "{t}"
    );
    // The stalled server: the client's RPC gave up after --timeout 1
    // (30 s by default), and the batch ended with the node named.
    let stalled = section("stalled");
    assert_eq!(stalled[0], "Batch is idle", "{t}");
    assert!(
        stalled
            .iter()
            .any(|l| l.starts_with("[last run] failed: node ")
                && l.contains(&format!("server {a1}:"))
                && l.contains("timed out")),
        "{t}"
    );
}

/// A server agent killed with SIGKILL while a batch runs: the session
/// notices it without a ping (list_group, list_batch show it down),
/// query reports the failed run's real counts (RPCs done, the RPCs lost
/// in flight among the errors, the failure naming the node), and
/// `update_group --refresh` of its refused port gives up within the
/// session's connect timeout, as a whole.
#[test]
fn an_agent_killed_mid_batch_is_seen_down_counted_and_refreshed_within_the_timeout() {
    let cluster = match iolab_testkit::FakeCluster::new(3) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session_killed", &e),
    };
    let dir = Dir::new("killed");
    let key = dir.0.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let run_dir = dir.0.join("sessions");
    let hands: Vec<HandAgent> = [1, 2]
        .iter()
        .map(|&i| HandAgent::start(&cluster.host(i).0, &key))
        .collect();
    let (ns0, _) = cluster.host(0);
    let (_, a1) = cluster.host(1);
    let (_, a2) = cluster.host(2);
    let server_pid = hands[1].0.id();
    let script = format!(
        "export LST_SESSION=$$
lst new_session --timeout 100 --connect-timeout 3 killed
lst add_group clients {a1}@tcp
lst add_group servers {a2}@tcp
lst add_batch b
lst add_test --batch b --concurrency 4 --from clients --to servers brw write size=4k
lst run b
sleep 1
kill -9 {server_pid}
for i in $(seq 300); do lst query b | grep -q 'Batch is idle' && break; sleep 0.1; done
echo '== groups'; lst list_group servers --all
echo '== batch'; lst list_batch b --server --all
echo '== query'; lst query b
s=$(date +%s%N)
if lst update_group servers --refresh 2>refresh-err.txt; then exit 9; fi
echo \"== refresh_ms $(( ($(date +%s%N) - s) / 1000000 ))\"
lst end_session
"
    );
    let dir_env = run_dir.to_str().unwrap();
    let _leftovers = Leftovers(format!("IOLAB_LST_DIR={dir_env}"));
    let o = bash_in(
        &ns0,
        &format!("cd {}\n{script}", dir.0.display()),
        &[
            ("IOLAB_LST_DIR", dir_env),
            ("IOLAB_KEY_FILE", key.to_str().unwrap()),
            ("IOLAB_RSH", cluster.rsh()),
        ],
    );
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    let n2 = format!("{a2}@tcp");
    let section = |name: &str| after(&out, &format!("== {name}"), &t)[1..].to_vec();
    // Down without a ping, in both listings.
    assert_eq!(
        section("groups")[..3],
        [
            "Group [ servers ]".to_string(),
            format!("\t{n2}: Down"),
            "Total 1 nodes [ servers ]".to_string()
        ],
        "{t}"
    );
    assert_eq!(
        section("batch")[..2],
        [format!("\t{n2}: Down"), "Total 1 nodes".to_string()],
        "{t}"
    );
    // The failed run's own counts, not zeros.
    let q = section("query");
    assert_eq!(q[0], "Batch is idle", "{t}");
    let w: Vec<&str> = q[1].split_whitespace().collect();
    assert_eq!(w[..3], ["[last", "run]", "RPCs:"], "{t}");
    let (rpcs, errors, sent): (u64, u64, u64) = (
        w[3].parse().unwrap(),
        w[5].parse().unwrap(),
        w[7].parse().unwrap(),
    );
    assert!(rpcs > 0, "the RPCs done before the kill count: {t}");
    assert!(
        (1..=4).contains(&errors),
        "the RPCs in flight (at most the concurrency) are the errors: {t}"
    );
    // Every RPC done sent its 4 KiB; those lost may have left or not.
    assert!(
        (rpcs * 4096..=(rpcs + errors) * 4096).contains(&sent),
        "{t}"
    );
    assert!(
        q[2].starts_with("[last run] failed: ") && q[2].contains(&a2.to_string()),
        "the failure names the server: {t}"
    );
    let err = std::fs::read_to_string(dir.0.join("refresh-err.txt")).unwrap();
    assert!(err.contains(&a2.to_string()), "{err}");
    // Bounded by --connect-timeout 3 as a whole (before: a 10 s re-ask,
    // then the 3 s reconnect); the slack covers a loaded machine.
    let ms: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("== refresh_ms "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms < 3000 + 6000, "the refresh took {ms} ms: {t}");
}

/// The session directory in TMPDIR (`iolab-lst-UID`) is made by the
/// session that needs it and removed when the last session in it ends;
/// a command that only looks for a session makes nothing.
#[test]
fn sessions_leave_no_directory_in_tmpdir() {
    let cluster = match iolab_testkit::FakeCluster::new(2) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("lst_session_tmpdir", &e),
    };
    let dir = Dir::new("tmpdir");
    let tmp = dir.0.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let tmp_env = tmp.to_str().unwrap();
    let _leftovers = Leftovers(format!("TMPDIR={tmp_env}"));
    let (ns0, _) = cluster.host(0);
    let (ns1, a1) = cluster.host(1);
    let script = format!(
        "if LST_SESSION=none lst query b 2>/dev/null; then exit 9; fi
echo \"== looked: $(ls -A {tmp_env})\"
LST_SESSION=one lst new_session --timeout 100 one
LST_SESSION=one lst add_group g {ns1}@{a1}:7824
LST_SESSION=two lst new_session --timeout 100 two
echo \"== two open: $(ls -A {tmp_env})\"
LST_SESSION=one lst end_session
echo \"== one ended: $(ls -A {tmp_env})\"
LST_SESSION=two lst end_session
echo \"== both ended: $(ls -A {tmp_env})\"
"
    );
    let env = [("TMPDIR", tmp_env), ("IOLAB_RSH", cluster.rsh())];
    let o = bash_in(&ns0, &script, &env);
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    let me = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    let name = format!("iolab-lst-{}", me.unwrap());
    assert!(out.contains("== looked: \n"), "a look makes nothing: {t}");
    assert!(out.contains(&format!("== two open: {name}\n")), "{t}");
    assert!(
        out.contains(&format!("== one ended: {name}\n")),
        "the other session's socket keeps it: {t}"
    );
    assert!(out.contains("== both ended: \n"), "{t}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{t}");
}

/// An agent on loopback started by hand (no key), killed on drop.
struct LoopAgent {
    child: Child,
    addr: String,
}

impl LoopAgent {
    fn start() -> LoopAgent {
        let port = common::e2e::free_ports(1);
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(BIN)
            .args(["lst", "agent", "--listen", &addr])
            .env_remove("IOLAB_KEY_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        LoopAgent { child, addr }
    }
}

impl Drop for LoopAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// LNet's new_session makes the batch `batch`, and lst's add_test, run,
/// stop and query name it when given no batch; add_test refuses more
/// servers per client than the server group has (`--distribute 1:2`
/// with one server), as LNet does.
#[test]
fn a_new_session_has_the_batch_named_batch_that_commands_default_to() {
    let dir = Dir::new("default-batch");
    let run_dir = dir.0.join("sessions");
    let dir_env = run_dir.to_str().unwrap();
    let _leftovers = Leftovers(format!("IOLAB_LST_DIR={dir_env}"));
    let (c, s) = (LoopAgent::start(), LoopAgent::start());
    let script = format!(
        "lst() {{ {BIN} lst \"$@\"; }}
set -e
export LST_SESSION=dflt
lst new_session --timeout 60 dflt
lst add_group c {c}
lst add_group s {s}
if lst add_test --distribute 1:2 --from c --to s ping 2>dist-err.txt; then exit 9; fi
echo \"== distribute: $(cat dist-err.txt)\"
lst add_test --loop 100 --from c --to s ping
echo '== names'; lst list_batch
lst run
for i in $(seq 300); do lst query | grep -q idle && break; sleep 0.1; done
echo '== query'; lst query
lst run
lst stop
echo '== stopped'; lst query
lst end_session
",
        c = c.addr,
        s = s.addr
    );
    let o = Command::new("timeout")
        .args(["120", "bash", "-c", &script])
        .current_dir(&dir.0)
        .env("IOLAB_LST_DIR", dir_env)
        .env_remove("LST_SESSION")
        .env_remove("IOLAB_KEY_FILE")
        .output()
        .unwrap();
    let out = stdout(&o);
    let t = format!("stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(o.status.success(), "{t}");
    assert!(
        out.contains("== distribute: ") && out.contains("--distribute 1:2"),
        "{t}"
    );
    let section = |name: &str| after(&out, &format!("== {name}"), &t)[1..].to_vec();
    assert_eq!(
        section("names")[..2],
        ["1) batch", "Total 1 batches"],
        "{t}"
    );
    assert_eq!(
        section("query")[..2],
        [
            "Batch is idle",
            "[last run] RPCs: 100 errors: 0 sent: 0 bytes received: 0 bytes"
        ],
        "{t}"
    );
    assert_eq!(section("stopped")[0], "Batch is idle", "{t}");
}

/// A session's name follows the rule of group and batch names (1 to 64
/// characters, no spaces, no control characters), and a refused name
/// of any of the three is bad usage (exit 2) before any session is
/// asked: a name with a newline and terminal escapes was taken, and
/// show_session echoed the escapes.
#[test]
fn session_group_and_batch_names_are_checked_alike_exit_2() {
    let dir = Dir::new("names");
    let run_dir = dir.0.join("sessions");
    let long = "n".repeat(5000);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["new_session", ""], "session name"),
        (vec!["new_session", "a b"], "session name"),
        (vec!["new_session", "x\n\u{1b}[31mred"], "session name"),
        (vec!["new_session", long.as_str()], "session name"),
        (vec!["add_batch", "a b"], "batch name"),
        (vec!["add_batch", "x\u{1b}[2J"], "batch name"),
        (vec!["add_group", "", "10.0.0.1@tcp"], "group name"),
        (vec!["add_group", "a\tb", "10.0.0.1@tcp"], "group name"),
    ];
    for (args, says) in cases {
        let o = Command::new(BIN)
            .arg("lst")
            .args(&args)
            .env("IOLAB_LST_DIR", &run_dir)
            .env("LST_SESSION", "names")
            .output()
            .unwrap();
        let err = stderr(&o);
        let shown: Vec<String> = args.iter().map(|a| a.chars().take(20).collect()).collect();
        assert_eq!(o.status.code(), Some(2), "{shown:?}: {err}");
        assert!(err.contains(says), "{shown:?} names {says}: {err}");
        assert!(!err.contains('\u{1b}'), "{shown:?} echoes escapes: {err:?}");
        assert!(
            err.len() < 1000,
            "{shown:?}: {} bytes of message",
            err.len()
        );
    }
    let socks = std::fs::read_dir(&run_dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(socks, 0, "a session was started");
}
