//! The agent: one per node (or several, on different ports). It serves
//! one console session at a time. The console's connection opens the
//! session with a random token; data connections from client agents must
//! present the same token, and with a shared key every connection proves
//! it. While the session's control connection lives the agent obeys its
//! commands (reset, start a client job, report server counters); when it
//! ends, for any reason, everything the session started is cancelled.
//! Nothing a peer sends can crash the agent: until it has completed the
//! handshake a connection waits in the agent's [`Gate`] (no thread of
//! its own, a small frame limit, the handshake bounded as a whole);
//! once trusted it has its own thread and bounded waits.

use crate::client::{self, Job};
use crate::proto::{Answer, ClientJob, Command, Hello};
use crate::result::ClientStats;
use crate::server::Counters;
use iolab_net::frame::Kind;
use iolab_net::gate::{Event, Gate};
use iolab_net::{conn, Cancel, Conn, NetError, SharedKey};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a connection may take to complete its handshake, as a
/// whole (a peer that trickles its bytes is cut off at this time too).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections an agent holds in their handshake; past it the
/// oldest is dropped (they cost a socket each, no thread).
pub const MAX_PENDING: usize = 1024;
/// How long an agent waits for the console's next command: the console
/// is silent while a run goes on, so this bounds a run's length from the
/// agent's side.
pub const CONSOLE_IDLE_TIMEOUT: Duration = Duration::from_secs(25 * 3600);
/// Most authenticated connections an agent serves at once (a session
/// needs one per client talking to it, plus the console).
pub const MAX_CONNECTIONS: usize = 4200;
/// How long an agent a console started waits for that console.
pub const ORPHAN_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest control message accepted (handshakes: the gate's limit,
/// [`iolab_net::gate::DEFAULT_MAX_HANDSHAKE_BYTES`]).
const CONTROL_MAX_BYTES: u32 = 1 << 20;

/// How an agent runs.
#[derive(Debug, Default)]
pub struct AgentConfig {
    /// `ADDR:PORT` to listen on.
    pub listen: String,
    /// The shared key every peer must hold, if any.
    pub key: Option<SharedKey>,
    /// Set when a console started this agent: only that console's token
    /// is accepted, and the agent exits when its session ends.
    pub token: Option<String>,
    /// Test hook: damage every Nth payload this agent sends (0: never).
    pub corrupt_every: u64,
    /// How long an agent a console started waits for that console to
    /// open its session ([`ORPHAN_TIMEOUT`] when zero).
    pub orphan_after: Duration,
    /// Where the agent tells what no peer hears: a frame refused, giving
    /// up on its console.
    pub log: Log,
}

/// The agent's log: a line for each thing that ends a session or the
/// agent with nobody told otherwise. The agent prints nothing itself;
/// the command that runs it chooses where the lines go (standard error).
#[derive(Clone, Default)]
pub struct Log(Option<Arc<Sink>>);

/// What a [`Log`] hands its lines to.
type Sink = dyn Fn(&str) + Send + Sync;

impl Log {
    /// A log that hands every line to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Log {
        Log(Some(Arc::new(f)))
    }

    fn say(&self, line: &str) {
        if let Some(f) = &self.0 {
            f(line);
        }
    }
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Log(on)"
        } else {
            "Log(off)"
        })
    }
}

struct Session {
    token: String,
    cancel: Arc<AtomicBool>,
    /// The session's live figures: its client jobs' RPCs, from zero.
    board: Arc<iolab_core::live::Board>,
}

struct Shared {
    cfg: AgentConfig,
    session: Mutex<Option<Session>>,
    counters: Counters,
    live: crate::live::LiveCounters,
    stop: Arc<AtomicBool>,
    /// A console session has been opened at least once.
    opened: AtomicBool,
    /// Connections being served.
    conns: std::sync::atomic::AtomicUsize,
}

