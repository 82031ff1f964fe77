//! Acceptance or refusal across IOR's option list, against IOR 4.1 built
//! from hpc/ior (5fcf0ba): `tests/data/ior_options.tsv` records, for each
//! case, what IOR did (measured with scripts/ior-options.sh, which
//! re-measures it) and what iolab ior does; the two agree but where the
//! table says why not. This test runs iolab on every case, as the
//! script does, and checks iolab's column.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::Scratch;
use std::process::Command;

const TABLE: &str = include_str!("data/ior_options.tsv");

struct Case<'a> {
    args: &'a str,
    ior: &'a str,
    iolab: &'a str,
    why: &'a str,
}

fn cases() -> Vec<Case<'static>> {
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Case {
                args: f[0],
                ior: f[1],
                iolab: f[2],
                why: f.get(3).copied().unwrap_or(""),
            }
        })
        .collect()
}

/// The table itself: IOR's whole option list, and a reason for every
/// difference.
#[test]
fn the_table_covers_ior_s_options_and_explains_each_difference() {
    let all = cases();
    assert!(all.len() >= 100, "{}", all.len());
    for c in &all {
        assert!(matches!(c.ior, "accept" | "refuse") && matches!(c.iolab, "accept" | "refuse"));
        if c.ior != c.iolab {
            assert!(
                !c.why.is_empty(),
                "{}: a difference needs its reason",
                c.args
            );
        }
    }
    // Every letter IOR 4.1's -h lists, and its long options, appear.
    for opt in [
        "-a",
        "-A",
        "-b",
        "-c",
        "-C",
        "-d",
        "-D",
        "-e",
        "-E",
        "-f",
        "-F",
        "-g",
        "-G",
        "-h",
        "-i",
        "-j",
        "-k",
        "-K",
        "-l",
        "-m",
        "-M",
        "-N",
        "-o",
        "-O",
        "-Q",
        "-r",
        "-R",
        "-s",
        "-t",
        "-T",
        "-u",
        "-v",
        "-w",
        "-W",
        "-x",
        "-X",
        "-y",
        "-Y",
        "-z",
        "-Z",
        "--dataPacketType",
        "--randomPrefill",
        "--random-offset-seed",
        "--warningAsErrors",
        "--dryRun",
        "--posix.odirect",
        "--posix.rangelocks",
    ] {
        assert!(
            all.iter().any(|c| c
                .args
                .split_whitespace()
                .any(|w| w == opt || w.starts_with(&format!("{opt}=")))),
            "{opt} is not in the table"
        );
    }
}

/// Runs iolab ior on each case as scripts/ior-options.sh does.
#[test]
fn iolab_accepts_and_refuses_as_the_table_says() {
    let s = Scratch::new("ior-options");
    let mut wrong = Vec::new();
    for (i, c) in cases().iter().enumerate() {
        let d = s.path(&format!("run{i}"));
        std::fs::create_dir(&d).unwrap();
        let dir = d.display().to_string();
        std::fs::write(
            d.join("script"),
            format!("IOR START\n  api=POSIX\n  blockSize=256k\n  transferSize=64k\n  testFile={dir}/sf\nRUN\n  segmentCount=2\nRUN\nIOR STOP\n"),
        )
        .unwrap();
        let args: Vec<String> = c
            .args
            .split_whitespace()
            .map(|w| {
                w.replace("SCRIPT", &format!("{dir}/script"))
                    .replace("FILE", &format!("{dir}/other"))
                    .replace("SW", &format!("{dir}/sw"))
                    .replace("SUM", &format!("{dir}/sum"))
                    .replace("RANK", &format!("{dir}/rank.csv"))
                    .replace("PEROP", &format!("{dir}/perop"))
            })
            .collect();
        let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["ior", "-o", &format!("{dir}/f"), "-b", "256k", "-t", "64k"])
            .args(&args)
            .args(["--tasks", "2"])
            .env("CI", "1")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_ENDPOINT_URL_S3")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .output()
            .unwrap();
        let got = if o.status.success() {
            "accept"
        } else {
            "refuse"
        };
        if got != c.iolab {
            wrong.push(format!(
                "{}: iolab {got} ({:?}), the table says {}: {}",
                c.args,
                o.status.code(),
                c.iolab,
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        let _ = std::fs::remove_dir_all(&d);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
