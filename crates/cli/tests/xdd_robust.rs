//! `iolab xdd` at the edges: a failure is never lost, nothing is left
//! behind, outputs are checked before any I/O, and a signal always ends
//! the run. The real binary on real tmpfs mounts (a small one to run out
//! of space), with real signals.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::loopfs::{self, LoopDev, LoopFs};
use common::{stderr, stdout, Scratch, SmallFs};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn xdd_cmd(dir: &Path, args: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.arg("xdd")
        .args(args.split_whitespace())
        .current_dir(dir)
        .env("CI", "1");
    c
}

fn xdd(dir: &Path, args: &str) -> Output {
    xdd_cmd(dir, args).output().unwrap()
}

/// Files in `dir` (names only, sorted).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

fn says(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", stdout(o), stderr(o))
}

#[test]
fn a_panicking_worker_ends_the_run_with_an_error() {
    let s = Scratch::new("xdd-panic");
    // A QThread of target 1 dies in pass 1 (alone, then with QThreads
    // that wait for its turn under serial ordering); then target 1's own
    // thread dies before the barrier of pass 2, where target 0 waits for
    // it. Nobody waits for ever: the run ends with exit 1 and says why.
    for (i, (which, extra)) in [("1", ""), ("1", "-qd 3 -serialordering"), ("1:target", "")]
        .iter()
        .enumerate()
    {
        let dir = s.path(&format!("run{i}"));
        std::fs::create_dir(&dir).unwrap();
        let line = format!(
            "-op write -targets 2 a b -reqsize 1 -numreqs 50 -passes 3 --json r.json {extra}"
        );
        let o = xdd_cmd(&dir, &line)
            .env("IOLAB_XDD_PANIC_TARGET", which)
            .output()
            .unwrap();
        assert_eq!(code(&o), Some(1), "{which}: {}", says(&o));
        let j = json(&dir.join("r.json"));
        assert_eq!(j["outcome"]["status"], "error", "{which}: {j}");
        assert_eq!(j["outcome"]["op"], "worker");
        assert!(stdout(&o).contains("Run ended with an error: worker"));
        // Both files were made by the failed run: removed.
        assert_eq!(entries(&dir), ["r.json"], "{which}");
    }
}

#[test]
fn running_out_of_space_stops_and_removes_what_the_run_made() {
    let s = Scratch::new("xdd-enospc");
    let small = SmallFs::new(&s, "small", "8m");
    let big = s.path("big.dat");
    let line = format!(
        "-op write -targets 2 {} {} -blocksize 4096 -reqsize 64 -mbytes 32 -passes 3 --json r.json",
        small.path("f"),
        big.display()
    );
    let o = xdd(&s.root, &line);
    assert_eq!(code(&o), Some(1), "{}", says(&o));
    let j = json(&s.path("r.json"));
    assert_eq!(j["outcome"]["status"], "error", "{j}");
    assert_eq!(j["outcome"]["errno"], 28, "{j}");
    // It stopped at the first ENOSPC instead of writing on: at most a
    // short write and the failed one.
    let errors = j["payload"]["errors"]["count"].as_u64().unwrap();
    assert!(errors <= 2, "{errors} errors: it kept writing after ENOSPC");
    assert!(entries(&small.dir).is_empty(), "{:?}", entries(&small.dir));
    assert!(!big.exists(), "the other target's file stayed");
    assert!(stderr(&o).contains("removed"), "{}", stderr(&o));
    // A -preallocate that cannot fit ends the run before its I/O (it was
    // a note, and the run wrote on and said it completed): refused, as
    // the free space says so before anything is reserved.
    let line = format!(
        "-op write -target {} -reqsize 64 -numreqs 4 -preallocate 999999999999 --json p.json",
        small.path("p")
    );
    let o = xdd(&s.root, &line);
    assert_eq!(code(&o), Some(2), "{}", says(&o));
    assert!(
        stderr(&o).contains("-preallocate") && stderr(&o).contains("free"),
        "{}",
        stderr(&o)
    );
    // Nothing ran: no report, as for any target that cannot be prepared.
    assert!(!s.path("p.json").exists());
    assert!(entries(&small.dir).is_empty(), "{:?}", entries(&small.dir));
}

