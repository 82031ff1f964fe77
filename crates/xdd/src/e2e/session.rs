//! Setting a copy up, before any target is opened: the destination binds
//! one port per QThread and waits for its source; the source connects
//! each QThread to its port (retrying while the destination starts);
//! every connection runs the handshake, in which the destination judges
//! the rules ([`super::terms::judge`]) and says where the copy resumes.
//! A refusal stops both sides with the same message, having written
//! nothing.

use super::link::LiveLink;
use super::opts::Role;
use super::resume::{self, Resume};
use super::terms::{self, Terms};
use crate::error::{RunError, UsageError};
use crate::parse::config::GlobalOpts;
use crate::plan::{Plan, TargetPlan};
use crate::record::restart::{Record, SourceId};
use iolab_net::gate::{Event, Gate};
use iolab_net::{conn, handshake, Cancel, Conn, NetError, SharedKey};
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// The handshake's tool name.
const TOOL: &str = "iolab-xdd-e2e";

/// The longest a connection may take to complete its handshake once it
/// is open, as a whole (a stray client that says nothing, or trickles,
/// is dropped after this; meanwhile the real source is served).
const HANDSHAKE_S: f64 = 10.0;

/// One end-to-end target, connected and agreed.
#[derive(Debug)]
pub struct Session {
    /// Target number.
    pub target: usize,
    /// This side.
    pub role: Role,
    /// One connection per QThread, in QThread order.
    pub conns: Vec<Conn>,
    /// Where the copy resumes, in bytes into the target (its start
    /// offset when it starts from the beginning).
    pub resume: u64,
    /// The pass `resume` is in (from 1): earlier passes are skipped.
    pub resume_pass: u64,
    /// Requests of pass `resume_pass` before `resume`, which this run
    /// skips.
    pub first_op: u64,
    /// The byte after the copy's last.
    pub end: u64,
    /// Passes of the copy (-passes).
    pub passes: u64,
    /// The other side's name of the target.
    pub peer_path: String,
    /// On a destination: the source's file as its side stated it (None
    /// when it could not look at it).
    pub peer_id: Option<SourceId>,
    /// The restart file, on a destination that keeps one.
    pub restart_file: Option<std::path::PathBuf>,
    /// The temporary name a destination builds its copy under
    /// ([`super::partial`]); None when it writes its own name.
    pub work: Option<String>,
    /// Things to tell the user (resumed, rejected connections).
    pub notes: Vec<String>,
    /// The live link, while [`connect_all`] hands it over.
    live_link: Option<Conn>,
}

impl Session {
    /// The first record of a destination that keeps a restart file, written
    /// before its target is opened: a file that exists with a record is one
    /// this copy made, so a resume may continue it.
    pub fn first_record(&self, path: &str) -> std::io::Result<()> {
        let Some(file) = &self.restart_file else {
            return Ok(());
        };
        self.record(path).store(file)
    }

    /// The restart record of this copy as it starts, for destination
    /// target `path`.
    pub fn record(&self, path: &str) -> Record {
        Record {
            source: self.peer_path.clone(),
            source_id: self.peer_id.unwrap_or_default(),
            destination: path.to_string(),
            pass: self.resume_pass,
            offset: self.resume,
            total: self.end,
            updated_unix_ns: iolab_core::clock::wall_ns(),
        }
    }
}

fn usage(msg: impl Into<String>) -> RunError {
    RunError::Usage(UsageError::new("endtoend", msg))
}

/// Connects every end-to-end target of the plan; `listening` is called
/// once every destination port is bound. None for other targets. The
/// waits for the peer end when `cancel` (the run's token) is cancelled.
/// When both sides stream live figures and the plan has one end-to-end
/// target, the source also opens the live link (`live`, see
/// [`super::link`]); `live` is told either way.
pub fn connect_all(
    plan: &Plan,
    listening: impl FnOnce(Vec<String>),
    live: &LiveLink,
    cancel: &iolab_core::CancelToken,
) -> Result<Vec<Option<Session>>, RunError> {
    let links = linking(plan, live);
    let mut out = connect_targets(plan, listening, links, cancel)?;
    if live.wanted() && !links {
        if let Some(s) = out.iter_mut().flatten().next() {
            s.notes.push(
                "live figures: with several end-to-end targets, each side streams its own".into(),
            );
        }
    }
    match out
        .iter_mut()
        .flatten()
        .find_map(|s| Some((s.role, s.live_link.take()?)))
    {
        Some((Role::Destination, c)) => live.reading(c),
        Some((Role::Source, c)) => live.sending(c),
        None => live.absent(),
    }
    Ok(out)
}

