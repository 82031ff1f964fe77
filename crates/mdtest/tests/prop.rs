//! Property tests of mdtest's option table: any command line built from
//! its options (short and long) and hostile values (huge, negative, not
//! numbers, not UTF-8) parses, validates and plans, or is refused, without
//! a panic; and nothing is created by it.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_mdtest::args::{parse_os, OPTIONS};
use iolab_mdtest::{Config, Plan};
use proptest::prelude::*;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Every spelling of every option: `-c` and `--name`.
fn spellings() -> Vec<String> {
    let mut v = Vec::new();
    for o in OPTIONS {
        if let Some(c) = o.short {
            v.push(format!("-{c}"));
        }
        if !o.name.is_empty() {
            v.push(format!("--{}", o.name));
        }
    }
    v
}

/// Values a user or an attacker might give.
fn value() -> impl Strategy<Value = OsString> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "2",
            "-1",
            "3",
            "64",
            "4096",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999",
            "1e300",
            "NaN",
            "",
            "abc",
            "1k",
            "1m",
            "1g",
            "0x10",
            "POSIX",
            "S3",
            "dummy",
            "--",
            "-",
            "=",
        ])
        .prop_map(OsString::from),
        any::<u64>().prop_map(|n| OsString::from(n.to_string())),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(OsString::from_vec),
    ]
}

/// One word of a command line: an option (sometimes with `=value`), or a value.
fn word(options: Vec<String>) -> impl Strategy<Value = OsString> {
    (prop::sample::select(options), value(), 0u8..4).prop_map(|(o, v, how)| match how {
        0 => v,
        1 => {
            let mut w = OsString::from(format!("{o}="));
            w.push(&v);
            w
        }
        _ => OsString::from(o),
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        // A failing case is printed, not saved beside the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_command_line_is_run_or_refused_without_a_panic(
        words in proptest::collection::vec(word(spellings()), 0..12),
    ) {
        let scratch = std::env::temp_dir().join(format!("iolab-mdtest-prop-{}", std::process::id()));
        let mut argv = words.clone();
        argv.push("-d".into());
        argv.push(scratch.join("never").into());
        if let Ok(raw) = parse_os(&argv) {
            if let Ok(cfg) = Config::from_raw(&raw) {
                let _ = Plan::new(&cfg);
            }
        }
        prop_assert!(!scratch.exists(), "parsing created {}", scratch.display());
    }
}
