//! mdtest's command line, read the way mdtest reads it: getopt-style short
//! options (grouped flags `-FC`, attached values `-n10` and `-n=10`,
//! `-R[seed]` with an optional attached seed) plus the long options of
//! current mdtest. Every option is one entry of [`OPTIONS`], read by the
//! getopt front end of the shared option-table engine (`iolab-opts`): its
//! letter, long name, value kind, help text, the function that stores it,
//! and an example with its check (`tests::every_entry_example` runs them
//! all). The help screen is generated from the same table. Numbers are
//! bounded when validated (`config.rs`), where the limits are known.

use iolab_opts::{Arity, Cursor, Entry, OptError};
use std::ffi::OsString;

/// Raw options exactly as given, before validation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawOptions {
    /// `-a`: backend name.
    pub api: Option<String>,
    /// `-b`: branching factor.
    pub branch: Option<u64>,
    /// `-B`: no barriers.
    pub no_barriers: bool,
    /// `-c`: collective creates.
    pub collective: bool,
    /// `-C`: create phases only.
    pub create: bool,
    /// `-d`: test directories separated by `@` (any bytes).
    pub dirs: Option<OsString>,
    /// `-D`: directories only.
    pub dirs_only: bool,
    /// `-e`: bytes read per file.
    pub read_bytes: u64,
    /// `-E`: read phase only.
    pub read: bool,
    /// `-f`: first task count of a sweep.
    pub first: Option<u64>,
    /// `-F`: files only.
    pub files_only: bool,
    /// `-g`: Lustre layout.
    pub lustre_layout: bool,
    /// `-h`: help.
    pub help: bool,
    /// `-i`: iterations.
    pub iterations: Option<u64>,
    /// `-I`: items per directory.
    pub items_per_dir: u64,
    /// `-k`: mknod.
    pub mknod: bool,
    /// `-l`: last task count of a sweep.
    pub last: Option<u64>,
    /// `-L`: leaf level only.
    pub leaf_only: bool,
    /// `-n`: items per task.
    pub items: u64,
    /// `-N`: task stride.
    pub stride: u64,
    /// `-p`: pre-iteration delay in seconds.
    pub pre_delay_s: u64,
    /// `-P`: rate and time tables.
    pub print_rate_and_time: bool,
    /// `-r`: remove phases only.
    pub remove: bool,
    /// `-R` given; the inner value is its attached seed, if any.
    pub random: Option<Option<u64>>,
    /// `--random-seed`.
    pub random_seed: Option<u64>,
    /// `-s`: task-count stride of a sweep.
    pub task_stride: Option<u64>,
    /// `-S`: shared files.
    pub shared_file: bool,
    /// `-t`: time the unique-directory overhead.
    pub time_unique_dir: bool,
    /// `-T`: stat phase only.
    pub stat: bool,
    /// `-u`: a tree per task.
    pub unique_dir: bool,
    /// `-v` (counted) or `-V N`.
    pub verbosity: u64,
    /// `-w`: bytes written per file.
    pub write_bytes: u64,
    /// `-W`: stonewall seconds.
    pub stonewall_s: u64,
    /// `-x`: stonewall status file (any bytes).
    pub stonewall_file: Option<OsString>,
    /// `-X`: verify reads.
    pub verify_read: bool,
    /// `-y`: fsync after writing.
    pub fsync: bool,
    /// `-Y`: sync after each phase.
    pub sync_phases: bool,
    /// `-z`: tree depth.
    pub depth: Option<u64>,
    /// `-Z`: time table only.
    pub print_time_only: bool,
    /// `-U`: directory rename phase.
    pub rename_dirs: bool,
    /// `-G`: data seed.
    pub data_seed: Option<u64>,
    /// `--tasks`: threads per process.
    pub tasks: Option<u64>,
    /// `--engine`: how a task issues its operations (`sync`, `uring`).
    pub engine: Option<String>,
    /// `--qd`: operations in flight per task (`--engine uring`).
    pub qd: Option<u64>,
    /// `--json`: JSON output path (any bytes).
    pub json: Option<OsString>,
    /// `--csv`: CSV output path (any bytes).
    pub csv: Option<OsString>,
    /// `--stats`: statistics to collect during the run.
    pub stats: Option<String>,
    /// `--store`: the results store to record the run in (any bytes).
    pub store: Option<OsString>,
    /// Warnings met while parsing (e.g. `-n -N 1`), shown before the run.
    pub warnings: Vec<String>,
}

