//! What a sweep, the store and a report must not get wrong, with the real
//! binary: a report removes only files it listed as it wrote them; an
//! option two parts of a plan set is refused; a comparison lists what B
//! lacks and fails on it; runs with inner points are charted per inner
//! point; a sweep's output is escaped and its hint runs as printed; a
//! store path that is a FIFO is refused at once, and so are a store this
//! user may not write, a symbolic link and an empty path, before the
//! run; reading commands create nothing beside a store; a relative test
//! directory the run removed still has its file system described.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, skip_or_fail, stderr, stdout, Scratch};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(words: &[&str]) -> Output {
    let o = iolab(words);
    assert!(
        o.status.success(),
        "iolab {words:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

fn write_plan(s: &Scratch, name: &str, text: &str) -> String {
    let p = s.path(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A report removed every .svg or .png the earlier page's text named
/// anywhere (a plan's description, an mdtest `-d .../summary.svg`):
/// the user's own files of those names went. Now the page lists the
/// files it wrote, with their digests, in its head: only those go, and
/// only while they are as written; a file of the user's at a name the
/// report writes stops it (exit 2); beside an older page, which lists
/// nothing, nothing is removed.
#[test]
fn a_report_removes_only_what_it_listed_as_it_wrote_it() {
    let s = Scratch::new("report-files");
    let store = s.path("s.sqlite").display().to_string();
    let root = s.root.display();
    let full = write_plan(
        &s,
        "full.toml",
        &format!(
            "label = \"full\"\ntool = \"mdtest\"\ndescription = \"as on vendor-chart.png\"\nargs = \"-F -n 4 -d {root}/summary.svg\"\nrepeats = 1\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n"
        ),
    );
    let create = write_plan(
        &s,
        "create.toml",
        &format!(
            "label = \"create\"\ntool = \"mdtest\"\nargs = \"-F -C -n 4 -d {root}/c.{{point}}.{{repeat}}\"\nrepeats = 1\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n"
        ),
    );
    run(&["sweep", &full, "--store", &store]);
    run(&["sweep", &create, "--store", &store]);
    let rep = s.path("rep");
    let report = |dir: &Path, series: &str| {
        iolab(&[
            "report",
            "--store",
            &store,
            series,
            "-o",
            dir.to_str().unwrap(),
        ])
    };
    assert!(report(&rep, "full").status.success());
    let page = std::fs::read_to_string(rep.join("index.html")).unwrap();
    assert!(page.contains("vendor-chart.png") && page.contains("summary.svg"));
    assert!(page.contains("<meta name=\"iolab-report-files\" content=\"file_create-rate.svg:"));
    for f in ["summary.svg", "vendor-chart.png"] {
        std::fs::write(rep.join(f), b"mine\n").unwrap();
    }
    let changed = rep.join("file_remove-rate.png");
    let mut bytes = std::fs::read(&changed).unwrap();
    bytes.extend_from_slice(b"annotated");
    std::fs::write(&changed, &bytes).unwrap();
    let o = report(&rep, "create");
    assert!(o.status.success(), "{}", stderr(&o));
    let left = names(&rep);
    for f in ["summary.svg", "vendor-chart.png"] {
        assert_eq!(
            std::fs::read(rep.join(f)).unwrap(),
            b"mine\n",
            "{f}: {left:?}"
        );
    }
    assert_eq!(
        std::fs::read(&changed).unwrap(),
        bytes,
        "changed since: kept"
    );
    for gone in [
        "file_stat-rate.svg",
        "file_stat-rate.png",
        "file_remove-rate.svg",
    ] {
        assert!(!left.contains(&gone.to_string()), "{gone}: {left:?}");
    }
    assert!(
        left.contains(&"file_create-rate.svg".to_string()),
        "{left:?}"
    );
    // A file the next report writes, changed since: refused, kept.
    let mine = rep.join("file_create-rate.svg");
    std::fs::write(&mine, b"<svg>mine</svg>").unwrap();
    let o = report(&rep, "create");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("file_create-rate.svg there is not a file of the earlier report"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&mine).unwrap(), b"<svg>mine</svg>");
    // Beside a page that lists no files (an older iolab's): none removed.
    let old = s.path("old");
    assert!(report(&old, "full").status.success());
    let page = std::fs::read_to_string(old.join("index.html")).unwrap();
    let listed: String = page
        .lines()
        .filter(|l| !l.starts_with("<meta name=\"iolab-report-files\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(old.join("index.html"), listed).unwrap();
    let o = report(&old, "create");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("none was removed"), "{}", stderr(&o));
    assert!(old.join("file_stat-rate.svg").is_file());
}

/// Runs a sweep of `text` that must be refused (exit 2) saying `says`,
/// with nothing run and no store made; `--dry-run` refuses it too.
fn refused(s: &Scratch, text: &str, says: &str) {
    let p = write_plan(s, "bad.toml", text);
    let store = s.path("bad.sqlite");
    for dry in [true, false] {
        let mut words = vec!["sweep", &p, "--store", store.to_str().unwrap()];
        if dry {
            words.push("--dry-run");
        }
        let o = iolab(&words);
        assert_eq!(o.status.code(), Some(2), "{says}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "wanted '{says}': {}", stderr(&o));
    }
    assert!(!store.exists(), "nothing created");
    assert!(!s.path("never").exists(), "nothing ran");
}

/// An option set by two parts of a plan ran every point with one of the
/// values (two axes of --tasks: both points with 2 tasks; -FCTru and an
/// axis -u: "shared" ran private; -n4 or a split -n with an axis -n), or
/// recorded into another store (a list axis with --store); all passed
/// --dry-run. As the tool's own parser reads the line, they are refused.
#[test]
fn an_option_two_parts_of_a_plan_set_is_refused() {
    let s = Scratch::new("sweep-twice");
    let d = s.path("never").display().to_string();
    let head = "label = \"t\"\ntool = \"mdtest\"\nrepeats = 1\n";
    let tasks = |name: &str, values: &str| {
        format!("[[axes]]\nname = \"{name}\"\noption = \"--tasks\"\nvalues = {values}\n")
    };
    refused(
        &s,
        &format!(
            "{head}args = \"-F -n 4 -d {d}\"\n{}{}",
            tasks("a", "[1, 4]"),
            tasks("b", "[2]")
        ),
        "--tasks is set by axis 'a' (--tasks) and by axis 'b' (--tasks)",
    );
    refused(
        &s,
        &format!("{head}args = \"-FCTru -n 4 -d {d}\"\n[[axes]]\nname = \"dir\"\noption = \"-u\"\nvalues = [true, false]\n"),
        "-u is set by args (-FCTru) and by axis 'dir' (-u)",
    );
    let n_axis = "[[axes]]\nname = \"n\"\noption = \"-n\"\nvalues = [4, 8]\n";
    refused(
        &s,
        &format!("{head}args = \"-F -n4 -d {d}\"\n{n_axis}"),
        "-n is set by args (-n4) and by axis 'n' (-n)",
    );
    refused(
        &s,
        &format!("{head}args = \"-F -d {d}\"\n{n_axis}{}[split]\noption = \"-n\"\ntotal = 64\nover = [\"a\"]\n", tasks("a", "[1, 2]")),
        "-n is set by axis 'n' (-n) and by split (-n)",
    );
    for words in ["[\"--store\", \"/x.sqlite\"]", "[\"--json=/x.json\"]"] {
        refused(
            &s,
            &format!("{head}args = \"-F -n 4 -d {d}\"\n[[axes]]\nname = \"w\"\nvalues = [[\"-u\"], {words}]\n"),
            "the sweep writes each run's JSON and records it itself",
        );
    }
    refused(
        &s,
        &format!("label = \"x\"\ntool = \"xdd\"\nrepeats = 1\nargs = \"-op write -reqsize 8 -targets 1 {d} -mbytes 1\"\n[[axes]]\nname = \"r\"\noption = \"-REQSIZE\"\nvalues = [4, 8]\n"),
        "-reqsize is set by args (-reqsize) and by axis 'r' (-REQSIZE)",
    );
    // Checked as mdtest would run it, one process of --tasks tasks:
    // every repeat failed (exit 2) after --dry-run said valid.
    refused(
        &s,
        &format!("{head}args = \"-F -C -T -r -n 4 -f 1 -l 2 -d {d}\"\n[[axes]]\nname = \"i\"\noption = \"-I\"\nvalues = [1, 2]\n"),
        "-f/-l: the sweep goes up to 2 tasks but the run has 1",
    );
    // 9 axes of 256 values: a panic (exit 101) on the product.
    let values: Vec<String> = (1..=256).map(|v| v.to_string()).collect();
    let mut huge = format!("{head}args = \"-F -n 4 -d {d}\"\n");
    for i in 0..9 {
        huge.push_str(&format!(
            "[[axes]]\nname = \"a{i}\"\noption = \"-I\"\nvalues = [{}]\n",
            values.join(", ")
        ));
    }
    refused(&s, &huge, "at most 100000");
    refused(
        &s,
        &format!(
            "label = \"series:foo\"\ntool = \"mdtest\"\nargs = \"-F -n 4 -d {d}\"\n{}",
            tasks("a", "[1]")
        ),
        "starts with 'series:'",
    );
}

/// A plan whose second point fails: `two` runs mdtest on a directory
/// that cannot be made.
fn compare_plan(s: &Scratch, label: &str, phases: &str, two: &str) -> String {
    let root = s.root.display();
    write_plan(
        s,
        &format!("{label}.toml"),
        &format!(
            "label = \"{label}\"\ntool = \"mdtest\"\nargs = \"-F {phases} -n 4 -d {{d}}.{{repeat}}\"\nrepeats = 2\n[[axes]]\nname = \"d\"\nvalues = [\"{root}/{label}1\", \"{two}\"]\nlabels = [\"one\", \"two\"]\n"
        ),
    )
}

/// A point B failed, and a phase B no longer measures, vanished from the
/// comparison: "0 regressions", exit 0 under --fail-on-regression. They
/// are listed, counted, and fail it.
#[test]
fn compare_lists_what_b_lacks_and_fails_on_it() {
    let s = Scratch::new("compare-lacks");
    let store = s.path("s.sqlite").display().to_string();
    let a = compare_plan(&s, "a", "-C -T", &format!("{}/a2", s.root.display()));
    run(&["sweep", &a, "--store", &store]);
    let b = compare_plan(&s, "b", "-C", "/proc/iolab-no-such/d");
    let o = iolab(&["sweep", &b, "--store", &store]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let o = run(&["results", "--store", &store, "compare", "a", "b"]);
    let out = stdout(&o);
    assert!(
        out.contains("only in A:\n  d=one: file_stat rate\n  d=two (no completed repeat in B)\n"),
        "{out}"
    );
    assert!(out.contains(", 2 only in A, 0 only in B"), "{out}");
    let o = iolab(&[
        "results",
        "--store",
        &store,
        "compare",
        "a",
        "b",
        "--fail-on-regression",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let back = stdout(&run(&["results", "--store", &store, "compare", "b", "a"]));
    assert!(back.contains("d=two (no completed repeat in A)"), "{back}");
}

/// A sweep of runs with inner points (mdtest -f/-l: one test per task
/// count) showed empty repeat lines, "(no completed repeat)" beside its
/// runs, and no chart: each inner point's figure is the point's own.
#[test]
fn runs_with_inner_points_are_charted_per_inner_point() {
    let s = Scratch::new("sweep-inner");
    let store = s.path("s.sqlite").display().to_string();
    let p = write_plan(
        &s,
        "inner.toml",
        &format!(
            "label = \"inner\"\ntool = \"mdtest\"\nargs = \"-F -C -T -r -n 4 -f 1 -l 2 --tasks 2 -d {}/d\"\nrepeats = 2\n[[axes]]\nname = \"i\"\noption = \"-I\"\nvalues = [1, 2]\n",
            s.root.display()
        ),
    );
    let out = stdout(&run(&["sweep", &p, "--store", &store]));
    assert!(out.contains("i=1 #1: file_create tasks=1 "), "{out}");
    assert!(!out.contains("no completed repeat"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("file_create tasks=2") && l.contains("rate (ops/s)")),
        "{out}"
    );
    let dir = s.path("rep");
    let o = run(&[
        "report",
        "--store",
        &store,
        "inner",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(!stdout(&o).contains("(0 charts)"), "{}", stdout(&o));
    assert!(dir.join("file_create_tasks_2-rate.svg").is_file());
}

/// The `see:` command of a sweep's last line, run by sh as printed
/// (`iolab` being the binary under test).
fn run_hint(out: &str) -> Output {
    run_hint_in("sh", out)
}

/// [`run_hint`] with `shell`.
fn run_hint_in(shell: &str, out: &str) -> Output {
    let line = out.lines().last().unwrap();
    let see = &line[line.find("see: iolab ").unwrap() + "see: iolab ".len()..];
    let see = &see[..see.find("; chart: ").unwrap()];
    Command::new(shell)
        .arg("-c")
        .arg(format!("\"$0\" {see}"))
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .env("CI", "1")
        .output()
        .unwrap()
}

/// Labels and keys reached the terminal raw (escape sequences in the
/// header, the repeat lines, --dry-run and the hint), and the hint
/// broke on a `'` and named run 7 for the series "7".
#[test]
fn a_sweeps_output_is_escaped_and_its_hint_runs_as_printed() {
    let s = Scratch::new("sweep-hint");
    let store = s.path("s.sqlite").display().to_string();
    let sweep = |label: &str, key: &str| {
        let p = write_plan(
            &s,
            "p.toml",
            &format!(
                "label = \"{label}\"\ntool = \"mdtest\"\nargs = \"-F -n 2 -d {}/d.{{point}}\"\nrepeats = 1\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1]\nlabels = [\"{key}\"]\n",
                s.root.display()
            ),
        );
        let dry = run(&["sweep", &p, "--dry-run"]);
        (
            stdout(&dry),
            stdout(&run(&["sweep", &p, "--store", &store])),
        )
    };
    let (dry, out) = sweep("esc", "1\\u001b]0;x\\u0007b\\rc\\u001b[2J");
    for text in [&dry, &out] {
        assert!(!text.contains(['\u{1b}', '\u{7}', '\r']), "{text:?}");
    }
    assert!(
        out.contains("] tasks=1\\u{1b}]0;x\\u{7}b\\rc\\u{1b}[2J #1: "),
        "{out}"
    );
    for label in ["it's", "7"] {
        let (_, out) = sweep(label, "1");
        let o = run_hint(&out);
        assert!(o.status.success(), "{out}\n{}", stderr(&o));
        assert!(stdout(&o).contains("tasks=1"), "the series: {}", stdout(&o));
    }
}

/// A label with a control character was accepted: "a\nb" printed the
/// hint `show 'a\nb'`, which names another series, and a NUL made a
/// series no command line can name. Refused (exit 2, naming `label`),
/// escapes and bidirectional overrides too.
#[test]
fn a_label_with_a_control_character_is_refused() {
    let s = Scratch::new("sweep-label-ctl");
    for label in ["a\\nb", "a\\u0000b", "a\\u001b]0;x\\u0007b", "a\\u202eb"] {
        refused(
            &s,
            &format!(
                "label = \"{label}\"\ntool = \"mdtest\"\nargs = \"-F -n 2 -d {}/never\"\nrepeats = 1\n",
                s.root.display()
            ),
            "label: ",
        );
    }
}

/// A store path that is not UTF-8 (or holds a line break) was printed
/// lossily in the hint (U+FFFD, `\n`), which named another file. It is
/// printed as `$'...'` with `\xHH` escapes, and bash runs it as printed.
#[test]
fn a_store_path_that_is_not_utf8_is_quoted_so_the_hint_runs() {
    use std::os::unix::ffi::OsStrExt;
    let s = Scratch::new("sweep-hint-bytes");
    let p = write_plan(
        &s,
        "p.toml",
        &format!(
            "label = \"it's\"\ntool = \"mdtest\"\nargs = \"-F -n 2 -d {}/d.{{point}}\"\nrepeats = 1\n[[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1]\n",
            s.root.display()
        ),
    );
    let mut name = s.root.as_os_str().as_bytes().to_vec();
    name.extend_from_slice(b"/st\xff\nx's.sqlite");
    let store = std::ffi::OsStr::from_bytes(&name);
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("sweep")
        .arg(&p)
        .arg("--store")
        .arg(store)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\\xff\\x0ax\\'s.sqlite'"), "{out}");
    let o = run_hint_in("bash", &out);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    assert!(stdout(&o).contains("tasks=1"), "the series: {}", stdout(&o));
}

/// A plan that is not TOML: the reader's message printed on one line
/// with `\n` for its line breaks. Its lines are lines again.
#[test]
fn a_toml_error_is_printed_on_its_lines() {
    let s = Scratch::new("sweep-toml-lines");
    let p = write_plan(
        &s,
        "p.toml",
        "label = \"x\"\ntool = \"mdtest\"\nrepeats = 1\nbogus=1 2\n",
    );
    let o = iolab(&["sweep", &p, "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains("\\n"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].ends_with("TOML parse error at line 4, column 9"),
        "{err}"
    );
    assert!(lines.contains(&"4 | bogus=1 2"), "{err}");
}

/// A store path naming a FIFO was opened, which waited for a writer
/// without end (one SIGTERM did not stop it); reading commands said
/// there was no store. Refused at once, exit 2, nothing run.
#[test]
fn a_fifo_as_the_store_is_refused_at_once() {
    let s = Scratch::new("store-fifo");
    let fifo = s.path("fifo.sqlite");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let fifo = fifo.to_str().unwrap();
    let d = s.path("d");
    let plan = write_plan(
        &s,
        "p.toml",
        &format!(
            "label = \"t\"\ntool = \"mdtest\"\nargs = \"-F -n 2 -d {}\"\nrepeats = 1\n",
            d.display()
        ),
    );
    for words in [
        &[
            "mdtest",
            "-F",
            "-n",
            "2",
            "-d",
            d.to_str().unwrap(),
            "--store",
            fifo,
        ][..],
        &["results", "--store", fifo, "list"],
        &["sweep", &plan, "--store", fifo],
    ] {
        let o = bounded(words);
        assert_eq!(o.status.code(), Some(2), "{words:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is not a regular file"),
            "{words:?}: {}",
            stderr(&o)
        );
    }
    assert!(!d.exists(), "nothing ran");
}

/// `iolab WORDS`, killed (and the test failed) if it has not ended
/// within a minute.
fn bounded(words: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(words).env("CI", "1");
    within_a_minute(c, words)
}

/// The output of `c` (iolab `words`), killed (and the test failed) if
/// it has not ended within a minute.
fn within_a_minute(mut c: Command, words: &[&str]) -> Output {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("iolab {words:?} still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Reading commands made `-wal` and `-shm` files beside a store closed
/// cleanly, and beside another program's WAL database they refused as
/// "left untouched".
#[test]
fn reading_commands_create_nothing_beside_a_store() {
    let s = Scratch::new("store-quiet");
    let dir = s.path("stores");
    std::fs::create_dir(&dir).unwrap();
    let store = dir.join("s.sqlite");
    let store = store.to_str().unwrap();
    run(&[
        "mdtest",
        "-F",
        "-n",
        "2",
        "-d",
        s.path("d").to_str().unwrap(),
        "--store",
        store,
    ]);
    let foreign = dir.join("foreign.db");
    let made = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3\nc = sqlite3.connect({:?})\nc.execute('PRAGMA journal_mode=WAL')\nc.execute('CREATE TABLE t (a)')\nc.commit()\nc.close()\n",
            foreign.display().to_string()
        ))
        .status();
    if !made.is_ok_and(|st| st.success()) {
        return skip_or_fail(
            "reading_commands_create_nothing",
            "python3's sqlite3 did not run",
        );
    }
    let before = names(&dir);
    assert_eq!(before, ["foreign.db", "s.sqlite"]);
    assert!(stdout(&run(&["results", "--store", store, "list"])).contains("mdtest"));
    run(&["results", "--store", store, "show", "1"]);
    let o = iolab(&["results", "--store", foreign.to_str().unwrap(), "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not an iolab results store"));
    assert_eq!(names(&dir), before);
}

/// `-d nd2`, relative and removed by the run, was described as `file
/// system nd2 on  (, )`: its mount was looked for from the empty path.
#[test]
fn a_relative_directory_the_run_removed_has_its_file_system_described() {
    let s = Scratch::new("env-relative");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["mdtest", "-F", "-C", "-T", "-r", "-n", "4", "-d", "nd2"])
        .args(["--json", "m.json"])
        .current_dir(&s.root)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!s.path("nd2").exists());
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("m.json")).unwrap()).unwrap();
    let fs = doc["environment"]["filesystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "nd2")
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(
        fs["mount_point"].as_str().is_some_and(|m| !m.is_empty()),
        "{fs}"
    );
    assert!(
        fs["fs_type"].as_str().is_some_and(|t| !t.is_empty()),
        "{fs}"
    );
}

/// `iolab WORDS` run in `dir` (with no `IOLAB_STORE`), as the user
/// `uid` when given; killed (and the test failed) if it has not ended
/// within a minute.
fn in_dir(dir: &Path, uid: Option<u32>, words: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(words)
        .current_dir(dir)
        .env("CI", "1")
        .env_remove("IOLAB_STORE");
    if let Some(uid) = uid {
        c.uid(uid).gid(uid);
    }
    within_a_minute(c, words)
}

/// The user nobody, whom a test runs as to be refused what root is not.
const NOBODY: u32 = 65534;

/// A store run with a plan that makes `made` (in `dir`): mdtest, xdd
/// and a sweep each given `--store STORE`, and what each run would leave.
fn store_runs(dir: &Path, store: &str) -> Vec<(Vec<String>, std::path::PathBuf)> {
    let at = |n: &str| dir.join(n).display().to_string();
    let plan = dir.join("p.toml");
    let text = format!(
        "label = \"t\"\ntool = \"mdtest\"\nargs = \"-F -C -n 2 -d {}\"\nrepeats = 1\n",
        at("sw")
    );
    std::fs::write(&plan, text).unwrap();
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            words(&[
                "mdtest",
                "-F",
                "-C",
                "-n",
                "5",
                "-d",
                &at("m"),
                "--store",
                store,
            ]),
            dir.join("m"),
        ),
        (
            words(&[
                "xdd",
                "-op",
                "write",
                "-target",
                &at("xf"),
                "-reqsize",
                "4",
                "-mbytes",
                "1",
                "--store",
                store,
            ]),
            dir.join("xf"),
        ),
        (
            words(&["sweep", &plan.display().to_string(), "--store", store]),
            dir.join("sw"),
        ),
    ]
}

/// Checks that `o` was refused before the run (exit 2, `says` in its
/// message) and that the run made nothing (`made` is absent).
fn refused_before_the_run(o: &Output, words: &[String], says: &str, made: &Path) {
    assert_eq!(o.status.code(), Some(2), "{words:?}: {}", stderr(o));
    assert!(stderr(o).contains(says), "{words:?}: {}", stderr(o));
    assert!(!made.exists(), "{words:?} ran: {} exists", made.display());
}

/// One small mdtest run recorded in `store` (its files under `s`).
fn record_one_run(s: &Scratch, store: &Path) {
    let first = s.path("first").display().to_string();
    run(&[
        "mdtest",
        "-F",
        "-n",
        "2",
        "-d",
        &first,
        "--store",
        store.to_str().unwrap(),
    ]);
}

/// A store this user may not write (mode 0444, run by nobody in a
/// directory of nobody's) was opened read-only without a word (SQLite
/// falls back to that): the whole run went, then its record failed
/// (exit 1; a sweep, documented as exit 2 with nothing run, too), and
/// SQLite left mode-0444 `-wal` and `-shm` files beside the store.
/// Refused before the run now, exit 2, nothing made beside it.
#[test]
fn a_store_this_user_may_not_write_is_refused_before_the_run() {
    if !common::is_root() {
        return skip_or_fail("store-unwritable", "not root: cannot run as nobody");
    }
    let s = Scratch::new("store-unwritable");
    let ro = s.path("ro");
    std::fs::create_dir(&ro).unwrap();
    let store = ro.join("s.sqlite");
    record_one_run(&s, &store);
    let runs = store_runs(&ro, "s.sqlite");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    for e in [ro.clone(), store.clone(), ro.join("p.toml")] {
        std::os::unix::fs::chown(&e, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let before = std::fs::read(&store).unwrap();
    for (words, made) in &runs {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = in_dir(&ro, Some(NOBODY), &w);
        refused_before_the_run(&o, words, "cannot be written", made);
    }
    assert_eq!(names(&ro), ["p.toml", "s.sqlite"]);
    assert!(
        std::fs::read(&store).unwrap() == before,
        "the store changed"
    );
}

/// Clears the immutable flag of a file on drop, so that the test's
/// file system can be taken down whatever happened.
struct Immutable(std::path::PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// An immutable store (chattr +i), which root may not write either, was
/// opened read-only without a word: the run went, then exit 1.
#[test]
fn an_immutable_store_is_refused_before_the_run() {
    let s = Scratch::new("store-immutable");
    // tmpfs has no immutable flag: an ext4 of its own.
    let fs = match common::loopfs::LoopFs::ext4(&s, "ext4", 32, &[]) {
        Ok(fs) => fs,
        Err(e) => return skip_or_fail("store-immutable", &e),
    };
    let store = fs.at.join("s.sqlite");
    let st = store.to_str().unwrap();
    record_one_run(&s, &store);
    let flagged = Command::new("chattr").arg("+i").arg(&store).status();
    if !flagged.is_ok_and(|st| st.success()) {
        return skip_or_fail("store-immutable", "chattr +i did not run");
    }
    let _flag = Immutable(store.clone());
    let before = names(&fs.at);
    for (words, made) in store_runs(&s.root, st) {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = in_dir(&s.root, None, &w);
        refused_before_the_run(&o, &words, "cannot be written", &made);
    }
    assert_eq!(names(&fs.at), before);
}

/// A symbolic link at the store's path was followed: one planted to
/// nothing had a store created where it pointed (by a sweep at the
/// default ./iolab.sqlite, or a run's --store), and one to a store was
/// written through. A link as the store is refused by every command
/// (exit 2, before anything runs), and nothing is made where it points.
#[test]
fn a_symbolic_link_as_the_store_is_refused_and_not_followed() {
    let s = Scratch::new("store-link");
    let target = s.path("target");
    std::fs::create_dir(&target).unwrap();
    let real = s.path("real.sqlite");
    record_one_run(&s, &real);
    let before = std::fs::read(&real).unwrap();
    let link = |to: &Path, name: &str| std::os::unix::fs::symlink(to, s.path(name)).unwrap();
    link(&target.join("victim.sqlite"), "iolab.sqlite");
    link(&target.join("v2.sqlite"), "l2.sqlite");
    link(&real, "l3.sqlite");
    // The default store, ./iolab.sqlite, then links to nothing and to a store.
    let mut runs = store_runs(&s.root, "iolab.sqlite");
    runs[2].0.truncate(2);
    runs.extend(store_runs(&s.root, "l2.sqlite"));
    runs.extend(store_runs(&s.root, "l3.sqlite"));
    let readers = [
        vec!["results", "--store", "l3.sqlite", "list"],
        vec!["results", "--store", "iolab.sqlite", "list"],
        vec!["report", "t", "--store", "l3.sqlite", "-o", "rep"],
    ];
    let made = s.path("rep");
    for w in readers {
        runs.push((w.iter().map(|w| w.to_string()).collect(), made.clone()));
    }
    for (words, made) in &runs {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = in_dir(&s.root, None, &w);
        refused_before_the_run(&o, words, "is a symbolic link", made);
    }
    assert_eq!(names(&target), Vec::<String>::new());
    assert!(
        std::fs::read(&real).unwrap() == before,
        "written through the link"
    );
}

/// `--store ""` was ignored by mdtest and xdd (SQLite's private
/// temporary database): exit 0, nothing recorded. Exit 2 everywhere,
/// before the run, as `--json ""` is.
#[test]
fn an_empty_store_path_is_refused_before_the_run() {
    let s = Scratch::new("store-empty");
    let mut runs = store_runs(&s.root, "");
    let made = s.path("none");
    runs.push((
        ["results", "--store", "", "list"]
            .map(String::from)
            .to_vec(),
        made,
    ));
    for (words, made) in &runs {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = in_dir(&s.root, None, &w);
        // "--store : an empty name", or clap's "a value is required for '--store <STORE>'".
        refused_before_the_run(&o, words, "--store", made);
        let err = stderr(&o);
        assert!(
            err.contains("empty name") || err.contains("value is required"),
            "{err}"
        );
    }
}