#[test]
fn keepfiles_keeps_and_a_users_file_is_never_removed() {
    let s = Scratch::new("xdd-keep");
    let small = SmallFs::new(&s, "small", "8m");
    let o = xdd(
        &s.root,
        &format!(
            "-op write -target {} -reqsize 1024 -mbytes 32 -keepfiles",
            small.path("f")
        ),
    );
    assert_eq!(code(&o), Some(1), "{}", says(&o));
    assert_eq!(entries(&small.dir), ["f"]);
    // The file is now the user's: a failing run over it leaves it.
    let o = xdd(
        &s.root,
        &format!(
            "-op write -target {} -reqsize 1024 -mbytes 32",
            small.path("f")
        ),
    );
    assert_eq!(code(&o), Some(1), "{}", says(&o));
    assert_eq!(entries(&small.dir), ["f"]);
}

#[test]
fn a_buffer_that_cannot_be_allocated_leaves_no_file() {
    let s = Scratch::new("xdd-nobuf");
    let mut c = xdd_cmd(
        &s.root,
        "-op write -target f -blocksize 1048576 -reqsize 1024 -numreqs 1 -qd 4",
    );
    // 4 GiB of buffers under a 3 GiB address-space limit: the third
    // buffer fails after the target file was created.
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches only this child.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 3 << 30,
                rlim_max: 3 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = c.output().unwrap();
    assert_ne!(code(&o), Some(0), "{}", says(&o));
    assert!(entries(&s.root).is_empty(), "{:?}", entries(&s.root));
}

#[test]
fn createnewfiles_names_follow_xdd_and_deletefile_removes_them_all() {
    let s = Scratch::new("xdd-newfiles");
    let o = xdd(
        &s.root,
        "-op write -target f -reqsize 1 -numreqs 4 -passes 3 -createnewfiles",
    );
    assert_eq!(code(&o), Some(0), "{}", says(&o));
    assert_eq!(entries(&s.root), ["f.00000001", "f.00000002", "f.00000003"]);
    let o = xdd(
        &s.root,
        "-op write -target g -reqsize 1 -numreqs 4 -passes 3 -createnewfiles -deletefile",
    );
    assert_eq!(code(&o), Some(0), "{}", says(&o));
    assert_eq!(entries(&s.root), ["f.00000001", "f.00000002", "f.00000003"]);
    // -engine uring: the same files, each made between passes, and a
    // note that says so (docs/xdd.md: the create is outside every pass).
    let o = xdd(
        &s.root,
        "-op write -target h -reqsize 1 -numreqs 4 -passes 2 -createnewfiles -engine uring -qd 2",
    );
    assert_eq!(code(&o), Some(0), "{}", says(&o));
    assert!(
        says(&o).contains("-createnewfiles with -engine uring: each pass's file is created by one open between passes"),
        "{}",
        says(&o)
    );
    let mut want = vec![
        "f.00000001",
        "f.00000002",
        "f.00000003",
        "h.00000001",
        "h.00000002",
    ];
    want.sort();
    assert_eq!(entries(&s.root), want);
}

