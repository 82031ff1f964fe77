//! The console: starts or reaches the agents, opens a session on each,
//! runs every sweep point (each repeat: reset the servers, start the
//! clients, collect their stats, then the servers'), and returns the
//! results. Every wait is bounded; the first failure stops the run with
//! a message that names the node.

use crate::proto::{Answer, ClientJob, Command, Hello};
use crate::result::{ClientStats, PointResult, RunResult, ServerStats};
use crate::spec::{Distribute, Limit, Test};
use crate::watch::{self, Watch, Watcher};
use crate::LstError;
use iolab_core::CancelToken;
use iolab_core::{Failure, FailureKind, Outcome};
use iolab_launch::{Remote, RemoteShell};
use iolab_net::frame::Kind;
use iolab_net::{conn, handshake, Cancel, Conn, NetError, SharedKey};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The port agents listen on when none is given.
pub const DEFAULT_PORT: u16 = 7819;
/// Extra time, beyond a run's duration, the console waits for a client's
/// result before declaring it lost.
pub const RESULT_GRACE: Duration = Duration::from_secs(30);
/// How long the console waits for a count-limited client's result.
pub const COUNT_RUN_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a command other than a run may take to be answered.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// One node of a group, as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// As given.
    pub name: String,
    /// `host:port` the console and the other agents reach it at.
    pub addr: String,
    /// When set, the console starts the agent on this host through the
    /// remote shell.
    pub launch: Option<String>,
}

impl Node {
    /// Reads `HOST:PORT` (an agent already running), `HOST` (start one
    /// there on `port`), or `LAUNCH@ADDR[:PORT]` (start one through the
    /// remote shell on LAUNCH, reach it at ADDR).
    pub fn parse(s: &str, port: u16) -> Result<Node, crate::input::InputError> {
        let bad = |why: &str| crate::input::InputError::invalid(format!("node {s:?}"), why);
        if s.is_empty() || s.contains(char::is_whitespace) {
            return Err(bad("empty or contains spaces"));
        }
        let (launch, rest) = match s.split_once('@') {
            Some((l, r)) if !l.is_empty() && !r.is_empty() => (Some(l.to_string()), r),
            Some(_) => return Err(bad("write LAUNCH@ADDR[:PORT]")),
            None => (None, s),
        };
        let addr = match rest.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0) => {
                rest.to_string()
            }
            Some(_) => return Err(bad("the port must be a number from 1 to 65535")),
            None => format!("{rest}:{port}"),
        };
        let launch = launch.or_else(|| (!rest.contains(':')).then(|| rest.to_string()));
        Ok(Node {
            name: s.to_string(),
            addr,
            launch,
        })
    }

    fn port(&self) -> &str {
        self.addr.rsplit_once(':').map_or("", |(_, p)| p)
    }

    /// Where an agent started for this node listens: every address of
    /// the family the console reaches it by (`[::]` for an IPv6 ADDR such
    /// as `[::1]:7953`, which one listening on 0.0.0.0 refused).
    fn listen_addr(&self) -> String {
        match self.addr.starts_with('[') {
            true => format!("[::]:{}", self.port()),
            false => format!("0.0.0.0:{}", self.port()),
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The test.
    pub test: Test,
    /// The client group.
    pub from: Vec<Node>,
    /// The server group.
    pub to: Vec<Node>,
    /// How clients map to servers.
    pub distribute: Distribute,
    /// Concurrency per point (one value: no sweep).
    pub concurrency: Vec<u32>,
    /// Clients per point: the first K of `from`.
    pub clients: Vec<u32>,
    /// Repeats per point.
    pub repeat: u32,
    /// When each client stops.
    pub limit: Limit,
    /// The key file every agent is started with, if any.
    pub key_file: Option<PathBuf>,
    /// The remote shell, for nodes the console starts.
    #[serde(skip)]
    pub rsh: Option<RemoteShell>,
    /// The command that runs iolab on the other hosts.
    pub agent_cmd: Vec<String>,
    /// How long to wait for each agent to answer at the start.
    pub connect_timeout_s: f64,
}

/// What the console returns: the points that ran, and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every point that completed, in order.
    pub points: Vec<PointResult>,
    /// How the run ended (an error when a payload check failed).
    pub outcome: Outcome,
}

