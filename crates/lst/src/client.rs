//! A client's side of a test: keeps `slots` RPCs in flight over its
//! connections, until the quota or the deadline, measuring each round
//! trip. The job runs in one or more lanes (see `streams`: one for
//! ping and small RPCs, up to four for bulk ones), each on its own
//! thread with its own connection to every server and its share of the
//! RPCs in flight and of the count. Within a lane, RPC `tag` goes to
//! connection `tag % n` and every connection answers in order, so the
//! oldest RPC in flight is always the next reply on its connection: the
//! lane's RPCs in flight form a ring indexed by tag, and lst's
//! concurrency spreads over a client's servers even when it is smaller
//! than their number. Bulk lanes run on threads of their own because on
//! loopback (and with any fast NIC) the sender's copy into the socket is
//! the bottleneck, and one thread feeding every connection in turn waits
//! on each reply with nothing else to do. Buffers are filled once and
//! reused: nothing in the loop allocates, formats or locks.

use crate::pattern;
use crate::proto::{self, Hello, REPLY_BAD_DATA};
use crate::spec::Test;
use iolab_core::stats::Histogram;
use iolab_net::frame::Kind;
use iolab_net::{conn, handshake, Cancel, Conn, NetError, SharedKey};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a client agent retries connecting to a server agent.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a client does.
pub(crate) struct Job<'a> {
    pub servers: &'a [String],
    pub token: &'a str,
    pub key: Option<&'a SharedKey>,
    pub test: Test,
    pub slots: u64,
    pub quota: Option<u64>,
    pub deadline: Option<Instant>,
    pub corrupt_every: u64,
    pub live: &'a crate::live::LiveCounters,
    /// The session's live figures (`--live` on the console): each lane
    /// records its RPCs here.
    pub board: &'a iolab_core::live::Board,
    /// Set to issue no more RPCs and end once those in flight are back.
    pub halt: &'a AtomicBool,
    /// How long an RPC may wait for its reply (`add_test --timeout`).
    pub rpc_timeout: Duration,
}

/// How long an RPC waits for its reply unless the test says.
pub const DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(30);

/// A client's counters.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub rpcs: u64,
    pub errors: u64,
    /// RPCs issued whose reply never came: in flight when the job failed.
    pub lost: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub elapsed_ns: u64,
    pub latency: Histogram,
}

impl Tally {
    /// Adds another lane's counts: RPCs, errors and bytes add up, the
    /// latencies merge, and the job lasted as long as its longest lane.
    fn merge(&mut self, o: &Tally) {
        self.rpcs += o.rpcs;
        self.errors += o.errors;
        self.lost += o.lost;
        self.rx_bytes += o.rx_bytes;
        self.tx_bytes += o.tx_bytes;
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
        self.latency.merge(&o.latency);
    }
}

/// A failure on connection `i`, named by its server.
fn fail(job: &Job<'_>, i: usize, e: NetError) -> String {
    let addr = &job.servers[i];
    match e {
        NetError::Closed => format!(
            "server {addr}: the connection was closed mid-test: the agent there died or was killed"
        ),
        e => format!("server {addr}: {e}"),
    }
}

fn open(job: &Job<'_>, addr: &str, cancel: Cancel<'_>) -> Result<Conn, NetError> {
    let mut c = conn::connect(addr, CONNECT_TIMEOUT, cancel)
        .map_err(|e| e.hinted(" (is its lst agent running there, on that port?)"))?;
    c.idle_timeout = job.rpc_timeout;
    c.max_payload = proto::frame_limit(&job.test);
    let hello = Hello::Data {
        token: job.token.to_string(),
        test: job.test,
    };
    let params = serde_json::to_value(&hello).map_err(|e| NetError::Protocol(e.to_string()))?;
    handshake::client(&mut c, "lst", &params, job.key, cancel)?;
    c.payload_crc = proto::payload_crc(&job.test);
    Ok(c)
}

/// A job that failed: why (naming the server), and what it had done by
/// then (every lane's counts, the RPCs in flight counted as lost).
pub(crate) type Failed = Box<(String, Tally)>;

