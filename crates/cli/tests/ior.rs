//! `iolab ior` as a user runs it: IOR's examples with threads and under
//! mpirun, IOR's report and summary files (compared with what IOR 4.1,
//! built from hpc/ior 5fcf0ba, printed for the same options here), true
//! figures (bytes moved = the files' sizes), checks that find corruption
//! and name its offset, refusals before anything is made, scripts, S3
//! (one object per transfer), and a stopped run that cleans up.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{stderr, stdout, tree, Scratch, SmallFs};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `iolab ior` with `line` split on spaces, `DIR` standing for `dir`.
fn ior(dir: &Path, line: &str) -> Output {
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| w.replace("DIR", &dir.display().to_string()))
        .collect();
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("ior")
        .args(&words)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// The results table's rows (write and read lines under `Results:`).
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .skip_while(|l| !l.starts_with("------    ---------"))
        .skip(1)
        .take_while(|l| {
            l.starts_with("write ")
                || l.starts_with("read ")
                || l.starts_with("WARNING")
                || l.starts_with("stonewalling")
        })
        .filter(|l| l.starts_with("write ") || l.starts_with("read "))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// The summary table's rows.
fn summary_rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .skip_while(|l| !l.starts_with("Operation "))
        .skip(1)
        .take_while(|l| l.starts_with("write ") || l.starts_with("read "))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// What IOR 4.1 printed for `mpirun -n 2 ior -a POSIX -b 1m -t 256k -s 2
/// -F -C -e -w -r -i 2` on this machine, line by line up to the first
/// `: ` (the values vary).
const IOR_TEXT_KEYS: &[&str] = &[
    "Began",
    "Command line",
    "Machine",
    "TestID",
    "StartTime",
    "Path",
    "FS",
    "Options",
    "api",
    "apiVersion",
    "test filename",
    "access",
    "type",
    "segments",
    "ordering in a file",
    "ordering inter file",
    "task offset",
    "nodes",
    "tasks",
    "clients per node",
    "memoryBuffer",
    "dataAccess",
    "GPUDirect",
    "repetitions",
    "xfersize",
    "blocksize",
    "aggregate filesize",
    "Results",
    "Summary of all tests",
    "Finished",
];
/// IOR 4.1's table headers, verbatim.
const IOR_RESULTS_HEADER: &str = "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter";
const IOR_SUMMARY_HEADER: &str = "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum";

/// The issue's command line: IOR's header, `Options:`, a write and a
/// read row per iteration, the summary, `Finished`; the keys in IOR's
/// order and the headers byte for byte.
#[test]
fn the_report_has_ior_s_lines_columns_and_rows() {
    let s = Scratch::new("ior-report");
    let o = ior(
        &s.root,
        "-a POSIX -b 1m -t 256k -s 2 -F -C -e -w -r -i 2 -o DIR/testfile --tasks 2",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("IOR-iolab-"), "{out}");
    assert!(out
        .lines()
        .next()
        .unwrap()
        .ends_with(": MPI Coordinated Test of Parallel I/O"));
    let keys: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim_end()))
        .filter(|k| !k.is_empty() && !k.starts_with("write") && !k.starts_with("read"))
        .collect();
    assert_eq!(keys, IOR_TEXT_KEYS, "{out}");
    assert!(out.contains(&format!("\n{IOR_RESULTS_HEADER}\n")), "{out}");
    assert!(
        out.contains(&format!("\nSummary of all tests:\n{IOR_SUMMARY_HEADER}\n")),
        "{out}"
    );
    let r = rows(&out);
    assert_eq!(
        r.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
        ["write", "read", "write", "read"]
    );
    assert!(r.iter().all(|r| r.len() == 11), "{r:?}");
    assert_eq!(
        (r[2][10].as_str(), r[0][4].as_str(), r[0][5].as_str()),
        ("1", "1024.00", "256.00")
    );
    let sum = summary_rows(&out);
    assert_eq!(sum.len(), 2);
    assert!(
        sum.iter()
            .all(|r| r.len() == IOR_SUMMARY_HEADER.split_whitespace().count()),
        "{sum:?}"
    );
    // #Tasks 2, reps 2, fPP 1, reord 1, segcnt 2, aggs 4 MiB, API POSIX.
    assert_eq!(
        [
            &sum[0][13],
            &sum[0][15],
            &sum[0][16],
            &sum[0][17],
            &sum[0][21],
            &sum[0][24],
            &sum[0][25]
        ],
        ["2", "2", "1", "1", "2", "4.0", "POSIX"]
    );
    assert!(
        out.ends_with('\n')
            && out
                .lines()
                .last()
                .unwrap()
                .starts_with("Finished            : ")
    );
    assert!(
        tree(&s.root).is_empty(),
        "the files are removed: {:?}",
        tree(&s.root)
    );
}

