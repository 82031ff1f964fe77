//! A closed standard output (`iolab ... | head -1`): every tool stops as
//! SIGPIPE would have stopped it, with its clean-up done, no panic text,
//! and exit status 141 (128 + SIGPIPE). The reader here is the test: it
//! reads the first line (or nothing) and closes its end of the pipe, as
//! `head -1` does, on real file systems and a real loop device.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::loopfs::LoopDev;
use common::{skip_or_fail, Scratch};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// How the run ended once its reader had gone.
struct Ended {
    code: Option<i32>,
    first_line: String,
    stderr: String,
    pid: u32,
}

/// Runs `iolab words...`, reads `lines` lines of its stdout (0: none),
/// closes the pipe and waits (at most 5 minutes) for the end.
fn closed_after(words: &[&str], lines: usize, cwd: &Path) -> Ended {
    let mut child = Command::new(IOLAB)
        .args(words)
        .current_dir(cwd)
        .env("CI", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut first_line = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        for _ in 0..lines {
            let mut l = String::new();
            let _ = out.read_line(&mut l);
            first_line.push_str(&l);
        }
    } // the read end closes here
    let t0 = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if t0.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{words:?}: still running 5 minutes after its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ended {
        code,
        first_line,
        stderr: stderr.join().unwrap(),
        pid,
    }
}

fn assert_sigpipe_end(what: &str, e: &Ended) {
    assert!(
        !e.stderr.contains("panicked"),
        "{what}: panic text: {}",
        e.stderr
    );
    assert_eq!(e.code, Some(141), "{what}: {}", e.stderr);
    // As after SIGPIPE (ripgrep, grep): no word about being stopped.
    for word in ["interrupted", "stopping", "removed what", "Ctrl-C"] {
        assert!(
            !e.stderr.contains(word),
            "{what}: a message on a closed pipe: {}",
            e.stderr
        );
    }
}

/// A blank loop device of 128 MiB in `s`, or None where the test is
/// skipped.
fn blank(s: &Scratch, test: &str) -> Option<LoopDev> {
    LoopDev::blank(&s.path("dev.img"), 128)
        .map_err(|why| skip_or_fail(test, &why))
        .ok()
}