/// Serves until `stop` is set (or, for an agent a console started, until
/// that console's session ends). Returns an error only when the port
/// cannot be opened. Connections are accepted and authenticated by one
/// [`Gate`] on this thread: a connection gets a thread of its own only
/// once its handshake is done, so strangers that connect and say
/// nothing, or trickle, cost no thread and delay no console or client.
pub fn serve(cfg: AgentConfig, stop: Arc<AtomicBool>) -> Result<(), NetError> {
    let l = conn::listen(&cfg.listen)?;
    let mut gate = Gate::new(vec![l], cfg.key.clone(), HANDSHAKE_TIMEOUT).max_pending(MAX_PENDING);
    let shared = Arc::new(Shared {
        cfg,
        session: Mutex::new(None),
        counters: Counters::default(),
        live: crate::live::LiveCounters::default(),
        stop,
        opened: AtomicBool::new(false),
        conns: std::sync::atomic::AtomicUsize::new(0),
    });
    let started = Instant::now();
    let sh = Arc::clone(&shared);
    let mut judge = move |_: usize, p: &serde_json::Value| {
        judge(&sh, p).map(|()| serde_json::json!({"tool": "lst"}))
    };
    loop {
        if orphaned(&shared, started) {
            return Ok(());
        }
        match gate.next(
            &mut judge,
            Duration::from_secs(1),
            Cancel::with(&shared.stop),
        ) {
            // Past the cap a connection is dropped at once: a flood of
            // connections costs sockets, not threads and memory.
            Ok(Event::Admitted { conn, .. })
                if shared.conns.load(Ordering::Relaxed) >= MAX_CONNECTIONS =>
            {
                drop(conn)
            }
            Ok(Event::Admitted { conn, agreed, .. }) => {
                let s = Arc::clone(&shared);
                let session = open_session(&s, &agreed.peer_params);
                s.conns.fetch_add(1, Ordering::Relaxed);
                std::thread::spawn(move || {
                    match session {
                        Some(opened) => console_session(conn, &s, opened),
                        None => handle(conn, agreed.peer_params, &s),
                    }
                    s.conns.fetch_sub(1, Ordering::Relaxed);
                });
            }
            // Refused (told why) or dropped (closed): nothing to serve.
            Ok(_) => {}
            Err(NetError::Cancelled) => return Ok(()),
            Err(NetError::Timeout { .. }) => {}
            // A failed poll: do not spin on it.
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// An agent a console started, whose console never opened the session:
/// it gives up after [`ORPHAN_TIMEOUT`] rather than serve forever.
fn orphaned(sh: &Shared, started: Instant) -> bool {
    let wait = match sh.cfg.orphan_after {
        Duration::ZERO => ORPHAN_TIMEOUT,
        d => d,
    };
    let gone =
        sh.cfg.token.is_some() && !sh.opened.load(Ordering::Relaxed) && started.elapsed() > wait;
    if gone {
        sh.cfg.log.say(&format!(
            "the console that started this agent did not open its session within {} s: exiting",
            wait.as_secs()
        ));
    }
    gone
}

fn lock(m: &Mutex<Option<Session>>) -> std::sync::MutexGuard<'_, Option<Session>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves one authenticated connection by what its hello says (a
/// console's was served by [`console_session`]; one here lost the race
/// for the session to another console).
fn handle(mut c: Conn, hello: serde_json::Value, sh: &Shared) {
    c.idle_timeout = HANDSHAKE_TIMEOUT;
    c.max_payload = CONTROL_MAX_BYTES;
    match serde_json::from_value::<Hello>(hello) {
        Ok(Hello::Console { .. }) => {}
        Ok(Hello::Data { test, .. }) => {
            let Some(flag) = lock(&sh.session).as_ref().map(|s| Arc::clone(&s.cancel)) else {
                return;
            };
            let _ = crate::server::serve(
                &mut c,
                test,
                &sh.counters,
                &sh.live,
                sh.cfg.corrupt_every,
                Cancel::with(&flag),
            );
        }
        Ok(Hello::Stat { .. }) => stat_reader(c, sh),
        Err(_) => {}
    }
}

/// Answers `Live` on a session's second connection until the session
/// ends: the console reads live counters here while its first
/// connection is busy with a job.
fn stat_reader(mut c: Conn, sh: &Shared) {
    let Some((flag, board)) = lock(&sh.session)
        .as_ref()
        .map(|s| (Arc::clone(&s.cancel), Arc::clone(&s.board)))
    else {
        return;
    };
    c.idle_timeout = CONSOLE_IDLE_TIMEOUT;
    while let Ok((h, body)) = c.recv_owned(Cancel::with(&flag)) {
        let answer = match serde_json::from_slice::<Command>(&body) {
            Ok(Command::Live) if h.kind == Kind::Control => Answer::Live(sh.live.snapshot()),
            Ok(Command::Figures) if h.kind == Kind::Control => Answer::Figures(board.totals()),
            _ => return,
        };
        let Ok(bytes) = serde_json::to_vec(&answer) else {
            return;
        };
        if c.send(Kind::Control, 0, 0, &bytes, Cancel::with(&flag))
            .is_err()
        {
            return;
        }
    }
}

fn judge(sh: &Shared, p: &serde_json::Value) -> Result<(), String> {
    let hello: Hello = serde_json::from_value(p.clone())
        .map_err(|e| format!("not an lst peer ({e}): is another tool on this port?"))?;
    let session = lock(&sh.session);
    match (&hello, session.as_ref()) {
        (Hello::Console { token }, _) if sh.cfg.token.as_ref().is_some_and(|t| t != token) => {
            Err("this agent was started by another console and serves only its session".into())
        }
        (Hello::Console { .. }, Some(_)) => {
            Err("this agent is busy with another console's session; try again when it ends".into())
        }
        (Hello::Console { .. }, None) => Ok(()),
        (Hello::Data { token, test }, Some(s)) if *token == s.token => {
            test.validate().map_err(|e| e.to_string())
        }
        (Hello::Data { .. }, _) => {
            Err("data connection refused: not the current session's token".into())
        }
        (Hello::Stat { token }, Some(s)) if *token == s.token => Ok(()),
        (Hello::Stat { .. }, _) => {
            Err("stat connection refused: not the current session's token".into())
        }
    }
}

/// Opens the session of a console just admitted, on the gate's thread,
/// before the next handshake is judged: the console's next connection
/// (its stat connection) must find the session open. None when another
/// console got it first.
fn open_session(sh: &Shared, hello: &serde_json::Value) -> Option<(String, Arc<AtomicBool>)> {
    let Ok(Hello::Console { token }) = serde_json::from_value::<Hello>(hello.clone()) else {
        return None;
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let mut s = lock(&sh.session);
    if s.is_some() {
        return None;
    }
    *s = Some(Session {
        token: token.clone(),
        cancel: Arc::clone(&cancel),
        board: Arc::default(),
    });
    Some((token, cancel))
}

/// Serves a console's session (opened by [`open_session`]) until it
/// ends; then cancels what it started and closes it.
fn console_session(mut c: Conn, sh: &Shared, (token, cancel): (String, Arc<AtomicBool>)) {
    sh.opened.store(true, Ordering::Relaxed);
    sh.counters.reset();
    c.max_payload = CONTROL_MAX_BYTES;
    c.idle_timeout = CONSOLE_IDLE_TIMEOUT;
    loop {
        let (h, body) = match c.recv_owned(Cancel::with(&sh.stop)) {
            Ok(frame) => frame,
            Err(e) => {
                refuse(&mut c, sh, e);
                break;
            }
        };
        if h.kind != Kind::Control {
            break;
        }
        let answer = match serde_json::from_slice::<Command>(&body) {
            Ok(Command::Bye) => break,
            // A halt that crossed the end of its job: the job's answer
            // has gone, and this one needs none.
            Ok(Command::Halt) => continue,
            Ok(Command::Start(job)) => match watched_job(&mut c, sh, &job, &token) {
                Ok(a) => a,
                Err(e) => {
                    refuse(&mut c, sh, e);
                    break;
                }
            },
            Ok(cmd) => obey(sh, cmd),
            Err(e) => Answer::Failed {
                message: format!("malformed command: {e}"),
                partial: None,
            },
        };
        let Ok(bytes) = serde_json::to_vec(&answer) else {
            break;
        };
        if c.send(Kind::Control, 0, 0, &bytes, Cancel::with(&sh.stop))
            .is_err()
        {
            break;
        }
    }
    cancel.store(true, Ordering::Relaxed);
    *lock(&sh.session) = None;
    if sh.cfg.token.is_some() {
        sh.stop.store(true, Ordering::Relaxed);
    }
}

/// Ends a session whose console's frame could not be taken: a frame
/// that failed its tag or CRC, or broke the protocol, is told to the
/// console (an Error frame, which the console reports as the agent's
/// refusal) and logged here, where nothing else would say why the
/// session ended. A console that closed, went silent or was stopped
/// needs no word.
fn refuse(c: &mut Conn, sh: &Shared, e: NetError) {
    if matches!(
        e,
        NetError::Closed | NetError::Cancelled | NetError::Timeout { .. } | NetError::Io(_)
    ) {
        return;
    }
    let why = format!("refused a frame from the console: {e}");
    sh.cfg.log.say(&format!("{why}; the session ends"));
    let _ = c.send(Kind::Error, 0, 0, why.as_bytes(), Cancel::process());
}

fn obey(sh: &Shared, cmd: Command) -> Answer {
    match cmd {
        Command::Reset => {
            sh.counters.reset();
            Answer::Ok
        }
        Command::Stats => Answer::Server(sh.counters.snapshot()),
        Command::Live => Answer::Live(sh.live.snapshot()),
        Command::Figures => Answer::Figures(session_board(sh).totals()),
        Command::Start(_) | Command::Bye | Command::Halt => Answer::Failed {
            message: "unexpected command".into(),
            partial: None,
        },
    }
}

/// Runs a client job while watching the control connection: the console
/// sends nothing during a job, so a close (the console died or gave up
/// after another node failed), a frame, or a timeout stops the job at
/// once. Returns why when the session is over.
fn watched_job(
    c: &mut Conn,
    sh: &Shared,
    job: &ClientJob,
    token: &str,
) -> Result<Answer, NetError> {
    if let Err(e) = job.validate() {
        return Ok(Answer::Failed {
            message: e.to_string(),
            partial: None,
        });
    }
    let stop_job = AtomicBool::new(false);
    let halt = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let (result, console_gone) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let r = run_client(sh, job, token, (&stop_job, &halt));
            done.store(true, Ordering::Relaxed);
            r
        });
        let gone = match halt_or_gone(c, &done) {
            // Halted: issue no more, but let the RPCs in flight come
            // back, so the counts are whole.
            Ok(true) => {
                halt.store(true, Ordering::Relaxed);
                None
            }
            Err(NetError::Cancelled) => None,
            // A goodbye (the session ends under the job): ended quietly.
            Ok(false) => {
                stop_job.store(true, Ordering::Relaxed);
                Some(NetError::Closed)
            }
            Err(e) => {
                stop_job.store(true, Ordering::Relaxed);
                Some(e)
            }
        };
        let r = h.join().unwrap_or_else(|_| {
            Err(Box::new((
                "a client thread panicked".into(),
                ClientStats::default(),
            )))
        });
        (r, gone)
    });
    if let Some(e) = console_gone {
        return Err(e);
    }
    Ok(match result {
        Ok(s) => Answer::Done(s),
        Err(f) => {
            let (message, s) = *f;
            Answer::Failed {
                message,
                partial: Some(s),
            }
        }
    })
}

