//! Under mpirun, the ranks of mdtest, ior and io500 agree before anything
//! is made: a check that fails on one rank only, or ranks given different
//! options, end every rank with exit 2 and rank 0's message naming the
//! rank, instead of a hang or a run on mismatched options. Each rank
//! runs in a directory of its own (`c0`, `c1`) so that one rank can be
//! given what the other is not. Also ior's refusal of an `-o` that cannot
//! be written, alone and on one rank.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{stderr, Scratch, SmallFs};
use std::path::Path;
use std::process::Command;

/// Runs `iolab ior ARGS` in `dir`.
fn ior_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("ior")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// ior refuses a writing test whose `-o` directory cannot be written
/// (a read-only mount), exit 2 before the header, with nothing written:
/// it printed a row of zeros, a summary and wrote --json, then failed.
#[test]
fn ior_refuses_an_o_it_cannot_write() {
    let s = Scratch::new("ior-ro");
    let ro = SmallFs::new(&s, "ro", "size=1m,ro");
    if !ro.mounted {
        return;
    }
    let json = s.path("x.json");
    let o = ior_in(
        &s.root,
        &[
            "-b",
            "64k",
            "-t",
            "32k",
            "-o",
            &ro.path("f"),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not writable"), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!json.exists(), "no output for a run refused");
    // A read-only test of a file there is still allowed to start.
    let r = ior_in(
        &s.root,
        &["-r", "-b", "64k", "-t", "32k", "-o", &ro.path("f")],
    );
    assert!(!stderr(&r).contains("is not writable"), "{}", stderr(&r));
}

#[cfg(feature = "mpi")]
mod under_mpirun {
    use super::*;
    use common::tree;
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    /// Longer than any of these runs takes; what outlasts it hung.
    const LIMIT: Duration = Duration::from_secs(60);

    /// `mpirun -n 2 sh -c SCRIPT` in `dir`, `$IOLAB` the binary and each
    /// rank in `c$OMPI_COMM_WORLD_RANK` of `dir`: its status and stderr,
    /// or None when it had not ended after [`LIMIT`] (then killed).
    fn two_ranks(dir: &Path, script: &str) -> Option<(Option<i32>, String)> {
        if Command::new("mpirun").arg("--version").output().is_err() {
            common::skip_or_fail("mpi_agree", "mpirun not installed");
            return Some((Some(2), "skipped".into()));
        }
        for r in ["c0", "c1"] {
            std::fs::create_dir_all(dir.join(r)).unwrap();
        }
        let mut c = Command::new("mpirun");
        let _session = common::OmpiSession::attach(&mut c);
        let script = format!("cd c$OMPI_COMM_WORLD_RANK && {script}");
        let mut child = c
            .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
            .args(["sh", "-c", &script])
            .env("IOLAB", env!("CARGO_BIN_EXE_iolab"))
            .current_dir(dir)
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let start = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if start.elapsed() > LIMIT {
                // SAFETY: kill(2) on the process group our child leads.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let err = reader.join().unwrap();
        status.map(|st| (st.code(), err))
    }

    /// What a run ended with, failing the test when it hung.
    fn ended(dir: &Path, script: &str) -> (Option<i32>, String) {
        two_ranks(dir, script).unwrap_or_else(|| panic!("hung: {script}"))
    }

    /// mdtest: rank 1 finds its test directory already there, rank 0 does
    /// not. It hung: rank 1 finalised, rank 0 waited for it for ever, and
    /// rank 1's message was never printed.
    #[test]
    fn a_check_failing_on_one_rank_stops_both_with_its_message() {
        let s = Scratch::new("agree-check");
        std::fs::create_dir_all(s.path("c1/t/test-dir.0-0")).unwrap();
        let (code, err) = ended(&s.root, "exec $IOLAB mdtest -d t -n 5 -C");
        if err == "skipped" {
            return;
        }
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("rank 1 ("), "{err}");
        assert!(err.contains("test-dir.0-0"), "{err}");
        assert!(!s.path("c0/t").exists(), "{:?}", tree(&s.path("c0")));
    }

    /// mdtest given `-n 5` on rank 0 and `-n 6` on rank 1: refused, naming
    /// the option; it ran, and reported 10 files where 11 were made.
    #[test]
    fn ranks_given_different_options_are_refused_naming_the_first() {
        let s = Scratch::new("agree-options");
        let (code, err) = ended(
            &s.root,
            "exec $IOLAB mdtest -d ../t -n $((5 + OMPI_COMM_WORLD_RANK)) -C",
        );
        if err == "skipped" {
            return;
        }
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("not given the same options"), "{err}");
        assert!(err.contains("`items_asked = 6`"), "{err}");
        assert!(err.contains("`items_asked = 5`"), "{err}");
        assert_eq!(
            err.matches("not given the same options").count(),
            1,
            "{err}"
        );
        assert!(!s.path("t").exists(), "nothing made");
    }

    /// ior with an option only rank 1 was given (refused by its parser):
    /// rank 0 says rank 1's message. No iolab message at all was printed.
    #[test]
    fn a_command_line_refused_on_one_rank_is_said_by_rank_0() {
        let s = Scratch::new("agree-parse");
        let (code, err) = ended(
            &s.root,
            "X=; [ $OMPI_COMM_WORLD_RANK = 1 ] && X=--bogus; exec $IOLAB ior -b 64k -t 32k -o f $X",
        );
        if err == "skipped" {
            return;
        }
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("rank 1 ("), "{err}");
        assert!(err.contains("--bogus"), "{err}");
        assert!(!s.path("c0/f").exists());
    }

    /// ior where only rank 1's `-o` directory is read-only: exit 2 naming
    /// rank 1, nothing written by rank 0. It ran, and rank 0 reported a
    /// rate.
    #[test]
    fn an_o_unwritable_on_one_rank_stops_both() {
        let s = Scratch::new("agree-ro");
        std::fs::create_dir_all(s.path("c1")).unwrap();
        let ro = SmallFs::at(s.path("c1/d"), "agree-ro", "size=1m,ro");
        if !ro.mounted {
            return;
        }
        std::fs::create_dir_all(s.path("c0/d")).unwrap();
        let (code, err) = ended(&s.root, "exec $IOLAB ior -b 64k -t 32k -o d/f");
        if err == "skipped" {
            return;
        }
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("rank 1 ("), "{err}");
        assert!(err.contains("is not writable"), "{err}");
        assert!(
            tree(&s.path("c0/d")).is_empty(),
            "{:?}",
            tree(&s.path("c0/d"))
        );
    }

    /// io500: an ini missing in rank 1's directory, then an ini that
    /// differs there. Neither was said by any rank, and nothing is made.
    #[test]
    fn io500_ranks_agree_on_their_ini() {
        let s = Scratch::new("agree-io500");
        let ini = |n: u32| {
            format!(
                "[global]\ndatadir = {}\nresultdir = {}\n[debug]\nstonewall-time = 1\n[mdtest-easy]\nn = {n}\n",
                s.path("data").display(),
                s.path("results").display()
            )
        };
        std::fs::create_dir_all(s.path("c0")).unwrap();
        std::fs::write(s.path("c0/io.ini"), ini(2000)).unwrap();
        let (code, err) = ended(&s.root, "exec $IOLAB io500 io.ini");
        if err == "skipped" {
            return;
        }
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("rank 1 ("), "{err}");
        assert!(err.contains("io.ini: cannot read the ini file"), "{err}");
        std::fs::write(s.path("c1/io.ini"), ini(1000)).unwrap();
        let (code, err) = ended(&s.root, "exec $IOLAB io500 io.ini");
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("not given the same options"), "{err}");
        assert!(err.contains("1000"), "{err}");
        assert!(!s.path("data").exists() && !s.path("results").exists());
    }
}
