//! One worker (a task: a thread of a rank) through the run's phases:
//! prepare its share of the objects, run the timed loop, delete what it
//! made, and (task 0) list what is left. Every phase starts when all
//! workers of all ranks reach it (a barrier through `&dyn Comm`).
//!
//! Object `i` of the prepared ones belongs to worker `i % workers`, as
//! its number `i / workers`; a worker's later objects take the numbers
//! after those. An object's key is `RUN_PREFIX/WORKER/NUMBER` and its
//! size follows from the seed, the worker and the number, so any worker
//! on any rank can read any prepared object without being told about it.

use crate::config::{Bench, Config, Op};
use crate::hosts::Hosts;
use crate::limit::Limiter;
use crate::listing::{Tokens, MAX_LIST_PAGES};
use crate::live::{Live, Phase};
use crate::mix::{Mix, CYCLE};
use crate::record::{Recorder, Sample};
use crate::result::{Ended, PhaseReport, Requests};
use iolab_backend::s3::{stored_nothing, Endpoint, Listed};
use iolab_comm::Comm;
use iolab_core::clock::mono_ns;
use iolab_core::random::{below, mix, splitmix_nth};
use iolab_core::Failure;
use std::io::{self, ErrorKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What a worker waiting for its turn does next.
enum Turn {
    /// Send the next request.
    Go,
    /// The duration is over.
    Over,
    /// The run was stopped (a signal, autoterm, a failure).
    Stop,
}

/// Consecutive failed requests after which a worker stops the run.
const MAX_FAILED_IN_A_ROW: u32 = 100;
/// Bytes of a GET read at a time.
const SCRATCH_BYTES: usize = 256 << 10;
/// Longest sleep before looking at the stop flags again.
const NAP: Duration = Duration::from_millis(50);

/// What every worker of a process shares, built before they start.
pub(crate) struct Shared<'a> {
    pub cfg: &'a Config,
    pub endpoints: &'a [Endpoint],
    pub hosts: Hosts,
    pub limiter: Option<Limiter>,
    pub mix: Option<Mix>,
    /// Every key of the run starts with this.
    pub run_prefix: String,
    /// `--list-existing`: the objects listed before the run.
    pub existing: Vec<Listed>,
    /// The bytes every PUT sends (its first `size`), random.
    pub body: Vec<u8>,
    pub live: &'a Live,
    /// The run's token.
    pub cancel: &'a iolab_core::CancelToken,
    /// `--live`'s board: each worker records its requests there per op.
    pub board: Option<&'a iolab_core::live::Board>,
    /// The timed phase's start (as an `Instant` and in monotonic ns),
    /// set by the first worker to reach it: one start and one deadline
    /// for every worker of the process.
    pub timed_start: OnceLock<(Instant, u64)>,
    /// Stop the timed phase (autoterm, or a failure).
    pub halt: AtomicBool,
    /// How long the rate had been steady when autoterm stopped the run.
    pub steady_s: Mutex<Option<f64>>,
    pub local_workers: usize,
    pub ops: Vec<Op>,
    /// Segments the timed phase is expected to have.
    pub segments: usize,
}

/// What one worker did.
pub(crate) struct WorkerOut {
    pub rec: Recorder,
    pub prepare: PhaseReport,
    pub cleanup: PhaseReport,
    pub left_objects: u64,
    pub left_bytes: u64,
    pub timed_end_ns: u64,
    pub ended: Ended,
    pub failure: Option<Failure>,
    pub skipped: u64,
    pub timed: Requests,
    pub other: Requests,
    /// Task 0: (objects, bytes) a LIST of the run's prefix found at the end.
    pub listed: Option<(u64, u64)>,
}

/// The `--live` recorders of local worker `local`, one per op (by
/// [`Op::index`]); each records nothing when the op is not timed or no
/// board was given.
fn live_recorders(sh: &Shared, local: usize) -> Vec<iolab_core::live::Recorder> {
    let mut v: Vec<iolab_core::live::Recorder> = (0..crate::config::OPS)
        .map(|_| iolab_core::live::Recorder::off())
        .collect();
    if let Some(b) = sh.board {
        for op in &sh.ops {
            v[op.index()] = b.recorder(op.name(), local);
        }
    }
    v
}

