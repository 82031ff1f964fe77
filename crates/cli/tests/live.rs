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
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("line {l:?}: {e}")));
    let header = lines.next().expect("a header line");
    assert_eq!(header["schema"], "iolab.live/1", "{header}");
    (header, lines.collect())
}

/// Per phase, the aggregate rows' interval ops and bytes, summed.
fn sums(rows: &[Value]) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.get("host").is_none() && r.get("rank").is_none())
    {
        let e = out
            .entry(r["phase"].as_str().unwrap().to_string())
            .or_default();
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
                *out.entry(p["phase"].as_str().unwrap().to_string())
                    .or_default() += p["items"].as_u64().unwrap();
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
            out.insert(
                op.to_string(),
                (ops, c[format!("{op}_bytes")].as_u64().unwrap()),
            );
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

/// The results record the command line as given: the program as it was
/// started, then every word, the live options included.
fn assert_line_as_given(doc: &Value, words: &[&str]) {
    let want = format!("{} {}", env!("CARGO_BIN_EXE_iolab"), words.join(" "));
    assert_eq!(doc["command_line"], want.as_str());
}

/// The rows' last interval is marked and comes after every other row.
fn assert_flushed(rows: &[Value]) {
    let last_t = rows
        .iter()
        .map(|r| r["t"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let marked: Vec<&Value> = rows.iter().filter(|r| r["last"] == true).collect();
    assert!(!marked.is_empty(), "no row of the final flush");
    assert!(marked.iter().all(|r| r["t"].as_f64().unwrap() == last_t));
}

#[test]
fn mdtest_threads_intervals_sum_to_the_results() {
    let s = Scratch::new("live-mdtest");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let o = iolab(&[
        "mdtest",
        "-n",
        "3000",
        "-i",
        "2",
        "--tasks",
        "3",
        "-w",
        "100",
        "-e",
        "100",
        "-d",
        s.path("d").to_str().unwrap(),
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    ok(&o, "mdtest");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(
        header["run_id"], doc["run_id"],
        "the stream and the results share a run id"
    );
    let live_sums = sums(&rows);
    let items = mdtest_items(&doc);
    assert_eq!(
        live_sums.keys().collect::<Vec<_>>(),
        items.keys().collect::<Vec<_>>()
    );
    for (phase, n) in &items {
        assert_eq!(live_sums[phase].0, *n, "{phase}: ops of the intervals");
    }
    // -w and -e bytes per created and read file.
    assert_eq!(live_sums["file_create"].1, items["file_create"] * 100);
    assert_eq!(live_sums["file_read"].1, items["file_read"] * 100);
    assert_flushed(&rows);
    // The totals are cumulative and end at the results' counts.
    let last_create = rows.iter().rfind(|r| r["phase"] == "file_create").unwrap();
    assert_eq!(
        last_create["ops_total"].as_u64(),
        Some(items["file_create"])
    );
}

#[test]
fn mdtest_csv_has_the_same_fields_and_sums() {
    let s = Scratch::new("live-csv");
    let (live, res) = (s.path("live.csv"), s.path("r.json"));
    let o = iolab(&[
        "mdtest",
        "-n",
        "2000",
        "-d",
        s.path("d").to_str().unwrap(),
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-format",
        "csv",
        "--live-interval",
        "0.1",
    ]);
    ok(&o, "mdtest");
    let mut r = csv::Reader::from_path(&live).unwrap();
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    for col in [
        "schema",
        "run_id",
        "t",
        "phase",
        "ops",
        "bytes",
        "ops_total",
        "latency_p99_ns",
        "last",
    ] {
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
        "xdd",
        "-op",
        "write",
        "-targets",
        "2",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-reqsize",
        "4",
        "-numreqs",
        "3000",
        "-qd",
        "2",
        "-passes",
        "2",
        "-rwratio",
        "50",
        "-seek",
        "random",
        "-seek",
        "range",
        "2000",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
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
                "xdd",
                "-op",
                op,
                "-target",
                "s3://live-xdd/obj",
                "-reqsize",
                "5120",
                "-numreqs",
                "3",
                "--json",
                res.to_str().unwrap(),
                "--live",
                live.to_str().unwrap(),
                "--live-interval",
                "0.1",
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
        "xdd",
        "-op",
        "read",
        "-target",
        &f,
        "-reqsize",
        "1",
        "-blocksize",
        "4096",
        "-numreqs",
        "4000",
        "-passes",
        "100000",
        "-seek",
        "random",
        "-seek",
        "range",
        "4000",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    wait_for_lines(&live, 4);
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    assert_eq!(wait(c), 130);
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    assert_eq!(
        sums(&rows),
        xdd_counts(&json(&res)),
        "the interrupted run's counts"
    );
}

#[test]
fn a_failure_flushes_the_last_interval_with_its_errors() {
    let s = Scratch::new("live-fail");
    let f = data_file(&s, "f", 1);
    let (live, res) = (s.path("live.jsonl"), s.path("x.json"));
    // Reads past the end of a 1 MiB file: half the requests move nothing.
    let o = iolab(&[
        "xdd",
        "-op",
        "read",
        "-target",
        &f,
        "-reqsize",
        "1",
        "-blocksize",
        "4096",
        "-numreqs",
        "512",
        "-json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    let last = rows.iter().rfind(|r| r["phase"] == "read").unwrap();
    assert!(last["errors_total"].as_u64().unwrap() > 0, "{last}");
    assert_eq!(sums(&rows), xdd_counts(&json(&res)));
}

/// The value of counter `name` (without `_total`) for `phase`.
fn counter(
    exp: &openmetrics_parser::MetricsExposition<
        openmetrics_parser::OpenMetricsType,
        openmetrics_parser::OpenMetricsValue,
    >,
    name: &str,
    phase: &str,
) -> Option<f64> {
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
        "xdd",
        "-op",
        "read",
        "-target",
        &f,
        "-reqsize",
        "1",
        "-blocksize",
        "4096",
        "-numreqs",
        "4000",
        "-passes",
        "500",
        "-seek",
        "random",
        "-seek",
        "range",
        "4000",
        "--live",
        prom.to_str().unwrap(),
        "--live-format",
        "openmetrics",
        "--live-interval",
        "0.1",
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
            assert!(
                exp.families.contains_key("iolab_live_elapsed_seconds"),
                "{text}"
            );
            // Once the phase started, its families are in every file.
            for name in ["iolab_live_ops", "iolab_live_bytes", "iolab_live_errors"] {
                assert!(
                    !seen_ops || exp.families.contains_key(name),
                    "{name} in {text}"
                );
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
    assert_eq!(
        last_ops,
        4000.0 * 500.0,
        "the final file holds every operation"
    );
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
            let (start, end) = (
                f.get(9)?.parse::<u64>().ok()?,
                f.get(10)?.parse::<u64>().ok()?,
            );
            Some(end - start)
        })
        .collect()
}

/// Operations that may fall in the interval before or after theirs:
/// those that finish while the sampler reads the buckets (a few µs).
const SLACK: usize = 8;

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
        "xdd",
        "-op",
        "read",
        "-target",
        &f,
        "-reqsize",
        "1",
        "-blocksize",
        "4096",
        "-numreqs",
        "200000",
        "-seek",
        "random",
        "-seek",
        "range",
        "16000",
        "-ts",
        "detailed",
        "-ts",
        "output",
        ts.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    ok(&o, "xdd");
    let lat = ts_latencies(&s.path("ts.target.0000.csv"));
    assert_eq!(lat.len(), 200_000);
    let (_, rows) = read_jsonl(&live);
    let mut at = 0usize;
    let mut compared = 0;
    for r in rows.iter().filter(|r| r["phase"] == "read") {
        // The operations the interval's histogram timed: its buckets are
        // read a moment after its count, one after the other while the
        // QThread goes on, so an operation finished during the read may
        // be in this histogram or the next one's, whichever bucket it
        // fell in: the interval's operations are the next `count` of the
        // table give or take the few of that moment (SLACK).
        let n = r["latency"]["count"].as_u64().unwrap_or(0) as usize;
        let (from, to) = (at, at + n);
        at = to;
        if n < 1000 {
            continue;
        }
        let row = r["latency"]["p99_ns"].as_u64().unwrap();
        let offline: Vec<u64> = [(0, 0), (SLACK, 0), (0, SLACK), (SLACK, SLACK)]
            .iter()
            .flat_map(|&(a, b)| {
                [
                    (from.saturating_sub(a), (to + b).min(lat.len())),
                    (from + a, to - b),
                ]
            })
            .map(|(x, y)| p99(&mut lat[x..y].to_vec()))
            .collect();
        let (lo, hi) = (
            *offline.iter().min().unwrap(),
            *offline.iter().max().unwrap(),
        );
        assert!(
            within_a_bucket(row, lo) || within_a_bucket(row, hi) || (lo..=hi).contains(&row),
            "interval at {}: live p99 {row}, time stamps {lo}..{hi}",
            r["t"]
        );
        compared += 1;
    }
    assert_eq!(at, lat.len());
    assert!(compared >= 1, "no interval of 1000 operations");

    // Two targets with two QThreads each, one interval: four histograms
    // merged.
    let (b, ts2, live2) = (data_file(&s, "g", 64), s.path("ts2"), s.path("live2.jsonl"));
    let o = iolab(&[
        "xdd",
        "-op",
        "read",
        "-targets",
        "2",
        &f,
        &b,
        "-qd",
        "2",
        "-reqsize",
        "1",
        "-blocksize",
        "4096",
        "-numreqs",
        "40000",
        "-seek",
        "random",
        "-seek",
        "range",
        "16000",
        "-ts",
        "detailed",
        "-ts",
        "output",
        ts2.to_str().unwrap(),
        "--live",
        live2.to_str().unwrap(),
        "--live-interval",
        "3600",
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
    assert!(
        within_a_bucket(row, offline),
        "merged: live p99 {row}, time stamps {offline}"
    );
}

#[test]
fn bad_live_options_are_refused_before_anything_runs() {
    let s = Scratch::new("live-bad");
    let d = s.path("d");
    for (words, needle) in [
        (
            vec!["--live-interval", "0.01", "--live", "x"],
            "--live-interval 0.01",
        ),
        (
            vec!["--live", "-", "--live-format", "openmetrics"],
            "openmetrics",
        ),
        (
            vec!["--live", "x", "--live-format", "xml"],
            "--live-format xml",
        ),
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
fn runs_that_record_nothing_live_refuse_the_live_options() {
    let s = Scratch::new("live-unrecorded");
    let d = s.path("d");
    std::fs::create_dir(&d).unwrap();
    let ds = d.to_str().unwrap();
    let live = s.path("live.jsonl");
    let ls = live.to_str().unwrap();
    let f = format!("{ds}/f");
    for (words, needle) in [
        (
            vec!["survey", "plot", ds, "--live-view"],
            // Refused by survey's own check first: plot measures nothing.
            "plot makes charts from a .summary and measures nothing",
        ),
        (
            vec!["survey", "plot", ds, "--live", ls],
            "a live option needs a survey that runs",
        ),
        // No phase of xdd, ior or lst can end early: --steady would be
        // ignored, and the notes once said a phase had ended that ran on.
        (
            vec![
                "xdd", "-op", "write", "-target", &f, "-mbytes", "1", "--steady", "ops:50:1",
            ],
            "--steady is not implemented for xdd",
        ),
        (
            vec!["ior", "-w", "-o", &f, "--steady", "ops:50:1", "--live", ls],
            "--steady is not implemented for ior",
        ),
    ] {
        let o = iolab(&words);
        assert_eq!(o.status.code(), Some(2), "{words:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{words:?}: {}", stderr(&o));
        assert!(!live.exists(), "{words:?} wrote the live file");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            0,
            "{words:?} made files in the target"
        );
    }
}

#[test]
fn steady_state_ends_a_create_phase_and_the_results_say_so() {
    let s = Scratch::new("live-steady");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    // Far more files than the run can make before its rate settles
    // within 50 % over half a second.
    let o = iolab(&[
        "mdtest",
        "-F",
        "-C",
        "-n",
        "5000000",
        "-d",
        s.path("d").to_str().unwrap(),
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--steady",
        "ops:50:0.5",
    ]);
    ok(&o, "mdtest");
    let doc = json(&res);
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("file_create ended on steady state"),
        "{notes}"
    );
    let items = mdtest_items(&doc);
    assert!(items["file_create"] < 5_000_000, "{items:?}");
    let (_, rows) = read_jsonl(&live);
    assert_eq!(sums(&rows)["file_create"].0, items["file_create"]);
}

/// Each iteration's create phase may end on its own steady state (not
/// only the first), and a phase that finished by itself in an interval
/// is not said to have ended on steady state.
#[test]
fn steady_state_ends_every_iteration_and_only_a_phase_still_running() {
    let s = Scratch::new("live-steady-iter");
    let res = s.path("r.json");
    let o = iolab(&[
        "mdtest",
        "-F",
        "-C",
        "-n",
        "5000000",
        "-i",
        "2",
        "-d",
        s.path("d").to_str().unwrap(),
        "--json",
        res.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--steady",
        "ops:50:0.5",
    ]);
    ok(&o, "mdtest");
    let doc = json(&res);
    let notes: Vec<String> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .filter(|n| n.contains("ended on steady state"))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    let iterations = doc["payload"]["tests"][0]["iterations"].as_array().unwrap();
    for it in iterations {
        let create = it["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase"] == "file_create")
            .unwrap();
        assert!(create["items"].as_u64().unwrap() < 5_000_000, "{create}");
    }
    // A short create (and its remove) that end by themselves.
    for _ in 0..3 {
        let o = iolab(&[
            "mdtest",
            "-F",
            "-C",
            "-r",
            "-n",
            "200",
            "-d",
            s.path("e").to_str().unwrap(),
            "--json",
            res.to_str().unwrap(),
            "--live-interval",
            "0.1",
            "--steady",
            "ops:95:0.2",
        ]);
        ok(&o, "mdtest");
        let notes = json(&res)["notes"].to_string();
        assert!(!notes.contains("steady state"), "{notes}");
    }
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
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "mdtest",
        ])
        .args(["-n", "2000", "--tasks", "2", "-d"])
        .arg(s.path("d"))
        .args([
            "--json",
            res.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.1",
        ])
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
        *per.entry((
            r["rank"].as_u64().unwrap(),
            r["phase"].as_str().unwrap().into(),
        ))
        .or_default() += r["ops"].as_u64().unwrap();
    }
    for (phase, n) in &items {
        let both: u64 = [0, 1]
            .iter()
            .map(|k| per.get(&(*k, phase.clone())).copied().unwrap_or(0))
            .sum();
        assert_eq!(both, *n, "{phase}: ranks 0 and 1");
    }
    assert!(per.keys().any(|(k, _)| *k == 1), "rank 1 reported");
    // Latencies are merged, not averaged: an aggregate row times as many
    // operations as its ranks' rows of the same interval together.
    for a in rows
        .iter()
        .filter(|r| r.get("rank").is_none() && !r["latency"].is_null())
    {
        let parts: u64 = rows
            .iter()
            .filter(|r| r.get("rank").is_some() && r["t"] == a["t"] && r["phase"] == a["phase"])
            .map(|r| r["latency"]["count"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(a["latency"]["count"].as_u64().unwrap(), parts, "{a}");
    }
}

/// md-workbench is sized in the ini: sized as the app sizes it, from
/// mdtest-easy-write's rate over 400 files (seen at 278k/s), its
/// precreate took more than the 1 GiB scratch (a page per object).
#[test]
fn io500_every_phase_sums_to_the_results() {
    let s = Scratch::new("live-io500");
    let ini = s.path("small.ini");
    std::fs::write(
        &ini,
        format!(
            "[global]\ndatadir = {}\nresultdir = {}\ntimestamp-resultdir = FALSE\n[debug]\nstonewall-time = 1\n\
             [ior-easy]\ntransferSize = 1m\nblockSize = 4m\n[ior-hard]\nsegmentCount = 20\n\
             [mdtest-easy]\nn = 400\n[mdtest-hard]\nn = 200\n\
             [mdworkbench]\nprecreatePerSet = 200\nfilesPerProc = 100\n",
            s.path("data").display(),
            s.path("results").display()
        ),
    )
    .unwrap();
    let live = s.path("live.jsonl");
    let o = iolab(&[
        "io500",
        "--tasks",
        "2",
        "--mode=extended",
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        ini.to_str().unwrap(),
    ]);
    ok(&o, "io500");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&s.path("results/result.json"));
    assert_eq!(header["run_id"], doc["run_id"]);
    let live_sums = sums(&rows);
    let (mut md, mut ior, mut find, mut mdwb) = (0, 0, 0, 0);
    for p in doc["payload"]["phases"].as_array().unwrap() {
        let name = p["phase"].as_str().unwrap();
        if let Some(items) = p["detail"]["mdtest"]["items"].as_u64() {
            assert_eq!(live_sums.get(name).map(|x| x.0), Some(items), "{name}");
            md += 1;
        }
        // find: every entry it checked, no bytes.
        if let Some(total) = p["detail"]["find"]["total"].as_u64() {
            assert!(total > 0, "{name}: {p}");
            assert_eq!(live_sums.get(name), Some(&(total, 0)), "{name}");
            find += 1;
        }
        // md-workbench: every set and object operation, bytes both ways.
        if let Some(its) = p["detail"]["mdworkbench"]["iterations"].as_array() {
            let sum = |keys: &[&str]| -> u64 {
                its.iter()
                    .flat_map(|i| keys.iter().map(move |k| i[*k].as_u64().unwrap()))
                    .sum()
            };
            let ops = sum(&[
                "dsets_created",
                "dsets_deleted",
                "objects_created",
                "objects_stated",
                "objects_read",
                "objects_deleted",
            ]);
            let bytes = sum(&["bytes_written", "bytes_read"]);
            assert!(ops > 0, "{name}: {p}");
            assert_eq!(live_sums.get(name), Some(&(ops, bytes)), "{name}");
            mdwb += 1;
        }
        // Every transfer of an ior phase moves the transfer size.
        let d = &p["detail"]["ior"];
        if let (Some(bytes), Some(xfer)) = (d["bytes"].as_u64(), d["transfer_bytes"].as_u64()) {
            assert!(bytes > 0 && xfer > 0, "{name}: {d}");
            assert_eq!(live_sums.get(name), Some(&(bytes / xfer, bytes)), "{name}");
            ior += 1;
        }
    }
    assert!(md >= 6, "the mdtest phases of io500: {md}");
    assert!(ior >= 4, "the ior phases of io500: {ior}");
    assert!(find >= 3, "the find phases of io500 extended: {find}");
    assert_eq!(mdwb, 3, "the md-workbench phases of io500 extended");
    // Nothing else is recorded.
    assert_eq!(live_sums.len(), md + ior + find + mdwb, "{live_sums:?}");
    assert_flushed(&rows);
}

#[test]
fn survey_disk_intervals_sum_to_the_regions_bytes() {
    let s = Scratch::new("live-survey");
    let dev = s.path("dev");
    std::fs::write(&dev, vec![0u8; 40 << 20]).unwrap();
    let (live, res) = (s.path("live.jsonl"), s.path("sv.json"));
    let kit = s.path("kit");
    let words = [
        "survey",
        "disk",
        "--size",
        "16",
        "--crghi",
        "2",
        "--thrhi",
        "4",
        "--rszlo",
        "64",
        "--rszhi",
        "128",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        kit.to_str().unwrap(),
        dev.to_str().unwrap(),
    ];
    let o = iolab(&words);
    ok(&o, "survey disk");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_line_as_given(&doc, &words);
    assert_eq!(header["run_id"], doc["run_id"]);
    assert_eq!(sums(&rows), survey_counts(&doc));
    assert_flushed(&rows);
}

#[test]
fn survey_mds_intervals_sum_to_each_tests_operations() {
    let s = Scratch::new("live-mds");
    let dir = s.path("mdt");
    std::fs::create_dir(&dir).unwrap();
    let (live, res) = (s.path("live.jsonl"), s.path("mds.json"));
    let o = iolab(&[
        "survey",
        "mds",
        "--thrlo",
        "1",
        "--thrhi",
        "2",
        "--dir-count",
        "1",
        "--file-count",
        "3000",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        s.path("kit").to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    ok(&o, "survey mds");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"]);
    // Every test of every point (1 and 2 threads), summed by test name.
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for p in doc["payload"]["points"].as_array().unwrap() {
        for t in p["tests"].as_array().unwrap() {
            let e = want
                .entry(t["test"].as_str().unwrap().to_string())
                .or_default();
            for target in t["targets"].as_array().unwrap() {
                e.0 += target["rates"]["amount"].as_u64().unwrap();
            }
        }
    }
    assert_eq!(want.len(), 5, "{want:?}");
    assert_eq!(want["create"].0, 6000, "{want:?}");
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "files left");
}

#[test]
fn survey_ost_intervals_sum_to_each_targets_megabytes() {
    let s = Scratch::new("live-ost");
    let (a, b) = (s.path("ost0"), s.path("ost1"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let live = s.path("live.jsonl");
    let o = iolab(&[
        "survey",
        "ost",
        "--size",
        "6",
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        s.path("kit").to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    ok(&o, "survey ost");
    let (_, rows) = read_jsonl(&live);
    // Two targets of 6 MiB, written then read in 1 MiB blocks.
    let mib = 1u64 << 20;
    let want: BTreeMap<String, (u64, u64)> = [
        ("read".to_string(), (12, 12 * mib)),
        ("write".to_string(), (12, 12 * mib)),
    ]
    .into();
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
}

#[test]
fn survey_obdfilter_intervals_sum_to_each_tests_bytes() {
    let s = Scratch::new("live-obd");
    let dir = s.path("ost0");
    std::fs::create_dir(&dir).unwrap();
    let live = s.path("live.jsonl");
    let res = s.path("obd.json");
    let o = iolab(&[
        "survey",
        "obdfilter",
        "--size",
        "4",
        "--nobjhi",
        "1",
        "--thrhi",
        "2",
        "--tests",
        "write read",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        s.path("kit").to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    ok(&o, "survey obdfilter");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"]);
    // 1 MiB records; the bytes of each test over the points (1 and 2 threads).
    let want = obdfilter_counts(&doc);
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(want["write"].1, 8 << 20, "{want:?}");
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
}

/// The object survey's records (1 MiB each) and bytes per test, over
/// its points and targets.
fn obdfilter_counts(doc: &Value) -> BTreeMap<String, (u64, u64)> {
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for p in doc["payload"]["points"].as_array().unwrap() {
        for t in p["result"]["tests"].as_array().unwrap() {
            let e = want
                .entry(t["test"].as_str().unwrap().to_string())
                .or_default();
            for target in t["targets"].as_array().unwrap() {
                let bytes = target["rates"]["amount"].as_u64().unwrap();
                e.0 += bytes >> 20;
                e.1 += bytes;
            }
        }
    }
    want
}

/// The object survey's network case (`case=network`): every record the
/// client sends to the echo agents (two, on loopback, started through a
/// remote shell that runs them here) is counted under its test, and the
/// intervals sum to each test's bytes over the points.
#[test]
fn survey_obdfilter_network_intervals_sum_to_each_tests_bytes() {
    let s = Scratch::new("live-obd-net");
    let rsh = common::local_rsh(&s);
    let port = common::e2e::free_ports(2).to_string();
    let (live, res) = (s.path("live.jsonl"), s.path("obd.json"));
    let o = iolab(&[
        "survey",
        "obdfilter",
        "--case",
        "network",
        "--rsh",
        rsh.to_str().unwrap(),
        "--remote-iolab",
        env!("CARGO_BIN_EXE_iolab"),
        "--echo-port",
        &port,
        "--size",
        "4",
        "--nobjhi",
        "1",
        "--thrhi",
        "2",
        "--tests",
        "write read",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        s.path("net").to_str().unwrap(),
        "127.0.0.1",
        "localhost",
    ]);
    ok(&o, "survey obdfilter case=network");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"]);
    let want = obdfilter_counts(&doc);
    // Two agents, 4 MiB each, at 1 and 2 threads.
    assert_eq!(want["write"].1, 2 * 2 * (4 << 20), "{want:?}");
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
}

/// The object survey with a local target and two on "other hosts" (a
/// remote shell that runs their agents here): each agent prints its
/// intervals, the survey merges them as ranks 1 and 2 (a rank per host,
/// its totals going on across the agents of successive tests and
/// points, never back), and every rank's rows sum to its targets' bytes.
#[test]
fn survey_obdfilter_remote_targets_merge_as_ranks() {
    let s = Scratch::new("live-obd-remote");
    let dirs: Vec<std::path::PathBuf> = ["local", "ra", "rb"].iter().map(|d| s.path(d)).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let rsh = common::local_rsh(&s);
    let (ra, rb) = (
        format!("nodeA:{}", dirs[1].display()),
        format!("nodeB:{}", dirs[2].display()),
    );
    let (live, res) = (s.path("live.jsonl"), s.path("obd.json"));
    let o = iolab(&[
        "survey",
        "obdfilter",
        dirs[0].to_str().unwrap(),
        &ra,
        &rb,
        "--rsh",
        &format!("exec:{}", rsh.display()),
        "--remote-iolab",
        env!("CARGO_BIN_EXE_iolab"),
        "--size",
        "4",
        "--rszlo",
        "256",
        "--rszhi",
        "256",
        "--nobjhi",
        "1",
        "--thrhi",
        "2",
        "--tests",
        "write read",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        s.path("kit").to_str().unwrap(),
    ]);
    ok(&o, "survey obdfilter with remote targets");
    let (_, rows) = read_jsonl(&live);
    let doc = json(&res);
    // Bytes per (rank, test): rank 0 the local target, 1 nodeA, 2 nodeB.
    let mut want: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for p in doc["payload"]["points"].as_array().unwrap() {
        for t in p["result"]["tests"].as_array().unwrap() {
            for target in t["targets"].as_array().unwrap() {
                let name = target["target"].as_str().unwrap();
                let rank = match name {
                    n if n.starts_with("nodeA:") => 1,
                    n if n.starts_with("nodeB:") => 2,
                    _ => 0,
                };
                *want
                    .entry((rank, t["test"].as_str().unwrap().to_string()))
                    .or_default() += target["rates"]["amount"].as_u64().unwrap();
            }
        }
    }
    // 4 MiB per target and test, at 1 and 2 threads.
    assert_eq!(want[&(2, "read".to_string())], 2 * (4 << 20), "{want:?}");
    let mut got: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let mut last_total: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.get("rank").is_some()) {
        let key = (
            r["rank"].as_u64().unwrap(),
            r["phase"].as_str().unwrap().to_string(),
        );
        *got.entry(key.clone()).or_default() += r["bytes"].as_u64().unwrap();
        let total = r["bytes_total"].as_u64().unwrap();
        let before = last_total.insert(key.clone(), total).unwrap_or(0);
        assert!(
            total >= before,
            "{key:?}: totals went back from {before} to {total}"
        );
        assert_eq!(total, got[&key], "{key:?}: the total is the sum so far");
    }
    assert_eq!(got, want);
    let agg = sums(&rows);
    for test in ["write", "read"] {
        let all: u64 = (0..3).map(|k| want[&(k, test.to_string())]).sum();
        assert_eq!(agg[test].1, all, "{test}");
    }
    assert_flushed(&rows);
}

/// The disk survey's records and bytes per action, from its regions.
fn survey_counts(doc: &Value) -> BTreeMap<String, (u64, u64)> {
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for p in doc["payload"]["points"].as_array().unwrap() {
        let rsz = p["rsz_kb"].as_u64().unwrap() * 1024;
        for a in p["result"]["actions"].as_array().unwrap() {
            let e = want
                .entry(a["action"].as_str().unwrap().to_string())
                .or_default();
            for r in a["regions"].as_array().unwrap() {
                let bytes = r["bytes"].as_u64().unwrap();
                e.0 += bytes / rsz;
                e.1 += bytes;
            }
        }
    }
    want
}

#[test]
fn report_charts_a_live_stream_and_refuses_what_is_not_one() {
    let s = Scratch::new("live-report");
    let live = s.path("live.jsonl");
    let o = iolab(&[
        "mdtest",
        "-n",
        "2000",
        "-d",
        s.path("d").to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    ok(&o, "mdtest");
    let out = s.path("rep");
    let o = iolab(&[
        "report",
        "--live",
        live.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    ok(&o, "report --live");
    for f in [
        "index.html",
        "live-rate.svg",
        "live-rate.png",
        "live-p99.svg",
        "live-p99.png",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let svg = std::fs::read_to_string(out.join("live-rate.svg")).unwrap();
    assert!(
        svg.contains("file_create") || !svg.contains("<text"),
        "the legend names the phases"
    );
    // A CSV stream is not charted: exit 2, nothing made.
    let csv = s.path("live.csv");
    std::fs::write(&csv, "schema,run_id\n").unwrap();
    let o = iolab(&[
        "report",
        "--live",
        csv.to_str().unwrap(),
        "-o",
        s.path("rep2").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("jsonl"), "{}", stderr(&o));
    assert!(!s.path("rep2").exists());
    // A font the user names that cannot be used is refused, nothing
    // made (it once gave charts without text, exit 0).
    for font in [s.path("none.ttf"), csv] {
        let o = iolab(&[
            "report",
            "--live",
            live.to_str().unwrap(),
            "-o",
            s.path("rep3").to_str().unwrap(),
            "--font",
            font.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--font"), "{}", stderr(&o));
        assert!(!s.path("rep3").exists());
    }
}

/// ior's transfers and bytes per access, over every test and iteration.
fn ior_counts(doc: &Value) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for t in doc["payload"]["tests"].as_array().unwrap() {
        for it in t["iterations"].as_array().unwrap() {
            for access in ["write", "read"] {
                let a = &it[access];
                if a.is_object() {
                    let e = out.entry(access.to_string()).or_default();
                    e.0 += a["transfers"].as_u64().unwrap();
                    e.1 += a["bytes"].as_u64().unwrap();
                }
            }
        }
    }
    out
}

#[test]
fn ior_threads_intervals_sum_to_the_results() {
    let s = Scratch::new("live-ior");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    // -W's read-back is no access of the results: it must not count.
    let o = iolab(&[
        "ior",
        "-w",
        "-r",
        "-W",
        "-R",
        "-F",
        "-b",
        "1m",
        "-t",
        "4k",
        "-s",
        "4",
        "-i",
        "2",
        "--tasks",
        "3",
        "-o",
        s.path("f").to_str().unwrap(),
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    ok(&o, "ior");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["tool"], "ior");
    assert_eq!(
        header["run_id"], doc["run_id"],
        "the stream and the results share a run id"
    );
    let want = ior_counts(&doc);
    assert_eq!(
        want["write"],
        (2 * 3 * 4 * 256, (2 * 3 * 4) << 20),
        "{want:?}"
    );
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
    // Every interval's transfers are timed.
    let timed: u64 = rows
        .iter()
        .filter(|r| r.get("rank").is_none())
        .map(|r| r["latency"]["count"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(timed, want.values().map(|v| v.0).sum::<u64>());
}

/// `iolab ior OPTS -o S/f` on two mpirun ranks, with live rows every
/// 0.1 s and a JSON result; the paths of both, once the run passed.
fn mpirun_ior_live(s: &Scratch, opts: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let mut c = Command::new("mpirun");
    let _session = OmpiSession::attach(&mut c);
    let o = c
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .args([env!("CARGO_BIN_EXE_iolab"), "ior"])
        .args(opts.split(' '))
        .arg("-o")
        .arg(s.path("f"))
        .args(["--json", res.to_str().unwrap(), "--live"])
        .args([live.to_str().unwrap(), "--live-interval", "0.1"])
        .env("CI", "1")
        .output()
        .unwrap();
    ok(&o, "mpirun ior");
    (live, res)
}

#[test]
fn ior_two_ranks_by_two_threads_merge_at_rank_0() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("live_ior_mpi", "mpirun not installed");
    }
    let s = Scratch::new("live-ior-mpi");
    let (live, res) = mpirun_ior_live(&s, "-w -r -C -b 512k -t 8k -s 3 --tasks 2");
    let (header, rows) = read_jsonl(&live);
    let doc = json(&res);
    assert_eq!(header["run_id"], doc["run_id"]);
    let want = ior_counts(&doc);
    assert_eq!(want["write"], (4 * 3 * 64, 4 * 3 * 512 * 1024), "{want:?}");
    assert_eq!(sums(&rows), want);
    assert_flushed(&rows);
    let mut per: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.get("rank").is_some()) {
        *per.entry((
            r["rank"].as_u64().unwrap(),
            r["phase"].as_str().unwrap().into(),
        ))
        .or_default() += r["ops"].as_u64().unwrap();
    }
    for (access, (n, _)) in &want {
        assert_eq!(
            per[&(0, access.clone())],
            n / 2,
            "{access}: rank 0's two tasks"
        );
        assert_eq!(
            per[&(1, access.clone())],
            n / 2,
            "{access}: rank 1's two tasks"
        );
    }
}

/// Under MPI every aggregate row is one interval of every rank: rank 1's
/// report of an interval is waited for (not taken into the next row as
/// it comes), and two of its intervals are never one row.
#[test]
fn mpi_ranks_rows_line_up_interval_by_interval() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("live_ior_mpi_lineup", "mpirun not installed");
    }
    let s = Scratch::new("live-ior-lineup");
    // A million 128-byte writes per rank: a run of many 0.1 s intervals
    // even on a fast machine (128 MiB in 4 KiB writes took 0.26 s, too
    // few intervals to tell).
    let (live, res) = mpirun_ior_live(&s, "-w -F -b 128m -t 128");
    let (_, rows) = read_jsonl(&live);
    assert_eq!(sums(&rows), ior_counts(&json(&res)));
    let write: Vec<&Value> = rows.iter().filter(|r| r["phase"] == "write").collect();
    // The final flush gives every rank's every phase a row: left out.
    let aggregate: Vec<&&Value> = write
        .iter()
        .filter(|r| r.get("rank").is_none() && r["last"] != true)
        .collect();
    assert!(aggregate.len() >= 4, "too few intervals to tell: {rows:?}");
    // Ranks that wrote in the interval ending at `t` (a rank done with
    // its blocks writes no more, and may give a last row of 0 ops).
    let ranks_at = |t: &Value| -> Vec<u64> {
        write
            .iter()
            .filter(|r| r.get("rank").is_some() && r["t"] == *t && r["ops"] != 0)
            .map(|r| r["rank"].as_u64().unwrap())
            .collect()
    };
    // A rank writes from the barrier until its blocks are done: its rows
    // are those of a run of intervals, with no hole (an interval whose
    // report came late, its figures then taken into the next row) but
    // where the aggregate row says it is missing.
    for rank in [0, 1] {
        let had: Vec<bool> = aggregate
            .iter()
            .map(|a| ranks_at(&a["t"]).contains(&rank) || missing(a).contains(&rank))
            .collect();
        let first = had.iter().position(|h| *h).expect("the rank's rows");
        let end = had.iter().rposition(|h| *h).unwrap();
        assert!(
            had[first..=end].iter().all(|h| *h),
            "rank {rank} lacks an interval: {had:?} {rows:?}"
        );
    }
    for a in &aggregate {
        let per: u64 = write
            .iter()
            .filter(|r| r.get("rank").is_some() && r["t"] == a["t"])
            .map(|r| r["ops"].as_u64().unwrap())
            .sum();
        assert_eq!(per, a["ops"].as_u64().unwrap(), "{a}");
    }
    assert!(
        aggregate.iter().filter(|a| missing(a).is_empty()).count() * 2 > aggregate.len(),
        "most intervals are whole on a quiet machine: {rows:?}"
    );
}

/// The ranks an aggregate row says are missing.
fn missing(row: &Value) -> Vec<u64> {
    row.get("missing")
        .map(|m| {
            m.as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_u64().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `words`, waits for `n` lines of the stream at `live`, sends
/// SIGINT: the run exits 130, its last interval flushed, every line
/// parsed. Returns the rows.
fn interrupted(words: &[&str], live: &Path, n: usize) -> Vec<Value> {
    let c = spawn(words);
    wait_for_lines(live, n);
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    assert_eq!(wait(c), 130, "{words:?}");
    let (_, rows) = read_jsonl(live);
    assert_flushed(&rows);
    rows
}

/// Each phase's last aggregate row carries the sum of its intervals:
/// the flush missed nothing the stream had counted.
fn assert_totals_whole(rows: &[Value]) {
    for (phase, (ops, bytes)) in sums(rows) {
        let last = rows
            .iter()
            .rfind(|r| r.get("rank").is_none() && r["phase"] == phase.as_str())
            .unwrap();
        assert_eq!(last["last"], true, "{last}");
        assert_eq!(last["ops_total"].as_u64(), Some(ops), "{phase}");
        assert_eq!(last["bytes_total"].as_u64(), Some(bytes), "{phase}");
    }
}

#[test]
fn ior_ctrl_c_and_failure_flush_the_last_interval_with_the_results_counts() {
    let s = Scratch::new("live-ior-stop");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let f = s.path("f");
    let rows = interrupted(
        &[
            "ior",
            "-F",
            "-w",
            "-O",
            "interIODelay=2000",
            "-b",
            "64m",
            "-t",
            "4k",
            "-o",
            f.to_str().unwrap(),
            "--tasks",
            "2",
            "--json",
            res.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.1",
        ],
        &live,
        4,
    );
    let doc = json(&res);
    assert_eq!(doc["outcome"]["status"], "interrupted");
    let want = ior_counts(&doc);
    assert!(want["write"].0 > 0, "{want:?}");
    assert_eq!(sums(&rows), want, "the interrupted write's transfers");

    // A file system that fills up: the write fails (exit 1).
    let small = SmallFs::new(&s, "small", "2m");
    let o = iolab(&[
        "ior",
        "-F",
        "-w",
        "-r",
        "-b",
        "4m",
        "-t",
        "64k",
        "-o",
        &small.path("f"),
        "--tasks",
        "2",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    let last = rows.iter().rfind(|r| r["phase"] == "write").unwrap();
    assert!(last["errors_total"].as_u64().unwrap() > 0, "{last}");
    let doc = json(&res);
    assert_eq!(doc["outcome"]["status"], "error");
    assert_eq!(sums(&rows), ior_counts(&doc));
}

#[test]
fn mdtest_ctrl_c_and_a_full_file_system_flush_the_last_interval() {
    let s = Scratch::new("live-md-stop");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let d = s.path("d");
    let rows = interrupted(
        &[
            "mdtest",
            "-F",
            "-C",
            "-n",
            "5000000",
            "--tasks",
            "2",
            "-d",
            d.to_str().unwrap(),
            "--json",
            res.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.1",
        ],
        &live,
        4,
    );
    assert_totals_whole(&rows);
    assert!(sums(&rows)["file_create"].0 > 0);
    assert_eq!(json(&res)["outcome"]["status"], "interrupted");

    // A file system with room for a few hundred inodes: the directory
    // creation fails once they are gone (exit 1), and the stream counts
    // exactly the directories that fitted.
    let small = SmallFs::new(&s, "inodes", "nr_inodes=300");
    let free = free_inodes(&small.dir);
    let o = iolab(&[
        "mdtest",
        "-n",
        "400",
        "--tasks",
        "2",
        "-d",
        &small.path("d"),
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    assert_totals_whole(&rows);
    let last = rows.iter().rfind(|r| r["phase"] == "dir_create").unwrap();
    // The first task to find the inodes gone stops the other, which may
    // have found it too.
    let errors = last["errors_total"].as_u64().unwrap();
    assert!((1..=2).contains(&errors), "{last}");
    // -d and its test-dir.0-0 are made outside the phases.
    let made = sums(&rows).values().map(|v| v.0).sum::<u64>() + 2;
    assert_eq!(made, free, "every free inode was one the stream counted");
    assert_eq!(free_inodes(&small.dir), free, "mdtest removed what it made");
}

/// A stream whose own file system fills is said on stderr and removed
/// (complete or absent): it was cut mid-line, and the run exited 1
/// with nothing said unless --json carried the note.
#[test]
fn a_stream_that_cannot_be_written_is_said_and_removed() {
    let s = Scratch::new("live-full-stream");
    let small = SmallFs::new(&s, "tiny", "64k");
    if !small.mounted {
        return;
    }
    // Leave about 4 KiB: a few intervals fit, then the stream fails.
    let _ = std::fs::write(small.dir.join("fill"), vec![0u8; 61_000]);
    let live = small.dir.join("live.jsonl");
    let o = iolab(&[
        "mdtest",
        "-F",
        "-n",
        "100000",
        "--tasks",
        "2",
        "-d",
        s.path("d").to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the stream was cut short and is removed"),
        "{}",
        stderr(&o)
    );
    assert!(!live.exists());
}

/// Inodes free on the file system of `dir`.
fn free_inodes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: a zeroed statvfs is valid; statvfs fills it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_ffree as u64
}

/// An io500 ini on `datadir` with small phases (`stonewall` seconds).
fn io500_ini(s: &Scratch, datadir: &str, stonewall: u32, md_n: u32) -> std::path::PathBuf {
    let ini = s.path("run.ini");
    std::fs::write(
        &ini,
        format!(
            "[global]\ndatadir = {datadir}\nresultdir = {}\ntimestamp-resultdir = FALSE\n[debug]\nstonewall-time = {stonewall}\n\
             [ior-easy]\ntransferSize = 1m\nblockSize = 4m\n[ior-hard]\nsegmentCount = 20\n\
             [mdtest-easy]\nn = {md_n}\n[mdtest-hard]\nn = 200\n",
            s.path("results").display()
        ),
    )
    .unwrap();
    ini
}

#[test]
fn io500_ctrl_c_and_a_full_file_system_flush_the_last_interval() {
    let s = Scratch::new("live-io500-stop");
    let live = s.path("live.jsonl");
    let ini = io500_ini(&s, s.path("data").to_str().unwrap(), 300, 5_000_000);
    // Stopped in mdtest-easy-write (ior-easy-write ran before it).
    let c = spawn(&[
        "io500",
        "--tasks",
        "2",
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        ini.to_str().unwrap(),
    ]);
    let until = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&live)
        .unwrap_or_default()
        .contains("mdtest-easy-write")
    {
        assert!(Instant::now() < until, "mdtest-easy-write never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    assert_eq!(wait(c), 130);
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    assert_totals_whole(&rows);
    let doc = json(&s.path("results/result.json"));
    assert_eq!(doc["outcome"]["status"], "interrupted");
    let easy = doc["payload"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "ior-easy-write")
        .unwrap();
    let bytes = easy["detail"]["ior"]["bytes"].as_u64().unwrap();
    assert_eq!(
        sums(&rows)["ior-easy-write"],
        (bytes >> 20, bytes),
        "the phase before the stop"
    );
    assert!(sums(&rows)["mdtest-easy-write"].0 > 0);

    // A datadir on a 3 MiB file system: ior-easy-write fails (exit 1).
    let small = SmallFs::new(&s, "small", "3m");
    let ini = io500_ini(&s, &small.path("data"), 1, 400);
    let o = iolab(&[
        "io500",
        "--tasks",
        "2",
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        ini.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    assert_totals_whole(&rows);
    let write = rows
        .iter()
        .rfind(|r| r["phase"] == "ior-easy-write")
        .unwrap();
    assert!(write["errors_total"].as_u64().unwrap() > 0, "{write}");
    let bytes = write["bytes_total"].as_u64().unwrap();
    assert!(
        bytes <= 3 << 20 && bytes % (1 << 20) == 0,
        "whole transfers that fitted: {bytes}"
    );
    assert_eq!(sums(&rows).len(), 1, "the run stopped at its first phase");
}

#[test]
fn survey_ctrl_c_and_a_failed_region_flush_the_last_interval() {
    let s = Scratch::new("live-survey-stop");
    let (live, res) = (s.path("live.jsonl"), s.path("sv.json"));
    let dev = s.path("dev");
    std::fs::write(&dev, vec![0u8; 200 << 20]).unwrap();
    let kit = s.path("kit");
    let rows = interrupted(
        &[
            "survey",
            "disk",
            "--size",
            "128",
            "--crghi",
            "4",
            "--thrhi",
            "16",
            "--rszlo",
            "4",
            "--rszhi",
            "1024",
            "--json",
            res.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.1",
            "--rslt",
            kit.to_str().unwrap(),
            dev.to_str().unwrap(),
        ],
        &live,
        4,
    );
    assert_totals_whole(&rows);
    assert!(sums(&rows)["write"].0 > 0);

    // A sparse "device" on a 4 MiB file system: writes beyond its room
    // fail, region by region; the run goes on and ends in exit 1, and
    // the stream counts what the regions moved and their failures.
    let small = SmallFs::new(&s, "small", "4m");
    let sparse = small.path("dev");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(40 << 20)
        .unwrap();
    let o = iolab(&[
        "survey",
        "disk",
        "--size",
        "16",
        "--crghi",
        "2",
        "--thrhi",
        "4",
        "--rszlo",
        "64",
        "--rszhi",
        "128",
        "--json",
        res.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "0.1",
        "--rslt",
        kit.to_str().unwrap(),
        &sparse,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    let doc = json(&res);
    assert_eq!(doc["outcome"]["status"], "error");
    let write = rows.iter().rfind(|r| r["phase"] == "write").unwrap();
    assert!(write["errors_total"].as_u64().unwrap() > 0, "{write}");
    assert_eq!(sums(&rows), survey_counts(&doc));
}

/// An lst agent on loopback (another process, as another host would
/// be), killed on drop.
struct LstAgent {
    child: std::process::Child,
    addr: String,
}

impl LstAgent {
    fn start() -> LstAgent {
        let port = common::e2e::free_ports(1);
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["lst", "agent", "--listen", &addr])
            .env_remove("IOLAB_KEY_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        LstAgent { child, addr }
    }
}

impl Drop for LstAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// lst's RPCs and payload bytes (both ways) of its clients, over every
/// point and repeat.
fn lst_counts(doc: &Value) -> (u64, u64) {
    let (mut rpcs, mut bytes) = (0, 0);
    for p in doc["payload"].as_array().unwrap() {
        for r in p["runs"].as_array().unwrap() {
            for n in r["client_nodes"].as_array().unwrap() {
                rpcs += n["rpcs"].as_u64().unwrap();
                bytes += n["tx_bytes"].as_u64().unwrap() + n["rx_bytes"].as_u64().unwrap();
            }
        }
    }
    (rpcs, bytes)
}

/// Each agent's rows add up to the aggregate's, interval by interval
/// (counts and timed operations: merged, not averaged).
fn assert_agents_add_up(rows: &[Value], agents: &[&str]) {
    for a in rows.iter().filter(|r| r.get("rank").is_none()) {
        let parts: Vec<&Value> = rows
            .iter()
            .filter(|r| r.get("rank").is_some() && r["t"] == a["t"] && r["phase"] == a["phase"])
            .collect();
        let sum = |k: &str| parts.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(a["ops"].as_u64().unwrap(), sum("ops"), "{a}");
        assert_eq!(a["bytes"].as_u64().unwrap(), sum("bytes"), "{a}");
        let timed: u64 = parts
            .iter()
            .map(|r| r["latency"]["count"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(a["latency"]["count"].as_u64().unwrap_or(0), timed, "{a}");
    }
    for r in rows.iter().filter(|r| r.get("rank").is_some()) {
        let host = r["host"].as_str().unwrap();
        assert!(agents.contains(&host), "{r}");
        assert_eq!(
            r["rank"].as_u64().unwrap() as usize,
            1 + agents.iter().position(|a| *a == host).unwrap()
        );
    }
}

#[test]
fn lst_brw_agents_intervals_merge_at_the_console() {
    let (a, b) = (LstAgent::start(), LstAgent::start());
    let both = format!("{},{}", a.addr, b.addr);
    let s = Scratch::new("live-lst");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    for op in ["write", "read"] {
        let words = [
            "lst",
            "run",
            "brw",
            op,
            "size=8k",
            "check=simple",
            "--from",
            &both,
            "--to",
            &both,
            "--concurrency",
            "2,5",
            "--count",
            "4000",
            "--json",
            res.to_str().unwrap(),
            "--live",
            live.to_str().unwrap(),
            "--live-interval",
            "0.1",
        ];
        let o = iolab(&words);
        ok(&o, op);
        let (header, rows) = read_jsonl(&live);
        let doc = json(&res);
        assert_line_as_given(&doc, &words);
        assert_eq!(header["tool"], "lst");
        assert_eq!(header["run_id"], doc["run_id"]);
        let (rpcs, bytes) = lst_counts(&doc);
        assert_eq!(rpcs, 2 * 2 * 4000, "{op}: 2 points x 2 clients");
        assert_eq!(bytes, rpcs * 8192);
        let got = sums(&rows);
        assert_eq!(got.keys().collect::<Vec<_>>(), [op], "{op}");
        assert_eq!(got[op], (rpcs, bytes), "{op}");
        assert_flushed(&rows);
        assert_agents_add_up(&rows, &[&a.addr, &b.addr]);
        // Both agents' final rows: each ran 2 x 4000 RPCs.
        for addr in [&a.addr, &b.addr] {
            let last = rows.iter().rfind(|r| r["host"] == addr.as_str()).unwrap();
            assert_eq!(
                (last["last"].as_bool(), last["ops_total"].as_u64()),
                (Some(true), Some(8000)),
                "{last}"
            );
        }
    }
}

#[test]
fn lst_ctrl_c_and_a_dead_agent_flush_the_last_interval() {
    let (a, mut b) = (LstAgent::start(), LstAgent::start());
    let s = Scratch::new("live-lst-stop");
    let live = s.path("live.jsonl");
    let words = |to: &str| {
        vec![
            "lst".to_string(),
            "run".into(),
            "ping".into(),
            "--from".into(),
            a.addr.clone(),
            "--to".into(),
            to.to_string(),
            "--duration".into(),
            "300".into(),
            "--live".into(),
            live.to_str().unwrap().into(),
            "--live-interval".into(),
            "0.1".into(),
        ]
    };
    let w = words(&b.addr);
    let rows = interrupted(&w.iter().map(String::as_str).collect::<Vec<_>>(), &live, 4);
    assert_totals_whole(&rows);
    assert!(sums(&rows)["ping"].0 > 0);
    assert_agents_add_up(&rows, &[&a.addr, &b.addr]);

    // The server agent dies under the run: exit 1, and the stream ends
    // with the client agent's last reading.
    std::fs::remove_file(&live).unwrap();
    let w = words(&b.addr);
    let c = spawn(&w.iter().map(String::as_str).collect::<Vec<_>>());
    wait_for_lines(&live, 4);
    b.child.kill().unwrap();
    assert_eq!(wait(c), 1);
    let (_, rows) = read_jsonl(&live);
    assert_flushed(&rows);
    assert_totals_whole(&rows);
    let last = rows.iter().rfind(|r| r["host"] == a.addr.as_str()).unwrap();
    assert_eq!(last["last"], true, "{last}");
    assert!(last["ops_total"].as_u64().unwrap() > 0, "{last}");
}

#[test]
fn lst_agents_on_other_hosts_of_a_fake_cluster_merge_at_the_console() {
    let cluster = match iolab_testkit::FakeCluster::new(3) {
        Ok(c) => c,
        Err(e) => return skip_or_fail("live_lst_cluster", &e),
    };
    let node = |i: usize| {
        let (ns, addr) = cluster.host(i);
        format!("{ns}@{addr}")
    };
    let s = Scratch::new("live-lst-cluster");
    let (live, res) = (s.path("live.jsonl"), s.path("r.json"));
    let (console_ns, _) = cluster.host(0);
    let (from, to) = (node(1), node(2));
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &console_ns,
            env!("CARGO_BIN_EXE_iolab"),
            "lst",
            "run",
            "brw",
            "read",
        ])
        .args([
            "size=4k",
            "--from",
            &from,
            "--to",
            &to,
            "--rsh",
            "ip netns exec",
        ])
        .args([
            "--concurrency",
            "4",
            "--count",
            "3000",
            "--json",
            res.to_str().unwrap(),
        ])
        .args(["--live", live.to_str().unwrap(), "--live-interval", "0.1"])
        .env("CI", "1")
        .output()
        .unwrap();
    ok(&o, "lst in the cluster");
    let (_, rows) = read_jsonl(&live);
    let (rpcs, bytes) = lst_counts(&json(&res));
    assert_eq!((rpcs, bytes), (3000, 3000 * 4096));
    assert_eq!(sums(&rows)["read"], (rpcs, bytes));
    assert_flushed(&rows);
    // The client agent did every RPC; the server agent none of its own.
    let hosts = [from.as_str(), to.as_str()];
    assert_agents_add_up(&rows, &hosts);
    let client = rows.iter().rfind(|r| r["host"] == from.as_str()).unwrap();
    assert_eq!(client["ops_total"].as_u64(), Some(3000), "{client}");
}

/// An end-to-end copy with `--live` on both sides, authenticated by a
/// shared key: the destination's stream holds both sides (its own
/// writes as rank 0, the source's reads as rank 1, sent over the copy's
/// live link), each summing to that side's results; the source's own
/// stream holds its reads. With `--live` on the destination alone, its
/// stream holds its writes only, and the copy links nothing.
#[test]
fn xdd_e2e_destination_stream_holds_both_sides() {
    use common::e2e::{free_ports, random_file, same, words, Bg};
    let s = Scratch::new("live-e2e");
    let bytes = 6 * 1024 * 1024 + 4096;
    random_file(&s.path("src.dat"), bytes);
    std::fs::write(s.path("k"), "a shared secret for the live link\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(
        s.path("k"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let side = |line: String| {
        let mut w = vec!["xdd".to_string()];
        w.extend(words(&line));
        w
    };
    for source_live in [true, false] {
        let _ = std::fs::remove_file(s.path("dst.dat"));
        let p = free_ports(2);
        let common = format!(
            "-reqsize 64 -bytes {bytes} -qd 2 -e2e destination 127.0.0.1:{p} -e2e timeout 60 -e2e key k -throttle bw 40"
        );
        let mut d = Bg::start(
            &s.root,
            &side(format!(
                "-op write -target dst.dat {common} -e2e isdestination --json d.json --live d.jsonl --live-interval 0.1"
            )),
            &[],
        );
        assert!(d.wait_for("listening on"), "{}", d.stderr_now());
        let src_live = match source_live {
            true => "--live s.jsonl --live-interval 0.1",
            false => "",
        };
        let src = Bg::start(
            &s.root,
            &side(format!(
                "-op read -target src.dat {common} -e2e issource --json s.json {src_live}"
            )),
            &[],
        )
        .wait(120);
        let dst = d.wait(60);
        assert_eq!(src.code, Some(0), "source: {}", src.stderr);
        assert_eq!(dst.code, Some(0), "destination: {}", dst.stderr);
        assert!(same(&s.path("src.dat"), &s.path("dst.dat")));
        let (sdoc, ddoc) = (json(&s.path("s.json")), json(&s.path("d.json")));
        let (header, rows) = read_jsonl(&s.path("d.jsonl"));
        assert_eq!(header["run_id"], ddoc["run_id"]);
        assert_flushed(&rows);
        let mut want = xdd_counts(&ddoc);
        if source_live {
            want.extend(xdd_counts(&sdoc));
        }
        assert_eq!(sums(&rows), want, "source --live: {source_live}");
        let per_rank: Vec<&Value> = rows.iter().filter(|r| r.get("rank").is_some()).collect();
        if !source_live {
            // No link: the destination's own rows only.
            assert!(per_rank.iter().all(|r| r["rank"] == 0), "{per_rank:?}");
            continue;
        }
        // Each side's rows carry its host and only its own op type.
        let mut per: BTreeMap<(u64, String), u64> = BTreeMap::new();
        for r in &per_rank {
            assert!(r["host"].is_string(), "{r}");
            *per.entry((
                r["rank"].as_u64().unwrap(),
                r["phase"].as_str().unwrap().into(),
            ))
            .or_default() += r["bytes"].as_u64().unwrap();
        }
        let expect: BTreeMap<(u64, String), u64> = [
            ((0, "write".into()), bytes as u64),
            ((1, "read".into()), bytes as u64),
        ]
        .into();
        assert_eq!(per, expect);
        let (_, own) = read_jsonl(&s.path("s.jsonl"));
        assert_eq!(sums(&own), xdd_counts(&sdoc));
        assert_flushed(&own);
    }
}

/// A copy whose source is killed with -9 while both sides stream: the
/// destination ends (exit 1, naming the source), its stream's last
/// interval is flushed, every line parses, and its own rows still sum
/// to what its results say it wrote; the source's rows that came add up
/// to no more than the copy.
#[test]
fn xdd_e2e_source_killed_mid_copy_leaves_the_destination_stream_whole() {
    use common::e2e::{free_ports, random_file, words, Bg};
    let s = Scratch::new("live-e2e-kill");
    let bytes = 32 * 1024 * 1024;
    random_file(&s.path("src.dat"), bytes);
    let p = free_ports(2);
    let common = format!(
        "-reqsize 64 -bytes {bytes} -qd 2 -e2e destination 127.0.0.1:{p} -e2e timeout 30 -throttle bw 8 --live-interval 0.1"
    );
    let side = |line: String| {
        let mut w = vec!["xdd".to_string()];
        w.extend(words(&line));
        w
    };
    let mut d = Bg::start(
        &s.root,
        &side(format!(
            "-op write -target dst.dat {common} -e2e isdestination -keepfiles --json d.json --live d.jsonl"
        )),
        &[],
    );
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    let src = Bg::start(
        &s.root,
        &side(format!(
            "-op read -target src.dat {common} -e2e issource --live s.jsonl"
        )),
        &[],
    );
    // Until the source's rows reach the destination's stream.
    let until = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(s.path("d.jsonl")).is_ok_and(|t| t.contains("\"rank\":1")) {
        assert!(Instant::now() < until, "no row of the source came");
        std::thread::sleep(Duration::from_millis(20));
    }
    src.kill();
    let dst = d.wait(60);
    assert_eq!(dst.code, Some(1), "{}", dst.stderr);
    assert!(dst.stderr.contains("source"), "{}", dst.stderr);
    let (_, rows) = read_jsonl(&s.path("d.jsonl"));
    assert_flushed(&rows);
    let doc = json(&s.path("d.json"));
    let mine: u64 = rows
        .iter()
        .filter(|r| r["rank"] == 0)
        .map(|r| r["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(mine, xdd_counts(&doc)["write"].1);
    let theirs: u64 = rows
        .iter()
        .filter(|r| r["rank"] == 1)
        .map(|r| r["bytes"].as_u64().unwrap())
        .sum();
    assert!(theirs > 0 && theirs <= bytes as u64, "{theirs}");
}

/// A stream that cannot be started (its header does not fit on a full
/// file system, or goes to /dev/full) is an output failure, as one cut
/// short is: exit 1, noted in the results, and the empty file removed;
/// a device is written in place and never removed.
#[test]
fn a_stream_that_cannot_start_is_an_output_failure_and_leaves_no_file() {
    let s = Scratch::new("live-nostart");
    let small = SmallFs::new(&s, "small", "64k");
    if !small.mounted {
        return;
    }
    // Fill it: the header's write then fails.
    let _ = std::fs::write(small.dir.join("fill"), vec![0u8; 256 << 10]);
    let (res, d) = (s.path("r.json"), s.path("d"));
    let o = iolab(&[
        "mdtest",
        "-n",
        "20",
        "-d",
        d.to_str().unwrap(),
        "--json",
        res.to_str().unwrap(),
        "--live",
        &small.path("l.jsonl"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ends as an output failure"),
        "{}",
        stderr(&o)
    );
    assert!(
        !small.dir.join("l.jsonl").exists(),
        "an empty stream was left"
    );
    let doc = json(&res);
    assert_eq!(doc["outcome"]["kind"], "output", "{doc}");
    assert!(
        doc["notes"].to_string().contains("could not be started"),
        "{doc}"
    );
    let o = iolab(&[
        "mdtest",
        "-n",
        "5",
        "-d",
        d.to_str().unwrap(),
        "--live",
        "/dev/full",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::symlink_metadata("/dev/full").unwrap();
    assert!(m.file_type().is_char_device(), "/dev/full was removed");
}

/// A FIFO that no program reads is refused before the run (exit 2), not
/// waited on without end; one whose reader goes away mid-run ends the
/// run as an output failure and is kept.
#[test]
fn a_fifo_without_a_reader_is_refused_and_one_whose_reader_leaves_is_kept() {
    let s = Scratch::new("live-fifo");
    let fifo = s.path("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let d = s.path("d");
    let o = iolab(&[
        "mdtest",
        "-n",
        "5",
        "-d",
        d.to_str().unwrap(),
        "--live",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no program reads"), "{}", stderr(&o));
    assert!(!d.exists(), "the run started");
    // A reader, open before the run starts, that takes a few bytes and
    // leaves.
    use std::os::unix::fs::OpenOptionsExt;
    let mut end = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let (mut got, mut buf, t0) = (0, [0u8; 100], Instant::now());
        while got < 100 && t0.elapsed() < Duration::from_secs(60) {
            match end.read(&mut buf[got..]) {
                Ok(n) => got += n,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    let o = iolab(&[
        "mdtest",
        "-n",
        "200000",
        "-F",
        "-d",
        d.to_str().unwrap(),
        "--live",
        fifo.to_str().unwrap(),
        "--live-interval",
        "0.1",
    ]);
    reader.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO was removed"
    );
}

/// A FIFO whose reader started first (as `cat ff > out &` does) gets the
/// whole stream: the run's checks of it give the reader no end of file
/// before the rows, so it neither leaves early nor is the run refused.
#[test]
fn a_fifo_whose_reader_started_first_gets_the_whole_stream() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let s = Scratch::new("live-fifo-first");
    let fifo = s.path("ff");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut end = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    // Reads as cat does: up to the first end of file.
    let reader = std::thread::spawn(move || {
        let (mut got, mut buf, t0) = (Vec::new(), [0u8; 4096], Instant::now());
        while t0.elapsed() < Duration::from_secs(60) {
            let mut pfd = libc::pollfd {
                fd: end.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, a bounded timeout.
            if unsafe { libc::poll(&mut pfd, 1, 1000) } <= 0 {
                continue;
            }
            match end.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        String::from_utf8(got).unwrap()
    });
    let o = iolab(&[
        "mdtest",
        "-n",
        "300",
        "-d",
        s.path("md").to_str().unwrap(),
        "--live",
        fifo.to_str().unwrap(),
    ]);
    let got = reader.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = got.lines().next().unwrap_or_default();
    assert!(first.contains("\"schema\":\"iolab.live/1\""), "{got:?}");
    assert!(got.contains("\"last\":true"), "{got:?}");
}

/// What a terminal shows of `raw`, line by line: `\r` goes back to the
/// start of the line and `ESC[K` clears from the cursor on; other escape
/// sequences are dropped.
fn seen_on_a_terminal(raw: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for line in raw.split('\n') {
        let (mut shown, mut col): (Vec<char>, usize) = (Vec::new(), 0);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => col = 0,
                '\x1b' => {
                    let mut seq = String::new();
                    for d in chars.by_ref() {
                        seq.push(d);
                        if d.is_ascii_alphabetic() && d != '[' {
                            break;
                        }
                    }
                    if seq == "[K" {
                        shown.truncate(col);
                    }
                }
                _ => {
                    if col < shown.len() {
                        shown[col] = c;
                    } else {
                        shown.push(c);
                    }
                    col += 1;
                }
            }
        }
        lines.push(shown.into_iter().collect());
    }
    lines
}

/// Runs `cmd` under a pseudo-terminal 200 columns wide (util-linux's
/// `script`), CI unset so that the live figures draw; what it printed.
fn on_a_terminal(cmd: &str) -> String {
    let line = format!("stty cols 200 rows 50; {cmd}");
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("CI")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The one-line status is wiped before the tool prints a line, so ior's
/// result lines never land glued to it; `--live-view` holds the tool's
/// lines while it is up and prints them once it is put away, so
/// mdtest's SUMMARY stays on the terminal.
#[test]
fn the_tool_s_lines_neither_glue_to_the_status_nor_vanish_with_the_view() {
    let s = Scratch::new("live-tty");
    let f = s.path("f");
    let raw = on_a_terminal(&format!(
        "{} ior -w -r -F -b 256m -t 1k -i 6 -o {} --tasks 2",
        env!("CARGO_BIN_EXE_iolab"),
        f.display()
    ));
    let seen = seen_on_a_terminal(&raw);
    // Six iterations' lines and the summary's.
    let results = seen.iter().filter(|l| l.starts_with("write     ")).count();
    assert_eq!(results, 7, "{seen:#?}");
    for l in &seen {
        assert!(!(l.contains("ops/s") && l.contains("0.0")), "glued: {l:?}");
    }
    let d = s.path("d");
    let raw = on_a_terminal(&format!(
        "{} mdtest -n 20000 -d {} --live-view --live-interval 0.1",
        env!("CARGO_BIN_EXE_iolab"),
        d.display()
    ));
    let entered = raw.find("\x1b[?1049h").expect("the view came up");
    let left = raw.rfind("\x1b[?1049l").expect("the view went away");
    let summary = raw.find("SUMMARY: (of 1 iterations)").expect("no SUMMARY");
    assert!(
        entered < left && left < summary,
        "the SUMMARY was drawn inside the view"
    );
    // TERM=dumb: neither the view nor the status line is drawn.
    let o = Command::new("script")
        .args([
            "-qec",
            &format!(
                "{} mdtest -n 20000 -d {} --live-view --live-interval 0.1",
                env!("CARGO_BIN_EXE_iolab"),
                d.display()
            ),
            "/dev/null",
        ])
        .env_remove("CI")
        .env("TERM", "dumb")
        .output()
        .unwrap();
    let raw = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{raw}");
    assert!(
        !raw.contains("\x1b[?1049h") && raw.contains("SUMMARY: (of 1 iterations)"),
        "{raw}"
    );
}
