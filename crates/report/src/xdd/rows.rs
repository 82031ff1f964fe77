//! The result rows XDD prints, in its order: per pass the QUEUE_PASS rows
//! (-qthreadinfo) and TARGET_PASS rows (-verbose); then TARGET_AVERAGE per
//! target (-verbose), COMBINED, and DESKEW (-deskew).

use iolab_xdd::config::TargetOpts;
use iolab_xdd::figures::Figures;
use iolab_xdd::results::{Counts, RunResults, TargetPass};
use iolab_xdd::values::Op;

/// One line of the result table.
#[derive(Debug, Clone)]
pub struct Row {
    /// QUEUE_PASS, TARGET_PASS, TARGET_AVERAGE, COMBINED or DESKEW.
    pub what: &'static str,
    /// Pass number (for averages: the number of passes).
    pub pass: u64,
    /// Target number (COMBINED: the number of targets).
    pub target: u64,
    /// QThread number (QUEUE_PASS) or number of QThreads.
    pub queue: u64,
    /// read, write, mixed or noop.
    pub op_type: &'static str,
    /// Bytes per block of the target (for XFERSIZEBLOCKS).
    pub blocksize: u64,
    /// The counts.
    pub counts: Counts,
    /// Rates and CPU cost computed once from `counts` (every column,
    /// the CSV and the JSON read the same numbers).
    pub figures: Figures,
}

/// What a row's operations were; a row that did none (a QThread left
/// idle by a queue deeper than the requests, a target stopped early)
/// says what its targets were asked to do rather than `read`.
fn op_type(c: &Counts, planned: &'static str) -> &'static str {
    match (planned, c.read_ops > 0, c.write_ops > 0) {
        ("noop", _, _) => "noop",
        (_, true, true) => "mixed",
        (_, false, true) => "write",
        (_, true, false) => "read",
        (_, false, false) => planned,
    }
}

/// What the targets `ts` were asked to do, as an Op_Type word.
fn planned<'a>(ts: impl IntoIterator<Item = &'a TargetOpts>) -> &'static str {
    let (mut n, mut noop, mut reads, mut writes) = (0, 0, false, false);
    for t in ts {
        n += 1;
        if t.op == Op::Noop {
            noop += 1;
            continue;
        }
        reads |= t.read_percent() > 0.0;
        writes |= t.writes();
    }
    match (noop > 0 && noop == n, reads, writes) {
        (true, ..) => "noop",
        (_, true, true) => "mixed",
        (_, false, true) => "write",
        _ => "read",
    }
}

/// Every row the options ask for, in order. The per-pass rows are read
/// from the run's pass log as they are asked for, so a long run's table
/// is never held whole.
pub fn rows(r: &RunResults) -> impl Iterator<Item = Row> + '_ {
    pass_rows(r).chain(end_rows(r))
}

/// QUEUE_PASS and TARGET_PASS rows, pass by pass.
fn pass_rows(r: &RunResults) -> impl Iterator<Item = Row> + '_ {
    let g = &r.config.global;
    // Without per-pass rows the log is not read at all.
    let wanted = g.qthreadinfo || g.verbose;
    let passes = wanted.then(|| r.passes.iter()).into_iter().flatten();
    passes.flat_map(move |pass| {
        let mut out = Vec::new();
        for tp in pass {
            one_pass_rows(r, tp, &mut out);
        }
        out
    })
}

fn one_pass_rows(r: &RunResults, tp: TargetPass, out: &mut Vec<Row>) {
    let g = &r.config.global;
    let t = r.config.targets.get(tp.target);
    let asked = planned(t);
    let bs = t.map_or(1024, |x| x.blocksize);
    if g.qthreadinfo {
        for q in tp.qthreads {
            out.push(Row {
                what: "QUEUE_PASS",
                pass: tp.pass,
                target: tp.target as u64,
                queue: q.qthread as u64,
                op_type: op_type(&q.counts, asked),
                blocksize: bs,
                figures: Figures::of(&q.counts),
                counts: q.counts,
            });
        }
    }
    if g.verbose {
        out.push(Row {
            what: "TARGET_PASS",
            pass: tp.pass,
            target: tp.target as u64,
            queue: t.map_or(1, |x| x.queuedepth),
            op_type: op_type(&tp.counts, asked),
            blocksize: bs,
            figures: Figures::of(&tp.counts),
            counts: tp.counts,
        });
    }
}

/// TARGET_AVERAGE (-verbose), COMBINED and DESKEW (-deskew).
fn end_rows(r: &RunResults) -> Vec<Row> {
    let g = &r.config.global;
    let t = &r.config.targets;
    let asked = |i: usize| planned(t.get(i));
    let qd = |i: usize| t.get(i).map_or(1, |x| x.queuedepth);
    let bs = |i: usize| t.get(i).map_or(1024, |x| x.blocksize);
    let mut out = Vec::new();
    let passes = r.passes.len();
    if g.verbose {
        for i in 0..r.targets.len() {
            let c = r.target_total(i);
            out.push(Row {
                what: "TARGET_AVERAGE",
                pass: passes,
                target: i as u64,
                queue: qd(i),
                op_type: op_type(&c, asked(i)),
                blocksize: bs(i),
                figures: Figures::of(&c),
                counts: c,
            });
        }
    }
    out.push(combined(r));
    if g.deskew {
        if let Some(c) = deskew(r) {
            out.push(Row {
                what: "DESKEW",
                ..combined_with(r, c)
            });
        }
    }
    out
}

fn combined_with(r: &RunResults, c: Counts) -> Row {
    let t = &r.config.targets;
    let asked = planned(t);
    let same_bs = t.first().map_or(1024, |x| x.blocksize);
    Row {
        what: "COMBINED",
        pass: r.passes.len(),
        target: r.targets.len() as u64,
        queue: t.iter().map(|x| x.queuedepth).sum(),
        op_type: op_type(&c, asked),
        blocksize: same_bs,
        figures: Figures::of(&c),
        counts: c,
    }
}

