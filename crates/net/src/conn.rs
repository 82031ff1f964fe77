//! A framed TCP connection whose every wait is bounded and cancellable:
//! reads and writes wake at least every [`POLL`] to look at the cancel
//! flag and the deadline, connects retry for a bounded time, and accepts
//! give up at a deadline. No call can block forever.

use crate::frame::TAG_BYTES;
use crate::frame::{Header, Kind, PayloadSum, HEADER_BYTES};
use crate::seal::Seal;
use crate::NetError;
use iolab_core::CancelToken;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a blocked read, write, connect or accept wakes to look at the
/// cancel flag.
pub const POLL: Duration = Duration::from_millis(100);

/// Largest payload accepted by default (a request of XDD's is at most this).
pub const DEFAULT_MAX_PAYLOAD: u32 = 64 << 20;

/// Stops a wait: a run's cancellation token (Ctrl-C, SIGTERM: the
/// session's), or the process-wide stop request where there is no run
/// to hand one (an agent, a daemon, a tool outside the runner), and a
/// run's own flag (a peer thread failed).
#[derive(Debug, Clone, Copy)]
pub struct Cancel<'a> {
    token: Option<&'a CancelToken>,
    local: Option<&'a AtomicBool>,
}

impl<'a> Cancel<'a> {
    /// Only the process-wide stop request cancels: for what runs
    /// outside a session (an agent, the lst daemon), whose process root
    /// is that flag.
    pub fn process() -> Cancel<'static> {
        Cancel {
            token: None,
            local: None,
        }
    }

    /// The process-wide request or `flag`.
    pub fn with(flag: &'a AtomicBool) -> Cancel<'a> {
        Cancel {
            token: None,
            local: Some(flag),
        }
    }

    /// The run's `token`.
    pub fn token(token: &'a CancelToken) -> Cancel<'a> {
        Cancel {
            token: Some(token),
            local: None,
        }
    }

    /// The run's `token` or `flag`.
    pub fn token_with(token: &'a CancelToken, flag: &'a AtomicBool) -> Cancel<'a> {
        Cancel {
            token: Some(token),
            local: Some(flag),
        }
    }

    /// True once the wait should stop.
    pub fn cancelled(&self) -> bool {
        let run = match self.token {
            Some(t) => t.is_cancelled(),
            // No run's token: the process's root is the stop flag.
            None => iolab_core::stop::requested(),
        };
        run || self.local.is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Binds `addr`; the error names the address and says what to do when the
/// port is taken.
pub fn listen(addr: &str) -> Result<TcpListener, NetError> {
    let l = TcpListener::bind(addr).map_err(|source| NetError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    l.set_nonblocking(true).map_err(NetError::Io)?;
    Ok(l)
}

/// Waits for one connection until `timeout` passes or `cancel` fires.
pub fn accept(
    l: &TcpListener,
    timeout: Duration,
    cancel: Cancel<'_>,
) -> Result<(Conn, SocketAddr), NetError> {
    let until = Instant::now() + timeout;
    loop {
        match l.accept() {
            Ok((s, peer)) => return Ok((Conn::new(s)?, peer)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NetError::Io(e)),
        }
        check(until, cancel, "waiting for a connection")?;
        std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
    }
}

/// Connects to `addr` (`host:port`), retrying refused or unreachable
/// attempts until `timeout`: the peer may still be starting. The error
/// names the host and port.
pub fn connect(addr: &str, timeout: Duration, cancel: Cancel<'_>) -> Result<Conn, NetError> {
    let until = Instant::now() + timeout;
    let mut last: Option<io::Error> = None;
    loop {
        if let Some(s) = try_connect(addr, until, &mut last)? {
            return Conn::new(s);
        }
        if cancel.cancelled() {
            return Err(NetError::Cancelled);
        }
        if Instant::now() >= until {
            return Err(NetError::Connect {
                addr: addr.to_string(),
                waited_s: timeout.as_secs_f64(),
                source: last.unwrap_or_else(|| io::Error::from(io::ErrorKind::TimedOut)),
                hint: "",
            });
        }
        std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
    }
}

/// One attempt over every address `addr` resolves to.
fn try_connect(
    addr: &str,
    until: Instant,
    last: &mut Option<io::Error>,
) -> Result<Option<TcpStream>, NetError> {
    let addrs = addr.to_socket_addrs().map_err(|source| NetError::Resolve {
        addr: addr.to_string(),
        source,
    })?;
    for a in addrs {
        let left = until
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(10));
        match TcpStream::connect_timeout(&a, left.min(Duration::from_secs(5))) {
            Ok(s) => return Ok(Some(s)),
            Err(e) => *last = Some(e),
        }
    }
    Ok(None)
}

fn check(until: Instant, cancel: Cancel<'_>, what: &'static str) -> Result<(), NetError> {
    if cancel.cancelled() {
        return Err(NetError::Cancelled);
    }
    if Instant::now() >= until {
        return Err(NetError::Timeout { what });
    }
    Ok(())
}

/// A connected stream that sends and receives frames.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    /// Frames sent so far (the next frame's sequence number).
    pub sent: u64,
    /// Largest payload this side accepts.
    pub max_payload: u32,
    /// How long one frame may take to arrive or leave before the peer is
    /// declared gone.
    pub idle_timeout: Duration,
    /// Checksum payloads (the default). When false, frames sent carry a
    /// header-only CRC and such frames are accepted; when true, a frame
    /// without a payload CRC is refused. Both sides must agree (the
    /// handshake's parameters are the place).
    pub payload_crc: bool,
    /// While an exchange bounded as a whole runs (a handshake, a clock
    /// exchange): the time by which it must be over, whatever the peer
    /// sends meanwhile (`idle_timeout` alone would let a peer that sends
    /// a byte now and then hold the connection open), and what it is.
    deadline: Option<(Instant, &'static str)>,
    /// After a keyed handshake: the session keys that tag every frame
    /// sent and check every frame received ([`crate::seal`]); boxed, as
    /// its hash keys' powers are large for a value moved around.
    seal: Option<Box<Seal>>,
    /// [`Conn::damage_next`]: the next frame with a payload leaves with
    /// one bit of it flipped.
    damage: bool,
}

impl Conn {
    fn new(stream: TcpStream) -> Result<Conn, NetError> {
        stream.set_nonblocking(false).map_err(NetError::Io)?;
        stream.set_nodelay(true).map_err(NetError::Io)?;
        stream.set_read_timeout(Some(POLL)).map_err(NetError::Io)?;
        stream.set_write_timeout(Some(POLL)).map_err(NetError::Io)?;
        Ok(Conn {
            stream,
            sent: 0,
            max_payload: DEFAULT_MAX_PAYLOAD,
            idle_timeout: Duration::from_secs(60),
            payload_crc: true,
            deadline: None,
            seal: None,
            damage: false,
        })
    }

    /// Makes `stream` (a connection a [`crate::gate::Gate`] accepted and
    /// authenticated, having sent `sent` frames, sealed with `seal` when
    /// a key was proved) a framed connection.
    pub(crate) fn from_stream(
        stream: TcpStream,
        sent: u64,
        seal: Option<Seal>,
    ) -> Result<Conn, NetError> {
        let mut c = Conn::new(stream)?;
        c.sent = sent;
        c.seal = seal.map(Box::new);
        Ok(c)
    }

    /// From now on every frame sent is tagged and every frame received
    /// must be, under `seal` (the handshake, once both sides proved the
    /// key).
    pub(crate) fn seal_with(&mut self, seal: Seal) {
        self.seal = Some(Box::new(seal));
    }

    /// True once frames on this connection are authenticated (the
    /// handshake proved a shared key): each carries a tag that is checked
    /// before its payload is handed over.
    pub fn sealed(&self) -> bool {
        self.seal.is_some()
    }

    /// Bounds every wait from now on by `now + whole`, until
    /// [`Conn::unbound`]: an exchange's bound as a whole (`what` it is,
    /// for the timeout's message: "timed out WHAT").
    pub(crate) fn bound_by(&mut self, whole: Duration, what: &'static str) {
        self.deadline = Some((Instant::now() + whole, what));
    }

    /// Lifts [`Conn::bound_by`]'s bound.
    pub(crate) fn unbound(&mut self) {
        self.deadline = None;
    }

    /// The sooner of `until` and the bounded exchange's deadline.
    fn bounded(&self, until: Instant) -> Instant {
        self.deadline.map_or(until, |(d, _)| d.min(until))
    }

    /// An exchange whose time is up, even while bytes still trickle in.
    fn past_deadline(&self) -> Result<(), NetError> {
        match self.deadline {
            Some((d, what)) if Instant::now() >= d => Err(NetError::Timeout { what }),
            _ => Ok(()),
        }
    }

    /// The peer's address.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.stream.peer_addr().ok()
    }

    /// Sends one frame (header and payload in one vectored write where the
    /// kernel takes it) and returns its sequence number.
    pub fn send(
        &mut self,
        kind: Kind,
        flags: u8,
        offset: u64,
        payload: &[u8],
        cancel: Cancel<'_>,
    ) -> Result<u64, NetError> {
        if payload.len() > self.max_payload as usize {
            return Err(NetError::TooLarge {
                len: payload.len().min(u32::MAX as usize) as u32,
                max: self.max_payload,
            });
        }
        let seq = self.sent;
        let mut h = Header::unsummed(kind, flags, offset, seq, payload.len() as u32);
        h.unchecked = !self.payload_crc;
        h.tagged = self.seal.is_some();
        self.write_frame(h.summed(payload), payload, cancel)
    }

    /// Writes a frame whose header is complete, with its tag when the
    /// connection is sealed; counts it. Returns its sequence number.
    fn write_frame(
        &mut self,
        h: Header,
        payload: &[u8],
        cancel: Cancel<'_>,
    ) -> Result<u64, NetError> {
        let head = h.encode();
        let tag = match self.seal.as_mut() {
            Some(s) => s.sign(&head, payload),
            None => [0u8; TAG_BYTES],
        };
        let tag = if h.tagged { &tag[..] } else { &[][..] };
        let mut flipped = [0u8; 1];
        let parts = match payload.len() {
            n if self.damage && n > 0 => {
                self.damage = false;
                flipped[0] = payload[n / 2] ^ 1;
                [
                    &head[..],
                    &payload[..n / 2],
                    &flipped,
                    &payload[n / 2 + 1..],
                    tag,
                ]
            }
            _ => [&head[..], payload, &[], &[], tag],
        };
        self.write_all(parts, cancel)?;
        self.sent += 1;
        Ok(h.seq)
    }

    /// For integrity tests: the next frame sent with a payload leaves
    /// with one bit of its payload flipped after its CRC and, on a
    /// sealed connection, its tag were taken, as damage on the wire
    /// would leave it. The receiver must tell it as a checksum error.
    pub fn damage_next(&mut self) {
        self.damage = true;
    }

    /// Sends one checked frame whose payload was summed once
    /// ([`PayloadSum`] of exactly these bytes), so that a payload sent
    /// many times unchanged is not read again for its checksum. The
    /// frame is the one [`Conn::send`] would send. Returns the sequence
    /// number.
    pub fn send_summed(
        &mut self,
        kind: Kind,
        flags: u8,
        offset: u64,
        payload: &[u8],
        sum: &PayloadSum,
        cancel: Cancel<'_>,
    ) -> Result<u64, NetError> {
        let mismatched = payload.len() != sum.len() as usize;
        if mismatched || payload.len() > self.max_payload as usize || !self.payload_crc {
            return self.send(kind, flags, offset, payload, cancel);
        }
        // The CRC from the sum; a tag, when sealed, reads the payload all
        // the same (a MAC must).
        let mut h = Header::unsummed(kind, flags, offset, self.sent, sum.len());
        h.tagged = self.seal.is_some();
        self.write_frame(h.summed_once(sum), payload, cancel)
    }

    /// Asks the kernel for send and receive buffers of `bytes` each (it
    /// may cap them at `net.core.wmem_max`/`rmem_max`). Only worth it
    /// when that cap is above what TCP's own tuning reaches; returns the
    /// sizes granted (send, receive).
    pub fn set_buffers(&self, bytes: usize) -> Result<(usize, usize), NetError> {
        let fd = self.stream.as_raw_fd();
        let set = |opt: libc::c_int| -> std::io::Result<usize> {
            let v = bytes.min(i32::MAX as usize) as libc::c_int;
            let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: fd is this stream's open socket; `v` lives across
            // the call and `len` is its size.
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&v as *const libc::c_int).cast(),
                    len,
                )
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut got: libc::c_int = 0;
            let mut glen = len;
            // SAFETY: as above; `got` and `glen` are writable and sized.
            let r = unsafe {
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&mut got as *mut libc::c_int).cast(),
                    &mut glen,
                )
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(got.max(0) as usize)
        };
        Ok((set(libc::SO_SNDBUF)?, set(libc::SO_RCVBUF)?))
    }

    /// Writes `parts` in order, in vectored writes.
    fn write_all(&mut self, mut parts: [&[u8]; 5], cancel: Cancel<'_>) -> Result<(), NetError> {
        let until = self.bounded(Instant::now() + self.idle_timeout);
        while parts.iter().any(|p| !p.is_empty()) {
            let slices = parts.map(IoSlice::new);
            match self.stream.write_vectored(&slices) {
                Ok(0) => return Err(NetError::Closed),
                Ok(mut n) => {
                    for p in parts.iter_mut() {
                        let from = n.min(p.len());
                        *p = &p[from..];
                        n -= from;
                    }
                    self.past_deadline()?;
                }
                Err(e) if waits(&e) => {
                    self.past_deadline()?;
                    check(until, cancel, "sending to the peer")?
                }
                Err(e) => return Err(NetError::Io(e)),
            }
        }
        Ok(())
    }

    /// Receives one header. A peer that closed cleanly between frames is
    /// [`NetError::Closed`]. On a sealed connection a frame without a
    /// payload (an End) is checked whole here, its tag included: its
    /// header is all it says.
    pub fn recv_header(&mut self, cancel: Cancel<'_>) -> Result<Header, NetError> {
        let mut b = [0u8; HEADER_BYTES];
        self.read_exact(&mut b, cancel)?;
        let h = Header::decode(&b, self.max_payload)?;
        match (h.tagged, self.seal.is_some()) {
            (false, true) => {
                return Err(NetError::Forged {
                    offset: h.offset,
                    seq: h.seq,
                })
            }
            (true, false) => {
                return Err(NetError::Protocol(format!(
                    "frame {} carries an authentication tag, but this connection has no key",
                    h.seq
                )))
            }
            _ => {}
        }
        if h.tagged && h.len == 0 {
            self.check_tag(&h, &[], cancel)?;
        }
        Ok(h)
    }

    /// Reads the tag that follows `h`'s payload and checks it. A tag
    /// that holds covers the header and payload as sent, CRC included,
    /// so the CRC is not taken again; one that fails is damage when the
    /// CRC fails too (a checksum error), else a forgery.
    fn check_tag(
        &mut self,
        h: &Header,
        payload: &[u8],
        cancel: Cancel<'_>,
    ) -> Result<(), NetError> {
        let mut tag = [0u8; TAG_BYTES];
        self.read_exact(&mut tag, cancel)?;
        let held = self
            .seal
            .as_mut()
            .is_some_and(|s| s.check(&h.encode(), payload, &tag));
        if held {
            return Ok(());
        }
        h.verify(payload)?;
        Err(NetError::Forged {
            offset: h.offset,
            seq: h.seq,
        })
    }

    /// Receives `h`'s payload into `buf[..h.len]` and checks it: its CRC,
    /// or on a sealed connection its tag (and the CRC only when the tag
    /// fails, to tell damage from forgery): nothing is handed over that
    /// fails.
    pub fn recv_payload<'b>(
        &mut self,
        h: &Header,
        buf: &'b mut [u8],
        cancel: Cancel<'_>,
    ) -> Result<&'b [u8], NetError> {
        let len = h.len as usize;
        if buf.len() < len {
            return Err(NetError::TooLarge {
                len: h.len,
                max: buf.len().min(u32::MAX as usize) as u32,
            });
        }
        self.read_exact(&mut buf[..len], cancel)?;
        if h.unchecked && self.payload_crc {
            return Err(NetError::Protocol(format!(
                "frame {} carries no payload checksum, which this side requires",
                h.seq
            )));
        }
        // An empty frame was checked with its header; a tagged one's tag
        // stands for its CRC.
        match (h.tagged, len) {
            (true, 0) => {}
            (true, _) => self.check_tag(h, &buf[..len], cancel)?,
            (false, _) => h.verify(&buf[..len])?,
        }
        Ok(&buf[..len])
    }

    /// Receives a whole frame into a new vector (control messages only;
    /// data goes through [`Conn::recv_payload`] into a reused buffer).
    pub fn recv_owned(&mut self, cancel: Cancel<'_>) -> Result<(Header, Vec<u8>), NetError> {
        let h = self.recv_header(cancel)?;
        let mut v = vec![0u8; h.len as usize];
        self.recv_payload(&h, &mut v, cancel)?;
        Ok((h, v))
    }

    fn read_exact(&mut self, mut buf: &mut [u8], cancel: Cancel<'_>) -> Result<(), NetError> {
        let mut until = self.bounded(Instant::now() + self.idle_timeout);
        let whole = buf.len();
        while !buf.is_empty() {
            match self.stream.read(buf) {
                Ok(0) if buf.len() == whole => return Err(NetError::Closed),
                Ok(0) => return Err(NetError::Protocol("the peer closed mid-frame".into())),
                Ok(n) => {
                    buf = &mut buf[n..];
                    until = self.bounded(Instant::now() + self.idle_timeout);
                    self.past_deadline()?;
                }
                Err(e) if waits(&e) => {
                    self.past_deadline()?;
                    check(until, cancel, "waiting for the peer")?
                }
                Err(e) => return Err(NetError::Io(e)),
            }
        }
        Ok(())
    }

    /// True when the peer has closed the connection or it failed, seen
    /// without waiting and without taking any byte the peer sent: for a
    /// side that holds a connection it is not reading yet (a copy's
    /// first connections while the others are still being set up).
    pub fn peer_gone(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.stream.as_raw_fd(),
            events: libc::POLLIN | libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one initialised pollfd, a zero timeout.
        let n = unsafe { libc::poll(&mut fd, 1, 0) };
        if n <= 0 {
            return false;
        }
        if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLRDHUP) != 0 {
            return true;
        }
        let mut b = [0u8; 1];
        matches!(self.stream.peek(&mut b), Ok(0))
    }

    /// Shuts the connection down in both directions.
    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// A handle that shuts this connection down from another thread (a
    /// server evicting a client): the thread serving it then sees its
    /// next read or write fail, and ends.
    pub fn closer(&self) -> io::Result<Closer> {
        self.stream.try_clone().map(Closer)
    }
}

/// Shuts a connection down from outside ([`Conn::closer`]).
#[derive(Debug)]
pub struct Closer(TcpStream);

impl Closer {
    /// Shuts the connection down in both directions.
    pub fn close(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// A read or write that timed out (our poll interval) or was interrupted:
/// look at the flags and go on.
fn waits(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
