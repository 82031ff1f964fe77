//! The `--json` document's payload: a typed XDD payload with every pass,
//! target and QThread and their figures, and the run's headline figures;
//! the binary's runner puts them in the shared results envelope
//! (`iolab_results::Envelope`). Schema in docs/xdd.md; bump SCHEMA when a
//! field changes meaning or disappears.

use super::rows::deskew;
use iolab_core::stats::Summary;
use iolab_results::{Figure, Spread};
use iolab_xdd::figures::Figures;
use iolab_xdd::record::passlog::PassLog;
use iolab_xdd::results::{RunResults, TargetPass};
use iolab_xdd::seek::SeekHistogram;
use serde::Serialize;

/// Identifies the payload layout.
pub const SCHEMA: &str = "iolab.xdd/2";

/// XDD's results inside the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct XddPayload<'a> {
    /// Per pass, the targets that ran it.
    pub passes: PassesDoc<'a>,
    /// Per target facts and totals.
    pub targets: Vec<TargetDoc>,
    /// All targets over all passes.
    pub combined: Figures,
    /// The window in which every target ran (-deskew), when there is one.
    pub deskew: Option<Figures>,
    /// Errors counted and the messages kept.
    pub errors: ErrorsDoc,
    /// Peak resident memory of the process, bytes (0 when unknown).
    pub peak_rss_bytes: u64,
    /// The global clock the run was lined up on (-timeserver), if any.
    pub global_clock: Option<iolab_xdd::results::GlobalClock>,
}

/// Every pass, written as a JSON array one pass at a time, read from
/// the run's pass log while the document is written (a run of 40,000
/// passes is never held whole).
#[derive(Debug, Clone)]
pub struct PassesDoc<'a>(pub &'a PassLog);

impl Serialize for PassesDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|p| pass_doc(&p)))
    }
}

/// One pass.
#[derive(Debug, Clone, Serialize)]
pub struct PassDoc {
    /// Pass number, from 1.
    pub pass: u64,
    /// Its targets.
    pub targets: Vec<TargetPassDoc>,
}

/// One target in one pass.
#[derive(Debug, Clone, Serialize)]
pub struct TargetPassDoc {
    /// Target number.
    pub target: usize,
    /// Pass start after the run start, s.
    pub start_s: f64,
    /// Pass end after the run start, s.
    pub end_s: f64,
    /// What it did.
    pub figures: Figures,
    /// Its QThreads.
    pub qthreads: Vec<QthreadDoc>,
}

/// One QThread in one pass.
#[derive(Debug, Clone, Serialize)]
pub struct QthreadDoc {
    /// QThread number.
    pub qthread: usize,
    /// What it did.
    pub figures: Figures,
}

/// An operation slower than -reportthreshold.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SlowOp {
    /// Operation number in its pass.
    pub op: u64,
    /// Byte offset.
    pub offset: u64,
    /// Service time, ns.
    pub ns: u64,
}

/// One target over the run.
#[derive(Debug, Clone, Serialize)]
pub struct TargetDoc {
    /// Target number.
    pub target: usize,
    /// Path (for -createnewfiles, the last pass's).
    pub path: String,
    /// O_DIRECT was used.
    pub direct_io: bool,
    /// A block device.
    pub block_device: bool,
    /// Requests per pass; None when only a time limit ends a pass.
    pub planned_ops_per_pass: Option<u64>,
    /// What its writes put on the target (as the preamble says it).
    pub data: String,
    /// Seek range in blocks.
    pub range_blocks: u64,
    /// Failures outside operations (a per-pass file).
    pub failures: u64,
    /// -seek disthist.
    pub seek_distance_histogram: Option<SeekHistogram>,
    /// -seek seekhist.
    pub seek_location_histogram: Option<SeekHistogram>,
    /// Operations slower than -reportthreshold.
    pub slow_ops: Vec<SlowOp>,
    /// All its passes, one after another.
    pub totals: Figures,
}

