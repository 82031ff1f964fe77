//! `iolab lst`: the network self-test's command line (clap). `agent`
//! serves; `run` validates everything (exit 2 before any agent is started
//! or contacted), runs the console, and prints lst stat's layout, with
//! JSON and CSV rewritten after every sweep point.

use crate::exit::{self, Ended, Halt};
use crate::runner::{options, Render, Report, Run, RunOptions};
use clap::{Args, Parser, Subcommand};
use iolab_core::Outcome;
use iolab_lst::agent::{self, AgentConfig};
use iolab_lst::console::{self, Node, Plan, DEFAULT_PORT};
use iolab_lst::spec::{self, Distribute, Limit, Test, MAX_CONCURRENCY};
use iolab_net::SharedKey;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    name = "iolab lst",
    about = "Network self-test in the manner of LNet selftest"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

// Parsed once per process: the size difference between variants costs
// nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve tests on this node until stopped.
    Agent(AgentArgs),
    /// Run one test (or a sweep) from the client group to the server
    /// group; in a session, `run BATCH` starts a batch.
    Run(RunArgs),
    /// Open a console session (keyed by LST_SESSION).
    #[command(name = "new_session")]
    NewSession(crate::lst_session::NewSessionArgs),
    /// End the session: stop its batches, end its agents.
    #[command(name = "end_session")]
    EndSession,
    /// Add a group of nodes to the session.
    #[command(name = "add_group")]
    AddGroup(crate::lst_session::AddGroupArgs),
    /// Add a batch to the session.
    #[command(name = "add_batch")]
    AddBatch(crate::lst_session::BatchArg),
    /// Add a test to a batch.
    #[command(name = "add_test")]
    AddTest(crate::lst_session::AddTestArgs),
    /// Stop a running batch.
    Stop(crate::lst_session::StopArgs),
    /// List the session's batches, or one batch's tests.
    #[command(name = "list_batch")]
    ListBatch(crate::lst_session::ListBatchArgs),
    /// Whether a batch runs (and what its last run moved).
    Query(crate::lst_session::QueryArgs),
    /// Print the live rates of groups (or nodes) every --delay seconds.
    Stat(crate::lst_session::StatArgs),
    /// Show the payload errors of groups' (or nodes') agents.
    #[command(name = "show_error")]
    ShowError(crate::lst_nodes::ShowErrorArgs),
    /// List the groups, or groups' nodes and their states.
    #[command(name = "list_group")]
    ListGroup(crate::lst_nodes::ListGroupArgs),
    /// Delete a group (its nodes in no other group leave the session).
    #[command(name = "del_group")]
    DelGroup(crate::lst_nodes::GroupArg),
    /// Refresh a group's nodes, or remove nodes from it.
    #[command(name = "update_group")]
    UpdateGroup(crate::lst_nodes::UpdateGroupArgs),
    /// Ask nodes whether their agents answer.
    Ping(crate::lst_nodes::PingArgs),
    /// Show the session.
    #[command(name = "show_session")]
    ShowSession,
}

