//! The global clock (XDD's `timeserver` and `gettime`): one host serves
//! its wall clock; every other host estimates its offset to it from the
//! round trip with the smallest delay, the one least disturbed by queues.
//!
//! Each bounce: the client reads its clock (`t0`), asks, the server answers
//! with its clock (`ts`), the client reads its clock again (`t1`). If the
//! path is symmetric, the server read its clock at the client's
//! `(t0 + t1) / 2`, so `offset = ts - (t0 + t1) / 2`, with an error of at
//! most half the round trip. Of `bounces` exchanges the one with the
//! smallest round trip is kept.
//!
//! With a shared key ([`SharedKey`]) on both sides, the connection opens
//! with iolab's keyed handshake ([`crate::handshake`]) and every frame
//! after it, each reply included, carries a tag under its session keys
//! ([`crate::seal`]): an answer from anyone without the key is refused as
//! a forgery. Without a key (XDD's way) anyone who answers on the port
//! sets the global time: [`UNAUTHENTICATED`] is what the tools say then.

use crate::conn::{self, Cancel, Conn};
use crate::frame::Kind;
use crate::handshake;
use crate::key::SharedKey;
use crate::NetError;
use iolab_core::clock::wall_ns;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// XDD's default time server port.
pub const DEFAULT_PORT: u16 = 2000;

/// The result of [`estimate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Global (server) time minus local time, ns.
    pub offset_ns: i64,
    /// The smallest round trip seen, ns: the offset is within half of it.
    pub rtt_ns: u64,
    /// Exchanges made.
    pub bounces: u32,
}

impl Estimate {
    /// The global time now, ns since the Unix epoch.
    pub fn global_now_ns(&self) -> u64 {
        local_to_global(wall_ns(), self.offset_ns)
    }

    /// Local wall time (ns) at which the global clock reads `global_ns`.
    pub fn local_at(&self, global_ns: u64) -> u64 {
        local_to_global(global_ns, -self.offset_ns)
    }

    /// How long until the global clock reads `global_s` (seconds since
    /// the epoch, as gettime prints them): None when it already has, and
    /// [`WaitError::TooFar`] past [`MAX_WAIT_S`].
    pub fn wait_until(&self, global_s: u64) -> Result<Option<Duration>, WaitError> {
        let target_ns = global_s.saturating_mul(1_000_000_000);
        let left_ns = target_ns.saturating_sub(self.global_now_ns());
        if left_ns == 0 {
            return Ok(None);
        }
        let left_s = left_ns.div_ceil(1_000_000_000);
        if left_s > MAX_WAIT_S {
            return Err(WaitError::TooFar { global_s, left_s });
        }
        Ok(Some(Duration::from_nanos(left_ns)))
    }
}

/// The longest wait for a global time iolab takes (`gettime
/// -waitfortime`, `xdd -starttime`), in seconds: a day. Runs are lined
/// up seconds or minutes ahead; a time further off is a mistake (a time
/// in milliseconds, a date typed wrong) that would hold a job for years.
pub const MAX_WAIT_S: u64 = 86_400;

/// A global time that is no time to wait for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    /// Further off than [`MAX_WAIT_S`].
    #[error("the global clock reaches {global_s} in {left_s} s, more than the {MAX_WAIT_S} s (a day) iolab waits: give a time within a day, in seconds since the epoch as gettime prints it")]
    TooFar {
        /// The time asked for, seconds since the epoch.
        global_s: u64,
        /// Seconds until the global clock reaches it.
        left_s: u64,
    },
}

fn local_to_global(t: u64, offset: i64) -> u64 {
    t.saturating_add_signed(offset)
}

/// Clients served at once. A client needs its connection only for its
/// few exchanges (`-bounce`), so when all are taken a new client takes
/// the place of the one connected longest (XDD's server takes 32 and
/// makes the rest wait): a stranger holding every place, with a request
/// now and then to stay clear of the idle timeout, once kept everybody
/// out; now it would have to open a new connection for each one it loses,
/// faster than the clients it keeps out make theirs.
pub const MAX_CLIENTS: usize = 256;