pub(crate) struct Agent {
    pub(crate) node: Node,
    pub(crate) conn: Conn,
}

/// Runs every point of `plan`. `on_point` sees each point as it
/// completes (so a caller can rewrite its outputs as it goes); `watcher`
/// is handed every agent's live figures as they go (`--live`). Every
/// wait ends once `cancel` (the run's token) is cancelled.
pub fn run(
    plan: &Plan,
    cancel: &CancelToken,
    watcher: Option<Arc<dyn Watcher>>,
    mut on_point: impl FnMut(&PointResult),
) -> Report {
    let mut points = Vec::new();
    let stop = Cancel::token(cancel);
    let outcome = match run_points(plan, stop, watcher, &mut points, &mut on_point) {
        Ok(()) => check_outcome(&points),
        Err(_) if stop.cancelled() => Outcome::Interrupted,
        Err(e @ LstError::Refused(..)) => Outcome::Error(
            Failure::other(crate::REFUSED_OP, e.to_string()).of_kind(FailureKind::Refused),
        ),
        Err(e) => Outcome::Error(Failure::other("session", e.to_string())),
    };
    Report { points, outcome }
}

fn check_outcome(points: &[PointResult]) -> Outcome {
    let errors: u64 = points.iter().map(|p| p.errors()).sum();
    if errors == 0 {
        return Outcome::Completed;
    }
    Outcome::Error(Failure::other(
        "check",
        format!("{errors} RPCs failed the payload check (corrupted data)"),
    ))
}

fn run_points(
    plan: &Plan,
    stop: Cancel<'_>,
    watcher: Option<Arc<dyn Watcher>>,
    points: &mut Vec<PointResult>,
    on_point: &mut impl FnMut(&PointResult),
) -> Result<(), LstError> {
    // One agent runs one client job at a time: a node given twice would
    // have one of its jobs dropped and its servers averaged in idle.
    if let Some(n) = given_twice(&plan.from).or_else(|| given_twice(&plan.to)) {
        return Err(LstError::Launch(format!(
            "node {} ({}) is given twice in one group: a host appears once in a group",
            n.name, n.addr
        )));
    }
    let token = crate::new_token()?;
    let nodes = unique_nodes(plan);
    let key = session_key(plan, &nodes)?;
    let mut remotes = launch(plan, &nodes, &token, key.as_ref())?;
    let mut agents = connect_all(plan, &nodes, &mut remotes, &token, key.as_ref(), stop, None)?;
    // Declared after the agents, so dropped first on every return: the
    // last reading is taken while their sessions are open.
    let watch = watcher.map(|w| {
        let readers = nodes
            .iter()
            .map(|n| {
                let c = open_stat(n, &token, key.as_ref(), watch::READ_TIMEOUT).ok();
                (n.name.clone(), c)
            })
            .collect();
        Watch::start(w, readers, read_figures)
    });
    for &k in &plan.clients {
        for &conc in &plan.concurrency {
            let mut runs = Vec::new();
            for _ in 0..plan.repeat {
                match run_once(plan, &mut agents, k as usize, conc, stop) {
                    Ok(r) => runs.push(r),
                    Err(b) => {
                        let Broken { error, partial } = *b;
                        runs.extend(partial);
                        if !runs.is_empty() && !stop.cancelled() {
                            let mut p = PointResult::new(k, conc, runs);
                            p.failed = Some(error.to_string());
                            on_point(&p);
                            points.push(p);
                        }
                        return Err(error);
                    }
                }
            }
            let p = PointResult::new(k, conc, runs);
            on_point(&p);
            points.push(p);
        }
    }
    drop(watch);
    for a in &mut agents {
        let _ = send(&mut a.conn, &Command::Bye, stop);
    }
    drop(agents);
    for r in remotes.into_iter().flatten() {
        let _ = r.wait(Duration::from_secs(5), || false);
    }
    Ok(())
}

