//! What `iolab survey` refuses before it writes anything: a device (or an
//! image file) a loop device is built on, mounted or not; a file system
//! past the head and tail of a device, inside the range the survey
//! writes; a device another program holds; a target given twice; a
//! sweep that selects no point; an empty kit variable taken as a value.
//! Real loop devices, file systems and mounts, made by the test and
//! detached, unmounted and removed on drop even when it fails.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::loopfs::{LoopDev, LoopFs};
use common::{skip_or_fail, stderr, stdout, survey, Scratch};
use std::path::Path;
use std::process::Output;

/// The small write-only disk survey of the tester's report on `targets`.
fn disk_write(targets: &[&str], rslt: &Path, extra: &[&str]) -> Output {
    let mut w = vec![
        "disk",
        "--size",
        "150",
        "--crghi",
        "1",
        "--thrhi",
        "1",
        "--actions",
        "write",
        "--rslt",
        rslt.to_str().unwrap(),
    ];
    w.extend(extra);
    w.extend(targets);
    survey(&w, &[])
}

/// Neither result file of prefix `rslt` exists.
fn nothing_written(rslt: &Path, what: &str) {
    for ext in ["summary", "detail"] {
        let p = rslt.with_extension(ext);
        assert!(!p.exists(), "{what}: {} was created", p.display());
    }
}

fn refused(o: &Output, what: &str, named: &[&str]) {
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: {}{}",
        stdout(o),
        stderr(o)
    );
    for n in named {
        assert!(
            stderr(o).contains(n),
            "{what}: {n} not named: {}",
            stderr(o)
        );
    }
}

