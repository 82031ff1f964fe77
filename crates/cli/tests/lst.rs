//! `iolab lst` end to end: the real binary, real agents, real TCP on
//! loopback and in a fake cluster of network namespaces.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, skip_or_fail, stderr, stdout};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_iolab");

/// An agent on loopback, killed on drop.
struct Agent {
    child: Child,
    addr: String,
}

impl Agent {
    fn start(env: &[(&str, &str)]) -> Agent {
        Agent::start_with(env, &[])
    }

    fn start_with(env: &[(&str, &str)], args: &[&str]) -> Agent {
        let port = common::e2e::free_ports(1);
        let addr = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(BIN);
        cmd.args(["lst", "agent", "--listen", &addr])
            .args(args)
            .env_remove("IOLAB_KEY_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Agent {
            child: cmd.spawn().unwrap(),
            addr,
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch directory in TMP, removed on drop, also when the test fails.
struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("iolab-lst-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

/// The test suite leaves nothing in TMP: a failing test's scratch
/// directory (`iolab-lst-stats-PID/` before) goes too.
#[test]
fn a_failing_test_leaves_no_scratch_directory() {
    let mut path = PathBuf::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let d = scratch("unwind");
        path = d.to_path_buf();
        std::fs::write(d.join("ping.json"), "{}").unwrap();
        panic!("the test fails here");
    }));
    assert!(r.is_err());
    assert!(
        !path.as_os_str().is_empty() && !path.exists(),
        "{path:?} left behind"
    );
}

fn json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn run(words: &[&str]) -> (std::process::Output, String) {
    let o = Command::new(BIN)
        .args(["lst", "run"])
        .args(words)
        .env_remove("IOLAB_KEY_FILE")
        .output()
        .unwrap();
    let text = format!("stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    (o, text)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn loopback_ping_and_brw_with_full_check_count_consistently() {
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let both = format!("{},{}", a.addr, b.addr);
    let dir = scratch("loop");
    let j = dir.join("ping.json");
    let (o, t) = run(&[
        "ping",
        "--from",
        &both,
        "--to",
        &both,
        "--concurrency",
        "4",
        "--count",
        "200",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("[LNet Rates of clients]") && t.contains("[LNet Bandwidth of servers]"),
        "{t}"
    );
    assert!(t.contains("[R] Avg:") && t.contains("RPC/s Min:"), "{t}");
    let doc = json(&j);
    assert_eq!(doc["schema"], "iolab.lst/1");
    let run0 = &doc["payload"][0]["runs"][0];
    assert_eq!(
        u(&run0["clients"]["rpcs"]),
        400,
        "200 per client, 2 clients"
    );
    assert_eq!(u(&run0["servers"]["rpcs"]), 400);
    assert_eq!(u(&run0["latency"]["count"]), 400);

    for (op, client_bytes, server_bytes) in [
        ("write", "tx_bytes", "rx_bytes"),
        ("read", "rx_bytes", "tx_bytes"),
    ] {
        let j = dir.join(format!("{op}.json"));
        let c = dir.join(format!("{op}.csv"));
        let (o, t) = run(&[
            "brw",
            op,
            "size=8k",
            "check=full",
            "--from",
            &both,
            "--to",
            &both,
            "--concurrency",
            "3",
            "--count",
            "150",
            "--json",
            j.to_str().unwrap(),
            "--csv",
            c.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{op}: {t}");
        let run0 = &json(&j)["payload"][0]["runs"][0];
        for node in run0["client_nodes"].as_array().unwrap() {
            assert_eq!(u(&node["rpcs"]), 150);
            assert_eq!(
                u(&node[client_bytes]),
                150 * 8192,
                "{op}: bytes = RPCs x size"
            );
            assert_eq!(u(&node["errors"]), 0);
        }
        let served: u64 = run0["server_nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| u(&n[server_bytes]))
            .sum();
        assert_eq!(
            served,
            300 * 8192,
            "{op}: the servers moved what the clients did"
        );
        let csv = std::fs::read_to_string(&c).unwrap();
        assert_eq!(csv.lines().count(), 3, "header, clients, servers: {csv}");
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .starts_with("2,3,1,clients,2,300,0,"),
            "{csv}"
        );
    }
}

#[test]
fn bulk_rpcs_over_several_lanes_count_exactly_both_ways() {
    // 256 KiB RPCs at concurrency 4 to one server run in four lanes
    // (threads with a connection each); a count that four does not
    // divide is still done exactly, and each side counts it alone.
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let dir = scratch("lanes");
    for (op, client_bytes, server_bytes) in [
        ("write", "tx_bytes", "rx_bytes"),
        ("read", "rx_bytes", "tx_bytes"),
    ] {
        let j = dir.join(format!("{op}.json"));
        let (o, t) = run(&[
            "brw",
            op,
            "size=256k",
            "check=full",
            "--from",
            &a.addr,
            "--to",
            &b.addr,
            "--concurrency",
            "4",
            "--count",
            "1001",
            "--json",
            j.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{op}: {t}");
        let run0 = &json(&j)["payload"][0]["runs"][0];
        let (c, s) = (&run0["clients"], &run0["servers"]);
        assert_eq!(u(&c["rpcs"]), 1001, "{op}: {t}");
        assert_eq!(u(&s["rpcs"]), 1001, "{op}: {t}");
        assert_eq!(u(&c[client_bytes]), 1001 * 262144, "{op}");
        assert_eq!(u(&s[server_bytes]), 1001 * 262144, "{op}");
        assert_eq!(u(&run0["latency"]["count"]), 1001, "{op}");
        assert_eq!((u(&c["errors"]), u(&s["errors"])), (0, 0), "{op}");
    }
}

#[test]
fn a_corrupted_payload_is_counted_by_check_full_in_both_directions() {
    let bad = Agent::start(&[("IOLAB_LST_CORRUPT_EVERY", "10")]);
    let good = Agent::start(&[]);
    let dir = scratch("corrupt");
    let (j, live) = (dir.join("r.json"), dir.join("live.jsonl"));
    // read: the bad server damages every 10th reply; the client counts.
    let (o, t) = run(&[
        "brw",
        "read",
        "size=4k",
        "check=full",
        "--from",
        &good.addr,
        "--to",
        &bad.addr,
        "--count",
        "100",
        "--json",
        j.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("[Errors] clients: 10 servers: 0"), "{t}");
    assert!(t.contains("failed the payload check"), "{t}");
    // The 10 failed RPCs count among the RPCs and as errors, but are no
    // latency samples: the latencies are the 90 that completed, in the
    // results and in the live figures alike.
    let run0 = &json(&j)["payload"][0]["runs"][0];
    assert_eq!(u(&run0["clients"]["rpcs"]), 100);
    assert_eq!(u(&run0["latency"]["count"]), 90, "{}", run0["latency"]);
    let rows: Vec<Value> = std::fs::read_to_string(&live)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r.get("rank").is_none())
        .collect();
    let sum = |f: &dyn Fn(&Value) -> u64| rows.iter().map(f).sum::<u64>();
    assert_eq!(sum(&|r| u(&r["ops"])), 100);
    assert_eq!(sum(&|r| u(&r["errors"])), 10);
    let timed = sum(&|r| r["latency"]["count"].as_u64().unwrap_or(0));
    assert_eq!(timed, 90, "latency samples in the live rows");
    // write: the bad client damages every 10th request; the server counts
    // and says so in its reply, so both sides see them.
    let (o, t) = run(&[
        "brw",
        "write",
        "size=4k",
        "check=simple",
        "--from",
        &bad.addr,
        "--to",
        &good.addr,
        "--count",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("[Errors] clients: 10 servers: 10"), "{t}");
    // Both sides saw the same 10 RPCs: they failed once each.
    assert!(t.contains("check: 10 RPCs failed the payload check"), "{t}");
    // check=none does not look.
    let (o, t) = run(&[
        "brw",
        "read",
        "size=4k",
        "check=none",
        "--from",
        &good.addr,
        "--to",
        &bad.addr,
        "--count",
        "50",
    ]);
    assert!(o.status.success(), "{t}");
}

/// `--distribute 1:2` with 2 clients and 3 servers: as LNet, the second
/// client talks to servers 3 and 1 (it wraps), so server 1 serves both
/// clients; each client spreads its RPCs over its two servers.
#[test]
fn distribute_gives_each_client_b_servers_wrapping_as_lnet() {
    let c: Vec<Agent> = (0..2).map(|_| Agent::start(&[])).collect();
    let s: Vec<Agent> = (0..3).map(|_| Agent::start(&[])).collect();
    let join = |v: &[Agent]| {
        v.iter()
            .map(|a| a.addr.clone())
            .collect::<Vec<_>>()
            .join(",")
    };
    let dir = scratch("distribute");
    let j = dir.join("d.json");
    let (o, t) = run(&[
        "ping",
        "--from",
        &join(&c),
        "--to",
        &join(&s),
        "--distribute",
        "1:2",
        "--count",
        "100",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{t}");
    let run0 = &json(&j)["payload"][0]["runs"][0];
    let served: Vec<(String, u64)> = run0["server_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["node"].as_str().unwrap().to_string(), u(&n["rpcs"])))
        .collect();
    let of = |a: &Agent| served.iter().find(|(n, _)| *n == a.addr).map(|x| x.1);
    assert_eq!(served.iter().map(|x| x.1).sum::<u64>(), 200, "{served:?}");
    assert_eq!(
        of(&s[0]),
        Some(100),
        "both clients use server 1: {served:?}"
    );
    assert_eq!(of(&s[1]), Some(50), "{served:?}");
    assert_eq!(of(&s[2]), Some(50), "{served:?}");
}

#[test]
fn garbage_on_the_agent_port_does_not_hurt_it() {
    use std::io::Write;
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let (o, t) = run(&["ping", "--from", &a.addr, "--to", &b.addr, "--count", "10"]);
    assert!(o.status.success(), "agents up: {t}");
    for junk in [
        &b"GET / HTTP/1.0\r\n\r\n"[..],
        &[0xffu8; 4096][..],
        b"IOLB\x01\x00\x00\x00\xff\xff\xff\x7f",
    ] {
        let mut s = std::net::TcpStream::connect(&b.addr).unwrap();
        let _ = s.write_all(junk);
    }
    let (o, t) = run(&[
        "ping",
        "--from",
        &a.addr,
        "--to",
        &b.addr,
        "--count",
        "100",
        "--concurrency",
        "2",
    ]);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("RPCs: clients 100 servers 100"), "{t}");
}

/// Strangers that connect and say nothing, and strangers that trickle
/// a handshake a byte a second, on both agents' ports: the agents hold
/// them without a thread each, a real run goes on meanwhile and counts
/// exactly, and every stranger is dropped at the handshake's bound.
#[test]
fn strangers_that_trickle_or_say_nothing_cost_an_agent_no_thread_and_stop_no_run() {
    use common::strangers::{sockets_of, threads_of, wait_closed, wait_sockets, Stranger};
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let (o, t) = run(&["ping", "--from", &a.addr, "--to", &b.addr, "--count", "10"]);
    assert!(o.status.success(), "agents up: {t}");
    let mut strangers = Vec::new();
    for addr in [&a.addr, &b.addr] {
        for _ in 0..150 {
            strangers.push(Stranger::silent(addr));
        }
        for _ in 0..10 {
            strangers.push(Stranger::trickle(addr, Duration::from_secs(1)));
        }
    }
    assert!(
        wait_sockets(b.child.id(), 160, Duration::from_secs(30)),
        "the agent took the strangers' connections ({} sockets)",
        sockets_of(b.child.id())
    );
    let threads = threads_of(b.child.id());
    assert!(
        threads < 16,
        "160 pending strangers hold {threads} threads of the agent"
    );
    let (o, t) = run(&[
        "brw",
        "write",
        "size=8k",
        "check=full",
        "--from",
        &a.addr,
        "--to",
        &b.addr,
        "--concurrency",
        "4",
        "--count",
        "300",
    ]);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("RPCs: clients 300 servers 300"), "{t}");
    let open = wait_closed(&strangers, Duration::from_secs(90));
    assert_eq!(
        open, 0,
        "strangers still connected past the handshake's bound"
    );
}

#[test]
fn an_agent_started_for_another_console_refuses_this_one() {
    // As a console starts its agents: `--session`, the key (none: an
    // empty line) and the token on standard input, kept open.
    let port = common::e2e::free_ports(1);
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(BIN)
        .args(["lst", "agent", "--session", "--listen", &addr])
        .env_remove("IOLAB_KEY_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"\nsomeone-else-s-token-0123456789\n").unwrap();
    let a = Agent { child, addr };
    let (o, t) = run(&["ping", "--from", &a.addr, "--to", &a.addr, "--count", "10"]);
    drop(stdin);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("started by another console"), "{t}");
}

/// IOLAB_LST_TOKEN in the environment of an agent started by hand made
/// it refuse every console as "started by another console" (and exit
/// silently after 2 minutes): consoles hand their agents the token on
/// standard input, so no variable gives one any more.
#[test]
fn a_stray_token_variable_does_not_lock_a_hand_started_agent() {
    let (a, b) = (
        Agent::start(&[("IOLAB_LST_TOKEN", "someone-else")]),
        Agent::start(&[("IOLAB_LST_TOKEN", "someone-else")]),
    );
    let (o, t) = run(&["ping", "--from", &a.addr, "--to", &b.addr, "--count", "10"]);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("RPCs: clients 10 servers 10"), "{t}");
}

/// A node given twice in --from or --to (written alike, or two
/// spellings of one address and port) is refused, exit 2, before any
/// agent is started or contacted: it was merged into one client job
/// (`ping clients 2` with the RPCs of one) and an idle server averaged
/// in, or two spellings refused each other as "busy".
#[test]
fn a_node_given_twice_in_a_group_is_refused_before_anything_starts() {
    let p = common::e2e::free_ports(3);
    let (q, r) = (p + 1, p + 2);
    let dir = scratch("twice");
    let j = dir.join("twice.json");
    let twice = format!("a@127.0.0.1:{p},a@127.0.0.1:{p}");
    let spelled = format!("127.0.0.1:{p},localhost:{p}");
    let one = format!("127.0.0.1:{q}");
    let three = format!("c@127.0.0.1:{r},127.0.0.1:{q},localhost:{q}");
    for (from, to) in [
        (twice.as_str(), one.as_str()),
        (spelled.as_str(), one.as_str()),
        (one.as_str(), spelled.as_str()),
        (one.as_str(), three.as_str()),
    ] {
        let started = Instant::now();
        let (o, t) = run(&[
            "ping",
            "--from",
            from,
            "--to",
            to,
            "--rsh",
            "exec:false",
            "--count",
            "5",
            "--json",
            j.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{from} -> {to}: {t}");
        assert!(
            t.contains("same agent") && t.contains("a host appears once in a group"),
            "{t}"
        );
        assert!(!j.exists(), "a refused run wrote its JSON");
        assert!(started.elapsed() < Duration::from_secs(10), "{t}");
    }
}

/// One agent written two ways, once in each group, is the one agent
/// doing both (as when written alike), not two consoles' worth of
/// connections to it that it refused as busy.
#[test]
fn one_agent_spelled_two_ways_across_the_groups_is_one_agent() {
    let a = Agent::start(&[]);
    let port = a.addr.rsplit_once(':').unwrap().1;
    let other = format!("localhost:{port}");
    let (o, t) = run(&["ping", "--from", &a.addr, "--to", &other, "--count", "10"]);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("RPCs: clients 10 servers 10"), "{t}");
}

/// A relay from the console to `to` that flips one bit of the tag of the
/// first authenticated frame the console sends (the first after the
/// handshake), passing everything else as it is.
fn tampering_relay(to: String) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let (mut inbound, _) = l.accept().unwrap();
        // The agent may not listen yet (the console retries, so must
        // its stand-in): 10 s at most.
        let mut out = (0..500)
            .find_map(|_| {
                let c = std::net::TcpStream::connect(&to).ok();
                if c.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                c
            })
            .expect("the agent never listened");
        let (mut back_in, mut back_out) = (out.try_clone().unwrap(), inbound.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut back_in, &mut back_out);
            let _ = back_out.shutdown(std::net::Shutdown::Both);
        });
        let mut flipped = false;
        loop {
            let mut h = [0u8; 32];
            if inbound.read_exact(&mut h).is_err() {
                break;
            }
            let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
            let tagged = h[6] & 2 != 0;
            let mut rest = vec![0u8; len + if tagged { 32 } else { 0 }];
            if inbound.read_exact(&mut rest).is_err() {
                break;
            }
            if tagged && !flipped {
                *rest.last_mut().unwrap() ^= 1;
                flipped = true;
            }
            if out.write_all(&h).is_err() || out.write_all(&rest).is_err() {
                break;
            }
        }
        let _ = out.shutdown(std::net::Shutdown::Both);
    });
    addr
}

/// A console frame changed on the way to an agent was reported as "the
/// agent closed its connection: it died or was killed", and the agent
/// said nothing: now the agent logs the refused frame on standard error
/// and tells the console, which names the authentication tag.
#[test]
fn a_forged_console_frame_is_named_by_the_console_and_logged_by_the_agent() {
    let dir = scratch("forged");
    let key = dir.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let k = key.to_str().unwrap();
    let log = dir.join("agent.err");
    let addr = format!("127.0.0.1:{}", common::e2e::free_ports(1));
    let child = Command::new(BIN)
        .args(["lst", "agent", "--listen", &addr, "--key", k])
        .env_remove("IOLAB_KEY_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = Agent { child, addr };
    let server = Agent::start_with(&[], &["--key", k]);
    // The console reaches the client agent through the relay; the
    // client's own data connections go straight to the server.
    let relay = tampering_relay(client.addr.clone());
    let (o, t) = run(&[
        "ping",
        "--from",
        &relay,
        "--to",
        &server.addr,
        "--count",
        "10",
        "--key",
        k,
        "--connect-timeout",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("the agent refused a frame") && t.contains("authentication tag"),
        "{t}"
    );
    assert!(!t.contains("died or was killed"), "{t}");
    let until = Instant::now() + Duration::from_secs(10);
    let mut said = String::new();
    while Instant::now() < until && !said.contains("authentication tag") {
        std::thread::sleep(Duration::from_millis(50));
        said = std::fs::read_to_string(&log).unwrap_or_default();
    }
    assert!(
        said.contains("refused a frame from the console") && said.contains("authentication tag"),
        "agent's stderr: {said:?}"
    );
}

/// A key file others may write but not read (mode 602) was refused as
/// "other users may read it": the refusal says what they may do.
#[test]
fn a_key_file_others_may_write_is_refused_saying_write() {
    let dir = scratch("key602");
    let key = dir.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o602)).unwrap();
    let o = iolab(&[
        "lst",
        "agent",
        "--listen",
        &format!("127.0.0.1:{}", common::e2e::free_ports(1)),
        "--key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("other users may write it (mode 602)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_agent_killed_mid_run_stops_the_console_with_a_clear_message() {
    let client = Agent::start(&[]);
    let mut server = Agent::start(&[]);
    let mut console = Command::new(BIN)
        .args([
            "lst",
            "run",
            "ping",
            "--from",
            &client.addr,
            "--to",
            &server.addr,
            "--duration",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server once the run is under way (the console has
    // connected: the server then has an established connection).
    std::thread::sleep(Duration::from_millis(1500));
    server.child.kill().unwrap();
    let until = Instant::now() + Duration::from_secs(55);
    while console.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    if console.try_wait().unwrap().is_none() {
        let _ = console.kill();
        panic!("the console did not stop after its server agent died");
    }
    let o = console.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&server.addr) || err.contains("died"),
        "names the node: {err}"
    );
}

/// A one-shot run whose server agent dies mid-run keeps the point's
/// counts up to the failure: printed, and written to --json and --csv,
/// the point marked failed; exit 1.
#[test]
fn a_run_whose_agent_dies_keeps_and_writes_the_counts_so_far() {
    let client = Agent::start(&[]);
    let mut server = Agent::start(&[]);
    let dir = scratch("died");
    let (j, c) = (dir.join("died.json"), dir.join("died.csv"));
    let console = Command::new(BIN)
        .args([
            "lst",
            "run",
            "ping",
            "--from",
            &client.addr,
            "--to",
            &server.addr,
            "--duration",
            "60",
            "--json",
            j.to_str().unwrap(),
            "--csv",
            c.to_str().unwrap(),
        ])
        .env_remove("IOLAB_KEY_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    server.child.kill().unwrap();
    let o = console.wait_with_output().unwrap();
    let t = format!("stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(stdout(&o).contains("[Failed] node "), "{t}");
    assert!(stdout(&o).contains("[LNet Rates of clients]"), "{t}");
    let doc = json(&j);
    let points = doc["payload"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{doc}");
    assert!(points[0]["failed"].as_str().is_some(), "{doc}");
    let rpcs = u(&points[0]["runs"][0]["clients"]["rpcs"]);
    assert!(rpcs > 0, "the RPCs done before the failure: {doc}");
    let csv = std::fs::read_to_string(&c).unwrap();
    assert_eq!(csv.lines().count(), 3, "header, clients, servers: {csv}");
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("1,1,1,clients,1,{rpcs},")),
        "{csv}"
    );
}

#[test]
fn malformed_commands_exit_2_and_start_nothing() {
    let dir = scratch("usage");
    let marker = dir.join("started");
    let rsh = format!("touch {}", marker.display());
    let cases: &[&[&str]] = &[
        &["--from", "h1", "--to", "h2"],
        &["pong", "--from", "h1", "--to", "h2"],
        &["brw", "size=4k", "--from", "h1", "--to", "h2"],
        &["brw", "read", "size=1g", "--from", "h1", "--to", "h2"],
        &["brw", "read", "check=most", "--from", "h1", "--to", "h2"],
        &["ping", "--from", "h1", "--to", "h2", "--concurrency", "0"],
        &["ping", "--from", "h1", "--to", "h2", "--concurrency", "1,x"],
        &["ping", "--from", "h1", "--to", "h2", "--clients", "3"],
        &["ping", "--from", "h1", "--to", "h2", "--distribute", "3"],
        // LNet refuses more servers per client than the group has.
        &[
            "ping",
            "--from",
            "h1",
            "--to",
            "h2,h3",
            "--distribute",
            "1:3",
        ],
        &["ping", "--from", "h1", "--to", "h2", "--duration", "0"],
        &["ping", "--from", "h1", "--to", "h2", "--count", "0"],
        &["ping", "--from", "h1:0", "--to", "h2"],
        &[
            "ping",
            "--from",
            "h1",
            "--to",
            "h2",
            "--duration",
            "1",
            "--count",
            "5",
        ],
        &["ping", "--to", "h2"],
        // Port 0 started agents nobody could reach; a repeated brw
        // parameter's first value was dropped.
        &["ping", "--from", "h1", "--to", "h2", "--port", "0"],
        &[
            "brw", "write", "size=4k", "size=8k", "--from", "h1", "--to", "h2",
        ],
        &["brw", "read", "write", "--from", "h1", "--to", "h2"],
    ];
    for c in cases {
        let mut w: Vec<&str> = c.to_vec();
        w.extend(["--rsh", &rsh]);
        let (o, t) = run(&w);
        assert_eq!(o.status.code(), Some(2), "{c:?}: {t}");
        assert!(!stderr(&o).trim().is_empty(), "{c:?} says why");
        assert!(!marker.exists(), "{c:?} started an agent");
    }
    // An agent on port 0 would listen where no console is told.
    let o = iolab(&["lst", "agent", "--listen", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("port 0"), "{}", stderr(&o));
}

#[test]
fn fake_cluster_of_namespaces_sweeps_clients_and_concurrency() {
    let cluster = match iolab_testkit::FakeCluster::new(4) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("fake_cluster", &e),
    };
    let node = |i: usize| {
        let (ns, addr) = cluster.host(i);
        format!("{ns}@{addr}")
    };
    let dir = scratch("cluster");
    let j = dir.join("sweep.json");
    let from = format!("{},{}", node(1), node(2));
    let (console_ns, _) = cluster.host(0);
    // The console runs on host 0: the root namespace cannot reach the
    // subnet (the guard route), as a machine outside the cluster.
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &console_ns,
            BIN,
            "lst",
            "run",
            "brw",
            "write",
            "size=4k",
            "check=full",
        ])
        .args(["--from", &from, "--to", &node(3), "--rsh", "ip netns exec"])
        .args([
            "--clients",
            "1,2",
            "--concurrency",
            "1,2",
            "--count",
            "50",
            "--repeat",
            "2",
        ])
        .args(["--json", j.to_str().unwrap()])
        .output()
        .unwrap();
    let t = format!("{}\n{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{t}");
    assert!(t.contains("# sweep"), "{t}");
    let points = json(&j)["payload"].as_array().unwrap().clone();
    let shape: Vec<(u64, u64)> = points
        .iter()
        .map(|p| (u(&p["clients"]), u(&p["concurrency"])))
        .collect();
    assert_eq!(shape, [(1, 1), (1, 2), (2, 1), (2, 2)]);
    for p in &points {
        let k = u(&p["clients"]);
        assert_eq!(p["runs"].as_array().unwrap().len(), 2);
        assert_eq!(
            u(&p["mean"]["clients"]["rpcs"]),
            2 * 50 * k,
            "summed over repeats"
        );
        assert_eq!(u(&p["mean"]["servers"]["rx_bytes"]), 2 * 50 * k * 4096);
        assert_eq!(u(&p["mean"]["clients"]["errors"]), 0);
    }
}

#[test]
fn a_shared_key_admits_only_its_holders_and_groups_come_from_files() {
    let dir = scratch("key");
    let key = dir.join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let k = key.to_str().unwrap();
    let (a, b) = (
        Agent::start_with(&[], &["--key", k]),
        Agent::start_with(&[], &["--key", k]),
    );
    let group = dir.join("servers");
    std::fs::write(&group, format!("# the server group\n{}\n", b.addr)).unwrap();
    let to = format!("@{}", group.display());
    let (o, t) = run(&[
        "ping", "--from", &a.addr, "--to", &to, "--count", "20", "--key", k,
    ]);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("RPCs: clients 20 servers 20"), "{t}");
    let (o, t) = run(&["ping", "--from", &a.addr, "--to", &to, "--count", "20"]);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("key"), "says the key is the problem: {t}");
}

#[test]
fn ctrl_c_stops_the_console_and_the_agents_jobs() {
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let mut console = Command::new(BIN)
        .args([
            "lst",
            "run",
            "ping",
            "--from",
            &a.addr,
            "--to",
            &b.addr,
            "--duration",
            "300",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(console.id() as i32, libc::SIGINT) };
    let until = Instant::now() + Duration::from_secs(60);
    while console.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    if console.try_wait().unwrap().is_none() {
        let _ = console.kill();
        panic!("the console did not stop on SIGINT");
    }
    let o = console.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The client agent saw its console go and ended the job and the
    // session (else it would refuse a new console as busy for the rest
    // of the 300 s): a new run is served. The session ends a moment
    // after the console's exit, so a refusal is retried a few times.
    let mut last = String::new();
    for _ in 0..50 {
        let (o, t) = run(&["ping", "--from", &a.addr, "--to", &b.addr, "--count", "10"]);
        if o.status.success() {
            return;
        }
        last = t;
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the agents did not serve a new console after Ctrl-C: {last}");
}

#[test]
fn an_unreachable_or_garbled_agent_is_named_and_the_run_stops() {
    use std::io::Write;
    let good = Agent::start(&[]);
    // Nothing listens on a port we bound and released.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (o, t) = run(&[
        "ping",
        "--from",
        &good.addr,
        "--to",
        &closed,
        "--count",
        "5",
        "--connect-timeout",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!("node {closed}: cannot reach the agent")),
        "{t}"
    );
    // An agent the console starts that cannot run: its exit and its
    // last words are shown.
    let (o, t) = run(&[
        "ping",
        "--from",
        "hostx",
        "--to",
        "hosty",
        "--count",
        "5",
        "--rsh",
        "sh -c 'echo no such host >&2; exit 255'",
    ]);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("node hostx: the agent started there exited") && t.contains("no such host"),
        "{t}"
    );
    // A "peer" that answers the handshake with garbage.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let garbled = l.local_addr().unwrap().to_string();
    let liar = std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let _ = s.write_all(&[0x42u8; 64]);
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let (o, t) = run(&[
        "ping", "--from", &good.addr, "--to", &garbled, "--count", "5",
    ]);
    liar.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!("node {garbled}:")) && t.contains("not an iolab stream"),
        "{t}"
    );
}

/// `--stats` on the console: the run's JSON carries the samples; a bad
/// configuration is exit 2 before any agent is contacted.
#[test]
fn stats_option_puts_samples_in_the_json() {
    let a = Agent::start(&[]);
    let dir = scratch("stats");
    let j = dir.join("ping.json");
    let (o, t) = run(&[
        "ping",
        "--from",
        &a.addr,
        "--to",
        &a.addr,
        "--count",
        "50",
        "--stats",
        "local,1s",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{t}");
    let doc = json(&j);
    let tables = doc["stats"]["tables"]
        .as_array()
        .expect("stats in the JSON");
    assert!(tables.iter().any(|t| t["stat"] == "cpu"), "{tables:?}");
    let (o, t) = run(&[
        "ping",
        "--from",
        &a.addr,
        "--to",
        &a.addr,
        "--stats",
        "local,-1s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--stats"), "{t}");
}

/// A sweep says its planned length before it starts (points x repeats x
/// duration) and, off a terminal, a line per point with the time left (a
/// 63-point sweep used to run 10.5 minutes without a word).
#[test]
fn a_sweep_says_its_length_first_and_a_line_per_point() {
    let (a, b) = (Agent::start(&[]), Agent::start(&[]));
    let (o, text) = run(&[
        "ping",
        "--from",
        &a.addr,
        "--to",
        &b.addr,
        "--concurrency",
        "1,2",
        "--repeat",
        "2",
        "--duration",
        "0.5",
    ]);
    assert!(o.status.success(), "{text}");
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].contains("2 points x 2 repeat(s) = 4 runs of 0.5 s; about 2 s"),
        "{text}"
    );
    assert!(
        lines[1].contains("1/2 done (clients 1, concurrency 1); about 1 s left"),
        "{text}"
    );
    assert!(
        lines[2].contains("2/2 done (clients 1, concurrency 2); about 0 s left"),
        "{text}"
    );
    assert!(
        !stdout(&o).contains("done ("),
        "progress stays off stdout: {text}"
    );
}
