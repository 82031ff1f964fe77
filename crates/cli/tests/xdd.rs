//! Integration tests of `iolab xdd`: the real binary against real files in
//! temporary directories (and a loop device when run as root).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::loopfs::LoopDev;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary directory removed on drop, even when the test fails.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("iolab-xdd-it-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).to_str().unwrap().to_string()
    }
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn xdd_in(dir: &Path, args: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(args.split_whitespace())
        .current_dir(dir)
        .output()
        .unwrap()
}

fn xdd(d: &TempDir, args: &str) -> Output {
    xdd_in(&d.0, args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// (What, Pass, Target, Queue, Bytes, Ops) of every result row.
fn rows(o: &Output) -> Vec<(String, u64, u64, u64, u64, u64)> {
    stdout(o)
        .lines()
        .filter(|l| {
            [
                "QUEUE_PASS",
                "TARGET_PASS",
                "TARGET_AVERAGE",
                "COMBINED",
                "DESKEW",
            ]
            .iter()
            .any(|w| l.starts_with(w))
        })
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            (f[0].to_string(), n(1), n(2), n(3), n(4), n(5))
        })
        .collect()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

#[test]
fn guide_example_1_sequential_read_three_passes() {
    let d = TempDir::new("ex1");
    std::fs::File::create(d.path("disk"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let o = xdd(
        &d,
        "-op read -targets 1 disk -reqsize 128 -mbytes 64 -passes 3 -verbose",
    );
    ok(&o);
    let r = rows(&o);
    let per_pass = (64u64 << 20, 512u64);
    for p in 1..=3 {
        assert!(
            r.contains(&("TARGET_PASS".into(), p, 0, 1, per_pass.0, per_pass.1)),
            "{r:?}"
        );
    }
    assert!(r.contains(&(
        "TARGET_AVERAGE".into(),
        3,
        0,
        1,
        3 * per_pass.0,
        3 * per_pass.1
    )));
    assert!(r.contains(&("COMBINED".into(), 3, 1, 1, 3 * per_pass.0, 3 * per_pass.1)));
    assert!(stdout(&o).contains("Request size, 128, blocks, 131072, bytes"));
}

#[test]
fn guide_example_2_two_targets_with_timelimit() {
    let d = TempDir::new("ex2");
    let o = xdd(&d, "-op write -targets 2 BIGFILE1 BIGFILE2 -blocksize 512 -reqsize 128 -mbytes 64 -verbose -passes 3 -timelimit 10");
    ok(&o);
    let r = rows(&o);
    let (bytes, ops) = (64u64 << 20, (64u64 << 20) / 65536);
    for t in 0..2 {
        for p in 1..=3 {
            assert!(
                r.contains(&("TARGET_PASS".into(), p, t, 1, bytes, ops)),
                "{r:?}"
            );
        }
    }
    assert!(
        r.contains(&("COMBINED".into(), 3, 2, 2, 6 * bytes, 6 * ops)),
        "{r:?}"
    );
    for f in ["BIGFILE1", "BIGFILE2"] {
        assert_eq!(std::fs::metadata(d.path(f)).unwrap().len(), bytes);
    }
}

#[test]
fn guide_example_3_setup_file_and_timestamps() {
    let d = TempDir::new("ex3");
    // The guide's setup file with -mbytes 4096 scaled down to 8 so the
    // test stays fast; everything else as printed.
    std::fs::write(
        d.path("XDD.setup"),
        "-blocksize 2048\n-reqsize 128\n-mbytes 8\n-verbose\n-passes 3 -timelimit 10\n",
    )
    .unwrap();
    let o = xdd(
        &d,
        "-op write -targets 2 dev dev -setup XDD.setup -ts detailed -ts output ts.write",
    );
    ok(&o);
    let r = rows(&o);
    let (bytes, ops) = (8u64 << 20, 32u64);
    for t in 0..2 {
        assert!(
            r.contains(&("TARGET_AVERAGE".into(), 3, t, 1, 3 * bytes, 3 * ops)),
            "{r:?}"
        );
    }
    assert!(
        r.contains(&("COMBINED".into(), 3, 2, 2, 6 * bytes, 6 * ops)),
        "{r:?}"
    );
    assert!(stdout(&o).contains("Blocksize in bytes, 2048"));
}

#[test]
fn guide_example_4_random_reads_in_a_range() {
    let d = TempDir::new("ex4");
    std::fs::File::create(d.path("disk"))
        .unwrap()
        .set_len(4_000_000 * 1024)
        .unwrap();
    let o = xdd(&d, "-op read -targets 1 disk -reqsize 8 -mbytes 16 -passes 3 -verbose -seek random -seek range 4000000");
    ok(&o);
    let r = rows(&o);
    for p in 1..=3 {
        assert!(
            r.contains(&("TARGET_PASS".into(), p, 0, 1, 16 << 20, 2048)),
            "{r:?}"
        );
    }
    assert!(r.contains(&("COMBINED".into(), 3, 1, 1, 3 * (16 << 20), 3 * 2048)));
}

#[test]
fn queue_depth_rows_sum_to_the_target() {
    let d = TempDir::new("qd");
    let o = xdd(
        &d,
        "-op write -target f -reqsize 4 -numreqs 100 -qd 4 -qthreadinfo -verbose",
    );
    ok(&o);
    let r = rows(&o);
    let q: Vec<_> = r.iter().filter(|x| x.0 == "QUEUE_PASS").collect();
    assert_eq!(q.len(), 4);
    assert_eq!(q.iter().map(|x| x.5).sum::<u64>(), 100);
    assert_eq!(q.iter().map(|x| x.4).sum::<u64>(), 100 * 4096);
    assert!(r.contains(&("TARGET_PASS".into(), 1, 0, 4, 409600, 100)));
    // QThreads left idle (more of them than requests) say what their
    // target does; they said `read` on a write target.
    let o = xdd(
        &d,
        "-op write -target f -reqsize 4 -numreqs 2 -qd 4 -qthreadinfo",
    );
    ok(&o);
    let out = stdout(&o);
    let types: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("QUEUE_PASS"))
        .map(|l| l.split_whitespace().nth(11).unwrap())
        .collect();
    assert_eq!(types, ["write"; 4], "{out}");
}

#[test]
fn exact_bytes_end_with_a_short_request() {
    let d = TempDir::new("bytes");
    let o = xdd(&d, "-op write -target f -reqsize 4 -bytes 10000");
    ok(&o);
    assert!(rows(&o).contains(&("COMBINED".into(), 1, 1, 1, 10000, 3)));
    assert_eq!(std::fs::metadata(d.path("f")).unwrap().len(), 10000);
}

#[test]
fn sequenced_pattern_verifies_and_a_corrupted_byte_is_caught() {
    let d = TempDir::new("verify");
    ok(&xdd(
        &d,
        "-op write -target f -dp sequenced -reqsize 4 -numreqs 64",
    ));
    let good = xdd(
        &d,
        "-op read -target f -dp sequenced -verify location -reqsize 4 -numreqs 64",
    );
    ok(&good);
    assert!(stdout(&good).contains("0 reads failed -verify"));
    let mut bytes = std::fs::read(d.path("f")).unwrap();
    bytes[70_001] ^= 0xFF;
    std::fs::write(d.path("f"), &bytes).unwrap();
    for kind in ["location", "contents"] {
        let bad = xdd(
            &d,
            &format!("-op read -target f -dp sequenced -verify {kind} -reqsize 4 -numreqs 64"),
        );
        assert_eq!(bad.status.code(), Some(1), "{kind}: {}", stderr(&bad));
        let first = if kind == "location" { 70_000 } else { 70_001 };
        assert!(
            stdout(&bad).contains(&format!(
                "1 reads failed -verify, 1 bad units, first bad offset {first}"
            )),
            "{kind}:\n{}",
            stdout(&bad)
        );
        // location compares 8-byte words: it names the word, not a byte.
        let unit = if kind == "location" {
            "8-byte word"
        } else {
            "byte"
        };
        assert!(
            stderr(&bad).contains(&format!("the first bad {unit} is at offset {first}")),
            "{}",
            stderr(&bad)
        );
    }
}

#[test]
fn throttled_runs_do_exactly_the_planned_work() {
    // The schedule itself is unit-tested (throttle.rs); here the binary
    // must still move exactly the planned amount under either throttle.
    let d = TempDir::new("throttle");
    let o = xdd(
        &d,
        "-op write -target f -reqsize 1 -numreqs 40 -qd 2 -throttle ops 4000 --json t.json",
    );
    ok(&o);
    assert!(rows(&o).contains(&("COMBINED".into(), 1, 1, 2, 40 * 1024, 40)));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path("t.json")).unwrap()).unwrap();
    assert_eq!(j["config"]["targets"][0]["throttle"]["rate"], 4000.0);
    let o = xdd(
        &d,
        "-op read -target f -reqsize 1 -numreqs 40 -throttle bw 40",
    );
    ok(&o);
    assert!(rows(&o).contains(&("COMBINED".into(), 1, 1, 1, 40 * 1024, 40)));
}

