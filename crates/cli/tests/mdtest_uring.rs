//! `iolab mdtest --engine uring`: the same files, directories and sizes as
//! the sync engine, on a real tmpfs and on a FUSE file system with a
//! round-trip delay; refused (exit 2, nothing created) where io_uring is
//! disabled or the backend has no metadata queue.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use iolab_core::live::Recorder;
use std::path::Path;
use std::sync::RwLock;
use std::time::Duration;

/// Tests that need io_uring hold this shared; the one that disables it
/// for the machine holds it alone.
static URING: RwLock<()> = RwLock::new(());

/// Every path under `dir` with its kind and size: `d name/` or `f name SIZE`.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for rel in tree(dir) {
        let p = dir.join(rel.trim_end_matches('/'));
        match rel.ends_with('/') {
            true => out.push(format!("d {rel}")),
            false => out.push(format!("f {rel} {}", std::fs::metadata(&p).unwrap().len())),
        }
    }
    out
}

fn run_ok(line: &str) -> String {
    let o = mdtest(line);
    assert!(o.status.success(), "{line}\n{}\n{}", stdout(&o), stderr(&o));
    stdout(&o)
}

/// Makes the tree of `opts` with each engine (-C), compares the two
/// listings, then stats and reads each tree with the other engine and
/// removes it with the other engine (-r), which must leave nothing.
fn same_tree(name: &str, opts: &str) {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new(name);
    let (a, b) = (s.path("sync"), s.path("uring"));
    let uring = "--engine uring --qd 16";
    run_ok(&format!("{opts} -C -d {}", a.display()));
    run_ok(&format!("{opts} -C -d {} {uring}", b.display()));
    let (la, lb) = (listing(&a), listing(&b));
    assert!(!la.is_empty());
    assert_eq!(la, lb, "{opts}: the engines made different trees");
    run_ok(&format!("{opts} -T -E -d {} {uring}", a.display()));
    run_ok(&format!("{opts} -T -E -d {}", b.display()));
    run_ok(&format!("{opts} -r -d {} {uring}", a.display()));
    run_ok(&format!("{opts} -r -d {}", b.display()));
    // The -d directories a -C run made stay, as with mdtest; empty.
    assert!(
        tree(&a).is_empty() && tree(&b).is_empty(),
        "{opts}: -r left {:?} {:?}",
        tree(&a),
        tree(&b)
    );
}

#[test]
fn uring_makes_the_seed_000_trees_of_the_sync_engine() {
    same_tree("uring-s000a", "-n 100 -i 1 --tasks 2");
    same_tree("uring-s000b", "-b 2 -z 3 -I 10 --tasks 2");
}

#[test]
fn uring_makes_the_seed_001_trees_of_the_sync_engine() {
    same_tree("uring-s001a", "-b 10 -z 2 -I 100 --tasks 2");
    same_tree(
        "uring-s001b",
        "-z 1 -L -u -N 1 -b 10 -I 20 -w 3900 -e 3900 --tasks 8",
    );
}

#[test]
fn uring_makes_a_unique_tree_per_task_as_the_sync_engine() {
    same_tree("uring-z2b3u", "-z 2 -b 3 -u -n 130 -w 100 -e 100 --tasks 2");
    same_tree("uring-z2b3uD", "-z 2 -b 3 -u -D -I 4 --tasks 2");
}

#[test]
fn uring_full_runs_verify_what_they_read_and_leave_nothing() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-full");
    let d = s.path("x");
    let out = run_ok(&format!(
        "-z 1 -b 4 -I 25 -w 4096 -e 4096 -X -G 7 -y --tasks 3 --engine uring --qd 8 -d {}",
        d.display()
    ));
    assert!(out.contains("3 tasks, 375 files/directories"), "{out}");
    assert!(!d.exists(), "{}", tree(&s.root).join("\n"));
}

#[test]
fn uring_names_the_file_whose_data_differs() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-verify");
    let d = s.path("x");
    let opts = format!(
        "-F -n 20 -w 64 -e 64 -G 3 -d {} --engine uring",
        d.display()
    );
    run_ok(&format!("{opts} -C"));
    let victim = d.join("test-dir.0-0/mdtest_tree.0/file.mdtest.0.7");
    let mut data = std::fs::read(&victim).unwrap();
    data[9] ^= 0xff;
    std::fs::write(&victim, &data).unwrap();
    let o = mdtest(&format!("{opts} -E -X"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o) + &stdout(&o);
    assert!(
        err.contains("file.mdtest.0.7") && err.contains("byte 9"),
        "{err}"
    );
    run_ok(&format!("{opts} -r"));
}

