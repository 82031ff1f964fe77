//! `iolab stats`: the kit's stats-collect steps (start, stop, analyse)
//! and `run`, which wraps one command in all three. The node-side steps
//! the remote shell runs (`start-node`, `collect`, `halt`) are hidden
//! subcommands of the same binary.

use crate::exit;
use clap::{Parser, Subcommand};
use iolab_core::{Failure, FailureKind, Outcome};
use iolab_results::{Envelope, Environment};
use iolab_stats::cluster::{self, Plan, Report};
use iolab_stats::{config, node, Config};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Collects system and Lustre statistics on every node while something
/// runs, as the Lustre I/O kit's stats-collect does.
#[derive(Parser, Debug)]
#[command(name = "iolab stats", version)]
struct Cli {
    #[command(subcommand)]
    step: Step,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Subcommand, Debug)]
enum Step {
    /// Starts a collector on each node of CONFIG (this node when it lists none).
    Start {
        /// config.sh, a .toml file, or `local` / `local,Ns`.
        config: String,
        /// Remote shell (default: the config's RSH, else IOLAB_RSH, else ssh).
        #[arg(long)]
        rsh: Option<String>,
    },
    /// Stops the collectors and gathers one profile tarball.
    Stop {
        /// The same CONFIG as start.
        config: String,
        /// The tarball to write (default: iolab-stats-<time>.tgz here).
        tarball: Option<PathBuf>,
        /// Remote shell, as for start.
        #[arg(long)]
        rsh: Option<String>,
    },
    /// Writes one CSV per statistic and node, counters as rates.
    #[command(alias = "analyze")]
    Analyse {
        /// A profile tarball written by stop or run.
        tarball: PathBuf,
        /// The output format: csv (the only one, as in the kit).
        #[arg(default_value = "csv")]
        format: String,
        /// Where the CSV files go (default: NAME-csv beside the tarball).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Starts collectors, runs COMMAND, stops them and analyses.
    Run {
        /// As for start.
        config: String,
        /// The tarball to write (default: iolab-stats-<time>.tgz here).
        #[arg(long)]
        tarball: Option<PathBuf>,
        /// Remote shell, as for start.
        #[arg(long)]
        rsh: Option<String>,
        /// Also write the run as JSON (an iolab results envelope, schema
        /// iolab.stats.run/1, the samples in `stats`).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
        /// Record the run in the results store at this path (see `iolab results`).
        #[arg(long, value_name = "PATH")]
        store: Option<PathBuf>,
        /// Run the command even when the collector of a node cannot start
        /// (without it, that is exit 1 naming the nodes, before the
        /// command runs); those nodes are named and the exit status is 1
        /// when the command succeeds.
        #[arg(long)]
        keep_going: bool,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
    /// (node side) Starts a detached collector in DIR.
    #[command(hide = true)]
    StartNode {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        spec: String,
        /// Stay until the collector ends (for a remote shell that kills
        /// what its command started when the command returns: srun).
        #[arg(long)]
        foreground: bool,
    },
    /// (node side) Checks, creating nothing, that DIR's parent
    /// (TMP/iolab-stats) is safe to work in; exit 2 naming it when not.
    #[command(hide = true)]
    CheckNode {
        #[arg(long)]
        dir: PathBuf,
    },
    /// (node side) The collector itself.
    #[command(hide = true)]
    Collect {
        #[arg(long)]
        dir: PathBuf,
    },
    /// (node side) Stops the collector in DIR and writes its record as
    /// a tar to standard output.
    #[command(hide = true)]
    Halt {
        #[arg(long)]
        dir: PathBuf,
    },
    /// (node side) Removes DIR once its record is in the tarball.
    #[command(hide = true)]
    Forget {
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Entry point: `iolab stats ...`.
pub fn main(_prog: &str, args: Vec<OsString>) -> ExitCode {
    let args_line: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli: Cli = match exit::parse_clap("stats", args) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match cli.step {
        Step::Start { config, rsh } => start(&config, rsh.as_deref()),
        Step::Stop {
            config,
            tarball,
            rsh,
        } => stop(&config, tarball, rsh.as_deref()),
        Step::Analyse {
            tarball,
            format,
            out,
        } => analyse(&tarball, &format, out),
        Step::Run {
            config,
            tarball,
            rsh,
            json,
            store,
            keep_going,
            command,
        } => {
            let line = std::iter::once("iolab stats".to_string())
                .chain(args_line.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            let rec = RunRecord {
                json,
                store,
                line,
                keep_going,
            };
            run(&config, tarball, rsh.as_deref(), &command, rec)
        }
        Step::StartNode {
            dir,
            spec,
            foreground,
        } => start_node(&dir, &spec, foreground),
        Step::CheckNode { dir } => check_node(&dir),
        Step::Collect { dir } => collect(&dir),
        Step::Halt { dir } => halt(&dir),
        Step::Forget { dir } => match node::forget(&dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                exit::failed()
            }
        },
    }
}

/// Loads the config and plans the nodes; a bad config or remote shell
/// is a usage error, reported before anything starts.
fn load(config: &str) -> Result<Config, ExitCode> {
    config::load(config).map_err(|e| {
        eprintln!("iolab stats: {e}");
        exit::usage()
    })
}

fn plan<'a>(cfg: &'a Config, rsh: Option<&str>) -> Result<Plan<'a>, ExitCode> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("iolab"));
    Plan::new(cfg, rsh, &exe).map_err(|e| {
        eprintln!("iolab stats: {e}");
        exit::usage()
    })
}

/// Prints each node's result; the exit status is 1 when any failed.
fn report(what: &str, r: &Report) -> ExitCode {
    for n in &r.nodes {
        match &n.error {
            None => {
                let _ = outln!("{what} on {}", n.node);
            }
            Some(e) => eprintln!("iolab stats: {}: {e}", n.node),
        }
    }
    if !r.refused.is_empty() {
        exit::usage()
    } else if r.failed().is_empty() {
        ExitCode::SUCCESS
    } else {
        exit::failed()
    }
}

fn start(config: &str, rsh: Option<&str>) -> ExitCode {
    let cfg = match load(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let plan = match plan(&cfg, rsh) {
        Ok(p) => p,
        Err(code) => return code,
    };
    report("collecting", &plan.start())
}

/// `iolab-stats-YYYYmmdd-HHMMSS.tgz` in the current directory.
fn default_tarball() -> PathBuf {
    let secs = iolab_core::clock::wall_ns() / 1_000_000_000;
    let when = iolab_core::clock::format_local(secs, "%Y%m%d-%H%M%S");
    PathBuf::from(format!("iolab-stats-{when}.tgz"))
}

fn stop(config: &str, tarball: Option<PathBuf>, rsh: Option<&str>) -> ExitCode {
    let cfg = match load(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let plan = match plan(&cfg, rsh) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let tgz = tarball.unwrap_or_else(default_tarball);
    if let Err(code) = check_output("TARBALL", &tgz) {
        return code;
    }
    match plan.stop(&tgz) {
        Ok(r) => {
            let code = report("stopped", &r);
            let _ = outln!("profile tarball: {}", tgz.display());
            code
        }
        Err(e @ cluster::ClusterError::Destination { .. }) => {
            eprintln!("iolab stats stop: {e}");
            exit::usage()
        }
        Err(e) => {
            eprintln!("iolab stats: {e}");
            if matches!(e, cluster::ClusterError::Tarball { .. }) {
                eprintln!(
                    "iolab stats: the records stay in {} on each node; run stop again with another tarball",
                    node::run_dir(&cfg.tmp, "NODE").display()
                );
            }
            exit::failed()
        }
    }
}

/// The tarball (and the CSV directory analysed beside it) can be
/// written: checked before any collector starts, exit 2 naming the path.
fn check_output(option: &str, tgz: &Path) -> Result<(), ExitCode> {
    iolab_output::Planned::new()
        .file(option, Some(tgz))
        .dir("(CSV directory)", Some(&default_csv_dir(tgz)))
        .check()
        .map_err(|e| {
            eprintln!("iolab stats: {e}");
            exit::usage()
        })
}

/// `NAME-csv` beside `NAME.tgz`.
fn default_csv_dir(tgz: &Path) -> PathBuf {
    let stem = cluster::tarball_stem(tgz);
    tgz.with_file_name(format!("{stem}-csv"))
}

fn analyse(tgz: &Path, format: &str, out: Option<PathBuf>) -> ExitCode {
    let outcome = analysed(tgz, format, out);
    if let Outcome::Error(f) = &outcome {
        eprintln!("iolab stats analyse: {}", f.message);
    }
    exit::status(&outcome)
}

/// Analyses `tgz` into CSV files, printing what it wrote. Bad input (an
/// unknown format, a file that is not a readable profile tarball, a
/// member climbing out) and an output directory or tarball that cannot
/// be written are refused before anything is written (exit 2); a failure
/// while writing is an ordinary one.
fn analysed(tgz: &Path, format: &str, out: Option<PathBuf>) -> Outcome {
    let refused = |message: String| {
        Outcome::Error(Failure::other("analyse", message).of_kind(FailureKind::Refused))
    };
    if format != "csv" {
        return refused(format!(
            "format {format:?} is not supported; the only format is csv"
        ));
    }
    if !tgz.is_file() {
        return refused(format!("{}: no such profile tarball", tgz.display()));
    }
    let option = if out.is_some() {
        "--out"
    } else {
        "(CSV directory)"
    };
    let out = out.unwrap_or_else(|| default_csv_dir(tgz));
    let planned = iolab_output::Planned::new()
        .dir(option, Some(&out))
        .file("(CSV tarball)", Some(&out.with_extension("tgz")))
        .check();
    if let Err(e) = planned {
        return refused(e.to_string());
    }
    match iolab_stats::analyse_tarball(tgz, &out) {
        Ok(a) => {
            for n in &a.notes {
                let _ = outln!("note: {n}");
            }
            for f in &a.csv_files {
                let _ = outln!("{}", f.display());
            }
            let _ = outln!("csv tarball: {}", a.tarball.display());
            Outcome::Completed
        }
        // The tarball itself is at fault: nothing was written.
        Err(e @ iolab_stats::StatsError::Archive(_)) => refused(format!("{}: {e}", tgz.display())),
        Err(e) => Outcome::Error(Failure::other("analyse", format!("{}: {e}", tgz.display()))),
    }
}

/// `stats run`'s --json and --store, its command line for them, and
/// --keep-going.
struct RunRecord {
    json: Option<PathBuf>,
    store: Option<PathBuf>,
    line: String,
    keep_going: bool,
}

/// The payload of `iolab.stats.run/1`.
#[derive(serde::Serialize)]
struct RunPayload {
    /// The command that ran, as given.
    command: Vec<String>,
    /// Its exit status (128 + signal when a signal ended it).
    command_exit: u8,
    /// The profile tarball written.
    tarball: PathBuf,
    /// Nodes that gave no samples, with why.
    failed_nodes: Vec<String>,
}

fn run(
    config: &str,
    tarball: Option<PathBuf>,
    rsh: Option<&str>,
    command: &[OsString],
    rec: RunRecord,
) -> ExitCode {
    let cfg = match load(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Err(code) = plan(&cfg, rsh) {
        return code;
    }
    let tgz = tarball.unwrap_or_else(default_tarball);
    // Before the collectors start and the command runs, not after.
    if let Err(e) = cluster::check_destination(&tgz) {
        eprintln!("iolab stats run: {e}");
        return exit::usage();
    }
    if let Err(code) = check_output("--tarball", &tgz) {
        return code;
    }
    let store = match open_records(&rec) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let doc_config = serde_json::json!({ "config": config, "tarball": &tgz });
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("iolab"));
    let attach = match rec.keep_going {
        true => iolab_stats::attach_config,
        false => iolab_stats::attach_every,
    };
    let attached = match attach(cfg, rsh, &exe) {
        Ok(a) => a,
        Err(e @ (iolab_stats::StatsError::Refused(_) | iolab_stats::StatsError::UnsafeTmp(_))) => {
            eprintln!("iolab stats: {e}");
            return exit::usage();
        }
        Err(e @ iolab_stats::StatsError::NotStarted(_)) => {
            eprintln!("iolab stats run: {e}");
            eprintln!("iolab stats run: the command was not run; collectors that did start were stopped (--keep-going runs it without those nodes)");
            return exit::failed();
        }
        Err(e) => {
            eprintln!("iolab stats: {e}");
            return exit::failed();
        }
    };
    for f in attached.start_failed() {
        eprintln!(
            "iolab stats run: no collector on {f}; running the command without it (--keep-going)"
        );
    }
    let started_ns = iolab_core::clock::wall_ns();
    let status = run_forwarding(command);
    let collected = attached.finish(Some(&tgz));
    let command_exit = match &status {
        Ok(s) => command_code(s),
        Err(e) => {
            eprintln!(
                "iolab stats run: cannot run {}: {e}",
                command[0].to_string_lossy()
            );
            exit::FAILED
        }
    };
    let (collection_ok, failed_nodes, samples) = match collected {
        Ok(c) => {
            for f in &c.failed {
                eprintln!("iolab stats: {f}");
            }
            let _ = outln!("profile tarball: {}", tgz.display());
            let analysis = analysed(&tgz, "csv", None);
            if let Outcome::Error(f) = &analysis {
                eprintln!("iolab stats analyse: {}", f.message);
            }
            let ok = c.failed.is_empty() && !analysis.is_failure();
            (ok, c.failed.clone(), serde_json::to_value(&c).ok())
        }
        Err(e) => {
            eprintln!("iolab stats: {e}");
            (false, vec![], None)
        }
    };
    let payload = RunPayload {
        command: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        command_exit,
        tarball: tgz,
        failed_nodes,
    };
    let mut doc = Envelope::new(
        "iolab.stats.run/1",
        "stats run",
        &rec.line,
        doc_config,
        Environment {
            host: iolab_core::env::host_info(),
            filesystems: vec![],
        },
        Outcome::Completed,
        payload,
    );
    doc.outcome = run_outcome(&doc.payload, collection_ok);
    doc.started_unix_ns = started_ns;
    doc.finished_unix_ns = iolab_core::clock::wall_ns();
    doc.stats = samples;
    if !record_run(&rec, &store, &doc.to_json()) && doc.outcome == Outcome::Completed {
        return exit::output_failed();
    }
    exit::status(&doc.outcome)
}

/// Checks --json and opens --store before any collector starts.
fn open_records(rec: &RunRecord) -> Result<crate::store_hook::StoreHook, ExitCode> {
    let usage = |msg: String| {
        eprintln!("iolab stats: {msg}");
        exit::usage()
    };
    iolab_output::Planned::new()
        .file("--json", rec.json.as_deref())
        .check()
        .map_err(|e| usage(e.to_string()))?;
    crate::store_hook::StoreHook::open(rec.store.as_deref()).map_err(usage)
}

/// How the wrapped command and the collection ended, as a typed
/// outcome: the command's own status is a `Command` failure (so the
/// tool's exit status is the command's); a command that succeeded while a
/// node or the analysis failed is an ordinary failure (exit 1).
fn run_outcome(p: &RunPayload, collection_ok: bool) -> Outcome {
    let cmd = p.command.join(" ");
    match p.command_exit {
        0 if collection_ok => Outcome::Completed,
        0 => Outcome::Error(Failure::other(
            "stats run",
            format!("collection or analysis failed {:?}", p.failed_nodes),
        )),
        exit::INTERRUPTED => Outcome::Interrupted,
        c => Outcome::Error(
            Failure::other("command", format!("{cmd} exited with status {c}"))
                .of_kind(FailureKind::Command(c)),
        ),
    }
}

/// Writes --json and records --store; false when either failed.
fn record_run(rec: &RunRecord, store: &crate::store_hook::StoreHook, json: &str) -> bool {
    let mut ok = true;
    if let Some(p) = &rec.json {
        if let Err(e) = iolab_output::write_atomically(p, json.as_bytes()) {
            eprintln!("iolab stats run: --json {}: cannot write: {e}", p.display());
            ok = false;
        }
    }
    if let Err(f) = store.record_json(json) {
        eprintln!("iolab stats run: {f}");
        ok = false;
    }
    ok
}

/// Runs the command in a process group of its own and passes SIGINT and
/// SIGTERM on to that group, as `timeout` does: a supervisor that signals
/// iolab alone stops the command too, and Ctrl-C at a terminal reaches
/// the command once (not once from the terminal and again from us, which
/// an iolab child would take as a second Ctrl-C and skip its cleanup).
fn run_forwarding(command: &[OsString]) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let got = std::sync::Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, got.clone(), sig as usize)?;
    }
    let mut child = std::process::Command::new(&command[0])
        .args(&command[1..])
        .process_group(0)
        .spawn()?;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        let sig = got.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: kill(2) with a negative pid signals the group
            // process_group(0) made for our child; no memory is shared.
            unsafe { libc::kill(-(child.id() as libc::pid_t), sig as libc::c_int) };
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The command's exit code, or 128 + signal as a shell reports it.
fn command_code(s: &std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => exit::FAILED,
    }
}

fn start_node(dir: &Path, spec: &str, foreground: bool) -> ExitCode {
    let spec: iolab_stats::Spec = match serde_json::from_str(spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("iolab stats start-node: bad --spec: {e}");
            return exit::usage();
        }
    };
    if let Err(e) = spec.check("--spec") {
        eprintln!("iolab stats start-node: {e}");
        return exit::usage();
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("iolab"));
    let said = |pid: u32| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "collector pid {pid}").and_then(|_| out.flush());
    };
    let started = match foreground {
        true => node::foreground(&exe, dir, &spec, said),
        false => node::detach(&exe, dir, &spec).map(said),
    };
    match started {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            match e {
                node::NodeError::Unsafe(_) => exit::usage(),
                _ => exit::failed(),
            }
        }
    }
}

/// The node side of the start's preflight: exit 2 (the status the
/// console takes as a refusal) with the path named when TMP/iolab-stats
/// is a link or not this user's own.
fn check_node(dir: &Path) -> ExitCode {
    match node::check_base(dir.parent().unwrap_or(dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            exit::usage()
        }
    }
}

fn collect(dir: &Path) -> ExitCode {
    match node::collect(dir, &iolab_core::stop::requested) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iolab stats collect: {e}");
            exit::failed()
        }
    }
}

fn halt(dir: &Path) -> ExitCode {
    match node::halt(dir) {
        Ok(tar) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(&tar).and_then(|_| out.flush()).is_err() {
                return exit::failed();
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            exit::failed()
        }
    }
}
