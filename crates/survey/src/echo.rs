//! obdfilter-survey's `case=network` and `case=netdisk`: the I/O requests
//! go over the network to an echo agent on each target host. For
//! `network` it acknowledges and discards what is written and answers
//! reads with pattern data, as the kit's obdecho server does; no file
//! system is touched. For `netdisk` (targets `HOST:/DIR`) it writes each
//! record to its object in `DIR/iolab-obdfilter.<pid>/` and reads it back
//! from there (O_DIRECT when the file system allows; a buffered write is
//! fdatasync'd before the thread's last answer), and removes its objects
//! and directory when it stops.
//!
//! Every record is one request and its answer on a TCP connection of
//! `iolab_net` (CRC-checked frames, the shared-key handshake: the
//! survey's key, `IOLAB_KEY_FILE`'s or a fresh one-time key, handed to
//! each agent on its standard input): a write sends the record and waits for the agent's
//! acknowledgement, a read sends an empty request and receives the
//! record. Each of a target's `thr` threads has its own connection, so
//! `thr` requests are in flight per target, as echo_client's threads.
//! The agent (`iolab survey obdfilter-agent echo --port P`) is started on
//! each host through the remote shell and stopped at the end; it prints
//! what it received and sent ([`EchoTotals`]), so the bytes that crossed
//! the wire are on record.

use crate::object::{Shape, TargetResult};
use crate::sampler::{self, Counters};
use crate::ParamError;
use iolab_core::live::{Board, Recorder};
use iolab_core::CancelToken;
use iolab_net::gate::{Event, Gate};
use iolab_net::{conn, frame::Kind, handshake, Cancel, Conn, NetError, SharedKey};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// The handshake's tool name.
pub const TOOL: &str = "iolab-obdecho";
/// The agent's first port when none is given (target `i` uses base + i).
pub const DEFAULT_PORT: u16 = 5993;
/// Largest record an agent takes (the survey's own limit).
pub const MAX_RECORD: u64 = crate::obdfilter::MAX_RSZ_KB * 1024;
/// Longest wait for an agent to listen, or for a request or an answer.
pub const NET_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one connect attempt of [`Agents::wait_ready`] may take: a
/// refused connection (the agent not listening yet) is retried at once
/// within it; a silent one (SYNs dropped) fails the host at its end.
const PROBE_CONNECT: Duration = Duration::from_secs(5);
/// Longest an agent waits for its next client.
pub const IDLE_LIMIT: Duration = Duration::from_secs(24 * 3600);
/// How long a connection may take to prove the key and state its job,
/// as a whole (a peer that trickles its bytes is cut off at this time).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections an agent holds in their handshake; past it the
/// oldest is dropped (each costs a socket, no thread).
pub const MAX_PENDING: usize = 1024;
/// Most client connections an agent serves at once: every thread of a
/// point, with room for the next point's while the last one's close.
pub const MAX_CONNECTIONS: usize = 2 * crate::obdfilter::MAX_THREADS as usize;
/// How often the agent's accepting loop wakes to look at the idle limit.
const GATE_WAKE: Duration = Duration::from_secs(1);

/// What one agent moved, printed as JSON when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EchoTotals {
    /// Bytes of written records received (and discarded).
    pub received_bytes: u64,
    /// Bytes of read records sent.
    pub sent_bytes: u64,
    /// Requests answered.
    pub requests: u64,
}

#[derive(Default)]
struct Totals {
    received: AtomicU64,
    sent: AtomicU64,
    requests: AtomicU64,
}

/// The parameters a client states in its handshake.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job {
    write: bool,
    rsz_bytes: u64,
    /// netdisk: the object this thread works on (`o<k>`).
    #[serde(default)]
    object: u64,
    /// The survey's check, before its first point, that the agent is
    /// there and shares its key ([`Agents::wait_ready`]): the handshake
    /// alone, no object opened, nothing counted.
    #[serde(default)]
    probe: bool,
}

/// Where a netdisk agent keeps its objects; None for the network case.
pub struct Store<'a> {
    /// The backend every file goes through.
    pub backend: &'a dyn iolab_backend::Backend,
    /// The agent's work directory (made by [`Store::make`]).
    pub dir: std::path::PathBuf,
}

