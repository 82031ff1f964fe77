//! IOR 4's command line, read as IOR reads it: getopt-style letters
//! (grouped flags `-wr`, counted flags `-vv`, `-zz`, values attached
//! `-t1m`, `-G=27` or separate `-t 1m`), IOR's long options
//! (`--dataPacketType`, `--random-offset-seed`, ...), `-O` directives and
//! iolab's own (`--tasks`, `--json`, `--csv`, `--store`, `--stats`).
//! Every option is one entry of [`OPTIONS`] with its help, the function
//! that stores it and an example with its check
//! (`tests::every_entry_example` runs them all). Backend options
//! (`--posix.odirect`, `--s3.bucket=B`) are split off before this table
//! by `iolab_backend::split_args`. What iolab does not offer (`-c`
//! without MPI-IO, `-y`, `--dryRun`) is an entry that refuses by name.

use crate::directive;
use crate::params::{Globals, Packet, Params};
use iolab_opts::{Arity, Cursor, Entry, OptError};
use std::ffi::OsString;

/// The command line as given: the first test's parameters and the
/// invocation's globals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawOptions {
    /// Parameters of the command line's test (and the base of a script's).
    pub params: Params,
    /// Outputs, tasks, script.
    pub globals: Globals,
}

/// One IOR option.
pub type Opt = Entry<RawOptions, RawOptions>;
/// What an entry's example must do.
pub type Check = iolab_opts::Check<RawOptions>;

/// A flag that sets (or, counted, increments) one field of the test.
macro_rules! flag {
    ($c:literal, $long:literal, $help:literal, |$p:ident| $set:expr, $check:expr) => {
        Opt {
            name: $long,
            short: Some($c),
            aliases: &[],
            arity: Arity::Flag,
            scoped: false,
            args: "",
            help: $help,
            apply: |_, o, _| {
                let $p = &mut o.params;
                $set;
                Ok(())
            },
            example: concat!("-", $c),
            check: Check::Ok($check),
        }
    };
}

/// An option with a value.
macro_rules! value {
    ($c:expr, $long:literal, $args:literal, $help:literal, $apply:expr, $example:literal, $check:expr) => {
        Opt {
            name: $long,
            short: $c,
            aliases: &[],
            arity: Arity::Value,
            scoped: false,
            args: $args,
            help: $help,
            apply: $apply,
            example: $example,
            check: $check,
        }
    };
}

/// An option iolab refuses, by name, with the reason.
macro_rules! refused {
    ($c:expr, $long:literal, $arity:ident, $help:literal, $why:literal, $example:literal) => {
        Opt {
            name: $long,
            short: $c,
            aliases: &[],
            arity: Arity::$arity,
            scoped: false,
            args: "",
            help: $help,
            apply: |c, _, _| Err(c.err($why)),
            example: $example,
            check: Check::Err($why),
        }
    };
}

fn num(c: &mut Cursor, what: &str) -> Result<u64, OptError> {
    c.u64(what)
}

fn signed(c: &mut Cursor, what: &str) -> Result<i64, OptError> {
    let v = c.value(what)?;
    iolab_core::units::parse_signed(v).map_err(|e| c.err(format!("{what}: {e}")))
}

fn text_err(c: &Cursor, r: Result<(), crate::IorError>) -> Result<(), OptError> {
    r.map_err(|e| c.err(e.to_string()))
}

