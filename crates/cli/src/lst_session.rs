//! `iolab lst`'s console commands, as LNet selftest's console has them:
//! `new_session` starts the session daemon (iolab_lst::session), every
//! other command sends it one request and prints the answer in lst's
//! words. Everything a command can check itself (test words, numbers,
//! names) is checked here, exit 2, before the daemon is asked anything.

use crate::exit::{Ended, Halt, HaltKind};
use clap::Args;
use iolab_core::Outcome;
use iolab_lst::console::DEFAULT_PORT;
use iolab_lst::session::daemon::{self, SessionConfig};
use iolab_lst::session::{self, BatchInfo, Reply, Request, TestDef, SESSION_ENV};
use iolab_lst::spec::{Distribute, Test};
use iolab_report::lst::stat::Select;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// `new_session`'s options (lst's, then iolab's own for its agents).
#[derive(Args, Debug)]
pub struct NewSessionArgs {
    /// The session's name.
    name: String,
    /// End the session when no console command has come for this many seconds.
    #[arg(long, default_value_t = session::DEFAULT_TIMEOUT_S)]
    timeout: u64,
    /// End the session already open under this LST_SESSION first.
    #[arg(long)]
    force: bool,
    /// iolab: remote shell for the agents the session starts (else IOLAB_RSH, else ssh).
    #[arg(long)]
    rsh: Option<String>,
    /// iolab: the iolab command on the other hosts (default: this binary's path).
    #[arg(long)]
    agent_cmd: Option<String>,
    /// iolab: port of agents named without one (NIDs included).
    #[arg(long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// iolab: shared key file every agent holds (else IOLAB_KEY_FILE).
    #[arg(long)]
    key: Option<PathBuf>,
    /// iolab: seconds to wait for each agent when a group is added.
    #[arg(long, default_value_t = 15.0)]
    connect_timeout: f64,
    /// (internal) serve the session in this process.
    #[arg(long, hide = true)]
    daemon: bool,
}

/// `add_group NAME HOST...`.
#[derive(Args, Debug)]
pub struct AddGroupArgs {
    /// Group name.
    name: String,
    /// Hosts: HOST:PORT, ADDR@tcp (NIDs: agents running there), HOST or
    /// LAUNCH@ADDR[:PORT] (started by the session); ranges as 10.0.0.[2-9].
    #[arg(required = true)]
    hosts: Vec<String>,
}

/// `add_test`'s options.
#[derive(Args, Debug)]
pub struct AddTestArgs {
    /// The batch.
    #[arg(long, default_value = iolab_lst::session::DEFAULT_BATCH)]
    batch: String,
    /// RPCs in flight per client.
    #[arg(long, default_value_t = 1)]
    concurrency: u32,
    /// How clients map to servers (A:B).
    #[arg(long, default_value = "1:1")]
    distribute: String,
    /// RPCs per client; without it the test runs until `stop`.
    #[arg(long = "loop")]
    loop_count: Option<u64>,
    /// Seconds an RPC may wait for its reply before the node's job fails
    /// (default 30).
    #[arg(long)]
    timeout: Option<u32>,
    /// Client group.
    #[arg(long, required = true)]
    from: String,
    /// Server group.
    #[arg(long, required = true)]
    to: String,
    /// `ping`, or `brw read|write [size=N] [check=none|simple|full]`.
    #[arg(required = true, num_args = 1..)]
    test: Vec<String>,
}

/// A batch name (`add_batch`).
#[derive(Args, Debug)]
pub struct BatchArg {
    /// The batch.
    name: String,
}

/// `stop [NAME]`.
#[derive(Args, Debug)]
pub struct StopArgs {
    /// The batch (lst's default: `batch`, which every session has).
    #[arg(default_value = iolab_lst::session::DEFAULT_BATCH)]
    name: String,
}

/// `list_batch [NAME] [--test N] [--active|--invalid|--all] [--server]`.
#[derive(Args, Debug)]
pub struct ListBatchArgs {
    /// One batch (its state and nodes), or every batch's name.
    name: Option<String>,
    /// Only test N of the batch (from 1).
    #[arg(long)]
    test: Option<usize>,
    /// List the active nodes.
    #[arg(long)]
    active: bool,
    /// List the nodes that are not active.
    #[arg(long)]
    invalid: bool,
    /// List every node.
    #[arg(long)]
    all: bool,
    /// List server nodes rather than clients.
    #[arg(long)]
    server: bool,
}

