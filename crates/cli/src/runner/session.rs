//! A run between its checks and its end: the watchers started and
//! stopped, the document made, the outputs written, the run recorded.

use super::envelope::{self, Head};
use super::options::Given;
use super::report::{Render, Report};
use super::store::StoreHook;
use super::watch::{Started, Watch, Watched};
use iolab_core::env::FsInfo;
use iolab_core::{CancelToken, Failure, FailureKind, Outcome};
use iolab_results::Envelope;
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The process's root cancellation token, made on first use (by `main`,
/// before any run, so the signal handler has it).
pub fn root() -> &'static CancelToken {
    static ROOT: OnceLock<CancelToken> = OnceLock::new();
    ROOT.get_or_init(CancelToken::process)
}

/// A run between its checks and its end.
pub struct Session<C> {
    head: Head,
    config: C,
    given: Given,
    leader: bool,
    store: StoreHook,
    /// How messages name the JSON document's file: `--json`, or nothing
    /// for a file of the tool's own ([`Session::document_at`]).
    json_option: &'static str,
    watchers: Vec<Box<dyn Watch>>,
    /// What the watchers gave, once stopped.
    watched: Option<Watched>,
    /// The outputs whose failure was said.
    said: Mutex<Vec<String>>,
    started_unix_ns: u64,
    cancel: CancelToken,
    /// The id the live stream carries, stated in the document too.
    run_id: Option<String>,
    /// Files written with the JSON document, put in place only when it
    /// is ([`Session::beside_json`]).
    companions: Vec<(std::path::PathBuf, iolab_output::AtomicFile)>,
    /// The signals were passed on to a command whose exit status is the
    /// run's ([`Session::signals_passed_on`]).
    signals_passed_on: bool,
}

/// What a run that a signal stopped after its last operation notes.
const STOPPED_LATE: &str = "interrupted after the run's last operation: its figures are whole, and what it made is left as a completed run leaves it";

impl<C> Session<C> {
    /// A session of the run `head`, once `Run::open` has checked
    /// it: started now (until [`Session::start`] says when), its token a
    /// child of the process's root.
    pub(super) fn new(
        head: Head,
        config: C,
        given: Given,
        leader: bool,
        store: StoreHook,
        watchers: Vec<Box<dyn Watch>>,
    ) -> Session<C> {
        Session {
            head,
            config,
            given,
            leader,
            store,
            json_option: "--json",
            watchers,
            watched: None,
            said: Mutex::new(Vec::new()),
            started_unix_ns: iolab_core::clock::wall_ns(),
            cancel: root().child(),
            run_id: None,
            companions: Vec::new(),
            signals_passed_on: false,
        }
    }
}

impl<C: Serialize + Clone> Session<C> {
    /// The run's cancellation token: a child of the process's [`root`],
    /// which Ctrl-C and SIGTERM cancel.
    pub fn cancel(&self) -> &CancelToken {
        &self.cancel
    }

    /// The run passes Ctrl-C and SIGTERM on to a command and ends with
    /// its status (`stats run`, as `timeout` does): a signal the command
    /// took and then completed does not make the run interrupted.
    pub fn signals_passed_on(&mut self) {
        self.signals_passed_on = true;
    }

    /// The JSON document goes to `path`, a file of the tool's own that
    /// it checked before the run (io500's resultdir/result.json), in
    /// place of `--json`.
    pub fn document_at(&mut self, path: std::path::PathBuf) {
        self.given.json = Some(path);
        self.json_option = "";
    }

    /// `f`, the file at `path` (written whole, not yet in place), belongs with the JSON
    /// document: [`Session::finish`] puts it in place once the outputs
    /// are written, and drops it (it never appears) when one could not
    /// be, so that the tool's files are a whole set or absent (io500's
    /// result.txt and result_summary.txt beside result.json).
    pub fn beside_json(&mut self, path: std::path::PathBuf, f: iolab_output::AtomicFile) {
        self.companions.push((path, f));
    }

