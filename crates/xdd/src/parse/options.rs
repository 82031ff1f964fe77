//! The one table of XDD options. Each entry carries its synopsis, its help
//! line, the function that reads its values, and an example command line
//! with the check it must satisfy; `tests::every_entry_example` runs all of
//! them, so no option exists without a parsing test beside it.

use crate::parse::config::{Config, RawConfig};
use crate::parse::handlers::*;
use crate::parse::validate::{MAX_BLOCKSIZE, MAX_PASSES, MAX_QTHREADS, MAX_REQSIZE_BLOCKS};
use crate::parse::values::*;
use iolab_opts::Arity::Words;

/// One XDD option: an entry of the shared option-table engine over
/// XDD's raw and validated configurations.
pub type OptSpec = iolab_opts::Entry<RawConfig, Config>;

/// What an entry's example must do.
pub type Check = iolab_opts::Check<Config>;

/// Finds an option by name or alias (case-insensitive).
pub fn lookup(name: &str) -> Option<&'static OptSpec> {
    iolab_opts::dash::lookup(OPTIONS, name)
}

macro_rules! secs_t {
    ($field:ident) => {
        |c, r, t| {
            let v = c.seconds("seconds")?;
            r.set(t, move |o| o.$field = v);
            Ok(())
        }
    };
}
macro_rules! num_t {
    ($field:ident, $what:expr, $reader:ident) => {
        |c, r, t| {
            let v = c.$reader($what)?;
            r.set(t, move |o| o.$field = v.into());
            Ok(())
        }
    };
}
macro_rules! path_g {
    ($field:ident) => {
        |c, r, _| {
            r.global.$field = Some(c.value("file name")?.to_string());
            Ok(())
        }
    };
}

use crate::parse::config::Action;

