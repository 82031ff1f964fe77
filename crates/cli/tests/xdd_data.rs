//! What `iolab xdd` writes, read back: by default (and with `-datapattern
//! random`) data that neither compresses nor deduplicates, on a plain file
//! and on btrfs mounted with `compress-force=zstd`; chosen compressibility
//! and duplication; and the merged latency figures of its JSON, which must
//! equal the merge of the parts printed beside them.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::loopfs::LoopFs;
use common::{skip_or_fail, Scratch};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

fn xdd(dir: &Path, line: &str) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(line.split_whitespace())
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "xdd {line}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// zlib's output size over the input's, at `level`.
fn zlib_ratio(data: &[u8], level: u32) -> f64 {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
    z.write_all(data).unwrap();
    z.finish().unwrap().len() as f64 / data.len() as f64
}

/// Distinct 4 KiB blocks over all blocks.
fn distinct_share(data: &[u8]) -> f64 {
    let blocks = data.chunks(4096).count();
    data.chunks(4096).collect::<HashSet<_>>().len() as f64 / blocks as f64
}

#[test]
fn default_and_random_data_neither_compress_nor_deduplicate() {
    let s = Scratch::new("xdd-data-unique");
    // 8 MiB each: 64 KiB requests from two QThreads over two passes, and
    // 4 KiB requests (the hardest case for a repeating buffer).
    for (pat, shape) in [
        ("", "-reqsize 64 -numreqs 128 -qd 2 -passes 2"),
        ("-datapattern random", "-reqsize 64 -numreqs 128 -qd 2"),
        ("", "-reqsize 4 -numreqs 2048"),
        ("-datapattern random", "-reqsize 4 -numreqs 2048 -qd 3"),
        ("", "-reqsize 16 -numreqs 512 -qd 8 -engine uring"),
    ] {
        xdd(&s.root, &format!("-op write -target f {shape} {pat}"));
        let data = std::fs::read(s.path("f")).unwrap();
        assert_eq!(data.len(), 8 << 20);
        for level in [1, 6] {
            let r = zlib_ratio(&data, level);
            assert!(r > 0.95, "{pat} {shape}: zlib {level} shrinks to {r:.3}");
        }
        let d = distinct_share(&data);
        assert!(d > 0.99, "{pat} {shape}: {d:.4} distinct 4 KiB blocks");
        println!(
            "'{pat}' {shape}: zlib 1 {:.4}, distinct {d:.4}",
            zlib_ratio(&data, 1)
        );
    }
    // XDD's bytes when asked: the same checks fail on them.
    xdd(
        &s.root,
        "-op write -target z -reqsize 64 -numreqs 128 -datapattern 0x00",
    );
    let zeros = std::fs::read(s.path("z")).unwrap();
    assert!(zlib_ratio(&zeros, 1) < 0.01 && distinct_share(&zeros) < 0.01);
}

#[test]
fn chosen_compressibility_and_duplication() {
    let s = Scratch::new("xdd-data-chosen");
    xdd(
        &s.root,
        "-op write -target c -reqsize 64 -numreqs 128 -datapattern compress 50",
    );
    let r = zlib_ratio(&std::fs::read(s.path("c")).unwrap(), 6);
    assert!(
        (0.45..=0.55).contains(&r),
        "compress 50: zlib 6 ratio {r:.3}"
    );
    xdd(
        &s.root,
        "-op write -target d -reqsize 64 -numreqs 128 -datapattern dedupe 50",
    );
    let d = std::fs::read(s.path("d")).unwrap();
    let dup = 1.0 - distinct_share(&d);
    assert!(
        (0.45..=0.55).contains(&dup),
        "dedupe 50: {dup:.3} duplicate blocks"
    );
    // Only the duplicates may shrink (zlib finds those in its window).
    let z = zlib_ratio(&d, 6);
    assert!(z > 0.45, "dedupe 50 compresses to {z:.3}");
    println!("compress 50: zlib 6 {r:.4}; dedupe 50: {dup:.4} duplicate, zlib 6 {z:.4}");
}