/// One mdtest option: an entry of the shared engine whose examples are
/// checked against the raw options.
pub type Opt = Entry<RawOptions, RawOptions>;

/// What an entry's example must do.
pub type Check = iolab_opts::Check<RawOptions>;

/// A command line that cannot be read (the engine's one error type).
pub type ArgError = OptError;

/// A whole number with an optional k/m/g/t suffix.
fn num(c: &mut Cursor, what: &str) -> Result<u64, OptError> {
    c.u64(what)
}

/// A flag: sets one field.
macro_rules! flag {
    ($c:literal, $long:literal, $help:literal, $field:ident) => {
        Opt {
            name: $long,
            short: Some($c),
            aliases: &[],
            arity: Arity::Flag,
            scoped: false,
            args: "",
            help: $help,
            apply: |_, o, _| {
                o.$field = true;
                Ok(())
            },
            example: concat!("-", $c),
            check: Check::Ok(|o| o.$field),
        }
    };
}

/// An option with a value: the reader and the check are written out.
macro_rules! value {
    ($c:expr, $long:literal, $arity:ident, $args:literal, $help:literal,
     $apply:expr, $example:literal, $check:expr) => {
        Opt {
            name: $long,
            short: $c,
            aliases: &[],
            arity: Arity::$arity,
            scoped: false,
            args: $args,
            help: $help,
            apply: $apply,
            example: $example,
            check: $check,
        }
    };
}