/// Every option of XDD 7.0 (section 5.1 and the cheat sheet) plus iolab's
/// own (`-engine`, `-force`, `--json`). Order is the help order.
pub static OPTIONS: &[OptSpec] = &[
    OptSpec { name: "blocksize", short: None, aliases: &["bs"], arity: Words, scoped: true, args: "<bytes>",
        help: "bytes per block, the unit of -reqsize and offsets (default 1024)",
        apply: |c, r, t| { let v = c.count("bytes per block", 1, MAX_BLOCKSIZE)?; r.set(t, move |o| o.blocksize = v); Ok(()) },
        example: "-bs 4096", check: Check::Ok(|c| c.targets[0].blocksize == 4096) },
    OptSpec { name: "bytes", short: None, aliases: &["b"], arity: Words, scoped: true, args: "<bytes>",
        help: "bytes to transfer per pass; the last request is shortened to hit it exactly (-numreqs wins)",
        apply: |c, r, t| amount(c, r, t, 1),
        example: "-bytes 1000", check: Check::Ok(|c| c.targets[0].bytes == Some(1000)) },
    OptSpec { name: "kbytes", short: None, aliases: &["kb"], arity: Words, scoped: true, args: "<KiB>",
        help: "1024-byte units to transfer per pass (-numreqs wins)",
        apply: |c, r, t| amount(c, r, t, 1 << 10),
        example: "-kb 3", check: Check::Ok(|c| c.targets[1].bytes == Some(3072)) },
    OptSpec { name: "mbytes", short: None, aliases: &["mb"], arity: Words, scoped: true, args: "<MiB>",
        help: "2^20-byte units to transfer per pass (-numreqs wins)",
        apply: |c, r, t| amount(c, r, t, 1 << 20),
        example: "-mb target 1 2", check: Check::Ok(|c| c.targets[1].bytes == Some(2 << 20) && c.targets[0].bytes.is_none()) },
    OptSpec { name: "gbytes", short: None, aliases: &["gb"], arity: Words, scoped: true, args: "<GiB>",
        help: "2^30-byte units to transfer per pass (-numreqs wins)",
        apply: |c, r, t| amount(c, r, t, 1 << 30),
        example: "-gbytes 1", check: Check::Ok(|c| c.targets[0].bytes == Some(1 << 30)) },
    OptSpec { name: "numreqs", short: None, aliases: &["nr"], arity: Words, scoped: true, args: "<count>",
        help: "requests per pass; takes precedence over -bytes/-kbytes/-mbytes/-gbytes",
        apply: |c, r, t| { let v = c.positive("number of requests")?; r.set(t, move |o| o.numreqs = Some(v)); Ok(()) },
        example: "-nr 7", check: Check::Ok(|c| c.targets[0].numreqs == Some(7)) },
    OptSpec { name: "reqsize", short: None, aliases: &["rs"], arity: Words, scoped: true, args: "<blocks>",
        help: "blocks per request (default 128)",
        apply: |c, r, t| { let v = c.count("blocks per request", 1, MAX_REQSIZE_BLOCKS)?; r.set(t, move |o| o.reqsize = v); Ok(()) },
        example: "-rs 8", check: Check::Ok(|c| c.targets[0].xfer_bytes() == 8192) },
    OptSpec { name: "op", short: None, aliases: &["operation"], arity: Words, scoped: true, args: "read|write|noop",
        help: "the operation: read, write, or noop (no I/O)",
        apply: op,
        example: "-op read -op target 1 write", check: Check::Ok(|c| c.targets[0].op == Op::Read && c.targets[1].op == Op::Write) },
    OptSpec { name: "rwratio", short: None, aliases: &["rw"], arity: Words, scoped: true, args: "<percent read>",
        help: "percent of operations that read (0..100); the rest write",
        apply: rwratio,
        example: "-rwratio 30.5", check: Check::Ok(|c| c.targets[0].read_percent() == 30.5) },
    OptSpec { name: "target", short: None, aliases: &[], arity: Words, scoped: false, args: "<name>",
        help: "adds one target (file, block device, or `null` for no I/O)",
        apply: |c, r, _| { let n = c.value("target name")?.to_string(); r.names.push(n); Ok(()) },
        example: "-target x -target y", check: Check::Ok(|c| c.targets.len() == 4 && c.targets[3].name == "y") },
    OptSpec { name: "targets", short: None, aliases: &[], arity: Words, scoped: false, args: "<N> <name1> ... <nameN> | -<N> <name>",
        help: "adds N targets after those already named (-N NAME: one name N times); targets are numbered from 0 in the order named",
        apply: |c, r, _| targets(c, r),
        example: "-targets 3 p q r", check: Check::Ok(|c| c.targets.len() == 5 && c.targets[4].name == "r") },
    OptSpec { name: "targetdir", short: None, aliases: &["td"], arity: Words, scoped: true, args: "<directory/>",
        help: "prefix put before target names (include the trailing /)",
        apply: |c, r, t| { let d = c.value("directory")?.to_string(); r.set(t, move |o| o.targetdir = d.clone()); Ok(()) },
        example: "-targetdir /tmp/", check: Check::Ok(|c| c.targets[0].path == "/tmp/a") },
    OptSpec { name: "queuedepth", short: None, aliases: &["qd"], arity: Words, scoped: true, args: "<N>",
        help: "QThreads per target (io_uring: ring depth)",
        apply: |c, r, t| { let v = c.count("queue depth", 1, MAX_QTHREADS)?; r.set(t, move |o| o.queuedepth = v); Ok(()) },
        example: "-qd 4", check: Check::Ok(|c| c.targets[0].queuedepth == 4) },
    OptSpec { name: "passes", short: None, aliases: &["p"], arity: Words, scoped: false, args: "<N>",
        help: "number of passes (default 1)",
        apply: |c, r, _| { r.global.passes = c.count("number of passes", 1, MAX_PASSES)?; Ok(()) },
        example: "-passes 3", check: Check::Ok(|c| c.global.passes == 3) },
    OptSpec { name: "passdelay", short: None, aliases: &["pdelay", "delay"], arity: Words, scoped: false, args: "<seconds>",
        help: "seconds between passes (not counted in any rate)",
        apply: |c, r, _| { r.global.passdelay_s = c.seconds("seconds")?; Ok(()) },
        example: "-pdelay 0.5", check: Check::Ok(|c| c.global.passdelay_s == 0.5) },
    OptSpec { name: "runtime", short: None, aliases: &["rt"], arity: Words, scoped: false, args: "<seconds>",
        help: "stop the whole run after this many seconds",
        apply: |c, r, _| { r.global.runtime_s = c.seconds("seconds")?; Ok(()) },
        example: "-rt 2", check: Check::Ok(|c| c.global.runtime_s == 2.0) },
    OptSpec { name: "timelimit", short: None, aliases: &["tl"], arity: Words, scoped: true, args: "<seconds>",
        help: "end each pass of a target after this many seconds",
        apply: secs_t!(timelimit_s),
        example: "-tl 10", check: Check::Ok(|c| c.targets[0].timelimit_s == 10.0) },
    OptSpec { name: "startdelay", short: None, aliases: &["sd"], arity: Words, scoped: true, args: "<seconds>",
        help: "seconds a target waits before its first pass (not counted)",
        apply: secs_t!(startdelay_s),
        example: "-startdelay target 1 1.5", check: Check::Ok(|c| c.targets[1].startdelay_s == 1.5) },
    OptSpec { name: "targetstartdelay", short: None, aliases: &["tsd"], arity: Words, scoped: true, args: "<seconds>",
        help: "target N waits N times this before each pass (not counted)",
        apply: secs_t!(targetstartdelay_s),
        example: "-targetstartdelay 0.2", check: Check::Ok(|c| c.targets[0].targetstartdelay_s == 0.2) },
    OptSpec { name: "startoffset", short: None, aliases: &["sto"], arity: Words, scoped: true, args: "<block>",
        help: "first block of the I/O range (default 0)",
        apply: num_t!(startoffset, "block number", u64),
        example: "-startoffset 16", check: Check::Ok(|c| c.targets[0].startoffset == 16) },
    OptSpec { name: "passoffset", short: None, aliases: &["po"], arity: Words, scoped: true, args: "<blocks>",
        help: "blocks the range moves forward on each pass",
        apply: num_t!(passoffset, "blocks", u64),
        example: "-passoffset 64", check: Check::Ok(|c| c.targets[0].passoffset == 64) },
    OptSpec { name: "targetoffset", short: None, aliases: &["procoffset", "to"], arity: Words, scoped: true, args: "<blocks>",
        help: "target N starts N times this many blocks further in",
        apply: num_t!(targetoffset, "blocks", u64),
        example: "-targetoffset 1024", check: Check::Ok(|c| c.targets[1].targetoffset == 1024) },
    OptSpec { name: "seek", short: None, aliases: &["s"], arity: Words, scoped: true,
        args: "random|stagger [<stride blocks>]|none|sequential|range <blocks>|seed <n>|interleave <n>|save <file>|load <file>|disthist <n>|seekhist <n>",
        help: "access pattern within the range; repeat -seek for each setting",
        apply: seek,
        example: "-seek random -seek range 4000 -seek seed 9", check: Check::Ok(|c| c.targets[0].seek.pattern == SeekPattern::Random && c.targets[0].seek.range_blocks == Some(4000) && c.targets[0].seek.seed == 9) },
    OptSpec { name: "randomize", short: None, aliases: &["rand"], arity: Words, scoped: true, args: "",
        help: "new random locations on every pass",
        apply: |_, r, t| flag_t(r, t, |o| o.randomize = true),
        example: "-randomize", check: Check::Ok(|c| c.targets[0].randomize) },
    OptSpec { name: "dio", short: None, aliases: &["directio"], arity: Words, scoped: true, args: "",
        help: "O_DIRECT with aligned buffers (reported when the file system refuses it)",
        apply: |_, r, t| flag_t(r, t, |o| o.dio = true),
        example: "-dio target 0", check: Check::Ok(|c| c.targets[0].dio && !c.targets[1].dio) },
    OptSpec { name: "preallocate", short: None, aliases: &["pa"], arity: Words, scoped: true, args: "<bytes>",
        help: "reserve this many bytes (fallocate) before writing a regular file",
        apply: |c, r, t| { let v = c.count("bytes", 0, i64::MAX as u64)?; r.set(t, move |o| o.preallocate = v); Ok(()) },
        example: "-op write -preallocate 1m", check: Check::Ok(|c| c.targets[0].preallocate == 1 << 20) },
    OptSpec { name: "createnewfiles", short: None, aliases: &["cnf"], arity: Words, scoped: true, args: "",
        help: "a new file NAME.00000001, NAME.00000002, ... for every pass (XDD's names)",
        apply: |_, r, t| flag_t(r, t, |o| o.createnewfiles = true),
        example: "-op write -createnewfiles", check: Check::Ok(|c| c.targets[0].createnewfiles) },
    OptSpec { name: "recreatefiles", short: None, aliases: &["recreate"], arity: Words, scoped: true, args: "",
        help: "delete and re-create the file before every pass",
        apply: |_, r, t| flag_t(r, t, |o| o.recreatefiles = true),
        example: "-op write -recreatefiles", check: Check::Ok(|c| c.targets[0].recreatefiles) },
    OptSpec { name: "reopen", short: None, aliases: &["reop"], arity: Words, scoped: true, args: "",
        help: "close and re-open the file before every pass",
        apply: |_, r, t| flag_t(r, t, |o| o.reopen = true),
        example: "-reopen", check: Check::Ok(|c| c.targets[0].reopen) },
    OptSpec { name: "deletefile", short: None, aliases: &["del"], arity: Words, scoped: true, args: "",
        help: "delete the target file at the end of the run",
        apply: |_, r, t| flag_t(r, t, |o| o.deletefile = true),
        example: "-deletefile", check: Check::Ok(|c| c.targets[0].deletefile) },
    OptSpec { name: "syncwrite", short: None, aliases: &["sw"], arity: Words, scoped: true, args: "[0|1]",
        help: "fsync the target at the end of each pass (timed)",
        apply: syncwrite,
        example: "-syncwrite", check: Check::Ok(|c| c.targets[0].syncwrite) },
    OptSpec { name: "flushwrite", short: None, aliases: &["fw"], arity: Words, scoped: true, args: "<ops>",
        help: "fsync the target after every N writes",
        apply: num_t!(flushwrite, "number of writes", u64),
        example: "-flushwrite 10", check: Check::Ok(|c| c.targets[0].flushwrite == 10) },
    OptSpec { name: "throttle", short: None, aliases: &["throt"], arity: Words, scoped: true, args: "ops <ops/s> | bw <MB/s> | var <percent>",
        help: "smooth rate limit per target (bw in 10^6 bytes/s; var jitters each slot)",
        apply: throttle,
        example: "-throttle target 1 ops 7.8", check: Check::Ok(|c| c.targets[1].throttle == Some(ThrottleSpec { kind: ThrottleKind::Ops, rate: 7.8, variance_pct: 0.0 }) && c.targets[0].throttle.is_none()) },
    OptSpec { name: "datapattern", short: None, aliases: &["dp", "pattern"], arity: Words, scoped: true,
        args: "<char>|0xNN|random|compress <pct>|dedupe <pct>|sequenced|prefix <hex>|inverse|ascii <text>|hex <digits>|replicate|lfpat|ltpat|cjtpat|crpat|cspat|file <path>|wholefile [<path>]",
        help: "what writes put in the buffer (default: unique incompressible 4 KiB blocks; 0x00 is XDD's zeros); compress/dedupe PCT make that share compressible/duplicated; repeat to combine",
        apply: datapattern,
        example: "-dp sequenced -dp prefix ab -dp inverse", check: Check::Ok(|c| { c.targets[0].datapattern.is_sequenced() && c.targets[0].datapattern.build().is_ok_and(|p| p.inverse && p.prefix == Some((0xab, 8))) }) },
    OptSpec { name: "verify", short: None, aliases: &[], arity: Words, scoped: true, args: "location|contents",
        help: "check each read: sequenced location words, or the whole pattern",
        apply: |c, r, t| { let k = c.keyword("verify kind", &["location", "contents"])?; let v = if k == "location" { VerifyKind::Location } else { VerifyKind::Contents }; r.set(t, move |o| o.verify = Some(v)); Ok(()) },
        example: "-verify contents", check: Check::Ok(|c| c.targets[0].verify == Some(VerifyKind::Contents)) },
    OptSpec { name: "maxerrors", short: None, aliases: &[], arity: Words, scoped: false, args: "<N>",
        help: "end a target's pass after N errors (0 = no limit)",
        apply: |c, r, _| { r.global.maxerrors = c.u64("number of errors")?; Ok(()) },
        example: "-maxerrors 5", check: Check::Ok(|c| c.global.maxerrors == 5) },
    OptSpec { name: "maxerrorstoprint", short: None, aliases: &["mep"], arity: Words, scoped: false, args: "<N>",
        help: "print at most N error messages; the rest are only counted",
        apply: |c, r, _| { r.global.maxerrorstoprint = c.u64("number of errors")?; Ok(()) },
        example: "-maxerrorstoprint 2", check: Check::Ok(|c| c.global.maxerrorstoprint == 2) },
    OptSpec { name: "stoponerror", short: None, aliases: &["soe"], arity: Words, scoped: false, args: "",
        help: "stop the whole run at the first error",
        apply: |_, r, _| { r.global.stoponerror = true; Ok(()) },
        example: "-stoponerror", check: Check::Ok(|c| c.global.stoponerror) },
    OptSpec { name: "ordering", short: None, aliases: &["order", "or"], arity: Words, scoped: true, args: "[storage|both] serial|loose|none",
        help: "when QThread N+1 may issue: after op N completes, after it is issued, or freely",
        apply: ordering_opt,
        example: "-ordering storage loose", check: Check::Ok(|c| c.targets[0].ordering == Ordering::Loose) },
    OptSpec { name: "serialordering", short: None, aliases: &["so"], arity: Words, scoped: true, args: "",
        help: "same as -ordering storage serial",
        apply: |_, r, t| ordering(r, t, Ordering::Serial),
        example: "-serialordering", check: Check::Ok(|c| c.targets[0].ordering == Ordering::Serial) },
    OptSpec { name: "looseordering", short: None, aliases: &["lo"], arity: Words, scoped: true, args: "",
        help: "same as -ordering storage loose",
        apply: |_, r, t| ordering(r, t, Ordering::Loose),
        example: "-looseordering", check: Check::Ok(|c| c.targets[0].ordering == Ordering::Loose) },
    OptSpec { name: "noordering", short: None, aliases: &["no"], arity: Words, scoped: true, args: "",
        help: "same as -ordering storage none (the default)",
        apply: |_, r, t| ordering(r, t, Ordering::None),
        example: "-serialordering -noordering", check: Check::Ok(|c| c.targets[0].ordering == Ordering::None) },
    OptSpec { name: "lockstep", short: None, aliases: &["ls"], arity: Words, scoped: false,
        args: "<master> <slave> time|op|percent|mbytes|kbytes <n> time|op|mbytes|kbytes <n> wait|run complete|stop",
        help: "the master releases the slave every <when>; the slave then does <what>",
        apply: |c, r, _| lockstep(c, r),
        example: "-lockstep 0 1 op 1 op 1 wait complete", check: Check::Ok(|c| c.global.lockstep.len() == 1 && c.global.lockstep[0].what == Measure::Op(1)) },
    OptSpec { name: "starttrigger", short: None, aliases: &["st"], arity: Words, scoped: false, args: "<A> <B> time|op|percent|mbytes|kbytes <n>",
        help: "target B starts when target A reaches the condition",
        apply: |c, r, _| trigger(c, r, true),
        example: "-starttrigger 0 1 op 10", check: Check::Ok(|c| c.global.starttriggers[0].when == Measure::Op(10)) },
    OptSpec { name: "stoptrigger", short: None, aliases: &["et"], arity: Words, scoped: false, args: "<A> <B> time|op|percent|mbytes|kbytes <n>",
        help: "target B stops when target A reaches the condition",
        apply: |c, r, _| trigger(c, r, false),
        example: "-stoptrigger 0 1 percent 50", check: Check::Ok(|c| c.global.stoptriggers[0].to == 1) },
    OptSpec { name: "syncio", short: None, aliases: &["sio"], arity: Words, scoped: false, args: "<N>",
        help: "all targets meet at a barrier every N operations",
        apply: |c, r, _| { r.global.syncio = c.u64("number of operations")?; Ok(()) },
        example: "-syncio 4", check: Check::Ok(|c| c.global.syncio == 4) },
    OptSpec { name: "nobarrier", short: None, aliases: &["nb"], arity: Words, scoped: false, args: "",
        help: "targets do not wait for each other at the start of each pass",
        apply: |_, r, _| { r.global.nobarrier = true; Ok(()) },
        example: "-nobarrier", check: Check::Ok(|c| c.global.nobarrier) },
    OptSpec { name: "processor", short: None, aliases: &["pr"], arity: Words, scoped: true, args: "<cpu>",
        help: "run a target's threads on this processor (`-processor target N CPU`)",
        apply: |c, r, t| { let p = c.index("processor number")?; r.set(t, move |o| o.processor = Some(p)); Ok(()) },
        example: "-processor target 1 0", check: Check::Ok(|c| c.targets[1].processor == Some(0)) },
    OptSpec { name: "singleproc", short: None, aliases: &["sp"], arity: Words, scoped: false, args: "<cpu>",
        help: "run every thread on this processor",
        apply: |c, r, _| { r.global.singleproc = Some(c.index("processor number")?); Ok(()) },
        example: "-singleproc 0", check: Check::Ok(|c| c.global.singleproc == Some(0)) },
    OptSpec { name: "roundrobin", short: None, aliases: &["rr"], arity: Words, scoped: false, args: "<N>|all",
        help: "spread threads over N processors (or all)",
        apply: |c, r, _| { let v = c.value("number of processors or 'all'")?; r.global.roundrobin = Some(if v.eq_ignore_ascii_case("all") { RoundRobin::All } else { RoundRobin::Count(v.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| c.err(format!("'{v}' is not a positive number or 'all'")))?) }); Ok(()) },
        example: "-roundrobin all", check: Check::Ok(|c| c.global.roundrobin == Some(RoundRobin::All)) },
    OptSpec { name: "maxpri", short: None, aliases: &["maximumpriority"], arity: Words, scoped: false, args: "",
        help: "real-time (SCHED_FIFO) priority for every thread, when permitted",
        apply: |_, r, _| { r.global.maxpri = true; Ok(()) },
        example: "-maxpri", check: Check::Ok(|c| c.global.maxpri) },
    OptSpec { name: "processlock", short: None, aliases: &["plock"], arity: Words, scoped: false, args: "",
        help: "lock the process in memory (mlockall), when permitted",
        apply: |_, r, _| { r.global.processlock = true; Ok(()) },
        example: "-plock", check: Check::Ok(|c| c.global.processlock) },
    OptSpec { name: "nomemlock", short: None, aliases: &["nomlock"], arity: Words, scoped: false, args: "",
        help: "do not lock the I/O buffers in memory",
        apply: |_, r, _| { r.global.memlock = false; Ok(()) },
        example: "-nomemlock", check: Check::Ok(|c| !c.global.memlock) },
    OptSpec { name: "noproclock", short: None, aliases: &["noplock"], arity: Words, scoped: false, args: "",
        help: "do not lock the process in memory",
        apply: |_, r, _| { r.global.processlock = false; Ok(()) },
        example: "-plock -noproclock", check: Check::Ok(|c| !c.global.processlock) },
    OptSpec { name: "maxall", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "same as -maxpri -processlock",
        apply: |_, r, _| { r.global.maxpri = true; r.global.processlock = true; Ok(()) },
        example: "-maxall", check: Check::Ok(|c| c.global.maxpri && c.global.processlock) },
    OptSpec { name: "minall", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "same as -noproclock -nomemlock",
        apply: |_, r, _| { r.global.processlock = false; r.global.memlock = false; Ok(()) },
        example: "-minall", check: Check::Ok(|c| !c.global.processlock && !c.global.memlock) },
    OptSpec { name: "memalign", short: None, aliases: &["mal"], arity: Words, scoped: true, args: "<bytes>",
        help: "I/O buffer alignment, a power of two (default: page size)",
        apply: memalign,
        example: "-memalign 8192", check: Check::Ok(|c| c.targets[0].memalign == 8192) },
    OptSpec { name: "sharedmemory", short: None, aliases: &["shm"], arity: Words, scoped: true, args: "",
        help: "I/O buffers in System V shared memory (shmget/shmat)",
        apply: |_, r, t| flag_t(r, t, |o| o.sharedmemory = true),
        example: "-sharedmemory", check: Check::Ok(|c| c.targets[0].sharedmemory) },
    OptSpec { name: "output", short: None, aliases: &["o"], arity: Words, scoped: false, args: "<file>",
        help: "results to this file instead of standard output",
        apply: path_g!(output),
        example: "-output r.txt", check: Check::Ok(|c| c.global.output.as_deref() == Some("r.txt")) },
    OptSpec { name: "csvout", short: None, aliases: &["csvo"], arity: Words, scoped: false, args: "<file>",
        help: "results also as comma-separated values",
        apply: path_g!(csvout),
        example: "-csvout r.csv", check: Check::Ok(|c| c.global.csvout.is_some()) },
    OptSpec { name: "combinedout", short: None, aliases: &["combo"], arity: Words, scoped: false, args: "<file>",
        help: "append the COMBINED rows to this file",
        apply: path_g!(combinedout),
        example: "-combinedout all.txt", check: Check::Ok(|c| c.global.combinedout.is_some()) },
    OptSpec { name: "errout", short: None, aliases: &["eo"], arity: Words, scoped: false, args: "<file>",
        help: "error messages to this file instead of standard error",
        apply: path_g!(errout),
        example: "-errout e.txt", check: Check::Ok(|c| c.global.errout.is_some()) },
    OptSpec { name: "json", short: None, aliases: &[], arity: Words, scoped: false, args: "<file>",
        help: "(iolab) versioned JSON document of config, environment and results; also --json",
        apply: path_g!(json),
        example: "--json r.json", check: Check::Ok(|c| c.global.json.as_deref() == Some("r.json")) },
    OptSpec { name: "id", short: None, aliases: &["identifier"], arity: Words, scoped: false, args: "<text>|commandline",
        help: "identification shown with the results; repeats concatenate",
        apply: |c, r, _| id(c, r),
        example: "-id first -id second", check: Check::Ok(|c| c.global.id == ["first", "second"]) },
    OptSpec { name: "outputformat", short: None, aliases: &["ofmt"], arity: Words, scoped: false, args: "new|add <+TOKEN+TOKEN...>",
        help: "choose (new) or append (add) result columns; tokens as in section 8.2",
        apply: |c, r, _| outputformat(c, r),
        example: "-outputformat new +PASS+TARGET+BANDWIDTH", check: Check::Ok(|c| c.global.outputformat.replace && c.global.outputformat.tokens.len() == 3) },
    OptSpec { name: "deskew", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "also report bandwidth over the window in which every target was running",
        apply: |_, r, _| { r.global.deskew = true; Ok(()) },
        example: "-deskew", check: Check::Ok(|c| c.global.deskew) },
    OptSpec { name: "verbose", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "TARGET_PASS and TARGET_AVERAGE rows",
        apply: |_, r, _| { r.global.verbose = true; Ok(()) },
        example: "-verbose", check: Check::Ok(|c| c.global.verbose) },
    OptSpec { name: "qthreadinfo", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "QUEUE_PASS rows, one per QThread per pass",
        apply: |_, r, _| { r.global.qthreadinfo = true; Ok(()) },
        example: "-qthreadinfo", check: Check::Ok(|c| c.global.qthreadinfo) },
    OptSpec { name: "percentcpu", short: None, aliases: &["pcpu"], arity: Words, scoped: false, args: "absolute|relative",
        help: "Pct_CPU relative to one CPU (default) or to all CPUs (absolute)",
        apply: |c, r, _| { r.global.percentcpu_absolute = c.keyword("mode", &["absolute", "relative"])? == "absolute"; Ok(()) },
        example: "-percentcpu absolute", check: Check::Ok(|c| c.global.percentcpu_absolute) },
    OptSpec { name: "heartbeat", short: None, aliases: &["hb"], arity: Words, scoped: true,
        args: "<seconds>|ops|bytes|kbytes|mbytes|gbytes|bw|iops|pct|etc|hostname|target|tod|elapsed|lf|output <prefix>",
        help: "progress lines every N seconds; repeat to add figures",
        apply: heartbeat,
        example: "-hb 1 -hb bw -hb output hb", check: Check::Ok(|c| c.global.heartbeat.interval_s == 1.0 && c.global.heartbeat.bw && c.global.heartbeat.output.is_some()) },
    OptSpec { name: "timestamps", short: None, aliases: &["ts", "timestamp"], arity: Words, scoped: true,
        args: "summary|detailed|normalize|output <prefix>|dump <prefix>|append|wrap|oneshot|size <n>|triggertime <s>|triggerop <n>",
        help: "record start and end of every operation; repeat to combine",
        apply: timestamps,
        example: "-ts detailed -ts output ts.write", check: Check::Ok(|c| c.targets[0].timestamps.detailed && c.targets[0].timestamps.output.as_deref() == Some("ts.write")) },
    OptSpec { name: "reportthreshold", short: None, aliases: &["report_threshold", "rept"], arity: Words, scoped: true, args: "<seconds>",
        help: "report the location of every operation slower than this",
        apply: secs_t!(reportthreshold_s),
        example: "-reportthreshold 0.5", check: Check::Ok(|c| c.targets[0].reportthreshold_s == 0.5) },
    OptSpec { name: "engine", short: None, aliases: &[], arity: Words, scoped: true, args: "qthreads|uring",
        help: "(iolab) I/O engine: blocking QThreads (default) or io_uring",
        apply: |c, r, t| { let e = if c.keyword("engine", &["qthreads", "sync", "uring", "io_uring"])?.contains("uring") { EngineKind::Uring } else { EngineKind::Qthreads }; r.set(t, move |o| o.engine = e); Ok(()) },
        example: "-engine target 1 uring", check: Check::Ok(|c| c.targets[1].engine == EngineKind::Uring && c.targets[0].engine == EngineKind::Qthreads) },
    OptSpec { name: "force", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "(iolab) allow writing to a block device that holds a file system, partition table or mount",
        apply: |_, r, _| { r.global.force = true; Ok(()) },
        example: "-force", check: Check::Ok(|c| c.global.force) },
    OptSpec { name: "dryrun", short: None, aliases: &["dry"], arity: Words, scoped: false, args: "",
        help: "print the preamble and plan, then stop before any I/O",
        apply: |_, r, _| { r.global.dryrun = true; Ok(()) },
        example: "-dryrun", check: Check::Ok(|c| c.global.dryrun) },
    OptSpec { name: "setup", short: None, aliases: &[], arity: Words, scoped: false, args: "<file>",
        help: "read options from a text file, inserted where -setup stands",
        apply: |c, _, _| Err(c.err("internal: -setup is expanded before parsing")),
        // The tests make run.setup (holding `-passes 3`) before running this.
        example: "-setup run.setup", check: Check::Ok(|c| c.global.passes == 3) },
    OptSpec { name: "help", short: None, aliases: &["h"], arity: Words, scoped: false, args: "[option]",
        help: "help on one option, or the list of options",
        // The option asked about may be typed with its dash (`-help -op`).
        apply: |c, r, _| { let o = c.any_word().map(str::to_string); action(r, Action::Help(o)) },
        example: "-help op", check: Check::Action },
    OptSpec { name: "fullhelp", short: None, aliases: &["exthelp"], arity: Words, scoped: false, args: "",
        help: "every option with a one-line explanation",
        apply: |_, r, _| action(r, Action::FullHelp),
        example: "-fullhelp", check: Check::Action },
    OptSpec { name: "version", short: None, aliases: &["ver"], arity: Words, scoped: false, args: "",
        help: "the version of this program",
        apply: |_, r, _| action(r, Action::Version),
        example: "-version", check: Check::Action },
    OptSpec { name: "endtoend", short: None, aliases: &["e2e"], arity: Words, scoped: true,
        args: "issource|isdestination|destination <host[:port[,n]]>|port <n>|portcount <n>|key <file or - for stdin>|timeout <s>|sockbuf <bytes>|noclobber|partial <name>",
        help: "network copy: the source reads its target and sends it to the destination, which writes it; start the destination first (docs/e2e.md)",
        apply: crate::e2e::args::e2e_option,
        example: "-e2e target 0 issource destination h1:5000,2 -e2e target 0 destination h2:6000,2", check: Check::Ok(|c| c.targets[0].e2e.issource && c.targets[0].queuedepth == 4 && c.targets[0].e2e.destinations.len() == 2 && !c.targets[1].e2e.any()) },
    OptSpec { name: "restart", short: None, aliases: &["rst"], arity: Words, scoped: true, args: "enable|frequency <s>|file <name>|offset <bytes>",
        help: "end-to-end restart: the destination records how much is written and durable; rerun with -restart to copy only the rest",
        apply: crate::e2e::args::restart_option,
        example: "-restart enable frequency 2 -e2e isdestination destination h -e2e target 1 port 5000", check: Check::Ok(|c| c.targets[0].restart.enable && c.targets[0].restart.frequency_s == Some(2.0)) },
    OptSpec { name: "timeserver", short: None, aliases: &["tsvr"], arity: Words, scoped: false, args: "host <name>|port <n>|bounce <n>|key <file>",
        help: "the global clock (iolab timeserver on HOST, port [2000], exchanges [100], shared key file); with -starttime, every host starts together",
        apply: timeserver,
        example: "-timeserver host ts1 port 2100 bounce 5", check: Check::Ok(|c| c.global.timeserver == Some(crate::parse::config::TimeServer { host: "ts1".into(), port: 2100, bounce: 5, key: None })) },
    OptSpec { name: "starttime", short: None, aliases: &["stime"], arity: Words, scoped: false, args: "<global seconds>",
        help: "start every target at this global time (seconds, as `iolab gettime` prints it); needs -timeserver",
        apply: |c, r, _| { r.global.starttime_s = Some(c.count("global time in seconds", 0, u64::MAX / 1_000_000_000)?); Ok(()) },
        example: "-timeserver host ts1 -starttime 100", check: Check::Ok(|c| c.global.starttime_s == Some(100)) },
    OptSpec { name: "stats", short: None, aliases: &[], arity: Words, scoped: false, args: "<config.sh|config.toml|local[,Ns]>",
        help: "collect CPU, memory, disk and network statistics during the run (as `iolab stats`) into the --json document",
        apply: |c, r, _| { r.global.stats = Some(c.value("statistics configuration")?.to_string()); Ok(()) },
        example: "-stats local,1s", check: Check::Ok(|c| c.global.stats.as_deref() == Some("local,1s")) },
    OptSpec { name: "store", short: None, aliases: &[], arity: Words, scoped: false, args: "<file>",
        help: "(iolab) record the run in the results store at this path (SQLite; see `iolab results`); also --store",
        apply: path_g!(store),
        example: "--store runs.sqlite", check: Check::Ok(|c| c.global.store.as_deref() == Some("runs.sqlite")) },
    OptSpec { name: "sgio", short: None, aliases: &["scsigeneric"], arity: Words, scoped: false, args: "",
        help: "SCSI generic I/O: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (SCSI generic pass-through); use the block device with -dio")),
        example: "-sgio", check: Check::Err("not supported") },
    OptSpec { name: "congestion", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "XDD's TCP congestion setting for its network targets: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's TCP congestion setting for its network targets); the end-to-end copy (-e2e) uses the system's")),
        example: "-congestion", check: Check::Err("not supported") },
    OptSpec { name: "cookie", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "XDD's network cookie: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's network cookie); the end-to-end copy authenticates each connection with a secret of its own")),
        example: "-cookie", check: Check::Err("not supported") },
    OptSpec { name: "debug", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "XDD's internal debug output: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's internal debug output); use -verbose")),
        example: "-debug", check: Check::Err("not supported") },
    OptSpec { name: "devicefile", short: None, aliases: &["devf"], arity: Words, scoped: false, args: "",
        help: "XDD's device-file targets: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's device-file targets); name the device itself as the target")),
        example: "-devicefile", check: Check::Err("not supported") },
    OptSpec { name: "extendedstats", short: None, aliases: &["extstats"], arity: Words, scoped: false, args: "",
        help: "XDD's extended statistics: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's extended statistics); the report's latency percentiles and --json carry iolab's")),
        example: "-extendedstats", check: Check::Err("not supported") },
    OptSpec { name: "interactive", short: None, aliases: &["inter"], arity: Words, scoped: false, args: "",
        help: "XDD's interactive mode: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's interactive mode); give the whole run on the command line")),
        example: "-interactive", check: Check::Err("not supported") },
    OptSpec { name: "multipath", short: None, aliases: &["mp"], arity: Words, scoped: false, args: "",
        help: "XDD's multipath I/O: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's multipath I/O); name each path's device as a target")),
        example: "-multipath", check: Check::Err("not supported") },
    OptSpec { name: "operationdelay", short: None, aliases: &["opdelay"], arity: Words, scoped: false, args: "",
        help: "a fixed delay between operations: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (a fixed delay between operations); pace them with -throttle ops")),
        example: "-operationdelay", check: Check::Err("not supported") },
    OptSpec { name: "pretruncate", short: None, aliases: &["pt"], arity: Words, scoped: false, args: "",
        help: "truncating the target before a pass: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (truncating the target before a pass); iolab never cuts a file it did not create: truncate it yourself, or let the run create it")),
        example: "-pretruncate", check: Check::Err("not supported") },
    OptSpec { name: "readafterwrite", short: None, aliases: &["raw"], arity: Words, scoped: false, args: "",
        help: "XDD's read-after-write over a socket: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's read-after-write over a socket); use the end-to-end copy (-e2e, docs/e2e.md)")),
        example: "-readafterwrite", check: Check::Err("not supported") },
    OptSpec { name: "writeafterread", short: None, aliases: &["war"], arity: Words, scoped: false, args: "",
        help: "XDD's write-after-read over a socket: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's write-after-read over a socket); use the end-to-end copy (-e2e, docs/e2e.md)")),
        example: "-writeafterread", check: Check::Err("not supported") },
    OptSpec { name: "reallyverbose", short: None, aliases: &["rv"], arity: Words, scoped: false, args: "",
        help: "XDD's debug-level verbosity: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's debug-level verbosity); use -verbose")),
        example: "-reallyverbose", check: Check::Err("not supported") },
    OptSpec { name: "unverbose", short: None, aliases: &["unv"], arity: Words, scoped: false, args: "",
        help: "XDD's -unverbose: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's -unverbose); leave out -verbose")),
        example: "-unverbose", check: Check::Err("not supported") },
    OptSpec { name: "targetin", short: None, aliases: &["tin"], arity: Words, scoped: false, args: "",
        help: "XDD's -targetin: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's -targetin); name the targets with -target or -targets")),
        example: "-targetin", check: Check::Err("not supported") },
    OptSpec { name: "targetout", short: None, aliases: &["tout"], arity: Words, scoped: false, args: "",
        help: "XDD's -targetout: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's -targetout); name the targets with -target or -targets")),
        example: "-targetout", check: Check::Err("not supported") },
    OptSpec { name: "timerinfo", short: None, aliases: &["ti"], arity: Words, scoped: false, args: "",
        help: "XDD's timer calibration report: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's timer calibration report); the report gives each operation's measured latency")),
        example: "-timerinfo", check: Check::Err("not supported") },
    OptSpec { name: "retry", short: None, aliases: &["ret"], arity: Words, scoped: false, args: "",
        help: "retrying a failed operation: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (retrying a failed operation); a failed operation is counted and reported, never retried; see -maxerrors")),
        example: "-retry", check: Check::Err("not supported") },
    OptSpec { name: "xni", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "XDD's XNI network layer: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's XNI network layer); the end-to-end copy runs over TCP")),
        example: "-xni", check: Check::Err("not supported") },
    OptSpec { name: "ibdevice", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "XDD's InfiniBand device for XNI: not supported",
        apply: |c, _, _| Err(c.err("not supported by iolab xdd (XDD's InfiniBand device for XNI); the end-to-end copy runs over TCP")),
        example: "-ibdevice", check: Check::Err("not supported") },
    OptSpec { name: "keepfiles", short: None, aliases: &[], arity: Words, scoped: false, args: "",
        help: "keep the files this run created when it fails or is interrupted (by default they are removed)",
        apply: |_, r, _| { r.global.keepfiles = true; Ok(()) },
        example: "-keepfiles", check: Check::Ok(|c| c.global.keepfiles) },
];

