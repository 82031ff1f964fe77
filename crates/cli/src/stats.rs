//! `iolab stats`: the kit's stats-collect steps (start, stop, analyse)
//! and `run`, which wraps one command in all three. The node-side steps
//! the remote shell runs (`start-node`, `collect`, `halt`) are hidden
//! subcommands of the same binary.

use crate::exit::{self, Ended, Halt, HaltKind};
use crate::runner::{options, Render, Run, RunOptions};
use clap::{Parser, Subcommand};
use iolab_core::{Failure, FailureKind, Outcome};
use iolab_stats::cluster::{self, Plan, Report};
use iolab_stats::{config, node, Config};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

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
        /// --json (schema iolab.stats.run/1, the samples in `stats`)
        /// and --store, the runner's.
        #[command(flatten)]
        run: RunOptions<{ options::JSON | options::STORE }>,
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
        /// The collector's settings: `hex:` and the JSON's bytes (a word
        /// no remote shell changes), or the JSON itself.
        #[arg(long)]
        spec: String,
        /// Stay until the collector ends (for a remote shell that kills
        /// what its command started when the command returns: srun).
        #[arg(long)]
        foreground: bool,
        /// With --foreground: stop the collector when standard input
        /// closes or this process is asked to stop, for the console that
        /// started it is gone (`stats run` killed, kill -9 included).
        #[arg(long, requires = "foreground")]
        tethered: bool,
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
pub fn main(_prog: &str, args: Vec<OsString>) -> Ended {
    let args_line: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli: Cli = exit::parse_clap("stats", args)?;
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
            run: given,
            keep_going,
            command,
        } => {
            let line = std::iter::once("iolab stats".to_string())
                .chain(args_line.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            let rec = RunRecord {
                given: given.0,
                line,
                keep_going,
            };
            run(&config, tarball, rsh.as_deref(), &command, rec)
        }
        Step::StartNode {
            dir,
            spec,
            foreground,
            tethered,
        } => start_node(&dir, &spec, foreground, tethered),
        Step::CheckNode { dir } => check_node(&dir),
        Step::Collect { dir } => collect(&dir),
        Step::Halt { dir } => halt(&dir),
        Step::Forget { dir } => node::forget(&dir)
            .map(|()| Outcome::Completed)
            .map_err(Halt::failed),
    }
}

/// Loads the config and plans the nodes; a bad config or remote shell
/// is a usage error, reported before anything starts.
fn load(config: &str) -> Result<Config, Halt> {
    config::load(config).map_err(|e| Halt::usage(format!("iolab stats: {e}")))
}

fn plan<'a>(cfg: &'a Config, rsh: Option<&str>) -> Result<Plan<'a>, Halt> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("iolab"));
    Plan::new(cfg, rsh, &exe)
        .map(|p| p.with_cancel(crate::runner::root()))
        .map_err(|e| Halt::usage(format!("iolab stats: {e}")))
}

/// Prints each node's result; a refused node is a usage halt, a failed
/// one a failed halt.
fn report(what: &str, r: &Report) -> Ended {
    for n in &r.nodes {
        match &n.error {
            None => {
                let _ = outln!("{what} on {}", n.node);
            }
            Some(e) => iolab_core::say!("iolab stats: {}: {e}", n.node),
        }
    }
    if r.interrupted {
        // The nodes listed above as collecting stay so until `stats stop`.
        Err(Halt::new(
            HaltKind::Interrupted,
            "iolab stats start: interrupted; the nodes said to be collecting stay so until `iolab stats stop`",
        ))
    } else if !r.refused.is_empty() {
        Err(Halt::said(HaltKind::Usage))
    } else if r.failed().is_empty() {
        Ok(Outcome::Completed)
    } else {
        Err(Halt::said(HaltKind::Failed))
    }
}

fn start(config: &str, rsh: Option<&str>) -> Ended {
    let cfg = load(config)?;
    report("collecting", &plan(&cfg, rsh)?.start())
}

/// `iolab-stats-YYYYmmdd-HHMMSS.tgz` in the current directory.
fn default_tarball() -> PathBuf {
    let secs = iolab_core::clock::wall_ns() / 1_000_000_000;
    let when = iolab_core::clock::format_local(secs, "%Y%m%d-%H%M%S");
    PathBuf::from(format!("iolab-stats-{when}.tgz"))
}

