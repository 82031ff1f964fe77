//! Every benchmark script in bench/ runs in the suite in a small smoke
//! mode (tiny sizes, one round, the test's iolab binary), so none breaks
//! unseen: one did, reading figures from where the JSON no longer had
//! them. Their figures are not looked at here (speed is measured by the
//! scripts themselves, never asserted in tests); a script must run to
//! its end, exit 0 and print its table. A script whose peer (fio,
//! iperf3, SeaweedFS, a C compiler) is missing is skipped with the
//! reason printed (a failure under CI).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a smoke run may take.
const SMOKE_TIMEOUT: Duration = Duration::from_secs(480);

/// How each script is run small: arguments (`BIN` stands for the test's
/// iolab, `DIR` for the run's scratch directory), environment, the
/// commands it needs, whether it needs root, and what must be in the
/// scratch directory first.
struct Smoke {
    script: &'static str,
    setup: Option<fn(dir: &Path, bin: &str)>,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    peers: &'static [&'static str],
    root: bool,
}

const SMOKES: &[Smoke] = &[
    Smoke {
        setup: None,
        script: "cleanup-vs-rm.sh",
        args: &["BIN"],
        env: &[("RUNS", "1"), ("ITEMS", "200"), ("TASKS", "2")],
        peers: &[],
        root: false,
    },
    Smoke {
        setup: None,
        script: "e2e-vs-iperf3.sh",
        args: &["BIN"],
        env: &[
            ("RUNS", "1"),
            ("SECS", "1"),
            ("MB", "16"),
            ("FILE_MB", "16"),
        ],
        peers: &["iperf3"],
        root: false,
    },
    Smoke {
        setup: Some(io500_stand_in),
        script: "io500-vs-app.sh",
        args: &["DIR/app", "DIR/small.ini", "2", "BIN"],
        env: &[("RUNS", "1")],
        peers: &["mpirun"],
        root: false,
    },
    Smoke {
        setup: Some(ior_stand_in),
        script: "ior-vs-ior.sh",
        args: &["DIR/ior", "BIN"],
        // The machine's free page reporting is left as it is.
        env: &[
            ("RUNS", "1"),
            ("BLOCK_MB", "4"),
            ("SEGMENTS", "40"),
            ("REPORTING", "keep"),
        ],
        peers: &["mpirun", "python3"],
        root: false,
    },
    Smoke {
        setup: None,
        script: "lst-vs-sockperf.sh",
        args: &["BIN"],
        env: &[("RUNS", "1"), ("SECS", "1")],
        peers: &["sockperf", "iperf3"],
        root: false,
    },
    Smoke {
        setup: None,
        script: "live-overhead.sh",
        args: &["BIN"],
        env: &[
            ("RUNS", "1"),
            ("ITEMS", "200"),
            ("OPS", "2000"),
            ("SETTLE", "0"),
            ("INSTR", "1"),
            ("VG_ITEMS", "20"),
            ("VG_OPS", "200"),
        ],
        peers: &["python3", "valgrind"],
        root: true,
    },
    Smoke {
        setup: None,
        script: "mdtest-s3.sh",
        args: &["BIN"],
        env: &[("RUNS", "1"), ("ITEMS", "20"), ("TASKS_LIST", "1")],
        peers: &["weed", "python3"],
        root: false,
    },
    Smoke {
        setup: Some(mdtest_stand_in),
        script: "mdtest-vs-ior.sh",
        args: &["DIR/mdtest", "BIN"],
        env: &[("RUNS", "1"), ("ITEMS", "200"), ("SETTLE", "0")],
        peers: &["mpirun", "python3"],
        root: false,
    },
    Smoke {
        setup: None,
        script: "mdtest-vs-syscalls.sh",
        args: &["50", "1"],
        env: &[
            ("IOLAB", "BIN"),
            ("DELAYFS", "DELAYFS"),
            ("RSS_ITEMS", "1000"),
            ("DELAY_ITEMS", "2"),
            ("MDWB_PER_SET", "2"),
        ],
        peers: &["cc", "python3", "DELAYFS"],
        root: true,
    },
    Smoke {
        setup: Some(small_qualify_plan),
        script: "qualify-vs-alone.sh",
        args: &["BIN", "DIR/plan.toml"],
        // The machine's free page reporting is left as it is.
        env: &[
            ("ROUNDS", "1"),
            ("ALONE", "1"),
            ("SETTLE", "0"),
            ("REPORTING", "keep"),
        ],
        peers: &["python3"],
        root: false,
    },
    Smoke {
        setup: None,
        script: "s3-vs-minio-go.sh",
        args: &["BIN"],
        env: &[("SMOKE", "1")],
        peers: &["weed", "go", "curl"],
        root: false,
    },
    Smoke {
        setup: None,
        script: "survey-vs-fio.sh",
        args: &[],
        env: &[
            ("IOLAB", "BIN"),
            ("SIZE_MB", "16"),
            ("REPS", "1"),
            ("THREADS", "1"),
        ],
        peers: &["fio"],
        root: true,
    },
    Smoke {
        setup: None,
        script: "xdd-data-cost.sh",
        args: &[],
        env: &[("IOLAB", "BIN"), ("REPEAT", "1"), ("FILE_MB", "16")],
        peers: &[],
        root: true,
    },
    Smoke {
        setup: None,
        script: "xdd-createnewfiles.sh",
        args: &["2", "1"],
        env: &[("IOLAB", "BIN"), ("DELAYFS", "DELAYFS"), ("MB", "1")],
        peers: &["python3", "DELAYFS"],
        root: true,
    },
    Smoke {
        setup: None,
        script: "xdd-vs-fio.sh",
        args: &[],
        env: &[
            ("IOLAB", "BIN"),
            ("FILE_MB", "16"),
            ("SEQ_MB", "16"),
            ("RAND_MB", "4"),
            ("REPEAT", "1"),
        ],
        peers: &["fio", "mkfs.ext4", "python3"],
        root: true,
    },
];

