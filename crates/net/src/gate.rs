//! Accepting and authenticating many connections at once, on one thread.
//!
//! A server that gave each new connection a thread and waited on its
//! handshake let anyone who can reach the port hold threads (a connect
//! that sends nothing, or a byte now and then) and, when it took its
//! connections one at a time, keep the real peer waiting behind them.
//! A [`Gate`] instead watches its listening sockets and every connection
//! still in its handshake with one `poll(2)`, moves each handshake on as
//! its bytes come, and drops one that is not over within its time (the
//! whole exchange, not each read) or that breaks the protocol. Only a
//! connection that completed the handshake leaves the gate, as a
//! blocking [`Conn`]; a peer that has not proved itself costs one socket
//! and the bytes it sent, never a thread, and delays nobody.
//!
//! ```
//! use iolab_net::gate::{Event, Gate};
//! use iolab_net::{conn, handshake, Cancel};
//! use serde_json::json;
//! use std::time::Duration;
//! let l = conn::listen("127.0.0.1:0").unwrap();
//! let addr = l.local_addr().unwrap().to_string();
//! let client = std::thread::spawn(move || {
//!     let mut c = conn::connect(&addr, Duration::from_secs(10), Cancel::process()).unwrap();
//!     handshake::client(&mut c, "example", &json!({"n": 1}), None, Cancel::process()).unwrap()
//! });
//! let mut gate = Gate::new(vec![l], None, Duration::from_secs(10));
//! let mut judge = |_port: usize, p: &serde_json::Value| {
//!     if p["n"] == 1 { Ok(json!({"n": 2})) } else { Err("n must be 1".to_string()) }
//! };
//! match gate.next(&mut judge, Duration::from_secs(10), Cancel::process()).unwrap() {
//!     Event::Admitted { agreed, .. } => assert_eq!(agreed.peer_params["n"], 1),
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(client.join().unwrap().peer_params["n"], 2);
//! ```

use crate::conn::{Cancel, Conn, POLL};
use crate::frame::{Header, HEADER_BYTES};
use crate::handshake::{Agreed, Opened};
use crate::key::SharedKey;
use crate::seal::Seal;
use crate::NetError;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Connections in their handshake a gate holds by default; past it, the
/// oldest is dropped to make room (a flood then costs the flooder its
/// own connections, while a real peer, which completes its handshake in
/// a round trip, still gets through).
pub const DEFAULT_MAX_PENDING: usize = 1024;

/// Largest handshake message a gate accepts by default: the parameters
/// of every iolab tool fit many times over.
pub const DEFAULT_MAX_HANDSHAKE_BYTES: u32 = 64 << 10;

/// Most connections taken from one listening socket per wake-up, so
/// that a flood on one port does not starve the handshakes in progress.
const ACCEPTS_PER_WAKE: usize = 64;

/// What a gate has to say about one connection.
#[derive(Debug)]
pub enum Event {
    /// The peer completed the handshake and the judge accepted it.
    Admitted {
        /// The connection, blocking, ready for frames.
        conn: Conn,
        /// Who.
        peer: SocketAddr,
        /// Which of the gate's listening sockets it came to.
        listener: usize,
        /// The peer's parameters.
        agreed: Agreed,
    },
    /// The peer proved the key (or none was needed), but the judge
    /// refused its parameters; it was told why, with the same message.
    Refused {
        /// Who.
        peer: SocketAddr,
        /// Which listening socket.
        listener: usize,
        /// The judge's message ([`NetError::Rejected`]).
        error: NetError,
    },
    /// The connection never completed the handshake: it said nothing in
    /// time, trickled, sent something else, or failed the key. It was
    /// closed.
    Dropped {
        /// Who.
        peer: SocketAddr,
        /// Which listening socket.
        listener: usize,
        /// Why.
        error: NetError,
    },
}

/// The judge of a gate: the listening socket's index and the peer's
/// parameters; the parameters to answer with, or the refusal's message.
pub type Judge<'j> = dyn FnMut(usize, &Value) -> Result<Value, String> + 'j;

