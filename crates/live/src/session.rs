//! The sampler thread: every interval it reads the board, merges what
//! the other processes sent (at the root), writes the rows, watches for
//! steady state and hands the rows to the terminal views. The last
//! interval is flushed when the run ends, however it ends.

use crate::align::{self, Interval, Lineup};
use crate::format::{self, openmetrics::PhaseState, Format};
use crate::peers::{self, Order, Peers, Report};
use crate::row::{Header, Row, SCHEMA};
use crate::rows::{row, Source};
use crate::sample::{Part, Sampler};
use crate::steady::{Detector, Steady};
use iolab_core::live::Board;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the rows go.
pub enum Output {
    /// Nowhere (only the terminal views or steady state want them).
    None,
    /// Appended to a stream (a file, standard output), flushed each
    /// interval: jsonl or csv.
    Stream(Box<dyn Write + Send>),
    /// Replaced atomically each interval (openmetrics).
    Textfile(PathBuf),
}

/// What `--live`, `--live-format`, `--live-interval` and `--steady` asked.
pub struct Options {
    /// Where the rows go.
    pub output: Output,
    /// Their format.
    pub format: Format,
    /// The sampling interval.
    pub interval: Duration,
    /// Steady-state detection, if asked.
    pub steady: Option<Steady>,
}

/// The run the stream belongs to.
#[derive(Debug, Clone)]
pub struct Context {
    /// The tool.
    pub tool: String,
    /// The run id, as the results document states it.
    pub run_id: String,
    /// The results envelope's version.
    pub envelope: u32,
    /// This host's name.
    pub host: String,
}

/// What a terminal view is shown each interval.
pub struct Frame<'a> {
    /// Seconds since the start.
    pub t: f64,
    /// The interval's rows (aggregate, then per host or rank).
    pub rows: &'a [Row],
    /// Each phase's aggregate operations per second, oldest first
    /// (the last 240 intervals).
    pub history: &'a [(String, Vec<f64>)],
    /// True on the final flush.
    pub last: bool,
}

/// A terminal view: called on the sampler thread each interval.
pub type Observer = Box<dyn FnMut(&Frame<'_>) + Send>;

/// A phase ended on its steady state.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyEnd {
    /// The phase.
    pub phase: String,
    /// When, in seconds since the start.
    pub t: f64,
}

/// What the session has to say once the run ended.
#[derive(Debug, Default)]
pub struct Summary {
    /// Phases ended on steady state.
    pub steady: Vec<SteadyEnd>,
    /// The first write that failed (the stream stops there; the run goes
    /// on).
    pub error: Option<String>,
    /// Intervals sampled (the final flush included).
    pub intervals: u64,
}

/// The running sampler; [`Live::finish`] (or dropping it) flushes the
/// last interval and stops the thread.
pub struct Live {
    quit: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<Summary>>,
}

