//! `iolab timeserver` and `iolab gettime`, the real binaries over loopback
//! TCP: the global time read from a server on this host is this host's
//! clock, `-add` shifts it, `-waitfortime` returns no earlier than the
//! time asked, bad input exits 2, an unreachable server exits 1 naming
//! it, and the server ends on SIGTERM.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A running timeserver on a free loopback port, stopped on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        Server::with(&[])
    }

    /// A timeserver given `extra` options too (`-key FILE`).
    fn with(extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["timeserver", "-port", "0", "-bind", "127.0.0.1"])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The first line names the address it serves on.
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .rsplit(':')
            .next()
            .and_then(|t| t.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Server { child, port }
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    fn term(mut self) -> Option<i32> {
        // SAFETY: kill has no memory effects; the pid is our child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gettime(port: u16, extra: &[&str]) -> std::process::Output {
    let p = port.to_string();
    let mut args = vec![
        "gettime",
        "-timeserver",
        "127.0.0.1",
        "-port",
        &p,
        "-bounce",
        "5",
    ];
    args.extend_from_slice(extra);
    common::iolab(&args)
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn number(o: &std::process::Output) -> i64 {
    let s = common::stdout(o);
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?} ({})", common::stderr(o)))
}

#[test]
fn global_time_from_this_host_is_this_hosts_clock_and_add_shifts_it() {
    let srv = Server::start();
    let before = now_s();
    let o = gettime(srv.port, &[]);
    let after = now_s();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let g = number(&o);
    assert!((before..=after).contains(&g), "{before} <= {g} <= {after}");
    let o = gettime(srv.port, &["-add", "20"]);
    let g20 = number(&o);
    assert!((before + 20..=now_s() + 20).contains(&g20), "{g20}");
    let v = gettime(srv.port, &["-verbose"]);
    assert!(
        common::stdout(&v).contains("Global Time now is"),
        "{}",
        common::stdout(&v)
    );
    assert_eq!(
        srv.term(),
        Some(130),
        "SIGTERM ends the server as an interruption"
    );
}

#[test]
fn waitfortime_returns_no_earlier_than_the_time_asked() {
    let srv = Server::start();
    let target = now_s() + 2;
    let t = target.to_string();
    let o = gettime(srv.port, &["-waitfortime", &t]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // Causal, not a speed check: the command may not end before `target`.
    assert!(now_s() >= target);
    let printed: Vec<i64> = common::stdout(&o)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(printed.len(), 2, "the time before and after the wait");
    assert!(printed[1] >= target, "{printed:?}");
    let past = gettime(srv.port, &["-waitfortime", "1000"]);
    assert!(past.status.success());
    assert!(common::stderr(&past).contains("already passed"));
}

#[test]
fn bad_input_is_exit_2_naming_the_option() {
    for (line, opt) in [
        ("gettime", "-timeserver"),
        ("gettime -timeserver h -bounce 0", "-bounce"),
        ("gettime -timeserver h -port 70000", "-port"),
        ("gettime -timeserver h -frobnicate", "frobnicate"),
        ("timeserver -port x", "-port"),
    ] {
        let words: Vec<&str> = line.split(' ').collect();
        let o = common::iolab(&words);
        assert_eq!(o.status.code(), Some(2), "{line}");
        assert!(
            common::stderr(&o).contains(opt),
            "{line}: {}",
            common::stderr(&o)
        );
    }
}

#[test]
fn an_unreachable_server_is_exit_1_naming_it() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = gettime(port, &["-timeout", "0.5"]);
    assert_eq!(o.status.code(), Some(1));
    let e = common::stderr(&o);
    assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    // It points to what should listen there, not to a copy's other side.
    assert!(e.contains("iolab timeserver"), "{e}");
    assert!(!e.contains("destination"), "{e}");
}

/// A port in use is the host's state, not bad input: exit 1 (as `lst
/// agent`), naming the port, without XDD's "base port" (timeserver has
/// one port). It was exit 2, "choose another base port".
#[test]
fn a_port_in_use_is_refused() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = held.local_addr().unwrap().port().to_string();
    let o = common::iolab(&["timeserver", "-bind", "127.0.0.1", "-port", &p]);
    let e = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains(&p) && e.contains("in use"), "{e}");
    assert!(!e.contains("base port"), "{e}");
}

