//! Live figures for every tool that makes a run: the options (`--live`,
//! `--live-format`, `--live-interval`, `--live-view`, `--steady`) are
//! taken out of the arguments at dispatch, before the tool's own parser
//! sees them ([`take`]), checked there (exit 2, nothing created), and a
//! tool starts and ends the sampler with one call each ([`start`],
//! [`Hook::finish`]). The sampler is `crates/live`; the engines only
//! record into the [`Board`] the hook hands them.
//!
//! This is the seam the runner (issue 31, part 1) absorbs: it calls
//! `start` before the run and `finish` when it builds the envelope.

use iolab_core::live::Board;
use iolab_live::format::Format;
use iolab_live::peers::Peers;
use iolab_live::{Context, Live, Observer, Options, Output, Steady};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

/// The tools that make a run and so take the live options.
const TOOLS: [&str; 8] = [
    "mdtest", "xdd", "ior", "lst", "survey", "io500", "xddcp", "s3bench",
];

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
struct Asked {
    /// `--live FILE` (`-`: standard output).
    file: Option<String>,
    format: Format,
    interval: Option<f64>,
    view: bool,
    steady: Option<Steady>,
}

static ASKED: OnceLock<Asked> = OnceLock::new();

impl Asked {
    /// The first live option given that makes a run record, if any.
    fn option(&self) -> Option<&'static str> {
        if self.file.is_some() {
            Some("--live")
        } else if self.view {
            Some("--live-view")
        } else if self.steady.is_some() {
            Some("--steady")
        } else {
            None
        }
    }
}

/// The first live option given that makes a run record (`--live`,
/// `--live-view`, `--steady`), if any: for a command that records no
/// live figures, to refuse it by name.
pub fn asked_option() -> Option<&'static str> {
    ASKED.get().and_then(Asked::option)
}

/// The file `--live` writes, if one was asked (not standard output):
/// the runner checks it with the run's other outputs, so that no two of
/// them, nor an output and the run's data, are one file.
pub fn asked_file() -> Option<std::path::PathBuf> {
    let f = ASKED.get()?.file.as_deref()?;
    (f != "-").then(|| std::path::PathBuf::from(f))
}

/// The live options' help lines, for the usage text.
pub const HELP: &str = "\
Live figures (mdtest, xdd, ior, lst, survey, io500, s3bench, xddcp; see docs/live.md):
  --live FILE            write per-interval rows to FILE (- for stdout)
  --live-format F        jsonl (default), csv or openmetrics (a textfile replaced each interval)
  --live-interval S      seconds between rows (default 1, at least 0.1)
  --live-view            a full-screen view of rates and latency on the terminal
  --steady M:PCT:S       mdtest: end a create phase once metric M (ops, bytes, p99) over the last S seconds lies within PCT % of its mean
";

/// Whether `--live-view` was asked: the full screen owns the terminal,
/// so no progress bar draws over it.
pub fn full_screen() -> bool {
    ASKED.get().is_some_and(|a| a.view) && drawable()
}