#[test]
fn seek_lists_are_reproducible_and_load_back() {
    let d = TempDir::new("seek");
    std::fs::File::create(d.path("f"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let run = |extra: &str| {
        xdd(
            &d,
            &format!(
                "-op read -target f -reqsize 1 -numreqs 50 -seek random -seek range 1024 {extra}"
            ),
        )
    };
    ok(&run("-seek seed 7 -seek save a.txt"));
    ok(&run("-seek seed 7 -seek save b.txt"));
    ok(&run("-seek seed 8 -seek save c.txt"));
    // -seek save NAME writes NAME.T<target>.txt, as XDD 7 does.
    let read = |f: &str| std::fs::read_to_string(d.path(&format!("{f}.T0.txt"))).unwrap();
    assert_eq!(read("a.txt"), read("b.txt"));
    assert_ne!(read("a.txt"), read("c.txt"));
    let o = xdd(
        &d,
        "-op read -target f -reqsize 1 -numreqs 50 -seek load a.txt.T0.txt -seek save d.txt",
    );
    ok(&o);
    let body = |s: String| {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(read("a.txt")), body(read("d.txt")));
    assert!(rows(&o).contains(&("COMBINED".into(), 1, 1, 1, 50 * 1024, 50)));
}

#[test]
fn bad_command_lines_exit_2_and_create_nothing() {
    let d = TempDir::new("bad");
    let tail = "-output out.txt -csvout out.csv --json out.json -errout err.txt";
    for line in [
        "-op write -targets 3 a b -numreqs 1",
        "-op write -target a -reqsize",
        "-op write -target a -reqsize 12x -numreqs 1",
        "-op write -target a -reqsize 0 -numreqs 1",
        "-op write -target a -mbytes 0",
        "-op write -target a -rwratio 101 -numreqs 1",
        "-op write -target a -rwratio -5 -numreqs 1",
        "-op write -target a -bogus -numreqs 1",
        "-op explode -target a -numreqs 1",
        "-op write -target a -setup missing.setup",
        "-op write -target a -numreqs 1 -e2e issource",
        "-op write -target a -numreqs 1 -sgio",
        "-op write -target a -numreqs 1 -timeserver host x",
        "-op write -target a -numreqs 1 -op target 3 read",
        "-op write -target a",
        "-op write -target a -numreqs 1 -dio -reqsize 1 -blocksize 100",
        "-op write -target a -numreqs 1 -hb ops",
        "-op write -target a -numreqs 1 -dp sequenced -verify location -dp hex zz",
    ] {
        let o = xdd(&d, &format!("{line} {tail}"));
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(": -"),
            "{line}: message does not name the option: {}",
            stderr(&o)
        );
        assert!(d.entries().is_empty(), "{line} created {:?}", d.entries());
    }
    let o = xdd(&d, "-op write -target a -numreqs 1 -e2e issource");
    assert!(stderr(&o).contains("-endtoend") && stderr(&o).contains("-e2e destination"));
}

#[test]
fn help_version_and_dryrun() {
    let d = TempDir::new("help");
    let o = xdd(&d, "-help reqsize");
    ok(&o);
    assert!(stdout(&o).contains("-reqsize [target <target#>]"));
    assert_eq!(xdd(&d, "-help nosuchoption").status.code(), Some(2));
    let o = xdd(&d, "-fullhelp");
    ok(&o);
    assert!(stdout(&o).contains("-lockstep") && stdout(&o).contains("-heartbeat"));
    ok(&xdd(&d, "-version"));
    let o = xdd(&d, "-op write -target f -numreqs 5 -dryrun");
    ok(&o);
    assert!(stdout(&o).contains("Dry run"));
    assert!(d.entries().is_empty());
}

#[test]
fn output_files_csv_json_and_outputformat() {
    let d = TempDir::new("outputs");
    let o = xdd(&d, "-op write -target f -reqsize 2 -numreqs 10 -output r.txt -csvout r.csv -combinedout c.txt --json r.json -outputformat add +READOPS+WRITEOPS -id commandline");
    ok(&o);
    assert!(stdout(&o).is_empty());
    let txt = std::fs::read_to_string(d.path("r.txt")).unwrap();
    assert!(txt.contains("Write_Ops") && txt.contains("ID for this run, '-op write"));
    let csv = std::fs::read_to_string(d.path("r.csv")).unwrap();
    // XDD's preamble, then the table.
    assert!(csv.starts_with("IOIOIOIOIOIOIOIOIOI "));
    assert!(csv.contains("\n\nWhat,Pass,Target,Queue,Bytes_Xfered,Ops"));
    assert!(csv.contains("COMBINED,1,1,1,20480,10,"));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path("r.json")).unwrap()).unwrap();
    // The payload sits in the shared results envelope (schema 2).
    assert_eq!(j["schema"], "iolab.xdd/2");
    let p = &j["payload"];
    assert_eq!(p["combined"]["ops"], 10);
    assert_eq!(
        p["passes"][0]["targets"][0]["qthreads"][0]["figures"]["write_ops"],
        10
    );
    assert!(p["combined"]["latency_ns"]["p99_ns"].as_u64().is_some());
    ok(&xdd(
        &d,
        "-op write -target f -reqsize 2 -numreqs 10 -combinedout c.txt -output r.txt",
    ));
    let comb = std::fs::read_to_string(d.path("c.txt")).unwrap();
    assert_eq!(
        comb.lines().filter(|l| l.starts_with("COMBINED")).count(),
        2
    );
    // -output appends as XDD's does: a loop of runs collects in one file.
    let again = std::fs::read_to_string(d.path("r.txt")).unwrap();
    assert!(again.starts_with(&txt), "the first run's report was lost");
    assert_eq!(again.matches("Starting time").count(), 2, "{again}");
    let o = xdd(
        &d,
        "-op write -target f -reqsize 2 -numreqs 10 -outputformat new +WHAT+OPS+BANDWIDTH",
    );
    ok(&o);
    assert!(
        stdout(&o).contains("What      Ops  Bandwidth")
            || stdout(&o)
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["What", "Ops", "Bandwidth"])
    );
}

