//! A run, process by process: the checks and choices made once (the
//! bucket, the run's prefix, `--list-existing`'s listing: rank 0 asks,
//! every rank hears), the workers as a team of threads on the
//! communicator, `--autoterm`'s watcher beside them, and the merge of
//! every rank's record into one report (counts added, histograms merged
//! bucket by bucket).

use crate::analysis::analyse;
use crate::autoterm::Series;
use crate::config::{AutoTerm, Bench, Config};
use crate::error::ConfigError;
use crate::hosts::Hosts;
use crate::limit::Limiter;
use crate::listing::{stopped, Tokens, MAX_LIST_PAGES};
use crate::live::{Live, Phase};
use crate::mix::Mix;
use crate::record::{Recorder, RecorderWire};
use crate::result::{Ended, Left, PhaseReport, Report, Requests};
use crate::worker::{self, Shared, WorkerOut};
use iolab_backend::s3::{check_key, Endpoint, Listed};
use iolab_comm::{run_team, Transport};
use iolab_core::clock::mono_ns;
use iolab_core::{Failure, Outcome};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use thiserror::Error;

/// What a run needs: the checked configuration, one endpoint per
/// `--host` (with the credentials), the processes, and the live view.
pub struct Run<'a> {
    /// The configuration.
    pub cfg: &'a Config,
    /// One endpoint per `cfg.hosts`, in order.
    pub endpoints: &'a [Endpoint],
    /// The processes (one, or MPI ranks).
    pub transport: Arc<dyn Transport>,
    /// This process's live view (its workers: `cfg.concurrent / ranks`).
    pub live: &'a Live,
    /// The run's cancellation token (the session's): workers stop at
    /// their next request once it is cancelled.
    pub cancel: &'a iolab_core::CancelToken,
    /// `--live`'s board (None: no live figures).
    pub board: Option<&'a iolab_core::live::Board>,
}

/// Why a run did not start.
#[derive(Debug, Error)]
pub enum NotStarted {
    /// Bad input, or a bucket that is not there: nothing was sent but
    /// the checks (exit 2).
    #[error("{0}")]
    Refused(String),
    /// The service could not be asked (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl From<ConfigError> for NotStarted {
    fn from(e: ConfigError) -> Self {
        NotStarted::Refused(e.to_string())
    }
}

/// The first and last bytes of every PUT are random; larger than this
/// share of the memory the process may use is refused.
const BODY_SHARE_OF_MEMORY: u64 = 2;

/// Runs the benchmark on this process's share of the workers; every
/// rank returns the same merged report.
pub fn run(r: &Run) -> Result<Report, NotStarted> {
    let cfg = r.cfg;
    let t = &*r.transport;
    cfg.validate(t.size())?;
    if r.endpoints.len() != cfg.hosts.len() {
        return Err(NotStarted::Refused("one endpoint per --host".into()));
    }
    let body_len = body_len(cfg)?;
    let mut other = Requests::default();
    check_bucket(t, &r.endpoints[0], &mut other)?;
    let run_prefix = run_prefix(t, cfg);
    let (existing, unaddressable) = existing(t, cfg, &r.endpoints[0], &mut other, r.cancel)?;
    let local = cfg.concurrent / t.size();
    let mut body = vec![0u8; body_len];
    iolab_core::random::scramble(&mut body, cfg.seed ^ 0xb0d7);
    let sh = Shared {
        cfg,
        endpoints: r.endpoints,
        hosts: Hosts::new(r.endpoints.len()),
        limiter: cfg
            .rps_limit
            .map(|rps| Limiter::new(rps / t.size() as f64, local as u32)),
        mix: (cfg.bench == Bench::Mixed).then(|| Mix::new(&cfg.distrib)),
        run_prefix: run_prefix.clone(),
        existing,
        body,
        live: r.live,
        cancel: r.cancel,
        board: r.board,
        timed_start: std::sync::OnceLock::new(),
        halt: AtomicBool::new(false),
        steady_s: Mutex::new(None),
        local_workers: local,
        ops: cfg.ops(),
        segments: (cfg.duration_s / cfg.segment_s).ceil() as usize + 1,
    };
    let outs = std::thread::scope(|s| {
        if let Some(rule) = cfg.autoterm {
            let sh = &sh;
            s.spawn(move || watch(sh, rule));
        }
        let outs = run_team(r.transport.clone(), local, |comm| worker::run(comm, &sh));
        r.live.set_phase(Phase::Done);
        outs
    });
    let mut mine = ProcessOut::of(outs, r.endpoints);
    mine.other.merge(&other);
    let all = gather(t, &mine);
    Ok(report(cfg, run_prefix, t.size(), &all, unaddressable))
}

