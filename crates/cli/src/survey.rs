//! `iolab survey`: the Lustre I/O kit's surveys. Parameters are flags and
//! also the kit's environment variables (`size=1024 thrhi=4 iolab survey
//! disk ...`); a flag wins over the variable. Every output line goes to
//! stdout and `${rslt}.summary` as it is measured; `${rslt}.detail` holds
//! the per-region/target figures; `--json` and `--csv` are written at the end.

mod flow;
mod plot;

use crate::exit::{Ended, Halt, HaltKind};
use crate::runner::{options, RunOptions};
use clap::{Args, Parser, Subcommand};
use flow::{conduct, usage_error, Place, Planned};
use iolab_report::survey as fmt;
use iolab_survey::ParamError;
use std::ffi::OsString;
use std::path::PathBuf;

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

/// The schema of each survey's document (`iolab results import` refuses
/// a newer one).
pub(crate) const DISK_SCHEMA: &str = "iolab.survey.disk/1";
/// See [`DISK_SCHEMA`].
pub(crate) const OBDFILTER_SCHEMA: &str = "iolab.survey.obdfilter/1";
/// See [`DISK_SCHEMA`].
pub(crate) const MDS_SCHEMA: &str = "iolab.survey.mds/1";
/// See [`DISK_SCHEMA`].
pub(crate) const OST_SCHEMA: &str = "iolab.survey.ost/1";

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