/// Connects to every server, runs the job and ends the test on each; a
/// lost connection or a reply out of order ends it with an error naming
/// the server, and the counts so far.
pub(crate) fn run(job: &Job<'_>, cancel: Cancel<'_>) -> Result<Tally, Failed> {
    let n = job.servers.len();
    // Never more lanes than RPCs in flight: each lane keeps at least one.
    let lanes = streams(job).clamp(1, job.slots.max(1) as usize);
    // Every connection is open before the first RPC, so an unreachable
    // server fails the job before anything is counted.
    let mut groups = Vec::with_capacity(lanes);
    for _ in 0..lanes {
        let mut conns = Vec::with_capacity(n);
        for (i, addr) in job.servers.iter().enumerate() {
            conns.push(
                open(job, addr, cancel)
                    .map_err(|e| Box::new((fail(job, i, e), Tally::default())))?,
            );
        }
        groups.push(conns);
    }
    let failed = AtomicBool::new(false);
    let start = Instant::now();
    let results: Vec<Result<Tally, Failed>> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(k, mut conns)| {
                let failed = &failed;
                s.spawn(move || {
                    let r = lane(
                        job,
                        share(job, k, lanes),
                        &mut conns,
                        (start, failed),
                        cancel,
                    );
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Box::new((
                        "a client lane panicked".into(),
                        Tally::default(),
                    )))
                })
            })
            .collect()
    });
    sum(results)
}

/// The job's counts from its lanes', failed ones included; the first
/// lane's error, if any, with all the counts.
fn sum(lanes: Vec<Result<Tally, Failed>>) -> Result<Tally, Failed> {
    let mut total: Option<Tally> = None;
    let mut error: Option<String> = None;
    for r in lanes {
        let t = match r {
            Ok(t) => t,
            Err(f) => {
                let (e, t) = *f;
                error.get_or_insert(e);
                t
            }
        };
        match total.as_mut() {
            None => total = Some(t),
            Some(a) => a.merge(&t),
        }
    }
    match (total, error) {
        (Some(t), None) => Ok(t),
        (t, Some(e)) => Err(Box::new((e, t.unwrap_or_default()))),
        (None, None) => Err(Box::new((
            "a client job ran no lane".to_string(),
            Tally::default(),
        ))),
    }
}

/// Lane `k`'s part of the job's RPCs in flight and of its count: the
/// job's split as evenly as it goes, the first lanes taking the rest, so
/// that the lanes together keep exactly `slots` in flight and issue
/// exactly the quota.
fn share(job: &Job<'_>, k: usize, lanes: usize) -> (u64, Option<u64>) {
    let part = |total: u64| total / lanes as u64 + u64::from((k as u64) < total % lanes as u64);
    (part(job.slots.max(1)), job.quota.map(part))
}

/// One lane: a pipeline over its own connection to every server, on its
/// own thread, then the end of the test on each of them. A lane that
/// fails sets `failed`, and the others then issue no more RPCs.
fn lane(
    job: &Job<'_>,
    (slots, quota): (u64, Option<u64>),
    conns: &mut [Conn],
    (start, failed): (Instant, &AtomicBool),
    cancel: Cancel<'_>,
) -> Result<Tally, Failed> {
    let tally = Pipeline::new(job, slots, quota, failed)
        .drive(conns, start, cancel)
        .map_err(|f| {
            let (i, e, t) = *f;
            Box::new((fail(job, i, e), t))
        })?;
    match end_test(job, conns, cancel) {
        Ok(()) => Ok(tally),
        Err(e) => Err(Box::new((e, tally))),
    }
}

/// Ends the test on every connection: `End`, answered by `End`.
fn end_test(job: &Job<'_>, conns: &mut [Conn], cancel: Cancel<'_>) -> Result<(), String> {
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(Kind::End, 0, 0, &[], cancel)
            .map_err(|e| fail(job, i, e))?;
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let h = c.recv_header(cancel).map_err(|e| fail(job, i, e))?;
        if h.kind != Kind::End {
            return Err(format!(
                "server {}: expected the end of the test, got a {:?} frame",
                job.servers[i], h.kind
            ));
        }
    }
    Ok(())
}