/// `query NAME`'s options, as lst has them.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The batch (lst's default: `batch`).
    #[arg(default_value = iolab_lst::session::DEFAULT_BATCH)]
    name: String,
    /// Only test N of the batch (from 1).
    #[arg(long)]
    test: Option<usize>,
    /// Seconds the session may take to answer each query.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Queries to make.
    #[arg(long = "loop", default_value_t = 1)]
    loop_count: u32,
    /// Seconds between queries.
    #[arg(long, default_value_t = 5.0)]
    delay: f64,
    /// Every node and whether its job runs.
    #[arg(long)]
    all: bool,
    /// Only the nodes whose job runs.
    #[arg(long)]
    active: bool,
    /// Only the nodes whose job does not run.
    #[arg(long)]
    idle: bool,
    /// Server nodes rather than clients (with --all).
    #[arg(long)]
    server: bool,
}

/// `stat`'s options, as lst has them.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// Groups to watch, or nodes of the session (NIDs, ranges), each
    /// shown as its own block.
    #[arg(required = true, value_name = "GROUP|NODES")]
    groups: Vec<String>,
    /// Seconds between readings.
    #[arg(long, default_value_t = 5.0)]
    delay: f64,
    /// Intervals to print (default: until killed).
    #[arg(long)]
    count: Option<u64>,
    /// Seconds a reading of every node may take.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Bandwidth only.
    #[arg(long)]
    bw: bool,
    /// Rates only.
    #[arg(long)]
    rate: bool,
    /// `[R]` lines only.
    #[arg(long)]
    read: bool,
    /// `[W]` lines only.
    #[arg(long)]
    write: bool,
    /// Averages (with --min/--max: only those asked).
    #[arg(long)]
    avg: bool,
    /// Minimums.
    #[arg(long)]
    min: bool,
    /// Maximums.
    #[arg(long)]
    max: bool,
    /// Bandwidth in MB/s instead of MiB/s.
    #[arg(long)]
    mbs: bool,
    /// LNet's counters: the default, as in lst (its `--rpc` is not
    /// implemented).
    #[arg(long)]
    lnet: bool,
}

/// The session's socket, from LST_SESSION.
fn socket() -> Result<PathBuf, String> {
    let id = std::env::var(SESSION_ENV).map_err(|_| {
        format!("{SESSION_ENV} is not set: export {SESSION_ENV}=$$ before new_session and the commands after it")
    })?;
    session::socket_path(&id).map_err(|e| e.to_string())
}

/// Sends `req`; a failed reply or an unreachable daemon is the error.
pub(crate) fn ask(req: &Request, wait: Duration) -> Result<Reply, (HaltKind, String)> {
    let path = socket().map_err(|e| (HaltKind::Usage, e))?;
    match session::call(&path, req, wait) {
        Ok(Reply::Failed { message }) => Err((HaltKind::Failed, message)),
        Ok(r) => Ok(r),
        Err(e) => Err((HaltKind::Failed, e.to_string())),
    }
}

pub(crate) fn fail(cmd: &str, (kind, msg): (HaltKind, String)) -> Halt {
    Halt::new(kind, format!("iolab lst {cmd}: {msg}"))
}

pub(crate) fn usage(cmd: &str, msg: String) -> Halt {
    fail(cmd, (HaltKind::Usage, msg))
}

/// `new_session`: checks everything, starts the daemon and waits for it
/// to say it serves (or why not). With `--daemon`, is the daemon.
pub fn new_session(a: NewSessionArgs) -> Ended {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return Err(usage("new_session", e)),
    };
    let path = match socket() {
        Ok(p) => p,
        Err(e) => return Err(usage("new_session", e)),
    };
    if a.daemon {
        return serve(cfg, &path);
    }
    if a.force {
        let _ = session::call(&path, &Request::End, Duration::from_secs(60));
    }
    match spawn_daemon(&a, &cfg) {
        Ok(()) => {
            let _ = outln!(
                "SESSION: {} TIMEOUT: {} FORCE: {}",
                a.name,
                a.timeout,
                if a.force { "Yes" } else { "No" }
            );
            Ok(Outcome::Completed)
        }
        Err(e) => Err(usage("new_session", e)),
    }
}

