//! A small fault-injecting HTTP/1.1 proxy for tests: it sits on a
//! loopback port in front of a real server (SeaweedFS) and passes
//! requests through, except every `every`-th request, which meets the
//! chosen fault instead: a 503 SlowDown answer, a connection reset
//! (RST), a connection closed without an answer, or a delay before the
//! request is passed on. It counts requests, faults, and the bytes of
//! request bodies it passed, so a test can hold a client's figures
//! against what reached the server.
//!
//! The client must not pipeline (send a request before the previous
//! answer came), as no S3 client does; request bodies must carry a
//! Content-Length. Answers are copied through as bytes.
//!
//! ```no_run
//! use iolab_testkit::fault_proxy::{Fault, FaultProxy};
//! let p = FaultProxy::start("127.0.0.1:8333".parse().unwrap(), Fault::SlowDown, 3).unwrap();
//! println!("send to {}", p.endpoint());
//! ```

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a faulted request meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// An answer `503 Slow Down` with S3's `SlowDown` error document.
    SlowDown,
    /// The connection is reset (RST) instead of an answer.
    Reset,
    /// The connection is closed (FIN) without an answer.
    Drop,
    /// The request is passed on after this long.
    Delay(Duration),
    /// The request is passed on without its `If-None-Match` header, as
    /// to a service without conditional writes.
    StripIfNoneMatch,
    /// A POST (CompleteMultipartUpload) carrying `If-None-Match` is
    /// answered `501 Not Implemented`, as by a service with conditional
    /// PUTs only; other requests pass (and are not counted as faults).
    RefuseConditionalPost,
    /// A GET or HEAD of an object (not a listing, not the bucket) is
    /// answered `307 Temporary Redirect` to the same path at this
    /// address, as by a service sending a client elsewhere; other
    /// requests pass (and are not counted as faults).
    RedirectReads(SocketAddr),
}

impl Fault {
    /// Whether the fault is for this request (`head`: its header block).
    fn applies(self, head: &[u8]) -> bool {
        match self {
            Fault::RefuseConditionalPost => {
                head.starts_with(b"POST ") && !strip_header(head, "if-none-match").eq(head)
            }
            Fault::RedirectReads(_) => {
                let (method, path) = method_and_path(head);
                let object = path
                    .trim_start_matches('/')
                    .split_once('/')
                    .is_some_and(|(_, key)| !key.is_empty() && !key.starts_with('?'));
                matches!(method, "GET" | "HEAD") && object && !path.contains("list-type=")
            }
            _ => true,
        }
    }
}

/// The method and the target of a request's first line.
fn method_and_path(head: &[u8]) -> (&str, &str) {
    let line = head.split(|&b| b == b'\r').next().unwrap_or(&[]);
    let line = std::str::from_utf8(line).unwrap_or("");
    let mut words = line.split(' ');
    (words.next().unwrap_or(""), words.next().unwrap_or(""))
}

/// Longest header block read from a client.
const MAX_HEAD: usize = 64 * 1024;
/// Bound on every socket wait of the proxy.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    faults: AtomicU64,
    body_bytes: AtomicU64,
    /// Requests by kind, in [`Kinds`] order.
    kinds: [AtomicU64; 6],
    stop: AtomicBool,
}

/// Requests by kind, as an S3 server sees them: a GET of the bucket
/// with `list-type` is a LIST, every other request counts by its method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kinds {
    /// GETs of objects.
    pub get: u64,
    /// PUTs (objects, parts, buckets).
    pub put: u64,
    /// HEADs.
    pub head: u64,
    /// DELETEs.
    pub delete: u64,
    /// POSTs.
    pub post: u64,
    /// ListObjectsV2 requests.
    pub list: u64,
}

/// The index of a request's kind in [`Counters::kinds`].
fn kind(head: &[u8]) -> usize {
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(&[]);
    let target = line.split(|&b| b == b' ').nth(1).unwrap_or(&[]);
    let listing = target.windows(10).any(|w| w == b"list-type=");
    match line.split(|&b| b == b' ').next().unwrap_or(&[]) {
        b"GET" if listing => 5,
        b"GET" => 0,
        b"PUT" => 1,
        b"HEAD" => 2,
        b"DELETE" => 3,
        _ => 4,
    }
}

/// A running proxy; dropping it stops it (open connections end when
/// their client or server closes them, or at the socket timeout).
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    counters: Arc<Counters>,
}