/// IOR 4.1's JSON summary: its keys, at each level, as IOR wrote them
/// for the same options.
#[test]
fn the_json_summary_has_ior_s_keys() {
    let s = Scratch::new("ior-json");
    let o = ior(&s.root, "-b 1m -t 256k -s 2 -w -r -i 2 -o DIR/tf -O summaryFormat=JSON -O summaryFile=DIR/s.json --tasks 2");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        format!("Writing output to {}", s.path("s.json").display())
    );
    let d: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("s.json")).unwrap()).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let sorted = |v: &[&str]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(
        keys(&d),
        sorted(&[
            "Version",
            "Began",
            "Command line",
            "Machine",
            "tests",
            "summary",
            "Finished"
        ])
    );
    let t = &d["tests"][0];
    assert_eq!(
        keys(t),
        sorted(&[
            "TestID",
            "StartTime",
            "Path",
            "Capacity",
            "Used Capacity",
            "Inodes",
            "Used Inodes",
            "Parameters",
            "Options",
            "Results"
        ])
    );
    assert_eq!(keys(&t["Parameters"]).len(), 43, "IOR's 43 parameters");
    // IOR's GetPlatformName: the node name without trailing digits, then
    // the system's name.
    let platform = t["Parameters"]["platform"].as_str().unwrap();
    let host = String::from_utf8(
        std::process::Command::new("uname")
            .arg("-n")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let host = host.trim().trim_end_matches(|c: char| c.is_ascii_digit());
    assert_eq!(platform, format!("{host}(Linux)"));
    assert_eq!(
        keys(&t["Results"][0]),
        sorted(&[
            "access",
            "bwMiB",
            "blockKiB",
            "xferKiB",
            "iops",
            "latency",
            "openTime",
            "wrRdTime",
            "closeTime",
            "totalTime"
        ])
    );
    assert_eq!(t["Results"].as_array().unwrap().len(), 4);
    assert_eq!(
        keys(&d["summary"][0]),
        sorted(&[
            "operation",
            "API",
            "TestID",
            "ReferenceNumber",
            "segmentCount",
            "blockSize",
            "transferSize",
            "numTasks",
            "tasksPerNode",
            "repetitions",
            "filePerProc",
            "reorderTasks",
            "taskPerNodeOffset",
            "reorderTasksRandom",
            "reorderTasksRandomSeed",
            "bwMaxMIB",
            "bwMinMIB",
            "bwMeanMIB",
            "bwStdMIB",
            "OPsMax",
            "OPsMin",
            "OPsMean",
            "OPsSD",
            "MeanTime",
            "xsizeMiB"
        ])
    );
    assert_eq!(d["summary"][1]["operation"], "read");
    assert_eq!(d["summary"][0]["xsizeMiB"], 4.0);
}