#[test]
fn sigterm_ends_a_long_run_with_130_and_results_written() {
    let s = Scratch::new("xdd-sigterm");
    // Each waits for a long time in a different place: the I/O loop, a
    // throttle slot 100 s away, a pass delay, the barrier behind a
    // target that is still in its start delay.
    for (i, wait) in [
        "-runtime 3600",
        "-numreqs 10 -throttle ops 0.01",
        "-numreqs 10 -passes 2 -passdelay 3600",
        "-numreqs 10 -passes 2 -startdelay target 1 3600",
    ]
    .iter()
    .enumerate()
    {
        let dir = s.path(&format!("run{i}"));
        std::fs::create_dir(&dir).unwrap();
        let line = format!(
            "-op write -targets 2 f g -reqsize 1 {wait} --json r.json -hb 0.05 -hb output hb"
        );
        let mut child = xdd_cmd(&dir, &line)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signal once the run is under way: its heartbeat file has a row,
        // or only its header where target 0 has done its pass in an
        // instant and waits for the next (a waiting target writes no
        // row). Bounded: a minute, then the test fails.
        let hb = dir.join("hb.T0000.csv");
        let lines = if wait.contains("startdelay") { 1 } else { 2 };
        let mut polls = 0;
        while std::fs::read_to_string(&hb).map_or(0, |t| t.lines().count()) < lines {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{wait}: xdd ended early"
            );
            polls += 1;
            if polls == 3000 {
                let _ = child.kill();
                panic!("{wait}: no heartbeat row in a minute");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let o = wait_or_kill(child);
        assert_eq!(code(&o), Some(130), "{wait}: {}", says(&o));
        let j = json(&dir.join("r.json"));
        assert_eq!(j["outcome"]["status"], "interrupted", "{wait}");
        if i == 0 {
            assert!(j["payload"]["combined"]["ops"].as_u64().unwrap() > 0);
        }
        // The targets were made by the interrupted run: removed.
        assert_eq!(
            entries(&dir),
            ["hb.T0000.csv", "hb.T0001.csv", "r.json"],
            "{wait}"
        );
    }
}

/// Waits for the child; a run that ignores SIGTERM is killed after a
/// minute so that the test fails instead of hanging.
fn wait_or_kill(mut child: std::process::Child) -> Output {
    for _ in 0..3000 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("xdd did not end after SIGTERM");
}

#[test]
fn every_output_is_checked_before_any_io() {
    let s = Scratch::new("xdd-outputs");
    let bad = "/nonexistent-iolab-dir/x";
    for (opt, extra) in [
        ("-output", format!("-output {bad}")),
        ("-csvout", format!("-csvout {bad}")),
        ("-combinedout", format!("-combinedout {bad}")),
        ("-errout", format!("-errout {bad}")),
        ("-json", format!("--json {bad}")),
        ("-timestamps", format!("-ts summary -ts output {bad}")),
        ("-seek", format!("-seek save {bad}")),
        ("-heartbeat", format!("-hb 1 -hb output {bad}")),
    ] {
        let o = xdd(
            &s.root,
            &format!("-op write -target f -reqsize 1 -numreqs 4 {extra}"),
        );
        assert_eq!(code(&o), Some(2), "{opt}: {}", says(&o));
        assert!(stderr(&o).contains(opt), "{opt}: {}", stderr(&o));
        assert!(entries(&s.root).is_empty(), "{opt}: {:?}", entries(&s.root));
    }
    // An existing file is checked without being emptied.
    std::fs::write(s.path("c.txt"), "earlier runs\n").unwrap();
    let o = xdd(
        &s.root,
        "-op write -target f -reqsize 1 -numreqs 4 -combinedout c.txt -deletefile",
    );
    assert_eq!(code(&o), Some(0), "{}", says(&o));
    assert!(std::fs::read_to_string(s.path("c.txt"))
        .unwrap()
        .starts_with("earlier runs\n"));
}

#[test]
fn an_output_that_fails_after_the_run_is_exit_1() {
    let s = Scratch::new("xdd-devfull");
    for opt in ["-output", "-csvout", "--json"] {
        let o = xdd(
            &s.root,
            &format!("-op write -target f -reqsize 1 -numreqs 4 -deletefile {opt} /dev/full"),
        );
        assert_eq!(code(&o), Some(1), "{opt}: {}", says(&o));
    }
    // One output failing does not cost the others.
    let o = xdd(
        &s.root,
        "-op write -target f -reqsize 1 -numreqs 4 -deletefile -output /dev/full --json r.json",
    );
    assert_eq!(code(&o), Some(1), "{}", says(&o));
    assert!(stderr(&o).contains("-output"), "{}", stderr(&o));
    assert_eq!(json(&s.path("r.json"))["payload"]["combined"]["ops"], 4);
}

#[test]
fn memory_stays_flat_in_the_number_of_passes() {
    let s = Scratch::new("xdd-passes");
    let peak = |passes: u64| {
        let f = format!("p{passes}.json");
        let o = xdd(
            &s.root,
            &format!("-op read -target null -reqsize 1 -numreqs 10 -passes {passes} --json {f}"),
        );
        assert_eq!(code(&o), Some(0), "{}", says(&o));
        json(&s.path(&f))["payload"]["peak_rss_bytes"]
            .as_u64()
            .unwrap()
    };
    let (few, many) = (peak(20), peak(2000));
    assert!(few > 0);
    // Keeping every pass's full latency histogram (~52 KB each) made the
    // 2000-pass run about 16 times larger than the 20-pass one.
    assert!(
        many < 3 * few,
        "peak RSS {many} bytes for 2000 passes vs {few} for 20"
    );
}

/// Runs `xdd args` in `dir` to its end; its exit code and its peak
/// resident memory as the kernel counted it (wait4's ru_maxrss), bytes.
// The child is reaped by wait4 (which gives its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn xdd_peak_rss(dir: &Path, args: &str) -> (Option<i32>, u64) {
    peak_rss(xdd_cmd(dir, args))
}

