//! mdtest's command line, read the way mdtest reads it: getopt-style short
//! options (grouped flags `-FC`, attached values `-n10` and `-n=10`,
//! `-R[seed]` with an optional attached seed) plus the long options of
//! current mdtest. Every option is one entry of [`OPTIONS`]: its letter,
//! long name, value kind, help text and the setter that stores it; the
//! help screen is generated from the same table.

use iolab_core::units::parse_size;
use std::fmt::Write as _;

/// Raw options exactly as given, before validation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawOptions {
    pub api: Option<String>,
    pub branch: Option<u64>,
    pub no_barriers: bool,
    pub collective: bool,
    pub create: bool,
    pub dirs: Option<String>,
    pub dirs_only: bool,
    pub read_bytes: u64,
    pub read: bool,
    pub first: Option<u64>,
    pub files_only: bool,
    pub lustre_layout: bool,
    pub help: bool,
    pub iterations: Option<u64>,
    pub items_per_dir: u64,
    pub mknod: bool,
    pub last: Option<u64>,
    pub leaf_only: bool,
    pub items: u64,
    pub stride: u64,
    pub pre_delay_s: u64,
    pub print_rate_and_time: bool,
    pub remove: bool,
    /// `-R` given; the inner value is its attached seed, if any.
    pub random: Option<Option<u64>>,
    pub random_seed: Option<u64>,
    pub task_stride: Option<u64>,
    pub shared_file: bool,
    pub time_unique_dir: bool,
    pub stat: bool,
    pub unique_dir: bool,
    pub verbosity: u64,
    pub write_bytes: u64,
    pub stonewall_s: u64,
    pub stonewall_file: Option<String>,
    pub verify_read: bool,
    pub fsync: bool,
    pub sync_phases: bool,
    pub depth: Option<u64>,
    pub print_time_only: bool,
    pub rename_dirs: bool,
    pub data_seed: Option<u64>,
    pub tasks: Option<u64>,
    pub json: Option<String>,
    pub csv: Option<String>,
    /// Warnings met while parsing (e.g. `-n -N 1`), shown before the run.
    pub warnings: Vec<String>,
}

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// No value.
    Flag,
    /// A value: attached (`-n10`, `-n=10`, `--json=x`) or the next word.
    Value,
    /// An optional value that must be attached (`-R7`); never the next word.
    Attached,
}

type Setter = fn(&mut RawOptions, Option<&str>) -> Result<(), String>;

/// One command-line option.
pub struct Opt {
    /// Short letter, if any.
    pub short: Option<char>,
    /// Long name without dashes, if any.
    pub long: Option<&'static str>,
    /// Value kind.
    pub arg: Arg,
    /// Value name in the help text.
    pub metavar: &'static str,
    /// One-line help.
    pub help: &'static str,
    set: Setter,
}

fn num(v: Option<&str>) -> Result<u64, String> {
    let v = v.unwrap_or_default();
    parse_size(v).map_err(|e| e.to_string())
}

macro_rules! opt {
    ($s:expr, $l:expr, $arg:ident, $mv:expr, $help:expr, $set:expr) => {
        Opt {
            short: $s,
            long: $l,
            arg: Arg::$arg,
            metavar: $mv,
            help: $help,
            set: $set,
        }
    };
}

