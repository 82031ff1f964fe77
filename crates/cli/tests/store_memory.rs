//! `--store` records a long run without holding its document (issue 17
//! item 12): xdd's 10,000 passes and mdtest's iterations go into the
//! results store as they are rendered, and `iolab results export` writes
//! them back out the same way, with the bytes the `--json` file has.
//! Memory is measured as the kernel counts it (wait4's ru_maxrss).
//!
//! Its own test binary, and its tests take turns, on purpose: a child
//! started by vfork (as `Command` starts it) takes this process's peak
//! resident memory as its own starting `ru_maxrss`, so nothing here
//! reads a document whole (files are compared line by line).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::Scratch;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// One test at a time (see the module doc).
static TURN: Mutex<()> = Mutex::new(());

/// Runs `iolab WORDS` in `dir`; its exit code and peak resident
/// memory, bytes.
// The child is reaped by wait4 (which gives its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn peak_rss(dir: &Path, words: &str) -> (Option<i32>, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words.split_whitespace())
        .current_dir(dir)
        .env("CI", "1")
        .env("TMPDIR", dir)
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

/// `iolab WORDS` must succeed; its peak RSS.
fn ok_peak(dir: &Path, words: &str) -> u64 {
    let (code, peak) = peak_rss(dir, words);
    assert_eq!(code, Some(0), "iolab {words}");
    peak
}

/// A pretty results document read line by line: the envelope's fields
/// before its payload (parsed: small), then the payload's lines.
struct Doc {
    head: Value,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
}

fn open_doc(path: &Path) -> Doc {
    let f = std::fs::File::open(path).unwrap();
    let mut lines = std::io::BufReader::with_capacity(64 << 10, f).lines();
    let mut head = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        // The envelope's own field (two spaces in): its payload, last.
        if line.starts_with("  \"payload\": ") {
            head.push_str("  \"payload\": null\n}");
            return Doc {
                head: serde_json::from_str(&head).unwrap(),
                lines,
            };
        }
        head.push_str(&line);
        head.push('\n');
    }
    panic!("{}: no payload", path.display());
}

/// The export of a run is the `--json` file: the same envelope fields
/// and, byte for byte, the same payload. Returns the payload's lines.
fn assert_same_document(json: &Path, export: &Path) -> u64 {
    let (mut a, mut b) = (open_doc(json), open_doc(export));
    assert_eq!(a.head, b.head, "envelope fields");
    let mut n = 0;
    loop {
        match (a.lines.next(), b.lines.next()) {
            (None, None) => return n,
            (x, y) => {
                let (x, y) = (x.map(Result::unwrap), y.map(Result::unwrap));
                assert_eq!(x, y, "payload line {n}");
            }
        }
        n += 1;
    }
}

/// xdd: 10,000 passes of 4 KiB with `--store` stay under 64 MiB (the
/// store's document was built in memory: 646 MiB for 30,000, some 215
/// MiB for these), so do exporting the
/// run and importing its `--json` file into a store, and either export
/// is the `--json` file.
#[test]
fn xdd_ten_thousand_passes_are_stored_and_exported_in_flat_memory() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("store-mem-xdd");
    let run = ok_peak(
        &s.root,
        "xdd -op write -target f -reqsize 4 -numreqs 1 -passes 10000 -deletefile --json r.json --store s.sqlite",
    );
    let export = ok_peak(
        &s.root,
        "results --store s.sqlite export 1 --json -o e.json",
    );
    let show = ok_peak(&s.root, "results --store s.sqlite show 1");
    // The --json file imported into another store goes the same way.
    let import = ok_peak(&s.root, "results --store i.sqlite import r.json");
    let export_import = ok_peak(
        &s.root,
        "results --store i.sqlite export 1 --json -o ie.json",
    );
    for (what, peak) in [
        ("xdd", run),
        ("export", export),
        ("show", show),
        ("import", import),
        ("export of the import", export_import),
    ] {
        assert!(peak < 64 << 20, "{what}: peak RSS {} MiB", peak >> 20);
    }
    assert_same_document(&s.path("r.json"), &s.path("ie.json"));
    let lines = assert_same_document(&s.path("r.json"), &s.path("e.json"));
    // Every pass is there (a pass is some 90 lines of pretty JSON).
    assert!(lines > 10_000 * 50, "{lines} payload lines");
    let e = open_doc(&s.path("e.json"));
    assert_eq!(e.head["figures"][0]["phase"], "write");
}

/// mdtest: with `--store`, `--json` and `--csv`, 2,000 iterations take
/// little more memory than 200 (the document was rendered whole for the
/// store and for each output, and parsed back for the store: 54 MiB
/// against 27; now about 25 against 22, the first 1,000 iterations being
/// kept in full), and each stored run exports as its `--json` file.
#[test]
fn mdtest_iterations_are_stored_in_flat_memory() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("store-mem-md");
    let peak = |i: u32| {
        std::fs::create_dir(s.path(&format!("t{i}"))).unwrap();
        ok_peak(
            &s.root,
            &format!("mdtest -n 2 -i {i} -d t{i} --store s.sqlite --json m{i}.json --csv m{i}.csv"),
        )
    };
    let (few, many) = (peak(200), peak(2000));
    assert!(
        (many as f64) < 1.3 * few as f64,
        "peak RSS {} KiB for 2,000 iterations vs {} KiB for 200",
        many >> 10,
        few >> 10
    );
    for (id, i) in [(1, 200), (2, 2000)] {
        ok_peak(
            &s.root,
            &format!("results --store s.sqlite export {id} --json -o e{i}.json"),
        );
        let json = s.path(&format!("m{i}.json"));
        assert_same_document(&json, &s.path(&format!("e{i}.json")));
        let head = open_doc(&json).head;
        assert_eq!(head["tool"]["name"], "mdtest");
    }
}

/// A sweep records each repeat from the document its child wrote
/// without reading it whole: a point of 10,000 xdd passes keeps the
/// sweep (and its child, counted with it by wait4) under 64 MiB, and
/// the run exports with every pass.
#[test]
fn a_sweep_records_a_long_run_in_flat_memory() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("store-mem-sweep");
    std::fs::write(
        s.path("plan.toml"),
        "label = \"long\"\ntool = \"xdd\"\nargs = \"-op write -target f -reqsize 4 -numreqs 1 -deletefile\"\nrepeats = 1\n\n[[axes]]\nname = \"passes\"\noption = \"-passes\"\nvalues = [10000]\n",
    )
    .unwrap();
    let sweep = ok_peak(&s.root, "sweep plan.toml --store s.sqlite");
    let export = ok_peak(
        &s.root,
        "results --store s.sqlite export 1 --json -o e.json",
    );
    for (what, peak) in [("sweep", sweep), ("export", export)] {
        assert!(peak < 64 << 20, "{what}: peak RSS {} MiB", peak >> 20);
    }
    let mut e = open_doc(&s.path("e.json"));
    assert_eq!(e.head["figures"][0]["phase"], "write");
    let passes = e
        .lines
        .by_ref()
        .filter(|l| l.as_ref().unwrap().starts_with("        \"pass\": "))
        .count();
    assert_eq!(passes, 10_000);
}