/// Runs `cmd` to its end: its exit code and peak resident memory, bytes.
#[allow(clippy::zombie_processes)]
fn peak_rss(mut cmd: Command) -> (Option<i32>, u64) {
    let child = cmd
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

/// The case: 30,000 passes of one 4 KiB request stay under
/// 64 MiB (a push-grown list per pass, and the JSON rendered for a store
/// that was not asked for, took it to 198 MiB).
#[test]
fn thirty_thousand_passes_stay_under_64_mib() {
    let s = Scratch::new("xdd-30k");
    let (code, peak) = xdd_peak_rss(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 1 -passes 30000",
    );
    assert_eq!(code, Some(0));
    assert!(peak < 64 << 20, "peak RSS {} MiB", peak >> 20);
}

/// The pass spools live in TMPDIR: one that takes no file is exit 2
/// naming it before anything is created; one that fills up during the
/// run ends it with exit 1 saying so, never a report that lacks passes
/// without a word.
#[test]
fn a_tmpdir_that_cannot_hold_the_pass_figures_is_told() {
    let s = Scratch::new("xdd-tmpdir");
    let mut cmd = xdd_cmd(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 1 --json r.json",
    );
    let o = cmd.env("TMPDIR", s.path("no-such-dir")).output().unwrap();
    assert_eq!(code(&o), Some(2), "{}", says(&o));
    assert!(stderr(&o).contains("TMPDIR"), "{}", stderr(&o));
    assert_eq!(entries(&s.root), Vec::<String>::new());
    let fs = SmallFs::new(&s, "tmp", "64k");
    let mut cmd = xdd_cmd(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 1 -passes 2000 -deletefile --json r.json",
    );
    let o = cmd.env("TMPDIR", &fs.dir).output().unwrap();
    assert_eq!(code(&o), Some(1), "{}", says(&o));
    assert!(says(&o).contains("keep the pass figures"), "{}", says(&o));
    let j = json(&s.path("r.json"));
    assert_eq!(j["outcome"]["status"], "error", "{j}");
    assert_eq!(entries(&fs.dir), Vec::<String>::new());
}

#[test]
fn a_directory_target_is_refused_before_any_io() {
    let s = Scratch::new("xdd-dirtarget");
    std::fs::create_dir(s.path("d")).unwrap();
    // Written targets before it were created, then removed.
    // (A missing file that is read is refused before this check: the read
    // case pairs the directory with the null target.)
    for (op, targets) in [("read", "d null"), ("write", "f d")] {
        let o = xdd(
            &s.root,
            &format!("-op {op} -targets 2 {targets} -reqsize 1 -numreqs 4"),
        );
        assert_eq!(code(&o), Some(2), "{}", says(&o));
        assert!(stderr(&o).contains("(d): is a directory"), "{}", stderr(&o));
        assert_eq!(entries(&s.root), ["d"]);
    }
}

#[test]
fn a_time_limited_pass_stays_inside_a_small_file() {
    let s = Scratch::new("xdd-smallfile");
    std::fs::write(s.path("f"), vec![7u8; 1 << 20]).unwrap();
    for op in ["read", "write"] {
        let o = xdd(
            &s.root,
            &format!("-op {op} -target f -reqsize 64 -timelimit 0.3 --json r.json"),
        );
        assert_eq!(code(&o), Some(0), "{}", says(&o));
        let j = json(&s.path("r.json"));
        let p = &j["payload"];
        assert_eq!(p["errors"]["count"], 0, "{op}: {j}");
        assert_eq!(p["targets"][0]["range_blocks"], 1024, "{op}");
        assert!(
            p["combined"]["ops"].as_u64().unwrap() > 16,
            "{op}: it did not cycle"
        );
        assert_eq!(std::fs::metadata(s.path("f")).unwrap().len(), 1 << 20);
    }
}

#[test]
fn a_time_limited_pass_on_a_file_smaller_than_a_request_is_refused() {
    let s = Scratch::new("xdd-tinyfile");
    let data: Vec<u8> = (0..2000u32).map(|i| (i * 7) as u8).collect();
    std::fs::write(s.path("tiny"), &data).unwrap();
    for (op, limit) in [
        ("read", "-timelimit"),
        ("write", "-timelimit"),
        ("write", "-runtime"),
    ] {
        let o = xdd(
            &s.root,
            &format!("-op {op} -target tiny -reqsize 4 {limit} 0.1"),
        );
        assert_eq!(code(&o), Some(2), "{op} {limit}: {}", says(&o));
        assert!(stderr(&o).contains(limit), "{}", stderr(&o));
        assert!(stderr(&o).contains("2000 bytes"), "{}", stderr(&o));
        assert_eq!(
            std::fs::read(s.path("tiny")).unwrap(),
            data,
            "{op}: the file changed"
        );
        assert_eq!(entries(&s.root), ["tiny"]);
    }
}

#[test]
fn a_seek_range_too_small_for_stagger_is_refused() {
    let s = Scratch::new("xdd-stagger");
    for pattern in ["random", "stagger"] {
        let o = xdd(
            &s.root,
            &format!("-op write -target f -reqsize 8 -numreqs 4 -seek {pattern} -seek range 4"),
        );
        assert_eq!(code(&o), Some(2), "{pattern}: {}", says(&o));
        assert!(stderr(&o).contains("-seek"), "{}", stderr(&o));
        assert!(entries(&s.root).is_empty());
    }
}

/// Bytes in use on the file system holding `dir` (blocks not free).
fn used_bytes(dir: &Path) -> u64 {
    let st = statvfs(dir);
    (st.f_blocks - st.f_bfree) * st.f_frsize
}

fn statvfs(dir: &Path) -> libc::statvfs {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: zeroed statvfs is valid; statvfs(3) fills it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer, both
    // outliving the call.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st
}

/// An ext4 of 128 MiB whose reserved blocks are kept for uid and gid
/// 12345: root without CAP_SYS_RESOURCE cannot use them, although
/// statvfs counts them as free for root.
fn ext4_reserved_for_another(s: &Scratch) -> Result<LoopFs, String> {
    let dev = LoopDev::blank(&s.path("e4.img"), 128)?;
    loopfs::mkfs(&dev, "ext4", &["-b", "4096"])?;
    let tune = Command::new("tune2fs")
        .args(["-u", "12345", "-g", "12345", &dev.dev])
        .output()
        .map_err(|e| format!("tune2fs: {e}"))?;
    if !tune.status.success() {
        return Err(format!("tune2fs: {}", stderr(&tune)));
    }
    LoopFs::mount(dev, &s.path("m"), &[])
}

/// A -preallocate that cannot fit leaves a file of the user's as it was
/// (a failed fallocate left it grown to what ext4 managed, the file
/// system full): refused before the file is touched when the free space
/// says it cannot fit (exit 2), and put back to its size when the file
/// system runs out during the call (exit 1).
#[test]
fn a_preallocate_that_does_not_fit_leaves_a_users_file_as_it_was() {
    let s = Scratch::new("xdd-prealloc");
    let fs = match ext4_reserved_for_another(&s) {
        Ok(fs) => fs,
        Err(why) => return common::skip_or_fail("a_preallocate_that_does_not_fit", &why),
    };
    let f = fs.at.join("exist");
    std::fs::write(&f, "orig\n").unwrap();
    let used = used_bytes(&fs.at);
    let as_it_was = |what: &str, o: &Output| {
        assert_eq!(std::fs::read(&f).unwrap(), b"orig\n", "{what}: {}", says(o));
        assert_eq!(used_bytes(&fs.at), used, "{what}: space left taken");
    };
    let line = |bytes: &str| {
        format!(
            "-op write -target {} -reqsize 4 -numreqs 2 -preallocate {bytes}",
            f.display()
        )
    };
    let o = xdd(&s.root, &line("1000m"));
    assert_eq!(code(&o), Some(2), "{}", says(&o));
    assert!(stderr(&o).contains("-preallocate"), "{}", says(&o));
    as_it_was("refused", &o);
    // Within the blocks statvfs says are free (root's view, reserve
    // included), beyond those this process may take: the call fails
    // part way, as it would for a file system that filled meanwhile.
    let st = statvfs(&fs.at);
    let bytes = (st.f_bavail + (st.f_bfree - st.f_bavail) / 2) * st.f_frsize;
    let mut c = Command::new("setpriv");
    c.args(["--inh-caps=-sys_resource", "--bounding-set=-sys_resource"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(line(&bytes.to_string()).split_whitespace())
        .current_dir(&s.root);
    let o = c.output().unwrap();
    assert_eq!(code(&o), Some(1), "{}", says(&o));
    assert!(stderr(&o).contains("No space left"), "{}", says(&o));
    assert!(
        stderr(&o).contains("put back to its 5 bytes"),
        "{}",
        says(&o)
    );
    as_it_was("failed part way", &o);
}

/// A pass limited only by time cycles over what lies between its
/// offsets and the end of the target (it cycled over the target's whole
/// size from the offset on: a write grew the file, a read ran off its
/// end, a device's read failed), and an offset that leaves no request
/// is refused naming it.
#[test]
fn a_time_limited_pass_with_offsets_stays_inside_the_target() {
    let s = Scratch::new("xdd-timedoffsets");
    let data = vec![3u8; 64 << 10];
    std::fs::write(s.path("f"), &data).unwrap();
    let run = |op: &str, targets: &str, rest: &str| {
        xdd(
            &s.root,
            &format!("-op {op} {targets} -reqsize 4 -timelimit 0.2 {rest} --json r.json"),
        )
    };
    for (op, targets, rest) in [
        ("write", "-target f", "-startoffset 60"),
        ("read", "-target f", "-startoffset 60"),
        ("write", "-target f", "-passes 2 -passoffset 30"),
        ("read", "-targets 2 f f", "-targetoffset 32"),
        ("write", "-target f", "-seek interleave 2"),
        ("write", "-target f", "-seek stagger 16"),
    ] {
        let o = run(op, targets, rest);
        assert_eq!(code(&o), Some(0), "{op} {rest}: {}", says(&o));
        let j = json(&s.path("r.json"));
        assert_eq!(j["payload"]["errors"]["count"], 0, "{op} {rest}: {j}");
        assert_eq!(
            std::fs::read(s.path("f")).unwrap().len(),
            data.len(),
            "{rest}"
        );
    }
    std::fs::write(s.path("f"), &data).unwrap();
    for (targets, rest, names) in [
        ("-target f", "-startoffset 64", "-startoffset"),
        ("-target f", "-passes 3 -passoffset 32", "-passoffset"),
        ("-targets 2 f f", "-targetoffset 62", "-targetoffset"),
    ] {
        let o = run("write", targets, rest);
        assert_eq!(code(&o), Some(2), "{rest}: {}", says(&o));
        assert!(stderr(&o).contains(names), "{rest}: {}", says(&o));
        assert_eq!(std::fs::read(s.path("f")).unwrap(), data, "{rest}");
    }
    let dev = match LoopDev::scratch("xdd-timed-dev", 1) {
        Ok(d) => d,
        Err(why) => return common::skip_or_fail("a_time_limited_pass_with_offsets", &why),
    };
    let o = run("read", &format!("-target {dev}"), "-startoffset 512");
    assert_eq!(code(&o), Some(0), "{}", says(&o));
    let j = json(&s.path("r.json"));
    assert_eq!(j["payload"]["errors"]["count"], 0, "{j}");
    let o = run("read", &format!("-target {dev}"), "-startoffset 1024");
    assert_eq!(code(&o), Some(2), "{}", says(&o));
    assert!(stderr(&o).contains("-startoffset"), "{}", says(&o));
}