    /// Starts the live figures of the run when `--live`, `--steady` or a
    /// terminal asks for them (see [`crate::live::start`]) and returns
    /// the board its engine records into (`None`: record nothing). The
    /// sampler stops with the other watchers; its run id goes into the
    /// document, its notes and a stream that failed into the outcome.
    pub fn live(
        &mut self,
        own_bar: bool,
        peers: Option<Box<dyn iolab_live::peers::Peers>>,
    ) -> Option<std::sync::Arc<iolab_core::live::Board>> {
        let hook = crate::live::start(&self.head.tool, self.leader, own_bar, peers);
        let board = hook.shared();
        self.run_id = hook.run_id();
        self.watchers.push(Box::new(hook));
        board
    }

    /// The run starts now: its start time, and every watcher started
    /// (`--stats` collection).
    pub fn start(&mut self) {
        self.started_unix_ns = iolab_core::clock::wall_ns();
        let started = Started {
            tool: self.head.tool.clone(),
            schema: self.head.schema,
            command_line: self.head.command_line.clone(),
            started_unix_ns: self.started_unix_ns,
        };
        for w in &mut self.watchers {
            w.start(&started);
        }
    }

    /// Stops the watchers right after the run (the outputs written after
    /// it are not measured); [`Session::finish`] does it when not done.
    pub fn stop_watching(&mut self, outcome: &Outcome) {
        if self.watched.is_some() {
            return;
        }
        let mut all = Watched::default();
        for w in &mut self.watchers {
            let got = w.stop(outcome);
            all.stats = all.stats.or(got.stats);
            all.notes.extend(got.notes);
            all.failure = all.failure.or(got.failure);
        }
        self.watched = Some(all);
    }

    /// The run's document around `payload` so far (for a tool whose
    /// engine fills it as it goes, or that rewrites its outputs after
    /// each point): not finished (`finished_unix_ns` 0).
    pub fn document<P: Serialize>(
        &self,
        outcome: Outcome,
        filesystems: Vec<FsInfo>,
        payload: P,
    ) -> Envelope<C, P> {
        let mut doc = envelope::make(
            &self.head,
            self.config.clone(),
            filesystems,
            outcome,
            payload,
            self.started_unix_ns,
        );
        doc.run_id = self.run_id.clone();
        doc
    }

    /// Writes `--csv` then `--json`, each whole or absent; says what
    /// could not be written, folds it into `doc`'s outcome (so the JSON
    /// records a CSV that failed) and returns the first failure, of kind
    /// `output`.
    pub fn write<P: Serialize>(
        &self,
        doc: &mut Envelope<C, P>,
        render: Render<'_, P>,
    ) -> Option<Failure> {
        self.write_outputs(doc, render, true)
    }

    /// [`Session::write`] for outputs rewritten as the run goes (after
    /// each point): a failure is folded into `doc` and returned but not
    /// said, as the end's write says it.
    pub fn rewrite<P: Serialize>(
        &self,
        doc: &mut Envelope<C, P>,
        render: Render<'_, P>,
    ) -> Option<Failure> {
        self.write_outputs(doc, render, false)
    }

    fn write_outputs<P: Serialize>(
        &self,
        doc: &mut Envelope<C, P>,
        render: Render<'_, P>,
        say: bool,
    ) -> Option<Failure> {
        let csv = render.csv.and_then(|fill| {
            let payload = &doc.payload;
            self.write_one(
                "--csv",
                self.given.csv.as_deref(),
                &|w| fill(payload, w),
                say,
            )
        });
        if let Some(f) = &csv {
            fold_output(&mut doc.outcome, f.clone());
        }
        let fill = |w: &mut dyn Write| {
            serde_json::to_writer_pretty(&mut *w, &*doc)?;
            w.write_all(b"\n")?;
            match (render.lost)() {
                Some(e) => Err(io::Error::other(e)),
                None => Ok(()),
            }
        };
        let json = self.write_one(self.json_option, self.given.json.as_deref(), &fill, say);
        if let Some(f) = &json {
            fold_output(&mut doc.outcome, f.clone());
        }
        csv.or(json)
    }

    fn write_one(
        &self,
        option: &str,
        path: Option<&Path>,
        fill: &dyn Fn(&mut dyn Write) -> io::Result<()>,
        say: bool,
    ) -> Option<Failure> {
        let p = path?;
        let e = iolab_output::write_with(p, |w| fill(w)).err()?;
        let named = format!("{option} {}", p.display());
        // Said once per output, however often it is rewritten.
        let first = say && {
            let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
            !said.contains(&named) && {
                said.push(named.clone());
                true
            }
        };
        if first {
            iolab_core::say!(
                "{}: {}: cannot write: {e}",
                self.head.prog,
                named.trim_start()
            );
        }
        let op = format!("write {option}");
        Some(
            Failure::io(op.trim_end(), Some(p.display().to_string()), &e)
                .of_kind(FailureKind::Output),
        )
    }