fn config(a: &NewSessionArgs) -> Result<SessionConfig, String> {
    iolab_lst::session::check_name("session", &a.name).map_err(|e| e.to_string())?;
    if !(1..=86_400).contains(&a.timeout) {
        return Err(format!("--timeout {}: 1 to 86400 seconds", a.timeout));
    }
    if !(a.connect_timeout > 0.0 && a.connect_timeout <= 3600.0) {
        return Err(format!(
            "--connect-timeout {}: more than 0, at most 3600",
            a.connect_timeout
        ));
    }
    let key_file = a
        .key
        .clone()
        .or_else(|| std::env::var_os("IOLAB_KEY_FILE").map(PathBuf::from));
    if let Some(k) = &key_file {
        iolab_net::SharedKey::from_file(k).map_err(|e| format!("--key: {e}"))?;
    }
    let rsh = match iolab_launch::RemoteShell::resolve(a.rsh.as_deref()) {
        Ok(r) => Some(r),
        Err(e) if a.rsh.is_some() => return Err(format!("--rsh: {e}")),
        Err(_) => None,
    };
    let agent_cmd = match &a.agent_cmd {
        Some(s) if s.split_whitespace().next().is_none() => return Err("--agent-cmd: empty".into()),
        Some(s) => s.split_whitespace().map(String::from).collect(),
        None => vec![std::env::current_exe()
            .map_err(|e| format!("cannot find this binary's path: {e}"))?
            .display()
            .to_string()],
    };
    Ok(SessionConfig {
        name: a.name.clone(),
        key: std::env::var(SESSION_ENV).unwrap_or_default(),
        timeout_s: a.timeout,
        port: a.port,
        rsh,
        agent_cmd,
        key_file: key_file.map(|k| std::fs::canonicalize(&k).unwrap_or(k)),
        connect_timeout_s: a.connect_timeout,
    })
}

/// Starts this command again with `--daemon`, in its own process group
/// (a Ctrl-C in the console's terminal is not meant for it), in `/`, and
/// reads its first line: `ready`, or why it cannot serve.
fn spawn_daemon(a: &NewSessionArgs, cfg: &SessionConfig) -> Result<(), String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this binary's path: {e}"))?;
    let mut args: Vec<std::ffi::OsString> = vec!["lst".into(), "new_session".into()];
    let mut opt = |k: &str, v: String| args.extend([k.into(), v.into()]);
    opt("--timeout", cfg.timeout_s.to_string());
    opt("--port", cfg.port.to_string());
    opt("--connect-timeout", cfg.connect_timeout_s.to_string());
    opt("--agent-cmd", cfg.agent_cmd.join(" "));
    if let Some(r) = &a.rsh {
        opt("--rsh", r.clone());
    }
    if let Some(k) = &cfg.key_file {
        opt("--key", k.display().to_string());
    }
    args.extend(["--daemon".into(), "--".into(), cfg.name.clone().into()]);
    let mut child = std::process::Command::new(exe)
        .args(&args)
        .env_remove("IOLAB_KEY_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the session daemon: {e}"))?;
    let out = child
        .stdout
        .take()
        .ok_or("the session daemon has no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(l) if l.trim() == "ready" => Ok(()),
        Ok(l) if !l.trim().is_empty() => {
            let _ = child.wait();
            Err(l.trim().trim_start_matches("error: ").to_string())
        }
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err("the session daemon did not start".into())
        }
    }
}

fn serve(cfg: SessionConfig, path: &std::path::Path) -> Ended {
    // The daemon may have been started with a relative key path: the
    // console's own directory is not held.
    let _ = std::env::set_current_dir("/");
    let r = daemon::serve(cfg, path, |r| {
        let mut o = std::io::stdout();
        let _ = match r {
            Ok(()) => writeln!(o, "ready"),
            Err(e) => writeln!(o, "error: {e}"),
        };
        let _ = o.flush();
    });
    match r {
        Ok(()) => Ok(Outcome::Completed),
        Err(_) => Err(Halt::said(HaltKind::Usage)),
    }
}