#[test]
fn uring_refuses_what_it_cannot_do_before_anything_is_made() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-refuse");
    let d = s.path("x");
    for (line, needle) in [
        ("-n 10 -k --engine uring", "-k"),
        ("-n 10 --qd 4", "--qd"),
        ("-n 10 --engine uring --qd 0", "--qd"),
        ("-n 10 --engine aio", "--engine"),
    ] {
        let o = mdtest(&format!("{line} -d {}", d.display()));
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{line}: {}", stderr(&o));
        assert!(!d.exists(), "{line} made {}", d.display());
    }
}

/// `iolab mdtest LINE` under `ulimit -n LIMIT`.
fn mdtest_under_ulimit_n(limit: u32, line: &str) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" mdtest {line}"))
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .env("CI", "1")
        .output()
        .unwrap()
}

/// Under `ulimit -n 64` the queued removal held 64 directories open
/// beside the process's own descriptors and failed with EMFILE (named
/// as an rmdir) where the sync engine passes: its lanes now fit the
/// limit, and the run removes everything.
#[test]
fn uring_removal_fits_the_open_file_limit() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-nofile");
    let d = s.path("t");
    let line = format!(
        "-d {} -n 1460 -z 2 -b 8 --engine uring --qd 64 --tasks 1",
        d.display()
    );
    let o = mdtest_under_ulimit_n(64, &line);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tree(&d).is_empty(), "{:?}", tree(&d));
}

/// A queue deeper than the open-file limit is refused (exit 2, nothing
/// made) naming the limit, not as a kernel without direct descriptors.
#[test]
fn uring_names_the_open_file_limit_a_deep_queue_exceeds() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-qd-limit");
    let d = s.path("t");
    let o = mdtest_under_ulimit_n(
        64,
        &format!("-d {} -n 200 --engine uring --qd 100", d.display()),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--qd 100 exceeds the open-file limit (64); lower --qd or raise ulimit -n"),
        "{err}"
    );
    assert!(!err.contains("direct descriptors"), "{err}");
    assert!(!d.exists());
}

/// Sets `kernel.io_uring_disabled` for the machine and puts the old
/// value back on drop, also when the test fails.
struct UringDisabled(String);

impl UringDisabled {
    const KNOB: &'static str = "/proc/sys/kernel/io_uring_disabled";
    fn set(v: &str) -> Option<UringDisabled> {
        let old = std::fs::read_to_string(Self::KNOB).ok()?;
        std::fs::write(Self::KNOB, v).ok()?;
        Some(UringDisabled(old.trim().to_string()))
    }
}

impl Drop for UringDisabled {
    fn drop(&mut self) {
        let _ = std::fs::write(Self::KNOB, &self.0);
    }
}

#[test]
fn uring_is_refused_by_name_when_the_kernel_disables_it() {
    let _g = URING.write().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-disabled");
    let d = s.path("x");
    let line = format!("-n 10 -d {} --engine uring", d.display());
    let ini = io500_ini(&s.root);
    let io500 = [
        "io500",
        ini.to_str().unwrap(),
        "--engine",
        "uring",
        "--qd",
        "4",
    ];
    let (o, o500) = {
        let Some(_off) = UringDisabled::set("2") else {
            return skip_or_fail("uring-disabled", "cannot write kernel.io_uring_disabled");
        };
        (mdtest(&line), iolab(&io500))
    };
    assert_eq!(o500.status.code(), Some(2), "{}", stderr(&o500));
    assert!(
        stderr(&o500).contains("io_uring_disabled"),
        "{}",
        stderr(&o500)
    );
    assert!(
        !s.path("data").exists() && !s.path("res").exists(),
        "io500 made nothing"
    );
    // As docs/mdtest.md says: exit 2 naming io_uring and what refused
    // it, nothing created; never a silent run on the sync engine.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--engine uring") && err.contains("io_uring_disabled"),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(!d.exists());
    // The sysctl is back: the same line runs.
    run_ok(&line);
}

#[test]
fn queue_depth_overlaps_round_trips_on_a_delayed_file_system() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-delayfs");
    let (back, mnt) = (s.path("back"), s.path("mnt"));
    std::fs::create_dir_all(&back).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fs = match iolab_testkit::delayfs::DelayFs::mount(&back, &mnt, Duration::from_millis(20)) {
        Ok(fs) => fs,
        Err(e) => return skip_or_fail("uring-delayfs", &format!("cannot mount FUSE: {e}")),
    };
    let opts = "-F -b 8 -z 1 -L -I 4";
    let peak = |engine: &str| {
        fs.reset_peak();
        run_ok(&format!("{opts} -C -d {}/x {engine}", mnt.display()));
        fs.peak_in_flight()
    };
    let one = peak("");
    let listing_sync = listing(&back);
    run_ok(&format!("{opts} -r -d {}/x", mnt.display()));
    let many = peak("--engine uring --qd 8");
    assert_eq!(listing(&back), listing_sync, "same files through FUSE");
    // One create at a time asks the server one thing at a time, but for
    // the releases of closed files, which the kernel sends in the
    // background; eight in flight, in eight directories, keep at least
    // six requests at the server at once.
    assert!(
        many >= 6 && many > one,
        "--qd 8: {many} requests at once, sync: {one}"
    );
    run_ok(&format!(
        "{opts} -r -d {}/x --engine uring --qd 8",
        mnt.display()
    ));
    assert_eq!(
        tree(&back),
        ["x/"],
        "everything but the -d directory removed"
    );
    drop(fs);
}

