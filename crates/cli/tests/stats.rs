//! `iolab stats`: the real binary, collectors as real detached processes,
//! a real workload (`iolab xdd` with O_DIRECT on a loop device), and
//! "nodes" that are network namespaces reached with `ip netns exec`.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::loopfs::LoopDev;
use common::{iolab, stderr, stdout, Scratch};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Network namespaces standing in for hosts; deleted on drop. They get
/// no addresses: collectors are started and their records fetched
/// through `ip netns exec` alone.
struct Namespaces {
    names: Vec<String>,
}

impl Namespaces {
    fn new(tag: &str, n: usize) -> Result<Namespaces, String> {
        let mut ns = Namespaces { names: Vec::new() };
        for i in 0..n {
            let name = format!("iolab-st-{tag}-{}-{i}", std::process::id());
            let ok = Command::new("ip")
                .args(["netns", "add", &name])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err(format!("ip netns add {name} failed"));
            }
            ns.names.push(name);
        }
        Ok(ns)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Stops any collector a failed test left in `tmp` (by its pid file),
/// so no test leaves a process behind.
struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        let Ok(nodes) = std::fs::read_dir(self.0.join("iolab-stats")) else {
            return;
        };
        for n in nodes.flatten() {
            if let Ok(pid) = std::fs::read_to_string(n.path().join("collector.pid")) {
                let _ = Command::new("kill").args(["-9", pid.trim()]).status();
            }
        }
    }
}

