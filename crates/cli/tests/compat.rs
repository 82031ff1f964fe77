//! Compatibility with XDD's files: its 8B/10B data patterns, its `-seek
//! save` file names and layout, its `-csvout` / `-combinedout` layout, and
//! `-outputformat` tokens checked against one list.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

/// A scratch directory removed on drop, even when the test fails.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("iolab-compat-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
    fn read(&self, f: &str) -> String {
        std::fs::read_to_string(self.path(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn xdd(d: &Dir, line: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(line.split_whitespace())
        .current_dir(&d.0)
        .env("CI", "1")
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// XDD's first bytes of each pattern (its datapatterns.h): every request
/// buffer starts with them.
const PATTERN_HEADS: &[(&str, [u8; 8])] = &[
    ("lfpat", [0xAB; 8]),
    ("ltpat", [0xEE, 0xFE, 0xC7, 0xF1, 0xFE, 0x27, 0x7E, 0x7E]),
    ("cjtpat", [0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5]),
    ("crpat", [0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5]),
    ("cspat", [0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5]),
];

#[test]
fn xdd_8b10b_patterns_are_written_and_verify() {
    let d = Dir::new("patterns");
    for (name, head) in PATTERN_HEADS {
        let f = format!("{name}.dat");
        let io = format!("-target {f} -reqsize 4 -numreqs 8 -datapattern {name}");
        ok(&xdd(&d, &format!("-op write {io}")));
        let bytes = std::fs::read(d.path(&f)).unwrap();
        assert_eq!(bytes.len(), 8 * 4096, "{name}");
        for req in bytes.chunks(4096) {
            assert_eq!(
                req[..8],
                head[..],
                "{name}: each request starts the pattern"
            );
        }
        let good = xdd(&d, &format!("-op read {io} -verify contents"));
        ok(&good);
        let out = String::from_utf8_lossy(&good.stdout);
        assert!(out.contains("0 reads failed -verify"), "{name}: {out}");
        let mut bad = bytes.clone();
        bad[5000] ^= 0x01;
        std::fs::write(d.path(&f), &bad).unwrap();
        let o = xdd(&d, &format!("-op read {io} -verify contents"));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{name}: a flipped bit must fail -verify"
        );
    }
}

#[test]
fn seek_save_writes_xdds_file_name_and_layout() {
    let d = Dir::new("seeksave");
    for f in ["a", "b"] {
        // -rwratio 50 reads too: the targets hold data already.
        std::fs::File::create(d.path(f))
            .and_then(|h| h.set_len(64 << 10))
            .unwrap();
    }
    ok(&xdd(
        &d,
        "-op write -targets 2 a b -reqsize 2 -numreqs 4 -rwratio 50 -seek save sk",
    ));
    for t in 0..2 {
        let text = d.read(&format!("sk.T{t}.txt"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# Longest seek="), "{text}");
        assert_eq!(lines[1], "#Ordinal Location Reqsize Operation Time1 Time2");
        assert_eq!(lines.len(), 6, "{text}");
        for (i, l) in lines[2..].iter().enumerate() {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f[0], format!("{i:010}"), "{l}");
            assert_eq!(f[1], format!("{:012}", i * 2), "{l}");
            assert_eq!(f[2], "2");
            assert!(f[3] == "r" || f[3] == "w", "{l}");
            assert_eq!((f[4].len(), f[5].len()), (16, 16), "{l}");
        }
        let ops: String = lines[2..]
            .iter()
            .map(|l| l.split(' ').nth(3).unwrap())
            .collect();
        assert_eq!(ops.matches('r').count(), 2, "-rwratio 50: {ops}");
    }
    assert!(!d.path("sk").exists(), "no file under the bare name");
    // XDD's own file loads back as the same locations.
    let o = xdd(
        &d,
        "-op read -target a -reqsize 2 -numreqs 4 -seek load sk.T0.txt -seek save again",
    );
    ok(&o);
    let body = |t: String| t.lines().skip(2).map(String::from).collect::<Vec<_>>();
    let loc = |v: Vec<String>| {
        v.iter()
            .map(|l| l.split(' ').nth(1).unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        loc(body(d.read("sk.T0.txt"))),
        loc(body(d.read("again.T0.txt")))
    );
}

#[test]
fn csvout_and_combinedout_follow_xdd() {
    let d = Dir::new("csv");
    let line = "-op write -target f -reqsize 2 -numreqs 10 -csvout r.csv -combinedout c.csv";
    ok(&xdd(&d, line));
    ok(&xdd(&d, line));
    let csv = d.read("r.csv");
    let header = "What,Pass,Target,Queue,Bytes_Xfered,Ops,Elapsed,Bandwidth,IOPS,Latency,Pct_CPU,Op_Type,Xfer_Size";
    let units = "UNITS>>,Number,Number,Number,Bytes,#ops,seconds,MBytes/s,Ops/s,millisec,percent,text,bytes";
    // XDD's preamble comes first, as in the text report.
    assert!(csv.starts_with("IOIOIOIOIOIOIOIOIOI "), "{csv}");
    let all: Vec<&str> = csv.lines().collect();
    let at = all.iter().position(|l| *l == header).unwrap();
    assert!(all[..at]
        .iter()
        .any(|l| l.starts_with("CSV output file name, r.csv")));
    let lines = &all[at..];
    assert_eq!(lines[1], units);
    assert!(lines[2].starts_with("COMBINED,1,1,1,20480,10,"), "{csv}");
    assert!(lines[2].ends_with(",write,2048"), "{csv}");
    assert_eq!(lines[2].split(',').count(), 13);
    assert!(lines[3].starts_with("Ending time for this run, "));
    // Appended, as XDD opens it: the second run follows the first.
    assert!(lines[4].starts_with("IOIOIOIOIOIOIOIOIOI "), "{csv}");
    assert_eq!(all.iter().filter(|l| **l == header).count(), 2, "{csv}");
    let comb = d.read("c.csv");
    let rows: Vec<&str> = comb.lines().collect();
    assert_eq!(rows.len(), 2, "only the COMBINED rows: {comb}");
    for r in rows {
        assert!(r.starts_with("COMBINED,1,1,1,20480,10,"), "{r}");
        assert_eq!(r.split(',').count(), 13);
    }
    ok(&xdd(
        &d,
        "-op write -target f -reqsize 2 -numreqs 10 -csvout n.csv -outputformat new +WHAT+OPS+BYTESTRANSFERED",
    ));
    let n = d.read("n.csv");
    assert!(
        n.contains("\n\nWhat,Ops,Bytes_Xfered\nUNITS>>,#ops,Bytes\n"),
        "{n}"
    );
    assert!(n.contains("\nCOMBINED,10,20480\n"), "{n}");
}

#[test]
fn unknown_outputformat_tokens_are_usage_errors() {
    let d = Dir::new("tokens");
    let o = xdd(
        &d,
        "-op write -target f -numreqs 1 -outputformat add +OPS+NOSUCHTOKEN -csvout r.csv",
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("NOSUCHTOKEN") && err.contains("outputformat"),
        "{err}"
    );
    assert!(!d.path("f").exists() && !d.path("r.csv").exists());
}

fn mdtest(line: &str) -> Output {
    let mut w = vec!["mdtest"];
    w.extend(line.split_whitespace());
    common::iolab(&w)
}

/// `-G SEED` data is IOR's default packets: 64-bit little-endian word `i`
/// is `writer_rank << 32 | (SEED + i)`, trailing bytes hold their offset,
/// so IOR's mdtest -X verifies iolab's files and the other way round.
#[test]
fn mdtest_g_data_is_iors_layout_and_verifies() {
    let d = Dir::new("mdtest-g");
    let root = d.path("md");
    let common = format!("-F -u -n 4 -G 5 -d {} --tasks 2", root.display());
    let o = mdtest(&format!("-C -w 100 {common}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for task in 0..2u64 {
        let f = root.join(format!(
            "test-dir.0-0/mdtest_tree.{task}.0/file.mdtest.{task}.3"
        ));
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(bytes.len(), 100);
        for (i, w) in bytes.chunks_exact(8).enumerate() {
            let want = (task << 32) | (5 + i as u64);
            assert_eq!(
                u64::from_le_bytes(w.try_into().unwrap()),
                want,
                "{} word {i}",
                f.display()
            );
        }
        assert_eq!(bytes[96..], [96, 97, 98, 99]);
    }
    let o = mdtest(&format!("-E -X -e 100 {common}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let wrong = common.replace("-G 5", "-G 6");
    let o = mdtest(&format!("-E -X -e 100 {wrong}"));
    assert_eq!(o.status.code(), Some(1), "another seed must fail -X");
    let o = mdtest(&format!("-r {common}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