/// `iolab xdd` on the null target, in a scratch directory.
fn xdd(dir: &std::path::Path, line: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(line.split_whitespace())
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

#[test]
fn xdd_starttime_starts_no_earlier_than_the_global_time_and_records_the_clock() {
    let srv = Server::start();
    let s = common::Scratch::new("xdd-starttime");
    let t = now_s() + 2;
    let line = format!(
        "-op write -target null -reqsize 4 -numreqs 8 -timeserver host 127.0.0.1 port {} bounce 5 -starttime {t} --json run.json",
        srv.port
    );
    let o = xdd(&s.root, &line);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(now_s() >= t, "the run ended before its start time");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.path("run.json")).unwrap()).unwrap();
    let clock = &doc["payload"]["global_clock"];
    let rtt = clock["rtt_ns"].as_u64().unwrap();
    let offset = clock["offset_ns"].as_i64().unwrap();
    assert!(offset.unsigned_abs() <= rtt / 2 + 1, "same host: {clock}");
    // The run started (envelope's start: right after the wait) no earlier
    // than the global start time, read on the global clock.
    let started = doc["started_unix_ns"].as_u64().unwrap() as i64;
    assert!(
        started + offset >= t * 1_000_000_000,
        "{started} + {offset} < {t} s"
    );
    // A start time in the past runs at once, with a note.
    let o = xdd(
        &s.root,
        &format!("-op write -target null -reqsize 4 -numreqs 8 -timeserver host 127.0.0.1 port {} -starttime 1000", srv.port),
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("already passed"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn xdd_clock_options_are_checked_and_an_unreachable_server_touches_nothing() {
    let s = common::Scratch::new("xdd-clock-bad");
    for (line, opt) in [
        ("-op write -target f -numreqs 1 -starttime 5", "starttime"),
        (
            "-op write -target f -numreqs 1 -timeserver port 2000",
            "timeserver",
        ),
        (
            "-op write -target f -numreqs 1 -timeserver bounce 0 host h",
            "timeserver",
        ),
        ("-op write -target f -numreqs 1 -timeserver", "timeserver"),
        // A key file that is not there is bad input, before anything.
        (
            "-op write -target f -numreqs 1 -timeserver host h key no-such.key",
            "no-such.key",
        ),
    ] {
        let o = xdd(&s.root, line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", common::stderr(&o));
        assert!(
            common::stderr(&o).contains(opt),
            "{line}: {}",
            common::stderr(&o)
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let line = format!("-op write -target f -numreqs 1 -timeserver host 127.0.0.1 port {port}");
    let o = xdd(&s.root, &line);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains(&format!("127.0.0.1:{port}")));
    assert!(
        common::tree(&s.root).is_empty(),
        "nothing created: {:?}",
        common::tree(&s.root)
    );
}

/// Across fake hosts (network namespaces on a private subnet, see
/// iolab_testkit): timeserver on host 0, gettime on host 1, and an xdd run
/// on host 2 that starts at a global time read from host 0.
#[test]
fn clock_across_fake_hosts() {
    let c = match iolab_testkit::FakeCluster::new(3) {
        Ok(c) => c,
        Err(why) => return common::skip_or_fail("clock_across_fake_hosts", &why),
    };
    let (ns0, addr0) = c.host(0);
    let iolab = env!("CARGO_BIN_EXE_iolab");
    let mut child = Command::new("ip")
        .args(["netns", "exec", &ns0, iolab, "timeserver", "-port", "2000"])
        .args(["-bind", &addr0.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _server = Server {
        port: 2000,
        child: {
            // It listens once it has said so.
            let mut line = String::new();
            BufReader::new(child.stderr.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert!(line.contains("serving"), "{line}");
            child
        },
    };
    let host = addr0.to_string();
    let before = now_s();
    let o = c
        .run(
            1,
            &[
                iolab,
                "gettime",
                "-timeserver",
                &host,
                "-port",
                "2000",
                "-bounce",
                "5",
            ],
        )
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let g = number(&o);
    assert!(
        (before..=now_s()).contains(&g),
        "one machine, one clock: {g}"
    );
    let s = common::Scratch::new("clock-fake-hosts");
    let json = s.path("r.json");
    let t = now_s() + 2;
    let (t_s, json_s) = (t.to_string(), json.to_str().unwrap().to_string());
    let o = c
        .run(
            2,
            &[
                iolab,
                "xdd",
                "-op",
                "write",
                "-target",
                "null",
                "-reqsize",
                "4",
                "-numreqs",
                "8",
                "-timeserver",
                "host",
                &host,
                "port",
                "2000",
                "bounce",
                "5",
                "-starttime",
                &t_s,
                "--json",
                &json_s,
            ],
        )
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let started = doc["started_unix_ns"].as_u64().unwrap() as i64;
    let offset = doc["payload"]["global_clock"]["offset_ns"]
        .as_i64()
        .unwrap();
    assert!(
        started + offset >= t * 1_000_000_000,
        "started before -starttime"
    );
}

/// A clock server that answers with well-formed frames, the first
/// `fast` answers of each connection at once and every later one a byte
/// every 250 ms (10 s an answer), on a free loopback port.
fn trickling_server(fast: u32) -> u16 {
    use iolab_net::frame::{Header, Kind};
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let mut req = [0u8; 33];
                for seq in 0u64.. {
                    if c.read_exact(&mut req).is_err() {
                        return;
                    }
                    let offset = u64::from_le_bytes(req[16..24].try_into().unwrap());
                    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
                    let payload = (now.as_nanos() as u64).to_le_bytes();
                    let h = Header::new(Kind::Control, 0, offset, seq, &payload);
                    let frame = [h.encode().as_slice(), &payload].concat();
                    if seq < u64::from(fast) {
                        let _ = c.write_all(&frame);
                        continue;
                    }
                    for b in frame {
                        if c.write_all(&[b]).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(250));
                    }
                }
            });
        }
    });
    port
}

/// `gettime -timeout 2` against a server that trickles its answers (a
/// byte now and then, each byte inside the read timeout) gives up on an
/// exchange after 2 s as a whole, and the exchanges together take no
/// more than 2 s: exit 1 naming the wait when no answer came whole, the
/// estimate from the exchanges made when some did. Before, each byte
/// restarted the wait: 10 s an exchange here, 39 s with a byte a second,
/// for every one of the bounces (65 minutes with the default 100).
#[test]
fn a_server_that_trickles_its_answers_is_given_up_within_the_timeout() {
    let port = trickling_server(0).to_string();
    let t0 = Instant::now();
    let o = common::iolab(&[
        "gettime",
        "-timeserver",
        "127.0.0.1",
        "-port",
        &port,
        "-bounce",
        "3",
        "-timeout",
        "2",
    ]);
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("timed out waiting for the clock's answer"),
        "{}",
        common::stderr(&o)
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
    let port = trickling_server(1).to_string();
    let t0 = Instant::now();
    let o = common::iolab(&[
        "gettime",
        "-timeserver",
        "127.0.0.1",
        "-port",
        &port,
        "-bounce",
        "3",
        "-timeout",
        "2",
        "-verbose",
    ]);
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(", 1 exchanges"),
        "{}",
        common::stdout(&o)
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
}

/// A clock server on a free loopback port that answers every request
/// with `reply` ns since the epoch (0: a clock at 1970), echoing the
/// request's number plus `skew` (0: a well-formed answer): framed, its
/// CRC right, holding no key. It reads any frame (a keyed client's
/// hello too) and answers it so, as a forger would.
fn fixed_server(reply: u64, skew: u64) -> u16 {
    use iolab_net::{conn, frame::Kind, Cancel};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || loop {
        let Ok((mut c, _)) = conn::accept(&l, Duration::from_secs(600), Cancel::process()) else {
            return;
        };
        std::thread::spawn(move || {
            let cancel = Cancel::process();
            let mut buf = [0u8; 4096];
            while let Ok(h) = c.recv_header(cancel) {
                if c.recv_payload(&h, &mut buf, cancel).is_err() {
                    return;
                }
                let answer = reply.to_le_bytes();
                if c.send(Kind::Control, 0, h.offset + skew, &answer, cancel)
                    .is_err()
                {
                    return;
                }
            }
        });
    });
    port
}

