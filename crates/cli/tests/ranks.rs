//! A tool that runs as one process (xdd, lst, survey, ...) is refused
//! when mpirun starts it as several ranks: each rank would run its own
//! benchmark on the same targets. Real `mpirun` (Open MPI), the real
//! binary; the tools that run across ranks, and the iolab processes a
//! rank starts itself, are unaffected.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{skip_or_fail, stderr, stdout, OmpiSession, Scratch};
use std::process::{Command, Output};

/// `mpirun --oversubscribe -n RANKS` of `words` in `dir`, as root too.
fn mpirun(dir: &std::path::Path, ranks: u32, program: &str, words: &[&str]) -> Output {
    let mut c = Command::new("mpirun");
    let _session = OmpiSession::attach(&mut c);
    c.args(["--allow-run-as-root", "--oversubscribe", "-n"])
        .arg(ranks.to_string())
        .arg(program)
        .args(words)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

fn have_mpirun(test: &str) -> bool {
    let there = Command::new("mpirun").arg("--version").output().is_ok();
    if !there {
        skip_or_fail(test, "mpirun is not installed");
    }
    there
}

/// `mpirun -n 3 iolab xdd ...` ran three writes of one target and
/// printed three reports, exit 0. Now every rank exits 2 before anything
/// is made, and the message (rank 0's) is said once, naming the tool and
/// the tools that run across ranks; through the `xdd` link too, and for
/// lst, survey and sweep. `mpirun -n 1` still runs the tool.
#[test]
fn a_tool_that_runs_as_one_process_is_refused_as_several_ranks() {
    if !have_mpirun("one-process tools under mpirun") {
        return;
    }
    let s = Scratch::new("ranks-refused");
    let d = s.path("d");
    std::fs::create_dir(&d).unwrap();
    let link = s.path("xdd");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_iolab"), &link).unwrap();
    let iolab = env!("CARGO_BIN_EXE_iolab");
    let xdd = "-op write -target t -reqsize 8 -numreqs 8 -csvout r.csv";
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            iolab,
            ["xdd"].into_iter().chain(xdd.split(' ')).collect(),
            "iolab xdd",
        ),
        (link.to_str().unwrap(), xdd.split(' ').collect(), "xdd"),
        (
            iolab,
            vec!["survey", "obdfilter", "o", "--size", "4"],
            "iolab survey",
        ),
        (iolab, vec!["lst", "--help"], "iolab lst"),
        (iolab, vec!["sweep", "no-plan.toml"], "iolab sweep"),
    ];
    for (program, words, prog) in cases {
        let o = mpirun(&d, 3, program, &words);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{prog}: {}{err}", stdout(&o));
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("started as one of"))
            .collect();
        assert_eq!(said.len(), 1, "{prog}: said once: {err}");
        let tool = prog.rsplit(' ').next().unwrap();
        assert!(
            said[0].starts_with(&format!("{prog}: started as one of 3 MPI ranks"))
                && said[0].contains(&format!("but {tool} runs as one process"))
                && said[0]
                    .ends_with("the tools that run across ranks are mdtest, ior, io500, s3bench"),
            "{}",
            said[0]
        );
        assert!(!stdout(&o).contains("Combined"), "{prog}: {}", stdout(&o));
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            0,
            "{prog}: something was made"
        );
    }
    // docs/mpi.md's example, as written there.
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/mpi.md")).unwrap();
    let mut lines = doc
        .lines()
        .skip_while(|l| !l.starts_with("mpirun --oversubscribe -n 3 iolab xdd"));
    // After `mpirun --oversubscribe -n 3 iolab`.
    let words: Vec<&str> = lines.next().unwrap().split(' ').skip(5).collect();
    let shown = lines.next().unwrap().strip_prefix("# ").unwrap();
    let target = d.join("x");
    let words: Vec<&str> = words
        .iter()
        .map(|w| match *w {
            "/mnt/fs/x" => target.to_str().unwrap(),
            w => w,
        })
        .collect();
    let o = mpirun(&d, 3, iolab, &words);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).lines().any(|l| l == shown),
        "{shown}\n{}",
        stderr(&o)
    );
    assert!(!target.exists());
    let o = mpirun(
        &d,
        1,
        iolab,
        &["xdd"]
            .into_iter()
            .chain(xdd.split(' '))
            .collect::<Vec<_>>(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("r.csv")).unwrap();
    assert_eq!(csv.lines().filter(|l| l.starts_with("What,")).count(), 1);
}

/// The tools that run across ranks still do, and what a rank starts
/// itself is not taken for a rank though it inherits mpirun's variables:
/// mdtest's `--stats` collectors, `iolab stats` processes started
/// through a local remote shell, record their samples into the JSON.
#[cfg(feature = "mpi")]
#[test]
fn the_tools_across_ranks_and_what_a_rank_starts_still_run() {
    if !have_mpirun("tools across ranks under mpirun") {
        return;
    }
    let s = Scratch::new("ranks-across");
    let d = s.path("d");
    std::fs::create_dir(&d).unwrap();
    let host = String::from_utf8(Command::new("hostname").output().unwrap().stdout).unwrap();
    std::fs::write(
        d.join("stats.toml"),
        format!(
            "vmstat_interval = 1\nclient_list = [\"{}\"]\nrsh = \"local\"\n",
            host.trim()
        ),
    )
    .unwrap();
    let iolab = env!("CARGO_BIN_EXE_iolab");
    let words = "mdtest -F -n 20 -d tree --stats stats.toml --json r.json";
    let o = mpirun(&d, 2, iolab, &words.split(' ').collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("2 tasks, 40 files"), "{}", stdout(&o));
    assert!(!stderr(&o).contains("started as one of"), "{}", stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let stats = &doc["stats"];
    assert_eq!(stats["failed"], serde_json::json!([]), "{stats}");
    let nodes = stats["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{stats}");
    assert!(nodes[0]["stats"]["vmstat"].is_object(), "{stats}");
}
