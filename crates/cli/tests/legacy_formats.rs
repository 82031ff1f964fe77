//! The legacy output formats kept exactly while their writers moved onto
//! well-kept crates: timestamps through jiff (TZ honoured as localtime(3)
//! honours it) and every CSV writer through the csv crate (a value with a
//! comma or a quote quoted, not rewritten; the rest of the layout as it was).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// Every record of a CSV text, read with the csv crate (records may differ
/// in length, as XDD's -csvout mixes its preamble with the table).
fn records(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

/// `date` in the zone `tz`, in mdtest's format, turned sortable
/// (YYYY MM DD HH:MM:SS).
fn date_in(tz: &str) -> String {
    let o = Command::new("date")
        .arg("+%m/%d/%Y %H:%M:%S")
        .env("TZ", tz)
        .output()
        .unwrap();
    sortable(stdout(&o).trim())
}

fn sortable(mdtest_stamp: &str) -> String {
    let (day, time) = mdtest_stamp.split_once(' ').unwrap();
    let d: Vec<&str> = day.split('/').collect();
    format!("{} {} {} {time}", d[2], d[0], d[1])
}

#[test]
fn mdtest_started_at_is_local_time_in_the_tz_given() {
    let s = Scratch::new("formats-tz");
    // A zone name from the system's database and a POSIX rule, both nine
    // hours from UTC so the stamp cannot match UTC's by chance.
    for tz in ["Asia/Tokyo", "JST-9", "UTC0"] {
        let before = date_in(tz);
        let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["mdtest", "-n", "2", "-d"])
            .arg(s.path(&tz.replace('/', "-")))
            .env("CI", "1")
            .env("TZ", tz)
            .output()
            .unwrap();
        let after = date_in(tz);
        ok(&o);
        let out = stdout(&o);
        let line = out
            .lines()
            .find(|l| l.starts_with("-- started at "))
            .unwrap();
        let stamp = line
            .trim_start_matches("-- started at ")
            .trim_end_matches(" --");
        assert_eq!(stamp.len(), 19, "{line}");
        let got = sortable(stamp);
        assert!(
            before <= got && got <= after,
            "{tz}: {before} <= {got} <= {after}"
        );
    }
}

fn xdd_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

#[test]
fn xdd_csvout_quotes_a_path_with_a_comma_and_keeps_the_rest() {
    let s = Scratch::new("formats-xdd");
    std::fs::create_dir(s.path("d,1")).unwrap();
    let o = xdd_in(
        &s.root,
        &[
            "-op",
            "write",
            "-target",
            "f,\"q",
            "-targetdir",
            "d,1/",
            "-reqsize",
            "4",
            "-numreqs",
            "8",
            "-csvout",
            "r,1.csv",
            "-output",
            "t.txt",
        ],
    );
    ok(&o);
    assert!(s.path("d,1/f,\"q").is_file());
    let csv = std::fs::read_to_string(s.path("r,1.csv")).unwrap();
    let text = std::fs::read_to_string(s.path("t.txt")).unwrap();
    let rec = records(&csv);
    let find = |key: &str| rec.iter().find(|r| r[0] == key).unwrap().clone();
    assert_eq!(find("\tTarget[0] Q[0]")[1], "d,1/f,\"q", "{csv}");
    assert_eq!(find("\t\tTarget directory")[1], "d,1/", "{csv}");
    assert_eq!(find("CSV output file name")[1], "r,1.csv", "{csv}");
    // Every other preamble line is the text report's, byte for byte.
    let quoted = [
        "\tTarget[0] Q[0],",
        "\t\tTarget directory,",
        "CSV output file name,",
    ];
    let head: Vec<&str> = csv.lines().take_while(|l| !l.is_empty()).collect();
    let text_head: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(head.len(), text_head.len(), "{csv}\n{text}");
    for (c, t) in head.iter().zip(&text_head) {
        if !quoted.iter().any(|q| c.starts_with(q)) {
            assert_eq!(c, t);
        }
    }
    // The table: header, units, COMBINED, ending time, as before.
    let table: Vec<&str> = csv.lines().skip(head.len() + 1).collect();
    assert_eq!(
        table[0],
        "What,Pass,Target,Queue,Bytes_Xfered,Ops,Elapsed,Bandwidth,IOPS,Latency,Pct_CPU,Op_Type,Xfer_Size"
    );
    assert!(table[1].starts_with("UNITS>>,Number,"), "{csv}");
    assert!(table[2].starts_with("COMBINED,1,1,1,32768,8,"), "{csv}");
    assert!(table[3].starts_with("Ending time for this run, "), "{csv}");
    assert_eq!(table.len(), 4, "{csv}");
}

#[test]
fn mdtest_csv_under_a_directory_with_a_comma_keeps_its_layout() {
    let s = Scratch::new("formats-mdtest");
    let dir = s.path("a,b");
    let out = s.path("m,1.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["mdtest", "-n", "4", "-i", "2", "-d"])
        .arg(&dir)
        .arg("--csv")
        .arg(&out)
        .env("CI", "1")
        .output()
        .unwrap();
    ok(&o);
    let rec = records(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(
        rec[0].join(","),
        "tasks,iteration,phase,items,elapsed_s,rate_ops_per_s,stonewall_items,stonewall_elapsed_s,\
stonewall_rate_ops_per_s,latency_mean_ns,latency_p50_ns,latency_p90_ns,latency_p99_ns,\
latency_p999_ns,latency_max_ns"
    );
    assert!(
        rec.len() > 2 && rec.iter().all(|r| r.len() == 15),
        "{rec:?}"
    );
    assert!(
        rec[1..]
            .iter()
            .any(|r| r[2] == "file_create" && r[3] == "4"),
        "{rec:?}"
    );
}

#[test]
fn ost_survey_csv_quotes_a_target_path_with_a_comma() {
    let s = Scratch::new("formats-ost");
    for d in ["a,b", "c"] {
        std::fs::create_dir(s.path(d)).unwrap();
    }
    let (ab, c, out) = (s.path("a,b"), s.path("c"), s.path("ost.csv"));
    let o = survey(
        &[
            "ost",
            "-s",
            "1",
            ab.to_str().unwrap(),
            c.to_str().unwrap(),
            "--csv",
            out.to_str().unwrap(),
            "--rslt",
            s.path("rslt").to_str().unwrap(),
        ],
        &[],
    );
    ok(&o);
    let text = std::fs::read_to_string(&out).unwrap();
    let rec = records(&text);
    assert_eq!(
        text.lines().next().unwrap(),
        "index,path,read_mb_per_s,write_mb_per_s,read_s,write_s,outlier,error"
    );
    assert_eq!(rec.len(), 3, "{text}");
    assert_eq!(
        (rec[1][0].as_str(), rec[1][1].as_str()),
        ("0", ab.to_str().unwrap())
    );
    assert_eq!(
        (rec[2][0].as_str(), rec[2][1].as_str()),
        ("1", c.to_str().unwrap())
    );
    assert!(rec.iter().all(|r| r.len() == 8), "{text}");
    // The plain path is written as it was, unquoted.
    assert!(text
        .lines()
        .nth(2)
        .unwrap()
        .starts_with(&format!("1,{},", c.display())));
}
