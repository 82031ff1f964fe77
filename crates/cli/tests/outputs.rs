//! The one output layer (crates/output) as users meet it: an output path
//! that cannot be written is exit 2 naming it before anything runs or is
//! created (a missing directory, a read-only mount), and a write into a
//! full file system leaves every output complete or absent (no truncated
//! SVG, no temporary or `.part` file, no 0-byte file). Real tmpfs mounts
//! made by the test, the real binary.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, is_root, skip_or_fail, stderr, stdout, Scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of `size` mounted at `at` (options such as `ro`), unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn new(test: &str, at: PathBuf, opts: &str) -> Option<Tmpfs> {
        if !is_root() {
            skip_or_fail(test, "mounting a tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(&at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(&at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip_or_fail(test, "mount -t tmpfs failed");
            return None;
        }
        Some(Tmpfs(at))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn assert_usage(what: &str, o: &std::process::Output, names: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
    assert!(stderr(o).contains(names), "{what}: {}", stderr(o));
}

#[test]
fn stats_run_checks_its_tarball_before_running_the_command() {
    let s = Scratch::new("out-stats");
    let mark = s.path("ran");
    let o = iolab(&[
        "stats",
        "run",
        "local",
        "--tarball",
        "/no/such/dir/x.tgz",
        "--",
        "touch",
        mark.to_str().unwrap(),
    ]);
    assert_usage("stats run", &o, "/no/such/dir");
    assert!(!mark.exists(), "the command ran");
}

#[test]
fn lst_run_checks_its_json_and_csv_before_starting() {
    for opt in ["--json", "--csv"] {
        let o = iolab(&[
            "lst",
            "run",
            "ping",
            "--from",
            "127.0.0.1:1",
            "--to",
            "127.0.0.1:1",
            "--count",
            "1",
            "--connect-timeout",
            "1",
            opt,
            "/no/such/dir/x.json",
        ]);
        assert_usage("lst run", &o, "/no/such/dir/x.json");
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    }
}

/// Every survey's --json and --csv into a missing directory and into a
/// read-only file system: exit 2 naming the path; no result file and no
/// work directory made.
#[test]
fn surveys_check_json_and_csv_before_anything_is_created() {
    let s = Scratch::new("out-survey");
    let Some(ro) = Tmpfs::new(
        "surveys_check_json_and_csv_before_anything_is_created",
        s.path("ro"),
        "ro,size=1m",
    ) else {
        return;
    };
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let rslt = s.path("r");
    let r = rslt.to_str().unwrap();
    let bad_paths = [
        "/no/such/dir/x".to_string(),
        ro.0.join("x").display().to_string(),
    ];
    for bad in &bad_paths {
        for opt in ["--json", "--csv"] {
            for words in [
                vec![
                    "survey",
                    "obdfilter",
                    d,
                    "--size",
                    "1",
                    "--nobjhi",
                    "1",
                    "--thrhi",
                    "1",
                ],
                vec![
                    "survey",
                    "mds",
                    d,
                    "--thrlo",
                    "1",
                    "--thrhi",
                    "1",
                    "--file-count",
                    "10",
                ],
                vec!["survey", "ost", d, "-s", "1"],
            ] {
                let mut w = words.clone();
                w.extend(["--rslt", r, opt, bad.as_str()]);
                let o = iolab(&w);
                assert_usage(&format!("{w:?}"), &o, bad);
                assert!(common::tree(&dir).is_empty(), "{w:?}");
                assert!(common::tree(&s.root).iter().all(|f| !f.starts_with("r.")));
            }
        }
    }
}

/// `iolab survey plot` into a file system too small for its charts: the
/// files that are there are complete, the rest absent.
#[test]
fn plot_into_a_full_file_system_leaves_only_complete_files() {
    let s = Scratch::new("out-plot");
    let Some(full) = Tmpfs::new(
        "plot_into_a_full_file_system_leaves_only_complete_files",
        s.path("full"),
        "size=48k",
    ) else {
        return;
    };
    // A summary with several charts (record sizes x tests), made by a
    // real object survey on the scratch tmpfs.
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let rslt = s.path("o");
    let o = iolab(&[
        "survey",
        "obdfilter",
        dir.to_str().unwrap(),
        "--size",
        "4",
        "--rszlo",
        "64",
        "--rszhi",
        "256",
        "--nobjhi",
        "2",
        "--thrhi",
        "4",
        "--rslt",
        rslt.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let prefix = full.0.join("p");
    let o = iolab(&[
        "survey",
        "plot",
        s.path("o.summary").to_str().unwrap(),
        "--out",
        prefix.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "a full file system is an error");
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    assert_complete_or_absent(&full.0);
}

/// Every file in `dir` is whole: no temporary file, none empty, every SVG
/// closed and every PNG ending with its IEND chunk.
fn assert_complete_or_absent(dir: &Path) {
    let names = common::tree(dir);
    for n in &names {
        let p = dir.join(n);
        let bytes = std::fs::read(&p).unwrap();
        assert!(
            !n.contains("iolab-tmp") && !n.ends_with(".part"),
            "{names:?}"
        );
        assert!(!bytes.is_empty(), "0-byte {n}");
        if n.ends_with(".svg") {
            assert!(
                String::from_utf8_lossy(&bytes)
                    .trim_end()
                    .ends_with("</svg>"),
                "truncated {n}"
            );
        }
        if n.ends_with(".png") {
            assert!(bytes.ends_with(&[0xAE, 0x42, 0x60, 0x82]), "truncated {n}");
        }
    }
}

/// `iolab report` into a full file system: nothing of the report is put
/// in place (and the directory it made goes again).
#[test]
fn report_into_a_full_file_system_leaves_nothing_partial() {
    let s = Scratch::new("out-report");
    let Some(full) = Tmpfs::new(
        "report_into_a_full_file_system_leaves_nothing_partial",
        s.path("full"),
        "size=32k",
    ) else {
        return;
    };
    let plan = s.path("p.toml");
    std::fs::write(
        &plan,
        format!(
            "label = \"s\"\ntool = \"mdtest\"\nargs = \"-F -n 8 -d {}/m.{{point}}\"\nrepeats = 1\n\
             [[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
            s.root.display()
        ),
    )
    .unwrap();
    let store = s.path("runs.sqlite");
    let st = store.to_str().unwrap();
    let o = iolab(&["sweep", plan.to_str().unwrap(), "--store", st]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = full.0.join("rep");
    let o = iolab(&["report", "s", "--store", st, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists(), "{:?}", common::tree(&full.0));
    assert!(
        common::tree(&full.0).is_empty(),
        "{:?}",
        common::tree(&full.0)
    );
}
