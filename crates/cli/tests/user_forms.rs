//! The command lines administrators bring from XDD, mdtest and the Lustre
//! I/O kit, typed as they type them (issue 18): each test runs the real
//! binary on the user's own form of the command.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, stderr, stdout, Scratch};
use std::path::Path;
use std::process::{Command, Output};

/// `iolab xdd` with `line` split on spaces, run in `dir`.
fn xdd_in(dir: &Path, line: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(line.split_whitespace())
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

fn usage_error(o: &Output, names: &str) {
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(o), stderr(o));
    assert!(stderr(o).contains(names), "{}", stderr(o));
}

/// Block locations of a `-seek save` file (XDD's layout: index, location).
fn saved_locations(file: &Path) -> Vec<u64> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect()
}

/// The COMBINED row of XDD's table, split into its columns.
fn combined(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .find(|l| l.starts_with("COMBINED"))
        .unwrap_or_else(|| panic!("no COMBINED row:\n{}", stdout(o)))
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn xdd_seek_stagger_spaces_requests_as_xdd_does() {
    let s = Scratch::new("forms-stagger");
    std::fs::File::create(s.path("f"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    // A stride larger than the request: stride - reqsize blocks between.
    ok(&xdd_in(
        &s.root,
        "-op read -target f -reqsize 8 -numreqs 4 -seek stagger 32 -seek save a",
    ));
    assert_eq!(saved_locations(&s.path("a.T0.txt")), [0, 32, 64, 96]);
    // No stride: XDD's gap (range - reqsize - n * reqsize) / (n - 1) = 20.
    ok(&xdd_in(
        &s.root,
        "-op read -target f -reqsize 8 -numreqs 4 -seek stagger -seek range 100 -seek save b",
    ));
    assert_eq!(saved_locations(&s.path("b.T0.txt")), [0, 28, 56, 84]);
    // A stride not larger than the request divides the range, as XDD.
    ok(&xdd_in(
        &s.root,
        "-op read -target f -reqsize 8 -numreqs 4 -seek stagger 8 -seek range 100 -seek save c",
    ));
    assert_eq!(saved_locations(&s.path("c.T0.txt")), [0, 28, 56, 84]);
}

#[test]
fn xdd_reading_a_target_that_does_not_exist_is_refused_before_anything() {
    let s = Scratch::new("forms-rwratio");
    let o = xdd_in(
        &s.root,
        "-op write -target new -reqsize 8 -numreqs 4 -rwratio 50 -output out.txt -csvout out.csv",
    );
    usage_error(&o, "-rwratio");
    assert!(stderr(&o).contains("new"), "{}", stderr(&o));
    assert!(
        common::tree(&s.root).is_empty(),
        "{:?}",
        common::tree(&s.root)
    );
    // All writes need nothing to exist.
    ok(&xdd_in(
        &s.root,
        "-op write -target new -reqsize 8 -numreqs 4 -rwratio 0",
    ));
    // Once it exists, the mixed run reads what is there.
    ok(&xdd_in(
        &s.root,
        "-op write -target new -reqsize 8 -numreqs 4 -rwratio 50",
    ));
}

#[test]
fn xdd_an_empty_target_name_is_a_usage_error() {
    let s = Scratch::new("forms-empty-target");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["xdd", "-op", "write", "-target", "", "-numreqs", "4"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    usage_error(&o, "-target");
    assert!(common::tree(&s.root).is_empty());
}

#[test]
fn xdd_csvout_opens_with_the_preamble() {
    let s = Scratch::new("forms-csvout");
    ok(&xdd_in(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 8 -csvout test-run.csv -output test-run.txt",
    ));
    let csv = std::fs::read_to_string(s.path("test-run.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("IOIOIOIOIOIOIOIOIOI "), "{csv}");
    let header = lines
        .iter()
        .position(|l| l.starts_with("What,Pass,"))
        .unwrap();
    for expected in [
        "Output file name, test-run.txt",
        "CSV output file name, test-run.csv",
        "Number of Targets, 1",
    ] {
        assert!(lines[..header].contains(&expected), "{expected}: {csv}");
    }
    assert!(lines[..header]
        .iter()
        .any(|l| l.trim().starts_with("Target[0] Q[0], f")));
    assert!(
        lines[header + 2].starts_with("COMBINED,1,1,1,32768,8,"),
        "{csv}"
    );
}

#[test]
fn xdd_throttle_reports_the_rate_it_held_and_the_ops_it_was_given() {
    let s = Scratch::new("forms-throttle");
    // 4 requests of 1 MiB at 4 MB/s span four whole intervals.
    let o = xdd_in(
        &s.root,
        "-op write -target f -reqsize 1024 -numreqs 4 -throttle bw 4",
    );
    ok(&o);
    let row = combined(&o);
    assert_eq!((row[4].as_str(), row[5].as_str()), ("4194304", "4"));
    assert_eq!(row[7], "4.000", "{}", stdout(&o));
    // 50 ops/s for one second: 50 operations, the one due at 1 s is not
    // issued.
    let o = xdd_in(
        &s.root,
        "-op write -target g -reqsize 1 -throttle ops 50 -timelimit 1",
    );
    ok(&o);
    let row = combined(&o);
    assert_eq!(row[5], "50", "{}", stdout(&o));
    assert_eq!(row[8], "50.000", "{}", stdout(&o));
}

#[test]
fn mdtest_refuses_what_mdtest_refuses_before_anything() {
    let s = Scratch::new("forms-mdtest-refuse");
    let (a, b) = (s.path("a"), s.path("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let two = format!("{}@{}", a.display(), b.display());
    // -N with more than one -d path (this failed mid-run with exit 1).
    let o = common::mdtest(&format!("-u -N 3 -n 5 --tasks 4 -d {two}"));
    usage_error(&o, "-N with several -d paths");
    // -k with -w.
    let o = common::mdtest(&format!("-k -w 10 -n 5 -d {}", a.display()));
    usage_error(&o, "-k with -w");
    assert_eq!(common::tree(&s.root), ["a/", "b/"]);
}

#[test]
fn mdtest_k_leaves_files_mode_0400_and_help_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("forms-mdtest-k");
    let d = s.path("d");
    ok(&common::mdtest(&format!(
        "-k -n 3 -F -C -d {}",
        d.display()
    )));
    let files: Vec<_> = common::tree(&d)
        .into_iter()
        .filter(|p| !p.ends_with('/'))
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
    for f in &files {
        let m = std::fs::metadata(d.join(f)).unwrap();
        assert!(m.file_type().is_file(), "{f}");
        assert_eq!(m.permissions().mode() & 0o7777, 0o400, "{f}");
    }
    // The later phases of the same run work on them: stat, read, remove.
    ok(&common::mdtest(&format!(
        "-k -n 3 -F -T -E -r -d {}",
        d.display()
    )));
    assert!(common::tree(&d).iter().all(|p| p.ends_with('/')));
    let help = stdout(&iolab(&["mdtest", "-h"])) + &stderr(&iolab(&["mdtest", "-h"]));
    assert!(!help.contains("FIFO"), "{help}");
    assert!(help.contains("0400"), "{help}");
}