/// Every option iolab mdtest accepts, in help order.
pub const OPTIONS: &[Opt] = &[
    opt!(
        Some('a'),
        None,
        Value,
        "API",
        "I/O backend (POSIX)",
        |o, v| {
            o.api = v.map(str::to_string);
            Ok(())
        }
    ),
    opt!(
        Some('b'),
        None,
        Value,
        "N",
        "branching factor of the directory tree [1]",
        |o, v| {
            o.branch = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        Some('B'),
        None,
        Flag,
        "",
        "no barriers between phases",
        |o, _| {
            o.no_barriers = true;
            Ok(())
        }
    ),
    opt!(
        Some('c'),
        None,
        Flag,
        "",
        "collective creates: task 0 does all creates and removes",
        |o, _| {
            o.collective = true;
            Ok(())
        }
    ),
    opt!(
        Some('C'),
        None,
        Flag,
        "",
        "only perform the create phases",
        |o, _| {
            o.create = true;
            Ok(())
        }
    ),
    opt!(
        Some('d'),
        None,
        Value,
        "DIR[@DIR...]",
        "directories to test in, given to tasks round robin [.]",
        |o, v| {
            o.dirs = v.map(str::to_string);
            Ok(())
        }
    ),
    opt!(
        Some('D'),
        None,
        Flag,
        "",
        "test directories only (no files)",
        |o, _| {
            o.dirs_only = true;
            Ok(())
        }
    ),
    opt!(
        Some('e'),
        None,
        Value,
        "BYTES",
        "bytes to read from each file [0]",
        |o, v| {
            o.read_bytes = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('E'),
        None,
        Flag,
        "",
        "only perform the read phase",
        |o, _| {
            o.read = true;
            Ok(())
        }
    ),
    opt!(
        Some('f'),
        None,
        Value,
        "N",
        "first number of tasks of a task sweep",
        |o, v| {
            o.first = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        Some('F'),
        None,
        Flag,
        "",
        "test files only (no directories)",
        |o, _| {
            o.files_only = true;
            Ok(())
        }
    ),
    opt!(
        Some('g'),
        None,
        Flag,
        "",
        "Lustre: global default directory layout (needs Lustre)",
        |o, _| {
            o.lustre_layout = true;
            Ok(())
        }
    ),
    opt!(
        Some('h'),
        Some("help"),
        Flag,
        "",
        "print this help and exit",
        |o, _| {
            o.help = true;
            Ok(())
        }
    ),
    opt!(Some('i'), None, Value, "N", "iterations [1]", |o, v| {
        o.iterations = Some(num(v)?);
        Ok(())
    }),
    opt!(
        Some('I'),
        None,
        Value,
        "N",
        "items per directory of the tree [0]",
        |o, v| {
            o.items_per_dir = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('k'),
        None,
        Flag,
        "",
        "create files with mknod (FIFOs)",
        |o, _| {
            o.mknod = true;
            Ok(())
        }
    ),
    opt!(
        Some('l'),
        None,
        Value,
        "N",
        "last number of tasks of a task sweep",
        |o, v| {
            o.last = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        Some('L'),
        None,
        Flag,
        "",
        "items only at the leaf level of the tree",
        |o, _| {
            o.leaf_only = true;
            Ok(())
        }
    ),
    opt!(
        Some('n'),
        None,
        Value,
        "N",
        "items (files and/or directories) per task [0]",
        |o, v| {
            o.items = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('N'),
        None,
        Value,
        "K",
        "task stride: phase j works on the items of task (t + j*K) [0]",
        |o, v| {
            o.stride = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('p'),
        None,
        Value,
        "SECONDS",
        "delay before each iteration's tests",
        |o, v| {
            o.pre_delay_s = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('P'),
        None,
        Flag,
        "",
        "print the rate table and the time table",
        |o, _| {
            o.print_rate_and_time = true;
            Ok(())
        }
    ),
    opt!(
        Some('r'),
        None,
        Flag,
        "",
        "only perform the remove phases",
        |o, _| {
            o.remove = true;
            Ok(())
        }
    ),
    opt!(
        Some('R'),
        None,
        Attached,
        "[SEED]",
        "random order for stat and read (seed attached: -R42)",
        |o, v| {
            o.random = Some(match v {
                Some(s) if !s.is_empty() => Some(num(Some(s))?),
                _ => None,
            });
            Ok(())
        }
    ),
    opt!(
        None,
        Some("random-seed"),
        Value,
        "SEED",
        "seed for -R (implies -R)",
        |o, v| {
            o.random_seed = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        Some('s'),
        None,
        Value,
        "N",
        "stride of the task counts of a task sweep [1]",
        |o, v| {
            o.task_stride = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        Some('S'),
        None,
        Flag,
        "",
        "shared files: every task works on the same files",
        |o, _| {
            o.shared_file = true;
            Ok(())
        }
    ),
    opt!(
        Some('t'),
        None,
        Flag,
        "",
        "time the unique working directory overhead (with -u)",
        |o, _| {
            o.time_unique_dir = true;
            Ok(())
        }
    ),
    opt!(
        Some('T'),
        None,
        Flag,
        "",
        "only perform the stat phase",
        |o, _| {
            o.stat = true;
            Ok(())
        }
    ),
    opt!(
        Some('u'),
        None,
        Flag,
        "",
        "a unique directory tree for each task",
        |o, _| {
            o.unique_dir = true;
            Ok(())
        }
    ),
    opt!(
        Some('U'),
        None,
        Flag,
        "",
        "add the directory rename phase",
        |o, _| {
            o.rename_dirs = true;
            Ok(())
        }
    ),
    opt!(
        Some('v'),
        None,
        Flag,
        "",
        "more verbose (repeatable)",
        |o, _| {
            o.verbosity += 1;
            Ok(())
        }
    ),
    opt!(Some('V'), None, Value, "N", "set the verbosity", |o, v| {
        o.verbosity = num(v)?;
        Ok(())
    }),
    opt!(
        Some('w'),
        None,
        Value,
        "BYTES",
        "bytes to write to each file after creating it [0]",
        |o, v| {
            o.write_bytes = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('W'),
        None,
        Value,
        "SECONDS",
        "stonewall: stop create phases after this time, then level the counts",
        |o, v| {
            o.stonewall_s = num(v)?;
            Ok(())
        }
    ),
    opt!(
        Some('x'),
        None,
        Value,
        "FILE",
        "stonewall status file: written by create runs, read by later runs",
        |o, v| {
            o.stonewall_file = v.map(str::to_string);
            Ok(())
        }
    ),
    opt!(
        Some('X'),
        Some("verify-read"),
        Flag,
        "",
        "verify the data read (needs -e)",
        |o, _| {
            o.verify_read = true;
            Ok(())
        }
    ),
    opt!(
        Some('y'),
        None,
        Flag,
        "",
        "fsync each file after writing it",
        |o, _| {
            o.fsync = true;
            Ok(())
        }
    ),
    opt!(
        Some('Y'),
        None,
        Flag,
        "",
        "sync(2) after each phase, inside the timing",
        |o, _| {
            o.sync_phases = true;
            Ok(())
        }
    ),
    opt!(
        Some('z'),
        None,
        Value,
        "N",
        "depth of the directory tree [0]",
        |o, v| {
            o.depth = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        Some('Z'),
        None,
        Flag,
        "",
        "print the time table only",
        |o, _| {
            o.print_time_only = true;
            Ok(())
        }
    ),
    opt!(
        Some('G'),
        None,
        Value,
        "SEED",
        "seed of the data written to files",
        |o, v| {
            o.data_seed = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        None,
        Some("tasks"),
        Value,
        "N",
        "tasks run as threads in each process [1]",
        |o, v| {
            o.tasks = Some(num(v)?);
            Ok(())
        }
    ),
    opt!(
        None,
        Some("json"),
        Value,
        "PATH",
        "write the results as JSON to PATH",
        |o, v| {
            o.json = v.map(str::to_string);
            Ok(())
        }
    ),
    opt!(
        None,
        Some("csv"),
        Value,
        "PATH",
        "write one CSV row per iteration and phase to PATH",
        |o, v| {
            o.csv = v.map(str::to_string);
            Ok(())
        }
    ),
];

/// A command line that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgError(pub String);

fn find_short(c: char) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.short == Some(c))
}

fn find_long(name: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.long == Some(name))
}

fn label(o: &Opt) -> String {
    match (o.short, o.long) {
        (Some(c), _) => format!("-{c}"),
        (None, Some(l)) => format!("--{l}"),
        _ => String::new(),
    }
}

fn apply(o: &Opt, opts: &mut RawOptions, v: Option<&str>) -> Result<(), ArgError> {
    (o.set)(opts, v).map_err(|e| ArgError(format!("{}: {e}", label(o))))
}

/// True for a word that looks like an option rather than a value.
fn is_option_like(w: &str) -> bool {
    w.len() > 1 && w.starts_with('-') && !w[1..].starts_with(|c: char| c.is_ascii_digit())
}

/// Reads mdtest's command line into [`RawOptions`].
pub fn parse(args: &[String]) -> Result<RawOptions, ArgError> {
    let mut opts = RawOptions::default();
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        i += 1;
        if let Some(long) = w.strip_prefix("--") {
            i = parse_long(long, args, i, &mut opts)?;
        } else if w.len() > 1 && w.starts_with('-') {
            i = parse_short_group(&w[1..], args, i, &mut opts)?;
        } else {
            return Err(ArgError(format!(
                "unexpected argument '{w}': mdtest takes only options (see -h)"
            )));
        }
    }
    Ok(opts)
}

fn parse_long(
    long: &str,
    args: &[String],
    mut i: usize,
    opts: &mut RawOptions,
) -> Result<usize, ArgError> {
    let (name, attached) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    let o =
        find_long(name).ok_or_else(|| ArgError(format!("unknown option '--{name}' (see -h)")))?;
    let value = match (o.arg, attached) {
        (Arg::Flag, Some(_)) => return Err(ArgError(format!("--{name} takes no value"))),
        (Arg::Flag, None) | (Arg::Attached, None) => None,
        (_, Some(v)) => Some(v),
        (Arg::Value, None) => {
            let v = args
                .get(i)
                .ok_or_else(|| ArgError(format!("--{name} needs a value ({})", o.metavar)))?;
            i += 1;
            Some(v.as_str())
        }
    };
    apply(o, opts, value)?;
    Ok(i)
}

fn parse_short_group(
    group: &str,
    args: &[String],
    i: usize,
    opts: &mut RawOptions,
) -> Result<usize, ArgError> {
    for (at, c) in group.char_indices() {
        let o = find_short(c).ok_or_else(|| ArgError(format!("unknown option '-{c}' (see -h)")))?;
        let rest = &group[at + c.len_utf8()..];
        let rest = rest.strip_prefix('=').unwrap_or(rest);
        match o.arg {
            Arg::Flag => apply(o, opts, None)?,
            Arg::Attached => {
                apply(o, opts, Some(rest))?;
                return Ok(i);
            }
            Arg::Value if !rest.is_empty() => {
                apply(o, opts, Some(rest))?;
                return Ok(i);
            }
            Arg::Value => {
                let next = args
                    .get(i)
                    .ok_or_else(|| ArgError(format!("-{c} needs a value ({})", o.metavar)))?;
                if is_option_like(next) && c != 'd' && c != 'x' && c != 'a' {
                    // mdtest 1.9.3's getopt read `-n -N 1` as n = atoi("-N") = 0:
                    // the option had no effect. Keep that outcome, but say so.
                    opts.warnings.push(format!(
                        "-{c} has no value (the next argument '{next}' is an option); -{c} is ignored, as mdtest did"
                    ));
                    return Ok(i);
                }
                apply(o, opts, Some(next))?;
                return Ok(i + 1);
            }
        }
    }
    Ok(i)
}

/// The help screen, generated from [`OPTIONS`].
pub fn help(prog: &str) -> String {
    let mut s = format!(
        "Usage: {prog} [options]\n\nA drop-in mdtest: file system metadata benchmark (iolab).\n\nOptions:\n"
    );
    for o in OPTIONS {
        let mut name = String::new();
        if let Some(c) = o.short {
            name.push('-');
            name.push(c);
        }
        if let Some(l) = o.long {
            if !name.is_empty() {
                name.push_str(", ");
            }
            name.push_str("--");
            name.push_str(l);
        }
        if o.arg == Arg::Attached {
            name.push_str(o.metavar);
        } else if !o.metavar.is_empty() {
            name.push(' ');
            name.push_str(o.metavar);
        }
        let _ = writeln!(s, "  {name:<24} {}", o.help);
    }
    s.push_str("\nNumbers take k, m, g suffixes (powers of two). Exit status: 0 ok, 1 I/O error, 2 bad usage.\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<RawOptions, ArgError> {
        parse(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
    }

    // One test per table entry family, next to the table.
    #[test]
    fn values_attached_separate_and_with_equals() {
        assert_eq!(p("-n 10").unwrap().items, 10);
        assert_eq!(p("-n10").unwrap().items, 10);
        assert_eq!(p("-n=10").unwrap().items, 10);
        assert_eq!(p("-n 4k").unwrap().items, 4096);
        assert_eq!(p("-w 1m").unwrap().write_bytes, 1 << 20);
        assert_eq!(p("-e 3900").unwrap().read_bytes, 3900);
        assert_eq!(p("-I 2").unwrap().items_per_dir, 2);
        assert_eq!(p("-z 3 -b 2").unwrap().depth, Some(3));
        assert_eq!(p("-b 2").unwrap().branch, Some(2));
        assert_eq!(p("-i 5").unwrap().iterations, Some(5));
        assert_eq!(p("-N 1").unwrap().stride, 1);
        assert_eq!(p("-p 2").unwrap().pre_delay_s, 2);
        assert_eq!(p("-W 300").unwrap().stonewall_s, 300);
        assert_eq!(p("-V 3").unwrap().verbosity, 3);
        assert_eq!(p("-G 270669").unwrap().data_seed, Some(270669));
        assert_eq!(p("-f 1 -l 4 -s 2").unwrap().task_stride, Some(2));
        assert_eq!(p("--tasks 8").unwrap().tasks, Some(8));
        assert_eq!(p("--tasks=8").unwrap().tasks, Some(8));
    }

    #[test]
    fn grouped_flags() {
        let o = p("-FCY").unwrap();
        assert!(o.files_only && o.create && o.sync_phases);
        let o = p("-uLn 5").unwrap();
        assert!(o.unique_dir && o.leaf_only && o.items == 5);
        let o = p("-vvv").unwrap();
        assert_eq!(o.verbosity, 3);
        for (flag, check) in [
            (
                "-B",
                (|o: &RawOptions| o.no_barriers) as fn(&RawOptions) -> bool,
            ),
            ("-c", |o| o.collective),
            ("-D", |o| o.dirs_only),
            ("-E", |o| o.read),
            ("-g", |o| o.lustre_layout),
            ("-k", |o| o.mknod),
            ("-P", |o| o.print_rate_and_time),
            ("-r", |o| o.remove),
            ("-S", |o| o.shared_file),
            ("-t", |o| o.time_unique_dir),
            ("-T", |o| o.stat),
            ("-U", |o| o.rename_dirs),
            ("-X", |o| o.verify_read),
            ("--verify-read", |o| o.verify_read),
            ("-y", |o| o.fsync),
            ("-Z", |o| o.print_time_only),
            ("-h", |o| o.help),
        ] {
            assert!(check(&p(flag).unwrap()), "{flag}");
        }
    }

    #[test]
    fn random_seed_is_attached_only() {
        assert_eq!(p("-R").unwrap().random, Some(None));
        assert_eq!(p("-R42").unwrap().random, Some(Some(42)));
        assert_eq!(p("-R -n 3").unwrap().items, 3);
        assert_eq!(p("--random-seed 9").unwrap().random_seed, Some(9));
        assert!(p("-Rx").is_err());
    }

    #[test]
    fn paths_and_files() {
        let o = p("-d /a@/b -x /tmp/sw --json out.json --csv out.csv -a POSIX").unwrap();
        assert_eq!(o.dirs.as_deref(), Some("/a@/b"));
        assert_eq!(o.stonewall_file.as_deref(), Some("/tmp/sw"));
        assert_eq!(o.json.as_deref(), Some("out.json"));
        assert_eq!(o.csv.as_deref(), Some("out.csv"));
        assert_eq!(o.api.as_deref(), Some("POSIX"));
    }

    #[test]
    fn mdtest_193_dash_n_without_value_is_ignored_with_a_warning() {
        let o = p("-z 1 -L -u -n -N 1 -b 10").unwrap();
        assert_eq!(o.items, 0);
        assert_eq!(o.stride, 1);
        assert_eq!(o.branch, Some(10));
        assert_eq!(o.warnings.len(), 1);
        assert!(o.warnings[0].contains("-n"));
    }

    #[test]
    fn errors_name_the_option() {
        assert!(p("-q").unwrap_err().0.contains("-q"));
        assert!(p("-n").unwrap_err().0.contains("-n"));
        assert!(p("-n abc").unwrap_err().0.contains("-n"));
        assert!(p("--nope").unwrap_err().0.contains("--nope"));
        assert!(p("stray").unwrap_err().0.contains("stray"));
        assert!(p("--json").unwrap_err().0.contains("--json"));
        assert!(p("-B=1").is_err(), "a flag takes no value");
    }

    #[test]
    fn help_lists_every_option() {
        let h = help("mdtest");
        for o in OPTIONS {
            let needle = o
                .short
                .map(|c| format!("-{c}"))
                .unwrap_or_else(|| format!("--{}", o.long.unwrap()));
            assert!(h.contains(&needle), "{needle} missing from help");
        }
    }
}