/// Listening sockets and the connections in their handshake, served by
/// one thread (see the module's documentation).
pub struct Gate {
    listeners: Vec<Option<TcpListener>>,
    key: Option<SharedKey>,
    limit: Duration,
    max_pending: usize,
    max_bytes: u32,
    pending: VecDeque<Pending>,
    ready: VecDeque<Event>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("listeners", &self.listeners.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

/// Where a connection is in its handshake.
enum Step {
    /// Reading the client's hello.
    Hello,
    /// Sending the challenge.
    Challenge(Opened),
    /// Reading the proof.
    Proof(Opened),
    /// Sending the verdict; then the connection leaves as this.
    Verdict(Result<Agreed, NetError>),
}

struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    listener: usize,
    until: Instant,
    step: Step,
    /// The frame being read (header, then payload), or the message
    /// being sent.
    buf: Vec<u8>,
    /// Bytes of `buf` sent so far.
    sent: usize,
    /// The connection's seal once the key is proved: it tags the verdict
    /// and goes with the connection.
    seal: Option<Seal>,
}

/// What moving a handshake on came to.
enum Moved {
    /// Waiting for the peer.
    Waiting,
    /// The verdict went out: what it said.
    Done(Result<Agreed, NetError>),
}

impl Gate {
    /// A gate over `listeners` (made by [`crate::conn::listen`]) whose
    /// peers must hold `key` (none: parameters only) and complete the
    /// handshake within `limit` of connecting.
    pub fn new(listeners: Vec<TcpListener>, key: Option<SharedKey>, limit: Duration) -> Gate {
        Gate {
            listeners: listeners.into_iter().map(Some).collect(),
            key,
            limit,
            max_pending: DEFAULT_MAX_PENDING,
            max_bytes: DEFAULT_MAX_HANDSHAKE_BYTES,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
        }
    }

    /// Holds at most `n` connections in their handshake (at least 1).
    pub fn max_pending(mut self, n: usize) -> Gate {
        self.max_pending = n.max(1);
        self
    }

    /// Connections in their handshake now.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The address listening socket `i` is bound to.
    pub fn local_addr(&self, i: usize) -> Option<SocketAddr> {
        self.listeners.get(i)?.as_ref()?.local_addr().ok()
    }

    /// Stops listening on socket `i` (its port has the peer it needed)
    /// and drops the connections on it still in their handshake.
    pub fn retire(&mut self, i: usize) {
        if let Some(l) = self.listeners.get_mut(i) {
            *l = None;
        }
        self.pending.retain(|p| p.listener != i);
    }