/// IOR 4.1's CSV: its header and one row per access and iteration.
#[test]
fn the_csv_summary_is_ior_s() {
    let s = Scratch::new("ior-csv");
    let o = ior(
        &s.root,
        "-b 64k -t 16k -w -r -i 3 -o DIR/f -O summaryFormat=CSV --tasks 2",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter");
    assert_eq!(lines.len(), 7, "{out}");
    assert!(
        lines[6].starts_with("read,") && lines[6].ends_with(",2,2"),
        "{out}"
    );
}

/// Bytes moved equal the files' sizes, in the report and in --json,
/// and --csv holds a row per access.
#[test]
fn bytes_moved_equal_the_files_sizes() {
    let s = Scratch::new("ior-bytes");
    let o = ior(
        &s.root,
        "-F -u -k -b 96k -t 32k -s 3 -w -r -R -o DIR/f --tasks 3 --json DIR/r.json --csv DIR/r.csv",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut on_disk = 0;
    for t in 0..3 {
        let f = s.path(&format!("{t}/f.{t:08}"));
        on_disk += std::fs::metadata(&f).unwrap().len();
    }
    assert_eq!(on_disk, 3 * 3 * 96 * 1024);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("r.json")).unwrap()).unwrap();
    assert_eq!(doc["schema"], "iolab.ior/1");
    let w = &doc["payload"]["tests"][0]["iterations"][0]["write"];
    assert_eq!(
        (w["bytes"].as_u64(), w["file_bytes"].as_u64()),
        (Some(on_disk), Some(on_disk))
    );
    let r = &doc["payload"]["tests"][0]["iterations"][0]["read"];
    assert_eq!(
        (r["bytes"].as_u64(), r["errors"].as_u64()),
        (Some(on_disk), Some(0))
    );
    assert!(doc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["phase"] == "write" && f["metric"] == "bw"));
    let csv = std::fs::read_to_string(s.path("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// -R finds a byte changed on storage and names its file and offset
/// (exit 1); the files are left for a look with -k, as IOR's -K would.
#[test]
fn checks_find_corruption_and_name_its_offset() {
    let s = Scratch::new("ior-corrupt");
    for packet in ["", "-l o", "-l t", "-l i", "-l r"] {
        let f = s.path("c");
        let o = ior(
            &s.root,
            &format!("-w -k -G 77 {packet} -b 256k -t 64k -s 2 -o DIR/c --tasks 2"),
        );
        assert!(o.status.success(), "{packet}: {}", stderr(&o));
        let clean = ior(
            &s.root,
            &format!("-r -R -k -G 77 {packet} -b 256k -t 64k -s 2 -o DIR/c --tasks 2"),
        );
        assert!(clean.status.success(), "{packet}: {}", stderr(&clean));
        let mut data = std::fs::read(&f).unwrap();
        data[300_000] ^= 0x10;
        std::fs::write(&f, &data).unwrap();
        let o = ior(
            &s.root,
            &format!("-r -R -G 77 {packet} -b 256k -t 64k -s 2 -o DIR/c --tasks 2"),
        );
        assert_eq!(o.status.code(), Some(1), "{packet}: {}", stdout(&o));
        let msg = format!("offset 300000 of {}", f.display());
        assert!(stderr(&o).contains(&msg), "{packet}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("WARNING: incorrect data on read: 1 transfers differ"),
            "{}",
            stdout(&o)
        );
        std::fs::remove_file(&f).unwrap();
    }
    // Another run's signature: every transfer differs.
    let o = ior(&s.root, "-w -k -G 5 -b 64k -t 16k -o DIR/g");
    assert!(o.status.success());
    let o = ior(&s.root, "-r -R -G 6 -b 64k -t 16k -o DIR/g");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("4 transfers differ"), "{}", stderr(&o));
}

/// Bad usage is exit 2 naming the option, before anything is made.
#[test]
fn bad_usage_is_refused_by_name_before_anything_is_made() {
    let s = Scratch::new("ior-usage");
    std::fs::create_dir(s.path("ro")).unwrap();
    for (line, needle) in [
        ("-q", "-q"),
        ("--bogus", "--bogus"),
        ("-a HDF5", "HDF5"),
        ("-a MPIIO", "MPIIO"),
        ("-c", "MPI-IO"),
        ("-y", "dual mount"),
        ("--dryRun", "dryRun"),
        ("-O bogus=1", "bogus"),
        ("-O summaryFormat=XML", "summaryFormat"),
        ("-b 100k -t 64k", "multiple of the transfer size"),
        ("-O stoneWallingWearOut=1", "-D"),
        ("--posix.rangelocks", "rangelocks"),
        ("-f DIR/missing.ior", "missing.ior"),
        ("-O summaryFile=DIR/no/such/dir/s", "summaryFile"),
        ("--json DIR/no/such/r.json", "--json"),
        ("-a MMAP --posix.odirect", "mapping"),
        ("-i 0", "-i"),
        ("-M 1024t", "-M 1125899906842624"),
        ("-O memoryPerTask=1024t", "memoryPerTask"),
    ] {
        let o = ior(&s.root, &format!("{line} -o DIR/f --tasks 2"));
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stdout(&o));
        assert!(stderr(&o).contains(needle), "{line}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{line}: {}", stdout(&o));
        assert_eq!(tree(&s.root), ["ro/"], "{line}");
    }
}

/// A file the run did not make is never written over or removed: it is
/// refused (exit 2), unless -E asks to write over it.
#[test]
fn an_existing_file_is_refused_unless_e() {
    let s = Scratch::new("ior-existing");
    std::fs::write(s.path("f"), b"someone's").unwrap();
    let o = ior(&s.root, "-w -r -b 64k -t 16k -o DIR/f");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-E"), "{}", stderr(&o));
    assert_eq!(std::fs::read(s.path("f")).unwrap(), b"someone's");
    let o = ior(&s.root, "-w -r -E -k -b 64k -t 16k -o DIR/f");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(s.path("f")).unwrap().len(), 65536);
    // Without -k too: -E writes over the file, and it stays, not made
    // by the run (IOR removes it); the note says so.
    let o = ior(&s.root, "-w -r -E -i 2 -b 64k -t 16k -o DIR/f");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(s.path("f")).unwrap().len(), 65536);
    // IOR's way: a WARNING line in the report, once for both iterations.
    let warning = "WARNING: kept ";
    assert_eq!(stdout(&o).matches(warning).count(), 1, "{}", stdout(&o));
    // A read-only test reads what is there and leaves it.
    let o = ior(&s.root, "-r -b 64k -t 16k -o DIR/f");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.path("f").exists());
}

/// -E writes over a file's first bytes and keeps the rest, as IOR's
/// O_CREAT|O_RDWR open does (and its MMAP too, here: grown, never cut);
/// the report says the file is larger than the bytes moved.
#[test]
fn e_keeps_what_lies_past_the_test() {
    let s = Scratch::new("ior-existing-kept");
    let old: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + 3) as u8).collect();
    for api in ["POSIX", "MMAP"] {
        std::fs::write(s.path("f"), &old).unwrap();
        let line = format!("-a {api} -w -E -k -t 4k -b 16k --tasks 2 -o DIR/f");
        let o = ior(&s.root, &line);
        assert!(o.status.success(), "{api}: {}", stderr(&o));
        let now = std::fs::read(s.path("f")).unwrap();
        assert_eq!(now.len(), old.len(), "{api}: the file was cut");
        assert_ne!(now[..32768], old[..32768], "{api}: nothing written");
        assert_eq!(now[32768..], old[32768..], "{api}: data past the test");
        let out = stdout(&o);
        assert!(
            out.contains("Stat() of aggregate file size      = 1048576"),
            "{out}"
        );
        assert!(
            out.contains("Using actual aggregate bytes moved = 32768"),
            "{out}"
        );
    }
}

