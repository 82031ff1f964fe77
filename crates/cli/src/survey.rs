//! `iolab survey`: the Lustre I/O kit's surveys. Parameters are flags and
//! also the kit's environment variables (`size=1024 thrhi=4 iolab survey
//! disk ...`); a flag wins over the variable. Every output line goes to
//! stdout and `${rslt}.summary` as it is measured; `${rslt}.detail` holds
//! the per-region/target figures; `--json` and `--csv` are written at the end.

use crate::exit;
use clap::{Args, Parser, Subcommand};
use iolab_core::env::{fs_info, host_info};
use iolab_core::Outcome;
use iolab_report::survey as fmt;
use iolab_results::{Envelope, Environment};
use iolab_survey::ParamError;
use serde::Serialize;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "iolab survey",
    about = "The Lustre I/O kit's surveys for any block device and file system",
    long_about = "The Lustre I/O kit's surveys for any block device and file system.\n\n\
        disk       sgpdd-survey: raw sequential O_DIRECT I/O on block devices (DESTROYS THEIR DATA)\n\
        obdfilter  object survey: objects x threads on target directories\n\
        ost        ost-survey: one file per target, to find the slow one\n\
        mds        mds-survey: create/lookup/getattr/setxattr/destroy\n\
        plot       CSV, gnuplot input and SVG/PNG charts from a .summary\n\n\
        Parameters are flags or the kit's environment variables (size=1024 thrhi=4 iolab survey disk DEV)."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// sgpdd-survey. WARNING: `write` overwrites every device given, from
    /// 1 MiB in up to 1 MiB + size, destroying whatever it holds (file
    /// systems, partition tables, data). A device that is mounted or holds
    /// any signature is refused unless --force.
    Disk(DiskArgs),
    /// obdfilter-survey on target directories or mount points: per target
    /// nobj objects (files) and thr threads; tests write, rewrite, read.
    /// Its files live in TARGET/iolab-obdfilter.<pid>/ and are removed at
    /// the end or on Ctrl-C.
    Obdfilter(ObdArgs),
    /// mds-survey on directories: create, lookup, md_getattr, setxattr,
    /// destroy by thrlo..thrhi threads in dir_count directories. Its files
    /// live in TARGET/iolab-mds.<pid>/ and are removed at the end or on Ctrl-C.
    /// On Lustre, targets may be MDT names (lustre-MDT0000), or absent:
    /// every active MDT.
    Mds(MdsArgs),
    /// ost-survey: write then read a file on each target directory, then
    /// worst/best, average +/- std dev, the per-target table and the slow
    /// targets (below 80% of the median or 2 std devs under the average).
    Ost(OstArgs),
    /// plot-obdfilter/plot-sgpdd: from a .summary of any survey, PREFIX.csv
    /// and per record size and test a gnuplot data file (.dat), script
    /// (.scr) and the chart (.svg, .png): figure against threads, one
    /// series per region/object/directory count.
    Plot(PlotArgs),
    #[command(hide = true, name = "obdfilter-agent")]
    ObdfilterAgent(AgentArgs),
}

/// Where the results go (the kit's `rslt` and `rslt_loc`), plus JSON/CSV.
#[derive(Args, Debug)]
struct Common {
    /// Result file prefix: writes PREFIX.summary (same as stdout) and
    /// PREFIX.detail. Default: RSLT_LOC/<survey>_<date@time>_<host>.
    #[arg(long, env = "rslt")]
    rslt: Option<String>,
    /// Directory for the default prefix.
    #[arg(long = "rslt-loc", env = "rslt_loc", default_value = "/tmp")]
    rslt_loc: String,
    /// Also write the results as JSON (an iolab results envelope).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Also write one CSV row per point and test.
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Collect CPU, memory, disk and network statistics during the survey
    /// (config.sh, config.toml or local[,Ns], as `iolab stats`) into --json.
    #[arg(long, value_name = "CONFIG")]
    stats: Option<String>,
    /// Record the survey in the results store at this path (see `iolab results`).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
    /// Storage backend the survey runs on: posix (the default), null (a
    /// sink: measures iolab itself) or s3 (objects, configured by the
    /// AWS_* environment variables). What each survey needs of it is
    /// checked before anything is created.
    #[arg(long, value_name = "NAME")]
    backend: Option<String>,
}

