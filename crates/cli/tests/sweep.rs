//! `iolab sweep`, `iolab results` and `iolab report` with the real binary:
//! mdtest sweeps on a private tmpfs recorded in a real SQLite store,
//! resumed after SIGTERM, compared, charted (the SVG read back) and the
//! HTML page rendered by headless Chromium; bad plans refused before any
//! run; two processes recording into one store at once.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, skip_or_fail, stderr, stdout, Scratch};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A plan over private/shared directories and tasks 1, 2, 4.
fn plan(s: &Scratch, label: &str, repeats: u32, extra: &str) -> PathBuf {
    let text = format!(
        r#"label = "{label}"
tool = "mdtest"
args = "-F -n 24 -d {dir}/mdtest.{{point}} {extra}"
repeats = {repeats}
x_label = "client threads"
[[axes]]
name = "dir"
option = "-u"
values = [true, false]
labels = ["private", "shared"]
[[axes]]
name = "tasks"
option = "--tasks"
values = [1, 2, 4]
"#,
        dir = s.root.display()
    );
    let p = s.path(&format!("{}.toml", label.replace(' ', "_")));
    std::fs::write(&p, text).unwrap();
    p
}

fn store_arg(s: &Scratch) -> String {
    s.path("runs.sqlite").display().to_string()
}