/// A server whose clock reads 1970 (or answers another request than
/// the one asked) is no clock: gettime refuses it, exit 1 naming why,
/// prints no time and waits for none; `xdd -starttime` refuses it before
/// its target is made. Before, gettime printed "Global Time now is 0"
/// (exit 0) and `-waitfortime` / `-starttime` waited, silent, for 57
/// years.
#[test]
fn a_server_whose_clock_is_implausible_is_refused() {
    let zero = fixed_server(0, 0).to_string();
    let soon = (now_s() + 60).to_string();
    for extra in [&["-verbose"][..], &["-waitfortime", &soon]] {
        let mut args = vec!["gettime", "-timeserver", "127.0.0.1", "-port", &zero];
        args.extend_from_slice(extra);
        let o = common::iolab(&args);
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {e}");
        assert!(e.contains("more than the 86400 s (a day)"), "{e}");
        assert!(common::stdout(&o).is_empty(), "{}", common::stdout(&o));
    }
    let echo = fixed_server(now_s() as u64 * 1_000_000_000, 5).to_string();
    let o = common::iolab(&["gettime", "-timeserver", "127.0.0.1", "-port", &echo]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("not request 0"),
        "{}",
        common::stderr(&o)
    );
    let s = common::Scratch::new("xdd-starttime-zero");
    let line = format!(
        "-op write -target f -numreqs 1 -timeserver host 127.0.0.1 port {zero} -starttime {soon}"
    );
    let o = xdd(&s.root, &line);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("more than the 86400 s"));
    assert!(
        common::tree(&s.root).is_empty(),
        "{:?}",
        common::tree(&s.root)
    );
}

