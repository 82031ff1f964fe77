//! The session daemon: owns the session's agents (started through the
//! remote shell or already running) and its groups and batches, and
//! answers one [`Request`] per connection on its unix socket. Requests
//! are served one at a time; a running batch has its own thread. It ends
//! on `end_session`, on the session's timeout (no console command for
//! that long), or when signalled, and every agent it started ends with
//! it (their standard input closes).

mod nodes;

use super::batch::{self, Running};
use super::slot::Slot;
use super::SessionError;
use super::DEFAULT_BATCH;
use super::{
    read_line, BatchInfo, BatchTotals, GroupSample, NodeInfo, NodeSample, NodeState, Reply,
    Request, TestDef, TestNodes,
};
use crate::console::{self, Node, Plan};
use crate::proto::{Answer, Command};
use crate::spec::{Distribute, Limit, Test, MAX_CONCURRENCY};
use crate::LstError;
use iolab_launch::RemoteShell;
use iolab_net::{Cancel, Conn, SharedKey};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Most agents one reading asks at once (a thread each).
const READ_THREADS: usize = 64;
/// How long a console command may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A session, as `new_session` sets it up.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The session's name (`new_session NAME`).
    pub name: String,
    /// Its `LST_SESSION` value (shown by `show_session`).
    pub key: String,
    /// Seconds without a console command after which the session ends.
    pub timeout_s: u64,
    /// Port of agents named without one.
    pub port: u16,
    /// The remote shell for agents the daemon starts.
    pub rsh: Option<RemoteShell>,
    /// The iolab command on the other hosts.
    pub agent_cmd: Vec<String>,
    /// A shared key file every agent holds, if any.
    pub key_file: Option<PathBuf>,
    /// How long to wait for each agent when a group is added.
    pub connect_timeout_s: f64,
}

/// A batch and its run.
#[derive(Default)]
pub(crate) struct Batch {
    pub(crate) tests: Vec<TestDef>,
    pub(crate) running: Option<Running>,
    pub(crate) last: Option<BatchTotals>,
}

struct State {
    cfg: SessionConfig,
    token: String,
    /// When the session started (Unix milliseconds).
    started_ms: u64,
    /// Decided by the first add_group: a key file's key, a one-time key
    /// when the daemon starts those agents itself, or none.
    key: Option<Option<SharedKey>>,
    slots: Vec<Slot>,
    groups: BTreeMap<String, Vec<Node>>,
    batches: BTreeMap<String, Batch>,
}

