//! `iolab io500`: what a run and `--cleanup` leave and say. A killed run
//! given `--timestamp NAME` names the command that removes its files,
//! and that command removes them; directories the site made before the
//! run stay; `--cleanup` counts what it removes as it found it (the
//! stonewall files and timestamped directories included, and on S3 a
//! prefix only once nothing is left under it) and says when there was
//! nothing to remove.

#![allow(clippy::unwrap_used)]

mod common;

use common::{io500_small_ini as small_ini, iolab, stderr, tree, Scratch};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn touch(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// `N` of `removing what the phases left in DIR: N entries` and `R` of
/// `removed R of N entries`.
fn told(err: &str) -> (Option<u64>, Option<(u64, u64)>) {
    let found = err
        .split(" entries (")
        .next()
        .filter(|h| h.contains("removing what the phases left"))
        .and_then(|h| h.rsplit(": ").next())
        .and_then(|n| n.parse().ok());
    let removed = err.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        let i = w.iter().position(|x| *x == "removed")?;
        Some((w.get(i + 1)?.parse().ok()?, w.get(i + 3)?.parse().ok()?))
    });
    (found, removed)
}

/// Starts `iolab io500 --timestamp myrun INI`, held by its pause-dir
/// before find, and returns it once mdtest-hard-write's line is out
/// (every write phase has made its files).
fn held_before_find(ini: &Path) -> std::process::Child {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--timestamp", "myrun"])
        .arg(ini)
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if line.starts_with("[RESULT]") && line.contains(" mdtest-hard-write ") {
                let _ = tx.send(());
            }
        }
    });
    let held = rx.recv_timeout(Duration::from_secs(120));
    if held.is_err() {
        let _ = child.kill();
        panic!(
            "no mdtest-hard-write line: {}",
            stderr(&child.wait_with_output().unwrap())
        );
    }
    child
}

/// Waits for `child` at most a minute (then kills it); its stderr.
fn ended(mut child: std::process::Child) -> (Option<i32>, String) {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let o = child.wait_with_output().unwrap();
    (o.status.code(), stderr(&o))
}

/// A run given `--timestamp myrun` and interrupted names the command
/// that removes what it leaves with its timestamp (`iolab io500
/// --cleanup INI` found nothing of it and said nothing); after a kill
/// -9 that command removes what the run left (and the stonewall files in
/// the resultdir), and nothing else. `--cleanup` without the name does
/// not look there, and says there is nothing to remove and how to name a
/// run.
#[test]
fn a_killed_run_named_by_timestamp_is_cleaned_by_the_command_it_names() {
    let s = Scratch::new("io500-stamp");
    let pause = s.path("pause");
    touch(&pause.join("find"), b"");
    let extra = format!("[debug]\npause-dir = {}\n", pause.display());
    let ini = small_ini(&s, "x.ini", &extra);
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("timestamp-datadir = FALSE", "timestamp-datadir = TRUE");
    std::fs::write(&ini, text).unwrap();
    // Not a run's (not named as the app names one): never touched.
    touch(&s.path("d/other/ior-easy/ior_file_easy.00000000"), b"x");
    let child = held_before_find(&ini);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, err) = ended(child);
    assert_eq!(code, Some(130), "{err}");
    let want = format!("iolab io500 --cleanup --timestamp myrun {}", ini.display());
    assert!(
        err.contains(&format!("; {want} removes the rest)")),
        "{err}"
    );
    // Killed: everything stays.
    let child = held_before_find(&ini);
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    ended(child);
    let left = tree(&s.path("d/myrun"));
    assert!(left.iter().any(|p| p.contains("file.mdtest")), "{left:?}");
    assert!(s.path("r/mdtest-hard.stonewall").exists());
    let plain = ["io500", "--cleanup", ini.to_str().unwrap()];
    let o = iolab(&plain);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tree(&s.path("d/myrun")), left);
    // The command the run named, as it is written.
    let words: Vec<&str> = want.split_whitespace().skip(1).collect();
    let o = iolab(&words);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let (found, removed) = told(&err);
    assert!(found.is_some_and(|n| n > 4), "{err}");
    assert_eq!(removed, found.map(|n| (n, n)), "{err}");
    assert!(!s.path("d/myrun").exists(), "{:?}", tree(&s.path("d")));
    assert!(!s.path("r/mdtest-easy.stonewall").exists());
    assert!(!s.path("r/mdtest-hard.stonewall").exists());
    let other = ["ior-easy/", "ior-easy/ior_file_easy.00000000"];
    assert_eq!(tree(&s.path("d/other")), other);
    // Again: nothing left, and both say so, the one without the name
    // how to name a run.
    let o = iolab(&words);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to remove"), "{}", stderr(&o));
    let o = iolab(&plain);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to remove"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--timestamp NAME"), "{}", stderr(&o));
}