#[derive(Args, Debug)]
struct AgentArgs {
    /// Address and port to listen on.
    #[arg(long, default_value_t = format!("0.0.0.0:{DEFAULT_PORT}"))]
    listen: String,
    /// Shared key file: every peer must hold the same key (else IOLAB_KEY_FILE).
    #[arg(long, conflicts_with = "session")]
    key: Option<PathBuf>,
    /// Started by a console (`lst run` does this): read the session's key
    /// (hex, or an empty line) and token from standard input, serve that
    /// session only, and exit when it ends or standard input closes.
    #[arg(long)]
    session: bool,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  iolab lst run ping --from n1,n2 --to n3 --concurrency 8 --duration 10
  iolab lst run brw write size=1M check=simple --from c1:7819 --to s1:7819 --count 1000
  iolab lst run brw read size=4k --from c1,c2,c3,c4 --to s1,s2 --clients 1,2,4 \\
      --concurrency 1,2,4,8,16,32,64 --repeat 3 --json out.json --csv out.csv
  iolab lst run ping --rsh 'exec:ip netns exec' --from ns1@10.213.7.2 --to ns2@10.213.7.3 --count 100")]
struct RunArgs {
    /// The test: `ping`, or `brw read|write size=N check=none|simple|full`;
    /// in a session, the batch to run (default `batch`, as lst's).
    #[arg(num_args = 0..)]
    test: Vec<String>,
    /// Client group: HOST:PORT (running agent), HOST (started through the
    /// remote shell), or LAUNCH@ADDR[:PORT], separated by commas; or
    /// @FILE with one node per line.
    #[arg(long)]
    from: Option<String>,
    /// Server group, written as --from.
    #[arg(long)]
    to: Option<String>,
    /// RPCs in flight per client; a comma list sweeps.
    #[arg(long, default_value = "1")]
    concurrency: String,
    /// Clients used per point (the first K of --from); a comma list sweeps.
    #[arg(long)]
    clients: Option<String>,
    /// How clients map to servers, as lst's A:B.
    #[arg(long, default_value = "1:1")]
    distribute: String,
    /// Seconds each run issues RPCs (default 10 when --count is not given).
    #[arg(long, conflicts_with = "count")]
    duration: Option<f64>,
    /// RPCs per client per run.
    #[arg(long)]
    count: Option<u64>,
    /// Runs per sweep point (the report shows their mean).
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Remote shell for the agents the console starts (else IOLAB_RSH, else ssh).
    #[arg(long)]
    rsh: Option<String>,
    /// The iolab command on the other hosts (default: this binary's path).
    #[arg(long)]
    agent_cmd: Option<String>,
    /// Port of the agents the console starts.
    #[arg(long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Shared key file (else IOLAB_KEY_FILE).
    #[arg(long)]
    key: Option<PathBuf>,
    /// Seconds to wait for each agent at the start.
    #[arg(long, default_value_t = 15.0)]
    connect_timeout: f64,
    /// --json (the results envelope), --csv (one row per point and
    /// group), --stats and --store: the runner's.
    #[command(flatten)]
    run: RunOptions<{ options::EVERY }>,
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let cli: Cli = exit::parse_clap(prog, args)?;
    // As given, the live options included (the dispatcher took them
    // out of `args`).
    let line = crate::process_command_line();
    use crate::lst_session as s;
    let one_shot = matches!(&cli.cmd, Cmd::Run(r) if !r.runs_a_batch());
    if let Some(opt) = crate::live::asked_option().filter(|_| !one_shot) {
        // Only the one-shot run records live figures: anywhere else the
        // option would be taken out and ignored.
        return Err(Halt::usage(format!(
            "iolab lst: {opt} belongs to the one-shot form (`lst run TEST --from ... --to ... {opt} ...`); no other lst command records live figures"
        )));
    }
    match cli.cmd {
        Cmd::Agent(a) => run_agent(a),
        Cmd::Run(r) if r.runs_a_batch() => {
            match one_shot_options(&r) {
                None => s::run_batch(
                    r.test
                        .first()
                        .map_or(iolab_lst::session::DEFAULT_BATCH, String::as_str),
                ),
                Some(opt) => Err(Halt::usage(format!("iolab lst run: {opt} belongs to the one-shot form (`lst run TEST --from ... --to ...`); `lst run BATCH` runs a session's batch as add_test set it up"))),
            }
        }
        Cmd::NewSession(a) => s::new_session(a),
        Cmd::EndSession => s::end_session(),
        Cmd::AddGroup(a) => s::add_group(a),
        Cmd::AddBatch(a) => s::add_batch(a),
        Cmd::AddTest(a) => s::add_test(a),
        Cmd::Stop(a) => s::stop(a),
        Cmd::ListBatch(a) => s::list_batch(a),
        Cmd::Query(a) => s::query(a),
        Cmd::Stat(a) => s::stat(a),
        Cmd::ShowError(a) => crate::lst_nodes::show_error(a),
        Cmd::ListGroup(a) => crate::lst_nodes::list_group(a),
        Cmd::DelGroup(a) => crate::lst_nodes::del_group(a),
        Cmd::UpdateGroup(a) => crate::lst_nodes::update_group(a),
        Cmd::Ping(a) => crate::lst_nodes::ping(a),
        Cmd::ShowSession => crate::lst_nodes::show_session(),
        Cmd::Run(r) => {
            let p = plan(&r).map_err(|msg| Halt::usage(format!("iolab lst: {msg}")))?;
            run_console(&p, &r, &line)
        }
    }
}

fn run_agent(a: AgentArgs) -> Ended {
    // A value that is no address is bad usage (exit 2), told apart from
    // a good address that cannot be bound (port in use: exit 1).
    match std::net::ToSocketAddrs::to_socket_addrs(a.listen.as_str()) {
        Err(e) => {
            return Err(Halt::usage(format!(
                "iolab lst agent: --listen {:?}: not an ADDRESS:PORT (e.g. 0.0.0.0:{DEFAULT_PORT}): {e}",
                a.listen
            )))
        }
        // Port 0 would listen on a port no console is told of.
        Ok(at) if at.clone().any(|s| s.port() == 0) => {
            return Err(Halt::usage(format!(
                "iolab lst agent: --listen {:?}: port 0 picks a port nobody is told; give one (e.g. {DEFAULT_PORT})",
                a.listen
            )))
        }
        Ok(_) => {}
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (key, token) =
        agent_secrets(&a, &stop).map_err(|e| Halt::usage(format!("iolab lst agent: {e}")))?;
    // The tests' hook, as xdd's IOLAB_E2E_DAMAGE: a debug build only, so
    // no agent a site runs damages its data because of a stray variable.
    let corrupt_every = match cfg!(debug_assertions) {
        true => std::env::var(iolab_lst::CORRUPT_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        false => 0,
    };
    let cfg = AgentConfig {
        listen: a.listen,
        key,
        token,
        corrupt_every,
        orphan_after: std::time::Duration::ZERO,
        // The agent's own lines (a frame refused, its console never
        // came): the only word a session's end gets on this node.
        log: agent::Log::new(|line| iolab_core::say!("iolab lst agent: {line}")),
    };
    agent::serve(cfg, stop)
        .map(|()| Outcome::Completed)
        .map_err(|e| Halt::failed(format!("iolab lst agent: {e}")))
}

/// The agent's key and session token: with `--session`, from standard
/// input (whose closing then stops the agent); else `--key` or
/// IOLAB_KEY_FILE and no token: an agent started by hand serves any
/// console that holds its key. (No environment variable gives a token:
/// one inherited from a user's shell made a hand-started agent refuse
/// every console.)
fn agent_secrets(
    a: &AgentArgs,
    stop: &Arc<AtomicBool>,
) -> Result<(Option<SharedKey>, Option<String>), String> {
    if !a.session {
        let key = SharedKey::resolve(a.key.as_deref()).map_err(|e| format!("--key: {e}"))?;
        return Ok((key, None));
    }
    let lines = iolab_net::key::read_stdin_lines(2).map_err(|e| format!("--session: {e}"))?;
    let key = match lines[0].as_str() {
        "" => None,
        hex => Some(SharedKey::from_hex(hex).map_err(|e| format!("--session: {e}"))?),
    };
    if lines[1].len() < 16 {
        return Err("--session: no session token on standard input".into());
    }
    let flag = Arc::clone(stop);
    iolab_net::key::on_stdin_close(move || flag.store(true, std::sync::atomic::Ordering::Relaxed));
    Ok((key, Some(lines[1].clone())))
}

/// Checks a command line as `iolab lst` would read it (for a sweep's
/// plan): clap's parse and the validation of a run; nothing is started.
pub fn check_args(args: &[OsString]) -> Result<(), String> {
    let argv = std::iter::once(OsString::from("iolab lst")).chain(args.iter().cloned());
    match Cli::try_parse_from(argv).map_err(|e| e.to_string())?.cmd {
        Cmd::Run(r) => plan(&r).map(drop),
        _ => Err("a sweep runs tests: `lst run ...` with --from and --to".into()),
    }
}

/// A group: nodes separated by commas, or `@FILE` with nodes separated
/// by commas or lines (`#` starts a comment), as lst's group lists.
fn nodes(option: &str, s: &str, port: u16) -> Result<Vec<Node>, String> {
    let text = match s.strip_prefix('@') {
        Some(path) => {
            iolab_core::input::read_text(path.as_ref(), iolab_core::input::TEXT_MAX_BYTES)
                .map_err(|e| format!("{option} @{path}: cannot read the group file: {e}"))?
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(",")
        }
        None => s.to_string(),
    };
    let v: Vec<Node> = text
        .split(',')
        .map(|n| Node::parse(n.trim(), port).map_err(|e| format!("{option}: {e}")))
        .collect::<Result<_, _>>()?;
    if v.len() > 4096 {
        return Err(format!("{option}: {} nodes, at most 4096", v.len()));
    }
    // A node given twice would be one agent merged into one client job
    // (or refuse its own console as busy): refused before anything starts.
    iolab_lst::hosts::distinct(&v).map_err(|e| format!("{option}: {e}"))?;
    Ok(v)
}

impl RunArgs {
    /// `lst run BATCH` (a session's batch: one word, no --from or --to),
    /// not the one-shot `lst run TEST --from ... --to ...`.
    /// `lst run [BATCH]`: neither group given and at most one word (lst
    /// runs the batch `batch` when none is named).
    fn runs_a_batch(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.test.len() <= 1
    }
}

/// The first option of the one-shot form given to `lst run BATCH`,
/// which has none (it would be ignored).
fn one_shot_options(r: &RunArgs) -> Option<&'static str> {
    let given = [
        ("--concurrency", r.concurrency != "1"),
        ("--clients", r.clients.is_some()),
        ("--distribute", r.distribute != "1:1"),
        ("--duration", r.duration.is_some()),
        ("--count", r.count.is_some()),
        ("--repeat", r.repeat != 1),
        ("--rsh", r.rsh.is_some()),
        ("--agent-cmd", r.agent_cmd.is_some()),
        ("--port", r.port != DEFAULT_PORT),
        ("--key", r.key.is_some()),
        ("--connect-timeout", r.connect_timeout != 15.0),
        ("--json", r.run.json.is_some()),
        ("--csv", r.run.csv.is_some()),
        ("--stats", r.run.stats.is_some()),
        ("--store", r.run.store.is_some()),
    ];
    given.iter().find(|(_, on)| *on).map(|(name, _)| *name)
}

fn required<'a>(opt: &str, v: &'a Option<String>) -> Result<&'a str, String> {
    v.as_deref().ok_or_else(|| {
        format!(
            "{opt} is required (`lst run TEST --from ... --to ...`; in a session, `lst run BATCH`)"
        )
    })
}

