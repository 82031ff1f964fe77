//! `iolab xdd`'s memory does not grow with its passes (issue 17 item
//! 12), measured as the kernel counts it (wait4's ru_maxrss).
//!
//! Alone in its own test binary on purpose: a child started by vfork
//! (as `Command` starts it) takes this process's peak resident memory
//! as its own starting `ru_maxrss`, so any other test running beside it
//! (parsing a large document) would show up as the child's memory.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::Scratch;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `iolab xdd ARGS` in `dir` with `TMPDIR` set to `tmp`; its exit
/// code and peak resident memory, bytes.
// The child is reaped by wait4 (which gives its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn xdd_peak_rss(dir: &Path, tmp: &Path, args: &str) -> (Option<i32>, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(args.split_whitespace())
        .current_dir(dir)
        .env("CI", "1")
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: all-zero is a valid rusage; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid, with valid out pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, usage.ru_maxrss as u64 * 1024)
}

/// What the flat-memory test reads of a `--json` document: every pass's
/// number and operations, and the combined figures (the rest of each
/// pass is skipped, so the test itself stays small).
#[derive(serde::Deserialize)]
struct PassesOnly {
    payload: PassesPayload,
}

#[derive(serde::Deserialize)]
struct PassesPayload {
    passes: Vec<PassOnly>,
    combined: OpsOnly,
}

#[derive(serde::Deserialize)]
struct PassOnly {
    pass: u64,
    targets: Vec<TargetOnly>,
}

#[derive(serde::Deserialize)]
struct TargetOnly {
    figures: OpsOnly,
}

#[derive(serde::Deserialize)]
struct OpsOnly {
    ops: u64,
    bytes: u64,
}

/// Issue 17 item 12: with `--json` and `-csvout`, 20,000 passes of 4 KiB
/// stay under 64 MiB, take no more memory than 5,000 (the JSON of every
/// pass used to be built in memory: 167 MiB for 30,000, so 15,000 more
/// passes cost some 80 MiB), and the
/// documents still hold every pass. The per-pass spools go to TMPDIR
/// and leave nothing there.
#[test]
fn json_and_csv_of_twenty_thousand_passes_keep_memory_flat() {
    let s = Scratch::new("xdd-40k-json");
    let tmp = s.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let run = |passes: u64| {
        let args = format!(
            "-op write -target f -reqsize 4 -numreqs 1 -passes {passes} -deletefile --json r{passes}.json -csvout all.csv"
        );
        let (code, peak) = xdd_peak_rss(&s.root, &tmp, &args);
        assert_eq!(code, Some(0), "{passes} passes");
        assert!(
            peak < 64 << 20,
            "{passes} passes: peak RSS {} MiB",
            peak >> 20
        );
        peak
    };
    // Both runs before any document is read, so that this process is
    // still small when the children start (see the module doc).
    let (few, many) = (run(5_000), run(20_000));
    assert!(
        many < few + (4 << 20),
        "peak RSS {} KiB for 20,000 passes vs {} KiB for 5,000",
        many >> 10,
        few >> 10
    );
    for passes in [5_000, 20_000] {
        let json = s.path(&format!("r{passes}.json"));
        let doc: PassesOnly = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let p = &doc.payload;
        assert_eq!(p.passes.len() as u64, passes);
        for (i, x) in p.passes.iter().enumerate() {
            assert_eq!((x.pass, x.targets[0].figures.ops), (i as u64 + 1, 1));
            assert_eq!(x.targets[0].figures.bytes, 4096);
        }
        assert_eq!((p.combined.ops, p.combined.bytes), (passes, passes * 4096));
    }
    // Both runs appended to the CSV; its COMBINED rows count every pass.
    let csv = std::fs::read_to_string(s.path("all.csv")).unwrap();
    let combined: Vec<&str> = csv.lines().filter(|l| l.starts_with("COMBINED,")).collect();
    assert_eq!(combined.len(), 2, "{csv}");
    assert!(
        combined[1].starts_with("COMBINED,20000,1,1,81920000,20000,"),
        "{}",
        combined[1]
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "TMPDIR left empty"
    );
}