/// `end_session`.
pub fn end_session() -> Ended {
    match ask(&Request::End, Duration::from_secs(120)) {
        Ok(_) => {
            let _ = outln!("session is ended");
            Ok(Outcome::Completed)
        }
        Err(e) => Err(fail("end_session", e)),
    }
}

/// `add_group`.
pub fn add_group(a: AddGroupArgs) -> Ended {
    if let Err(e) = iolab_lst::session::check_name("group", &a.name) {
        return Err(usage("add_group", e.to_string()));
    }
    // Checked here for exit 2; the daemon reads them again with its port.
    if let Err(e) = iolab_lst::hosts::nodes(&a.hosts, DEFAULT_PORT) {
        return Err(usage("add_group", e.to_string()));
    }
    let req = Request::AddGroup {
        name: a.name,
        hosts: a.hosts.clone(),
    };
    match ask(&req, Duration::from_secs(3600)) {
        Ok(_) => {
            let _ = outln!("{} are added to session", a.hosts.join(" "));
            Ok(Outcome::Completed)
        }
        Err(e) => Err(fail("add_group", e)),
    }
}

/// `add_batch`.
pub fn add_batch(a: BatchArg) -> Ended {
    if let Err(e) = iolab_lst::session::check_name("batch", &a.name) {
        return Err(usage("add_batch", e.to_string()));
    }
    match ask(&Request::AddBatch { name: a.name }, Duration::from_secs(60)) {
        Ok(_) => Ok(Outcome::Completed),
        Err(e) => Err(fail("add_batch", e)),
    }
}

/// `add_test`.
pub fn add_test(a: AddTestArgs) -> Ended {
    let def = match test_def(&a) {
        Ok(d) => d,
        Err(e) => return Err(usage("add_test", e)),
    };
    let req = Request::AddTest {
        batch: a.batch,
        def,
    };
    match ask(&req, Duration::from_secs(60)) {
        Ok(_) => {
            let _ = outln!("Test was added successfully");
            Ok(Outcome::Completed)
        }
        Err(e) => Err(fail("add_test", e)),
    }
}

fn test_def(a: &AddTestArgs) -> Result<TestDef, String> {
    let test = Test::parse(&a.test).map_err(|e| e.to_string())?;
    test.validate().map_err(|e| e.to_string())?;
    if !(1..=iolab_lst::spec::MAX_CONCURRENCY).contains(&a.concurrency) {
        return Err(format!(
            "--concurrency {}: 1 to {}",
            a.concurrency,
            iolab_lst::spec::MAX_CONCURRENCY
        ));
    }
    if a.loop_count == Some(0) {
        return Err("--loop 0: at least 1 RPC (leave --loop out to run until stop)".into());
    }
    let max_t = iolab_lst::proto::MAX_RPC_TIMEOUT_S;
    if let Some(t) = a.timeout.filter(|t| !(1..=max_t).contains(t)) {
        return Err(format!("--timeout {t}: 1 to {max_t} seconds"));
    }
    Ok(TestDef {
        test,
        from: a.from.clone(),
        to: a.to.clone(),
        concurrency: a.concurrency,
        distribute: Distribute::parse(&a.distribute).map_err(|e| e.to_string())?,
        loop_count: a.loop_count,
        rpc_timeout_s: a.timeout,
    })
}

/// `run [NAME]`, the session form.
pub fn run_batch(name: &str) -> Ended {
    match ask(
        &Request::Run {
            batch: name.to_string(),
        },
        Duration::from_secs(120),
    ) {
        Ok(_) => {
            let _ = outln!("{name} is running now");
            Ok(Outcome::Completed)
        }
        Err(e) => Err(fail("run", e)),
    }
}

/// `stop [NAME]`.
pub fn stop(a: StopArgs) -> Ended {
    match ask(&Request::Stop { batch: a.name }, Duration::from_secs(300)) {
        Ok(_) => Ok(Outcome::Completed),
        Err(e) => Err(fail("stop", e)),
    }
}