/// Bytes of the body buffer every PUT sends part of.
fn body_len(cfg: &Config) -> Result<usize, NotStarted> {
    let want = match cfg.bench {
        Bench::Multipart => cfg.part_size,
        Bench::Put | Bench::Mixed => cfg.sizes.max(),
        _ if cfg.list_existing => 0,
        _ => cfg.sizes.max(),
    };
    let limit = iolab_core::env::memory_limit();
    if want > limit.bytes / BODY_SHARE_OF_MEMORY {
        let opt = match cfg.bench {
            Bench::Multipart => "--part.size",
            _ => "--obj.size",
        };
        return Err(NotStarted::Refused(format!(
            "{opt}: objects of {want} bytes are sent from one buffer of that size, more than half of {} ({} bytes)",
            limit.source, limit.bytes
        )));
    }
    usize::try_from(want).map_err(|_| NotStarted::Refused(format!("{want} bytes: too large")))
}

/// Rank 0's answer to `ask`, heard by every rank.
fn from_rank0(t: &dyn Transport, ask: impl FnOnce() -> Vec<u8>) -> Vec<u8> {
    let mine = if t.rank() == 0 { ask() } else { Vec::new() };
    t.all_gather(&mine).into_iter().next().unwrap_or_default()
}

/// The bucket must exist: iolab makes none and wipes none.
fn check_bucket(t: &dyn Transport, ep: &Endpoint, other: &mut Requests) -> Result<(), NotStarted> {
    if t.rank() == 0 {
        other.head += 1;
    }
    let answer = from_rank0(t, || match ep.bucket_exists() {
        Ok(true) => b"ok".to_vec(),
        Ok(false) => b"missing".to_vec(),
        Err(e) => format!("error:{e}").into_bytes(),
    });
    match answer.as_slice() {
        b"ok" => Ok(()),
        b"missing" => Err(NotStarted::Refused(format!(
            "--bucket {}: the bucket does not exist at {}; iolab s3bench works in a bucket that exists and removes only what it made (make it first, for example: aws --endpoint-url {} s3 mb s3://{})",
            ep.bucket(), ep.url(), ep.url(), ep.bucket()
        ))),
        other => Err(NotStarted::Failed(format!(
            "cannot reach the S3 service: {}; check --host and the credentials",
            String::from_utf8_lossy(other.strip_prefix(b"error:").unwrap_or(other))
        ))),
    }
}

/// `PREFIX/iolab-s3bench.SECONDS-PID-NONCE/`, chosen by rank 0.
fn run_prefix(t: &dyn Transport, cfg: &Config) -> String {
    let tag = from_rank0(t, || {
        let now = iolab_core::clock::wall_ns();
        let nonce = iolab_core::random::mix(now ^ u64::from(std::process::id())) & 0xffff;
        format!(
            "iolab-s3bench.{}-{}-{nonce:04x}",
            now / 1_000_000_000,
            std::process::id()
        )
        .into_bytes()
    });
    format!("{}{}/", cfg.prefix, String::from_utf8_lossy(&tag))
}

/// `--list-existing`: the objects under `--prefix` (at most
/// `--objects`, 0 for all), listed by rank 0, and how many listed
/// objects were passed over because no request can name their key.
fn existing(
    t: &dyn Transport,
    cfg: &Config,
    ep: &Endpoint,
    other: &mut Requests,
    cancel: &iolab_core::CancelToken,
) -> Result<(Vec<Listed>, u64), NotStarted> {
    if !cfg.list_existing {
        return Ok((Vec::new(), 0));
    }
    let mut pages = 0;
    let bytes = from_rank0(t, || {
        let r = list_all(ep, &cfg.prefix, cfg.objects, &mut pages, cancel);
        let r = r.map(|v| v.into_iter().map(|o| (o.key, o.size)).collect::<Vec<_>>());
        serde_json::to_vec(&r.map_err(|e| e.to_string())).unwrap_or_default()
    });
    other.list += pages;
    let listed: Result<Vec<(String, u64)>, String> =
        serde_json::from_slice(&bytes).map_err(|e| NotStarted::Failed(e.to_string()))?;
    let listed = listed.map_err(|e| NotStarted::Failed(format!("--list-existing: {e}")))?;
    // A key with a `.`/`..` segment would be resolved as a path on its
    // way (and read another object), one over 1024 bytes is refused:
    // such objects are passed over, and the run says how many.
    let all = listed.len();
    let usable: Vec<Listed> = listed
        .into_iter()
        .filter(|(key, _)| check_key(key).is_ok())
        .map(|(key, size)| Listed { key, size })
        .collect();
    let unaddressable = (all - usable.len()) as u64;
    if usable.is_empty() {
        let why = match unaddressable {
            0 => String::new(),
            n => format!(
                " that a request can name ({n} listed have a `.` or `..` segment or over 1024 bytes in their key)"
            ),
        };
        return Err(NotStarted::Refused(format!(
            "--list-existing: no object under s3://{}/{}{why}",
            cfg.bucket, cfg.prefix
        )));
    }
    Ok((usable, unaddressable))
}