impl Store<'_> {
    /// Makes the work directory (it must not exist: it is ours alone).
    pub fn make(&self) -> Result<(), crate::SurveyError> {
        crate::io::cpath(&self.dir)
            .and_then(|c| self.backend.mkdir(&c, 0o755))
            .map_err(|source| crate::SurveyError::Mkdir {
                dir: self.dir.clone(),
                source,
            })
    }

    /// Removes every object and the work directory.
    pub fn remove(&self) {
        let Ok(dir) = crate::io::cpath(&self.dir) else {
            return;
        };
        // Through the backend, as every file of the survey: only what
        // this agent made is in its own work directory.
        for e in self.backend.list(&dir).unwrap_or_default() {
            let name = std::ffi::OsStr::from_bytes(&e.name);
            if let Ok(c) = crate::io::cpath(&self.dir.join(name)) {
                let _ = self.backend.unlink(&c);
            }
        }
        if let Ok(c) = crate::io::cpath(&self.dir) {
            let _ = self.backend.rmdir(&c);
        }
    }

    /// Opens object `k` for a job, creating it for writing.
    fn open(&self, k: u64, write: bool) -> std::io::Result<(iolab_backend::Handle, bool)> {
        use iolab_backend::OpenOptions;
        let c = crate::io::cpath(&self.dir.join(format!("o{k}")))?;
        let opts = || {
            if write {
                OpenOptions::write()
            } else {
                OpenOptions::read()
            }
        };
        match crate::io::open_data(self.backend, &c, opts(), true) {
            Ok(h) => Ok(h),
            Err(_) if write => {
                // Another thread of the object may create it first.
                let _ = self
                    .backend
                    .open(&c, OpenOptions::create_new())
                    .and_then(|h| self.backend.close(h));
                crate::io::open_data(self.backend, &c, opts(), true)
            }
            Err(e) => Err(e),
        }
    }
}