/// Where the results go (the kit's `rslt` and `rslt_loc`), the run
/// options, and the backend.
#[derive(Args, Debug)]
struct Common {
    /// Result file prefix: writes PREFIX.summary (same as stdout) and
    /// PREFIX.detail. Default: RSLT_LOC/<survey>_<date@time>_<host>.
    #[arg(long, env = "rslt")]
    rslt: Option<String>,
    /// Directory for the default prefix.
    #[arg(long = "rslt-loc", env = "rslt_loc", default_value = "/tmp")]
    rslt_loc: String,
    /// --json, --csv (one row per point and test), --stats, --store:
    /// the runner's.
    #[command(flatten)]
    run: RunOptions<{ options::EVERY }>,
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
    /// HOST:/DIR), `network` (targets are hosts: the requests go to an
    /// echo agent there, started through --rsh, which acknowledges and
    /// discards them) or `netdisk` (as network, the agent keeping the
    /// objects on its host's disk).
    #[arg(long = "case", env = "case", default_value = "disk")]
    case: String,
    /// case=network and netdisk: the echo agent of target i listens on this port + i.
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
    /// `test`: print live figures every so many ms, each interval a
    /// line before the results (the survey that started it merges them).
    #[arg(long)]
    live_ms: Option<u64>,
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

/// The command line as the surveys read it: [`command`], with the kit's
/// reading of its variables. The kit reads each as `${var:-default}`, so
/// a variable set but empty (`rslt_loc= iolab survey ...`) is its
/// default; clap would take the empty value as given (results under `/`,
/// a hidden `.summary`, `invalid value ''`). A variable that is empty
/// here is therefore not bound to its option at all; an option given
/// empty on the command line is still refused.
fn kit_command() -> clap::Command {
    without_empty_env(command())
}

fn without_empty_env(mut cmd: clap::Command) -> clap::Command {
    let empty: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| {
            a.get_env()
                .and_then(std::env::var_os)
                .is_some_and(|v| v.is_empty())
        })
        .map(|a| a.get_id().clone())
        .collect();
    for id in empty {
        cmd = cmd.mut_arg(id, |a| a.env(None::<&'static str>));
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, without_empty_env);
    }
    cmd
}

/// Parses `iolab survey ...` with [`kit_command`]: help and version exit
/// 0, bad usage prints clap's message and exits 2 (as
/// [`crate::exit::parse_clap`]).
fn parse(prog: &str, args: Vec<OsString>) -> Result<Cli, Halt> {
    let given = args.clone();
    let argv = std::iter::once(OsString::from(format!("iolab {prog}"))).chain(args);
    let parsed = kit_command()
        .try_get_matches_from(argv)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    parsed.map_err(|e| {
        let _ = e.print();
        if let Some(var) = from_kit_variable(&e, &given) {
            iolab_core::say!("iolab survey: that value came from the kit's variable {var}");
        }
        match e.use_stderr() {
            true => Halt::said(HaltKind::Usage),
            false => Halt::shown(),
        }
    })
}

/// The kit's variable a refused value came from (`thrhi=abc`): clap
/// names the option (`--thrhi <THRHI>`), which the user did not type.
fn from_kit_variable(e: &clap::Error, given: &[OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = arg.split_whitespace().next()?.strip_prefix("--")?;
    let typed = given.iter().any(|a| {
        let a = a.to_string_lossy();
        a == format!("--{long}") || a.starts_with(&format!("--{long}="))
    });
    if typed {
        return None;
    }
    let cmd = kit_command();
    let arg = std::iter::once(&cmd)
        .chain(cmd.get_subcommands())
        .flat_map(|c| c.get_arguments())
        .find(|a| a.get_long() == Some(long) && a.get_env().is_some())?;
    let var = arg.get_env()?.to_string_lossy().into_owned();
    let value = std::env::var_os(&var)?;
    Some(format!("{var}={}", value.to_string_lossy()))
}

/// Entry point: `iolab survey <survey> ...`.
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let cli: Cli = parse(prog, args)?;
    // As given, the live options included (the dispatcher took them
    // out of `args`).
    let line = crate::process_command_line();
    match cli.cmd {
        Cmd::Disk(a) => disk(a, &line),
        Cmd::Obdfilter(a) => obdfilter(a, &line),
        Cmd::Mds(a) => mds(a, &line),
        Cmd::Ost(a) => ost(a, &line),
        Cmd::Plot(a) => plot::plot(&a.summary, a.out.as_deref(), a.font.as_ref()),
        Cmd::ObdfilterAgent(a) => obdfilter_agent(a),
    }
}

/// Checks a command line as `iolab survey` would read it (for a sweep's
/// or a qualification's plan): clap's parse, then, for the disk survey
/// and the object survey on local directories, the parameters against
/// the targets as the survey checks them when it starts (sizes, devices
/// in use, missing directories: read-only looks, nothing created), so
/// that a plan the survey would refuse is refused with it (qualify once
/// called such a plan valid, then measured its other layers).
pub fn check_args(args: &[OsString]) -> Result<(), String> {
    let argv = std::iter::once(OsString::from("iolab survey")).chain(args.iter().cloned());
    let said = |what: &str, e: ParamError| format!("{what}: {e}");
    let matches = kit_command()
        .try_get_matches_from(argv)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m))
        .map_err(|e| e.to_string())?;
    match matches.cmd {
        Cmd::Plot(_) | Cmd::ObdfilterAgent(_) => {
            Err("plot makes charts from a .summary and measures nothing: a sweep or a live option needs a survey that runs (disk, obdfilter, ost, mds)".into())
        }
        Cmd::Disk(a) => {
            let cfg = disk_config(&a).map_err(|e| said("disk", e))?;
            let b = flow::backend("disk", a.common.backend.as_deref()).map_err(|h| h.message.unwrap_or_default())?;
            cfg.validate(b.as_ref()).map(drop).map_err(|e| said("disk", e))
        }
        Cmd::Obdfilter(a) if a.case == "disk" && !a.targets.is_empty() => {
            let (targets, remote) = iolab_survey::obdfilter::split_targets(&a.targets);
            if !remote.is_empty() {
                return Ok(());
            }
            let cfg = obd_config(&a, targets, remote);
            let b = flow::backend("obdfilter", a.common.backend.as_deref())
                .map_err(|h| h.message.unwrap_or_default())?;
            cfg.validate(b.as_ref()).map(drop).map_err(|e| said("obdfilter", e))
        }
        _ => Ok(()),
    }
}

