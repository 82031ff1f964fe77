//! Both front ends over one small table.

use crate::*;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

#[derive(Default, Debug)]
struct Raw {
    op: Vec<(Option<usize>, String)>,
    items: u64,
    flags: String,
    seed: Option<Option<u64>>,
    dir: Option<OsString>,
    tasks: u64,
    help: bool,
}

macro_rules! flag {
    ($c:expr) => {
        Entry {
            name: "",
            short: Some($c),
            aliases: &[],
            arity: Arity::Flag,
            scoped: false,
            args: "",
            help: "a flag",
            apply: |c, r: &mut Raw, _| {
                r.flags.push_str(c.opt);
                Ok(())
            },
            example: "",
            check: Check::Action,
        }
    };
}

static TABLE: &[Entry<Raw, Raw>] = &[
    Entry {
        name: "op",
        short: None,
        aliases: &["operation"],
        arity: Arity::Words,
        scoped: true,
        args: "read|write",
        help: "the operation",
        apply: |c, r, t| {
            let k = c.keyword("operation", &["read", "write"])?;
            r.op.push((t, k));
            Ok(())
        },
        example: "-op read",
        check: Check::Ok(|r| r.op.len() == 1),
    },
    Entry {
        name: "",
        short: Some('n'),
        aliases: &[],
        arity: Arity::Number,
        scoped: false,
        args: "N",
        help: "items",
        apply: |c, r, _| {
            r.items = c.count("items", 0, 1000)?;
            Ok(())
        },
        example: "-n 10",
        check: Check::Ok(|r| r.items == 10),
    },
    Entry {
        name: "",
        short: Some('d'),
        aliases: &[],
        arity: Arity::Value,
        scoped: false,
        args: "DIR",
        help: "directory",
        apply: |c, r, _| {
            r.dir = Some(c.path("directory")?);
            Ok(())
        },
        example: "-d x",
        check: Check::Ok(|r| r.dir.is_some()),
    },
    Entry {
        name: "",
        short: Some('R'),
        aliases: &[],
        arity: Arity::Attached,
        scoped: false,
        args: "[SEED]",
        help: "random",
        apply: |c, r, _| {
            r.seed = Some(if c.has_value() {
                Some(c.u64("seed")?)
            } else {
                None
            });
            Ok(())
        },
        example: "-R4",
        check: Check::Ok(|r| r.seed == Some(Some(4))),
    },
    Entry {
        name: "tasks",
        short: None,
        aliases: &[],
        arity: Arity::Value,
        scoped: false,
        args: "N",
        help: "tasks",
        apply: |c, r, _| {
            r.tasks = c.count("tasks", 1, 64)?;
            Ok(())
        },
        example: "--tasks 100",
        check: Check::Err("64"),
    },
    Entry {
        name: "help",
        short: Some('h'),
        aliases: &[],
        arity: Arity::Flag,
        scoped: false,
        args: "",
        help: "help",
        apply: |_, r, _| {
            r.help = true;
            Ok(())
        },
        example: "-h",
        check: Check::Action,
    },
    flag!('F'),
    flag!('C'),
];

fn getopt(line: &str) -> Result<Raw, OptError> {
    let mut r = Raw::default();
    getopt::parse(TABLE, &words(line), &mut r)?;
    Ok(r)
}

fn dash(line: &str) -> Result<Raw, OptError> {
    let mut r = Raw::default();
    dash::parse(TABLE, &words(line), &mut r, |r| r.help)?;
    Ok(r)
}

#[test]
fn getopt_values_attached_separate_equals_and_long() {
    for line in ["-n 10", "-n10", "-n=10"] {
        assert_eq!(getopt(line).unwrap().items, 10, "{line}");
    }
    assert_eq!(getopt("--tasks 8").unwrap().tasks, 8);
    assert_eq!(getopt("--tasks=8").unwrap().tasks, 8);
    assert_eq!(getopt("-d -odd").unwrap().dir, Some("-odd".into()));
}

#[test]
fn getopt_groups_and_optional_attached_value() {
    let r = getopt("-FCn5").unwrap();
    assert_eq!((r.flags.as_str(), r.items), ("FC", 5));
    assert_eq!(getopt("-R").unwrap().seed, Some(None));
    assert_eq!(getopt("-R7 -n 1").unwrap().seed, Some(Some(7)));
    assert_eq!(getopt("-R -n 1").unwrap().items, 1);
}

#[test]
fn getopt_number_before_an_option_is_ignored_with_a_warning() {
    let mut r = Raw::default();
    let w = getopt::parse(TABLE, &words("-n -F"), &mut r).unwrap();
    assert_eq!((r.items, r.flags.as_str()), (0, "F"));
    assert!(w[0].contains("-n"));
}

