//! Exit paths that used to end with 1 where the input was at fault: bad
//! input and an output that cannot be written are exit 2, named, before
//! anything is written.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;

/// A disk survey's summary with one point, two tests.
const SUMMARY: &str = "h\ntotal_size  8192K rsz  256 crg     2 thr     4 write 170.00 MB/s  2 x  90.00 =  180.00 MB/s read  180.45 MB/s     2 x  90.00 =  180.00 MB/s \n";

#[test]
fn survey_plot_into_a_place_it_cannot_write_is_exit_2_before_writing() {
    let s = Scratch::new("exit-plot");
    let summary = s.path("s.summary");
    std::fs::write(&summary, SUMMARY).unwrap();
    let summary = summary.to_str().unwrap();
    for (out, named) in [
        (s.path("no/such/dir/p"), "does not exist"),
        ("/proc/iolab-plot".into(), "cannot create a file in /proc"),
    ] {
        let o = survey(&["plot", summary, "--out", out.to_str().unwrap()], &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--out {}.csv", out.display())),
            "{err}"
        );
        assert!(err.contains(named), "{err}");
        assert!(stdout(&o).is_empty(), "nothing was written: {}", stdout(&o));
    }
    assert_eq!(tree(&s.root), ["s.summary"]);
    // The same summary into a writable place: the CSV and both charts.
    let out = s.path("p");
    let o = survey(&["plot", summary, "--out", out.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(s.path("p.csv").is_file() && s.path("p-256-read.svg").is_file());
}

/// survey plot replaces only an earlier plot's files: a PREFIX.csv, or a
/// chart's .png, of another program's, or a link at a chart's name, is
/// kept and the plot refused (exit 2, naming it) before anything is
/// written. They were replaced before.
#[test]
fn survey_plot_writes_over_no_file_it_did_not_write() {
    let s = Scratch::new("exit-plot-keep");
    let summary = s.path("s.summary");
    std::fs::write(&summary, SUMMARY).unwrap();
    let plot = || survey(&["plot", summary.to_str().unwrap()], &[]);
    for _ in 0..2 {
        let o = plot();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // Every file's name and bytes (a link to nothing reads as empty).
    let snapshot = || -> Vec<(String, Vec<u8>)> {
        tree(&s.root)
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(s.path(&p)).unwrap_or_default();
                (p, bytes)
            })
            .collect()
    };
    let refused = |name: &str, why: &str| {
        let before = snapshot();
        let o = plot();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(name) && e.contains(why), "{e}");
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        assert_eq!(snapshot(), before, "something was written");
    };
    let csv = s.path("s.csv");
    let earlier = std::fs::read(&csv).unwrap();
    std::fs::write(&csv, "precious\n").unwrap();
    refused("s.csv", "is not a file iolab survey plot wrote");
    std::fs::write(&csv, earlier).unwrap();
    let png = s.path("s-256-read.png");
    std::fs::write(&png, "precious\n").unwrap();
    refused("s-256-read.png", "is not a file iolab survey plot wrote");
    std::fs::remove_file(&png).unwrap();
    std::os::unix::fs::symlink(s.path("elsewhere"), &png).unwrap();
    refused("s-256-read.png", "is not a regular file");
    assert!(!s.path("elsewhere").exists());
    std::fs::remove_file(&png).unwrap();
    let o = plot();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(png.is_file());
}