/// The tester's case: an ext4 on a loop device made 100 MiB into the
/// surveyed device, mounted and holding a file. The loop driver is no
/// holder in sysfs and takes no exclusive claim, and 100 MiB is past the
/// head and tail the signature scan looked at: the survey destroyed it
/// with exit 0. Now it is refused while mounted (naming the loop device
/// and its mount point), while only attached, and once detached (its
/// superblock lies where the survey writes).
#[test]
fn a_device_a_loop_device_is_built_on_is_refused_and_so_is_a_file_system_deep_in_it() {
    let name = "a_device_a_loop_device_is_built_on_is_refused";
    let s = Scratch::new("survey-loop-on-dev");
    let l = match LoopDev::blank(&s.path("d.img"), 200) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(name, &why),
    };
    let inner = match LoopDev::attach_at(Path::new(&l.dev), 100 << 20) {
        Ok(i) => i,
        Err(why) => return skip_or_fail(name, &why),
    };
    let inner_dev = inner.dev.clone();
    let mnt = s.path("M");
    let fs = match LoopFs::make(inner, "ext4", &[], &mnt, &[]) {
        Ok(f) => f,
        Err(why) => return skip_or_fail(name, &why),
    };
    std::fs::write(mnt.join("data.txt"), "important\n").unwrap();
    let rslt = s.path("x");
    let o = disk_write(&[&l.dev], &rslt, &[]);
    refused(
        &o,
        "mounted",
        &[&inner_dev, mnt.to_str().unwrap(), "--force"],
    );
    nothing_written(&rslt, "mounted");
    // Unmounted, still attached: the loop device is named.
    let umount = std::process::Command::new("umount").arg(&mnt).status();
    assert!(
        umount.is_ok_and(|st| st.success()),
        "umount {}",
        mnt.display()
    );
    let o = disk_write(&[&l.dev], &rslt, &[]);
    refused(&o, "attached", &[&inner_dev]);
    assert!(!stderr(&o).contains("mounted on"), "{}", stderr(&o));
    // Detached (the fixture unmounts, already done, then detaches): its
    // superblock 100 MiB in is found where the survey writes.
    drop(fs);
    let o = disk_write(&[&l.dev], &rslt, &[]);
    refused(&o, "detached", &["ext", "104857600"]);
    nothing_written(&rslt, "detached");
    // The file system and its file are whole.
    let again = LoopDev::attach_at(Path::new(&l.dev), 100 << 20).unwrap();
    let ro = LoopFs::mount(again, &s.path("R"), &["-o", "ro"]).unwrap();
    assert_eq!(
        std::fs::read_to_string(ro.at.join("data.txt")).unwrap(),
        "important\n"
    );
    drop(ro);
    let o = disk_write(&[&l.dev], &rslt, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// An image file a mounted loop device is built on was overwritten with
/// no check at all ("files are not checked"): it is refused now, naming
/// the loop device and where it is mounted.
#[test]
fn a_file_a_mounted_loop_device_is_built_on_is_refused() {
    let name = "a_file_a_mounted_loop_device_is_built_on_is_refused";
    let s = Scratch::new("survey-loop-on-file");
    let img = s.path("fs.img");
    let dev = match LoopDev::blank(&img, 64) {
        Ok(d) => d,
        Err(why) => return skip_or_fail(name, &why),
    };
    let dev_name = dev.dev.clone();
    let mnt = s.path("M");
    let fs = match LoopFs::make(dev, "ext4", &[], &mnt, &[]) {
        Ok(f) => f,
        Err(why) => return skip_or_fail(name, &why),
    };
    std::fs::write(mnt.join("data.txt"), "important\n").unwrap();
    let rslt = s.path("f");
    let img_s = img.to_str().unwrap();
    let mut w = vec!["disk", "--size", "16", "--crghi", "1", "--thrhi", "1"];
    w.extend([
        "--actions",
        "write",
        "--rslt",
        rslt.to_str().unwrap(),
        img_s,
    ]);
    let o = survey(&w, &[]);
    refused(&o, "file", &[&dev_name, mnt.to_str().unwrap()]);
    nothing_written(&rslt, "file");
    drop(fs);
    // Once nothing uses it, the file is the writer's to overwrite.
    let o = survey(&w, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A device another program holds (O_EXCL) was refused with exit 1 after
/// the header, the .summary and an empty .detail were written: the claim
/// came after the outputs. Now it is exit 2 and nothing is written.
#[test]
fn a_device_another_program_holds_is_exit_2_with_nothing_written() {
    use std::os::unix::fs::OpenOptionsExt;
    let name = "a_device_another_program_holds_is_exit_2_with_nothing_written";
    let s = Scratch::new("survey-held");
    let l = match LoopDev::blank(&s.path("h.img"), 64) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(name, &why),
    };
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&l.dev)
        .unwrap();
    let rslt = s.path("ex");
    let o = survey(
        &[
            "disk",
            "--size",
            "16",
            "--crghi",
            "1",
            "--thrhi",
            "1",
            "--actions",
            "write",
            "--rslt",
            rslt.to_str().unwrap(),
            &l.dev,
        ],
        &[],
    );
    refused(&o, "held", &[&l.dev, "in use"]);
    assert!(stdout(&o).is_empty(), "no header: {}", stdout(&o));
    nothing_written(&rslt, "held");
    drop(held);
}

/// One storage under two names that are not the same device or file (a
/// disk and its partition, an image and a loop device over it, a loop
/// device over another) was written by two sets of workers and counted
/// twice once `--force` was given; it is exit 2 now, `--force` or not.
/// Two partitions of one disk, which share no byte, still run.
#[test]
fn one_storage_under_two_devices_is_exit_2_even_with_force() {
    struct Partitions(String);
    impl Drop for Partitions {
        fn drop(&mut self) {
            let _ = std::process::Command::new("partx")
                .args(["-d", &self.0])
                .status();
        }
    }
    let name = "one_storage_under_two_devices";
    let s = Scratch::new("survey-shared-storage");
    let img = s.path("d.img");
    let l = match LoopDev::blank(&img, 400) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(name, &why),
    };
    let over = match LoopDev::attach_at(Path::new(&l.dev), 1 << 20) {
        Ok(o) => o,
        Err(why) => return skip_or_fail(name, &why),
    };
    let rslt = s.path("x");
    let small = ["--force"];
    for pair in [
        [l.dev.as_str(), img.to_str().unwrap()],
        [over.dev.as_str(), l.dev.as_str()],
        [over.dev.as_str(), img.to_str().unwrap()],
    ] {
        let o = disk_write(&pair, &rslt, &small);
        refused(&o, &pair.join(" "), &["share storage", pair[0], pair[1]]);
        nothing_written(&rslt, &pair.join(" "));
    }
    drop(over);
    let table = "label: gpt\n,160M\n,160M\n";
    let mut sfdisk = std::process::Command::new("sfdisk")
        .args(["-q", &l.dev])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    sfdisk
        .stdin
        .take()
        .unwrap()
        .write_all(table.as_bytes())
        .unwrap();
    assert!(sfdisk.wait().unwrap().success(), "sfdisk");
    let _parts = Partitions(l.dev.clone());
    let _ = std::process::Command::new("partx")
        .args(["-a", &l.dev])
        .status();
    let (p1, p2) = (format!("{}p1", l.dev), format!("{}p2", l.dev));
    if !Path::new(&p1).exists() {
        return skip_or_fail(name, "partx made no partition nodes");
    }
    let o = disk_write(&[&p1, &l.dev], &rslt, &small);
    refused(&o, "partition and disk", &["share storage"]);
    nothing_written(&rslt, "partition and disk");
    let o = disk_write(&[&p1, &p2], &rslt, &small);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The same target twice (as given, through a link, with a trailing `/`
/// or `./`) was claimed twice and failed late ("in use"), or ran twice
/// with doubled totals, or failed with "File exists", after the header
/// and both files were written. Now it is exit 2 naming it, before
/// anything is made, with --force too.
#[test]
fn the_same_target_twice_is_exit_2_before_anything_is_made() {
    let name = "the_same_target_twice_is_exit_2_before_anything_is_made";
    let s = Scratch::new("survey-twice");
    let l = match LoopDev::blank(&s.path("t.img"), 64) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(name, &why),
    };
    let link = s.path("alias");
    std::os::unix::fs::symlink(&l.dev, &link).unwrap();
    let file = s.path("f.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(20 << 20)
        .unwrap();
    let dir = s.path("D");
    std::fs::create_dir(&dir).unwrap();
    let rslt = s.path("a");
    let r = rslt.to_str().unwrap();
    let (dev, alias, f) = (
        l.dev.as_str(),
        link.to_str().unwrap(),
        file.to_str().unwrap(),
    );
    let d = dir.to_str().unwrap();
    let (d_slash, d_dot) = (format!("{d}/"), format!("{d}/."));
    let disk = [
        "disk", "--size", "16", "--crghi", "1", "--thrhi", "1", "--rslt", r,
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&disk[..], &[dev, dev]].concat(), dev),
        ([&disk[..], &[dev, alias]].concat(), alias),
        ([&disk[..], &["--force", dev, alias]].concat(), alias),
        ([&disk[..], &[f, f]].concat(), f),
        (
            vec![
                "obdfilter",
                "--size",
                "4",
                "--nobjhi",
                "1",
                "--thrhi",
                "1",
                "--rslt",
                r,
                d,
                &d_slash,
            ],
            d,
        ),
        (
            vec![
                "mds",
                "--thrlo",
                "1",
                "--thrhi",
                "1",
                "--file-count",
                "4",
                "--rslt",
                r,
                d,
                &d_dot,
            ],
            d,
        ),
        (vec!["ost", "-s", "1", "--rslt", r, d, d], d),
    ];
    for (w, named) in cases {
        let o = survey(&w, &[]);
        refused(&o, &format!("{w:?}"), &[named]);
        assert!(
            stderr(&o).contains("twice") || stderr(&o).contains("same target"),
            "{w:?}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "{w:?}: no header: {}", stdout(&o));
        nothing_written(&rslt, &format!("{w:?}"));
        assert!(
            common::tree(&dir).is_empty(),
            "{w:?} made something in the target"
        );
    }
}

/// A sweep whose ranges select no point printed its header and exited 0.
#[test]
fn a_sweep_that_selects_no_point_is_exit_2_naming_its_parameters() {
    let s = Scratch::new("survey-no-point");
    let dir = s.path("D");
    std::fs::create_dir(&dir).unwrap();
    let file = s.path("f.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let rslt = s.path("n");
    let (r, d, f) = (
        rslt.to_str().unwrap(),
        dir.to_str().unwrap(),
        file.to_str().unwrap(),
    );
    for (w, named) in [
        (
            vec![
                "obdfilter",
                "--size",
                "4",
                "--rszlo",
                "4",
                "--rszhi",
                "4",
                "--nobjlo",
                "2",
                "--nobjhi",
                "2",
                "--thrlo",
                "1",
                "--thrhi",
                "1",
                "--rslt",
                r,
                d,
            ],
            ["nobjlo..nobjhi=2..2", "thrlo..thrhi=1..1"],
        ),
        (
            vec![
                "disk", "--size", "4", "--crglo", "4", "--crghi", "4", "--thrlo", "1", "--thrhi",
                "2", "--rszlo", "4", "--rszhi", "4", "--rslt", r, f,
            ],
            ["crglo..crghi=4..4", "thrlo..thrhi=1..2"],
        ),
        (
            vec![
                "mds",
                "--thrlo",
                "3",
                "--thrhi",
                "5",
                "--dir-count",
                "4",
                "--file-count",
                "8",
                "--rslt",
                r,
                d,
            ],
            ["thrlo..thrhi=3..5", "dir_count=4"],
        ),
    ] {
        let o = survey(&w, &[]);
        refused(&o, &format!("{w:?}"), &[named[0], named[1], "no point"]);
        assert!(stdout(&o).is_empty(), "{w:?}: {}", stdout(&o));
        nothing_written(&rslt, &format!("{w:?}"));
    }
}

/// A kit variable is never taken in silence: `verify` (not done) and
/// `targets` with `OSTS` (one list, two names) are exit 2 naming them,
/// and a bad value in a variable is said to come from it, not from the
/// option the user never typed.
#[test]
fn kit_variables_are_refused_by_their_own_names() {
    let s = Scratch::new("survey-kit-vars");
    let dir = s.path("D");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let rslt = s.path("r");
    let words = ["obdfilter", "--size", "4", "--nobjhi", "1", "--thrhi", "1"];
    let mut words = words.to_vec();
    words.extend(["--rslt", rslt.to_str().unwrap(), d]);
    let o = survey(&words, &[("verify", "1")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("verify is not implemented"),
        "{}",
        stderr(&o)
    );
    let o = survey(&words[..words.len() - 1], &[("targets", d), ("OSTS", d)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("both targets and OSTS"),
        "{}",
        stderr(&o)
    );
    // Not on the command line: a flag wins over its variable.
    let no_thrhi: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(i, w)| **w != "--thrhi" && (*i == 0 || words[i - 1] != "--thrhi"))
        .map(|(_, w)| *w)
        .collect();
    let o = survey(&no_thrhi, &[("thrhi", "abc")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kit's variable thrhi=abc"),
        "{}",
        stderr(&o)
    );
    assert!(!rslt.with_extension("summary").exists());
}

/// The kit reads every variable as `${var:-default}`. An empty rslt_loc
/// put the results at `/obdfilter_survey_...`, an empty rslt at the
/// hidden `./.summary`, an empty size or tests_str was exit 2. Each is
/// now its default; an option given empty on the command line, or a
/// prefix that names no file, is still exit 2.
#[test]
fn an_empty_kit_variable_is_its_default() {
    let s = Scratch::new("survey-empty-env");
    let dir = s.path("D");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let in_scratch = |words: &[&str], env: &[(&str, &str)]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.arg("survey")
            .args(words)
            .env("CI", "1")
            .current_dir(&s.root);
        for v in common::SURVEY_KIT_VARS {
            c.env_remove(v);
        }
        c.envs(env.iter().copied()).output().unwrap()
    };
    // rslt_loc and rslt empty: the default prefix, under /tmp.
    for env in [
        [("rslt_loc", ""), ("size", "4")],
        [("rslt", ""), ("size", "4")],
    ] {
        let o = in_scratch(&["obdfilter", "--nobjhi", "2", "--thrhi", "2", d], &env);
        assert_eq!(o.status.code(), Some(0), "{env:?}: {}", stderr(&o));
        let said = stderr(&o);
        let at = said
            .split("results in ")
            .nth(1)
            .and_then(|r| r.split(".summary").next())
            .unwrap_or_else(|| panic!("{env:?}: no prefix said: {said}"))
            .to_string();
        for ext in ["summary", "detail"] {
            let p = format!("{at}.{ext}");
            let there = Path::new(&p).exists();
            let _ = std::fs::remove_file(&p);
            assert!(there, "{env:?}: {p} missing");
        }
        assert!(at.starts_with("/tmp/obdfilter_survey_"), "{env:?}: {at}");
        assert!(!s.path(".summary").exists(), "{env:?}: a hidden .summary");
    }
    // size and tests_str empty: their defaults (ost's size is 30 MB).
    let rslt = s.path("o");
    let o = in_scratch(
        &["ost", "--rslt", rslt.to_str().unwrap(), d],
        &[("size", "")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("Write Average"), "{}", stdout(&o));
    let o = in_scratch(
        &[
            "obdfilter",
            "--size",
            "4",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--rslt",
            rslt.to_str().unwrap(),
            d,
        ],
        &[("tests_str", "")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("rewrite"),
        "the default tests: {}",
        stdout(&o)
    );
    // Given empty, or naming no file, on the command line: exit 2.
    let fresh = s.path("none");
    for (w, named) in [
        (
            vec!["ost", "-s", "", "--rslt", fresh.to_str().unwrap(), d],
            "size",
        ),
        (vec!["ost", "--rslt", "", d], "rslt"),
        (vec!["ost", "--rslt", "sub/", d], "rslt"),
        (vec!["ost", "--rslt-loc", "", d], "rslt-loc"),
    ] {
        let o = in_scratch(&w, &[]);
        refused(&o, &format!("{w:?}"), &[named]);
        assert!(!s.path(".summary").exists() && !s.path("sub/.summary").exists());
        nothing_written(&fresh, &format!("{w:?}"));
    }
}

/// The last file number may be u64::MAX itself (it was refused).
#[test]
fn mds_start_number_may_end_at_the_largest_file_number() {
    let s = Scratch::new("survey-mds-max");
    let rslt = s.path("m");
    let start = (u64::MAX - 9).to_string();
    let base = [
        "mds",
        "/nowhere",
        "--backend",
        "null",
        "--thrlo",
        "1",
        "--thrhi",
        "1",
        "--file-count",
        "10",
        "--rslt",
        rslt.to_str().unwrap(),
        "--start-number",
    ];
    let o = survey(&[&base[..], &[start.as_str()]].concat(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let past = (u64::MAX - 8).to_string();
    let o = survey(&[&base[..], &[past.as_str()]].concat(), &[]);
    refused(&o, "one past", &["start_number"]);
}