impl Common {
    /// Where the result files go.
    fn place(&self) -> Place<'_> {
        Place {
            rslt: self.rslt.as_deref(),
            rslt_loc: &self.rslt_loc,
        }
    }
}

/// The list in the first of the kit's variables `vars` that is set (not
/// empty), split at blanks. The kit reads one of two names for some
/// lists (`targets` or `OSTS`); both set is refused by
/// [`one_list_variable`], never one taken in silence.
fn env_list(vars: &[&str]) -> Vec<PathBuf> {
    vars.iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .map(|s| s.split_whitespace().map(PathBuf::from).collect())
        .unwrap_or_default()
}

/// Refuses two of the kit's names for one list (`targets` and `OSTS`,
/// `scsidevs` and `rawdevs`) both set: one would be taken and the
/// other dropped.
fn one_list_variable(survey: &str, vars: &[&str]) -> Result<(), Halt> {
    let set: Vec<&str> = vars
        .iter()
        .copied()
        .filter(|v| std::env::var_os(v).is_some_and(|s| !s.to_string_lossy().trim().is_empty()))
        .collect();
    match set.as_slice() {
        [first, second, ..] => Err(usage_error(
            survey,
            &ParamError::new(
                first,
                format!("both {first} and {second} are set: they name the same list; set one"),
            ),
        )),
        _ => Ok(()),
    }
}