/// Every option iolab mdtest accepts, in help order.
pub static OPTIONS: &[Opt] = &[
    value!(
        Some('a'),
        "",
        Value,
        "API",
        "I/O backend (POSIX, S3)",
        |c, o, _| {
            o.api = Some(c.value("API name")?.to_string());
            Ok(())
        },
        "-a POSIX",
        Check::Ok(|o| o.api.as_deref() == Some("POSIX"))
    ),
    value!(
        Some('b'),
        "",
        Number,
        "N",
        "branching factor of the directory tree [1]",
        |c, o, _| {
            o.branch = Some(num(c, "branching factor")?);
            Ok(())
        },
        "-b 2",
        Check::Ok(|o| o.branch == Some(2))
    ),
    flag!('B', "", "no barriers between phases", no_barriers),
    flag!(
        'c',
        "",
        "collective creates: task 0 does all creates and removes",
        collective
    ),
    flag!('C', "", "only perform the create phases", create),
    value!(
        Some('d'),
        "",
        Value,
        "DIR[@DIR...]",
        "directories to test in, given to tasks round robin [.]",
        |c, o, _| {
            o.dirs = Some(c.path("directories")?);
            Ok(())
        },
        "-d /a@/b",
        Check::Ok(|o| o.dirs.as_deref() == Some("/a@/b".as_ref()))
    ),
    flag!('D', "", "test directories only (no files)", dirs_only),
    value!(
        Some('e'),
        "",
        Number,
        "BYTES",
        "bytes to read from each file [0]",
        |c, o, _| {
            o.read_bytes = num(c, "bytes")?;
            Ok(())
        },
        "-e 4k",
        Check::Ok(|o| o.read_bytes == 4096)
    ),
    flag!('E', "", "only perform the read phase", read),
    value!(
        Some('f'),
        "",
        Number,
        "N",
        "first number of tasks of a task sweep",
        |c, o, _| {
            o.first = Some(num(c, "task count")?);
            Ok(())
        },
        "-f 1",
        Check::Ok(|o| o.first == Some(1))
    ),
    flag!('F', "", "test files only (no directories)", files_only),
    flag!(
        'g',
        "",
        "Lustre: global default directory layout (needs Lustre)",
        lustre_layout
    ),
    flag!('h', "help", "print this help and exit", help),
    value!(
        Some('i'),
        "",
        Number,
        "N",
        "iterations [1]",
        |c, o, _| {
            o.iterations = Some(num(c, "iterations")?);
            Ok(())
        },
        "-i5",
        Check::Ok(|o| o.iterations == Some(5))
    ),
    value!(
        Some('I'),
        "",
        Number,
        "N",
        "items per directory of the tree [0]",
        |c, o, _| {
            o.items_per_dir = num(c, "items per directory")?;
            Ok(())
        },
        "-I=3",
        Check::Ok(|o| o.items_per_dir == 3)
    ),
    flag!(
        'k',
        "",
        "create files with mknod (empty regular files, mode 0400, never opened)",
        mknod
    ),
    value!(
        Some('l'),
        "",
        Number,
        "N",
        "last number of tasks of a task sweep",
        |c, o, _| {
            o.last = Some(num(c, "task count")?);
            Ok(())
        },
        "-l 4",
        Check::Ok(|o| o.last == Some(4))
    ),
    flag!(
        'L',
        "",
        "items only at the leaf level of the tree",
        leaf_only
    ),
    value!(
        Some('n'),
        "",
        Number,
        "N",
        "items (files and/or directories) per task [0]",
        |c, o, _| {
            o.items = num(c, "items per task")?;
            Ok(())
        },
        "-n abc",
        Check::Err("not a number")
    ),
    value!(
        Some('N'),
        "",
        Number,
        "K",
        "task stride: phase j works on the items of task (t + j*K) [0]",
        |c, o, _| {
            o.stride = num(c, "task stride")?;
            Ok(())
        },
        "-N 1",
        Check::Ok(|o| o.stride == 1)
    ),
    value!(
        Some('p'),
        "",
        Number,
        "SECONDS",
        "delay before each iteration's tests",
        |c, o, _| {
            o.pre_delay_s = num(c, "seconds")?;
            Ok(())
        },
        "-p 2",
        Check::Ok(|o| o.pre_delay_s == 2)
    ),
    flag!(
        'P',
        "",
        "print the rate table and the time table",
        print_rate_and_time
    ),
    flag!('r', "", "only perform the remove phases", remove),
    value!(
        Some('R'),
        "",
        Attached,
        "[SEED]",
        "random order for stat and read (seed attached: -R42)",
        |c, o, _| {
            let seed = if c.has_value() {
                Some(num(c, "seed")?)
            } else {
                None
            };
            o.random = Some(seed);
            Ok(())
        },
        "-R42",
        Check::Ok(|o| o.random == Some(Some(42)))
    ),
    value!(
        None,
        "random-seed",
        Number,
        "SEED",
        "seed for -R (implies -R)",
        |c, o, _| {
            o.random_seed = Some(num(c, "seed")?);
            Ok(())
        },
        "--random-seed=9",
        Check::Ok(|o| o.random_seed == Some(9))
    ),
    value!(
        Some('s'),
        "",
        Number,
        "N",
        "stride of the task counts of a task sweep [1]",
        |c, o, _| {
            o.task_stride = Some(num(c, "task count stride")?);
            Ok(())
        },
        "-s 2",
        Check::Ok(|o| o.task_stride == Some(2))
    ),
    flag!(
        'S',
        "",
        "shared files: every task works on the same files",
        shared_file
    ),
    flag!(
        't',
        "",
        "time the unique working directory overhead (with -u; iolab has none, so it changes nothing)",
        time_unique_dir
    ),
    flag!('T', "", "only perform the stat phase", stat),
    flag!('u', "", "a unique directory tree for each task", unique_dir),
    flag!('U', "", "only perform the directory rename phase (with others given: add it)", rename_dirs),
    value!(
        Some('v'),
        "",
        Flag,
        "",
        "more verbose (repeatable)",
        |_, o, _| {
            o.verbosity = o.verbosity.saturating_add(1);
            Ok(())
        },
        "-vvv",
        Check::Ok(|o| o.verbosity == 3)
    ),
    value!(
        Some('V'),
        "",
        Number,
        "N",
        "set the verbosity",
        |c, o, _| {
            o.verbosity = num(c, "verbosity")?;
            Ok(())
        },
        "-V 3",
        Check::Ok(|o| o.verbosity == 3)
    ),
    value!(
        Some('w'),
        "",
        Number,
        "BYTES",
        "bytes to write to each file after creating it [0]",
        |c, o, _| {
            o.write_bytes = num(c, "bytes")?;
            Ok(())
        },
        "-w 1m",
        Check::Ok(|o| o.write_bytes == 1 << 20)
    ),
    value!(
        Some('W'),
        "",
        Number,
        "SECONDS",
        "stonewall: stop create phases after this time, then level the counts",
        |c, o, _| {
            o.stonewall_s = num(c, "seconds")?;
            Ok(())
        },
        "-W 300",
        Check::Ok(|o| o.stonewall_s == 300)
    ),
    value!(
        Some('x'),
        "",
        Value,
        "FILE",
        "stonewall status file: written by create runs, read by later runs",
        |c, o, _| {
            o.stonewall_file = Some(c.path("file")?);
            Ok(())
        },
        "-x /tmp/sw",
        Check::Ok(|o| o.stonewall_file.is_some())
    ),
    flag!(
        'X',
        "verify-read",
        "verify the data read (needs -e)",
        verify_read
    ),
    flag!('y', "", "fsync each file after writing it", fsync),
    flag!(
        'Y',
        "",
        "sync(2) after each phase, inside the timing",
        sync_phases
    ),
    value!(
        Some('z'),
        "",
        Number,
        "N",
        "depth of the directory tree [0]",
        |c, o, _| {
            o.depth = Some(num(c, "depth")?);
            Ok(())
        },
        "-z 3",
        Check::Ok(|o| o.depth == Some(3))
    ),
    flag!('Z', "", "print the time table only", print_time_only),
    value!(
        Some('G'),
        "",
        Number,
        "SEED",
        "seed of the data written to files",
        |c, o, _| {
            o.data_seed = Some(num(c, "seed")?);
            Ok(())
        },
        "-G 270669",
        Check::Ok(|o| o.data_seed == Some(270669))
    ),
    value!(
        None,
        "tasks",
        Number,
        "N",
        "tasks run as threads in each process [1]",
        |c, o, _| {
            o.tasks = Some(num(c, "tasks per process")?);
            Ok(())
        },
        "--tasks 8",
        Check::Ok(|o| o.tasks == Some(8))
    ),
    value!(
        None,
        "engine",
        Value,
        "NAME",
        "how each task issues its operations: sync (one system call at a time) or uring (io_uring, --qd in flight) [sync]",
        |c, o, _| {
            o.engine = Some(c.value("engine")?.to_string());
            Ok(())
        },
        "--engine uring",
        Check::Ok(|o| o.engine.as_deref() == Some("uring"))
    ),
    value!(
        None,
        "qd",
        Number,
        "N",
        "operations each task keeps in flight with --engine uring [16]",
        |c, o, _| {
            o.qd = Some(num(c, "queue depth")?);
            Ok(())
        },
        "--qd 32",
        Check::Ok(|o| o.qd == Some(32))
    ),
    value!(
        None,
        "json",
        Value,
        "PATH",
        "write the results as JSON to PATH",
        |c, o, _| {
            o.json = Some(c.path("file")?);
            Ok(())
        },
        "--json=out.json",
        Check::Ok(|o| o.json.as_deref() == Some("out.json".as_ref()))
    ),
    value!(
        None,
        "stats",
        Value,
        "CONFIG",
        "collect CPU, memory, disk and network statistics during the run (config.sh, config.toml or local[,Ns], as `iolab stats`) into the --json document",
        |c, o, _| {
            o.stats = Some(c.value("statistics configuration")?.to_string());
            Ok(())
        },
        "--stats local,1s",
        Check::Ok(|o| o.stats.as_deref() == Some("local,1s"))
    ),
    value!(
        None,
        "store",
        Value,
        "PATH",
        "record the run in the results store at PATH (SQLite; see `iolab results`)",
        |c, o, _| {
            o.store = Some(c.path("results store")?);
            Ok(())
        },
        "--store runs.sqlite",
        Check::Ok(|o| o.store.as_deref() == Some("runs.sqlite".as_ref()))
    ),
    value!(
        None,
        "csv",
        Value,
        "PATH",
        "write one CSV row per iteration and phase to PATH",
        |c, o, _| {
            o.csv = Some(c.path("file")?);
            Ok(())
        },
        "--csv out.csv",
        Check::Ok(|o| o.csv.as_deref() == Some("out.csv".as_ref()))
    ),
];