/// Most connections a client opens to one server.
const MAX_STREAMS: usize = 4;
/// Bulk RPCs at least this large spread over several connections.
const STREAM_MIN_BYTES: u32 = 64 << 10;

/// Lanes, that is connections per server and client threads: one for
/// ping and small RPCs; for bulk RPCs, one per RPC in flight per server
/// up to [`MAX_STREAMS`], as LNet's socket driver keeps several
/// connections per peer and its selftest runs on several threads, so
/// that a copy on one does not hold back the next RPC's (the receiving
/// side serves each connection on its own thread too).
fn streams(job: &Job<'_>) -> usize {
    let bulk = job.test.request_bytes().max(job.test.reply_bytes());
    if bulk < STREAM_MIN_BYTES {
        return 1;
    }
    (job.slots as usize / job.servers.len().max(1)).clamp(1, MAX_STREAMS)
}

struct Pipeline<'a> {
    live: crate::live::LiveHandle<'a>,
    rec: iolab_core::live::Recorder,
    halt: &'a AtomicBool,
    /// Another lane of the job failed.
    failed: &'a AtomicBool,
    test: Test,
    op: u8,
    slots: u64,
    quota: u64,
    deadline: Option<Instant>,
    corrupt_every: u64,
    req: Vec<u8>,
    rep: Vec<u8>,
    sent_at: Vec<Instant>,
    t: Tally,
}

