//! Strangers on iolab's ports: a connection that says nothing, and one
//! that trickles a well-formed handshake frame a byte at a time (a frame
//! so long it would take hours), each watching for the server to close
//! it. And what a process holds: its threads and descriptors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A connection a stranger holds open; dropped, it closes.
pub struct Stranger {
    stop: Arc<AtomicBool>,
    /// Set once the server closed the connection.
    closed: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Stranger {
    /// Connects to `addr` and sends nothing.
    pub fn silent(addr: &str) -> Stranger {
        Stranger::start(addr, None)
    }

    /// Connects to `addr` and sends a byte every `every`.
    pub fn trickle(addr: &str, every: Duration) -> Stranger {
        Stranger::start(addr, Some(every))
    }

    fn start(addr: &str, every: Option<Duration>) -> Stranger {
        let s = TcpStream::connect(addr).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let closed = Arc::new(AtomicBool::new(false));
        let (st, cl) = (Arc::clone(&stop), Arc::clone(&closed));
        let thread = std::thread::spawn(move || watch(s, every, &st, &cl));
        Stranger {
            stop,
            closed,
            thread: Some(thread),
        }
    }

    /// Whether the server has closed the connection.
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The bytes of a long handshake frame.
fn slow_frame() -> impl Iterator<Item = u8> {
    use iolab_net::frame::{Header, Kind};
    let body = vec![b' '; 60_000];
    let h = Header::new(Kind::Control, 0, 0, 0, &body).encode();
    h.into_iter().chain(body)
}

/// Sends (when `every` is set) a byte at a time and reads, until the
/// server closes the connection or `stop`.
fn watch(mut s: TcpStream, every: Option<Duration>, stop: &AtomicBool, closed: &AtomicBool) {
    let tick = every.unwrap_or(Duration::from_millis(200));
    s.set_read_timeout(Some(tick.min(Duration::from_millis(200))))
        .unwrap();
    let mut bytes = slow_frame();
    let mut next = Instant::now();
    let mut buf = [0u8; 256];
    while !stop.load(Ordering::Relaxed) {
        if every.is_some() && Instant::now() >= next {
            next = Instant::now() + tick;
            let b = bytes.next().unwrap_or(b' ');
            if s.write_all(&[b]).is_err() {
                closed.store(true, Ordering::Relaxed);
                return;
            }
        }
        match s.read(&mut buf) {
            Ok(0) => {
                closed.store(true, Ordering::Relaxed);
                return;
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                closed.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// Waits until every stranger is closed by the server, at most `bound`
/// (a bound that detects a hang, not a measure); returns how many are
/// still open.
pub fn wait_closed(strangers: &[Stranger], bound: Duration) -> usize {
    let until = Instant::now() + bound;
    loop {
        let open = strangers.iter().filter(|s| !s.closed()).count();
        if open == 0 || Instant::now() >= until {
            return open;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Threads of process `pid` (its `/proc/PID/task` entries).
pub fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// TCP sockets process `pid` holds open.
pub fn sockets_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Waits until process `pid` holds at least `n` sockets (it has taken
/// the strangers' connections), at most `bound`; true when it does.
pub fn wait_sockets(pid: u32, n: usize, bound: Duration) -> bool {
    let until = Instant::now() + bound;
    while Instant::now() < until {
        if sockets_of(pid) >= n {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