#[test]
fn report_with_bad_input_or_an_unwritable_output_is_exit_2_before_writing() {
    let s = Scratch::new("exit-report");
    let plan = s.path("p.toml");
    std::fs::write(
        &plan,
        format!(
            "label = \"s\"\ntool = \"mdtest\"\nargs = \"-F -n 4 -d {}/m.{{point}}\"\nrepeats = 1\n\
             [[axes]]\nname = \"tasks\"\noption = \"--tasks\"\nvalues = [1, 2]\n",
            s.root.display()
        ),
    )
    .unwrap();
    let store = s.path("runs.sqlite");
    let st = store.to_str().unwrap();
    let o = iolab(&["sweep", plan.to_str().unwrap(), "--store", st]);
    assert!(o.status.success(), "{}", stderr(&o));
    let busy = s.path("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("mine.txt"), "not a report").unwrap();
    // A link to an empty directory passed the check (it followed the
    // link), drew every chart, then could not rename onto the link:
    // exit 1 at the end. The link is refused first, as a file is.
    std::fs::create_dir(s.path("empty")).unwrap();
    let link = s.path("link");
    std::os::unix::fs::symlink("empty", &link).unwrap();
    let slash = format!("{}/", link.display());
    // SQLite's -wal/-shm beside the store come and go with its readers.
    let files = || {
        let mut t = tree(&s.root);
        t.retain(|p| !p.ends_with("-wal") && !p.ends_with("-shm"));
        t
    };
    let before = files();
    for (series, out, named) in [
        ("s", "/proc/iolab-report", "/proc/iolab-report"),
        ("s", busy.to_str().unwrap(), busy.to_str().unwrap()),
        ("s", link.to_str().unwrap(), "is a symbolic link"),
        ("s", &slash, "is a symbolic link"),
        (
            "no-such-series",
            s.path("r").to_str().unwrap(),
            "no-such-series",
        ),
    ] {
        let o = iolab(&["report", series, "--store", st, "-o", out]);
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(stderr(&o).contains(named), "{}", stderr(&o));
        assert_eq!(files(), before, "{out}: nothing written");
    }
}

/// A standard error that cannot be written (`2>/dev/full`) costs the
/// messages, not the exit status: every one of these panicked in
/// eprintln! and ended with 101.
#[test]
fn an_unwritable_stderr_keeps_the_exit_status() {
    let s = Scratch::new("exit-full-stderr");
    let md = s.path("md");
    let missing = s.path("missing");
    let store = s.path("none.sqlite");
    let (md, missing, store) = (
        md.to_str().unwrap(),
        missing.to_str().unwrap(),
        store.to_str().unwrap(),
    );
    for (words, code) in [
        (vec!["mdtest", "-d", md, "-n", "10", "-t"], 0),
        (
            vec![
                "xdd", "-op", "read", "-target", missing, "-reqsize", "4", "-numreqs", "10",
            ],
            2,
        ),
        (vec!["results", "--store", store, "list"], 2),
        (vec!["qualify", missing, "--out", missing], 2),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(&words)
            .env("CI", "1")
            .stdout(std::process::Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .status()
            .unwrap();
        assert_eq!(o.code(), Some(code), "{words:?}");
    }
}

/// A symbolic link at a secret's name is refused, never followed, even
/// to a private key file of this user (whoever can plant the link would
/// choose the key): exit 2 naming the option and the file, before
/// anything is made. Every secret file is read by one function, so each
/// kind of option is tried once: a key (`-e2e key`, `lst --key`,
/// `IOLAB_KEY_FILE`) and an S3 secret (`--s3.secret-key-file`,
/// s3bench's `--secret-key-file`).
#[test]
fn a_secret_behind_a_symbolic_link_is_exit_2_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("exit-secret-link");
    let key = s.path("key");
    std::fs::write(&key, "a shared secret of some length\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&key, s.path("link")).unwrap();
    let link = s.path("link").display().to_string();
    let run = |words: &[&str], env: &[(&str, &str)]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(words)
            .current_dir(&s.root)
            .envs(env.iter().copied())
            .env("CI", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{words:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&link) && err.contains("a symbolic link, never followed for a secret"),
            "{words:?}: {err}"
        );
        err
    };
    let xdd = "-op write -target t.dat -reqsize 16 -bytes 1048576 -e2e isdestination -e2e destination 127.0.0.1:9";
    let mut words: Vec<&str> = xdd.split(' ').collect();
    words.insert(0, "xdd");
    let mut keyed = words.clone();
    keyed.extend(["-e2e", "key", &link]);
    assert!(run(&keyed, &[]).contains("key file"));
    run(&words, &[("IOLAB_KEY_FILE", &link)]);
    let lst = [
        "lst",
        "run",
        "ping",
        "--from",
        "127.0.0.1:9",
        "--to",
        "127.0.0.1:9",
    ];
    let mut keyed = lst.to_vec();
    keyed.extend(["--key", &link]);
    assert!(run(&keyed, &[]).contains("--key"));
    let secret = format!("--s3.secret-key-file={link}");
    let mdtest = ["mdtest", "-a", "s3", "-n", "1", "-d", "s3://bkt/x", &secret];
    run(&mdtest, &[("AWS_ENDPOINT_URL", "http://127.0.0.1:9")]);
    let s3bench = [
        "s3bench",
        "stat",
        "--bucket",
        "bkt",
        "--secret-key-file",
        &link,
    ];
    assert!(run(&s3bench, &[]).contains("--secret-key-file"));
    // Nothing was made; the key file itself is still taken.
    assert_eq!(tree(&s.root), ["key", "link"]);
}
