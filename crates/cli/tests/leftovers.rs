//! The test suite leaves nothing in TMP: `scripts/leftovers.sh` (run by
//! scripts/test.sh around the whole suite) names what a test left, and
//! the fixtures clean up after a test process that was killed outright,
//! when no Drop ran.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{stderr, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/leftovers.sh")
}

fn leftovers(tmpdir: &Path, words: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(words)
        .env("TMPDIR", tmpdir)
        .output()
        .unwrap()
}

/// A pid no process has now: a child that has been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// What a test leaves (a unit test's directory, weed's socket) makes the
/// check fail naming it; what was there before, and what a live process
/// still holds, does not.
#[test]
fn the_check_names_what_a_run_left_in_tmp() {
    let s = Scratch::new("leftovers-check");
    let tmp = s.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::create_dir(tmp.join("iolab-old-1")).unwrap();
    let snap = s.path("before");
    let o = leftovers(&tmp, &["snapshot", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let check = || leftovers(&tmp, &["check", snap.to_str().unwrap()]);
    let o = check();
    assert!(o.status.success(), "nothing new: {}", stderr(&o));
    // A live process's own directory is not a leftover.
    let live = tmp.join(format!("iolab-shell-{}", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let o = check();
    assert!(o.status.success(), "in use: {}", stderr(&o));
    // A dead one's is, and so is a socket nobody listens on.
    let dead = tmp.join(format!("iolab-shell-{}", dead_pid()));
    std::fs::create_dir(&dead).unwrap();
    let sock = tmp.join("seaweedfs-s3-grpc-1.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    let o = check();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&dead.display().to_string()), "{err}");
    assert!(err.contains(&sock.display().to_string()), "{err}");
    assert!(!err.contains("iolab-old-1") && !err.contains(&live.display().to_string()));
    // A socket something listens on is in use.
    std::fs::remove_file(&sock).unwrap();
    std::fs::remove_dir(&dead).unwrap();
    let _held = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let o = check();
    assert!(o.status.success(), "listened on: {}", stderr(&o));
}

/// weed's sockets in /tmp for `ports` (`seaweedfs-*-PORT.sock`).
fn weed_sockets(ports: &[u16]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("seaweedfs-")
                && name
                    .strip_suffix(".sock")
                    .and_then(|r| r.rsplit('-').next())
                    .and_then(|x| x.parse::<u16>().ok())
                    .is_some_and(|p| ports.contains(&p))
        })
        .collect();
    found.sort();
    found
}

/// Run by [`a_killed_tests_s3_server_leaves_no_socket`] in a child test
/// process: starts a server, says its ports and waits to be killed.
#[test]
#[ignore = "a helper process of a_killed_tests_s3_server_leaves_no_socket"]
fn s3_server_held_until_killed() {
    if std::env::var_os("IOLAB_LEFTOVERS_HELPER").is_none() {
        return;
    }
    let s = iolab_testkit::s3::S3Server::start(&[]).unwrap();
    let ports: Vec<String> = s.ports().iter().map(u16::to_string).collect();
    println!("ports {}", ports.join(" "));
    std::thread::sleep(Duration::from_secs(600));
}

/// A test process killed with SIGKILL (no Drop, no exit handler) while
/// its SeaweedFS runs: weed dies with it, its sockets stay in /tmp, and
/// the next server started removes them.
#[test]
fn a_killed_tests_s3_server_leaves_no_socket() {
    let name = "a_killed_tests_s3_server_leaves_no_socket";
    if let Err(why) = iolab_testkit::s3::S3Server::start(&[]).map(drop) {
        common::skip_or_fail(name, &why);
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "s3_server_held_until_killed",
            "--nocapture",
        ])
        .env("IOLAB_LEFTOVERS_HELPER", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ports = Vec::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
        if let Some(p) = line.trim().strip_prefix("ports ") {
            ports = p.split(' ').map(|x| x.parse::<u16>().unwrap()).collect();
            break;
        }
        line.clear();
    }
    assert_eq!(ports.len(), 9, "the helper did not start its server");
    let before = weed_sockets(&ports);
    assert!(
        !before.is_empty(),
        "weed made no socket in /tmp: nothing to test"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // weed follows its parent (PR_SET_PDEATHSIG): its ports free up.
    let until = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", ports[0])).is_ok() {
        assert!(Instant::now() < until, "weed outlived its test process");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(weed_sockets(&ports), before, "left by the killed test");
    let next = iolab_testkit::s3::S3Server::start(&[]).unwrap();
    assert!(
        weed_sockets(&ports).is_empty(),
        "{:?}",
        weed_sockets(&ports)
    );
    drop(next);
}
