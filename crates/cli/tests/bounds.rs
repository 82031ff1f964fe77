//! Huge or contradictory numbers on the legacy command lines: each is
//! refused with exit 2 and a message naming the option, before anything is
//! allocated or created. Every case runs the real binary in an empty
//! scratch directory and checks that the directory stays empty. The wait
//! for the binary is bounded, so a regression that hangs fails instead of
//! blocking the suite.

mod common;

use common::{tree, Scratch};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Longest a refused command may take before the test gives up on it (a
/// hang guard, not a timing assertion).
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// Runs `iolab <words>` in `dir`, killing it if it has not ended by
/// [`GIVE_UP_AFTER`].
fn run_bounded(dir: &std::path::Path, words: &[OsString]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .current_dir(dir)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > GIVE_UP_AFTER {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "iolab {words:?} did not end within {GIVE_UP_AFTER:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `tool line` in a fresh scratch directory and checks the refusal:
/// exit 2, every `needles` in standard error, nothing created.
fn refused(tool: &str, line: &str, needles: &[&str]) {
    static CASE: AtomicUsize = AtomicUsize::new(0);
    let s = Scratch::new(&format!("bounds-{tool}-{}", CASE.fetch_add(1, Relaxed)));
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    let mut words = vec![OsString::from(tool)];
    words.extend(
        line.replace("DIR", &dir.display().to_string())
            .split_whitespace()
            .map(word),
    );
    let out = run_bounded(&dir, &words);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{tool} {line}: {err}");
    for n in needles {
        assert!(err.contains(n), "{tool} {line}: `{n}` missing from: {err}");
    }
    assert!(
        tree(&dir).is_empty(),
        "{tool} {line} created {:?}",
        tree(&dir)
    );
}

/// A command-line word; `<FF>` stands for the byte 0xFF, which no UTF-8
/// text contains.
fn word(w: &str) -> OsString {
    let bytes = w.replace("<FF>", "\u{1}").into_bytes();
    OsString::from_vec(
        bytes
            .into_iter()
            .map(|b| if b == 1 { 0xff } else { b })
            .collect(),
    )
}

fn xdd(line: &str, needles: &[&str]) {
    refused(
        "xdd",
        &format!("-op write -target f -numreqs 1 {line}"),
        needles,
    )
}

fn mdtest(line: &str, needles: &[&str]) {
    refused("mdtest", &format!("{line} -d DIR/t"), needles)
}

#[test]
fn xdd_queue_depth_is_bounded() {
    xdd("-queuedepth 100000000", &["-queuedepth", "4096"]);
    xdd("-queuedepth 100000", &["-queuedepth", "4096"]);
    // The cap holds for all targets together as well.
    refused(
        "xdd",
        "-op write -targets 2 f g -numreqs 1 -qd 3000",
        &["-queuedepth", "6000", "4096"],
    );
}

#[test]
fn xdd_request_size_is_bounded() {
    xdd(
        "-blocksize 9223372036854775808",
        &["-blocksize", "1073741824"],
    );
    xdd("-reqsize 9223372036854775808", &["-reqsize", "1073741824"]);
    // Each factor is fine; the product is not.
    xdd("-reqsize 1m -blocksize 4096", &["-reqsize", "1073741824"]);
}

#[test]
fn xdd_buffers_must_fit_in_memory() {
    xdd(
        "-qd 4000 -reqsize 1024 -blocksize 1m",
        &["-queuedepth", "memory"],
    );
}

#[test]
fn xdd_counts_and_sizes_are_bounded() {
    xdd("-ts size 100000000000000", &["-timestamps", "16777216"]);
    xdd("-seek disthist 4000000000", &["-seek", "1048576"]);
    xdd("-seek seekhist 4000000000", &["-seek", "1048576"]);
    xdd(
        "-memalign 4611686018427387904",
        &["-memalign", "1073741824"],
    );
    xdd("-runtime 1e300", &["-runtime", "100000000"]);
    xdd("-startoffset 9223372036854775807", &["-startoffset"]);
    xdd("-passes 10000000", &["-passes", "1000000"]);
    xdd("-passes 1000000 -numreqs 1t", &["-passes", "overflow"]);
    refused(
        "xdd",
        "-op write -targets 2 f g -numreqs 1 -lockstep 0 1 op 1 mbytes 99999999999999 wait complete",
        &["-lockstep", "1073741824"],
    );
    refused(
        "xdd",
        "-op write -targets 2 f g -numreqs 1 -starttrigger 0 1 percent 200",
        &["-starttrigger", "100"],
    );
    // A rate this slow would park the QThread in one endless sleep.
    xdd("-throttle ops 1e-300", &["-throttle", "3600"]);
    xdd("-throttle bw 1e-300", &["-throttle", "3600"]);
    refused(
        "xdd",
        "-op write -targets 100000000000 a -numreqs 1",
        &["-targets", "4096"],
    );
}

#[test]
fn mdtest_counts_are_bounded() {
    mdtest("-n 1 -w 18446744073709551615", &["-w", "memory"]);
    mdtest("-n 1 --tasks 1000000000", &["--tasks", "4096"]);
    mdtest("-n 1 -i 100000000", &["-i", "1000000"]);
    mdtest("-n 2 --tasks 2 -N 18446744073709551615", &["-N", "tasks"]);
    mdtest("-I 3 -n 18446744073709551615", &["-n", "4294967296"]);
    mdtest("-I 3 -n 3000000000", &["test directories", "1000000"]);
    mdtest("-n 1 -W 100000000000", &["-W", "100000000"]);
}

#[test]
fn mdtest_refuses_what_mdtest_refuses() {
    mdtest("-n 1 -S -c", &["-S", "-c"]);
    mdtest("-n 1 -B -c", &["-B", "-c"]);
    mdtest("-n 1 -B -N 1 --tasks 2", &["-B", "-N"]);
}

#[test]
fn non_utf8_values_are_refused_naming_the_option() {
    xdd("-op <FF>", &["-op", "UTF-8"]);
    refused(
        "xdd",
        "-op write -target f<FF> -numreqs 1",
        &["-target", "UTF-8"],
    );
    mdtest("-n <FF>", &["-n", "UTF-8"]);
    mdtest("-n 1 --tasks=<FF>", &["--tasks", "UTF-8"]);
}

#[test]
fn mdtest_takes_any_bytes_as_a_directory() {
    let s = Scratch::new("bounds-bytes-dir");
    let words: Vec<OsString> = ["mdtest", "-n", "4", "-d"]
        .into_iter()
        .map(OsString::from)
        .chain([word(&s.path("t<FF>").display().to_string())])
        .collect();
    let out = run_bounded(&s.root, &words);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tree(&s.root).is_empty(), "the run removed what it made");
}