#[test]
fn the_report_names_the_data_and_warns_of_shrinkable_writes() {
    let s = Scratch::new("xdd-data-report");
    let o = xdd(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 4 --json t.json",
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("t.json")).unwrap()).unwrap();
    let data = j["payload"]["targets"][0]["data"].as_str().unwrap();
    assert!(
        data.starts_with("default: unique incompressible blocks"),
        "{data}"
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        out.contains("Data pattern in buffer, default: unique incompressible blocks"),
        "{out}"
    );
    assert!(!err.contains("compresses or deduplicates"), "{err}");
    let o = xdd(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 4 -datapattern 0x00",
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(out.contains("Data pattern in buffer, 0x00: zeros"), "{out}");
    assert!(
        err.contains("xdd: note: target 0 writes the same bytes in every request"),
        "{err}"
    );
    let o = xdd(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 4 -dp compress 30 -dp dedupe 20",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("30% of each 4 KiB zero") && out.contains("20% of 4 KiB blocks duplicated"),
        "{out}"
    );
    // A read writes nothing: no note.
    let o = xdd(
        &s.root,
        "-op read -target f -reqsize 4 -numreqs 4 -datapattern 0x00",
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("note: target 0 writes"));
}

#[test]
fn wholefile_lays_the_file_over_the_target() {
    let s = Scratch::new("xdd-data-wholefile");
    std::fs::write(s.path("pat"), b"0123456789abc").unwrap();
    let pat = s.path("pat");
    xdd(
        &s.root,
        &format!(
            "-op write -target f -reqsize 4 -numreqs 8 -qd 2 -datapattern wholefile {}",
            pat.display()
        ),
    );
    let data = std::fs::read(s.path("f")).unwrap();
    assert_eq!(data.len(), 8 * 4096);
    assert!(data
        .iter()
        .enumerate()
        .all(|(x, &b)| b == b"0123456789abc"[x % 13]));
    let o = xdd(
        &s.root,
        &format!(
            "-op read -target f -reqsize 4 -numreqs 8 -datapattern wholefile {} -verify contents",
            pat.display()
        ),
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("error"));
}

/// Bytes `fs` has in use (data and metadata), after sync.
fn used_bytes(fs: &LoopFs) -> u64 {
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
    let c = std::ffi::CString::new(fs.at.to_str().unwrap()).unwrap();
    // SAFETY: statvfs is plain data; all zeros is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid
    // out-parameter, both outliving the call.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    (st.f_blocks - st.f_bfree) * st.f_frsize
}

#[test]
fn btrfs_with_forced_zstd_stores_what_was_written() {
    let fx = match LoopFs::scratch(
        "xdd-data-btrfs",
        512,
        "btrfs",
        &["-o", "compress-force=zstd"],
    ) {
        Ok(f) => f,
        Err(e) => return skip_or_fail("btrfs_with_forced_zstd_stores_what_was_written", &e),
    };
    let written: u64 = 64 << 20;
    let cases = [
        ("u", ""),
        ("r", "-datapattern random"),
        ("z", "-datapattern 0x00"),
    ];
    let mut used = Vec::new();
    for (name, pat) in cases {
        let before = used_bytes(&fx);
        xdd(
            &fx.at,
            &format!("-op write -target {name} -reqsize 64 -numreqs 1024 -qd 2 {pat}"),
        );
        used.push(used_bytes(&fx).saturating_sub(before) as f64 / written as f64);
    }
    println!("btrfs compress-force=zstd: stored/written {used:?} (default, random, 0x00)");
    for (i, (_, pat)) in cases[..2].iter().enumerate() {
        assert!(
            (0.95..=1.05).contains(&used[i]),
            "'{pat}': stored {:.3} of what was written",
            used[i]
        );
    }
    // Zeros are stored in a sliver: the measurement can tell the difference.
    assert!(used[2] < 0.2, "zeros stored {:.3}", used[2]);
}

/// (count, min, max, sum) of a JSON latency record.
fn lat(v: &serde_json::Value) -> (u64, u64, u64, f64) {
    let l = &v["latency_ns"];
    let count = l["count"].as_u64().unwrap();
    let sum = l["mean_ns"].as_f64().unwrap() * count as f64;
    (
        count,
        l["min_ns"].as_u64().unwrap(),
        l["max_ns"].as_u64().unwrap(),
        sum,
    )
}