/// -N 3 of 4 tasks: the node figures are the whole run's, as IOR takes
/// them from MPI_COMM_WORLD: 4 clients per node, so -C moves each reader
/// by 4 % 3 tasks (IOR's rankOffset), not by the 3 of the -N subset.
#[test]
fn n_below_the_tasks_keeps_the_runs_clients_per_node() {
    let s = Scratch::new("ior-n-subset");
    let o = ior(
        &s.root,
        "-F -C -N 3 -w -r -k -b 64k -t 16k --tasks 4 -o DIR/f",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("tasks               : 3\n"), "{out}");
    assert!(out.contains("clients per node    : 4\n"), "{out}");
    for row in summary_rows(&out) {
        assert_eq!(
            (&row[13][..], &row[14][..]),
            ("3", "4"),
            "#Tasks tPN: {row:?}"
        );
    }
    assert_eq!(tree(&s.root), ["f.00000000", "f.00000001", "f.00000002"]);
}

/// A refusal before anything runs: exit 2, its needle on stderr,
/// nothing printed on stdout, and the scratch directory as `before`.
fn refused(s: &Scratch, line: &str, needle: &str, before: &[&str]) {
    let o = ior(&s.root, line);
    assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
    assert!(stderr(&o).contains(needle), "{line}: {}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{line}: {}", stdout(&o));
    assert_eq!(tree(&s.root), before, "{line}");
}

/// A symbolic link at a test file's name, dangling or not, -E or not,
/// is refused and left as it is: iolab never writes, reads or removes
/// through one.
#[test]
fn a_link_at_a_test_file_s_name_is_refused() {
    let s = Scratch::new("ior-link");
    std::os::unix::fs::symlink(s.path("outside"), s.path("dangling")).unwrap();
    std::os::unix::fs::symlink("nowhere", s.path("dang.00000001")).unwrap();
    std::fs::write(s.path("victim"), b"someone's").unwrap();
    std::os::unix::fs::symlink(s.path("victim"), s.path("tf")).unwrap();
    let all = ["dang.00000001", "dangling", "tf", "victim"];
    let link = "a symbolic link";
    refused(&s, "-w -b 1m -t 256k -o DIR/dangling", link, &all);
    refused(&s, "-w -F -b 1m -t 256k -o DIR/dang --tasks 2", link, &all);
    refused(&s, "-w -E -b 1m -t 256k -o DIR/tf", link, &all);
    refused(&s, "-w -E -b 1m -t 256k -o DIR/dangling", link, &all);
    refused(&s, "-r -b 1m -t 256k -o DIR/tf", link, &all);
    assert_eq!(std::fs::read(s.path("victim")).unwrap(), b"someone's");
    assert_eq!(
        std::fs::read_link(s.path("dangling")).unwrap(),
        s.path("outside")
    );
}

/// A test file's directory that does not exist is refused before the
/// first test runs, in any test of a script; a -u directory that is a
/// link is never followed.
#[test]
fn a_missing_directory_or_a_linked_unique_directory_is_refused() {
    let s = Scratch::new("ior-nodir");
    refused(
        &s,
        "-w -b 1m -t 256k -o DIR/nodir/f",
        "nodir does not exist",
        &[],
    );
    std::fs::write(
        s.path("s.ior"),
        format!(
            "IOR START\n  testFile={0}/a\n  blockSize=1m\n  transferSize=256k\nRUN\n  testFile={0}/nodir/b\nRUN\nIOR STOP\n",
            s.root.display()
        ),
    )
    .unwrap();
    refused(&s, "-f DIR/s.ior -w -k", "test 1: -o ", &["s.ior"]);
    std::fs::create_dir_all(s.path("u")).unwrap();
    std::fs::create_dir(s.path("elsewhere")).unwrap();
    std::os::unix::fs::symlink(s.path("elsewhere"), s.path("u/0")).unwrap();
    refused(
        &s,
        "-w -F -u -k -b 1m -t 256k --tasks 2 -o DIR/u/tf",
        "-u: ",
        &["elsewhere/", "s.ior", "u/", "u/0"],
    );
}

/// Two quick Ctrl-Cs: the second ends the process at once (exit 130),
/// and what the run may have left is named on stderr. The slow
/// transfers (2 s apart) keep the first one's cleanup from finishing
/// before the second comes.
#[test]
fn a_second_ctrl_c_names_what_may_be_left() {
    let s = Scratch::new("ior-stop2");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["ior", "-F", "-w", "-O", "interIODelay=2000000"])
        .args(["-b", "16m", "-t", "4k", "--tasks", "2", "-o"])
        .arg(s.path("f"))
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if s.path("f.00000001").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    for _ in 0..2 {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    let left = tree(&s.root);
    let err = stderr(&o);
    for f in &left {
        assert!(err.contains(&s.path(f).display().to_string()), "{f}: {err}");
    }
}