impl<'a> Pipeline<'a> {
    fn new(job: &Job<'a>, slots: u64, quota: Option<u64>, failed: &'a AtomicBool) -> Pipeline<'a> {
        let mut req = vec![0u8; job.test.request_bytes() as usize];
        pattern::fill(&mut req);
        Pipeline {
            live: job.live.register(),
            rec: job.board.recorder(crate::proto::phase_of(&job.test), 0),
            halt: job.halt,
            failed,
            test: job.test,
            op: proto::op_of(&job.test),
            slots: slots.max(1),
            quota: quota.unwrap_or(u64::MAX),
            deadline: job.deadline,
            corrupt_every: job.corrupt_every,
            req,
            rep: vec![0u8; job.test.reply_bytes() as usize],
            sent_at: vec![Instant::now(); slots.max(1) as usize],
            t: Tally {
                latency: Histogram::new(),
                ..Tally::default()
            },
        }
    }

    fn may_issue(&self, issued: u64, now: Instant) -> bool {
        issued < self.quota
            && !matches!(self.deadline, Some(d) if now >= d)
            && !self.halt.load(Ordering::Relaxed)
            && !self.failed.load(Ordering::Relaxed)
    }

    /// Runs the lane; its elapsed time counts from the job's `start`,
    /// shared by all lanes, so the job's span is its longest lane's. A
    /// failure comes with the counts so far: the RPCs completed, and
    /// those in flight as lost.
    fn drive(
        mut self,
        conns: &mut [Conn],
        start: Instant,
        cancel: Cancel<'_>,
    ) -> Result<Tally, Box<(usize, NetError, Tally)>> {
        let (mut issued, mut done) = (0u64, 0u64);
        match self.pipeline(conns, start, (&mut issued, &mut done), cancel) {
            Ok(()) => {
                self.t.rpcs = done;
                Ok(self.t)
            }
            Err((i, e)) => {
                self.t.rpcs = done;
                // The RPC that failed was issued (or about to be): at
                // least one is lost.
                self.t.lost = issued.saturating_sub(done).max(1);
                Err(Box::new((i, e, self.t)))
            }
        }
    }

    /// The lane's loop: `issued` and `done` count as it goes.
    fn pipeline(
        &mut self,
        conns: &mut [Conn],
        start: Instant,
        (issued_out, done_out): (&mut u64, &mut u64),
        cancel: Cancel<'_>,
    ) -> Result<(), (usize, NetError)> {
        let n = conns.len() as u64;
        let on = |tag: u64| (tag % n) as usize;
        let (issued, done) = (issued_out, done_out);
        while *issued < self.slots && self.may_issue(*issued, Instant::now()) {
            *issued += 1;
            self.send(&mut conns[on(*issued - 1)], *issued - 1, cancel)
                .map_err(|e| (on(*issued - 1), e))?;
        }
        while *done < *issued {
            let passed = self
                .receive(&mut conns[on(*done)], *done, cancel)
                .map_err(|e| (on(*done), e))?;
            let now = Instant::now();
            let sent = self.sent_at[(*done % self.slots) as usize];
            let ns = now.duration_since(sent).as_nanos() as u64;
            let bytes = (self.req.len() + self.rep.len()) as u64;
            // An RPC that failed its payload check came back (it counts
            // among the RPCs) but is an error, not a latency sample: the
            // latencies are those of the RPCs that completed.
            match passed {
                true => {
                    self.t.latency.record(ns);
                    self.rec.op(bytes, ns);
                }
                false => self.rec.ops(1, bytes),
            }
            *done += 1;
            self.t.elapsed_ns = now.duration_since(start).as_nanos() as u64;
            if self.may_issue(*issued, now) && !cancel.cancelled() {
                *issued += 1;
                self.send(&mut conns[on(*issued - 1)], *issued - 1, cancel)
                    .map_err(|e| (on(*issued - 1), e))?;
            }
        }
        Ok(())
    }

    fn send(&mut self, c: &mut Conn, tag: u64, cancel: Cancel<'_>) -> Result<(), NetError> {
        pattern::stamp(&mut self.req, tag);
        // The test hook damages the payload before the frame's CRC is
        // computed, as a bad memory or a buggy NIC offload would: only
        // the payload check can see it.
        let corrupt = (tag + 1).checked_rem(self.corrupt_every) == Some(0);
        let last = self.req.len().saturating_sub(1);
        if corrupt && !self.req.is_empty() {
            self.req[last] ^= 0x5a;
        }
        self.sent_at[(tag % self.slots) as usize] = Instant::now();
        let r = c.send(Kind::Data, self.op, tag, &self.req, cancel);
        if corrupt && !self.req.is_empty() {
            self.req[last] ^= 0x5a;
        }
        r?;
        self.t.tx_bytes += self.req.len() as u64;
        self.live.sent(self.req.len());
        Ok(())
    }

    /// Reads RPC `tag`'s reply; true when its payload passed the check
    /// (the server's, for a write, which the reply's flags carry).
    fn receive(&mut self, c: &mut Conn, tag: u64, cancel: Cancel<'_>) -> Result<bool, NetError> {
        let h = c.recv_header(cancel)?;
        if h.kind != Kind::Data || h.offset != tag || h.len as usize != self.rep.len() {
            return Err(NetError::Protocol(format!(
                "expected the reply to RPC {tag} ({} bytes), got a {:?} frame for RPC {} ({} bytes): reply lost or out of order",
                self.rep.len(),
                h.kind,
                h.offset,
                h.len
            )));
        }
        let p = c.recv_payload(&h, &mut self.rep, cancel)?;
        self.t.rx_bytes += p.len() as u64;
        self.live.received(p.len());
        let passed = h.flags != REPLY_BAD_DATA && pattern::verify(p, tag, self.test.check());
        if !passed {
            self.t.errors += 1;
            self.live.error();
            self.rec.error();
        }
        Ok(passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{BrwOp, Check};

    #[test]
    fn bulk_rpcs_spread_over_up_to_four_connections_per_server() {
        let live = crate::live::LiveCounters::default();
        let board = iolab_core::live::Board::new();
        let halt = std::sync::atomic::AtomicBool::new(false);
        let one = ["a:1".to_string()];
        let two = ["a:1".to_string(), "b:1".to_string()];
        let brw = |size| Test::Brw {
            op: BrwOp::Write,
            size,
            check: Check::None,
        };
        let n = |test, servers: &[String], slots| {
            streams(&Job {
                servers,
                token: "t",
                key: None,
                test,
                slots,
                quota: None,
                deadline: None,
                corrupt_every: 0,
                live: &live,
                board: &board,
                halt: &halt,
                rpc_timeout: DEFAULT_RPC_TIMEOUT,
            })
        };
        assert_eq!(n(brw(1 << 20), &one, 4), 4);
        assert_eq!(n(brw(1 << 20), &one, 64), 4);
        assert_eq!(n(brw(1 << 20), &two, 4), 2);
        assert_eq!(n(brw(1 << 20), &two, 1), 1);
        assert_eq!(n(brw(4096), &one, 64), 1, "small RPCs keep one");
        assert_eq!(n(Test::Ping, &one, 64), 1);
    }

    /// A test server on loopback speaking the data protocol: its first
    /// connection holds its first reply back until the other
    /// connections have answered `wanted` RPCs between them (or 10 s
    /// pass), and says whether they did.
    struct StallingServer {
        addr: String,
        /// Replies sent, on every connection.
        answered: std::sync::Arc<std::sync::atomic::AtomicU64>,
        thread: Option<std::thread::JoinHandle<bool>>,
    }

    impl StallingServer {
        fn start(test: Test, conns: usize, wanted: u64) -> StallingServer {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap().to_string();
            let answered = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let all = std::sync::Arc::clone(&answered);
            let thread = std::thread::spawn(move || {
                let others = std::sync::atomic::AtomicU64::new(0);
                l.set_nonblocking(true).unwrap();
                let mut accepted = Vec::new();
                // The client opens its connections one after another,
                // each with its handshake.
                for _ in 0..conns {
                    let (mut c, _) =
                        conn::accept(&l, Duration::from_secs(10), Cancel::process()).unwrap();
                    c.max_payload = CONTROL_LIMIT;
                    let hello = serde_json::json!({"tool": "lst"});
                    handshake::server(&mut c, &hello, None, |_| Ok(()), Cancel::process()).unwrap();
                    accepted.push(c);
                }
                std::thread::scope(|s| {
                    let counts = (&others, &*all);
                    let hs: Vec<_> = accepted
                        .into_iter()
                        .enumerate()
                        .map(|(k, c)| {
                            s.spawn(move || serve_stalling(c, test, k == 0, counts, wanted))
                        })
                        .collect();
                    hs.into_iter().all(|h| h.join().unwrap())
                })
            });
            StallingServer {
                addr,
                answered,
                thread: Some(thread),
            }
        }

        fn held_while_others_went_on(mut self) -> bool {
            self.thread.take().unwrap().join().unwrap()
        }
    }

    fn serve_stalling(
        mut c: Conn,
        test: Test,
        stall: bool,
        (others, all): (&std::sync::atomic::AtomicU64, &std::sync::atomic::AtomicU64),
        wanted: u64,
    ) -> bool {
        let cancel = Cancel::process();
        c.max_payload = proto::frame_limit(&test);
        c.payload_crc = proto::payload_crc(&test);
        let mut buf = vec![0u8; test.request_bytes() as usize];
        let mut ok = true;
        let mut first = true;
        loop {
            let h = c.recv_header(cancel).unwrap();
            if h.kind == Kind::End {
                c.send(Kind::End, 0, 0, &[], cancel).unwrap();
                return ok;
            }
            c.recv_payload(&h, &mut buf, cancel).unwrap();
            if stall && first {
                first = false;
                let until = Instant::now() + Duration::from_secs(10);
                while others.load(Ordering::Relaxed) < wanted && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
                ok = others.load(Ordering::Relaxed) >= wanted;
            }
            c.send(Kind::Data, crate::proto::REPLY_OK, h.offset, &[], cancel)
                .unwrap();
            if !stall {
                others.fetch_add(1, Ordering::Relaxed);
            }
            all.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The handshake's frames are small; the data limit comes after it.
    const CONTROL_LIMIT: u32 = 64 << 10;

    #[test]
    fn a_slow_reply_on_one_connection_does_not_hold_back_the_others() {
        // Bulk RPCs at concurrency 4 to one server: four lanes, each on
        // its own connection and thread. One RPC whose reply is slow
        // holds back its own lane only; the other lanes' RPCs go on
        // (one thread driving all four connections waited on that
        // reply with the others idle). The count is still exact.
        let test = Test::Brw {
            op: BrwOp::Write,
            size: 64 << 10,
            check: Check::Simple,
        };
        let server = StallingServer::start(test, 4, 30);
        let live = crate::live::LiveCounters::default();
        let board = iolab_core::live::Board::new();
        let halt = AtomicBool::new(false);
        let servers = [server.addr.clone()];
        let job = Job {
            servers: &servers,
            token: "t",
            key: None,
            test,
            slots: 4,
            quota: Some(203),
            deadline: None,
            corrupt_every: 0,
            live: &live,
            board: &board,
            halt: &halt,
            rpc_timeout: DEFAULT_RPC_TIMEOUT,
        };
        let t = run(&job, Cancel::process()).unwrap();
        assert!(
            server.held_while_others_went_on(),
            "the other connections stopped while one reply was held back"
        );
        assert_eq!(t.rpcs, 203, "exactly the count, split over the lanes");
        assert_eq!(t.tx_bytes, 203 * (64 << 10));
        assert_eq!(t.latency.count(), 203);
        assert_eq!(t.errors, 0);
    }

    #[test]
    fn lanes_share_the_rpcs_in_flight_and_the_count_exactly() {
        let live = crate::live::LiveCounters::default();
        let board = iolab_core::live::Board::new();
        let halt = AtomicBool::new(false);
        let servers = ["a:1".to_string()];
        let job = |slots, quota| Job {
            servers: &servers,
            token: "t",
            key: None,
            test: Test::Ping,
            slots,
            quota,
            deadline: None,
            corrupt_every: 0,
            live: &live,
            board: &board,
            halt: &halt,
            rpc_timeout: DEFAULT_RPC_TIMEOUT,
        };
        for (slots, quota, lanes) in [(4, Some(203), 4), (7, Some(2), 3), (5, None, 4)] {
            let j = job(slots, quota);
            let parts: Vec<_> = (0..lanes).map(|k| share(&j, k, lanes)).collect();
            assert_eq!(parts.iter().map(|p| p.0).sum::<u64>(), slots);
            assert!(parts.iter().all(|p| p.0 >= 1), "{parts:?}");
            let counts: Option<u64> = parts.iter().map(|p| p.1).sum();
            assert_eq!(counts, quota, "{parts:?}");
        }
    }

    #[test]
    fn a_halt_in_the_middle_of_a_bulk_run_counts_what_was_answered() {
        // Four lanes, no limit: a halt (`lst stop`) once the server has
        // answered 100 RPCs ends every lane after its RPCs in flight
        // are back; the client counts exactly what the server answered.
        let test = Test::Brw {
            op: BrwOp::Write,
            size: 64 << 10,
            check: Check::Full,
        };
        let server = StallingServer::start(test, 4, 0);
        let live = crate::live::LiveCounters::default();
        let board = iolab_core::live::Board::new();
        let halt = AtomicBool::new(false);
        let servers = [server.addr.clone()];
        let job = Job {
            servers: &servers,
            token: "t",
            key: None,
            test,
            slots: 4,
            quota: None,
            deadline: None,
            corrupt_every: 0,
            live: &live,
            board: &board,
            halt: &halt,
            rpc_timeout: DEFAULT_RPC_TIMEOUT,
        };
        let answered = std::sync::Arc::clone(&server.answered);
        let t = std::thread::scope(|s| {
            s.spawn(|| {
                let until = Instant::now() + Duration::from_secs(20);
                while answered.load(Ordering::Relaxed) < 100 && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                halt.store(true, Ordering::Relaxed);
            });
            run(&job, Cancel::process()).unwrap()
        });
        assert!(server.held_while_others_went_on());
        let answered = answered.load(Ordering::Relaxed);
        assert!(answered >= 100, "{answered}");
        assert_eq!(t.rpcs, answered, "the client counts what was answered");
        assert_eq!(t.tx_bytes, answered * (64 << 10));
        assert_eq!(t.latency.count(), answered);
        assert_eq!(t.errors, 0);
        let l = live.snapshot();
        assert_eq!((l.tx_msgs, l.rx_msgs), (answered, answered), "live counts");
        let fig = board.totals();
        assert_eq!(fig.len(), 1, "{fig:?}");
        assert_eq!(
            (fig[0].ops, fig[0].errors),
            (answered, 0),
            "the board's RPCs"
        );
        let timed: u64 = fig[0].buckets.iter().map(|b| b.1).sum();
        assert_eq!(timed, answered, "every RPC timed");
    }
}