#[test]
fn uring_is_refused_on_s3_which_still_runs_the_sync_engine() {
    let s = match iolab_testkit::s3::S3Server::shared() {
        Ok(s) => s,
        Err(e) => return skip_or_fail("uring-s3", &e),
    };
    let b = "md-uring";
    s.make_bucket(b).unwrap();
    let run = |extra: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .envs(s.env())
            .env("CI", "1")
            .args(format!("mdtest -a S3 --s3.bucket={b} -d /u -n 6 {extra}").split_whitespace())
            .output()
            .unwrap()
    };
    let o = run("--engine uring --qd 4");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot queue metadata"),
        "{}",
        stderr(&o)
    );
    assert!(
        s.keys(b).unwrap().is_empty(),
        "nothing made: {:?}",
        s.keys(b)
    );
    let o = run("");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.keys(b).unwrap().is_empty());
}

/// A small io500 ini whose datadir and resultdir are under `root`.
fn io500_ini(root: &Path) -> std::path::PathBuf {
    let ini = root.join("s.ini");
    std::fs::write(
        &ini,
        format!(
            "[global]\ndatadir = {0}/data\nresultdir = {0}/res\n[debug]\nstonewall-time = 1\n\
             [ior-easy]\ntransferSize = 1m\nblockSize = 2m\n[ior-hard]\nsegmentCount = 50\n\
             [mdtest-easy]\nn = 200\n[mdtest-hard]\nn = 100\n\
             [mdworkbench]\nprecreatePerSet = 20\nfilesPerProc = 10\n",
            root.display()
        ),
    )
    .unwrap();
    ini
}