#[test]
fn getopt_errors_name_the_option() {
    for (line, flag) in [
        ("-q", "-q"),
        ("-n", "-n"),
        ("-n abc", "-n"),
        ("-n 2000", "-n"),
        ("--nope", "--nope"),
        ("--tasks", "--tasks"),
        ("--tasks 0", "--tasks"),
        ("-F=1", "-="),
        ("--help=1", "--help"),
    ] {
        let e = getopt(line).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("{flag}: ")),
            "{line}: {e}"
        );
    }
    assert!(getopt("stray").unwrap_err().to_string().contains("stray"));
}

#[test]
fn dash_scopes_aliases_and_case() {
    let r = dash("-op read -OP target 1 write --operation write").unwrap();
    assert_eq!(
        r.op,
        [
            (None, "read".into()),
            (Some(1), "write".into()),
            (None, "write".into())
        ]
    );
    assert!(dash("-op")
        .unwrap_err()
        .to_string()
        .starts_with("-op: missing"));
    assert!(dash("read").unwrap_err().message.contains("not an option"));
    assert!(dash("-bogus").unwrap_err().message.contains("unknown"));
    assert!(dash("-help -bogus").unwrap().help, "parsing stops at help");
}

#[test]
fn non_utf8_is_the_same_in_both_front_ends() {
    let bad = OsString::from_vec(vec![b'x', 0xfe]);
    // As a path: accepted as is.
    let mut r = Raw::default();
    getopt::parse(TABLE, &[OsString::from("-d"), bad.clone()], &mut r).unwrap();
    assert_eq!(r.dir, Some(bad.clone()));
    // As text: an error naming the option, in either style.
    let e = getopt::parse(
        TABLE,
        &[OsString::from("-n"), bad.clone()],
        &mut Raw::default(),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("-n: ") && e.message.contains("UTF-8"));
    let e = dash::parse(
        TABLE,
        &[OsString::from("-op"), bad.clone()],
        &mut Raw::default(),
        |_| false,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("-op: ") && e.message.contains("UTF-8"));
    // As an option name: a general error quoting the bytes.
    let e = dash::parse(TABLE, &[bad], &mut Raw::default(), |_| false).unwrap_err();
    assert!(e.message.contains("UTF-8"));
}

#[test]
fn help_is_generated_from_the_table() {
    let h = getopt::help(TABLE);
    assert!(h.contains("-h, --help") && h.contains("-R[SEED]") && h.contains("--tasks N"));
    let one = dash::help_for(TABLE, "xdd", "OPERATION").unwrap();
    assert!(one.starts_with("-op [target <target#>] read|write"));
    assert!(one.contains("also: -operation") && one.contains("example: xdd -op read"));
    let full = dash::full_help(TABLE, "xdd", "Usage: xdd");
    assert!(full.contains("-tasks"));
    // --tasks 100's example is a refusal: help never shows it as one to
    // follow.
    assert!(!full.contains("--tasks 100"), "{full}");
    assert!(dash::short_help(TABLE, "Usage", "end").ends_with("end\n"));
}

#[test]
fn examples_are_checked_and_names_unique() {
    let verify = |e: &Entry<Raw, Raw>| {
        let got = match e.check {
            Check::Action => return,
            _ if e.arity == Arity::Words => dash(e.example).map(Example::Run),
            _ => getopt(e.example).map(Example::Run),
        };
        e.verify(got).unwrap();
    };
    TABLE.iter().for_each(verify);
    assert_eq!(duplicate(TABLE), None);
    let wrong = &TABLE[1];
    assert!(wrong.verify(Ok(Example::Run(Raw::default()))).is_err());
}

/// What a command line gives, word by word: a sweep builds a point's
/// command line from parts and refuses an option two parts set (the
/// later silently overrode the earlier: `-FCu` then `-u`, `-n4` then
/// `-n 1`).
#[test]
fn traced_options_name_the_word_and_the_option_in_any_spelling() {
    let given = |line: &str| -> Vec<(usize, String)> {
        let (_, g) = getopt::parse_traced(TABLE, &words(line), &mut Raw::default()).unwrap();
        g.into_iter().map(|g| (g.word, g.option)).collect()
    };
    let o = |w: usize, s: &str| (w, s.to_string());
    assert_eq!(
        given("-FCn4 -d x --tasks=2 -n=1 -R -h"),
        [
            o(0, "-F"),
            o(0, "-C"),
            o(0, "-n"),
            o(1, "-d"),
            o(3, "--tasks"),
            o(4, "-n"),
            o(5, "-R"),
            o(6, "-h")
        ]
    );
    assert_eq!(given("--help -n 3"), [o(0, "-h"), o(1, "-n")]);
    // A number ignored for want of a value sets nothing.
    assert_eq!(given("-n -F"), [o(1, "-F")]);
    let mut r = Raw::default();
    let d = dash::parse_traced(TABLE, &words("-op read --OP target 2 write"), &mut r, |r| {
        r.help
    })
    .unwrap();
    let d: Vec<(usize, String)> = d.into_iter().map(|g| (g.word, g.option)).collect();
    assert_eq!(d, [o(0, "-op"), o(2, "-op target 2")]);
}