/// Every distinct agent (a node in both groups is one agent), in the
/// order a [`Watcher`] numbers them.
pub fn unique_nodes(plan: &Plan) -> Vec<Node> {
    let mut v: Vec<Node> = Vec::new();
    for n in plan.from.iter().chain(&plan.to) {
        if !v.iter().any(|m| m.addr == n.addr) {
            v.push(n.clone());
        }
    }
    v
}

/// The second node of `group` that reaches an agent already named in it.
fn given_twice(group: &[Node]) -> Option<&Node> {
    group
        .iter()
        .enumerate()
        .find(|(i, n)| group[..*i].iter().any(|m| m.addr == n.addr))
        .map(|(_, n)| n)
}

fn index_of(agents: &[Agent], n: &Node) -> usize {
    agents
        .iter()
        .position(|a| a.node.addr == n.addr)
        .unwrap_or(0)
}

/// The key of the session: the user's key file, else (when the console
/// starts every agent itself, so that it can hand each one the key) a
/// fresh one-time key; else none, as agents the user started without a
/// key expect.
fn session_key(plan: &Plan, nodes: &[Node]) -> Result<Option<SharedKey>, LstError> {
    if let Some(p) = &plan.key_file {
        return SharedKey::from_file(p)
            .map(Some)
            .map_err(|e| LstError::Launch(e.to_string()));
    }
    if nodes.iter().all(|n| n.launch.is_some()) {
        return SharedKey::random()
            .map(Some)
            .map_err(|e| LstError::Launch(e.to_string()));
    }
    Ok(None)
}

/// What an agent started with `--session` reads on its standard input:
/// the session key in hex (an empty line for none), then the token.
pub fn session_handoff(key: Option<&SharedKey>, token: &str) -> String {
    let key = key.map_or_else(|| "\n".to_string(), SharedKey::handoff_line);
    format!("{key}{token}\n")
}

/// Starts the agents the console owns, in one-session mode; the key and
/// token go on their standard input (never on a command line, which
/// `ps` shows to every user), which stays open for the session: its
/// closing ends them.
pub(crate) fn launch(
    plan: &Plan,
    nodes: &[Node],
    token: &str,
    key: Option<&SharedKey>,
) -> Result<Vec<Option<Remote>>, LstError> {
    let mut out = Vec::new();
    let handoff = session_handoff(key, token);
    for n in nodes {
        let Some(host) = &n.launch else {
            out.push(None);
            continue;
        };
        let rsh = match &plan.rsh {
            Some(r) => r.clone(),
            None => RemoteShell::resolve(None).map_err(|e| LstError::Launch(e.to_string()))?,
        };
        let mut argv = plan.agent_cmd.clone();
        argv.extend(["lst", "agent", "--session", "--listen"].map(String::from));
        argv.push(n.listen_addr());
        let r = rsh
            .spawn_with_stdin(host, &argv, &[], handoff.as_bytes())
            .map_err(|e| LstError::Launch(e.to_string()))?;
        out.push(Some(r));
    }
    Ok(out)
}

/// Connects to every agent of `nodes` and opens the session on each;
/// each connect waits up to the plan's `connect_timeout_s`, and all of
/// them together at most until `until` when given.
pub(crate) fn connect_all(
    plan: &Plan,
    nodes: &[Node],
    remotes: &mut [Option<Remote>],
    token: &str,
    key: Option<&SharedKey>,
    stop: Cancel<'_>,
    until: Option<Instant>,
) -> Result<Vec<Agent>, LstError> {
    let hello = serde_json::to_value(Hello::Console {
        token: token.to_string(),
    })
    .map_err(|e| LstError::Launch(e.to_string()))?;
    let mut agents = Vec::new();
    for (n, r) in nodes.iter().zip(remotes.iter_mut()) {
        let mut c = connect_one(plan, n, r, stop, until)?;
        c.idle_timeout = COMMAND_TIMEOUT;
        handshake::client(&mut c, "lst", &hello, key, stop)
            .map_err(|e| LstError::Node(n.name.clone(), e.to_string()))?;
        agents.push(Agent {
            node: n.clone(),
            conn: c,
        });
    }
    Ok(agents)
}