fn run(words: &[&str]) -> std::process::Output {
    let o = iolab(words);
    assert!(
        o.status.success(),
        "iolab {words:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

fn json(words: &[&str]) -> Value {
    serde_json::from_str(&stdout(&run(words))).unwrap()
}

/// The text of every `<text>` element of an SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[test]
fn sweep_record_report_and_compare_two_series() {
    let s = Scratch::new("sweep");
    let store = store_arg(&s);
    for label in ["before", "after"] {
        let p = plan(&s, label, 3, "");
        let o = run(&["sweep", p.to_str().unwrap(), "--store", &store]);
        let out = stdout(&o);
        assert!(
            out.contains("6 points x 3 repeats; 0 recorded already, 18 to run (store ")
                && out
                    .lines()
                    .next()
                    .unwrap()
                    .ends_with("; the time left follows each repeat"),
            "{out}"
        );
        assert!(out.matches("file_create").count() >= 18, "{out}");
    }
    // Every repeat is recorded with its point, and ran with its task count.
    let series = json(&["results", "--store", &store, "export", "before", "--json"]);
    let points = series["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    for p in points {
        let runs = p["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3, "{p}");
        let tasks = p["axes"]["tasks"].as_u64().unwrap();
        let private = p["axes"]["dir"].as_bool().unwrap();
        for r in runs {
            let id = r["run_id"].to_string();
            let doc = json(&["results", "--store", &store, "export", &id, "--json"]);
            assert_eq!(doc["payload"]["tests"][0]["tasks"], tasks, "{doc}");
            assert_eq!(doc["config"]["unique_dir"], private);
        }
        let create = p["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["phase"] == "file_create")
            .unwrap();
        assert_eq!(create["spread"]["n"], 3);
        let sp = &create["spread"];
        assert!(
            sp["min"].as_f64() <= sp["mean"].as_f64() && sp["mean"].as_f64() <= sp["max"].as_f64()
        );
    }
    let csv = stdout(&run(&[
        "results", "--store", &store, "export", "after", "--csv",
    ]));
    assert_eq!(
        csv.lines().filter(|l| l.contains(",file_create,")).count(),
        6,
        "{csv}"
    );
    let listed = stdout(&run(&["results", "--store", &store, "list"]));
    assert!(
        listed.contains("before")
            && listed.contains("after")
            && listed.contains("before / dir=shared tasks=4 / 3"),
        "{listed}"
    );
    // Compared point by point, each with a verdict.
    let cmp = stdout(&run(&[
        "results", "--store", &store, "compare", "before", "after",
    ]));
    assert_eq!(
        cmp.lines().filter(|l| l.contains("file_create")).count(),
        6,
        "{cmp}"
    );
    assert!(
        cmp.contains("improvements,") && cmp.contains("regressions,"),
        "{cmp}"
    );
    // Charted: one chart per phase, a line per series and directory mode.
    let dir = s.path("report");
    let o = run(&[
        "report",
        "--store",
        &store,
        "before",
        "after",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(stdout(&o).contains("index.html"));
    check_chart(&dir.join("file_create-rate.svg"));
    assert!(dir.join("file_create-rate.png").is_file());
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        6,
        "one inline chart per mdtest phase"
    );
    self_contained(&page);
    chromium_shows(&dir.join("index.html"));
    // Again into the same directory: a file the earlier page's text
    // names (as a plan, a label or a path may) is not the report's for
    // that (it was removed), and a file of the user's stays; what the
    // page lists in its head goes (sweep_safety.rs).
    let earlier = page.replace("</body>", "files: old-chart.svg, old-chart.png</body>");
    std::fs::write(dir.join("index.html"), earlier).unwrap();
    for f in ["old-chart.svg", "old-chart.png", "mine.svg"] {
        std::fs::write(dir.join(f), b"x").unwrap();
    }
    let o = run(&[
        "report",
        "--store",
        &store,
        "before",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(stdout(&o).contains("index.html"), "{}", stderr(&o));
    assert!(dir.join("old-chart.svg").exists() && dir.join("old-chart.png").exists());
    assert!(dir.join("mine.svg").exists());
    assert!(dir.join("file_create-rate.svg").is_file());
    // One series twice drew each line twice: refused, nothing made.
    let twice = s.path("twice");
    let o = iolab(&[
        "report",
        "--store",
        &store,
        "before",
        "before",
        "-o",
        twice.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("given twice"), "{}", stderr(&o));
    assert!(!twice.exists());
    // `series:NAME` is the series NAME: the same one twice too.
    let o = iolab(&[
        "report",
        "--store",
        &store,
        "before",
        "series:before",
        "-o",
        twice.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("given twice"), "{}", stderr(&o));
    assert!(!twice.exists());
    // A new report is built beside its directory and takes its name
    // once whole: nothing else is left beside it.
    let fresh = s.path("fresh");
    run(&[
        "report",
        "--store",
        &store,
        "before",
        "-o",
        fresh.to_str().unwrap(),
    ]);
    let beside: Vec<String> = std::fs::read_dir(&s.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("iolab-tmp"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
    assert!(fresh.join("index.html").is_file());
}

/// The chart's lines and labels, read from the SVG.
fn check_chart(svg_path: &Path) {
    let Ok(svg) = std::fs::read_to_string(svg_path) else {
        panic!("no chart {}", svg_path.display());
    };
    let texts = svg_texts(&svg);
    if texts.is_empty() {
        return skip_or_fail("sweep chart labels", "no font for the charts' text");
    }
    for want in [
        "file_create rate",
        "client threads",
        "rate (ops/s)",
        "before dir=private",
        "before dir=shared",
        "after dir=private",
        "after dir=shared",
    ] {
        assert!(texts.iter().any(|t| t == want), "no '{want}' in {texts:?}");
    }
    for tick in ["1", "2", "4"] {
        assert!(
            texts.iter().any(|t| t == tick),
            "x tick {tick} in {texts:?}"
        );
    }
    // Tasks 1, 2, 4 on a log2 axis: no empty tick at 3. Rates in SI
    // (20k): no raw number of more than three digits.
    assert!(!texts.iter().any(|t| t == "3"), "{texts:?}");
    assert!(
        !texts
            .iter()
            .any(|t| t.len() > 3 && t.chars().all(|c| c.is_ascii_digit())),
        "{texts:?}"
    );
    // Lines are drawn 2 px wide (error bars 1 px): one per series line.
    assert_eq!(svg.matches("stroke-width=\"2\"").count(), 4, "series count");
}

/// No script and nothing loaded from elsewhere.
fn self_contained(page: &str) {
    for bad in ["<script", "src=", "href=", "url(", "@import"] {
        assert!(!page.contains(bad), "the page holds {bad}");
    }
}

/// Renders the page in headless Chromium: the screenshot is not blank and
/// the page logged nothing to the console (it has no script, so any
/// console line is an error).
fn chromium_shows(page: &Path) {
    let Some(browser) = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        return skip_or_fail(
            "chromium",
            "no chromium (scripts/install-deps.sh installs it)",
        );
    };
    let shot = page.with_file_name("shot.png");
    let profile = page.with_file_name("chromium-profile");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = String::new();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    log.push_str(&reader.join().unwrap());
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let (w, h, pixels) = decode(&shot);
    assert_eq!((w, h), (1280, 1600));
    let white = pixels
        .iter()
        .filter(|p| p[0] > 245 && p[1] > 245 && p[2] > 245)
        .count();
    let coloured = pixels
        .iter()
        .filter(|p| p[0].abs_diff(p[1]) > 60 || p[1].abs_diff(p[2]) > 60)
        .count();
    assert!(white < pixels.len() * 98 / 100, "the page looks blank");
    assert!(
        coloured > 500,
        "no coloured chart lines on the screenshot ({coloured} pixels)"
    );
}

/// RGB(A) pixels of a PNG.
fn decode(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    let px = buf[..info.buffer_size()]
        .chunks(step)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width, info.height, px)
}

#[test]
fn an_interrupted_sweep_resumes_where_it_stopped() {
    let s = Scratch::new("sweep-resume");
    let store = store_arg(&s);
    // -p 1: each run waits a second, so the SIGTERM finds one running.
    let p = plan(&s, "resume", 1, "-p 1");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["sweep", p.to_str().unwrap(), "--store", &store])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let t0 = Instant::now();
    // The first repeat's line ends with its run id; then the next starts.
    loop {
        let l = lines.next().expect("the sweep ended early").unwrap();
        if l.contains(", run 1)") || t0.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    let done = |store: &str| -> Vec<(String, u64)> {
        let v = json(&["results", "--store", store, "export", "resume", "--json"]);
        let mut out = Vec::new();
        for p in v["points"].as_array().unwrap() {
            for r in p["runs"].as_array().unwrap() {
                assert_eq!(
                    r["outcome"], "completed",
                    "an interrupted repeat is not recorded"
                );
                out.push((
                    p["key"].as_str().unwrap().to_string(),
                    r["repeat"].as_u64().unwrap(),
                ));
            }
        }
        out
    };
    let before = done(&store);
    assert!(!before.is_empty() && before.len() < 6, "{before:?}");
    assert!(
        std::fs::read_dir(&s.root)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().contains(".sweep.")),
        "the sweep's own directory is removed"
    );
    let o = run(&["sweep", p.to_str().unwrap(), "--store", &store]);
    let want = format!(
        "{} recorded already, {} to run",
        before.len(),
        6 - before.len()
    );
    assert!(stdout(&o).contains(&want), "{}", stdout(&o));
    // Resumed: how long the rest should take, before it starts.
    let first = stdout(&o).lines().next().unwrap().to_string();
    assert!(
        first.contains("; about ") && first.ends_with(" by the repeats recorded so far"),
        "{first}"
    );
    let mut after = done(&store);
    after.sort();
    after.dedup();
    assert_eq!(after.len(), 6, "each point once: {after:?}");
}

fn refused(s: &Scratch, text: &str, says: &str) {
    let p = s.path("bad.toml");
    std::fs::write(&p, text).unwrap();
    let store = s.path("bad.sqlite");
    let o = iolab(&[
        "sweep",
        p.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(says), "wanted '{says}': {}", stderr(&o));
    assert!(!store.exists(), "nothing created");
    assert!(!s.path("never").exists(), "nothing ran");
}

#[test]
fn bad_plans_are_refused_before_any_run() {
    let s = Scratch::new("sweep-bad");
    let good = format!(
        "label = \"x\"\ntool = \"mdtest\"\nargs = \"-F -n 4 -d {}\"\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
        s.path("never").display()
    );
    refused(
        &s,
        &good.replace("-F -n 4", "-F --bogus -n 4"),
        "point 0 (tasks=1): mdtest refuses its options: --bogus",
    );
    refused(
        &s,
        &good.replace("values = [1, 2]", "values = [1, 0]"),
        "point 1 (tasks=0)",
    );
    refused(
        &s,
        &format!("x = \"nodes\"\n{good}"),
        "x: no axis named 'nodes'",
    );
    refused(
        &s,
        &good.replace("[[axes]]", "[[axis]]"),
        "unknown field `axis`",
    );
    refused(
        &s,
        &good.replace("option = \"--tasks\"", "option = \"--taks\""),
        "--taks",
    );
    refused(&s, &good.replace("\"mdtest\"", "\"fio\""), "tool: 'fio'");
    // The shipped example is a valid plan.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/smp-affinity.toml");
    let o = run(&["sweep", example.to_str().unwrap(), "--dry-run"]);
    assert!(
        stdout(&o).contains("10 points x 3 repeats"),
        "{}",
        stdout(&o)
    );
    refused(
        &s,
        &format!("launcher = \"mpirun -n {{ranks}} {{iolab}}\"\n{good}"),
        "unknown placeholder {ranks}",
    );
    refused(
        &s,
        &format!("launcher = \"\"\n{good}"),
        "launcher: \"\": empty",
    );
}

#[test]
fn a_recorded_run_reads_back_as_written() {
    let s = Scratch::new("store-readback");
    let store = store_arg(&s);
    let doc = s.path("m.json");
    let d = s.path("d");
    let o = iolab(&[
        "mdtest",
        "-F",
        "-n",
        "20",
        "-i",
        "2",
        "--tasks",
        "2",
        "-d",
        d.to_str().unwrap(),
        "--json",
        doc.to_str().unwrap(),
        "--store",
        &store,
        "--stats",
        "local,1s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&run(&["results", "--store", &store, "show", "1"]));
    assert!(
        shown.contains("--store") && shown.contains("file_create") && shown.contains("--stats"),
        "{shown}"
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    let exported = json(&["results", "--store", &store, "export", "1", "--json"]);
    assert_eq!(
        exported, written,
        "the store gives back the document the run wrote"
    );
    assert!(exported["stats"].is_object(), "--stats samples kept");
    // xdd records too.
    let t = s.path("x");
    run(&[
        "xdd",
        "-op",
        "write",
        "-targets",
        "1",
        t.to_str().unwrap(),
        "-mbytes",
        "2",
        "-passes",
        "2",
        "--store",
        &store,
    ]);
    let figs = stdout(&run(&[
        "results", "--store", &store, "export", "2", "--csv",
    ]));
    assert!(
        figs.contains(",write,bandwidth,MB/s,") && figs.contains(",write,iops,"),
        "{figs}"
    );
    // A store from a newer iolab, or a file that is no store, is refused.
    let newer = s.path("newer.sqlite");
    std::fs::copy(s.path("runs.sqlite"), &newer).unwrap();
    set_user_version(&newer, 99);
    let o = iolab(&["results", "--store", newer.to_str().unwrap(), "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("schema version 99"), "{}", stderr(&o));
    let o = iolab(&[
        "mdtest",
        "-n",
        "2",
        "-d",
        d.to_str().unwrap(),
        "--store",
        doc.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not an iolab results store"),
        "{}",
        stderr(&o)
    );
    assert!(!d.exists(), "refused before anything was created");
}

/// Bumps a store's schema version in place (bytes 60..64 of an SQLite
/// header hold user_version, big-endian).
fn set_user_version(path: &Path, v: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[60..64].copy_from_slice(&v.to_be_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// An mdtest run's `--json` document, and copies of it as other runs
/// (`variant(doc, k)`: started one nanosecond later per `k`).
fn mdtest_doc(s: &Scratch) -> PathBuf {
    let doc = s.path("m.json");
    run(&[
        "mdtest",
        "-F",
        "-n",
        "5",
        "-d",
        s.path("d").to_str().unwrap(),
        "--json",
        doc.to_str().unwrap(),
    ]);
    doc
}

fn variant(s: &Scratch, doc: &Path, k: u64, edit: impl Fn(&mut Value)) -> PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
    let t = v["started_unix_ns"].as_u64().unwrap();
    v["started_unix_ns"] = (t + k).into();
    edit(&mut v);
    let p = s.path(&format!("m{k}.json"));
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

#[test]
fn two_processes_record_at_once_and_lose_nothing() {
    let s = Scratch::new("store-concurrent");
    let doc = mdtest_doc(&s);
    const EACH: u64 = 40;
    let docs: Vec<PathBuf> = (1..=2 * EACH)
        .map(|k| variant(&s, &doc, k, |_| {}))
        .collect();
    let store = store_arg(&s);
    // Both start on a store that does not exist yet: creation races too.
    // Each records its own 40 runs, and both the same one.
    let spawn = |mine: &[PathBuf]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.args(["results", "--store", &store, "import"]);
        c.args(mine).arg(&doc);
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(&docs[..EACH as usize]), spawn(&docs[EACH as usize..]));
    let mut again = 0;
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o).lines().count(), EACH as usize + 1);
        again += stdout(&o).matches("already recorded as run").count();
    }
    assert_eq!(again, 1, "the shared document is recorded once");
    let listed = stdout(&run(&["results", "--store", &store, "list"]));
    let ids: Vec<u64> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(ids, (1..=2 * EACH + 1).collect::<Vec<_>>(), "{listed}");
}

/// Importing a document twice records one run: the second import says
/// which run it is (exit 0), also for the same run written out again
/// in another layout (pretty-printed); another run is recorded.
#[test]
fn importing_the_same_run_twice_records_it_once() {
    let s = Scratch::new("store-import-once");
    let store = store_arg(&s);
    let doc = mdtest_doc(&s);
    let d = doc.to_str().unwrap();
    let o = run(&["results", "--store", &store, "import", d]);
    assert_eq!(stdout(&o), format!("{d}: run 1\n"));
    let o = run(&["results", "--store", &store, "import", d]);
    assert_eq!(
        stdout(&o),
        format!("{d}: already recorded as run 1; not recorded again\n")
    );
    let pretty = s.path("pretty.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    std::fs::write(&pretty, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = run(&[
        "results",
        "--store",
        &store,
        "import",
        pretty.to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("already recorded as run 1"),
        "{}",
        stdout(&o)
    );
    let other = variant(&s, &doc, 1, |_| {});
    let o = run(&[
        "results",
        "--store",
        &store,
        "import",
        other.to_str().unwrap(),
    ]);
    assert!(stdout(&o).ends_with(": run 2\n"), "{}", stdout(&o));
    let listed = stdout(&run(&["results", "--store", &store, "list"]));
    assert_eq!(listed.lines().count(), 3, "{listed}");
    // Documents no tool could have written were stored as runs: a
    // schema of no tool's, another tool's name, an end before the start,
    // a mean outside its extremes; a figure of no values, a spread of
    // one value, a figure stated twice (`results show` listed it twice),
    // a schema version later than this iolab's.
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit); 8] = [
        ("n is 0, a figure of no values", |v| {
            v["figures"][0]["stat"]["n"] = 0.into();
            v["figures"][0]["stat"]["std_dev"] = 3.0.into()
        }),
        ("of n 1 value; one value has no spread", |v| {
            v["figures"][0]["stat"]["n"] = 1.into();
            v["figures"][0]["stat"]["std_dev"] = 3.0.into()
        }),
        ("is given twice", |v| {
            let f = v["figures"][0].clone();
            v["figures"].as_array_mut().unwrap().push(f)
        }),
        ("is newer than this iolab's \"iolab.mdtest/", |v| {
            v["schema"] = "iolab.mdtest/99".into()
        }),
        ("not an iolab schema", |v| v["schema"] = "garbage".into()),
        ("is not the schema of tool", |v| {
            v["tool"]["name"] = "notatool".into()
        }),
        ("is before started_unix_ns", |v| {
            v["finished_unix_ns"] = (v["started_unix_ns"].as_u64().unwrap() - 1_000_000).into()
        }),
        ("is not within min", |v| {
            v["figures"][0]["stat"]["mean"] = (-5.0).into()
        }),
    ];
    for (k, (says, edit)) in edits.into_iter().enumerate() {
        let bad = variant(&s, &doc, 10 + k as u64, edit);
        let o = iolab(&[
            "results",
            "--store",
            &store,
            "import",
            bad.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{says}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    let listed = stdout(&run(&["results", "--store", &store, "list"]));
    assert_eq!(listed.lines().count(), 3, "{listed}");
}

/// A label or command line holding terminal codes or line breaks comes
/// out escaped in every listing (list, show, compare): no escape byte
/// reaches the terminal, and a run is one line of the table.
#[test]
fn listings_escape_control_characters() {
    let s = Scratch::new("store-escape");
    let store = store_arg(&s);
    let doc = mdtest_doc(&s);
    let evil = "iolab mdtest \u{1b}]0;pwned\u{7}\u{1b}[2J\nfake row\r\u{202e}";
    let bad = variant(&s, &doc, 1, |v| {
        v["command_line"] = evil.into();
        v["notes"] = serde_json::json!(["note\u{1b}[31m\nred"]);
    });
    run(&[
        "results",
        "--store",
        &store,
        "import",
        bad.to_str().unwrap(),
    ]);
    let p = s.path("evil.toml");
    std::fs::write(
        &p,
        format!(
            "label = \"plain\"\ntool = \"mdtest\"\nargs = \"-F -n 2 -d {}/e.{{point}}\"\nrepeats = 1\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1]\n",
            s.root.display()
        ),
    )
    .unwrap();
    run(&["sweep", p.to_str().unwrap(), "--store", &store]);
    // A sweep now refuses such a label; a store an older iolab wrote
    // may hold one, as this one is made to.
    // Python's sqlite3 module, as the other store tests use: the
    // sqlite3 command-line tool is not among the installed packages.
    let relabel = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3\nc = sqlite3.connect({store:?})\nc.execute(\"UPDATE series SET label = 'a' || char(27) || '[31mb' || char(10) || 'c' WHERE label = 'plain'\")\nc.commit()\n"
        ))
        .status();
    if !relabel.is_ok_and(|st| st.success()) {
        return skip_or_fail(
            "listings_escape_control_characters",
            "python3's sqlite3 could not relabel the series",
        );
    }
    let outputs = [
        run(&["results", "--store", &store, "list"]),
        run(&["results", "--store", &store, "show", "1"]),
        run(&["results", "--store", &store, "show", "a\u{1b}[31mb\nc"]),
        run(&["results", "--store", &store, "compare", "1", "1"]),
    ];
    for o in &outputs {
        let out = stdout(o);
        assert!(
            !out.contains(['\u{1b}', '\u{7}', '\r', '\u{202e}']),
            "{out:?}"
        );
    }
    let list = stdout(&outputs[0]);
    assert!(list.contains("\\u{1b}]0;pwned\\u{7}"), "{list}");
    assert!(!list.lines().any(|l| l.starts_with("fake row")), "{list}");
    assert!(list.contains("a\\u{1b}[31mb\\nc"), "{list}");
    let show = stdout(&outputs[1]);
    assert!(show.contains("note\\u{1b}[31m\\nred"), "{show}");
}

/// A nested tmpfs made read-only after the store is written into it;
/// unmounted on drop.
struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    fn new(dir: PathBuf) -> Result<ReadOnlyMount, String> {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        match ok {
            true => Ok(ReadOnlyMount(dir)),
            false => Err(format!("cannot mount a tmpfs on {}", dir.display())),
        }
    }

    fn remount(&self, how: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,{how}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(st.success(), "remount,{how}");
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The reading commands read a store on a file system mounted
/// read-only ("unable to open database file" before): with no WAL beside
/// it, the database file alone; with a WAL and its -shm left by a writer
/// that did not close, through them (the WAL's run is listed). A WAL
/// without its -shm cannot be read there: exit 1 naming it.
#[test]
fn reading_commands_read_a_store_on_a_read_only_mount() {
    let name = "reading_commands_read_a_store_on_a_read_only_mount";
    let s = Scratch::new("store-ro");
    let m = match ReadOnlyMount::new(s.path("ro")) {
        Ok(m) => m,
        Err(why) => return skip_or_fail(name, &why),
    };
    let store = m.0.join("s.sqlite").display().to_string();
    let doc = mdtest_doc(&s);
    run(&[
        "results",
        "--store",
        &store,
        "import",
        doc.to_str().unwrap(),
    ]);
    m.remount("ro");
    assert!(
        std::fs::write(m.0.join("probe"), b"x").is_err(),
        "not read-only"
    );
    let list = stdout(&run(&["results", "--store", &store, "list"]));
    assert!(
        list.lines().nth(1).is_some_and(|l| l.starts_with("1 ")),
        "{list}"
    );
    run(&["results", "--store", &store, "show", "1"]);
    let exported = json(&["results", "--store", &store, "export", "1", "--json"]);
    assert_eq!(exported["tool"]["name"], "mdtest");
    // A writer that did not close: its run is in the WAL only.
    m.remount("rw");
    let held = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3, os\nc = sqlite3.connect({store:?})\nc.execute('PRAGMA wal_autocheckpoint=0')\nc.execute(\"UPDATE runs SET hostname = 'in-the-wal'\")\nc.commit()\nos._exit(0)\n"
        ))
        .status();
    if !held.is_ok_and(|st| st.success()) {
        return skip_or_fail(name, "python3's sqlite3 could not write the WAL");
    }
    let wal = format!("{store}-wal");
    assert!(
        std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0),
        "no WAL left"
    );
    m.remount("ro");
    let list = stdout(&run(&["results", "--store", &store, "list"]));
    assert!(list.contains("in-the-wal"), "{list}");
    m.remount("rw");
    std::fs::remove_file(format!("{store}-shm")).unwrap();
    m.remount("ro");
    let o = iolab(&["results", "--store", &store, "list"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains(&wal) && stderr(&o).contains("read-only"),
        "{}",
        stderr(&o)
    );
}

/// Under mpirun: a sweep over ranks 1 and 2 through the plan's launcher
/// runs each point with that many ranks.
#[cfg(feature = "mpi")]
#[test]
fn a_sweep_over_ranks_runs_each_point_under_mpirun_with_its_rank_count() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("sweep over ranks", "mpirun not installed");
    }
    let s = Scratch::new("sweep-mpi");
    let store = store_arg(&s);
    let p = s.path("ranks.toml");
    let text = format!(
        r#"label = "ranks"
tool = "mdtest"
args = "-F -n 8 -d {}/mpi.{{point}}"
repeats = 1
launcher = "mpirun --allow-run-as-root --oversubscribe -n {{ranks}} {{iolab}}"
x_label = "MPI ranks"
[[axes]]
name = "ranks"
values = [1, 2]
"#,
        s.root.display()
    );
    std::fs::write(&p, text).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    // The children's mpiruns inherit the private session directory.
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args(["sweep", p.to_str().unwrap(), "--store", &store])
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let series = json(&["results", "--store", &store, "export", "ranks", "--json"]);
    for p in series["points"].as_array().unwrap() {
        let ranks = p["axes"]["ranks"].as_u64().unwrap();
        let id = p["runs"][0]["run_id"].to_string();
        let doc = json(&["results", "--store", &store, "export", &id, "--json"]);
        assert_eq!(doc["payload"]["comm"]["kind"], "mpi", "{doc}");
        assert_eq!(doc["payload"]["comm"]["ranks"], ranks, "{doc}");
        assert_eq!(doc["payload"]["tests"][0]["tasks"], ranks);
    }
}

/// Any tool sweeps the same way: the metadata survey over thread counts
/// (an option-less axis used as a placeholder), recorded and charted.
#[test]
fn a_survey_sweeps_too() {
    let s = Scratch::new("sweep-survey");
    let store = store_arg(&s);
    let p = s.path("mds.toml");
    let text = format!(
        r#"label = "mds"
tool = "survey"
args = "mds {root} --thrlo {{thr}} --thrhi {{thr}} --dir-count 1 --file-count 200 --rslt {root}/r{{point}}.{{repeat}}"
repeats = 2
[[axes]]
name = "thr"
values = [1, 2]
"#,
        root = s.root.display()
    );
    std::fs::write(&p, text).unwrap();
    let o = run(&["sweep", p.to_str().unwrap(), "--store", &store]);
    assert!(stdout(&o).contains("4 to run"), "{}", stdout(&o));
    let csv = stdout(&run(&[
        "results", "--store", &store, "export", "mds", "--csv",
    ]));
    let creates: Vec<&str> = csv
        .lines()
        .filter(|l| l.contains(",create,rate,ops/s,2,"))
        .collect();
    assert_eq!(
        creates.len(),
        2,
        "one create figure per point, over 2 repeats: {csv}"
    );
    let dir = s.path("report");
    run(&[
        "report",
        "--store",
        &store,
        "mds",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(dir.join("create-rate.svg").is_file());
}

#[test]
fn reading_commands_leave_a_file_that_is_no_store_as_it_was() {
    let s = Scratch::new("store-readonly");
    for (name, bytes) in [("empty", &b""[..]), ("one", &b"x"[..])] {
        let f = s.path(name);
        std::fs::write(&f, bytes).unwrap();
        let store = f.to_str().unwrap();
        for cmd in [
            &["list"][..],
            &["show", "1"],
            &["compare", "1", "2"],
            &["export", "1", "--json"],
        ] {
            let mut words = vec!["results", "--store", store];
            words.extend_from_slice(cmd);
            let o = iolab(&words);
            assert_eq!(o.status.code(), Some(2), "{name} {cmd:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("not an iolab results store"),
                "{name} {cmd:?}: {}",
                stderr(&o)
            );
            assert_eq!(std::fs::read(&f).unwrap(), bytes, "{name} {cmd:?}");
        }
        let mut left: Vec<String> = std::fs::read_dir(&s.root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(name))
            .collect();
        left.sort();
        assert_eq!(left, [name], "no journal, WAL or shm file made");
    }
    // A real store reads through the read-only path, and is not changed.
    let store = store_arg(&s);
    run(&[
        "mdtest",
        "-F",
        "-n",
        "4",
        "-d",
        s.path("d").to_str().unwrap(),
        "--store",
        &store,
    ]);
    let before = std::fs::read(&store).unwrap();
    let listed = stdout(&run(&["results", "--store", &store, "list"]));
    assert!(listed.contains("mdtest"), "{listed}");
    run(&["results", "--store", &store, "show", "1"]);
    assert_eq!(std::fs::read(&store).unwrap(), before);
}

/// The pids whose parent is `ppid` (from /proc/PID/stat).
fn children_of(ppid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command name (which may hold spaces).
        let rest = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(ppid) && f[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` is still a live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s[s.rfind(')').unwrap_or(0) + 1..]
            .trim_start()
            .starts_with('Z')
    })
}

/// Kills a process left running by a failed test.
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for p in &self.0 {
            // SAFETY: kill(2) on a pid this test started or found as its child.
            unsafe { libc::kill(*p as i32, libc::SIGKILL) };
        }
    }
}

/// Whether process `pid` has a handler for SIGTERM (its status's SigCgt).
fn catches_sigterm(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
}

#[test]
fn a_sweep_killed_with_sigkill_takes_its_run_along_and_resumes() {
    let s = Scratch::new("sweep-kill9");
    let store = store_arg(&s);
    // -p 3: each run waits 3 s before its phases, so the kill finds it running.
    let text = format!(
        "label = \"k9\"\ntool = \"mdtest\"\nrepeats = 1\nargs = \"-F -n 8 -p 3 -d {}/m.{{point}}\"\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
        s.root.display()
    );
    let p = s.path("k9.toml");
    std::fs::write(&p, text).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["sweep", p.to_str().unwrap(), "--store", &store])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sweep = child.id();
    let mut guard = KillOnDrop(vec![sweep]);
    let t0 = Instant::now();
    let repeat = loop {
        if let Some(&c) = children_of(sweep).first() {
            break c;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no run started");
        std::thread::sleep(Duration::from_millis(20));
    };
    guard.0.push(repeat);
    // Once the run catches SIGTERM (what its sweep's death sends it): a
    // run killed before its handler is set, while still starting, has
    // nothing to write.
    let t0 = Instant::now();
    while !catches_sigterm(repeat) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run never caught SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(sweep as i32, libc::SIGKILL) };
    let mut child = child;
    child.wait().unwrap();
    let t0 = Instant::now();
    while alive(repeat) && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(repeat), "the run outlived its sweep");
    // It ended because its sweep did (interrupted), not by finishing.
    let stale = s.path(&format!(".runs.sqlite.sweep.{sweep}"));
    let json = std::fs::read_dir(&stale)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("the run wrote its JSON");
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["outcome"]["status"], "interrupted", "{json}");
    // The rerun takes over the dead sweep's directory, says so, resumes.
    let o = run(&["sweep", p.to_str().unwrap(), "--store", &store]);
    assert!(
        stderr(&o).contains(&format!("took over {}", stale.display())),
        "{}",
        stderr(&o)
    );
    assert!(!stale.exists(), "the stale directory is removed");
    assert!(stdout(&o).contains("recorded 2 runs now"), "{}", stdout(&o));
    assert!(
        std::fs::read_dir(&s.root)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().contains(".sweep.")),
        "nothing of either sweep is left"
    );
}

/// A plan of 2 points x 3 repeats through `launcher`, in `s`.
fn launcher_plan(s: &Scratch, launcher: &str) -> PathBuf {
    let p = s.path("launcher.toml");
    let text = format!(
        r#"label = "via launcher"
tool = "mdtest"
args = "-F -n 8 -d {}/l.{{point}}"
repeats = 3
launcher = "{launcher}"
[[axes]]
name = "ranks"
values = [1, 2]
"#,
        s.root.display()
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the sweep of `plan` with `env` removed from its environment.
fn sweep_without(plan: &Path, store: &str, env: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    let _session = common::OmpiSession::attach(&mut c);
    for e in env {
        c.env_remove(e);
    }
    c.args(["sweep", plan.to_str().unwrap(), "--store", store])
        .env("CI", "1")
        .output()
        .unwrap()
}

/// Checks a sweep stopped by its launcher: exit 2, one line naming the
/// launcher with `advice`, one repeat started, nothing recorded.
fn stopped_at_first_point(o: &std::process::Output, store: &str, advice: &str) {
    let (out, err) = (stdout(o), stderr(o));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("iolab sweep:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("the launcher `") && lines[0].contains(advice),
        "{err}"
    );
    assert_eq!(
        out.matches("] ranks=").count(),
        1,
        "one repeat started: {out}"
    );
    assert!(!out.contains("FAILED"), "{out}");
    let list = stdout(&run(&["results", "--store", store, "list"]));
    assert!(
        !list
            .lines()
            .any(|l| l.contains("mdtest") && l.contains("completed")),
        "{list}"
    );
}

/// A launcher that is not there stops the sweep at once (it used to
/// fail every repeat, 6 here, and exit 1).
#[test]
fn a_missing_launcher_stops_the_sweep_at_its_first_point() {
    let s = Scratch::new("sweep-no-launcher");
    let store = store_arg(&s);
    let p = launcher_plan(&s, "no-such-launcher-iolab-test -n {ranks} {iolab}");
    let o = sweep_without(&p, &store, &[]);
    stopped_at_first_point(&o, &store, "install it or put it on PATH");
    assert!(
        stderr(&o).contains("no-such-launcher-iolab-test"),
        "{}",
        stderr(&o)
    );
}

/// As root without Open MPI's two variables, mpirun refuses to start:
/// the sweep stops at its first point and says which variables (it used
/// to run all its repeats into the same refusal and exit 1).
#[test]
fn mpirun_refusing_root_stops_the_sweep_and_says_what_to_export() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("mpirun refusing root", "mpirun not installed");
    }
    if !common::is_root() {
        return skip_or_fail("mpirun refusing root", "needs root (mpirun refuses root)");
    }
    let s = Scratch::new("sweep-root-refused");
    let store = store_arg(&s);
    let p = launcher_plan(&s, "mpirun --oversubscribe -n {ranks} {iolab}");
    let o = sweep_without(
        &p,
        &store,
        &["OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"],
    );
    stopped_at_first_point(&o, &store, "OMPI_ALLOW_RUN_AS_ROOT=1");
}

/// A build without MPI runs `mpirun -n 1` as threads but cannot run two
/// ranks: the sweep stops at the first point with two, and says so.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_stops_the_sweep_at_its_first_multi_rank_point() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("sweep without MPI", "mpirun not installed");
    }
    let s = Scratch::new("sweep-no-mpi");
    let store = store_arg(&s);
    let p = launcher_plan(
        &s,
        "mpirun --allow-run-as-root --oversubscribe -n {ranks} {iolab}",
    );
    let o = sweep_without(&p, &store, &[]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert_eq!(out.matches("] ranks=2").count(), 1, "{out}");
    assert!(err.contains("rebuild iolab with --features mpi"), "{err}");
}

/// A plan that has mpirun start xdd as two ranks stops there: xdd runs
/// as one process, and each rank ran (and the sweep recorded) a write of
/// its own to the same target. One rank runs and is recorded; two are
/// refused by xdd, and the sweep says why and what to do, exit 2.
#[test]
fn a_launcher_starting_xdd_as_two_ranks_stops_the_sweep() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return skip_or_fail("sweep xdd under mpirun", "mpirun not installed");
    }
    let s = Scratch::new("sweep-xdd-ranks");
    let store = store_arg(&s);
    let p = s.path("xdd.toml");
    let text = format!(
        r#"label = "xdd ranks"
tool = "xdd"
args = "-op write -target {}/t -reqsize 8 -numreqs 8"
repeats = 1
launcher = "mpirun --allow-run-as-root --oversubscribe -n {{ranks}} {{iolab}}"
[[axes]]
name = "ranks"
values = [1, 2]
"#,
        s.root.display()
    );
    std::fs::write(&p, text).unwrap();
    let o = sweep_without(&p, &store, &[]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("iolab sweep:"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("xdd runs as one process")
            && said[0].contains("remove the launcher from the plan"),
        "{err}"
    );
    let list = stdout(&run(&["results", "--store", &store, "list"]));
    let recorded = list
        .lines()
        .filter(|l| l.contains(" completed ") && l.contains("ranks="))
        .count();
    assert_eq!(recorded, 1, "{list}");
}

/// Each finished repeat says about how long the rest will take (the
/// mean repeat so far times the repeats left); the last says nothing.
#[test]
fn each_repeat_line_says_the_time_left() {
    let s = Scratch::new("sweep-eta");
    let store = store_arg(&s);
    let p = plan(&s, "eta", 1, "");
    let o = run(&["sweep", p.to_str().unwrap(), "--store", &store]);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 6, "{out}");
    for l in &lines[..5] {
        assert!(l.ends_with(" left"), "{l}");
    }
    assert!(!lines[5].contains("left"), "{}", lines[5]);
}

/// Checks that `iolab sweep PLAN --store STORE` is refused, exit 2,
/// saying `says`.
fn refused_as(plan: &str, store: &Path, says: &str) {
    let o = iolab(&["sweep", plan, "--store", store.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}: {}",
        store.display(),
        stderr(&o)
    );
    assert!(stderr(&o).contains(says), "{says}: {}", stderr(&o));
}

/// Unmounts a bind mount on drop.
struct Bound(PathBuf);

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Another name of `store` in `dir`: a bind mount of the file over a
/// new one (root only). None when it cannot be made here.
fn bind_mounted(store: &Path, dir: &Path) -> Option<Bound> {
    let at = dir.join("bound.sqlite");
    std::fs::write(&at, b"").unwrap();
    let ok = Command::new("mount")
        .arg("--bind")
        .arg(store)
        .arg(&at)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(Bound(at))
}

/// A store reached by another name (a symbolic link, a hard link, a bind
/// mount of the file) let a second sweep of a series run beside the
/// first, each measuring with the other running: the claim was a
/// directory beside the name as given. Such names are refused to every
/// recording command now (SQLite keeps a write-ahead log per name, so
/// two writers through two would corrupt the store too), and the claim
/// is a lock in the store file, met through any path to its directory,
/// that goes with its sweep (kill -9 included).
#[test]
fn a_series_being_swept_is_refused_under_any_name_of_its_store() {
    let s = Scratch::new("sweep-names");
    let store = s.path("r.sqlite");
    // -p 3: each of the two repeats waits 3 s, so the sweep runs a while.
    let text = format!(
        "label = \"names\"\ntool = \"mdtest\"\nrepeats = 1\nargs = \"-F -n 4 -p 3 -d {}/n.{{point}}\"\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
        s.root.display()
    );
    let p = s.path("names.toml");
    std::fs::write(&p, text).unwrap();
    let p = p.to_str().unwrap();
    let first = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["sweep", p, "--store", store.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sweep = first.id();
    let mut guard = KillOnDrop(vec![sweep]);
    let t0 = Instant::now();
    while children_of(sweep).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "no run started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The scratch directory under another name: one directory, one log,
    // one claim.
    std::os::unix::fs::symlink(&s.root, s.path("alias")).unwrap();
    let alias = s.path("alias/r.sqlite");
    let busy = "series 'names' is being swept into this store by another sweep (pid";
    refused_as(p, &alias, busy);
    // Names of the file itself (after the alias, and each alone: with a
    // hard link, every name is one of two).
    let other = s.path("other");
    std::fs::create_dir(&other).unwrap();
    std::os::unix::fs::symlink(&store, other.join("link.sqlite")).unwrap();
    std::fs::hard_link(&store, other.join("hard.sqlite")).unwrap();
    refused_as(p, &other.join("link.sqlite"), "is a symbolic link");
    refused_as(
        p,
        &other.join("hard.sqlite"),
        "has other names (2 hard links)",
    );
    std::fs::remove_file(other.join("hard.sqlite")).unwrap();
    let bound = bind_mounted(&store, &other);
    match &bound {
        Some(b) => refused_as(p, &b.0, "a bind mount of the file"),
        None => skip_or_fail("sweep-names", "no bind mount (not root?)"),
    }
    assert!(
        alive(sweep),
        "the first sweep ended before the others were refused"
    );
    // A dead sweep's claim is no obstacle: the kernel drops its lock.
    let runs = children_of(sweep);
    guard.0.extend(&runs);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(sweep as i32, libc::SIGKILL) };
    let mut first = first;
    first.wait().unwrap();
    let t0 = Instant::now();
    while runs.iter().any(|&r| alive(r)) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "its run outlived it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(bound);
    let o = run(&["sweep", p, "--store", alias.to_str().unwrap()]);
    assert!(stdout(&o).contains("recorded 2 runs now"), "{}", stdout(&o));
}