/// Phase directories the site made before the run (for a stripe
/// layout, say) stay, as they were (mode included), emptied; those the
/// run made go.
#[test]
fn phase_directories_made_before_the_run_stay() {
    let s = Scratch::new("io500-premade");
    let ini = small_ini(&s, "x.ini", "");
    for d in ["d/ior-easy", "d/mdtest-hard"] {
        std::fs::create_dir_all(s.path(d)).unwrap();
    }
    let mode = std::fs::Permissions::from_mode(0o700);
    std::fs::set_permissions(s.path("d/ior-easy"), mode).unwrap();
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tree(&s.path("d")), ["ior-easy/", "mdtest-hard/"]);
    let m = std::fs::metadata(s.path("d/ior-easy")).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o700);
}

/// What a killed run left: `--cleanup` counts the stonewall file in the
/// resultdir and a timestamped directory as it removes them ("removed
/// 8 of 7 entries" before).
#[test]
fn cleanup_removes_as_many_entries_as_it_counted() {
    let s = Scratch::new("io500-counts");
    let ini = small_ini(&s, "x.ini", "");
    touch(&s.path("d/ior-easy/ior_file_easy.00000000"), b"x");
    touch(
        &s.path("d/mdtest-easy/test-dir.0-0/mdtest_tree.0.0/file.mdtest.0.1"),
        b"",
    );
    touch(&s.path("d/timestampfile"), b"");
    touch(&s.path("r/mdtest-easy.stonewall"), b"20\n");
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(told(&err), (Some(8), Some((8, 8))), "{err}");
    assert!(tree(&s.path("d")).is_empty() && tree(&s.path("r")).is_empty());
    // With timestamp-datadir: each run directory counts too.
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("timestamp-datadir = FALSE", "timestamp-datadir = TRUE");
    std::fs::write(&ini, text).unwrap();
    touch(&s.path("d/2025.11.25-18.58.35/ior-hard/file"), b"x");
    touch(&s.path("r/mdtest-hard.stonewall"), b"20\n");
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(told(&err), (Some(4), Some((4, 4))), "{err}");
    assert!(tree(&s.path("d")).is_empty() && tree(&s.path("r")).is_empty());
}

/// Foreign objects under the phase prefixes on S3: a prefix counts as
/// removed only when nothing is left under it, as a directory on POSIX
/// (both say "removed 2 of 4"; S3 said "removed 4 of 4").
#[test]
fn a_prefix_with_foreign_objects_is_not_counted_as_removed() {
    let server = match iolab_testkit::s3::S3Server::shared() {
        Ok(s) => s,
        Err(e) => return common::skip_or_fail("io500_leftovers_s3", &e),
    };
    let s = Scratch::new("io500-s3-left");
    let b = "io500-left";
    server.make_bucket(b).unwrap();
    let keys = [
        "run9/ior-easy/foreign",
        "run9/mdtest-easy/notmine",
        "run9/mdtest-hard/file.mdtest.0.5",
    ];
    for k in keys {
        server.put(b, k, b"x").unwrap();
        touch(&s.path(&k.replace("run9", "d")), b"x");
    }
    let ini = small_ini(&s, "x.ini", "");
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    let posix = stderr(&o);
    assert!(o.status.success(), "{posix}");
    assert_eq!(told(&posix), (Some(4), Some((2, 4))), "{posix}");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace(&s.path("d").display().to_string(), "/run9")
        .replace("[debug]", "api = S3\n[debug]");
    let c = s.path("c.ini");
    std::fs::write(&c, text).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .envs(server.env())
        .env("CI", "1")
        .args(["io500", "--cleanup", &format!("--s3.bucket={b}")])
        .arg(&c)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(told(&err), (Some(4), Some((2, 4))), "{err}");
    let mut kept = server.keys(b).unwrap();
    kept.sort();
    assert_eq!(kept, ["run9/ior-easy/foreign", "run9/mdtest-easy/notmine"]);
    for k in &keys[..2] {
        assert!(
            err.contains(&format!("left: /{k} (not made by this run)")),
            "{err}"
        );
    }
}