/// Serves the wall clock on `l` until `cancel` fires: one thread per
/// client, each answering until its client leaves, stays idle past the
/// connection's idle timeout, or loses its place to a newer client (at
/// most [`MAX_CLIENTS`] at once, see there).
/// With `key`, a client is answered only once the handshake proved it
/// holds the key, and every answer is tagged; without, as XDD's.
pub fn serve(l: &TcpListener, key: Option<&SharedKey>, cancel: Cancel<'_>) -> Result<(), NetError> {
    use std::collections::VecDeque;
    use std::sync::{Mutex, PoisonError};
    // (client number, its closer), oldest first.
    let places: Mutex<VecDeque<(u64, conn::Closer)>> = Mutex::new(VecDeque::new());
    let mut next = 0u64;
    std::thread::scope(|s| loop {
        let c = match conn::accept(l, Duration::from_secs(3600), cancel) {
            Ok((c, _)) => c,
            Err(NetError::Timeout { .. }) => continue,
            Err(e) => return Err(e),
        };
        let Ok(closer) = c.closer() else {
            continue;
        };
        let id = next;
        next += 1;
        {
            let mut p = places.lock().unwrap_or_else(PoisonError::into_inner);
            if p.len() >= MAX_CLIENTS {
                if let Some((_, oldest)) = p.pop_front() {
                    oldest.close();
                }
            }
            p.push_back((id, closer));
        }
        let places = &places;
        s.spawn(move || {
            answer(c, key, cancel);
            let mut p = places.lock().unwrap_or_else(PoisonError::into_inner);
            p.retain(|(n, _)| *n != id);
        });
    })
}

/// What the tools say when the global time is read or served without a
/// key: one line, on standard error.
pub const UNAUTHENTICATED: &str = "the global time is unauthenticated: without a key (as XDD) whoever answers on the time server's port sets it; give the time server and its clients the same key file (-key FILE, or IOLAB_KEY_FILE)";

/// The largest frame a clock connection takes: a handshake message. A
/// clock request or reading is much smaller ([`REQUEST_MAX`]).
const MESSAGE_MAX: usize = 4096;

/// The largest clock request a server answers, in bytes.
const REQUEST_MAX: usize = 64;

/// How long a client of a keyed server has for its handshake.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);

/// What a keyed server tells a client that came without a key.
const NEEDS_KEY: &str = "this time server requires a key: give gettime (or xdd -timeserver) the same key file as the server (-key FILE, or IOLAB_KEY_FILE)";

/// What a server without a key tells a client that came with one.
const HAS_NO_KEY: &str = "this time server runs without a key: start it with the same key file (-key FILE, or IOLAB_KEY_FILE)";

/// Answers one client's clock requests, once it proved `key` (if any).
fn answer(mut c: Conn, key: Option<&SharedKey>, cancel: Cancel<'_>) {
    c.max_payload = MESSAGE_MAX as u32;
    if let Some(k) = key {
        if admit(&mut c, k, cancel).is_err() {
            return;
        }
    }
    let mut buf = [0u8; MESSAGE_MAX];
    while let Ok(h) = c.recv_header(cancel) {
        let Ok(p) = c.recv_payload(&h, &mut buf, cancel) else {
            return;
        };
        if h.kind != Kind::Control || p.len() > REQUEST_MAX {
            // A keyed client's hello (JSON) is told why it gets no answer.
            if key.is_none() && p.first() == Some(&b'{') {
                let _ = c.send(Kind::Error, 0, 0, HAS_NO_KEY.as_bytes(), cancel);
            }
            return;
        }
        let now = wall_ns().to_le_bytes();
        if c.send(Kind::Control, 0, h.offset, &now, cancel).is_err() {
            return;
        }
    }
}

/// A keyed server's handshake with one client, bounded by
/// [`HANDSHAKE_WAIT`]: a client without the key is refused (one that
/// sent a bare clock request is told it needs a key).
fn admit(c: &mut Conn, key: &SharedKey, cancel: Cancel<'_>) -> Result<(), NetError> {
    let idle = c.idle_timeout;
    c.idle_timeout = HANDSHAKE_WAIT;
    let params = serde_json::json!({});
    let r = handshake::server(c, &params, Some(key), |_| Ok(()), cancel);
    c.idle_timeout = idle;
    if let Err(NetError::Protocol(_)) = &r {
        let _ = c.send(Kind::Error, 0, 0, NEEDS_KEY.as_bytes(), cancel);
    }
    r.map(drop)
}

/// The farthest the server's clock may be from this host's, in seconds
/// (a day): hosts that line up their runs agree within seconds, and a
/// clock set to another time zone's hours still passes. A reply further
/// off is a clock that is wrong, or a program on the port that is no
/// time server; taken as the global time, it would have `-waitfortime`
/// and `-starttime` wait for decades.
pub const MAX_OFFSET_S: u64 = 86_400;

/// What a clock exchange past its bound timed out doing.
const EXCHANGE: &str = "waiting for the clock's answer (each exchange, and all of them together, are bounded by the timeout as a whole)";

