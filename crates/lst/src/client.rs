//! A client's side of a test: keeps `slots` RPCs in flight over its
//! connections (one per server), sending them round-robin, until the
//! quota or the deadline, measuring each round trip. RPC `tag` goes to
//! connection `tag % n` and every connection answers in order, so the
//! oldest RPC in flight is always the next reply on its connection: the
//! RPCs in flight form a ring indexed by tag, and one thread drives them
//! all, as lst's concurrency spreads over a client's servers even when
//! it is smaller than their number. Buffers are filled once and reused:
//! nothing in the loop allocates, formats or locks.

use crate::pattern;
use crate::proto::{self, Hello, REPLY_BAD_DATA};
use crate::spec::Test;
use iolab_core::stats::Histogram;
use iolab_net::frame::Kind;
use iolab_net::{conn, handshake, Cancel, Conn, NetError, SharedKey};
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
    /// Set to issue no more RPCs and end once those in flight are back.
    pub halt: &'a std::sync::atomic::AtomicBool,
    /// How long an RPC may wait for its reply (`add_test --timeout`).
    pub rpc_timeout: Duration,
}

/// How long an RPC waits for its reply unless the test says.
pub const DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(30);

/// A client's counters.
pub(crate) struct Tally {
    pub rpcs: u64,
    pub errors: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub elapsed_ns: u64,
    pub latency: Histogram,
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
    let mut c = conn::connect(addr, CONNECT_TIMEOUT, cancel)?;
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

/// Connects to every server, runs the job and ends the test on each; a
/// lost connection or a reply out of order ends it with an error naming
/// the server.
pub(crate) fn run(job: &Job<'_>, cancel: Cancel<'_>) -> Result<Tally, String> {
    let n = job.servers.len();
    let mut conns = Vec::with_capacity(n * streams(job));
    for _ in 0..streams(job) {
        for (i, addr) in job.servers.iter().enumerate() {
            conns.push(open(job, addr, cancel).map_err(|e| fail(job, i, e))?);
        }
    }
    // Connection i goes to server i mod n: RPCs still alternate over
    // the servers, then over each server's connections.
    let fail = |i: usize, e| fail(job, i % n, e);
    let tally = Pipeline::new(job)
        .drive(&mut conns, cancel)
        .map_err(|(i, e)| fail(i, e))?;
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(Kind::End, 0, 0, &[], cancel)
            .map_err(|e| fail(i, e))?;
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let h = c.recv_header(cancel).map_err(|e| fail(i, e))?;
        if h.kind != Kind::End {
            return Err(format!(
                "server {}: expected the end of the test, got a {:?} frame",
                job.servers[i % n],
                h.kind
            ));
        }
    }
    Ok(tally)
}

/// Most connections a client opens to one server.
const MAX_STREAMS: usize = 4;
/// Bulk RPCs at least this large spread over several connections.
const STREAM_MIN_BYTES: u32 = 64 << 10;

/// Connections per server: one for ping and small RPCs; for bulk RPCs,
/// one per RPC in flight per server up to [`MAX_STREAMS`], as LNet's
/// socket driver keeps several connections per peer, so that a copy on
/// one does not hold back the next RPC's (the receiving side serves each
/// connection on its own thread).
fn streams(job: &Job<'_>) -> usize {
    let bulk = job.test.request_bytes().max(job.test.reply_bytes());
    if bulk < STREAM_MIN_BYTES {
        return 1;
    }
    (job.slots as usize / job.servers.len().max(1)).clamp(1, MAX_STREAMS)
}

struct Pipeline<'a> {
    live: crate::live::LiveHandle<'a>,
    halt: &'a std::sync::atomic::AtomicBool,
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
    fn new(job: &Job<'a>) -> Pipeline<'a> {
        let mut req = vec![0u8; job.test.request_bytes() as usize];
        pattern::fill(&mut req);
        Pipeline {
            live: job.live.register(),
            halt: job.halt,
            test: job.test,
            op: proto::op_of(&job.test),
            slots: job.slots.max(1),
            quota: job.quota.unwrap_or(u64::MAX),
            deadline: job.deadline,
            corrupt_every: job.corrupt_every,
            req,
            rep: vec![0u8; job.test.reply_bytes() as usize],
            sent_at: vec![Instant::now(); job.slots.max(1) as usize],
            t: Tally {
                rpcs: 0,
                errors: 0,
                rx_bytes: 0,
                tx_bytes: 0,
                elapsed_ns: 0,
                latency: Histogram::new(),
            },
        }
    }

    fn may_issue(&self, issued: u64, now: Instant) -> bool {
        issued < self.quota
            && !matches!(self.deadline, Some(d) if now >= d)
            && !self.halt.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn drive(mut self, conns: &mut [Conn], cancel: Cancel<'_>) -> Result<Tally, (usize, NetError)> {
        let n = conns.len() as u64;
        let on = |tag: u64| (tag % n) as usize;
        let start = Instant::now();
        let mut issued = 0u64;
        while issued < self.slots && self.may_issue(issued, Instant::now()) {
            self.send(&mut conns[on(issued)], issued, cancel)
                .map_err(|e| (on(issued), e))?;
            issued += 1;
        }
        let mut done = 0u64;
        while done < issued {
            self.receive(&mut conns[on(done)], done, cancel)
                .map_err(|e| (on(done), e))?;
            let now = Instant::now();
            let sent = self.sent_at[(done % self.slots) as usize];
            self.t
                .latency
                .record(now.duration_since(sent).as_nanos() as u64);
            done += 1;
            self.t.elapsed_ns = now.duration_since(start).as_nanos() as u64;
            if self.may_issue(issued, now) && !cancel.cancelled() {
                self.send(&mut conns[on(issued)], issued, cancel)
                    .map_err(|e| (on(issued), e))?;
                issued += 1;
            }
        }
        self.t.rpcs = done;
        Ok(self.t)
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

    fn receive(&mut self, c: &mut Conn, tag: u64, cancel: Cancel<'_>) -> Result<(), NetError> {
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
        if h.flags == REPLY_BAD_DATA || !pattern::verify(p, tag, self.test.check()) {
            self.t.errors += 1;
            self.live.error();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{BrwOp, Check};

    #[test]
    fn bulk_rpcs_spread_over_up_to_four_connections_per_server() {
        let live = crate::live::LiveCounters::default();
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
}