/// A CSV file as (header, rows).
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// The rows of `series`, each as column -> cell.
fn series_rows(path: &Path, series: &str) -> Vec<BTreeMap<String, String>> {
    let (header, rows) = read_csv(path);
    rows.into_iter()
        .filter(|r| r[3] == series)
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// The only node folder of an analysis (the local host's name).
fn only_node(csv_dir: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(csv_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.remove(0)
}

fn ok(o: &std::process::Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

fn run_in(dir: &Path, words: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// A TOML config sampling the CPU each second on this node, its run
/// directory in the scratch (`s/c.toml`); returns its path.
fn cpu_config(s: &Scratch) -> String {
    let cfg = s.path("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "tmp = \"{}\"\ncpu_interval = 1\nmeminfo_interval = 0\n",
            s.path("tmp").display()
        ),
    )
    .unwrap();
    cfg.to_str().unwrap().to_string()
}

#[test]
fn bad_config_is_refused_naming_the_variable() {
    let s = Scratch::new("stats-bad");
    let tmp = s.path("tmp");
    for (text, named) in [
        // Read by bash: a misspelt interval is named (a helper variable
        // such as NODES=a is fine, as in the kit).
        (
            "DISK_INTERVAL=1\nDISK_INTERVALL=2\n",
            "unknown variable DISK_INTERVALL",
        ),
        ("DISK_INTERVAL=1\nif then\n", "line 3"),
        ("DISK_INTERVAL=-1\n", "DISK_INTERVAL=-1"),
        ("CPU_INTERVAL=fast\n", "CPU_INTERVAL=fast"),
        ("STATFS_INTERVAL=0\n", "STATFS_PATHS"),
        ("# nothing set\n", "nothing would be collected"),
    ] {
        let cfg = s.path("c.sh");
        std::fs::write(&cfg, format!("TMP={}\n{text}", tmp.display())).unwrap();
        for step in ["start", "stop"] {
            let o = iolab(&["stats", step, cfg.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(2), "{step} {text}: {}", stderr(&o));
            assert!(stderr(&o).contains(named), "{}", stderr(&o));
        }
        assert!(!tmp.exists(), "nothing is created for a bad config");
    }
    let o = iolab(&[
        "stats",
        "analyse",
        s.path("none.tgz").to_str().unwrap(),
        "csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = iolab(&["stats", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Start, a real O_DIRECT write of a known size on a loop device, stop,
/// analyse: the CSV's write counters for that device add up to the bytes
/// written, for a 1-second interval and for 0 (start and stop only).
#[test]
fn disk_write_counters_agree_with_the_bytes_xdd_wrote() {
    let s = Scratch::new("stats-disk");
    let lo = match LoopDev::blank(&s.path("img"), 64) {
        Ok(l) => l,
        Err(why) => {
            common::skip_or_fail("disk_write_counters_agree_with_the_bytes_xdd_wrote", &why);
            return;
        }
    };
    let _reaper = Reaper(s.path("tmp"));
    for interval in [1, 0] {
        let cfg = s.path(&format!("c{interval}.sh"));
        std::fs::write(
            &cfg,
            format!(
                "TMP={}\nDISK_INTERVAL={interval}\nVMSTAT_INTERVAL={interval}\nBRW_INTERVAL={interval}\n",
                s.path("tmp").display()
            ),
        )
        .unwrap();
        let cfg = cfg.to_str().unwrap();
        ok(&run_in(&s.root, &["stats", "start", cfg]));
        if interval > 0 {
            // Let an interval sample fall before the workload.
            std::thread::sleep(std::time::Duration::from_millis(1300));
        }
        // 64 requests of 128 KiB (XDD's default 1024-byte blocks).
        let xdd = iolab(&[
            "xdd", "-op", "write", "-target", &lo.dev, "-dio", "-reqsize", "128", "-numreqs", "64",
        ]);
        ok(&xdd);
        let written: u64 = 64 * 128 * 1024;
        assert!(
            stdout(&xdd).contains(&written.to_string()),
            "{}",
            stdout(&xdd)
        );
        let tgz = format!("p{interval}.tgz");
        ok(&run_in(&s.root, &["stats", "stop", cfg, &tgz]));
        let a = run_in(&s.root, &["stats", "analyse", &tgz, "csv"]);
        ok(&a);
        assert!(
            stdout(&a).contains("no Lustre statistics on") && stdout(&a).contains("brw"),
            "Lustre is absent, recorded: {}",
            stdout(&a)
        );
        let node = only_node(&s.path(&format!("p{interval}-csv")));
        let rows = series_rows(&node.join("disk.csv"), lo.name());
        if interval == 0 {
            assert_eq!(rows.len(), 1, "0 = one start-to-stop interval");
        } else {
            assert!(
                rows.len() >= 2,
                "a 1 s interval over >1.3 s gives several rows: {rows:?}"
            );
        }
        let bytes: u64 = rows
            .iter()
            .map(|r| r["write_bytes_delta"].parse::<u64>().unwrap())
            .sum();
        let sectors: u64 = rows
            .iter()
            .map(|r| r["write_sectors_delta"].parse::<u64>().unwrap())
            .sum();
        assert_eq!(bytes, sectors * 512);
        // Direct writes of whole 128 KiB requests: the device counts every
        // byte, and nothing else writes to this fresh device.
        assert!(
            bytes >= written && bytes < written + 4096,
            "interval {interval}: diskstats say {bytes} bytes written, xdd wrote {written}"
        );
        for r in &rows {
            let d: f64 = r["write_bytes_delta"].parse().unwrap();
            let rate: f64 = r["write_bytes_per_s"].parse().unwrap();
            let secs: f64 = r["interval_s"].parse().unwrap();
            assert!(
                (rate * secs - d).abs() <= d * 0.01 + 1.0,
                "rate x interval = delta: {r:?}"
            );
        }
        assert!(node.join("vmstat.csv").is_file());
        assert!(!node.join("brw.csv").exists());
        assert!(s.path(&format!("p{interval}-csv.tgz")).is_file());
        assert!(
            !s.path("tmp/iolab-stats").exists()
                || std::fs::read_dir(s.path("tmp/iolab-stats"))
                    .unwrap()
                    .count()
                    == 0,
            "stop cleans the collector's run directory"
        );
    }
}

/// A collector killed outright leaves nothing running; stop still
/// gathers what it wrote, takes the stop samples and says what happened
/// (exit 1: the node failed).
#[test]
fn a_killed_collector_leaves_nothing_running() {
    let s = Scratch::new("stats-kill");
    let _reaper = Reaper(s.path("tmp"));
    let cfg = cpu_config(&s);
    let cfg = cfg.as_str();
    ok(&run_in(&s.root, &["stats", "start", cfg]));
    let again = run_in(&s.root, &["stats", "start", cfg]);
    assert_eq!(again.status.code(), Some(1), "a second start is refused");
    assert!(
        stderr(&again).contains("already running"),
        "{}",
        stderr(&again)
    );
    let node_dir = std::fs::read_dir(s.path("tmp/iolab-stats"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let pid: i32 = std::fs::read_to_string(node_dir.join("collector.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    // Gone once the system has reaped it (it is not our child).
    for _ in 0..100 {
        let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if st.is_empty() || st.contains(") Z") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The record is kept, but a collector that died is a failed node.
    let stop = run_in(&s.root, &["stats", "stop", cfg, "k.tgz"]);
    assert_eq!(stop.status.code(), Some(1), "{}", stderr(&stop));
    assert!(
        stderr(&stop).contains("the collector died before the stop"),
        "{}",
        stderr(&stop)
    );
    let a = run_in(&s.root, &["stats", "analyse", "k.tgz"]);
    ok(&a);
    assert!(
        stdout(&a).contains("was not running at stop"),
        "{}",
        stdout(&a)
    );
    let node = only_node(&s.path("k-csv"));
    assert!(!series_rows(&node.join("cpu.csv"), "cpu0").is_empty());
    let left = Command::new("pgrep")
        .args([
            "-f",
            &format!("stats collect --dir {}", s.path("tmp").display()),
        ])
        .output()
        .unwrap();
    assert!(
        stdout(&left).trim().is_empty(),
        "left running: {}",
        stdout(&left)
    );
}

/// `run` wraps a command: start, the command, stop, analyse; its exit
/// status is the command's.
#[test]
fn run_wraps_a_command_and_keeps_its_exit_status() {
    let s = Scratch::new("stats-run");
    let o = run_in(
        &s.root,
        &[
            "stats",
            "run",
            "local,0",
            "--tarball",
            "r.tgz",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(s.path("r.tgz").is_file());
    let node = only_node(&s.path("r-csv"));
    for stat in ["vmstat", "disk", "meminfo", "net", "cpu"] {
        assert!(node.join(format!("{stat}.csv")).is_file(), "{stat}");
    }
    let o = run_in(
        &s.root,
        &[
            "stats",
            "run",
            "local,1s",
            "--tarball",
            "q.tgz",
            "--",
            "true",
        ],
    );
    ok(&o);
    // A command that cannot run is refused before any collector starts
    // (it ran the collectors and wrote the tarballs, then exit 1).
    let fresh = s.path("none");
    std::fs::create_dir(&fresh).unwrap();
    for cmd in ["/no/such/cmd", "no-such-iolab-command"] {
        let o = run_in(&fresh, &["stats", "run", "local,1s", "--", cmd]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert!(stderr(&o).contains("cannot run"), "{}", stderr(&o));
        assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 0, "{cmd}");
    }
}

/// A STATFS_PATHS path this node cannot ask (a typo, a file system not
/// mounted here) is named in a note of the run's output, and statfs.csv
/// holds the paths that could be asked; with none, statfs is absent and
/// the note says which paths and why (statfs.csv held only its header,
/// with no word).
#[test]
fn a_statfs_path_that_cannot_be_asked_is_named_in_the_outputs() {
    let s = Scratch::new("stats-statfs-missing");
    let tmp = s.path("tmp");
    let _reaper = Reaper(tmp.clone());
    let missing = s.path("no-such-mount");
    let cfg = s.path("c.sh");
    let write = |paths: &str| {
        std::fs::write(
            &cfg,
            format!(
                "TMP={}\nSTATFS_INTERVAL=0\nSTATFS_PATHS=\"{paths}\"\n",
                tmp.display()
            ),
        )
        .unwrap()
    };
    write(&format!("{} {}", s.root.display(), missing.display()));
    let c = cfg.to_str().unwrap();
    let o = run_in(
        &s.root,
        &["stats", "run", c, "--tarball", "a.tgz", "--", "true"],
    );
    ok(&o);
    let note = stdout(&o)
        .lines()
        .find(|l| l.starts_with("note:") && l.contains(&*missing.to_string_lossy()))
        .map(str::to_string);
    let note = note.unwrap_or_else(|| panic!("no note names the path: {}", stdout(&o)));
    assert!(
        note.contains("cannot be asked") && note.contains("No such file"),
        "{note}"
    );
    let rows = series_rows(
        &only_node(&s.path("a-csv")).join("statfs.csv"),
        &s.root.display().to_string(),
    );
    assert!(!rows.is_empty(), "the path that exists is recorded");
    write(&missing.display().to_string());
    let o = run_in(
        &s.root,
        &["stats", "run", c, "--tarball", "b.tgz", "--", "true"],
    );
    ok(&o);
    assert!(
        stdout(&o).lines().any(|l| l.starts_with("note:")
            && l.contains("statfs: no STATFS_PATHS path can be asked")
            && l.contains(&*missing.to_string_lossy())),
        "{}",
        stdout(&o)
    );
    assert!(!only_node(&s.path("b-csv")).join("statfs.csv").exists());
}

/// SIGINT or SIGTERM to the `iolab stats run` process alone (as a batch
/// system or supervisor sends it) reaches the command, as with `timeout`:
/// the command's trap runs and its exit status is run's.
#[test]
fn run_passes_sigint_and_sigterm_on_to_its_command() {
    use std::time::{Duration, Instant};
    let s = Scratch::new("stats-run-signal");
    for (sig, name, code) in [(libc::SIGINT, "INT", 5), (libc::SIGTERM, "TERM", 6)] {
        let got = s.path(&format!("got-{name}"));
        let ready = s.path(&format!("ready-{name}"));
        let script = format!(
            "trap 'echo INT > {g}; exit 5' INT; trap 'echo TERM > {g}; exit 6' TERM; \
             : > {r}; while :; do sleep 0.1; done",
            g = got.display(),
            r = ready.display()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args([
                "stats",
                "run",
                "local,0",
                "--tarball",
                &format!("{name}.tgz"),
            ])
            .args(["--", "sh", "-c", &script])
            .current_dir(&s.root)
            .env("CI", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !ready.exists() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(ready.exists(), "the command did not start");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, sig) };
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            panic!("iolab stats run did not end after SIG{name}");
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "SIG{name}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), name);
    }
}

/// Three "nodes" through `ip netns exec`, one of which does not exist:
/// it is reported (exit 1) and the two others collect into one tarball
/// while an xdd write runs. Start names the remote shell with --rsh,
/// stop takes it from IOLAB_RSH.
#[test]
fn nodes_collect_through_the_remote_shell_and_an_unreachable_one_is_reported() {
    let name = "nodes_collect_through_the_remote_shell_and_an_unreachable_one_is_reported";
    let s = Scratch::new("stats-nodes");
    let ns = match Namespaces::new("n", 2) {
        Ok(n) => n,
        Err(why) => {
            common::skip_or_fail(name, &why);
            return;
        }
    };
    let lo = match LoopDev::blank(&s.path("img"), 64) {
        Ok(l) => l,
        Err(why) => {
            common::skip_or_fail(name, &why);
            return;
        }
    };
    let _reaper = Reaper(s.path("tmp"));
    let missing = format!("iolab-st-missing-{}", std::process::id());
    let cfg = s.path("c.sh");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nNET_INTERVAL=1\nDISK_INTERVAL=1\nSERVICE_INTERVAL=0\nOST_LIST=\"{}\"\nCLIENT_LIST=\"{} {missing}\"\n",
            s.path("tmp").display(),
            ns.names[0],
            ns.names[1]
        ),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let o = run_in(
        &s.root,
        &["stats", "start", cfg, "--rsh", "exec:ip netns exec"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&missing), "{}", stderr(&o));
    for n in &ns.names {
        assert!(
            stdout(&o).contains(&format!("collecting on {n}")),
            "{}",
            stdout(&o)
        );
    }
    let xdd = iolab(&[
        "xdd", "-op", "write", "-target", &lo.dev, "-dio", "-reqsize", "64", "-numreqs", "32",
    ]);
    ok(&xdd);
    let written: u64 = 32 * 64 * 1024;
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["stats", "stop", cfg, "all.tgz"])
        .current_dir(&s.root)
        .env("IOLAB_RSH", "exec:ip netns exec")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&missing));
    let a = run_in(&s.root, &["stats", "analyse", "all.tgz", "csv"]);
    ok(&a);
    assert!(
        stdout(&a).contains(&format!("failed node {missing}")),
        "{}",
        stdout(&a)
    );
    for n in &ns.names {
        let net = s.path(&format!("all-csv/{n}/net.csv"));
        // Sampled inside the namespace: it has only its own loopback.
        let (_, rows) = read_csv(&net);
        assert!(!rows.is_empty());
        assert!(rows.iter().all(|r| r[3] == "lo"), "{rows:?}");
        // Block devices are not per namespace: each node saw the write.
        let disk = series_rows(&s.path(&format!("all-csv/{n}/disk.csv")), lo.name());
        let bytes: u64 = disk
            .iter()
            .map(|r| r["write_bytes_delta"].parse::<u64>().unwrap())
            .sum();
        assert!(
            bytes >= written && bytes < written + 4096,
            "{n}: {bytes} vs {written}"
        );
        assert!(
            stdout(&a)
                .lines()
                .any(|l| l.contains("no Lustre statistics on")
                    && l.contains(n.as_str())
                    && l.contains("service")),
            "{}",
            stdout(&a)
        );
    }
}

/// `stats run` whose collector cannot start on a node does not run the
/// command unmonitored (it ran, and the failure showed only at the end):
/// exit 1 naming the node before the command starts, the collector that
/// did start stopped again, nothing written. `--keep-going` runs it,
/// names the node first, and ends with exit 1.
#[test]
fn run_refuses_to_start_the_command_when_a_collector_cannot_start() {
    let name = "run_refuses_to_start_the_command_when_a_collector_cannot_start";
    let s = Scratch::new("stats-run-nodes");
    let ns = match Namespaces::new("r", 1) {
        Ok(n) => n,
        Err(why) => {
            common::skip_or_fail(name, &why);
            return;
        }
    };
    let tmp = s.path("tmp");
    let _reaper = Reaper(tmp.clone());
    let missing = format!("iolab-st-gone-{}", std::process::id());
    let cfg = s.path("c.sh");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nVMSTAT_INTERVAL=1\nCLIENT_LIST=\"{} {missing}\"\n",
            tmp.display(),
            ns.names[0]
        ),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let ran = s.path("ran");
    let touch = format!("touch {}", ran.display());
    let run = |extra: &[&str]| {
        let mut w = vec!["stats", "run", cfg, "--rsh", "exec:ip netns exec"];
        w.extend(extra);
        w.extend(["--tarball", "t.tgz", "--", "sh", "-c", &touch]);
        run_in(&s.root, &w)
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("the collector did not start on {missing}")),
        "{err}"
    );
    assert!(err.contains("the command was not run"), "{err}");
    assert!(!err.contains(&format!("on {}:", ns.names[0])), "{err}");
    assert!(!ran.exists(), "the command ran unmonitored");
    assert!(!s.path("t.tgz").exists() && !s.path("t-csv").exists());
    // The collector that did start was stopped and its record removed.
    let node_dir = tmp.join("iolab-stats").join(&ns.names[0]);
    assert!(!node_dir.exists(), "{:?}", common::tree(&tmp));
    let o = run(&["--keep-going"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(ran.exists(), "--keep-going runs the command");
    let err = stderr(&o);
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains(&format!("no collector on {missing}")) && first.contains("--keep-going"),
        "{err}"
    );
    assert!(s.path("t.tgz").is_file());
}

/// docs/stats.md's `--rsh "ip netns exec"` (no `exec:`) and the same
/// agent as config.sh's RSH: the collector's spec went as JSON quoted
/// for a shell, which this agent does not run, so `start-node` got the
/// quotes ("bad --spec: expected value at line 1 column 1", exit 1).
/// Now it goes as a word that needs no quoting, and both forms collect.
#[test]
fn stats_run_through_ip_netns_exec_without_exec_prefix() {
    let name = "stats_run_through_ip_netns_exec_without_exec_prefix";
    let s = Scratch::new("stats-rsh-plain");
    let ns = match Namespaces::new("p", 1) {
        Ok(n) => n,
        Err(why) => {
            common::skip_or_fail(name, &why);
            return;
        }
    };
    let tmp = s.path("tmpd");
    let _reaper = Reaper(tmp.clone());
    let base = format!(
        "VMSTAT_INTERVAL=1\nCLIENT_LIST=\"{}\"\nTMP={}\n",
        ns.names[0],
        tmp.display()
    );
    std::fs::write(s.path("ns.sh"), &base).unwrap();
    std::fs::write(s.path("rsh.sh"), format!("{base}RSH=\"ip netns exec\"\n")).unwrap();
    for (cfg, rsh, tgz) in [
        ("ns.sh", Some("ip netns exec"), "a.tgz"),
        ("rsh.sh", None, "b.tgz"),
    ] {
        let mut w = vec!["stats", "run", cfg];
        w.extend(rsh.iter().flat_map(|r| ["--rsh", r]));
        w.extend(["--tarball", tgz, "--", "sleep", "2"]);
        let o = run_in(&s.root, &w);
        ok(&o);
        assert!(s.path(tgz).is_file(), "{cfg}: {}", stderr(&o));
        let vmstat = s.path(&format!(
            "{}-csv/{}/vmstat.csv",
            tgz.trim_end_matches(".tgz"),
            ns.names[0]
        ));
        let (_, rows) = read_csv(&vmstat);
        assert!(!rows.is_empty(), "{cfg}: no samples");
    }
}

/// `mdtest --stats` whose only node cannot be reached: the JSON's
/// `stats` was null with no note saying why, and the note on stderr
/// said "no node could be stopped" when it was the start that failed.
/// Now the start's failure is said, on stderr and as a note of the JSON
/// naming the node.
#[test]
fn an_unreachable_stats_node_is_a_note_of_the_runs_json() {
    let s = Scratch::new("stats-hook-unreachable");
    let tmp = s.path("tmp");
    let _reaper = Reaper(tmp.clone());
    let missing = format!("iolab-st-nowhere-{}", std::process::id());
    let cfg = s.path("nodes.sh");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nVMSTAT_INTERVAL=1\nRSH=\"exec:ip netns exec\"\nCLIENT_LIST=\"{missing}\"\n",
            tmp.display()
        ),
    )
    .unwrap();
    let json = s.path("n.json");
    let o = iolab(&[
        "mdtest",
        "-n",
        "10",
        "-d",
        s.path("d").to_str().unwrap(),
        "--stats",
        cfg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    ok(&o);
    let err = stderr(&o);
    assert!(!err.contains("no node could be stopped"), "{err}");
    assert!(
        err.contains(&format!("the collector did not start on {missing}")),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(doc["stats"].is_null());
    let notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("--stats") && n.contains(&missing)),
        "{notes:?}"
    );
}

/// Ctrl-C while the collectors start cuts the start short: the node's
/// step under way is stopped at once, the run is interrupted (exit 130),
/// no node is blamed, the command does not run and the collector that
/// did start is stopped again. It waited 5 s for a step nothing would
/// end, then blamed the node and exited 1. The agent itself sends the
/// SIGINT as it starts the second node's collector and never starts it,
/// so the signal lands during that start every time.
#[test]
fn ctrl_c_while_collectors_start_is_an_interruption_not_a_node_failure() {
    let s = Scratch::new("stats-start-ctrl-c");
    let tmp = s.path("tmp");
    let _reaper = Reaper(tmp.clone());
    // A sleep no other test runs, found by its argument.
    let marker = "600.7319";
    let agent = s.path("agent.sh");
    std::fs::write(
        &agent,
        format!(
            "host=$1; shift\ncase \"$host $*\" in\n\
             \"n2 \"*start-node*) kill -INT $PPID; exec sleep {marker};;\n\
             esac\nexec \"$@\"\n"
        ),
    )
    .unwrap();
    let cfg = s.path("c.sh");
    let text = format!(
        "TMP={}\nVMSTAT_INTERVAL=1\nCLIENT_LIST=\"n1 n2\"\n",
        tmp.display()
    );
    std::fs::write(&cfg, text).unwrap();
    let ran = s.path("ran");
    let touch = format!("touch {}", ran.display());
    let rsh = format!("exec:sh {}", agent.display());
    let o = run_in(
        &s.root,
        &[
            "stats",
            "run",
            cfg.to_str().unwrap(),
            "--rsh",
            &rsh,
            "--tarball",
            "t.tgz",
            "--",
            "sh",
            "-c",
            &touch,
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        !err.contains("did not start on"),
        "a node was blamed: {err}"
    );
    assert!(!ran.exists(), "the command ran");
    assert!(!s.path("t.tgz").exists(), "{:?}", common::tree(&s.root));
    let n1 = tmp.join("iolab-stats").join("n1");
    assert!(!n1.exists(), "{:?}", common::tree(&tmp));
    assert!(common::pids_of("sleep", &[marker]).is_empty());
}

/// `--stats` on a benchmark: the samples of the run's own seconds are in
/// its JSON, and the device's write counters cover what xdd wrote.
#[test]
fn xdd_stats_option_puts_the_runs_disk_counters_in_its_json() {
    let s = Scratch::new("stats-xdd-hook");
    let lo = match LoopDev::blank(&s.path("img"), 64) {
        Ok(l) => l,
        Err(why) => {
            common::skip_or_fail(
                "xdd_stats_option_puts_the_runs_disk_counters_in_its_json",
                &why,
            );
            return;
        }
    };
    let json = s.path("run.json");
    let json_s = json.to_str().unwrap();
    let xdd = iolab(&[
        "xdd", "-op", "write", "-target", &lo.dev, "-dio", "-reqsize", "128", "-numreqs", "64",
        "--stats", "local,1s", "--json", json_s,
    ]);
    ok(&xdd);
    let written: u64 = 64 * 128 * 1024;
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let disk = doc["stats"]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["stat"] == "disk")
        .expect("a disk table in the JSON's stats");
    let header: Vec<&str> = disk["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (series, wb) = (col("series"), col("write_bytes_delta"));
    let bytes: u64 = disk["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[series] == lo.name())
        .map(|r| r[wb].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(
        (written..written + 4096).contains(&bytes),
        "the device's write counters say {bytes} bytes, xdd wrote {written}"
    );
    // A configuration that cannot be read: exit 2 before anything runs.
    let bad = iolab(&[
        "xdd",
        "-op",
        "write",
        "-target",
        &lo.dev,
        "-numreqs",
        "1",
        "--stats",
        "/nonexistent.sh",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--stats"), "{}", stderr(&bad));
}

/// `--stats` on mdtest: the run's JSON carries the samples; a bad
/// configuration is exit 2 with nothing created.
#[test]
fn mdtest_stats_option_puts_samples_in_its_json() {
    let s = Scratch::new("stats-mdtest-hook");
    let json = s.path("run.json");
    let dir = s.path("d");
    let o = iolab(&[
        "mdtest",
        "-n",
        "200",
        "-d",
        dir.to_str().unwrap(),
        "--tasks",
        "2",
        "--stats",
        "local,1s",
        "--json",
        json.to_str().unwrap(),
    ]);
    ok(&o);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let stats: Vec<&str> = doc["stats"]["tables"]
        .as_array()
        .expect("stats tables in the JSON")
        .iter()
        .map(|t| t["stat"].as_str().unwrap())
        .collect();
    assert!(
        stats.contains(&"cpu") && stats.contains(&"disk"),
        "{stats:?}"
    );
    std::fs::remove_file(&json).unwrap();
    let bad = iolab(&[
        "mdtest",
        "-n",
        "10",
        "-d",
        dir.to_str().unwrap(),
        "--stats",
        "local,-3s",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--stats"), "{}", stderr(&bad));
    assert!(!dir.exists(), "nothing created");
}

/// Packs `members` (paths relative to `src`, or absolute) with GNU tar
/// keeping their names as given (`-P`: no stripping of `..` or `/`).
fn gnu_tar(src: &Path, tgz: &Path, members: &[&str]) {
    let st = Command::new("tar")
        .arg("-czPf")
        .arg(tgz)
        .args(members)
        .current_dir(src)
        .status()
        .unwrap();
    assert!(st.success(), "tar failed");
}

#[test]
fn analyse_refuses_members_that_climb_out_and_writes_nothing() {
    let s = Scratch::new("stats-hostile");
    let src = s.path("src");
    std::fs::create_dir_all(src.join("p/n")).unwrap();
    // Two samples: the least that makes a table.
    let line = "{\"unix_ns\":1,\"mono_ns\":1,\"rows\":[]}\n\
                {\"unix_ns\":2,\"mono_ns\":1000000000,\"rows\":[]}\n";
    for f in ["p/n/cpu.jsonl", "disk.jsonl"] {
        std::fs::write(src.join(f), line).unwrap();
    }
    std::os::unix::fs::symlink("/etc", src.join("p/n/link")).unwrap();
    std::os::unix::fs::symlink("../../../..", src.join("p/n/up")).unwrap();
    let abs = src.join("p/n/cpu.jsonl").display().to_string();
    // What a hostile member would overwrite: a file beside the tarball.
    let beside = s.path("disk.csv");
    for (i, member) in ["p/../disk.jsonl", abs.as_str(), "p/n/link", "p/n/up"]
        .iter()
        .enumerate()
    {
        std::fs::write(&beside, "mine\n").unwrap();
        let tgz = s.path(&format!("evil{i}.tgz"));
        gnu_tar(&src, &tgz, &["p/n/cpu.jsonl", member]);
        let o = run_in(&s.root, &["stats", "analyse", tgz.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{member}: {}", stderr(&o));
        assert!(stderr(&o).contains(member), "{member}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&beside).unwrap(), "mine\n");
        assert!(!s.path(&format!("evil{i}-csv")).exists(), "{member}");
        assert!(!s.path(&format!("evil{i}-csv.tgz")).exists(), "{member}");
    }
    // A tidy tarball (with `./` names, as GNU tar writes them) is read.
    let good = s.path("good.tgz");
    gnu_tar(&src, &good, &["./p/n/cpu.jsonl"]);
    let o = run_in(&s.root, &["stats", "analyse", good.to_str().unwrap()]);
    ok(&o);
    assert!(s.path("good-csv/n/cpu.csv").is_file(), "{}", stdout(&o));
}

fn collector_pid(node_dir: &Path) -> Option<i32> {
    std::fs::read_to_string(node_dir.join("collector.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|st| !st.contains(") Z") && !st.contains(") X"))
}

/// `stop` to a place that cannot take the tarball stops nothing; with a
/// full TMP the samples that fit reach the tarball, and it says so.
#[test]
fn stop_loses_no_sample_to_a_bad_destination_or_a_full_tmp() {
    let s = Scratch::new("stats-full");
    let tmp = s.path("tmp");
    let small = common::SmallFs::at(tmp.clone(), "stats-full", "256k");
    if !small.mounted {
        return;
    }
    let _reaper = Reaper(tmp.clone());
    let cfg = s.path("c.toml");
    let text = format!("tmp = \"{}\"\ncpu_interval = 1\n", tmp.display());
    std::fs::write(&cfg, text).unwrap();
    let cfg = cfg.to_str().unwrap();
    ok(&run_in(&s.root, &["stats", "start", cfg]));
    let node_dir = std::fs::read_dir(tmp.join("iolab-stats"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let pid = collector_pid(&node_dir).unwrap();
    // A destination that cannot be: refused before anything is stopped.
    let o = run_in(&s.root, &["stats", "stop", cfg, "/no/such/dir/x.tgz"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("/no/such/dir/x.tgz"), "{}", stderr(&o));
    assert!(is_alive(pid), "the collector was stopped");
    assert_eq!(collector_pid(&node_dir), Some(pid));
    // Wait for a second CPU sample, then fill TMP until the collector
    // fails to write one and ends.
    let lines = || {
        std::fs::read_to_string(node_dir.join("cpu.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let t0 = std::time::Instant::now();
    while lines() < 2 && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let filled = std::fs::write(tmp.join("filler"), vec![1u8; 1 << 20]);
    assert!(filled.is_err(), "the tmpfs is full");
    let t0 = std::time::Instant::now();
    while is_alive(pid) && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!is_alive(pid), "the collector ended on the full TMP");
    // The collector died (TMP full): the stop says so with exit 1 and the
    // node's name (issue 25: never a clean exit with samples missing),
    // and still packs every sample that fit.
    let stop = run_in(&s.root, &["stats", "stop", cfg, "k.tgz"]);
    assert_eq!(stop.status.code(), Some(1), "{}", stderr(&stop));
    assert!(
        stderr(&stop).contains("the collector died before the stop"),
        "{}",
        stderr(&stop)
    );
    assert!(s.path("k.tgz").is_file(), "the samples that fit are packed");
    assert!(
        !node_dir.exists(),
        "removed once its record is in the tarball"
    );
    let a = run_in(&s.root, &["stats", "analyse", "k.tgz"]);
    ok(&a);
    assert!(
        stdout(&a).contains("stop samples could not be written"),
        "{}",
        stdout(&a)
    );
    let node = only_node(&s.path("k-csv"));
    assert!(!series_rows(&node.join("cpu.csv"), "cpu0").is_empty());
}

/// On a node without Lustre, analyse says so in one note (it printed one
/// per Lustre statistic and node, 24 for a small cluster), and stop
/// leaves no empty `iolab-stats` directory in TMP.
#[test]
fn no_lustre_is_one_note_and_stop_leaves_tmp_clean() {
    let s = Scratch::new("stats-no-lustre");
    let tmp = s.path("tmp");
    let _reaper = Reaper(tmp.clone());
    let cfg = s.path("c.sh");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nVMSTAT_INTERVAL=1\nSERVICE_INTERVAL=1\nBRW_INTERVAL=1\nIO_INTERVAL=1\nCLIENT_INTERVAL=1\n",
            tmp.display()
        ),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    ok(&run_in(&s.root, &["stats", "start", cfg]));
    ok(&run_in(&s.root, &["stats", "stop", cfg, "p.tgz"]));
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in TMP: {left:?}");
    let a = run_in(&s.root, &["stats", "analyse", "p.tgz", "csv"]);
    ok(&a);
    let out = stdout(&a);
    let notes: Vec<&str> = out.lines().filter(|l| l.starts_with("note:")).collect();
    if std::path::Path::new("/proc/fs/lustre").exists()
        || std::path::Path::new("/sys/fs/lustre").exists()
    {
        return; // a node with Lustre: nothing to say
    }
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("no Lustre statistics on"), "{notes:?}");
}

/// A TMP/iolab-stats that is a planted link, or another user's directory,
/// is refused before any collector starts: exit 2 naming the path, on
/// this host and through a remote shell, nothing created or started.
#[test]
fn an_unsafe_tmp_iolab_stats_is_refused_before_anything_starts() {
    let name = "an_unsafe_tmp_iolab_stats_is_refused_before_anything_starts";
    let s = Scratch::new("stats-unsafe");
    let ns = match Namespaces::new("u", 1) {
        Ok(n) => n,
        Err(why) => return common::skip_or_fail(name, &why),
    };
    let tmp = s.path("tmp");
    let base = tmp.join("iolab-stats");
    let elsewhere = s.path("elsewhere");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _reaper = Reaper(tmp.clone());
    let local = s.path("local.toml");
    std::fs::write(
        &local,
        format!("tmp = \"{}\"\ncpu_interval = 1\n", tmp.display()),
    )
    .unwrap();
    let remote = s.path("remote.sh");
    std::fs::write(
        &remote,
        format!(
            "TMP={}\nNET_INTERVAL=1\nCLIENT_LIST=\"{}\"\n",
            tmp.display(),
            ns.names[0]
        ),
    )
    .unwrap();
    let start = |cfg: &Path| {
        run_in(
            &s.root,
            &[
                "stats",
                "start",
                cfg.to_str().unwrap(),
                "--rsh",
                "exec:ip netns exec",
            ],
        )
    };
    let planted = |how: &str| {
        let _ = std::fs::remove_dir(&base);
        let _ = std::fs::remove_file(&base);
        match how {
            "link" => std::os::unix::fs::symlink(&elsewhere, &base).unwrap(),
            _ => {
                std::fs::create_dir(&base).unwrap();
                // nobody's, as another user's directory would be.
                std::os::unix::fs::chown(&base, Some(65534), Some(65534)).unwrap();
            }
        }
    };
    for how in ["link", "other user's"] {
        planted(how);
        for cfg in [&local, &remote] {
            let o = start(cfg);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{how} {}: {}",
                cfg.display(),
                stderr(&o)
            );
            assert!(
                stderr(&o).contains(&base.display().to_string()),
                "{how}: the path is named: {}",
                stderr(&o)
            );
            assert!(!stdout(&o).contains("collecting on"), "{}", stdout(&o));
            assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{how}");
            if how != "link" {
                assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0, "{how}");
            }
        }
        // `run` on nodes: refused before the command runs.
        let marker = s.path("ran");
        let o = run_in(
            &s.root,
            &[
                "stats",
                "run",
                remote.to_str().unwrap(),
                "--rsh",
                "exec:ip netns exec",
                "--",
                "touch",
                marker.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{how} run: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&base.display().to_string()),
            "{}",
            stderr(&o)
        );
        assert!(!marker.exists(), "{how}: the command ran");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{how}");
    }
    // A directory of one's own is used as before.
    std::fs::remove_dir(&base).unwrap();
    let o = start(&local);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(
        &s.root,
        &["stats", "stop", local.to_str().unwrap(), "p.tgz"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// analyse refuses what is not a profile tarball, and an output it cannot
/// write, with exit 2 before writing anything.
#[test]
fn analyse_refuses_bad_input_and_an_unwritable_output_with_exit_2() {
    let s = Scratch::new("stats-analyse-bad");
    let junk = s.path("junk.tgz");
    std::fs::write(&junk, b"not a tarball").unwrap();
    let o = run_in(&s.root, &["stats", "analyse", "junk.tgz", "csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("junk.tgz"), "{}", stderr(&o));
    let gz = s.path("empty.tgz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, b"garbage, not tar").unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let o = run_in(&s.root, &["stats", "analyse", "empty.tgz", "csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run_in(
        &s.root,
        &[
            "stats",
            "analyse",
            "junk.tgz",
            "csv",
            "--out",
            "/proc/iolab-x",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--out /proc/iolab-x"), "{}", stderr(&o));
    let mut left = common::tree(&s.root);
    left.retain(|p| p != "junk.tgz" && p != "empty.tgz");
    assert!(left.is_empty(), "{left:?}");
}

/// `iolab stats run` killed with -9 leaves no command running: the
/// command, in a process group of its own, would otherwise be adopted
/// by init and run on.
#[test]
fn a_killed_stats_run_ends_its_command() {
    let s = Scratch::new("stats-killed");
    // A sleep no other test runs, found by its argument.
    let marker = "57.4321";
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["stats", "run", "local", "--tarball"])
        .arg(s.path("t.tgz"))
        .args(["--", "sleep", marker])
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (started, left) =
        common::orphans_after_kill(&mut c, || common::pids_of("sleep", &[marker]));
    assert!(started, "the command never started");
    assert!(left.is_empty(), "the command outlived iolab: {left:?}");
}

/// A `stats run` killed with -9 leaves no collector on its nodes: each
/// is tethered to it (its step stops it once the pipe from `stats run`
/// closes, or once the step is signalled). They ran on until `stats
/// stop`. Tried through an agent that execs the command (`ip netns
/// exec`) and one that stays its parent (a shell).
#[test]
fn a_killed_stats_run_leaves_no_collector_on_its_nodes() {
    let name = "a_killed_stats_run_leaves_no_collector_on_its_nodes";
    let s = Scratch::new("stats-tether");
    let ns = match Namespaces::new("t", 1) {
        Ok(n) => n,
        Err(why) => return common::skip_or_fail(name, &why),
    };
    let tmp = s.path("tmp");
    let _reaper = Reaper(tmp.clone());
    let agent = s.path("agent.sh");
    std::fs::write(&agent, "host=$1; shift; ip netns exec \"$host\" \"$@\"\n").unwrap();
    let cfg = s.path("c.sh");
    let text = format!(
        "TMP={}\nVMSTAT_INTERVAL=1\nCLIENT_LIST=\"{}\"\n",
        tmp.display(),
        ns.names[0]
    );
    std::fs::write(&cfg, text).unwrap();
    let dir = tmp.join("iolab-stats").join(&ns.names[0]);
    let d = dir.display().to_string();
    let agents = [
        "exec:ip netns exec".to_string(),
        format!("exec:sh {}", agent.display()),
    ];
    for (i, rsh) in agents.iter().enumerate() {
        // A sleep no other test runs, found by its argument.
        let marker = format!("61.{i}4321");
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["stats", "run"])
            .arg(&cfg)
            .args(["--rsh", rsh, "--tarball"])
            .arg(s.path("t.tgz"))
            .args(["--", "sleep", &marker])
            .env("CI", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let (started, left) = common::orphans_after_kill(&mut c, || {
            common::pids_of("iolab", &["stats collect --dir", &d])
        });
        for pid in common::pids_of("sleep", &[&marker]) {
            // SAFETY: kill(2) of the command this test had run.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        assert!(started, "{rsh}: no collector started");
        assert!(
            left.is_empty(),
            "{rsh}: the collector outlived stats run: {left:?}"
        );
    }
}

/// `analyse --out DIR` writes `DIR.tgz`, the name with `.tgz` added (a
/// suffix of DIR's was once replaced: `--out run.v1` wrote `run.tgz`),
/// and an `--out` whose tarball is the profile being read is refused
/// (it once replaced the profile with the CSV tarball).
#[test]
fn analyse_adds_tgz_to_its_name_and_never_replaces_the_profile() {
    let s = Scratch::new("stats-analyse-names");
    let cfg = cpu_config(&s);
    let cfg = cfg.as_str();
    ok(&run_in(&s.root, &["stats", "start", cfg]));
    ok(&run_in(&s.root, &["stats", "stop", cfg, "run.v1.tgz"]));
    let profile = std::fs::read(s.path("run.v1.tgz")).unwrap();
    ok(&run_in(
        &s.root,
        &["stats", "analyse", "run.v1.tgz", "--out", "out.v2"],
    ));
    assert!(s.path("out.v2.tgz").is_file());
    assert!(!s.path("out.tgz").exists());
    let a = run_in(
        &s.root,
        &["stats", "analyse", "run.v1.tgz", "--out", "run.v1"],
    );
    assert_eq!(a.status.code(), Some(2), "{}", stderr(&a));
    assert!(
        stderr(&a).contains("is the profile tarball being read"),
        "{}",
        stderr(&a)
    );
    assert!(!s.path("run.v1").exists());
    assert_eq!(std::fs::read(s.path("run.v1.tgz")).unwrap(), profile);
}

/// analyse replaces only what an earlier analysis wrote: a file where it
/// writes a table (`NAME-csv/NODE/cpu.csv`) or its CSV tarball
/// (`NAME-csv.tgz`) that is another program's, or a link, is kept and
/// the command refused (exit 2, naming it) before anything is written,
/// by `analyse` and by `stats run` alike. Both were replaced before.
#[test]
fn analyse_writes_over_no_file_it_did_not_write() {
    let s = Scratch::new("stats-analyse-keep");
    let cfg = cpu_config(&s);
    let cfg = cfg.as_str();
    ok(&run_in(&s.root, &["stats", "start", cfg]));
    ok(&run_in(&s.root, &["stats", "stop", cfg, "r.tgz"]));
    // An earlier analysis's files are replaced.
    ok(&run_in(&s.root, &["stats", "analyse", "r.tgz"]));
    ok(&run_in(&s.root, &["stats", "analyse", "r.tgz"]));
    let table = common::tree(&s.path("r-csv"))
        .into_iter()
        .find(|p| p.ends_with("/cpu.csv"))
        .map(|p| s.path("r-csv").join(p))
        .unwrap();
    let tarball = s.path("r-csv.tgz");
    let refused = |cmd: &[&str], name: &str, why: &str| {
        let before = common::tree(&s.root);
        let o = run_in(&s.root, cmd);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(name) && e.contains(why), "{e}");
        assert_eq!(common::tree(&s.root), before);
    };
    let analyse = ["stats", "analyse", "r.tgz"];
    let run = ["stats", "run", cfg, "--tarball", "r.tgz", "--", "true"];
    std::fs::write(&tarball, "precious\n").unwrap();
    refused(
        &analyse,
        "r-csv.tgz",
        "is not a CSV tarball iolab stats wrote",
    );
    refused(&run, "r-csv.tgz", "is not a CSV tarball iolab stats wrote");
    assert_eq!(std::fs::read_to_string(&tarball).unwrap(), "precious\n");
    // A gzip'd tar of other members is not one either.
    std::fs::copy(s.path("r.tgz"), &tarball).unwrap();
    refused(
        &analyse,
        "r-csv.tgz",
        "is not a CSV tarball iolab stats wrote",
    );
    std::fs::remove_file(&tarball).unwrap();
    std::os::unix::fs::symlink(s.path("elsewhere"), &tarball).unwrap();
    refused(&analyse, "r-csv.tgz", "is not a regular file");
    assert!(!s.path("elsewhere").exists());
    std::fs::remove_file(&tarball).unwrap();
    std::fs::write(&table, "mine\n").unwrap();
    refused(&analyse, "cpu.csv", "is not a table iolab stats wrote");
    refused(&run, "cpu.csv", "is not a table iolab stats wrote");
    assert_eq!(std::fs::read_to_string(&table).unwrap(), "mine\n");
    std::fs::remove_file(&table).unwrap();
    ok(&run_in(&s.root, &analyse));
    assert!(tarball.is_file() && table.is_file());
}

/// Where the CSV files go (`NAME-csv` beside `stats run`'s tarball,
/// analyse's `--out` or its default) must be nothing yet or this user's
/// own directory: a planted link there (to a directory the files would
/// land in), another user's directory, or one others may write is
/// refused with exit 2 before any collector starts or the command runs,
/// and nothing is written where the link leads. Before, the CSV files
/// were written through the link once the command had run.
#[test]
fn a_link_or_another_users_directory_where_the_csv_files_go_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("stats-csv-link");
    let victim = s.path("victim");
    std::fs::create_dir(&victim).unwrap();
    let ran = s.path("ran");
    let touch = format!("touch {}", ran.display());
    let run = |name: &str| {
        run_in(
            &s.root,
            &[
                "stats",
                "run",
                "local,1s",
                "--tarball",
                &format!("{name}.tgz"),
                "--",
                "sh",
                "-c",
                &touch,
            ],
        )
    };
    std::os::unix::fs::symlink(&victim, s.path("r-csv")).unwrap();
    let o = run("r");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("r-csv: a symbolic link"),
        "{}",
        stderr(&o)
    );
    std::fs::create_dir(s.path("o-csv")).unwrap();
    std::os::unix::fs::chown(s.path("o-csv"), Some(65534), None).unwrap();
    let o = run("o");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("owned by uid 65534"), "{}", stderr(&o));
    assert!(!ran.exists(), "the command ran");
    assert!(!s.path("r.tgz").exists() && !s.path("o.tgz").exists());
    // A profile to analyse; its CSV directory's name holds a link, then
    // a directory others may write.
    ok(&run("p"));
    assert!(ran.exists() && s.path("p-csv").is_dir());
    std::fs::rename(s.path("p.tgz"), s.path("l1.tgz")).unwrap();
    std::os::unix::fs::symlink(&victim, s.path("l1-csv")).unwrap();
    let a = run_in(&s.root, &["stats", "analyse", "l1.tgz"]);
    assert_eq!(a.status.code(), Some(2), "{}", stderr(&a));
    assert!(stderr(&a).contains("a symbolic link"), "{}", stderr(&a));
    let shared = s.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let a = run_in(&s.root, &["stats", "analyse", "l1.tgz", "--out", "shared"]);
    assert_eq!(a.status.code(), Some(2), "{}", stderr(&a));
    assert!(stderr(&a).contains("--out: "), "{}", stderr(&a));
    assert!(
        stderr(&a).contains("other users may change it"),
        "{}",
        stderr(&a)
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
    // This user's own directory, from an earlier analysis, is written again.
    ok(&run_in(
        &s.root,
        &["stats", "analyse", "l1.tgz", "--out", "p-csv"],
    ));
}

/// A link planted at `NAME.tgz.part` (the name the tarball's check once
/// probed) is neither followed nor touched: the run makes no file where
/// it leads (it made one, owned by the user running stats) and leaves
/// the link as it was.
#[test]
fn a_link_at_the_tarballs_part_name_is_not_followed() {
    let s = Scratch::new("stats-part-link");
    let target = s.path("made-through-the-link");
    std::os::unix::fs::symlink(&target, s.path("r.tgz.part")).unwrap();
    ok(&run_in(
        &s.root,
        &[
            "stats",
            "run",
            "local,1s",
            "--tarball",
            "r.tgz",
            "--",
            "true",
        ],
    ));
    assert!(s.path("r.tgz").is_file());
    assert!(!target.exists(), "a file was made through the link");
    assert_eq!(std::fs::read_link(s.path("r.tgz.part")).unwrap(), target);
}
