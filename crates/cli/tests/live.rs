//! Live figures (`--live`): the rows of every interval add up exactly to
//! the results, the last interval is flushed however the run ends, every
//! line parses, the OpenMetrics textfile parses at every read and its
//! counters never go back, and an interval's p99 from the merged
//! histograms matches the one computed from xdd's per-operation time
//! stamps to a histogram bucket.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every line of a jsonl stream, parsed: the header, then the rows.
fn read_jsonl(path: &Path) -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().map(|l| {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("line {l:?}: {e}"))
    });
    let header = lines.next().expect("a header line");
    assert_eq!(header["schema"], "iolab.live/1", "{header}");
    (header, lines.collect())
}

/// Per phase, the aggregate rows' interval ops and bytes, summed.
fn sums(rows: &[Value]) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.get("host").is_none() && r.get("rank").is_none()) {
        let e = out.entry(r["phase"].as_str().unwrap().to_string()).or_default();
        e.0 += r["ops"].as_u64().unwrap();
        e.1 += r["bytes"].as_u64().unwrap();
    }
    out
}

/// mdtest's items per phase over every test and iteration.
fn mdtest_items(doc: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for t in doc["payload"]["tests"].as_array().unwrap() {
        for it in t["iterations"].as_array().unwrap() {
            for p in it["phases"].as_array().unwrap() {
                *out.entry(p["phase"].as_str().unwrap().to_string()).or_default() +=
                    p["items"].as_u64().unwrap();
            }
        }
    }
    out
}

