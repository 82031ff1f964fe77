//! The one output layer (crates/output) as users meet it: an output path
//! that cannot be written is exit 2 naming it before anything runs or is
//! created (a missing directory, a read-only mount), and a write into a
//! full file system leaves every output complete or absent (no truncated
//! SVG, no temporary or `.part` file, no 0-byte file). Real tmpfs mounts
//! made by the test, the real binary.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, skip_or_fail, stderr, stdout, Scratch, SmallFs};
use std::path::Path;
use std::process::Command;

fn assert_usage(what: &str, o: &std::process::Output, names: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
    assert!(stderr(o).contains(names), "{what}: {}", stderr(o));
}

#[test]
fn stats_run_checks_its_tarball_before_running_the_command() {
    let s = Scratch::new("out-stats");
    let mark = s.path("ran");
    let o = iolab(&[
        "stats",
        "run",
        "local",
        "--tarball",
        "/no/such/dir/x.tgz",
        "--",
        "touch",
        mark.to_str().unwrap(),
    ]);
    assert_usage("stats run", &o, "/no/such/dir");
    assert!(!mark.exists(), "the command ran");
}

#[test]
fn lst_run_checks_its_json_and_csv_before_starting() {
    for opt in ["--json", "--csv"] {
        let o = iolab(&[
            "lst",
            "run",
            "ping",
            "--from",
            "127.0.0.1:1",
            "--to",
            "127.0.0.1:1",
            "--count",
            "1",
            "--connect-timeout",
            "1",
            opt,
            "/no/such/dir/x.json",
        ]);
        assert_usage("lst run", &o, "/no/such/dir/x.json");
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    }
}

/// Every survey's --json and --csv into a missing directory and into a
/// read-only file system: exit 2 naming the path; no result file and no
/// work directory made.
#[test]
fn surveys_check_json_and_csv_before_anything_is_created() {
    let s = Scratch::new("out-survey");
    let ro = SmallFs::at(
        s.path("ro"),
        "surveys_check_json_and_csv_before_anything_is_created",
        "ro,size=1m",
    );
    if !ro.mounted {
        return;
    }
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let rslt = s.path("r");
    let r = rslt.to_str().unwrap();
    let bad_paths = [
        "/no/such/dir/x".to_string(),
        ro.dir.join("x").display().to_string(),
    ];
    for bad in &bad_paths {
        for opt in ["--json", "--csv"] {
            for words in [
                vec![
                    "survey",
                    "obdfilter",
                    d,
                    "--size",
                    "1",
                    "--nobjhi",
                    "1",
                    "--thrhi",
                    "1",
                ],
                vec![
                    "survey",
                    "mds",
                    d,
                    "--thrlo",
                    "1",
                    "--thrhi",
                    "1",
                    "--file-count",
                    "10",
                ],
                vec!["survey", "ost", d, "-s", "1"],
            ] {
                let mut w = words.clone();
                w.extend(["--rslt", r, opt, bad.as_str()]);
                let o = iolab(&w);
                assert_usage(&format!("{w:?}"), &o, bad);
                assert!(common::tree(&dir).is_empty(), "{w:?}");
                assert!(common::tree(&s.root).iter().all(|f| !f.starts_with("r.")));
            }
        }
    }
}