/// Validates every option into a plan; nothing is started here.
fn plan(r: &RunArgs) -> Result<Plan, String> {
    let test = Test::parse(&r.test).map_err(|e| e.to_string())?;
    let from = nodes("--from", required("--from", &r.from)?, r.port)?;
    let mut to = nodes("--to", required("--to", &r.to)?, r.port)?;
    iolab_lst::hosts::join_spellings(&from, &mut to);
    let concurrency = spec::parse_list("--concurrency", &r.concurrency, MAX_CONCURRENCY)
        .map_err(|e| e.to_string())?;
    let clients = match &r.clients {
        Some(s) => spec::parse_list("--clients", s, from.len() as u32)
            .map_err(|e| format!("{e} (--from has {} nodes)", from.len()))?,
        None => vec![from.len() as u32],
    };
    let limit = match (r.duration, r.count) {
        (_, Some(n)) => Limit::Count(n),
        (Some(s), None) => Limit::DurationS(s),
        (None, None) => Limit::DurationS(10.0),
    };
    limit.validate().map_err(|e| e.to_string())?;
    if !(1..=1000).contains(&r.repeat) {
        return Err(format!("--repeat {}: must be from 1 to 1000", r.repeat));
    }
    if !(r.connect_timeout > 0.0 && r.connect_timeout <= 3600.0) {
        return Err(format!(
            "--connect-timeout {}: must be more than 0 and at most 3600 seconds",
            r.connect_timeout
        ));
    }
    let launches = from.iter().chain(&to).any(|n| n.launch.is_some());
    let rsh = match (&r.rsh, launches) {
        (_, false) => None,
        (opt, true) => Some(
            iolab_launch::RemoteShell::resolve(opt.as_deref())
                .map_err(|e| format!("--rsh: {e}"))?,
        ),
    };
    let key_file = r
        .key
        .clone()
        .or_else(|| std::env::var_os("IOLAB_KEY_FILE").map(PathBuf::from));
    if let Some(k) = &key_file {
        SharedKey::from_file(k).map_err(|e| format!("--key: {e}"))?;
    }
    let distribute = Distribute::parse(&r.distribute).map_err(|e| e.to_string())?;
    distribute.check(to.len()).map_err(|e| e.to_string())?;
    Ok(Plan {
        test,
        from,
        to,
        distribute,
        concurrency,
        clients,
        repeat: r.repeat,
        limit,
        key_file,
        rsh,
        agent_cmd: agent_cmd(r)?,
        connect_timeout_s: r.connect_timeout,
    })
}