/// Asserts that `merged` is the merge of `parts`: counts and sums add,
/// the minimum is the least of the non-empty parts' (never 0 when an
/// operation took time), the maximum the greatest.
fn assert_merge(what: &str, merged: &serde_json::Value, parts: &[&serde_json::Value]) {
    let (count, min, max, sum) = lat(merged);
    let ps: Vec<_> = parts.iter().map(|p| lat(p)).collect();
    let full: Vec<_> = ps.iter().filter(|p| p.0 > 0).collect();
    assert_eq!(count, ps.iter().map(|p| p.0).sum::<u64>(), "{what}: count");
    assert_eq!(
        min,
        full.iter().map(|p| p.1).min().unwrap_or(0),
        "{what}: min"
    );
    assert_eq!(
        max,
        full.iter().map(|p| p.2).max().unwrap_or(0),
        "{what}: max"
    );
    let want: f64 = ps.iter().map(|p| p.3).sum();
    assert!(
        (sum - want).abs() <= 1e-6 * want.max(1.0),
        "{what}: sum {sum} vs {want}"
    );
    if count > 0 && max > 0 {
        assert!(min > 0, "{what}: min 0 beside max {max}");
    }
}

#[test]
fn every_merged_latency_figure_equals_the_merge_of_its_parts() {
    let s = Scratch::new("xdd-data-merge");
    // More QThreads than some of them get work: empty parts are merged too.
    xdd(
        &s.root,
        "-op write -targets 2 a b -reqsize 4 -numreqs 64 -qd 3 -passes 3 --json t.json",
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("t.json")).unwrap()).unwrap();
    let p = &j["payload"];
    let passes = p["passes"].as_array().unwrap();
    assert_eq!(passes.len(), 3);
    let mut per_target: Vec<Vec<&serde_json::Value>> = vec![Vec::new(); 2];
    for pass in passes {
        for t in pass["targets"].as_array().unwrap() {
            let qs: Vec<_> = t["qthreads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|q| &q["figures"])
                .collect();
            assert_eq!(qs.len(), 3);
            let what = format!("pass {} target {}", pass["pass"], t["target"]);
            assert_merge(&what, &t["figures"], &qs);
            per_target[t["target"].as_u64().unwrap() as usize].push(&t["figures"]);
        }
    }
    let totals: Vec<_> = p["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["totals"])
        .collect();
    for (i, parts) in per_target.iter().enumerate() {
        assert_merge(&format!("target {i} totals"), totals[i], parts);
    }
    assert_merge("combined over targets", &p["combined"], &totals);
    let all: Vec<_> = per_target.concat();
    assert_merge("combined over passes", &p["combined"], &all);
    assert_eq!(lat(&p["combined"]).0, 2 * 3 * 64);
}

#[test]
fn unique_data_reads_back_under_verify_contents() {
    let s = Scratch::new("xdd-data-verify");
    let line = "-target f -reqsize 64 -numreqs 32 -qd 2";
    xdd(&s.root, &format!("-op write {line} -passes 2"));
    let o = xdd(&s.root, &format!("-op read {line} -verify contents"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("0 reads failed -verify"), "{out}");
    let mut data = std::fs::read(s.path("f")).unwrap();
    data[70_000] ^= 0xFF;
    std::fs::write(s.path("f"), &data).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(format!("-op read {line} -verify contents").split_whitespace())
        .current_dir(&s.root)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains("1 reads failed -verify, 1 bad units, first bad offset 70000"),
        "{out}"
    );
}

#[test]
fn mixed_reads_and_writes_keep_the_written_blocks_unique() {
    let s = Scratch::new("xdd-data-mixed");
    xdd(&s.root, "-op write -target f -reqsize 16 -numreqs 512");
    // Reads land beside the base of the write data, never in it: were a
    // read's bytes written back elsewhere, that block would repeat.
    xdd(
        &s.root,
        "-target f -reqsize 16 -numreqs 512 -rwratio 50 -seek random -qd 2",
    );
    let data = std::fs::read(s.path("f")).unwrap();
    assert_eq!(data.len(), 8 << 20);
    let d = distinct_share(&data);
    assert!(d > 0.99, "{d:.4} distinct 4 KiB blocks after a mixed run");
    assert!(zlib_ratio(&data, 6) > 0.95);
    // Every byte but the stamps' tags is the base's where it lies.
    let o = xdd(
        &s.root,
        "-op read -target f -reqsize 16 -numreqs 512 -verify contents",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("0 reads failed -verify"), "{out}");
}