fn stop(config: &str, tarball: Option<PathBuf>, rsh: Option<&str>) -> Ended {
    let cfg = load(config)?;
    let plan = plan(&cfg, rsh)?;
    let tgz = tarball.unwrap_or_else(default_tarball);
    tarball_outputs("TARBALL", &tgz)
        .check()
        .map_err(|e| Halt::usage(format!("iolab stats: {e}")))?;
    match plan.stop(&tgz) {
        Ok(r) => {
            let ended = report("stopped", &r);
            let _ = outln!("profile tarball: {}", tgz.display());
            ended
        }
        Err(e @ cluster::ClusterError::Destination { .. }) => {
            Err(Halt::usage(format!("iolab stats stop: {e}")))
        }
        Err(e) => {
            let mut msg = format!("iolab stats: {e}");
            if matches!(e, cluster::ClusterError::Tarball { .. }) {
                msg += &format!(
                    "\niolab stats: the records stay in {} on each node; run stop again with another tarball",
                    node::run_dir(&cfg.tmp, "NODE").display()
                );
            }
            Err(Halt::failed(msg))
        }
    }
}

/// The tarball (and the CSV directory analysed beside it), to be checked
/// before any collector starts (exit 2 naming the path).
fn tarball_outputs(option: &str, tgz: &Path) -> iolab_output::Planned {
    iolab_output::Planned::new()
        .file(option, Some(tgz))
        .dir("(CSV directory)", Some(&default_csv_dir(tgz)))
}

/// `NAME-csv` beside `NAME.tgz`.
fn default_csv_dir(tgz: &Path) -> PathBuf {
    let stem = cluster::tarball_stem(tgz);
    tgz.with_file_name(format!("{stem}-csv"))
}

/// True when `a` and `b` name one file (the same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

fn analyse(tgz: &Path, format: &str, out: Option<PathBuf>) -> Ended {
    let outcome = analysed(tgz, format, out);
    if let Outcome::Error(f) = &outcome {
        iolab_core::say!("iolab stats analyse: {}", f.message);
    }
    Ok(outcome)
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
    let csv_tgz = iolab_stats::csv_tarball(&out);
    if same_file(tgz, &csv_tgz) {
        return refused(format!(
            "{option} {}: its tarball {} is the profile tarball being read; give another {option}",
            out.display(),
            csv_tgz.display()
        ));
    }
    if let Err(e) = iolab_stats::check_csv_dir(&out) {
        return refused(format!("{option}: {e}"));
    }
    let planned = iolab_output::Planned::new()
        .dir(option, Some(&out))
        .file("(CSV tarball)", Some(&csv_tgz))
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

/// Whether `cmd` names a program this process can run, as execvp finds
/// it (a path with a slash as it is, else each directory of PATH): a
/// command that cannot run is bad usage found before any collector
/// starts or tarball is written.
fn runnable(cmd: &std::ffi::OsStr) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let executable = |p: &std::path::Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: access(2) reads the NUL-terminated path only.
        p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
    };
    let name = std::path::Path::new(cmd);
    let found = match cmd.as_bytes().contains(&b'/') {
        true => executable(name),
        false => std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).any(|d| executable(&d.join(name))))
            .unwrap_or(false),
    };
    match found {
        true => Ok(()),
        false => Err(format!(
            "cannot run {}: no such program (or not executable); nothing was started",
            name.display()
        )),
    }
}

