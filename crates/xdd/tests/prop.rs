//! Property tests of XDD's option table: any command line built from its
//! options (names and aliases, any case) and hostile values parses,
//! validates and plans, or is refused, without a panic; nothing is created.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_xdd::options::OPTIONS;
use iolab_xdd::parse::{parse_os, Parsed};
use proptest::prelude::*;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Every option word: `-name`, `-alias`, and a few in upper case.
fn spellings() -> Vec<String> {
    let mut v = Vec::new();
    for o in OPTIONS {
        v.push(format!("-{}", o.name));
        v.push(format!("-{}", o.name.to_ascii_uppercase()));
        v.extend(o.aliases.iter().map(|a| format!("-{a}")));
        if let Some(c) = o.short {
            v.push(format!("-{c}"));
        }
    }
    v
}

/// Values and sub-words a user or an attacker might give.
fn value() -> impl Strategy<Value = OsString> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "2",
            "-1",
            "4",
            "1024",
            "4294967296",
            "18446744073709551615",
            "99999999999999999999999",
            "1e300",
            "1e-300",
            "NaN",
            "inf",
            "",
            "abc",
            "1k",
            "1m",
            "1g",
            "1t",
            "read",
            "write",
            "noop",
            "target",
            "op",
            "ops",
            "bw",
            "percent",
            "mbytes",
            "wait",
            "complete",
            "size",
            "random",
            "sequenced",
            "null",
            "f",
        ])
        .prop_map(OsString::from),
        any::<u64>().prop_map(|n| OsString::from(n.to_string())),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(OsString::from_vec),
    ]
}

fn word(options: Vec<String>) -> impl Strategy<Value = OsString> {
    (prop::sample::select(options), value(), any::<bool>()).prop_map(|(o, v, opt)| {
        if opt {
            OsString::from(o)
        } else {
            v
        }
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
        words in proptest::collection::vec(word(spellings()), 0..14),
    ) {
        let scratch = std::env::temp_dir().join(format!("iolab-xdd-prop-{}", std::process::id()));
        let mut argv: Vec<OsString> = vec!["-target".into(), scratch.join("f").into()];
        argv.extend(words);
        if let Ok(Parsed::Run(cfg)) = parse_os(&argv) {
            let _ = iolab_xdd::plan::plan(&cfg);
        }
        prop_assert!(!scratch.exists(), "parsing created {}", scratch.display());
    }
}