/// A wait says how long it is, once, on standard error; a time more
/// than a day away is bad input (exit 2), refused before any wait and
/// before xdd makes its target. Before, both waited without a word,
/// for as long as the time said.
#[test]
fn a_wait_says_how_long_and_one_beyond_a_day_is_refused() {
    let srv = Server::start();
    let t = (now_s() + 2).to_string();
    let o = gettime(srv.port, &["-waitfortime", &t]);
    let e = common::stderr(&o);
    assert!(o.status.success(), "{e}");
    let said = format!("until the global clock reads {t}");
    assert_eq!(e.matches(&said).count(), 1, "{e}");
    assert!(e.contains("gettime: waiting "), "{e}");
    let far = (now_s() + 2 * 86_400).to_string();
    let o = gettime(srv.port, &["-waitfortime", &far]);
    let e = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("-waitfortime") && e.contains("more than the 86400 s"),
        "{e}"
    );
    assert!(common::stdout(&o).is_empty(), "{}", common::stdout(&o));
    let s = common::Scratch::new("xdd-starttime-far");
    let line = |at: &str| {
        format!(
            "-op write -target f -numreqs 1 -timeserver host 127.0.0.1 port {} bounce 5 -starttime {at}",
            srv.port
        )
    };
    let o = xdd(&s.root, &line(&far));
    let e = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("starttime") && e.contains("more than the 86400 s"),
        "{e}"
    );
    assert!(
        common::tree(&s.root).is_empty(),
        "{:?}",
        common::tree(&s.root)
    );
    let t = (now_s() + 2).to_string();
    let o = xdd(&s.root, &line(&t));
    let e = common::stderr(&o);
    assert!(o.status.success(), "{e}");
    let said = format!("until the global clock reads {t} (-starttime)");
    assert_eq!(e.matches(&said).count(), 1, "{e}");
}