/// `stats run`'s --json and --store, its command line for them, and
/// --keep-going.
struct RunRecord {
    given: crate::runner::Given,
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
) -> Ended {
    let cfg = load(config)?;
    plan(&cfg, rsh)?;
    if let Some(first) = command.first() {
        runnable(first).map_err(|e| Halt::usage(format!("iolab stats run: {e}")))?;
    }
    let tgz = tarball.unwrap_or_else(default_tarball);
    // Before the collectors start and the command runs, not after.
    cluster::check_destination(&tgz).map_err(|e| Halt::usage(format!("iolab stats run: {e}")))?;
    iolab_stats::check_csv_dir(&default_csv_dir(&tgz))
        .map_err(|e| Halt::usage(format!("iolab stats run: {e}")))?;
    let doc_config = serde_json::json!({ "config": config, "tarball": &tgz });
    let mut session = Run::new(
        "iolab stats run",
        "stats run",
        RUN_SCHEMA,
        &rec.line,
        doc_config,
        rec.given,
    )
    .outputs(tarball_outputs("--tarball", &tgz))
    .open()?;
    // Its exit status is the command's, to which it passes the signals.
    session.signals_passed_on();
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("iolab"));
    let attach = match rec.keep_going {
        true => iolab_stats::attach_config,
        false => iolab_stats::attach_every,
    };
    let attached = attach(cfg, rsh, &exe).map_err(|e| match e {
        iolab_stats::StatsError::Refused(_) | iolab_stats::StatsError::UnsafeTmp(_) => {
            Halt::usage(format!("iolab stats: {e}"))
        }
        iolab_stats::StatsError::Interrupted => Halt::new(
            HaltKind::Interrupted,
            format!("iolab stats run: {e}; the command was not run"),
        ),
        iolab_stats::StatsError::NotStarted(_) => Halt::failed(format!(
            "iolab stats run: {e}\niolab stats run: the command was not run; collectors that did start were stopped (--keep-going runs it without those nodes)"
        )),
        _ => Halt::failed(format!("iolab stats: {e}")),
    })?;
    for f in attached.start_failed() {
        iolab_core::say!(
            "iolab stats run: no collector on {f}; running the command without it (--keep-going)"
        );
    }
    session.start();
    let status = run_forwarding(command);
    let collected = attached.finish(Some(&tgz));
    let command_exit = match &status {
        Ok(s) => command_code(s),
        Err(e) => {
            iolab_core::say!(
                "iolab stats run: cannot run {}: {e}",
                command[0].to_string_lossy()
            );
            exit::FAILED
        }
    };
    let (collection_ok, failed_nodes, samples) = match collected {
        Ok(c) => {
            for f in &c.failed {
                iolab_core::say!("iolab stats: {f}");
            }
            let _ = outln!("profile tarball: {}", tgz.display());
            let analysis = analysed(&tgz, "csv", None);
            if let Outcome::Error(f) = &analysis {
                iolab_core::say!("iolab stats analyse: {}", f.message);
            }
            let ok = c.failed.is_empty() && !analysis.is_failure();
            (ok, c.failed.clone(), serde_json::to_value(&c).ok())
        }
        Err(e) => {
            iolab_core::say!("iolab stats: {e}");
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
    let mut report = crate::runner::Report::new(run_outcome(&payload, collection_ok), payload);
    report.stats = samples;
    Ok(session.finish(report, Render::plain()))
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

/// Runs the command in a process group of its own and passes SIGINT,
/// SIGTERM and SIGHUP on to that group, as `timeout` does: a supervisor that signals
/// iolab alone stops the command too, and Ctrl-C at a terminal reaches
/// the command once (not once from the terminal and again from us, which
/// an iolab child would take as a second Ctrl-C and skip its cleanup).
fn run_forwarding(command: &[OsString]) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let got = std::sync::Arc::new(AtomicUsize::new(0));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        if crate::signals::ignored(sig) {
            continue;
        }
        signal_hook::flag::register_usize(sig, got.clone(), sig as usize)?;
    }
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]).process_group(0);
    // In its own group the command would outlive an iolab killed with
    // -9: it is signalled as SIGTERM would have been forwarded.
    iolab_launch::end_with_parent(&mut cmd, libc::SIGTERM);
    let mut child = cmd.spawn()?;
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

/// The schema of `stats run`'s document.
pub(crate) const RUN_SCHEMA: &str = "iolab.stats.run/1";

fn start_node(dir: &Path, spec: &str, foreground: bool, tethered: bool) -> Ended {
    // A plain word (what `stats start` sends), or the JSON itself.
    let json = iolab_launch::from_plain_word(spec).unwrap_or_else(|| spec.to_string());
    let spec: iolab_stats::Spec = serde_json::from_str(&json)
        .map_err(|e| Halt::usage(format!("iolab stats start-node: bad --spec: {e}")))?;
    spec.check("--spec")
        .map_err(|e| Halt::usage(format!("iolab stats start-node: {e}")))?;
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("iolab"));
    let said = |pid: u32| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "collector pid {pid}").and_then(|_| out.flush());
    };
    // The console's end: its pipe to our standard input closes (ssh,
    // a shell agent), or we are signalled (the parent-death SIGTERM when
    // the agent execs us, as `ip netns exec` does).
    let root = crate::runner::root();
    if tethered {
        iolab_net::key::on_stdin_close(move || root.cancel());
    }
    let stop = || tethered && root.is_cancelled();
    let started = match foreground {
        true => node::foreground(&exe, dir, &spec, said, &stop),
        false => node::detach(&exe, dir, &spec).map(said),
    };
    started.map(|()| Outcome::Completed).map_err(|e| {
        let kind = match e {
            node::NodeError::Unsafe(_) | node::NodeError::Foreign { .. } => HaltKind::Usage,
            _ => HaltKind::Failed,
        };
        Halt::new(kind, e)
    })
}

/// The node side of the start's preflight: exit 2 (the status the
/// console takes as a refusal) with the path named when TMP/iolab-stats
/// is a link or not this user's own, or the run directory holds what no
/// collector wrote.
fn check_node(dir: &Path) -> Ended {
    node::check_dir(dir)
        .map(|()| Outcome::Completed)
        .map_err(Halt::usage)
}

fn collect(dir: &Path) -> Ended {
    node::collect(dir, &|| crate::runner::root().is_cancelled())
        .map(|()| Outcome::Completed)
        .map_err(|e| Halt::failed(format!("iolab stats collect: {e}")))
}

fn halt(dir: &Path) -> Ended {
    let tar = node::halt(dir).map_err(Halt::failed)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&tar)
        .and_then(|_| out.flush())
        .map_err(|_| Halt::said(HaltKind::Failed))?;
    Ok(Outcome::Completed)
}