/// xdd's combined read and write operations and bytes.
fn xdd_counts(doc: &Value) -> BTreeMap<String, (u64, u64)> {
    let c = &doc["payload"]["combined"];
    let mut out = BTreeMap::new();
    for op in ["read", "write"] {
        let ops = c[format!("{op}_ops")].as_u64().unwrap();
        if ops > 0 {
            out.insert(op.to_string(), (ops, c[format!("{op}_bytes")].as_u64().unwrap()));
        }
    }
    out
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ok(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\n{}\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// The rows' last interval is marked and comes after every other row.
fn assert_flushed(rows: &[Value]) {
    let last_t = rows.iter().map(|r| r["t"].as_f64().unwrap()).fold(0.0, f64::max);
    let marked: Vec<&Value> = rows.iter().filter(|r| r["last"] == true).collect();
    assert!(!marked.is_empty(), "no row of the final flush");
    assert!(marked.iter().all(|r| r["t"].as_f64().unwrap() == last_t));
}

#[test]
fn mdtest_threads_intervals_sum_to_the_results() {
    let s = Scratch::new("live-mdtest");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let o = iolab(&[
        "mdtest", "-n", "3000", "-i", "2", "--tasks", "3", "-w", "100", "-e", "100", "-d",
        s.path("d").to_str().unwrap(), "--json", res.to_str().unwrap(), "--live",
        live.to_str().unwrap(), "--live-interval", "0.1",
    ]);
    ok(&o, "mdtest");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"], "the stream and the results share a run id");
    let live_sums = sums(&rows);
    let items = mdtest_items(&doc);
    assert_eq!(live_sums.keys().collect::<Vec<_>>(), items.keys().collect::<Vec<_>>());
    for (phase, n) in &items {
        assert_eq!(live_sums[phase].0, *n, "{phase}: ops of the intervals");
    }
    // -w and -e bytes per created and read file.
    assert_eq!(live_sums["file_create"].1, items["file_create"] * 100);
    assert_eq!(live_sums["file_read"].1, items["file_read"] * 100);
    assert_flushed(&rows);
    // The totals are cumulative and end at the results' counts.
    let last_create = rows.iter().rfind(|r| r["phase"] == "file_create").unwrap();
    assert_eq!(last_create["ops_total"].as_u64(), Some(items["file_create"]));
}

#[test]
fn mdtest_csv_has_the_same_fields_and_sums() {
    let s = Scratch::new("live-csv");
    let (live, res) = (s.path("live.csv"), s.path("r.json"));
    let o = iolab(&[
        "mdtest", "-n", "2000", "-d", s.path("d").to_str().unwrap(), "--json",
        res.to_str().unwrap(), "--live", live.to_str().unwrap(), "--live-format", "csv",
        "--live-interval", "0.1",
    ]);
    ok(&o, "mdtest");
    let mut r = csv::Reader::from_path(&live).unwrap();
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    for col in ["schema", "run_id", "t", "phase", "ops", "bytes", "ops_total", "latency_p99_ns", "last"] {
        assert!(head.contains(&col.to_string()), "{col} in {head:?}");
    }
    let at = |c: &str| head.iter().position(|h| h == c).unwrap();
    let mut by_phase: BTreeMap<String, u64> = BTreeMap::new();
    let doc = json(&res);
    for rec in r.records() {
        let rec = rec.unwrap();
        assert_eq!(&rec[at("run_id")], doc["run_id"].as_str().unwrap());
        *by_phase.entry(rec[at("phase")].to_string()).or_default() +=
            rec[at("ops")].parse::<u64>().unwrap();
    }
    assert_eq!(by_phase, mdtest_items(&doc));
}

#[test]
fn xdd_files_intervals_sum_to_the_results_per_op_type() {
    let s = Scratch::new("live-xdd");
    let (live, res) = (s.path("live.jsonl"), s.path("x.json"));
    let (a, b) = (s.path("a"), s.path("b"));
    for t in [&a, &b] {
        std::fs::write(t, vec![1u8; 2000 * 4096]).unwrap();
    }
    let o = iolab(&[
        "xdd", "-op", "write", "-targets", "2", a.to_str().unwrap(), b.to_str().unwrap(),
        "-reqsize", "4", "-numreqs", "3000", "-qd", "2", "-passes", "2", "-rwratio", "50",
        "-seek", "random", "-seek", "range", "2000", "--json", res.to_str().unwrap(),
        "--live", live.to_str().unwrap(), "--live-interval", "0.1",
    ]);
    ok(&o, "xdd");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"]);
    assert_eq!(header["tool"], "xdd");
    assert_eq!(sums(&rows), xdd_counts(&doc));
    assert_flushed(&rows);
}

#[test]
fn xdd_s3_intervals_sum_to_the_results() {
    let server = match iolab_testkit::s3::S3Server::shared() {
        Ok(s) => s,
        Err(e) => return skip_or_fail("live_xdd_s3", &e),
    };
    server.make_bucket("live-xdd").unwrap();
    let s = Scratch::new("live-s3");
    let (live, res) = (s.path("live.jsonl"), s.path("x.json"));
    let run = |op: &str| {
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .envs(server.env())
            .env("CI", "1")
            .args([
                "xdd", "-op", op, "-target", "s3://live-xdd/obj", "-reqsize", "5120",
                "-numreqs", "3", "--json", res.to_str().unwrap(), "--live",
                live.to_str().unwrap(), "--live-interval", "0.1",
            ])
            .output()
            .unwrap()
    };
    for op in ["write", "read"] {
        ok(&run(op), op);
        let (_, rows) = read_jsonl(&live);
        assert_eq!(sums(&rows), xdd_counts(&json(&res)), "{op}");
        assert_flushed(&rows);
    }
}

/// Starts `iolab words...` in the background, quiet, with CI set.
fn spawn(words: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most 60 s) for the child; kills it if it does not end.
fn wait(mut c: std::process::Child) -> i32 {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = c.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        if Instant::now() > until {
            let _ = c.kill();
            panic!("the run did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the stream at `path` has at least `n` lines.
fn wait_for_lines(path: &Path, n: usize) {
    let until = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(path).map_or(0, |t| t.lines().count()) < n {
        assert!(Instant::now() < until, "no live rows came");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file of `mib` MiB on the scratch tmpfs.
fn data_file(s: &Scratch, name: &str, mib: usize) -> String {
    let p = s.path(name);
    std::fs::write(&p, vec![7u8; mib << 20]).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn ctrl_c_flushes_the_last_interval_and_exits_130() {
    let s = Scratch::new("live-int");
    let f = data_file(&s, "f", 16);
    let (live, res) = (s.path("live.jsonl"), s.path("x.json"));
    let c = spawn(&[
        "xdd", "-op", "read", "-target", &f, "-reqsize", "1", "-blocksize", "4096",
        "-numreqs", "4000", "-passes", "100000", "-seek", "random", "-seek", "range", "4000",
        "--json", res.to_str().unwrap(), "--live", live.to_str().unwrap(),
        "--live-interval", "0.1",
    ]);
    wait_for_lines(&live, 4);
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    assert_eq!(wait(c), 130);
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    assert_eq!(sums(&rows), xdd_counts(&json(&res)), "the interrupted run's counts");
}

#[test]
fn a_failure_flushes_the_last_interval_with_its_errors() {
    let s = Scratch::new("live-fail");
    let f = data_file(&s, "f", 1);
    let (live, res) = (s.path("live.jsonl"), s.path("x.json"));
    // Reads past the end of a 1 MiB file: half the requests move nothing.
    let o = iolab(&[
        "xdd", "-op", "read", "-target", &f, "-reqsize", "1", "-blocksize", "4096",
        "-numreqs", "512", "-json", res.to_str().unwrap(), "--live", live.to_str().unwrap(),
        "--live-interval", "0.1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    let last = rows.iter().rfind(|r| r["phase"] == "read").unwrap();
    assert!(last["errors_total"].as_u64().unwrap() > 0, "{last}");
    assert_eq!(sums(&rows), xdd_counts(&json(&res)));
}

/// The value of counter `name` (without `_total`) for `phase`.
fn counter(exp: &openmetrics_parser::MetricsExposition<openmetrics_parser::OpenMetricsType, openmetrics_parser::OpenMetricsValue>, name: &str, phase: &str) -> Option<f64> {
    let fam = exp.families.get(name)?;
    fam.iter_samples().find_map(|s| {
        let labels = s.get_labelset().ok()?;
        if labels.get_label_value("phase") != Some(phase) {
            return None;
        }
        match &s.value {
            openmetrics_parser::OpenMetricsValue::Counter(c) => Some(c.value.as_f64()),
            _ => None,
        }
    })
}

#[test]
fn openmetrics_file_parses_at_every_read_and_never_goes_back() {
    let s = Scratch::new("live-om");
    let f = data_file(&s, "f", 16);
    let prom = s.path("iolab.prom");
    let c = spawn(&[
        "xdd", "-op", "read", "-target", &f, "-reqsize", "1", "-blocksize", "4096",
        "-numreqs", "4000", "-passes", "500", "-seek", "random", "-seek", "range", "4000",
        "--live", prom.to_str().unwrap(), "--live-format", "openmetrics",
        "--live-interval", "0.1",
    ]);
    let mut pid = Some(c);
    let (mut reads, mut last_ops, mut seen_ops) = (0, 0.0, false);
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let done = pid.as_mut().unwrap().try_wait().unwrap().is_some();
        if let Ok(text) = std::fs::read_to_string(&prom) {
            reads += 1;
            assert!(text.ends_with("# EOF\n"), "read {reads}: {text}");
            let exp = openmetrics_parser::openmetrics::parse_openmetrics(&text)
                .unwrap_or_else(|e| panic!("read {reads}: {e:?}\n{text}"));
            assert!(exp.families.contains_key("iolab_live_elapsed_seconds"), "{text}");
            // Once the phase started, its families are in every file.
            for name in ["iolab_live_ops", "iolab_live_bytes", "iolab_live_errors"] {
                assert!(!seen_ops || exp.families.contains_key(name), "{name} in {text}");
            }
            if let Some(v) = counter(&exp, "iolab_live_ops", "read") {
                assert!(v >= last_ops, "ops went back from {last_ops} to {v}");
                last_ops = v;
                seen_ops = true;
            }
            assert!(text.contains("tool=\"xdd\""), "{text}");
        }
        if done {
            break;
        }
        assert!(Instant::now() < until, "the run did not end");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(wait(pid.take().unwrap()), 0);
    assert!(reads >= 200, "only {reads} reads during the run");
    assert!(seen_ops);
    assert_eq!(last_ops, 4000.0 * 500.0, "the final file holds every operation");
}

/// The p99 of `lat` (ns), ranked as iolab's histogram ranks.
fn p99(lat: &mut [u64]) -> u64 {
    lat.sort_unstable();
    let rank = ((0.99 * lat.len() as f64).ceil() as usize).max(1);
    lat[rank - 1]
}

/// The latencies of a `-ts output` report, in the order the QThread
/// finished them.
fn ts_latencies(path: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(3)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(", ").collect();
            let (start, end) = (f.get(9)?.parse::<u64>().ok()?, f.get(10)?.parse::<u64>().ok()?);
            Some(end - start)
        })
        .collect()
}

/// The live figure is the middle of its bucket; the time stamps time an
/// operation with clock reads of their own, a few ns from the engine's,
/// so the same operation may sit in the next bucket: within one bucket.
fn within_a_bucket(live: u64, offline: u64) -> bool {
    use iolab_core::Histogram;
    Histogram::index(live).abs_diff(Histogram::index(offline)) <= 1
}

#[test]
fn interval_p99_matches_the_time_stamps_to_a_bucket() {
    let s = Scratch::new("live-p99");
    let f = data_file(&s, "f", 64);
    let (live, ts) = (s.path("live.jsonl"), s.path("ts"));
    // One QThread: its operations finish in order, so each interval holds
    // the next `ops` entries of the time stamp table.
    let o = iolab(&[
        "xdd", "-op", "read", "-target", &f, "-reqsize", "1", "-blocksize", "4096",
        "-numreqs", "200000", "-seek", "random", "-seek", "range", "16000", "-ts", "detailed",
        "-ts", "output", ts.to_str().unwrap(), "--live", live.to_str().unwrap(),
        "--live-interval", "0.1",
    ]);
    ok(&o, "xdd");
    let lat = ts_latencies(&s.path("ts.target.0000.csv"));
    assert_eq!(lat.len(), 200_000);
    let (_, rows) = read_jsonl(&live);
    let mut at = 0usize;
    let mut compared = 0;
    for r in rows.iter().filter(|r| r["phase"] == "read") {
        // The operations the interval's histogram timed: its buckets are
        // read a moment after its count, so an operation finished in
        // between is in this histogram and in the next interval's count.
        let n = r["latency"]["count"].as_u64().unwrap_or(0) as usize; // null: none timed
        let mut mine = lat[at..at + n].to_vec();
        at += n;
        if n < 1000 {
            continue;
        }
        let offline = p99(&mut mine);
        let row = r["latency"]["p99_ns"].as_u64().unwrap();
        assert!(within_a_bucket(row, offline), "interval at {}: live p99 {row}, time stamps {offline}", r["t"]);
        compared += 1;
    }
    assert_eq!(at, lat.len());
    assert!(compared >= 1, "no interval of 1000 operations");

    // Two targets with two QThreads each, one interval: four histograms
    // merged.
    let (b, ts2, live2) = (data_file(&s, "g", 64), s.path("ts2"), s.path("live2.jsonl"));
    let o = iolab(&[
        "xdd", "-op", "read", "-targets", "2", &f, &b, "-qd", "2", "-reqsize", "1",
        "-blocksize", "4096", "-numreqs", "40000", "-seek", "random", "-seek", "range",
        "16000", "-ts", "detailed", "-ts", "output", ts2.to_str().unwrap(), "--live",
        live2.to_str().unwrap(), "--live-interval", "3600",
    ]);
    ok(&o, "xdd two targets");
    let mut all: Vec<u64> = ["ts2.target.0000.csv", "ts2.target.0001.csv"]
        .iter()
        .flat_map(|n| ts_latencies(&s.path(n)))
        .collect();
    let (_, rows) = read_jsonl(&live2);
    let r = rows.iter().find(|r| r["phase"] == "read").unwrap();
    assert_eq!(r["ops"].as_u64(), Some(all.len() as u64));
    let (row, offline) = (r["latency"]["p99_ns"].as_u64().unwrap(), p99(&mut all));
    assert!(within_a_bucket(row, offline), "merged: live p99 {row}, time stamps {offline}");
}

#[test]
fn bad_live_options_are_refused_before_anything_runs() {
    let s = Scratch::new("live-bad");
    let d = s.path("d");
    for (words, needle) in [
        (vec!["--live-interval", "0.01", "--live", "x"], "--live-interval 0.01"),
        (vec!["--live", "-", "--live-format", "openmetrics"], "openmetrics"),
        (vec!["--live", "x", "--live-format", "xml"], "--live-format xml"),
        (vec!["--steady", "ops:5"], "--steady ops:5"),
        (vec!["--live", "/nonexistent/dir/x"], "--live"),
        (vec!["--live-format", "csv"], "needs --live"),
        (vec!["--live-interval", "1"], "needs --live"),
    ] {
        let mut w = vec!["mdtest", "-n", "10", "-d", d.to_str().unwrap()];
        w.extend(words);
        let o = iolab(&w);
        assert_eq!(o.status.code(), Some(2), "{w:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{w:?}: {}", stderr(&o));
        assert!(!d.exists(), "{w:?} created the test directory");
    }
}

#[test]
fn steady_state_ends_a_create_phase_and_the_results_say_so() {
    let s = Scratch::new("live-steady");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    // Far more files than the run can make before its rate settles
    // within 50 % over half a second.
    let o = iolab(&[
        "mdtest", "-F", "-C", "-n", "5000000", "-d", s.path("d").to_str().unwrap(), "--json",
        res.to_str().unwrap(), "--live", live.to_str().unwrap(), "--live-interval", "0.1",
        "--steady", "ops:50:0.5",
    ]);
    ok(&o, "mdtest");
    let doc = json(&res);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("file_create ended on steady state"), "{notes}");
    let items = mdtest_items(&doc);
    assert!(items["file_create"] < 5_000_000, "{items:?}");
    let (_, rows) = read_jsonl(&live);
    assert_eq!(sums(&rows)["file_create"].0, items["file_create"]);
}

#[test]
fn mdtest_two_ranks_by_two_threads_merge_at_rank_0() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("live_mpi", "mpirun not installed");
    }
    let s = Scratch::new("live-mpi");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let mut c = Command::new("mpirun");
    let _session = OmpiSession::attach(&mut c);
    let o = c
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2", env!("CARGO_BIN_EXE_iolab"), "mdtest"])
        .args(["-n", "2000", "--tasks", "2", "-d"])
        .arg(s.path("d"))
        .args(["--json", res.to_str().unwrap(), "--live", live.to_str().unwrap(), "--live-interval", "0.1"])
        .env("CI", "1")
        .output()
        .unwrap();
    ok(&o, "mpirun mdtest");
    let (_, rows) = read_jsonl(&live);
    let doc = json(&res);
    let items = mdtest_items(&doc);
    let agg = sums(&rows);
    for (phase, n) in &items {
        assert_eq!(agg[phase].0, *n, "{phase}");
    }
    // The per-rank rows: both ranks, with their host, adding up to the
    // aggregate phase by phase.
    let mut per: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.get("rank").is_some()) {
        assert!(r["host"].is_string(), "{r}");
        *per.entry((r["rank"].as_u64().unwrap(), r["phase"].as_str().unwrap().into())).or_default() +=
            r["ops"].as_u64().unwrap();
    }
    for (phase, n) in &items {
        let both: u64 = [0, 1].iter().map(|k| per.get(&(*k, phase.clone())).copied().unwrap_or(0)).sum();
        assert_eq!(both, *n, "{phase}: ranks 0 and 1");
    }
    assert!(per.keys().any(|(k, _)| *k == 1), "rank 1 reported");
    // Latencies are merged, not averaged: an aggregate row times as many
    // operations as its ranks' rows of the same interval together.
    for a in rows.iter().filter(|r| r.get("rank").is_none() && !r["latency"].is_null()) {
        let parts: u64 = rows
            .iter()
            .filter(|r| r.get("rank").is_some() && r["t"] == a["t"] && r["phase"] == a["phase"])
            .map(|r| r["latency"]["count"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(a["latency"]["count"].as_u64().unwrap(), parts, "{a}");
    }
}

#[test]
fn io500_mdtest_phases_sum_to_the_results() {
    let s = Scratch::new("live-io500");
    let ini = s.path("small.ini");
    std::fs::write(
        &ini,
        format!(
            "[global]\ndatadir = {}\nresultdir = {}\ntimestamp-resultdir = FALSE\n[debug]\nstonewall-time = 1\n\
             [ior-easy]\ntransferSize = 1m\nblockSize = 4m\n[ior-hard]\nsegmentCount = 20\n\
             [mdtest-easy]\nn = 400\n[mdtest-hard]\nn = 200\n",
            s.path("data").display(),
            s.path("results").display()
        ),
    )
    .unwrap();
    let live = s.path("live.jsonl");
    let o = iolab(&[
        "io500", "--tasks", "2", "--live", live.to_str().unwrap(), "--live-interval", "0.1",
        ini.to_str().unwrap(),
    ]);
    ok(&o, "io500");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&s.path("results/result.json"));
    assert_eq!(header["run_id"], doc["run_id"]);
    let live_sums = sums(&rows);
    let mut compared = 0;
    for p in doc["payload"]["phases"].as_array().unwrap() {
        if let Some(items) = p["detail"]["mdtest"]["items"].as_u64() {
            let name = p["phase"].as_str().unwrap();
            assert_eq!(live_sums.get(name).map(|x| x.0), Some(items), "{name}");
            compared += 1;
        }
    }
    assert!(compared >= 6, "the mdtest phases of io500: {compared}");
    assert_flushed(&rows);
}

#[test]
fn survey_disk_intervals_sum_to_the_regions_bytes() {
    let s = Scratch::new("live-survey");
    let dev = s.path("dev");
    std::fs::write(&dev, vec![0u8; 40 << 20]).unwrap();
    let (live, res) = (s.path("live.jsonl"), s.path("sv.json"));
    let o = iolab(&[
        "survey", "disk", "--size", "16", "--crghi", "2", "--thrhi", "4", "--rszlo", "64",
        "--rszhi", "128", "--json", res.to_str().unwrap(), "--live", live.to_str().unwrap(),
        "--live-interval", "0.1", dev.to_str().unwrap(),
    ]);
    ok(&o, "survey disk");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"]);
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for p in doc["payload"]["points"].as_array().unwrap() {
        let rsz = p["rsz_kb"].as_u64().unwrap() * 1024;
        for a in p["result"]["actions"].as_array().unwrap() {
            let e = want.entry(a["action"].as_str().unwrap().to_string()).or_default();
            for r in a["regions"].as_array().unwrap() {
                let bytes = r["bytes"].as_u64().unwrap();
                e.0 += bytes / rsz;
                e.1 += bytes;
            }
        }
    }
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
}

#[test]
fn report_charts_a_live_stream_and_refuses_what_is_not_one() {
    let s = Scratch::new("live-report");
    let live = s.path("live.jsonl");
    let o = iolab(&[
        "mdtest", "-n", "2000", "-d", s.path("d").to_str().unwrap(), "--live",
        live.to_str().unwrap(), "--live-interval", "0.1",
    ]);
    ok(&o, "mdtest");
    let out = s.path("rep");
    let o = iolab(&["report", "--live", live.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    ok(&o, "report --live");
    for f in ["index.html", "live-rate.svg", "live-rate.png", "live-p99.svg", "live-p99.png"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let svg = std::fs::read_to_string(out.join("live-rate.svg")).unwrap();
    assert!(svg.contains("file_create") || !svg.contains("<text"), "the legend names the phases");
    // A CSV stream is not charted: exit 2, nothing made.
    let csv = s.path("live.csv");
    std::fs::write(&csv, "schema,run_id\n").unwrap();
    let o = iolab(&["report", "--live", csv.to_str().unwrap(), "-o", s.path("rep2").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("jsonl"), "{}", stderr(&o));
    assert!(!s.path("rep2").exists());
}