/// Refuses a kit variable iolab does not implement, set (not empty):
/// running without what it asks would be taking it in silence.
fn not_implemented_variables(survey: &str, vars: &[(&str, &str)]) -> Result<(), Halt> {
    let set = vars
        .iter()
        .find(|(v, _)| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    match set {
        Some((var, what)) => Err(usage_error(
            survey,
            &ParamError::new(
                var,
                format!("the kit's {var} is not implemented ({what}); unset it"),
            ),
        )),
        None => Ok(()),
    }
}

/// The disk survey's configuration from its arguments.
fn disk_config(a: &DiskArgs) -> Result<iolab_survey::disk::DiskConfig, ParamError> {
    use iolab_survey::disk::{Action, DiskConfig};
    let devices = if a.devices.is_empty() {
        env_list(&["scsidevs", "rawdevs"])
    } else {
        a.devices.clone()
    };
    Ok(DiskConfig {
        devices,
        size_mb: a.size,
        rszlo_kb: a.rszlo,
        rszhi_kb: a.rszhi,
        crglo: a.crglo,
        crghi: a.crghi,
        thrlo: a.thrlo,
        thrhi: a.thrhi,
        actions: Action::parse_list(&a.actions)?,
        max_queue: a.max_queue,
        force: a.force,
    })
}

fn disk(a: DiskArgs, line: &str) -> Ended {
    use iolab_survey::disk;
    one_list_variable("disk", &["scsidevs", "rawdevs"])?;
    let cfg = disk_config(&a).map_err(|e| usage_error("disk", &e))?;
    let b = flow::backend("disk", a.common.backend.as_deref())?;
    let mut plan = cfg.plan(b.as_ref()).map_err(|e| usage_error("disk", &e))?;
    // Held, then looked at, before any output exists: a device in use or
    // holding data is refused (exit 2) with nothing written, and nothing
    // can take it afterwards.
    plan.claim(b.as_ref())
        .map_err(|e| usage_error("disk", &e))?;
    let names: Vec<String> = cfg
        .devices
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let layout = match a.layout.as_str() {
        "kit" => fmt::summary::DiskLayout::Kit,
        _ => fmt::summary::DiskLayout::Guide,
    };
    let planned = Planned {
        name: "disk",
        schema: DISK_SCHEMA,
        rslt: "sgpdd_survey",
        points: disk::points(&cfg).len(),
        leftovers: Vec::new(),
        paths: Vec::new(),
        notes: Vec::new(),
        config: cfg.clone(),
        peers: None,
    };
    let run = |out: &mut flow::Lines, live, cancel: &iolab_core::CancelToken| {
        plan.live = live;
        plan.cancel = cancel.clone();
        let action_names: Vec<&str> = cfg.actions.iter().map(|x| x.name()).collect();
        let header = iolab_survey::Header::now();
        out.line(&fmt::summary::disk_header(
            &header,
            &names,
            &action_names,
            layout,
        ));
        Ok(disk::run(&plan, b.as_ref(), &mut |p| {
            out.point(
                &fmt::summary::disk_line_in(p, layout),
                &fmt::detail::disk(p),
            );
        }))
    };
    conduct(
        planned,
        a.common.place(),
        a.common.run.0.clone(),
        line,
        Some(b.as_ref()),
        run,
    )
}

/// The object survey's `case=network` and `case=netdisk`: an echo agent
/// is started for each target through the remote shell and stopped at
/// the end; no data goes through a backend.
fn obdfilter_network(a: ObdArgs, line: &str) -> Ended {
    use iolab_survey::echo;
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
        return Err(usage_error("obdfilter", &ParamError::new("backend", why)));
    }
    let targets = echo::parse_targets(&a.case, &given).map_err(|e| usage_error("obdfilter", &e))?;
    let cfg = obd_config(&a, vec![], vec![]);
    cfg.validate_params()
        .map_err(|e| usage_error("obdfilter", &e))?;
    let key = echo_key().map_err(|e| usage_error("obdfilter", &ParamError::new("key", e)))?;
    let planned = Planned {
        name: "obdfilter",
        schema: OBDFILTER_SCHEMA,
        rslt: "obdfilter_survey",
        points: iolab_survey::obdfilter::points(&cfg).len(),
        leftovers: Vec::new(),
        paths: Vec::new(),
        notes: Vec::new(),
        config: cfg.clone(),
        peers: None,
    };
    let run = |out: &mut flow::Lines,
               live: Option<std::sync::Arc<iolab_core::live::Board>>,
               cancel: &iolab_core::CancelToken| {
        let work = iolab_survey::obdfilter::work_name();
        let agents = echo::Agents::start(
            &targets,
            a.echo_port,
            a.rsh.as_deref(),
            (&a.remote_iolab, &work),
            &key,
        )
        .map_err(|e| Halt::failed(format!("iolab survey obdfilter: {e}")))?;
        let mut agents = agents;
        // Every agent answers before the first point: a host that cannot
        // be reached is named, and no point runs.
        if let Err(hosts) = agents.wait_ready(&key) {
            agents.stop();
            if crate::runner::root().is_cancelled() {
                return Err(Halt::new(
                    HaltKind::Interrupted,
                    "iolab survey obdfilter: interrupted before the first point; the agents were stopped",
                ));
            }
            let mut msg: Vec<String> = hosts
                .iter()
                .map(|h| format!("iolab survey obdfilter: {h}"))
                .collect();
            msg.push("iolab survey obdfilter: no point was run".into());
            return Err(Halt::failed(msg.join("\n")));
        }
        let header = iolab_survey::Header::now();
        out.line(&fmt::summary::obdfilter_header_for(&header, &a.case));
        let addrs = agents.addrs.clone();
        let mut report = echo::run(
            &cfg,
            &addrs,
            &key,
            &mut |p| {
                out.point(&fmt::summary::obdfilter_line(p), &fmt::detail::obdfilter(p));
            },
            (cancel, live.as_deref()),
        );
        report.notes.extend(agents.stop());
        Ok(report)
    };
    conduct(
        planned,
        a.common.place(),
        a.common.run.0.clone(),
        line,
        None,
        run,
    )
}