/// Whether this side links for live figures: it streams them and the
/// plan has one end-to-end target (with several, which may go to as
/// many hosts, each side streams its own).
fn linking(plan: &Plan, live: &LiveLink) -> bool {
    let e2e = plan.targets.iter().filter(|t| t.opts.e2e.role().is_some());
    live.wanted() && e2e.count() == 1
}

fn connect_targets(
    plan: &Plan,
    listening: impl FnOnce(Vec<String>),
    linking: bool,
    cancel: &iolab_core::CancelToken,
) -> Result<Vec<Option<Session>>, RunError> {
    let passes = plan.global.passes;
    let mut bound = Vec::new();
    let mut resumes = Vec::new();
    for t in &plan.targets {
        if t.opts.e2e.role() == Some(Role::Destination) {
            resume::check_destination(t, &plan.global)?;
            let work = super::partial::work_path(t);
            if t.caps.local {
                super::lock::take(work.as_deref().unwrap_or(&t.opts.path))?;
            }
            resumes.push(Some(resume::decide(t, &plan.global, work.as_deref())?));
            bound.push(Some(bind(t)?));
        } else {
            resumes.push(None);
            bound.push(None);
        }
    }
    let shown: Vec<String> = bound.iter().flatten().map(|(_, s)| s.clone()).collect();
    if !shown.is_empty() {
        listening(shown);
    }
    let mut out = Vec::new();
    for ((t, b), r) in plan.targets.iter().zip(bound).zip(resumes) {
        out.push(match (t.opts.e2e.role(), b, r) {
            (Some(Role::Destination), Some((ls, _)), Some(r)) => {
                let s = destination(t, passes, ls, r, linking, cancel)?;
                s.first_record(&t.opts.path)
                    .map_err(|err| RunError::Target {
                        target: t.index,
                        path: s
                            .restart_file
                            .as_ref()
                            .map(|f| f.display().to_string())
                            .unwrap_or_default(),
                        what: "write the restart file",
                        err,
                    })?;
                Some(s)
            }
            (Some(Role::Source), _, _) => Some(source(t, &plan.global, passes, linking, cancel)?),
            _ => None,
        });
    }
    Ok(out)
}

