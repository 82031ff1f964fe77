//! Property tests of sweep plans: any TOML text, and plans assembled from
//! hostile parts (empty or odd launchers, unknown placeholders, huge,
//! negative or non-finite numbers, mixed axis values, many axes), parse
//! and expand into points and command lines, or are refused, without a
//! panic or a hang.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_sweep::plan::{Given, Plan, ToolCheck, MAX_POINTS};
use proptest::prelude::*;

/// Accepts every tool command line: the tools' own parsers have their
/// own property tests.
struct AcceptAll;

impl ToolCheck for AcceptAll {
    fn check(&self, _tool: &str, _args: &[String], _alone: bool) -> Result<Vec<Given>, String> {
        Ok(Vec::new())
    }
}

fn text() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        " ",
        "x",
        "{iolab}",
        "mpirun -n {ranks} {iolab}",
        "{ranks}",
        "{point}",
        "{repeat}",
        "{nope}",
        "{",
        "}",
        "{{",
        "}}",
        "-F -n 4 -d /tmp/never/{point}",
        "--json x",
        "--store s",
        "\u{0}",
        "ä",
        "a b c",
    ])
    .prop_map(String::from)
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "3",
            "1000",
            "1001",
            "4294967296",
            "18446744073709551615",
            "9223372036854775807",
            "-9223372036854775808",
            "1e300",
            "-1e300",
            "nan",
            "inf",
            "-inf",
            "0.5",
            "\"3\"",
            "true",
            "[]",
        ])
        .prop_map(String::from),
        any::<i64>().prop_map(|n| n.to_string()),
    ]
}

fn axis_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "true", "false", "0", "1", "2", "-3", "1.5", "\"a\"", "\"\"", "\"{x}\""
        ])
        .prop_map(String::from),
    ]
}

/// A plan put together from parts, each present or not.
fn plan_text() -> impl Strategy<Value = String> {
    let axis = (
        prop::sample::select(vec![
            "tasks", "ranks", "dir", "x", "", "point", "repeat", "iolab",
        ]),
        proptest::option::of(prop::sample::select(vec![
            "--tasks", "-n", "-u", "", "-F", "--json",
        ])),
        proptest::collection::vec(axis_value(), 0..12),
        proptest::option::of(proptest::collection::vec(text(), 0..4)),
    );
    (
        prop::sample::select(vec!["mdtest", "xdd", "lst", "survey", "fio", ""]),
        text(),
        proptest::option::of(number()),
        proptest::option::of(text()),
        proptest::option::of(number()),
        proptest::collection::vec(axis, 0..7),
        proptest::option::of((prop::sample::select(vec!["-n", "-w"]), number())),
    )
        .prop_map(|(tool, args, repeats, launcher, timeout, axes, split)| {
            let mut t = format!("label = \"p\"\ntool = \"{tool}\"\nargs = {args:?}\n");
            if let Some(r) = repeats {
                t += &format!("repeats = {r}\n");
            }
            if let Some(l) = launcher {
                t += &format!("launcher = {l:?}\n");
            }
            if let Some(s) = timeout {
                t += &format!("timeout_s = {s}\n");
            }
            let names: Vec<&str> = axes.iter().map(|a| a.0).collect();
            for (name, option, values, labels) in &axes {
                t += &format!("[[axes]]\nname = {name:?}\n");
                if let Some(o) = option {
                    t += &format!("option = {o:?}\n");
                }
                t += &format!("values = [{}]\n", values.join(", "));
                if let Some(l) = labels {
                    t += &format!("labels = {l:?}\n");
                }
            }
            if let Some((option, total)) = split {
                t += &format!("[split]\noption = {option:?}\ntotal = {total}\nover = {names:?}\n");
            }
            t
        })
}

fn expand(text: &str) {
    if let Ok(plan) = Plan::parse(text) {
        let points = plan.points();
        assert!(points.len() <= MAX_POINTS);
        for p in points.iter().take(64) {
            let _ = plan.command("iolab", p, 1, "run.json");
        }
        let _ = plan.check_points(&AcceptAll);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        // A failing case is printed, not saved beside the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_text_is_a_plan_or_refused(t in "\\PC{0,300}") {
        expand(&t);
    }

    #[test]
    fn assembled_plans_expand_or_are_refused(t in plan_text()) {
        expand(&t);
    }
}
