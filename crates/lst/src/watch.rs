//! Live figures on the console (`--live`): while the points run, a
//! thread reads every agent's figures (`Command::Figures` on a stat
//! connection of the session: what the agent's client jobs did since the
//! session opened) each interval and hands them to a [`Watcher`]; when
//! the run ends, however it ends, a last reading of each agent, before
//! the agents are told goodbye. The watcher (the binary's) turns the
//! readings into the intervals of the live stream.

use crate::console::{self, Node};
use crate::proto::{Answer, Command};
use iolab_core::live::Totals;
use iolab_net::{Cancel, Conn, SharedKey};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long one reading of one agent may take (connecting, the
/// handshake, a question and its answer): an agent that stalls costs the
/// console at most this per reading.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Who is handed the agents' readings.
pub trait Watcher: Send + Sync {
    /// Time between readings.
    fn interval(&self) -> Duration;
    /// Agent `i` (named `node`) was read: its figures since the session
    /// opened, or None when it could not be read. `last`: the final
    /// reading; nothing follows for this agent.
    fn reading(&self, i: usize, node: &str, figures: Option<Vec<Totals>>, last: bool);
}

/// The reading thread of a running console; dropping it takes the last
/// reading and stops the thread.
pub(crate) struct Watch {
    quit: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// One agent as the thread reads it.
struct Reader {
    node: String,
    /// Its stat connection; None once a reading failed (a late answer
    /// would be taken for the next reading's).
    conn: Option<Conn>,
}

impl Watch {
    /// Opens a stat connection to each of `nodes` (agents whose session
    /// `token` is open) and starts reading them every interval.
    pub(crate) fn start(
        watcher: Arc<dyn Watcher>,
        nodes: &[Node],
        token: &str,
        key: Option<&SharedKey>,
    ) -> Watch {
        let readers: Vec<Reader> = nodes
            .iter()
            .map(|n| Reader {
                node: n.name.clone(),
                conn: console::open_stat(n, token, key, READ_TIMEOUT).ok(),
            })
            .collect();
        let (quit, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iolab-lst-watch".into())
            .spawn(move || run(&*watcher, readers, &rx))
            .ok();
        Watch {
            quit: Some(quit),
            thread,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.quit.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: a reading of every agent each interval, the last one
/// when told to quit.
fn run(w: &dyn Watcher, mut readers: Vec<Reader>, quit: &mpsc::Receiver<()>) {
    loop {
        let last = match quit.recv_timeout(w.interval()) {
            Err(RecvTimeoutError::Timeout) => false,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
        };
        for (i, r) in readers.iter_mut().enumerate() {
            let figures = read(r);
            w.reading(i, &r.node, figures, last);
        }
        if last {
            return;
        }
    }
}

/// One reading of one agent; a failed one closes its connection.
fn read(r: &mut Reader) -> Option<Vec<Totals>> {
    let c = r.conn.as_mut()?;
    // Never cancelled by a stop: the last reading of an interrupted run
    // is still taken, bounded by READ_TIMEOUT.
    let never = AtomicBool::new(false);
    let got = console::send(c, &Command::Figures, Cancel::with(&never))
        .and_then(|()| console::recv(c, Cancel::with(&never)));
    match got {
        Ok(Answer::Figures(f)) => Some(f),
        _ => {
            if let Some(c) = r.conn.take() {
                c.shutdown();
            }
            None
        }
    }
}
