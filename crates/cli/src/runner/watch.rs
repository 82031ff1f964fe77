//! What watches a run from just before it starts to just after it ends:
//! `--stats`'s collectors and the live-figures sampler (`--live`). The runner
//! starts each watcher in `Session::start`, stops it in
//! `Session::stop_watching` (or at `Session::finish`, also after a failed
//! run), and puts what it gives back into the results envelope.

use iolab_core::Outcome;

/// Something that watches a run from just before it starts to just
/// after it ends: `--stats`'s collectors and the live figures. `Session::start` starts each one, `Session::stop_watching`
/// (or `Session::finish`, also after a failed run) stops it, and what
/// it gives back goes into the envelope.
pub trait Watch: Send + Sync {
    /// The run starts now.
    fn start(&mut self, run: &Started);
    /// The run has ended (`outcome`, before its outputs are written):
    /// stop, and give what the document should carry.
    fn stop(&mut self, outcome: &Outcome) -> Watched;
}

/// A run as it starts, for its watchers: the document's identity and
/// start time (what a live stream is tagged with; `--stats` needs none).
#[derive(Debug, Clone)]
#[allow(dead_code)] // the live sampler is tagged when it is made (Session::live)
pub struct Started {
    /// The document's tool (`mdtest`, `survey disk`).
    pub tool: String,
    /// The payload's schema (`iolab.mdtest/2`).
    pub schema: &'static str,
    /// The command line as typed.
    pub command_line: String,
    /// Wall clock at the start, Unix nanoseconds.
    pub started_unix_ns: u64,
}

/// What a watcher adds to the document.
#[derive(Debug, Default)]
pub struct Watched {
    /// System statistics for the envelope's `stats`.
    pub stats: Option<serde_json::Value>,
    /// Notes for the envelope's `notes`.
    pub notes: Vec<String>,
    /// An output of the watcher's own that could not be written (a live
    /// stream): an output failure of the run, as `--json`'s would be.
    pub failure: Option<iolab_core::Failure>,
}
