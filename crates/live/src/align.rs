//! The root's line-up of the processes' intervals. MPI ranks start
//! their samplers together and tick at the same interval, so a rank's
//! report `n` is the root's interval `n`: the root writes interval `n`
//! once every rank still running has sent its report `n`, or once a
//! bounded wait has passed (the row then names the ranks missing), and
//! never adds two intervals of one rank into one row. Processes that
//! join late or are read on a clock of their own (a copy's source,
//! lst's agents, a relay's processes) share no interval number with the
//! root: each of their reports goes into the first row that holds none
//! of that process yet.

use crate::peers::Report;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// How long an interval waits at most for the other ranks' reports
/// before it is written without them.
pub const WAIT: Duration = Duration::from_secs(5);

/// How many written intervals keep their times, for the reports that
/// come after their interval was written.
const KEPT: usize = 1024;

/// One interval of the root's, with the reports lined up for it.
#[derive(Debug)]
pub struct Interval {
    /// The root's interval number (1, 2, ...).
    pub seq: u64,
    /// Its end, seconds since the start.
    pub t: f64,
    /// Its length in seconds.
    pub interval_s: f64,
    /// The root's final flush.
    pub last: bool,
    /// When the root sampled it.
    at: Instant,
    /// The root's report first, then the others'. At most one per rank,
    /// but on the final flush (what a process sent after the root's
    /// last tick).
    pub reports: Vec<Report>,
    /// Ranks expected in it whose report had not come when it was
    /// written.
    pub missing: Vec<u64>,
}

/// A report that came after its interval was written.
#[derive(Debug)]
pub struct Late {
    /// The report.
    pub report: Report,
    /// Its interval's end and length, when still known.
    pub time: Option<(f64, f64)>,
}

/// The intervals sampled and not yet written, and the reports waiting
/// for them.
#[derive(Debug, Default)]
pub struct Lineup {
    /// The other ranks, when their reports line up by number.
    aligned: Option<Vec<u64>>,
    pending: VecDeque<Interval>,
    /// Reports (lined up by number) of intervals the root has not
    /// sampled yet.
    ahead: Vec<Report>,
    /// Reports (not lined up) waiting for a row, per rank, oldest first.
    queued: BTreeMap<u64, VecDeque<Report>>,
    /// Ranks whose last report came, with its number.
    finished: BTreeMap<u64, u64>,
    /// The last intervals written: number, end and length.
    written: VecDeque<(u64, f64, f64)>,
    late: Vec<Late>,
}

impl Lineup {
    /// A line-up by interval number with `others` (the ranks besides
    /// the root), or, with `None`, by arrival.
    pub fn new(aligned: Option<Vec<u64>>) -> Self {
        Lineup {
            aligned,
            ..Lineup::default()
        }
    }

    /// The root sampled an interval; `own` is its report.
    pub fn sampled(&mut self, own: Report, t: f64, interval_s: f64, at: Instant) {
        let mut iv = Interval {
            seq: own.seq,
            t,
            interval_s,
            last: own.last,
            at,
            reports: vec![own],
            missing: Vec::new(),
        };
        if self.aligned.is_some() {
            let (now, later) = std::mem::take(&mut self.ahead)
                .into_iter()
                .partition(|r| r.seq <= iv.seq);
            iv.reports.extend(now);
            self.ahead = later;
        } else {
            iv.reports
                .extend(self.queued.values_mut().filter_map(VecDeque::pop_front));
        }
        self.pending.push_back(iv);
    }

    /// Another process's report came.
    pub fn came(&mut self, r: Report) {
        if r.last {
            self.finished.insert(r.rank, r.seq);
        }
        if self.aligned.is_none() {
            self.queue(r);
            return;
        }
        if let Some(iv) = self.pending.iter_mut().find(|iv| iv.seq == r.seq) {
            iv.reports.push(r);
            return;
        }
        let newest = self
            .pending
            .back()
            .map(|iv| iv.seq)
            .or_else(|| self.written.back().map(|w| w.0))
            .unwrap_or(0);
        if r.seq > newest {
            self.ahead.push(r);
            return;
        }
        let time = self
            .written
            .iter()
            .find(|w| w.0 == r.seq)
            .map(|w| (w.1, w.2));
        self.late.push(Late { report: r, time });
    }

    /// A report not lined up by number: into the newest interval when
    /// it holds none of that rank and none waits before it, else queued.
    fn queue(&mut self, r: Report) {
        let q = self.queued.entry(r.rank).or_default();
        match self.pending.back_mut() {
            Some(iv) if q.is_empty() && !iv.reports.iter().any(|o| o.rank == r.rank) => {
                iv.reports.push(r);
            }
            _ => q.push_back(r),
        }
    }

    /// How many other processes have sent their last report.
    pub fn finished(&self) -> usize {
        self.finished.len()
    }

    /// Whether the newest interval has every report it waits for.
    pub fn newest_whole(&self) -> bool {
        self.pending
            .back()
            .is_none_or(|iv| self.missing(iv).is_empty())
    }

    /// The ranks expected in `iv` whose report is not in it: those lined
    /// up by number that had not ended before it.
    fn missing(&self, iv: &Interval) -> Vec<u64> {
        let Some(others) = &self.aligned else {
            return Vec::new();
        };
        others
            .iter()
            .filter(|k| self.finished.get(k).is_none_or(|&end| end >= iv.seq))
            .filter(|k| !iv.reports.iter().any(|r| r.rank == **k))
            .copied()
            .collect()
    }