#[test]
fn survey_disk_into_a_closed_pipe_stops_like_sigpipe() {
    let s = Scratch::new("pipe-disk");
    let Some(dev) = blank(&s, "survey_disk_into_a_closed_pipe_stops_like_sigpipe") else {
        return;
    };
    let rslt = s.path("d");
    let e = closed_after(
        &[
            "survey",
            "disk",
            &dev.dev,
            "--size",
            "16",
            "--rszlo",
            "64",
            "--rszhi",
            "1024",
            "--crghi",
            "4",
            "--thrhi",
            "16",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        1,
        &s.root,
    );
    assert!(e.first_line.contains("sgpdd-survey"), "{}", e.first_line);
    assert_sigpipe_end("survey disk", &e);
}

/// The object and metadata surveys: their work directories go too.
#[test]
fn object_and_metadata_surveys_into_a_closed_pipe_remove_their_files() {
    let s = Scratch::new("pipe-obd-mds");
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep-me"), b"not the survey's").unwrap();
    let d = dir.to_str().unwrap();
    let rslt = s.path("r");
    let r = rslt.to_str().unwrap();
    for words in [
        vec![
            "survey",
            "obdfilter",
            d,
            "--size",
            "64",
            "--rszlo",
            "64",
            "--rszhi",
            "256",
            "--nobjhi",
            "4",
            "--thrhi",
            "8",
            "--rslt",
            r,
        ],
        vec![
            "survey",
            "mds",
            d,
            "--thrlo",
            "1",
            "--thrhi",
            "8",
            "--file-count",
            "20000",
            "--rslt",
            r,
        ],
    ] {
        let e = closed_after(&words, 1, &s.root);
        assert_sigpipe_end(words[1], &e);
        assert_eq!(
            common::tree(&dir),
            vec!["keep-me".to_string()],
            "{}: only what was there before (pid {})",
            words[1],
            e.pid
        );
    }
}

#[test]
fn survey_plot_into_a_closed_pipe_stops_like_sigpipe() {
    let s = Scratch::new("pipe-plot");
    let Some(dev) = blank(&s, "survey_plot_into_a_closed_pipe_stops_like_sigpipe") else {
        return;
    };
    let rslt = s.path("p");
    let o = common::iolab(&[
        "survey",
        "disk",
        &dev.dev,
        "--size",
        "4",
        "--rszlo",
        "64",
        "--rszhi",
        "256",
        "--crghi",
        "2",
        "--thrhi",
        "4",
        "--rslt",
        rslt.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let summary = s.path("p.summary");
    let e = closed_after(&["survey", "plot", summary.to_str().unwrap()], 1, &s.root);
    assert!(e.first_line.starts_with("wrote "), "{}", e.first_line);
    assert_sigpipe_end("survey plot", &e);
}

#[test]
fn mdtest_and_xdd_into_a_closed_pipe_stop_like_sigpipe() {
    let s = Scratch::new("pipe-md-xdd");
    let d = s.path("md");
    std::fs::create_dir_all(&d).unwrap();
    // mdtest -v prints a line per phase as it runs; the reader leaves
    // after the first, and the test tree goes as after Ctrl-C.
    let e = closed_after(
        &[
            "mdtest",
            "-v",
            "-i",
            "200",
            "-n",
            "200",
            "-d",
            d.to_str().unwrap(),
        ],
        1,
        &s.root,
    );
    assert_sigpipe_end("mdtest", &e);
    assert!(e.stderr.is_empty(), "mdtest: {}", e.stderr);
    assert!(common::tree(&d).is_empty(), "{:?}", common::tree(&d));
    // xdd writes its report at the end: a reader gone before it.
    let target = s.path("xdd.dat");
    let e = closed_after(
        &[
            "xdd",
            "-op",
            "write",
            "-target",
            target.to_str().unwrap(),
            "-reqsize",
            "4",
            "-numreqs",
            "64",
        ],
        0,
        &s.root,
    );
    assert_sigpipe_end("xdd", &e);
}

fn fake_rsh(s: &Scratch) -> String {
    let p = s.path("fake-rsh");
    std::fs::write(&p, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("exec:{}", p.display())
}

#[test]
fn xddcp_into_a_closed_pipe_stops_like_sigpipe() {
    let s = Scratch::new("pipe-xddcp");
    let src = s.path("src");
    let dst = s.path("dst");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&dst).unwrap();
    let mut list = String::new();
    for i in 0..6 {
        let f = src.join(format!("f{i}"));
        common::e2e::random_file(&f, 4 << 20);
        list.push_str(&format!("{}\n", f.display()));
    }
    std::fs::write(s.path("list"), list).unwrap();
    let rsh = fake_rsh(&s);
    let port = common::e2e::free_ports(64).to_string();
    let dest = format!("127.0.0.1:{}", dst.display());
    let e = closed_after(
        &[
            "xddcp",
            "-t",
            "2",
            "-p",
            &port,
            "--timeout",
            "30",
            "--rsh",
            &rsh,
            "--remote-iolab",
            IOLAB,
            "-F",
            s.path("list").to_str().unwrap(),
            &dest,
        ],
        1,
        &s.root,
    );
    assert!(e.first_line.starts_with("xddcp: "), "{}", e.first_line);
    assert_sigpipe_end("xddcp", &e);
}

/// A sweep into a closed pipe stops as after Ctrl-C (what was recorded
/// stays; a rerun resumes) instead of running every repeat to the end.
#[test]
fn sweep_into_a_closed_pipe_stops_like_sigpipe() {
    let s = Scratch::new("pipe-sweep");
    let plan = s.path("p.toml");
    std::fs::write(
        &plan,
        format!(
            "label = \"p\"\ntool = \"mdtest\"\nargs = \"-F -n 200 -i 3 -d {}/m.{{point}}\"\nrepeats = 50\n\
             [[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
            s.root.display()
        ),
    )
    .unwrap();
    let store = s.path("runs.sqlite");
    let e = closed_after(
        &[
            "sweep",
            plan.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ],
        1,
        &s.root,
    );
    assert!(e.first_line.starts_with("sweep 'p'"), "{}", e.first_line);
    assert_sigpipe_end("sweep", &e);
    let listed = common::iolab(&["results", "--store", store.to_str().unwrap(), "list"]);
    let runs = common::stdout(&listed).lines().count().saturating_sub(1);
    assert!(
        runs < 100,
        "the sweep ran on after its reader left: {runs} runs"
    );
}