#[test]
fn rwratio_and_null_target() {
    let d = TempDir::new("mixed");
    std::fs::File::create(d.path("f"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let o = xdd(
        &d,
        "-target f -reqsize 1 -numreqs 100 -rwratio 25 --json j.json",
    );
    ok(&o);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path("j.json")).unwrap()).unwrap();
    assert_eq!(
        (
            j["payload"]["combined"]["read_ops"].as_u64(),
            j["payload"]["combined"]["write_ops"].as_u64()
        ),
        (Some(25), Some(75))
    );
    let o = xdd(&d, "-op write -target null -reqsize 1 -numreqs 1000 -qd 2");
    ok(&o);
    assert!(rows(&o).contains(&("COMBINED".into(), 1, 1, 2, 1000 * 1024, 1000)));
    assert!(!Path::new(&d.path("null")).exists());
}

#[test]
fn short_reads_are_counted_as_transferred_and_are_errors() {
    let d = TempDir::new("short");
    std::fs::write(d.path("f"), vec![1u8; 5000]).unwrap();
    let o = xdd(&d, "-op read -target f -reqsize 4 -numreqs 3");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        rows(&o).contains(&("COMBINED".into(), 1, 1, 1, 5000, 2)),
        "{}",
        stdout(&o)
    );
}

#[test]
fn writing_a_formatted_loop_device_is_refused() {
    let lo = match LoopDev::scratch("xdd-loop", 64) {
        Ok(l) => l,
        Err(why) => {
            common::skip_or_fail(
                "writing_a_formatted_loop_device_is_refused",
                &why.to_string(),
            );
            return;
        }
    };
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", &lo.dev])
        .status();
    if !mkfs.is_ok_and(|s| s.success()) {
        common::skip_or_fail(
            "writing_a_formatted_loop_device_is_refused",
            "mkfs.ext4 unavailable",
        );
        return;
    }
    let before = std::fs::read(&lo.dev)
        .map(|b| b[..70_000].to_vec())
        .unwrap();
    let d = TempDir::new("loopw");
    let o = xdd(
        &d,
        &format!("-op write -target {} -reqsize 4 -numreqs 16", lo.dev),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ext2/ext3/ext4") && stderr(&o).contains("-force"),
        "{}",
        stderr(&o)
    );
    let o = xdd(
        &d,
        &format!(
            "-op write -target {} -reqsize 4 -numreqs 16 -rwratio 50",
            lo.dev
        ),
    );
    assert_eq!(o.status.code(), Some(2), "mixed writes must be refused too");
    let after = std::fs::read(&lo.dev)
        .map(|b| b[..70_000].to_vec())
        .unwrap();
    assert_eq!(before, after, "the device was modified");
    let fsck = Command::new("fsck.ext4").args(["-n", &lo.dev]).output();
    if let Ok(f) = fsck {
        assert!(
            f.status.success(),
            "fsck: {}",
            String::from_utf8_lossy(&f.stdout)
        );
    }
    let o = xdd(
        &d,
        &format!("-op read -target {} -reqsize 4 -numreqs 16", lo.dev),
    );
    ok(&o);
    // An amount past the device's end (64 MiB) is refused before any
    // request, -force or not: such a write ran to the end, changed the
    // device and failed there with ENOSPC.
    for line in [
        format!(
            "-op write -force -target {} -reqsize 1024 -mbytes 8 -startoffset 61440",
            lo.dev
        ),
        format!("-op read -target {} -reqsize 1024 -numreqs 65", lo.dev),
    ] {
        let o = xdd(&d, &line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("past the end of the block device"),
            "{}",
            stderr(&o)
        );
    }
    let after = std::fs::read(&lo.dev)
        .map(|b| b[..70_000].to_vec())
        .unwrap();
    assert_eq!(before, after, "the device was modified");
}