    /// Serves the handshakes until one connection is over (admitted,
    /// refused or dropped), `timeout` passes ([`NetError::Timeout`]) or
    /// `cancel` fires ([`NetError::Cancelled`]).
    pub fn next(
        &mut self,
        judge: &mut Judge<'_>,
        timeout: Duration,
        cancel: Cancel<'_>,
    ) -> Result<Event, NetError> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Ok(e);
            }
            if cancel.cancelled() {
                return Err(NetError::Cancelled);
            }
            let now = Instant::now();
            self.expire(now);
            if let Some(e) = self.ready.pop_front() {
                return Ok(e);
            }
            if now >= until {
                return Err(NetError::Timeout {
                    what: "waiting for a connection",
                });
            }
            self.wait_and_serve(judge, until)?;
        }
    }

    /// Drops the connections whose time is up.
    fn expire(&mut self, now: Instant) {
        let (late, on_time): (Vec<Pending>, Vec<Pending>) =
            self.pending.drain(..).partition(|p| now >= p.until);
        self.pending = on_time.into();
        for p in late {
            self.ready.push_back(Event::Dropped {
                peer: p.peer,
                listener: p.listener,
                error: NetError::Timeout {
                    what: "completing the handshake (it is bounded as a whole)",
                },
            });
        }
    }

    /// One `poll(2)` over the listeners and the pending connections (at
    /// most until the nearest deadline, and [`POLL`] for the cancel
    /// flag), then accepts and moves on what is ready.
    fn wait_and_serve(&mut self, judge: &mut Judge<'_>, until: Instant) -> Result<(), NetError> {
        let mut fds: Vec<libc::pollfd> =
            Vec::with_capacity(self.listeners.len() + self.pending.len());
        for l in self.listeners.iter().flatten() {
            fds.push(pollfd(l.as_raw_fd(), libc::POLLIN));
        }
        let first_pending = fds.len();
        let mut nearest = until;
        for p in &self.pending {
            let ev = match p.step {
                Step::Challenge(_) | Step::Verdict(_) => libc::POLLOUT,
                Step::Hello | Step::Proof(_) => libc::POLLIN,
            };
            fds.push(pollfd(p.stream.as_raw_fd(), ev));
            nearest = nearest.min(p.until);
        }
        let wait = nearest
            .saturating_duration_since(Instant::now())
            .min(POLL)
            .as_millis()
            .max(1);
        // SAFETY: `fds` is a live, initialised array of `fds.len()`
        // pollfd entries that poll may write `revents` into.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait as i32) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(NetError::Io(e)),
            };
        }
        if n == 0 {
            return Ok(());
        }
        // Move the pending connections first: the listeners' new ones
        // go to the back and are not in `fds`.
        let mut keep = VecDeque::with_capacity(self.pending.len());
        for (p, fd) in std::mem::take(&mut self.pending)
            .into_iter()
            .zip(&fds[first_pending..])
        {
            if fd.revents == 0 {
                keep.push_back(p);
                continue;
            }
            self.advance(p, judge, &mut keep);
        }
        self.pending = keep;
        let live: Vec<usize> = (0..self.listeners.len())
            .filter(|&i| self.listeners[i].is_some())
            .collect();
        for (k, i) in live.into_iter().enumerate() {
            if fds[k].revents != 0 {
                self.accept_from(i)?;
            }
        }
        Ok(())
    }

    /// Takes the connections waiting on listener `i`.
    fn accept_from(&mut self, i: usize) -> Result<(), NetError> {
        for _ in 0..ACCEPTS_PER_WAKE {
            let Some(l) = &self.listeners[i] else {
                return Ok(());
            };
            match l.accept() {
                Ok((stream, peer)) => self.admit_pending(stream, peer, i),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if out_of_descriptors(&e) => {
                    // Make room: the oldest handshake goes. With none to
                    // drop, wait a little for the descriptors to free.
                    if self.drop_oldest().is_none() {
                        std::thread::sleep(POLL);
                    }
                    return Ok(());
                }
                // A connection reset before it was taken: go on.
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    /// Starts the handshake of a new connection, making room first.
    fn admit_pending(&mut self, stream: TcpStream, peer: SocketAddr, listener: usize) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        while self.pending.len() >= self.max_pending {
            self.drop_oldest();
        }
        self.pending.push_back(Pending {
            stream,
            peer,
            listener,
            until: Instant::now() + self.limit,
            step: Step::Hello,
            buf: Vec::new(),
            sent: 0,
            seal: None,
        });
    }

    /// Drops the connection that has waited longest.
    fn drop_oldest(&mut self) -> Option<()> {
        let p = self.pending.pop_front()?;
        self.ready.push_back(Event::Dropped {
            peer: p.peer,
            listener: p.listener,
            error: NetError::Protocol(
                "too many connections in their handshake: the oldest was dropped".into(),
            ),
        });
        Some(())
    }

    /// Moves one connection on; it goes back to `keep` while it waits.
    fn advance(&mut self, mut p: Pending, judge: &mut Judge<'_>, keep: &mut VecDeque<Pending>) {
        let r = self.step(&mut p, judge);
        let (peer, listener) = (p.peer, p.listener);
        let event = match r {
            Ok(Moved::Waiting) => return keep.push_back(p),
            Ok(Moved::Done(agreed)) => finish(p, agreed),
            Err(error) => Event::Dropped {
                peer,
                listener,
                error,
            },
        };
        self.ready.push_back(event);
    }

    /// Reads or writes what the connection's step needs, as far as the
    /// socket lets it without blocking, and moves to the next step.
    fn step(&self, p: &mut Pending, judge: &mut Judge<'_>) -> Result<Moved, NetError> {
        loop {
            let step = std::mem::replace(&mut p.step, Step::Hello);
            match step {
                Step::Hello => {
                    let Some((h, body)) = read_frame(p, self.max_bytes)? else {
                        p.step = Step::Hello;
                        return Ok(Moved::Waiting);
                    };
                    let (open, challenge) = Opened::from_hello(h.kind, body, self.key.as_ref())?;
                    p.buf = frame(&challenge, 0, None);
                    p.sent = 0;
                    p.step = Step::Challenge(open);
                }
                Step::Challenge(open) => {
                    if !write_some(p)? {
                        p.step = Step::Challenge(open);
                        return Ok(Moved::Waiting);
                    }
                    p.buf.clear();
                    p.step = Step::Proof(open);
                }
                Step::Proof(open) => {
                    let Some((h, body)) = read_frame(p, self.max_bytes)? else {
                        p.step = Step::Proof(open);
                        return Ok(Moved::Waiting);
                    };
                    let listener = p.listener;
                    p.seal = open.seal(self.key.as_ref());
                    let (verdict, agreed) =
                        open.verdict(h.kind, &body, self.key.as_ref(), |v| judge(listener, v))?;
                    p.buf = frame(&verdict, 1, p.seal.as_mut());
                    p.sent = 0;
                    p.step = Step::Verdict(agreed);
                }
                Step::Verdict(agreed) => {
                    if !write_some(p)? {
                        p.step = Step::Verdict(agreed);
                        return Ok(Moved::Waiting);
                    }
                    return Ok(Moved::Done(agreed));
                }
            }
        }
    }
}

/// The event of a connection whose verdict went out.
fn finish(p: Pending, agreed: Result<Agreed, NetError>) -> Event {
    let (peer, listener) = (p.peer, p.listener);
    match agreed {
        // Numbered on from the challenge and the verdict, as a
        // connection whose handshake ran blocking is.
        Ok(agreed) => match Conn::from_stream(p.stream, 2, p.seal) {
            Ok(conn) => Event::Admitted {
                conn,
                peer,
                listener,
                agreed,
            },
            Err(error) => Event::Dropped {
                peer,
                listener,
                error,
            },
        },
        Err(error @ NetError::Rejected(_)) => Event::Refused {
            peer,
            listener,
            error,
        },
        Err(error) => Event::Dropped {
            peer,
            listener,
            error,
        },
    }
}

fn pollfd(fd: i32, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// EMFILE or ENFILE: no descriptor left for a new connection.
fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

/// Control frame number `seq` (header, payload, and its tag under
/// `seal` when there is one) as bytes to send.
fn frame(payload: &[u8], seq: u64, seal: Option<&mut Seal>) -> Vec<u8> {
    let mut h = Header::unsummed(crate::frame::Kind::Control, 0, 0, seq, payload.len() as u32);
    h.tagged = seal.is_some();
    let head = h.summed(payload).encode();
    let mut v = Vec::with_capacity(HEADER_BYTES + payload.len() + crate::frame::TAG_BYTES);
    v.extend_from_slice(&head);
    v.extend_from_slice(payload);
    if let Some(s) = seal {
        v.extend_from_slice(&s.sign(&head, payload));
    }
    v
}

/// Reads what has come of the frame in `p.buf` (never past its end, so
/// that bytes the peer sends after its handshake stay in the socket).
/// Returns the frame once whole; memory grows only with bytes received.
fn read_frame(p: &mut Pending, max_bytes: u32) -> Result<Option<(Header, Vec<u8>)>, NetError> {
    let mut chunk = [0u8; 4096];
    loop {
        let want = match p.buf.len() {
            n if n < HEADER_BYTES => HEADER_BYTES - n,
            _ => {
                let h = header_of(&p.buf, max_bytes)?;
                let whole = HEADER_BYTES + h.len as usize;
                if h.tagged {
                    // A handshake message is never tagged: no key is
                    // proved yet.
                    return Err(NetError::Protocol(
                        "a tagged frame before the handshake was over".into(),
                    ));
                }
                if p.buf.len() == whole {
                    let body = p.buf.split_off(HEADER_BYTES);
                    p.buf.clear();
                    h.verify(&body)?;
                    return Ok(Some((h, body)));
                }
                whole - p.buf.len()
            }
        };
        let take = want.min(chunk.len());
        match p.stream.read(&mut chunk[..take]) {
            Ok(0) if p.buf.is_empty() => return Err(NetError::Closed),
            Ok(0) => return Err(NetError::Protocol("the peer closed mid-frame".into())),
            Ok(n) => p.buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NetError::Io(e)),
        }
    }
}

fn header_of(buf: &[u8], max_bytes: u32) -> Result<Header, NetError> {
    let mut b = [0u8; HEADER_BYTES];
    b.copy_from_slice(&buf[..HEADER_BYTES]);
    Header::decode(&b, max_bytes)
}

/// Sends what the socket takes of `p.buf`; true once all is sent.
fn write_some(p: &mut Pending) -> Result<bool, NetError> {
    while p.sent < p.buf.len() {
        match p.stream.write(&p.buf[p.sent..]) {
            Ok(0) => return Err(NetError::Closed),
            Ok(n) => p.sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NetError::Io(e)),
        }
    }
    Ok(true)
}