/// `host:port` as a socket address string (IPv6 in brackets).
fn addr(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

type Bound = (Vec<TcpListener>, String);

/// Binds every port of a destination target.
fn bind(t: &TargetPlan) -> Result<Bound, RunError> {
    let eps = t
        .opts
        .e2e
        .endpoints(t.opts.queuedepth)
        .map_err(|e| usage(e.to_string()))?;
    let mut ls = Vec::new();
    for (h, p) in &eps {
        ls.push(conn::listen(&addr(h, *p)).map_err(|e| usage(e.to_string()))?);
    }
    let shown = match (eps.first(), eps.last()) {
        (Some(a), Some(b)) if eps.len() > 1 => format!(
            "target {}: listening on {} .. {} ({} ports)",
            t.index,
            addr(&a.0, a.1),
            addr(&b.0, b.1),
            eps.len()
        ),
        _ => format!(
            "target {}: listening on {}",
            t.index,
            eps.first().map(|(h, p)| addr(h, *p)).unwrap_or_default()
        ),
    };
    Ok((ls, shown))
}

fn key_of(t: &TargetPlan) -> Result<Option<SharedKey>, RunError> {
    let named = t.opts.e2e.key.as_deref().map(std::path::Path::new);
    SharedKey::resolve(named).map_err(|e| usage(format!("key: {e}")))
}

/// Sets a connection up for data: frames as large as a request, waits
/// bounded by the -e2e timeout.
fn for_data(c: &mut Conn, t: &TargetPlan) {
    c.max_payload = (t.xfer_bytes as u32).max(1 << 16);
    c.idle_timeout = Duration::from_secs_f64(t.opts.e2e.timeout_s());
    // Without `sockbuf` the kernel tunes the buffers itself (up to
    // net.ipv4.tcp_rmem/tcp_wmem's maximum), which setting them stops.
    if let Some(b) = t.opts.e2e.sockbuf {
        let _ = c.set_buffers(b as usize);
    }
}

/// The destination side: accept and judge one source connection per
/// QThread, on all its ports at once, until the -e2e timeout.
fn destination(
    t: &TargetPlan,
    passes: u64,
    listeners: Vec<TcpListener>,
    r: Resume,
    linking: bool,
    cancel: &iolab_core::CancelToken,
) -> Result<Session, RunError> {
    let key = key_of(t)?;
    let mine: Vec<Terms> = (0..listeners.len())
        .map(|q| {
            let mut m = Terms::of(t, passes, q as u64);
            m.resume = r.offset;
            m.resume_pass = r.pass;
            m.resume_from = r.from.clone();
            m.live = linking;
            m
        })
        .collect();
    let got = accept_all(t, listeners, &mine, key, cancel)?;
    let (conns, peer_path, peer_id, notes) = (got.conns, got.peer_path, got.peer_id, got.notes);
    let mut notes = notes;
    let first_op = first_op(t, r.offset);
    if r.offset > terms::start_bytes(t) || r.pass > 1 {
        notes.push(format!(
            "target {}: resuming the copy at byte {} of {}{} ({} requests of that pass already written)",
            t.index,
            r.offset,
            terms::start_bytes(t) + t.planned_bytes(),
            of_pass(r.pass, passes),
            first_op
        ));
    }
    Ok(Session {
        target: t.index,
        role: Role::Destination,
        conns,
        resume: r.offset,
        resume_pass: r.pass,
        first_op,
        end: terms::start_bytes(t) + t.planned_bytes(),
        passes,
        peer_path,
        peer_id,
        restart_file: r.file,
        work: r.work,
        notes,
        live_link: got.link,
    })
}

/// ", in pass P of N" for a copy of several passes.
fn of_pass(pass: u64, passes: u64) -> String {
    match passes {
        1 => String::new(),
        n => format!(", in pass {pass} of {n}"),
    }
}

/// Requests before `offset` (a request boundary, or the end of the
/// copy, which the last request may not fill).
fn first_op(t: &TargetPlan, offset: u64) -> u64 {
    let start = terms::start_bytes(t);
    if offset >= start + t.planned_bytes() {
        return t.ops;
    }
    (offset.saturating_sub(start)) / t.xfer_bytes.max(1)
}

/// How often the destination, while it waits for the rest of its
/// source's connections, looks whether those it has are still open.
const WATCH: Duration = Duration::from_secs(1);

/// Most dropped connections named one by one in the notes; the rest
/// are counted.
const NAMED_DROPS: usize = 20;

/// Accepts, on every port at once, connections until each port has one
/// that passed the handshake with the port's terms (`mine[q]`); a
/// [`Gate`] holds the connections in their handshake, so a stranger that
/// says nothing or trickles delays no source and holds nothing past the
/// handshake's bound. Connections that fail before their terms are
/// judged (no key, the wrong key, not iolab, too slow) are dropped and
/// noted; a source whose terms break a rule ends the run with the
/// rule's message. When both sides link for live figures (each side's
/// terms say `live`), the live link comes on QThread 0's port too.
fn accept_all(
    t: &TargetPlan,
    listeners: Vec<TcpListener>,
    mine: &[Terms],
    key: Option<SharedKey>,
    cancel: &iolab_core::CancelToken,
) -> Result<Accepted, RunError> {
    let timeout = Duration::from_secs_f64(t.opts.e2e.timeout_s());
    let until = Instant::now() + timeout;
    let limit = Duration::from_secs_f64(HANDSHAKE_S.min(t.opts.e2e.timeout_s()));
    let ours: Vec<serde_json::Value> = mine
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|e| RunError::Net(e.to_string()))?;
    let mut judge = |q: usize, p: &serde_json::Value| -> Result<serde_json::Value, String> {
        let s: Terms = serde_json::from_value(p.clone())
            .map_err(|e| format!("the source's terms are not iolab xdd's: {e}"))?;
        terms::judge(&s, &mine[q]).map_err(|e| e.to_string())?;
        Ok(ours[q].clone())
    };
    let mut gate = Gate::new(listeners, key, limit);
    let mut a = Accepting::new(t, mine);
    while let Some(missing) = a.missing() {
        let left = until.saturating_duration_since(Instant::now());
        // Wake each second to see whether the source, which connects
        // its QThreads one after another, is gone.
        let why = match gate.next(&mut judge, left.min(WATCH), Cancel::token(cancel)) {
            Ok(Event::Admitted {
                conn,
                peer,
                listener,
                agreed,
            }) => {
                let s: Terms = serde_json::from_value(agreed.peer_params)
                    .map_err(|e| RunError::Net(format!("{peer}: the source's terms: {e}")))?;
                match a.admit(conn, listener, s) {
                    None => {
                        if a.port_done(listener) {
                            gate.retire(listener);
                        }
                        continue;
                    }
                    Some(why) => format!("dropped a connection from {peer}: {why}"),
                }
            }
            Ok(Event::Refused {
                error: NetError::Rejected(msg),
                ..
            }) => return Err(usage(msg)),
            Ok(Event::Refused { peer, error, .. } | Event::Dropped { peer, error, .. }) => {
                format!("dropped a connection from {peer}: {error}")
            }
            Err(NetError::Cancelled) => return Err(RunError::Interrupted),
            Err(NetError::Timeout { .. }) if Instant::now() < until => match a.gone() {
                Some(q) => return Err(source_gone(t, q)),
                None => continue,
            },
            Err(NetError::Timeout { .. }) => {
                return Err(no_source(t, gate.local_addr(missing), &a.rejected));
            }
            Err(e) => return Err(RunError::Net(e.to_string())),
        };
        a.dropped(why);
    }
    Ok(a.done())
}

