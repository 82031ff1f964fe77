//! Exit paths that used to end with 1 where the input was at fault: bad
//! input and an output that cannot be written are exit 2, named, before
//! anything is written.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;

/// A disk survey's summary with one point, two tests.
const SUMMARY: &str = "h\ntotal_size  8192K rsz  256 crg     2 thr     4 write 170.00 MB/s  2 x  90.00 =  180.00 MB/s read  180.45 MB/s     2 x  90.00 =  180.00 MB/s \n";

#[test]
fn survey_plot_into_a_place_it_cannot_write_is_exit_2_before_writing() {
    let s = Scratch::new("exit-plot");
    let summary = s.path("s.summary");
    std::fs::write(&summary, SUMMARY).unwrap();
    let summary = summary.to_str().unwrap();
    for (out, named) in [
        (s.path("no/such/dir/p"), "does not exist"),
        ("/proc/iolab-plot".into(), "cannot create a file in /proc"),
    ] {
        let o = survey(&["plot", summary, "--out", out.to_str().unwrap()], &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--out {}.csv", out.display())),
            "{err}"
        );
        assert!(err.contains(named), "{err}");
        assert!(stdout(&o).is_empty(), "nothing was written: {}", stdout(&o));
    }
    assert_eq!(tree(&s.root), ["s.summary"]);
    // The same summary into a writable place: the CSV and both charts.
    let out = s.path("p");
    let o = survey(&["plot", summary, "--out", out.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(s.path("p.csv").is_file() && s.path("p-256-read.svg").is_file());
}

#[test]
fn report_with_bad_input_or_an_unwritable_output_is_exit_2_before_writing() {
    let s = Scratch::new("exit-report");
    let plan = s.path("p.toml");
    std::fs::write(
        &plan,
        format!(
            "label = \"s\"\ntool = \"mdtest\"\nargs = \"-F -n 4 -d {}/m.{{point}}\"\nrepeats = 1\n\
             [[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
            s.root.display()
        ),
    )
    .unwrap();
    let store = s.path("runs.sqlite");
    let st = store.to_str().unwrap();
    let o = iolab(&["sweep", plan.to_str().unwrap(), "--store", st]);
    assert!(o.status.success(), "{}", stderr(&o));
    let busy = s.path("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("mine.txt"), "not a report").unwrap();
    // SQLite's -wal/-shm beside the store come and go with its readers.
    let files = || {
        let mut t = tree(&s.root);
        t.retain(|p| !p.ends_with("-wal") && !p.ends_with("-shm"));
        t
    };
    let before = files();
    for (series, out, named) in [
        ("s", "/proc/iolab-report", "/proc/iolab-report"),
        ("s", busy.to_str().unwrap(), busy.to_str().unwrap()),
        (
            "no-such-series",
            s.path("r").to_str().unwrap(),
            "no-such-series",
        ),
    ] {
        let o = iolab(&["report", series, "--store", st, "-o", out]);
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(stderr(&o).contains(named), "{}", stderr(&o));
        assert_eq!(files(), before, "{out}: nothing written");
    }
}

/// A standard error that cannot be written (`2>/dev/full`) costs the
/// messages, not the exit status: every one of these panicked in
/// eprintln! and ended with 101.
#[test]
fn an_unwritable_stderr_keeps_the_exit_status() {
    let s = Scratch::new("exit-full-stderr");
    let md = s.path("md");
    let missing = s.path("missing");
    let store = s.path("none.sqlite");
    let (md, missing, store) = (
        md.to_str().unwrap(),
        missing.to_str().unwrap(),
        store.to_str().unwrap(),
    );
    for (words, code) in [
        (vec!["mdtest", "-d", md, "-n", "10", "-t"], 0),
        (
            vec![
                "xdd", "-op", "read", "-target", missing, "-reqsize", "4", "-numreqs", "10",
            ],
            2,
        ),
        (vec!["results", "--store", store, "list"], 2),
        (vec!["qualify", missing, "--out", missing], 2),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(&words)
            .env("CI", "1")
            .stdout(std::process::Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .status()
            .unwrap();
        assert_eq!(o.code(), Some(code), "{words:?}");
    }
}
