//! Restarting end-to-end copies: the destination's restart file moves
//! while data moves, and a copy killed with SIGKILL at five points
//! (destination, then source, alternately) resumes each time from the
//! record, ending byte-identical to its source (cmp).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::e2e::{free_ports, random_file, same, words, Bg};
use common::Scratch;
use std::path::Path;
use std::time::{Duration, Instant};

/// The `offset` of a restart file, when it can be read.
fn recorded(p: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(p).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("offset "))
        .and_then(|v| v.trim().parse().ok())
}

fn start(dir: &Path, line: &str) -> Bg {
    let mut w = vec!["xdd".to_string()];
    w.extend(words(line));
    Bg::start(dir, &w, &[])
}

#[test]
fn the_restart_monitor_advances_while_data_moves() {
    let s = Scratch::new("e2e-monitor");
    let p = free_ports(2);
    let total: u64 = 256 << 20;
    let common = format!("-target null -reqsize 1024 -mbytes 256 -e2e destination 127.0.0.1:{p},2");
    let mut d = start(
        &s.root,
        &format!(
            "-op write {common} -e2e isdestination -restart enable file r.rst frequency 0.005"
        ),
    );
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    let src = start(&s.root, &format!("-op read {common} -e2e issource"));
    // Every record seen while the copy runs (the file is replaced
    // atomically, so each read is a whole record).
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(120);
    while Instant::now() < until {
        if let Some(o) = recorded(&s.path("r.rst")) {
            if seen.last() != Some(&o) {
                seen.push(o);
            }
            if o == total {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let (src, dst) = (src.wait(60), d.wait(60));
    assert_eq!((src.code, dst.code), (Some(0), Some(0)), "{}", dst.stderr);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "never back: {seen:?}");
    let inside = seen.iter().filter(|&&o| o > 0 && o < total).count();
    assert!(inside >= 2, "the record moved during the copy: {seen:?}");
    assert_eq!(seen.last(), Some(&total));
}

/// Waits until the restart file records at least `at`; the offset seen.
fn wait_record(p: &Path, at: u64) -> u64 {
    let until = Instant::now() + Duration::from_secs(120);
    while Instant::now() < until {
        match recorded(p) {
            Some(o) if o >= at => return o,
            _ => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    panic!("the restart file never reached {at}: {:?}", recorded(p));
}

#[test]
fn a_copy_killed_five_times_resumes_to_a_byte_identical_file() {
    let s = Scratch::new("e2e-kill");
    let total: u64 = 8 << 20;
    random_file(&s.path("src.dat"), total as usize);
    let rst = s.path("r.rst");
    // Slowed down (4 MB/s) so that the kills land spread over the copy.
    let common = "-reqsize 64 -mbytes 8 -qd 2";
    let dest = |p: u16| {
        format!("-op write -target dst.dat {common} -e2e isdestination -e2e destination 127.0.0.1:{p} -restart enable file r.rst frequency 0.02")
    };
    let source = |p: u16| {
        format!("-op read -target src.dat {common} -throttle bw 4 -e2e issource -e2e destination 127.0.0.1:{p} -restart enable")
    };
    let mut last = 0;
    for k in 1..=5u64 {
        let p = free_ports(2);
        let mut d = start(&s.root, &dest(p));
        assert!(d.wait_for("listening on"), "{}", d.stderr_now());
        let src = start(&s.root, &source(p));
        wait_record(&rst, total * k / 7);
        let (victim_is_dest, other) = if k % 2 == 1 {
            d.kill();
            (true, src.wait(60))
        } else {
            src.kill();
            (false, d.wait(60))
        };
        assert_eq!(other.code, Some(1), "kill {k}: {}", other.stderr);
        if !victim_is_dest {
            assert!(
                other.stderr.contains("closed the connection"),
                "kill {k}: {}",
                other.stderr
            );
            assert!(
                other.stderr.contains("partial copy is kept"),
                "{}",
                other.stderr
            );
        }
        let now = recorded(&rst).unwrap();
        assert!(
            now > last,
            "kill {k}: the record advanced from {last} to {now}"
        );
        assert!(now < total, "kill {k} came before the end");
        last = now;
    }
    // A source without -restart cannot join a resumed copy.
    let p = free_ports(2);
    let mut d = start(&s.root, &dest(p));
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    let plain = start(
        &s.root,
        &source(p)
            .replace(" -restart enable", "")
            .replace("-throttle bw 4 ", ""),
    )
    .wait(60);
    let dd = d.wait(60);
    assert_eq!(
        (plain.code, dd.code),
        (Some(2), Some(2)),
        "{}",
        plain.stderr
    );
    assert!(
        plain.stderr.contains("give the source -restart"),
        "{}",
        plain.stderr
    );
    assert_eq!(
        recorded(&rst),
        Some(last),
        "a refused resume changes nothing"
    );
    // The last resume names the offset explicitly on both sides.
    let p = free_ports(2);
    let at = format!("-restart offset {last}");
    let plain_dest = dest(p).replace(" -restart enable file r.rst frequency 0.02", "");
    let mut d = start(&s.root, &format!("{plain_dest} {at}"));
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    let src = start(
        &s.root,
        &format!(
            "{} {at}",
            source(p)
                .replace(" -restart enable", "")
                .replace("-throttle bw 4 ", "")
        ),
    )
    .wait(60);
    let dd = d.wait(60);
    assert_eq!(
        (src.code, dd.code),
        (Some(0), Some(0)),
        "{}\n{}",
        src.stderr,
        dd.stderr
    );
    assert!(
        src.stderr
            .contains(&format!("resumes the copy at byte {last}")),
        "{}",
        src.stderr
    );
    assert!(
        same(&s.path("src.dat"), &s.path("dst.dat")),
        "byte-identical after 5 kills"
    );
}

fn sigterm(b: &Bg) {
    // SAFETY: kill has no memory effects; the pid is our child's.
    unsafe { libc::kill(b.pid() as i32, libc::SIGTERM) };
}

/// SIGTERM (as Ctrl-C) on either side mid-copy: that side exits 130,
/// the other exits 1 with the reason. A destination that keeps a restart
/// file keeps its partial copy and says so; one that does not removes
/// the file it made.
#[test]
fn an_interrupted_side_exits_130_and_says_what_it_left() {
    let s = Scratch::new("e2e-term");
    random_file(&s.path("src.dat"), 8 << 20);
    let common = "-reqsize 64 -mbytes 8 -qd 2";
    for (kill_dest, restart) in [(true, "-restart enable"), (false, "")] {
        let p = free_ports(2);
        let dest = format!("-e2e destination 127.0.0.1:{p}");
        let mut d = start(
            &s.root,
            &format!("-op write -target dst.dat {common} {dest} -e2e isdestination {restart}"),
        );
        assert!(d.wait_for("listening on"), "{}", d.stderr_now());
        let src = start(
            &s.root,
            &format!(
                "-op read -target src.dat {common} {dest} -e2e issource -throttle bw 4 {restart}"
            ),
        );
        // Wait until data is moving: the destination file grows.
        let until = Instant::now() + Duration::from_secs(60);
        while std::fs::metadata(s.path("dst.dat")).map_or(0, |m| m.len()) < 1 << 20 {
            assert!(Instant::now() < until, "no data moved");
            std::thread::sleep(Duration::from_millis(5));
        }
        let (hit, other) = if kill_dest {
            sigterm(&d);
            (d.wait(60), src.wait(60))
        } else {
            sigterm(&src);
            (src.wait(60), d.wait(60))
        };
        assert_eq!(hit.code, Some(130), "{}", hit.stderr);
        assert_eq!(other.code, Some(1), "{}", other.stderr);
        // The destination, killed or not, says what it wrote (xddcp
        // reports that figure, not the bytes the source sent).
        let dst_err = if kill_dest {
            &hit.stderr
        } else {
            &other.stderr
        };
        assert!(
            dst_err.contains("e2e destination target 0: this run wrote "),
            "{dst_err}"
        );
        if kill_dest {
            assert!(
                hit.stderr.contains("partial copy is kept"),
                "{}",
                hit.stderr
            );
            let recorded = recorded(&s.path("dst.dat.restart")).unwrap();
            assert!(
                hit.stderr
                    .contains(&format!("which says its first {recorded} of ")),
                "{}",
                hit.stderr
            );
            assert!(
                other.stderr.contains("the destination said"),
                "{}",
                other.stderr
            );
            assert!(s.path("dst.dat").exists());
            let _ = std::fs::remove_file(s.path("dst.dat"));
            let _ = std::fs::remove_file(s.path("dst.dat.restart"));
        } else {
            assert!(
                other.stderr.contains("the source stopped before the end"),
                "{}",
                other.stderr
            );
            assert!(other.stderr.contains("removed"), "{}", other.stderr);
            assert!(!s.path("dst.dat").exists());
        }
    }
}

/// A parent's death signal comes more than once: the kernel sends it
/// again each time the dying parent's threads exit and hand the child on
/// (a `kill -9` of xddcp sent its destination side 2-3 SIGTERMs, each
/// from xddcp's pid), and the repeats must not count as the second
/// signal that ends iolab without cleaning up. Here the thread that
/// started the destination (with `end_with_parent`, as xddcp does) ends
/// mid-copy, so the kernel sends the first, and this process, the
/// parent, sends the repeat right after: the destination exits 130 with
/// its file removed. Before the fix it ended at the repeat, the partial
/// file left at the destination's name.
#[test]
fn a_repeated_parent_death_signal_still_lets_the_destination_clean_up() {
    let s = Scratch::new("e2e-pdeath");
    random_file(&s.path("src.dat"), 8 << 20);
    let common = "-reqsize 64 -mbytes 8 -qd 2";
    let p = free_ports(2);
    let dest = format!("-e2e destination 127.0.0.1:{p}");
    let line = format!("xdd -op write -target dst.dat {common} {dest} -e2e isdestination");
    let (root, (started, starting)) = (s.root.clone(), std::sync::mpsc::channel());
    let (ended_tx, ended) = std::sync::mpsc::channel::<()>();
    let starter = std::thread::spawn(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"));
        cmd.args(words(&line));
        iolab_launch::end_with_parent(&mut cmd, libc::SIGTERM);
        started
            .send(Bg::start_command(&mut cmd, &root, &[]))
            .unwrap();
        // Lives until told: its end is the parent's death to the kernel.
        let _ = ended.recv();
    });
    let mut d: Bg = starting.recv().unwrap();
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    let src = start(
        &s.root,
        &format!("-op read -target src.dat {common} {dest} -e2e issource -throttle bw 4"),
    );
    let until = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(s.path("dst.dat")).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(Instant::now() < until, "no data moved");
        std::thread::sleep(Duration::from_millis(5));
    }
    ended_tx.send(()).unwrap();
    starter.join().unwrap();
    sigterm(&d);
    let (dst, src) = (d.wait(60), src.wait(60));
    assert_eq!(dst.code, Some(130), "{}", dst.stderr);
    assert!(!dst.stderr.contains("second signal"), "{}", dst.stderr);
    assert!(dst.stderr.contains("removed"), "{}", dst.stderr);
    assert!(!s.path("dst.dat").exists(), "the partial file was left");
    assert_eq!(src.code, Some(1), "{}", src.stderr);
}

/// The `pass` and `offset` of a restart file (pass 1 when it has no
/// `pass` line), when it can be read.
fn recorded_at(p: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(p).ok()?;
    let pass = text
        .lines()
        .find_map(|l| l.strip_prefix("pass "))
        .map_or(Some(1), |v| v.trim().parse().ok())?;
    Some((pass, recorded(p)?))
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Issue 18: a copy of three passes killed with SIGKILL once in each
/// pass (destination, source, destination) resumes each time in the
/// pass and at the byte its record names, ends byte-identical, and the
/// last run reports only the bytes it moved.
#[test]
fn a_copy_of_three_passes_killed_in_each_pass_resumes_where_it_was() {
    let s = Scratch::new("e2e-kill-passes");
    let total: u64 = 4 << 20;
    random_file(&s.path("src.dat"), total as usize);
    let rst = s.path("r.rst");
    let common = "-reqsize 64 -mbytes 4 -qd 2 -passes 3";
    let dest = |p: u16| {
        format!("-op write -target dst.dat {common} -e2e isdestination -e2e destination 127.0.0.1:{p} -restart enable file r.rst frequency 0.02 --json d.json")
    };
    // 4 MB/s: about a second a pass, so each kill lands inside its pass.
    let source = |p: u16| {
        format!("-op read -target src.dat {common} -throttle bw 4 -e2e issource -e2e destination 127.0.0.1:{p} -restart enable")
    };
    // Positions over all passes: pass p's byte o is (p-1) x total + o.
    let position = |(pass, o): (u64, u64)| (pass - 1) * total + o;
    let mut last = (1, 0);
    for k in 1..=3u64 {
        let p = free_ports(2);
        let mut d = start(&s.root, &dest(p));
        assert!(d.wait_for("listening on"), "{}", d.stderr_now());
        let src = start(&s.root, &source(p));
        let until = Instant::now() + Duration::from_secs(120);
        while recorded_at(&rst).map_or(0, position) < (2 * k - 1) * total / 2 {
            assert!(
                Instant::now() < until,
                "no progress: {:?}",
                recorded_at(&rst)
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let other = if k % 2 == 1 {
            d.kill();
            src.wait(60)
        } else {
            src.kill();
            d.wait(60)
        };
        assert_eq!(other.code, Some(1), "kill {k}: {}", other.stderr);
        if k == 2 {
            // The destination says where it resumed (notes come at the end).
            let at = format!("at byte {} of {total}, in pass {} of 3", last.1, last.0);
            assert!(other.stderr.contains(&at), "{}", other.stderr);
            // Its report counts what it wrote: pass 1 from the resume on.
            let j = read_json(&s.path("d.json"));
            let passes = j["payload"]["passes"].as_array().unwrap();
            assert_eq!(passes[0]["pass"], 1);
            let bytes = &passes[0]["targets"][0]["figures"]["write_bytes"];
            assert_eq!(*bytes, total - last.1, "{passes:?}");
            assert_eq!(passes.last().unwrap()["pass"], 2);
            std::fs::remove_file(s.path("d.json")).unwrap();
        }
        let now = recorded_at(&rst).unwrap();
        assert_eq!(now.0, k, "kill {k} landed in pass {k}: {now:?}");
        assert!(now.1 < total, "kill {k} came before the end of its pass");
        assert!(
            position(now) > position(last),
            "kill {k}: {last:?} -> {now:?}"
        );
        last = now;
        if k == 2 {
            // What the record does not vouch for is rewritten by the
            // resume: spoil it to prove it.
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(s.path("dst.dat"))
                .unwrap();
            let zeros = vec![0u8; (total - now.1) as usize];
            std::os::unix::fs::FileExt::write_all_at(&f, &zeros, now.1).unwrap();
        }
    }
    assert!(!s.path("d.json").exists(), "a killed run writes no report");
    let p = free_ports(2);
    let mut d = start(&s.root, &dest(p));
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    let src = start(&s.root, &source(p)).wait(60);
    let dd = d.wait(60);
    assert_eq!(
        (src.code, dd.code),
        (Some(0), Some(0)),
        "{}\n{}",
        src.stderr,
        dd.stderr
    );
    assert!(
        src.stderr.contains(&format!(
            "resumes the copy at byte {}, in pass 3 of 3",
            last.1
        )),
        "{}",
        src.stderr
    );
    assert!(
        same(&s.path("src.dat"), &s.path("dst.dat")),
        "byte-identical"
    );
    assert_eq!(recorded_at(&rst), Some((3, total)));
    // True bytes: pass 3 only, from the recorded byte on.
    let j = read_json(&s.path("d.json"));
    let passes = j["payload"]["passes"].as_array().unwrap();
    assert_eq!(passes.len(), 1, "{passes:?}");
    assert_eq!(passes[0]["pass"], 3);
    assert_eq!(j["payload"]["combined"]["write_bytes"], total - last.1);
}

#[test]
fn a_copy_of_several_passes_with_a_pass_offset_is_refused_before_anything() {
    let s = Scratch::new("e2e-passoffset");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words(
            "xdd -op write -target dst.dat -reqsize 64 -mbytes 4 -passes 2 -passoffset 4096 -e2e isdestination -e2e destination 127.0.0.1:1 -restart enable",
        ))
        .current_dir(&s.root)
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("-passoffset") && err.contains("restart"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&s.root).unwrap().count(), 0);
}

/// A restart file (or its temporary name, `NAME.tmp`) on a target's
/// file or on an output's is exit 2 before anything runs, naming both:
/// the record used to replace the copy (`-restart file dst.dat -target
/// dst.dat` left a 142-byte record where 8 MiB had been written) or be
/// mixed into a report. Nothing listens, nothing is written, and what
/// was there stays as it was.
#[test]
fn a_restart_file_on_a_target_or_an_output_is_refused_before_anything() {
    let s = Scratch::new("e2e-restart-collide");
    let p = free_ports(2);
    let dest = "-op write -reqsize 64 -mbytes 1 -qd 2 -e2e isdestination -e2e timeout 5";
    let one = format!("-e2e destination 127.0.0.1:{p},2 -target");
    let two = format!(
        "-targets 2 a.dat b.dat -e2e target 0 destination 127.0.0.1:{p},2 -e2e target 1 destination 127.0.0.1:{},2",
        p + 2
    );
    let cases = [
        (
            format!("{one} dst.dat -restart file dst.dat"),
            "dst.dat",
            "-target",
        ),
        (
            format!("{one} dst.dat -restart file dst.dat.partial -e2e noclobber"),
            "dst.dat.partial",
            "-e2e partial",
        ),
        (format!("{one} d.tmp -restart file d"), "d.tmp", "-target"),
        (
            format!("{one} dst.dat -restart file out.log -output out.log"),
            "out.log",
            "-output",
        ),
        (
            format!("{one} dst.dat -restart file out -output out.tmp"),
            "out.tmp",
            "-output",
        ),
        (
            format!("{one} dst.dat -restart file r.json --json r.json"),
            "r.json",
            "--json",
        ),
        (
            format!("{one} dst.dat -restart file ts.target.0000.csv -ts detailed -ts output ts"),
            "ts.target.0000.csv",
            "-timestamps",
        ),
        (
            format!("{two} -restart file same.rst"),
            "same.rst",
            "-restart",
        ),
    ];
    for ((line, file, other), there) in cases.iter().flat_map(|c| [(c, false), (c, true)]) {
        if there {
            std::fs::write(s.path(file), b"was here\n").unwrap();
        }
        let before = common::tree(&s.root);
        let o = start(&s.root, &format!("{dest} {line}")).wait(60);
        assert_eq!(o.code, Some(2), "{line}: {}", o.stderr);
        assert!(
            o.stderr.contains("-restart") && o.stderr.contains(other),
            "{line}: {}",
            o.stderr
        );
        assert!(
            o.stderr.contains("is the same file as"),
            "{line}: {}",
            o.stderr
        );
        assert!(!o.stderr.contains("listening"), "{line}: {}", o.stderr);
        assert_eq!(common::tree(&s.root), before, "{line}: something changed");
        if there {
            assert_eq!(std::fs::read(s.path(file)).unwrap(), b"was here\n");
            std::fs::remove_file(s.path(file)).unwrap();
        }
    }
}

/// `-restart offset N` on a destination that does not hold N bytes: the
/// advice is about the offset given, not about a restart file that is
/// not involved ("remove the restart file to start over" was said with
/// no restart file anywhere).
#[test]
fn a_restart_offset_past_the_destination_says_what_to_change() {
    let s = Scratch::new("e2e-offset-missing");
    let p = free_ports(2);
    let o = start(
        &s.root,
        &format!("-op write -target nofile.dat -reqsize 64 -mbytes 8 -qd 2 -e2e isdestination -e2e destination 127.0.0.1:{p},2 -restart offset 4194304"),
    )
    .wait(60);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("nofile.dat does not exist"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("restart file"), "{}", o.stderr);
    assert!(o.stderr.contains("-restart offset"), "{}", o.stderr);
    assert!(!s.path("nofile.dat").exists());
}

/// Rewrites the first MiB of `p` in place (same size); with `mtime`,
/// then puts its modification time back to that, as `touch -r` or a
/// careless restore would.
fn change_in_place(p: &Path, mtime: Option<std::time::SystemTime>) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    let mut mib = vec![0u8; 1 << 20];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut mib).unwrap();
    f.write_all_at(&mib, 0).unwrap();
    if let Some(t) = mtime {
        f.set_times(std::fs::FileTimes::new().set_modified(t))
            .unwrap();
        assert_eq!(std::fs::metadata(p).unwrap().modified().unwrap(), t);
    }
}

/// A restartable copy of 8 MiB from `source` to `dst.dat` in `dir`,
/// both sides started per run on fresh ports.
struct Resumable<'a> {
    dir: &'a Path,
    source: String,
}

