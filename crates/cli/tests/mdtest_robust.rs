//! mdtest at the edges: failures and how they end (outcome in the JSON,
//! exit status), killed runs and their cleanup, outputs that cannot be
//! written, backend options, and the compatibility fixes (task sweeps
//! with -C, -u -N placement, -k -e, read-only file systems). Every test
//! runs the real binary on a private tmpfs.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{mdtest, stderr, stdout, tree, Scratch};
use std::path::Path;
use std::process::{Command, Stdio};

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn run(line: &str) -> std::process::Output {
    mdtest(line)
}

#[test]
fn a_failed_run_writes_an_error_outcome_with_op_path_and_errno() {
    let s = Scratch::new("rb-outcome");
    let d = s.path("q");
    let j = s.path("out.json");
    std::fs::create_dir_all(d.join("test-dir.0-0/mdtest_tree.0")).unwrap();
    let o = run(&format!(
        "-T -F -n 5 -d {} --tasks 2 --json {}",
        d.display(),
        j.display()
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&j);
    assert_eq!(v["schema"], "iolab.mdtest/2");
    assert_eq!(v["outcome"]["status"], "error", "{v}");
    assert_eq!(v["outcome"]["op"], "stat");
    assert_eq!(v["outcome"]["errno"], 2);
    assert!(v["outcome"]["path"]
        .as_str()
        .unwrap()
        .contains("file.mdtest."));
    assert_eq!(v["tool"]["name"], "mdtest");
    assert!(v["command_line"].as_str().unwrap().contains("-T"));
}

#[test]
fn a_completed_run_says_so_in_the_envelope() {
    let s = Scratch::new("rb-ok");
    let j = s.path("ok.json");
    let o = run(&format!(
        "-n 20 -d {} --tasks 2 --json {}",
        s.path("d").display(),
        j.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&j);
    assert_eq!(v["outcome"]["status"], "completed");
    assert_eq!(v["payload"]["tests"][0]["total_items"], 40);
    assert_eq!(v["config"]["items_asked"], 20);
    assert!(v["finished_unix_ns"].as_u64().unwrap() >= v["started_unix_ns"].as_u64().unwrap());
}

#[test]
fn after_sigkill_a_remove_run_with_the_same_options_removes_the_partial_tree() {
    let s = Scratch::new("rb-kill");
    let d = s.path("k");
    let opts = format!("-F -n 300000 --tasks 2 -d {}", d.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("mdtest")
        .arg("-C")
        .args(opts.split_whitespace())
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let probe = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.1.10");
    while !probe.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be killed"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(probe.exists(), "the kill leaves a partial tree");
    let o = run(&format!("-r {opts}"));
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("already gone"), "{}", stderr(&o));
    assert!(!d.join("test-dir.0-0").exists(), "left: {:?}", tree(&d));
}

#[test]
fn outputs_that_cannot_be_written_are_refused_before_any_io() {
    let s = Scratch::new("rb-out");
    let d = s.path("o");
    for opt in ["--json", "--csv"] {
        let o = run(&format!(
            "-n 5 -d {} {opt} {}",
            d.display(),
            s.path("missing/out").display()
        ));
        assert_eq!(o.status.code(), Some(2), "{opt}: {}", stderr(&o));
        assert!(stderr(&o).contains(opt), "{}", stderr(&o));
        assert!(!d.exists(), "{opt}: nothing may be created");
    }
    let o = run(&format!(
        "-C -W 1 -n 5 -d {} -x {}",
        d.display(),
        s.path("missing/sw").display()
    ));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-x"), "{}", stderr(&o));
    assert!(!d.exists());
}

/// A tmpfs that is already full: a probe file fits (no data), the JSON
/// does not.
fn full_fs(s: &Scratch) -> Option<common::SmallFs> {
    let full = common::SmallFs::new(s, "full", "64k");
    if !full.mounted {
        return None;
    }
    let filler = vec![0u8; 4096];
    let mut f = std::fs::File::create(full.dir.join("filler")).unwrap();
    use std::io::Write;
    while f.write_all(&filler).is_ok() {}
    Some(full)
}

#[test]
fn a_json_write_that_fails_at_the_end_is_exit_1_and_leaves_no_partial_file() {
    let s = Scratch::new("rb-enospc");
    let Some(full) = full_fs(&s) else { return };
    let j = full.dir.join("out.json");
    let o = run(&format!(
        "-n 50 -d {} --json {}",
        s.path("d").display(),
        j.display()
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--json"), "{}", stderr(&o));
    let names: Vec<String> = std::fs::read_dir(&full.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["filler".to_string()], "no partial output");
}

/// A run the full disk stops says how far the phase got: `--json` has
/// the cut phase and its items (not a measurement) where it had only an
/// empty `tests`, and standard error says it too.
#[test]
fn a_failed_run_says_how_many_items_its_cut_phase_completed() {
    let s = Scratch::new("rb-cut");
    let small = common::SmallFs::new(&s, "small", "256k");
    if !small.mounted {
        return;
    }
    let j = s.path("out.json");
    let o = run(&format!(
        "-F -C -n 1000 -w 4096 -d {} --tasks 2 --json {}",
        small.dir.join("d").display(),
        j.display()
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&j);
    assert_eq!(v["outcome"]["errno"], 28, "{}", v["outcome"]);
    let cut = &v["payload"]["cut_short"];
    assert_eq!(cut["phase"], "file_create", "{cut}");
    assert_eq!(cut["iteration"], 0, "{cut}");
    assert_eq!(cut["measurement"], false, "{cut}");
    let items = cut["items"].as_u64().unwrap();
    assert!(items > 0 && items < 2000, "{cut}");
    assert!(
        stderr(&o).contains(&format!(
            "File creation was cut short in iteration 0: {items} items done by all tasks"
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn backend_options_are_namespaced_and_checked() {
    let s = Scratch::new("rb-beopt");
    let d = s.path("b");
    let o = run(&format!("-n 5 -d {} --posix.fast", d.display()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--posix.fast") && stderr(&o).contains("--posix.odirect"),
        "{}",
        stderr(&o)
    );
    assert!(!d.exists());
    let o = run(&format!(
        "-F -n 5 -d {} --posix.odirect --tasks 2",
        d.display()
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.exists());
}

#[test]
fn create_only_task_sweep_then_stat_and_remove_sweeps() {
    let s = Scratch::new("rb-sweep");
    let d = s.path("w");
    let common = format!("-f 1 -l 4 -s 1 -n 10 --tasks 4 -d {}", d.display());
    for phase in ["-C", "-T", "-r"] {
        let o = run(&format!("{phase} {common}"));
        assert!(o.status.success(), "{phase}: {}", stderr(&o));
        assert_eq!(
            stdout(&o).matches("SUMMARY").count(),
            4,
            "{phase}: {}",
            stdout(&o)
        );
        if phase == "-C" {
            let t = tree(&d.join("test-dir.0-0"));
            for task in 0..4 {
                let name = format!("mdtest_tree.0/file.mdtest.{task}.9");
                assert!(t.contains(&name), "{name}: {t:?}");
            }
        }
    }
    assert!(!d.join("test-dir.0-0").exists(), "left: {:?}", tree(&d));
}

#[test]
fn unique_dirs_with_a_stride_place_items_as_mdtest_4_does() {
    let s = Scratch::new("rb-uN");
    let d = s.path("u");
    let common = format!("-F -u -N 1 -n 5 --tasks 3 -w 8 -e 8 -d {}", d.display());
    let o = run(&format!("-C {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let t = tree(&d.join("test-dir.0-0"));
    // Task t's items live in the tree of task t + N (mod tasks).
    for (task, tree_of) in [(0, 1), (1, 2), (2, 0)] {
        let name = format!("mdtest_tree.{tree_of}.0/file.mdtest.{task}.4");
        assert!(t.contains(&name), "{name}: {t:?}");
    }
    for phase in ["-T", "-E", "-r"] {
        let o = run(&format!("{phase} {common}"));
        assert!(o.status.success(), "{phase}: {}", stderr(&o));
    }
    assert!(!d.join("test-dir.0-0").exists(), "left: {:?}", tree(&d));
}

#[test]
fn mknod_makes_regular_files_that_the_read_phase_reads() {
    let s = Scratch::new("rb-mknod");
    let d = s.path("k");
    let common = format!("-F -k -n 8 --tasks 2 -d {}", d.display());
    let o = run(&format!("-C {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let f = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.1.3");
    let meta = std::fs::metadata(&f).unwrap();
    assert!(meta.is_file() && meta.len() == 0, "{meta:?}");
    let o = run(&format!("-E -e 64 {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&format!("-r {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&format!("-k -e 16 -n 8 --tasks 2 -d {}", d.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("test-dir.0-0").exists());
}

#[test]
fn stat_and_read_work_on_a_read_only_file_system() {
    let s = Scratch::new("rb-ro");
    let d = s.path("r");
    let common = format!("-F -n 20 -w 16 -e 16 --tasks 2 -d {}", d.display());
    let o = run(&format!("-C {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let remount = |mode: &str| {
        Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(&s.root)
            .status()
            .map(|st| st.success())
            .unwrap_or(false)
    };
    if !remount("ro") {
        common::skip_or_fail("rb-ro", "cannot remount the scratch tmpfs read-only");
        return;
    }
    let t = run(&format!("-T {common}"));
    let e = run(&format!("-E {common}"));
    let r = run(&format!("-r {common}"));
    assert!(remount("rw"), "cannot remount read-write");
    assert!(t.status.success(), "-T: {}", stderr(&t));
    assert!(e.status.success(), "-E: {}", stderr(&e));
    assert_eq!(
        r.status.code(),
        Some(2),
        "-r needs write access: {}",
        stderr(&r)
    );
    assert!(stderr(&r).contains("not writable"), "{}", stderr(&r));
    let o = run(&format!("-r {common}"));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Ctrl-C then SIGTERM (what a rank gets under mpirun: the terminal's
/// Ctrl-C at once, mpirun's SIGTERM later) is not a second Ctrl-C: the
/// cleanup the first one started runs to its end.
#[test]
fn sigterm_after_ctrl_c_lets_the_cleanup_finish() {
    let s = Scratch::new("rb-int-term");
    let d = s.path("c");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["mdtest", "-C", "-F", "-n", "400000", "--tasks", "2", "-d"])
        .arg(&d)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let probe = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.1.100000");
    while !probe.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
    }
    let pid = child.id() as i32;
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(30));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(!err.contains("second signal"), "{err}");
    assert!(err.contains("interrupted; removed"), "{err}");
    assert!(!d.join("test-dir.0-0").exists(), "left: {}", tree(&d).len());
}

/// A hangup (the terminal closed) stops the run as Ctrl-C does, removing
/// what it made; it ended the process at once, leaving every file. Under
/// nohup (SIGHUP ignored from the start) it stays ignored.
#[test]
fn a_hangup_cleans_up_and_nohup_still_ignores_it() {
    use std::os::unix::process::CommandExt;
    let s = Scratch::new("rb-hup");
    for nohup in [false, true] {
        let d = s.path(if nohup { "nohup" } else { "hup" });
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_iolab"));
        cmd.args(["mdtest", "-C", "-F", "-n", "400000", "--tasks", "2", "-d"])
            .arg(&d)
            .env("CI", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if nohup {
            // SAFETY: signal(2) between fork and exec touches no memory.
            unsafe {
                cmd.pre_exec(|| {
                    libc::signal(libc::SIGHUP, libc::SIG_IGN);
                    Ok(())
                })
            };
        }
        let mut child = cmd.spawn().unwrap();
        let probe = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.1.10000");
        while !probe.exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
            assert!(child.try_wait().unwrap().is_none(), "finished too soon");
        }
        let pid = child.id() as i32;
        // SAFETY: plain kill(2) on our child.
        unsafe { libc::kill(pid, libc::SIGHUP) };
        if nohup {
            std::thread::sleep(std::time::Duration::from_millis(300));
            assert!(
                child.try_wait().unwrap().is_none(),
                "nohup's SIGHUP ended it"
            );
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(130), "{err}");
        assert!(err.contains("interrupted; removed"), "{err}");
        assert!(!d.join("test-dir.0-0").exists(), "left: {}", tree(&d).len());
    }
}

/// A stopped run may leave some of its iterations' test directories and
/// not others; the remove-only run its last words suggest skips those it
/// never made, where it refused the whole run for the first one missing.
/// With none there, it is still refused.
#[test]
fn a_remove_only_run_skips_test_directories_never_made() {
    let s = Scratch::new("rb-clear");
    let d = s.path("c");
    let opts = format!("-n 20 -i 2 -d {}", d.display());
    assert!(run(&format!("-C {opts}")).status.success());
    assert!(d.join("test-dir.0-0").exists() && d.join("test-dir.1-0").exists());
    std::fs::remove_dir_all(d.join("test-dir.0-0")).unwrap();
    let o = run(&format!("-r {opts}"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("test-dir.1-0").exists(), "left: {:?}", tree(&d));
    let o = run(&format!("-r {opts}"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("none of this run's test directories"),
        "{}",
        stderr(&o)
    );
    // A stat run still needs them all.
    assert!(run(&format!("-C -i 1 -n 20 -d {}", d.display()))
        .status
        .success());
    let o = run(&format!("-T {opts}"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_second_ctrl_c_lists_what_is_left_and_a_remove_run_clears_it() {
    let s = Scratch::new("rb-2sig");
    let d = s.path("c");
    let opts = format!("-F -n 400000 --tasks 2 -d {}", d.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("mdtest")
        .arg("-C")
        .args(opts.split_whitespace())
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Enough items that the cleanup after the first signal takes a while.
    let probe = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.1.100000");
    while !probe.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
    }
    let pid = child.id() as i32;
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(30));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("second signal"), "{err}");
    let td = d.join("test-dir.0-0");
    assert!(err.contains(&td.display().to_string()), "{err}");
    assert!(td.exists(), "the listed directory is what was left");
    let r = run(&format!("-r {opts}"));
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(!d.join("test-dir.0-0").exists(), "left: {:?}", tree(&d));
}

/// `mpirun --oversubscribe -n 2 iolab mdtest <line>`, as root if need be.
#[cfg(feature = "mpi")]
fn mpirun_cmd(mca: &[&str], line: &str) -> Option<(Command, common::OmpiSession)> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        common::skip_or_fail("mpirun", "mpirun is not installed");
        return None;
    }
    let mut c = Command::new("mpirun");
    let session = common::OmpiSession::attach(&mut c);
    c.args(["--allow-run-as-root", "--oversubscribe"])
        .args(mca)
        .args(["-n", "2", env!("CARGO_BIN_EXE_iolab"), "mdtest"])
        .args(line.split_whitespace())
        .env("CI", "1");
    Some((c, session))
}

#[cfg(feature = "mpi")]
#[test]
fn mpi_create_only_sweep_and_a_failing_rank_end_cleanly() {
    let s = Scratch::new("rb-mpi-sweep");
    let d = s.path("w");
    let common = format!("-f 1 -l 4 -s 1 -n 10 --tasks 2 -d {}", d.display());
    for phase in ["-C", "-T", "-r"] {
        let Some((mut c, _session)) = mpirun_cmd(&[], &format!("{phase} {common}")) else {
            return;
        };
        let o = c.output().unwrap();
        assert!(o.status.success(), "{phase}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(stdout(&o).matches("SUMMARY").count(), 4, "{}", stdout(&o));
    }
    assert!(!d.join("test-dir.0-0").exists(), "left: {:?}", tree(&d));
    // Rank 1's task 1 (task 3) meets a missing file: every rank stops.
    let line = format!("-F -n 10 --tasks 2 -d {}", d.display());
    let o = mpirun_cmd(&[], &format!("-C {line}"))
        .unwrap()
        .0
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_file(d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.3.5")).unwrap();
    let j = s.path("o.json");
    let o = mpirun_cmd(&[], &format!("-T {line} --json {}", j.display()))
        .unwrap()
        .0
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    let v = json(&j);
    assert_eq!(v["outcome"]["op"], "stat", "{v}");
    assert!(v["outcome"]["path"]
        .as_str()
        .unwrap()
        .ends_with("file.mdtest.3.5"));
    // A sweep whose first count (task 0 only: rank 1 sits it out) fails:
    // rank 1 must learn of it rather than wait for the next count.
    std::fs::remove_file(d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.0.5")).unwrap();
    let o = mpirun_cmd(&[], &format!("-T -f 1 -l 4 {line}"))
        .unwrap()
        .0
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("file.mdtest.0.5"), "{}", stderr(&o));
}

/// Rank 1 alone fails (its first file's write meets a file size limit,
/// EFBIG) and rank 0, which writes the outputs, does not: rank 0's JSON
/// has rank 1's operation, path and errno and says it was task 1, not a
/// "peer" line of text.
#[cfg(feature = "mpi")]
#[test]
fn mpi_a_failure_on_rank_1_reaches_rank_0s_json_whole() {
    let s = Scratch::new("rb-mpi-peer");
    let (d, j) = (s.path("d"), s.path("o.json"));
    let line = format!(
        "mdtest -C -F -w 4096 -n 5 -d {} --json {}",
        d.display(),
        j.display()
    );
    let words: Vec<&str> = line.split(' ').collect();
    let Some((mut c, _session)) = common::mpirun_rank1_file_limit(&words) else {
        return;
    };
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let f = &json(&j)["outcome"];
    assert_eq!(f["status"], "error", "{f}");
    let path = common::assert_task_failure(f, 1, "write", libc::EFBIG);
    assert!(path.ends_with("/file.mdtest.1.0"), "{f}");
    assert!(
        stderr(&o).contains(&format!("error: write {path}: task 1: ")),
        "{}",
        stderr(&o)
    );
}

#[cfg(feature = "mpi")]
#[test]
fn mpi_ctrl_c_stops_every_rank_which_removes_what_it_made() {
    let s = Scratch::new("rb-mpi-int");
    let d = s.path("c");
    // -p 60: after the tree is made the tasks wait (polling the stop
    // flag), so the signal always finds the run in progress.
    let line = format!("-C -F -p 60 -n 1000 --tasks 2 -d {}", d.display());
    // Open MPI 4.1 waits this long before SIGTERM and again before SIGKILL.
    let grace = ["--mca", "odls_base_sigkill_timeout", "3"];
    let Some((mut c, _session)) = mpirun_cmd(&grace, &line) else {
        return;
    };
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let probe = d.join("test-dir.0-0/mdtest_tree.0");
    while !probe.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
    }
    // SAFETY: plain kill(2) on our child, mpirun.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(!d.exists(), "{err}\nleft: {} entries", tree(&d).len());
    // mpirun may stop forwarding the ranks' output as it tears the job
    // down, so the last line is not always seen; the listing comes first.
    assert!(
        err.contains("interrupted; removed") || err.contains("stopping; removing"),
        "{:?}: {err}",
        o.status
    );
    // The listing is printed by rank 0's announcer, which polls every
    // 50 ms: a rank cancelled through its peers, or a cleanup quicker
    // than one poll, ends before it speaks. When it speaks, it must name
    // the test directory.
    if err.contains("stopping; removing") {
        assert!(
            err.contains(&d.join("test-dir.0-0").display().to_string()),
            "{err}"
        );
    }
    assert!(!d.exists(), "left: {:?}", tree(&d));
}

/// Every path under `d`, relative.
#[cfg(feature = "mpi")]
fn left_under(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    tree(d).into_iter().map(std::path::PathBuf::from).collect()
}

/// Ctrl-C to a plain `mpirun` (Open MPI kills the ranks 1 s after passing
/// them SIGTERM): the ranks stop together; whatever the one second did
/// not let them remove lies in the test directory they listed, with how
/// to remove it and how to give mpirun's ranks the time; `-r` as told
/// then leaves nothing.
#[cfg(feature = "mpi")]
#[test]
fn mpi_ctrl_c_under_default_mpirun_lists_what_is_left_and_how_to_avoid_it() {
    let s = Scratch::new("rb-mpi-int1");
    let d = s.path("c");
    let opts = format!("-F -n 200000 --tasks 2 -d {}", d.display());
    let Some((mut c, _session)) = mpirun_cmd(&[], &format!("-C {opts}")) else {
        return;
    };
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a good number of items, so the removal has work to do.
    let probe = d.join("test-dir.0-0/mdtest_tree.0");
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(&probe).map_or(0, |r| r.count()) < 5000 {
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
        assert!(t0.elapsed().as_secs() < 120, "no items made");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our child, mpirun.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("odls_base_sigkill_timeout 30"), "{err}");
    let listed = d.join("test-dir.0-0");
    assert!(err.contains(&listed.display().to_string()), "{err}");
    for p in left_under(&d) {
        assert!(
            p.as_os_str().is_empty() || p.starts_with("test-dir.0-0"),
            "{} is outside the listed directory",
            p.display()
        );
    }
    // The way out the message gives.
    if d.exists() {
        let Some((mut r, _session)) = mpirun_cmd(&[], &format!("-r {opts}")) else {
            return;
        };
        let o = r.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(!listed.exists(), "left: {:?}", tree(&d));
}

/// mpirun in a process group of its own, as a shell starts a job: rank
/// 0 as users start it (`iolab mdtest LINE`), rank 1 through a wrapper
/// that keeps its exit status (`sh -c 'trap "" INT TERM; iolab mdtest
/// LINE; echo $? > DIR/rc.1'`). Killed with everything it started on drop, should the
/// test fail first.
#[cfg(feature = "mpi")]
struct MpirunJob {
    child: std::process::Child,
    _session: common::OmpiSession,
}

#[cfg(feature = "mpi")]
impl MpirunJob {
    fn start(mca: &[&str], line: &str, rc_dir: &Path) -> Option<MpirunJob> {
        use std::os::unix::process::CommandExt;
        if Command::new("mpirun").arg("--version").output().is_err() {
            common::skip_or_fail("mpirun", "mpirun is not installed");
            return None;
        }
        let iolab = env!("CARGO_BIN_EXE_iolab");
        // The shell ignores the signals mpirun or orted send the rank's
        // group, to outlive iolab and write its status; iolab installs
        // its own handlers over the ignored dispositions it inherits.
        let wrapped = format!(
            "trap '' INT TERM; {iolab} mdtest {line}; echo $? > {}/rc.1",
            rc_dir.display()
        );
        let mut c = Command::new("mpirun");
        let session = common::OmpiSession::attach(&mut c);
        c.args(["--allow-run-as-root", "--oversubscribe"])
            .args(mca)
            .args(["-n", "1", iolab, "mdtest"])
            .args(line.split_whitespace())
            .args([":", "-n", "1", "sh", "-c", &wrapped])
            .env("CI", "1")
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Some(MpirunJob {
            child: c.spawn().unwrap(),
            _session: session,
        })
    }

    /// What a terminal does on Ctrl-C: SIGINT to the foreground group.
    fn ctrl_c(&self) {
        // SAFETY: kill(2) on the process group our child leads.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGINT) };
    }

    /// mpirun's exit status and output, waiting at most `limit`.
    fn wait(mut self, limit: std::time::Duration) -> (Option<i32>, String, String) {
        use std::io::Read;
        let mut out = self.child.stdout.take().unwrap();
        let mut err = self.child.stderr.take().unwrap();
        let readers = (
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = out.read_to_string(&mut s);
                s
            }),
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = err.read_to_string(&mut s);
                s
            }),
        );
        let t0 = std::time::Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(t0.elapsed() < limit, "mpirun still running after {limit:?}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        (
            status.code(),
            readers.0.join().unwrap(),
            readers.1.join().unwrap(),
        )
    }
}

#[cfg(feature = "mpi")]
impl Drop for MpirunJob {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        // The ranks live in groups of their own: kill them by pid first,
        // with the wrappers between (children of children).
        let mut pids = descendants(self.child.id());
        pids.push(self.child.id());
        for pid in pids {
            // SAFETY: kill(2) on processes this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        // SAFETY: as above, on the group our child leads.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Every descendant of `pid` (from /proc/PID/task/*/children).
#[cfg(feature = "mpi")]
fn descendants(pid: u32) -> Vec<u32> {
    let mut all = Vec::new();
    let mut next = vec![pid];
    while let Some(p) = next.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for k in kids.split_whitespace().filter_map(|k| k.parse().ok()) {
                all.push(k);
                next.push(k);
            }
        }
    }
    all
}

/// Ctrl-C as a terminal sends it (SIGINT to the foreground process group:
/// mpirun's; the ranks sit in groups of their own) during a create phase
/// too large to undo in one second: the ranks get it at once (through the
/// relay each starts in mpirun's group), agree to stop, remove every item
/// within `odls_base_sigkill_timeout` and exit 130; rank 0's report says
/// interrupted, and mpirun exits 1. Rank 1 runs under `sh -c`, as a
/// wrapper may stand between orted and iolab. Before the relay the ranks heard of
/// it only from mpirun's SIGTERM, this timeout later: the create phase
/// ran to its end and left all its items.
#[cfg(feature = "mpi")]
#[test]
fn mpi_terminal_ctrl_c_reaches_the_ranks_at_once_and_they_remove_everything() {
    let s = Scratch::new("rb-mpi-tty");
    let d = s.path("c");
    let j = s.path("o.json");
    // 200,000 items: a few seconds of creation here, far under the 15 s
    // mpirun waits before it passes the signal on.
    let line = format!(
        "-C -F -n 50000 --tasks 2 -d {} --json {}",
        d.display(),
        j.display()
    );
    let grace = ["--mca", "odls_base_sigkill_timeout", "15"];
    let Some(job) = MpirunJob::start(&grace, &line, &s.root) else {
        return;
    };
    // Enough items that one second would not remove them all.
    let probe = d.join("test-dir.0-0/mdtest_tree.0");
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(&probe).map_or(0, |r| r.count()) < 30_000 {
        assert!(t0.elapsed().as_secs() < 120, "no items made");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    job.ctrl_c();
    // mpirun sleeps the timeout twice (before its SIGTERM and before its
    // SIGKILL) whatever the ranks do.
    let (code, out, err) = job.wait(std::time::Duration::from_secs(180));
    let left = tree(&d);
    assert!(left.is_empty(), "{err}\nleft: {} entries", left.len());
    let rc = std::fs::read_to_string(s.path("rc.1")).unwrap();
    assert_eq!(rc.trim(), "130", "rank 1: {err}");
    assert_eq!(json(&j)["outcome"]["status"], "interrupted", "{out}");
    assert!(err.contains("interrupted; removed"), "{err}");
    assert_eq!(code, Some(1), "{err}");
}

/// A rank on "another host": Open MPI starts it through its remote shell
/// (`plm_rsh_agent`, here a script that runs the command in a session of
/// its own, as sshd does) when the host is not this one (127.0.0.2). The
/// terminal's Ctrl-C reaches only the local rank at once; the remote one
/// hears of it from the local rank's stop message (tests/mpi_stop.rs
/// checks that it stops within the phase), or at worst from its orted's
/// SIGTERM, and the local rank must still be there to agree and clean up
/// with it: mpirun's SIGTERM to the local rank, after its Ctrl-C, does not
/// end it at once.
#[cfg(feature = "mpi")]
#[test]
fn mpi_terminal_ctrl_c_with_a_remote_rank_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("rb-mpi-rsh");
    let d = s.path("c");
    let rsh = s.path("rsh");
    std::fs::write(&rsh, "#!/bin/sh\nshift\nexec setsid sh -c \"$*\"\n").unwrap();
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent = rsh.display().to_string();
    let mca = [
        "--mca",
        "odls_base_sigkill_timeout",
        "8",
        "--mca",
        "plm_rsh_agent",
        &agent,
        "--host",
        "localhost:1,127.0.0.2:1",
    ];
    let line = format!("-C -F -n 50000 --tasks 2 -d {}", d.display());
    let Some(job) = MpirunJob::start(&mca, &line, &s.root) else {
        return;
    };
    let probe = d.join("test-dir.0-0/mdtest_tree.0");
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(&probe).map_or(0, |r| r.count()) < 20_000 {
        assert!(t0.elapsed().as_secs() < 120, "no items made");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    job.ctrl_c();
    let (code, _out, err) = job.wait(std::time::Duration::from_secs(240));
    let left = tree(&d);
    assert!(left.is_empty(), "{err}\nleft: {} entries", left.len());
    assert!(!err.contains("second signal"), "{err}");
    let rc = std::fs::read_to_string(s.path("rc.1")).unwrap();
    assert_eq!(rc.trim(), "130", "remote rank 1: {err}");
    assert_eq!(code, Some(1), "{err}");
}

/// Each rank's relay sits in mpirun's process group while the rank keeps
/// a group of its own (so mpirun's signals to the rank's group never reach
/// mpirun), and ends when its rank is killed with SIGKILL.
#[cfg(feature = "mpi")]
#[test]
fn mpi_relays_join_mpiruns_group_and_die_with_their_rank() {
    let s = Scratch::new("rb-mpi-relay");
    let line = format!("-C -F -p 60 -n 10 -d {}", s.path("c").display());
    let Some(job) = MpirunJob::start(&[], &line, &s.root) else {
        return;
    };
    let mpirun = job.child.id() as i32;
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let t0 = std::time::Instant::now();
    let relays = loop {
        let relays: Vec<u32> = descendants(job.child.id())
            .into_iter()
            .filter(|&p| comm(p).trim() == "iolab-relay")
            .collect();
        if relays.len() == 2 {
            break relays;
        }
        assert!(t0.elapsed().as_secs() < 60, "relays: {relays:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // SAFETY: plain queries of process groups.
    let group = |pid: u32| unsafe { libc::getpgid(pid as i32) };
    let rank = |relay: u32| parent_pid(relay).unwrap();
    for &r in &relays {
        assert_eq!(group(r), mpirun, "relay {r} is not in mpirun's group");
        assert_ne!(
            group(rank(r)),
            mpirun,
            "rank {} joined mpirun's group",
            rank(r)
        );
    }
    let (relay, its_rank) = (relays[0], rank(relays[0]));
    // SAFETY: kill(2) on a rank this test started.
    unsafe { libc::kill(its_rank as i32, libc::SIGKILL) };
    let t0 = std::time::Instant::now();
    // Alive: there, not a zombie waiting for its new parent to reap it.
    let alive = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next());
        comm(pid).trim() == "iolab-relay" && !matches!(state, None | Some("Z"))
    };
    while alive(relay) {
        assert!(
            t0.elapsed().as_secs() < 20,
            "relay {relay} outlived its rank"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The parent of `pid`, from /proc/PID/stat.
#[cfg(feature = "mpi")]
fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `iolab mdtest <line>` to its end: exit code and peak resident memory
/// as the kernel counted it (wait4's ru_maxrss), bytes.
// The child is reaped by wait4 (which gives its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn mdtest_peak_rss(line: &str) -> (Option<i32>, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("mdtest")
        .args(line.split_whitespace())
        .env("CI", "1")
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

/// Memory does not grow with iterations: 2,000 more of them (about
/// 5 KB each when every iteration's results were kept, 10 MB) cost less
/// than 4 MB.
#[test]
fn memory_stays_flat_in_the_number_of_iterations() {
    let s = Scratch::new("rb-iters");
    let d = s.path("m");
    let peak = |i: u32| {
        let (code, peak) = mdtest_peak_rss(&format!("-F -n 1 -i {i} -d {}", d.display()));
        assert_eq!(code, Some(0));
        peak
    };
    let (few, many) = (peak(1100), peak(3100));
    assert!(
        many < few + (4 << 20),
        "peak RSS {} KiB for 3100 iterations vs {} KiB for 1100",
        many >> 10,
        few >> 10
    );
}

#[test]
fn a_stonewall_file_that_cannot_be_written_at_the_end_is_exit_1() {
    let s = Scratch::new("rb-xfull");
    let Some(full) = full_fs(&s) else { return };
    let sw = full.dir.join("sw");
    let d = s.path("d");
    let o = run(&format!(
        "-C -F -n 20 -d {} -x {}",
        d.display(),
        sw.display()
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("-x"), "{}", stderr(&o));
    let names: Vec<String> = std::fs::read_dir(&full.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["filler".to_string()], "no partial -x file");
}

#[test]
fn sigterm_stops_and_cleans_up_like_ctrl_c() {
    let s = Scratch::new("rb-term");
    let d = s.path("t");
    let j = s.path("t.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["mdtest", "-D", "-n", "3000000", "--tasks", "2", "--json"])
        .arg(&j)
        .arg("-d")
        .arg(&d)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let probe = d.join("test-dir.0-0/mdtest_tree.0/dir.mdtest.1.100");
    while !probe.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
    }
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(!d.exists(), "left: {:?}", tree(&d));
    assert_eq!(json(&j)["outcome"]["status"], "interrupted");
}

/// Every file under `dir` with its bytes, following no link.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(files_under(&e.path()));
        } else {
            out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

/// A remove run (`-r`) over a tree where a link stands, at one depth or
/// another, where mdtest made a directory: the link is refused (exit 1,
/// saying so), never followed, and the files it leads to stay; `-d`
/// itself, which the user names, may be a link.
#[test]
fn remove_runs_follow_no_link_below_d() {
    let s = Scratch::new("rb-links");
    let other = s.path("other");
    for f in [
        "mdtest_tree.0/file.mdtest.0.0",
        "mdtest_tree.0/file.mdtest.0.4",
        "mdtest_tree.1/file.mdtest.0.2",
        "file.mdtest.0.1",
        "file.mdtest.0.3",
    ] {
        let p = other.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"not mdtest's").unwrap();
    }
    let before = files_under(&other);
    // The uring engine removes as the sync one does (its queue is not used
    // for removal), when the kernel has io_uring at all.
    let mut engines = vec![""];
    if uring_usable() {
        engines.push(" --engine uring --qd 8");
    }
    // (where the link stands below -d, the options of the remove run)
    for engine in engines {
        for (link, opts, to) in [
            ("test-dir.0-0", "-n 5 -F", ""),
            ("test-dir.0-0/mdtest_tree.0", "-n 5 -F", ""),
            (
                "test-dir.0-0/mdtest_tree.0/mdtest_tree.1",
                "-n 5 -F -z 1 -b 1 -L",
                "",
            ),
            (
                "test-dir.0-0/mdtest_tree.0",
                "-n 5 -F -z 1 -b 1 -L",
                "mdtest_tree.0",
            ),
        ] {
            let d = s.path("d");
            let _ = std::fs::remove_dir_all(&d);
            let at = d.join(link);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(other.join(to), &at).unwrap();
            let o = run(&format!("-d {} -r {opts}{engine}", d.display()));
            assert_eq!(
                o.status.code(),
                Some(1),
                "{link}{engine}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            assert!(
                stderr(&o).contains("no link below -d is followed"),
                "{link}: {}",
                stderr(&o)
            );
            assert_eq!(files_under(&other), before, "{link}: followed");
            assert!(at.is_symlink(), "{link}");
        }
    }
    // -d a link to a real directory: followed, as the user named it.
    let real = s.path("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, s.path("named")).unwrap();
    let named = s.path("named");
    let o = run(&format!("-d {} -n 5 -F -z 1 -b 2", named.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tree(&real).is_empty(), "{:?}", tree(&real));
}

/// A stat (`-T`) or read (`-E`) run over a tree where a link stands
/// for the directory holding the items: items are worked on by their
/// name in a directory opened without following links, so the link is
/// refused (exit 1, saying so) and the files it leads to are neither
/// stat'ed nor read (a stat by path followed it). Both engines. (A
/// create run refuses a test directory that is there before it.)
#[test]
fn item_phases_follow_no_link_below_d() {
    let s = Scratch::new("rb-item-links");
    let other = s.path("other");
    for i in 0..5 {
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join(format!("file.mdtest.0.{i}")), b"").unwrap();
    }
    let before = files_under(&other);
    let mut engines = vec![""];
    if uring_usable() {
        engines.push(" --engine uring --qd 8");
    }
    for engine in engines {
        for opts in ["-T", "-E"] {
            let d = s.path("d");
            let _ = std::fs::remove_dir_all(&d);
            let at = d.join("test-dir.0-0/mdtest_tree.0");
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&other, &at).unwrap();
            let o = run(&format!("-d {} {opts} -n 5 -F{engine}", d.display()));
            let said = format!("{opts}{engine}: {}{}", stdout(&o), stderr(&o));
            assert_eq!(o.status.code(), Some(1), "{said}");
            assert!(
                stderr(&o).contains("no link below -d is followed"),
                "{said}"
            );
            assert_eq!(files_under(&other), before, "{said}");
            assert!(at.is_symlink(), "{said}");
        }
    }
}

/// Whether this kernel lets a process use io_uring (a container may not).
fn uring_usable() -> bool {
    let s = Scratch::new("rb-uring-probe");
    let d = s.path("d");
    std::fs::create_dir(&d).unwrap();
    run(&format!("-d {} -n 1 --engine uring --qd 1", d.display()))
        .status
        .success()
}

/// What a create run would meet only once started is bad usage (exit 2,
/// nothing made): a link where a test directory goes (a dangling one
/// slipped past the check for an existing one and failed the mkdir), a
/// -d that is a link to nothing, and one directory named twice in -d.
#[test]
fn links_and_doubled_dirs_in_d_are_refused_before_anything_is_made() {
    let s = Scratch::new("md-d-refused");
    let x = s.path("x");
    std::fs::create_dir(&x).unwrap();
    std::os::unix::fs::symlink(s.path("nowhere"), x.join("test-dir.0-0")).unwrap();
    std::os::unix::fs::symlink(s.path("tgt"), s.path("y")).unwrap();
    let z = s.path("z");
    std::fs::create_dir(&z).unwrap();
    std::os::unix::fs::symlink(&z, s.path("zl")).unwrap();
    let (x, y, z, zl) = (x.display(), s.path("y"), z.display(), s.path("zl"));
    for (line, says) in [
        (
            format!("-d {x} -n 10"),
            "is a symbolic link where mdtest makes",
        ),
        (
            format!("-d {} -n 10", y.display()),
            "a symbolic link to nothing",
        ),
        (
            format!("-d {z}@{z}/ -n 10 --tasks 2"),
            "the same directory as",
        ),
        (
            format!("-d {z}@{} -n 10 --tasks 2", zl.display()),
            "the same directory as",
        ),
    ] {
        let o = run(&line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{line}: {}", stderr(&o));
    }
    assert_eq!(tree(&s.path("x")).len(), 1, "{:?}", tree(&s.path("x")));
    assert!(tree(&s.path("z")).is_empty());
    assert!(!s.path("tgt").exists() && !s.path("nowhere").exists());
}