/// What [`accept_all`] has so far: a connection per QThread, the live
/// link, and the connections it dropped.
struct Accepting<'a> {
    t: &'a TargetPlan,
    conns: Vec<Option<Conn>>,
    peer_path: String,
    peer_id: Option<SourceId>,
    link: Option<Conn>,
    /// This side asked for a live link.
    linking: bool,
    /// Both sides did: QThread 0's port waits for it too.
    expect_link: bool,
    notes: Vec<String>,
    /// Why connections were dropped (the first [`NAMED_DROPS`]).
    rejected: Vec<String>,
    drops: usize,
}

impl<'a> Accepting<'a> {
    fn new(t: &'a TargetPlan, mine: &[Terms]) -> Self {
        Accepting {
            t,
            conns: (0..mine.len()).map(|_| None).collect(),
            peer_path: String::new(),
            peer_id: None,
            link: None,
            linking: mine.first().is_some_and(|m| m.live),
            expect_link: false,
            notes: Vec::new(),
            rejected: Vec::new(),
            drops: 0,
        }
    }

    /// The first port still waiting for its connection (port 0 for the
    /// live link), or None when every one has it.
    fn missing(&self) -> Option<usize> {
        let missing = self.conns.iter().position(Option::is_none);
        missing.or((self.expect_link && self.link.is_none()).then_some(0))
    }

