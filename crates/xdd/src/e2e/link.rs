//! The live link of a copy: one more connection, beside the QThreads',
//! over which the source side sends its live figures to the destination
//! side, so that the destination's stream (`--live`) holds both sides.
//!
//! Each side says in its handshake terms whether it streams live
//! figures ([`super::terms::Terms::live`]); when both do, and the run
//! has one end-to-end target, the source opens the link to QThread 0's
//! port once its QThreads are connected, with the same handshake and
//! key, marked [`super::terms::Terms::link`]. The link outlives the
//! copy's data connections: the source's last interval is sampled after
//! its run ends, and goes over it.
//!
//! What travels is opaque here (the live crate's reports); this module
//! only moves frames: the source writes each one from its sampler
//! thread, a reader thread on the destination queues them for its
//! sampler.

use iolab_net::frame::Kind;
use iolab_net::{Cancel, Conn, NetError};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest a report may take to leave: a destination that stopped
/// reading costs the source's sampler no more than this, once.
const SEND_BOUND: Duration = Duration::from_secs(5);

/// Largest report taken from the link (a report is a few kilobytes).
const MAX_REPORT: u32 = 4 << 20;

/// Most reports queued for the sampler, which takes them every interval
/// (one comes per interval): a source that floods the link fills no
/// more memory than this; what comes beyond it is dropped.
const MAX_QUEUED: usize = 1024;

/// The handoff between the copy's setup, which makes the link, and the
/// live sampler, which uses it. Shared by both (an `Arc`).
#[derive(Debug, Default)]
pub struct LiveLink {
    wanted: AtomicBool,
    state: Mutex<State>,
    inbox: Arc<Inbox>,
}

#[derive(Debug, Default)]
enum State {
    /// Not set up yet (or not wanted).
    #[default]
    Pending,
    /// The copy set up without a link, or the link failed.
    Absent,
    /// The source's end: reports are written here.
    Sending(Conn),
    /// The destination's end: its reader thread.
    Reading {
        stop: Arc<AtomicBool>,
        thread: JoinHandle<()>,
    },
}