/// Connects to one agent, retrying while it starts (at most the plan's
/// `connect_timeout_s`, and never past `deadline`); an agent the console
/// started that exits first is reported with what it printed.
pub(crate) fn connect_one(
    plan: &Plan,
    n: &Node,
    remote: &mut Option<Remote>,
    stop: Cancel<'_>,
    deadline: Option<Instant>,
) -> Result<Conn, LstError> {
    let own = Instant::now() + Duration::from_secs_f64(plan.connect_timeout_s);
    let until = deadline.map_or(own, |d| d.min(own));
    loop {
        if let Some((said, refused)) = exited_refused(plan, remote) {
            if let Some(why) = refused {
                return Err(LstError::Refused(n.name.clone(), why));
            }
            return Err(LstError::Node(
                n.name.clone(),
                format!("the agent started there exited before it answered: {said} (is iolab installed at the same path there, is the port free?)"),
            ));
        }
        let left = until.saturating_duration_since(Instant::now());
        match conn::connect(
            &n.addr,
            left.min(Duration::from_secs(1)),
            stop,
        ) {
            Ok(c) => return Ok(c),
            Err(NetError::Connect { .. }) if !left.is_zero() => {}
            Err(NetError::Connect { source, .. }) => {
                return Err(LstError::Node(
                    n.name.clone(),
                    format!(
                        "cannot reach the agent at {} within {} s: {source} (is `iolab lst agent` running there, on that port?)",
                        n.addr, plan.connect_timeout_s
                    ),
                ))
            }
            Err(e) => {
                // An agent that failed to start explains more than the
                // connection's error: give it a moment to exit.
                for _ in 0..20 {
                    if let Some(said) = exited(remote) {
                        return Err(LstError::Node(
                            n.name.clone(),
                            format!("the agent started there exited before it answered: {said}"),
                        ));
                    }
                    if remote.is_none() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                return Err(LstError::Node(
                    n.name.clone(),
                    format!("cannot reach the agent at {}: {e}", n.addr),
                ));
            }
        }
    }
}

/// When the agent the console started has exited: its status and the
/// last line it wrote on stderr.
/// [`exited`], and Slurm's reason when srun refused to start the agent.
fn exited_refused(plan: &Plan, remote: &mut Option<Remote>) -> Option<(String, Option<String>)> {
    if !remote.as_mut().is_some_and(|r| r.has_exited()) {
        return None;
    }
    let f = remote.take()?.wait(Duration::from_secs(1), || false).ok()?;
    let rsh = match &plan.rsh {
        Some(r) => Some(r.clone()),
        None => RemoteShell::resolve(None).ok(),
    };
    let refused = rsh.and_then(|r| r.refusal(&f.stderr));
    Some((summary(&f), refused))
}

fn summary(f: &iolab_launch::Finished) -> String {
    let err = String::from_utf8_lossy(&f.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    format!("{} {last}", f.status).trim().to_string()
}

fn exited(remote: &mut Option<Remote>) -> Option<String> {
    if !remote.as_mut().is_some_and(|r| r.has_exited()) {
        return None;
    }
    let f = remote.take()?.wait(Duration::from_secs(1), || false).ok()?;
    let err = String::from_utf8_lossy(&f.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Some(format!("{} {last}", f.status).trim().to_string())
}

/// Opens the second connection to an agent, the one `lst stat` reads;
/// connecting and the handshake each take at most `wait`.
pub(crate) fn open_stat(
    n: &Node,
    token: &str,
    key: Option<&SharedKey>,
    wait: Duration,
) -> Result<Conn, LstError> {
    let node = |e: iolab_net::NetError| LstError::Node(n.name.clone(), e.to_string());
    let mut c = conn::connect(&n.addr, wait, Cancel::process()).map_err(node)?;
    c.idle_timeout = wait;
    let hello = serde_json::to_value(Hello::Stat {
        token: token.to_string(),
    })
    .map_err(|e| LstError::Launch(e.to_string()))?;
    handshake::client(&mut c, "lst", &hello, key, Cancel::process()).map_err(node)?;
    Ok(c)
}

/// One reading of an agent's live figures on its stat connection (for
/// [`Watch`]); never cancelled by a stop, so the last reading of an
/// interrupted run is still taken, bounded by the connection's timeout.
fn read_figures(c: &mut Conn) -> Option<Vec<iolab_core::live::Totals>> {
    let never = AtomicBool::new(false);
    send(c, &Command::Figures, Cancel::with(&never)).ok()?;
    match recv(c, Cancel::with(&never)).ok()? {
        Answer::Figures(f) => Some(f),
        _ => None,
    }
}

pub(crate) fn send(c: &mut Conn, cmd: &Command, cancel: Cancel<'_>) -> Result<(), NetError> {
    let b = serde_json::to_vec(cmd).map_err(|e| NetError::Protocol(e.to_string()))?;
    c.send(Kind::Control, 0, 0, &b, cancel).map(drop)
}

pub(crate) fn recv(c: &mut Conn, cancel: Cancel<'_>) -> Result<Answer, NetError> {
    let (h, b) = c.recv_owned(cancel)?;
    // The agent's word before it ends the session (a frame of ours it
    // refused): the reason, not a protocol error.
    if h.kind == Kind::Error {
        return Err(NetError::Rejected(format!(
            "the agent {}",
            iolab_net::peer_text(&b)
        )));
    }
    if h.kind != Kind::Control {
        return Err(NetError::Protocol(format!(
            "expected an answer, got a {:?} frame",
            h.kind
        )));
    }
    serde_json::from_slice(&b).map_err(|e| NetError::Protocol(format!("malformed answer: {e}")))
}

/// Sends a command and waits for its answer; a dead agent or a garbled
/// answer is an error naming the node.
pub(crate) fn ask(
    a: &mut Agent,
    cmd: &Command,
    timeout: Duration,
    cancel: Cancel<'_>,
) -> Result<Answer, LstError> {
    let name = a.node.name.clone();
    let node = |e: NetError| match e {
        NetError::Cancelled => LstError::Cancelled(name.clone()),
        e => LstError::Node(name.clone(), lost(e)),
    };
    a.conn.idle_timeout = timeout;
    send(&mut a.conn, cmd, cancel).map_err(node)?;
    let answer = recv(&mut a.conn, cancel).map_err(node)?;
    match answer {
        Answer::Failed { message, .. } => Err(LstError::Node(a.node.name.clone(), message)),
        other => Ok(other),
    }
}

fn lost(e: NetError) -> String {
    match e {
        NetError::Closed => {
            "the agent closed its connection during the run: it died or was killed".into()
        }
        NetError::Timeout { .. } => format!("{e}: the agent stopped answering"),
        e => e.to_string(),
    }
}

pub(crate) fn run_timeout(limit: Limit) -> Duration {
    match limit {
        Limit::DurationS(s) => Duration::from_secs_f64(s) + RESULT_GRACE,
        Limit::Count(_) => COUNT_RUN_TIMEOUT,
    }
}

/// A repeat that failed: why, and what its nodes had done by then
/// (none when no client could tell its counts).
struct Broken {
    error: LstError,
    partial: Option<RunResult>,
}

impl From<LstError> for Box<Broken> {
    fn from(error: LstError) -> Self {
        Box::new(Broken {
            error,
            partial: None,
        })
    }
}

/// One repeat of one point.
fn run_once(
    plan: &Plan,
    agents: &mut [Agent],
    k: usize,
    conc: u32,
    stop: Cancel<'_>,
) -> Result<RunResult, Box<Broken>> {
    let servers: Vec<usize> = plan.to.iter().map(|n| index_of(agents, n)).collect();
    for &s in &servers {
        ask(&mut agents[s], &Command::Reset, COMMAND_TIMEOUT, stop)?;
    }
    let map = plan
        .distribute
        .map(k, servers.len())
        .map_err(|e| LstError::Launch(e.to_string()))?;
    let clients: Vec<usize> = plan.from[..k].iter().map(|n| index_of(agents, n)).collect();
    let jobs: Vec<(usize, ClientJob)> = clients
        .iter()
        .zip(&map)
        .map(|(&c, ss)| {
            let job = ClientJob {
                test: plan.test,
                servers: ss.iter().map(|&s| plan.to[s].addr.clone()).collect(),
                concurrency: conc,
                limit: plan.limit,
                rpc_timeout_s: None,
            };
            (c, job)
        })
        .collect();
    let (client_nodes, failure) = start_and_wait(agents, jobs, run_timeout(plan.limit), stop);
    // The server group of this point: the servers its clients talk to
    // (with --clients K < all, the others idle and would only dilute
    // the averages).
    let mut used: Vec<usize> = map.iter().flatten().map(|&i| servers[i]).collect();
    used.sort_unstable();
    used.dedup();
    let Some(error) = failure else {
        let server_nodes = server_stats(agents, &used, stop)?;
        return Ok(RunResult::new(client_nodes, server_nodes));
    };
    // A failed repeat keeps what its nodes did up to the failure: the
    // servers still answering give their counts, a dead one none.
    let partial = (!client_nodes.is_empty()).then(|| {
        let server_nodes = used
            .iter()
            .filter_map(|&s| server_stats(agents, &[s], stop).ok())
            .flatten()
            .collect();
        RunResult::new(client_nodes, server_nodes)
    });
    Err(Box::new(Broken { error, partial }))
}

/// The counters of the servers `used` (indices into `agents`).
fn server_stats(
    agents: &mut [Agent],
    used: &[usize],
    stop: Cancel<'_>,
) -> Result<Vec<ServerStats>, LstError> {
    let mut server_nodes = Vec::new();
    for &s in used {
        match ask(&mut agents[s], &Command::Stats, COMMAND_TIMEOUT, stop)? {
            Answer::Server(mut st) => {
                st.node = agents[s].node.name.clone();
                server_nodes.push(st);
            }
            _ => {
                return Err(LstError::Node(
                    agents[s].node.name.clone(),
                    "answered Stats with something else".into(),
                ))
            }
        }
    }
    Ok(server_nodes)
}

/// A client's job that failed: why, and its counts up to then when
/// its agent could tell them.
type JobFailed = Box<(LstError, Option<ClientStats>)>;

/// Starts every client's job and waits for all of them in parallel.
/// The first failure halts the other jobs (their RPCs in flight come
/// back), so that every client that can still tell its counts does.
/// Returns the counts, and the most telling failure if any.
fn start_and_wait(
    agents: &mut [Agent],
    jobs: Vec<(usize, ClientJob)>,
    timeout: Duration,
    stop: Cancel<'_>,
) -> (Vec<ClientStats>, Option<LstError>) {
    let failed = AtomicBool::new(false);
    let mut picked: Vec<(&mut Agent, ClientJob)> = Vec::new();
    let mut jobs = jobs;
    for (i, a) in agents.iter_mut().enumerate() {
        if let Some(pos) = jobs.iter().position(|(c, _)| *c == i) {
            picked.push((a, jobs.remove(pos).1));
        }
    }
    let results: Vec<Result<ClientStats, JobFailed>> = std::thread::scope(|scope| {
        let hs: Vec<_> = picked
            .into_iter()
            .map(|(a, job)| {
                let failed = &failed;
                scope.spawn(move || {
                    if stop.cancelled() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    let r = client_job(a, job, timeout, failed, stop);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Box::new((
                        LstError::Launch("a console thread panicked".into()),
                        None,
                    )))
                })
            })
            .collect()
    });
    let mut counts = Vec::new();
    let mut errs = Vec::new();
    for r in results {
        match r {
            Ok(s) => counts.push(s),
            Err(f) => {
                let (e, partial) = *f;
                counts.extend(partial);
                errs.push(Err(e));
            }
        }
    }
    (counts, first_error(errs).err())
}

/// One client's job: started, then its answer awaited. When another
/// client fails first (`failed`), this one is halted and its answer
/// (the counts up to the halt) still read, within [`COMMAND_TIMEOUT`];
/// a stopped run (`stop`) waits for nothing.
fn client_job(
    a: &mut Agent,
    job: ClientJob,
    timeout: Duration,
    failed: &AtomicBool,
    stop: Cancel<'_>,
) -> Result<ClientStats, JobFailed> {
    let name = a.node.name.clone();
    let node = |e: NetError| match e {
        NetError::Cancelled => Box::new((LstError::Cancelled(name.clone()), None)),
        e => Box::new((LstError::Node(name.clone(), lost(e)), None)),
    };
    a.conn.idle_timeout = timeout;
    send(&mut a.conn, &Command::Start(job), Cancel::with(failed)).map_err(node)?;
    let answer = match recv(&mut a.conn, Cancel::with(failed)) {
        Err(NetError::Cancelled) if !stop.cancelled() => {
            a.conn.idle_timeout = COMMAND_TIMEOUT;
            send(&mut a.conn, &Command::Halt, stop).map_err(node)?;
            recv(&mut a.conn, stop).map_err(node)?
        }
        r => r.map_err(node)?,
    };
    match answer {
        Answer::Done(mut s) => {
            s.node = name;
            Ok(s)
        }
        Answer::Failed { message, partial } => {
            let partial = partial.map(|mut s| {
                s.node = name.clone();
                s
            });
            Err(Box::new((LstError::Node(name, message), partial)))
        }
        _ => Err(Box::new((
            LstError::Node(name, "answered Start with something else".into()),
            None,
        ))),
    }
}

/// The results, or the most telling error: one that is not just "the
/// wait was cancelled because another failed".
pub(crate) fn first_error(
    results: Vec<Result<ClientStats, LstError>>,
) -> Result<Vec<ClientStats>, LstError> {
    let mut errs: Vec<LstError> = Vec::new();
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(s) => ok.push(s),
            Err(e) => errs.push(e),
        }
    }
    if errs.is_empty() {
        return Ok(ok);
    }
    // Stable: among the real failures the first one stays first.
    errs.sort_by_key(|e| matches!(e, LstError::Cancelled(_)));
    Err(errs.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_wait_is_never_the_reported_error_whatever_the_texts() {
        let err = |r: Result<Vec<ClientStats>, LstError>| r.unwrap_err().to_string();
        let r = first_error(vec![
            Err(LstError::Cancelled("a".into())),
            Err(LstError::Node(
                "b".into(),
                "job cancelled by the agent's admin".into(),
            )),
            Err(LstError::Node("c".into(), "disk failed".into())),
        ]);
        // The kind decides, not the words: b's message says "cancelled"
        // but it is a real failure, and the first one.
        assert_eq!(err(r), "node b: job cancelled by the agent's admin");
        let r = first_error(vec![Err(LstError::Cancelled("a".into()))]);
        assert!(err(r).starts_with("node a: cancelled"));
    }

    #[test]
    fn nodes_parse_in_three_forms() {
        let n = Node::parse("10.0.0.1:9000", 7819).unwrap();
        assert_eq!((n.addr.as_str(), n.launch), ("10.0.0.1:9000", None));
        let n = Node::parse("node7", 7819).unwrap();
        assert_eq!(
            (n.addr.as_str(), n.launch.as_deref()),
            ("node7:7819", Some("node7"))
        );
        let n = Node::parse("ns1@10.213.1.2", 7819).unwrap();
        assert_eq!(
            (n.addr.as_str(), n.launch.as_deref()),
            ("10.213.1.2:7819", Some("ns1"))
        );
        // An agent started for an IPv6 ADDR listens on IPv6.
        assert_eq!(
            Node::parse("a@[::1]:7953", 7819).unwrap().listen_addr(),
            "[::]:7953"
        );
        assert_eq!(
            Node::parse("a@10.0.0.1", 7819).unwrap().listen_addr(),
            "0.0.0.0:7819"
        );
        assert!(Node::parse("a:0", 7819).is_err());
        assert!(Node::parse("@x", 7819).is_err());
        assert!(Node::parse("", 7819).is_err());
    }
}