    /// Takes an admitted connection on port `listener` whose source's
    /// terms are `s`; says why it is dropped instead.
    fn admit(&mut self, mut conn: Conn, listener: usize, s: Terms) -> Option<&'static str> {
        self.expect_link |= self.linking && s.live;
        if s.link && self.expect_link && listener == 0 && self.link.is_none() {
            self.link = Some(conn);
            None
        } else if s.link {
            Some("a live link not asked for")
        } else if self.conns[listener].is_some() {
            Some("a second source for one QThread")
        } else {
            self.peer_path = s.path;
            self.peer_id = s.source_id;
            for_data(&mut conn, self.t);
            self.conns[listener] = Some(conn);
            None
        }
    }

    /// Port `listener` has all it waits for: QThread 0's port stays open
    /// for the live link.
    fn port_done(&self, listener: usize) -> bool {
        self.conns[listener].is_some()
            && (listener != 0 || !self.expect_link || self.link.is_some())
    }

    /// A QThread whose source closed its connection.
    fn gone(&self) -> Option<usize> {
        self.conns
            .iter()
            .position(|c| c.as_ref().is_some_and(Conn::peer_gone))
    }

    /// Notes a dropped connection (the first [`NAMED_DROPS`] by name).
    fn dropped(&mut self, why: String) {
        self.drops += 1;
        if self.drops <= NAMED_DROPS {
            self.notes.push(format!("target {}: {why}", self.t.index));
            self.rejected.push(why);
        }
    }

    fn done(mut self) -> Accepted {
        if self.drops > NAMED_DROPS {
            self.notes.push(format!(
                "target {}: dropped a connection {} more times (not named)",
                self.t.index,
                self.drops - NAMED_DROPS
            ));
        }
        Accepted {
            conns: self.conns.into_iter().flatten().collect(),
            peer_path: self.peer_path,
            peer_id: self.peer_id,
            notes: self.notes,
            link: self.link,
        }
    }
}

/// What [`accept_all`] accepted.
struct Accepted {
    /// The connections in QThread order.
    conns: Vec<Conn>,
    /// The source's name of its target.
    peer_path: String,
    /// The source's file as its side stated it.
    peer_id: Option<SourceId>,
    notes: Vec<String>,
    /// The live link, when both sides asked for it.
    link: Option<Conn>,
}

/// The source closed QThread `q`'s connection while the others were
/// still being set up: it died or was stopped, and will not come back.
fn source_gone(t: &TargetPlan, q: usize) -> RunError {
    RunError::Net(format!(
        "target {}: the source closed the connection of QThread {q} before every QThread had connected: the source side died or was stopped",
        t.index
    ))
}

fn no_source(t: &TargetPlan, at: Option<std::net::SocketAddr>, rejected: &[String]) -> RunError {
    let at = at.map(|a| a.to_string()).unwrap_or_default();
    let mut msg = format!(
        "target {}: no source connected to {at} within {} s (-e2e timeout); start the source side with the same -e2e destination",
        t.index,
        t.opts.e2e.timeout_s()
    );
    if !rejected.is_empty() {
        msg += &format!("; {}", rejected.join("; "));
    }
    RunError::Net(msg)
}

/// The source side: connect each QThread to its port (retrying while
/// the destination starts) and hand it our terms, which state our
/// file's identity for a destination resuming from a record to judge.
fn source(
    t: &TargetPlan,
    g: &GlobalOpts,
    passes: u64,
    linking: bool,
    cancel: &iolab_core::CancelToken,
) -> Result<Session, RunError> {
    let key = key_of(t)?;
    let eps = t
        .opts
        .e2e
        .endpoints(t.opts.queuedepth)
        .map_err(|e| usage(e.to_string()))?;
    let wait = Duration::from_secs_f64(t.opts.e2e.timeout_s());
    let until = Instant::now() + wait;
    let mut conns = Vec::new();
    let mut resume = None;
    let mut resume_pass = 1;
    let mut peer_path = String::new();
    let mut live_link = None;
    let id = source_id(t, g);
    let sums = source_samples(t)?;
    let dial = |q: usize, link: bool| {
        let (h, p) = &eps[q];
        let mut mine = Terms::of(t, passes, q as u64);
        (mine.live, mine.link, mine.source_id) = (linking, link, id);
        mine.source_samples = sums.clone();
        dial(t, &addr(h, *p), &mine, key.as_ref(), until, cancel)
    };
    for q in 0..eps.len() {
        let (mut c, d) = dial(q, false)?;
        if q == 0 && linking && d.live {
            // After QThread 0's, whose terms told the destination that
            // a link follows on the same port.
            live_link = Some(dial(0, true)?.0);
        }
        if resume.is_some_and(|r| r != (d.resume, d.resume_pass)) {
            return Err(RunError::Net(format!(
                "target {}: the destination's QThreads resume at different bytes",
                t.index
            )));
        }
        resume = Some((d.resume, d.resume_pass));
        resume_pass = d.resume_pass;
        peer_path = d.path;
        for_data(&mut c, t);
        conns.push(c);
    }
    let resume = resume.map_or_else(|| terms::start_bytes(t), |r| r.0);
    let first_op = first_op(t, resume);
    let mut notes = Vec::new();
    if first_op > 0 || resume_pass > 1 {
        notes.push(format!(
            "target {}: the destination resumes the copy at byte {resume}{}; sending the {} requests after it",
            t.index,
            of_pass(resume_pass, passes),
            t.ops - first_op
        ));
    }
    Ok(Session {
        target: t.index,
        role: Role::Source,
        conns,
        resume,
        resume_pass,
        first_op,
        end: terms::start_bytes(t) + t.planned_bytes(),
        passes,
        peer_path,
        peer_id: None,
        restart_file: None,
        work: None,
        notes,
        live_link,
    })
}

