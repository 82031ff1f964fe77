//! The run: the 12 scored phases in IO500's order (and the timestamp
//! file between mdtest-easy-write and ior-hard-write; in extended mode
//! the extended phases too), each on every task of the communicator,
//! then the score and the final cleanup.

use crate::commands::{equivalent_command, mdtest_args};
use crate::config::Config;
use crate::find::{self, Criteria, FindResult};
use crate::ior::{self, IorResult, IorSpec};
use crate::mdworkbench::{self, MdwbResult, MdwbSpec};
use crate::phase::{Layout, Phase};
use crate::results::{
    score, score_extended, unit, CommInfo, Detail, Io500Payload, MdtestFigures, PhaseReport,
    RunResult,
};
use iolab_backend::remove::{Left, Removal, Why};
use iolab_backend::{c_path, Backend, OpenOptions};
use iolab_comm::{failure::first_rank_failure, run_subset, Transport};
use iolab_core::live::Recorder;
use iolab_core::{Failure, Outcome};
use ior::Access;
use std::sync::Arc;
use std::time::Instant;

/// Receives each phase's report as it ends (on rank 0 only).
pub trait RunObserver: Sync {
    /// A phase is about to start.
    fn phase_started(&self, _phase: Phase) {}
    /// A phase ended (or was skipped).
    fn phase_done(&self, _report: &PhaseReport) {}
    /// The final cleanup is about to remove `entries` entries the phases
    /// left under `datadir` (counted by listing; a run that completed
    /// leaves none).
    fn cleanup_started(&self, _datadir: &std::path::Path, _entries: u64) {}
    /// The final cleanup has removed `removed` entries so far (called
    /// every 1024).
    fn cleanup_progress(&self, _removed: u64) {}
    /// The final cleanup is done.
    fn cleanup_done(&self, _removal: &Removal) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl RunObserver for Silent {}

/// Everything a run needs, built before it starts.
pub struct Runner<'a> {
    /// The validated configuration.
    pub cfg: &'a Config,
    /// Where the data goes (datadir with its timestamp).
    pub layout: Layout,
    /// The resultdir of this run (for the payload).
    pub resultdir: String,
    /// The processes.
    pub transport: Arc<dyn Transport>,
    /// Tasks (threads) per process.
    pub threads: usize,
    /// The storage backend.
    pub backend: &'a dyn Backend,
    /// Progress and per-phase reports.
    pub observer: &'a dyn RunObserver,
    /// Live figures (`--live`): the mdtest phases record their items,
    /// the ior phases their transfers, the find phases the entries they
    /// check, md-workbench's every set and object operation, here under
    /// the phase's IO500 name.
    pub live: Option<&'a iolab_core::live::Board>,
    /// The run's cancellation token (the session's): every phase and
    /// wait looks at it, and a phase not started once it is cancelled
    /// is skipped.
    pub cancel: &'a iolab_core::CancelToken,
    /// The run directories that were in the datadir before the run
    /// ([`crate::datadir::Prepared::kept`]): the final cleanup empties
    /// them and keeps them.
    pub kept: Vec<&'static str>,
}

/// What the phases hand on to later ones.
#[derive(Default)]
struct State {
    reports: Vec<PhaseReport>,
    ior_easy_transfers: Option<u64>,
    ior_hard_transfers: Option<u64>,
    timestamp_ns: Option<u64>,
    /// This process made the timestamp file (so the cleanup may remove it).
    timestamp_made: bool,
    /// md-workbench's objects per set and per iteration, once sized.
    mdwb_sizing: Option<(u64, u64)>,
    /// The index of the oldest object of every md-workbench set.
    mdwb_index: u64,
    outcome: Option<Outcome>,
    notes: Vec<String>,
}

impl State {
    fn succeeded(&self, p: Phase) -> bool {
        self.reports.iter().any(|r| {
            r.phase == p
                && !matches!(
                    r.detail,
                    Detail::Skipped(_) | Detail::Failed(_) | Detail::Interrupted
                )
        })
    }

    /// The mdtest bases whose stonewall file this run made: those whose
    /// write phase ran (the run refused to start when one was there).
    fn stonewall_files_made(&self) -> Vec<&'static str> {
        let ran = |p: Phase| {
            self.reports
                .iter()
                .any(|r| r.phase == p && !matches!(r.detail, Detail::Skipped(_)))
        };
        [Phase::MdtestEasyWrite, Phase::MdtestHardWrite]
            .into_iter()
            .filter(|&p| ran(p))
            .map(Phase::base_section)
            .collect()
    }
}

