//! `iolab mdtest` end to end: the real binary on a real tmpfs.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use std::collections::BTreeSet;

const ROWS: [&str; 10] = [
    "Directory creation:",
    "Directory stat    :",
    "Directory rename  :",
    "Directory removal :",
    "File creation     :",
    "File stat         :",
    "File read         :",
    "File removal      :",
    "Tree creation     :",
    "Tree removal      :",
];

fn assert_complete_table(out: &str) {
    assert!(out.contains("-- started at "), "{out}");
    assert!(out.contains("-- finished at "), "{out}");
    assert!(out.contains("SUMMARY: (of "), "{out}");
    for r in ROWS {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(r))
            .unwrap_or_else(|| panic!("no row {r}\n{out}"));
        let nums: Vec<f64> = line
            .split(':')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(nums.len(), 4, "{line}");
        assert!(nums[0] > 0.0 && nums[0] >= nums[1], "{line}");
    }
}

#[test]
fn seed_000_runs_print_complete_tables_and_leave_nothing() {
    let s = Scratch::new("seed000");
    let d = s.path("z");
    let o = mdtest(&format!("-d {} -n 100 -i 2 --tasks 2", d.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_complete_table(&out);
    assert!(out.contains("SUMMARY: (of 2 iterations)"));
    assert!(out.contains("2 tasks, 200 files/directories"), "{out}");
    assert!(out.contains("was launched with 2 total task(s) on 1 node(s)"));
    assert!(!d.exists(), "the -d directory iolab created is removed");

    let o = mdtest(&format!("-d {} -b 2 -z 3 -I 10 --tasks 2", d.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 tasks, 300 files/directories"),
        "{}",
        stdout(&o)
    );
    assert!(!d.exists());
}

#[test]
fn seed_001_runs_print_complete_tables() {
    let s = Scratch::new("seed001");
    std::fs::create_dir(s.path("bench")).unwrap();
    let d = s.path("bench");
    let o = mdtest(&format!(
        "-d {}/ -b 10 -z 2 -i 1 -I 100 --tasks 2",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_complete_table(&stdout(&o));
    assert!(stdout(&o).contains("2 tasks, 22200 files/directories"));
    // The 8-task line of the wiki page (there 1.9.3 printed 88000; the true count is 80000).
    let o = mdtest(&format!(
        "-z 1 -L -u -n -N 1 -b 10 -d {} -I 1000 -w 3900 -e 3900 --tasks 8",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_complete_table(&stdout(&o));
    assert!(
        stdout(&o).contains("8 tasks, 80000 files/directories"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("-n has no value"), "{}", stderr(&o));
    assert!(d.exists(), "an existing -d directory stays");
    assert_eq!(tree(&d), Vec::<String>::new(), "nothing is left inside it");
}

fn expected_layout(
    tasks: usize,
    per_dir: u64,
    b: u64,
    z: u32,
    unique: bool,
    leaf: bool,
) -> BTreeSet<String> {
    // mdtest's layout, computed independently of the engine: directories
    // numbered breadth-first, items d*I..d*I+I-1 in directory d.
    let dirs: u64 = (0..=z).map(|l| b.pow(l)).sum();
    let first_leaf = dirs - b.pow(z);
    let mut set = BTreeSet::new();
    let trees: Vec<Option<usize>> = if unique {
        (0..tasks).map(Some).collect()
    } else {
        vec![None]
    };
    for owner in trees {
        let base = owner.map_or("mdtest_tree".to_string(), |t| format!("mdtest_tree.{t}"));
        let path_of = |d: u64| {
            let mut chain = vec![d];
            let mut a = d;
            while a > 0 {
                a = (a - 1) / b;
                chain.push(a);
            }
            chain
                .iter()
                .rev()
                .map(|a| format!("{base}.{a}"))
                .collect::<Vec<_>>()
                .join("/")
        };
        for d in 0..dirs {
            set.insert(format!("test-dir.0-0/{}/", path_of(d)));
            if leaf && d < first_leaf {
                continue;
            }
            let tasks_here: Vec<usize> = owner.map_or((0..tasks).collect(), |t| vec![t]);
            for t in tasks_here {
                for m in d * per_dir..(d + 1) * per_dir {
                    set.insert(format!("test-dir.0-0/{}/file.mdtest.{t}.{m}", path_of(d)));
                    set.insert(format!("test-dir.0-0/{}/dir.mdtest.{t}.{m}/", path_of(d)));
                }
            }
        }
    }
    set.insert("test-dir.0-0/".into());
    set
}

#[test]
fn create_only_runs_leave_mdtests_layout_then_remove_runs_clean_up() {
    let s = Scratch::new("layout");
    for (opts, tasks, per_dir, b, z, unique, leaf) in [
        ("-I 2 -z 1 -b 2", 2, 2, 2, 1, false, false),
        ("-I 3 -z 2 -b 2 -u", 3, 3, 2, 2, true, false),
        ("-I 2 -z 2 -b 3 -L -u", 2, 2, 3, 2, true, true),
        ("-n 5", 2, 5, 1, 0, false, false),
    ] {
        let d = s.path("lay");
        std::fs::create_dir(&d).unwrap();
        let o = mdtest(&format!("-C {opts} -d {} --tasks {tasks}", d.display()));
        assert!(o.status.success(), "{opts}: {}", stderr(&o));
        let got: BTreeSet<String> = tree(&d).into_iter().collect();
        assert_eq!(
            got,
            expected_layout(tasks, per_dir, b, z, unique, leaf),
            "{opts}"
        );
        let o = mdtest(&format!("-T {opts} -d {} --tasks {tasks}", d.display()));
        assert!(o.status.success(), "{opts}: {}", stderr(&o));
        assert!(stdout(&o).contains("File stat"), "{}", stdout(&o));
        let o = mdtest(&format!("-r {opts} -d {} --tasks {tasks}", d.display()));
        assert!(o.status.success(), "{opts}: {}", stderr(&o));
        assert!(tree(&d).is_empty(), "{opts}: {:?}", tree(&d));
        std::fs::remove_dir(&d).unwrap();
    }
}

#[test]
fn io500_split_sequence_and_verify_catches_corruption() {
    let s = Scratch::new("io500");
    let d = s.path("easy");
    let sw = s.path("sw");
    let common = format!(
        "-F -P -G 270669 -N 1 -u -L -d {} -n 400 -w 3901 -x {} --tasks 4",
        d.display(),
        sw.display()
    );
    let o = mdtest(&format!("-C -Y -W 1 {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("SUMMARY rate in ops/sec"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("SUMMARY time in seconds"),
        "{}",
        stdout(&o)
    );
    let count: u64 = std::fs::read_to_string(&sw)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(count, 400);
    let o = mdtest(&format!("-T {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = mdtest(&format!("-E -X -e 3901 {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    // Corrupt one byte of one file: the verified read must catch it.
    // With -u -N 1, task 2's files live in task 3's tree, as in mdtest 4.x.
    let victim = d.join("test-dir.0-0/mdtest_tree.3.0/file.mdtest.2.17");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&victim, &bytes).unwrap();
    let o = mdtest(&format!("-E -X -e 3901 {common}"));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("file.mdtest.2.17") && stderr(&o).contains("byte 100"),
        "{}",
        stderr(&o)
    );
    // The failed read run created nothing, so it removed nothing.
    assert!(victim.exists());
    let o = mdtest(&format!("-r {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("test-dir.0-0").exists());
}

#[test]
fn corrupt_stonewall_file_is_an_error_not_a_hang() {
    let s = Scratch::new("swbad");
    let d = s.path("x");
    std::fs::create_dir(&d).unwrap();
    let sw = s.path("sw");
    let o = mdtest(&format!(
        "-C -F -n 10 -W 5 -x {} -d {} --tasks 2",
        sw.display(),
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&sw, "garbage\n").unwrap();
    let o = mdtest(&format!(
        "-T -F -n 10 -x {} -d {} --tasks 2",
        sw.display(),
        d.display()
    ));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("-x") && stderr(&o).contains("corrupt"),
        "{}",
        stderr(&o)
    );
    let o = mdtest(&format!("-r -F -n 10 -d {} --tasks 2", d.display()));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A -x file recording more items per task than this run's plan has is
/// bad usage (exit 2 naming -x and both counts), found before anything
/// runs: it used to panic a task half-way through the phase.
#[test]
fn a_stonewall_count_beyond_the_plan_is_refused_before_anything_runs() {
    let s = Scratch::new("swover");
    let d = s.path("x");
    std::fs::create_dir(&d).unwrap();
    let (sw, dd) = (s.path("sw"), d.display());
    let o = mdtest(&format!("-C -n 5 -x {} -d {dd} --tasks 2", sw.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    let before = tree(&d);
    std::fs::write(s.path("sw2"), "2\ndirectories: 5\n").unwrap();
    for (line, count) in [
        ("-n 3 -F -r -x DIR/sw", "5 files"),
        ("-n 3 -T -x DIR/sw", "5 files"),
        ("-n 3 -E -x DIR/sw2", "5 directories"),
    ] {
        let line = line.replace("DIR", &s.root.display().to_string());
        let o = mdtest(&format!("{line} -d {dd} --tasks 2"));
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("-x ") && e.contains(count) && e.contains(" 3 items"),
            "{line}: {e}"
        );
        assert!(!e.contains("panicked"), "{line}: {e}");
        assert_eq!(tree(&d), before, "{line}");
    }
    let o = mdtest(&format!("-r -n 5 -x {} -d {dd} --tasks 2", sw.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tree(&d).is_empty(), "{:?}", tree(&d));
}

#[test]
fn bad_command_lines_exit_2_and_create_nothing() {
    let s = Scratch::new("bad");
    let d = s.path("never");
    for line in [
        "-n 10 -q",
        "-n abc",
        "-n 10 -S -u",
        "-n 10 -k -w 5",
        "-n 10 -e 100 -w 10",
        "-n 10 -X",
        "-n 10 -i 0",
        "-n 10 -I 3",
        "-n 10 -c -d {d}@{d}2",
        "-n 10 -W 2 -E",
        "stray -n 1",
        "-n 10 -g",
        "",
    ] {
        let line = if line.contains("{d}") {
            line.replace("{d}", &d.display().to_string())
        } else {
            format!("{line} -d {}", d.display())
        };
        let o = mdtest(&line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{line}: no message");
        assert!(!d.exists(), "{line} created {}", d.display());
    }
    let o = mdtest("-n 10 -d /proc/version");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-d"), "{}", stderr(&o));
}

#[test]
fn json_and_csv_match_the_table() {
    let s = Scratch::new("json");
    let d = s.path("j");
    let j = s.path("out.json");
    let c = s.path("out.csv");
    let o = mdtest(&format!(
        "-n 50 -i 3 -d {} --tasks 2 --json {} --csv {}",
        d.display(),
        j.display(),
        c.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(v["schema"], "iolab.mdtest/2");
    let test = &v["payload"]["tests"][0];
    assert_eq!(test["tasks"], 2);
    assert_eq!(test["total_items"], 100);
    assert_eq!(test["iterations"].as_array().unwrap().len(), 3);
    let out = stdout(&o);
    for row in test["summary"].as_array().unwrap() {
        let phase = row["phase"].as_str().unwrap();
        let label = match phase {
            "file_create" => "File creation     :",
            "dir_stat" => "Directory stat    :",
            _ => continue,
        };
        let line = out.lines().find(|l| l.contains(label)).unwrap();
        let mean: f64 = line
            .split(':')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            format!("{mean:.3}"),
            format!("{:.3}", row["rate"]["mean"].as_f64().unwrap()),
            "{phase}"
        );
    }
    let first = &test["iterations"][0]["phases"][1];
    assert_eq!(first["items"], 100);
    assert!(
        first["latency"]["p99_ns"].as_u64().unwrap()
            >= first["latency"]["p50_ns"].as_u64().unwrap()
    );
    assert!(v["environment"]["filesystems"][0]["fs_type"].is_string());
    let csv = std::fs::read_to_string(&c).unwrap();
    assert!(csv.starts_with("tasks,iteration,phase,items"));
    assert_eq!(csv.lines().count(), 1 + 3 * 10, "{csv}");
}

#[test]
fn stride_with_unique_dirs_and_depth_works() {
    let s = Scratch::new("stride");
    let d = s.path("s");
    let o = mdtest(&format!(
        "-u -N 1 -z 2 -b 2 -I 3 -R5 -w 16 -e 16 -X -d {} --tasks 3",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Directory rename  :"), "{out}");
    assert!(out.contains("random seed: 5"), "{out}");
    assert!(!d.exists());
}

/// The rename phase as IOR 4.1 runs it: -U selects it like -C/-T/-E/-r,
/// and a run without phase options includes it. Each task renames its n
/// directories (0 aside, i onto i-1, 0 onto n-2): n renames, the same
/// names afterwards, the contents moved along.
#[test]
fn u_is_a_phase_and_runs_by_default() {
    let s = Scratch::new("rename");
    let d = s.path("r");
    let dd = d.display();
    let renames = |o: &std::process::Output| {
        let out = stdout(o);
        let row = out.lines().find(|l| l.contains("Directory rename  :"));
        (row.is_some(), out.contains("Directory stat    :"))
    };
    // -C -U: create, then rename (no stat phase).
    let o = mdtest(&format!("-C -U -D -n 10 -d {dd} --tasks 2"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(renames(&o), (true, false), "{}", stdout(&o));
    let dir = |t: u64, i: u64| d.join(format!("test-dir.0-0/mdtest_tree.0/dir.mdtest.{t}.{i}"));
    for t in 0..2 {
        for i in 0..10 {
            std::fs::write(dir(t, i).join(format!("mark{i}")), b"").unwrap();
        }
    }
    // -U alone: only the renames, on what is there.
    let j = s.path("u.json");
    let o = mdtest(&format!(
        "-U -D -n 10 -d {dd} --tasks 2 --json {}",
        j.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(renames(&o), (true, false), "{}", stdout(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let phases = &doc["payload"]["tests"][0]["iterations"][0]["phases"];
    assert_eq!(phases.as_array().unwrap().len(), 1, "{phases}");
    assert_eq!(phases[0]["phase"], "dir_rename");
    assert_eq!(phases[0]["items"], 20);
    for t in 0..2 {
        for i in 0..10 {
            let was = match i {
                0..=7 => i + 1,
                8 => 0,
                _ => 9,
            };
            let m = dir(t, i).join(format!("mark{was}"));
            assert!(m.exists(), "{} {:?}", m.display(), tree(&d));
            std::fs::remove_file(m).unwrap();
        }
    }
    assert!(
        !tree(&d).iter().any(|p| p.contains("-XX")),
        "{:?}",
        tree(&d)
    );
    let o = mdtest(&format!("-r -D -n 10 -d {dd} --tasks 2"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!renames(&o).0, "{}", stdout(&o));
    // No phase option: every phase, the renames among them.
    let o = mdtest(&format!("-n 10 -d {dd} --tasks 2"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(renames(&o), (true, true), "{}", stdout(&o));
    assert!(!d.exists() || tree(&d).is_empty(), "{:?}", tree(&d));
    // Files only: nothing to rename, and -U asked for there is refused.
    let o = mdtest(&format!("-n 10 -F -d {dd} --tasks 2"));
    assert!(!renames(&o).0, "{}", stdout(&o));
    let o = mdtest(&format!("-U -F -n 10 -d {dd} --tasks 2"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// -S -X -G: every task writes each shared file, so its packets are the
/// last writer's, whichever task that was; a correct file verifies (it
/// failed on every other task), a damaged one still fails.
#[test]
fn shared_files_verify_whichever_task_wrote_them_last() {
    let s = Scratch::new("sharedverify");
    let d = s.path("v");
    let dd = d.display();
    let o = mdtest(&format!("-S -n 5 -w 100 -e 100 -X -G 3 -d {dd} --tasks 2"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = mdtest(&format!("-S -C -n 5 -w 100 -G 3 -d {dd} --tasks 3"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = mdtest(&format!("-S -E -n 5 -e 100 -X -G 3 -d {dd} --tasks 3"));
    assert!(o.status.success(), "{}", stderr(&o));
    let f = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.shared.2");
    let mut data = std::fs::read(&f).unwrap();
    data[60] ^= 1;
    std::fs::write(&f, data).unwrap();
    let o = mdtest(&format!("-S -E -n 5 -e 100 -X -G 3 -d {dd} --tasks 3"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("first at byte 60"), "{}", stderr(&o));
    let o = mdtest(&format!("-S -r -n 5 -d {dd} --tasks 3"));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn n_with_i_makes_several_test_dir_loops() {
    let s = Scratch::new("loops");
    let d = s.path("l");
    std::fs::create_dir(&d).unwrap();
    let o = mdtest(&format!(
        "-C -F -n 12 -I 2 -z 1 -b 2 -d {} --tasks 1",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 tasks, 12 files"), "{}", stdout(&o));
    let t = tree(&d);
    assert!(
        t.contains(&"test-dir.0-0/mdtest_tree.0/mdtest_tree.2/file.mdtest.0.5".to_string()),
        "{t:?}"
    );
    assert!(
        t.contains(&"test-dir.0-1/mdtest_tree.0/mdtest_tree.2/file.mdtest.0.5".to_string()),
        "{t:?}"
    );
    assert_eq!(t.iter().filter(|p| p.contains("file.mdtest")).count(), 12);
    let o = mdtest(&format!(
        "-r -F -n 12 -I 2 -z 1 -b 2 -d {} --tasks 1",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tree(&d).is_empty(), "{:?}", tree(&d));
}

#[test]
fn task_sweep_prints_a_summary_per_task_count() {
    let s = Scratch::new("sweep");
    let d = s.path("w");
    let o = mdtest(&format!(
        "-F -n 20 -f 1 -l 3 -s 1 -d {} --tasks 3",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for n in 1..=3 {
        assert!(
            out.contains(&format!("{n} tasks, {} files", 20 * n)),
            "{out}"
        );
        assert!(
            out.contains(&format!("launched with {n} total task(s)")),
            "{out}"
        );
    }
    assert_eq!(out.matches("SUMMARY: (of 1 iterations)").count(), 3);
}

#[test]
fn shared_files_and_multiple_paths() {
    let s = Scratch::new("shared");
    let o = mdtest(&format!(
        "-S -n 30 -w 10 -e 10 -d {} --tasks 3",
        s.path("sh").display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    // The 30 shared files are the same files for every task: counted once.
    assert!(stdout(&o).contains("3 tasks, 30 files"), "{}", stdout(&o));
    assert!(!s.path("sh").exists());
    let (a, b) = (s.path("a"), s.path("b"));
    // Without -N: with several paths a task's neighbour works under
    // another path, so -N is refused there (as IOR's mdtest refuses it).
    let o = mdtest(&format!(
        "-n 10 -d {}@{} --tasks 4",
        a.display(),
        b.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!a.exists() && !b.exists());
}

#[test]
fn existing_test_dir_is_refused_before_anything_happens() {
    let s = Scratch::new("exists");
    let d = s.path("e");
    std::fs::create_dir_all(d.join("test-dir.0-0")).unwrap();
    std::fs::write(d.join("test-dir.0-0/precious"), b"user data").unwrap();
    let o = mdtest(&format!("-n 10 -d {}", d.display()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists"));
    assert_eq!(
        std::fs::read(d.join("test-dir.0-0/precious")).unwrap(),
        b"user data"
    );
}

#[test]
fn io_error_names_the_path_stops_and_cleans_up() {
    let s = Scratch::new("ioerr");
    let d = s.path("q");
    // A stat run against items that were never created fails on the first stat.
    std::fs::create_dir_all(d.join("test-dir.0-0/mdtest_tree.0")).unwrap();
    let o = mdtest(&format!("-T -F -n 5 -d {} --tasks 2", d.display()));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("stat ") && stderr(&o).contains("file.mdtest."),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("No such file"), "{}", stderr(&o));
    assert!(
        d.join("test-dir.0-0/mdtest_tree.0").exists(),
        "not created by this run: left alone"
    );
}

#[test]
fn ctrl_c_stops_and_removes_what_the_run_created() {
    use std::process::{Command, Stdio};
    let s = Scratch::new("sigint");
    let d = s.path("c");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["mdtest", "-F", "-C", "-n", "5000000", "--tasks", "2", "-d"])
        .arg(&d)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let probe = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.1.10");
    while !probe.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be interrupted"
        );
    }
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    assert!(!d.exists(), "left: {:?}", tree(&d));
}

#[test]
fn mdtest_link_behaves_as_iolab_mdtest() {
    let s = Scratch::new("link");
    let link = s.path("mdtest");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_iolab"), &link).unwrap();
    let o = std::process::Command::new(&link)
        .args(["-n", "5", "-d"])
        .arg(s.path("k"))
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 tasks, 5 files/directories"));
    let o = std::process::Command::new(&link)
        .arg("-h")
        .output()
        .unwrap();
    assert!(stdout(&o).contains("-N K"));
}

#[test]
fn demo_is_the_quick_start_job() {
    let o = iolab(&["demo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 tasks, 2000 files/directories"),
        "{}",
        stdout(&o)
    );
}

/// A demo killed with -9 leaves its directory; the next demo removes it
/// (its owner file says whose it was), and says so. Such directories
/// used to stay for good.
#[test]
fn the_next_demo_removes_what_a_killed_one_left() {
    use std::process::{Command, Stdio};
    let s = Scratch::new("demo-kill");
    let demo = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.arg("demo").env("CI", "1").env("TMPDIR", &s.root);
        c
    };
    let demo_dirs = || {
        std::fs::read_dir(&s.root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("iolab-demo-"))
            .collect::<Vec<_>>()
    };
    let mut child = demo()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut tries = 0;
    while demo_dirs().is_empty() || !s.root.join(&demo_dirs()[0]).join("md").exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
        tries += 1;
        assert!(tries < 3000, "the demo made no directory");
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = demo_dirs();
    assert_eq!(left.len(), 1, "{left:?}");
    let o = demo().output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&left[0]), "{}", stderr(&o));
    assert!(demo_dirs().is_empty(), "{:?}", demo_dirs());
}

/// `mpirun -n 2 iolab mdtest ... --tasks 2`: 4 tasks, the same layout as 4 threads.
#[cfg(feature = "mpi")]
#[test]
fn mpirun_ranks_times_threads_give_the_same_layout() {
    use std::process::Command;
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("mpirun_ranks_times_threads", "mpirun not installed");
    }
    let s = Scratch::new("mpi");
    let (a, b) = (s.path("mpi"), s.path("threads"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let opts = "-C -u -N 1 -z 1 -b 2 -I 3";
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "mdtest",
        ])
        .args(opts.split(' '))
        .args(["--tasks", "2", "-d"])
        .arg(&a)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("launched with 4 total task(s)"), "{out}");
    assert_eq!(
        out.matches("SUMMARY").count(),
        1,
        "only one process prints: {out}"
    );
    let t = mdtest(&format!("{opts} --tasks 4 -d {}", b.display()));
    assert!(t.status.success(), "{}", stderr(&t));
    assert_eq!(tree(&a), tree(&b));
    assert_eq!(
        tree(&a)
            .iter()
            .filter(|p| p.contains("file.mdtest.3."))
            .count(),
        9
    );
    let mut c = Command::new("mpirun");
    let _session2 = common::OmpiSession::attach(&mut c);
    let o = c
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "mdtest",
            "-n",
            "5",
            "-S",
            "-u",
        ])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(
        stderr(&o).matches("-S with -u").count(),
        1,
        "one rank reports: {}",
        stderr(&o)
    );
}

#[test]
fn less_common_options_run_cleanly() {
    let s = Scratch::new("misc");
    let d = s.path("m");
    for (line, needle) in [
        ("-B -n 20 -i 2 -z 1 -b 2", "SUMMARY: (of 2 iterations)"),
        ("-k -F -n 30", "3 tasks, 90 files"),
        ("-Z -n 20", "SUMMARY time in seconds"),
        ("-c -n 20 -u", "3 tasks, 60 files/directories"),
        ("-y -Y -w 100 -e 100 -F -n 20 -p 0", "File read"),
        ("-v -D -n 10", "V-1: iteration 1: Directory stat"),
    ] {
        let o = mdtest(&format!("{line} -d {} --tasks 3", d.display()));
        assert!(o.status.success(), "{line}: {}", stderr(&o));
        assert!(stdout(&o).contains(needle), "{line}: {}", stdout(&o));
        assert!(!d.exists(), "{line} left {:?}", tree(&d));
    }
}

#[test]
fn stonewalled_create_reports_the_items_really_made() {
    let s = Scratch::new("wallcount");
    let d = s.path("w");
    let sw = s.path("sw");
    // Whether or not the wall fires on this machine, the printed count,
    // the -x file and the files on disk must agree.
    let common = format!(
        "-F -n 2000000 -d {} -x {} --tasks 2",
        d.display(),
        sw.display()
    );
    let o = mdtest(&format!("-C -W 1 {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let per_task: u64 = std::fs::read_to_string(&sw)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(per_task > 0 && per_task <= 2_000_000);
    assert!(
        stdout(&o).contains(&format!("2 tasks, {} files", 2 * per_task)),
        "{}",
        stdout(&o)
    );
    // mdtest's line when the wall stopped the creates: the tasks then
    // caught up to the furthest one, which made per_task files.
    let wall = stdout(&o)
        .lines()
        .find(|l| l.starts_with("Continue stonewall hit min: "))
        .map(String::from);
    match per_task < 2_000_000 {
        true => assert!(
            wall.as_deref()
                .is_some_and(|l| l.contains(&format!(" max: {per_task} avg: "))),
            "{}",
            stdout(&o)
        ),
        false => assert_eq!(wall, None),
    }
    let on_disk = tree(&d)
        .iter()
        .filter(|p| p.contains("file.mdtest."))
        .count() as u64;
    assert_eq!(on_disk, 2 * per_task);
    let o = mdtest(&format!("-r {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("2 tasks, {} files", 2 * per_task)),
        "{}",
        stdout(&o)
    );
    assert!(!d.join("test-dir.0-0").exists());
}