    /// The intervals to write now, oldest first: each one whole, or
    /// waited for `wait` since it was sampled; all of them once the
    /// root's final flush is sampled, which also takes every report
    /// still ahead or queued.
    pub fn ready(&mut self, now: Instant, wait: Duration) -> Vec<Interval> {
        let flushing = self.pending.back().is_some_and(|iv| iv.last);
        let mut out = Vec::new();
        while let Some(front) = self.pending.front() {
            if !flushing && now < front.at + wait && !self.missing(front).is_empty() {
                break;
            }
            let Some(mut iv) = self.pending.pop_front() else {
                break;
            };
            if iv.last {
                iv.reports.append(&mut self.ahead);
                iv.reports
                    .extend(self.queued.values_mut().flat_map(std::mem::take));
            }
            iv.missing = self.missing(&iv);
            self.written.push_back((iv.seq, iv.t, iv.interval_s));
            if self.written.len() > KEPT {
                self.written.pop_front();
            }
            out.push(iv);
        }
        out
    }

    /// The reports that came after their interval was written.
    pub fn take_late(&mut self) -> Vec<Late> {
        std::mem::take(&mut self.late)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Part;

    fn report(rank: u64, seq: u64, ops: u64, last: bool) -> Report {
        Report {
            rank,
            host: format!("h{rank}"),
            seq,
            last,
            parts: vec![Part {
                ops,
                ..Part::empty("write")
            }],
        }
    }

    fn ops(iv: &Interval) -> Vec<(u64, u64)> {
        iv.reports
            .iter()
            .map(|r| (r.rank, r.parts[0].ops))
            .collect()
    }

    #[test]
    fn a_rank_s_report_waits_for_its_interval_and_an_early_one_for_the_root() {
        let mut l = Lineup::new(Some(vec![1, 2]));
        let t0 = Instant::now();
        l.sampled(report(0, 1, 10, false), 0.2, 0.2, t0);
        l.came(report(1, 1, 11, false));
        assert!(!l.newest_whole());
        assert!(l.ready(t0, WAIT).is_empty(), "rank 2's interval 1 not in");
        // Rank 2 ticks before the root: its report 2 waits for the root's.
        l.came(report(2, 2, 22, false));
        l.came(report(2, 1, 21, false));
        l.sampled(report(0, 2, 20, false), 0.4, 0.2, t0);
        l.came(report(1, 2, 12, false));
        let out = l.ready(t0, WAIT);
        assert_eq!(out.len(), 2);
        assert_eq!(ops(&out[0]), [(0, 10), (1, 11), (2, 21)]);
        assert_eq!(ops(&out[1]), [(0, 20), (2, 22), (1, 12)]);
        assert!(out.iter().all(|iv| iv.missing.is_empty()));
    }

    #[test]
    fn a_rank_that_does_not_report_in_time_is_named_and_its_late_report_kept_apart() {
        let mut l = Lineup::new(Some(vec![1]));
        let t0 = Instant::now();
        l.sampled(report(0, 1, 10, false), 0.2, 0.2, t0);
        let out = l.ready(t0 + WAIT, WAIT);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].missing, [1]);
        l.sampled(report(0, 2, 20, false), 0.4, 0.2, t0 + WAIT);
        l.came(report(1, 1, 11, false));
        l.came(report(1, 2, 12, false));
        let out = l.ready(t0 + WAIT, WAIT);
        assert_eq!(ops(&out[0]), [(0, 20), (1, 12)], "never two of one rank");
        let late = l.take_late();
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].report.seq, 1);
        assert_eq!(late[0].time, Some((0.2, 0.2)));
    }

    #[test]
    fn a_rank_that_ended_is_not_waited_for_and_the_final_flush_takes_what_is_ahead() {
        let mut l = Lineup::new(Some(vec![1, 2]));
        let t0 = Instant::now();
        l.came(report(1, 1, 11, true));
        l.sampled(report(0, 1, 10, false), 0.2, 0.2, t0);
        l.came(report(2, 1, 21, false));
        assert_eq!(l.ready(t0, WAIT).len(), 1);
        l.sampled(report(0, 2, 20, false), 0.4, 0.2, t0);
        l.came(report(2, 2, 22, false));
        assert!(l.newest_whole(), "rank 1 ended with interval 1");
        l.came(report(2, 3, 23, false));
        l.came(report(2, 4, 24, true));
        l.sampled(report(0, 3, 30, true), 0.5, 0.1, t0);
        let out = l.ready(t0, WAIT);
        assert_eq!(out.len(), 2);
        assert_eq!(ops(&out[1]), [(0, 30), (2, 23), (2, 24)]);
        assert!(out[1].missing.is_empty());
    }

    #[test]
    fn reports_by_arrival_go_one_per_row() {
        let mut l = Lineup::new(None);
        let t0 = Instant::now();
        l.sampled(report(0, 1, 10, false), 0.2, 0.2, t0);
        l.came(report(1, 7, 11, false));
        l.came(report(1, 8, 12, false));
        assert!(l.newest_whole());
        let out = l.ready(t0, WAIT);
        assert_eq!(ops(&out[0]), [(0, 10), (1, 11)]);
        l.sampled(report(0, 2, 20, false), 0.4, 0.2, t0);
        l.came(report(1, 9, 13, false));
        assert_eq!(ops(&l.ready(t0, WAIT)[0]), [(0, 20), (1, 12)]);
        l.sampled(report(0, 3, 30, true), 0.5, 0.1, t0);
        l.came(report(1, 10, 14, true));
        assert_eq!(
            ops(&l.ready(t0, WAIT)[0]),
            [(0, 30), (1, 13), (1, 14)],
            "the final flush takes what came after the root's last tick"
        );
    }
}
