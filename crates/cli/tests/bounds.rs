//! Huge or contradictory numbers on the legacy command lines, and input
//! files that are no regular file (a FIFO, a device) or too large: each is
//! refused with exit 2 and a message naming the option or file, before
//! anything is allocated or created. Every case runs the real binary in an empty
//! scratch directory and checks that the directory stays empty. The wait
//! for the binary is bounded, so a regression that hangs fails instead of
//! blocking the suite.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{tree, Scratch};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Longest a refused command may take before the test gives up on it (a
/// hang guard, not a timing assertion).
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// Runs `iolab <words>` in `dir`, killing it if it has not ended by
/// [`GIVE_UP_AFTER`].
fn run_bounded(dir: &std::path::Path, words: &[OsString]) -> Output {
    run_bounded_after(dir, "", words)
}

/// As [`run_bounded`], with the shell command `prelude` run first in the
/// same process (`ulimit -v N`, joining a cgroup), then `exec iolab`.
fn run_bounded_after(dir: &std::path::Path, prelude: &str, words: &[OsString]) -> Output {
    let script = format!("{prelude}\nexec \"$0\" \"$@\"");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(words)
        .current_dir(dir)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > GIVE_UP_AFTER {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "iolab {words:?} did not end within {GIVE_UP_AFTER:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `tool line` in a fresh scratch directory and checks the refusal:
/// exit 2, every `needles` in standard error, nothing created.
fn refused(tool: &str, line: &str, needles: &[&str]) {
    static CASE: AtomicUsize = AtomicUsize::new(0);
    let s = Scratch::new(&format!("bounds-{tool}-{}", CASE.fetch_add(1, Relaxed)));
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    let mut words = vec![OsString::from(tool)];
    words.extend(
        line.replace("DIR", &dir.display().to_string())
            .split_whitespace()
            .map(word),
    );
    let out = run_bounded(&dir, &words);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{tool} {line}: {err}");
    for n in needles {
        assert!(err.contains(n), "{tool} {line}: `{n}` missing from: {err}");
    }
    assert!(
        tree(&dir).is_empty(),
        "{tool} {line} created {:?}",
        tree(&dir)
    );
}

/// A command-line word; `<FF>` stands for the byte 0xFF, which no UTF-8
/// text contains.
fn word(w: &str) -> OsString {
    let bytes = w.replace("<FF>", "\u{1}").into_bytes();
    OsString::from_vec(
        bytes
            .into_iter()
            .map(|b| if b == 1 { 0xff } else { b })
            .collect(),
    )
}

fn xdd(line: &str, needles: &[&str]) {
    refused(
        "xdd",
        &format!("-op write -target f -numreqs 1 {line}"),
        needles,
    )
}

fn mdtest(line: &str, needles: &[&str]) {
    refused("mdtest", &format!("{line} -d DIR/t"), needles)
}

#[test]
fn xdd_queue_depth_is_bounded() {
    xdd("-queuedepth 100000000", &["-queuedepth", "4096"]);
    xdd("-queuedepth 100000", &["-queuedepth", "4096"]);
    // The cap holds for all targets together as well.
    refused(
        "xdd",
        "-op write -targets 2 f g -numreqs 1 -qd 3000",
        &["-queuedepth", "6000", "4096"],
    );
}

#[test]
fn xdd_request_size_is_bounded() {
    xdd(
        "-blocksize 9223372036854775808",
        &["-blocksize", "1073741824"],
    );
    xdd("-reqsize 9223372036854775808", &["-reqsize", "1073741824"]);
    // Each factor is fine; the product is not.
    xdd("-reqsize 1m -blocksize 4096", &["-reqsize", "1073741824"]);
}

#[test]
fn xdd_buffers_must_fit_in_memory() {
    xdd(
        "-qd 4000 -reqsize 1024 -blocksize 1m",
        &["-queuedepth", "memory"],
    );
}

#[test]
fn xdd_counts_and_sizes_are_bounded() {
    xdd("-ts size 100000000000000", &["-timestamps", "16777216"]);
    xdd("-seek disthist 4000000000", &["-seek", "1048576"]);
    xdd("-seek seekhist 4000000000", &["-seek", "1048576"]);
    xdd(
        "-memalign 4611686018427387904",
        &["-memalign", "1073741824"],
    );
    xdd("-runtime 1e300", &["-runtime", "100000000"]);
    xdd("-startoffset 9223372036854775807", &["-startoffset"]);
    xdd("-passes 10000000", &["-passes", "1000000"]);
    xdd("-passes 1000000 -numreqs 1t", &["-passes", "overflow"]);
    refused(
        "xdd",
        "-op write -targets 2 f g -numreqs 1 -lockstep 0 1 op 1 mbytes 99999999999999 wait complete",
        &["-lockstep", "1073741824"],
    );
    refused(
        "xdd",
        "-op write -targets 2 f g -numreqs 1 -starttrigger 0 1 percent 200",
        &["-starttrigger", "100"],
    );
    // A rate this slow would park the QThread in one endless sleep.
    xdd("-throttle ops 1e-300", &["-throttle", "3600"]);
    xdd("-throttle bw 1e-300", &["-throttle", "3600"]);
    refused(
        "xdd",
        "-op write -targets 100000000000 a -numreqs 1",
        &["-targets", "4096"],
    );
}

#[test]
fn mdtest_counts_are_bounded() {
    mdtest("-n 1 -w 18446744073709551615", &["-w", "memory"]);
    mdtest("-n 1 --tasks 1000000000", &["--tasks", "4096"]);
    mdtest("-n 1 -i 100000000", &["-i", "1000000"]);
    mdtest("-n 2 --tasks 2 -N 18446744073709551615", &["-N", "tasks"]);
    mdtest("-I 3 -n 18446744073709551615", &["-n", "4294967296"]);
    mdtest("-I 3 -n 3000000000", &["test directories", "1000000"]);
    mdtest("-n 1 -W 100000000000", &["-W", "100000000"]);
}

#[test]
fn mdtest_refuses_what_mdtest_refuses() {
    mdtest("-n 1 -S -c", &["-S", "-c"]);
    mdtest("-n 1 -B -c", &["-B", "-c"]);
    mdtest("-n 1 -B -N 1 --tasks 2", &["-B", "-N"]);
}

#[test]
fn non_utf8_values_are_refused_naming_the_option() {
    xdd("-op <FF>", &["-op", "UTF-8"]);
    refused(
        "xdd",
        "-op write -target f<FF> -numreqs 1",
        &["-target", "UTF-8"],
    );
    mdtest("-n <FF>", &["-n", "UTF-8"]);
    mdtest("-n 1 --tasks=<FF>", &["--tasks", "UTF-8"]);
}

#[test]
fn mdtest_takes_any_bytes_as_a_directory() {
    let s = Scratch::new("bounds-bytes-dir");
    let words: Vec<OsString> = ["mdtest", "-n", "4", "-d"]
        .into_iter()
        .map(OsString::from)
        .chain([word(&s.path("t<FF>").display().to_string())])
        .collect();
    let out = run_bounded(&s.root, &words);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tree(&s.root).is_empty(), "the run removed what it made");
}

/// A memory cgroup limited to some bytes (v2 when its root offers the
/// memory controller, else v1); removed on drop.
struct MemCgroup {
    dir: std::path::PathBuf,
}

impl MemCgroup {
    fn new(tag: &str, bytes: u64) -> Option<MemCgroup> {
        let name = format!("iolab-test-{tag}-{}", std::process::id());
        let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
        let (dir, file) = match v2 {
            true => (
                std::path::Path::new("/sys/fs/cgroup").join(name),
                "memory.max",
            ),
            false => (
                std::path::Path::new("/sys/fs/cgroup/memory").join(name),
                "memory.limit_in_bytes",
            ),
        };
        std::fs::create_dir(&dir).ok()?;
        let cg = MemCgroup { dir };
        std::fs::write(cg.dir.join(file), bytes.to_string()).ok()?;
        Some(cg)
    }

    /// The shell line that moves the shell (then iolab) into it.
    fn join(&self) -> String {
        format!("echo $$ > {}/cgroup.procs || exit 99", self.dir.display())
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Refused under a limit the shell `prelude` sets: exit 2, `needles` in
/// standard error, nothing created.
fn refused_under(prelude: &str, line: &str, needles: &[&str]) {
    static CASE: AtomicUsize = AtomicUsize::new(0);
    let s = Scratch::new(&format!("bounds-limit-{}", CASE.fetch_add(1, Relaxed)));
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    let words: Vec<OsString> = line
        .replace("DIR", &dir.display().to_string())
        .split_whitespace()
        .map(word)
        .collect();
    let out = run_bounded_after(&dir, prelude, &words);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{prelude}: {line}: {err}");
    for n in needles {
        assert!(err.contains(n), "{line}: `{n}` missing from: {err}");
    }
    assert!(tree(&dir).is_empty(), "{line} created {:?}", tree(&dir));
}

#[test]
fn buffers_are_checked_against_ulimit_v_not_the_machine() {
    // 2 GB of address space: mdtest's 3 buffers of 1 GiB do not fit, nor
    // do xdd's 1 GiB buffers (which this machine's memory would hold).
    let ulimit = "ulimit -v 2000000";
    refused_under(
        ulimit,
        "mdtest -n 2 -w 1073741824 -d DIR/t",
        &["-w 1073741824", "ulimit -v"],
    );
    refused_under(
        ulimit,
        "xdd -op write -target DIR/f -numreqs 1 -qd 2 -reqsize 1 -blocksize 1g",
        &["-queuedepth", "ulimit -v"],
    );
}

#[test]
fn buffers_are_checked_against_the_cgroup_memory_limit() {
    let Some(cg) = MemCgroup::new("mem", 1 << 30) else {
        common::skip_or_fail("cgroup-memory", "cannot make a memory cgroup");
        return;
    };
    // The issue's case: 4 GiB buffers under a 1 GiB cgroup.
    refused_under(
        &cg.join(),
        "mdtest -n 2 -w 4294967296 -d DIR/t",
        &["-w 4294967296", "cgroup"],
    );
}

#[test]
fn values_that_are_no_address_or_too_long_an_interval_are_usage_errors() {
    refused("lst", "agent --listen abc", &["--listen", "abc"]);
    refused(
        "stats",
        r#"start-node --dir DIR/sn --spec {"intervals":{"vmstat":18446744073709551615},"statfs_paths":[]}"#,
        &["VMSTAT_INTERVAL=18446744073709551615", "86400"],
    );
    refused("stats", "start local,99999999999999999999", &["local"]);
}

/// Runs `line` (IN standing for a file `make` makes in the scratch
/// directory, DIR for an empty directory it runs in) and checks the
/// refusal: exit 2, the file's path and every `needles` in standard
/// error, nothing created in DIR.
fn input_refused(line: &str, make: &dyn Fn(&std::path::Path), needles: &[&str]) {
    static CASE: AtomicUsize = AtomicUsize::new(0);
    let s = Scratch::new(&format!("bounds-input-{}", CASE.fetch_add(1, Relaxed)));
    let dir = s.path("d");
    std::fs::create_dir(&dir).unwrap();
    let input = s.path("in");
    make(&input);
    let shown = match line.contains(" IN") {
        true => input.display().to_string(),
        false => String::new(),
    };
    let words: Vec<OsString> = line
        .replace("IN", &input.display().to_string())
        .replace("DIR", &dir.display().to_string())
        .split_whitespace()
        .map(OsString::from)
        .collect();
    let out = run_bounded(&dir, &words);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{line}: {err}");
    for n in needles.iter().chain([&shown.as_str()]) {
        assert!(err.contains(n), "{line}: `{n}` missing from: {err}");
    }
    assert!(tree(&dir).is_empty(), "{line} created {:?}", tree(&dir));
}

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A FIFO no program writes, named as any input file: the old code
/// blocked in open(2) waiting for a writer (deaf to the first Ctrl-C);
/// each is now refused at once, naming the file.
#[test]
fn a_fifo_given_as_an_input_file_is_refused_not_waited_on() {
    for line in [
        "xdd -setup IN",
        "xdd -op read -target null -reqsize 1 -numreqs 1 -seek load IN",
        "xdd -op write -target null -reqsize 1 -numreqs 1 -datapattern file IN",
        "xdd -op write -target null -reqsize 1 -numreqs 1 -datapattern wholefile IN",
        "xdd -op write -target null -reqsize 1 -numreqs 1 -stats IN",
        "ior -f IN",
        "io500 IN",
        "sweep IN",
        "qualify IN --out DIR/qo",
        "stats run IN -- true",
        "lst run --from @IN --to @IN ping",
        "survey plot IN --out DIR/plot",
        "report --live IN -o DIR/report",
        "results import --store DIR/s.sqlite IN",
        "xddcp -F IN localhost:/x",
    ] {
        input_refused(line, &mkfifo, &["a FIFO, not a regular file"]);
    }
}

/// `ior -f` read its script with no bound: `/dev/zero` until memory ran
/// out. A device is refused, and so is a script of more than 4 MiB.
#[test]
fn an_ior_script_is_a_regular_file_of_at_most_4_mib() {
    input_refused(
        "ior -f /dev/zero",
        &|_| {},
        &["-f /dev/zero", "a character device"],
    );
    let big = |p: &std::path::Path| std::fs::write(p, vec![b'#'; (4 << 20) + 1]).unwrap();
    input_refused("ior -f IN", &big, &["larger than 4 MiB"]);
}
