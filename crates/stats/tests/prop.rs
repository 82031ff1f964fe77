//! Property tests of what `iolab stats` reads from users: config.sh (any
//! text, and lines assembled from the kit's variables with hostile
//! values and `$NAME` expansions), the TOML form, `local,N`, and profile
//! tarballs with hostile member names and links. No panic, no hang; a
//! refused tarball creates nothing.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_stats::archive::{self, ArchiveError};
use iolab_stats::config::{self, MAX_INTERVAL_S};
use iolab_stats::StatsError;
use proptest::prelude::*;
use std::io::Write;
use std::path::PathBuf;

const VARS: &[&str] = &[
    "VMSTAT_INTERVAL",
    "SERVICE_INTERVAL",
    "SDIO_INTERVAL",
    "MBALLOC_INTERVAL",
    "IO_INTERVAL",
    "JBD_INTERVAL",
    "CLIENT_INTERVAL",
    "BRW_INTERVAL",
    "DISK_INTERVAL",
    "CPU_INTERVAL",
    "NET_INTERVAL",
    "MEMINFO_INTERVAL",
    "STATFS_INTERVAL",
    "STATFS_PATHS",
    "MDS_LIST",
    "OST_LIST",
    "CLIENT_LIST",
    "TMP",
    "RSH",
    "IOLAB",
    "SCRIPT",
    "UNKNOWN",
];

fn sh_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "86400",
            "86401",
            "18446744073709551615",
            "99999999999999999999",
            "1e30",
            "",
            "\"\"",
            "\"2\"",
            "'3'",
            "abc",
            "/tmp",
            "n1 n2",
            "\"n1,n2\"",
            "$TMP",
            "$$",
            "$",
            "${X}",
            "`id`",
            "$(id)",
            "\"unterminated",
            "a#b",
            "x=y",
        ])
        .prop_map(String::from),
        any::<u64>().prop_map(|n| n.to_string()),
        "[ -~]{0,12}",
    ]
}

fn sh_line() -> impl Strategy<Value = String> {
    (prop::sample::select(VARS.to_vec()), sh_value(), 0u8..5).prop_map(|(n, v, how)| match how {
        0 => format!("export {n}={v}"),
        1 => format!("# {n}={v}"),
        2 => format!("{n}={v} # note"),
        _ => format!("{n}={v}"),
    })
}

/// Every interval of a config that passed is within the bound.
fn bounded(cfg: &config::Config) -> bool {
    cfg.spec.intervals.values().all(|s| *s <= MAX_INTERVAL_S)
}

/// A tar with one member whose name, type and link target are given as
/// raw bytes (the tar crate's own path checks are bypassed, as a hostile
/// archiver would), gzip'd.
fn hostile_tgz(members: &[(Vec<u8>, u8, Vec<u8>)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, link) in members {
        let mut h = tar::Header::new_old();
        let old = h.as_old_mut();
        let n = name.len().min(99);
        old.name[..n].copy_from_slice(&name[..n]);
        let l = link.len().min(99);
        old.linkname[..l].copy_from_slice(&link[..l]);
        let kind = [b'0', b'2', b'1', b'5'][*kind as usize % 4];
        h.set_entry_type(tar::EntryType::new(kind));
        let data: &[u8] = if kind == b'0' {
            b"{\"unix_ns\":1,\"mono_ns\":1,\"rows\":[]}\n"
        } else {
            b""
        };
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn name_part() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            "p",
            "n",
            "..",
            ".",
            "",
            "cpu.jsonl",
            "disk.jsonl",
            "notes.txt",
            "failed-nodes.txt"
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 1..4),
    ]
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    (any::<bool>(), proptest::collection::vec(name_part(), 1..5)).prop_map(|(abs, parts)| {
        let mut v = if abs { b"/".to_vec() } else { Vec::new() };
        v.extend(parts.join(&b'/'));
        v
    })
}

/// A name GNU tar would refuse to extract as given: absolute, or any `..`.
fn climbs(name: &[u8]) -> bool {
    name.first() == Some(&b'/') || name.split(|b| *b == b'/').any(|p| p == b"..")
}

/// A directory of this test's own (tests run side by side).
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iolab-stats-prop-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        // A failing case is printed, not saved beside the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_config_sh_text_parses_or_is_refused(t in "\\PC{0,400}") {
        if let Ok(cfg) = config::parse_sh("c.sh", &t) {
            let _ = config::check("c.sh", &cfg);
            prop_assert!(bounded(&cfg));
        }
        if let Ok(cfg) = config::parse_toml("c.toml", &t) {
            prop_assert!(bounded(&cfg));
        }
    }

    #[test]
    fn assembled_config_sh_parses_or_is_refused(lines in proptest::collection::vec(sh_line(), 0..20)) {
        if let Ok(cfg) = config::parse_sh("c.sh", &lines.join("\n")) {
            let _ = config::check("c.sh", &cfg);
            prop_assert!(bounded(&cfg));
        }
    }

    #[test]
    fn local_specs_parse_or_are_refused(rest in "[ -~]{0,24}") {
        if let Ok(cfg) = config::load(&format!("local{rest}")) {
            prop_assert!(bounded(&cfg));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        // A failing case is printed, not saved beside the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn hostile_tarballs_are_read_or_refused_and_create_nothing(
        members in proptest::collection::vec((name(), any::<u8>(), name()), 1..5),
    ) {
        let dir = scratch("hostile");
        let tgz = dir.join("t.tgz");
        std::fs::write(&tgz, hostile_tgz(&members)).unwrap();
        let out = dir.join("t-csv");
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_file(dir.join("t-csv.tgz"));
        // A tar header's name ends at its first NUL (and at 99 bytes here):
        // that is the name a reader sees.
        let hostile = members.iter().any(|(n, _, _)| {
            let n = &n[..n.len().min(99)];
            climbs(&n[..n.iter().position(|&b| b == 0).unwrap_or(n.len())])
        });
        match archive::read_tgz(&tgz) {
            Ok(_) => prop_assert!(!hostile, "a climbing member was accepted: {members:?}"),
            Err(ArchiveError::Unsafe { .. }) => {
                let r = iolab_stats::analyse_tarball(&tgz, &out);
                let refused = matches!(r, Err(StatsError::Archive(ArchiveError::Unsafe { .. })));
                prop_assert!(refused, "analyse did not refuse it");
                prop_assert!(!out.exists(), "a refused tarball created {}", out.display());
            }
            Err(ArchiveError::Io(_)) => {}
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn any_bytes_as_a_tarball_are_read_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2048), gz in any::<bool>()) {
        let dir = scratch("bytes");
        let tgz = dir.join("r.tgz");
        let data = if gz {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&bytes).unwrap();
            e.finish().unwrap()
        } else {
            bytes
        };
        std::fs::write(&tgz, data).unwrap();
        let _ = archive::read_tgz(&tgz);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn doubling_expansions_do_not_blow_up() {
    // A=x, B=$A$A, C=$B$B, ...: 2^40 bytes if expanded blindly.
    let mut text = String::from("V0=xxxxxxxx\n");
    for i in 1..40 {
        text += &format!("V{i}=$V{}$V{}\n", i - 1, i - 1);
    }
    text += "TMP=$V39\nCPU_INTERVAL=1\n";
    let r = config::parse_sh("c.sh", &text);
    assert!(
        r.is_err(),
        "a {} byte TMP was accepted",
        r.map(|c| c.tmp.as_os_str().len()).unwrap_or(0)
    );
}