/// `iolab survey plot` into a file system too small for its charts: the
/// files that are there are complete, the rest absent.
#[test]
fn plot_into_a_full_file_system_leaves_only_complete_files() {
    let s = Scratch::new("out-plot");
    let full = SmallFs::at(
        s.path("full"),
        "plot_into_a_full_file_system_leaves_only_complete_files",
        "size=48k",
    );
    if !full.mounted {
        return;
    }
    // A summary with several charts (record sizes x tests), made by a
    // real object survey on the scratch tmpfs.
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let rslt = s.path("o");
    let o = iolab(&[
        "survey",
        "obdfilter",
        dir.to_str().unwrap(),
        "--size",
        "4",
        "--rszlo",
        "64",
        "--rszhi",
        "256",
        "--nobjhi",
        "2",
        "--thrhi",
        "4",
        "--rslt",
        rslt.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let prefix = full.dir.join("p");
    let o = iolab(&[
        "survey",
        "plot",
        s.path("o.summary").to_str().unwrap(),
        "--out",
        prefix.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "a full file system is an error");
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    assert_complete_or_absent(&full.dir);
}

/// Every file in `dir` is whole: no temporary file, none empty, every SVG
/// closed and every PNG ending with its IEND chunk.
fn assert_complete_or_absent(dir: &Path) {
    let names = common::tree(dir);
    for n in &names {
        let p = dir.join(n);
        let bytes = std::fs::read(&p).unwrap();
        assert!(
            !n.contains("iolab-tmp") && !n.ends_with(".part"),
            "{names:?}"
        );
        assert!(!bytes.is_empty(), "0-byte {n}");
        if n.ends_with(".svg") {
            assert!(
                String::from_utf8_lossy(&bytes)
                    .trim_end()
                    .ends_with("</svg>"),
                "truncated {n}"
            );
        }
        if n.ends_with(".png") {
            assert!(bytes.ends_with(&[0xAE, 0x42, 0x60, 0x82]), "truncated {n}");
        }
    }
}

/// `iolab report` into a full file system: nothing of the report is put
/// in place (and the directory it made goes again).
#[test]
fn report_into_a_full_file_system_leaves_nothing_partial() {
    let s = Scratch::new("out-report");
    let full = SmallFs::at(
        s.path("full"),
        "report_into_a_full_file_system_leaves_nothing_partial",
        "size=32k",
    );
    if !full.mounted {
        return;
    }
    let plan = s.path("p.toml");
    std::fs::write(
        &plan,
        format!(
            "label = \"s\"\ntool = \"mdtest\"\nargs = \"-F -n 8 -d {}/m.{{point}}\"\nrepeats = 1\n\
             [[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
            s.root.display()
        ),
    )
    .unwrap();
    let store = s.path("runs.sqlite");
    let st = store.to_str().unwrap();
    let o = iolab(&["sweep", plan.to_str().unwrap(), "--store", st]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = full.dir.join("rep");
    let o = iolab(&["report", "s", "--store", st, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists(), "{:?}", common::tree(&full.dir));
    assert!(
        common::tree(&full.dir).is_empty(),
        "{:?}",
        common::tree(&full.dir)
    );
}

/// A store in `s` holding one mdtest series swept over `--tasks` of
/// `tasks` (`"1, 2"`), for the report tests.
fn swept_store(s: &Scratch, tasks: &str) -> std::path::PathBuf {
    let plan = s.path("p.toml");
    std::fs::write(
        &plan,
        format!(
            "label = \"s\"\ntool = \"mdtest\"\nargs = \"-n 4 -d {}/m.{{point}}\"\nrepeats = 1\n\
             [[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [{tasks}]\n",
            s.root.display()
        ),
    )
    .unwrap();
    let store = s.path("runs.sqlite");
    let o = iolab(&[
        "sweep",
        plan.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    store
}

/// One SIGTERM stops a report before its next chart: exit 130, nothing
/// put in place (it took a second one, and the first was ignored). A
/// signal that comes after the report is whole changes nothing: each try
/// is either complete (exit 0) or absent (130), and at least one of
/// several tries, signalled early, is stopped.
#[test]
fn one_sigterm_stops_a_report_and_leaves_nothing() {
    let s = Scratch::new("out-report-term");
    let store = swept_store(&s, "1, 2, 3, 4");
    let st = store.to_str().unwrap();
    let mut stopped = 0;
    for (i, wait_ms) in [400, 200, 100, 50, 25].into_iter().enumerate() {
        let out = s.path(&format!("rep{i}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["report", "s", "--store", st, "-o", out.to_str().unwrap()])
            .env("CI", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(wait_ms));
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let status = child.wait().unwrap();
        match status.code() {
            Some(0) => assert!(out.join("index.html").is_file(), "complete when 0"),
            Some(130) => {
                stopped += 1;
                assert!(!out.exists(), "nothing when stopped");
            }
            // Before the handler was installed: the default action.
            None => assert!(!out.exists()),
            other => panic!("report after one SIGTERM: {other:?}"),
        }
    }
    assert!(stopped > 0, "no try was stopped by its one SIGTERM");
    let beside: Vec<String> = common::tree(&s.root)
        .into_iter()
        .filter(|p| p.starts_with('.'))
        .collect();
    assert!(beside.is_empty(), "staged directories left: {beside:?}");
}

/// A child killed (SIGKILL) and reaped on drop, also when the test fails.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The hidden temporaries (`.NAME.PID.XXXXXX.iolab-tmp`) of process `pid`
/// in `dir`.
fn temporaries_of(dir: &Path, pid: u32) -> Vec<std::path::PathBuf> {
    let mark = format!(".{pid}.");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with('.') && n.ends_with(".iolab-tmp") && n.contains(&mark)
        })
        .collect()
}

/// Starts `iolab report s -o out` and kills it with -9 once it has
/// written a chart under a temporary name (`ready` says when, from its
/// pid; at most 120 s); its pid. Tries again if it finished first.
fn kill_report_midway(st: &str, out: &Path, ready: impl Fn(u32) -> bool) -> u32 {
    for _ in 0..3 {
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["report", "s", "--store", st, "-o", out.to_str().unwrap()])
            .env("CI", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut child = Reaped(child);
        let pid = child.0.id();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::time::Instant::now() < until && child.0.try_wait().unwrap().is_none() {
            if ready(pid) {
                child.0.kill().unwrap();
                child.0.wait().unwrap();
                return pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            std::time::Instant::now() < until,
            "the report wrote no chart in 120 s"
        );
    }
    panic!("the report finished three times before it could be killed");
}

/// A report killed with -9 left its hidden temporaries (a staged
/// directory beside a new DIR, chart files inside an earlier report's),
/// which no later report removed. Now they are named for their process,
/// and the next report to the same DIR removes those of a dead one and
/// says so; one of a live process stays.
#[test]
fn a_report_killed_with_sigkill_leaves_what_the_next_one_removes() {
    let s = Scratch::new("out-report-kill9");
    let store = swept_store(&s, "1, 2");
    let st = store.to_str().unwrap();
    let out = s.path("rep");
    // A live process's (a sleep of ours) by its name: never removed.
    let sleeper = Reaped(Command::new("sleep").arg("600").spawn().unwrap());
    let live = s.path(&format!(".rep.{}.abcdef.iolab-tmp", sleeper.0.id()));
    std::fs::create_dir(&live).unwrap();
    // A new DIR: the staged directory beside it, with a chart in it.
    let staged_with_a_chart = |pid: u32| {
        temporaries_of(&s.root, pid)
            .iter()
            .any(|d| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_some()))
    };
    let dead = kill_report_midway(st, &out, staged_with_a_chart);
    let left = temporaries_of(&s.root, dead);
    assert_eq!(left.len(), 1, "{:?}", common::tree(&s.root));
    assert!(!out.exists(), "no DIR put in place");
    let o = iolab(&["report", "s", "--store", st, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "removed what a report killed before it finished (pid {dead}, no longer running) left: {}",
            left[0].display()
        )),
        "{}",
        stderr(&o)
    );
    assert!(
        !left[0].exists(),
        "the dead report's staged directory stays"
    );
    assert!(live.is_dir(), "a live process's directory was removed");
    // An earlier report's DIR: chart files under temporary names inside.
    let dead = kill_report_midway(st, &out, |pid| !temporaries_of(&out, pid).is_empty());
    let left = temporaries_of(&out, dead);
    assert!(!left.is_empty());
    let o = iolab(&["report", "s", "--store", st, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("(pid {dead}, no longer running)")),
        "{}",
        stderr(&o)
    );
    for f in &left {
        assert!(!f.exists(), "{} stays", f.display());
    }
    let hidden: Vec<String> = common::tree(&out)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    assert!(live.is_dir(), "a live process's directory was removed");
}

fn run_words(dir: &Path, words: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// Two outputs on one file, or an output on the data a run uses (a
/// target, a test file, the store): exit 2 naming both, before anything
/// is written. Each of these used to run and keep only the later write
/// (`-O summaryFile=data -o data -k` wrote the summary over the kept
/// test file; `-x sw --json sw` made mdtest's stonewall file JSON).
#[test]
fn two_outputs_or_an_output_and_the_data_on_one_file_are_refused() {
    let s = Scratch::new("out-same");
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir(dir.join("tree")).unwrap();
    std::fs::write(dir.join("kept"), b"the user's").unwrap();
    let run = |line: &str| run_words(&dir, &line.split_whitespace().collect::<Vec<_>>());
    for (line, names) in [
        ("xdd -op write -target t -reqsize 8 -numreqs 4 -output x --json x", "-output x: is the same file as --json x"),
        ("xdd -op write -target t -reqsize 8 -numreqs 4 --json y -csvout ./y", "-csvout ./y: is the same file as --json y"),
        ("xdd -op write -target kept -reqsize 8 -numreqs 4 --json kept", "-target kept"),
        ("xdd -op write -target f -reqsize 8 -numreqs 4 -passes 2 -createnewfiles -output f.00000002", "-target f.00000002"),
        ("ior -w -k -b 1m -t 256k -o data -O summaryFile=data", "-o data: is the same file as -O summaryFile data"),
        ("ior -w -k -b 1m -t 256k -F --tasks 2 -o d3 --json d3.00000001", "-o d3.00000001"),
        ("mdtest -d tree -n 10 --json same --csv same", "--csv same: is the same file as --json same"),
        ("mdtest -d tree -n 10 -C -x sw --json sw", "-x sw"),
        ("mdtest -d tree -n 10 --json s.db --store s.db", "--store s.db"),
        // --live too: the stream was lost, or written over xdd's target.
        ("mdtest -d tree -n 10 --live x.jsonl --json x.jsonl", "is the same file as --json x.jsonl"),
        ("xdd -op write -target t -reqsize 8 -numreqs 4 --live t", "-target t: is the same file as --live t"),
    ] {
        assert_usage(line, &run(line), names);
    }
    let mut left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["kept", "tree"]);
    assert_eq!(std::fs::read(dir.join("kept")).unwrap(), b"the user's");
    assert_eq!(std::fs::read_dir(dir.join("tree")).unwrap().count(), 0);
    // An empty --live name ran with no stream; ior refused its test file
    // only after making the live stream and the store.
    assert_usage(
        "--live ''",
        &run_words(&dir, &["mdtest", "-d", "tree", "-n", "10", "--live", ""]),
        "an empty name",
    );
    let o = run("ior -w -b 1m -t 64k -o kept --live lv.jsonl --store is.sqlite");
    assert_usage("ior on a file of the user's", &o, "the file exists");
    assert!(!dir.join("lv.jsonl").exists() && !dir.join("is.sqlite").exists());
    // Outputs may share a device such as /dev/null.
    let o =
        run("xdd -op write -target t -reqsize 8 -numreqs 4 -output /dev/null -csvout /dev/null");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// An output named at a block device, or at a link to one, is refused
/// before the run (exit 2): the CSV went onto the device's first bytes.
/// A link to a file of someone else's is replaced, its file neither
/// written nor copied into the output (an appending `-csvout` copied it).
#[test]
fn an_output_is_never_written_onto_a_device_or_through_a_link() {
    let s = Scratch::new("out-dev");
    let dev = match common::loopfs::LoopDev::scratch("out-dev-img", 1) {
        Ok(d) => d,
        Err(e) => return skip_or_fail("out-dev", &e),
    };
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&dev.dev, dir.join("dev.csv")).unwrap();
    let xdd = "xdd -op write -target null -reqsize 1 -numreqs 1";
    for out in ["-csvout dev.csv", "--json dev.csv", "-output dev.csv"] {
        let line = format!("{xdd} {out}");
        assert_usage(
            &line,
            &run_words(&dir, &line.split_whitespace().collect::<Vec<_>>()),
            "block device",
        );
    }
    let line = format!("{xdd} -csvout {}", dev.dev);
    assert_usage(
        &line,
        &run_words(&dir, &line.split_whitespace().collect::<Vec<_>>()),
        "block device",
    );
    let head = std::fs::read(&dev.dev).unwrap();
    assert!(head.iter().all(|&b| b == 0), "the device was written");
    std::fs::write(dir.join("secret"), b"not yours").unwrap();
    std::os::unix::fs::symlink(dir.join("secret"), dir.join("res.csv")).unwrap();
    let line = format!("{xdd} -csvout res.csv");
    let o = run_words(&dir, &line.split_whitespace().collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.join("res.csv").is_symlink());
    assert_eq!(std::fs::read(dir.join("secret")).unwrap(), b"not yours");
    let csv = std::fs::read_to_string(dir.join("res.csv")).unwrap();
    assert!(!csv.contains("not yours"), "{csv}");
}

/// A store that cannot be made whole (its disk is full) is refused and
/// left absent: a 4 KiB file with its -wal and -shm stayed, which later
/// commands called "not an iolab results store".
#[test]
fn a_store_that_cannot_be_made_on_a_full_disk_is_absent() {
    let s = Scratch::new("out-store-full");
    let tiny = SmallFs::at(
        s.path("tiny"),
        "a_store_that_cannot_be_made_on_a_full_disk_is_absent",
        "size=64k",
    );
    if !tiny.mounted {
        return;
    }
    let _ = std::fs::write(tiny.dir.join("fill"), vec![0u8; 57_000]);
    let store = tiny.dir.join("s.sqlite");
    let o = iolab(&[
        "mdtest",
        "-d",
        s.path("md").to_str().unwrap(),
        "-n",
        "10",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_usage("--store on a full disk", &o, "--store");
    let left: Vec<_> = std::fs::read_dir(&tiny.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["fill"]);
}

/// A path that is not UTF-8 cannot be written into the results (JSON
/// holds text): with --json or --store the run is refused before it
/// starts (exit 2, nothing made), not failed after it (exit 1, no
/// results); without them it runs.
#[test]
fn settings_the_results_cannot_hold_are_refused_before_the_run() {
    use std::os::unix::ffi::OsStrExt;
    let s = Scratch::new("out-utf8");
    let odd = s.root.join(std::ffi::OsStr::from_bytes(b"p\xff"));
    let json = s.path("r.json");
    for extra in [
        ["--json", json.to_str().unwrap()],
        ["--store", s.path("r.sqlite").to_str().unwrap()],
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["mdtest", "-n", "2", "-d"])
            .arg(&odd)
            .args(extra)
            .env("CI", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("valid UTF-8"), "{}", stderr(&o));
        assert!(
            common::tree(&s.root).is_empty(),
            "{:?}",
            common::tree(&s.root)
        );
    }
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["mdtest", "-n", "2", "-d"])
        .arg(&odd)
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Runs `iolab words...` with its standard output on /dev/full (every
/// write fails with ENOSPC), as `> file` on a full disk.
fn into_full_stdout(words: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .env("CI", "1")
        .stdout(full)
        .output()
        .unwrap()
}

/// A report that cannot be written to standard output (ENOSPC, EIO) is
/// lost, so the run failed: said once on stderr, exit 1 (it was exit 0,
/// the report silently gone). The run's files are still written whole;
/// what the run made is removed as usual. A closed pipe stays as it is
/// (pipe.rs).
#[test]
fn a_report_standard_output_cannot_take_fails_the_run_and_the_files_are_written() {
    let s = Scratch::new("out-dev-full");
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    let (json, csv) = (s.path("m.json"), s.path("m.csv"));
    let d = dir.to_str().unwrap();
    let o = into_full_stdout(&[
        "mdtest",
        "-n",
        "100",
        "-d",
        d,
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        err.matches("iolab: cannot write the report to standard output: No space left on device")
            .count(),
        1,
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        doc["outcome"]["status"], "completed",
        "the run itself completed"
    );
    assert!(std::fs::read_to_string(&csv).unwrap().lines().count() > 1);
    assert!(common::tree(&dir).is_empty(), "{:?}", common::tree(&dir));
    // Another tool, and help: the same, decided in one place.
    let f = s.path("d/f").display().to_string();
    let o = into_full_stdout(&["ior", "-w", "-b", "1m", "-t", "256k", "-o", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write the report to standard output"));
    let o = into_full_stdout(&["--help"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Bad usage keeps its own status (and says why).
    let o = into_full_stdout(&["mdtest", "-n", "-1", "-d", d]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// XDD's collecting outputs (`-csvout`, `-output`, `-combinedout`,
/// appended to as XDD's fopen "a") keep the record of every run when
/// runs end together: 8 runs at once, three times over, leave 24 records
/// in each, after what the file held. The file used to be copied and
/// renamed over, so the last writer's copy won (4, 3, 4, 1 of 4 records
/// kept), and the check before the run made and removed the output's
/// own name, so runs started together failed it (`File exists`) or
/// removed a file another had just made. Then a file system without
/// room for a record takes none of it: exit 1, the file as it was.
#[test]
fn runs_appending_to_one_csv_at_once_keep_every_record() {
    let s = Scratch::new("out-append");
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    for f in ["all.csv", "all.txt", "comb.csv"] {
        std::fs::write(dir.join(f), b"kept line\n").unwrap();
    }
    let (runs, rounds) = (8, 3);
    for round in 0..rounds {
        let children: Vec<_> = (0..runs)
            .map(|j| {
                Command::new(env!("CARGO_BIN_EXE_iolab"))
                    .args(format!("xdd -op write -targets 1 t{j} -reqsize 8 -numreqs 64 -passes 1 -csvout all.csv -output all.txt -combinedout comb.csv").split(' '))
                    .current_dir(&dir)
                    .env("CI", "1")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert_eq!(o.status.code(), Some(0), "round {round}: {}", stderr(&o));
        }
    }
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let count = |text: &str, start: &str| text.lines().filter(|l| l.starts_with(start)).count();
    let want = runs * rounds;
    let csv = read("all.csv");
    assert!(csv.starts_with("kept line\n"), "{csv}");
    assert_eq!(count(&csv, "What,"), want, "{csv}");
    assert_eq!(count(&csv, "Ending time for this run"), want, "{csv}");
    let txt = read("all.txt");
    assert!(txt.starts_with("kept line\n"));
    assert_eq!(count(&txt, "Ending time for this run"), want, "{txt}");
    let comb = read("comb.csv");
    assert!(comb.starts_with("kept line\n"));
    assert_eq!(count(&comb, "COMBINED,"), want, "{comb}");
    assert_eq!(comb.lines().count(), want + 1, "{comb}");
    // Nothing but the outputs and the targets: no probe or temporary.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3 + runs);

    let full = SmallFs::at(
        s.path("full"),
        "runs_appending_to_one_csv_at_once",
        "size=64k",
    );
    if !full.mounted {
        return;
    }
    let csv = full.dir.join("all.csv");
    std::fs::write(&csv, b"kept line\n").unwrap();
    fill_but_one_page(&full.dir.join("filler"));
    let out = full.path("all.csv");
    let line =
        format!("xdd -op write -target t -reqsize 8 -numreqs 4 -passes 200 -verbose -csvout {out}");
    let o = run_words(&dir, &line.split(' ').collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no room for this run's record"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&csv).unwrap(), b"kept line\n");
}

/// Fills the file system of `path` with it, then gives one page back.
fn fill_but_one_page(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let page = [0u8; 4096];
    while f.write_all(&page).is_ok() {}
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(4096) / 4096 * 4096).unwrap();
}

/// Waits (at most 120 s) until a thread of `child` is held in a write
/// to its standard output of more than the pipe whose read end is `fd`
/// can take (as /proc/PID/task/TID/syscall shows it: write is 1 on
/// x86-64 and its first arguments are the descriptor and the buffer,
/// then the count): a write that cannot end until the pipe is read.
fn wait_until_held_writing(fd: std::os::fd::RawFd, child: &mut std::process::Child) -> bool {
    // SAFETY: F_GETPIPE_SZ on a pipe descriptor this test holds.
    let size = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    assert!(size > 0, "not a pipe");
    let held = |call: &str| {
        let w: Vec<&str> = call.split_whitespace().collect();
        let count = w
            .get(3)
            .and_then(|c| u64::from_str_radix(c.trim_start_matches("0x"), 16).ok());
        w.first() == Some(&"1")
            && w.get(1) == Some(&"0x1")
            && count.is_some_and(|c| c > size as u64)
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::time::Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id()));
        for t in tasks.into_iter().flatten().flatten() {
            if std::fs::read_to_string(t.path().join("syscall")).is_ok_and(|c| held(&c)) {
                return true;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// Ctrl-C that comes after the run's last operation, while the final
/// report is written, still ends the run as interrupted (130, never 0),
/// and every output is whole. The window is made without timing: xdd's
/// 5,000 timestamp rows (600 KB, printed after the run in one write) go
/// to a pipe this test does not read until xdd is seen held in that
/// write; the signal lands there, then the pipe is drained.
#[test]
fn ctrl_c_while_the_final_report_is_written_is_exit_130_with_whole_outputs() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let s = Scratch::new("out-late-stop");
    let json = s.path("r.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["xdd", "-op", "write", "-target", "t.dat", "-reqsize", "1"])
        .args(["-numreqs", "5000", "-ts", "detailed", "--json"])
        .arg(&json)
        .current_dir(&s.root)
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    assert!(
        wait_until_held_writing(out.as_raw_fd(), &mut child),
        "xdd never filled its standard output"
    );
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let mut text = String::new();
    out.read_to_string(&mut text).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted after the run's last operation"),
        "{err}"
    );
    // The report is whole: every operation's timestamp row is there.
    assert!(
        text.contains(", 4999, 4999,"),
        "the last timestamp row is missing"
    );
    assert!(
        text.ends_with("End of SUMMARY Time Stamp Report\n"),
        "cut short"
    );
    // The JSON, begun after the signal, is whole and says so.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        doc["outcome"]["status"], "interrupted",
        "{}",
        doc["outcome"]
    );
    assert!(
        doc["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("after the run's last operation")),
        "{}",
        doc["notes"]
    );
    // No temporary of an output is left beside it.
    assert_eq!(common::tree(&s.root), ["r.json", "t.dat"]);
}