/// Serves on `0.0.0.0:port` until a stop is requested (SIGTERM, Ctrl-C,
/// its standard input closing) or no client comes for [`IDLE_LIMIT`];
/// returns what was moved. Every peer must prove `key`: until it has,
/// its connection waits in a [`Gate`] (no thread, no record buffer, the
/// handshake bounded as a whole), so that whoever can reach the port
/// can neither write nor read the survey's objects, nor hold threads or
/// memory; past [`MAX_CONNECTIONS`] served at once a peer is dropped.
pub fn serve(
    port: u16,
    key: &SharedKey,
    store: Option<&Store<'_>>,
) -> Result<EchoTotals, NetError> {
    let l = conn::listen(&format!("0.0.0.0:{port}"))?;
    let mut gate =
        Gate::new(vec![l], Some(key.clone()), HANDSHAKE_TIMEOUT).max_pending(MAX_PENDING);
    let totals = Totals::default();
    let serving = AtomicUsize::new(0);
    let mut judge =
        |_: usize, p: &serde_json::Value| judge(p).map(|_| json!({ "max_record": MAX_RECORD }));
    let mut last = Instant::now();
    let result = std::thread::scope(|scope| loop {
        match gate.next(&mut judge, GATE_WAKE, Cancel::process()) {
            Ok(Event::Admitted { conn, .. })
                if serving.load(Ordering::Relaxed) >= MAX_CONNECTIONS =>
            {
                drop(conn)
            }
            Ok(Event::Admitted { conn, agreed, .. }) => {
                last = Instant::now();
                let (t, n) = (&totals, &serving);
                n.fetch_add(1, Ordering::Relaxed);
                scope.spawn(move || {
                    // A connection that fails ends alone; the client says why.
                    let _ = answer(conn, &agreed.peer_params, t, store);
                    n.fetch_sub(1, Ordering::Relaxed);
                });
            }
            // Refused (told why) or dropped (closed): nothing to serve.
            Ok(_) => {}
            // The agent is a process of its own, started by the survey
            // through a remote shell and outside any run: SIGTERM, its
            // parent's death or its standard input closing raises the
            // process's stop flag, its root.
            Err(NetError::Cancelled) => break Ok(()),
            Err(NetError::Timeout { .. }) if last.elapsed() < IDLE_LIMIT => {}
            Err(e @ NetError::Timeout { .. }) => break Err(e),
            // A failed poll: do not spin on it.
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    });
    result.map(|()| EchoTotals {
        received_bytes: totals.received.load(Ordering::Relaxed),
        sent_bytes: totals.sent.load(Ordering::Relaxed),
        requests: totals.requests.load(Ordering::Relaxed),
    })
}

/// One admitted client connection (its key proven, its job judged):
/// one answer per request until the client's End. Only now is its
/// record buffer allocated.
fn answer(
    mut c: Conn,
    params: &serde_json::Value,
    t: &Totals,
    store: Option<&Store<'_>>,
) -> Result<(), NetError> {
    c.idle_timeout = NET_TIMEOUT;
    let job = judge(params).map_err(NetError::Protocol)?;
    if job.probe {
        return Ok(());
    }
    c.max_payload = job.rsz_bytes as u32;
    let file = match store.map(|s| s.open(job.object, job.write)) {
        Some(Ok(h)) => Some(h),
        Some(Err(e)) => return Err(refuse(&mut c, format!("object o{}: {e}", job.object))),
        None => None,
    };
    let mut owned = iolab_core::buffer::IoBuffer::heap(job.rsz_bytes as usize, 4096)
        .map_err(|e| NetError::Protocol(format!("buffer: {e}")))?;
    let buf = owned.as_mut_slice();
    // What a read answers with when no object store is behind the agent
    // (case=network): the bytes cross the network and are not kept.
    crate::io::WriteData::new(buf.len()).fill(buf);
    let object = store.zip(file);
    requests(&mut c, &job, object.as_ref(), buf, t)?;
    // The object is closed before the client hears the End: closing
    // may be what stores it.
    if let Some((s, (fh, _))) = object {
        let _ = s.backend.close(fh);
    }
    c.send(Kind::End, 0, 0, &[], Cancel::process()).map(drop)
}

/// The client's job, checked.
fn judge(p: &serde_json::Value) -> Result<Job, String> {
    let j: Job = serde_json::from_value(p.clone()).map_err(|e| e.to_string())?;
    if j.rsz_bytes == 0 || j.rsz_bytes > MAX_RECORD {
        return Err(format!(
            "record of {} bytes: at most {MAX_RECORD}",
            j.rsz_bytes
        ));
    }
    Ok(j)
}

/// Tells the client why its run ends here.
fn refuse(c: &mut Conn, e: String) -> NetError {
    let _ = c.send(Kind::Error, 0, 0, e.as_bytes(), Cancel::process());
    NetError::Protocol(e)
}

/// An object behind the agent: its store, and its handle and whether it
/// is open for direct I/O.
type Object<'s, 'a> = (&'s Store<'a>, (iolab_backend::Handle, bool));

/// Answers `job`'s requests, through `object` when there is one, until
/// the client's End (a written object synced, the End not yet answered).
fn requests(
    c: &mut Conn,
    job: &Job,
    object: Option<&Object<'_, '_>>,
    buf: &mut [u8],
    t: &Totals,
) -> Result<(), NetError> {
    let cancel = Cancel::process();
    let io = |r: std::io::Result<()>, what: &str, off: u64| {
        r.map_err(|e| format!("{what} at offset {off}: {e}"))
    };
    loop {
        let h = c.recv_header(cancel)?;
        match h.kind {
            Kind::End => {
                if let Some((s, (fh, false))) = object.filter(|_| job.write) {
                    if let Err(e) = s.backend.fdatasync(fh) {
                        return Err(refuse(c, format!("fdatasync: {e}")));
                    }
                }
                return Ok(());
            }
            Kind::Data if job.write => {
                let got = c.recv_payload(&h, buf, cancel)?.len();
                if let Some((s, (fh, _))) = object {
                    let r = crate::io::write_all_at(s.backend, fh, &buf[..got], h.offset);
                    io(r, "write", h.offset).map_err(|e| refuse(c, e))?;
                }
                t.received.fetch_add(got as u64, Ordering::Relaxed);
                c.send(Kind::Control, 0, h.offset, &[], cancel)?;
            }
            Kind::Data => {
                c.recv_payload(&h, &mut buf[..0], cancel)?;
                if let Some((s, (fh, _))) = object {
                    let r = crate::io::read_full_at(s.backend, fh, buf, h.offset);
                    io(r, "read", h.offset).map_err(|e| refuse(c, e))?;
                }
                c.send(Kind::Data, 0, h.offset, buf, cancel)?;
                t.sent.fetch_add(job.rsz_bytes, Ordering::Relaxed);
            }
            other => {
                return Err(NetError::Protocol(format!(
                    "unexpected {other:?} frame from the client"
                )))
            }
        }
        t.requests.fetch_add(1, Ordering::Relaxed);
    }
}

/// One connected thread of one target, ready before the clock starts.
struct Link {
    target: usize,
    /// Where this thread's stretch of its object starts (netdisk).
    base: u64,
    /// The object it writes in (netdisk): its blocks' stamps name it.
    object: u64,
    conn: Result<Conn, String>,
}

/// Runs test `name` against the agents at `addrs` (`host:port`, one per
/// target), all at once, sampled every `interval_ms` as the disk case.
/// With a `live` board each record is counted there under the test's
/// name, timed from its request to its answer.
pub fn run_test(
    addrs: &[String],
    name: &str,
    s: Shape,
    (interval_ms, key): (u64, &SharedKey),
    (cancel, live): (&CancelToken, Option<&Board>),
) -> Vec<TargetResult> {
    let write = name.contains("write");
    let links = connect_all(addrs, write, s, key, cancel);
    let counters = Counters::new(&vec![s.thr as usize; addrs.len()]);
    let errors: Vec<Mutex<Option<String>>> = addrs.iter().map(|_| Mutex::new(None)).collect();
    let barrier = Barrier::new(links.len() + 1);
    let done = AtomicBool::new(false);
    let data = crate::io::WriteData::new(s.rsz_bytes as usize);
    let samples = std::thread::scope(|scope| {
        for (i, l) in links.into_iter().enumerate() {
            let (counters, barrier, errors, data) = (&counters, &barrier, &errors, &data);
            // Before the barrier: no lock or allocation per record.
            let rec = live.map_or_else(Recorder::off, |b| b.recorder(name, i));
            scope.spawn(move || {
                barrier.wait();
                let (t, base) = (l.target, l.base);
                let file = ((t as u64) << 32) | l.object;
                let data = write.then_some((data, file));
                if let Err(e) = l
                    .conn
                    .and_then(|c| records(c, (t, base), data, (s, counters), (cancel, &rec)))
                {
                    if let Ok(mut slot) = errors[t].lock() {
                        slot.get_or_insert(format!("{}: {e}", addrs[t]));
                    }
                }
                counters.worker_done(t);
            });
        }
        counters.begin();
        let sampler =
            scope.spawn(|| sampler::sample(&counters, Duration::from_millis(interval_ms), &done));
        barrier.wait();
        // The scope joins the workers; the sampler stops once they are.
        while (0..addrs.len()).any(|t| counters.finished_s(t).is_none()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        done.store(true, Ordering::Release);
        // A sampler that panicked is the test's error, not empty samples.
        sampler.join().unwrap_or_else(|_| {
            crate::sampler::note_panic(&errors, "the sampler thread");
            Default::default()
        })
    });
    sampler::per_target(&counters, samples)
        .into_iter()
        .enumerate()
        .map(|(t, rates)| TargetResult {
            target: addrs[t].clone(),
            rates,
            direct: true,
            error: errors[t].lock().ok().and_then(|e| e.clone()),
        })
        .collect()
}

/// Every thread's connection and handshake, made before the clock starts
/// (as the disk case opens its objects first).
fn connect_all(
    addrs: &[String],
    write: bool,
    s: Shape,
    key: &SharedKey,
    cancel: &CancelToken,
) -> Vec<Link> {
    let mut out = Vec::new();
    for (t, addr) in addrs.iter().enumerate() {
        for k in 0..s.thr {
            let conn = conn::connect(addr, NET_TIMEOUT, Cancel::token(cancel))
                .and_then(|mut c| {
                    c.idle_timeout = NET_TIMEOUT;
                    let job = json!({
                        "write": write,
                        "rsz_bytes": s.rsz_bytes,
                        "object": k / s.per_obj.max(1),
                    });
                    handshake::client(&mut c, TOOL, &job, Some(key), Cancel::token(cancel))?;
                    c.max_payload = s.rsz_bytes as u32;
                    Ok(c)
                })
                .map_err(|e| e.to_string());
            let base = (k % s.per_obj.max(1)) * s.count * s.rsz_bytes;
            out.push(Link {
                target: t,
                base,
                object: k / s.per_obj.max(1),
                conn,
            });
        }
    }
    out
}

/// One thread's records: each a request and its answer. A write sends
/// records of `data` for its file (object).
fn records(
    mut c: Conn,
    (t, base): (usize, u64),
    data: Option<(&crate::io::WriteData, u64)>,
    (s, counters): (Shape, &Counters),
    (token, rec): (&CancelToken, &Recorder),
) -> Result<(), String> {
    let counted = records_counted(&mut c, (t, base), data, (s, counters), (token, rec));
    if counted.is_err() {
        rec.error();
    }
    counted
}

fn records_counted(
    c: &mut Conn,
    (t, base): (usize, u64),
    data: Option<(&crate::io::WriteData, u64)>,
    (s, counters): (Shape, &Counters),
    (token, rec): (&CancelToken, &Recorder),
) -> Result<(), String> {
    let cancel = Cancel::token(token);
    let write = data.is_some();
    let rsz = s.rsz_bytes as usize;
    let mut buf = vec![0u8; data.map_or(rsz, |(d, _)| d.buffer_len(rsz))];
    if let Some((d, _)) = data {
        d.fill(&mut buf);
    }
    let err = |e: NetError| e.to_string();
    for i in 0..s.count {
        if token.is_cancelled() {
            break;
        }
        let off = base + i * s.rsz_bytes;
        let payload: &[u8] = match data {
            Some((d, file)) => {
                let at = d.place(&mut buf, file, off, rsz);
                &buf[at..at + rsz]
            }
            None => &[],
        };
        let t0 = iolab_core::clock::mono_ns();
        c.send(Kind::Data, 0, off, payload, cancel).map_err(err)?;
        let (h, got) = answer_of(c, &mut buf, cancel)?;
        let expected = if write {
            (Kind::Control, 0)
        } else {
            (Kind::Data, s.rsz_bytes as usize)
        };
        if (h, got) != expected {
            return Err(format!(
                "record {i}: the agent answered {h:?} of {got} bytes"
            ));
        }
        rec.op(s.rsz_bytes, iolab_core::clock::mono_ns().saturating_sub(t0));
        counters.add(t, s.rsz_bytes);
    }
    // The agent answers End once a buffered write is on disk.
    c.send(Kind::End, 0, 0, &[], cancel).map_err(err)?;
    match answer_of(c, &mut buf, cancel)? {
        (Kind::End, _) => Ok(()),
        (k, _) => Err(format!("the agent answered End with {k:?}")),
    }
}

/// The agent's next answer: its kind and payload length, or the agent's
/// own error message.
fn answer_of(c: &mut Conn, buf: &mut [u8], cancel: Cancel<'_>) -> Result<(Kind, usize), String> {
    let h = c.recv_header(cancel).map_err(|e| e.to_string())?;
    if h.kind == Kind::Error {
        let (_, msg) = (
            h,
            c.recv_payload(&h, buf, cancel).map_err(|e| e.to_string())?,
        );
        return Err(format!("the agent: {}", String::from_utf8_lossy(msg)));
    }
    let got = c
        .recv_payload(&h, buf, cancel)
        .map_err(|e| e.to_string())?
        .len();
    Ok((h.kind, got))
}

/// The kit's network cases' targets: host names for `network`,
/// `HOST:/DIR` for `netdisk`.
pub fn parse_targets(
    case: &str,
    given: &[String],
) -> Result<Vec<(String, Option<PathBuf>)>, ParamError> {
    use crate::remote::RemoteTarget;
    if given.is_empty() {
        let want = match case {
            "network" => "the servers' host names: targets=\"oss1 oss2\"",
            _ => "HOST:/DIR targets: targets=\"oss1:/srv/ost0 oss2:/srv/ost1\"",
        };
        return Err(ParamError::new(
            "targets",
            format!("case={case} needs {want}"),
        ));
    }
    given
        .iter()
        .map(|t| match (case, RemoteTarget::parse(t)) {
            ("network", None) if !t.contains('/') && !t.contains(':') => Ok((t.clone(), None)),
            ("network", _) => Err(ParamError::new(
                "targets",
                format!("{t}: case=network takes host names (the echo agent touches no file system); drop the path, or use case=netdisk"),
            )),
            (_, Some(r)) if r.path.is_absolute() => Ok((r.host, Some(r.path))),
            _ => Err(ParamError::new(
                "targets",
                format!("{t}: case=netdisk takes HOST:/DIR (the directory on that host the agent writes in)"),
            )),
        })
        .collect()
}

/// Runs the survey's points against the agents at `addrs` (one per
/// target); `on_point` sees each point as it completes. Nothing is
/// created: the kit's network case has no objects on disk.
pub fn run(
    cfg: &crate::obdfilter::ObdConfig,
    addrs: &[String],
    key: &SharedKey,
    on_point: &mut dyn FnMut(&crate::obdfilter::ObdPoint),
    (cancel, live): (&CancelToken, Option<&Board>),
) -> crate::obdfilter::ObdReport {
    use crate::obdfilter::{combine, count_errors, points, ObdPoint, ObdPointResult, ObdReport};
    use iolab_core::{Failure, Outcome};
    let mut report = ObdReport {
        header: crate::Header::now(),
        points: Vec::new(),
        outcome: Outcome::Completed,
        notes: Vec::new(),
    };
    let n = addrs.len() as u64;
    let mut errors = 0;
    for (rsz_kb, nobj, thr) in points(cfg) {
        let count = cfg.size_mb * 1024 / (rsz_kb * thr);
        let mut point = ObdPoint {
            ost: n,
            total_size_kb: rsz_kb * count * thr * n,
            rsz_kb,
            obj: nobj * n,
            thr: thr * n,
            result: ObdPointResult::TooMuchBuffer,
        };
        if thr * n * rsz_kb <= cfg.max_buffer_kb {
            let shape = Shape {
                rsz_bytes: rsz_kb * 1024,
                count,
                thr,
                per_obj: thr / nobj,
            };
            let mut tests = Vec::new();
            for name in &cfg.tests {
                let targets = run_test(addrs, name, shape, (cfg.interval_ms, key), (cancel, live));
                let elapsed = targets
                    .iter()
                    .map(|t| t.rates.elapsed_s)
                    .fold(0.0, f64::max);
                tests.push(combine(name, targets, elapsed));
                if cancel.is_cancelled() {
                    break;
                }
            }
            point.result = ObdPointResult::Ran { tests };
        }
        if cancel.is_cancelled() {
            report.outcome = Outcome::Interrupted;
            break;
        }
        errors += count_errors(&point);
        on_point(&point);
        report.points.push(point);
    }
    if errors > 0 && report.outcome == Outcome::Completed {
        report.outcome = Outcome::Error(Failure::other(
            "obdfilter survey",
            format!("{errors} test(s) failed; the .detail file says why"),
        ));
    }
    report
}

/// The echo agents of a `case=network` survey, one per target host,
/// started through the remote shell; each is stopped (and killed, if it
/// must be) when this is dropped or [`Agents::stop`]ped.
pub struct Agents {
    runs: Vec<(String, iolab_launch::Remote)>,
    /// `host:port` of each target's agent, in target order.
    pub addrs: Vec<String>,
}

impl Agents {
    /// Starts `iolab survey obdfilter-agent echo --port BASE+i [-- DIR]`
    /// for each target `i` (a host, and for netdisk its directory, in
    /// which the agent keeps `work`) through `rsh` (else $IOLAB_RSH, else
    /// ssh). `key` goes on each agent's standard input (never on its
    /// command line, which `ps` shows), which stays open while it runs.
    pub fn start(
        targets: &[(String, Option<std::path::PathBuf>)],
        base_port: u16,
        rsh: Option<&str>,
        (iolab, work): (&str, &str),
        key: &SharedKey,
    ) -> Result<Agents, crate::SurveyError> {
        let shell = iolab_launch::RemoteShell::resolve(rsh)?;
        let mut agents = Agents {
            runs: Vec::new(),
            addrs: Vec::new(),
        };
        for (i, (host, dir)) in targets.iter().enumerate() {
            let port = base_port
                .checked_add(i as u16)
                .ok_or(crate::SurveyError::Port {
                    base: base_port,
                    index: i,
                })?;
            let mut cmd: Vec<String> = [
                iolab,
                "survey",
                "obdfilter-agent",
                "echo",
                "--work",
                work,
                "--port",
                &port.to_string(),
            ]
            .map(String::from)
            .to_vec();
            if let Some(d) = dir {
                cmd.push("--".into());
                cmd.push(d.display().to_string());
            }
            let r = shell
                .spawn_with_stdin(host, &cmd, &[], key.handoff_line().as_bytes())
                .map_err(|source| crate::SurveyError::Spawn {
                    host: host.clone(),
                    source,
                })?;
            agents.runs.push((host.clone(), r));
            agents.addrs.push(format!("{host}:{port}"));
        }
        Ok(agents)
    }

    /// Waits, before the first point, until every agent answers a
    /// handshake, so that a host that cannot be reached fails the survey
    /// at once naming it (every point ran to `ERROR`, then exit 1). A
    /// host is given up when its remote shell ends (the agent did not
    /// start: the shell's complaint), when its address does not resolve
    /// here or cannot be reached (no route, no answer), when the
    /// handshake fails (another key, another program on the port), or
    /// when its agent still refuses connections after [`NET_TIMEOUT`]
    /// (the time a remote shell gets to start it). `Err` holds one
    /// `HOST: why` per host that failed.
    pub fn wait_ready(&mut self, key: &SharedKey) -> Result<(), Vec<String>> {
        let until = std::time::Instant::now() + NET_TIMEOUT;
        let failed: Vec<String> = self
            .runs
            .iter_mut()
            .zip(&self.addrs)
            .filter_map(|((host, run), addr)| {
                ready(run, addr, key, until)
                    .err()
                    .map(|e| format!("{host}: {e}"))
            })
            .collect();
        match failed.is_empty() {
            true => Ok(()),
            false => Err(failed),
        }
    }

    /// Stops every agent and says what each moved (or why it could not
    /// say), one note per host.
    pub fn stop(self) -> Vec<String> {
        let mut notes = Vec::new();
        for (host, mut r) in self.runs {
            r.terminate();
            let note = match r.wait(Duration::from_secs(30), || false) {
                Ok(f) => match serde_json::from_slice::<EchoTotals>(&f.stdout) {
                    Ok(t) => format!(
                        "{host}: the echo agent received {} bytes and sent {} bytes in {} requests",
                        t.received_bytes, t.sent_bytes, t.requests
                    ),
                    Err(_) => format!(
                        "{host}: the echo agent stopped without its totals: {}",
                        String::from_utf8_lossy(&f.stderr).trim()
                    ),
                },
                Err(e) => format!("{host}: the echo agent: {e}"),
            };
            notes.push(note);
        }
        notes
    }
}

/// Waits (until `until`) for the agent started by `run` to answer a
/// probe handshake at `addr`; why not, when it does not.
fn ready(
    run: &mut iolab_launch::Remote,
    addr: &str,
    key: &SharedKey,
    until: std::time::Instant,
) -> Result<(), String> {
    let cancel = Cancel::process();
    loop {
        if run.has_exited() {
            return Err(ended(run));
        }
        match conn::connect(addr, PROBE_CONNECT, cancel) {
            Ok(mut c) => {
                c.idle_timeout = PROBE_CONNECT;
                let job = json!({ "write": false, "rsz_bytes": 4096, "probe": true });
                return handshake::client(&mut c, TOOL, &job, Some(key), cancel)
                    .map(drop)
                    .map_err(|e| format!("the echo agent at {addr} did not answer: {e}"));
            }
            Err(NetError::Connect { source, .. })
                if source.kind() == std::io::ErrorKind::ConnectionRefused
                    && std::time::Instant::now() < until => {}
            Err(NetError::Connect { source, .. }) => return Err(unreachable(run, addr, &source)),
            Err(e) => return Err(unreachable(run, addr, &e)),
        }
    }
}

/// Why `addr` cannot be reached: the remote shell's complaint when it
/// ended meanwhile (ssh could not resolve the host, say: the cause),
/// else the connection's error.
fn unreachable(run: &mut iolab_launch::Remote, addr: &str, e: &dyn std::fmt::Display) -> String {
    let t0 = std::time::Instant::now();
    while !run.has_exited() && t0.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(20));
    }
    match run.has_exited() {
        true => format!("{}; {addr}: {e}", ended(run)),
        false => format!("cannot reach its echo agent at {addr}: {e}"),
    }
}

/// Why an agent's remote shell ended before its agent answered.
fn ended(run: &mut iolab_launch::Remote) -> String {
    // Its last words may still be on their way through the pipe.
    let t0 = std::time::Instant::now();
    while run.stderr_so_far().is_empty() && t0.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let err = String::from_utf8_lossy(&run.stderr_so_far())
        .trim()
        .to_string();
    let status = run
        .exit_status()
        .map_or_else(|| "ended".to_string(), |s| s.to_string());
    format!(
        "the echo agent did not start: {} ({status})",
        if err.is_empty() { "no message" } else { &err }
    )
}