fn batches(cmd: &str, req: &Request) -> Result<Vec<BatchInfo>, Halt> {
    match ask(req, Duration::from_secs(60)) {
        Ok(Reply::Batches { batches }) => Ok(batches),
        Ok(_) => Err(fail(cmd, (HaltKind::Failed, "unexpected answer".into()))),
        Err(e) => Err(fail(cmd, e)),
    }
}

/// `list_batch [NAME]`: the batches' names; one batch's state and node
/// counts; or, with a state option, its nodes.
pub fn list_batch(a: ListBatchArgs) -> Ended {
    use iolab_report::lst::session as r;
    if a.test == Some(0) {
        return Err(usage(
            "list_batch",
            "--test 0: tests are numbered from 1".into(),
        ));
    }
    let Some(name) = a.name.clone() else {
        if let Some(opt) = [
            ("--test", a.test.is_some()),
            ("--active", a.active),
            ("--invalid", a.invalid),
            ("--all", a.all),
            ("--server", a.server),
        ]
        .iter()
        .find(|(_, on)| *on)
        {
            return Err(usage(
                "list_batch",
                format!("{}: needs a batch name (list_batch NAME {})", opt.0, opt.0),
            ));
        }
        let bs = batches("list_batch", &Request::ListBatch { name: None })?;
        let _ = out!("{}", r::batch_names(&bs));
        return Ok(Outcome::Completed);
    };
    if a.server && !(a.active || a.invalid || a.all) {
        // Without a node state the batch's summary is printed, which
        // has no server part: refused rather than ignored, as query does.
        return Err(usage(
            "list_batch",
            "--server: lists server nodes, with --active, --invalid or --all".to_string(),
        ));
    }
    let b = one_batch("list_batch", &name, a.test)?;
    let f = r::NodeFilter {
        active: a.active || a.all,
        busy: a.invalid || a.all,
        down: a.invalid || a.all,
        unknown: a.invalid || a.all,
    };
    if f.any() {
        let _ = out!(
            "{}",
            r::node_states(&r::batch_nodes(&b, a.test, a.server), f)
        );
    } else {
        let _ = out!("{}", r::batch_detail(&b, a.test));
    }
    Ok(Outcome::Completed)
}

/// One batch, with test `test` (from 1) checked to exist.
fn one_batch(cmd: &str, name: &str, test: Option<usize>) -> Result<BatchInfo, Halt> {
    let req = Request::ListBatch {
        name: Some(name.to_string()),
    };
    let b = batches(cmd, &req)?
        .into_iter()
        .next()
        .ok_or_else(|| fail(cmd, (HaltKind::Failed, format!("no batch {name:?}"))))?;
    match test {
        Some(n) if n > b.tests.len() => Err(fail(
            cmd,
            (
                HaltKind::Failed,
                format!("--test {n}: batch {name:?} has {} test(s)", b.tests.len()),
            ),
        )),
        _ => Ok(b),
    }
}

/// `query NAME`: whether the batch (or test N) runs, or each node's job,
/// `--loop` times, `--delay` seconds apart.
pub fn query(a: QueryArgs) -> Ended {
    use iolab_report::lst::session as r;
    if let Err(e) = check_query(&a) {
        return Err(usage("query", e));
    }
    let wait = Duration::from_secs_f64(a.timeout);
    for i in 0..a.loop_count {
        if i > 0 && !pause(Duration::from_secs_f64(a.delay)) {
            return Ok(Outcome::Interrupted);
        }
        let req = Request::Query {
            batch: a.name.clone(),
        };
        let bs = match ask(&req, wait) {
            Ok(Reply::Batches { batches }) => batches,
            Ok(_) => {
                return Err(fail(
                    "query",
                    (HaltKind::Failed, "unexpected answer".into()),
                ))
            }
            Err(e) => return Err(fail("query", e)),
        };
        let Some(b) = bs.first() else {
            return Err(fail(
                "query",
                (HaltKind::Failed, format!("no batch {:?}", a.name)),
            ));
        };
        if let Some(n) = a.test.filter(|&n| n > b.tests.len()) {
            let msg = format!(
                "--test {n}: batch {:?} has {} test(s)",
                a.name,
                b.tests.len()
            );
            return Err(fail("query", (HaltKind::Failed, msg)));
        }
        let text = if a.all || a.active || a.idle {
            r::query_nodes(&r::batch_nodes(b, a.test, a.server), a.active, a.idle)
        } else if let Some(n) = a.test {
            r::query_test(b, n)
        } else {
            r::query(&bs)
        };
        let _ = out!("{text}");
        let _ = std::io::stdout().flush();
    }
    Ok(Outcome::Completed)
}