/// Objects `0..objects` dealt round-robin: worker `task`'s count.
pub(crate) fn share(objects: u64, task: usize, tasks: usize) -> u64 {
    let (t, n) = (task as u64, tasks as u64);
    objects / n + u64::from(t < objects % n)
}

/// Runs worker `comm.task()` through every phase.
pub(crate) fn run(comm: &dyn Comm, sh: &Shared) -> WorkerOut {
    let mut w = Worker::new(comm, sh);
    comm.barrier();
    sh.live.set_phase(Phase::Preparing);
    let prepared = w.prepare();
    if !comm.any(!prepared) {
        comm.barrier();
        w.timed();
    } else if w.out.ended == Ended::Duration {
        w.out.ended = Ended::NotRun;
    }
    comm.barrier();
    sh.live.set_phase(Phase::Cleaning);
    if !sh.cfg.noclear {
        w.cleanup();
    }
    w.count_left();
    comm.barrier();
    if comm.task() == 0 {
        w.verify();
    }
    w.out
}

struct Worker<'s, 'a> {
    sh: &'s Shared<'a>,
    task: usize,
    tasks: usize,
    local: usize,
    /// The key of the current request, built here.
    key: String,
    /// LIST's prefix: this worker's objects, or `--prefix`.
    list_prefix: String,
    list_token: Option<String>,
    scratch: Vec<u8>,
    etags: Vec<String>,
    /// Numbers of this worker's objects now in the bucket.
    pool: Vec<u64>,
    next_seq: u64,
    object_seed: u64,
    rand_seed: u64,
    draws: u64,
    failed_in_a_row: u32,
    t0: Instant,
    /// `--live`: this worker's counters per op (by [`Op::index`]).
    live_ops: Vec<iolab_core::live::Recorder>,
    out: WorkerOut,
}