impl Resumable<'_> {
    const COMMON: &'static str = "-reqsize 64 -mbytes 8 -qd 2 -e2e timeout 30";

    fn restart_file(&self) -> std::path::PathBuf {
        self.dir.join("dst.dat.restart")
    }

    /// The destination listening on `p`.
    fn destination(&self, p: u16) -> Bg {
        let common = Self::COMMON;
        let mut d = start(
            self.dir,
            &format!("-op write -target dst.dat {common} -e2e isdestination -e2e destination 127.0.0.1:{p},2 -restart enable frequency 0.02"),
        );
        assert!(d.wait_for("listening on"), "{}", d.stderr_now());
        d
    }

    fn source(&self, p: u16, throttle: &str) -> Bg {
        let (common, src) = (Self::COMMON, &self.source);
        start(
            self.dir,
            &format!("-op read -target {src} {common} {throttle} -e2e issource -e2e destination 127.0.0.1:{p},2 -restart enable"),
        )
    }

    /// A throttled copy killed once 2 MiB are recorded; the copy so far
    /// and its record, as they are left.
    fn interrupted(&self) -> (Vec<u8>, Vec<u8>) {
        let p = free_ports(2);
        let d = self.destination(p);
        let src = self.source(p, "-throttle bw 4");
        wait_record(&self.restart_file(), 2 << 20);
        src.kill();
        assert_eq!(d.wait(60).code, Some(1));
        self.left()
    }

    /// The copy so far and its record.
    fn left(&self) -> (Vec<u8>, Vec<u8>) {
        (
            std::fs::read(self.dir.join("dst.dat")).unwrap(),
            std::fs::read(self.restart_file()).unwrap(),
        )
    }

    /// Both sides run again, unthrottled, to their ends: (source, destination).
    fn again(&self) -> (common::e2e::Ended, common::e2e::Ended) {
        let p = free_ports(2);
        let d = self.destination(p);
        let src = self.source(p, "").wait(60);
        (src, d.wait(60))
    }
}