/// What the run made that only it may remove: read by
/// [`Runner::final_cleanup`].
#[derive(Debug, Clone, Default)]
pub struct Made {
    /// The mdtest bases whose stonewall file this run wrote.
    walls: Vec<&'static str>,
    /// This process made the timestamp file.
    stamp: bool,
}

/// A phase that could not complete: how the run ends, and the message.
type PhaseError = (Outcome, String);

impl Runner<'_> {
    /// All tasks of the run.
    pub fn tasks(&self) -> usize {
        self.threads * self.transport.size()
    }

    fn leader(&self) -> bool {
        self.transport.rank() == 0
    }

    /// Runs every phase; every rank returns the same figures, and what
    /// the final cleanup ([`Runner::final_cleanup`]) needs to know of
    /// the run. The results are whole before anything is removed, so
    /// that a cleanup stopped (or killed) cannot take them with it, as
    /// the app prints its score before it cleans up.
    pub fn run(&self) -> (RunResult, Made) {
        let mut st = State::default();
        for &p in self.cfg.phases() {
            if self.leader() {
                self.observer.phase_started(p);
            }
            let report = self.phase(&mut st, p);
            if self.leader() {
                self.observer.phase_done(&report);
            }
            st.reports.push(report);
            if p == Phase::timestamp_after(self.cfg.extended_mode) {
                self.timestamp(&mut st);
            }
        }
        self.transport.barrier();
        let made = Made {
            walls: st.stonewall_files_made(),
            stamp: st.timestamp_made,
        };
        (self.finish(st), made)
    }

    /// Removes what the phases left under the datadir (rank 0 alone, after
    /// [`Runner::run`]), telling the observer how much there is and how
    /// far it got; `go_on` is asked every 1024 entries (false stops it,
    /// and what is not removed is listed as left). The private files go
    /// only when this run made them: a stonewall file when its mdtest
    /// write phase ran, the timestamp file when it was made here; a run
    /// directory that was there before the run is emptied and stays.
    pub fn final_cleanup(&self, made: &Made, go_on: &(dyn Fn() -> bool + Sync)) -> Removal {
        let be = self.backend;
        let datadir = &self.layout.datadir;
        let mut out = crate::cleanup::remove_stonewall_files(&self.layout, &made.walls);
        let stamp = made.stamp;
        let data = match crate::cleanup::open_datadir(be, &self.cfg.datadir, datadir) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
            Err(e) => {
                let why = Why::Failed(format!("cannot open: {e}"));
                out.left.push(Left {
                    path: datadir.clone(),
                    why,
                });
                return out;
            }
        };
        let kept = &self.kept;
        let (entries, inside) = crate::cleanup::count_run_data(be, &data, stamp, kept);
        if inside == 0 {
            // The phases removed what they made: only their directories.
            out.merge(crate::cleanup::remove_run_data(
                be, &data, datadir, stamp, kept, None,
            ));
            return out;
        }
        self.observer.cleanup_started(datadir, entries);
        let observer = self.observer;
        let tick = move |n: u64| {
            observer.cleanup_progress(n);
            go_on()
        };
        let removal = crate::cleanup::remove_run_data(be, &data, datadir, stamp, kept, Some(&tick));
        self.observer.cleanup_done(&removal);
        out.merge(removal);
        out
    }

    fn finish(&self, st: State) -> RunResult {
        let invalid = crate::validity::reasons(self.cfg, &st.reports);
        let mut notes = st.notes;
        if !self.cfg.extended.is_empty() && !self.cfg.extended_mode {
            notes.push(format!(
                "extended sections [{}] were read and not run (--mode=extended runs md-workbench, find-easy, find-hard and ior-rnd4K-easy-read)",
                self.cfg.extended.join("], [")
            ));
        }
        let extended = self.cfg.extended_mode.then(|| {
            let why = crate::validity::reasons_extended(self.cfg, &st.reports);
            (score_extended(&st.reports), why.is_empty())
        });
        let payload = Io500Payload {
            datadir: self.layout.datadir.display().to_string(),
            resultdir: self.resultdir.clone(),
            comm: CommInfo {
                kind: self.transport.kind().into(),
                ranks: self.transport.size() as u64,
                tasks_per_rank: self.threads as u64,
                tasks: self.tasks() as u64,
            },
            score: score(&st.reports),
            score_extended: extended.map(|e| e.0),
            valid_extended: extended.map(|e| e.1),
            valid: invalid.is_empty(),
            invalid_reasons: invalid,
            phases: st.reports,
            notes,
        };
        RunResult {
            payload,
            outcome: st.outcome.unwrap_or(Outcome::Completed),
        }
    }

    /// Runs one phase, or says why it did not run.
    fn phase(&self, st: &mut State, p: Phase) -> PhaseReport {
        let cmd = self.command(st, p);
        let skip = |why: String| PhaseReport::not_run(p, cmd.clone(), Detail::Skipped(why));
        // Agreed by every rank, so that none starts a phase alone.
        let stop = self.cancel.is_cancelled();
        let all = self.transport.all_gather(&[u8::from(stop)]);
        if all.iter().any(|v| v.first() == Some(&1)) && st.outcome.is_none() {
            st.outcome = Some(Outcome::Interrupted);
        }
        if st.outcome.is_some() {
            return skip("the run stopped before this phase".into());
        }
        if !self.cfg.runs(p) {
            return skip("run = FALSE in the ini".into());
        }
        if let Some(dep) = p.depends_on().filter(|d| !st.succeeded(*d)) {
            return skip(format!(
                "it works on what {} writes, which did not run",
                dep.name()
            ));
        }
        if matches!(p, Phase::Find | Phase::FindHard) && st.timestamp_ns.is_none() {
            return skip("the timestamp file was not made".into());
        }
        self.drop_caches(st);
        self.pause(p);
        self.transport.barrier();
        let t0 = Instant::now();
        let detail = match self.run_phase(st, p) {
            Ok(d) => d,
            Err((outcome, msg)) => {
                let detail = match outcome {
                    Outcome::Interrupted => Detail::Interrupted,
                    _ => Detail::Failed(msg),
                };
                st.outcome = Some(outcome);
                detail
            }
        };
        let time_s = t0.elapsed().as_secs_f64();
        PhaseReport {
            phase: p,
            name: p.name().into(),
            score: phase_score(&detail),
            unit: unit(p).into(),
            time_s,
            command: cmd,
            detail,
        }
    }

    fn run_phase(&self, st: &mut State, p: Phase) -> Result<Detail, PhaseError> {
        match p {
            Phase::IorEasyWrite | Phase::IorHardWrite => {
                let r = self.ior(p, None)?;
                match p {
                    Phase::IorEasyWrite => st.ior_easy_transfers = Some(r.transfers_per_task),
                    _ => st.ior_hard_transfers = Some(r.transfers_per_task),
                }
                Ok(Detail::Ior(r))
            }
            Phase::IorEasyRead => self.ior(p, st.ior_easy_transfers).map(Detail::Ior),
            Phase::IorHardRead => self.ior(p, st.ior_hard_transfers).map(Detail::Ior),
            Phase::IorRnd4kEasyRead => self.ior(p, st.ior_easy_transfers).map(Detail::Ior),
            Phase::Find | Phase::FindHard | Phase::FindEasy => {
                self.find(p, st.timestamp_ns.unwrap_or(0)).map(Detail::Find)
            }
            Phase::MdworkbenchCreate | Phase::MdworkbenchBench | Phase::MdworkbenchDelete => {
                self.mdworkbench(st, p).map(Detail::Mdworkbench)
            }
            _ => self.mdtest(p).map(Detail::Mdtest),
        }
    }

    /// The phase's command line (a data read's with its write's count,
    /// an md-workbench phase's with its sizing, made when
    /// mdworkbench-create is about to run).
    fn command(&self, st: &mut State, p: Phase) -> String {
        // A read's count is the write's, known once that ran.
        let read_count = match p {
            Phase::IorEasyRead => st.ior_easy_transfers,
            Phase::IorHardRead => st.ior_hard_transfers,
            _ => None,
        };
        if read_count.is_some() {
            let tasks = self.threads as u64;
            return crate::commands::ior_command(self.cfg, &self.layout, p, read_count, tasks);
        }
        if p.base_section() != crate::mdworkbench::DIR {
            return equivalent_command(self.cfg, &self.layout, p, self.threads as u64);
        }
        // Sized only when the create will run (the note would say
        // otherwise of a phase that did not).
        if p == Phase::MdworkbenchCreate && self.cfg.runs(p) && st.outcome.is_none() {
            st.mdwb_sizing = Some(self.mdwb_sizing(st));
        }
        crate::commands::mdworkbench_command(self.cfg, &self.layout, p, st.mdwb_sizing)
    }

    /// md-workbench's objects per set and per iteration: the ini's, or
    /// sized from mdtest-easy-write's rate as the app does (noting it when
    /// that phase did not run).
    fn mdwb_sizing(&self, st: &mut State) -> (u64, u64) {
        if let Some(s) = self.cfg.mdworkbench.sizing {
            return s;
        }
        let rate = st.reports.iter().find_map(|r| match &r.detail {
            Detail::Mdtest(m) if r.phase == Phase::MdtestEasyWrite => Some(m.rate),
            _ => None,
        });
        if rate.is_none_or(|r| r <= 0.0) {
            st.notes.push("md-workbench: mdtest-easy-write did not run; its objects are sized from 10 kIOPS, as the io500 app does".into());
        }
        let n = crate::mdworkbench::app_sizing(rate, self.cfg.stonewall_s, self.tasks() as u64);
        // Rank 0's, on every rank (as the app broadcasts its rate), so
        // that no rank works on other sets than its peers.
        let all = self.transport.all_gather(&n.to_le_bytes());
        let n = all
            .first()
            .and_then(|b| b.as_slice().try_into().ok())
            .map(u64::from_le_bytes)
            .unwrap_or(n);
        (n, n)
    }

    /// An md-workbench phase on every task.
    fn mdworkbench(&self, st: &mut State, p: Phase) -> Result<MdwbResult, PhaseError> {
        let (precreate_per_set, files_per_proc) = st.mdwb_sizing.unwrap_or_default();
        let spec = MdwbSpec {
            dir: self.layout.path(crate::mdworkbench::DIR),
            precreate_per_set,
            files_per_proc,
            waiting_factor: self.cfg.mdworkbench.waiting_factor,
            queue_depth: self.cfg.md_queue_depth,
        };
        let (be, first, board) = (self.backend, st.mdwb_index, self.live);
        let out = run_subset(self.transport.clone(), self.threads, self.tasks(), |c| {
            let live = board.map_or_else(Recorder::off, |b| b.recorder(p.name(), c.task()));
            match p {
                Phase::MdworkbenchCreate => mdworkbench::precreate(c, be, &spec, live),
                Phase::MdworkbenchBench => mdworkbench::bench(c, be, &spec, first, live),
                _ => mdworkbench::cleanup(c, be, &spec, first, live),
            }
        });
        let r = out.into_iter().next().unwrap_or_default();
        st.mdwb_index = r.next_index;
        if let Some(f) = &r.failure {
            return Err((Outcome::Error(f.clone()), f.to_string()));
        }
        if r.interrupted {
            return Err((Outcome::Interrupted, "interrupted".into()));
        }
        Ok(r)
    }

    /// The spec of ior-easy or ior-hard.
    pub fn ior_spec(&self, p: Phase) -> IorSpec {
        ior::spec(self.cfg, &self.layout, p)
    }

    /// A data phase: a write when `transfers` is None, else a read of
    /// that many transfers per task.
    fn ior(&self, p: Phase, transfers: Option<u64>) -> Result<IorResult, PhaseError> {
        let spec = self.ior_spec(p);
        let (be, cancel) = (self.backend, self.cancel);
        let live = iolab_ior::ctx::Live {
            board: self.live,
            name: Some(p.name()),
        };
        let out = run_subset(self.transport.clone(), self.threads, self.tasks(), |c| {
            let access = match transfers {
                None => Access::Write,
                Some(_) if p == Phase::IorRnd4kEasyRead => Access::Random,
                Some(n) => Access::Read(n),
            };
            ior::run(c, be, &spec, access, cancel, live)
        });
        let r = out.into_iter().next().unwrap_or_default();
        if let Some(f) = &r.failure {
            return Err((Outcome::Error(f.clone()), f.to_string()));
        }
        if r.interrupted {
            return Err((Outcome::Interrupted, "interrupted".into()));
        }
        Ok(r)
    }

    /// find (the whole datadir), find-easy (mdtest-easy, by name) or
    /// find-hard (mdtest-hard, find's criteria).
    fn find(&self, p: Phase, newer_than_ns: u64) -> Result<FindResult, PhaseError> {
        let (dirs, crit): (&[&str], _) = match p {
            Phase::FindEasy => (&["mdtest-easy"], Criteria::name_only()),
            Phase::FindHard => (&["mdtest-hard"], Criteria::hard(newer_than_ns)),
            _ => (&crate::cleanup::RUN_DIRS, Criteria::hard(newer_than_ns)),
        };
        let roots: Vec<_> = dirs
            .iter()
            .map(|d| self.layout.path(d))
            .filter(|d| {
                c_path(d)
                    .and_then(|c| self.backend.exists(&c))
                    .unwrap_or(false)
            })
            .collect();
        let (be, cancel, board) = (self.backend, self.cancel, self.live);
        let out = run_subset(self.transport.clone(), self.threads, self.tasks(), |c| {
            let live = board.map_or_else(Recorder::off, |b| b.recorder(p.name(), c.task()));
            find::run(c, be, &roots, crit, cancel, live)
        });
        let r = out.into_iter().next().unwrap_or_default();
        match &r.failure {
            Some(f) => Err((Outcome::Error(f.clone()), f.to_string())),
            None if self.cancel.is_cancelled() => Err((Outcome::Interrupted, "interrupted".into())),
            None => Ok(r),
        }
    }

    /// An mdtest phase through iolab's mdtest engine, with IO500's options.
    fn mdtest(&self, p: Phase) -> Result<MdtestFigures, PhaseError> {
        let args = mdtest_args(self.cfg, &self.layout, p, self.threads as u64);
        crate::mdphase::run(
            &args,
            p,
            self.transport.clone(),
            self.threads,
            self.backend,
            self.live,
            self.cancel,
        )
    }

    /// Makes the file find compares with (rank 0) and reads its time.
    fn timestamp(&self, st: &mut State) {
        if !self.cfg.run_timestamp || st.outcome.is_some() {
            return;
        }
        let path = self.layout.timestamp_file();
        let be = self.backend;
        let failed = |op: &'static str| {
            let path = path.display().to_string();
            move |e: std::io::Error| Failure::io(op, Some(path), &e)
        };
        let made = match self.leader() {
            true => c_path(&path)
                .and_then(|c| be.open(&c, OpenOptions::create_new()))
                .and_then(|h| {
                    // Made here (create_new): the cleanup's to remove.
                    st.timestamp_made = true;
                    be.close(h)
                })
                .map_err(failed("create")),
            false => Ok(()),
        };
        self.transport.barrier();
        let seen = made.and_then(|_| {
            c_path(&path)
                .and_then(|c| be.stat(&c))
                .map_err(failed("stat"))
        });
        // Every rank goes on, or none does; each learns what failed.
        let first = first_rank_failure(&*self.transport, seen.as_ref().err().cloned());
        match (seen, first) {
            (Ok(s), None) => {
                st.timestamp_ns = Some(s.mtime_ns);
                self.after_timestamp(s.mtime_ns);
            }
            (_, Some(f)) | (Err(f), None) => {
                st.notes.push(f.to_string());
                st.outcome = Some(Outcome::Error(f));
            }
        }
    }

    /// On a backend whose modification times are whole seconds (S3),
    /// waits until the clock is past the timestamp's second, so that
    /// every object a later phase makes is newer than the timestamp by
    /// find's `-newer` (strictly), and none made before it is.
    fn after_timestamp(&self, mtime_ns: u64) {
        let g = self.backend.mtime_granularity_ns();
        if g <= 1 {
            return;
        }
        let until = (mtime_ns / g + 1) * g;
        // Bounded: the backend's clock may be ahead of this one.
        for _ in 0..(4 * g / 10_000_000).max(1) {
            if iolab_core::clock::wall_ns() >= until || self.cancel.is_cancelled() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// `[debug] pause-dir`: rank 0 waits while `<pause-dir>/<phase>`
    /// exists (checked each second; a stop request ends the wait), the
    /// others at the barrier after it.
    fn pause(&self, p: Phase) {
        let Some(dir) = &self.cfg.pause_dir else {
            return;
        };
        if !self.leader() {
            return;
        }
        let file = dir.join(p.name());
        while file.exists() && !self.cancel.is_cancelled() {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }

    /// Drops the page cache of this node (`drop-caches = TRUE`).
    fn drop_caches(&self, st: &mut State) {
        if !self.cfg.drop_caches {
            return;
        }
        self.backend.sync_all();
        if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", b"3") {
            let note = format!("drop-caches: cannot write /proc/sys/vm/drop_caches: {e}");
            if !st.notes.contains(&note) {
                st.notes.push(note);
            }
        }
    }
}

/// A phase's score from its figures: GiB/s or kIOPS.
fn phase_score(d: &Detail) -> f64 {
    let per = |n: f64, s: f64| if s > 0.0 { n / s } else { 0.0 };
    match d {
        Detail::Ior(r) => per(r.bytes as f64, r.elapsed_s) / (1u64 << 30) as f64,
        Detail::Mdtest(m) => m.rate / 1000.0,
        Detail::Find(f) => per(f.total as f64, f.elapsed_s) / 1000.0,
        // md-workbench's rate: the benchmark's last iteration (the app's
        // second), or the precreate's or cleanup's.
        Detail::Mdworkbench(m) => m.scored().map(|f| f.ops_per_sec).unwrap_or(0.0) / 1000.0,
        Detail::Skipped(_) | Detail::Failed(_) | Detail::Interrupted => 0.0,
    }
}