impl Live {
    /// Starts sampling `board`. The stream's header is written before
    /// this returns, so an output that cannot be written fails here.
    pub fn start(
        opts: Options,
        ctx: Context,
        board: Arc<Board>,
        peers: Option<Box<dyn Peers>>,
        observers: Vec<Observer>,
    ) -> std::io::Result<Live> {
        let mut st = State::new(opts, ctx, board, peers, observers);
        st.write_header()?;
        let (quit, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iolab-live".into())
            .spawn(move || st.run(rx))?;
        Ok(Live {
            quit: Some(quit),
            thread: Some(thread),
        })
    }

    /// Flushes the last interval, stops the thread and says what it saw.
    pub fn finish(mut self) -> Summary {
        self.stop()
    }

    fn stop(&mut self) -> Summary {
        drop(self.quit.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(s)) => s,
            Some(Err(_)) => Summary {
                error: Some("the live sampler thread panicked".into()),
                ..Summary::default()
            },
            None => Summary::default(),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The sampler thread's state.
struct State {
    opts: Options,
    header: Header,
    host: String,
    board: Arc<Board>,
    sampler: Sampler,
    peers: Option<Box<dyn Peers>>,
    observers: Vec<Observer>,
    steady: Option<Detector>,
    start: Instant,
    last_tick: Instant,
    seq: u64,
    /// Seconds since the start at the last interval.
    t: f64,
    /// Latest totals of each (rank, phase), at the root.
    totals: BTreeMap<(u64, String), Part>,
    /// The root's intervals and the other processes' reports for them.
    lineup: Lineup,
    hosts: BTreeMap<u64, String>,
    phases: Vec<PhaseState>,
    history: Vec<(String, Vec<f64>)>,
    summary: Summary,
}

impl State {
    fn new(
        opts: Options,
        ctx: Context,
        board: Arc<Board>,
        peers: Option<Box<dyn Peers>>,
        observers: Vec<Observer>,
    ) -> Self {
        let interval_s = opts.interval.as_secs_f64();
        let now = Instant::now();
        let lineup = Lineup::new(peers.as_ref().filter(|p| p.aligned()).map(|p| {
            let root = p.rank();
            (0..=p.others() as u64).filter(|&k| k != root).collect()
        }));
        State {
            steady: opts.steady.map(|s| Detector::new(s, interval_s)),
            header: Header {
                schema: SCHEMA.into(),
                envelope: ctx.envelope,
                run_id: ctx.run_id,
                tool: ctx.tool,
                interval_s,
                started_unix_ns: iolab_core::clock::wall_ns(),
            },
            host: ctx.host,
            opts,
            board,
            sampler: Sampler::new(),
            peers,
            observers,
            start: now,
            last_tick: now,
            seq: 0,
            t: 0.0,
            totals: BTreeMap::new(),
            lineup,
            hosts: BTreeMap::new(),
            phases: Vec::new(),
            history: Vec::new(),
            summary: Summary::default(),
        }
    }

    fn is_root(&self) -> bool {
        self.peers.as_ref().is_none_or(|p| p.is_root())
    }

    fn write_header(&mut self) -> std::io::Result<()> {
        if !self.is_root() {
            return Ok(());
        }
        let bytes = match self.opts.format {
            Format::Jsonl => format::jsonl::header(&self.header),
            Format::Csv => format::csv::header(),
            Format::OpenMetrics => format::openmetrics::render(&self.header, 0.0, &[]),
        };
        self.write(&bytes, true)
    }

    fn write(&mut self, bytes: &[u8], whole: bool) -> std::io::Result<()> {
        match &mut self.opts.output {
            Output::None => Ok(()),
            Output::Stream(w) => w.write_all(bytes).and_then(|()| w.flush()),
            // Replaced whole for its readers; not synced (see `replace`).
            Output::Textfile(p) if whole => iolab_output::replace(p, bytes),
            Output::Textfile(_) => Ok(()),
        }
    }

    fn run(mut self, quit: mpsc::Receiver<()>) -> Summary {
        let mut next = self.start + self.opts.interval;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match quit.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            }
            self.tick(false);
            next += self.opts.interval;
            // A tick that overran (a stalled disk) skips, never bunches.
            if next < Instant::now() {
                next = Instant::now() + self.opts.interval;
            }
        }
        self.tick(true);
        self.summary
    }

    /// One interval: sample, exchange, write, decide, show.
    fn tick(&mut self, last: bool) {
        let now = Instant::now();
        let t = now.duration_since(self.start).as_secs_f64();
        let interval_s = now.duration_since(self.last_tick).as_secs_f64();
        self.last_tick = now;
        self.t = t;
        self.seq += 1;
        self.summary.intervals += 1;
        let mine = self.sampler.sample(&self.board, last);
        if !self.is_root() {
            self.report_to_root(mine, last);
            return;
        }
        self.forward(&mine, last);
        let own = Report {
            rank: self.peers.as_ref().map_or(0, |p| p.rank()),
            host: self.host.clone(),
            seq: self.seq,
            last,
            parts: mine,
        };
        self.lineup.sampled(own, t, interval_s, now);
        self.gather(last);
        for late in self.lineup.take_late() {
            let rows = self.late_rows(late);
            self.emit(&rows);
        }
        for iv in self.lineup.ready(Instant::now(), align::WAIT) {
            let rows = self.rows(&iv);
            self.emit(&rows);
            if !iv.last {
                self.watch_steady(&rows, iv.t);
            }
            self.show(&rows, iv.t, iv.last);
        }
    }

    /// A process other than the root: its parts go up, orders come down.
    fn report_to_root(&mut self, parts: Vec<Part>, last: bool) {
        let Some(p) = self.peers.as_mut() else { return };
        let report = Report {
            rank: p.rank(),
            host: self.host.clone(),
            seq: self.seq,
            last,
            parts,
        };
        p.send_report(peers::encode(&report));
        for o in p.take_orders() {
            if let Some(Order::EndPhase(phase)) = peers::decode::<Order>(&o) {
                self.board.end_phase(&phase);
            }
        }
    }

    /// A root that forwards: its interval goes to the other root too.
    fn forward(&mut self, parts: &[Part], last: bool) {
        let Some(p) = self.peers.as_mut().filter(|p| p.forwards()) else {
            return;
        };
        let report = Report {
            rank: p.rank(),
            host: self.host.clone(),
            seq: self.seq,
            last,
            parts: parts.to_vec(),
        };
        p.send_report(peers::encode(&report));
    }

    /// The root: every report that came goes to the line-up. The final
    /// flush waits (10 s at most) for every other process's last one;
    /// another interval for the other ranks' report of it (half an
    /// interval, at most [`align::WAIT`]), when they line up by number.
    fn gather(&mut self, last: bool) {
        let Some(p) = self.peers.as_mut() else {
            return;
        };
        let wait = match last {
            true => Duration::from_secs(10),
            false => (self.opts.interval / 2).min(align::WAIT),
        };
        let until = Instant::now() + wait;
        loop {
            for b in p.take_reports() {
                if let Some(r) = peers::decode::<Report>(&b) {
                    self.lineup.came(r);
                }
            }
            let done = match last {
                true => self.lineup.finished() >= p.others(),
                false => self.lineup.newest_whole(),
            };
            if done || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The rows of a report that came after its interval was written:
    /// its rank's rows of that interval (the aggregate was written
    /// without it, naming it missing). Its totals count from now on.
    fn late_rows(&mut self, late: align::Late) -> Vec<Row> {
        let r = late.report;
        self.hosts.insert(r.rank, r.host.clone());
        for p in &r.parts {
            self.totals.insert((r.rank, p.phase.clone()), p.clone());
        }
        let Some((t, interval_s)) = late.time else {
            return Vec::new();
        };
        let src = Source {
            host: Some(r.host.clone()),
            rank: Some(r.rank),
        };
        r.parts
            .iter()
            .map(|p| row(p, &src, t, interval_s, false))
            .collect()
    }

    /// Rows of the interval: the aggregate per phase, then per rank when
    /// there are other processes.
    fn rows(&mut self, iv: &Interval) -> Vec<Row> {
        let (t, interval_s, last) = (iv.t, iv.interval_s, iv.last);
        let mut by_rank: BTreeMap<u64, Vec<Part>> = BTreeMap::new();
        for r in &iv.reports {
            self.hosts.insert(r.rank, r.host.clone());
            let slot = by_rank.entry(r.rank).or_default();
            for p in &r.parts {
                self.totals.insert((r.rank, p.phase.clone()), p.clone());
                match slot.iter_mut().find(|q| q.phase == p.phase) {
                    Some(q) => merge_interval(q, p),
                    None => slot.push(p.clone()),
                }
            }
        }
        if last {
            // Every rank's every phase has a row in the final flush, also
            // when its last report came before it.
            for ((rank, phase), p) in &self.totals {
                let slot = by_rank.entry(*rank).or_default();
                if !slot.iter().any(|q| q.phase == *phase) {
                    slot.push(p.idle());
                }
            }
        }
        // Per-rank rows whenever other processes report or may join
        // later (then from the first interval, so that each rank's rows
        // add up to its totals however late the others come).
        let many = self
            .peers
            .as_ref()
            .is_some_and(|p| p.others() > 0 || p.late())
            || self.hosts.len() > 1;
        let mut agg = crate::sample::merge_by_phase(by_rank.values().flatten());
        for a in &mut agg {
            self.set_totals(a);
        }
        let mut rows: Vec<Row> = agg
            .iter()
            .map(|p| Row {
                missing: iv.missing.clone(),
                ..row(p, &Source::aggregate(), t, interval_s, last)
            })
            .collect();
        self.keep_state(&agg, &rows);
        if many {
            for (rank, parts) in &by_rank {
                let src = Source {
                    host: self.hosts.get(rank).cloned(),
                    rank: Some(*rank),
                };
                rows.extend(parts.iter().map(|p| row(p, &src, t, interval_s, last)));
            }
        }
        rows
    }

    /// A phase's totals: the latest each rank reported, summed.
    fn set_totals(&self, a: &mut Part) {
        let latest = self.totals.iter().filter(|((_, ph), _)| *ph == a.phase);
        (a.ops_total, a.bytes_total, a.errors_total) = (0, 0, 0);
        for (_, p) in latest {
            a.ops_total += p.ops_total;
            a.bytes_total += p.bytes_total;
            a.errors_total += p.errors_total;
        }
    }

    /// The openmetrics state and the views' history.
    fn keep_state(&mut self, agg: &[Part], rows: &[Row]) {
        for (p, r) in agg.iter().zip(rows) {
            match self.phases.iter_mut().find(|s| s.phase == p.phase) {
                Some(s) => {
                    s.latency.add(&p.latency);
                    s.last = r.clone();
                }
                None => self.phases.push(PhaseState {
                    phase: p.phase.clone(),
                    last: r.clone(),
                    latency: {
                        let mut b = format::openmetrics::Buckets::default();
                        b.add(&p.latency);
                        b
                    },
                }),
            }
            let h = match self.history.iter_mut().find(|(ph, _)| *ph == p.phase) {
                Some(h) => &mut h.1,
                None => {
                    self.history.push((p.phase.clone(), Vec::new()));
                    &mut self.history.last_mut().expect("just pushed").1
                }
            };
            h.push(r.ops_per_sec);
            if h.len() > 240 {
                h.remove(0);
            }
        }
    }

    fn emit(&mut self, rows: &[Row]) {
        if self.summary.error.is_some() {
            return;
        }
        let (bytes, whole) = match self.opts.format {
            Format::Jsonl => (format::jsonl::rows(rows), false),
            Format::Csv => (format::csv::rows(&self.header, rows), false),
            Format::OpenMetrics => (
                format::openmetrics::render(&self.header, self.t, &self.phases),
                true,
            ),
        };
        if let Err(e) = self.write(&bytes, whole) {
            self.summary.error = Some(format!("--live: {e}"));
        }
    }

    fn watch_steady(&mut self, rows: &[Row], t: f64) {
        let Some(d) = self.steady.as_mut() else {
            return;
        };
        // Only a phase its engine can end early is ended (and said to
        // be): the sampler ends no other.
        let endable = |r: &&Row| r.is_aggregate() && self.board.steady_allowed(&r.phase);
        for r in rows.iter().filter(endable) {
            // Each run of a phase (an iteration, a sweep's point) may end
            // on its own steady state, but only while it runs: a phase
            // that finished in this interval ended by itself, and one
            // ended already waits for its workers to see it.
            // The next run starts afresh, as after an end.
            if !self.board.phase_running(&r.phase) {
                d.forget(&r.phase);
                continue;
            }
            if self.board.phase_was_ended(&r.phase) || !d.observe(r) {
                continue;
            }
            self.board.end_phase(&r.phase);
            d.forget(&r.phase);
            if let Some(p) = self.peers.as_mut() {
                p.send_order(peers::encode(&Order::EndPhase(r.phase.clone())));
            }
            self.summary.steady.push(SteadyEnd {
                phase: r.phase.clone(),
                t,
            });
        }
    }

    fn show(&mut self, rows: &[Row], t: f64, last: bool) {
        let frame = Frame {
            t,
            rows,
            history: &self.history,
            last,
        };
        for o in &mut self.observers {
            o(&frame);
        }
    }
}

/// Adds a later report of the same rank (on the final flush, what it
/// sent after the root's last tick): interval counts add, totals are the
/// later ones.
fn merge_interval(into: &mut Part, later: &Part) {
    let (o, b, e) = (later.ops_total, later.bytes_total, later.errors_total);
    into.merge(later);
    (into.ops_total, into.bytes_total, into.errors_total) = (o, b, e);
}

/// A fresh run id: the start time and 64 random bits, in hex.
pub fn new_run_id() -> String {
    let mut r = [0u8; 8];
    let bits = match getrandom::getrandom(&mut r) {
        Ok(()) => u64::from_le_bytes(r),
        Err(_) => u64::from(std::process::id()),
    };
    format!("{:x}-{bits:016x}", iolab_core::clock::wall_ns())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A stream the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Rank 0 of two MPI ranks; rank 1's reports are whatever the test
    /// put in the inbox.
    struct Inbox(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Peers for Inbox {
        fn rank(&self) -> u64 {
            0
        }
        fn is_root(&self) -> bool {
            true
        }
        fn others(&self) -> usize {
            1
        }
        fn send_report(&mut self, _: Vec<u8>) {}
        fn take_reports(&mut self) -> Vec<Vec<u8>> {
            std::mem::take(&mut self.0.lock().unwrap())
        }
        fn send_order(&mut self, _: Vec<u8>) {}
        fn take_orders(&mut self) -> Vec<Vec<u8>> {
            Vec::new()
        }
        fn aligned(&self) -> bool {
            true
        }
    }

    fn rank1(seq: u64, ops: u64, total: u64, last: bool) -> Vec<u8> {
        let part = Part {
            ops,
            bytes: ops,
            ops_total: total,
            bytes_total: total,
            ..Part::empty("write")
        };
        peers::encode(&Report {
            rank: 1,
            host: "h1".into(),
            seq,
            last,
            parts: vec![part],
        })
    }

    /// Rank 1's report of an interval comes after rank 0 sampled it, and
    /// two of its reports come together: each aggregate row still holds
    /// both ranks' figures of the same interval, rank 1's never merged.
    #[test]
    fn other_ranks_intervals_line_up_with_the_root_s() {
        let out = Shared::default();
        let inbox = Arc::new(Mutex::new(Vec::new()));
        let board = Arc::new(Board::new());
        let opts = Options {
            output: Output::Stream(Box::new(out.clone())),
            format: Format::Jsonl,
            interval: Duration::from_millis(100),
            steady: None,
        };
        let ctx = Context {
            tool: "t".into(),
            run_id: "r".into(),
            envelope: 1,
            host: "h0".into(),
        };
        let peers: Box<dyn Peers> = Box::new(Inbox(inbox.clone()));
        let mut st = State::new(opts, ctx, board.clone(), Some(peers), Vec::new());
        let rec = board.recorder("write", 0);
        let ops = |n| (0..n).for_each(|_| rec.op(1, 1_000));
        ops(10);
        st.tick(false);
        inbox
            .lock()
            .unwrap()
            .extend([rank1(1, 100, 100, false), rank1(2, 200, 300, false)]);
        ops(20);
        st.tick(false);
        inbox.lock().unwrap().push(rank1(3, 300, 600, true));
        ops(30);
        st.tick(true);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let rows: Vec<Row> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let agg: Vec<(u64, u64)> = rows
            .iter()
            .filter(|r| r.is_aggregate())
            .map(|r| (r.ops, r.ops_total))
            .collect();
        assert_eq!(agg, [(110, 110), (220, 330), (330, 660)], "{text}");
        let ones: Vec<u64> = rows
            .iter()
            .filter(|r| r.rank == Some(1))
            .map(|r| r.ops)
            .collect();
        assert_eq!(ones, [100, 200, 300], "{text}");
        assert!(rows.iter().all(|r| r.missing.is_empty()), "{text}");
    }
}