/// Every option of `iolab ior`, in help order.
pub static OPTIONS: &[Opt] = &[
    value!(
        Some('a'),
        "",
        "API",
        "API for I/O: POSIX, MMAP, DUMMY (the null backend) or S3 [POSIX]",
        |c, o, _| {
            o.params.api = c.value("API")?.to_string();
            Ok(())
        },
        "-a MMAP",
        Check::Ok(|o| o.params.api == "MMAP")
    ),
    value!(
        Some('A'),
        "",
        "N",
        "refNum: a reference number shown in the summary [0]",
        |c, o, _| {
            o.params.ref_num = signed(c, "reference number")?;
            Ok(())
        },
        "-A 7",
        Check::Ok(|o| o.params.ref_num == 7)
    ),
    value!(
        Some('b'),
        "",
        "BYTES",
        "blockSize: contiguous bytes to write per task (8, 4k, 2m, 1g) [1m]",
        |c, o, _| {
            o.params.block_bytes = num(c, "block size")?;
            Ok(())
        },
        "-b 4m",
        Check::Ok(|o| o.params.block_bytes == 4 << 20)
    ),
    refused!(
        Some('c'),
        "collective",
        Flag,
        "collective I/O (refused: it needs MPI-IO)",
        "collective I/O needs MPI-IO, which iolab ior does not offer (its APIs are POSIX, MMAP, DUMMY and S3)",
        "-c"
    ),
    flag!(
        'C',
        "",
        "reorderTasks: read what the tasks of another node wrote (-Q says how far)",
        |p| p.reorder += 1,
        |o| o.params.reorder == 1
    ),
    value!(
        Some('d'),
        "",
        "S",
        "interTestDelay: seconds to wait before each write and read [0]",
        |c, o, _| {
            o.params.inter_test_delay_s = c.count("delay", 0, 86_400)?;
            Ok(())
        },
        "-d 2",
        Check::Ok(|o| o.params.inter_test_delay_s == 2)
    ),
    value!(
        Some('D'),
        "",
        "S",
        "deadlineForStonewalling: seconds before a write or read stops [0: none]",
        |c, o, _| {
            o.params.deadline_s = c.count("deadline", 0, 100_000_000)?;
            Ok(())
        },
        "-D 30",
        Check::Ok(|o| o.params.deadline_s == 30)
    ),
    flag!(
        'e',
        "",
        "fsync: fsync at the end of each write, inside its time",
        |p| p.fsync = true,
        |o| o.params.fsync
    ),
    flag!(
        'E',
        "",
        "useExistingTestFile: write over an existing file instead of refusing it",
        |p| p.use_existing = true,
        |o| o.params.use_existing
    ),
    value!(
        Some('f'),
        "",
        "FILE",
        "scriptFile: run the tests of an IOR script (IOR START ... RUN ... IOR STOP)",
        |c, o, _| {
            o.globals.script = Some(c.path("script file")?.into());
            Ok(())
        },
        "-f tests.ior",
        Check::Ok(|o| o.globals.script.is_some())
    ),
    flag!(
        'F',
        "",
        "filePerProc: a file per task",
        |p| p.file_per_proc = true,
        |o| o.params.file_per_proc
    ),
    flag!(
        'g',
        "",
        "intraTestBarriers: barriers between open, write/read and close",
        |p| p.intra_barriers = true,
        |o| o.params.intra_barriers
    ),
    value!(
        Some('G'),
        "",
        "N",
        "setTimeStampSignature: the data's signature (seed), kept for later reads with -R",
        |c, o, _| {
            let v = c.value("signature")?;
            let r = directive::signature(v).map(|s| o.params.signature = s);
            text_err(c, r)
        },
        "-G=27",
        Check::Ok(|o| o.params.signature == 27)
    ),
    Opt {
        name: "",
        short: Some('h'),
        aliases: &[],
        arity: Arity::Flag,
        scoped: false,
        args: "",
        help: "print this help and exit",
        apply: |_, o, _| {
            o.globals.help = true;
            Ok(())
        },
        example: "-h",
        check: Check::Ok(|o| o.globals.help),
    },
    value!(
        Some('i'),
        "",
        "N",
        "repetitions of the test [1]",
        |c, o, _| {
            o.params.repetitions = c.count("repetitions", 1, 1_000_000)?;
            Ok(())
        },
        "-i 0",
        Check::Err("greater than 0")
    ),
    value!(
        Some('j'),
        "",
        "S",
        "outlierThreshold: warn of a task N seconds from the mean [0: off]",
        |c, o, _| {
            o.params.outlier_threshold_s = num(c, "threshold")?;
            Ok(())
        },
        "-j 5",
        Check::Ok(|o| o.params.outlier_threshold_s == 5)
    ),
    flag!(
        'k',
        "",
        "keepFile: keep the files at the end",
        |p| p.keep = true,
        |o| o.params.keep
    ),
    flag!(
        'K',
        "",
        "keepFileWithError: keep files in which a check found errors",
        |p| p.keep_with_error = true,
        |o| o.params.keep_with_error
    ),
    value!(
        Some('l'),
        "dataPacketType",
        "TYPE",
        "IOR's data: offset, incompressible, timestamp, random (o, i, t, r) [iolab's unique data]",
        |c, o, _| {
            let v = c.value("packet type")?;
            let r = Packet::parse(v).map(|p| o.params.packet = p);
            text_err(c, r)
        },
        "--dataPacketType=offset",
        Check::Ok(|o| o.params.packet == Packet::Offset)
    ),
    flag!(
        'm',
        "",
        "multiFile: a new file per repetition (name.REP)",
        |p| p.multi_file = true,
        |o| o.params.multi_file
    ),
    value!(
        Some('M'),
        "",
        "BYTES|PCT%",
        "memoryPerNode: memory to hold on each node during the test (2g, 75%)",
        |c, o, _| {
            let v = c.value("memory")?;
            let r = directive::hog(v).map(|h| o.params.hog = h);
            text_err(c, r)
        },
        "-M 10%",
        Check::Ok(|o| o.params.hog == crate::params::Hog::NodePercent(10))
    ),
    value!(
        Some('N'),
        "",
        "N",
        "numTasks: tasks taking part (the first N) [all]",
        |c, o, _| {
            o.params.num_tasks = Some(c.count("tasks", 1, 1 << 24)?);
            Ok(())
        },
        "-N 0",
        Check::Err("greater than 0")
    ),
    value!(
        Some('o'),
        "",
        "FILE",
        "testFile: the test file's name (several: NAME@NAME) [testFile]",
        |c, o, _| {
            o.params.test_file = c.path("file name")?;
            Ok(())
        },
        "-o /mnt/x/ior",
        Check::Ok(|o| o.params.test_file == "/mnt/x/ior")
    ),
    value!(
        Some('O'),
        "",
        "KEY=V[,..]",
        "IOR directives: stoneWallingWearOut=1, stoneWallingStatusFile=F, summaryFile=F, summaryFormat=JSON|CSV|default, ...",
        |c, o, _| {
            let v = c.value("directive")?;
            let r = directive::apply_line(v, &mut o.params, &mut o.globals);
            text_err(c, r)
        },
        "-O stoneWallingWearOut=1,summaryFormat=JSON",
        Check::Ok(|o| o.params.wearout
            && o.globals.summary_format == crate::params::Format::Json)
    ),
    value!(
        Some('Q'),
        "",
        "N",
        "taskPerNodeOffset: nodes to move by for -C and -Z [1]",
        |c, o, _| {
            o.params.task_per_node_offset = num(c, "offset")?;
            Ok(())
        },
        "-Q 2",
        Check::Ok(|o| o.params.task_per_node_offset == 2)
    ),
    flag!(
        'r',
        "",
        "readFile: read the file(s)",
        |p| p.read = true,
        |o| o.params.read
    ),
    flag!(
        'R',
        "",
        "checkRead: check what is read against what was written (-G for files of another run)",
        |p| p.check_read = true,
        |o| o.params.check_read
    ),
    value!(
        Some('s'),
        "",
        "N",
        "segmentCount: segments [1]",
        |c, o, _| {
            o.params.segments = num(c, "segments")?;
            Ok(())
        },
        "-s 3",
        Check::Ok(|o| o.params.segments == 3)
    ),
    value!(
        Some('t'),
        "",
        "BYTES",
        "transferSize: bytes per transfer (8, 4k, 2m) [256k]",
        |c, o, _| {
            o.params.transfer_bytes = num(c, "transfer size")?;
            Ok(())
        },
        "-t 47008",
        Check::Ok(|o| o.params.transfer_bytes == 47008)
    ),
    value!(
        Some('T'),
        "",
        "MIN",
        "maxTimeDuration: minutes after which no further phase starts [0: none]",
        |c, o, _| {
            o.params.max_time_min = c.count("minutes", 0, 1 << 32)?;
            Ok(())
        },
        "-T 5",
        Check::Ok(|o| o.params.max_time_min == 5)
    ),
    flag!(
        'u',
        "",
        "uniqueDir: a directory per task for its file (with -F)",
        |p| p.unique_dir = true,
        |o| o.params.unique_dir
    ),
    flag!(
        'v',
        "",
        "verbose: more output (give several times)",
        |p| p.verbose = p.verbose.saturating_add(1),
        |o| o.params.verbose == 1
    ),
    flag!(
        'w',
        "",
        "writeFile: write the file(s)",
        |p| p.write = true,
        |o| o.params.write
    ),
    flag!(
        'W',
        "",
        "checkWrite: read back and check what was written",
        |p| p.check_write = true,
        |o| o.params.check_write
    ),
    flag!(
        'x',
        "",
        "singleXferAttempt: a short transfer is an error (not retried)",
        |p| p.single_xfer_attempt = true,
        |o| o.params.single_xfer_attempt
    ),
    value!(
        Some('X'),
        "",
        "N",
        "reorderTasksRandomSeed: seed of -Z (negative: varies per repetition) [0]",
        |c, o, _| {
            o.params.reorder_seed = signed(c, "seed")?;
            Ok(())
        },
        "-X -3",
        Check::Ok(|o| o.params.reorder_seed == -3)
    ),
    refused!(
        Some('y'),
        "",
        Flag,
        "dualMount (refused)",
        "dual mount points are not offered by iolab ior: give the mount in -o",
        "-y"
    ),
    flag!(
        'Y',
        "",
        "fsyncPerWrite: fsync after every write",
        |p| p.fsync_per_write = true,
        |o| o.params.fsync_per_write
    ),
    flag!(
        'z',
        "",
        "randomOffset: shuffled offsets in each block; twice: random blocks (reads)",
        |p| p.random_offset += 1,
        |o| o.params.random_offset == 1
    ),
    flag!(
        'Z',
        "",
        "reorderTasksRandom: read what random tasks wrote; twice: a shuffle",
        |p| p.reorder_random += 1,
        |o| o.params.reorder_random == 1
    ),
    value!(
        None,
        "randomPrefill",
        "BYTES",
        "with -z: fill each block with requests of this size before the timed writes",
        |c, o, _| {
            o.params.random_prefill_bytes = num(c, "prefill size")?;
            Ok(())
        },
        "--randomPrefill=64k",
        Check::Ok(|o| o.params.random_prefill_bytes == 65536)
    ),
    value!(
        None,
        "random-offset-seed",
        "N",
        "seed of -z (the same for writes and the reads that check them) [-1: the clock]",
        |c, o, _| {
            o.params.random_seed = signed(c, "seed")?;
            Ok(())
        },
        "--random-offset-seed=9",
        Check::Ok(|o| o.params.random_seed == 9)
    ),
    Opt {
        name: "warningAsErrors",
        short: None,
        aliases: &[],
        arity: Arity::Flag,
        scoped: false,
        args: "",
        help: "a warning ends the run as an error",
        apply: |_, o, _| {
            o.params.warning_as_errors = true;
            Ok(())
        },
        example: "--warningAsErrors",
        check: Check::Ok(|o| o.params.warning_as_errors),
    },
    refused!(
        None,
        "dryRun",
        Flag,
        "dryRun (refused)",
        "a dry run is not offered by iolab ior (IOR 4.1's own fails at its first create); try -a DUMMY, the null backend",
        "--dryRun"
    ),
    value!(
        None,
        "tasks",
        "N",
        "iolab: tasks (threads) per process [1; under mpirun: per rank]",
        |c, o, _| {
            o.globals.tasks_per_process = Some(c.count("tasks", 1, 1 << 16)?);
            Ok(())
        },
        "--tasks 4",
        Check::Ok(|o| o.globals.tasks_per_process == Some(4))
    ),
    value!(
        None,
        "json",
        "FILE",
        "iolab: the results envelope as JSON",
        |c, o, _| {
            o.globals.json = Some(c.path("file")?.into());
            Ok(())
        },
        "--json=r.json",
        Check::Ok(|o| o.globals.json.is_some())
    ),
    value!(
        None,
        "csv",
        "FILE",
        "iolab: one CSV row per iteration and access",
        |c, o, _| {
            o.globals.csv = Some(c.path("file")?.into());
            Ok(())
        },
        "--csv r.csv",
        Check::Ok(|o| o.globals.csv.is_some())
    ),
    value!(
        None,
        "store",
        "DB",
        "iolab: record the run in this results store",
        |c, o, _| {
            o.globals.store = Some(c.path("store")?.into());
            Ok(())
        },
        "--store runs.db",
        Check::Ok(|o| o.globals.store.is_some())
    ),
    value!(
        None,
        "stats",
        "SPEC",
        "iolab: system statistics to collect during the run (as iolab mdtest --stats)",
        |c, o, _| {
            o.globals.stats = Some(c.value("statistics")?.to_string());
            Ok(())
        },
        "--stats cpu",
        Check::Ok(|o| o.globals.stats.as_deref() == Some("cpu"))
    ),
];