fn agent_cmd(r: &RunArgs) -> Result<Vec<String>, String> {
    match &r.agent_cmd {
        Some(s) => {
            let v: Vec<String> = s.split_whitespace().map(String::from).collect();
            if v.is_empty() {
                return Err("--agent-cmd: empty".into());
            }
            Ok(v)
        }
        None => std::env::current_exe()
            .map(|p| vec![p.display().to_string()])
            .map_err(|e| format!("cannot find this binary's path for --agent-cmd: {e}")),
    }
}

/// Runs the console's points through the runner: the outputs are
/// rewritten after every point, so a later failure loses nothing that
/// ran.
fn run_console(plan: &Plan, r: &RunArgs, line: &str) -> Ended {
    let mut session = Run::new(
        "iolab lst",
        "lst",
        iolab_report::lst::json::SCHEMA,
        line,
        plan,
        r.run.0.clone(),
    )
    .compatible_with("LNet selftest (lst)")
    .open()?;
    // Live figures: the console reads its agents' each interval and the
    // sampler merges them (one row per agent, and the aggregate).
    let nodes: Vec<String> = console::unique_nodes(plan)
        .into_iter()
        .map(|n| n.name)
        .collect();
    let (feed, peers) = crate::live::agents(nodes.len());
    let watcher = session
        .live(true, Some(peers))
        .map(|_| feed.clone() as Arc<dyn iolab_lst::watch::Watcher>);
    session.start();
    let mut so_far = Vec::new();
    let runs = (plan.clients.len() * plan.concurrency.len()) as u64 * u64::from(plan.repeat);
    let per_run_s = match plan.limit {
        iolab_lst::spec::Limit::DurationS(s) => Some(s),
        iolab_lst::spec::Limit::Count(_) => None,
    };
    let what = format!(
        "points x {} repeat(s) = {runs} runs{}",
        plan.repeat,
        per_run_s.map(|s| format!(" of {s} s")).unwrap_or_default()
    );
    let points = (plan.clients.len() * plan.concurrency.len()) as u64;
    let mut progress = crate::progress::Points::start(
        "iolab lst",
        points,
        &what,
        per_run_s.map(|s| s * f64::from(plan.repeat)),
    );
    let cancel = session.cancel().clone();
    let report = console::run(plan, &cancel, watcher, |p| {
        progress.point_done(&format!(
            "clients {}, concurrency {}",
            p.clients, p.concurrency
        ));
        so_far.push(p.clone());
        let mut doc = session.document(Outcome::Completed, vec![], &so_far[..]);
        doc.figures = iolab_report::lst::json::figures(plan, &so_far);
        session.rewrite(&mut doc, Render::csv(&csv_of(Outcome::Completed)));
    });
    drop(progress);
    feed.close(&nodes);
    session.stop_watching(&report.outcome);
    let _ = out!("{}", iolab_report::lst::text::render(plan, &report));
    let mut done = Report::new(report.outcome.clone(), &report.points[..]);
    done.figures = iolab_report::lst::json::figures(plan, &report.points);
    let outcome = session.finish(done, Render::csv(&csv_of(report.outcome.clone())));
    if outcome.is_failure() || outcome == Outcome::Interrupted {
        iolab_core::say!("iolab lst: {outcome}");
    }
    Ok(outcome)
}

/// The CSV of the points (the payload), for the runner to write.
fn csv_of(
    outcome: Outcome,
) -> impl Fn(&&[iolab_lst::PointResult], &mut dyn std::io::Write) -> std::io::Result<()> {
    move |points, w| {
        let report = iolab_lst::Report {
            points: points.to_vec(),
            outcome: outcome.clone(),
        };
        w.write_all(iolab_report::lst::csv::render(&report).as_bytes())
    }
}
