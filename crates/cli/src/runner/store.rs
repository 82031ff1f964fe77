//! `--store PATH` for any tool: the store is opened (created, migrated)
//! before the run, so that a path that cannot hold it, a file that is not
//! a store, or a store from a newer iolab is exit 2 before anything is
//! created; the run's envelope is recorded once it has ended. A record
//! that fails is the run's error (exit 1), as a JSON that cannot be
//! written is.

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
    /// Whether a store was asked for (so that a caller renders the
    /// document to record only then: for a long run it is large).
    pub fn is_open(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// No store asked for.
    pub fn none() -> StoreHook {
        StoreHook(Mutex::new(None))
    }

    /// Opens `path` (when given); the error names `--store`.
    pub fn open(path: Option<&Path>) -> Result<StoreHook, String> {
        match path {
            None => Ok(StoreHook(Mutex::new(None))),
            Some(p) => Store::open(p)
                .map(|s| StoreHook(Mutex::new(Some(s))))
                .map_err(|e| format!("--store {}: {e}", p.display())),
        }
    }

    /// Records a finished run; returns its id (None without a store).
    /// A document that states its figures goes into the store as it is
    /// serialised ([`StoreHook::record_streamed`]); one that does not is
    /// read back from its JSON for the store to find them in its payload.
    pub fn record<C: Serialize, P: Serialize>(
        &self,
        doc: &Envelope<C, P>,
    ) -> Result<Option<i64>, iolab_core::Failure> {
        match (self.is_open(), doc.figures.is_empty()) {
            (false, _) => Ok(None),
            (true, true) => self.record_json(&doc.to_json()),
            (true, false) => self.record_streamed(doc, || None),
        }
    }

    /// Records a finished run whose payload is rendered straight into the
    /// store ([`Store::record_streamed`]), never whole in memory; `lost`
    /// says, once the payload is written, whether part of it could not
    /// be read (then nothing is recorded and the run is an error).
    pub fn record_streamed<C: Serialize, P: Serialize>(
        &self,
        doc: &Envelope<C, P>,
        lost: impl FnOnce() -> Option<String>,
    ) -> Result<Option<i64>, iolab_core::Failure> {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(store) = guard.as_mut() else {
            return Ok(None);
        };
        let fail = |e: String| iolab_core::Failure::other("record --store", e);
        let head = head(doc).map_err(|e| fail(e.to_string()))?;
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

    /// Records a run from its JSON text.
    pub fn record_json(&self, json: &str) -> Result<Option<i64>, iolab_core::Failure> {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(store) = guard.as_mut() else {
            return Ok(None);
        };
        let fail = |e: String| iolab_core::Failure::other("record --store", e);
        let doc = iolab_results::parse_any(json).map_err(|e| fail(e.to_string()))?;
        store
            .record(&doc, None)
            .map(Some)
            .map_err(|e| fail(format!("{}: {e}", store.path())))
    }
}

/// `doc`'s envelope fields as JSON values, without its payload (the part
/// a long run makes large).
fn head<C: Serialize, P>(
    doc: &Envelope<C, P>,
) -> serde_json::Result<Envelope<serde_json::Value, serde_json::Value>> {
    Ok(Envelope {
        schema: doc.schema.clone(),
        envelope: doc.envelope,
        tool: doc.tool.clone(),
        command_line: doc.command_line.clone(),
        started_unix_ns: doc.started_unix_ns,
        finished_unix_ns: doc.finished_unix_ns,
        config: serde_json::to_value(&doc.config)?,
        environment: doc.environment.clone(),
        outcome: doc.outcome.clone(),
        notes: doc.notes.clone(),
        stats: doc.stats.clone(),
        figures: doc.figures.clone(),
        payload: serde_json::Value::Null,
    })
}