/// Reads a command line (backend options already split off).
pub fn parse_os(args: &[OsString]) -> Result<RawOptions, OptError> {
    let mut raw = RawOptions::default();
    iolab_opts::getopt::parse(OPTIONS, args, &mut raw)?;
    Ok(raw)
}

/// The help screen, generated from [`OPTIONS`].
pub fn help(prog: &str) -> String {
    format!(
        "Usage: {prog} [options]\n\nA drop-in IOR: parallel file and object I/O benchmark (iolab).\n\nOptions:\n{}\nDirectives for -O (and -f scripts), case-insensitive:\n  {}\n\nBackend options (--BACKEND.KEY[=VALUE]):\n{}\nNumbers take k, m, g, t suffixes (powers of two).\nExit status: 0 ok, 1 I/O or data error, 2 bad usage (nothing created), 130 interrupted.\n",
        iolab_opts::getopt::help(OPTIONS),
        directive::names()
            .filter(|n| !n.starts_with('-'))
            .collect::<Vec<_>>()
            .join(", "),
        iolab_backend::options_help()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<RawOptions, OptError> {
        parse_os(&iolab_opts::words(line))
    }

    #[test]
    fn every_entry_example() {
        for o in OPTIONS {
            let got = p(o.example).map(iolab_opts::Example::Run);
            if let Err(why) = o.verify(got) {
                panic!("{why}");
            }
        }
        assert_eq!(iolab_opts::duplicate(OPTIONS), None);
    }

    #[test]
    fn grouped_counted_and_attached_forms() {
        let o =
            p("-wrvvzz -t1m -b=4m -s 2 -G=-1 -O stoneWallingWearOut=1 -O summaryFile=x").unwrap();
        let q = &o.params;
        assert!(q.write && q.read);
        assert_eq!((q.verbose, q.random_offset), (2, 2));
        assert_eq!(
            (q.transfer_bytes, q.block_bytes, q.segments),
            (1 << 20, 4 << 20, 2)
        );
        assert_eq!(q.signature, u32::MAX);
        assert!(q.wearout && o.globals.summary_file.is_some());
    }

    #[test]
    fn unknown_and_refused_options_are_named() {
        for (line, name) in [
            ("-q", "-q"),
            ("--bogus", "--bogus"),
            ("-c", "-c"),
            ("-y", "-y"),
            ("--dryRun", "--dryRun"),
            ("-l x", "-l"),
            ("-O bogus=1", "-O"),
            ("-t abc", "-t"),
        ] {
            let e = p(line).unwrap_err().to_string();
            assert!(e.starts_with(name), "{line}: {e}");
        }
    }

    #[test]
    fn help_lists_every_option() {
        let h = help("ior");
        for o in OPTIONS {
            assert!(h.contains(&o.label()), "{}", o.label());
        }
        assert!(h.contains("stonewallingwearout"));
    }
}