impl<'s, 'a> Worker<'s, 'a> {
    fn new(comm: &dyn Comm, sh: &'s Shared<'a>) -> Self {
        let (task, tasks) = (comm.task(), comm.tasks());
        let cfg = sh.cfg;
        let list_prefix = match cfg.list_existing {
            true => cfg.prefix.clone(),
            false => format!("{}{task}/", sh.run_prefix),
        };
        let segment_ns = (cfg.segment_s * 1e9) as u64;
        Worker {
            sh,
            task,
            tasks,
            local: task % sh.local_workers.max(1),
            key: String::with_capacity(sh.run_prefix.len() + 64),
            list_prefix,
            list_token: None,
            scratch: vec![0; SCRATCH_BYTES.min(sh.body.len().max(4096))],
            etags: Vec::with_capacity(cfg.parts as usize),
            pool: Vec::new(),
            next_seq: 0,
            object_seed: mix(cfg.seed.wrapping_add(task as u64 + 1)),
            // A stream of its own, apart from the objects' sizes.
            rand_seed: mix(mix(cfg.seed) ^ (task as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            draws: 0,
            failed_in_a_row: 0,
            t0: Instant::now(),
            live_ops: live_recorders(sh, task % sh.local_workers.max(1)),
            out: WorkerOut {
                rec: Recorder::new(&sh.ops, sh.endpoints.len(), segment_ns, sh.segments),
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
            },
        }
    }

    fn rand(&mut self) -> u64 {
        self.draws += 1;
        splitmix_nth(self.rand_seed, self.draws)
    }

    /// Size of object `seq` of worker `task`.
    fn size_of(&self, task: usize, seq: u64) -> u64 {
        // A multipart object is its parts, whatever --obj.size says.
        if self.sh.cfg.bench == crate::config::Bench::Multipart {
            return self.sh.cfg.part_size * u64::from(self.sh.cfg.parts);
        }
        let seed = match task == self.task {
            true => self.object_seed,
            false => mix(self.sh.cfg.seed.wrapping_add(task as u64 + 1)),
        };
        self.sh.cfg.sizes.pick(splitmix_nth(seed, seq))
    }

    /// Writes the key of object `seq` of worker `task` into `self.key`.
    fn set_key(&mut self, task: usize, seq: u64) {
        self.key.clear();
        self.key.push_str(&self.sh.run_prefix);
        push_u64(&mut self.key, task as u64);
        self.key.push('/');
        push_u64(&mut self.key, seq);
    }

    fn stopping(&self) -> bool {
        self.sh.cancel.is_cancelled() || self.sh.halt.load(Ordering::Relaxed)
    }

    /// Uploads this worker's share of the objects; false when it could not.
    fn prepare(&mut self) -> bool {
        let cfg = self.sh.cfg;
        if !cfg.bench.prepares() || cfg.list_existing {
            return true;
        }
        let t = Instant::now();
        let done = self.prepare_share();
        // Stopped or failed too: the time it took is true either way.
        self.out.prepare.elapsed_s = t.elapsed().as_secs_f64();
        done
    }

    /// [`Worker::prepare`]'s uploads; false when they stopped short.
    fn prepare_share(&mut self) -> bool {
        let cfg = self.sh.cfg;
        let mine = share(cfg.objects, self.task, self.tasks);
        for seq in 0..mine {
            if self.stopping() {
                self.out.ended = Ended::Interrupted;
                return false;
            }
            let size = self.size_of(self.task, seq);
            self.set_key(self.task, seq);
            let host = self.sh.hosts.pick();
            let r = self.sh.endpoints[host].put(&self.key, &self.sh.body[..size as usize]);
            self.sh.hosts.done(host, mono_ns());
            self.out.other.put += 1;
            // A PUT that failed without an answer (none in time) may
            // still have stored the object: cleanup deletes it, and what
            // is left is counted. One the service refused (4xx) or that
            // was never sent stored nothing, and is not counted.
            if !r.as_ref().is_err_and(stored_nothing) {
                self.pool.push(seq);
            }
            if let Err(e) = r {
                self.out.prepare.errors += 1;
                self.fail("prepare: PUT", &e);
                return false;
            }
            self.out.prepare.objects += 1;
            self.out.prepare.bytes += size;
            self.sh
                .live
                .slot(self.local)
                .prepared
                .store(seq + 1, Ordering::Relaxed);
        }
        self.next_seq = mine;
        true
    }

    /// The current request's object, `s3://BUCKET/KEY`, for messages.
    fn object(&self) -> String {
        format!("s3://{}/{}", self.sh.cfg.bucket, self.key)
    }

    fn fail(&mut self, op: &str, e: &io::Error) {
        if self.out.failure.is_none() {
            let path = self.object();
            self.out.failure = Some(Failure::io(op, Some(path), e));
        }
        self.out.ended = Ended::Failed;
    }

    /// The timed loop, until the duration, a stop, or no object is left.
    /// Every worker of the process keeps the same start and deadline
    /// (the first to arrive sets them): a worker starting later must
    /// not take a `--rps-limit` slot past the others' end.
    fn timed(&mut self) {
        let cfg = self.sh.cfg;
        let (t0, start_ns) = *self
            .sh
            .timed_start
            .get_or_init(|| (Instant::now(), mono_ns()));
        self.t0 = t0;
        self.sh.live.start_timed(start_ns);
        let duration_ns = (cfg.duration_s * 1e9) as u64;
        let deadline = start_ns + duration_ns;
        let mut step = 0u64;
        loop {
            if self.sh.cancel.is_cancelled() {
                self.out.ended = Ended::Interrupted;
                break;
            }
            if self.sh.halt.load(Ordering::Relaxed) {
                self.out.ended = self.halt_reason();
                break;
            }
            match self.wait_turn(deadline) {
                Turn::Go => {}
                Turn::Stop => continue,
                Turn::Over => {
                    // The duration ended the phase: it lasted that long,
                    // whenever this worker's last request ended.
                    self.out.timed_end_ns = self.out.timed_end_ns.max(duration_ns);
                    break;
                }
            }
            let Some(op) = self.next_op(&mut step) else {
                self.out.ended = Ended::OutOfObjects;
                break;
            };
            self.one(op);
        }
    }

    fn halt_reason(&self) -> Ended {
        let steady = *self.sh.steady_s.lock().unwrap_or_else(|p| p.into_inner());
        match steady {
            Some(steady_s) => Ended::AutoTerm { steady_s },
            None if self.out.failure.is_some() => Ended::Failed,
            None => Ended::Duration,
        }
    }

    /// Waits for the next request's turn: a slot of `--rps-limit` before
    /// `deadline`. A slot at or past it is not taken: the worker waits
    /// out the duration instead ([`Turn::Over`] once it has passed).
    fn wait_turn(&self, deadline: u64) -> Turn {
        let until = match &self.sh.limiter {
            _ if mono_ns() >= deadline => return Turn::Over,
            None => return Turn::Go,
            Some(l) => l.reserve(mono_ns()),
        };
        let (until, turn) = match until < deadline {
            true => (until, Turn::Go),
            false => (deadline, Turn::Over),
        };
        loop {
            let now = mono_ns();
            if now >= until {
                return turn;
            }
            if self.stopping() {
                return Turn::Stop;
            }
            std::thread::sleep(Duration::from_nanos(until - now).min(NAP));
        }
    }

    /// The next op; `None` when nothing can be done any more.
    fn next_op(&mut self, step: &mut u64) -> Option<Op> {
        let op = match self.sh.cfg.bench {
            Bench::Get => Op::Get,
            Bench::Stat => Op::Stat,
            Bench::Put => Op::Put,
            Bench::List => Op::List,
            Bench::Multipart => Op::Multipart,
            Bench::Delete => return (!self.pool.is_empty()).then_some(Op::Delete),
            Bench::Mixed => return self.next_mixed(step),
        };
        Some(op)
    }

    fn next_mixed(&mut self, step: &mut u64) -> Option<Op> {
        let mix = self.sh.mix.as_ref()?;
        for _ in 0..=CYCLE {
            let op = mix.at(self.task, self.tasks, *step);
            *step += 1;
            let possible = match op {
                Op::Get | Op::Stat if self.sh.cfg.list_existing => !self.sh.existing.is_empty(),
                Op::Get | Op::Stat | Op::Delete => !self.pool.is_empty(),
                _ => true,
            };
            if possible {
                return Some(op);
            }
            self.out.skipped += 1;
        }
        None
    }

    fn one(&mut self, op: Op) {
        match op {
            Op::Get => self.get(),
            Op::Stat => self.stat(),
            Op::Put => self.put(),
            Op::Delete => self.delete(),
            Op::List => self.list(),
            _ => self.multipart(),
        }
    }

    /// Picks an object to read into `self.key`; returns its size.
    fn choose_read(&mut self) -> u64 {
        let cfg = self.sh.cfg;
        let r = self.rand();
        if cfg.list_existing {
            let o = &self.sh.existing[below(r, self.sh.existing.len() as u64) as usize];
            self.key.clear();
            self.key.push_str(&o.key);
            return o.size;
        }
        let (task, seq) = match cfg.bench {
            Bench::Mixed => (
                self.task,
                self.pool[below(r, self.pool.len() as u64) as usize],
            ),
            _ => {
                let i = below(r, cfg.objects);
                ((i % self.tasks as u64) as usize, i / self.tasks as u64)
            }
        };
        self.set_key(task, seq);
        self.size_of(task, seq)
    }

    /// `--range`: a random part of an object of `size` bytes.
    fn choose_range(&mut self, size: u64) -> Option<(u64, u64)> {
        if !self.sh.cfg.range || size == 0 {
            return None;
        }
        let first = below(self.rand(), size);
        let len = 1 + below(self.rand(), size - first);
        Some((first, first + len - 1))
    }

    fn get(&mut self) {
        let size = self.choose_read();
        let range = self.choose_range(size);
        let want = range.map_or(size, |(a, b)| b - a + 1);
        let host = self.sh.hosts.pick();
        let start = Instant::now();
        let r = self.sh.endpoints[host].get(&self.key, range, &mut self.scratch);
        let end = self.end(host);
        self.out.timed.get += 1;
        match r {
            Ok(g) if g.bytes == want => {
                let s = self.sample(start, end, g.first_byte, g.bytes, 1, Some(size));
                self.ok(Op::Get, host, &s);
            }
            Ok(g) => {
                let e = io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!(
                        "S3 GET {}: the answer held {} of the {want} bytes asked for",
                        self.object(),
                        g.bytes
                    ),
                );
                self.failed(Op::Get, host, &e);
            }
            Err(e) => self.failed(Op::Get, host, &e),
        }
    }

    fn stat(&mut self) {
        let size = self.choose_read();
        let host = self.sh.hosts.pick();
        let start = Instant::now();
        let r = self.sh.endpoints[host].head(&self.key);
        let end = self.end(host);
        self.out.timed.head += 1;
        match r {
            Ok(Some(got)) if got == size => {
                let s = self.sample(start, end, end, 0, 1, Some(size));
                self.ok(Op::Stat, host, &s);
            }
            Ok(found) => {
                let e = io::Error::new(
                    ErrorKind::NotFound,
                    match found {
                        Some(n) => format!(
                            "S3 HEAD {}: the answer says {n} bytes, {size} expected",
                            self.object()
                        ),
                        None => format!("S3 HEAD {}: HTTP 404 Not Found", self.object()),
                    },
                );
                self.failed(Op::Stat, host, &e);
            }
            Err(e) => self.failed(Op::Stat, host, &e),
        }
    }

    fn put(&mut self) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let size = self.size_of(self.task, seq);
        self.set_key(self.task, seq);
        let host = self.sh.hosts.pick();
        let start = Instant::now();
        let r = self.sh.endpoints[host].put(&self.key, &self.sh.body[..size as usize]);
        let end = self.end(host);
        self.out.timed.put += 1;
        // A PUT that failed without an answer may still have stored the
        // object: cleanup deletes it. A refused one stored nothing.
        if !r.as_ref().is_err_and(stored_nothing) {
            self.pool.push(seq);
        }
        match r {
            Ok(()) => {
                let s = self.sample(start, end, end, size, 1, Some(size));
                self.ok(Op::Put, host, &s);
            }
            Err(e) => self.failed(Op::Put, host, &e),
        }
    }

