//! `iolab survey` against real devices: loop devices over sparse files in
//! a tmpfs, ext4/xfs made on them when a file system is needed, the real
//! binary, and a blkio cgroup to make one target slow. Every fixture
//! detaches, unmounts and removes on drop, also when the test fails.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::survey;

use common::loopfs::{self, LoopDev, LoopFs};
use common::{skip_or_fail, stderr, stdout, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A blank loop device of `mb` MiB over a sparse file in `s`, or None
/// where the test is skipped.
fn blank(s: &Scratch, name: &str, mb: u64) -> Option<LoopDev> {
    LoopDev::blank(&s.path(&format!("{name}.img")), mb)
        .map_err(|why| skip_or_fail(name, &why))
        .ok()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The data lines (all but the header) of a summary.
fn data_lines(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn disk_small(dev: &str, rslt: &Path) -> Vec<String> {
    [
        dev,
        "--size",
        "8",
        "--rszlo",
        "256",
        "--rszhi",
        "512",
        "--crghi",
        "2",
        "--thrhi",
        "2",
        "--rslt",
        rslt.to_str().unwrap(),
        // The kit's current layout, with action names (the guide's is the
        // default: user_forms.rs checks it).
        "--layout",
        "kit",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn disk_survey_writes_the_kits_lines_on_a_blank_device() {
    let s = Scratch::new("survey-disk");
    let Some(l) = blank(&s, "disk", 16) else {
        return;
    };
    let rslt = s.path("r");
    let args = disk_small(&l.dev, &rslt);
    let mut words: Vec<&str> = vec!["disk"];
    words.extend(args.iter().map(String::as_str));
    let json = s.path("r.json");
    let csv = s.path("r.csv");
    words.extend([
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let o = survey(&words, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out
        .lines()
        .next()
        .unwrap()
        .contains(&format!("sgpdd-survey on {} from", l.dev)));
    assert_eq!(
        read(&rslt.with_extension("summary")),
        out,
        ".summary is stdout"
    );
    let lines = data_lines(&out);
    // rsz 256 and 512, (crg 1, thr 1), (1, 2), (2, 2): thr < crg skipped.
    assert_eq!(lines.len(), 6, "{out}");
    for t in &lines {
        assert_eq!(
            (t[0].as_str(), t[1].as_str()),
            ("total_size", "8192K"),
            "{t:?}"
        );
        assert_eq!(
            (t[2].as_str(), t[4].as_str(), t[6].as_str()),
            ("rsz", "crg", "thr")
        );
        assert_eq!(
            (t[8].as_str(), t[10].as_str(), t[17].as_str()),
            ("write", "MB/s", "read")
        );
        let bw: f64 = t[9].parse().unwrap();
        let (n, slow, prod): (f64, f64, f64) = (
            t[11].parse().unwrap(),
            t[13].parse().unwrap(),
            t[15].parse().unwrap(),
        );
        assert!(bw > 0.0 && slow > 0.0);
        assert!((n * slow - prod).abs() < 0.02, "{t:?}");
        assert_eq!(t[12], "x");
    }
    assert_eq!(lines[2][5], "2", "third point has two regions");
    let detail = read(&rslt.with_extension("detail"));
    assert_eq!(detail.matches("==============> total_size").count(), 6);
    assert!(detail.contains("region 1 offset"), "{detail}");
    let doc: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    assert_eq!(doc["schema"], "iolab.survey.disk/1");
    assert_eq!(doc["outcome"]["status"], "completed");
    assert_eq!(doc["payload"]["points"].as_array().unwrap().len(), 6);
    assert_eq!(read(&csv).lines().count(), 1 + 12);
}

#[test]
fn disk_survey_takes_the_kits_environment_variables() {
    let s = Scratch::new("survey-disk-env");
    let Some(l) = blank(&s, "disk-env", 16) else {
        return;
    };
    let rslt = s.path("e");
    let o = survey(
        &["disk", "--layout", "kit"],
        &[
            ("scsidevs", &l.dev),
            ("size", "4"),
            ("rszlo", "512"),
            ("rszhi", "512"),
            ("crghi", "1"),
            ("thrhi", "1"),
            ("actions", "read"),
            ("rslt", rslt.to_str().unwrap()),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = data_lines(&stdout(&o));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0][1], "4096K");
    assert_eq!(lines[0][3], "512");
    assert_eq!(lines[0][8], "read");
    assert_eq!(lines[0].len(), 17, "read only: {:?}", lines[0]);
}

#[test]
fn disk_survey_refuses_a_formatted_device_without_force() {
    let s = Scratch::new("survey-disk-fs");
    let Some(l) = blank(&s, "disk-fs", 32) else {
        return;
    };
    if let Err(why) = loopfs::mkfs(&l, "ext4", &[]) {
        return skip_or_fail("disk-fs", &why);
    }
    let rslt = s.path("f");
    let args = disk_small(&l.dev, &rslt);
    let mut words: Vec<&str> = vec!["disk"];
    words.extend(args.iter().map(String::as_str));
    let o = survey(&words, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--force") && stderr(&o).contains("ext4"),
        "{}",
        stderr(&o)
    );
    assert!(!rslt.with_extension("summary").exists(), "nothing created");
    let blkid = Command::new("blkid").arg(&l.dev).output().unwrap();
    assert!(
        String::from_utf8_lossy(&blkid.stdout).contains("ext4"),
        "file system untouched"
    );
    words.push("--force");
    let o = survey(&words, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(data_lines(&stdout(&o)).len(), 6);
}

#[test]
fn bad_disk_parameters_exit_2_before_anything_is_created() {
    let s = Scratch::new("survey-disk-bad");
    let Some(l) = blank(&s, "disk-bad", 16) else {
        return;
    };
    let rslt = s.path("b");
    let r = rslt.to_str().unwrap();
    for (extra, named) in [
        (vec!["--thrlo", "4", "--thrhi", "2"], "thrlo"),
        (vec!["--actions", "write scribble"], "actions"),
        (vec!["--size", "64", "--crghi", "1"], "size"),
        (vec!["--rszlo", "0"], "rszlo"),
        (
            vec![
                "--size",
                "8",
                "--crghi",
                "1",
                "--json",
                "/nonexistent-dir/x.json",
            ],
            "json",
        ),
    ] {
        let mut w = vec!["disk", l.dev.as_str(), "--rslt", r];
        w.extend(extra);
        let o = survey(&w, &[]);
        assert_eq!(o.status.code(), Some(2), "{w:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(named), "{w:?}: {}", stderr(&o));
        assert!(
            !rslt.with_extension("summary").exists(),
            "{w:?} created a file"
        );
    }
    let o = survey(&["disk", "--no-such-flag"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// A blkio (cgroup v1) child group throttling one device; removed on drop.
struct Throttle {
    dir: PathBuf,
}

impl Throttle {
    /// Limits reads and writes of `majmin` to `bps` bytes/s for the
    /// processes that join it.
    fn new(name: &str, majmin: &str, bps: u64) -> Option<Self> {
        let root = Path::new("/sys/fs/cgroup/blkio");
        let dir = root.join(format!("iolab-{name}-{}", std::process::id()));
        if !root.join("blkio.throttle.write_bps_device").exists()
            || std::fs::create_dir(&dir).is_err()
        {
            skip_or_fail(name, "no cgroup v1 blkio controller to throttle with");
            return None;
        }
        let t = Throttle { dir };
        for f in [
            "blkio.throttle.write_bps_device",
            "blkio.throttle.read_bps_device",
        ] {
            if let Err(e) = std::fs::write(t.dir.join(f), format!("{majmin} {bps}")) {
                skip_or_fail(name, &format!("cannot write {f}: {e}"));
                return None;
            }
        }
        Some(t)
    }

    /// Runs `iolab survey words...` inside the group.
    fn survey(&self, words: &[&str]) -> Output {
        let procs = self.dir.join("cgroup.procs");
        let script = format!("echo $$ > {} && exec \"$0\" survey \"$@\"", procs.display());
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_iolab"))
            .args(words)
            .env("CI", "1")
            .output()
            .unwrap()
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        // The survey has exited; the group is empty and can go.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// `n` mounted targets with file system `fs` in `s`.
fn targets(s: &Scratch, tag: &str, fs: &str, mb: u64, n: usize) -> Option<Vec<LoopFs>> {
    (0..n)
        .map(|i| {
            let l = blank(s, &format!("{tag}{i}"), mb)?;
            LoopFs::make(l, fs, &[], &s.path(&format!("{tag}{i}-mnt")), &[])
                .map_err(|why| skip_or_fail(tag, &why))
                .ok()
        })
        .collect()
}

fn mounts(ls: &[LoopFs]) -> Vec<String> {
    ls.iter().map(|l| l.at.display().to_string()).collect()
}

/// Every entry under each mount except ext4's lost+found.
fn leftovers(ls: &[LoopFs]) -> Vec<String> {
    ls.iter()
        .flat_map(|l| common::tree(&l.at))
        .filter(|p| !p.starts_with("lost+found"))
        .collect()
}

#[test]
fn obdfilter_survey_on_ext4_and_xfs_targets() {
    let s = Scratch::new("survey-obd");
    let Some(mut ts) = targets(&s, "e", "ext4", 64, 1) else {
        return;
    };
    let Some(x) = targets(&s, "x", "xfs", 320, 1) else {
        return;
    };
    ts.extend(x);
    let rslt = s.path("o");
    let json = s.path("o.json");
    let m = mounts(&ts);
    let mut w = vec![
        "obdfilter",
        m[0].as_str(),
        m[1].as_str(),
        "--rslt",
        rslt.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    w.extend(["--rszlo", "256", "--rszhi", "256"]);
    let o = survey(&w, &[("size", "8"), ("nobjhi", "2"), ("thrhi", "2")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out
        .lines()
        .next()
        .unwrap()
        .contains("Obdfilter-survey for case=disk from"));
    assert_eq!(read(&rslt.with_extension("summary")), out);
    let lines = data_lines(&out);
    assert_eq!(lines.len(), 3, "{out}");
    let want = [("2", "2"), ("2", "4"), ("4", "4")];
    for (t, (obj, thr)) in lines.iter().zip(want) {
        assert_eq!(&t[..4], &["ost", "2", "sz", "16384K"]);
        assert_eq!((t[7].as_str(), t[9].as_str()), (obj, thr), "{t:?}");
        let joined = t.join(" ");
        for test in ["write", "rewrite", "read"] {
            assert!(t.contains(&test.to_string()), "{joined}");
        }
        assert!(
            !joined.contains("ERROR") && !joined.contains("SHORT"),
            "{joined}"
        );
    }
    assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
    let doc: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    assert_eq!(doc["payload"]["points"].as_array().unwrap().len(), 3);
    assert!(read(&rslt.with_extension("detail")).contains("=============> read global"));
}

/// The bracket minimum of `test` in the first data line.
fn bracket_min(out: &str, test: &str) -> f64 {
    let line = out.lines().nth(1).unwrap();
    let after = &line[line.find(&format!(" {test} ")).unwrap() + test.len() + 2..];
    let open = after.find('[').unwrap();
    let comma = after.find(',').unwrap();
    after[open + 1..comma].trim().parse().unwrap()
}

#[test]
fn a_throttled_target_lowers_the_obdfilter_bracket_minimum() {
    let s = Scratch::new("survey-obd-slow");
    let Some(ts) = targets(&s, "s", "ext4", 64, 2) else {
        return;
    };
    let m = mounts(&ts);
    let rslt = s.path("fast");
    let words = |r: &Path| -> Vec<String> {
        [
            &m[0],
            &m[1],
            "--size",
            "8",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--tests",
            "write read",
            "--rslt",
            r.to_str().unwrap(),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let fast_args = words(&rslt);
    let mut w = vec!["obdfilter"];
    w.extend(fast_args.iter().map(String::as_str));
    let fast = survey(&w, &[]);
    assert_eq!(fast.status.code(), Some(0), "{}", stderr(&fast));
    let Some(cg) = Throttle::new("obd", &ts[0].dev.majmin(), 10 << 20) else {
        return;
    };
    let slow_args = words(&s.path("slow"));
    let mut w = vec!["obdfilter"];
    w.extend(slow_args.iter().map(String::as_str));
    let slow = cg.survey(&w);
    assert_eq!(slow.status.code(), Some(0), "{}", stderr(&slow));
    for test in ["write", "read"] {
        let (f, sl) = (
            bracket_min(&stdout(&fast), test),
            bracket_min(&stdout(&slow), test),
        );
        assert!(
            sl < 20.0 && sl < f / 2.0,
            "{test}: throttled min {sl} vs unthrottled {f}\n{}",
            stdout(&slow)
        );
        println!("{test}: throttled min {sl} unthrottled {f}");
    }
    assert!(leftovers(&ts).is_empty());
}

#[test]
fn obdfilter_out_of_space_gives_error_and_exit_1_and_leaves_nothing() {
    let s = Scratch::new("survey-obd-full");
    let Some(ts) = targets(&s, "f", "ext4", 8, 1) else {
        return;
    };
    let m = mounts(&ts);
    let rslt = s.path("full");
    let o = survey(
        &[
            "obdfilter",
            &m[0],
            "--size",
            "32",
            "--rszlo",
            "1024",
            "--rszhi",
            "1024",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.lines().nth(1).unwrap().contains("ERROR"), "{out}");
    assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
}

#[test]
fn bad_obdfilter_parameters_exit_2_before_anything_is_created() {
    let s = Scratch::new("survey-obd-bad");
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let rslt = s.path("b");
    let r = rslt.to_str().unwrap();
    let d = dir.to_str().unwrap();
    for (extra, named) in [
        (vec!["--thrlo", "4", "--thrhi", "2"], "thrlo"),
        (vec!["--tests", "read write"], "tests_str"),
        (vec!["--tests", "write scribble"], "tests_str"),
        (vec!["--nobjlo", "0"], "nobjlo"),
    ] {
        let mut w = vec!["obdfilter", d, "--size", "16", "--rslt", r];
        w.extend(extra);
        let o = survey(&w, &[]);
        assert_eq!(o.status.code(), Some(2), "{w:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(named), "{w:?}: {}", stderr(&o));
        assert!(!rslt.with_extension("summary").exists());
        assert!(common::tree(&dir).is_empty(), "{w:?} created something");
    }
}

#[test]
fn mds_survey_with_one_and_several_directories() {
    let s = Scratch::new("survey-mds");
    let Some(ts) = targets(&s, "m", "ext4", 64, 1) else {
        return;
    };
    let m = mounts(&ts);
    for (dirs, expect_thr) in [("1", vec!["1", "2", "4"]), ("4", vec!["4"])] {
        let rslt = s.path(&format!("mds{dirs}"));
        let csv = s.path(&format!("mds{dirs}.csv"));
        let o = survey(
            &[
                "mds",
                &m[0],
                "--rslt",
                rslt.to_str().unwrap(),
                "--csv",
                csv.to_str().unwrap(),
            ],
            &[
                ("thrlo", "1"),
                ("thrhi", "4"),
                ("dir_count", dirs),
                ("file_count", "400"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.lines().next().unwrap().contains("mds-survey from"));
        assert_eq!(read(&rslt.with_extension("summary")), out);
        let lines = data_lines(&out);
        let thr: Vec<&str> = lines.iter().map(|t| t[7].as_str()).collect();
        assert_eq!(thr, expect_thr, "{out}");
        for t in &lines {
            assert_eq!(&t[..6], &["mdt", "1", "file", "400", "dir", dirs]);
            let tests: Vec<&str> = t.iter().skip(8).step_by(3).map(String::as_str).collect();
            assert_eq!(
                tests,
                ["create", "lookup", "md_getattr", "setxattr", "destroy"],
                "{t:?}"
            );
            assert!(!t.join(" ").contains("ERROR"), "{t:?}");
        }
        assert_eq!(read(&csv).lines().count(), 1 + 5 * lines.len());
        assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
    }
}

#[test]
fn mds_survey_out_of_inodes_gives_error_and_exit_1_and_leaves_nothing() {
    let s = Scratch::new("survey-mds-full");
    let Some(l) = blank(&s, "mfull", 16) else {
        return;
    };
    // A file system with very few inodes: creates run out long before 4000.
    let at = s.path("mfull-mnt");
    let fs = match LoopFs::make(l, "ext4", &["-N", "64"], &at, &[]) {
        Ok(fs) => fs,
        Err(why) => return skip_or_fail("mds-full", &why),
    };
    let rslt = s.path("mfull");
    let o = survey(
        &[
            "mds",
            at.to_str().unwrap(),
            "--thrlo",
            "2",
            "--thrhi",
            "2",
            "--dir-count",
            "1",
            "--file-count",
            "4000",
            "--tests",
            "create md_getattr destroy",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let line = stdout(&o).lines().nth(1).unwrap().to_string();
    assert!(line.contains("create             ERROR"), "{line}");
    assert!(
        leftovers(std::slice::from_ref(&fs)).is_empty(),
        "{:?}",
        leftovers(std::slice::from_ref(&fs))
    );
}

#[test]
fn bad_mds_parameters_exit_2_before_anything_is_created() {
    let s = Scratch::new("survey-mds-bad");
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let rslt = s.path("b");
    let (r, d) = (rslt.to_str().unwrap(), dir.to_str().unwrap());
    for (extra, named) in [
        (vec!["--thrlo", "8", "--thrhi", "4"], "thrlo"),
        (vec!["--tests", "lookup destroy"], "tests_str"),
        (vec!["--tests", "create lookup"], "tests_str"),
        (vec!["--tests", "create chmod destroy"], "tests_str"),
        (vec!["--dir-count", "64"], "dir_count"),
        (vec!["--file-count", "2"], "file_count"),
        // A test twice read 0.00 with no error; file numbers past u64
        // panicked after files were made.
        (vec!["--tests", "create create destroy"], "given twice"),
        (
            vec!["--tests", "create destroy lookup destroy"],
            "given twice",
        ),
        (
            vec![
                "--file-count",
                "100",
                "--start-number",
                "18446744073709551600",
            ],
            "start_number",
        ),
    ] {
        let mut w = vec!["mds", d, "--rslt", r];
        w.extend(extra);
        let o = survey(&w, &[]);
        assert_eq!(o.status.code(), Some(2), "{w:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(named), "{w:?}: {}", stderr(&o));
        assert!(!rslt.with_extension("summary").exists());
        assert!(common::tree(&dir).is_empty(), "{w:?} created something");
    }
}

#[test]
fn ost_survey_finds_and_flags_the_throttled_target() {
    let s = Scratch::new("survey-ost");
    let Some(ts) = targets(&s, "o", "ext4", 64, 3) else {
        return;
    };
    let Some(cg) = Throttle::new("ost", &ts[1].dev.majmin(), 10 << 20) else {
        return;
    };
    let m = mounts(&ts);
    let rslt = s.path("ost");
    let csv = s.path("ost.csv");
    let o = cg.survey(&[
        "ost",
        "-s",
        "8",
        &m[0],
        &m[1],
        &m[2],
        "--rslt",
        rslt.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(read(&rslt.with_extension("summary")), out);
    assert!(out.contains("Number of Active OST devices : 3\n"), "{out}");
    assert!(out.contains("Worst  Read OST indx: 1 speed: "), "{out}");
    assert!(out.contains("Worst  Write OST indx: 1 speed: "), "{out}");
    assert!(
        out.contains("Read Average: ") && out.contains(" +/- "),
        "{out}"
    );
    assert!(out.contains("Ost#  Read(MB/s)  Write(MB/s)  Read-time  Write-time\n"));
    let flagged: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Outlier OST indx:"))
        .collect();
    // The throttled target is flagged for both operations. The fast ones
    // are not asserted unflagged: on a busy machine two unthrottled loop
    // devices can honestly differ by more than the 20% rule.
    for op in ["read", "write"] {
        let prefix = format!("Outlier OST indx: 1 ({}) {op} speed: ", m[1]);
        assert!(
            flagged.iter().any(|l| l.starts_with(&prefix)),
            "{op}: {out}"
        );
    }
    let row1 = out.lines().find(|l| l.starts_with("1     ")).unwrap();
    let write_s: f64 = row1.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert!(
        write_s > 0.5,
        "8 MB at 10 MB/s takes most of a second: {row1}"
    );
    assert!(
        read(&csv).lines().nth(2).unwrap().contains(",read+write,"),
        "{}",
        read(&csv)
    );
    assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
}

#[test]
fn bad_ost_parameters_exit_2_before_anything_is_created() {
    let s = Scratch::new("survey-ost-bad");
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let rslt = s.path("b");
    let (r, d) = (rslt.to_str().unwrap(), dir.to_str().unwrap());
    let file = s.path("plain");
    std::fs::write(&file, b"x").unwrap();
    for (w, named) in [
        (vec!["ost", d, "-s", "0", "--rslt", r], "size"),
        (vec!["ost", "--rslt", r], "targets"),
        (vec!["ost", file.to_str().unwrap(), "--rslt", r], "targets"),
    ] {
        let o = survey(&w, &[]);
        assert_eq!(o.status.code(), Some(2), "{w:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(named), "{w:?}: {}", stderr(&o));
        assert!(!rslt.with_extension("summary").exists());
        assert!(common::tree(&dir).is_empty());
    }
}

/// A stand-in for Lustre's `lfs` (no Lustre here): `osts` lists OSTs 0
/// and 2 active and 1 inactive, `mdts` MDTs 0 and 1 active and 2
/// inactive; `setstripe` logs its arguments and on a file creates it,
/// refusing one that exists as lfs does (on a directory it only sets the
/// default layout, so the directory must exist); `mkdir` logs and makes
/// the directory (refusing one that exists). What is under test is the
/// surveys' use of it: which targets they ask for, that every file or
/// directory is placed before it is used, and that they remove them.
fn fake_lfs(s: &Scratch) -> (PathBuf, PathBuf) {
    let (lfs, log) = (s.path("lfs"), s.path("lfs.log"));
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in\n\
         osts) printf 'OBDS:\\n0: t-OST0000_UUID ACTIVE\\n1: t-OST0001_UUID INACTIVE\\n2: t-OST0002_UUID ACTIVE\\n' ;;\n\
         mdts) printf 'MDTS:\\n0: t-MDT0000_UUID ACTIVE\\n1: t-MDT0001_UUID ACTIVE\\n2: t-MDT0002_UUID INACTIVE\\n' ;;\n\
         setstripe) echo \"$*\" >> {log}; for f; do :; done; [ -d \"$f\" ] && exit 0; [ -e \"$f\" ] && exit 17; : > \"$f\" ;;\n\
         mkdir) echo \"$*\" >> {log}; for f; do :; done; mkdir \"$f\" || exit 17 ;;\n\
         *) exit 22 ;;\nesac\n",
        log = log.display()
    );
    std::fs::write(&lfs, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&lfs, std::fs::Permissions::from_mode(0o755)).unwrap();
    (lfs, log)
}

#[test]
fn ost_survey_on_lustre_places_one_file_on_each_active_ost() {
    let s = Scratch::new("survey-ost-lustre");
    let (lfs, log) = fake_lfs(&s);
    let mnt = s.path("lustre");
    std::fs::create_dir_all(&mnt).unwrap();
    let (rslt, json) = (s.path("l"), s.path("l.json"));
    let m = mnt.to_str().unwrap();
    let words = [
        "ost",
        "--lustre",
        "-s",
        "2",
        m,
        "--rslt",
        rslt.to_str().unwrap(),
    ];
    let mut with_json = words.to_vec();
    with_json.extend(["--json", json.to_str().unwrap()]);
    let o = survey(&with_json, &[("LFS", lfs.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Number of Active OST devices : 2\n"), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("0 ") || l.starts_with("2 ") || l.starts_with("1 "))
        .collect();
    assert_eq!(rows.len(), 2, "OSTs 0 and 2, not the inactive 1: {out}");
    assert!(
        rows[0].starts_with("0 ") && rows[1].starts_with("2 "),
        "{out}"
    );
    let calls = read(&log);
    let pid_files: Vec<&str> = calls.lines().collect();
    assert_eq!(pid_files.len(), 2, "{calls}");
    for (line, ost) in pid_files.iter().zip(["0", "2"]) {
        assert!(
            line.starts_with(&format!("setstripe -c 1 -i {ost} {m}/iolab-ost-survey.")),
            "{line}"
        );
        assert!(line.ends_with(&format!(".ost000{ost}")), "{line}");
    }
    let doc: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    assert_eq!(doc["config"]["ost_indices"], serde_json::json!([0, 2]));
    assert!(doc["notes"][0].as_str().unwrap().contains("[1]"), "{doc}");
    assert!(common::tree(&mnt).is_empty(), "{:?}", common::tree(&mnt));
    // Without lfs, or with more than one target, it is bad usage and
    // nothing is placed or written.
    std::fs::remove_file(&log).unwrap();
    let two = ["ost", "--lustre", m, m, "--rslt", rslt.to_str().unwrap()];
    for (w, lfs_path) in [
        (&words[..], "/nonexistent/lfs"),
        (&two[..], lfs.to_str().unwrap()),
    ] {
        let o = survey(w, &[("LFS", lfs_path)]);
        assert_eq!(o.status.code(), Some(2), "{w:?}: {}", stdout(&o));
        assert!(stderr(&o).contains("lustre"), "{}", stderr(&o));
        assert!(!log.exists() && common::tree(&mnt).is_empty());
    }
}

#[test]
fn mds_survey_on_lustre_makes_its_directories_on_the_named_mdt_and_stripes_them() {
    let s = Scratch::new("survey-mds-lustre");
    let (lfs, log) = fake_lfs(&s);
    let mnt = s.path("lustre");
    std::fs::create_dir_all(&mnt).unwrap();
    let (rslt, json) = (s.path("m"), s.path("m.json"));
    let m = mnt.to_str().unwrap();
    // The kit's own form: targets=lustre-MDT0000 ... stripe_count=2 sh mds-survey
    let o = survey(
        &[
            "mds",
            "--lustre-mount",
            m,
            "--rslt",
            rslt.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[
            ("LFS", lfs.to_str().unwrap()),
            ("targets", "t-MDT0001"),
            ("thrlo", "1"),
            ("thrhi", "2"),
            ("dir_count", "2"),
            ("file_count", "40"),
            ("stripe_count", "2"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = data_lines(&stdout(&o));
    assert_eq!(lines.len(), 1, "dir_count 2 skips 1 thread: {lines:?}");
    assert_eq!(
        &lines[0][..8],
        &["mdt", "1", "file", "40", "dir", "2", "thr", "2"]
    );
    let calls = read(&log);
    let calls: Vec<&str> = calls.lines().collect();
    // root on MDT 1, then each tests dir on MDT 1 and striped over 2 OSTs
    // before any file is made in it.
    assert_eq!(calls.len(), 5, "{calls:?}");
    let root_call = format!("mkdir -i 1 {m}/iolab-mds.");
    assert!(
        calls[0].starts_with(&root_call) && calls[0].ends_with(".mdt0001"),
        "{calls:?}"
    );
    let root = calls[0].trim_start_matches("mkdir -i 1 ");
    for (k, sub) in ["tests", "tests1"].iter().enumerate() {
        assert_eq!(calls[1 + 2 * k], format!("mkdir -i 1 {root}/{sub}"));
        assert_eq!(calls[2 + 2 * k], format!("setstripe -c 2 {root}/{sub}"));
    }
    let doc: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    assert_eq!(
        doc["config"]["lustre"]["mdt_indices"],
        serde_json::json!([1])
    );
    let create = &doc["payload"]["points"][0]["tests"][0];
    assert_eq!(create["targets"][0]["target"], "t-MDT0001", "{create}");
    assert_eq!(create["targets"][0]["rates"]["amount"], 40, "{create}");
    assert!(common::tree(&mnt).is_empty(), "{:?}", common::tree(&mnt));
}

#[test]
fn mds_survey_on_lustre_without_targets_surveys_every_active_mdt() {
    let s = Scratch::new("survey-mds-lustre-all");
    let (lfs, log) = fake_lfs(&s);
    let mnt = s.path("lustre");
    std::fs::create_dir_all(&mnt).unwrap();
    let (rslt, json) = (s.path("a"), s.path("a.json"));
    let m = mnt.to_str().unwrap();
    let o = survey(
        &[
            "mds",
            "--lustre-mount",
            m,
            "--thrlo",
            "2",
            "--thrhi",
            "2",
            "--dir-count",
            "1",
            "--file-count",
            "30",
            "--stripe-count",
            "4",
            "--tests",
            "create md_getattr destroy",
            "--rslt",
            rslt.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[("LFS", lfs.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = data_lines(&stdout(&o));
    assert_eq!(
        &lines[0][..2],
        &["mdt", "2"],
        "MDTs 0 and 1, not the inactive 2"
    );
    let calls = read(&log);
    let mkdirs: Vec<&str> = calls.lines().filter(|l| l.starts_with("mkdir")).collect();
    assert_eq!(mkdirs.len(), 4, "{calls}");
    for (k, mdt) in [0u32, 1].iter().enumerate() {
        let root = mkdirs[2 * k];
        assert!(
            root.starts_with(&format!("mkdir -i {mdt} {m}/iolab-mds.")),
            "{calls}"
        );
        assert!(root.ends_with(&format!(".mdt000{mdt}")), "{calls}");
        assert_eq!(mkdirs[2 * k + 1], format!("{root}/tests"), "{calls}");
    }
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("setstripe -c 4 "))
            .count(),
        2
    );
    let doc: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    let lustre = &doc["config"]["lustre"];
    assert_eq!(lustre["mdt_indices"], serde_json::json!([0, 1]), "{doc}");
    assert_eq!(
        lustre["mdt_names"],
        serde_json::json!(["t-MDT0000", "t-MDT0001"])
    );
    assert_eq!(doc["config"]["stripe_count"], 4);
    let point = &doc["payload"]["points"][0]["tests"][0];
    assert_eq!(point["targets"][1]["target"], "t-MDT0001", "{point}");
    // Every file was made: 30 per MDT.
    assert_eq!(point["targets"][0]["rates"]["amount"], 30, "{point}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("left out: [2]"), "{notes}");
    assert!(notes.contains("2 active OSTs"), "{notes}");
    assert!(common::tree(&mnt).is_empty(), "{:?}", common::tree(&mnt));
}

#[test]
fn mds_survey_lustre_forms_it_cannot_use_exit_2_before_anything() {
    let s = Scratch::new("survey-mds-lustre-bad");
    let (lfs, log) = fake_lfs(&s);
    let mnt = s.path("lustre");
    std::fs::create_dir_all(&mnt).unwrap();
    let rslt = s.path("b");
    let (m, r, l) = (
        mnt.to_str().unwrap(),
        rslt.to_str().unwrap(),
        lfs.to_str().unwrap(),
    );
    let with_mount = ["mds", "--lustre-mount", m, "--rslt", r];
    let no_mount = ["mds", "--rslt", r];
    for (words, targets, lfs_path, named) in [
        (&with_mount[..], "t-MDT0005", l, "t-MDT0005 is not an MDT"),
        (&with_mount[..], "t-MDT0002", l, "t-MDT0002 is not ACTIVE"),
        (&with_mount[..], "t-MDT0000 t-MDT0000", l, "named twice"),
        (&with_mount[..], "t-MDT0000", "/nonexistent/lfs", "lfs mdts"),
        (&with_mount[..], "mds1:t-MDT0000", l, "HOST:MDT"),
        (&with_mount[..], &format!("t-MDT0000 {m}"), l, "mixes"),
        (&with_mount[..], "/", l, "not in the Lustre mount"),
        (
            &no_mount[..],
            "t-MDT0000",
            l,
            "no Lustre file system 't' is mounted",
        ),
    ] {
        let o = survey(words, &[("LFS", lfs_path), ("targets", targets)]);
        assert_eq!(o.status.code(), Some(2), "{targets}: {}", stdout(&o));
        assert!(stderr(&o).contains(named), "{targets}: {}", stderr(&o));
        assert!(!log.exists() && common::tree(&mnt).is_empty());
        assert!(!rslt.with_extension("summary").exists());
    }
    // On Lustre, the kit's MDS layers need its echo_client on the MDS.
    let o = survey(
        &with_mount,
        &[("LFS", l), ("targets", "t-MDT0000"), ("layer", "mdd")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("layer=mdd") && stderr(&o).contains("echo_client"));
    assert!(!log.exists() && common::tree(&mnt).is_empty());
}

#[test]
fn stripe_count_and_mds_layers_exit_2_on_tmpfs_and_ext4_and_layer_fs_runs() {
    let s = Scratch::new("survey-mds-nolustre");
    let Some(ts) = targets(&s, "nl", "ext4", 32, 1) else {
        return;
    };
    let tmp = s.path("t");
    std::fs::create_dir_all(&tmp).unwrap();
    let rslt = s.path("r");
    let r = rslt.to_str().unwrap();
    let ext4 = mounts(&ts).remove(0);
    for dir in [tmp.to_str().unwrap(), ext4.as_str()] {
        for (var, value, named) in [
            ("stripe_count", "2", "stripe_count=2"),
            ("layer", "mdd", "layer=mdd"),
            ("layer", "mdt", "layer=mdt"),
            ("layer", "osd", "layer=osd"),
            ("layer", "llite", "unknown layer 'llite'"),
        ] {
            let o = survey(&["mds", "--rslt", r], &[("targets", dir), (var, value)]);
            assert_eq!(o.status.code(), Some(2), "{dir} {var}={value}");
            let err = stderr(&o);
            assert!(err.contains(named), "{dir} {var}={value}: {err}");
            assert!(
                var == "layer" && value == "llite" || err.contains("not on Lustre"),
                "{err}"
            );
            assert!(!rslt.with_extension("summary").exists());
        }
        // `fs`, the file system's own interface, is the one layer here;
        // stripe_count=0 is the kit's default and runs.
        let o = survey(
            &["mds", "--rslt", r, "--tests", "create destroy"],
            &[
                ("targets", dir),
                ("layer", "fs"),
                ("stripe_count", "0"),
                ("thrlo", "1"),
                ("thrhi", "1"),
                ("file_count", "10"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{dir}: {}", stderr(&o));
        std::fs::remove_file(rslt.with_extension("summary")).unwrap();
        let _ = std::fs::remove_file(rslt.with_extension("detail"));
    }
    assert!(common::tree(&tmp).is_empty(), "{:?}", common::tree(&tmp));
    assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
}

/// Starts `iolab survey words...` in the background.
fn spawn_survey(words: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("survey")
        .args(words)
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (without a deadline on the survey's speed, only a safety cap)
/// until `cond` holds.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if cond() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("gave up waiting for {what}");
}

#[test]
fn ctrl_c_stops_the_metadata_survey_and_removes_what_it_made() {
    let s = Scratch::new("survey-mds-int");
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep-me"), b"not the survey's").unwrap();
    let rslt = s.path("i");
    let child = spawn_survey(&[
        "mds",
        dir.to_str().unwrap(),
        "--thrlo",
        "1",
        "--thrhi",
        "1",
        "--dir-count",
        "1",
        "--file-count",
        "50000000",
        "--tests",
        "create destroy",
        "--rslt",
        rslt.to_str().unwrap(),
    ]);
    let work = dir.join(format!("iolab-mds.{}", child.id())).join("tests");
    wait_for("the survey's first files", || {
        std::fs::read_dir(&work).is_ok_and(|mut d| d.next().is_some())
    });
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert_eq!(
        common::tree(&dir),
        vec!["keep-me".to_string()],
        "only what was there before"
    );
    // Said, as every tool says it (it stopped without a word).
    let err = common::stderr(&o);
    assert!(
        err.contains("iolab survey mds: interrupted; removed what this run made"),
        "{err}"
    );
}

#[test]
fn ctrl_c_stops_the_object_survey_and_removes_what_it_made() {
    let s = Scratch::new("survey-obd-int");
    let Some(ts) = targets(&s, "i", "ext4", 64, 1) else {
        return;
    };
    let Some(cg) = Throttle::new("obd-int", &ts[0].dev.majmin(), 1 << 20) else {
        return;
    };
    let m = mounts(&ts);
    let rslt = s.path("oi");
    let procs = cg.dir.join("cgroup.procs");
    let script = format!("echo $$ > {} && exec \"$0\" survey \"$@\"", procs.display());
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "obdfilter",
            &m[0],
            "--size",
            "32",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--rslt",
            rslt.to_str().unwrap(),
        ])
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The shell execs the survey, so the child's pid is the survey's.
    let obj = ts[0]
        .at
        .join(format!("iolab-obdfilter.{}", child.id()))
        .join("o0");
    wait_for("the first object", || {
        std::fs::metadata(&obj).is_ok_and(|m| m.len() > 0)
    });
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
}

#[test]
fn plot_turns_a_summary_into_csv_gnuplot_input_and_charts() {
    // The legend check needs text, which needs a font on the machine.
    if !Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists() {
        skip_or_fail("plot", "no DejaVu Sans font for the charts' labels");
        return;
    }
    let s = Scratch::new("survey-plot");
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let rslt = s.path("p");
    let o = survey(
        &[
            "obdfilter",
            dir.to_str().unwrap(),
            "--size",
            "4",
            "--rszlo",
            "256",
            "--rszhi",
            "256",
            "--nobjhi",
            "2",
            "--thrhi",
            "2",
            "--tests",
            "write read",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = rslt.with_extension("summary");
    let o = survey(&["plot", summary.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let base = s.path("p");
    let csv = read(&base.with_extension("csv"));
    assert_eq!(csv.lines().count(), 1 + 3 * 2, "{csv}");
    for test in ["write", "read"] {
        let stem = format!("{}-256-{test}", base.display());
        let dat = read(Path::new(&format!("{stem}.dat")));
        let header: Vec<&str> = dat.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["thr", "obj1", "obj2"], "{dat}");
        assert!(read(Path::new(&format!("{stem}.scr"))).contains(&format!("title \"{test}-obj2\"")));
        let svg = read(Path::new(&format!("{stem}.svg")));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let labels = (1..=4)
            .filter(|k| svg.contains(&format!("{test}-obj{k}\n")))
            .count();
        assert_eq!(labels, 2, "one legend entry per series");
        let png = std::fs::read(format!("{stem}.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 800);
    }
    let o = survey(&["plot", s.path("missing.summary").to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// Every file `plot` writes is checked before the first is written: a
/// chart's name taken by a directory once failed after 15 files were
/// written, and `--out ""` wrote `.csv` and `-256-read.dat`. A test the
/// survey does not have is an error, not a figure dropped in silence.
#[test]
fn plot_checks_all_it_writes_first_and_drops_no_figure() {
    let s = Scratch::new("survey-plot-checks");
    let summary = s.path("in.summary");
    let line = "ost 1 sz 4096K rsz 256K obj 1 thr 1 write 100.00 [ 90.00, 110.00] read 120.00 [100.00,130.00]";
    std::fs::write(&summary, format!("title\n{line}\n")).unwrap();
    let cwd = s.path("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let plot = |out: &str, input: &Path| {
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["survey", "plot", input.to_str().unwrap(), "--out", out])
            .current_dir(&cwd)
            .env("CI", "1")
            .output()
            .unwrap()
    };
    for out in ["", "sub/", "."] {
        let o = plot(out, &summary);
        assert_eq!(o.status.code(), Some(2), "--out {out:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("file name"), "{}", stderr(&o));
    }
    std::fs::create_dir(cwd.join("Q-256-read.png")).unwrap();
    let o = plot("Q", &summary);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("Q-256-read.png"), "{}", stderr(&o));
    assert_eq!(common::tree(&cwd), ["Q-256-read.png/"]);
    let odd = s.path("odd.summary");
    std::fs::write(&odd, format!("title\n{line} bogus 1.0 [1.0,1.0]\n")).unwrap();
    let o = plot("R", &odd);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`bogus` is not a test"),
        "{}",
        stderr(&o)
    );
    assert_eq!(common::tree(&cwd), ["Q-256-read.png/"]);
}

#[test]
fn disk_survey_prints_enomem_when_the_buffers_would_not_fit() {
    let s = Scratch::new("survey-disk-nomem");
    let mem_kb: u64 = read(Path::new("/proc/meminfo"))
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap();
    // 64 MB records, 16 threads per region: enough regions to pass MemTotal.
    let per_region_kb = 65536 * 16 + 64;
    let crg = (mem_kb / per_region_kb + 1).next_power_of_two();
    let size_mb = crg * 64;
    let f = s.path("sparse-dev");
    std::fs::File::create(&f)
        .unwrap()
        .set_len((size_mb + 2) << 20)
        .unwrap();
    let (c, t, sz) = (crg.to_string(), (crg * 16).to_string(), size_mb.to_string());
    let rslt = s.path("nm");
    let o = survey(
        &[
            "disk",
            f.to_str().unwrap(),
            "--size",
            &sz,
            "--rszlo",
            "65536",
            "--rszhi",
            "65536",
            "--crglo",
            &c,
            "--crghi",
            &c,
            "--thrlo",
            &t,
            "--thrhi",
            &t,
            "--actions",
            "read",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line = stdout(&o).lines().nth(1).unwrap().to_string();
    assert!(line.ends_with(" ENOMEM"), "{line}");
}

#[test]
fn disk_survey_prints_failed_when_a_region_fails() {
    let s = Scratch::new("survey-disk-failed");
    let Some(ts) = targets(&s, "df", "ext4", 16, 1) else {
        return;
    };
    let f = ts[0].at.join("dev");
    std::fs::File::create(&f).unwrap();
    let rslt = s.path("df");
    let o = survey(
        &[
            "disk",
            f.to_str().unwrap(),
            "--size",
            "32",
            "--crghi",
            "1",
            "--thrhi",
            "1",
            "--actions",
            "write",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let line = stdout(&o).lines().nth(1).unwrap().to_string();
    // The guide's layout names no action: FAILED stands for write's figures.
    assert!(line.ends_with(" crg 1 FAILED"), "{line:?}");
    assert!(read(&rslt.with_extension("detail")).contains("error: write at offset"));
}

/// A stand-in remote shell: drops the host name and runs the command here.
fn fake_rsh(s: &Scratch) -> String {
    format!("exec:{}", common::local_rsh(s).display())
}

#[test]
fn obdfilter_runs_targets_on_other_hosts_and_merges_them() {
    let s = Scratch::new("survey-obd-hosts");
    let dirs: Vec<PathBuf> = ["local", "ra", "rb"].iter().map(|d| s.path(d)).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let rsh = fake_rsh(&s);
    let rslt = s.path("h");
    let json = s.path("h.json");
    let (ra, rb) = (
        format!("nodeA:{}", dirs[1].display()),
        format!("nodeB:{}", dirs[2].display()),
    );
    let o = survey(
        &[
            "obdfilter",
            dirs[0].to_str().unwrap(),
            &ra,
            &rb,
            "--rsh",
            &rsh,
            "--remote-iolab",
            env!("CARGO_BIN_EXE_iolab"),
            "--size",
            "4",
            "--rszlo",
            "256",
            "--rszhi",
            "256",
            "--nobjhi",
            "1",
            "--thrhi",
            "2",
            "--rslt",
            rslt.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = data_lines(&stdout(&o));
    assert_eq!(lines.len(), 2);
    assert_eq!(
        &lines[1][..10],
        &["ost", "3", "sz", "12288K", "rsz", "256", "obj", "3", "thr", "6"]
    );
    assert!(!stdout(&o).contains("ERROR"));
    let doc: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
    let targets = &doc["payload"]["points"][0]["result"]["tests"][0]["targets"];
    let names: Vec<&str> = targets
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert_eq!(names, [dirs[0].to_str().unwrap(), ra.as_str(), rb.as_str()]);
    assert!(targets
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["rates"]["amount"] == 4 << 20));
    for d in &dirs {
        assert!(
            common::tree(d).is_empty(),
            "{} kept {:?}",
            d.display(),
            common::tree(d)
        );
    }
    // A host whose target does not exist: the survey fails before any
    // I/O and leaves nothing on the others.
    let bad = format!("nodeB:{}", s.path("nowhere").display());
    let o = survey(
        &[
            "obdfilter",
            dirs[0].to_str().unwrap(),
            &ra,
            &bad,
            "--rsh",
            &rsh,
            "--remote-iolab",
            env!("CARGO_BIN_EXE_iolab"),
            "--size",
            "4",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("nodeB"), "{}", stderr(&o));
    for d in &dirs {
        assert!(
            common::tree(d).is_empty(),
            "{} kept {:?}",
            d.display(),
            common::tree(d)
        );
    }
}

#[test]
fn disk_survey_totals_count_every_device_and_its_summary_plots() {
    let s = Scratch::new("survey-disk-two");
    let Some(a) = blank(&s, "two-a", 16) else {
        return;
    };
    let Some(b) = blank(&s, "two-b", 16) else {
        return;
    };
    let rslt = s.path("two");
    let o = survey(
        &[
            "disk",
            &a.dev,
            &b.dev,
            "--size",
            "4",
            "--rszlo",
            "256",
            "--rszhi",
            "256",
            "--crghi",
            "2",
            "--thrhi",
            "2",
            "--rslt",
            rslt.to_str().unwrap(),
            "--layout",
            "kit",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out
        .lines()
        .next()
        .unwrap()
        .contains(&format!("on {} {} from", a.dev, b.dev)));
    let lines = data_lines(&out);
    let shape: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|t| (t[1].as_str(), t[5].as_str(), t[7].as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            ("8192K", "2", "2"),
            ("8192K", "2", "4"),
            ("8192K", "4", "4")
        ]
    );
    assert_eq!(lines[2][11], "4", "four regions ran in the last point");
    let detail = read(&rslt.with_extension("detail"));
    assert!(
        detail.contains(&format!("{} region 1 offset", b.dev)),
        "{detail}"
    );
    let o = survey(
        &[
            "plot",
            rslt.with_extension("summary").to_str().unwrap(),
            "--out",
            s.path("pl").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dat = read(&s.path("pl-256-read.dat"));
    assert_eq!(
        dat.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["thr", "crg2", "crg4"]
    );
    assert_eq!(read(&s.path("pl.csv")).lines().count(), 1 + 6);
}

#[test]
fn ctrl_c_stops_the_target_survey_and_removes_its_files() {
    let s = Scratch::new("survey-ost-int");
    let Some(ts) = targets(&s, "oi", "ext4", 64, 1) else {
        return;
    };
    let Some(cg) = Throttle::new("ost-int", &ts[0].dev.majmin(), 1 << 20) else {
        return;
    };
    let m = mounts(&ts);
    let rslt = s.path("oi");
    let procs = cg.dir.join("cgroup.procs");
    let script = format!("echo $$ > {} && exec \"$0\" survey \"$@\"", procs.display());
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(["ost", "-s", "32", &m[0], "--rslt", rslt.to_str().unwrap()])
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let file = ts[0].at.join(format!("iolab-ost-survey.{}", child.id()));
    wait_for("the survey's file", || {
        std::fs::metadata(&file).is_ok_and(|m| m.len() > 0)
    });
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(leftovers(&ts).is_empty(), "{:?}", leftovers(&ts));
}

/// `--stats` on a survey: the JSON carries the samples; a bad
/// configuration is exit 2 with nothing created.
#[test]
fn stats_option_puts_samples_in_the_json() {
    let s = Scratch::new("survey-stats");
    let dir = s.path("m");
    std::fs::create_dir(&dir).unwrap();
    let (json, rslt) = (s.path("mds.json"), s.path("mds"));
    let words = |stats: &'static str| {
        vec![
            "mds".to_string(),
            dir.to_str().unwrap().to_string(),
            "--rslt".into(),
            rslt.to_str().unwrap().into(),
            "--json".into(),
            json.to_str().unwrap().into(),
            "--stats".into(),
            stats.into(),
        ]
    };
    let env = [
        ("thrlo", "1"),
        ("thrhi", "1"),
        ("dir_count", "1"),
        ("file_count", "100"),
    ];
    let w = words("local,1s");
    let o = survey(&w.iter().map(String::as_str).collect::<Vec<_>>(), &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tables = doc["stats"]["tables"]
        .as_array()
        .expect("stats in the JSON");
    assert!(tables.iter().any(|t| t["stat"] == "disk"), "{tables:?}");
    std::fs::remove_file(&json).unwrap();
    let w = words("local,-2s");
    let o = survey(&w.iter().map(String::as_str).collect::<Vec<_>>(), &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("stats"), "{}", stderr(&o));
    assert!(!json.exists(), "nothing written");
}

/// A survey says how many points it will measure before the first one,
/// then a line per point (on stdout, as the kit's summary).
#[test]
fn a_survey_says_its_points_before_it_starts() {
    let s = Scratch::new("survey-plan");
    let t = s.path("t");
    std::fs::create_dir_all(&t).unwrap();
    let rslt = s.path("r");
    let o = survey(
        &[
            "mds",
            "--thrlo",
            "1",
            "--thrhi",
            "2",
            "--file-count",
            "200",
            t.to_str().unwrap(),
        ],
        &[("rslt", rslt.to_str().unwrap())],
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}{err}");
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with("iolab survey: 2 points to measure"),
        "{err}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("mdt ")).count(),
        2,
        "{out}"
    );
}

/// A remote object-survey agent's test ends when the survey that started
/// it is killed (kill -9): through a remote shell that, as ssh does,
/// does not become the command, killing the shell left the agent
/// writing on under init. Its standard input, held by the survey, now
/// closes and stops it. The target is a directory on TMP's file system
/// (not the scratch tmpfs, which a test step fills in a second or two),
/// removed at the end.
#[test]
fn a_killed_survey_ends_its_remote_test_step() {
    use std::os::unix::fs::PermissionsExt;
    struct Gone(PathBuf);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let s = Scratch::new("survey-obd-killed");
    let d = Gone(std::env::temp_dir().join(format!("iolab-it-obd-killed-{}", std::process::id())));
    std::fs::create_dir_all(&d.0).unwrap();
    let rsh = s.path("sh-rsh");
    std::fs::write(&rsh, "#!/bin/sh\nshift\n\"$@\"\nexit $?\n").unwrap();
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = format!("nodeA:{}", d.0.display());
    // 30 GB of 4 KiB writes: a step that would run on for many seconds.
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["survey", "obdfilter", &target, "--rsh"])
        .arg(format!("exec:{}", rsh.display()))
        .args(["--remote-iolab", env!("CARGO_BIN_EXE_iolab"), "--rslt"])
        .arg(s.path("rslt"))
        .args("--size 30000 --rszlo 4 --rszhi 4 --nobjlo 1 --nobjhi 1 --thrlo 1 --thrhi 1 --tests write".split(' '))
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let work = format!("iolab-obdfilter.{}", c.id());
    // The agent itself, the iolab binary (not the shell, whose command
    // line holds the same words).
    let agent = ["obdfilter-agent", "test", work.as_str()];
    let (started, left) = common::orphans_after_kill(&mut c, || common::pids_of("iolab", &agent));
    assert!(started, "the agent's test step never started");
    assert!(left.is_empty(), "the agent outlived the survey: {left:?}");
}

/// A 4 MB obdfilter survey of `dir` (one record size, one object, one
/// thread), its result files at `rslt`.
fn small_obdfilter(dir: &Path, rslt: &Path) -> Output {
    survey(
        &[
            "obdfilter",
            dir.to_str().unwrap(),
            "--size",
            "4",
            "--rszlo",
            "256",
            "--rszhi",
            "256",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--rslt",
            rslt.to_str().unwrap(),
        ],
        &[],
    )
}

/// A refused `--rslt` (its .detail a planted link) creates neither file:
/// the .summary was once created (or truncated) before the .detail was
/// refused.
#[test]
fn a_refused_rslt_creates_neither_file() {
    let s = Scratch::new("survey-rslt-link");
    let d = s.path("t");
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::symlink(s.path("elsewhere"), s.path("P.detail")).unwrap();
    let prefix = s.path("P");
    let o = small_obdfilter(&d, &prefix);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert!(!s.path("P.summary").exists());
    assert!(!s.path("elsewhere").exists());
    assert!(common::tree(&d).is_empty());
}

/// `--rslt` files are checked with the other outputs before anything is
/// made: a block device node there was written over (its file system
/// lost), a FIFO nobody reads made the survey wait where no signal
/// reached it, and `--csv` on the .summary silently replaced it.
#[test]
fn an_rslt_on_a_device_a_lone_fifo_or_another_output_is_exit_2() {
    use std::os::unix::fs::FileTypeExt;
    let s = Scratch::new("survey-rslt-kinds");
    let d = s.path("t");
    std::fs::create_dir(&d).unwrap();
    // Within a bound: the old code waited on the FIFO for ever.
    let bounded = |prefix: &Path, extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.args(["survey", "obdfilter", d.to_str().unwrap(), "--size", "4"])
            .args(["--rszlo", "256", "--rszhi", "256", "--nobjhi", "1"])
            .args(["--thrhi", "1", "--rslt", prefix.to_str().unwrap()])
            .args(extra)
            .env("CI", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        for _ in 0..600 {
            if child.try_wait().unwrap().is_some() {
                return child.wait_with_output().unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the survey did not end within 60 s");
    };
    let fifo = s.path("F.summary");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let o = bounded(&s.path("F"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("FIFO"), "{}", stderr(&o));
    assert!(!s.path("F.detail").exists());
    assert!(common::tree(&d).is_empty());

    let summary = s.path("C.summary");
    std::fs::write(&summary, "mine\n").unwrap();
    let csv = summary.to_str().unwrap();
    let o = bounded(&s.path("C"), &["--csv", csv]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("same file"), "{}", stderr(&o));
    assert_eq!(read(&summary), "mine\n");

    if !common::is_root() {
        return skip_or_fail("survey_rslt_device", "needs root for a loop device");
    }
    let Some(dev) = blank(&s, "rslt-dev", 8) else {
        return;
    };
    let marker = b"not the survey's";
    std::fs::write(&dev.dev, marker).unwrap();
    let meta = std::fs::metadata(&dev.dev).unwrap();
    assert!(meta.file_type().is_block_device());
    let rdev = std::os::unix::fs::MetadataExt::rdev(&meta);
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let node = s.path("B.detail");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["b", &major.to_string(), &minor.to_string()])
        .status()
        .unwrap();
    assert!(made.success());
    let o = bounded(&s.path("B"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("block device"), "{}", stderr(&o));
    let head = std::fs::read(&dev.dev).unwrap();
    assert_eq!(&head[..marker.len()], marker, "the device was written");
    assert!(!s.path("B.summary").exists());
}

/// A target directory on a read-only mount is exit 2 before the result
/// files are made (it failed at the first mkdir, exit 1, after them).
#[test]
fn a_read_only_target_is_exit_2_before_the_results_are_made() {
    let s = Scratch::new("survey-ro-target");
    let ro = common::SmallFs::new(&s, "survey_ro_target", "ro,size=1m");
    if !ro.mounted {
        return;
    }
    let d = ro.dir.clone();
    for survey_name in ["obdfilter", "mds", "ost"] {
        let prefix = s.path(survey_name);
        let mut words = vec![survey_name, d.to_str().unwrap(), "--rslt"];
        words.push(prefix.to_str().unwrap());
        let o = survey(&words, &[]);
        assert_eq!(o.status.code(), Some(2), "{survey_name}: {}", stderr(&o));
        assert!(stderr(&o).contains("read-only"), "{}", stderr(&o));
        assert!(!prefix.with_extension("summary").exists(), "{survey_name}");
    }
}

/// A .summary or .detail that cannot be written (a full file system) is
/// the survey's output failure, exit 1 naming it; writes that failed
/// were once dropped and the survey exited 0.
#[test]
fn an_unwritable_summary_is_an_output_failure() {
    let s = Scratch::new("survey-full-rslt");
    let d = s.path("t");
    std::fs::create_dir(&d).unwrap();
    let small = common::SmallFs::new(&s, "survey_full_rslt", "size=4k");
    if !small.mounted {
        return;
    }
    let full = small.dir.clone();
    // Fill it: the survey's files can be made, not written.
    let _ = std::fs::write(full.join("filler"), vec![0u8; 8192]);
    let prefix = full.join("P");
    let o = small_obdfilter(&d, &prefix);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("P.summary"), "{}", stderr(&o));
    assert!(
        common::tree(&d).is_empty(),
        "the survey's objects were left"
    );
    // Complete or absent: the two files (0 bytes here) were left.
    let left: Vec<_> = std::fs::read_dir(&full)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["filler"], "{}", stderr(&o));
    assert!(stderr(&o).contains("removed"), "{}", stderr(&o));
}

/// The echo agent of obdfilter's network cases serves only a peer that
/// proves the key the survey handed it on standard input: a stranger
/// without the key, or with another, is refused before any object is
/// opened or record buffer allocated; strangers that connect and say
/// nothing hold no thread and delay no real client; the agent ends when
/// its standard input (the survey) closes.
#[test]
fn obdfilter_echo_agent_serves_only_peers_that_prove_the_handed_key() {
    use iolab_net::{conn, handshake, Cancel, SharedKey};
    use std::io::Write;
    use std::time::{Duration, Instant};
    let s = Scratch::new("survey-echo-key");
    let dir = s.path("ost0");
    std::fs::create_dir_all(&dir).unwrap();
    let port = 20000 + (std::process::id() + 17000) % 20000;
    let key = SharedKey::random().unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["survey", "obdfilter-agent", "echo", "--work", "w"])
        .args(["--port", &port.to_string(), "--"])
        .arg(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = agent.stdin.take().unwrap();
    stdin.write_all(key.handoff_line().as_bytes()).unwrap();
    let addr = format!("127.0.0.1:{port}");
    let try_job = |k: Option<&SharedKey>, job: serde_json::Value| {
        let t0 = Instant::now();
        loop {
            match conn::connect(&addr, Duration::from_secs(5), Cancel::process()) {
                Ok(mut c) => {
                    c.idle_timeout = Duration::from_secs(20);
                    let r = handshake::client(&mut c, "iolab-obdecho", &job, k, Cancel::process());
                    return r.map(drop).map_err(|e| e.to_string());
                }
                Err(_) if t0.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("the agent never listened: {e}"),
            }
        }
    };
    let write = serde_json::json!({"write": true, "rsz_bytes": 64 << 20, "object": 0});
    // Strangers: one without the key, one with another key.
    let none = try_job(None, write.clone());
    assert!(none.is_err(), "a peer without the key was served");
    let other = SharedKey::random().unwrap();
    assert!(try_job(Some(&other), write.clone()).is_err());
    // Silent strangers hold sockets only: the survey's own client still
    // gets through at once.
    let silent: Vec<_> = (0..50)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    let t0 = Instant::now();
    try_job(
        Some(&key),
        serde_json::json!({"write": false, "rsz_bytes": 4096, "probe": true}),
    )
    .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    drop(silent);
    // Nothing was written by the strangers: the work directory is empty.
    let work = dir.join("w");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    // The survey gone (its end of standard input closed): the agent ends
    // and says it moved nothing.
    drop(stdin);
    let t0 = Instant::now();
    while agent.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the agent outlived its survey"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = agent.wait_with_output().unwrap();
    let totals: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(totals["requests"], 0, "{totals}");
    assert!(!work.exists());
}