#[test]
fn timestamps_are_written_per_target() {
    let d = TempDir::new("ts");
    let o = xdd(&d, "-op write -targets 2 a b -reqsize 2 -numreqs 20 -qd 2 -ts detailed -ts output ts.write -ts dump ts.bin");
    ok(&o);
    for t in ["0000", "0001"] {
        let text = std::fs::read_to_string(d.path(&format!("ts.write.target.{t}.csv"))).unwrap();
        assert!(text.contains("Number of entries, 20"), "{text}");
        let bin = std::fs::read(d.path(&format!("ts.bin.target.{t}.bin"))).unwrap();
        assert_eq!(&bin[..8], b"IOLABTS\0");
        assert_eq!(bin.len(), 64 + 20 * 64);
    }
}

#[test]
fn uring_engine_moves_the_same_bytes() {
    let d = TempDir::new("uring");
    let o = xdd(
        &d,
        "-op write -target f -reqsize 4 -numreqs 64 -qd 8 -engine uring -dp sequenced",
    );
    if stderr(&o).contains("io_uring is not available") {
        common::skip_or_fail("uring_engine_moves_the_same_bytes", &stderr(&o));
        return;
    }
    ok(&o);
    assert!(
        rows(&o).contains(&("COMBINED".into(), 1, 1, 8, 64 * 4096, 64)),
        "{}",
        stdout(&o)
    );
    let o = xdd(&d, "-op read -target f -reqsize 4 -numreqs 64 -qd 8 -engine uring -dp sequenced -verify location");
    ok(&o);
    assert!(stdout(&o).contains("0 reads failed -verify"));
    let o = xdd(
        &d,
        "-target f -reqsize 4 -numreqs 64 -engine uring -rwratio 50",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-engine"));
}

#[test]
fn file_lifecycle_options() {
    let d = TempDir::new("files");
    ok(&xdd(
        &d,
        "-op write -target f -reqsize 1 -numreqs 4 -passes 2 -createnewfiles",
    ));
    assert_eq!(d.entries(), ["f.00000001", "f.00000002"]);
    ok(&xdd(
        &d,
        "-op write -target g -reqsize 1 -numreqs 4 -passes 2 -recreatefiles -reopen -deletefile",
    ));
    assert_eq!(d.entries(), ["f.00000001", "f.00000002"]);
    ok(&xdd(
        &d,
        "-op write -target h -reqsize 1 -numreqs 4 -preallocate 1m -syncwrite -flushwrite 2",
    ));
    assert!(std::fs::metadata(d.path("h")).unwrap().len() >= 4096);
}

#[test]
fn coordination_options_complete_their_work() {
    let d = TempDir::new("coord");
    for extra in [
        "-lockstep 0 1 op 2 op 1 wait complete",
        "-lockstep 0 1 percent 10 kbytes 2 run complete",
        "-starttrigger 0 1 op 10",
        "-stoptrigger 0 1 percent 100",
        "-syncio 5",
        "-serialordering -qd 3",
        "-looseordering -qd 3",
        "-nobarrier -passes 2",
    ] {
        let o = xdd(
            &d,
            &format!("-op write -targets 2 a b -reqsize 1 -numreqs 40 {extra} -verbose"),
        );
        ok(&o);
        let total = rows(&o)
            .into_iter()
            .find(|r| r.0 == "TARGET_AVERAGE" && r.2 == 0)
            .unwrap();
        assert_eq!(total.5 % 40, 0, "{extra}: master did {} ops", total.5);
    }
    // A stop trigger that fires at once leaves target 1 short of its work.
    let o = xdd(&d, "-op write -targets 2 a b -reqsize 1 -numreqs 4000 -throttle target 0 ops 100000 -stoptrigger 0 1 op 1 -verbose");
    ok(&o);
}

#[test]
fn heartbeat_to_files_and_placement() {
    let d = TempDir::new("hb");
    let o = xdd(&d, "-op write -target f -reqsize 1 -numreqs 200 -throttle ops 2000 -hb 0.02 -hb ops -hb bw -hb output hb -singleproc 0 -nomemlock");
    ok(&o);
    let text = std::fs::read_to_string(d.path("hb.T0000.csv")).unwrap();
    assert!(
        text.starts_with("elapsed_s,tod,host,target,pass,ops,bw\n"),
        "{text}"
    );
    let o = xdd(
        &d,
        "-op write -target f -reqsize 1 -numreqs 20 -processor 99",
    );
    assert_eq!(o.status.code(), Some(2));
}

/// A target held before its pass begins (here by `-targetstartdelay`,
/// as at the pass barrier or in `-startdelay`) is said to wait, as in
/// XDD's heartbeat, not shown with the 0 ops of its cleared counters;
/// the heartbeat ticks 25 times in each half-second delay.
#[test]
fn a_heartbeat_says_a_target_waits_for_its_pass() {
    let d = TempDir::new("hb-wait");
    let o = xdd(&d, "-op write -targets 2 a b -reqsize 1 -numreqs 20 -passes 2 -targetstartdelay 0.5 -hb 0.02 -hb lf -hb target -hb ops");
    ok(&o);
    let err = stderr(&o);
    for pass in ["0001", "0002"] {
        let waits = format!("| tgt 0001 WAITING for pass {pass}");
        assert!(err.lines().any(|l| l.ends_with(&waits)), "{waits}: {err}");
    }
    // Target 0, which does not wait, shows its figures meanwhile.
    assert!(
        err.contains("| tgt 0000 20 OPS | tgt 0001 WAITING"),
        "{err}"
    );
}

/// Heartbeat lines go to standard error; once its reader has gone
/// (`2>&1 | head -1`), the lines stop and the run ends as it would have
/// (the write into the closed pipe once panicked the reporter thread,
/// failing the run).
#[test]
fn a_closed_stderr_ends_the_heartbeat_not_the_run() {
    let d = TempDir::new("hb-closed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(
            "xdd -op write -target null -reqsize 1 -numreqs 600 -throttle ops 2000 -hb 0.02 -hb lf"
                .split(' '),
        )
        .current_dir(&d.0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader of stderr leaves before the first heartbeat.
    drop(child.stderr.take());
    let o = child.wait_with_output().unwrap();
    ok(&o);
    assert!(
        rows(&o).contains(&("COMBINED".into(), 1, 1, 1, 600 * 1024, 600)),
        "{}",
        stdout(&o)
    );
}

/// (op number, start ns, end ns) of every record of a time stamp dump.
fn dump_records(path: &str) -> Vec<(u64, u64, u64)> {
    let b = std::fs::read(path).unwrap();
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let (header, record) = (
        u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize,
        u32::from_le_bytes(b[16..20].try_into().unwrap()) as usize,
    );
    let n = u64_at(32) as usize;
    (0..n)
        .map(|i| header + i * record)
        .map(|o| (u64_at(o), u64_at(o + 32), u64_at(o + 40)))
        .collect()
}

#[test]
fn serial_ordering_issues_each_op_after_the_previous_completes() {
    let d = TempDir::new("serial");
    ok(&xdd(&d, "-op write -target f -reqsize 1 -numreqs 200 -qd 4 -serialordering -ts summary -ts output s -ts dump ts"));
    let mut r = dump_records(&d.path("ts.target.0000.bin"));
    assert_eq!(r.len(), 200);
    r.sort();
    for w in r.windows(2) {
        assert_eq!(w[1].0, w[0].0 + 1);
        assert!(
            w[1].1 >= w[0].2,
            "op {} started before op {} completed",
            w[1].0,
            w[0].0
        );
    }
}

#[test]
fn lockstep_slave_trails_its_master() {
    let d = TempDir::new("lockstep");
    ok(&xdd(&d, "-op write -targets 2 m s -reqsize 1 -numreqs 50 -lockstep 0 1 op 1 op 1 wait complete -ts summary -ts output o -ts dump ts"));
    let mut m = dump_records(&d.path("ts.target.0000.bin"));
    let mut s = dump_records(&d.path("ts.target.0001.bin"));
    m.sort();
    s.sort();
    assert_eq!((m.len(), s.len()), (50, 50));
    for k in 0..50 {
        assert!(
            s[k].1 >= m[k].2,
            "slave op {k} started before master op {k} completed"
        );
    }
}

/// Ops of each target's first pass and its elapsed seconds.
fn pass_ops_secs(o: &Output) -> Vec<(u64, f64)> {
    stdout(o)
        .lines()
        .filter(|l| l.starts_with("TARGET_PASS"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[5].parse().unwrap(), f[6].parse().unwrap())
        })
        .collect()
}

/// -lockstep takes turns as XDD's base/lockstep.c does: the master hands
/// over and waits for its next turn, so the counts are XDD's every time
/// (the master never waited and `stop` lost the slave's work by chance:
/// 400, 0, 8, 0 slave operations over four runs).
#[test]
fn lockstep_takes_turns_as_xdd_does() {
    let d = TempDir::new("lockstep-turns");
    for f in ["m", "s"] {
        std::fs::write(d.path(f), vec![5u8; 8 << 20]).unwrap();
    }
    let line = |m: u64, s: u64, end: &str| {
        format!("-targets 2 m s -op read -reqsize 4 -numreqs {m} -numreqs target 1 {s} -lockstep 0 1 op 1 op 2 wait {end} -verbose")
    };
    // As XDD 7.0 counts them: the slave trails by one turn, and gets one
    // more turn after the master ends (`stop`), or runs on (`complete`);
    // `stop` ends the master too when the slave ends first.
    for (m, s, end, want) in [
        (200, 1000, "stop", [200, 400]),
        (200, 1000, "complete", [200, 1000]),
        (1000, 200, "stop", [101, 200]),
    ] {
        for _ in 0..3 {
            let o = xdd(&d, &line(m, s, end));
            ok(&o);
            let got: Vec<u64> = pass_ops_secs(&o).iter().map(|p| p.0).collect();
            assert_eq!(got, want, "{m} {s} {end}");
        }
    }
    // The master waits for its throttled slave's turns.
    let o = xdd(&d, "-targets 2 m s -op read -reqsize 4 -numreqs 100 -lockstep 0 1 op 1 op 1 wait complete -throttle target 1 ops 200 -verbose");
    ok(&o);
    let p = pass_ops_secs(&o);
    assert!(
        p[0].1 >= 0.4,
        "the master did not wait for its slave: {p:?}"
    );
    // Turns that could never come are refused before anything runs.
    for (extra, says) in [
        (
            "-numreqs 100 -lockstep 0 1 op 1 op 1 wait stop -starttrigger 0 1 op 5",
            "take turns",
        ),
        (
            "-timelimit 1 -lockstep 0 1 percent 10 op 1 wait stop",
            "no planned amount",
        ),
        // A second master of the same slave was silently ignored.
        (
            "-numreqs 10 -lockstep 0 1 op 1 op 1 wait stop -lockstep 2 1 op 1 op 1 wait stop",
            "two -lockstep relations",
        ),
    ] {
        let o = xdd(
            &d,
            &format!("-op write -targets 3 n1 n2 n3 -reqsize 8 {extra}"),
        );
        assert_eq!(o.status.code(), Some(2), "{extra}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        assert!(!std::path::Path::new(&d.path("n1")).exists());
    }
}

/// Options on a target that only reads, refused before anything runs:
/// -createnewfiles started, then failed to open its new file (exit 1);
/// -preallocate was skipped while the preamble printed it.
#[test]
fn write_only_options_on_a_read_target_are_refused() {
    let d = TempDir::new("readonly-opts");
    std::fs::write(d.path("mine"), vec![5u8; 32768]).unwrap();
    for (extra, opt) in [
        ("-createnewfiles", "-createnewfiles"),
        ("-preallocate 16m", "-preallocate"),
    ] {
        let o = xdd(
            &d,
            &format!("-op read -target mine -reqsize 4 -numreqs 4 {extra}"),
        );
        assert_eq!(o.status.code(), Some(2), "{extra}: {}", stderr(&o));
        assert!(stderr(&o).contains(opt), "{}", stderr(&o));
        assert!(!stdout(&o).contains("COMBINED"));
        assert_eq!(d.entries(), ["mine"]);
        assert_eq!(std::fs::metadata(d.path("mine")).unwrap().len(), 32768);
    }
}

/// `-seek stagger 0` is XDD's "no stride": spread over the range, as a
/// bare `-seek stagger` (it was refused, "must be greater than 0").
#[test]
fn seek_stagger_0_spreads_over_the_range() {
    let d = TempDir::new("stagger0");
    std::fs::write(d.path("f"), vec![5u8; 1 << 20]).unwrap();
    for (stride, save) in [("0", "a"), ("", "b")] {
        let line = format!("-op read -target f -reqsize 8 -numreqs 4 -seek stagger {stride} -seek range 100 -seek save {save}");
        ok(&xdd(&d, &line));
    }
    let a = std::fs::read_to_string(d.path("a.T0.txt")).unwrap();
    assert_eq!(a, std::fs::read_to_string(d.path("b.T0.txt")).unwrap());
}

/// -deletefile removes only what the run made: a file that was there
/// before it is the user's and stays, with a note (XDD deletes it).
#[test]
fn deletefile_keeps_a_file_that_was_there_before() {
    let d = TempDir::new("deletefile");
    std::fs::write(d.path("mine"), vec![7u8; 8192]).unwrap();
    let o = xdd(
        &d,
        "-op read -target mine -reqsize 1 -numreqs 2 -deletefile",
    );
    ok(&o);
    assert_eq!(std::fs::read(d.path("mine")).unwrap(), vec![7u8; 8192]);
    assert!(
        stderr(&o).contains("kept: it was there before the run"),
        "{}",
        stderr(&o)
    );
    // One the run made goes.
    ok(&xdd(
        &d,
        "-op write -target made -reqsize 1 -numreqs 2 -deletefile",
    ));
    assert_eq!(d.entries(), ["mine"]);
}

#[test]
fn a_failed_start_touches_no_file() {
    let d = TempDir::new("failstart");
    std::fs::write(d.path("keep"), b"data").unwrap();
    // Target 2 cannot be created (its directory is missing): nothing
    // runs, target 0 keeps its data despite -deletefile, and target 1,
    // created for writing, is removed.
    let o = xdd(&d, "-targets 3 keep new no/such -op target 0 read -op target 1 write -op target 2 write -reqsize 1 -numreqs 1 -deletefile");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("target 2 (no/such)"), "{}", stderr(&o));
    assert_eq!(d.entries(), ["keep"]);
    assert_eq!(std::fs::read(d.path("keep")).unwrap(), b"data");
}

/// `-seek range` past a block device's end is exit 2 before any I/O,
/// naming the range and the size (it used to fail mid-run: "read moved
/// 0 of 8192 bytes", exit 1).
#[test]
fn a_seek_range_past_a_block_device_is_refused_before_any_io() {
    let lo = match LoopDev::scratch("xdd-loop", 64) {
        Ok(l) => l,
        Err(why) => {
            common::skip_or_fail("seek range past a loop device", &why);
            return;
        }
    };
    let d = TempDir::new("seekdev");
    // 64 MiB device = 65536 blocks of 1 KiB.
    let line = format!(
        "-op read -target {} -reqsize 8 -mbytes 16 -seek random -seek range",
        lo.dev
    );
    let o = xdd(&d, &format!("{line} 100000"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("-seek range 100000") && err.contains("67108864 bytes"),
        "{err}"
    );
    assert!(!stdout(&o).contains("COMBINED"), "it ran: {}", stdout(&o));
    let o = xdd(&d, &format!("{line} 65536"));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// For a target that only reads, the file's size bounds `-seek range`.
#[test]
fn a_seek_range_past_a_file_that_is_only_read_is_refused_before_any_io() {
    let d = TempDir::new("seekfile");
    let f = d.path("f");
    std::fs::write(&f, vec![7u8; 8 << 20]).unwrap();
    let line = format!(
        "-op read -target {} -reqsize 8 -mbytes 16 -seek random -seek range",
        f
    );
    let o = xdd(&d, &format!("{line} 100000"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("8388608 bytes") && stderr(&o).contains("at most 8192 blocks"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("COMBINED"));
    assert!(xdd(&d, &format!("{line} 8192")).status.success());
    // A writing target grows its file: no bound.
    let w = format!(
        "-op write -target {} -reqsize 8 -mbytes 16 -seek random -seek range 100000",
        f
    );
    assert!(xdd(&d, &w).status.success());
}

/// `-help -op`, typed as the option is typed, explains -op (it used to
/// print the option list); the explanation says something the example
/// does not repeat.
#[test]
fn help_on_an_option_typed_with_its_dash() {
    let d = TempDir::new("helpop");
    for w in ["-help -op", "-help op"] {
        let o = xdd(&d, w);
        assert!(o.status.success(), "{w}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.starts_with("-op [target <target#>] read|write|noop\n"),
            "{w}: {out}"
        );
        assert_eq!(
            out.matches("op target").count(),
            1,
            "{w} repeats itself: {out}"
        );
    }
}

/// Without `$USER` (cron, `env -i`), the preamble's user comes from the
/// uid, as `id -un` says (it was empty); the recorded command line is
/// the whole command, `iolab xdd` included, as mdtest's is.
#[test]
fn the_user_comes_from_the_uid_and_the_command_line_names_the_tool() {
    let d = TempDir::new("userline");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words_of(
            "xdd -op write -target f -reqsize 8 -mbytes 1 --json r.json",
        ))
        .current_dir(&d.0)
        .env_remove("USER")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let id = Command::new("id").arg("-un").output().unwrap();
    let me = String::from_utf8_lossy(&id.stdout).trim().to_string();
    assert!(!me.is_empty());
    assert!(
        stdout(&o).contains(&format!("User Name, {me}\n")),
        "{}",
        stdout(&o)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.0.join("r.json")).unwrap()).unwrap();
    let line = doc["command_line"].as_str().unwrap();
    assert!(
        line.ends_with("iolab xdd -op write -target f -reqsize 8 -mbytes 1 --json r.json"),
        "{line}"
    );
}

fn words_of(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// What would be ignored, or would delete what the run reads, is refused
/// before anything runs; what was ignored before now works.
#[test]
fn options_that_were_ignored_or_deleted_data_are_refused_or_honoured() {
    let d = TempDir::new("ignored");
    std::fs::write(d.path("mine"), vec![5u8; 32768]).unwrap();
    // -recreatefiles on a target that only reads deleted it, then
    // failed to open it.
    let o = xdd(
        &d,
        "-op read -target mine -reqsize 8 -numreqs 4 -passes 2 -recreatefiles",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-recreatefiles"), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.path("mine")).unwrap(), vec![5u8; 32768]);
    for (line, says) in [
        // O_DIRECT behind -dio's back: no alignment, reported as off.
        (
            "-op write -target f -reqsize 1 -numreqs 4 --posix.odirect",
            "-dio",
        ),
        // A variance with no rate to vary, or past 100 %.
        (
            "-op write -target f -reqsize 1 -numreqs 4 -throttle var 20",
            "throttle var",
        ),
        (
            "-op write -target f -reqsize 1 -numreqs 4 -throttle ops 100 -throttle var 250",
            "0 to 100",
        ),
        // Start triggers that could never fire waited for ever.
        (
            "-op write -targets 2 null null -reqsize 8 -numreqs 4 -starttrigger 0 1 op 1 -starttrigger 1 0 op 1",
            "for itself",
        ),
        (
            "-op write -targets 2 null null -reqsize 8 -numreqs 4 -passes 2 -starttrigger 0 1 op 100",
            "at the end of the first",
        ),
        // Two lockstep slaves of each other that both wait for a grant,
        // and a master whose start waits for its waiting slave.
        (
            "-op write -targets 2 null null -reqsize 8 -numreqs 100 -lockstep 0 1 op 1 op 1 wait complete -lockstep 1 0 op 1 op 1 wait complete",
            "for itself",
        ),
        (
            "-op write -targets 2 null null -reqsize 8 -numreqs 100 -lockstep 0 1 op 10 op 1 wait complete -starttrigger 1 0 op 5",
            "for itself",
        ),
        // -op noop on a missing file failed at its open (exit 1).
        ("-op noop -target absent -reqsize 8 -numreqs 4", "-op noop opens it"),
        // -syncio's barrier with a target held back by another waited
        // for ever.
        (
            "-op write -targets 2 null null -reqsize 8 -numreqs 100 -syncio 4 -lockstep 0 1 op 10 op 1 wait complete",
            "-syncio: cannot be used with -lockstep",
        ),
        (
            "-op write -targets 2 null null -reqsize 8 -numreqs 100 -syncio 4 -starttrigger 0 1 op 50",
            "with -starttrigger",
        ),
        // The ring runs -op's type; an -rwratio saying otherwise was ignored.
        (
            "-op read -target mine -reqsize 8 -numreqs 2 -rwratio 0 -engine uring",
            "-rwratio 0",
        ),
    ] {
        let o = xdd(&d, line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{line}: {}", stderr(&o));
    }
    assert_eq!(d.entries(), ["mine"]);
    // -throttle var before the rate it varies was dropped.
    ok(&xdd(
        &d,
        "-op write -target f -reqsize 1 -numreqs 10 -throttle var 20 -throttle ops 10000 --json j.json",
    ));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path("j.json")).unwrap()).unwrap();
    assert_eq!(j["config"]["targets"][0]["throttle"]["variance_pct"], 20.0);
    // -stoptrigger reaches a target on io_uring (it ran every request):
    // target 1, paced to 10,000 requests a second, stops once target 0
    // has done one.
    let o = xdd(
        &d,
        "-op write -targets 2 null g -reqsize 8 -numreqs 2000 -engine target 1 uring -throttle target 1 ops 10000 -stoptrigger 0 1 op 1 -verbose",
    );
    ok(&o);
    let t1: Vec<u64> = rows(&o)
        .into_iter()
        .filter(|r| r.0 == "TARGET_PASS" && r.2 == 1)
        .map(|r| r.5)
        .collect();
    assert!(t1.len() == 1 && t1[0] < 2000, "{t1:?}\n{}", stdout(&o));
}

/// The files xdd names from a prefix (-ts output and dump, -seek save,
/// -heartbeat output, -createnewfiles' per-pass files) never follow a
/// link planted at that name: the outputs replace it, a per-pass file is
/// refused (exit 2). Each wrote into the link's target before. And a
/// per-pass file of the user's is kept by -deletefile, with a note.
#[test]
fn links_planted_at_the_names_xdd_makes_are_not_followed() {
    let d = TempDir::new("links");
    let victims = d.0.join("victims");
    std::fs::create_dir(&victims).unwrap();
    let w = d.0.join("w");
    std::fs::create_dir(&w).unwrap();
    let names = [
        "ts.target.0000.csv",
        "s.T0.txt",
        "hb.T0000.csv",
        "d.target.0000.bin",
        "f.00000002",
    ];
    for n in names {
        std::fs::write(victims.join(n), b"VICTIM").unwrap();
        std::os::unix::fs::symlink(victims.join(n), w.join(n)).unwrap();
    }
    ok(&xdd_in(
        &w,
        "-op write -target f -reqsize 8 -numreqs 4 -ts output ts -ts detailed -ts dump d -seek save s -heartbeat 1 -heartbeat output hb",
    ));
    let o = xdd_in(
        &w,
        "-op write -target f -reqsize 8 -numreqs 4 -passes 2 -createnewfiles",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("f.00000002 is a symbolic link"),
        "{}",
        stderr(&o)
    );
    for n in names {
        assert_eq!(std::fs::read(victims.join(n)).unwrap(), b"VICTIM", "{n}");
        let link = w.join(n).is_symlink();
        assert_eq!(link, n == "f.00000002", "{n}");
    }
    assert!(!w.join("f.00000001").exists());
    std::fs::write(w.join("g.00000001"), b"MINE").unwrap();
    let o = xdd_in(
        &w,
        "-op write -target g -reqsize 8 -numreqs 4 -passes 2 -createnewfiles -deletefile",
    );
    ok(&o);
    assert!(
        stderr(&o).contains("g.00000001): kept: it was there before the run"),
        "{}",
        stderr(&o)
    );
    assert!(w.join("g.00000001").exists());
    assert!(!w.join("g.00000002").exists());
}

/// A `-datapattern` modifier the final pattern does not use was dropped
/// without a word (default data written, exit 0): each is refused
/// naming the word and the patterns it applies to, nothing created;
/// modifiers with their pattern still run.
#[test]
fn datapattern_modifiers_with_nothing_to_modify_are_refused() {
    let d = TempDir::new("dp-modifiers");
    std::fs::write(d.0.join("pat"), "xyz").unwrap();
    for (pattern, word, applies_to) in [
        ("-datapattern prefix 1f", "prefix", "sequenced"),
        ("-datapattern replicate", "replicate", "ascii"),
        ("-dp A -dp replicate", "replicate", "ascii"),
        ("-datapattern wholefile", "wholefile", "file"),
        ("-dp compress 50 -dp A", "compress", "random"),
        ("-dp dedupe 20 -dp sequenced", "dedupe", "random"),
        (
            "-dp sequenced -dp prefix 1f -dp ascii x",
            "prefix",
            "sequenced",
        ),
    ] {
        let o = xdd(
            &d,
            &format!("-op write -target p.dat -reqsize 1 -numreqs 2 {pattern}"),
        );
        assert_eq!(o.status.code(), Some(2), "{pattern}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("-datapattern") && e.contains(word),
            "{pattern}: {e}"
        );
        assert!(e.contains(applies_to), "{pattern}: {e}");
        assert_eq!(d.entries(), ["pat"], "{pattern}");
    }
    for pattern in [
        "-dp sequenced -dp prefix 1f -dp inverse",
        "-dp ascii abc -dp replicate",
        "-dp file pat -dp wholefile",
        "-dp hex 0a0b -dp wholefile",
        "-dp compress 50 -dp dedupe 25",
        "-dp A -dp compress 10",
    ] {
        ok(&xdd(
            &d,
            &format!("-op write -target p.dat -reqsize 1 -numreqs 2 {pattern}"),
        ));
    }
}

/// Seek list locations whose byte offset (with the request) passes the
/// largest file offset made a worker panic on a multiply overflow, or
/// fail mid-run with EINVAL: refused when loaded (exit 2) naming
/// `-seek load` and the line, before the target is created.
#[test]
fn seek_list_locations_past_the_largest_offset_are_refused() {
    let d = TempDir::new("seek-overflow");
    for (list, line) in [
        ("0 0\n1 18446744073709551615\n", "line 2"),
        ("# a comment\n0 9007199254740990\n", "line 2"),
        ("0 0\n1 8\n2 9007199254740991\n", "line 3"),
    ] {
        std::fs::write(d.0.join("l.txt"), list).unwrap();
        let o = xdd(
            &d,
            "-op write -target sk.dat -reqsize 8 -numreqs 2 -seek load l.txt",
        );
        assert_eq!(o.status.code(), Some(2), "{list}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("-seek") && e.contains("load"), "{list}: {e}");
        assert!(e.contains(line) && e.contains("2^63"), "{list}: {e}");
        assert_eq!(d.entries(), ["l.txt"]);
    }
    // The last request that fits is taken.
    let last = (i64::MAX as u64 - 8192) / 1024;
    std::fs::write(d.0.join("l.txt"), format!("0 {last}\n")).unwrap();
    let o = xdd(
        &d,
        "-op write -target null -reqsize 8 -numreqs 2 -seek load l.txt",
    );
    ok(&o);
}

/// `-dio` with requests or offsets finer than the file's direct I/O
/// alignment (a file system on 4096-byte sectors) failed every request
/// mid-run with EINVAL, saying nothing of alignment: refused up front
/// (exit 2) naming -dio and the alignment, for a file to be created, an
/// existing file and the device itself; aligned requests run direct.
#[test]
fn dio_finer_than_the_targets_alignment_is_refused() {
    fn run(d: &TempDir, target: &str, op: &str, rest: &str) -> Output {
        let line = format!("-op {op} -target {target} -blocksize 512 -numreqs 4 -dio {rest}");
        xdd(d, &format!("{line} --json j.json"))
    }
    fn refused(o: &Output, what: &str) {
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
        let e = stderr(o);
        assert!(e.contains("-dio") && e.contains("4096"), "{what}: {e}");
    }
    let dev = match LoopDev::sectors("xdd-dio4k", 64, 4096) {
        Ok(l) => l,
        Err(why) => return common::skip_or_fail("dio_finer_than_the_targets_alignment", &why),
    };
    let d = TempDir::new("dio4k");
    refused(&run(&d, &dev.dev, "read", "-reqsize 2"), "the device");
    let fs = match common::loopfs::LoopFs::make(dev, "ext4", &[], &d.0.join("m"), &[]) {
        Ok(fs) => fs,
        Err(why) => return common::skip_or_fail("dio_finer_than_the_targets_alignment", &why),
    };
    let f = fs.at.join("f");
    let target = f.to_str().unwrap();
    refused(
        &run(&d, target, "write", "-reqsize 1"),
        "a file to be created",
    );
    assert!(!f.exists(), "the refused run created its target");
    ok(&run(&d, target, "write", "-reqsize 8"));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path("j.json")).unwrap()).unwrap();
    assert_eq!(j["payload"]["targets"][0]["direct_io"], true, "{j}");
    refused(&run(&d, target, "read", "-reqsize 1"), "an existing file");
    refused(
        &run(&d, target, "read", "-reqsize 8 -startoffset 1"),
        "an offset",
    );
}