/// IOR's -f script: each RUN is a test, starting from the one before and
/// from the command line's options.
#[test]
fn a_script_runs_each_test() {
    let s = Scratch::new("ior-script");
    std::fs::write(
        s.path("t.ior"),
        format!(
            "# two tests\nIOR START\n  testFile = {}/sf\n  blockSize=64k, transferSize=16k\nRUN\n  segmentCount=2 # more\n  filePerProc=1\nRUN\nIOR STOP\n",
            s.root.display()
        ),
    )
    .unwrap();
    let o = ior(&s.root, "-f DIR/t.ior -w -r --tasks 2");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("TestID              : ").count(), 2);
    let sum = summary_rows(&out);
    assert_eq!(sum.len(), 4);
    // Test# and segcnt of the second test's rows.
    assert_eq!(
        (
            sum[2][12].as_str(),
            sum[2][21].as_str(),
            sum[2][16].as_str()
        ),
        ("1", "2", "1")
    );
    std::fs::write(s.path("bad.ior"), "IOR START\nRUN\nbogus=1\nIOR STOP\n").unwrap();
    let o = ior(&s.root, "-f DIR/bad.ior");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 3") && stderr(&o).contains("bogus"),
        "{}",
        stderr(&o)
    );
}

/// The stonewall: a write stopped at the deadline, its count in the
/// status file, the read of exactly that count (IOR's io500 way).
#[test]
fn the_stonewall_status_file_carries_the_write_s_count() {
    let s = Scratch::new("ior-wall");
    let o = ior(&s.root, "-w -k -G 1 -D 1 -O stoneWallingWearOut=1 -O stoneWallingStatusFile=DIR/sw -O interIODelay=2000 -b 64m -t 4k -o DIR/f --tasks 2");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let n: u64 = std::fs::read_to_string(s.path("sw"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(n > 0 && n < 16384, "{n}");
    assert!(out.contains("stonewalling pairs accessed min: "), "{out}");
    assert!(out.contains(&format!("max: {n} --")), "{out}");
    // The write's bytes: both tasks levelled to n transfers.
    assert_eq!(std::fs::metadata(s.path("f")).unwrap().len() % 4096, 0);
    let sum = summary_rows(&out);
    assert_ne!(sum[0][10], "NA", "the stonewall columns: {sum:?}");
    let o = ior(&s.root, "-r -R -G 1 -k -O stoneWallingStatusFile=DIR/sw -b 64m -t 4k -o DIR/f --tasks 2 --json DIR/r.json");
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("r.json")).unwrap()).unwrap();
    let r = &doc["payload"]["tests"][0]["iterations"][0]["read"];
    assert_eq!(r["bytes"].as_u64(), Some(2 * n * 4096));
    assert_eq!(r["errors"].as_u64(), Some(0));
}

/// A transfer cut short, by the end of the file or a full disk, counts
/// the bytes it moved: bytes moved equal what storage holds. A write
/// that failed leaves no stonewall figures and no status file: its
/// tasks never reached one count.
#[test]
fn a_short_transfer_counts_what_it_moved_and_a_failed_write_no_wall() {
    let s = Scratch::new("ior-short");
    std::fs::write(s.path("short"), vec![7u8; 300_000]).unwrap();
    let o = ior(
        &s.root,
        "-b 256k -t 64k -s 2 -r -k -E -o DIR/short --json DIR/r.json",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("r.json")).unwrap()).unwrap();
    let r = &doc["payload"]["tests"][0]["iterations"][0]["read"];
    assert_eq!(r["bytes"].as_u64(), Some(300_000), "{r}");
    let small = SmallFs::new(&s, "small", "1m");
    if !small.mounted {
        return;
    }
    let o = ior(
        &s.root,
        "-F -k -w -t 47008 -b 47008 -s 100 -D 30 -O stoneWallingWearOut=1 -O stoneWallingStatusFile=DIR/sw -o DIR/small/f --tasks 2 --json DIR/w.json",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let on_disk: u64 = (0..2)
        .map(|t| std::fs::metadata(small.path(&format!("f.{t:08}"))).map_or(0, |m| m.len()))
        .sum();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("w.json")).unwrap()).unwrap();
    let w = &doc["payload"]["tests"][0]["iterations"][0]["write"];
    assert!(on_disk > 0 && !on_disk.is_multiple_of(47008), "{on_disk}");
    assert_eq!(w["bytes"].as_u64(), Some(on_disk), "{w}");
    assert!(w["stonewall"].is_null(), "{w}");
    assert!(
        !s.path("sw").exists(),
        "a count no task reached was recorded"
    );
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(said.contains("stonewall status file"), "{said}");
    assert!(!said.contains("stonewalling pairs accessed"), "{said}");
}