/// Issue: a resume from a source that changed since the record was made
/// (rewritten in place at the same size, even with its modification
/// time put back) is refused by the destination in the handshake, exit
/// 2 on both sides, naming what changed and what to remove; the partial
/// copy and its record stay as they were. Before, the copy resumed and
/// finished with the old bytes below the offset and the new ones above,
/// and both sides said success. Following the advice then copies anew.
#[test]
fn a_resume_from_a_changed_source_is_refused_before_anything() {
    let s = Scratch::new("e2e-changed-source");
    random_file(&s.path("src.dat"), 8 << 20);
    let copy = Resumable {
        dir: &s.root,
        source: "src.dat".into(),
    };
    let kept = copy.interrupted();
    let mtime = std::fs::metadata(s.path("src.dat"))
        .unwrap()
        .modified()
        .unwrap();
    for keep_mtime in [true, false] {
        change_in_place(&s.path("src.dat"), keep_mtime.then_some(mtime));
        let (src, dd) = copy.again();
        assert_eq!((src.code, dd.code), (Some(2), Some(2)), "{}", src.stderr);
        for err in [&src.stderr, &dd.stderr] {
            assert!(
                err.contains("the source src.dat changed since the restart file dst.dat.restart")
                    && err.contains("remove dst.dat.restart and dst.dat to start over"),
                "{err}"
            );
        }
        let (what, not) = match keep_mtime {
            true => ("status change time", "modification time"),
            false => ("modification time", "size"),
        };
        assert!(src.stderr.contains(what), "{}", src.stderr);
        assert!(!src.stderr.contains(not), "{}", src.stderr);
        assert!(copy.left() == kept, "a refused resume changes nothing");
    }
    std::fs::remove_file(copy.restart_file()).unwrap();
    std::fs::remove_file(s.path("dst.dat")).unwrap();
    let (src, dd) = copy.again();
    assert_eq!((src.code, dd.code), (Some(0), Some(0)), "{}", src.stderr);
    assert!(same(&s.path("src.dat"), &s.path("dst.dat")));
}