/// Waits, while a job runs, for the console: `Ok(true)` when it asked
/// to halt the job (`lst stop`), `Err(Cancelled)` when the job ended by
/// itself, anything else when the console is gone or broke the protocol.
fn halt_or_gone(c: &mut Conn, done: &AtomicBool) -> Result<bool, NetError> {
    let (h, body) = c.recv_owned(Cancel::with(done))?;
    Ok(h.kind == Kind::Control && matches!(serde_json::from_slice(&body), Ok(Command::Halt)))
}

/// Runs a client job on this thread (one pipeline over all its servers);
/// `stop` ends it early, `halt` ends it early after its RPCs in flight.
/// A job that fails says why, with its counts so far.
fn run_client(
    sh: &Shared,
    job: &ClientJob,
    token: &str,
    (stop, halt): (&AtomicBool, &AtomicBool),
) -> Result<ClientStats, Box<(String, ClientStats)>> {
    let deadline = match job.limit {
        crate::spec::Limit::DurationS(s) => Some(Instant::now() + Duration::from_secs_f64(s)),
        crate::spec::Limit::Count(_) => None,
    };
    let board = session_board(sh);
    let j = Job {
        servers: &job.servers,
        token,
        key: sh.cfg.key.as_ref(),
        test: job.test,
        slots: u64::from(job.concurrency),
        quota: match job.limit {
            crate::spec::Limit::Count(c) => Some(c),
            crate::spec::Limit::DurationS(_) => None,
        },
        deadline,
        corrupt_every: sh.cfg.corrupt_every,
        live: &sh.live,
        board: &board,
        halt,
        rpc_timeout: job.rpc_timeout_s.map_or(client::DEFAULT_RPC_TIMEOUT, |s| {
            Duration::from_secs(u64::from(s))
        }),
    };
    client::run(&j, Cancel::with(stop))
        .map(|t| stats_of(&t))
        .map_err(|f| Box::new((f.0, stats_of(&f.1))))
}