fn list_all(
    ep: &Endpoint,
    prefix: &str,
    most: u64,
    pages: &mut u64,
    cancel: &iolab_core::CancelToken,
) -> std::io::Result<Vec<Listed>> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    let mut tokens = Tokens::default();
    for _ in 0..MAX_LIST_PAGES {
        if cancel.is_cancelled() {
            return Err(stopped());
        }
        *pages += 1;
        let page = ep.list(prefix, 1000, token.as_deref())?;
        out.extend(page.objects.into_iter().filter(|o| !o.key.ends_with('/')));
        token = tokens.next(page.next)?;
        if token.is_none() || (most > 0 && out.len() as u64 >= most) {
            if most > 0 {
                out.truncate(most as usize);
            }
            return Ok(out);
        }
    }
    Err(std::io::Error::other(format!(
        "LIST of {prefix}: more than {MAX_LIST_PAGES} pages"
    )))
}

/// `--autoterm`'s watcher: samples the local totals every 0.1 s and
/// stops the timed phase once they are steady.
fn watch(sh: &Shared, rule: AutoTerm) {
    let by_bytes = matches!(sh.cfg.bench, Bench::Get | Bench::Put | Bench::Multipart);
    let mut series = Series::new();
    let mut checked = 0u64;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if sh.live.phase() >= Phase::Cleaning {
            return;
        }
        let Some(start) = sh.live.timed_start_ns() else {
            continue;
        };
        let at = mono_ns().saturating_sub(start);
        let total = match by_bytes {
            true => sh.live.bytes(),
            false => sh.live.requests(),
        };
        series.push(at, total);
        if at >= checked + 1_000_000_000 {
            checked = at;
            if let Some(s) = series.steady(&rule) {
                *sh.steady_s.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
                sh.halt.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// One process's workers, merged, as sent to the others.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ProcessOut {
    rec: RecorderWire,
    prepare: PhaseReport,
    cleanup: PhaseReport,
    left_objects: u64,
    left_bytes: u64,
    timed_end_ns: u64,
    ended: Ended,
    failure: Option<Failure>,
    skipped: u64,
    timed: Requests,
    other: Requests,
    listed: Option<(u64, u64)>,
    retries: u64,
}

impl ProcessOut {
    fn empty(retries: u64) -> Self {
        ProcessOut {
            rec: RecorderWire::default(),
            prepare: PhaseReport::default(),
            cleanup: PhaseReport::default(),
            left_objects: 0,
            left_bytes: 0,
            timed_end_ns: 0,
            ended: Ended::Duration,
            failure: None,
            skipped: 0,
            timed: Requests::default(),
            other: Requests::default(),
            listed: None,
            retries,
        }
    }

    fn of(outs: Vec<WorkerOut>, endpoints: &[Endpoint]) -> Self {
        let mut rec: Option<Recorder> = None;
        let mut p = ProcessOut::empty(endpoints.iter().map(Endpoint::retries).sum());
        for w in outs {
            match rec.as_mut() {
                Some(r) => r.merge(&w.rec),
                None => rec = Some(w.rec.clone()),
            }
            p.add(&WorkerPart::of(&w));
        }
        if let Some(r) = rec {
            p.rec = r.to_wire();
        }
        p
    }

    fn add(&mut self, w: &WorkerPart) {
        self.prepare.merge(&w.prepare);
        self.cleanup.merge(&w.cleanup);
        self.left_objects += w.left.0;
        self.left_bytes += w.left.1;
        self.timed_end_ns = self.timed_end_ns.max(w.timed_end_ns);
        self.ended = self.ended.worst(w.ended);
        if self.failure.is_none() {
            self.failure.clone_from(&w.failure);
        }
        self.skipped += w.skipped;
        self.timed.merge(&w.timed);
        self.other.merge(&w.other);
        self.listed = self.listed.or(w.listed);
    }
}

/// The counts of a worker or a process, for [`ProcessOut::add`].
struct WorkerPart {
    prepare: PhaseReport,
    cleanup: PhaseReport,
    left: (u64, u64),
    timed_end_ns: u64,
    ended: Ended,
    failure: Option<Failure>,
    skipped: u64,
    timed: Requests,
    other: Requests,
    listed: Option<(u64, u64)>,
}

impl WorkerPart {
    fn of(w: &WorkerOut) -> Self {
        WorkerPart {
            prepare: w.prepare,
            cleanup: w.cleanup,
            left: (w.left_objects, w.left_bytes),
            timed_end_ns: w.timed_end_ns,
            ended: w.ended,
            failure: w.failure.clone(),
            skipped: w.skipped,
            timed: w.timed,
            other: w.other,
            listed: w.listed,
        }
    }

    fn of_process(p: &ProcessOut) -> Self {
        WorkerPart {
            prepare: p.prepare,
            cleanup: p.cleanup,
            left: (p.left_objects, p.left_bytes),
            timed_end_ns: p.timed_end_ns,
            ended: p.ended,
            failure: p.failure.clone(),
            skipped: p.skipped,
            timed: p.timed,
            other: p.other,
            listed: p.listed,
        }
    }
}

/// Every process's part, merged (the same on every rank).
fn gather(t: &dyn Transport, mine: &ProcessOut) -> ProcessOut {
    let bytes = serde_json::to_vec(mine).unwrap_or_default();
    let parts: Vec<ProcessOut> = t
        .all_gather(&bytes)
        .iter()
        .filter_map(|b| serde_json::from_slice(b).ok())
        .collect();
    let mut rec: Option<Recorder> = None;
    let mut all = ProcessOut::empty(0);
    for p in &parts {
        let r = Recorder::from_wire(&p.rec);
        match rec.as_mut() {
            Some(x) => x.merge(&r),
            None => rec = Some(r),
        }
        all.add(&WorkerPart::of_process(p));
        all.retries += p.retries;
    }
    if parts.len() != t.size() {
        all.failure
            .get_or_insert_with(|| Failure::other("merge", "a rank's figures could not be read"));
    }
    if let Some(r) = rec {
        all.rec = r.to_wire();
    }
    all
}

/// The report of the merged run.
fn report(
    cfg: &Config,
    run_prefix: String,
    ranks: usize,
    all: &ProcessOut,
    unaddressable: u64,
) -> Report {
    let rec = Recorder::from_wire(&all.rec);
    let timed_s = all.timed_end_ns as f64 / 1e9;
    let ops = match all.ended {
        Ended::NotRun => Vec::new(),
        _ => analyse(&rec, timed_s, &cfg.hosts),
    };
    let left = Left {
        objects: all.left_objects,
        bytes: all.left_bytes,
        listed_objects: all.listed.map(|l| l.0),
        listed_bytes: all.listed.map(|l| l.1),
    };
    let mut r = Report {
        bench: cfg.bench,
        hosts: cfg.hosts.clone(),
        bucket: cfg.bucket.clone(),
        run_prefix,
        ranks,
        workers: cfg.concurrent,
        seed: cfg.seed,
        prepare: all.prepare,
        timed_s,
        ended: all.ended,
        ops,
        cleanup: all.cleanup,
        left,
        requests_timed: all.timed,
        requests_other: all.other,
        retries: all.retries,
        skipped: all.skipped,
        unaddressable,
        outcome: Outcome::Completed,
        notes: Vec::new(),
    };
    r.outcome = outcome(&r, all.failure.clone(), rec.errors());
    r.notes = crate::notes::of(&r);
    r
}

fn outcome(r: &Report, failure: Option<Failure>, errors: u64) -> Outcome {
    if let Some(f) = failure {
        return Outcome::Error(f);
    }
    if r.ended == Ended::Interrupted {
        return Outcome::Interrupted;
    }
    if errors > 0 {
        let first = r
            .ops
            .iter()
            .find_map(|o| o.first_error.clone())
            .unwrap_or_default();
        return Outcome::Error(Failure::other(
            "requests",
            format!("{errors} requests failed; the first: {first}"),
        ));
    }
    if !r.left.agrees() {
        return Outcome::Error(Failure::other(
            "check",
            format!(
                "the run counted {} objects ({} bytes) left under s3://{}/{}, a LIST found {} ({} bytes)",
                r.left.objects,
                r.left.bytes,
                r.bucket,
                r.run_prefix,
                r.left.listed_objects.unwrap_or(0),
                r.left.listed_bytes.unwrap_or(0)
            ),
        ));
    }
    Outcome::Completed
}