#[derive(Args, Debug)]
struct DiskArgs {
    /// Block devices or existing files (default: $scsidevs or $rawdevs).
    devices: Vec<PathBuf>,
    /// MB per device per action.
    #[arg(long, env = "size", default_value_t = 8192)]
    size: u64,
    /// Smallest record size, KB.
    #[arg(long, env = "rszlo", default_value_t = 1024)]
    rszlo: u64,
    /// Largest record size, KB (doubling from rszlo).
    #[arg(long, env = "rszhi", default_value_t = 1024)]
    rszhi: u64,
    /// Fewest concurrent regions per device.
    #[arg(long, env = "crglo", default_value_t = 1)]
    crglo: u64,
    /// Most concurrent regions per device (doubling from crglo).
    #[arg(long, env = "crghi", default_value_t = 256)]
    crghi: u64,
    /// Fewest threads per device.
    #[arg(long, env = "thrlo", default_value_t = 1)]
    thrlo: u64,
    /// Most threads per device (doubling from thrlo; points with fewer
    /// threads than regions or more than --max-queue per region are skipped).
    #[arg(long, env = "thrhi", default_value_t = 4096)]
    thrhi: u64,
    /// Actions in order: write and/or read.
    #[arg(long, env = "actions", default_value = "write read")]
    actions: String,
    /// Most threads on one region (the kit's SG_MAX_QUEUE).
    #[arg(long, default_value_t = 16)]
    max_queue: u64,
    /// Write even a device that is mounted or holds a file system,
    /// partition table or other signature: its data is destroyed.
    #[arg(long)]
    force: bool,
    /// Result line layout: `guide` (the I/O kit guide's `total_size ...
    /// thr 1 crg 1 180.45 MB/s 1 x 180.50 = 180.50 MB/s`, figures in
    /// `actions` order) or `kit` (the current script's padded line with
    /// `crg` before `thr` and action names).
    #[arg(long, default_value = "guide", value_parser = ["guide", "kit"])]
    layout: String,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct ObdArgs {
    /// Target directories or mount points, HOST:/DIR for one on another
    /// host (default: $targets or $OSTS).
    targets: Vec<String>,
    /// MB per target per test.
    #[arg(long, env = "size", default_value_t = 16384)]
    size: u64,
    /// Smallest record size, KB (whole pages).
    #[arg(long, env = "rszlo", default_value_t = 1024)]
    rszlo: u64,
    /// Largest record size, KB (doubling from rszlo).
    #[arg(long, env = "rszhi", default_value_t = 1024)]
    rszhi: u64,
    /// Fewest objects per target.
    #[arg(long, env = "nobjlo", default_value_t = 1)]
    nobjlo: u64,
    /// Most objects per target (doubling from nobjlo).
    #[arg(long, env = "nobjhi", default_value_t = 16)]
    nobjhi: u64,
    /// Fewest threads per target.
    #[arg(long, env = "thrlo", default_value_t = 1)]
    thrlo: u64,
    /// Most threads per target (doubling; a count not a multiple of the
    /// object count is skipped).
    #[arg(long, env = "thrhi", default_value_t = 16)]
    thrhi: u64,
    /// Tests in order; the first must be write (write rewrite read reread rewrite_again).
    #[arg(
        long = "tests",
        env = "tests_str",
        default_value = "write rewrite read"
    )]
    tests: String,
    /// How often each target's bandwidth is sampled for the [min, max] bracket, ms.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// Most buffer memory (threads x record size over all targets), KB.
    #[arg(long, default_value_t = 1024 * 1024)]
    max_buffer: u64,
    /// Remote shell for HOST:/DIR targets (default: $IOLAB_RSH, else ssh).
    #[arg(long)]
    rsh: Option<String>,
    /// The iolab binary on the other hosts.
    #[arg(long, default_value = "iolab")]
    remote_iolab: String,
    /// The kit's `case`: `disk` (the targets' file systems, local or
    /// HOST:/DIR) or `network` (targets are hosts: the requests go to an
    /// echo agent there, started through --rsh, which acknowledges and
    /// discards them). `netdisk` is refused (exit 2).
    #[arg(long = "case", env = "case", default_value = "disk")]
    case: String,
    /// case=network: the echo agent of target i listens on this port + i.
    #[arg(long, default_value_t = iolab_survey::echo::DEFAULT_PORT)]
    echo_port: u16,
    #[command(flatten)]
    common: Common,
}

