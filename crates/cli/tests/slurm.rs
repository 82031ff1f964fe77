//! iolab under a real one-node Slurm (crates/testkit/src/slurm.rs):
//! `srun --mpi=pmix` as the MPI launcher, `srun` as the remote shell of
//! xddcp, lst and stats inside `salloc -n 2`, a sweep whose launcher is
//! srun stopped mid-run, and the srun command lines the docs show.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use iolab_testkit::slurm::{Proctrack, Slurm};
use std::process::{Command, Output};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// The shared cluster, or None (after skip_or_fail) when it cannot start.
fn cluster(test: &str) -> Option<&'static Slurm> {
    match Slurm::shared() {
        Ok(s) => Some(s),
        Err(e) => {
            skip_or_fail(test, &e);
            None
        }
    }
}

/// `prog args...` against the cluster, with CI set and Open MPI allowed
/// to run as root.
fn slurm_cmd(s: &Slurm, prog: &str, args: &[&str]) -> Command {
    let mut c = s.command(prog);
    c.args(args)
        .env("CI", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

#[test]
fn the_cluster_runs_steps_with_its_process_tracking() {
    let Some(s) = cluster("slurm_fixture") else {
        return;
    };
    let o = slurm_cmd(s, "srun", &["-n", "2", "cat", "/proc/self/cgroup"])
        .output()
        .unwrap();
    ok(&o, "srun -n 2");
    let out = stdout(&o);
    if s.proctrack() == Proctrack::Cgroup {
        assert_eq!(out.matches("/step_0").count(), 2, "{out}");
    }
    let o = slurm_cmd(s, "scontrol", &["show", "config"])
        .output()
        .unwrap();
    assert!(
        stdout(&o).contains(s.proctrack().plugin()),
        "{}",
        stdout(&o)
    );
}

/// A private cluster with proctrack/linuxproc starts, runs a step, and
/// leaves no daemon and no file when dropped.
#[test]
fn a_linuxproc_cluster_leaves_nothing_when_dropped() {
    let s = match Slurm::start(Proctrack::Linuxproc) {
        Ok(s) => s,
        Err(e) => return skip_or_fail("slurm_linuxproc", &e),
    };
    let conf = s.env()[0].1.clone();
    let dir = std::path::PathBuf::from(&conf)
        .parent()
        .unwrap()
        .to_path_buf();
    let o = slurm_cmd(&s, "srun", &["-n", "1", "true"])
        .output()
        .unwrap();
    ok(&o, "srun true");
    drop(s);
    assert!(!dir.exists(), "{} left", dir.display());
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    assert!(
        !stdout(&ps).contains(&conf) && !stdout(&ps).contains(&*dir.to_string_lossy()),
        "a daemon of the dropped cluster is left:\n{}",
        stdout(&ps)
    );
}

/// `srun -n 2 --mpi=pmix iolab mdtest ... --tasks 2`, as docs/mpi.md
/// gives it: 4 tasks, one summary, the same tree as 4 threads.
#[cfg(feature = "mpi")]
#[test]
fn srun_pmix_ranks_run_mdtest_as_mpirun_does() {
    let Some(s) = cluster("srun_pmix_mdtest") else {
        return;
    };
    let list = slurm_cmd(s, "srun", &["--mpi=list"]).output().unwrap();
    assert!(
        stdout(&list).contains("pmix") || stderr(&list).contains("pmix"),
        "{}{}",
        stdout(&list),
        stderr(&list)
    );
    let sc = Scratch::new("srun-mdtest");
    let (a, b) = (sc.path("srun"), sc.path("threads"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let opts = "-C -u -N 1 -z 1 -b 2 -I 3 --tasks 2 -d";
    let mut c = slurm_cmd(s, "srun", &["-n", "2", "--mpi=pmix", IOLAB, "mdtest"]);
    let o = c.args(opts.split(' ')).arg(&a).output().unwrap();
    ok(&o, "srun --mpi=pmix iolab mdtest");
    let out = stdout(&o);
    assert!(out.contains("launched with 4 total task(s)"), "{out}");
    assert_eq!(out.matches("SUMMARY").count(), 1, "{out}");
    let t = mdtest(&(opts.replace("--tasks 2", "--tasks 4") + " " + &b.to_string_lossy()));
    ok(&t, "threads");
    assert_eq!(tree(&a), tree(&b));
}

/// `srun -n 2 iolab xdd ...` (without MPI: srun's own variables) ran
/// two writes of one target; each task is refused now, exit 2, the
/// message said once (task 0's), nothing made. `srun -n 1` runs it.
#[test]
fn srun_of_two_xdd_tasks_is_refused() {
    let Some(s) = cluster("srun_two_xdd") else {
        return;
    };
    let sc = Scratch::new("srun-xdd");
    let t = sc.path("t");
    let target = t.to_str().unwrap();
    let xdd = [
        "xdd", "-op", "write", "-target", target, "-reqsize", "8", "-numreqs", "8",
    ];
    let mut c = slurm_cmd(s, "srun", &["-n", "2", "--mpi=none", IOLAB]);
    let o = c.args(xdd).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let said = stderr(&o)
        .matches("iolab xdd: started as one of 2 MPI ranks")
        .count();
    assert_eq!(said, 1, "{}", stderr(&o));
    assert!(!t.exists(), "the target was written");
    let mut c = slurm_cmd(s, "srun", &["-n", "1", "--mpi=none", IOLAB]);
    let o = c.args(xdd).output().unwrap();
    ok(&o, "srun -n 1 iolab xdd");
    assert!(t.exists());
}

/// `n` free loopback ports, outside the range connections take their
/// source ports from (common::e2e::free_ports).
fn free_ports(n: u16) -> Vec<u16> {
    let base = common::e2e::free_ports(n);
    (base..base + n).collect()
}

/// `salloc -n 2 iolab WORDS...` with `IOLAB_RSH=rsh`: iolab runs inside
/// an allocation, as on a login node after `salloc`.
fn in_salloc(s: &Slurm, rsh: &str, words: &[&str]) -> Output {
    let mut c = slurm_cmd(s, "salloc", &["-n", "2", "--quiet", IOLAB]);
    c.args(words).env("IOLAB_RSH", rsh).output().unwrap()
}

/// The remote shells the docs give: the short form (iolab adds `-n1
/// --overlap`) and the long one.
const SRUN_RSH: [&str; 2] = ["exec:srun -N1 -w", "exec:srun -N1 -n1 --overlap -w"];

#[test]
fn xddcp_through_srun_inside_an_allocation() {
    let Some(s) = cluster("xddcp_srun") else {
        return;
    };
    let sc = Scratch::new("xddcp-srun");
    let src = sc.path("src");
    let data: Vec<u8> = (0..(4u32 << 20))
        .map(|i| (i * 7 + i / 4096) as u8)
        .collect();
    std::fs::write(&src, &data).unwrap();
    for (i, rsh) in SRUN_RSH.iter().enumerate() {
        let dst = sc.path(&format!("dst{i}"));
        let port = free_ports(1)[0].to_string();
        let to = format!("{}@127.0.0.1:{}", s.node(), dst.display());
        let o = {
            let mut c = slurm_cmd(s, "salloc", &["-n", "2", "--quiet", IOLAB, "xddcp"]);
            // -f: two streams take `port` and the next one, which another
            // test of this binary may hold at that moment.
            c.args(["-t", "2", "-f", "-p", &port, "--timeout", "60"])
                .arg(&src)
                .arg(&to)
                .env("IOLAB_RSH", rsh);
            c.output().unwrap()
        };
        ok(&o, rsh);
        assert_eq!(std::fs::read(&dst).unwrap(), data, "{rsh}");
    }
}

#[test]
fn lst_through_srun_inside_an_allocation() {
    let Some(s) = cluster("lst_srun") else {
        return;
    };
    for rsh in SRUN_RSH {
        let p = free_ports(2);
        let from = format!("{}@127.0.0.1:{}", s.node(), p[0]);
        let to = format!("{}@127.0.0.1:{}", s.node(), p[1]);
        let o = in_salloc(
            s,
            rsh,
            &[
                "lst", "run", "brw", "write", "size=4k", "--from", &from, "--to", &to, "--count",
                "20",
            ],
        );
        ok(&o, rsh);
        assert!(
            stdout(&o).contains("[LNet Bandwidth of servers]"),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn stats_run_through_srun_inside_an_allocation() {
    let Some(s) = cluster("stats_srun") else {
        return;
    };
    let sc = Scratch::new("stats-srun");
    for (i, rsh) in SRUN_RSH.iter().enumerate() {
        let cfg = sc.path(&format!("c{i}.sh"));
        std::fs::write(
            &cfg,
            format!(
                "TMP={}\nVMSTAT_INTERVAL=1\nCLIENT_LIST=\"{}\"\n",
                sc.path("tmp").display(),
                s.node()
            ),
        )
        .unwrap();
        let tgz = sc.path(&format!("r{i}.tgz"));
        let mut c = slurm_cmd(s, "salloc", &["-n", "2", "--quiet", IOLAB, "stats", "run"]);
        c.arg(&cfg)
            .arg("--tarball")
            .arg(&tgz)
            .args(["--", "sleep", "4"])
            .env("IOLAB_RSH", rsh)
            .current_dir(&sc.root);
        let o = c.output().unwrap();
        ok(&o, rsh);
        let csv = sc.path(&format!("r{i}-csv/{}/vmstat.csv", s.node()));
        let text = std::fs::read_to_string(&csv).unwrap();
        // A sample a second for 4 s, plus start and stop: the collector
        // lived as long as the run.
        let rows = text.lines().count() - 1;
        assert!(rows >= 5, "{rsh}: {rows} samples:\n{text}\n{}", stderr(&o));
    }
}

/// A collector killed mid-run (as an OOM kill would) is exit 1 with the
/// node named, not a clean exit with the samples missing.
#[test]
fn a_collector_that_died_is_exit_1_naming_the_node() {
    let Some(s) = cluster("stats_srun_died") else {
        return;
    };
    let sc = Scratch::new("stats-srun-died");
    let cfg = sc.path("c.sh");
    let tmp = sc.path("tmp");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nVMSTAT_INTERVAL=1\nCLIENT_LIST=\"{}\"\n",
            tmp.display(),
            s.node()
        ),
    )
    .unwrap();
    let pid_file = tmp.join(format!("iolab-stats/{}/collector.pid", s.node()));
    let kill = format!("sleep 1; kill -9 $(cat {}); sleep 1", pid_file.display());
    let mut c = slurm_cmd(s, "salloc", &["-n", "2", "--quiet", IOLAB, "stats", "run"]);
    c.arg(&cfg)
        .args(["--tarball", "d.tgz", "--", "sh", "-c", &kill])
        .env("IOLAB_RSH", "exec:srun -N1 -w")
        .current_dir(&sc.root);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}: the collector died", s.node())),
        "{err}"
    );
}

/// Counts the entries under `dir` (0 when it is gone).
#[cfg(feature = "mpi")]
fn entries(dir: &std::path::Path) -> usize {
    tree(dir).len()
}

/// Waits (at most 120 s, or until `child` ends) for `n` entries under
/// `dir`; fails the test when they are not there.
#[cfg(feature = "mpi")]
fn wait_for_entries(child: &mut std::process::Child, dir: &std::path::Path, n: usize) {
    let t0 = std::time::Instant::now();
    while entries(dir) < n && t0.elapsed() < std::time::Duration::from_secs(120) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(entries(dir) >= n, "the run did not start making files");
}

/// `child`'s output once it ended, within `secs`; else it is killed and
/// the test fails with `why`.
#[cfg(feature = "mpi")]
fn ended_within(mut child: std::process::Child, secs: u64, why: &str) -> Output {
    let t0 = std::time::Instant::now();
    let limit = std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() && t0.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        panic!("{why}");
    }
    child.wait_with_output().unwrap()
}

/// A plan sweeping mdtest over ranks with `launcher`, one repeat, its
/// files under `dir`.
#[cfg(feature = "mpi")]
fn srun_plan(sc: &Scratch, label: &str, launcher: &str, args: &str) -> String {
    let p = sc.path(&format!("{label}.toml"));
    std::fs::write(
        &p,
        format!(
            "label = \"{label}\"\ntool = \"mdtest\"\nargs = \"{args}\"\nrepeats = 1\n\
             launcher = \"{launcher}\"\n[[axes]]\nname = \"ranks\"\nvalues = [2]\n"
        ),
    )
    .unwrap();
    p.display().to_string()
}

/// Ctrl-C of a sweep whose launcher is srun: Slurm sends SIGTERM to the
/// step's ranks (not srun, which would kill them), they remove what they
/// made, the sweep exits 130 and nothing of the run is left or recorded.
#[cfg(feature = "mpi")]
#[test]
fn ctrl_c_of_an_srun_sweep_leaves_no_file_of_the_run() {
    let Some(s) = cluster("srun_sweep_ctrl_c") else {
        return;
    };
    let sc = Scratch::new("srun-sweep-int");
    let d = sc.path("d");
    let plan = srun_plan(
        &sc,
        "int",
        "srun -n {ranks} --mpi=pmix {iolab}",
        &format!("-F -C -u -n 200000 -d {}", d.display()),
    );
    let store = sc.path("runs.sqlite").display().to_string();
    let mut child = slurm_cmd(s, IOLAB, &["sweep", &plan, "--store", &store])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_entries(&mut child, &d, 200);
    // SAFETY: kill(2) on our own child's pid, as Ctrl-C would.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = ended_within(child, 200, "the sweep did not end after SIGINT");
    assert_eq!(o.status.code(), Some(130), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        entries(&d),
        0,
        "left: {:?}\nthe sweep said: {}",
        &tree(&d)[..tree(&d).len().min(5)],
        stderr(&o)
    );
    let runs = slurm_cmd(s, IOLAB, &["results", "--store", &store, "list"])
        .output()
        .unwrap();
    assert!(
        stdout(&runs).contains("no runs recorded"),
        "{}",
        stdout(&runs)
    );
}

/// The same SIGTERM from Slurm twice (two `scancel --signal=TERM` of
/// the step; one was seen to reach the tasks twice on a loaded machine)
/// is one stop request: the ranks still remove what they made and exit
/// 130, where a repeat taken for a second signal ended them at once.
#[cfg(feature = "mpi")]
#[test]
fn slurms_sigterm_twice_still_lets_the_ranks_clean_up() {
    let Some(s) = cluster("srun_sigterm_twice") else {
        return;
    };
    let sc = Scratch::new("srun-term-twice");
    let d = sc.path("d");
    let name = format!("iolab-term-twice-{}", std::process::id());
    let job_name = format!("--job-name={name}");
    let mut child = slurm_cmd(s, "srun", &["-n", "2", "--mpi=pmix", &job_name, IOLAB])
        .args(["mdtest", "-F", "-C", "-u", "-n", "200000", "-d"])
        .arg(&d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_entries(&mut child, &d, 200);
    let steps = slurm_cmd(s, "squeue", &["-h", "-s", "-o", "%i %j"])
        .output()
        .unwrap();
    let step = stdout(&steps)
        .lines()
        .find_map(|l| {
            let (id, n) = l.trim().split_once(' ')?;
            (n.trim() == name).then(|| id.to_string())
        })
        .unwrap_or_else(|| panic!("no step named {name}: {}", stdout(&steps)));
    for _ in 0..2 {
        let o = slurm_cmd(s, "scancel", &["--signal=TERM", &step])
            .output()
            .unwrap();
        ok(&o, "scancel --signal=TERM");
    }
    let o = ended_within(child, 120, "the step did not end after SIGTERM");
    assert!(
        !stderr(&o).contains("second signal"),
        "a repeat was taken for a second signal: {}",
        stderr(&o)
    );
    assert_eq!(
        entries(&d),
        0,
        "left: {:?}\n{}",
        &tree(&d)[..tree(&d).len().min(5)],
        stderr(&o)
    );
}

/// A step Slurm refuses (a node it does not know) is exit 2 with Slurm's
/// reason, from each tool that uses the remote shell.
#[test]
fn a_step_slurm_refuses_is_exit_2_with_its_reason() {
    let Some(s) = cluster("srun_refused") else {
        return;
    };
    let sc = Scratch::new("srun-refused");
    let src = sc.path("src");
    std::fs::write(&src, vec![7u8; 1 << 20]).unwrap();
    let bad = "nosuchnode";
    let dst = format!("{bad}@127.0.0.1:{}", sc.path("dst").display());
    let p = free_ports(2);
    let (from, to) = (
        format!("{bad}@127.0.0.1:{}", p[0]),
        format!("{bad}@127.0.0.1:{}", p[1]),
    );
    let cfg = sc.path("c.sh");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nVMSTAT_INTERVAL=1\nCLIENT_LIST=\"{bad}\"\n",
            sc.path("tmp").display()
        ),
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    let src = src.display().to_string();
    let runs: [Vec<&str>; 3] = [
        vec!["xddcp", "--timeout", "30", &src, &dst],
        vec![
            "lst", "run", "brw", "write", "size=4k", "--from", &from, "--to", &to, "--count", "5",
        ],
        vec!["stats", "run", &cfg, "--tarball", "r.tgz", "--", "true"],
    ];
    for words in runs {
        let mut c = slurm_cmd(s, "salloc", &["-n", "2", "--quiet", IOLAB]);
        let o = c
            .args(&words)
            .env("IOLAB_RSH", "exec:srun -N1 -w")
            .current_dir(&sc.root)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}: {}{err}",
            words[0],
            stdout(&o)
        );
        assert!(err.contains("srun: error:"), "{}: {err}", words[0]);
        assert!(!sc.path("dst").exists() && !sc.path("r.tgz").exists());
    }
}

