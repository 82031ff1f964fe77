//! `iolab stats` with the kit's own configuration files and in a run
//! directory holding what it did not write: the real binary, collectors
//! as real detached processes, and "nodes" that are this host reached
//! through a remote shell that drops the host name.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{stderr, stdout, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Stops any collector a failed test left under `tmp/iolab-stats`.
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

fn stats(dir: &Path, words: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("stats")
        .args(words)
        .current_dir(dir)
        .env("CI", "1")
        .env_remove("IOLAB_RSH")
        .output()
        .unwrap()
}

fn ok(o: &Output, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// The members of a gzip'd tar.
fn members(tgz: &Path) -> Vec<String> {
    let o = Command::new("tar").arg("-tzf").arg(tgz).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A config.sh in the kit's stats-collect form (its config.sh), our own
/// words: node lists built from helper variables into TARGETS, intervals
/// defaulted with `${VAR:-N}`, the analysis and tool variables, and DSH
/// as the remote shell (here one that runs the command on this host).
fn kit_config_sh(tmp: &Path, dsh: &str) -> String {
    format!(
        r#"# nodes: the kit walks TARGETS
PERCH_BIG_FS_MDS_LIST="kit-mds"
PERCH_BIG_FS_OST_LIST="kit-oss1 kit-oss2"
export TARGETS="${{PERCH_BIG_FS_MDS_LIST}} ${{PERCH_BIG_FS_OST_LIST}}"
VMSTAT_INTERVAL=${{VMSTAT_INTERVAL:-1}}
SERVICE_INTERVAL=${{SERVICE_INTERVAL:-0}}
SDIO_INTERVAL=${{SDIO_INTERVAL:-0}}
BRW_INTERVAL=${{BRW_INTERVAL:-0}}
MBALLOC_INTERVAL=${{MBALLOC_INTERVAL:-0}}
IO_INTERVAL=${{IO_INTERVAL:-1}}
JBD_INTERVAL=${{JBD_INTERVAL:-1}}
ANALYSE_INTERVAL=${{ANALYSE_INTERVAL:-1}}
BRW_ANALYSE=${{BRW_ANALYSE:-1}}
VMSTATE_ANALYSE=${{VMSTATE_ANALYSE:-1}}
TMP=${{TMP:-"{tmp}"}}
SCRIPT=${{SCRIPT:-"lstats.sh"}}
DSH=${{DSH:-"{dsh}"}}
DCP=${{DCP:-scp}}
USER=""
TAR=${{TAR:-tar -zcvf}}
"#,
        tmp = tmp.display()
    )
}

/// The same in the form of the kit's newer iokit-config: tool paths,
/// message switches, MDS_LIST and OST_LIST from helpers, and TARGETS.
fn iokit_config(tmp: &Path, dsh: &str) -> String {
    format!(
        r#"AWK=/usr/bin/awk
XARGS=/usr/bin/xargs
PRINT_INFO_MSGS=0
PRINT_DEBUG_MSGS=0
PERCH_MDS_LIST="io-mds"
PERCH_OST_LIST="io-oss1"
MDS_LIST=${{PERCH_MDS_LIST}}
OST_LIST=${{PERCH_OST_LIST}}
export TARGETS="${{MDS_LIST}} ${{OST_LIST}}"
VMSTAT_INTERVAL=${{VMSTAT_INTERVAL:-1}}
IO_INTERVAL=${{IO_INTERVAL:-1}}
TMP=${{TMP:-"{tmp}"}}
SCRIPT=${{SCRIPT:-"iokit-lstats"}}
DSH=${{DSH:-"{dsh}"}}
DCP=${{DCP:-scp}}
USER=""
TAR=${{TAR:-tar -zcvf}}
"#,
        tmp = tmp.display()
    )
}

/// The kit's config files were refused (`unknown variable
/// ANALYSE_INTERVAL`, `PERCH_BIG_FS_MDS_LIST`, `PERCH_MDS_LIST`), and
/// TARGETS, the kit's node list, was ignored: only this node was
/// sampled. Both files now start a collector on every node TARGETS
/// names, through the kit's DSH, and the tarball holds each node.
#[test]
fn the_kits_config_files_are_read_and_targets_is_the_node_list() {
    let s = Scratch::new("stats-kit-config");
    let rsh = common::local_rsh(&s);
    let dsh = format!("exec:{}", rsh.display());
    for (name, text, nodes) in [
        (
            "config.sh",
            kit_config_sh(&s.path("tmp1"), &dsh),
            vec!["kit-mds", "kit-oss1", "kit-oss2"],
        ),
        (
            "iokit-config",
            iokit_config(&s.path("tmp2"), &dsh),
            vec!["io-mds", "io-oss1"],
        ),
    ] {
        let tmp = if name == "config.sh" { "tmp1" } else { "tmp2" };
        let _reaper = Reaper(s.path(tmp));
        let cfg = s.path(name);
        std::fs::write(&cfg, text).unwrap();
        let c = cfg.to_str().unwrap();
        let o = stats(&s.root, &["start", c]);
        ok(&o, name);
        let tgz = format!("{tmp}.tgz");
        let o = stats(&s.root, &["stop", c, &tgz]);
        ok(&o, name);
        let got = members(&s.path(&tgz));
        for n in &nodes {
            let vm = format!("{tmp}/{n}/vmstat.jsonl");
            assert!(got.contains(&vm), "{name}: no {vm} in {got:?}");
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let here = format!("{tmp}/{}/", host.trim());
        assert!(
            !got.iter().any(|m| m.starts_with(&here)),
            "{name}: this node was sampled instead: {got:?}"
        );
    }
}

/// A variable that looks like one of the collector's but is misspelt is
/// still refused by name; a helper variable ending in _LIST is not.
#[test]
fn a_misspelt_list_is_refused_and_a_helper_list_is_not() {
    let s = Scratch::new("stats-kit-misspelt");
    let tmp = s.path("tmp");
    for (text, code) in [
        ("CLIENTS_LIST=n1\nVMSTAT_INTERVAL=1\n", 2),
        ("OSC_INTERVAL=1\nVMSTAT_INTERVAL=1\n", 2),
        ("PERCH_CLIENT_LIST=n1\nVMSTAT_INTERVAL=0\n", 0),
    ] {
        let cfg = s.path("c.sh");
        std::fs::write(&cfg, format!("TMP={}\n{text}", tmp.display())).unwrap();
        let _reaper = Reaper(tmp.clone());
        let o = stats(&s.root, &["start", cfg.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(code), "{text}: {}", stderr(&o));
        if code == 2 {
            let bad = text.split('=').next().unwrap();
            assert!(stderr(&o).contains(bad), "{text}: {}", stderr(&o));
        } else {
            ok(
                &stats(&s.root, &["stop", cfg.to_str().unwrap(), "p.tgz"]),
                text,
            );
        }
    }
}

/// `stats start` removed the whole run directory (remove_dir_all), files
/// it never wrote included. A file it did not write is now kept and
/// named, and the start refused (exit 2) before any collector starts; an
/// earlier collector's leftovers alone are replaced.
#[test]
fn stats_start_keeps_and_names_files_it_did_not_write() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("stats-kit-foreign");
    let tmp = s.path("T");
    let _reaper = Reaper(tmp.clone());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let base = tmp.join("iolab-stats");
    let run = base.join(host.trim());
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
    let cfg = s.path("c.sh");
    std::fs::write(&cfg, format!("VMSTAT_INTERVAL=1\nTMP={}\n", tmp.display())).unwrap();
    let c = cfg.to_str().unwrap();
    // The tester's case: a notes.txt of someone's, where no collector ran.
    std::fs::write(run.join("notes.txt"), "mine\n").unwrap();
    let o = stats(&s.root, &["start", c]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("notes.txt"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("collecting on"), "{}", stdout(&o));
    assert_eq!(
        std::fs::read_to_string(run.join("notes.txt")).unwrap(),
        "mine\n"
    );
    // Moved away, as asked. An earlier collector's leftovers and a file
    // of someone's: refused, kept.
    std::fs::remove_file(run.join("notes.txt")).unwrap();
    std::fs::write(run.join("spec.json"), "{}").unwrap();
    std::fs::write(run.join("vmstat.jsonl"), "old\n").unwrap();
    std::fs::write(run.join("mine.txt"), "keep\n").unwrap();
    let o = stats(&s.root, &["start", c]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("mine.txt"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(run.join("mine.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("vmstat.jsonl")).unwrap(),
        "old\n"
    );
    // The leftovers alone are replaced by a fresh run.
    std::fs::remove_file(run.join("mine.txt")).unwrap();
    let o = stats(&s.root, &["start", c]);
    ok(&o, "leftovers only");
    let o = stats(&s.root, &["stop", c, "p.tgz"]);
    ok(&o, "stop");
    assert!(!run.exists(), "the run directory is removed after the stop");
}