/// One step of the object survey on this host's targets, run by the
/// coordinator through the remote shell (not for people).
#[derive(Args, Debug)]
struct AgentArgs {
    /// setup, create, test, destroy or teardown.
    step: String,
    /// The work directory's name in each target.
    #[arg(long)]
    work: String,
    #[arg(long, default_value_t = 1)]
    nobj: u64,
    #[arg(long, default_value = "write")]
    name: String,
    #[arg(long, default_value_t = 1 << 20)]
    rsz_bytes: u64,
    #[arg(long, default_value_t = 1)]
    count: u64,
    #[arg(long, default_value_t = 1)]
    thr: u64,
    #[arg(long, default_value_t = 1)]
    per_obj: u64,
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// `echo`: the port to listen on.
    #[arg(long, default_value_t = iolab_survey::echo::DEFAULT_PORT)]
    port: u16,
    /// This host's target directories.
    #[arg(last = true)]
    dirs: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct MdsArgs {
    /// Directories to test, or on Lustre MDT names such as
    /// lustre-MDT0000 (default: $targets; none on a Lustre client: every
    /// active MDT of its one Lustre mount).
    targets: Vec<PathBuf>,
    /// Fewest threads.
    #[arg(long, env = "thrlo", default_value_t = 4)]
    thrlo: u64,
    /// Most threads (doubling from thrlo).
    #[arg(long, env = "thrhi", default_value_t = 32)]
    thrhi: u64,
    /// Directories (1: all threads share one; N: thread t uses t mod N).
    /// Default: thrlo.
    #[arg(long = "dir-count", env = "dir_count")]
    dir_count: Option<u64>,
    /// Files per run, split over the threads.
    #[arg(long = "file-count", env = "file_count", default_value_t = 100000)]
    file_count: u64,
    /// Tests in order: first create, last destroy; also lookup, md_getattr, setxattr.
    #[arg(
        long = "tests",
        env = "tests_str",
        default_value = "create lookup md_getattr setxattr destroy"
    )]
    tests: String,
    /// First file number.
    #[arg(long = "start-number", env = "start_number", default_value_t = 2)]
    start_number: u64,
    /// How often each target's operation rate is sampled for [min, max], ms.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// The kit's `stripe_count`: OST objects per file created. On Lustre
    /// the survey's directories get it with `lfs setstripe -c N`;
    /// elsewhere above 0 is refused (exit 2). 0: the default layout.
    #[arg(long = "stripe-count", env = "stripe_count", default_value_t = 0)]
    stripe_count: u64,
    /// The kit's `layer`: `fs` (the file system's interface, as a client;
    /// the one iolab has). The kit's MDS layers mdd, mdt, osd are refused
    /// (exit 2) saying why.
    #[arg(long, env = "layer")]
    layer: Option<String>,
    /// The Lustre client mount in which MDT targets are surveyed (default:
    /// found in /proc/self/mounts). Directories given are then taken as
    /// Lustre directories. `lfs` is $LFS or found on PATH.
    #[arg(long = "lustre-mount", value_name = "DIR")]
    lustre_mount: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct OstArgs {
    /// Target directories or mount points, indexed from 0 (default: $targets).
    targets: Vec<PathBuf>,
    /// File size per target: a bare number is MB, as the kit's script
    /// reads `-s` (the manual says KB); or with a unit, `512K`, `64M`,
    /// `2G`: a whole number of MiB. Written and read 1 MiB at a time.
    #[arg(short = 's', long, env = "size", default_value = "30", value_parser = ost_size_mb)]
    size: u64,
    /// The one target is a Lustre mount: survey every active OST of it
    /// (`lfs osts`), one file striped on each (`lfs setstripe -c 1 -i N`).
    /// Automatic when the one target is on Lustre; `lfs` is $LFS or found
    /// on PATH.
    #[arg(long)]
    lustre: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// A .summary written by iolab survey (or by the kit).
    summary: PathBuf,
    /// Output prefix (default: the summary's path without .summary).
    #[arg(long, value_name = "PREFIX")]
    out: Option<String>,
    /// TrueType font for the charts' text (default: DejaVu Sans or Liberation
    /// Sans from the usual places; without one, charts have no labels).
    #[arg(long, env = "IOLAB_FONT")]
    font: Option<PathBuf>,
}

/// `ost -s`: a bare number is MB (the kit's script), else a size with a
/// binary unit that must come to a whole number of MiB.
fn ost_size_mb(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map_err(|e| format!("{t}: {e}"))
            .and_then(|mb| match mb {
                0 => Err("the size must be at least 1 MB".into()),
                _ => Ok(mb),
            });
    }
    let bytes = iolab_core::units::parse_size(t).map_err(|e| e.to_string())?;
    let mib = 1u64 << 20;
    if bytes == 0 || bytes % mib != 0 {
        return Err(format!(
            "{t} is not a whole number of MiB (files are written 1 MiB at a time); give e.g. 64M or 1G"
        ));
    }
    Ok(bytes / mib)
}

