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
            out.contains("6 points x 3 repeats; 0 recorded already, 18 to run"),
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

#[test]
fn two_processes_record_at_once_and_lose_nothing() {
    let s = Scratch::new("store-concurrent");
    let doc = s.path("m.json");
    let d = s.path("d");
    run(&[
        "mdtest",
        "-F",
        "-n",
        "5",
        "-d",
        d.to_str().unwrap(),
        "--json",
        doc.to_str().unwrap(),
    ]);
    const EACH: usize = 40;
    let store = store_arg(&s);
    // Both start on a store that does not exist yet: creation races too.
    let spawn = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.args(["results", "--store", &store, "import"]);
        for _ in 0..EACH {
            c.arg(&doc);
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o).lines().count(), EACH);
    }
    let listed = stdout(&run(&["results", "--store", &store, "list"]));
    let ids: Vec<u64> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(ids, (1..=2 * EACH as u64).collect::<Vec<_>>(), "{listed}");
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
