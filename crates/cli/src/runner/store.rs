//! `--store PATH`: the store is opened (created, migrated) before the
//! run, so that a path that cannot hold it, a file that is not a store,
//! or a store from a newer iolab is exit 2 before anything is created;
//! the run's envelope is recorded once it has ended. A record that fails
//! is the run's error (exit 1), as a JSON that cannot be written is.

use iolab_results::Envelope;
use iolab_store::Store;
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// The store `iolab results`, `sweep` and `report` use when `--store`
/// and `IOLAB_STORE` are not given.
pub const DEFAULT_STORE: &str = "iolab.sqlite";

/// The store a run records into, if `--store` was given. Behind a mutex
/// so that a run's shared setup can hold it while its worker threads run
/// (it is used only after they end).
pub struct StoreHook(Mutex<Option<Store>>);

impl StoreHook {
    /// No store asked for.
    pub fn none() -> StoreHook {
        StoreHook(Mutex::new(None))
    }

    /// Opens `path` (when given); the error names `--store`.
    pub fn open(path: Option<&Path>) -> Result<StoreHook, String> {
        match path {
            None => Ok(StoreHook::none()),
            Some(p) => Store::open(p)
                .map(|s| StoreHook(Mutex::new(Some(s))))
                .map_err(|e| format!("--store {}: {e}", p.display())),
        }
    }

    /// Records a finished run with the figures its envelope states, its
    /// payload rendered straight into the store
    /// ([`Store::record_streamed`]), never whole in memory: the store
    /// reads no payload for figures. `lost` says, once the payload is
    /// written, whether part of it could not be read (then nothing is
    /// recorded and the run is an error). Returns the run's id (None
    /// without a store).
    pub fn record<C: Serialize, P: Serialize>(
        &self,
        doc: &Envelope<C, P>,
        lost: &dyn Fn() -> Option<String>,
    ) -> Result<Option<i64>, iolab_core::Failure> {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(store) = guard.as_mut() else {
            return Ok(None);
        };
        let fail = |e: String| iolab_core::Failure::other("record --store", e);
        let head = doc.head().map_err(|e| fail(e.to_string()))?;
        let fill = |w: &mut dyn std::io::Write| {
            let mut w = std::io::BufWriter::with_capacity(64 << 10, w);
            serde_json::to_writer(&mut w, &doc.payload)?;
            w.flush()?;
            match lost() {
                Some(e) => Err(std::io::Error::other(e)),
                None => Ok(()),
            }
        };
        store
            .record_streamed(&head, None, fill)
            .map(Some)
            .map_err(|e| fail(format!("{}: {e}", store.path())))
    }
}