/// Entry point: `iolab survey <survey> ...`.
pub fn main(prog: &str, args: Vec<OsString>) -> ExitCode {
    let cli: Cli = match exit::parse_clap(prog, args.clone()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let line = command_line(prog, &args);
    match cli.cmd {
        Cmd::Disk(a) => disk(a, &line),
        Cmd::Obdfilter(a) => obdfilter(a, &line),
        Cmd::Mds(a) => mds(a, &line),
        Cmd::Ost(a) => ost(a, &line),
        Cmd::Plot(a) => plot(a),
        Cmd::ObdfilterAgent(a) => obdfilter_agent(a),
    }
}

/// Checks a command line as `iolab survey` would read it (for a sweep's
/// plan): clap's parse; the survey's parameters are checked when it
/// starts, before anything is created.
pub fn check_args(args: &[OsString]) -> Result<(), String> {
    let argv = std::iter::once(OsString::from("iolab survey")).chain(args.iter().cloned());
    match Cli::try_parse_from(argv).map_err(|e| e.to_string())?.cmd {
        Cmd::Plot(_) | Cmd::ObdfilterAgent(_) => {
            Err("a sweep runs surveys (disk, obdfilter, ost, mds), not plot".into())
        }
        _ => Ok(()),
    }
}

fn command_line(prog: &str, args: &[OsString]) -> String {
    let mut s = format!("iolab {prog}");
    for a in args {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

fn usage_error(survey: &str, e: &ParamError) -> ExitCode {
    eprintln!("iolab survey {survey}: {e}");
    exit::usage()
}

/// The kit's default prefix: `RSLT_LOC/<name>_<date@time>_<host>`.
fn prefix(c: &Common, name: &str) -> String {
    c.rslt.clone().unwrap_or_else(|| {
        let when = iolab_survey::strftime("%F@%R");
        format!(
            "{}/{name}_{when}_{}",
            c.rslt_loc,
            iolab_core::env::hostname()
        )
    })
}

/// PREFIX.EXT at a prefix the user named: truncated as the kit does, but
/// a symbolic link there is not followed (it is refused).
fn named(prefix: &str, ext: &str) -> Result<File, ParamError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(format!("{prefix}.{ext}"))
        .map_err(|e| {
            let why = if e.raw_os_error() == Some(libc::ELOOP) {
                "it is a symbolic link, which iolab does not write through".to_string()
            } else {
                e.to_string()
            };
            ParamError::new(
                "rslt",
                format!("cannot create {prefix}.{ext}: {why}; choose another --rslt"),
            )
        })
}

/// Most names tried after the default one is taken.
const DEFAULT_NAME_TRIES: u32 = 100;

/// PREFIX.summary and PREFIX.detail at the default prefix, a name anyone
/// can predict in a shared directory (/tmp): both created exclusively,
/// never through a link someone planted there. When either is taken,
/// the next free name (PREFIX-2, PREFIX-3, ...) is used, and said.
fn default_results(prefix: &str) -> Result<(File, File, String), ParamError> {
    let fresh = |p: &str| {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(p)
    };
    let taken = |e: &std::io::Error| e.kind() == std::io::ErrorKind::AlreadyExists;
    let cannot = |p: &str, e: std::io::Error| {
        ParamError::new(
            "rslt",
            format!("cannot create {p}: {e}; choose a prefix with --rslt"),
        )
    };
    for n in 1..=DEFAULT_NAME_TRIES {
        let at = if n == 1 {
            prefix.to_string()
        } else {
            format!("{prefix}-{n}")
        };
        let (sp, dp) = (format!("{at}.summary"), format!("{at}.detail"));
        let summary = match fresh(&sp) {
            Ok(f) => f,
            Err(e) if taken(&e) => continue,
            Err(e) => return Err(cannot(&sp, e)),
        };
        let detail = match fresh(&dp) {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&sp);
                if taken(&e) {
                    continue;
                }
                return Err(cannot(&dp, e));
            }
        };
        if n > 1 {
            eprintln!(
                "iolab survey: {prefix}.summary or .detail is already there (a file or a link); writing {sp} and {dp} instead"
            );
        }
        return Ok((summary, detail, at));
    }
    Err(ParamError::new(
        "rslt",
        format!("{prefix}.summary and the next {DEFAULT_NAME_TRIES} names are taken; choose a prefix with --rslt"),
    ))
}

/// The summary and detail files, the terminal, and --stats collection.
struct Outputs {
    summary: File,
    detail: File,
    /// The progress bar (points done of points planned), on a terminal only.
    bar: Option<indicatif::ProgressBar>,
    /// --stats collection, from just before the survey to [`Outputs::finish`].
    collecting: Option<crate::stats_hook::Running>,
    /// What --stats collected, for the JSON.
    samples: Option<serde_json::Value>,
    /// --store, opened before the survey.
    store: crate::store_hook::StoreHook,
}

impl Outputs {
    /// Checks that --json and --csv can be written, then creates
    /// PREFIX.summary and PREFIX.detail (truncating, as the kit does).
    fn create(common: &Common, name: &str, points: usize) -> Result<Self, ParamError> {
        iolab_output::Planned::new()
            .file("--json", common.json.as_deref())
            .file("--csv", common.csv.as_deref())
            .check()
            .map_err(|e| {
                ParamError::new(
                    e.option.trim_start_matches('-'),
                    format!("{}: {}", e.path.display(), e.why),
                )
            })?;
        let stats = crate::stats_hook::Hook::load(common.stats.as_deref())
            .map_err(|m| ParamError::new("stats", m.trim_start_matches("--stats: ").to_string()))?;
        let store = crate::store_hook::StoreHook::open(common.store.as_deref())
            .map_err(|m| ParamError::new("store", m.trim_start_matches("--store ").to_string()))?;
        let (summary, detail, at) = match &common.rslt {
            Some(prefix) => (
                named(prefix, "summary")?,
                named(prefix, "detail")?,
                prefix.clone(),
            ),
            None => default_results(&prefix(common, name))?,
        };
        // The plan before the first point: how many lines are coming.
        if points > 1 {
            eprintln!("iolab survey: {points} points to measure; results in {at}.summary");
        }
        let bar = crate::progress::shown(true).then(|| {
            let b = crate::progress::bar(points as u64, crate::progress::Unit::Items);
            b.set_message("survey points");
            b
        });
        Ok(Self {
            summary,
            detail,
            bar,
            collecting: Some(stats.start()),
            samples: None,
            store,
        })
    }

    /// A summary line: stdout and .summary, flushed at once.
    fn line(&mut self, s: &str) {
        // A closed stdout asks the survey to stop (crate::output); it
        // then cleans up as after Ctrl-C.
        let print = || {
            let _ = out!("{s}");
        };
        match &self.bar {
            Some(b) => b.suspend(print),
            None => print(),
        }
        let _ = self.summary.write_all(s.as_bytes());
        let _ = self.summary.flush();
    }

