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
    let t = mdtest(&format!(
        "{}",
        opts.replace("--tasks 2", "--tasks 4") + " " + &b.to_string_lossy()
    ));
    ok(&t, "threads");
    assert_eq!(tree(&a), tree(&b));
}