/// Reads mdtest's command line into [`RawOptions`].
pub fn parse(args: &[String]) -> Result<RawOptions, ArgError> {
    let os: Vec<OsString> = args.iter().map(OsString::from).collect();
    parse_os(&os)
}

/// [`parse`] for arguments as the system gives them: paths may be any
/// bytes; any other value that is not UTF-8 is an error naming its option.
pub fn parse_os(args: &[OsString]) -> Result<RawOptions, ArgError> {
    let mut opts = RawOptions::default();
    opts.warnings = iolab_opts::getopt::parse(OPTIONS, args, &mut opts)?;
    if opts.time_unique_dir {
        // Said, not silently ignored: mdtest's -t counts its chdir into
        // the task's -u directory in the phase's time; iolab has no
        // such step.
        opts.warnings.push(
            "-t changes nothing here: iolab makes no chdir into a task's directory (mdtest's unique-directory overhead), so the phase times are those without -t".into(),
        );
    }
    Ok(opts)
}

/// Every option a full mdtest command line gives (backend options such
/// as `--posix.odirect` included), each at the index of its word in
/// `argv` and named the same whatever its spelling (`-n4`, `-n=4`,
/// `-n 4`; `-u` of `-FCu`), in order: for a caller that built the line
/// from parts and must know which part set what (`iolab sweep`).
pub fn options_given(argv: &[OsString]) -> Result<Vec<iolab_opts::Given>, ArgError> {
    let (backend, own) = iolab_backend::split_args_at(argv);
    let words: Vec<OsString> = own.iter().map(|&i| argv[i].clone()).collect();
    let (_, traced) =
        iolab_opts::getopt::parse_traced(OPTIONS, &words, &mut RawOptions::default())?;
    let mut given: Vec<iolab_opts::Given> = backend
        .into_iter()
        .map(|(word, option)| iolab_opts::Given { word, option })
        .chain(traced.into_iter().map(|g| iolab_opts::Given {
            word: own[g.word],
            option: g.option,
        }))
        .collect();
    given.sort_by_key(|g| g.word);
    Ok(given)
}