/// What the destination's reader thread hands its sampler.
#[derive(Debug, Default)]
struct Inbox {
    reports: Mutex<VecDeque<Vec<u8>>>,
    /// The reader has ended (the source closed the link, or it failed);
    /// set after its last report is queued.
    ended: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LiveLink {
    /// This side streams live figures, so a copy links when the other
    /// side does too. Said before the run starts.
    pub fn want(&self) {
        self.wanted.store(true, Relaxed);
    }

    /// Whether [`LiveLink::want`] was said.
    pub fn wanted(&self) -> bool {
        self.wanted.load(Relaxed)
    }

    /// The copy set up without a link.
    pub fn absent(&self) {
        *lock(&self.state) = State::Absent;
    }

    /// The source's end of the link, agreed and ready.
    pub fn sending(&self, mut conn: Conn) {
        conn.idle_timeout = SEND_BOUND;
        *lock(&self.state) = State::Sending(conn);
    }

    /// The destination's end of the link: a reader thread queues what
    /// comes until the source closes it or [`LiveLink::close`].
    pub fn reading(&self, mut conn: Conn) {
        conn.max_payload = MAX_REPORT;
        let stop = Arc::new(AtomicBool::new(false));
        let inbox = self.inbox.clone();
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("iolab-e2e-live".into())
            .spawn(move || read_reports(conn, &inbox, &flag));
        *lock(&self.state) = match spawned {
            Ok(thread) => State::Reading { stop, thread },
            Err(_) => State::Absent,
        };
    }

    /// The source: sends one report. A link that fails is dropped (the
    /// copy goes on; the destination's stream then lacks this side's
    /// later intervals, and its reader says the link ended).
    pub fn send(&self, report: &[u8]) {
        let mut st = lock(&self.state);
        if let State::Sending(c) = &mut *st {
            if c.send(Kind::Data, 0, 0, report, Cancel::process()).is_err() {
                c.shutdown();
                *st = State::Absent;
            }
        }
    }

    /// True on the source's end once the link is up: its reports go over it.
    pub fn is_sending(&self) -> bool {
        matches!(&*lock(&self.state), State::Sending(_))
    }

    /// The destination: every report that came since the last call.
    pub fn take(&self) -> Vec<Vec<u8>> {
        lock(&self.inbox.reports).drain(..).collect()
    }

    /// The destination: true while the other side may still report
    /// (the link is up, or reports it brought are still queued).
    pub fn peer_open(&self) -> bool {
        let reading = matches!(&*lock(&self.state), State::Reading { .. });
        // `ended` is set after the last report is queued, so a queue
        // seen empty after it holds nothing more to take.
        let ended = self.inbox.ended.load(std::sync::atomic::Ordering::Acquire);
        reading && (!ended || !lock(&self.inbox.reports).is_empty())
    }

    /// Closes the link: the source's end shuts its connection (the
    /// destination's reader sees it close), the destination's stops
    /// and joins its reader.
    pub fn close(&self) {
        let st = std::mem::replace(&mut *lock(&self.state), State::Absent);
        match st {
            State::Sending(c) => c.shutdown(),
            State::Reading { stop, thread } => {
                stop.store(true, Relaxed);
                let _ = thread.join();
            }
            State::Pending | State::Absent => {}
        }
    }
}

/// The destination's reader: queues each report until the link closes,
/// fails or `stop` is set. Silence is not an end (a long interval).
fn read_reports(mut conn: Conn, inbox: &Inbox, stop: &AtomicBool) {
    conn.idle_timeout = Duration::from_secs(3600);
    loop {
        match conn.recv_owned(Cancel::with(stop)) {
            Ok((h, b)) if h.kind == Kind::Data => {
                let mut q = lock(&inbox.reports);
                if q.len() < MAX_QUEUED {
                    q.push_back(b);
                }
            }
            Ok(_) => break,
            Err(NetError::Timeout { .. }) if !stop.load(Relaxed) => continue,
            Err(_) => break,
        }
    }
    inbox
        .ended
        .store(true, std::sync::atomic::Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_net::conn;

    /// A connected pair of framed connections on loopback.
    fn pair() -> (Conn, Conn) {
        let l = conn::listen("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap().to_string();
        let t = std::thread::spawn(move || {
            conn::accept(&l, Duration::from_secs(10), Cancel::process())
                .unwrap()
                .0
        });
        let c = conn::connect(&at, Duration::from_secs(10), Cancel::process()).unwrap();
        (c, t.join().unwrap())
    }

    fn wait(mut ok: impl FnMut() -> bool) -> bool {
        for _ in 0..500 {
            if ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn reports_cross_in_order_and_the_end_is_seen_after_the_last() {
        let (src, dst) = pair();
        let (a, b) = (LiveLink::default(), LiveLink::default());
        assert!(!b.peer_open(), "no link yet");
        a.sending(src);
        b.reading(dst);
        assert!(a.is_sending() && b.peer_open());
        for i in 0..50u32 {
            a.send(&i.to_le_bytes());
        }
        a.close();
        let mut got = Vec::new();
        assert!(wait(|| {
            got.extend(b.take());
            !b.peer_open()
        }));
        got.extend(b.take());
        let want: Vec<Vec<u8>> = (0..50u32).map(|i| i.to_le_bytes().to_vec()).collect();
        assert_eq!(got, want);
        b.close();
    }

    #[test]
    fn a_closed_destination_stops_the_source_sending() {
        let (src, dst) = pair();
        let (a, b) = (LiveLink::default(), LiveLink::default());
        a.sending(src);
        b.reading(dst);
        b.close();
        assert!(!b.peer_open());
        // The first sends may still land in the socket's buffer; a reset
        // peer fails one soon after.
        assert!(wait(|| {
            a.send(&[0u8; 1024]);
            !a.is_sending()
        }));
        a.close();
    }
}