/// Errors of the run.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorsDoc {
    /// Every error counted (I/O, short transfers, -verify, file setup).
    pub count: u64,
    /// The messages kept (-maxerrorstoprint).
    pub messages: Vec<String>,
}

/// The run's headline figures: combined read and write bandwidth (MB/s)
/// and IOPS, each with its spread over the passes when there is one
/// target (the mean stays the combined figure). The spreads are summed
/// pass by pass from the log.
pub fn figures(r: &RunResults, combined: &Figures) -> Vec<Figure> {
    let getters: [fn(&Figures) -> f64; 4] = [
        |f| f.read_bandwidth_mb_per_s,
        |f| f.read_iops,
        |f| f.write_bandwidth_mb_per_s,
        |f| f.write_iops,
    ];
    let mut per_pass = [Summary::default(); 4];
    if r.targets.len() == 1 {
        for p in r.passes.iter() {
            let f = Figures::of(&p[0].counts);
            for (s, get) in per_pass.iter_mut().zip(getters) {
                s.add(get(&f));
            }
        }
    }
    let spread = |i: usize| {
        let total = getters[i](combined);
        let mut s = match per_pass[i].count {
            0 => Spread::one(total),
            _ => Spread::from(&per_pass[i]),
        };
        s.mean = total;
        s
    };
    let mut out = Vec::new();
    for (op, n, first) in [
        ("read", combined.read_ops, 0),
        ("write", combined.write_ops, 2),
    ] {
        if n == 0 {
            continue;
        }
        for (k, (metric, unit)) in [("bandwidth", "MB/s"), ("iops", "ops/s")]
            .into_iter()
            .enumerate()
        {
            out.push(Figure {
                phase: op.to_string(),
                metric: metric.to_string(),
                unit: unit.to_string(),
                scope: String::new(),
                stat: spread(first + k),
            });
        }
    }
    out
}

fn pass_doc(p: &[TargetPass]) -> PassDoc {
    PassDoc {
        pass: p.first().map_or(0, |t| t.pass),
        targets: p
            .iter()
            .map(|t| TargetPassDoc {
                target: t.target,
                start_s: t.start_ns as f64 / 1e9,
                end_s: t.end_ns as f64 / 1e9,
                figures: Figures::of(&t.counts),
                qthreads: t
                    .qthreads
                    .iter()
                    .map(|q| QthreadDoc {
                        qthread: q.qthread,
                        figures: Figures::of(&q.counts),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The payload of `r`'s document, its passes read from the pass log as
/// it is written.
pub fn payload(r: &RunResults) -> XddPayload<'_> {
    XddPayload {
        passes: PassesDoc(&r.passes),
        targets: (0..r.targets.len()).map(|i| target_doc(r, i)).collect(),
        combined: Figures::of(&r.combined()),
        deskew: if r.config.global.deskew {
            deskew(r).map(|c| Figures::of(&c))
        } else {
            None
        },
        errors: ErrorsDoc {
            count: r.error_count(),
            messages: r.error_messages.clone(),
        },
        peak_rss_bytes: r.peak_rss_bytes,
        global_clock: r.global_clock,
    }
}

fn target_doc(r: &RunResults, i: usize) -> TargetDoc {
    let t = &r.targets[i];
    let total = r.target_total(i);
    TargetDoc {
        target: i,
        path: t.path.clone(),
        direct_io: t.direct_io,
        block_device: t.block_device,
        planned_ops_per_pass: (t.planned_ops != u64::MAX).then_some(t.planned_ops),
        data: r
            .config
            .targets
            .get(i)
            .map_or_else(String::new, |c| c.datapattern.describe()),
        range_blocks: t.range_blocks,
        failures: t.failures,
        seek_distance_histogram: t.disthist.clone(),
        seek_location_histogram: t.seekhist.clone(),
        slow_ops: total
            .slow_ops
            .iter()
            .map(|&(op, offset, ns)| SlowOp { op, offset, ns })
            .collect(),
        totals: Figures::of(&total),
    }
}