/// A key file of `bytes` under `dir`, owner-only as every key file must be.
fn key_file(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p.to_string_lossy().into_owned()
}

/// With a key, only the holder of the key sets the global time: a real
/// keyed timeserver is read by gettime and xdd holding the same key; a
/// forger (framed, CRC right, request echoed, a time 23 h ahead, no key)
/// and a real server with another key are refused, exit 1, naming
/// forgery, with no time printed and nothing created. A client without
/// the key is told the server needs one. Without any key the time is
/// read as XDD reads it, with a one-line warning that it is
/// unauthenticated. Before, there was no key at all: the forger moved
/// the global clock by 23 h, exit 0, without a word.
#[test]
fn with_a_key_only_the_holder_of_the_key_sets_the_global_time() {
    let keys = common::Scratch::new("clock-keys");
    let key = key_file(
        &keys.root,
        "clock.key",
        b"0123456789abcdef0123456789abcdef\n",
    );
    let other = key_file(
        &keys.root,
        "other.key",
        b"fedcba9876543210fedcba9876543210\n",
    );
    let srv = Server::with(&["-key", &key]);
    let real = srv.port.to_string();
    let o = gettime(srv.port, &["-key", &key]);
    let e = common::stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!((number(&o) - now_s()).abs() <= 2, "{}", common::stdout(&o));
    assert!(!e.contains("unauthenticated"), "{e}");
    let forger = fixed_server((now_s() as u64 + 23 * 3600) * 1_000_000_000, 0);
    for (port, k) in [(forger, &key), (srv.port, &other)] {
        let o = gettime(port, &["-key", k, "-timeout", "3"]);
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{port}: {e}");
        assert!(e.contains("forgery"), "{port}: {e}");
        assert!(common::stdout(&o).is_empty(), "{}", common::stdout(&o));
    }
    let o = gettime(srv.port, &["-timeout", "3"]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("requires a key"),
        "{}",
        common::stderr(&o)
    );
    // xdd's client: the same rule, checked before any target is made.
    let s = common::Scratch::new("xdd-clock-key");
    let forged = format!(
        "-op write -target f -numreqs 1 -timeserver host 127.0.0.1 port {forger} key {key}"
    );
    let o = xdd(&s.root, &forged);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("forgery"),
        "{}",
        common::stderr(&o)
    );
    assert!(
        common::tree(&s.root).is_empty(),
        "{:?}",
        common::tree(&s.root)
    );
    let keyed =
        format!("-op write -target f -numreqs 1 -timeserver host 127.0.0.1 port {real} key {key}");
    let o = xdd(&s.root, &keyed);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(!common::stderr(&o).contains("unauthenticated"));
    // No key: XDD's unauthenticated clock, said once on standard error.
    let o = gettime(forger, &[]);
    let e = common::stderr(&o);
    assert!(o.status.success(), "{e}");
    let warned: Vec<&str> = e
        .lines()
        .filter(|l| l.contains("unauthenticated"))
        .collect();
    assert_eq!(warned.len(), 1, "{e}");
    let _ = std::fs::remove_file(s.path("f"));
    let line = format!("-op write -target f -numreqs 1 -timeserver host 127.0.0.1 port {forger}");
    let o = xdd(&s.root, &line);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("unauthenticated"),
        "{}",
        common::stderr(&o)
    );
}