/// The source's file as its backend stats it now, before a byte of it
/// is read (None when it cannot be looked at: opening it fails the run
/// then).
fn source_id(t: &TargetPlan, g: &GlobalOpts) -> Option<SourceId> {
    let be = crate::plan::target_backend(&t.opts, g).ok()?;
    let path = std::ffi::CString::new(t.opts.path.as_bytes()).ok()?;
    be.stat(&path).ok().map(|st| SourceId::of(&st))
}

/// A block-device source's samples ([`super::samples`]), when it may
/// resume (`-restart`): what a destination resuming compares with its
/// copy, since the device node's identity does not move when the device
/// is written another way than through it. None for any other source
/// (a file, `null`, an object). A device that cannot be read here fails
/// the run, as reading it would.
fn source_samples(t: &TargetPlan) -> Result<Option<Vec<u32>>, RunError> {
    use std::os::unix::fs::FileTypeExt;
    let path = std::path::Path::new(&t.opts.path);
    let device = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device());
    if !t.opts.restart.any() || !t.caps.local || !device {
        return Ok(None);
    }
    let offsets = super::samples::offsets(terms::start_bytes(t), t.planned_bytes());
    super::samples::take_all(path, &offsets)
        .map(Some)
        .map_err(|err| RunError::Target {
            target: t.index,
            path: t.opts.path.clone(),
            what: "reading the blocks a resume compares",
            err,
        })
}

/// Connects to `a` (retrying until `until`) and runs the handshake with
/// terms `mine`; returns the connection and the destination's terms.
fn dial(
    t: &TargetPlan,
    a: &str,
    mine: &Terms,
    key: Option<&SharedKey>,
    until: Instant,
    cancel: &iolab_core::CancelToken,
) -> Result<(Conn, Terms), RunError> {
    // Whole milliseconds, so that the error says "after 120 s".
    let left = Duration::from_millis(
        until.saturating_duration_since(Instant::now()).as_millis() as u64 + 1,
    );
    let mut c = match conn::connect(a, left, Cancel::token(cancel)) {
        Ok(c) => c,
        Err(NetError::Cancelled) => return Err(RunError::Interrupted),
        Err(e @ NetError::Resolve { .. }) => return Err(usage(e.to_string())),
        Err(e) => {
            let e = e.hinted(" (is the destination side running and listening there?)");
            return Err(RunError::Net(format!("target {}: {e}", t.index)));
        }
    };
    c.idle_timeout = Duration::from_secs_f64(HANDSHAKE_S.max(t.opts.e2e.timeout_s()));
    let mine = serde_json::to_value(mine).map_err(|e| RunError::Net(e.to_string()))?;
    let agreed = match handshake::client(&mut c, TOOL, &mine, key, Cancel::token(cancel)) {
        Ok(a) => a,
        Err(NetError::Rejected(msg)) => return Err(usage(msg)),
        Err(e @ NetError::Auth(_)) => return Err(usage(format!("{a}: {e}"))),
        Err(NetError::Cancelled) => return Err(RunError::Interrupted),
        Err(e) => return Err(RunError::Net(format!("{a}: handshake: {e}"))),
    };
    let d: Terms = serde_json::from_value(agreed.peer_params)
        .map_err(|e| RunError::Net(format!("{a}: the destination's terms: {e}")))?;
    Ok((c, d))
}