    fn delete(&mut self) {
        let i = below(self.rand(), self.pool.len() as u64) as usize;
        let seq = self.pool.swap_remove(i);
        self.set_key(self.task, seq);
        let host = self.sh.hosts.pick();
        let start = Instant::now();
        let r = self.sh.endpoints[host].delete(&self.key);
        let end = self.end(host);
        self.out.timed.delete += 1;
        match r {
            Ok(()) => {
                let s = self.sample(start, end, end, 0, 1, None);
                self.ok(Op::Delete, host, &s);
            }
            Err(e) => {
                self.pool.push(seq);
                self.failed(Op::Delete, host, &e);
            }
        }
    }

    fn list(&mut self) {
        let token = self.list_token.take();
        let host = self.sh.hosts.pick();
        let start = Instant::now();
        let max = self.sh.cfg.max_keys as usize;
        let r = self.sh.endpoints[host].list(&self.list_prefix, max, token.as_deref());
        let end = self.end(host);
        self.out.timed.list += 1;
        match r {
            Ok(page) => {
                let n = page.objects.len() as u64;
                self.list_token = page.next;
                let s = self.sample(start, end, page.first_byte, 0, n, None);
                self.ok(Op::List, host, &s);
            }
            Err(e) => self.failed(Op::List, host, &e),
        }
    }