    /// A point is done: its line, its detail, the progress note.
    fn point(&mut self, line: &str, detail: &str) {
        self.line(line);
        let _ = self.detail.write_all(detail.as_bytes());
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    fn finish(&mut self) {
        self.samples = self.collecting.take().and_then(|c| c.finish());
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The end of every survey: the envelope (with --stats samples) and the
/// CSV written, and the exit status from the outcome and those writes.
fn conclude<C: Serialize, P: Serialize>(
    common: &Common,
    out: &mut Outputs,
    doc: Envelope<C, P>,
    csv: String,
) -> ExitCode {
    let mut outcome = doc.outcome.clone();
    let mut doc = doc;
    doc.finished_unix_ns = iolab_core::clock::wall_ns();
    doc.stats = out.samples.take();
    if let Err(f) = out.store.record(&doc) {
        outcome = outcome.worst(Outcome::Error(f));
    }
    let ok = write_extras(common, doc, csv);
    finish_status(&outcome, ok)
}

/// Writes --json and --csv; a failure is reported and makes the exit 1.
fn write_extras<C: Serialize, P: Serialize>(
    common: &Common,
    doc: Envelope<C, P>,
    csv: String,
) -> bool {
    let mut ok = true;
    if let Some(p) = &common.json {
        if let Err(e) = iolab_output::write_atomically(p, doc.to_json().as_bytes()) {
            eprintln!("iolab survey: cannot write --json {}: {e}", p.display());
            ok = false;
        }
    }
    if let Some(p) = &common.csv {
        if let Err(e) = iolab_output::write_atomically(p, csv.as_bytes()) {
            eprintln!("iolab survey: cannot write --csv {}: {e}", p.display());
            ok = false;
        }
    }
    ok
}

/// The host, and the file systems of `paths` when the backend's paths
/// are this machine's files.
fn environment(b: &dyn iolab_backend::Backend, paths: &[PathBuf]) -> Environment {
    let local = b.capabilities().local;
    Environment {
        host: host_info(),
        filesystems: paths.iter().filter(|_| local).map(|p| fs_info(p)).collect(),
    }
}

/// The exit status: the run's outcome, or 1 when an output failed.
fn finish_status(outcome: &Outcome, outputs_ok: bool) -> ExitCode {
    if !outputs_ok && !outcome.is_failure() && *outcome != Outcome::Interrupted {
        return exit::output_failed();
    }
    if let Outcome::Error(f) = outcome {
        eprintln!("iolab survey: {f}");
    }
    exit::status(outcome)
}

/// The backend `--backend` names (posix when not given), ready for use.
/// An unknown name is bad usage (exit 2); a backend that cannot start,
/// such as a storage service refusing the credentials, is exit 1, as
/// for mdtest and xdd.
fn backend(survey: &str, c: &Common) -> Result<Box<dyn iolab_backend::Backend>, ExitCode> {
    let name = c.backend.as_deref().unwrap_or("posix");
    let b = iolab_backend::by_name(name)
        .map_err(|e| usage_error(survey, &ParamError::new("backend", e.to_string())))?;
    if let Err(e) = b.init() {
        eprintln!("iolab survey {survey}: --backend {name}: {e}");
        return Err(exit::failed());
    }
    Ok(b)
}

/// Ends the backend's run and returns what it has to tell (S3: retried
/// requests), for the results' notes.
fn finish_backend(b: &dyn iolab_backend::Backend) -> Vec<String> {
    let mut notes = b.notes();
    if let Err(e) = b.finalize() {
        notes.push(format!(
            "the {} backend did not finish cleanly: {e}",
            b.name()
        ));
    }
    notes
}

fn env_list(vars: &[&str]) -> Vec<PathBuf> {
    vars.iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .map(|s| s.split_whitespace().map(PathBuf::from).collect())
        .unwrap_or_default()
}

fn disk(a: DiskArgs, line: &str) -> ExitCode {
    use iolab_survey::disk::{self, Action, DiskConfig};
    let actions = match Action::parse_list(&a.actions) {
        Ok(x) => x,
        Err(e) => return usage_error("disk", &e),
    };
    let devices = if a.devices.is_empty() {
        env_list(&["scsidevs", "rawdevs"])
    } else {
        a.devices
    };
    let cfg = DiskConfig {
        devices,
        size_mb: a.size,
        rszlo_kb: a.rszlo,
        rszhi_kb: a.rszhi,
        crglo: a.crglo,
        crghi: a.crghi,
        thrlo: a.thrlo,
        thrhi: a.thrhi,
        actions,
        max_queue: a.max_queue,
        force: a.force,
    };
    let b = match backend("disk", &a.common) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let plan = match cfg.validate(b.as_ref()) {
        Ok(p) => p,
        Err(e) => return usage_error("disk", &e),
    };
    let mut out = match Outputs::create(&a.common, "sgpdd_survey", disk::points(&cfg).len()) {
        Ok(o) => o,
        Err(e) => return usage_error("disk", &e),
    };
    let names: Vec<String> = cfg
        .devices
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let header = iolab_survey::Header::now();
    let layout = match a.layout.as_str() {
        "kit" => fmt::summary::DiskLayout::Kit,
        _ => fmt::summary::DiskLayout::Guide,
    };
    let action_names: Vec<&str> = cfg.actions.iter().map(|x| x.name()).collect();
    out.line(&fmt::summary::disk_header(
        &header,
        &names,
        &action_names,
        layout,
    ));
    let report = disk::run(&plan, b.as_ref(), &mut |p| {
        out.point(
            &fmt::summary::disk_line_in(p, layout),
            &fmt::detail::disk(p),
        );
    });
    out.finish();
    let backend_notes = finish_backend(b.as_ref());
    let csv = fmt::csv::disk(&report.points);
    let figures = fmt::figures::disk(&report.points);
    let mut doc = Envelope::new(
        "iolab.survey.disk/1",
        "survey disk",
        line,
        cfg.clone(),
        environment(b.as_ref(), &[]),
        report.outcome.clone(),
        report,
    );
    doc.notes.extend(backend_notes);
    doc.figures = figures;
    conclude(&a.common, &mut out, doc, csv)
}

/// The object survey's `case=network` and `case=netdisk`: an echo agent
/// is started for each target through the remote shell and stopped at
/// the end.
fn obdfilter_network(a: ObdArgs, line: &str) -> ExitCode {
    use iolab_survey::echo;
    use iolab_survey::obdfilter::ObdConfig;
    let given: Vec<String> = if a.targets.is_empty() {
        env_list(&["targets"])
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    } else {
        a.targets.clone()
    };
    if a.common.backend.is_some() {
        let why = format!(
            "case={} moves data to echo agents on other hosts, which keep it on their own file systems; drop --backend",
            a.case
        );
        return usage_error("obdfilter", &ParamError::new("backend", why));
    }
    let targets = match echo::parse_targets(&a.case, &given) {
        Ok(t) => t,
        Err(e) => return usage_error("obdfilter", &e),
    };
    let cfg = ObdConfig {
        targets: vec![],
        remote: vec![],
        rsh: a.rsh.clone(),
        remote_iolab: a.remote_iolab.clone(),
        size_mb: a.size,
        rszlo_kb: a.rszlo,
        rszhi_kb: a.rszhi,
        nobjlo: a.nobjlo,
        nobjhi: a.nobjhi,
        thrlo: a.thrlo,
        thrhi: a.thrhi,
        tests: a.tests.split_whitespace().map(str::to_string).collect(),
        interval_ms: a.interval_ms,
        max_buffer_kb: a.max_buffer,
    };
    if let Err(e) = cfg.validate_params() {
        return usage_error("obdfilter", &e);
    }
    let key = match iolab_net::SharedKey::resolve(None) {
        Ok(k) => k,
        Err(e) => return usage_error("obdfilter", &ParamError::new("key", e.to_string())),
    };
    let points = iolab_survey::obdfilter::points(&cfg).len();
    let mut out = match Outputs::create(&a.common, "obdfilter_survey", points) {
        Ok(o) => o,
        Err(e) => return usage_error("obdfilter", &e),
    };
    let work = iolab_survey::obdfilter::work_name();
    let started = echo::Agents::start(
        &targets,
        a.echo_port,
        a.rsh.as_deref(),
        &a.remote_iolab,
        &work,
    );
    let mut agents = match started {
        Ok(x) => x,
        Err(e) => {
            eprintln!("iolab survey obdfilter: {e}");
            return exit::failed();
        }
    };
    if let Err(hosts) = agents.wait_ready(key.as_ref()) {
        agents.stop();
        out.finish();
        if iolab_core::stop::requested() {
            return exit::interrupted();
        }
        for h in hosts {
            eprintln!("iolab survey obdfilter: {h}");
        }
        eprintln!("iolab survey obdfilter: no point was run");
        return exit::failed();
    }
    let header = iolab_survey::Header::now();
    out.line(&fmt::summary::obdfilter_header_for(&header, &a.case));
    let addrs = agents.addrs.clone();
    let mut report = echo::run(&cfg, &addrs, key.as_ref(), &mut |p| {
        out.point(&fmt::summary::obdfilter_line(p), &fmt::detail::obdfilter(p));
    });
    report.notes.extend(agents.stop());
    out.finish();
    let csv = fmt::csv::obdfilter(&report.points);
    let mut doc = Envelope::new(
        "iolab.survey.obdfilter/1",
        "survey obdfilter",
        line,
        cfg.clone(),
        Environment {
            host: host_info(),
            filesystems: vec![],
        },
        report.outcome.clone(),
        report.clone(),
    );
    doc.notes = report.notes;
    conclude(&a.common, &mut out, doc, csv)
}

/// What a second Ctrl-C (which ends the process at once) leaves behind.
fn warn_leftovers(dirs: &[PathBuf]) {
    let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    crate::signals::set_last_words(format!(
        "\niolab survey: stopped at once; remove what it left by hand: {}\n",
        list.join(" ")
    ));
}

fn obdfilter(a: ObdArgs, line: &str) -> ExitCode {
    use iolab_survey::obdfilter::{self, ObdConfig};
    if a.case == "network" || a.case == "netdisk" {
        return obdfilter_network(a, line);
    }
    if a.case != "disk" {
        let why = format!(
            "case={}: the kit's cases are disk, network and netdisk",
            a.case
        );
        return usage_error("obdfilter", &ParamError::new("case", why));
    }
    let given: Vec<String> = if a.targets.is_empty() {
        env_list(&["targets", "OSTS"])
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    } else {
        a.targets
    };
    let (targets, remote) = obdfilter::split_targets(&given);
    let cfg = ObdConfig {
        targets,
        remote,
        rsh: a.rsh,
        remote_iolab: a.remote_iolab,
        size_mb: a.size,
        rszlo_kb: a.rszlo,
        rszhi_kb: a.rszhi,
        nobjlo: a.nobjlo,
        nobjhi: a.nobjhi,
        thrlo: a.thrlo,
        thrhi: a.thrhi,
        tests: a.tests.split_whitespace().map(str::to_string).collect(),
        interval_ms: a.interval_ms,
        max_buffer_kb: a.max_buffer,
    };
    let b = match backend("obdfilter", &a.common) {
        Ok(b) => b,
        Err(code) => return code,
    };
    if let Err(e) = cfg.validate(b.as_ref()) {
        return usage_error("obdfilter", &e);
    }
    let mut out =
        match Outputs::create(&a.common, "obdfilter_survey", obdfilter::points(&cfg).len()) {
            Ok(o) => o,
            Err(e) => return usage_error("obdfilter", &e),
        };
    warn_leftovers(
        &cfg.targets
            .iter()
            .map(|t| obdfilter::work_dir(t))
            .collect::<Vec<_>>(),
    );
    out.line(&fmt::summary::obdfilter_header(&iolab_survey::Header::now()));
    let report = obdfilter::run(&cfg, b.as_ref(), &mut |p| {
        out.point(&fmt::summary::obdfilter_line(p), &fmt::detail::obdfilter(p));
    });
    out.finish();
    let backend_notes = finish_backend(b.as_ref());
    let csv = fmt::csv::obdfilter(&report.points);
    let figures = fmt::figures::obdfilter(&report.points);
    let mut doc = Envelope::new(
        "iolab.survey.obdfilter/1",
        "survey obdfilter",
        line,
        cfg.clone(),
        environment(b.as_ref(), &cfg.targets),
        report.outcome.clone(),
        report.clone(),
    );
    doc.notes = report.notes;
    doc.notes.extend(backend_notes);
    doc.figures = figures;
    conclude(&a.common, &mut out, doc, csv)
}

fn mds(a: MdsArgs, line: &str) -> ExitCode {
    use iolab_survey::mds::{self, MdsConfig};
    use iolab_survey::mds_plan;
    let targets = if a.targets.is_empty() {
        env_list(&["targets"])
    } else {
        a.targets
    };
    let plan = match mds_plan::plan(&mds_plan::MdsTargetArgs {
        targets: &targets,
        lustre_mount: a.lustre_mount.as_deref(),
        stripe_count: a.stripe_count,
        layer: a.layer.as_deref(),
    }) {
        Ok(p) => p,
        Err(e) => return usage_error("mds", &e),
    };
    let cfg = MdsConfig {
        targets: plan.targets,
        thrlo: a.thrlo,
        thrhi: a.thrhi,
        dir_count: a.dir_count.unwrap_or(a.thrlo),
        file_count: a.file_count,
        tests: a.tests.split_whitespace().map(str::to_string).collect(),
        start_number: a.start_number,
        interval_ms: a.interval_ms,
        stripe_count: a.stripe_count,
        layer: mds_plan::FS_LAYER.to_string(),
        lustre: plan.lustre,
    };
    let b = match backend("mds", &a.common) {
        Ok(b) => b,
        Err(code) => return code,
    };
    if let Err(e) = cfg.validate(b.as_ref()) {
        return usage_error("mds", &e);
    }
    let mut out = match Outputs::create(&a.common, "mds_survey", mds::points(&cfg).len()) {
        Ok(o) => o,
        Err(e) => return usage_error("mds", &e),
    };
    warn_leftovers(
        &(0..cfg.targets.len())
            .map(|i| cfg.work_dir(i))
            .collect::<Vec<_>>(),
    );
    out.line(&fmt::summary::mds_header(&iolab_survey::Header::now()));
    let report = mds::run(&cfg, b.as_ref(), &mut |p| {
        out.point(&fmt::summary::mds_line(p), &fmt::detail::mds(p));
    });
    out.finish();
    let backend_notes = finish_backend(b.as_ref());
    let csv = fmt::csv::mds(&report.points);
    let figures = fmt::figures::mds(&report.points);
    let mut doc = Envelope::new(
        "iolab.survey.mds/1",
        "survey mds",
        line,
        cfg.clone(),
        environment(b.as_ref(), &cfg.targets),
        report.outcome.clone(),
        report,
    );
    doc.notes = plan.notes;
    doc.notes.extend(backend_notes);
    doc.figures = figures;
    conclude(&a.common, &mut out, doc, csv)
}

fn ost(a: OstArgs, line: &str) -> ExitCode {
    use iolab_survey::ost;
    let targets = if a.targets.is_empty() {
        env_list(&["targets"])
    } else {
        a.targets
    };
    let names: Vec<String> = targets.iter().map(|t| t.display().to_string()).collect();
    let (cfg, notes) = match ost::plan(targets, a.size, a.lustre) {
        Ok(c) => c,
        Err(e) => return usage_error("ost", &e),
    };
    let b = match backend("ost", &a.common) {
        Ok(b) => b,
        Err(code) => return code,
    };
    if let Err(e) = cfg.validate(b.as_ref()) {
        return usage_error("ost", &e);
    }
    let mut out = match Outputs::create(&a.common, "ost_survey", 1) {
        Ok(o) => o,
        Err(e) => return usage_error("ost", &e),
    };
    warn_leftovers(
        &(0..cfg.targets.len())
            .map(|i| cfg.file(i))
            .collect::<Vec<_>>(),
    );
    let host = iolab_core::env::hostname();
    out.line(&fmt::summary::ost_header(
        &iolab_survey::strftime("%D"),
        &names,
        &host,
    ));
    let report = ost::run(&cfg, b.as_ref());
    out.point(
        &fmt::summary::ost_report(&report),
        &fmt::detail::ost(&report),
    );
    out.finish();
    let backend_notes = finish_backend(b.as_ref());
    let csv = fmt::csv::ost(&report);
    let figures = fmt::figures::ost(&report);
    let mut doc = Envelope::new(
        "iolab.survey.ost/1",
        "survey ost",
        line,
        cfg.clone(),
        environment(b.as_ref(), &cfg.targets),
        report.outcome.clone(),
        report,
    );
    doc.notes = notes;
    doc.notes.extend(backend_notes);
    doc.figures = figures;
    conclude(&a.common, &mut out, doc, csv)
}

fn plot(a: PlotArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&a.summary) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "iolab survey plot: cannot read {}: {e}",
                a.summary.display()
            );
            return exit::usage();
        }
    };
    let summary = match fmt::parse::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("iolab survey plot: {}: {e}", a.summary.display());
            return exit::usage();
        }
    };
    let prefix = a.out.clone().unwrap_or_else(|| {
        let p = a.summary.display().to_string();
        p.strip_suffix(".summary").map(str::to_string).unwrap_or(p)
    });
    // Every file goes beside PREFIX.csv: one check of that directory,
    // before anything is written (exit 2 naming it).
    let csv_path = PathBuf::from(format!("{prefix}.csv"));
    if let Err(e) = iolab_output::check_file("--out", &csv_path) {
        eprintln!("iolab survey plot: {e}");
        return exit::usage();
    }
    let with_text = crate::font::load(a.font.as_ref());
    if !with_text {
        eprintln!("iolab survey plot: no usable font (give --font FILE.ttf); charts are drawn without labels");
    }
    let mut ok = write_out(
        &format!("{prefix}.csv"),
        fmt::plot::csv(&summary).as_bytes(),
    );
    for c in fmt::plot::charts(&summary) {
        // A closed stdout stops the plot as SIGPIPE would (no further chart).
        if iolab_core::stop::requested() {
            break;
        }
        ok &= plot_chart(&summary, &c, &prefix, with_text);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        exit::output_failed()
    }
}

