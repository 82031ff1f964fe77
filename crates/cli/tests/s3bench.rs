//! `iolab s3bench` against a real S3 server (SeaweedFS on loopback,
//! crates/testkit/src/s3.rs): mixed's shares, the bucket left as found,
//! `--obj.randsize` sizes as a LIST shows them, `--rps-limit`,
//! `--autoterm`, two gateways of one filer picked by the least-busy rule,
//! two MPI ranks counted against what a counting proxy saw, and bad
//! input refused with exit 2.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use iolab_core::tmp::PrivateDir;
use iolab_testkit::fault_proxy::{Fault, FaultProxy};
use iolab_testkit::s3::S3Server;
use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;

/// The shared server, or None (after skip_or_fail) when it cannot start.
fn server(test: &str) -> Option<&'static S3Server> {
    match S3Server::shared() {
        Ok(s) => Some(s),
        Err(e) => {
            skip_or_fail(test, &e);
            None
        }
    }
}

fn cmd(s: &S3Server, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.envs(s.env()).env("CI", "1").arg("s3bench").args(args);
    c
}

fn run(s: &S3Server, args: &[&str]) -> Output {
    cmd(s, args).output().unwrap()
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// A fresh bucket with one object that is not the run's.
fn bucket(s: &S3Server, name: &str) -> Vec<(String, u64, u64)> {
    s.make_bucket(name).unwrap();
    s.put(name, "theirs/keep", b"not the run's").unwrap();
    s.objects(name, "").unwrap()
}

/// The --json document of a run.
fn doc(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A private directory for a test's outputs, removed when it ends
/// (passed or failed).
fn outdir(test: &str) -> PrivateDir {
    PrivateDir::new(&format!("iolab-s3bench-{test}")).unwrap()
}

/// The payload's figures of op `name`.
fn op<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["payload"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no op {name}: {d}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn mixed_keeps_its_shares_and_leaves_the_bucket_as_found() {
    let Some(s) = server("mixed_shares") else {
        return;
    };
    let b = "sb-mixed";
    let before = bucket(s, b);
    let dir = outdir("mixed");
    let j = dir.path().join("r.json");
    let store = j.with_extension("sqlite");
    let csv = j.with_extension("csv");
    let o = run(
        s,
        &[
            "mixed",
            "--bucket",
            b,
            "--get-distrib",
            "40",
            "--stat-distrib",
            "25",
            "--put-distrib",
            "15",
            "--delete-distrib",
            "10",
            "--list-distrib",
            "10",
            "--objects",
            "40",
            "--obj.size",
            "4KiB",
            "--concurrent",
            "4",
            "--duration",
            "4s",
            "--json",
            j.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ],
    );
    ok(&o, "mixed");
    let out = stdout(&o);
    let d = doc(&j);
    let total: u64 = ["get", "stat", "put", "delete", "list"]
        .iter()
        .map(|n| u(&op(&d, n)["requests"]))
        .sum();
    assert!(total > 100, "too few requests to judge shares: {total}");
    for (name, share, label) in [
        ("get", 40.0, "GET"),
        ("stat", 25.0, "STAT"),
        ("put", 15.0, "PUT"),
        ("delete", 10.0, "DELETE"),
        ("list", 10.0, "LIST"),
    ] {
        let n = u(&op(&d, name)["requests"]);
        let pct = n as f64 * 100.0 / total as f64;
        assert!(
            (pct - share).abs() <= 2.0,
            "{name}: {pct:.1}% of {total}, not {share}%"
        );
        assert_eq!(u(&op(&d, name)["errors"]), 0);
        // Its section prints p50, p99 and the time to first byte.
        let section = out.split(&format!("Operation: {label} ")).nth(1).unwrap();
        let section = section.split("Operation:").next().unwrap();
        assert!(
            section.contains(" * Latency: avg ") && section.contains(", p50 "),
            "{section}"
        );
        assert!(
            section.contains(", p99 ") && section.contains(" * TTFB: avg "),
            "{section}"
        );
        // The envelope's figures carry the count, the rate and the percentiles.
        for metric in [
            "requests",
            "rate",
            "latency_p50",
            "latency_p99",
            "ttfb_p50",
            "ttfb_p99",
        ] {
            assert!(
                d["figures"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["phase"] == name && f["metric"] == metric),
                "no figure {name}/{metric}"
            );
        }
    }
    assert_eq!(
        s.objects(b, "").unwrap(),
        before,
        "the bucket is not as it was found"
    );
    assert_eq!(u(&d["payload"]["left"]["objects"]), 0);
    assert_eq!(u(&d["payload"]["left"]["listed_objects"]), 0);
    // One CSV row per op type; the store has the run and its figures.
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 6, "{rows}");
    assert!(rows.lines().nth(1).unwrap().starts_with("get,,"), "{rows}");
    let shown = stdout(&iolab(&[
        "results",
        "--store",
        store.to_str().unwrap(),
        "show",
        "1",
    ]));
    assert!(shown.contains("s3bench"), "{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l.contains("list") && l.contains("requests/s")),
        "{shown}"
    );
}

/// warp's random sizes up to 256 KiB: L = log2(2^18 - 1), L0 = 10, so
/// eight classes of equal count: sizes up to 2^11, then each doubling up
/// to 2^18. With a fixed seed the sizes are the same every run: the
/// bound below is checked once, and could only fail on a wrong rule (a
/// uniform draw would put half of them in the top class).
#[test]
fn randsize_sizes_on_the_server_follow_warps_distribution() {
    let Some(s) = server("randsize") else {
        return;
    };
    let b = "sb-randsize";
    s.make_bucket(b).unwrap();
    let dir = outdir("randsize");
    let j = dir.path().join("r.json");
    let o = run(
        s,
        &[
            "stat",
            "--bucket",
            b,
            "--objects",
            "400",
            "--obj.size",
            "256KiB",
            "--obj.randsize",
            "--seed",
            "7",
            "--noclear",
            "--concurrent",
            "4",
            "--duration",
            "1s",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    ok(&o, "stat --obj.randsize");
    let d = doc(&j);
    let prefix = d["payload"]["run_prefix"].as_str().unwrap();
    let listed = s.objects(b, prefix).unwrap();
    assert_eq!(listed.len(), 400);
    // What is left is what the run says it left.
    let bytes: u64 = listed.iter().map(|(_, n, _)| n).sum();
    assert_eq!(u(&d["payload"]["left"]["objects"]), 400);
    assert_eq!(u(&d["payload"]["left"]["bytes"]), bytes);
    assert_eq!(u(&d["payload"]["left"]["listed_bytes"]), bytes);
    let mut classes = [0u32; 8];
    for (_, size, _) in &listed {
        assert!((1..=256 << 10).contains(size), "{size}");
        let s1 = size - 1;
        let c = match s1 {
            0..=2048 => 0,
            _ => (63 - s1.leading_zeros()) as usize - 10,
        };
        classes[c] += 1;
    }
    for (c, n) in classes.iter().enumerate() {
        assert!(
            (25..=75).contains(n),
            "class {c}: {n} of 400 (50 expected): {classes:?}"
        );
    }
    let mean = bytes as f64 / 400.0 / (256 << 10) as f64;
    assert!(
        (0.12..0.25).contains(&mean),
        "mean {mean} of the largest (warp: 0.179)"
    );
}

#[test]
fn rps_limit_makes_its_rate_for_the_duration() {
    let Some(s) = server("rps_limit") else {
        return;
    };
    let b = "sb-rps";
    s.make_bucket(b).unwrap();
    let proxy = FaultProxy::counting(s.endpoint()[7..].parse().unwrap()).unwrap();
    let dir = outdir("rps");
    let j = dir.path().join("r.json");
    let o = run(
        s,
        &[
            "stat",
            "--host",
            &proxy.endpoint(),
            "--bucket",
            b,
            "--objects",
            "8",
            "--obj.size",
            "1KiB",
            "--concurrent",
            "8",
            "--duration",
            "6s",
            "--rps-limit",
            "100",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    ok(&o, "stat --rps-limit 100");
    let d = doc(&j);
    let n = u(&op(&d, "stat")["requests"]);
    assert!((582..=618).contains(&n), "{n} requests in 6 s at 100/s");
    // The server saw as many HEADs, and the bucket's own.
    let other = u(&d["payload"]["requests_other"]["head"]);
    assert_eq!(proxy.kinds().head, n + other);
}

#[test]
fn autoterm_ends_a_steady_run_early_and_says_so() {
    let Some(s) = server("autoterm") else {
        return;
    };
    let b = "sb-autoterm";
    s.make_bucket(b).unwrap();
    let dir = outdir("autoterm");
    let j = dir.path().join("r.json");
    // A fixed rate is steady by construction.
    let o = run(
        s,
        &[
            "stat",
            "--bucket",
            b,
            "--objects",
            "8",
            "--obj.size",
            "1KiB",
            "--concurrent",
            "4",
            "--duration",
            "60s",
            "--rps-limit",
            "50",
            "--autoterm",
            "--autoterm.dur",
            "2s",
            "--autoterm.pct",
            "50",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    ok(&o, "autoterm");
    let d = doc(&j);
    assert_eq!(
        d["payload"]["ended"]["reason"], "auto_term",
        "{}",
        d["payload"]["ended"]
    );
    let ran = d["payload"]["timed_s"].as_f64().unwrap();
    assert!(ran < 60.0, "ran {ran} s of 60");
    assert!(
        stdout(&o).contains("stopped early by --autoterm"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn two_gateways_split_by_the_least_busy_rule() {
    let Some(s) = server("two_hosts") else {
        return;
    };
    let b = "sb-hosts";
    let before = bucket(s, b);
    let g = match s.gateway() {
        Ok(g) => g,
        Err(e) => return skip_or_fail("two_hosts", &e),
    };
    // The second gateway answers 100 ms late: the least-busy rule sends
    // it fewer requests (round-robin would send it half).
    let slow = FaultProxy::start(
        g.endpoint()[7..].parse().unwrap(),
        Fault::Delay(Duration::from_millis(100)),
        1,
    )
    .unwrap();
    let hosts = format!("{},{}", s.endpoint(), slow.endpoint());
    let dir = outdir("hosts");
    let j = dir.path().join("r.json");
    let o = run(
        s,
        &[
            "stat",
            "--host",
            &hosts,
            "--bucket",
            b,
            "--objects",
            "8",
            "--obj.size",
            "1KiB",
            "--concurrent",
            "4",
            "--duration",
            "3s",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    ok(&o, "two hosts");
    let d = doc(&j);
    let stat = op(&d, "stat");
    let per: Vec<u64> = stat["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| u(&h["requests"]))
        .collect();
    assert_eq!(per.len(), 2);
    assert_eq!(per[0] + per[1], u(&stat["requests"]));
    assert!(per[1] > 0, "the slow host got no request: {per:?}");
    assert!(per[1] * 3 < per[0], "not split by load: {per:?}");
    assert_eq!(slow.kinds().head, per[1], "the slow host saw its HEADs");
    let out = stdout(&o);
    let by_host = out.split(" * By host:").nth(1).unwrap();
    assert!(
        by_host.contains(&format!("   - {}: ", s.endpoint())),
        "{out}"
    );
    assert!(
        by_host.contains(&format!("   - {}: ", slow.endpoint())),
        "{out}"
    );
    assert_eq!(s.objects(b, "").unwrap(), before);
}

/// Every kind of request the run says it sent, against what the server saw.
fn assert_counts_match(d: &Value, seen: iolab_testkit::fault_proxy::Kinds) {
    let p = &d["payload"];
    let sum = |k: &str| u(&p["requests_timed"][k]) + u(&p["requests_other"][k]);
    assert_eq!(u(&p["retries"]), 0);
    assert_eq!(
        (
            seen.get,
            seen.put,
            seen.head,
            seen.delete,
            seen.post,
            seen.list
        ),
        (
            sum("get"),
            sum("put"),
            sum("head"),
            sum("delete"),
            sum("post"),
            sum("list")
        ),
        "server (get, put, head, delete, post, list) against the run's: {p}"
    );
    // The timed phase's requests are the ops' counts.
    for (kind, name) in [
        ("get", "get"),
        ("head", "stat"),
        ("put", "put"),
        ("delete", "delete"),
        ("list", "list"),
    ] {
        let ran = p["ops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["name"] == name);
        let n = if ran { u(&op(d, name)["requests"]) } else { 0 };
        assert_eq!(u(&p["requests_timed"][kind]), n, "{name}");
    }
}

#[cfg(feature = "mpi")]
#[test]
fn two_mpi_ranks_count_what_the_server_saw() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("s3bench_mpirun", "mpirun not installed");
    }
    let Some(s) = server("s3bench_mpirun") else {
        return;
    };
    let b = "sb-mpi";
    let before = bucket(s, b);
    let proxy = FaultProxy::counting(s.endpoint()[7..].parse().unwrap()).unwrap();
    let dir = outdir("mpi");
    let j = dir.path().join("r.json");
    let live = dir.path().join("live.jsonl");
    let mut c = Command::new("mpirun");
    let _session = OmpiSession::attach(&mut c);
    let o = c
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "s3bench",
            "mixed",
            "--host",
            &proxy.endpoint(),
            "--bucket",
            b,
            "--list-distrib",
            "10",
            "--objects",
            "20",
            "--obj.size",
            "4KiB",
            "--concurrent",
            "4",
            "--duration",
            "3s",
            "--json",
            j.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.2",
        ])
        .envs(s.env())
        .env("CI", "1")
        .output()
        .unwrap();
    ok(&o, "mpirun -n 2 s3bench mixed");
    let out = stdout(&o);
    assert_eq!(
        out.matches("Operation: GET").count(),
        1,
        "one rank prints: {out}"
    );
    let d = doc(&j);
    assert_eq!(u(&d["payload"]["ranks"]), 2);
    assert_eq!(u(&d["payload"]["workers"]), 4);
    assert_counts_match(&d, proxy.kinds());
    // The live rows of both ranks, merged at rank 0, add up to the counts.
    assert_live_sums(&live, &d);
    assert_eq!(s.objects(b, "").unwrap(), before);
}

/// Every line of the `--live` stream parses, and for each op of the
/// results the merged rows' `ops` + `errors` add up to its requests.
fn assert_live_sums(live: &std::path::Path, d: &Value) {
    let text = std::fs::read_to_string(live).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(rows[0]["run_id"].is_string(), "a header first: {}", rows[0]);
    assert_eq!(
        d["run_id"], rows[0]["run_id"],
        "the results name the stream"
    );
    let merged =
        |r: &&Value| r.get("host").is_none() && r.get("rank").is_none() && r.get("phase").is_some();
    let ops = d["payload"]["ops"].as_array().unwrap();
    assert!(!ops.is_empty());
    for o in ops {
        let name = o["name"].as_str().unwrap();
        let (n, e) = rows
            .iter()
            .filter(merged)
            .filter(|r| r["phase"] == name)
            .fold((0, 0), |(n, e), r| (n + u(&r["ops"]), e + u(&r["errors"])));
        assert_eq!(
            n + e,
            u(&o["requests"]),
            "{name}: live rows against the results"
        );
        assert!(n > 0, "{name}: no live row");
    }
}

/// `--live` of one process: multipart's parts as their own ops too.
#[test]
fn live_rows_add_up_to_each_ops_requests() {
    let Some(s) = server("s3bench_live") else {
        return;
    };
    let b = "sb-live";
    let before = bucket(s, b);
    let dir = outdir("live");
    let (j, live) = (dir.path().join("r.json"), dir.path().join("live.jsonl"));
    for bench in [
        &["mixed", "--objects", "20", "--obj.size", "4KiB"][..],
        &["multipart", "--parts", "2"],
    ] {
        let mut a = bench.to_vec();
        a.extend(["--bucket", b, "--concurrent", "2", "--duration", "2s"]);
        a.extend([
            "--json",
            j.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.2",
        ]);
        let o = run(s, &a);
        ok(&o, &a.join(" "));
        assert_live_sums(&live, &doc(&j));
    }
    assert_eq!(s.objects(b, "").unwrap(), before);
}

#[test]
fn every_benchmark_runs_and_cleans_up() {
    let Some(s) = server("every_bench") else {
        return;
    };
    let b = "sb-every";
    let before = bucket(s, b);
    let proxy = FaultProxy::counting(s.endpoint()[7..].parse().unwrap()).unwrap();
    let host = proxy.endpoint();
    let dir = outdir("every");
    let j = dir.path().join("r.json");
    for (args, ops) in [
        (
            &["get", "--objects", "8", "--obj.size", "64KiB", "--range"][..],
            &["get"][..],
        ),
        (&["put", "--obj.size", "4096:3,65536:1"], &["put"]),
        (
            &["delete", "--objects", "30", "--obj.size", "1KiB"],
            &["delete"],
        ),
        (
            &[
                "list",
                "--objects",
                "40",
                "--obj.size",
                "1KiB",
                "--max-keys",
                "3",
            ],
            &["list"],
        ),
        (
            &["multipart", "--parts", "2", "--part.size", "5MiB"],
            &[
                "multipart",
                "multipart.create",
                "multipart.part",
                "multipart.complete",
            ],
        ),
    ] {
        let before_kinds = proxy.kinds();
        let mut a = args.to_vec();
        a.extend([
            "--host",
            &host,
            "--bucket",
            b,
            "--concurrent",
            "2",
            "--duration",
            "2s",
        ]);
        a.extend(["--json", j.to_str().unwrap()]);
        let o = run(s, &a);
        ok(&o, &args.join(" "));
        let d = doc(&j);
        for name in ops {
            let x = op(&d, name);
            assert!(u(&x["requests"]) > 0 && u(&x["errors"]) == 0, "{name}: {x}");
        }
        let after = proxy.kinds();
        let seen = iolab_testkit::fault_proxy::Kinds {
            get: after.get - before_kinds.get,
            put: after.put - before_kinds.put,
            head: after.head - before_kinds.head,
            delete: after.delete - before_kinds.delete,
            post: after.post - before_kinds.post,
            list: after.list - before_kinds.list,
        };
        if args[0] != "multipart" {
            assert_counts_match(&d, seen);
        } else {
            let mp = |n: &str| u(&op(&d, n)["requests"]);
            assert_eq!(mp("multipart.part"), 2 * mp("multipart.create"));
            assert_eq!(seen.post, mp("multipart.create") + mp("multipart.complete"));
        }
        if args[0] == "delete" {
            // 30 objects by 2 workers: the run ends when they are gone.
            assert_eq!(u(&op(&d, "delete")["requests"]), 30);
        }
        assert_eq!(s.objects(b, "").unwrap(), before, "{args:?} left objects");
    }
}

#[test]
fn bad_input_is_refused_before_any_object_is_made() {
    let Some(s) = server("bad_input") else {
        return;
    };
    let b = "sb-bad";
    let before = bucket(s, b);
    let dir = outdir("bad-input");
    let key = dir.path().join("key");
    std::fs::write(&key, "secret").unwrap();
    let k = key.to_str().unwrap();
    for (args, says) in [
        (vec!["get", "--bucket", b, "--no-such"], "--no-such"),
        (vec!["put", "--bucket", b, "--objects", "5"], "--objects"),
        (vec!["get", "--bucket", "sb-missing"], "does not exist"),
        (
            vec!["delete", "--bucket", b, "--list-existing"],
            "never deletes",
        ),
        (
            vec!["mixed", "--bucket", b, "--delete-distrib", "50"],
            "--delete-distrib",
        ),
        (vec!["get", "--bucket", b, "--duration", "5x"], "--duration"),
        (
            vec!["get", "--bucket", b, "--secret-key-file", k],
            "chmod 600",
        ),
        (
            vec!["get", "--bucket", b, "--concurrent", "0"],
            "--concurrent",
        ),
        (
            vec!["get", "--bucket", b, "--json", "/nonexistent/dir/x.json"],
            "--json",
        ),
    ] {
        let o = run(s, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(s.objects(b, "").unwrap(), before);
}

#[test]
fn ctrl_c_ends_the_run_and_the_cleanup_still_runs() {
    let Some(s) = server("ctrl_c") else {
        return;
    };
    let b = "sb-ctrl-c";
    let before = bucket(s, b);
    let child = cmd(
        s,
        &[
            "put",
            "--bucket",
            b,
            "--obj.size",
            "4KiB",
            "--concurrent",
            "2",
            "--duration",
            "60s",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Objects of the run appear: it is in its timed phase.
    let t0 = std::time::Instant::now();
    while s.objects(b, "").unwrap().len() < before.len() + 5 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no PUT arrived");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stdout(&o).contains("(interrupted)"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("nothing of this run is left"),
        "{}",
        stdout(&o)
    );
    // It said, as it stopped, where what it put would be left.
    let at = format!("they may be left under s3://{b}/iolab-s3bench.*/");
    assert!(stderr(&o).contains(&at), "{}", stderr(&o));
    assert_eq!(s.objects(b, "").unwrap(), before);
}

/// A multipart object is its parts: what a --noclear run says it left
/// (objects x parts x part size) agrees with the LIST after it (the
/// default --obj.size was counted instead, and the run failed its own
/// check, exit 1).
#[test]
fn multipart_counts_what_it_leaves_as_its_parts() {
    let Some(s) = server("mp_left") else {
        return;
    };
    let b = "sb-mp-left";
    let before = bucket(s, b);
    let dir = outdir("mp-left");
    let j = dir.path().join("r.json");
    let o = run(
        s,
        &[
            "multipart",
            "--parts",
            "1",
            "--part.size",
            "5MiB",
            "--bucket",
            b,
            "--concurrent",
            "1",
            "--duration",
            "1s",
            "--noclear",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    ok(&o, "multipart --noclear");
    let d = doc(&j);
    let left = d["payload"]["left"].clone();
    let n = u(&left["objects"]);
    assert!(n > 0, "{left}");
    assert_eq!(u(&left["bytes"]), n * 5 * 1_048_576, "{left}");
    assert_eq!(left["listed_bytes"], left["bytes"], "{left}");
    for (key, _, _) in s.objects(b, "").unwrap() {
        if !before.iter().any(|(k, _, _)| *k == key) {
            s.remove(b, &key).unwrap();
        }
    }
}

#[test]
fn list_existing_reads_what_is_there_and_touches_nothing() {
    let Some(s) = server("list_existing") else {
        return;
    };
    let b = "sb-existing";
    s.make_bucket(b).unwrap();
    for i in 0..6 {
        s.put(b, &format!("theirs/{i}"), &vec![b'x'; 1000 + i])
            .unwrap();
    }
    s.put(b, "elsewhere/not-listed", b"y").unwrap();
    let before = s.objects(b, "").unwrap();
    let dir = outdir("existing");
    let j = dir.path().join("r.json");
    for bench in [
        &["get", "--range"][..],
        &["stat"],
        &["mixed", "--list-distrib", "10"],
    ] {
        let mut a = bench.to_vec();
        a.extend(["--bucket", b, "--list-existing", "--prefix", "theirs"]);
        a.extend([
            "--concurrent",
            "2",
            "--duration",
            "1s",
            "--obj.size",
            "1KiB",
        ]);
        a.extend(["--json", j.to_str().unwrap()]);
        let o = run(s, &a);
        ok(&o, &a.join(" "));
        let d = doc(&j);
        let read = if bench[0] == "stat" { "stat" } else { "get" };
        assert!(u(&op(&d, read)["requests"]) > 0, "{}", d["payload"]);
        assert_eq!(u(&op(&d, read)["errors"]), 0);
        // Only the listed objects were read: their sizes.
        let sizes = &op(&d, read)["sizes"];
        assert!(
            u(&sizes["min"]) >= 1000 && u(&sizes["max"]) <= 1005,
            "{sizes}"
        );
        assert_eq!(
            s.objects(b, "").unwrap(),
            before,
            "{a:?} changed the bucket"
        );
    }
}

#[test]
fn a_redirected_read_is_an_error_and_never_followed() {
    let Some(s) = server("redirect") else {
        return;
    };
    let b = "sb-redirect";
    let before = bucket(s, b);
    let upstream: std::net::SocketAddr = s.endpoint()[7..].parse().unwrap();
    // The other host: the same server behind a counting proxy, so that
    // a redirect followed would be answered (and counted as a read).
    let elsewhere = FaultProxy::counting(upstream).unwrap();
    let elsewhere_addr: std::net::SocketAddr = elsewhere.endpoint()[7..].parse().unwrap();
    let proxy = FaultProxy::start(upstream, Fault::RedirectReads(elsewhere_addr), 1).unwrap();
    let host = proxy.endpoint();
    let dir = outdir("redirect");
    let j = dir.path().join("r.json");
    for bench in ["get", "stat"] {
        let o = run(
            s,
            &[
                bench,
                "--host",
                &host,
                "--bucket",
                b,
                "--objects",
                "4",
                "--obj.size",
                "1KiB",
                "--concurrent",
                "2",
                "--duration",
                "1s",
                "--json",
                j.to_str().unwrap(),
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{bench}: {err}");
        assert!(
            err.contains("HTTP 307")
                && err.contains("not followed")
                && err.contains("s3://sb-redirect/"),
            "{bench}: {err}"
        );
        let d = doc(&j);
        let x = op(&d, bench);
        assert!(u(&x["requests"]) > 0, "{bench}: {x}");
        assert_eq!(x["requests"], x["errors"], "{bench}: {x}");
    }
    assert!(proxy.faults() > 0);
    assert_eq!(elsewhere.requests(), 0, "a redirect was followed");
    assert_eq!(s.objects(b, "").unwrap(), before);
}

/// At 1 request a second with 4 workers for 3 s the token bucket gives
/// at most R·D + concurrent − 1 = 6 requests, and the phase lasts the
/// 3 s even though the last request went out at about 2 s: the rate is
/// requests over the whole duration.
#[test]
fn rps_limit_keeps_its_bound_and_the_phase_lasts_the_duration() {
    let Some(s) = server("rps_bound") else {
        return;
    };
    let b = "sb-rps-bound";
    s.make_bucket(b).unwrap();
    let proxy = FaultProxy::counting(s.endpoint()[7..].parse().unwrap()).unwrap();
    let dir = outdir("rps-bound");
    let j = dir.path().join("r.json");
    let before = proxy.kinds().head;
    let o = run(
        s,
        &[
            "stat",
            "--host",
            &proxy.endpoint(),
            "--bucket",
            b,
            "--objects",
            "4",
            "--obj.size",
            "1KiB",
            "--concurrent",
            "4",
            "--duration",
            "3s",
            "--rps-limit",
            "1",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    ok(&o, "stat --rps-limit 1");
    let d = doc(&j);
    let x = op(&d, "stat");
    let n = u(&x["requests"]);
    assert!(
        (1..=6).contains(&n),
        "{n} requests: the bound is 1·3 + 4 − 1 = 6"
    );
    let other = u(&d["payload"]["requests_other"]["head"]);
    assert_eq!(proxy.kinds().head - before, n + other);
    let timed = d["payload"]["timed_s"].as_f64().unwrap();
    assert!(timed >= 3.0, "the phase lasted {timed} s of --duration 3s");
    let rate = x["requests_per_s"].as_f64().unwrap();
    assert!(
        (rate - n as f64 / timed).abs() < 1e-6,
        "{rate} vs {n} / {timed}"
    );
    assert!(
        stdout(&o).contains("(--duration reached)"),
        "{}",
        stdout(&o)
    );
}

/// A `--prefix` with a `..` or `.` segment would send `PUT
/// /bench/../other/...`; one too long for S3's 1024-byte keys would be
/// refused by the service PUT by PUT. Both exit 2 before any request.
#[test]
fn a_prefix_out_of_the_bucket_or_too_long_is_refused_first() {
    let Some(s) = server("bad_prefix") else {
        return;
    };
    let b = "sb-prefix";
    let before = bucket(s, b);
    let proxy = FaultProxy::counting(s.endpoint()[7..].parse().unwrap()).unwrap();
    let long = "p".repeat(1100);
    // Under 1024 itself, over it with the run's own part of a key.
    let edge = "p".repeat(1000);
    for (prefix, says) in [
        ("..", "`..` segment"),
        ("a/../..", "`..` segment"),
        ("./x", "`.` segment"),
        (long.as_str(), "at most 1024"),
        (edge.as_str(), "at most 1024"),
    ] {
        let o = run(
            s,
            &[
                "stat",
                "--host",
                &proxy.endpoint(),
                "--bucket",
                b,
                "--prefix",
                prefix,
                "--objects",
                "2",
                "--obj.size",
                "1KiB",
                "--concurrent",
                "2",
                "--duration",
                "1s",
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{prefix:.40}: {err}");
        assert!(
            err.contains("--prefix") && err.contains(says),
            "{prefix:.40}: {err}"
        );
        assert_eq!(proxy.requests(), 0, "{prefix:.40}: requests were sent");
    }
    assert_eq!(s.objects(b, "").unwrap(), before);
}

/// A service on loopback that lists one object `k` of 8192 bytes under
/// any prefix but the run's, and answers its GET with 8191 bytes.
fn short_body_service() -> (String, std::thread::JoinHandle<()>) {
    let list = "<Contents><Key>k</Key><Size>8192</Size></Contents>";
    let (endpoint, _, served) = listing_service(list, 8191);
    (endpoint, served)
}

/// A service on loopback whose LIST under any prefix but the run's
/// holds `contents` (`<Contents>` elements) and whose GET answers
/// `body_len` bytes; it records the target of every request.
fn listing_service(
    contents: &'static str,
    body_len: usize,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    std::thread::JoinHandle<()>,
) {
    use std::io::{BufRead, BufReader, Write};
    let targets = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = targets.clone();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", l.local_addr().unwrap());
    l.set_nonblocking(true).unwrap();
    let served = std::thread::spawn(move || {
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < until {
            let Ok((c, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            c.set_nonblocking(false).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(c.try_clone().unwrap());
                let mut w = c;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut h = String::new();
                    while r.read_line(&mut h).unwrap_or(0) > 0 && h != "\r\n" {
                        h.clear();
                    }
                    let target = line.split(' ').nth(1).unwrap_or("").to_string();
                    seen.lock().unwrap().push(target.clone());
                    let body = if line.starts_with("HEAD") {
                        String::new()
                    } else if target.contains("list-type=2") && target.contains("iolab-s3bench") {
                        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><IsTruncated>false</IsTruncated></ListBucketResult>".into()
                    } else if target.contains("list-type=2") {
                        format!("<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><IsTruncated>false</IsTruncated>{contents}</ListBucketResult>")
                    } else {
                        "x".repeat(body_len)
                    };
                    let len = if line.starts_with("HEAD") {
                        0
                    } else {
                        body.len()
                    };
                    let a = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n{body}");
                    if w.write_all(a.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, targets, served)
}

/// A GET whose answer is short is an error naming the request, the
/// object and what came.
#[test]
fn a_short_answer_names_its_object() {
    let (endpoint, _served) = short_body_service();
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("CI", "1")
        .env("AWS_ACCESS_KEY_ID", "k")
        .env("AWS_SECRET_ACCESS_KEY", "s")
        .args([
            "s3bench",
            "get",
            "--host",
            &endpoint,
            "--bucket",
            "sb-short",
            "--list-existing",
            "--concurrent",
            "1",
            "--duration",
            "300ms",
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}\n{}", stdout(&o));
    assert!(
        err.contains("S3 GET s3://sb-short/k: the answer held 8191 of the 8192 bytes"),
        "{err}"
    );
}

/// `--list-existing` passes over a listed key that a request cannot
/// name unchanged (a `..` segment would be resolved as a path and read
/// another object), says so, and is exit 2 when nothing else is listed.
#[test]
fn listed_keys_with_dot_segments_are_never_requested() {
    let run = |endpoint: &str, json: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .env("CI", "1")
            .env("AWS_ACCESS_KEY_ID", "k")
            .env("AWS_SECRET_ACCESS_KEY", "s")
            .args(["s3bench", "get", "--host", endpoint, "--bucket", "sb-dots"])
            .args(["--list-existing", "--prefix", "theirs", "--concurrent", "1"])
            .args(["--duration", "300ms", "--json", json.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let dir = outdir("dots");
    let j = dir.path().join("r.json");
    let both = "<Contents><Key>theirs/../secret</Key><Size>64</Size></Contents>\
                <Contents><Key>theirs/ok</Key><Size>64</Size></Contents>";
    let (endpoint, targets, _served) = listing_service(both, 64);
    let o = run(&endpoint, &j);
    ok(&o, "get --list-existing");
    let d = doc(&j);
    assert!(u(&op(&d, "get")["requests"]) > 0, "{}", d["payload"]);
    let notes = d["payload"]["notes"].to_string();
    assert!(
        notes.contains("1 listed objects were passed over"),
        "{notes}"
    );
    let sent = targets.lock().unwrap().clone();
    assert!(sent.iter().any(|t| t.contains("theirs/ok")), "{sent:?}");
    assert!(!sent.iter().any(|t| t.contains("secret")), "{sent:?}");

    let only = "<Contents><Key>theirs/../secret</Key><Size>64</Size></Contents>";
    let (endpoint, targets, _served) = listing_service(only, 64);
    let j2 = dir.path().join("r2.json");
    let o = run(&endpoint, &j2);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("1 listed have a `.` or `..` segment"), "{err}");
    assert!(!j2.exists());
    let sent = targets.lock().unwrap().clone();
    assert!(!sent.iter().any(|t| t.contains("secret")), "{sent:?}");
}
