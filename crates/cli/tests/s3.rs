//! The S3 backend end to end: `iolab mdtest -a S3` and `iolab xdd` with
//! `s3://` targets against a real S3 server (SeaweedFS on loopback,
//! crates/testkit/src/s3.rs), including refused keys, a missing bucket
//! and a server killed under a run.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use iolab_testkit::s3::S3Server;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The shared server, or None (after skip_or_fail) when it cannot start.
fn server(test: &str) -> Option<&'static S3Server> {
    match S3Server::shared() {
        Ok(s) => Some(s),
        Err(e) => {
            skip_or_fail(test, &e);
            None
        }
    }
}

fn cmd(s: &S3Server, args: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.envs(s.env()).env("CI", "1").args(args.split_whitespace());
    c
}

fn run(s: &S3Server, args: &str) -> Output {
    cmd(s, args).output().unwrap()
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

fn keys(s: &S3Server, bucket: &str) -> Vec<String> {
    s.keys(bucket).unwrap()
}

#[test]
fn mdtest_on_s3_runs_every_layout_and_keeps_to_its_prefix() {
    let Some(s) = server("mdtest_on_s3") else {
        return;
    };
    let b = "md-layouts";
    s.make_bucket(b).unwrap();
    // Not the run's: one beside its prefix, one inside it.
    s.put(b, "outside/keep", b"x").unwrap();
    s.put(b, "r1/precious", b"y").unwrap();
    let before = keys(s, b);
    for opts in [
        "-n 24 -z 2 -b 2 -u -L -N 1 -R -w 100 -e 100 -X --tasks 3",
        "-I 4 -z 1 -b 3 -w 64 -e 64 -X --tasks 2 -i 2",
        "-n 8 -S -F -w 32 -e 32 --tasks 2",
        "-n 10 -D -u --tasks 2",
    ] {
        let o = run(s, &format!("mdtest -a S3 --s3.bucket={b} -d /r1 {opts}"));
        ok(&o, opts);
        let out = stdout(&o);
        assert!(out.contains("Tree creation"), "{opts}: {out}");
        if opts.contains("-X") {
            assert!(
                out.contains("File read") && out.contains("Directory stat"),
                "{out}"
            );
        }
        assert_eq!(keys(s, b), before, "{opts}: the run left or removed keys");
    }
}

#[test]
fn io500_split_sequence_on_s3() {
    let Some(s) = server("io500_on_s3") else {
        return;
    };
    let b = "md-io500";
    s.make_bucket(b).unwrap();
    let wall = std::env::temp_dir().join(format!("iolab-it-s3-wall-{}", std::process::id()));
    let w = wall.display();
    let common = format!("mdtest -a S3 --s3.bucket={b} -P -N 1 -n 30 --tasks 2");
    let easy = format!("{common} -F -u -L -d /easy -x {w}.easy");
    let hard = format!("{common} -F -t -w 3901 -e 3901 -d /hard -x {w}.hard");
    for step in [
        format!("{easy} -C -W 5"),
        format!("{easy} -T"),
        format!("{hard} -C -W 5"),
        format!("{hard} -T"),
        format!("{hard} -E -X"),
        format!("{easy} -r"),
        format!("{hard} -r"),
    ] {
        ok(&run(s, &step), &step);
    }
    // As on a file system, the -d directories the create runs made stay.
    assert_eq!(keys(s, b), vec!["easy/", "hard/"]);
    let _ = std::fs::remove_file(format!("{w}.easy"));
    let _ = std::fs::remove_file(format!("{w}.hard"));
}

#[test]
fn a_bucket_per_run_is_made_and_removed() {
    let Some(s) = server("bucket_per_run") else {
        return;
    };
    let o = run(s, "mdtest -a S3 -n 6 -d /x -w 10 -e 10");
    ok(&o, "bucket per run");
    let err = stderr(&o);
    let name = err
        .split("s3://")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no bucket named: {err}"));
    assert!(name.starts_with("iolab-"), "{err}");
    assert!(!s.bucket_exists(name).unwrap(), "{name} is still there");
}

#[test]
fn xdd_writes_and_reads_s3_objects() {
    let Some(s) = server("xdd_on_s3") else {
        return;
    };
    let b = "xdd-objects";
    s.make_bucket(b).unwrap();
    // Three 5 MiB parts (S3's smallest part) in a multipart upload.
    let w = run(
        s,
        &format!("xdd -op write -target s3://{b}/big -reqsize 5120 -numreqs 3 -qd 3 -dp sequenced"),
    );
    ok(&w, "multipart write");
    assert!(stdout(&w).contains("COMBINED"), "{}", stdout(&w));
    let r = run(
        s,
        &format!("xdd -op read -target s3://{b}/big -reqsize 1024 -numreqs 15 -qd 4 -dp sequenced -verify location"),
    );
    ok(&r, "ranged reads");
    assert!(
        stdout(&r).contains("0 reads failed -verify"),
        "{}",
        stdout(&r)
    );
    // One request: one PUT; -deletefile removes what its run made, and
    // keeps an object that was there before it.
    let one = format!("xdd -op write -target s3://{b}/small -reqsize 64 -numreqs 1");
    ok(&run(s, &format!("{one} -deletefile")), "deletefile");
    assert_eq!(keys(s, b), vec!["big"]);
    ok(&run(s, &one), "single PUT");
    assert_eq!(keys(s, b), vec!["big", "small"]);
    let kept = run(s, &format!("{one} -deletefile"));
    ok(&kept, "deletefile of an object that was there");
    assert!(
        stderr(&kept).contains("kept: it was there before the run"),
        "{}",
        stderr(&kept)
    );
    assert_eq!(keys(s, b), vec!["big", "small"]);
    // Reading past the end is a short read, an error.
    let past = run(
        s,
        &format!("xdd -op read -target s3://{b}/big -reqsize 1024 -numreqs 16"),
    );
    assert_eq!(past.status.code(), Some(1), "{}", stderr(&past));
    // Mixed reads and writes cannot work on an object: refused up front.
    let mixed = run(
        s,
        &format!("xdd -op write -rwratio 50 -target s3://{b}/m -reqsize 64 -numreqs 2"),
    );
    assert_eq!(mixed.status.code(), Some(2), "{}", stderr(&mixed));
    assert!(stderr(&mixed).contains("rwratio"), "{}", stderr(&mixed));
}

#[test]
fn xdd_takes_its_s3_settings_from_options_too() {
    let Some(s) = server("xdd_s3_options") else {
        return;
    };
    let b = "xdd-options";
    s.make_bucket(b).unwrap();
    let env = s.env();
    let get = |k: &str| env.iter().find(|(n, _)| *n == k).unwrap().1.clone();
    let dir = std::env::temp_dir().join(format!("iolab-it-s3-opts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("secret");
    std::fs::write(&secret, get("AWS_SECRET_ACCESS_KEY")).unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let opts = format!(
        "--s3.endpoint={} --s3.access-key={} --s3.secret-key-file={} --s3.region={}",
        get("AWS_ENDPOINT_URL"),
        get("AWS_ACCESS_KEY_ID"),
        secret.display(),
        get("AWS_REGION")
    );
    // No AWS_* variables: everything comes from the options.
    let bare = |line: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.env("CI", "1").args(line.split_whitespace());
        for (k, _) in &env {
            c.env_remove(k);
        }
        c.output().unwrap()
    };
    let w = bare(&format!(
        "xdd -op write -target s3://{b}/o -reqsize 64 -numreqs 1 {opts}"
    ));
    ok(&w, "write with --s3.* options");
    assert_eq!(keys(s, b), vec!["o"]);
    // Options for a backend no target uses, or unknown keys, are bad usage
    // found before anything is written.
    let local = dir.join("local");
    for (line, says) in [
        (
            format!(
                "xdd -op write -target {} -reqsize 4 -numreqs 1 {opts}",
                local.display()
            ),
            "no target is on the s3 backend",
        ),
        (
            format!("xdd -op write -target s3://{b}/p -reqsize 4 -numreqs 1 --s3.colour=blue"),
            "--s3.colour",
        ),
        (
            // Parts under S3's 5 MiB minimum would fail at the upload's end.
            format!("xdd -op write -target s3://{b}/p -reqsize 64 -numreqs 2 {opts}"),
            "reqsize",
        ),
    ] {
        let o = bare(&line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{line}: {}", stderr(&o));
    }
    assert!(!local.exists());
    assert_eq!(keys(s, b), vec!["o"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_key_is_a_403_and_exit_1() {
    let Some(s) = server("refused_key") else {
        return;
    };
    let b = "key-refused";
    s.make_bucket(b).unwrap();
    for line in [
        format!("mdtest -a S3 --s3.bucket={b} -n 4 -d /k"),
        "mdtest -a S3 -n 4 -d /k".into(),
        format!("xdd -op write -target s3://{b}/obj -reqsize 64 -numreqs 1"),
    ] {
        let o = cmd(s, &line)
            .env("AWS_SECRET_ACCESS_KEY", "not-the-key")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains("403"), "{line}: {}", stderr(&o));
    }
    assert!(keys(s, b).is_empty());
}

#[test]
fn a_missing_bucket_is_a_clear_error() {
    let Some(s) = server("missing_bucket") else {
        return;
    };
    // Exit 2 before anything, with the command that makes the bucket;
    // no bucket is made.
    let make = "s3 mb s3://no-such-bucket";
    for line in [
        "mdtest -a S3 --s3.bucket=no-such-bucket -n 4 -d /m",
        "mdtest -a S3 -n 4 -d s3://no-such-bucket/m",
        "xdd -op read -target s3://no-such-bucket/obj -reqsize 64 -numreqs 1",
        "xdd -op write -target s3://no-such-bucket/obj -reqsize 64 -numreqs 1",
    ] {
        let o = run(s, line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("no-such-bucket") && e.contains("does not exist") && e.contains(make),
            "{line}: {e}"
        );
    }
    assert!(!s.bucket_exists("no-such-bucket").unwrap());
}

#[test]
fn an_endpoint_is_scheme_host_and_port_and_bucket_names_are_checked_first() {
    let Some(s) = server("endpoint_with_path") else {
        return;
    };
    for b in ["ep-named", "ep-path"] {
        s.make_bucket(b).unwrap();
    }
    // The path would have been taken as the bucket: the object landed in
    // ep-path, a bucket the user did not name.
    let o = cmd(
        s,
        "xdd -op write -target s3://ep-named/obj -reqsize 64 -numreqs 1",
    )
    .env("AWS_ENDPOINT_URL", format!("{}/ep-path", s.endpoint()))
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("AWS_ENDPOINT_URL"), "{}", stderr(&o));
    for line in [
        "xdd -op write -target s3://Bad_Name/obj -reqsize 64 -numreqs 1",
        "mdtest -a S3 -n 2 -d s3://Bad_Name/x",
        "mdtest -a S3 --s3.bucket=ep-named -n 2 -d s3://ab/x",
    ] {
        let o = run(s, line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("not a valid bucket name"),
            "{line}: {}",
            stderr(&o)
        );
    }
    assert!(keys(s, "ep-named").is_empty() && keys(s, "ep-path").is_empty());
}

#[test]
fn a_key_scoped_to_one_bucket_runs_the_documented_examples() {
    let Some(s) = server("scoped_key") else {
        return;
    };
    let b = iolab_testkit::s3::SCOPED_BUCKET;
    s.make_bucket(b).unwrap();
    // docs/s3.md's examples on the one bucket the key may use (smaller).
    for line in [
        format!("mdtest -a S3 --s3.bucket={b} -d /run1 -n 20 -u --tasks 4 -w 3901 -e 3901 -X"),
        format!("mdtest -a S3 -d s3://{b}/run2 -n 10 -F -w 64 -e 64"),
        // Presigned URLs instead of the Authorization header.
        format!("mdtest -a S3 --s3.signing=query -d s3://{b}/run3 -n 10 -w 64 -e 64 -X"),
        format!("xdd -op write -target s3://{b}/big -reqsize 5120 -numreqs 2 -qd 2 -dp sequenced"),
        format!("xdd -op read -target s3://{b}/big -reqsize 1024 -numreqs 10 -qd 2 -dp sequenced -verify location"),
        format!("xdd -op write -target s3://{b}/obj -reqsize 1024 -numreqs 1 -deletefile"),
    ] {
        let o = cmd(s, &line).envs(s.scoped_env()).output().unwrap();
        ok(&o, &line);
    }
    assert_eq!(keys(s, b), vec!["big"]);
    // The key really is scoped: another bucket is refused.
    s.make_bucket("not-scoped").unwrap();
    let o = cmd(s, "mdtest -a S3 --s3.bucket=not-scoped -n 2 -d /x")
        .envs(s.scoped_env())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("403"), "{}", stderr(&o));
}

#[test]
fn an_s3_run_starts_no_thread_per_request() {
    let Some(s) = server("threads_per_request") else {
        return;
    };
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        return skip_or_fail("threads_per_request", "no strace (scripts/install-deps.sh)");
    }
    let b = "md-threads";
    s.make_bucket(b).unwrap();
    let base = format!("mdtest -a S3 --s3.bucket={b} -d /t -F -n 500");
    ok(&run(s, &format!("{base} -C")), "create");
    let trace = std::env::temp_dir().join(format!("iolab-s3-strace-{}", std::process::id()));
    let mut c = Command::new("strace");
    c.envs(s.env())
        .args(["-f", "-qq", "-e", "trace=clone,clone3", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(format!("{base} -T").split_whitespace());
    let o = c.output().unwrap();
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    ok(&o, "stat under strace");
    assert!(stdout(&o).contains("File stat"), "{}", stdout(&o));
    let threads = text.lines().filter(|l| l.contains("clone")).count();
    assert!(threads < 20, "{threads} threads for 500 stats:\n{text}");
    ok(&run(s, &format!("{base} -r")), "remove");
    let left = keys(s, b);
    assert!(left.len() <= 1, "{left:?}");
}

#[test]
fn an_existing_object_is_never_replaced_by_an_exclusive_create() {
    let Some(s) = server("exclusive_create") else {
        return;
    };
    let b = "md-exclusive";
    s.make_bucket(b).unwrap();
    // The fixture's put creates exclusively (If-None-Match: *).
    s.put(b, "theirs", b"first").unwrap();
    let e = s.put(b, "theirs", b"second").unwrap_err();
    assert!(e.contains("412"), "{e}");
    assert_eq!(keys(s, b), vec!["theirs"]);
    // mdtest's creates on a service that honours the header: no note;
    // on one that ignores it (a proxy strips it): the run says so.
    let line = format!("mdtest -a S3 --s3.bucket={b} -d /x -n 5 -F -w 8");
    let o = run(s, &line);
    ok(&o, "honoured");
    let note = "ignores If-None-Match";
    assert!(!stderr(&o).contains(note), "{}", stderr(&o));
    use iolab_testkit::fault_proxy::{Fault, FaultProxy};
    let upstream = s.endpoint().trim_start_matches("http://").parse().unwrap();
    let p = FaultProxy::start(upstream, Fault::StripIfNoneMatch, 1).unwrap();
    let o = cmd(s, &line)
        .env("AWS_ENDPOINT_URL", p.endpoint())
        .output()
        .unwrap();
    ok(&o, "ignored");
    assert!(stderr(&o).contains(note), "{}", stderr(&o));
    assert_eq!(keys(s, b), vec!["theirs"]);
}

/// The S3 backend itself, with the fixture's key, for what no command
/// line can arrange (a create over an object that is already there).
fn backend(s: &S3Server) -> iolab_backend::s3::S3 {
    iolab_backend::s3::S3::new(iolab_backend::s3::S3Config {
        endpoint: s.endpoint().into(),
        region: "us-east-1".into(),
        bucket: None,
        access_key: Some(iolab_testkit::s3::ACCESS_KEY.into()),
        secret_key: Some(iolab_testkit::s3::SECRET_KEY.into()),
        session_token: None,
        path_style: true,
        timeout: Duration::from_secs(10),
        signing: Default::default(),
    })
}

/// The bytes of object `key` (at most `max`).
fn object_bytes(be: &iolab_backend::s3::S3, bucket: &str, key: &str, max: usize) -> Vec<u8> {
    use iolab_backend::{Backend, OpenOptions};
    let path = std::ffi::CString::new(format!("s3://{bucket}/{key}")).unwrap();
    let size = be.stat(&path).unwrap().size as usize;
    let h = be.open(&path, OpenOptions::read()).unwrap();
    let mut buf = vec![0; size.min(max)];
    let n = be.read_at(&h, &mut buf, 0).unwrap();
    be.close(h).unwrap();
    buf.truncate(n);
    assert_eq!(size.min(max), n, "s3://{bucket}/{key}");
    buf
}

/// An object written in several parts is created exclusively too: the
/// CompleteMultipartUpload carries If-None-Match: *, SeaweedFS answers
/// 412 over an object already there, the upload is abandoned and the
/// object stays as it was. The same for one PUT sent by the write and
/// one sent at close. Without exclusive create the parts replace it.
#[test]
fn an_exclusive_multipart_create_never_replaces_an_object() {
    use iolab_backend::{Backend, OpenOptions};
    let Some(s) = server("exclusive_multipart") else {
        return;
    };
    let b = "md-exclusive-parts";
    s.make_bucket(b).unwrap();
    s.put(b, "theirs", b"first").unwrap();
    let be = backend(s);
    let path = c"s3://md-exclusive-parts/theirs";
    let part = vec![7u8; 5 << 20];
    let write = |opts: OpenOptions, parts: &[&[u8]]| {
        let h = be.open(path, opts).unwrap();
        let mut at = 0;
        let mut r = Ok(());
        for p in parts {
            r = r.and(be.write_at(&h, p, at).map(drop));
            at += p.len() as u64;
        }
        r.and(be.close(h))
    };
    let e = write(OpenOptions::create_new(), &[&part, b"tail"]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    assert!(e.to_string().contains("412"), "{e}");
    assert_eq!(object_bytes(&be, b, "theirs", 64), b"first");
    // One PUT at close, and one sent by the write (its length given).
    let e = write(OpenOptions::create_new(), &[b"second"]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    let whole = OpenOptions {
        whole_len: Some(6),
        ..OpenOptions::create_new()
    };
    let e = write(whole, &[b"second"]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    assert_eq!(object_bytes(&be, b, "theirs", 64), b"first");
    // Nothing says the creates could not be exclusive.
    let notes = be.notes().join("\n");
    assert!(!notes.contains("If-None-Match"), "{notes}");
    // A create that may replace (not exclusive) does: the test can fail.
    let replace = OpenOptions {
        exclusive: false,
        ..OpenOptions::create_new()
    };
    write(replace, &[&part, b"tail"]).unwrap();
    assert_eq!(object_bytes(&be, b, "theirs", 8), vec![7u8; 8]);
    be.unlink(path).unwrap();
    // Keys with bytes a URL must encode are signed as the server reads them.
    let odd = "a dir/odd name!+=é~(1).txt";
    s.put(b, odd, b"odd").unwrap();
    assert_eq!(object_bytes(&be, b, odd, 64), b"odd");
    let odd_path = std::ffi::CString::new(format!("s3://{b}/{odd}")).unwrap();
    be.unlink(&odd_path).unwrap();
    assert!(keys(s, b).is_empty());
}

/// xdd creates a missing target exclusively: an object that appears
/// under its name while xdd uploads the parts (every request held 0.5 s
/// by a proxy) is not replaced; the run fails with the 412.
#[test]
fn xdd_never_replaces_an_object_made_during_its_multipart_create() {
    use iolab_testkit::fault_proxy::{Fault, FaultProxy};
    let Some(s) = server("xdd_exclusive_race") else {
        return;
    };
    let b = "xdd-race";
    s.make_bucket(b).unwrap();
    let upstream = s.endpoint().trim_start_matches("http://").parse().unwrap();
    let p = FaultProxy::start(upstream, Fault::Delay(Duration::from_millis(500)), 1).unwrap();
    let mut xdd = cmd(
        s,
        &format!("xdd -op write -target s3://{b}/obj -reqsize 5120 -numreqs 3"),
    )
    .env("AWS_ENDPOINT_URL", p.endpoint())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Once the first part has passed, xdd has found no object (its stat
    // is done); two more parts and the completion are to come, 1.5 s at
    // least: time for the put below.
    let t0 = Instant::now();
    while p.body_bytes() < 5 << 20 && xdd.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(60), "no part uploaded");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.put(b, "obj", b"theirs").unwrap();
    let o = wait_bounded(&mut xdd, Duration::from_secs(60), "xdd");
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("412"), "{all}");
    // Not taken for the run's own: its cleanup after the failure left it.
    assert!(all.contains("made by someone else during the run"), "{all}");
    assert_eq!(object_bytes(&backend(s), b, "obj", 64), b"theirs");
    assert_eq!(keys(s, b), vec!["obj"]);
}

/// A service that refuses If-None-Match on CompleteMultipartUpload (a
/// proxy answers 501 there, as a service with conditional PUTs only
/// would): the completion is sent again without it, the object is made,
/// and the run says that it could not be exclusive.
#[test]
fn a_refused_conditional_completion_is_said() {
    use iolab_testkit::fault_proxy::{Fault, FaultProxy};
    let Some(s) = server("refused_conditional_complete") else {
        return;
    };
    let b = "xdd-refused-cond";
    s.make_bucket(b).unwrap();
    let upstream = s.endpoint().trim_start_matches("http://").parse().unwrap();
    let p = FaultProxy::start(upstream, Fault::RefuseConditionalPost, 1).unwrap();
    let o = cmd(
        s,
        &format!("xdd -op write -target s3://{b}/obj -reqsize 5120 -numreqs 2"),
    )
    .env("AWS_ENDPOINT_URL", p.endpoint())
    .output()
    .unwrap();
    ok(&o, "refused condition");
    assert_eq!(p.faults(), 1);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        all.contains("refused If-None-Match: * on CompleteMultipartUpload"),
        "{all}"
    );
    assert_eq!(keys(s, b), vec!["obj"]);
}

#[test]
fn retries_through_a_faulty_proxy_are_counted() {
    use iolab_testkit::fault_proxy::{Fault, FaultProxy};
    let Some(s) = server("retries") else {
        return;
    };
    let b = "md-retries";
    s.make_bucket(b).unwrap();
    let upstream = s.endpoint().trim_start_matches("http://").parse().unwrap();
    // One task: the proxy faults every 7th request it sees, so with two
    // tasks a request's four attempts could all land on multiples of 7
    // (the other task's requests filling the gaps) and the run fail (a
    // suite run here met it); alone, a retry is the very next request.
    for fault in [Fault::SlowDown, Fault::Reset, Fault::Drop] {
        let p = FaultProxy::start(upstream, fault, 7).unwrap();
        let o = cmd(
            s,
            &format!("mdtest -a S3 --s3.bucket={b} -d /r -n 60 -w 64 -e 64 -X --tasks 1"),
        )
        .env("AWS_ENDPOINT_URL", p.endpoint())
        .output()
        .unwrap();
        ok(&o, &format!("{fault:?}"));
        let faults = p.faults();
        assert!(faults >= 10, "{fault:?}: {faults} faults");
        let note = format!("S3: {faults} of {} requests were retries", p.requests());
        assert!(
            stderr(&o).contains(&note),
            "{fault:?}: want '{note}':\n{}",
            stderr(&o)
        );
        assert!(keys(s, b).is_empty(), "{fault:?}");
    }
}

#[test]
fn a_one_request_object_is_sent_inside_its_timed_write() {
    use iolab_testkit::fault_proxy::{Fault, FaultProxy};
    let Some(s) = server("one_request_timed") else {
        return;
    };
    let b = "xdd-timed";
    s.make_bucket(b).unwrap();
    let upstream = s.endpoint().trim_start_matches("http://").parse().unwrap();
    // Every request waits 300 ms in the proxy before it reaches the server.
    let p = FaultProxy::start(upstream, Fault::Delay(Duration::from_millis(300)), 1).unwrap();
    let json = std::env::temp_dir().join(format!("iolab-s3-timed-{}.json", std::process::id()));
    let o = cmd(
        s,
        &format!("xdd -op write -target s3://{b}/one -reqsize 1024 -numreqs 1 -passes 2 -json"),
    )
    .arg(&json)
    .env("AWS_ENDPOINT_URL", p.endpoint())
    .output()
    .unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    let _ = std::fs::remove_file(&json);
    ok(&o, "one-request write");
    // Two passes, one PUT of 1 MiB each, both on the wire when counted.
    assert_eq!(p.body_bytes(), 2 << 20);
    let passes: Vec<f64> = text
        .match_indices("\"elapsed_s\":")
        .map(|(i, m)| {
            let rest = &text[i + m.len()..];
            let end = rest.find([',', '}']).unwrap();
            rest[..end].trim().parse().unwrap()
        })
        .collect();
    assert!(!passes.is_empty(), "{text}");
    // No figure shorter than the PUT's wait in the proxy.
    assert!(passes.iter().all(|&e| e >= 0.3), "{passes:?}");
    assert_eq!(keys(s, b), vec!["one"]);
}

#[test]
fn a_server_leaves_nothing_in_tmp() {
    if S3Server::shared().is_err() {
        return skip_or_fail("server_leaves_nothing", "no S3 server");
    }
    let tmp = std::env::temp_dir();
    let s = S3Server::start(&[]).unwrap();
    let (dir, ports) = (s.dir().to_path_buf(), s.ports());
    assert!(dir.is_dir());
    let socks_in = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.starts_with("seaweedfs-") && ports.iter().any(|p| n.contains(&p.to_string()))
            })
            .collect()
    };
    // Running, the sockets that can be placed are in its own directory.
    let listing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        listing.iter().any(|n| n.ends_with(".sock")),
        "weed made no socket where expected: {listing:?}"
    );
    // weed makes its gRPC sockets in /tmp whatever it is told: they go
    // with the server.
    assert!(!socks_in(&tmp).is_empty() || tmp != std::path::Path::new("/tmp"));
    drop(s);
    assert!(!dir.exists(), "{} left", dir.display());
    assert_eq!(socks_in(&tmp), Vec::<String>::new());
}

#[test]
fn bad_s3_options_are_usage_errors() {
    let Some(s) = server("bad_s3_options") else {
        return;
    };
    for (line, names) in [
        (
            "mdtest -a S3 --s3.endpoint=ftp://x -n 2 -d /b",
            "--s3.endpoint",
        ),
        ("mdtest -a S3 --s3.timeout=0 -n 2 -d /b", "--s3.timeout"),
        (
            "mdtest -a S3 --s3.bucket=Bad_Name -n 2 -d /b",
            "--s3.bucket",
        ),
        ("mdtest -a S3 --s3.colour=red -n 2 -d /b", "--s3.colour"),
        ("mdtest -a S3 -n 2 -D -U -d /b", "-U"),
    ] {
        let o = run(s, line);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(names), "{line}: {}", stderr(&o));
    }
}