/// The `srun ... iolab` and `scontrol` lines of docs/mpi.md's console
/// blocks (which the docs test leaves to this one), run as written on the test cluster (iolab's path and the
/// test directory put in), and docs/sweeps.md's srun launcher in a sweep.
#[cfg(feature = "mpi")]
#[test]
fn the_docs_srun_lines_run_as_written() {
    let Some(s) = cluster("docs_srun_lines") else {
        return;
    };
    let sc = Scratch::new("docs-srun");
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/");
    let mpi = std::fs::read_to_string(format!("{docs}mpi.md")).unwrap();
    let lines: Vec<&str> = mpi
        .lines()
        .map(|l| l.trim().trim_start_matches("$ "))
        .filter(|l| (l.starts_with("srun ") && l.contains(" iolab ")) || l.starts_with("scontrol "))
        .collect();
    assert!(lines.len() >= 2, "{lines:?}");
    for l in lines {
        let dir = sc.path("x");
        let line = l
            .replace(" iolab ", &format!(" {IOLAB} "))
            .replace("/lustre/x", &dir.to_string_lossy());
        let o = slurm_cmd(s, "sh", &["-c", &line]).output().unwrap();
        ok(&o, l);
        if l.starts_with("scontrol") {
            assert!(stdout(&o).contains("MpiDefault"), "{}", stdout(&o));
        } else {
            assert_eq!(
                stdout(&o).matches("SUMMARY").count(),
                1,
                "{l}: {}",
                stdout(&o)
            );
        }
    }
    let sweeps = std::fs::read_to_string(format!("{docs}sweeps.md")).unwrap();
    let launcher = sweeps
        .split('`')
        .find(|w| w.starts_with("srun ") && w.contains("{iolab}"))
        .expect("docs/sweeps.md gives an srun launcher");
    let p = sc.path("docs.toml");
    std::fs::write(
        &p,
        format!(
            "label = \"docs\"\ntool = \"mdtest\"\nargs = \"-F -n 50 -d {}\"\nrepeats = 1\n\
             launcher = \"{launcher}\"\n[[axes]]\nname = \"nodes\"\nvalues = [1]\n\
             [[axes]]\nname = \"ranks\"\nvalues = [2]\n",
            sc.path("sweep").display()
        ),
    )
    .unwrap();
    let store = sc.path("runs.sqlite").display().to_string();
    let o = slurm_cmd(
        s,
        IOLAB,
        &["sweep", &p.to_string_lossy(), "--store", &store],
    )
    .output()
    .unwrap();
    ok(&o, launcher);
    assert!(stdout(&o).contains("recorded 1 runs"), "{}", stdout(&o));
}

