//! The delayed FUSE file system: a passthrough that sees every request,
//! unmounted on drop, by its binary on SIGTERM, and after a killed
//! server by the next mount. Needs root and /dev/fuse.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_testkit::delayfs::DelayFs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn mounted(p: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let p = p.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(p))
}

/// Under CI a machine without FUSE fails the test; elsewhere it skips.
fn skip_or_fail(why: &str) {
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
        panic!("setup failed under CI: {why}");
    }
    println!("SKIPPED: {why}");
}

struct Dirs(PathBuf);
impl Dirs {
    fn new(name: &str) -> Dirs {
        let d = std::env::temp_dir().join(format!("iolab-delayfs-{name}-{}", std::process::id()));
        std::fs::create_dir_all(d.join("back")).unwrap();
        std::fs::create_dir_all(d.join("mnt")).unwrap();
        Dirs(d.canonicalize().unwrap())
    }
}
impl Drop for Dirs {
    fn drop(&mut self) {
        // Detaches a mount a failed test left.
        let c = std::ffi::CString::new(self.0.join("mnt").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn passes_every_operation_through_and_unmounts_on_drop() {
    let d = Dirs::new("pass");
    let (back, mnt) = (d.0.join("back"), d.0.join("mnt"));
    let fs = match DelayFs::mount(&back, &mnt, Duration::from_millis(1)) {
        Ok(fs) => fs,
        Err(e) => return skip_or_fail(&format!("cannot mount FUSE: {e}")),
    };
    std::fs::create_dir(mnt.join("a")).unwrap();
    std::fs::write(mnt.join("a/f"), b"hello").unwrap();
    assert_eq!(std::fs::read(back.join("a/f")).unwrap(), b"hello");
    assert_eq!(std::fs::read(mnt.join("a/f")).unwrap(), b"hello");
    assert_eq!(std::fs::metadata(mnt.join("a/f")).unwrap().len(), 5);
    std::fs::rename(mnt.join("a/f"), mnt.join("a/g")).unwrap();
    let names: Vec<_> = std::fs::read_dir(mnt.join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["g"]);
    std::fs::remove_file(mnt.join("a/g")).unwrap();
    std::fs::remove_dir(mnt.join("a")).unwrap();
    assert_eq!(std::fs::read_dir(&back).unwrap().count(), 0);
    let n = fs.requests();
    std::fs::metadata(&mnt).unwrap();
    assert!(fs.requests() > n, "a stat asks the server");
    assert!(fs.peak_in_flight() >= 1);
    drop(fs);
    assert!(!mounted(&mnt), "unmounted on drop");
}

#[test]
fn the_binary_unmounts_on_sigterm_and_a_killed_one_is_reaped() {
    let d = Dirs::new("bin");
    let (back, mnt) = (d.0.join("back"), d.0.join("mnt"));
    let start = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab-delayfs"))
            .args([back.as_os_str(), mnt.as_os_str(), "1000".as_ref()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(c.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        (c, line)
    };
    let (mut c, line) = start();
    if line.trim() != "mounted" {
        let _ = c.wait();
        return skip_or_fail("iolab-delayfs could not mount");
    }
    assert!(mounted(&mnt));
    // SAFETY: signals our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    assert!(c.wait().unwrap().success());
    assert!(!mounted(&mnt), "unmounted on SIGTERM");
    // Killed outright, it leaves a dead mount; the next mount reaps it.
    let (mut c, _) = start();
    c.kill().unwrap();
    c.wait().unwrap();
    assert!(mounted(&mnt), "a killed server cannot unmount");
    let other = d.0.join("other");
    std::fs::create_dir(&other).unwrap();
    let fs = DelayFs::mount(&back, &other, Duration::ZERO).unwrap();
    assert!(!mounted(&mnt), "the dead mount was detached");
    drop(fs);
}