    /// Ends the run with the tool's `report`: see [`Session::finish_document`].
    pub fn finish<P: Serialize>(self, report: Report<P>, render: Render<'_, P>) -> Outcome {
        let (start, end) = report.window.unwrap_or((self.started_unix_ns, 0));
        let mut doc = self.document(report.outcome, report.filesystems, report.payload);
        doc.started_unix_ns = start;
        doc.finished_unix_ns = end;
        doc.notes = report.notes;
        doc.figures = report.figures;
        doc.stats = report.stats;
        let prog = self.head.prog.clone();
        let outcome = self.finish_document(doc, render);
        for l in &report.left_behind {
            iolab_core::say!("{prog}: left behind: {l}");
        }
        outcome
    }

    /// Ends the run whose document is `doc`: stops the watchers and adds
    /// what they gave, marks the end, writes `--csv` and `--json` and
    /// records the run in the store (rank 0 under MPI). An output or a
    /// record that fails makes a completed run an error (exit 1); an
    /// interrupted or failed one keeps its own outcome. Returns the
    /// outcome the process exits with.
    pub fn finish_document<P: Serialize>(
        mut self,
        mut doc: Envelope<C, P>,
        render: Render<'_, P>,
    ) -> Outcome {
        self.stop_watching(&doc.outcome.clone());
        if let Some(w) = self.watched.take() {
            doc.stats = doc.stats.take().or(w.stats);
            doc.notes.extend(w.notes);
            if let Some(f) = w.failure {
                fold_output(&mut doc.outcome, f.of_kind(FailureKind::Output));
            }
        }
        if doc.finished_unix_ns == 0 {
            doc.finished_unix_ns = iolab_core::clock::wall_ns();
        }
        // A signal the tool did not see (it came after the last
        // operation) still ends the run as interrupted; the document
        // says so when it came before the document was written.
        if self.stopped_late(&mut doc.outcome) {
            doc.notes.push(STOPPED_LATE.to_string());
            if self.leader {
                iolab_core::say!("{}: {STOPPED_LATE}", self.head.prog);
            }
        }
        if !self.leader {
            return doc.outcome;
        }
        let failed = self.write(&mut doc, render).is_some();
        for (path, f) in std::mem::take(&mut self.companions) {
            match failed {
                true => drop(f),
                false => {
                    if let Err(e) = f.commit() {
                        iolab_core::say!(
                            "{}: {}: cannot write: {e}",
                            self.head.prog,
                            path.display()
                        );
                        let path = Some(path.display().to_string());
                        let failure = Failure::io("write", path, &e).of_kind(FailureKind::Output);
                        fold_output(&mut doc.outcome, failure);
                    }
                }
            }
        }
        if let Err(f) = self.store.record(&doc, render.lost) {
            iolab_core::say!("{}: {f}", self.head.prog);
            fold_output(&mut doc.outcome, f);
        }
        // One that came while the outputs were written: they were
        // written whole (a first signal does not cut a write short), and
        // record the run as it was when they were begun.
        if self.stopped_late(&mut doc.outcome) {
            iolab_core::say!(
                "{}: {STOPPED_LATE}; its outputs were written whole before the stop was seen",
                self.head.prog
            );
        }
        doc.outcome
    }

    /// Turns a completed `outcome` into an interrupted one when a signal
    /// has come (see [`crate::signals::signalled`]) and the run did not
    /// pass it on; true when it did.
    fn stopped_late(&self, outcome: &mut Outcome) -> bool {
        let done = matches!(outcome, Outcome::Completed | Outcome::TimeLimit { .. });
        if !done || self.signals_passed_on || !crate::signals::signalled() {
            return false;
        }
        *outcome = Outcome::Interrupted;
        true
    }
}

/// An output or a record that failed after the run makes a completed run
/// an error (exit 1); an interrupted or failed run keeps its outcome.
fn fold_output(outcome: &mut Outcome, f: Failure) {
    if !outcome.is_failure() && *outcome != Outcome::Interrupted {
        *outcome = Outcome::Error(f);
    }
}
