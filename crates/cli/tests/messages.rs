//! Messages that suggest an option name one that exists: a user who
//! follows the advice must not meet "unknown option".

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;

/// Every `--name` or `-x` word a message holds.
fn suggested_options(msg: &str) -> Vec<String> {
    // Options of other programs (`cargo build --release`) are not iolab's.
    let own: String = msg
        .split('`')
        .enumerate()
        .filter(|(i, part)| i % 2 == 0 || !part.starts_with("cargo "))
        .map(|(_, part)| format!("{part} "))
        .collect();
    own.split(|c: char| c.is_whitespace() || "`'\"(),;".contains(c))
        .filter(|w| w.starts_with('-') && w.len() > 1)
        .map(|w| w.trim_end_matches([':', '.']).to_string())
        .collect()
}

/// Under mpirun, a build without MPI refuses to run (each rank would be
/// a separate benchmark); its advice must work in that build. It used to
/// say `--comm threads`, an option no tool has.
#[test]
fn the_no_mpi_advice_names_options_mdtest_accepts() {
    let msg = iolab_comm::ConnectError::NotBuiltWithMpi.to_string();
    let opts = suggested_options(&msg);
    assert!(!opts.is_empty(), "the advice names no option: {msg}");
    let s = Scratch::new("messages-no-mpi");
    let dir = s.path("x");
    for o in &opts {
        // Each option, with a value where it takes one, on a tiny run.
        let mut w = vec!["mdtest", "-n", "2", "-d", dir.to_str().unwrap()];
        w.push(o);
        if o == "--tasks" {
            w.push("2");
        }
        let out = iolab(&w);
        assert!(
            out.status.success(),
            "the advice `{msg}` names {o}, which mdtest refuses: {}",
            stderr(&out)
        );
    }
}

#[test]
fn suggested_options_are_found() {
    assert_eq!(
        suggested_options(
            "rebuild (`cargo build --features mpi`) or use --comm threads or `--tasks N`, see -h."
        ),
        ["--comm", "--tasks", "-h"]
    );
}

/// `iolab --help` says what the demo runs: mdtest and XDD (it said "a
/// short mdtest"). What the demo prints is checked by the docs test
/// (README's quick start: each tool's command line, pasteable).
#[test]
fn the_help_says_the_demo_runs_mdtest_and_xdd() {
    let o = iolab(&["--help"]);
    let out = stdout(&o);
    let demo = out
        .lines()
        .find(|l| l.trim_start().starts_with("demo "))
        .unwrap();
    assert!(demo.contains("mdtest") && demo.contains("XDD"), "{demo}");
}

/// `iolab demo --help` says what the demo does and exits 0 (it was
/// exit 2, "takes no arguments"); an argument is still exit 2.
#[test]
fn demo_has_a_help() {
    for h in ["--help", "-h"] {
        let o = iolab(&["demo", h]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("Usage: iolab demo"), "{out}");
        assert!(out.contains("mdtest") && out.contains("XDD"), "{out}");
    }
    let o = iolab(&["demo", "-n", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stdout(&o).is_empty() && stderr(&o).contains("'-n'"),
        "{}",
        stderr(&o)
    );
}

/// `iolab mdtest -h` lists the backend options (`--posix.*`, `--s3.*`),
/// each accepted by mdtest's parser, and every exit status, 130 included.
#[test]
fn mdtest_help_lists_backend_options_and_exit_130() {
    let o = iolab(&["mdtest", "-h"]);
    let out = stdout(&o);
    assert!(o.status.success());
    for key in [
        "--posix.odirect",
        "--s3.endpoint=",
        "--s3.bucket=",
        "--s3.timeout=",
    ] {
        assert!(out.contains(key), "{key} missing from:\n{out}");
    }
    assert!(out.contains("130 interrupted"), "{out}");
    // Every backend option the help names is one mdtest knows: a bad
    // value may be refused, an unknown name would say "unknown".
    for name in out
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .filter(|l| l.starts_with("posix.") || l.starts_with("s3."))
        .map(|l| l.split(['=', ' ']).next().unwrap().to_string())
    {
        let o = iolab(&[
            "mdtest",
            &format!("--{name}=1"),
            "-n",
            "1",
            "-d",
            "/nonexistent/x",
        ]);
        assert!(!stderr(&o).contains("unknown"), "--{name}: {}", stderr(&o));
    }
}