/// The COMBINED row: all targets over all passes.
pub fn combined(r: &RunResults) -> Row {
    combined_with(r, r.combined())
}

/// Deskewed totals: per pass, only the window in which every target was
/// running (last start to first end); each target's bytes and operations
/// in that window are estimated from its average rate over the pass.
pub fn deskew(r: &RunResults) -> Option<Counts> {
    let mut total = Counts::default();
    for pass in r.passes.iter() {
        let start = pass.iter().map(|t| t.start_ns).max()?;
        let end = pass.iter().map(|t| t.end_ns).min()?;
        if end <= start {
            continue;
        }
        let window = end - start;
        let mut c = Counts {
            elapsed_ns: window,
            ..Default::default()
        };
        for t in &pass {
            let share = window as f64 / t.counts.elapsed_ns.max(1) as f64;
            let scale = |v: u64| (v as f64 * share.min(1.0)).round() as u64;
            c.read_bytes += scale(t.counts.read_bytes);
            c.write_bytes += scale(t.counts.write_bytes);
            c.read_ops += scale(t.counts.read_ops);
            c.write_ops += scale(t.counts.write_ops);
        }
        total.merge_serial(&c);
    }
    (total.elapsed_ns > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_xdd::config::{Config, GlobalOpts, TargetOpts};
    use iolab_xdd::record::passlog::PassLog;
    use iolab_xdd::results::{QthreadPass, TargetInfo};

    fn pass(target: usize, pass: u64, start: u64, end: u64, bytes: u64) -> TargetPass {
        let counts = Counts {
            write_bytes: bytes,
            write_ops: bytes / 1024,
            elapsed_ns: end - start,
            ..Default::default()
        };
        TargetPass {
            target,
            pass,
            start_ns: start,
            end_ns: end,
            qthreads: vec![QthreadPass {
                qthread: 0,
                start_ns: start,
                counts: counts.clone(),
            }],
            counts,
        }
    }

    fn total(spans: &[(u64, u64)], bytes: u64) -> Counts {
        let mut c = Counts::default();
        for &(s, e) in spans {
            c.merge_serial(&pass(0, 1, s, e, bytes).counts);
        }
        c
    }

    fn results(verbose: bool) -> RunResults {
        let mut g = GlobalOpts {
            verbose,
            qthreadinfo: true,
            deskew: true,
            passes: 2,
            ..Default::default()
        };
        g.id.clear();
        let t = TargetOpts {
            op: Op::Write,
            ..Default::default()
        };
        RunResults {
            config: Config {
                global: g,
                targets: vec![t.clone(), t],
            },
            host: Default::default(),
            start_wall_ns: 0,
            end_wall_ns: 0,
            totals: vec![
                total(&[(0, 100), (200, 300)], 10240),
                total(&[(10, 60), (200, 250)], 5120),
            ],
            passes: PassLog::from_passes(vec![
                vec![pass(0, 1, 0, 100, 10240), pass(1, 1, 10, 60, 5120)],
                vec![pass(0, 2, 200, 300, 10240), pass(1, 2, 200, 250, 5120)],
            ]),
            targets: vec![TargetInfo::default(), TargetInfo::default()],
            notes: vec![],
            error_messages: vec![],
            peak_rss_bytes: 0,
            global_clock: None,
            stats: None,
            outcome: iolab_core::Outcome::Completed,
        }
    }

    #[test]
    fn rows_follow_xdd_order_and_rules() {
        let r: Vec<Row> = rows(&results(true)).collect();
        let what: Vec<&str> = r.iter().map(|x| x.what).collect();
        assert_eq!(what[..3], ["QUEUE_PASS", "TARGET_PASS", "QUEUE_PASS"]);
        let avg: Vec<&Row> = r.iter().filter(|x| x.what == "TARGET_AVERAGE").collect();
        assert_eq!(
            (avg[0].counts.bytes(), avg[0].counts.elapsed_ns, avg[0].pass),
            (20480, 200, 2)
        );
        let comb = r.iter().find(|x| x.what == "COMBINED").unwrap();
        // Targets ran side by side: the longest target's total time.
        assert_eq!(
            (
                comb.counts.bytes(),
                comb.counts.elapsed_ns,
                comb.target,
                comb.queue
            ),
            (30720, 200, 2, 2)
        );
        let d = r.iter().find(|x| x.what == "DESKEW").unwrap();
        // Pass 1 window 10..60 (50 ns), pass 2 window 200..250 (50 ns).
        assert_eq!(d.counts.elapsed_ns, 100);
        assert_eq!(d.counts.bytes(), 5120 + 5120 + 5120 + 5120);
        let quiet = results(false);
        assert!(rows(&quiet).all(|x| x.what != "TARGET_PASS" && x.what != "TARGET_AVERAGE"));
    }

    #[test]
    fn table_and_csv_columns_line_up() {
        let r = results(true);
        let cols = super::super::columns::selected(&r.config.global.outputformat, false);
        let all: Vec<Row> = rows(&r).collect();
        let t = super::super::text::table(&cols, &all, super::super::text::ctx(&r));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("What") && lines[1].starts_with("UNITS>>"));
        let comb = lines.iter().find(|l| l.starts_with("COMBINED")).unwrap();
        let f: Vec<&str> = comb.split_whitespace().collect();
        assert_eq!(f[..6], ["COMBINED", "2", "2", "2", "30720", "30"]);
        let csv = super::super::csv::render(&r);
        assert!(csv.contains("\nCOMBINED,2,2,2,30720,30,"));
    }
}