/// Issue: a block device's node keeps its times when its contents are
/// written another way (here through a second node of the same device,
/// as through a file system mounted on it or from another host), so a
/// resume from a source device rewritten since the record was made went
/// on and joined its new bytes to the old ones. Its sampled blocks are
/// now compared with the copy's: a device whose first MiB was rewritten
/// is refused, exit 2 on both sides, naming the byte that differs and
/// what to remove, and nothing changes; with the old bytes put back,
/// the same resume finishes, byte-identical.
#[test]
fn a_resume_from_a_rewritten_source_device_is_refused() {
    let dev = match common::loopfs::LoopDev::scratch("e2e-dev-source", 16) {
        Ok(d) => d,
        Err(why) => return common::skip_or_fail("e2e_dev_source", &why),
    };
    let s = Scratch::new("e2e-dev-source-files");
    random_file(&s.path("image"), 16 << 20);
    let image = std::fs::read(s.path("image")).unwrap();
    let (major, minor) = dev
        .majmin()
        .split_once(':')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap();
    let alias = s.path("alias");
    let made = std::process::Command::new("mknod")
        .arg(&alias)
        .args(["b", &major, &minor])
        .status()
        .unwrap();
    assert!(made.success());
    let put = |bytes: &[u8]| {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&alias)
            .unwrap();
        f.write_all_at(bytes, 0).unwrap();
        f.sync_all().unwrap();
    };
    put(&image);
    let node = |dev: &str| {
        let m = std::fs::metadata(dev).unwrap();
        (
            m.modified().unwrap(),
            std::os::unix::fs::MetadataExt::ctime_nsec(&m),
        )
    };
    let copy = Resumable {
        dir: &s.root,
        source: dev.dev.clone(),
    };
    let kept = copy.interrupted();
    let mut rewritten = image[..1 << 20].to_vec();
    rewritten.iter_mut().for_each(|b| *b = !*b);
    let before = node(&dev.dev);
    put(&rewritten);
    assert_eq!(node(&dev.dev), before, "the source's node kept its times");
    let (src, dd) = copy.again();
    assert_eq!((src.code, dd.code), (Some(2), Some(2)), "{}", src.stderr);
    for err in [&src.stderr, &dd.stderr] {
        assert!(
            err.contains(&format!(
                "the source {dev} changed since the restart file dst.dat.restart"
            )) && err.contains("its 4096 bytes at byte 0 differ from the copy's")
                && err.contains("remove dst.dat.restart and dst.dat to start over"),
            "{err}"
        );
    }
    assert!(copy.left() == kept, "a refused resume changes nothing");
    put(&image[..1 << 20]);
    let (src, dd) = copy.again();
    assert_eq!((src.code, dd.code), (Some(0), Some(0)), "{}", src.stderr);
    assert_eq!(std::fs::read(s.path("dst.dat")).unwrap(), image[..8 << 20]);
}