/// Estimates this host's offset to the server at `addr` from `bounces`
/// exchanges (at least 1). Every wait is bounded by `timeout`: the
/// connect (with the usual bounded retry), each exchange as a whole (a
/// server that trickles its answer a byte at a time is given up then,
/// not after a read timeout per byte), and all the exchanges together,
/// the handshake with them: when that time is up, the exchanges made so
/// far give the estimate (its `bounces` says how many), and none is a
/// timeout. With `key`, the server must prove it and every reply must
/// carry its tag: one that does not is refused as a forgery.
pub fn estimate(
    addr: &str,
    bounces: u32,
    timeout: Duration,
    key: Option<&SharedKey>,
    cancel: Cancel<'_>,
) -> Result<Estimate, NetError> {
    let mut c = conn::connect(addr, timeout, cancel).map_err(|e| {
        e.hinted(" (is `iolab timeserver` running there, on that port? start it there with `iolab timeserver -port N`)")
    })?;
    c.idle_timeout = timeout;
    c.max_payload = MESSAGE_MAX as u32;
    let until = Instant::now() + timeout;
    if let Some(k) = key {
        handshake::client(&mut c, "gettime", &serde_json::json!({}), Some(k), cancel)
            .map_err(forged)?;
    }
    let best = exchanges(&mut c, bounces, until, cancel).map_err(|e| match e {
        e @ NetError::Forged { .. } => forged(e),
        e => e,
    });
    c.shutdown();
    best
}

/// `bounces` exchanges (at least 1) until `until`: the one with the
/// shortest round trip.
fn exchanges(
    c: &mut Conn,
    bounces: u32,
    until: Instant,
    cancel: Cancel<'_>,
) -> Result<Estimate, NetError> {
    let mut best: Option<Estimate> = None;
    for i in 0..bounces.max(1) {
        let left = until.saturating_duration_since(Instant::now());
        let e = match exchange(c, i, left, cancel) {
            Ok(e) => e,
            Err(NetError::Timeout { .. }) if best.is_some() => break,
            Err(e) => return Err(e),
        };
        best = match best {
            Some(b) if b.rtt_ns <= e.rtt_ns => Some(Estimate {
                bounces: e.bounces,
                ..b
            }),
            _ => Some(e),
        };
    }
    best.ok_or(NetError::Timeout { what: EXCHANGE })
}

/// A keyed client's failure to authenticate the server (its handshake,
/// or a reply's tag), said as what it is: the answer is taken for a
/// forgery. A timeout, a closed or unreachable server is left as it is.
fn forged(e: NetError) -> NetError {
    let why = match e {
        // Said without its own "authentication failed: ".
        NetError::Auth(why) => why,
        NetError::Protocol(_)
        | NetError::Rejected(_)
        | NetError::Forged { .. }
        | NetError::TooLarge { .. }
        | NetError::Checksum { .. } => e.to_string(),
        e => return e,
    };
    NetError::Auth(format!(
        "the time server's answer does not prove the key, so it is refused as a forgery (whoever answered does not hold this key: another program, or a time server run with another key or none): {why}"
    ))
}

/// Exchange `i`, over within `whole` or timed out.
fn exchange(
    c: &mut Conn,
    i: u32,
    whole: Duration,
    cancel: Cancel<'_>,
) -> Result<Estimate, NetError> {
    c.bound_by(whole, EXCHANGE);
    let r = exchange_unbounded(c, i, cancel);
    c.unbound();
    r
}

fn exchange_unbounded(c: &mut Conn, i: u32, cancel: Cancel<'_>) -> Result<Estimate, NetError> {
    let mut buf = [0u8; MESSAGE_MAX];
    let t0 = wall_ns();
    c.send(Kind::Control, 0, u64::from(i), b"t", cancel)?;
    let h = c.recv_header(cancel)?;
    let p = c.recv_payload(&h, &mut buf, cancel)?;
    let t1 = wall_ns();
    match h.kind {
        Kind::Control => {}
        Kind::Error => {
            return Err(NetError::Rejected(format!(
                "the time server refused: {}",
                crate::peer_text(p)
            )))
        }
        k => {
            return Err(NetError::Protocol(format!(
                "the reply to clock request {i} is a frame of kind {k:?}, not a clock reading: is `iolab timeserver` what listens there?"
            )))
        }
    }
    // The server echoes each request's number: another is a reply to
    // some other request, or no time server's.
    if h.offset != u64::from(i) {
        return Err(NetError::Protocol(format!(
            "the clock's reply answers request {}, not request {i}: is `iolab timeserver` what listens there?",
            h.offset
        )));
    }
    let ts = u64::from_le_bytes(
        p.try_into()
            .map_err(|_| NetError::Protocol("a clock reply must be 8 bytes".into()))?,
    );
    let mid = t0 / 2 + t1 / 2 + (t0 % 2 + t1 % 2) / 2;
    // A server's time is read as it is sent (u64 ns since the epoch);
    // one more than 2^63 - 1 ns (the year 2262) is no clock's.
    let ts = i64::try_from(ts)
        .map_err(|_| NetError::Protocol(format!("a clock reply of {ts} ns is past 2262")))?;
    let offset_ns = ts.saturating_sub(mid as i64);
    plausible(ts, mid, offset_ns)?;
    Ok(Estimate {
        offset_ns,
        rtt_ns: t1.saturating_sub(t0),
        bounces: i + 1,
    })
}