/// The usage line every help screen starts with.
const USAGE: &str = "Usage: xdd -op read|write -target <name> [options...]";

/// Help for one option (`-help NAME`), or None when no option has it.
pub fn help_for(name: &str) -> Option<String> {
    iolab_opts::dash::help_for(OPTIONS, "xdd", name)
}

/// Every option with its synopsis and explanation (`-fullhelp`).
pub fn full_help() -> String {
    iolab_opts::dash::full_help(OPTIONS, "xdd", USAGE)
}

/// The option names only (`-help` without an option).
pub fn short_help() -> String {
    iolab_opts::dash::short_help(
        OPTIONS,
        USAGE,
        "-help <option> explains one option; -fullhelp explains them all.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_example(o: &OptSpec) -> Result<crate::parse::Parsed, crate::error::UsageError> {
        run_line(o.example)
    }

    /// Runs an example's words after two targets and an amount, so that
    /// every example can run alone. `-setup`'s file is made first, in a
    /// directory of its own.
    fn run_line(example: &str) -> Result<crate::parse::Parsed, crate::error::UsageError> {
        let mut args: Vec<String> = "-targets 2 a b -numreqs 1"
            .split(' ')
            .map(String::from)
            .collect();
        let dir = std::env::temp_dir().join(format!(
            "iolab-xdd-example-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.setup"), "-passes 3\n").unwrap();
        let mut words = example.split_whitespace().peekable();
        while let Some(w) = words.next() {
            args.push(w.to_string());
            if w == "-setup" {
                let f = words.next().unwrap_or_default();
                args.push(dir.join(f).display().to_string());
            }
        }
        let got = crate::parse::parse(&args);
        std::fs::remove_dir_all(&dir).unwrap();
        got
    }

    /// Every example `-help OPTION` prints runs: none is a command line
    /// that would be refused.
    #[test]
    fn every_example_help_prints_runs() {
        let mut shown = 0;
        for o in OPTIONS {
            let help = help_for(o.name).unwrap();
            let Some(line) = help
                .lines()
                .find_map(|l| l.trim().strip_prefix("example: xdd "))
            else {
                continue;
            };
            shown += 1;
            assert!(
                run_line(line).is_ok(),
                "-help {}: `xdd {line}`: {:?}",
                o.name,
                run_line(line).err()
            );
        }
        // Only the options XDD has and iolab refuses show none.
        let refused = OPTIONS
            .iter()
            .filter(|o| matches!(o.check, Check::Err(_)))
            .count();
        assert_eq!(shown + refused, OPTIONS.len());
    }

    /// What the examples of -starttime and -setup showed before (refused
    /// command lines) is still refused, naming the option.
    #[test]
    fn a_start_time_without_a_clock_and_a_missing_setup_file_are_refused() {
        for (line, option, text) in [
            ("-starttime 100", "starttime", "needs -timeserver"),
            ("-setup /nonexistent/xdd.setup", "setup", "cannot read"),
        ] {
            let e = run_line(line).unwrap_err();
            assert!(
                e.option == option && e.to_string().contains(text),
                "{line}: {e}"
            );
        }
    }

    #[test]
    fn every_entry_example() {
        for o in OPTIONS {
            let got = run_example(o);
            match (o.check, got) {
                (Check::Ok(f), Ok(crate::parse::Parsed::Run(c))) => {
                    assert!(f(&c), "-{}: example `{}` parsed wrongly", o.name, o.example)
                }
                (Check::Err(text), Err(e)) => assert!(
                    e.to_string().contains(text) && e.option == o.name,
                    "-{}: error `{e}` lacks `{text}` or the option name",
                    o.name
                ),
                (Check::Action, Ok(crate::parse::Parsed::Action(_))) => {}
                (_, other) => panic!(
                    "-{}: example `{}` gave {:?}",
                    o.name,
                    o.example,
                    other.err()
                ),
            }
        }
    }

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = OPTIONS
            .iter()
            .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn help_names_the_option() {
        assert!(help_for("-reqsize").unwrap().contains("blocks per request"));
        assert!(help_for("rs").unwrap().starts_with("-reqsize [target"));
        assert!(help_for("nosuch").is_none());
        assert!(full_help().contains("-lockstep"));
    }
}
