//! `--stats CONFIG` for any run (issue "iolab stats"): the configuration
//! is loaded and checked before anything is created (a bad one is exit
//! 2), collection starts just before the engine runs and stops right
//! after it (also when the run failed), and the samples go into the
//! run's JSON envelope (`stats`) so a rate can be read next to the disk
//! and CPU figures of the same seconds. It is one of the runner's
//! watchers (`super::watch::Watch`).

use super::watch::{Started, Watch, Watched};
use iolab_core::Outcome;
use iolab_stats::config::Config;

/// A checked `--stats` configuration, then its collection.
pub struct Hook {
    /// Loaded, not yet started.
    cfg: Option<Config>,
    /// Collecting.
    running: Option<iolab_stats::Attached>,
    /// What went wrong, for the envelope's notes (also said on stderr).
    notes: Vec<String>,
}

impl Hook {
    /// No statistics asked for.
    pub fn none() -> Hook {
        Hook {
            cfg: None,
            running: None,
            notes: Vec::new(),
        }
    }

    /// Loads `arg` (a config.sh, a TOML file, or `local[,Ns]`); the error
    /// names `--stats` and the variable at fault.
    pub fn load(arg: Option<&str>) -> Result<Hook, String> {
        match arg {
            None => Ok(Hook::none()),
            Some(a) => iolab_stats::config::load(a)
                .map(|c| Hook {
                    cfg: Some(c),
                    running: None,
                    notes: Vec::new(),
                })
                .map_err(|e| format!("--stats: {e}")),
        }
    }
}

impl Hook {
    /// Says `what` on stderr and keeps it for the run's notes.
    fn note(&mut self, what: String) {
        iolab_core::say!("iolab: note: {what}");
        self.notes.push(what);
    }
}

impl Watch for Hook {
    /// Starts the collectors. A collector that cannot start is a note
    /// (stderr and the envelope's notes, naming the node), not a reason
    /// to skip the benchmark.
    fn start(&mut self, _run: &Started) {
        let Some(cfg) = self.cfg.take() else {
            return;
        };
        let exe = std::env::current_exe().unwrap_or_else(|_| "iolab".into());
        match iolab_stats::attach_config(cfg, None, &exe) {
            Ok(a) => {
                for f in a.start_failed() {
                    self.note(format!("--stats: the collector did not start on {f}"));
                }
                self.running = Some(a);
            }
            Err(e) => self.note(format!("--stats: cannot start collecting: {e}")),
        }
    }

    /// Stops collecting and gives the samples, as JSON, for the envelope.
    fn stop(&mut self, _outcome: &Outcome) -> Watched {
        let stats = match self.running.take().map(|a| a.finish(None)) {
            None => None,
            Some(Ok(c)) => match serde_json::to_value(c) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.note(format!("--stats: {e}"));
                    None
                }
            },
            // No node started: the start's notes said why.
            Some(Err(iolab_stats::StatsError::NotStarted(_))) => None,
            Some(Err(e)) => {
                self.note(format!("--stats: collecting failed: {e}"));
                None
            }
        };
        Watched {
            stats,
            notes: std::mem::take(&mut self.notes),
            ..Watched::default()
        }
    }
}

/// A run that ends early (an error path that never reaches the
/// session's end) still stops its collectors, so none outlives the
/// benchmark.
impl Drop for Hook {
    fn drop(&mut self) {
        if let Some(a) = self.running.take() {
            let _ = a.finish(None);
        }
    }
}
