//! `--stats CONFIG` for any benchmark (issue "iolab stats"): the
//! configuration is loaded and checked before anything is created (a bad
//! one is exit 2), collection starts just before the engine runs and stops
//! right after it (also when the run failed), and the samples go into the
//! run's JSON envelope (`stats`) so a rate can be read next to the disk and
//! CPU figures of the same seconds.

use iolab_stats::config::Config;

/// A checked `--stats` configuration, not yet collecting.
pub struct Hook(Option<Config>);

/// Collection in progress.
pub struct Running(Option<iolab_stats::Attached>);

impl Hook {
    /// No statistics asked for.
    pub fn none() -> Hook {
        Hook(None)
    }

    /// Loads `arg` (a config.sh, a TOML file, or `local[,Ns]`); the error
    /// names `--stats` and the variable at fault.
    pub fn load(arg: Option<&str>) -> Result<Hook, String> {
        match arg {
            None => Ok(Hook(None)),
            Some(a) => iolab_stats::config::load(a)
                .map(|c| Hook(Some(c)))
                .map_err(|e| format!("--stats: {e}")),
        }
    }

    /// Starts the collectors. A collector that cannot start is a note on
    /// stderr, not a reason to skip the benchmark.
    pub fn start(self) -> Running {
        let Some(cfg) = self.0 else {
            return Running(None);
        };
        let exe = std::env::current_exe().unwrap_or_else(|_| "iolab".into());
        match iolab_stats::attach_config(cfg, None, &exe) {
            Ok(a) => Running(Some(a)),
            Err(e) => {
                eprintln!("iolab: note: --stats: cannot start collecting: {e}");
                Running(None)
            }
        }
    }
}

impl Running {
    /// Stops collecting and returns the samples as JSON for the envelope.
    pub fn finish(mut self) -> Option<serde_json::Value> {
        let collected = match self.0.take()?.finish(None) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("iolab: note: --stats: collecting failed: {e}");
                return None;
            }
        };
        serde_json::to_value(collected)
            .map_err(|e| eprintln!("iolab: note: --stats: {e}"))
            .ok()
    }
}

/// A run that ends early (an error path that never reaches `finish`)
/// still stops its collectors, so none outlives the benchmark.
impl Drop for Running {
    fn drop(&mut self) {
        if let Some(a) = self.0.take() {
            let _ = a.finish(None);
        }
    }
}