/// The smokes that take longest here (some 40 s each, where the rest
/// take 20 s or less).
const LONGEST: &[&str] = &["s3-vs-minio-go.sh", "live-overhead.sh"];

/// For io500-vs-app.sh: a stand-in for the io500 app (`DIR/app/io500`,
/// which the script runs under mpirun) that is iolab's own io500 on rank
/// 0, and the small ini, so the script's whole path (both runs,
/// the scores, the ratio table) is exercised without the app, which is
/// built from sources this suite cannot fetch.
fn io500_stand_in(dir: &Path, bin: &str) {
    use std::os::unix::fs::PermissionsExt;
    let app = dir.join("app");
    std::fs::create_dir_all(&app).unwrap();
    let stand_in = app.join("io500");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\n[ \"${{OMPI_COMM_WORLD_RANK:-0}}\" = 0 ] || exit 0\nexec env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMIX_RANK {bin} io500 --tasks 2 \"$1\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("small.ini"),
        "[debug]\nstonewall-time = 1\n[ior-easy]\ntransferSize = 1m\nblockSize = 8m\n\
         [ior-hard]\nsegmentCount = 50\n[mdtest-easy]\nn = 200\n[mdtest-hard]\nn = 100\n",
    )
    .unwrap();
}

/// For ior-vs-ior.sh: a stand-in for IOR (`DIR/ior`, which the script
/// runs under mpirun -n 2) that is `iolab ior --tasks 2` on rank 0, so
/// the script's whole path (both tools' runs, their outputs, the ratio
/// table) is exercised without IOR, which is built from sources this
/// suite cannot fetch.
fn ior_stand_in(dir: &Path, bin: &str) {
    rank0_stand_in(dir, bin, "ior");
}

/// For mdtest-vs-ior.sh: the same for IOR's mdtest (`DIR/mdtest`).
fn mdtest_stand_in(dir: &Path, bin: &str) {
    rank0_stand_in(dir, bin, "mdtest");
}