/// Binds the session's socket at `path`, tells `ready` whether it could,
/// then serves until the session ends. The socket is removed at the end.
pub fn serve(
    cfg: SessionConfig,
    path: &Path,
    ready: impl FnOnce(Result<(), &SessionError>),
) -> Result<(), SessionError> {
    let started = crate::new_token()
        .map_err(SessionError::from)
        .and_then(|t| bind(path).map(|l| (t, l)));
    let (token, (l, made)) = match started {
        Ok(x) => x,
        Err(e) => {
            ready(Err(&e));
            return Err(e);
        }
    };
    let mut st = State {
        token,
        started_ms: iolab_core::clock::wall_ns() / 1_000_000,
        cfg,
        key: None,
        slots: Vec::new(),
        groups: BTreeMap::new(),
        // LNet's new_session makes the batch `batch`, which lst's run,
        // stop, query and add_test name when given none.
        batches: BTreeMap::from([(DEFAULT_BATCH.to_string(), Batch::default())]),
    };
    ready(Ok(()));
    let timeout = Duration::from_secs(st.cfg.timeout_s);
    let mut last = Instant::now();
    // The daemon is a process of its own (started by new_session, outside
    // any run): SIGTERM raises the process's stop flag, its root.
    while last.elapsed() < timeout && !iolab_core::stop::requested() {
        st.reap();
        match l.accept() {
            Ok((s, _)) => {
                if st.serve_one(s, path, made) {
                    // Ended and removed by end_session: the path may
                    // already be a new session's (new_session --force).
                    return Ok(());
                }
                last = Instant::now();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    st.end();
    let _ = std::fs::remove_file(path);
    super::tidy_dir(path, made);
    Ok(())
}

/// Binds the socket, making its directory when absent (true in the
/// second member then); a stale socket (its daemon gone) is replaced, a
/// live one is refused.
fn bind(path: &Path) -> Result<(UnixListener, bool), SessionError> {
    let made = super::make_dir(path)?;
    let at = |source| SessionError::Path {
        path: path.to_path_buf(),
        source,
    };
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if UnixStream::connect(path).is_ok() {
            return Err(SessionError::Open);
        }
        if !m.file_type().is_socket() {
            return Err(SessionError::NotSocket {
                path: path.to_path_buf(),
            });
        }
        std::fs::remove_file(path).map_err(at)?;
    }
    let l = UnixListener::bind(path).map_err(at)?;
    l.set_nonblocking(true).map_err(at)?;
    Ok((l, made))
}

impl State {
    /// Reads one request, answers it; true when the session is to end.
    /// `end_session` is answered once the session has ended, its
    /// agents are gone and its socket (and the directory it made, when
    /// empty) is removed: a script's next command (a new session under
    /// the same key) finds nothing left.
    fn serve_one(&mut self, mut s: UnixStream, path: &Path, made: bool) -> bool {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(REQUEST_TIMEOUT));
        let req = read_line(&mut s)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Request>(&t).map_err(|e| e.to_string()));
        let (reply, end) = match req {
            Ok(Request::End) => {
                self.end();
                let _ = std::fs::remove_file(path);
                super::tidy_dir(path, made);
                (Reply::Ok, true)
            }
            Ok(r) => (
                self.obey(r)
                    .unwrap_or_else(|message| Reply::Failed { message }),
                false,
            ),
            Err(e) => (
                Reply::Failed {
                    message: format!("malformed request: {e}"),
                },
                false,
            ),
        };
        if let Ok(mut line) = serde_json::to_vec(&reply) {
            line.push(b'\n');
            let _ = s.write_all(&line);
        }
        end
    }

    fn obey(&mut self, req: Request) -> Result<Reply, String> {
        self.notice_gone();
        match req {
            Request::AddGroup { name, hosts } => self.add_group(&name, &hosts).map(|()| Reply::Ok),
            Request::AddBatch { name } => self.add_batch(&name).map(|()| Reply::Ok),
            Request::AddTest { batch, def } => self.add_test(&batch, def).map(|()| Reply::Ok),
            Request::Run { batch } => self.run(&batch).map(|()| Reply::Ok),
            Request::Stop { batch } => self.stop(&batch).map(|()| Reply::Ok),
            Request::ListBatch { name } => self.infos(name.as_deref()),
            Request::Query { batch } => self.infos(Some(&batch)),
            Request::Sample { groups, timeout_s } => self.sample(&groups, timeout_s),
            Request::ListGroup { name } => self.list_groups(name.as_deref()),
            Request::DelGroup { name } => self.del_group(&name).map(|()| Reply::Ok),
            Request::UpdateGroup { name, op } => self.update_group(&name, op).map(|()| Reply::Ok),
            Request::Ping { target, timeout_s } => self.ping(&target, timeout_s),
            Request::ShowSession => Ok(self.show_session()),
            Request::End => Ok(Reply::Ok),
        }
    }

    fn add_group(&mut self, name: &str, hosts: &[String]) -> Result<(), String> {
        check_name("group", name)?;
        if self.groups.contains_key(name) {
            return Err(format!("group {name:?} already exists"));
        }
        let nodes = crate::hosts::nodes(hosts, self.cfg.port).map_err(|e| e.to_string())?;
        self.ensure_agents(&nodes, None)
            .map_err(|e| e.to_string())?;
        self.groups.insert(name.to_string(), nodes);
        Ok(())
    }

    /// Starts (where the daemon starts them) and connects to the agents
    /// of `nodes` the session does not have yet: each within the
    /// session's connect timeout, all of them by `until` when given.
    fn ensure_agents(&mut self, nodes: &[Node], until: Option<Instant>) -> Result<(), LstError> {
        let mut new: Vec<Node> = Vec::new();
        for n in nodes {
            if !self.slots.iter().any(|s| s.node.addr == n.addr)
                && !new.iter().any(|m| m.addr == n.addr)
            {
                new.push(n.clone());
            }
        }
        if new.is_empty() {
            return Ok(());
        }
        let key = self.key_for(&new)?;
        let plan = self.reach_plan(&new);
        let mut remotes = console::launch(&plan, &new, &self.token, key.as_ref())?;
        let stop = AtomicBool::new(false);
        let agents = console::connect_all(
            &plan,
            &new,
            &mut remotes,
            &self.token,
            key.as_ref(),
            Cancel::with(&stop),
            until,
        )?;
        let mut slots = Vec::new();
        for (a, remote) in agents.into_iter().zip(remotes) {
            let stat =
                console::open_stat(&a.node, &self.token, key.as_ref(), console::COMMAND_TIMEOUT)?;
            let mut slot = Slot {
                node: a.node,
                ctl: Some(a.conn),
                stat,
                remote,
                state: NodeState::Active,
                errors_at_join: 0,
            };
            slot.errors_at_join = read_live(&mut slot, console::COMMAND_TIMEOUT)
                .map_err(LstError::Launch)?
                .errors;
            slots.push(slot);
        }
        self.slots.extend(slots);
        Ok(())
    }

    /// The session's key, decided when its first agents come: a key file
    /// wins; else agents the daemon starts get a one-time key, which
    /// agents already running cannot know.
    fn key_for(&mut self, new: &[Node]) -> Result<Option<SharedKey>, LstError> {
        let all_launched = new.iter().all(|n| n.launch.is_some());
        let key = match &self.key {
            Some(k) => k.clone(),
            None => {
                let k = match &self.cfg.key_file {
                    Some(p) => {
                        Some(SharedKey::from_file(p).map_err(|e| LstError::Launch(e.to_string()))?)
                    }
                    None if all_launched => {
                        Some(SharedKey::random().map_err(|e| LstError::Launch(e.to_string()))?)
                    }
                    None => None,
                };
                self.key = Some(k.clone());
                k
            }
        };
        if key.is_some() && self.cfg.key_file.is_none() && !all_launched {
            return Err(LstError::Launch(
                "this session's agents were started by it with a one-time key, which agents already running (HOST:PORT, ADDR@tcp) cannot hold: open the session with a shared key file (IOLAB_KEY_FILE or new_session --key) that those agents also hold".into(),
            ));
        }
        Ok(key)
    }

    /// What console's launch and connect need to reach `nodes`.
    fn reach_plan(&self, nodes: &[Node]) -> Plan {
        Plan {
            test: Test::Ping,
            from: nodes.to_vec(),
            to: Vec::new(),
            distribute: Distribute {
                clients: 1,
                servers: 1,
            },
            concurrency: vec![1],
            clients: Vec::new(),
            repeat: 1,
            limit: Limit::Count(1),
            key_file: self.cfg.key_file.clone(),
            rsh: self.cfg.rsh.clone(),
            agent_cmd: self.cfg.agent_cmd.clone(),
            connect_timeout_s: self.cfg.connect_timeout_s,
        }
    }

    fn add_batch(&mut self, name: &str) -> Result<(), String> {
        check_name("batch", name)?;
        if self.batches.contains_key(name) {
            return Err(format!("batch {name:?} already exists"));
        }
        self.batches.insert(name.to_string(), Batch::default());
        Ok(())
    }

    fn add_test(&mut self, batch: &str, def: TestDef) -> Result<(), String> {
        def.test.validate().map_err(|e| e.to_string())?;
        for g in [&def.from, &def.to] {
            if !self.groups.contains_key(g) {
                return Err(format!("no group {g:?}: add it first with add_group"));
            }
        }
        let servers = self.groups.get(&def.to).map_or(0, |g| g.len());
        def.distribute.check(servers).map_err(|e| e.to_string())?;
        if !(1..=MAX_CONCURRENCY).contains(&def.concurrency) {
            return Err(format!(
                "--concurrency {}: 1 to {MAX_CONCURRENCY}",
                def.concurrency
            ));
        }
        if let Some(n) = def.loop_count {
            Limit::Count(n)
                .validate()
                .map_err(|e| format!("--loop: {e}"))?;
        }
        let b = self.batch_mut(batch)?;
        if b.running.is_some() {
            return Err(format!(
                "batch {batch:?} is running: stop it before adding tests"
            ));
        }
        b.tests.push(def);
        Ok(())
    }

    fn batch_mut(&mut self, name: &str) -> Result<&mut Batch, String> {
        self.batches
            .get_mut(name)
            .ok_or_else(|| format!("no batch {name:?}: add it first with add_batch"))
    }

    fn run(&mut self, name: &str) -> Result<(), String> {
        self.reap();
        let b = self
            .batches
            .get(name)
            .ok_or_else(|| format!("no batch {name:?}: add it first with add_batch"))?;
        if b.running.is_some() {
            return Err(format!("batch {name:?} is already running"));
        }
        if b.tests.is_empty() {
            return Err(format!("batch {name:?} has no test: add one with add_test"));
        }
        let running = batch::start(&mut self.slots, &self.groups, &b.tests)?;
        let b = self.batch_mut(name)?;
        b.running = Some(running);
        b.last = None;
        Ok(())
    }

    fn stop(&mut self, name: &str) -> Result<(), String> {
        let b = self.batch_mut(name)?;
        if let Some(r) = b.running.take() {
            let (conns, totals) = r.stop();
            self.give_back(conns);
            self.batch_mut(name)?.last = Some(totals);
        }
        Ok(())
    }

    /// Collects the batches whose runs ended by themselves.
    fn reap(&mut self) {
        let done: Vec<String> = self
            .batches
            .iter()
            .filter(|(_, b)| b.running.as_ref().is_some_and(Running::finished))
            .map(|(n, _)| n.clone())
            .collect();
        for n in done {
            let _ = self.stop(&n);
        }
    }

    fn give_back(&mut self, conns: Vec<(String, Conn)>) {
        for (addr, c) in conns {
            if let Some(s) = self.slots.iter_mut().find(|s| s.node.addr == addr) {
                s.ctl = Some(c);
            }
        }
    }

    fn infos(&mut self, name: Option<&str>) -> Result<Reply, String> {
        self.reap();
        if let Some(n) = name {
            self.batch_mut(n)?;
        }
        let batches = self
            .batches
            .iter()
            .filter(|(n, _)| name.is_none_or(|x| x == n.as_str()))
            .map(|(n, b)| BatchInfo {
                name: n.clone(),
                tests: b.tests.clone(),
                running: b.running.is_some(),
                last: b.last.clone(),
                nodes: (0..b.tests.len()).map(|t| self.test_nodes(b, t)).collect(),
            })
            .collect();
        Ok(Reply::Batches { batches })
    }

    /// Test `t` of `b`: its clients (with whether each one's job runs)
    /// and its servers, with their states.
    fn test_nodes(&self, b: &Batch, t: usize) -> TestNodes {
        let def = &b.tests[t];
        let list = |g: &str, jobs: bool| -> Vec<NodeInfo> {
            self.groups
                .get(g)
                .map(|nodes| {
                    nodes
                        .iter()
                        .map(|n| NodeInfo {
                            node: n.name.clone(),
                            state: self.state_of(n),
                            running: jobs
                                && b.running
                                    .as_ref()
                                    .is_some_and(|r| r.client_runs(t, &n.addr)),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        TestNodes {
            clients: list(&def.from, true),
            servers: list(&def.to, false),
        }
    }

    fn sample(&mut self, groups: &[String], timeout_s: f64) -> Result<Reply, String> {
        check_timeout(timeout_s)?;
        let wait = Duration::from_secs_f64(timeout_s);
        let mut out = Vec::new();
        for g in groups {
            let nodes = self.target_nodes(g)?;
            let (samples, failed) = self.read_nodes(&nodes, wait);
            out.push(GroupSample {
                name: g.clone(),
                nodes: samples,
                failed,
            });
        }
        Ok(Reply::Sample { groups: out })
    }

    /// Reads the live counters of `nodes` (all of the session), each
    /// within `wait` and [`READ_THREADS`] at once, as lst sends its stat
    /// RPCs together: the answers in the order of `nodes`, and the names
    /// of those that did not answer.
    fn read_nodes(&mut self, nodes: &[Node], wait: Duration) -> (Vec<NodeSample>, Vec<String>) {
        let mut picked: Vec<&mut Slot> = self
            .slots
            .iter_mut()
            .filter(|s| nodes.iter().any(|n| n.addr == s.node.addr))
            .collect();
        let mut got: Vec<(String, Result<NodeSample, String>)> = Vec::new();
        for chunk in picked.chunks_mut(READ_THREADS) {
            std::thread::scope(|sc| {
                let hs: Vec<_> = chunk
                    .iter_mut()
                    .map(|s| {
                        sc.spawn(move || {
                            let r = probe_live(s, wait).map(|live| NodeSample {
                                node: String::new(),
                                at_ns: iolab_core::clock::mono_ns(),
                                live,
                                errors_at_join: s.errors_at_join,
                            });
                            (s.node.addr.clone(), r)
                        })
                    })
                    .collect();
                got.extend(hs.into_iter().filter_map(|h| h.join().ok()));
            });
        }
        let (mut samples, mut failed) = (Vec::new(), Vec::new());
        for n in nodes {
            match got.iter().position(|(a, _)| *a == n.addr) {
                Some(i) => match got.swap_remove(i).1 {
                    Ok(mut s) => {
                        s.node = n.name.clone();
                        samples.push(s);
                    }
                    Err(_) => failed.push(n.name.clone()),
                },
                None => failed.push(n.name.clone()),
            }
        }
        (samples, failed)
    }

    /// A group's nodes, or the nodes a word names (NIDs, ranges) when
    /// no group has that name; every one must be in the session.
    fn target_nodes(&self, word: &str) -> Result<Vec<Node>, String> {
        if let Some(nodes) = self.groups.get(word) {
            return Ok(nodes.clone());
        }
        let nodes = crate::hosts::nodes(&[word.to_string()], self.cfg.port)
            .map_err(|e| format!("{word:?} is no group of this session, nor a node list: {e}"))?;
        for n in &nodes {
            if !self.slots.iter().any(|s| s.node.addr == n.addr) {
                return Err(format!(
                    "{word:?}: no group of that name, and node {} is not in this session (add it with add_group)",
                    n.name
                ));
            }
        }
        Ok(nodes)
    }

    /// Stops every batch, says goodbye to every agent and waits (a
    /// little) for those the daemon started to exit.
    fn end(&mut self) {
        let names: Vec<String> = self.batches.keys().cloned().collect();
        for n in names {
            let _ = self.stop(&n);
        }
        for s in &mut self.slots {
            if let Some(c) = &mut s.ctl {
                c.idle_timeout = console::COMMAND_TIMEOUT;
                let _ = console::send(c, &Command::Bye, Cancel::process());
            }
        }
        for s in std::mem::take(&mut self.slots) {
            drop((s.ctl, s.stat));
            if let Some(r) = s.remote {
                let _ = r.wait(Duration::from_secs(5), || false);
            }
        }
    }
}

/// A reading's or a ping's timeout: more than 0, at most an hour.
fn check_timeout(timeout_s: f64) -> Result<(), String> {
    if timeout_s > 0.0 && timeout_s <= 3600.0 {
        Ok(())
    } else {
        Err(format!(
            "--timeout {timeout_s}: more than 0 and at most 3600 seconds"
        ))
    }
}

fn check_name(what: &str, name: &str) -> Result<(), String> {
    super::check_name(what, name).map_err(|e| e.to_string())
}

/// Reads a node's live counters and sets its state by the outcome. A
/// failed read closes the stat connection, whose late answer would
/// otherwise be taken for the next reading's: the node stays down until
/// `ping` opens a new one or `update_group --refresh` reconnects it.
fn probe_live(s: &mut Slot, timeout: Duration) -> Result<crate::result::LiveStats, String> {
    match read_live(s, timeout) {
        Ok(l) => {
            s.state = NodeState::Active;
            Ok(l)
        }
        Err(e) => {
            s.state = NodeState::Down;
            s.stat.shutdown();
            Err(e)
        }
    }
}

fn read_live(s: &mut Slot, timeout: Duration) -> Result<crate::result::LiveStats, String> {
    let name = s.node.name.clone();
    let node = |e: iolab_net::NetError| format!("node {name}: {e}");
    s.stat.idle_timeout = timeout;
    console::send(&mut s.stat, &Command::Live, Cancel::process()).map_err(node)?;
    match console::recv(&mut s.stat, Cancel::process()).map_err(node)? {
        Answer::Live(l) => Ok(l),
        _ => Err(format!(
            "node {}: answered Live with something else",
            s.node.name
        )),
    }
}