/// The open session's live figures (a board nobody reads when the
/// session ended under a job).
fn session_board(sh: &Shared) -> Arc<iolab_core::live::Board> {
    lock(&sh.session)
        .as_ref()
        .map_or_else(Arc::default, |s| Arc::clone(&s.board))
}

/// A client's counts as the console reads them.
fn stats_of(t: &client::Tally) -> ClientStats {
    ClientStats {
        node: String::new(),
        rpcs: t.rpcs,
        errors: t.errors,
        rx_bytes: t.rx_bytes,
        tx_bytes: t.tx_bytes,
        elapsed_ns: t.elapsed_ns,
        latency: t.latency.to_wire(),
        lost: t.lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent a console started, whose console never came, said
    /// nothing as it exited after 2 minutes: it now logs why.
    #[test]
    fn an_orphaned_agent_says_why_it_exits() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&lines);
        let cfg = AgentConfig {
            listen: format!("127.0.0.1:{port}"),
            token: Some("0123456789abcdef".into()),
            orphan_after: Duration::from_secs(1),
            log: Log::new(move |l| sink.lock().unwrap().push(l.to_string())),
            ..Default::default()
        };
        let started = Instant::now();
        serve(cfg, Arc::new(AtomicBool::new(false))).unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        let said = lines.lock().unwrap().join("\n");
        assert!(
            said.contains("did not open its session within 1 s"),
            "{said:?}"
        );
    }
}