/// `DIR/TOOL`: under mpirun, `iolab TOOL ARGS --tasks 2` on rank 0 (out
/// of MPI's sight) and nothing on the other ranks.
fn rank0_stand_in(dir: &Path, bin: &str, tool: &str) {
    use std::os::unix::fs::PermissionsExt;
    let stand_in = dir.join(tool);
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\n[ \"${{OMPI_COMM_WORLD_RANK:-0}}\" = 0 ] || exit 0\nexec env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMIX_RANK {bin} {tool} \"$@\" --tasks 2\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// For qualify-vs-alone.sh: a plan of two points a curve, 2 repeats,
/// small sizes, its files under DIR.
fn small_qualify_plan(dir: &Path, _bin: &str) {
    std::fs::write(
        dir.join("plan.toml"),
        format!(
            "label = \"smoke\"\nrepeats = 2\ndir = \"{}\"\n[network]\ntests = [\"ping\", \"brw write 1m\"]\nconcurrency = 2\nduration_s = 0.3\n[data]\ntasks = 2\nsize_mb = 8\n[metadata]\ntasks = 2\nfiles = 100\n",
            dir.display()
        ),
    )
    .unwrap();
}

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

/// testkit's `iolab-delayfs`, built beside the test's iolab when the
/// workspace's tests are built (testkit's own test runs it).
fn delayfs() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_iolab")).with_file_name("iolab-delayfs")
}

fn on_path(cmd: &str) -> bool {
    if cmd == "DELAYFS" {
        return delayfs().exists();
    }
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs one script small; Err says why it failed.
fn smoke(s: &Smoke) -> Result<String, String> {
    let bin = env!("CARGO_BIN_EXE_iolab");
    let dir = std::env::temp_dir().join(format!(
        "iolab-bench-smoke-{}-{}",
        std::process::id(),
        s.script
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let sub = |v: &str| {
        if v == "BIN" {
            bin.to_string()
        } else if v == "DELAYFS" {
            delayfs().display().to_string()
        } else {
            v.replace("DIR", &dir.display().to_string())
        }
    };
    if let Some(setup) = s.setup {
        setup(&dir, bin);
    }
    let (out_f, err_f) = (dir.join("out"), dir.join("err"));
    let mut c = Command::new("bash");
    c.arg(bench_dir().join(s.script))
        .args(s.args.iter().map(|a| sub(a)))
        .envs(s.env.iter().map(|(k, v)| (*k, sub(v))))
        .env("TMPDIR", &dir)
        .current_dir(bench_dir().join(".."))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_f).unwrap())
        .stderr(std::fs::File::create(&err_f).unwrap())
        .process_group(0);
    let mut child = c.spawn().map_err(|e| format!("cannot run bash: {e}"))?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > SMOKE_TIMEOUT {
            // SAFETY: kill(2) on the script's own process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            // SAFETY: as above.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&out_f).unwrap_or_default();
    let err = std::fs::read_to_string(&err_f).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let shown = format!(
        "{}: {status:?}\n--- stdout:\n{out}\n--- stderr:\n{err}",
        s.script
    );
    if t0.elapsed() > SMOKE_TIMEOUT {
        return Err(format!("still running after {SMOKE_TIMEOUT:?}\n{shown}"));
    }
    if !status.success() || out.trim().is_empty() || err.contains("Traceback") {
        return Err(shown);
    }
    Ok(out)
}

/// Every script in bench/ has its smoke entry (a new one must be added).
#[test]
fn every_bench_script_has_a_smoke_run() {
    let mut scripts: Vec<String> = std::fs::read_dir(bench_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sh"))
        .collect();
    scripts.sort();
    let mut listed: Vec<&str> = SMOKES.iter().map(|s| s.script).collect();
    listed.sort_unstable();
    assert_eq!(scripts, listed);
}

#[test]
fn every_bench_script_runs_small_to_its_end() {
    // Two at a time: the smokes assert no speed, and most of each one's
    // time is a script waiting on its own runs.
    // The longest first (the Go peer's build and its S3 rounds, the
    // valgrind runs of a debug build), one on each thread, so that the
    // short ones fill in after them.
    let mut order: Vec<&Smoke> = SMOKES.iter().collect();
    order.sort_by_key(|s| !LONGEST.contains(&s.script));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&s) = order.get(i) else {
                    break;
                };
                if let Err(e) = smoke_if_possible(s) {
                    failures.lock().unwrap().push(e);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Runs the smoke of `s` unless a peer or root is missing (a skip, or a
/// failure under CI).
fn smoke_if_possible(s: &Smoke) -> Result<(), String> {
    let missing: Vec<&str> = s.peers.iter().copied().filter(|p| !on_path(p)).collect();
    if !missing.is_empty() {
        common::skip_or_fail(
            s.script,
            &format!("its peers are missing: {}", missing.join(", ")),
        );
        return Ok(());
    }
    if s.root && !common::is_root() {
        common::skip_or_fail(s.script, "needs root (tmpfs or loop mounts)");
        return Ok(());
    }
    let t0 = Instant::now();
    smoke(s).map(|_| println!("{}: ran in {:.1} s", s.script, t0.elapsed().as_secs_f64()))
}