/// The help screen, generated from [`OPTIONS`].
pub fn help(prog: &str) -> String {
    format!(
        "Usage: {prog} [options]\n\nA drop-in mdtest: file system metadata benchmark (iolab).\n\nOptions:\n{}\nBackend options (-a POSIX or -a S3; --BACKEND.KEY[=VALUE]):\n{}\nNumbers take k, m, g suffixes (powers of two).\nExit status: 0 ok, 1 I/O error (what the run created is removed), 2 bad usage (nothing created), 130 interrupted by Ctrl-C (what the run created is removed).\n",
        iolab_opts::getopt::help(OPTIONS),
        iolab_backend::options_help()
    )
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

    /// A `-v` after the largest `-V` stays at the largest verbosity (it
    /// overflowed: a panic, found by tests/prop.rs).
    #[test]
    fn a_v_after_the_largest_verbosity_stays_there() {
        let o = p("-V 18446744073709551615 -v").unwrap();
        assert_eq!(o.verbosity, u64::MAX);
    }

    /// Which word set which option: a sweep refuses an option two parts
    /// of a point's command line set (`-FCTru` in args and an axis `-u`).
    #[test]
    fn options_given_name_each_option_at_its_word() {
        let argv: Vec<OsString> = "-FCu -n4 --posix.odirect=1 --tasks 2 -n=8"
            .split(' ')
            .map(OsString::from)
            .collect();
        let got: Vec<(usize, String)> = options_given(&argv)
            .unwrap()
            .into_iter()
            .map(|g| (g.word, g.option))
            .collect();
        let o = |w: usize, s: &str| (w, s.to_string());
        assert_eq!(
            got,
            [
                o(0, "-F"),
                o(0, "-C"),
                o(0, "-u"),
                o(1, "-n"),
                o(2, "--posix.odirect"),
                o(3, "--tasks"),
                o(5, "-n")
            ]
        );
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
        assert_eq!(o.dirs.as_deref().and_then(|v| v.to_str()), Some("/a@/b"));
        assert_eq!(
            o.stonewall_file.as_deref().and_then(|v| v.to_str()),
            Some("/tmp/sw")
        );
        assert_eq!(o.json.as_deref().and_then(|v| v.to_str()), Some("out.json"));
        assert_eq!(o.csv.as_deref().and_then(|v| v.to_str()), Some("out.csv"));
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
        assert!(p("-q").unwrap_err().to_string().contains("-q"));
        assert!(p("-n").unwrap_err().to_string().contains("-n"));
        assert!(p("-n abc").unwrap_err().to_string().contains("-n"));
        assert!(p("--nope").unwrap_err().to_string().contains("--nope"));
        assert!(p("stray").unwrap_err().to_string().contains("stray"));
        assert!(p("--json").unwrap_err().to_string().contains("--json"));
        assert!(p("-B=1").is_err(), "a flag takes no value");
    }

    #[test]
    fn every_entry_example() {
        for o in OPTIONS {
            // -h is checked through its field: mdtest's help is a flag.
            let got = p(o.example).map(iolab_opts::Example::Run);
            if let Err(why) = o.verify(got) {
                panic!("{why}");
            }
        }
        assert_eq!(iolab_opts::duplicate(OPTIONS), None);
    }

    #[test]
    fn non_utf8_paths_are_kept_and_other_values_refused() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'/', b't', 0xff]);
        let o = parse_os(&[OsString::from("-d"), bad.clone()]).unwrap();
        assert_eq!(o.dirs, Some(bad.clone()));
        let e = parse_os(&[OsString::from("-n"), bad]).unwrap_err();
        assert!(e.to_string().starts_with("-n: ") && e.message.contains("UTF-8"));
    }

    #[test]
    fn help_lists_every_option() {
        let h = help("mdtest");
        for o in OPTIONS {
            let needle = o
                .short
                .map(|c| format!("-{c}"))
                .unwrap_or_else(|| format!("--{}", o.name));
            assert!(h.contains(&needle), "{needle} missing from help");
        }
    }

    #[test]
    fn t_is_said_to_change_nothing() {
        let o = p("-t -u -n 5").unwrap();
        assert!(o.time_unique_dir);
        assert_eq!(o.warnings.len(), 1, "{:?}", o.warnings);
        assert!(
            o.warnings[0].starts_with("-t changes nothing"),
            "{:?}",
            o.warnings
        );
        assert!(p("-u -n 5").unwrap().warnings.is_empty());
    }
}
