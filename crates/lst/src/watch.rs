//! Live figures on the console (`--live`): while the points run, a
//! thread reads every agent's figures (`Command::Figures` on a stat
//! connection of the session: what the agent's client jobs did since the
//! session opened) each interval and hands them to a [`Watcher`]; when
//! the run ends, however it ends, a last reading of each agent, before
//! the agents are told goodbye. The watcher (the binary's) turns the
//! readings into the intervals of the live stream. The console opens
//! the connections and says how one reading is taken, so this module
//! knows neither the protocol nor the nodes.

use iolab_core::live::Totals;
use iolab_net::Conn;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long one reading of one agent may take (connecting, the
/// handshake, a question and its answer): an agent that stalls costs the
/// console at most this per reading.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Who is handed the agents' readings.
pub trait Watcher: Send + Sync {
    /// Time between readings.
    fn interval(&self) -> Duration;
    /// Agent `i` (named `node`) was read: its figures since the session
    /// opened, or None when it could not be read. `last`: the final
    /// reading; nothing follows for this agent.
    fn reading(&self, i: usize, node: &str, figures: Option<Vec<Totals>>, last: bool);
}

/// One reading on an agent's stat connection: its figures, or None when
/// the connection failed or answered something else.
pub(crate) type Read = fn(&mut Conn) -> Option<Vec<Totals>>;

/// An agent as the thread reads it: its name, and its stat connection
/// (None when it could not be opened, or once a reading failed: a late
/// answer would be taken for the next reading's).
pub(crate) type Reader = (String, Option<Conn>);

/// The reading thread of a running console; dropping it takes the last
/// reading and stops the thread.
pub(crate) struct Watch {
    quit: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts reading `readers` every interval with `read`.
    pub(crate) fn start(watcher: Arc<dyn Watcher>, readers: Vec<Reader>, read: Read) -> Watch {
        let (quit, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iolab-lst-watch".into())
            .spawn(move || run(&*watcher, readers, read, &rx))
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
fn run(w: &dyn Watcher, mut readers: Vec<Reader>, read: Read, quit: &mpsc::Receiver<()>) {
    loop {
        let last = match quit.recv_timeout(w.interval()) {
            Err(RecvTimeoutError::Timeout) => false,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
        };
        for (i, (node, conn)) in readers.iter_mut().enumerate() {
            let figures = conn.as_mut().and_then(read);
            if figures.is_none() {
                if let Some(c) = conn.take() {
                    c.shutdown();
                }
            }
            w.reading(i, node, figures, last);
        }
        if last {
            return;
        }
    }
}