/// Whether the terminal takes the cursor moves the status line and the
/// view are drawn with: not `TERM=dumb` (nor no TERM at all), where they
/// would come out as escape codes; there neither is drawn.
fn drawable() -> bool {
    std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

/// Takes the live options out of `tool`'s arguments (up to a `--`) and
/// checks them: a bad value or an output that cannot be written is an
/// error naming the option. Tools that make no run keep their arguments.
pub fn take(tool: &str, args: &mut Vec<OsString>) -> Result<(), String> {
    if !TOOLS.contains(&tool) {
        return Ok(());
    }
    let mut asked = Asked::default();
    let mut format = None;
    let mut first_error = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_string_lossy().into_owned();
        if a == "--" {
            break;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let takes_value = ["--live", "--live-format", "--live-interval", "--steady"];
        if name == "--live-view" && inline.is_none() {
            asked.view = true;
            args.remove(i);
            continue;
        }
        if !takes_value.contains(&name.as_str()) {
            i += 1;
            continue;
        }
        args.remove(i);
        let value = match inline {
            Some(v) => v,
            None if i < args.len() => args.remove(i).to_string_lossy().into_owned(),
            None => {
                first_error.get_or_insert(format!("{name} needs a value"));
                continue;
            }
        };
        // Every live option is taken out, even after a bad one, so the
        // tool's own check sees only its own options.
        let r = match name.as_str() {
            "--live" => {
                asked.file = Some(value);
                Ok(())
            }
            "--live-format" => value
                .parse::<Format>()
                .map(|f| format = Some(f))
                .map_err(|e| e.to_string()),
            "--live-interval" => interval(&value).map(|s| asked.interval = Some(s)),
            _ => value
                .parse()
                .map(|s| asked.steady = Some(s))
                .map_err(|e| format!("{e}")),
        };
        if let Err(e) = r {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    asked.format = format.unwrap_or_default();
    check(&asked, format.is_some())?;
    refuse_unrecorded(tool, args, &asked)?;
    let _ = ASKED.set(asked);
    Ok(())
}

/// The tools whose phases can end early on their steady state (their
/// engines ask `Board::allow_steady`): mdtest's create phases.
const STEADY_TOOLS: &[&str] = &["mdtest"];

/// The runs that record no live figures: survey plot (it measures
/// nothing). An option asked of it is refused (exit 2) rather than
/// ignored; so is `--steady` where no phase can end early.
fn refuse_unrecorded(tool: &str, args: &[OsString], a: &Asked) -> Result<(), String> {
    if a.steady.is_some() && !STEADY_TOOLS.contains(&tool) {
        return Err(format!(
            "--steady is not implemented for {tool}: no phase of it can end early yet (only mdtest's create phases can; docs/live.md)"
        ));
    }
    let what = match tool {
        "survey" => match args
            .iter()
            .map(|a| a.to_string_lossy())
            .find(|a| !a.starts_with('-'))
        {
            Some(sub) if sub == "plot" => "survey plot".to_string(),
            _ => return Ok(()),
        },
        _ => return Ok(()),
    };
    let Some(option) = a.option() else {
        return Ok(());
    };
    Err(format!(
        "{option} is not implemented for {what} yet: it records no live figures (docs/live.md says which runs do)"
    ))
}

fn interval(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(s) if (0.1..=3600.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "--live-interval {v}: give seconds from 0.1 to 3600 (e.g. 1 or 0.5)"
        )),
    }
}

/// The options that only make sense together, and the output's path.
fn check(a: &Asked, format_given: bool) -> Result<(), String> {
    let sampled = a.view || a.steady.is_some();
    match a.file.as_deref() {
        None if format_given => Err("--live-format needs --live FILE".into()),
        None if a.interval.is_some() && !sampled => {
            Err("--live-interval needs --live FILE, --live-view or --steady".into())
        }
        Some("-") if a.format == Format::OpenMetrics => Err(
            "--live - --live-format openmetrics: an OpenMetrics textfile is replaced each interval; give a file name (e.g. /var/lib/node_exporter/iolab.prom)".into(),
        ),
        Some(f) if f != "-" => iolab_output::check_file("--live", std::path::Path::new(f))
            .map_err(|e| e.to_string()),
        _ => Ok(()),
    }
}

/// A tool's live figures for one run.
pub struct Hook {
    board: Option<Arc<Board>>,
    live: Option<Live>,
    run_id: Option<String>,
    status: bool,
    /// The stream asked for could not be started (its file made, its
    /// header written): the run goes on without live figures and ends
    /// as an output failure, as one cut short does.
    failed_start: Option<String>,
}

/// What the run's results take from the hook.
#[derive(Debug, Default)]
pub struct Ended {
    /// Notes for the envelope: phases ended on steady state, a stream
    /// that could not be written.
    pub notes: Vec<String>,
    /// True when the stream could not be written to the end.
    pub failed: bool,
}

impl Ended {
    /// The run's outcome with a stream that could not be written counted
    /// as an output failure (exit 1), as any output the user asked for.
    pub fn outcome(&self, outcome: iolab_core::Outcome) -> iolab_core::Outcome {
        match self.failed {
            true => outcome.worst(iolab_core::Outcome::Error(
                iolab_core::Failure::other("--live", "the live stream could not be written")
                    .of_kind(iolab_core::FailureKind::Output),
            )),
            false => outcome,
        }
    }
}

/// Starts the sampler for `tool` when live figures were asked or a
/// terminal shows a status line. `leader`: this process writes the
/// stream and draws (rank 0; others report to it through `peers`).
/// `own_bar`: the tool draws its own progress bar, so the one-line
/// status stays off. Without either, the engines get no board and
/// record nothing.
pub fn start(tool: &str, leader: bool, own_bar: bool, peers: Option<Box<dyn Peers>>) -> Hook {
    let asked = ASKED.get().cloned().unwrap_or_default();
    let terminal = leader && std::io::stderr().is_terminal() && !crate::output::ci() && drawable();
    let status = terminal && !own_bar && !asked.view;
    let view = terminal && asked.view;
    // Every process knows the same options, not whether the leader has a
    // terminal: the others report to it only for a stream or steady state
    // (so the leader waits for exactly those reports).
    let shared = asked.file.is_some() || asked.steady.is_some();
    // A source side of xddcp's: its intervals go to xddcp, whatever it
    // was given.
    let peers = forwarded().or(peers);
    let peers = peers.filter(|p| {
        (shared || p.polled() || p.forwards()) && (p.others() > 0 || p.late() || p.forwards())
    });
    let forwards = peers.as_ref().is_some_and(|p| p.forwards());
    let wanted = shared || status || view || forwards;
    if !wanted || (!leader && peers.is_none()) {
        return Hook::off();
    }
    let board = Arc::new(Board::new());
    if asked.steady.is_some() {
        board.watch_steady();
    }
    let run_id = iolab_live::new_run_id();
    let mut observers: Vec<Observer> = Vec::new();
    if status {
        observers.push(crate::live_view::status_line());
    }
    if view {
        observers.push(crate::live_view::full_screen(tool));
    }
    let output = match output(&asked, leader) {
        Ok(o) => o,
        Err(e) => return Hook::failed(tool, e, false),
    };
    let opts = Options {
        output,
        format: asked.format,
        interval: asked_interval(),
        steady: asked.steady,
    };
    match Live::start(
        opts,
        context(tool, &run_id),
        board.clone(),
        peers,
        observers,
    ) {
        Ok(live) => Hook {
            board: Some(board),
            live: Some(live),
            run_id: Some(run_id),
            status,
            failed_start: None,
        },
        Err(e) => Hook::failed(tool, e.to_string(), true),
    }
}

/// The tags of the side channel's two kinds of message.
const REPORT: u8 = 1;
const ORDER: u8 = 2;

/// The processes of an MPI run as the sampler's peers: every rank sends
/// its interval to rank 0 over the world's side channel.
struct CommPeers(Box<dyn iolab_comm::side::SideChannel>);

impl Peers for CommPeers {
    fn rank(&self) -> u64 {
        self.0.rank() as u64
    }
    fn is_root(&self) -> bool {
        self.0.rank() == 0
    }
    fn others(&self) -> usize {
        self.0.size().saturating_sub(1)
    }
    fn send_report(&mut self, bytes: Vec<u8>) {
        self.0.send(0, REPORT, bytes);
    }
    fn take_reports(&mut self) -> Vec<Vec<u8>> {
        self.0.receive(REPORT).into_iter().map(|(_, b)| b).collect()
    }
    fn send_order(&mut self, bytes: Vec<u8>) {
        for r in 1..self.0.size() {
            self.0.send(r, ORDER, bytes.clone());
        }
    }
    fn take_orders(&mut self) -> Vec<Vec<u8>> {
        self.0.receive(ORDER).into_iter().map(|(_, b)| b).collect()
    }
    fn aligned(&self) -> bool {
        // Every rank starts its sampler once the ranks have settled.
        true
    }
}

/// The peers of a run whose processes `world` connects (none in one
/// process).
pub fn peers(world: &iolab_comm::World) -> Option<Box<dyn Peers>> {
    world
        .side_channel()
        .map(|c| Box::new(CommPeers(c)) as Box<dyn Peers>)
}

/// Whether a stream (`--live FILE`) was asked: the side of a copy that
/// has one links to the other side's for its figures.
pub fn streams() -> bool {
    ASKED.get().is_some_and(|a| a.file.is_some())
}

/// One side of an end-to-end copy (`xdd -e2e`) as the sampler's peers,
/// over the copy's live link (`iolab_xdd::e2e::link`), which the copy
/// makes once both sides are connected. Each side writes its own
/// stream; the source also sends each of its intervals to the
/// destination, whose stream then holds both sides (the destination as
/// rank 0, the source as rank 1). No order goes back: each side's
/// `--steady` watches its own phase.
struct CopyPeers {
    link: Arc<iolab_xdd::e2e::link::LiveLink>,
    source: bool,
}

impl Peers for CopyPeers {
    fn rank(&self) -> u64 {
        u64::from(self.source)
    }
    fn is_root(&self) -> bool {
        true
    }
    fn others(&self) -> usize {
        usize::from(!self.source && self.link.peer_open())
    }
    fn send_report(&mut self, bytes: Vec<u8>) {
        self.link.send(&bytes);
    }
    fn take_reports(&mut self) -> Vec<Vec<u8>> {
        self.link.take()
    }
    fn send_order(&mut self, _bytes: Vec<u8>) {}
    fn take_orders(&mut self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn late(&self) -> bool {
        !self.source
    }
    fn forwards(&self) -> bool {
        // A source that streams: until the link is up (or if it never
        // is), what it sends goes nowhere.
        self.source && self.link.wanted()
    }
}

impl Drop for CopyPeers {
    /// The sampler's last interval went: the link closes (the
    /// destination's reader sees the end).
    fn drop(&mut self) {
        self.link.close();
    }
}

/// The peers of one side of a copy (`source`: the sending side) over
/// `link`; the link is asked for when this side streams.
pub fn copy_side(link: Arc<iolab_xdd::e2e::link::LiveLink>, source: bool) -> Box<dyn Peers> {
    if streams() {
        link.want();
    }
    Box::new(CopyPeers { link, source })
}

/// The peers of a source side that xddcp started with
/// [`iolab_xddcp::run::LIVE_FORWARD_ENV`]: its intervals are appended
/// to the file named there, one JSON line each, for xddcp to read. The
/// file is created here, never one that exists (so a planted link is not
/// followed); none when the variable is unset or the file cannot be made.
fn forwarded() -> Option<Box<dyn Peers>> {
    let path = std::env::var_os(iolab_xddcp::run::LIVE_FORWARD_ENV)?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => Some(Box::new(Forward {
            out: Some(Box::new(f)),
            prefix: b"",
        })),
        Err(e) => {
            iolab_core::say!(
                "iolab: {}: {e}; no live figures go to xddcp",
                PathBuf::from(path).display()
            );
            None
        }
    }
}

/// Each interval as a line that starts with `prefix`, to `out` (see
/// [`forwarded`] and [`to_stdout`]); a write that fails stops it.
struct Forward {
    out: Option<Box<dyn std::io::Write + Send>>,
    prefix: &'static [u8],
}

impl Peers for Forward {
    fn rank(&self) -> u64 {
        0
    }
    fn is_root(&self) -> bool {
        true
    }
    fn others(&self) -> usize {
        0
    }
    fn send_report(&mut self, bytes: Vec<u8>) {
        let line = [self.prefix, &bytes, b"\n"].concat();
        // One write per line: the reader never sees half of one twice.
        if let Some(w) = self.out.as_mut() {
            if w.write_all(&line).and_then(|()| w.flush()).is_err() {
                self.out = None;
            }
        }
    }
    fn take_reports(&mut self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn send_order(&mut self, _bytes: Vec<u8>) {}
    fn take_orders(&mut self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn forwards(&self) -> bool {
        self.out.is_some()
    }
}

/// The live figures of a process another one started and reads (an
/// object-survey agent): every `ms` its interval goes to standard
/// output as a line that starts with `prefix`, whatever the command
/// line asked. Its other output must come after [`Hook::finish`].
pub fn to_stdout(tool: &str, ms: u64, prefix: &'static str) -> Hook {
    let board = Arc::new(Board::new());
    let peers = Box::new(Forward {
        out: Some(Box::new(std::io::stdout())),
        prefix: prefix.as_bytes(),
    });
    let opts = Options {
        output: Output::None,
        format: Format::Jsonl,
        interval: Duration::from_millis(ms.max(100)),
        steady: None,
    };
    let run_id = iolab_live::new_run_id();
    match Live::start(
        opts,
        context(tool, &run_id),
        board.clone(),
        Some(peers),
        Vec::new(),
    ) {
        Ok(live) => Hook {
            board: Some(board),
            live: Some(live),
            run_id: Some(run_id),
            status: false,
            failed_start: None,
        },
        Err(_) => Hook::off(),
    }
}

fn context(tool: &str, run_id: &str) -> Context {
    Context {
        tool: tool.to_string(),
        run_id: run_id.to_string(),
        envelope: iolab_results::ENVELOPE_VERSION,
        host: iolab_core::env::hostname(),
    }
}

/// The interval the command line asked for (`--live-interval`, else 1 s).
pub fn asked_interval() -> Duration {
    let asked = ASKED.get().and_then(|a| a.interval);
    Duration::from_secs_f64(asked.or_else(forwarded_interval).unwrap_or(1.0))
}

/// The interval xddcp asked of this source side
/// ([`iolab_xddcp::run::LIVE_INTERVAL_ENV`]), when it is a number
/// `--live-interval` takes.
fn forwarded_interval() -> Option<f64> {
    std::env::var_os(iolab_xddcp::run::LIVE_FORWARD_ENV)?;
    let s = std::env::var(iolab_xddcp::run::LIVE_INTERVAL_ENV).ok()?;
    s.parse::<f64>().ok().filter(|x| (0.1..=3600.0).contains(x))
}

/// The intervals of processes this one started, read from what they
/// wrote (xddcp's source sides, the object survey's remote agents) and
/// handed to the sampler: slot `i`'s processes report as rank `i + 1`;
/// this process is rank 0. A slot may be a series of processes (an agent
/// per test): each one's totals go on from where the one before ended,
/// so a rank's totals never go back. [`Relay::close`] ends every slot.
pub struct Relay {
    tx: Mutex<mpsc::Sender<Vec<u8>>>,
    slots: Mutex<Vec<Slot>>,
    started: Arc<std::sync::atomic::AtomicUsize>,
    /// A phase renamed on the way (xddcp's `read` is its `copy`).
    rename: Option<(&'static str, &'static str)>,
}

/// What a [`Relay`] knows of one slot.
#[derive(Default)]
struct Slot {
    host: String,
    /// Totals (ops, bytes, errors) per phase of the processes that ended.
    base: BTreeMap<String, (u64, u64, u64)>,
    /// The latest totals of the one running.
    latest: BTreeMap<String, (u64, u64, u64)>,
}

/// The root's end of a channel that a feed of this process fills with
/// other processes' intervals (an lst console's agents, a [`Relay`]):
/// the root reads them itself, whatever was asked.
struct ChannelPeers {
    rx: mpsc::Receiver<Vec<u8>>,
    /// The processes that report (fixed for agents; counted as they
    /// first report for a relay).
    others: Arc<std::sync::atomic::AtomicUsize>,
    /// Others may first report after the start.
    late: bool,
}

impl Peers for ChannelPeers {
    fn rank(&self) -> u64 {
        0
    }
    fn is_root(&self) -> bool {
        true
    }
    fn others(&self) -> usize {
        self.others.load(std::sync::atomic::Ordering::Acquire)
    }
    fn send_report(&mut self, _bytes: Vec<u8>) {}
    fn take_reports(&mut self) -> Vec<Vec<u8>> {
        self.rx.try_iter().collect()
    }
    fn send_order(&mut self, _bytes: Vec<u8>) {}
    fn take_orders(&mut self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn polled(&self) -> bool {
        true
    }
    fn late(&self) -> bool {
        self.late
    }
}

/// A relay, renaming phase `rename.0` to `rename.1`, and the peers the
/// sampler reads it through.
pub fn relay(rename: Option<(&'static str, &'static str)>) -> (Arc<Relay>, Box<dyn Peers>) {
    let (tx, rx) = mpsc::channel();
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let relay = Relay {
        tx: Mutex::new(tx),
        slots: Mutex::new(Vec::new()),
        started: started.clone(),
        rename,
    };
    let peers = ChannelPeers {
        rx,
        others: started,
        late: true,
    };
    (Arc::new(relay), Box::new(peers))
}

impl Relay {
    /// An interval slot `i`'s process sent (`Some`, a report in JSON), or
    /// the end of that process (`None`).
    pub fn line(&self, i: usize, line: Option<&[u8]>) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots.len() <= i {
            slots.resize_with(i + 1, Slot::default);
        }
        let slot = &mut slots[i];
        let Some(line) = line else {
            for (phase, (o, b, e)) in std::mem::take(&mut slot.latest) {
                let t = slot.base.entry(phase).or_default();
                (t.0, t.1, t.2) = (t.0 + o, t.1 + b, t.2 + e);
            }
            return;
        };
        let Some(mut r) = iolab_live::peers::decode::<iolab_live::peers::Report>(line) else {
            return;
        };
        slot.host.clone_from(&r.host);
        for p in &mut r.parts {
            if let Some((_, to)) = self.rename.filter(|(from, _)| p.phase == *from) {
                p.phase = to.to_string();
            }
            let totals = (p.ops_total, p.bytes_total, p.errors_total);
            slot.latest.insert(p.phase.clone(), totals);
            let b = slot.base.get(&p.phase).copied().unwrap_or_default();
            p.ops_total += b.0;
            p.bytes_total += b.1;
            p.errors_total += b.2;
        }
        (r.rank, r.last) = (i as u64 + 1, false);
        // Counted before its first report is queued, so the sampler
        // never takes a report of a rank it does not count.
        self.started
            .fetch_max(i + 1, std::sync::atomic::Ordering::Release);
        self.send(&r);
    }

    /// Every slot has ended: each says so, so the sampler's final flush
    /// waits for nobody.
    pub fn close(&self) {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        // A slot that never reported has no rank to end.
        for (i, slot) in slots.iter().enumerate().filter(|(_, s)| !s.host.is_empty()) {
            self.send(&iolab_live::peers::Report {
                rank: i as u64 + 1,
                host: slot.host.clone(),
                seq: 0,
                last: true,
                parts: Vec::new(),
            });
        }
    }

    fn send(&self, r: &iolab_live::peers::Report) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let _ = tx.send(iolab_live::peers::encode(r));
    }
}

/// The agents of an lst console as the sampler's peers: the console
/// reads each agent's figures every interval (`iolab_lst::watch`), and
/// this feed turns the readings into the agents' intervals (agent `i`
/// reports as rank `i + 1`, named by its node; the console, rank 0,
/// records nothing itself).
pub struct AgentFeed {
    tx: Mutex<mpsc::Sender<Vec<u8>>>,
    agents: Mutex<Vec<AgentState>>,
}

/// What the feed knows of one agent.
#[derive(Default)]
struct AgentState {
    differ: iolab_live::sample::Differ,
    seq: u64,
    /// Its last reading was sent.
    done: bool,
}

/// A feed for `n` agents, and the peers the sampler reads it through.
pub fn agents(n: usize) -> (Arc<AgentFeed>, Box<dyn Peers>) {
    let (tx, rx) = mpsc::channel();
    let feed = AgentFeed {
        tx: Mutex::new(tx),
        agents: Mutex::new((0..n).map(|_| AgentState::default()).collect()),
    };
    let peers = ChannelPeers {
        rx,
        others: Arc::new(std::sync::atomic::AtomicUsize::new(n)),
        late: false,
    };
    (Arc::new(feed), Box::new(peers))
}

impl AgentFeed {
    fn send(&self, i: usize, host: &str, parts: Vec<iolab_live::sample::Part>, last: bool) {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = agents.get_mut(i).filter(|a| !a.done) else {
            return;
        };
        a.seq += 1;
        a.done = last;
        let report = iolab_live::peers::Report {
            rank: i as u64 + 1,
            host: host.to_string(),
            seq: a.seq,
            last,
            parts,
        };
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let _ = tx.send(iolab_live::peers::encode(&report));
    }

    /// The run ended: every agent whose last reading never came (the
    /// console stopped before it reached them) reports that it is done,
    /// so the sampler's final flush waits for nobody.
    pub fn close(&self, nodes: &[String]) {
        for (i, n) in nodes.iter().enumerate() {
            self.send(i, n, Vec::new(), true);
        }
    }
}

impl iolab_lst::watch::Watcher for AgentFeed {
    fn interval(&self) -> Duration {
        asked_interval()
    }

    fn reading(
        &self,
        i: usize,
        node: &str,
        figures: Option<Vec<iolab_core::live::Totals>>,
        last: bool,
    ) {
        let parts = {
            let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
            match (agents.get_mut(i), figures) {
                (Some(a), Some(f)) => a.differ.interval(f, last),
                _ => Vec::new(),
            }
        };
        self.send(i, node, parts, last);
    }
}

fn output(a: &Asked, leader: bool) -> Result<Output, String> {
    Ok(match (a.file.as_deref(), a.format) {
        (None, _) => Output::None,
        _ if !leader => Output::None,
        (Some("-"), _) => Output::Stream(Box::new(crate::output::Stdout)),
        (Some(f), Format::OpenMetrics) => Output::Textfile(PathBuf::from(f)),
        // A link planted at the name is replaced, not followed.
        (Some(f), _) => match iolab_output::create_streamed(std::path::Path::new(f)) {
            Ok(file) => Output::Stream(Box::new(std::io::BufWriter::new(file))),
            Err(e) => return Err(e.to_string()),
        },
    })
}

/// Removes the stream's file and returns its path, unless it is an
/// OpenMetrics textfile (replaced whole each interval, never partial) or
/// not a regular file (a FIFO or a device, written in place: never
/// removed).
fn remove_stream() -> Option<PathBuf> {
    let textfile = ASKED.get().is_some_and(|a| a.format == Format::OpenMetrics);
    let f = asked_file().filter(|_| !textfile)?;
    let regular = f.symlink_metadata().is_ok_and(|m| m.file_type().is_file());
    (regular && std::fs::remove_file(&f).is_ok()).then_some(f)
}

/// A stream that could not be written to its end (a full file system)
/// is said on stderr, not only in the results' notes, and its file is
/// removed: it is cut mid-line, and an output is complete or absent.
/// (An OpenMetrics textfile is replaced whole each interval: it stays.)
fn said_and_removed(error: &str) {
    let error = error.strip_prefix("--live: ").unwrap_or(error);
    match remove_stream() {
        Some(f) => iolab_core::say!(
            "iolab: --live {}: {error}; the stream was cut short and is removed",
            f.display()
        ),
        None => iolab_core::say!("iolab: --live: {error}"),
    }
}

impl Hook {
    /// No live figures.
    pub fn off() -> Hook {
        Hook {
            board: None,
            live: None,
            run_id: None,
            status: false,
            failed_start: None,
        }
    }

    /// A stream that could not be started (`error`): said, its file
    /// removed when this run `made` it (a file that was there and could
    /// not be replaced stays as it was), and the run, which goes on
    /// without live figures, ends as an output failure (exit 1).
    fn failed(tool: &str, error: String, made: bool) -> Hook {
        let removed = made && remove_stream().is_some();
        let named = asked_file().map_or(String::new(), |f| format!(" {}", f.display()));
        let gone = if removed { "; its file is removed" } else { "" };
        iolab_core::say!(
            "iolab {tool}: --live{named}: {error}{gone}; the run goes on without live figures and ends as an output failure"
        );
        Hook {
            failed_start: Some(format!("--live: the stream could not be started: {error}")),
            ..Hook::off()
        }
    }

    /// The run id the stream carries (set it in the envelope before the
    /// results are first written).
    pub fn run_id(&self) -> Option<String> {
        self.run_id.clone()
    }

    /// The board, shared (for engines that keep it beyond a borrow).
    pub fn shared(&self) -> Option<Arc<Board>> {
        self.board.clone()
    }

    /// Flushes the last interval and stops the sampler; says what the
    /// results should carry.
    pub fn finish(mut self) -> Ended {
        if let Some(e) = self.failed_start.take() {
            return Ended {
                notes: vec![e],
                failed: true,
            };
        }
        let Some(live) = self.live.take() else {
            return Ended::default();
        };
        let summary = live.finish();
        if self.status {
            crate::live_view::clear_status();
        }
        // Whatever the view held of stdout, should its last frame not
        // have come.
        crate::output::screen().release();
        let mut notes: Vec<String> = summary
            .steady
            .iter()
            .map(|s| {
                format!(
                    "phase {} ended on steady state at {:.1} s (--steady)",
                    s.phase, s.t
                )
            })
            .collect();
        let failed = summary.error.is_some();
        if let Some(e) = &summary.error {
            said_and_removed(e);
        }
        notes.extend(summary.error);
        Ended { notes, failed }
    }
}

/// The sampler as one of the runner's watchers: started when it was made
/// (the engine needs its board first), stopped with the others.
impl crate::runner::watch::Watch for Hook {
    fn start(&mut self, _run: &crate::runner::watch::Started) {}

    fn stop(&mut self, _outcome: &iolab_core::Outcome) -> crate::runner::watch::Watched {
        let hook = std::mem::replace(self, Hook::off());
        let ended = hook.finish();
        crate::runner::watch::Watched {
            stats: None,
            failure: ended.failed.then(|| {
                iolab_core::Failure::other("--live", "the live stream could not be written")
            }),
            notes: ended.notes,
        }
    }
}
