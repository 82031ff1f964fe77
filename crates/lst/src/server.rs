//! The server side of data connections: answer each request, verify
//! write payloads, count. Counters are kept per connection and added to
//! the agent's shared counters when the connection ends (before the
//! final `End` goes back), so the loop takes no lock and touches no
//! shared cache line.

use crate::pattern;
use crate::proto::{self, REPLY_BAD_DATA, REPLY_OK};
use crate::result::ServerStats;
use crate::spec::Test;
use iolab_net::frame::Kind;
use iolab_net::{Cancel, Conn, NetError};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The agent's server counters since the console's last reset.
#[derive(Debug)]
pub struct Counters {
    rpcs: AtomicU64,
    errors: AtomicU64,
    rx_bytes: AtomicU64,
    tx_bytes: AtomicU64,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            rpcs: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            rx_bytes: AtomicU64::new(0),
            tx_bytes: AtomicU64::new(0),
            first_ns: AtomicU64::new(u64::MAX),
            last_ns: AtomicU64::new(0),
        }
    }
}

impl Counters {
    /// Zeroes every counter.
    pub fn reset(&self) {
        for a in [
            &self.rpcs,
            &self.errors,
            &self.rx_bytes,
            &self.tx_bytes,
            &self.last_ns,
        ] {
            a.store(0, Relaxed);
        }
        self.first_ns.store(u64::MAX, Relaxed);
    }

    /// The counters as the console reads them.
    pub fn snapshot(&self) -> ServerStats {
        let (first, last) = (self.first_ns.load(Relaxed), self.last_ns.load(Relaxed));
        ServerStats {
            node: String::new(),
            rpcs: self.rpcs.load(Relaxed),
            errors: self.errors.load(Relaxed),
            rx_bytes: self.rx_bytes.load(Relaxed),
            tx_bytes: self.tx_bytes.load(Relaxed),
            span_ns: last.saturating_sub(first.min(last)),
        }
    }

    fn add(&self, l: &Local) {
        if l.rpcs == 0 {
            return;
        }
        self.rpcs.fetch_add(l.rpcs, Relaxed);
        self.errors.fetch_add(l.errors, Relaxed);
        self.rx_bytes.fetch_add(l.rx_bytes, Relaxed);
        self.tx_bytes.fetch_add(l.tx_bytes, Relaxed);
        self.first_ns.fetch_min(l.first_ns, Relaxed);
        self.last_ns.fetch_max(l.last_ns, Relaxed);
    }
}

#[derive(Default)]
struct Local {
    rpcs: u64,
    errors: u64,
    rx_bytes: u64,
    tx_bytes: u64,
    first_ns: u64,
    last_ns: u64,
}

/// Serves one data connection until the client's `End`, the session's
/// cancel, or an error; the counters are added to `shared` unless the
/// session is over.
pub(crate) fn serve(
    c: &mut Conn,
    test: Test,
    shared: &Counters,
    live: &crate::live::LiveCounters,
    corrupt_every: u64,
    cancel: Cancel<'_>,
) -> Result<(), NetError> {
    c.idle_timeout = Duration::from_secs(30);
    c.max_payload = proto::frame_limit(&test);
    c.payload_crc = proto::payload_crc(&test);
    let mut local = Local::default();
    let r = serve_loop(
        c,
        test,
        &mut local,
        (&live.register(), corrupt_every),
        cancel,
    );
    // A connection cut short by the end of its session must not leak its
    // counts into the next session's first run.
    if !cancel.cancelled() {
        shared.add(&local);
    }
    if r.is_ok() {
        c.send(Kind::End, 0, 0, &[], cancel)?;
    }
    r
}

fn serve_loop(
    c: &mut Conn,
    test: Test,
    l: &mut Local,
    (live, corrupt_every): (&crate::live::LiveHandle<'_>, u64),
    cancel: Cancel<'_>,
) -> Result<(), NetError> {
    let op = proto::op_of(&test);
    let mut req = vec![0u8; test.request_bytes() as usize];
    let mut rep = vec![0u8; test.reply_bytes() as usize];
    pattern::fill(&mut rep);
    let last = rep.len().saturating_sub(1);
    loop {
        let h = c.recv_header(cancel)?;
        if l.rpcs == 0 {
            l.first_ns = iolab_core::clock::mono_ns();
        }
        match h.kind {
            Kind::End => return Ok(()),
            Kind::Data if h.flags == op && h.len as usize == req.len() => {}
            k => {
                return Err(NetError::Protocol(format!(
                    "expected a request of operation {op} with {} bytes, got a {k:?} frame of operation {} with {} bytes",
                    req.len(),
                    h.flags,
                    h.len
                )))
            }
        }
        let p = c.recv_payload(&h, &mut req, cancel)?;
        let ok = pattern::verify(p, h.offset, test.check());
        l.rx_bytes += p.len() as u64;
        live.received(p.len());
        l.errors += u64::from(!ok);
        if !ok {
            live.error();
        }
        pattern::stamp(&mut rep, h.offset);
        let corrupt = !rep.is_empty() && (l.rpcs + 1).checked_rem(corrupt_every) == Some(0);
        if corrupt {
            rep[last] ^= 0x5a;
        }
        let status = if ok { REPLY_OK } else { REPLY_BAD_DATA };
        let r = c.send(Kind::Data, status, h.offset, &rep, cancel);
        if corrupt {
            rep[last] ^= 0x5a;
        }
        r?;
        l.tx_bytes += rep.len() as u64;
        live.sent(rep.len());
        l.rpcs += 1;
        l.last_ns = iolab_core::clock::mono_ns();
    }
}