#[test]
fn io500_runs_its_mdtest_phases_through_the_uring_engine() {
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-io500");
    let ini = io500_ini(&s.root);
    let ini = ini.to_str().unwrap();
    let o = iolab(&["io500", ini, "--dry-run", "--engine", "uring", "--qd", "8"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hard_read = stdout(&o)
        .lines()
        .find(|l| l.contains("mdtest") && l.contains(" -E "))
        .map(String::from)
        .unwrap_or_default();
    assert!(
        hard_read.ends_with("--engine uring --qd 8"),
        "{}",
        stdout(&o)
    );
    let o = iolab(&[
        "io500",
        ini,
        "--dry-run",
        "--mode=extended",
        "--engine",
        "uring",
        "--qd",
        "8",
    ]);
    let out = stdout(&o);
    let mdwb: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("md-workbench -a"))
        .collect();
    assert_eq!(mdwb.len(), 3, "{out}");
    assert!(
        mdwb.iter()
            .all(|l| l.ends_with("--engine uring --qd 8: 8 objects in flight per task)")),
        "{mdwb:?}"
    );
    let o = iolab(&[
        "io500",
        ini,
        "--tasks",
        "2",
        "--mode=extended",
        "--engine",
        "uring",
        "--qd",
        "8",
    ]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    for phase in [
        "mdtest-easy-write",
        "mdworkbench-create",
        "mdworkbench-bench",
        "mdworkbench-delete",
        "mdtest-hard-read",
        "mdtest-hard-delete",
    ] {
        assert!(stdout(&o).contains(phase), "{phase}: {}", stdout(&o));
    }
    assert!(
        tree(&s.path("data")).is_empty(),
        "{:?}",
        tree(&s.path("data"))
    );
    let o = iolab(&["io500", ini, "--qd", "8"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--qd without --engine uring: {}",
        stderr(&o)
    );
}

/// The counts of an md-workbench phase (its times left out).
fn mdwb_counts(r: &iolab_io500::mdworkbench::MdwbResult) -> Vec<[u64; 8]> {
    r.iterations
        .iter()
        .map(|f| {
            [
                f.dsets_created,
                f.dsets_deleted,
                f.objects_created,
                f.objects_stated,
                f.objects_read,
                f.objects_deleted,
                f.bytes_written,
                f.bytes_read,
            ]
        })
        .collect()
}

/// io500's md-workbench with `--engine uring` (its objects through the
/// task's queue, 16 in flight): on tmpfs, with 1 and 3 tasks, the same
/// sets, objects and sizes as the sync loops after each phase, the same
/// counts, and nothing left after the cleanup.
#[test]
fn md_workbench_through_the_queue_makes_what_the_sync_loops_make() {
    use iolab_io500::mdworkbench::{bench, cleanup, precreate, MdwbSpec, DIR};
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-mdwb");
    let be = iolab_backend::by_name("posix").unwrap();
    for tasks in [1, 3] {
        let spec = |engine: &str, qd| MdwbSpec {
            dir: s.path(engine).join(DIR),
            precreate_per_set: 30,
            files_per_proc: 20,
            waiting_factor: 0.0,
            queue_depth: qd,
        };
        let (a, b) = (spec("sync", None), spec("uring", Some(16)));
        let run = |sp: &MdwbSpec, phase: u8, first: u64| {
            let out = iolab_comm::run_local(tasks, |c| match phase {
                0 => precreate(c, &*be, sp, Recorder::off()),
                1 => bench(c, &*be, sp, first, Recorder::off()),
                _ => cleanup(c, &*be, sp, first, Recorder::off()),
            });
            let r = out.into_iter().next().unwrap();
            assert!(r.failure.is_none(), "{:?}", r.failure);
            r
        };
        let same = |ra, rb, what: &str| {
            assert_eq!(
                mdwb_counts(&ra),
                mdwb_counts(&rb),
                "{tasks} tasks, {what}: counts"
            );
            assert_eq!(
                listing(&s.path("sync")),
                listing(&s.path("uring")),
                "{tasks} tasks, {what}: the engines left different objects"
            );
            (ra, rb)
        };
        for d in ["sync", "uring"] {
            std::fs::create_dir_all(s.path(d)).unwrap();
        }
        let (ra, _) = same(run(&a, 0, 0), run(&b, 0, 0), "precreate");
        assert_eq!(ra.iterations[0].objects_created, tasks as u64 * 300);
        assert_eq!(listing(&s.path("sync")).len(), 1 + tasks * 10 + tasks * 300);
        let (ra, rb) = same(run(&a, 1, 0), run(&b, 1, 0), "bench");
        assert_eq!((ra.next_index, rb.next_index), (40, 40));
        assert_eq!(ra.iterations[1].objects_read, tasks as u64 * 200);
        same(run(&a, 2, 40), run(&b, 2, 40), "cleanup");
        assert!(tree(&s.path("sync")).is_empty() && tree(&s.path("uring")).is_empty());
    }
}

/// md-workbench through the queue on a file system whose every request
/// waits at the server: with 8 objects in flight (in different sets)
/// the server has several requests at once, where the sync loops give
/// it one at a time; the objects are the same.
#[test]
fn md_workbench_queue_overlaps_round_trips_on_a_delayed_file_system() {
    use iolab_io500::mdworkbench::{bench, cleanup, precreate, MdwbSpec, DIR};
    let _g = URING.read().unwrap_or_else(|p| p.into_inner());
    let s = Scratch::new("uring-mdwb-delayfs");
    let (back, mnt) = (s.path("back"), s.path("mnt"));
    std::fs::create_dir_all(&back).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fs = match iolab_testkit::delayfs::DelayFs::mount(&back, &mnt, Duration::from_millis(10)) {
        Ok(fs) => fs,
        Err(e) => return skip_or_fail("uring-mdwb-delayfs", &format!("cannot mount FUSE: {e}")),
    };
    let be = iolab_backend::by_name("posix").unwrap();
    let spec = |qd| MdwbSpec {
        dir: mnt.join(DIR),
        precreate_per_set: 3,
        files_per_proc: 2,
        waiting_factor: 0.0,
        queue_depth: qd,
    };
    let mut peaks = Vec::new();
    let mut listings = Vec::new();
    for qd in [None, Some(8)] {
        let sp = spec(qd);
        let made = iolab_comm::run_local(1, |c| precreate(c, &*be, &sp, Recorder::off()));
        assert!(made[0].failure.is_none(), "{:?}", made[0].failure);
        fs.reset_peak();
        let b = iolab_comm::run_local(1, |c| bench(c, &*be, &sp, 0, Recorder::off()));
        assert!(b[0].failure.is_none(), "{qd:?}: {:?}", b[0].failure);
        peaks.push(fs.peak_in_flight());
        listings.push(listing(&back));
        let c = iolab_comm::run_local(1, |c| cleanup(c, &*be, &sp, 4, Recorder::off()));
        assert!(c[0].failure.is_none(), "{qd:?}: {:?}", c[0].failure);
        assert!(tree(&back).is_empty(), "{qd:?}: {:?}", tree(&back));
    }
    assert_eq!(listings[0], listings[1], "same objects through FUSE");
    assert!(
        peaks[1] >= 4 && peaks[1] > peaks[0],
        "--qd 8: {} requests at once, sync: {}",
        peaks[1],
        peaks[0]
    );
    drop(fs);
}