/// A write the full disk cut short is no measurement, as one Ctrl-C
/// cut short is not: its row says it failed, no summary counts it (not
/// the text's, not IOR's summary files, not the per-task CSV), `--csv`
/// marks it failed, and the outcome keeps the OS error (28, ENOSPC).
/// It was a plain `write 214.57 ...` row, a summary, a `...,0,false`
/// CSV row and `"errno": null`.
#[test]
fn a_failed_access_is_no_measurement_and_keeps_its_errno() {
    let s = Scratch::new("ior-enospc");
    let small = SmallFs::new(&s, "small", "2m");
    if !small.mounted {
        return;
    }
    let base = "-w -t 64k -b 4m -F -o DIR/small/f --tasks 2";
    let o = ior(
        &s.root,
        &format!("{base} --csv DIR/c.csv --json DIR/r.json"),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("write     failed in iteration 0: not a measurement"),
        "{out}"
    );
    assert!(
        rows(&out).iter().all(|r| r[1].parse::<f64>().is_err()),
        "a row with figures: {out}"
    );
    assert!(!out.contains("Summary of all tests:"), "{out}");
    // IOR's summary file takes the report in place of stdout.
    let o = ior(
        &s.root,
        &format!("{base} -O summaryFormat=JSON -O summaryFile=DIR/sf.json -O saveRankPerformanceDetailsCSV=DIR/rk.csv"),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let read = |f: &str| std::fs::read_to_string(s.path(f)).unwrap();
    let summary: Value = serde_json::from_str(&read("sf.json")).unwrap();
    let text = summary.to_string();
    assert!(
        !text.contains("bwMaxMIB") && !text.contains("OPsMax"),
        "{text}"
    );
    assert_eq!(
        summary["tests"][0]["Results"],
        serde_json::json!([]),
        "{text}"
    );
    assert_eq!(read("rk.csv").lines().count(), 1, "{}", read("rk.csv"));
    let csv = read("c.csv");
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with(",errors,stopped,failed"));
    assert!(
        csv.lines().last().unwrap().ends_with(",false,true"),
        "{csv}"
    );
    let doc: Value = serde_json::from_str(&read("r.json")).unwrap();
    assert_eq!(doc["outcome"]["errno"], 28, "{}", doc["outcome"]);
    let t = &doc["payload"]["tests"][0];
    assert_eq!(t["iterations"][0]["write"]["failed"], true);
    assert_eq!(t["summary"], serde_json::json!([]));
    assert!(
        t["notes"]
            .to_string()
            .contains("no summary: iteration 0's write failed"),
        "{}",
        t["notes"]
    );
}

/// A directive's value ends at a blank, as IOR reads it; the text after
/// it (a second directive, the rest of a file name) is refused by name
/// (exit 2, nothing made), where it became part of the file's name.
#[test]
fn text_after_a_directive_value_is_refused_not_made_part_of_it() {
    let s = Scratch::new("ior-blank");
    std::fs::create_dir(s.path("a")).unwrap();
    std::fs::write(
        s.path("s.ior"),
        format!(
            "IOR START\n testFile={}/s1 blockSize=64k\n transferSize=16k\nRUN\nIOR STOP\n",
            s.path("a").display()
        ),
    )
    .unwrap();
    let o = ior(&s.root, "-f DIR/s.ior -w -k");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("'blockSize=64k' follows"),
        "{}",
        stderr(&o)
    );
    let a = s.path("a");
    let spaced = format!("testFile={}/s2 x", a.display());
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["ior", "-w", "-k", "-t", "16k", "-O", &spaced])
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("'x' follows"), "{}", stderr(&o));
    assert!(tree(&a).is_empty(), "{:?}", tree(&a));
}

/// MMAP and DUMMY (the null backend) run IOR's pattern too.
#[test]
fn mmap_and_dummy_apis() {
    let s = Scratch::new("ior-apis");
    let o = ior(
        &s.root,
        "-a MMAP -w -r -R -b 256k -t 64k -s 2 -o DIR/m --tasks 2 --json DIR/m.json",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("m.json")).unwrap()).unwrap();
    let w = &doc["payload"]["tests"][0]["iterations"][0]["write"];
    assert_eq!(
        (w["bytes"].as_u64(), w["file_bytes"].as_u64()),
        (Some(1 << 20), Some(1 << 20))
    );
    let o = ior(&s.root, "-a DUMMY -w -r -b 1m -t 64k -o DIR/d --tasks 2");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(" DUMMY "));
    assert_eq!(tree(&s.root), ["m.json"]);
}

/// Ctrl-C: the run stops, removes what it made, and exits 130.
#[test]
fn an_interrupted_run_removes_its_files() {
    let s = Scratch::new("ior-stop");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "ior",
            "-F",
            "-w",
            "-O",
            "interIODelay=2000",
            "-b",
            "64m",
            "-t",
            "4k",
            "-o",
        ])
        .arg(s.path("f"))
        .args(["--tasks", "2"])
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if s.path("f.00000001").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut status = None;
    for _ in 0..300 {
        if let Some(st) = child.try_wait().unwrap() {
            status = Some(st);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("the run did not stop");
    };
    assert_eq!(status.code(), Some(130));
    assert!(tree(&s.root).is_empty(), "{:?}", tree(&s.root));
}