/// The key of the echo agents: IOLAB_KEY_FILE's, else a fresh one-time
/// key. The survey starts every agent and hands it the key, so every
/// connection is proven without asking anything of the user.
fn echo_key() -> Result<iolab_net::SharedKey, String> {
    match iolab_net::SharedKey::resolve(None) {
        Ok(Some(k)) => Ok(k),
        Ok(None) => iolab_net::SharedKey::random().map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The object survey's parameters, on `targets` (local) and `remote`
/// (`HOST:/DIR`).
fn obd_config(
    a: &ObdArgs,
    targets: Vec<PathBuf>,
    remote: Vec<iolab_survey::remote::RemoteTarget>,
) -> iolab_survey::obdfilter::ObdConfig {
    iolab_survey::obdfilter::ObdConfig {
        targets,
        remote,
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
    }
}

fn obdfilter(a: ObdArgs, line: &str) -> Ended {
    use iolab_survey::obdfilter;
    if a.case == "network" || a.case == "netdisk" {
        return obdfilter_network(a, line);
    }
    if a.case != "disk" {
        let why = format!(
            "case={}: the kit's cases are disk, network and netdisk",
            a.case
        );
        return Err(usage_error("obdfilter", &ParamError::new("case", why)));
    }
    one_list_variable("obdfilter", &["targets", "OSTS"])?;
    not_implemented_variables(
        "obdfilter",
        &[("verify", "the data written is not read back and checked")],
    )?;
    let given: Vec<String> = if a.targets.is_empty() {
        env_list(&["targets", "OSTS"])
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    } else {
        a.targets.clone()
    };
    let (targets, remote) = obdfilter::split_targets(&given);
    let cfg = obd_config(&a, targets, remote);
    let b = flow::backend("obdfilter", a.common.backend.as_deref())?;
    cfg.validate(b.as_ref())
        .map_err(|e| usage_error("obdfilter", &e))?;
    // The remote targets' agents print their live figures; each host is
    // a rank of the stream.
    let (relay, peers) = crate::live::relay(None);
    let planned = Planned {
        name: "obdfilter",
        schema: OBDFILTER_SCHEMA,
        rslt: "obdfilter_survey",
        points: obdfilter::points(&cfg).len(),
        leftovers: cfg.targets.iter().map(|t| obdfilter::work_dir(t)).collect(),
        paths: cfg.targets.clone(),
        notes: Vec::new(),
        config: cfg.clone(),
        peers: (!cfg.remote.is_empty()).then_some(peers),
    };
    let run = |out: &mut flow::Lines,
               live: Option<std::sync::Arc<_>>,
               cancel: &iolab_core::CancelToken| {
        out.line(&fmt::summary::obdfilter_header(&iolab_survey::Header::now()));
        let feed = |i: usize, line: Option<&[u8]>| relay.line(i, line);
        let ms = crate::live::asked_interval().as_millis() as u64;
        let to = obdfilter::LiveTo {
            board: live.as_deref(),
            remote: live
                .as_ref()
                .filter(|_| !cfg.remote.is_empty())
                .map(|_| (&feed as iolab_survey::remote::LiveFeed<'_>, ms)),
        };
        let report = obdfilter::run(
            &cfg,
            b.as_ref(),
            &mut |p| {
                out.point(&fmt::summary::obdfilter_line(p), &fmt::detail::obdfilter(p));
            },
            (cancel, to),
        );
        relay.close();
        Ok(report)
    };
    conduct(
        planned,
        a.common.place(),
        a.common.run.0.clone(),
        line,
        Some(b.as_ref()),
        run,
    )
}

fn mds(a: MdsArgs, line: &str) -> Ended {
    use iolab_survey::mds::{self, MdsConfig};
    use iolab_survey::mds_plan;
    let targets = if a.targets.is_empty() {
        env_list(&["targets"])
    } else {
        a.targets
    };
    let plan = mds_plan::plan(&mds_plan::MdsTargetArgs {
        targets: &targets,
        lustre_mount: a.lustre_mount.as_deref(),
        stripe_count: a.stripe_count,
        layer: a.layer.as_deref(),
    })
    .map_err(|e| usage_error("mds", &e))?;
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
    let b = flow::backend("mds", a.common.backend.as_deref())?;
    cfg.validate(b.as_ref())
        .map_err(|e| usage_error("mds", &e))?;
    let planned = Planned {
        name: "mds",
        schema: MDS_SCHEMA,
        rslt: "mds_survey",
        points: mds::points(&cfg).len(),
        leftovers: (0..cfg.targets.len()).map(|i| cfg.work_dir(i)).collect(),
        paths: cfg.targets.clone(),
        notes: plan.notes,
        config: cfg.clone(),
        peers: None,
    };
    let run = |out: &mut flow::Lines,
               live: Option<std::sync::Arc<_>>,
               cancel: &iolab_core::CancelToken| {
        out.line(&fmt::summary::mds_header(&iolab_survey::Header::now()));
        Ok(mds::run(
            &cfg,
            b.as_ref(),
            &mut |p| {
                out.point(&fmt::summary::mds_line(p), &fmt::detail::mds(p));
            },
            (cancel, live.as_deref()),
        ))
    };
    conduct(
        planned,
        a.common.place(),
        a.common.run.0.clone(),
        line,
        Some(b.as_ref()),
        run,
    )
}

fn ost(a: OstArgs, line: &str) -> Ended {
    use iolab_survey::ost;
    let targets = if a.targets.is_empty() {
        env_list(&["targets"])
    } else {
        a.targets
    };
    let names: Vec<String> = targets.iter().map(|t| t.display().to_string()).collect();
    let (cfg, notes) = ost::plan(targets, a.size, a.lustre).map_err(|e| usage_error("ost", &e))?;
    let b = flow::backend("ost", a.common.backend.as_deref())?;
    cfg.validate(b.as_ref())
        .map_err(|e| usage_error("ost", &e))?;
    let planned = Planned {
        name: "ost",
        schema: OST_SCHEMA,
        rslt: "ost_survey",
        points: 1,
        leftovers: (0..cfg.targets.len()).map(|i| cfg.file(i)).collect(),
        paths: cfg.targets.clone(),
        notes,
        config: cfg.clone(),
        peers: None,
    };
    let run = |out: &mut flow::Lines,
               live: Option<std::sync::Arc<_>>,
               cancel: &iolab_core::CancelToken| {
        let host = iolab_core::env::hostname();
        out.line(&fmt::summary::ost_header(
            &iolab_survey::strftime("%D"),
            &names,
            &host,
        ));
        let report = ost::run(&cfg, b.as_ref(), (cancel, live.as_deref()));
        out.point(
            &fmt::summary::ost_report(&report),
            &fmt::detail::ost(&report),
        );
        Ok(report)
    };
    conduct(
        planned,
        a.common.place(),
        a.common.run.0.clone(),
        line,
        Some(b.as_ref()),
        run,
    )
}

fn obdfilter_agent(a: AgentArgs) -> Ended {
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
    let hook = match (a.live_ms, step.step.as_str()) {
        (Some(ms), "test") => crate::live::to_stdout(
            "survey obdfilter-agent",
            ms,
            iolab_survey::remote::LIVE_PREFIX,
        ),
        _ => crate::live::Hook::off(),
    };
    let ran = iolab_survey::agent::run(&step, b.as_ref(), hook.shared().as_deref());
    // Its last interval is out before its results.
    hook.finish();
    let line = ran.map_err(|e| Halt::failed(format!("iolab survey obdfilter-agent: {e}")))?;
    if let Some(l) = line {
        let _ = outln!("{l}");
    }
    Ok(iolab_core::Outcome::Completed)
}