fn check_query(a: &QueryArgs) -> Result<(), String> {
    if a.test == Some(0) {
        return Err("--test 0: tests are numbered from 1".into());
    }
    for (opt, v) in [("--timeout", a.timeout), ("--delay", a.delay)] {
        if !(v > 0.0 && v <= 3600.0) {
            return Err(format!("{opt} {v}: more than 0, at most 3600 seconds"));
        }
    }
    if !(1..=100_000).contains(&a.loop_count) {
        return Err(format!("--loop {}: 1 to 100000", a.loop_count));
    }
    if a.server && !(a.all || a.active || a.idle) {
        return Err("--server: lists server nodes, with --all, --active or --idle".into());
    }
    Ok(())
}

/// `stat GROUP...`: a reading every `--delay` seconds; the first sets the
/// baseline, each later one prints the blocks of its interval.
pub fn stat(a: StatArgs) -> Ended {
    if let Err(e) = check_stat(&a) {
        return Err(usage("stat", e));
    }
    let sel = select(&a);
    let wait = Duration::from_secs_f64(a.timeout + 30.0);
    let req = Request::Sample {
        groups: a.groups.clone(),
        timeout_s: a.timeout,
    };
    let read = || match ask(&req, wait) {
        Ok(Reply::Sample { groups }) => Ok(groups),
        Ok(_) => Err((HaltKind::Failed, "unexpected answer".to_string())),
        Err(e) => Err(e),
    };
    let mut prev = match read() {
        Ok(g) => g,
        Err(e) => return Err(fail("stat", e)),
    };
    let mut printed = 0u64;
    while a.count.is_none_or(|n| printed < n) {
        // `lst stat GROUP & ... kill $!` is how scripts end it: the
        // signal ends the wait at once.
        if !pause(Duration::from_secs_f64(a.delay)) {
            return Ok(Outcome::Interrupted);
        }
        let cur = match read() {
            Ok(g) => g,
            Err(e) => return Err(fail("stat", e)),
        };
        let rates = iolab_lst::stat::rates(&prev, &cur);
        // A reader that left (`lst stat G | head -3`) ends the readings:
        // a closed stdout makes main exit 141.
        if outln!("{}", iolab_report::lst::stat::render(&rates, &sel)).is_err() {
            return Ok(Outcome::Interrupted);
        }
        prev = cur;
        printed += 1;
    }
    Ok(Outcome::Completed)
}

/// Sleeps `d` unless a signal asks to stop first (then false).
pub(crate) fn pause(d: Duration) -> bool {
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until {
        if crate::runner::root().is_cancelled() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(d));
    }
    !crate::runner::root().is_cancelled()
}

fn check_stat(a: &StatArgs) -> Result<(), String> {
    // `--lnet` asks for what stat always prints.
    let _ = a.lnet;
    if !(a.delay > 0.0 && a.delay <= 3600.0) {
        return Err(format!(
            "--delay {}: more than 0, at most 3600 seconds",
            a.delay
        ));
    }
    if !(a.timeout > 0.0 && a.timeout <= 3600.0) {
        return Err(format!(
            "--timeout {}: more than 0, at most 3600 seconds",
            a.timeout
        ));
    }
    if a.count == Some(0) {
        return Err("--count 0: at least 1 (leave it out to print until killed)".into());
    }
    Ok(())
}

/// lst's selection: of each pair (and of avg/min/max), none given means all.
fn select(a: &StatArgs) -> Select {
    let any_type = a.avg || a.min || a.max;
    Select {
        rate: a.rate || !a.bw,
        bw: a.bw || !a.rate,
        read: a.read || !a.write,
        write: a.write || !a.read,
        avg: a.avg || !any_type,
        min: a.min || !any_type,
        max: a.max || !any_type,
        mbs: a.mbs,
    }
}