    /// One object in `--parts` parts: create, parts, complete, each
    /// timed, and the whole.
    fn multipart(&mut self) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.set_key(self.task, seq);
        let host = self.sh.hosts.pick();
        let start = Instant::now();
        let r = self.upload(host);
        let end = self.end(host);
        match r {
            Ok(first_byte) => {
                self.pool.push(seq);
                let bytes = self.sh.cfg.part_size * u64::from(self.sh.cfg.parts);
                let s = self.sample(start, end, first_byte, bytes, 1, Some(bytes));
                self.ok(Op::Multipart, host, &s);
            }
            Err((op, e, upload)) => {
                if let Some(u) = upload {
                    self.out.other.delete += 1;
                    let _ = self.sh.endpoints[host].abort_upload(&self.key, &u);
                }
                self.failed(op, host, &e);
                // The upload failed with it: counted under its whole too,
                // but as one failure in a row, not two.
                self.out.rec.failed(Op::Multipart, host, || e.to_string());
                self.live_ops[Op::Multipart.index()].error();
            }
        }
    }

    /// The requests of one multipart upload; on failure, the op that
    /// failed and the upload to abort.
    fn upload(&mut self, host: usize) -> Result<Instant, (Op, io::Error, Option<String>)> {
        let sh = self.sh;
        let ep = &sh.endpoints[host];
        let part = sh.cfg.part_size;
        let t = Instant::now();
        self.out.timed.post += 1;
        let upload = ep
            .create_upload(&self.key)
            .map_err(|e| (Op::MpCreate, e, None))?;
        let first_byte = Instant::now();
        let s = self.sample(t, first_byte, first_byte, 0, 0, None);
        self.out.rec.ok(Op::MpCreate, host, &s);
        self.live_ops[Op::MpCreate.index()].op(s.bytes, s.latency_ns);
        self.etags.clear();
        for n in 1..=sh.cfg.parts {
            let t = Instant::now();
            self.out.timed.put += 1;
            let body = &sh.body[..part as usize];
            let etag = ep
                .upload_part(&self.key, &upload, n as u16, body)
                .map_err(|e| (Op::MpPart, e, Some(upload.clone())))?;
            self.etags.push(etag);
            let now = Instant::now();
            let s = self.sample(t, now, now, part, 0, None);
            self.out.rec.ok(Op::MpPart, host, &s);
            self.live_ops[Op::MpPart.index()].op(s.bytes, s.latency_ns);
        }
        let t = Instant::now();
        self.out.timed.post += 1;
        ep.complete_upload(&self.key, &upload, &self.etags)
            .map_err(|e| (Op::MpComplete, e, Some(upload.clone())))?;
        let now = Instant::now();
        let s = self.sample(t, now, now, 0, 1, None);
        self.out.rec.ok(Op::MpComplete, host, &s);
        self.live_ops[Op::MpComplete.index()].op(s.bytes, s.latency_ns);
        Ok(first_byte)
    }

    /// The end of a request to `host`.
    fn end(&self, host: usize) -> Instant {
        let end = Instant::now();
        self.sh.hosts.done(host, mono_ns());
        end
    }

    fn sample(
        &self,
        start: Instant,
        end: Instant,
        first_byte: Instant,
        bytes: u64,
        objects: u64,
        size: Option<u64>,
    ) -> Sample {
        let ns = |d: Duration| d.as_nanos().min(u128::from(u64::MAX)) as u64;
        Sample {
            end_ns: ns(end.saturating_duration_since(self.t0)),
            latency_ns: ns(end.saturating_duration_since(start)),
            ttfb_ns: ns(first_byte.saturating_duration_since(start)),
            bytes,
            objects,
            size,
        }
    }

    fn ok(&mut self, op: Op, host: usize, s: &Sample) {
        self.failed_in_a_row = 0;
        self.out.rec.ok(op, host, s);
        self.live_ops[op.index()].op(s.bytes, s.latency_ns);
        self.out.timed_end_ns = self.out.timed_end_ns.max(s.end_ns);
        let slot = self.sh.live.slot(self.local);
        slot.requests.fetch_add(1, Ordering::Relaxed);
        slot.bytes.fetch_add(s.bytes, Ordering::Relaxed);
    }

    fn failed(&mut self, op: Op, host: usize, e: &io::Error) {
        let end_ns = self.t0.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.out.timed_end_ns = self.out.timed_end_ns.max(end_ns);
        self.out.rec.failed(op, host, || e.to_string());
        self.live_ops[op.index()].error();
        self.failed_in_a_row += 1;
        if gone(e) || self.failed_in_a_row >= MAX_FAILED_IN_A_ROW {
            self.fail(op.name(), e);
            self.sh.halt.store(true, Ordering::Relaxed);
        }
    }

    /// Deletes every object of this worker still in the bucket.
    fn cleanup(&mut self) {
        let t = Instant::now();
        let mut kept = Vec::new();
        for seq in std::mem::take(&mut self.pool) {
            self.set_key(self.task, seq);
            let host = self.sh.hosts.pick();
            let r = self.sh.endpoints[host].delete(&self.key);
            self.sh.hosts.done(host, mono_ns());
            self.out.other.delete += 1;
            match r {
                Ok(()) => {
                    self.out.cleanup.objects += 1;
                    self.out.cleanup.bytes += self.size_of(self.task, seq);
                }
                Err(e) => {
                    self.out.cleanup.errors += 1;
                    self.fail("cleanup: DELETE", &e);
                    kept.push(seq);
                }
            }
        }
        self.pool = kept;
        self.out.cleanup.elapsed_s = t.elapsed().as_secs_f64();
    }

    fn count_left(&mut self) {
        self.out.left_objects = self.pool.len() as u64;
        self.out.left_bytes = self.pool.iter().map(|&s| self.size_of(self.task, s)).sum();
    }

    /// Lists the run's prefix: what it holds after the run.
    fn verify(&mut self) {
        let sh = self.sh;
        let ep = &sh.endpoints[0];
        let (mut n, mut bytes) = (0u64, 0u64);
        let mut token: Option<String> = None;
        let mut tokens = Tokens::default();
        // Bounded in pages and in time, the shorter once the run was
        // stopped: a service that pages without end (a fresh token each
        // time) cannot hold the run after its end.
        let t = Instant::now();
        for _ in 0..MAX_LIST_PAGES {
            let bound = match sh.cancel.is_cancelled() {
                true => VERIFY_STOPPED_FOR,
                false => VERIFY_FOR,
            };
            if t.elapsed() > bound {
                self.key.clear();
                let why = format!("not done within {} s", bound.as_secs());
                self.fail("check: LIST", &std::io::Error::other(why));
                return;
            }
            self.out.other.list += 1;
            let next = ep
                .list(&sh.run_prefix, 1000, token.as_deref())
                .and_then(|page| {
                    n += page.objects.len() as u64;
                    bytes += page.objects.iter().map(|o| o.size).sum::<u64>();
                    tokens.next(page.next)
                });
            match next {
                Ok(None) => {
                    self.out.listed = Some((n, bytes));
                    return;
                }
                Ok(next) => token = next,
                Err(e) => {
                    self.key.clear();
                    self.fail("check: LIST", &e);
                    return;
                }
            }
        }
        self.key.clear();
        let e = std::io::Error::other(format!("more than {} pages", MAX_LIST_PAGES));
        self.fail("check: LIST", &e);
    }
}

/// The longest the end-of-run check LIST may take.
const VERIFY_FOR: std::time::Duration = std::time::Duration::from_secs(300);
/// The same for a run stopped by a signal, whose user waits.
const VERIFY_STOPPED_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// An error that says the service is gone: later requests would fail
/// the same way, so the run stops at once.
fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NotConnected | ErrorKind::TimedOut | ErrorKind::ConnectionRefused
    )
}

/// Appends the decimal digits of `v` (no formatting machinery).
fn push_u64(s: &mut String, v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = v;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        s.push(char::from(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_object_once() {
        for (objects, tasks) in [(10u64, 3usize), (2, 4), (100, 1)] {
            let total: u64 = (0..tasks).map(|t| share(objects, t, tasks)).sum();
            assert_eq!(total, objects);
            // Object i belongs to worker i % tasks as its number i / tasks.
            for i in 0..objects {
                let (t, seq) = ((i % tasks as u64) as usize, i / tasks as u64);
                assert!(seq < share(objects, t, tasks));
            }
        }
        let mut s = String::new();
        push_u64(&mut s, 0);
        s.push('/');
        push_u64(&mut s, 18446744073709551615);
        assert_eq!(s, "0/18446744073709551615");
    }
}