/// SIGINT to xddcp mid-copy through srun: Slurm sends SIGTERM to the
/// destination's step (srun would kill it at once), which removes its
/// partial file, as through ssh; exit 130.
#[test]
fn xddcp_interrupted_through_srun_leaves_no_partial_destination() {
    use std::time::{Duration, Instant};
    let Some(s) = cluster("xddcp_srun_int") else {
        return;
    };
    let sc = Scratch::new("xddcp-srun-int");
    let src = sc.path("src");
    let data: Vec<u8> = (0..(384u32 << 20)).map(|i| (i / 4093) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    drop(data);
    let dst = sc.path("dst");
    let port = free_ports(1)[0].to_string();
    let to = format!("{}@127.0.0.1:{}", s.node(), dst.display());
    let mut child = slurm_cmd(s, "salloc", &["-n", "2", "--quiet", IOLAB, "xddcp"])
        // -f: another test of this binary may hold `port` at this moment.
        .args(["-t", "1", "-f", "-p", &port, "--timeout", "60"])
        .arg(&src)
        .arg(&to)
        .env("IOLAB_RSH", "exec:srun -N1 -w")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // The copy is built under a name of this run's (dst.partial-XXXXXXXX).
    let partials = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&sc.root)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("dst.partial-"))
            .map(|e| e.path())
            .collect()
    };
    let size = || {
        partials()
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .max()
            .unwrap_or(0)
    };
    // salloc may wait for its allocation (a step of another test still
    // leaving), so the wait is long; it ends early if the copy ended.
    while size() == 0
        && !dst.exists()
        && child.try_wait().unwrap().is_none()
        && t0.elapsed() < Duration::from_secs(240)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let partial = size();
    // salloc passes SIGINT to nobody: signal iolab itself, as Ctrl-C
    // reaches the foreground process.
    let iolab = Command::new("pgrep")
        .args(["-P", &child.id().to_string(), "-f", "xddcp"])
        .output()
        .unwrap();
    let Ok(pid) = stdout(&iolab).trim().parse::<i32>() else {
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        panic!(
            "no xddcp under salloc after {:?} (partial {partial} bytes, destination there: {}): \
             exit {:?}\nstdout:\n{}\nstderr:\n{}\nslurm:\n{}",
            t0.elapsed(),
            dst.exists(),
            o.status.code(),
            stdout(&o),
            stderr(&o),
            s.log_tail()
        );
    };
    // SAFETY: kill(2) on a process our child started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        panic!("xddcp did not end after SIGINT");
    }
    let o = child.wait_with_output().unwrap();
    assert!(
        partial > 0 && partial < 384 << 20,
        "not mid-copy: {partial}"
    );
    assert_eq!(o.status.code(), Some(130), "{}{}", stdout(&o), stderr(&o));
    assert!(!dst.exists(), "the partial destination is left");
    assert!(partials().is_empty(), "{:?}", partials());
}

/// A launcher Slurm refuses (a node it does not know) stops the
/// sweep at its first point with Slurm's reason, instead of failing
/// every repeat.
#[test]
fn a_launcher_slurm_refuses_stops_the_sweep_at_its_first_point() {
    let Some(s) = cluster("srun_sweep_refused") else {
        return;
    };
    let sc = Scratch::new("srun-sweep-refused");
    let p = sc.path("r.toml");
    std::fs::write(
        &p,
        format!(
            "label = \"r\"\ntool = \"mdtest\"\nargs = \"-F -n 5 -d {}\"\nrepeats = 2\n\
             launcher = \"srun -w nosuchnode -n {{ranks}} {{iolab}}\"\n[[axes]]\nname = \"ranks\"\nvalues = [2, 4]\n",
            sc.path("d").display()
        ),
    )
    .unwrap();
    let store = sc.path("runs.sqlite").display().to_string();
    let o = slurm_cmd(
        s,
        IOLAB,
        &["sweep", &p.to_string_lossy(), "--store", &store],
    )
    .output()
    .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("could not start the tool") && err.contains("srun: error:"),
        "{err}"
    );
    assert_eq!(
        out.matches("] ranks=").count(),
        1,
        "only the first repeat ran: {out}"
    );
}