/// Waits (bounded) for `child` to end; kills it and fails the test
/// after `limit`.
fn wait_bounded(child: &mut std::process::Child, limit: Duration, what: &str) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut out = Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    use std::io::Read;
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut out.stdout).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_end(&mut out.stderr).unwrap();
    }
    out
}

fn spawn(s: &S3Server, args: &str) -> std::process::Child {
    cmd(s, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn an_interrupted_run_removes_what_it_made() {
    let Some(s) = server("interrupted_on_s3") else {
        return;
    };
    let b = "md-interrupted";
    s.make_bucket(b).unwrap();
    s.put(b, "keep", b"k").unwrap();
    let mut child = spawn(
        s,
        &format!("mdtest -a S3 --s3.bucket={b} -F -C -n 1000000 -d /i -w 10"),
    );
    let t0 = Instant::now();
    while s.keys(b).unwrap_or_default().len() < 20 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no files made");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = wait_bounded(&mut child, Duration::from_secs(120), "interrupted run");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert_eq!(keys(s, b), vec!["keep"], "{}", stderr(&o));
}

#[test]
fn a_server_killed_under_a_run_ends_it_with_exit_1() {
    if S3Server::shared().is_err() {
        return skip_or_fail("server_killed", "no S3 server");
    }
    let mut s = S3Server::start(&["killed", "stopped"]).unwrap();
    // A server that stops answering: each request ends at --s3.timeout.
    let mut md = spawn(
        &s,
        "mdtest -a S3 --s3.bucket=stopped --s3.timeout=2 -F -C -n 1000000 -d /s",
    );
    let t0 = Instant::now();
    while s.keys("stopped").unwrap_or_default().len() < 20 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no files made");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.pause(true);
    let stopped = Instant::now();
    let o = wait_bounded(
        &mut md,
        Duration::from_secs(60),
        "mdtest on a stopped server",
    );
    // One --s3.timeout, not one per request of the cleanup after it
    // (10 s before a request that found the service gone stopped the
    // later ones); the bound is wide for a loaded machine.
    let noticed = stopped.elapsed();
    assert!(noticed < Duration::from_secs(8), "{noticed:?}");
    s.pause(false);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no answer within 2s"), "{}", stderr(&o));
    assert!(stderr(&o).contains("s3://stopped/"), "{}", stderr(&o));
    // An object for xdd to read over and over.
    let w = run(
        &s,
        "xdd -op write -target s3://killed/obj -reqsize 5120 -numreqs 2",
    );
    ok(&w, "write");
    let mut md = spawn(
        &s,
        "mdtest -a S3 --s3.bucket=killed --s3.timeout=5 -F -C -n 1000000 -d /k --tasks 2",
    );
    let mut xdd = spawn(
        &s,
        "xdd -op read -target s3://killed/obj -reqsize 64 -numreqs 160 -passes 100000 -qd 2",
    );
    // Kill the server once mdtest is creating files (xdd reads by then).
    let t0 = Instant::now();
    while s.keys("killed").unwrap_or_default().len() < 20 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no files made");
        assert!(md.try_wait().unwrap().is_none(), "mdtest ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(xdd.try_wait().unwrap().is_none(), "xdd ended early");
    s.kill();
    for (child, what) in [(&mut md, "mdtest"), (&mut xdd, "xdd")] {
        let o = wait_bounded(child, Duration::from_secs(60), what);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        // Where what is left may be: the bucket (and mdtest's paths).
        assert!(stderr(&o).contains("s3://killed"), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(s.endpoint()) || stdout(&o).contains(s.endpoint()),
            "{what}: {}\n{}",
            stderr(&o),
            stdout(&o)
        );
    }
}

/// The server stops answering under a run: the run fails at one
/// --s3.timeout and cannot remove what it made, so it must not say it
/// did; it names the prefix where objects may remain (they do).
#[test]
fn a_stopped_server_is_no_removal_claimed() {
    if S3Server::shared().is_err() {
        return skip_or_fail("stopped_no_claim", "no S3 server");
    }
    let s = S3Server::start(&["claims"]).unwrap();
    let mut md = spawn(
        &s,
        "mdtest -a S3 --s3.bucket=claims --s3.timeout=3 -d /stopped -n 2000 -F --tasks 2",
    );
    let t0 = Instant::now();
    while s.keys("claims").unwrap_or_default().len() < 20 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no files made");
        assert!(md.try_wait().unwrap().is_none(), "mdtest ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.pause(true);
    let o = wait_bounded(&mut md, Duration::from_secs(60), "mdtest, server stopped");
    s.pause(false);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("removed what this run created"), "{err}");
    assert!(
        err.contains("could not confirm that what this run created was removed"),
        "{err}"
    );
    assert!(
        err.contains("removal not confirmed at /stopped/test-dir.0-0"),
        "{err}"
    );
    let left = keys(&s, "claims");
    assert!(
        left.iter().any(|k| k.starts_with("stopped/test-dir.0-0/")),
        "the claim would have been true: {left:?}"
    );
    // What the message says to do removes them.
    let o = run(
        &s,
        "mdtest -a S3 --s3.bucket=claims -d /stopped -n 2000 -F --tasks 2 -r",
    );
    ok(&o, "-r after the stop");
    // The -d directory the stopped run made stays with -r (not its own).
    assert_eq!(keys(&s, "claims"), vec!["stopped/"]);
}

#[test]
fn a_resumed_copy_to_s3_asks_the_destination_with_its_options() {
    let Some(s) = server("xdd_e2e_s3_options") else {
        return;
    };
    let b = "xdd-e2e-options";
    s.make_bucket(b).unwrap();
    s.put(b, "kept", b"not iolab's").unwrap();
    let env = s.env();
    let get = |k: &str| env.iter().find(|(n, _)| *n == k).unwrap().1.clone();
    let dir = std::env::temp_dir().join(format!("iolab-it-s3-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("secret");
    std::fs::write(&secret, get("AWS_SECRET_ACCESS_KEY")).unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let opts = format!(
        "--s3.endpoint={} --s3.access-key={} --s3.secret-key-file={} --s3.region={}",
        get("AWS_ENDPOINT_URL"),
        get("AWS_ACCESS_KEY_ID"),
        secret.display(),
        get("AWS_REGION")
    );
    // No AWS_* variables: the destination is reached through the options
    // only. The copy's checks before it binds a port (noclobber: an
    // existing object is never overwritten) must ask that destination,
    // not a default S3 of the environment that does not hold the object.
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.env("CI", "1").args(
        format!(
            "xdd -op write -target s3://{b}/kept -reqsize 64 -numreqs 1 -e2e isdestination -e2e destination 127.0.0.1:40990 -e2e noclobber -e2e timeout 5 {opts}"
        )
        .split_whitespace(),
    );
    for (k, _) in &env {
        c.env_remove(k);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let o = wait_bounded(&mut child, Duration::from_secs(60), "e2e destination");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not overwrite"), "{}", stderr(&o));
    assert_eq!(keys(s, b), vec!["kept"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Paths that would leave the bucket named, or that name two buckets,
/// and keys S3 does not take: exit 2 before any request (a counting
/// proxy in front of the server sees none), nothing made anywhere.
#[test]
fn paths_out_of_the_bucket_and_conflicting_buckets_are_refused_first() {
    let Some(s) = server("paths_out") else {
        return;
    };
    let (b, other) = ("po-bench", "po-other");
    for x in [b, other] {
        s.make_bucket(x).unwrap();
    }
    let proxy =
        iolab_testkit::fault_proxy::FaultProxy::counting(s.endpoint()[7..].parse().unwrap())
            .unwrap();
    let long = "k".repeat(1100);
    let near = "k".repeat(1010);
    for (line, says) in [
        // `..` and `.` segments: sent as they are, a path resolved on the
        // way lands in another bucket.
        (
            format!("xdd -op write -target s3://{b}/../{other}/obj -reqsize 64 -numreqs 1"),
            "`..` segment",
        ),
        (
            format!("ior -a S3 --s3.bucket={b} -w -t 1k -b 1k -o /x/../../{other}/f"),
            "`..` segment",
        ),
        (
            format!("mdtest -a S3 --s3.bucket={b} -n 2 -d /../{other}/r1"),
            "`..` segment",
        ),
        (
            format!("mdtest -a S3 --s3.bucket={b} -n 2 -d /r1/./x"),
            "`.` segment",
        ),
        (
            format!("xdd -op write -target s3://{b}/{long} -reqsize 64 -numreqs 1"),
            "1024",
        ),
        // Given paths that fit, whose deepest names do not: found before
        // the first request, not when the run reaches them.
        (
            format!("mdtest -a S3 --s3.bucket={b} -n 14 -z 2 -b 2 -d /{near}"),
            "1024",
        ),
        (
            format!("ior -a S3 --s3.bucket={b} -w -t 1k -b 4k -F -o /{near}/f"),
            "1024",
        ),
        // Two buckets named: which one was meant is not guessed.
        (
            format!("mdtest -a S3 --s3.bucket={b} -n 2 -d s3://{other}/x1"),
            other,
        ),
        (
            format!("ior -a S3 --s3.bucket={b} -w -t 1k -b 1k -o s3://{other}/f1"),
            other,
        ),
        (
            format!("xdd -op write --s3.bucket={b} -target s3://{other}/xx -reqsize 64 -numreqs 1"),
            other,
        ),
        // S3's naming rules beyond the characters.
        (
            "xdd -op write -target s3://po..b/obj -reqsize 64 -numreqs 1".into(),
            "two dots",
        ),
        (
            "mdtest -a S3 -n 2 -d s3://192.168.1.1/x".into(),
            "IP address",
        ),
        (
            "mdtest -a S3 --s3.bucket=xn--po -n 2 -d /x".into(),
            "prefix",
        ),
        (
            "mdtest -a S3 --s3.bucket=sthree-po -n 2 -d /x".into(),
            "prefix",
        ),
        (
            "xdd -op write -target s3://po-s3alias/o -reqsize 64 -numreqs 1".into(),
            "suffix",
        ),
        (
            "xdd -op write -target s3://po--ol-s3/o -reqsize 64 -numreqs 1".into(),
            "suffix",
        ),
    ] {
        let o = cmd(s, &line)
            .env("AWS_ENDPOINT_URL", proxy.endpoint())
            .output()
            .unwrap();
        let err = stderr(&o);
        let short: String = line.chars().take(120).collect();
        assert_eq!(o.status.code(), Some(2), "{short}: {err}");
        assert!(err.contains(says), "{short}: {err}");
        if says == other {
            assert!(err.contains(b), "{short}: {err}");
        }
        assert_eq!(proxy.requests(), 0, "{short}: requests were sent");
    }
    assert!(keys(s, b).is_empty() && keys(s, other).is_empty());
}