/// An access Ctrl-C cuts short is no measurement: its row says it was
/// stopped (it read `write 0.000000 ...`), and the interrupted test has
/// no summary and states no figures, as an interrupted mdtest has none
/// (the stopped iteration was counted as 0 MiB/s in Min and Mean).
#[test]
fn a_stopped_access_is_no_measurement_and_an_interrupted_test_no_summary() {
    let s = Scratch::new("ior-stopped-row");
    let json = s.path("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["ior", "-F", "-w", "-i", "2", "-O", "interIODelay=2000"])
        .args(["-b", "64m", "-t", "4k", "--tasks", "2", "-o"])
        .arg(s.path("f"))
        .arg("--json")
        .arg(&json)
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its files are open: the transfers (2 ms apart, 32 s in all) run.
    for _ in 0..600 {
        if s.path("f.00000001").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let out = stdout(&o);
    let row = out.lines().find(|l| l.starts_with("write "));
    assert_eq!(
        row,
        Some("write     stopped by the interrupt in iteration 0: not a measurement"),
        "{out}"
    );
    assert!(!out.contains("Summary of all tests"), "{out}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["outcome"]["status"], "interrupted");
    assert!(
        doc.get("figures")
            .is_none_or(|f| f.as_array().is_some_and(Vec::is_empty)),
        "{}",
        doc["figures"]
    );
    let t = &doc["payload"]["tests"][0];
    assert_eq!(t["summary"], serde_json::json!([]));
    assert_eq!(t["iterations"][0]["write"]["interrupted"], true);
    let notes = t["notes"].to_string();
    assert!(
        notes.contains("no summary: iteration 0's write was stopped"),
        "{notes}"
    );
    assert!(tree(&s.root) == ["r.json"], "{:?}", tree(&s.root));
}

/// Ctrl-C that lands after the last transfer, here in `-e`'s fsync of
/// the last (only) write, is an interruption all the same (exit 130,
/// the write's figures whole but no summary), as the "stopping" line on
/// stderr says: it ended completed, exit 0. The signal goes to the very
/// thread in fsync(2), on a file system whose fsync of 128 MiB takes a
/// while (an ext4 on a loop device).
#[test]
fn a_stop_after_the_last_transfer_is_an_interruption() {
    let name = "a_stop_after_the_last_transfer_is_an_interruption";
    let s = Scratch::new("ior-late-stop");
    let fs = match common::loopfs::LoopFs::ext4(&s, "fs", 400, &[]) {
        Ok(f) => f,
        Err(why) => return common::skip_or_fail(name, &why),
    };
    let file = fs.at.join("f");
    for _ in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["ior", "-a", "POSIX", "-w", "-e", "-t", "1m", "-b", "128m"])
            .args(["--tasks", "1", "-o"])
            .arg(&file)
            .env("CI", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let caught = common::signal_in_syscall(&mut child, 74, |f| f == file, libc::SIGINT);
        let o = child.wait_with_output().unwrap();
        if !caught {
            // The fsync was over before it was seen: again.
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            continue;
        }
        assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
        let out = stdout(&o);
        let writes = rows(&out);
        assert_eq!(writes.len(), 1, "{out}");
        assert!(
            writes[0][1].parse::<f64>().is_ok_and(|bw| bw > 0.0),
            "{out}"
        );
        assert!(!out.contains("Summary of all tests"), "{out}");
        assert!(
            out.contains("no summary: the interrupt came after its last transfer"),
            "{out}"
        );
        assert!(!file.exists(), "the run's file is removed");
        return;
    }
    panic!("fsync of the test file was never seen");
}

/// Under mpirun, a rank killed with SIGKILL ends the job; the other
/// rank, killed by mpirun before it can remove its files, said nothing
/// of them. Rank 0 now says where the run's files are as soon as it is
/// stopped.
#[cfg(feature = "mpi")]
#[test]
fn a_rank_killed_under_mpirun_leaves_word_of_the_files() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("ior under mpirun", "mpirun is not installed");
    }
    let s = Scratch::new("ior-mpi-kill");
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    c.args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "ior",
            "-F",
            "-w",
            "-O",
            "interIODelay=2000",
            "-b",
            "64m",
            "-t",
            "4k",
            "-o",
        ])
        .arg(s.path("f"))
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let f = s.path("f").display().to_string();
    let rank1 = || {
        common::pids_of("iolab", &["ior", &f])
            .into_iter()
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == b"OMPI_COMM_WORLD_RANK=1"))
            })
    };
    let mut victim = None;
    for _ in 0..600 {
        if s.path("f.00000001").exists() {
            victim = rank1();
            if victim.is_some() {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let Some(victim) = victim else {
        let _ = child.kill();
        panic!("rank 1 never started writing");
    };
    // SAFETY: kill(2) of a rank this test started.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let mut ended = false;
    for _ in 0..600 {
        if child.try_wait().unwrap().is_some() {
            ended = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if !ended {
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    assert!(ended, "mpirun did not end");
    let said = stderr(&o);
    assert!(
        said.contains("stopping; removing what this run made"),
        "{said}"
    );
    assert!(said.contains(&format!("{f}.00000000")), "{said}");
}

/// -a S3: a shared file is one object per transfer (FILE-OFFSET-LENGTH),
/// read back and checked; without -k nothing is left.
#[test]
fn s3_keeps_a_shared_file_as_one_object_per_transfer() {
    let srv = match iolab_testkit::s3::S3Server::shared() {
        Ok(s) => s,
        Err(e) => return common::skip_or_fail("ior_s3", &e),
    };
    let b = "ior-s3";
    srv.make_bucket(b).unwrap();
    srv.put(b, "outside/keep", b"x").unwrap();
    let before = srv.keys(b).unwrap();
    let run = |extra: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.envs(srv.env())
            .env("CI", "1")
            .args([
                "ior",
                "-a",
                "S3",
                &format!("--s3.bucket={b}"),
                "-w",
                "-r",
                "-R",
                "-G",
                "9",
            ])
            .args([
                "-t",
                "47008",
                "-b",
                "47008",
                "-s",
                "3",
                "-o",
                "/run/file",
                "--tasks",
                "2",
            ])
            .args(extra.split_whitespace())
            .output()
            .unwrap()
    };
    let o = run("-k");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let objects = srv.objects(b, "run/").unwrap();
    let names: Vec<&str> = objects.iter().map(|o| o.0.as_str()).collect();
    let want: Vec<String> = (0..6)
        .map(|i| format!("run/file-{}-47008", i * 47008))
        .collect();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(
        names,
        want_sorted.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert!(objects.iter().all(|o| o.1 == 47008));
    let o = run("-r -R -G 9");
    assert_eq!(
        o.status.code(),
        Some(2),
        "the kept file is not made by this run"
    );
    // A run that writes over them (-E) leaves them: they were there
    // before it, and it says so.
    let o = run("-E");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("WARNING: kept /run/file"),
        "{}",
        stdout(&o)
    );
    // The same objects, the same sizes (written over: their times moved
    // on, by a second when the run crossed one).
    let kept = |o: &[(String, u64, u64)]| {
        o.iter()
            .map(|(n, l, _)| (n.clone(), *l))
            .collect::<Vec<_>>()
    };
    assert_eq!(kept(&srv.objects(b, "run/").unwrap()), kept(&objects));
    for k in &want {
        srv.remove(b, k).unwrap();
    }
    assert_eq!(srv.keys(b).unwrap(), before);
}

/// `mpirun -n 2 iolab ior ... --tasks 2`: 4 tasks, one report, the same
/// files and bytes as 4 threads.
#[cfg(feature = "mpi")]
#[test]
fn mpirun_ranks_times_threads() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("ior_mpirun", "mpirun not installed");
    }
    let s = Scratch::new("ior-mpi");
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "ior",
        ])
        .args("-F -u -k -C -w -r -R -b 128k -t 32k -s 2 --tasks 2 -o".split(' '))
        .arg(s.path("f"))
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.matches("Summary of all tests:").count(),
        1,
        "one process prints: {out}"
    );
    let sum = summary_rows(&out);
    assert_eq!(sum[0][13], "4", "{sum:?}");
    let mpi = tree(&s.root);
    assert_eq!(mpi.len(), 8, "{mpi:?}");
    assert!(mpi.contains(&"3/f.00000003".to_string()));
}

/// `mpirun -n 2 iolab ior -F -E` where rank 1's file name is taken by a
/// directory: rank 1's create fails (EISDIR) and rank 0's does not, yet
/// rank 0's JSON, the one written, has rank 1's operation, path and
/// errno and says it was task 1 (it had op "peer" and a null path).
#[cfg(feature = "mpi")]
#[test]
fn mpirun_rank_1s_failure_reaches_rank_0s_json_whole() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("ior_mpirun_peer", "mpirun not installed");
    }
    let s = Scratch::new("ior-mpi-peer");
    let planted = s.path("f.00000001");
    std::fs::create_dir(&planted).unwrap();
    let j = s.path("o.json");
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .args([env!("CARGO_BIN_EXE_iolab"), "ior"])
        .args("-w -E -F -b 64k -t 64k -o".split(' '))
        .arg(s.path("f"))
        .arg("--json")
        .arg(&j)
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let doc: Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let f = &doc["outcome"];
    assert_eq!(f["status"], "error", "{f}");
    let path = common::assert_task_failure(f, 1, "create", libc::EISDIR);
    assert_eq!(path, planted.display().to_string(), "{f}");
    assert!(planted.is_dir(), "what was there is left alone");
}