/// Refuses a server time more than [`MAX_OFFSET_S`] from this host's
/// (`mid`, ns): see there.
fn plausible(ts: i64, mid: u64, offset_ns: i64) -> Result<(), NetError> {
    let off_s = offset_ns.unsigned_abs() / 1_000_000_000;
    if off_s <= MAX_OFFSET_S {
        return Ok(());
    }
    Err(NetError::Protocol(format!(
        "the server's clock reads {} s since the epoch, {off_s} s {} this host's ({} s): more than the {MAX_OFFSET_S} s (a day) iolab takes for a clock's offset; one of the two clocks is wrong (set it right, with NTP), or what listens there is no time server",
        ts / 1_000_000_000,
        if offset_ns < 0 { "behind" } else { "ahead of" },
        mid / 1_000_000_000
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server whose clock reads `reply`, answering one request.
    fn answering(reply: u64) -> String {
        replying(Kind::Control, 0, Some(reply))
    }

    /// A server answering one request with a frame of `kind` whose
    /// echoed request number is `shift` past the request's, carrying
    /// `reading` (or nothing).
    fn replying(kind: Kind, shift: u64, reading: Option<u64>) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let cancel = Cancel::process();
            let (mut c, _) = conn::accept(&l, Duration::from_secs(10), cancel).unwrap();
            let mut buf = [0u8; 64];
            let h = c.recv_header(cancel).unwrap();
            c.recv_payload(&h, &mut buf, cancel).unwrap();
            let bytes = reading.map(u64::to_le_bytes);
            let payload = bytes.as_ref().map_or(&[][..], |b| &b[..]);
            let _ = c.send(kind, 0, h.offset + shift, payload, cancel);
        });
        addr
    }

    #[test]
    fn a_reply_past_2262_is_a_protocol_error_not_a_panic() {
        for reply in [1 << 63, u64::MAX] {
            let addr = answering(reply);
            let e =
                estimate(&addr, 1, Duration::from_secs(10), None, Cancel::process()).unwrap_err();
            assert!(e.to_string().contains("past 2262"), "{reply}: {e}");
        }
        let addr = answering(wall_ns());
        let e = estimate(&addr, 1, Duration::from_secs(10), None, Cancel::process()).unwrap();
        assert!(e.offset_ns.unsigned_abs() < 60_000_000_000, "{e:?}");
    }

    /// A server that answers 0 (1970), or a time two days ahead, is no
    /// clock to wait on: refused, naming the bound. Before, `gettime`
    /// printed "Global Time now is 0" and `-waitfortime` waited for 57
    /// years. Within the bound (an hour off) is taken.
    #[test]
    fn a_reply_more_than_a_day_off_is_refused() {
        let day_ns = MAX_OFFSET_S * 1_000_000_000;
        for reply in [0, wall_ns() + 2 * day_ns, wall_ns() - 2 * day_ns] {
            let addr = answering(reply);
            let e =
                estimate(&addr, 1, Duration::from_secs(10), None, Cancel::process()).unwrap_err();
            assert!(
                e.to_string().contains("more than the 86400 s"),
                "{reply}: {e}"
            );
        }
        let hour_ns = 3_600_000_000_000;
        let addr = answering(wall_ns() + hour_ns);
        let e = estimate(&addr, 1, Duration::from_secs(10), None, Cancel::process()).unwrap();
        assert!(e.offset_ns > 3_590_000_000_000, "{e:?}");
    }

    /// A reply of another kind than a clock reading says so, not that it
    /// answers another request: the message was once "answers request 0
    /// (End frame), not request 0", contradicting itself.
    #[test]
    fn a_reply_of_another_kind_is_named_by_its_kind() {
        let addr = replying(Kind::End, 0, None);
        let e = estimate(&addr, 1, Duration::from_secs(10), None, Cancel::process()).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("request 0 is a frame of kind End"), "{e}");
        assert!(!e.contains("not request"), "{e}");
    }

    /// A reply whose echoed request number is not the request's is
    /// refused: it answers some other request, or is no time server's.
    #[test]
    fn a_reply_to_another_request_is_refused() {
        let addr = replying(Kind::Control, 7, Some(wall_ns()));
        let e = estimate(&addr, 1, Duration::from_secs(10), None, Cancel::process()).unwrap_err();
        assert!(e.to_string().contains("not request 0"), "{e}");
    }
}