/// The .dat, .scr, .svg and .png of one chart.
fn plot_chart(s: &fmt::parse::Summary, c: &fmt::plot::Chart, prefix: &str, text: bool) -> bool {
    let base = format!("{prefix}{}", c.stem());
    let file_name = |ext: &str| {
        let p = format!("{base}.{ext}");
        std::path::Path::new(&p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(p)
    };
    let script = fmt::plot::gnuplot(
        s.kind,
        c,
        &s.title,
        &file_name("dat"),
        &file_name("gnuplot.png"),
    );
    let mut ok = write_out(&format!("{base}.dat"), fmt::plot::dat(s.kind, c).as_bytes());
    ok &= write_out(&format!("{base}.scr"), script.as_bytes());
    for (ext, bytes) in [
        (
            "svg",
            fmt::plot::svg(s.kind, c, &s.title, text).map(String::into_bytes),
        ),
        ("png", fmt::plot::png(s.kind, c, &s.title, text)),
    ] {
        ok &= match bytes {
            Ok(b) => write_out(&format!("{base}.{ext}"), &b),
            Err(e) => {
                eprintln!("iolab survey plot: {base}.{ext}: {e}");
                false
            }
        };
    }
    ok
}

fn write_out(path: &str, bytes: &[u8]) -> bool {
    match iolab_output::write_atomically(std::path::Path::new(path), bytes) {
        Ok(()) => {
            let _ = outln!("wrote {path}");
            true
        }
        Err(e) => {
            eprintln!("iolab survey plot: cannot write {path}: {e}");
            false
        }
    }
}

fn obdfilter_agent(a: AgentArgs) -> ExitCode {
    let step = iolab_survey::agent::Step {
        step: a.step,
        work: a.work,
        nobj: a.nobj,
        name: a.name,
        shape: iolab_survey::obdfilter::Shape {
            rsz_bytes: a.rsz_bytes,
            count: a.count,
            thr: a.thr,
            per_obj: a.per_obj,
        },
        interval_ms: a.interval_ms,
        port: a.port,
        dirs: a.dirs,
    };
    let b: Box<dyn iolab_backend::Backend> = Box::new(iolab_backend::Posix);
    match iolab_survey::agent::run(&step, b.as_ref()) {
        Ok(line) => {
            if let Some(l) = line {
                let _ = outln!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("iolab survey obdfilter-agent: {e}");
            exit::failed()
        }
    }
}
