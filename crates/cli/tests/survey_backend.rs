//! `iolab survey` through the storage backend: what the surveys write on a
//! file target, read back (unique, incompressible blocks), and the
//! surveys on the null backend and on a real S3 server (SeaweedFS on
//! loopback, crates/testkit/src/s3.rs), each backend asked by what it can
//! do: a survey it cannot run is refused with exit 2 before anything is
//! created.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{skip_or_fail, stderr, stdout, Scratch};
use iolab_testkit::s3::S3Server;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::Output;

fn survey(words: &[&str]) -> Output {
    survey_with(words, &[])
}

fn survey_with(words: &[&str], env: &[(&'static str, String)]) -> Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    common::survey(words, &env)
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

fn refused(o: &Output, what: &str, words: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
    let e = stderr(o);
    for w in words {
        assert!(e.contains(w), "{what}: {w:?} not in {e}");
    }
}

/// zlib's output size over the input's.
fn zlib_ratio(data: &[u8]) -> f64 {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(data).unwrap();
    z.finish().unwrap().len() as f64 / data.len() as f64
}

/// Distinct 4 KiB blocks over all blocks.
fn distinct_share(data: &[u8]) -> f64 {
    let blocks = data.chunks(4096).count();
    data.chunks(4096).collect::<HashSet<_>>().len() as f64 / blocks as f64
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn disk_survey_writes_blocks_that_neither_compress_nor_repeat() {
    let sc = Scratch::new("survey-data-unique");
    let f = sc.path("dev");
    // 1 MiB the survey leaves alone, then its 8 MiB.
    std::fs::write(&f, vec![0u8; 9 << 20]).unwrap();
    let rslt = s(&sc.path("r"));
    let o = survey(&[
        "disk",
        &s(&f),
        "--size",
        "8",
        "--rszlo",
        "4",
        "--rszhi",
        "64",
        "--crglo",
        "1",
        "--crghi",
        "2",
        "--thrlo",
        "1",
        "--thrhi",
        "4",
        "--actions",
        "write",
        "--rslt",
        &rslt,
    ]);
    ok(&o, "survey disk on a file");
    let data = std::fs::read(&f).unwrap();
    assert!(
        data[..1 << 20].iter().all(|&b| b == 0),
        "the first MiB is not the survey's"
    );
    let written = &data[1 << 20..];
    assert_eq!(
        distinct_share(written),
        1.0,
        "every 4 KiB block the survey wrote is different"
    );
    let r = zlib_ratio(written);
    assert!(r > 0.99, "zlib shrinks what the survey wrote to {r:.3}");
}

#[test]
fn surveys_run_on_the_null_backend_and_touch_no_file() {
    let sc = Scratch::new("survey-null");
    // Names that are nowhere: the null backend keeps nothing.
    let nowhere = s(&sc.path("nowhere/t"));
    let rslt = |n: &str| s(&sc.path(n));
    let runs: Vec<(&str, Vec<String>)> = vec![
        (
            "disk",
            vec![
                "disk", &nowhere, "--size", "4", "--rszhi", "1024", "--crghi", "2", "--thrhi", "2",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        ),
        (
            "obdfilter",
            vec![
                "obdfilter",
                &nowhere,
                "--size",
                "4",
                "--rszlo",
                "64",
                "--rszhi",
                "64",
                "--nobjhi",
                "2",
                "--thrhi",
                "4",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        ),
        (
            "mds",
            vec![
                "mds",
                &nowhere,
                "--thrlo",
                "1",
                "--thrhi",
                "2",
                "--file-count",
                "20",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        ),
        (
            "ost",
            vec!["ost", &nowhere, "-s", "4"]
                .into_iter()
                .map(String::from)
                .collect(),
        ),
    ];
    for (name, mut words) in runs {
        let json = rslt(&format!("{name}.json"));
        words.extend(
            ["--backend", "null", "--rslt", &rslt(name), "--json", &json].map(String::from),
        );
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = survey(&w);
        ok(&o, &format!("survey {name} --backend null"));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(doc["outcome"]["status"], "completed", "{name}: {doc}");
        assert!(!sc.path("nowhere").exists(), "{name} made a file");
    }
}

#[test]
fn an_unknown_backend_is_refused_before_anything_is_created() {
    let sc = Scratch::new("survey-nosuch");
    let rslt = s(&sc.path("r"));
    let o = survey(&["ost", &s(&sc.root), "--backend", "nosuch", "--rslt", &rslt]);
    refused(&o, "--backend nosuch", &["backend", "nosuch", "posix"]);
    assert!(!sc.path("r.summary").exists());
}

#[test]
fn network_cases_refuse_a_backend_they_would_not_use() {
    let o = survey(&[
        "obdfilter",
        "--case",
        "network",
        "--backend",
        "null",
        "--rslt",
        "/nonexistent/r",
    ]);
    refused(
        &o,
        "case=network --backend",
        &["--backend", "backend", "echo agents"],
    );
}

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

#[test]
fn on_s3_the_target_survey_runs_and_the_others_say_what_s3_cannot_do() {
    let Some(srv) = server("surveys_on_s3") else {
        return;
    };
    let b = "survey-s3";
    srv.make_bucket(b).unwrap();
    srv.put(b, "keep", b"not the survey's").unwrap();
    let sc = Scratch::new("survey-s3");
    let rslt = s(&sc.path("ost"));
    let target = format!("s3://{b}");
    let env = srv.env();
    let o = survey_with(
        &[
            "ost",
            &target,
            "-s",
            "1",
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    ok(&o, "survey ost on s3");
    assert!(stdout(&o).contains("MB/s"), "{}", stdout(&o));
    let keys = srv.keys(b).unwrap();
    assert!(
        keys.iter().all(|k| !k.contains("iolab-ost-survey")),
        "the survey's object stays: {keys:?}"
    );
    assert!(keys.iter().any(|k| k == "keep"), "{keys:?}");
    let rslt = s(&sc.path("no"));
    let o = survey_with(
        &[
            "disk",
            &format!("s3://{b}/keep"),
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    refused(&o, "survey disk on s3", &["s3 backend", "--backend posix"]);
    let o = survey_with(&["mds", &target, "--backend", "s3", "--rslt", &rslt], &env);
    refused(&o, "survey mds on s3", &["s3 backend", "setxattr"]);
    let o = survey_with(
        &[
            "obdfilter",
            &target,
            "--nobjhi",
            "1",
            "--thrhi",
            "2",
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    refused(&o, "survey obdfilter on s3", &["s3 backend", "thrhi"]);
    // Records of 1 MiB, each a part of a multipart upload of 5 MiB least.
    let o = survey_with(
        &[
            "obdfilter",
            &target,
            "--size",
            "4",
            "--rszlo",
            "1024",
            "--rszhi",
            "1024",
            "--nobjhi",
            "1",
            "--thrhi",
            "1",
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    refused(
        &o,
        "survey obdfilter on s3, small parts",
        &["s3 backend", "rszlo", "5120"],
    );
    let o = survey_with(
        &[
            "ost",
            &target,
            "-s",
            "2",
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    refused(&o, "survey ost -s 2 on s3", &["s3 backend", "-s 1"]);
    assert!(!sc.path("no.summary").exists(), "a refused survey wrote");
    // Where the pattern fits (one writer per object, parts of 5 MiB), the
    // object survey runs on S3 and removes its objects.
    let rslt = s(&sc.path("obd"));
    let o = survey_with(
        &[
            "obdfilter",
            &target,
            "--size",
            "20",
            "--rszlo",
            "5120",
            "--rszhi",
            "5120",
            "--nobjlo",
            "2",
            "--nobjhi",
            "2",
            "--thrlo",
            "2",
            "--thrhi",
            "2",
            "--tests",
            "write rewrite read",
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    ok(&o, "survey obdfilter on s3");
    assert!(stdout(&o).contains("rewrite"), "{}", stdout(&o));
    assert_eq!(
        srv.keys(b).unwrap(),
        vec!["keep".to_string()],
        "the object survey left objects"
    );
    let rslt = s(&sc.path("mds"));
    let o = survey_with(
        &[
            "mds",
            &target,
            "--thrlo",
            "1",
            "--thrhi",
            "2",
            "--file-count",
            "20",
            "--tests",
            "create lookup md_getattr destroy",
            "--backend",
            "s3",
            "--rslt",
            &rslt,
        ],
        &env,
    );
    ok(&o, "survey mds on s3 without setxattr");
    assert!(stdout(&o).contains("md_getattr"), "{}", stdout(&o));
    assert_eq!(
        srv.keys(b).unwrap(),
        vec!["keep".to_string()],
        "the metadata survey left objects"
    );
}