impl FaultProxy {
    /// Listens on a free loopback port and passes to `upstream`, with
    /// `fault` at every `every`-th request (0: never).
    pub fn start(upstream: SocketAddr, fault: Fault, every: u64) -> io::Result<Self> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let addr = l.local_addr()?;
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                if c.stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let c = c.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, upstream, fault, every, &c);
                });
            }
        });
        Ok(FaultProxy { addr, counters })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests received (faulted ones included).
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Requests that met the fault.
    pub fn faults(&self) -> u64 {
        self.counters.faults.load(Ordering::Relaxed)
    }

    /// Bytes of request bodies passed on to the server.
    pub fn body_bytes(&self) -> u64 {
        self.counters.body_bytes.load(Ordering::Relaxed)
    }

    /// Requests received, by kind.
    pub fn kinds(&self) -> Kinds {
        let k = |i: usize| self.counters.kinds[i].load(Ordering::Relaxed);
        Kinds {
            get: k(0),
            put: k(1),
            head: k(2),
            delete: k(3),
            post: k(4),
            list: k(5),
        }
    }

    /// A proxy that passes every request on and counts it.
    pub fn counting(upstream: SocketAddr) -> io::Result<Self> {
        Self::start(upstream, Fault::SlowDown, 0)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.counters.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the stop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// One client connection: requests read one at a time, each passed on
/// or faulted; answers copied back by a second thread.
fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    fault: Fault,
    every: u64,
    c: &Counters,
) -> io::Result<()> {
    client.set_read_timeout(Some(IO_TIMEOUT))?;
    let server = TcpStream::connect_timeout(&upstream, Duration::from_secs(5))?;
    server.set_read_timeout(Some(IO_TIMEOUT))?;
    let (mut s_in, mut c_out) = (server.try_clone()?, client.try_clone()?);
    let resetting = Arc::new(AtomicBool::new(false));
    let r2 = resetting.clone();
    let back = std::thread::spawn(move || {
        let _ = io::copy(&mut s_in, &mut c_out);
        // The server closed: so does the client's side (unless a reset
        // is on its way, which a FIN first would hide).
        if !r2.load(Ordering::Relaxed) {
            let _ = c_out.shutdown(Shutdown::Write);
        }
    });
    let mut reader = BufReader::new(client.try_clone()?);
    let mut to_server = server.try_clone()?;
    let r = loop {
        let Some((mut head, body_len)) = read_head(&mut reader)? else {
            break Ok(());
        };
        let n = c.requests.fetch_add(1, Ordering::Relaxed) + 1;
        c.kinds[kind(&head)].fetch_add(1, Ordering::Relaxed);
        let mut body = vec![0u8; body_len];
        reader.read_exact(&mut body)?;
        if every > 0 && n.is_multiple_of(every) && fault.applies(&head) {
            c.faults.fetch_add(1, Ordering::Relaxed);
            match fault {
                Fault::SlowDown => {
                    slow_down(&client)?;
                    continue;
                }
                Fault::Reset => {
                    resetting.store(true, Ordering::Relaxed);
                    break linger_zero(&client);
                }
                Fault::Drop => break Ok(()),
                Fault::Delay(d) => std::thread::sleep(d),
                Fault::StripIfNoneMatch => head = strip_header(&head, "if-none-match"),
                Fault::RefuseConditionalPost => {
                    not_implemented(&client)?;
                    continue;
                }
                Fault::RedirectReads(to) => {
                    redirect(&client, to, method_and_path(&head).1)?;
                    continue;
                }
            }
        }
        to_server.write_all(&head)?;
        to_server.write_all(&body)?;
        c.body_bytes.fetch_add(body_len as u64, Ordering::Relaxed);
    };
    let _ = server.shutdown(Shutdown::Both);
    let _ = back.join();
    // The last descriptors of the client's socket close here: a FIN, or
    // with SO_LINGER 0 a reset.
    drop(reader);
    drop(client);
    r
}

/// The header block of the next request and its body's length; None at
/// the end of the connection.
fn read_head(r: &mut BufReader<TcpStream>) -> io::Result<Option<(Vec<u8>, usize)>> {
    let mut head = Vec::new();
    let mut body_len = 0usize;
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "header too long",
            ));
        }
        let text = String::from_utf8_lossy(&line);
        if let Some((k, v)) = text.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                body_len = v
                    .trim()
                    .parse()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content-length"))?;
            }
        }
        if line == b"\r\n" || line == b"\n" {
            return Ok(Some((head, body_len)));
        }
    }
}

/// `head` without the header lines named `name`.
fn strip_header(head: &[u8], name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len());
    for line in head.split_inclusive(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        let named = text
            .split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case(name));
        if !named {
            out.extend_from_slice(line);
        }
    }
    out
}

fn slow_down(mut client: &TcpStream) -> io::Result<()> {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
    write!(
        client,
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn not_implemented(mut client: &TcpStream) -> io::Result<()> {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented.</Message></Error>";
    write!(
        client,
        "HTTP/1.1 501 Not Implemented\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn redirect(mut client: &TcpStream, to: SocketAddr, path: &str) -> io::Result<()> {
    write!(
        client,
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{to}{path}\r\nContent-Length: 0\r\n\r\n"
    )
}

/// SO_LINGER 0: the socket's close sends a reset.
fn linger_zero(client: &TcpStream) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own, with a pointer to a local
    // struct of the size we pass.
    unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_kind() {
        let k = |line: &str| kind(format!("{line}\r\nhost: x\r\n\r\n").as_bytes());
        assert_eq!(k("GET /b/run/0/1 HTTP/1.1"), 0);
        assert_eq!(k("GET /b/?list-type=2&prefix=run%2F HTTP/1.1"), 5);
        assert_eq!(k("PUT /b/k HTTP/1.1"), 1);
        assert_eq!(k("HEAD /b/k HTTP/1.1"), 2);
        assert_eq!(k("DELETE /b/k HTTP/1.1"), 3);
        assert_eq!(k("POST /b/k?uploads HTTP/1.1"), 4);
    }
}
