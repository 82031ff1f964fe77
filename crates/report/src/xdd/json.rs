//! The `--json` document: the shared results envelope
//! (`iolab_results::Envelope`) around a typed XDD payload with every pass,
//! target and QThread and their figures. Schema in docs/xdd.md; bump
//! SCHEMA when a field changes meaning or disappears.

use super::rows::deskew;
use iolab_results::{Envelope, Environment, Figure, Spread};
use iolab_xdd::config::Config;
use iolab_xdd::figures::Figures;
use iolab_xdd::results::RunResults;
use iolab_xdd::seek::SeekHistogram;
use serde::Serialize;

/// Identifies the payload layout.
pub const SCHEMA: &str = "iolab.xdd/2";

/// The whole document.
pub type XddDocument = Envelope<Config, XddPayload>;

/// XDD's results inside the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct XddPayload {
    /// Per pass, the targets that ran it.
    pub passes: Vec<PassDoc>,
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

/// The typed document for `r`.
pub fn document(r: &RunResults) -> XddDocument {
    let environment = Environment {
        host: r.host.clone(),
        filesystems: r.targets.iter().filter_map(|t| t.fs.clone()).collect(),
    };
    let mut doc = Envelope::new(
        SCHEMA,
        "xdd",
        &r.config.global.command_line,
        r.config.clone(),
        environment,
        r.outcome.clone(),
        payload(r),
    );
    doc.tool.compatible_with = Some("XDD 7.0".to_string());
    doc.started_unix_ns = r.start_wall_ns;
    doc.stats = r.stats.clone();
    doc.finished_unix_ns = r.end_wall_ns;
    doc.notes = r.notes.clone();
    doc.figures = headline(&doc.payload);
    doc
}

/// The run's headline figures: combined read and write bandwidth (MB/s)
/// and IOPS, each with its spread over the passes when there is one
/// target (the mean stays the combined figure).
fn headline(p: &XddPayload) -> Vec<Figure> {
    let one_target = !p.passes.is_empty() && p.passes.iter().all(|x| x.targets.len() == 1);
    let spread = |get: &dyn Fn(&Figures) -> f64| {
        let total = get(&p.combined);
        let per_pass: Vec<f64> = match one_target {
            true => p
                .passes
                .iter()
                .map(|x| get(&x.targets[0].figures))
                .collect(),
            false => Vec::new(),
        };
        let mut s = Spread::of(&per_pass).unwrap_or_else(|| Spread::one(total));
        s.mean = total;
        s
    };
    let mut out = Vec::new();
    let ops: [(&str, u64, FigureFields); 2] = [
        (
            "read",
            p.combined.read_ops,
            (|f| f.read_bandwidth_mb_per_s, |f| f.read_iops),
        ),
        (
            "write",
            p.combined.write_ops,
            (|f| f.write_bandwidth_mb_per_s, |f| f.write_iops),
        ),
    ];
    for (op, n, (bw, iops)) in ops {
        if n == 0 {
            continue;
        }
        for (metric, unit, get) in [("bandwidth", "MB/s", bw), ("iops", "ops/s", iops)] {
            out.push(Figure {
                phase: op.to_string(),
                metric: metric.to_string(),
                unit: unit.to_string(),
                scope: String::new(),
                stat: spread(&get),
            });
        }
    }
    out
}

/// How to read one operation's bandwidth and IOPS from [`Figures`].
type FigureFields = (fn(&Figures) -> f64, fn(&Figures) -> f64);

fn payload(r: &RunResults) -> XddPayload {
    let passes = r
        .passes
        .iter()
        .map(|p| PassDoc {
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
        })
        .collect();
    XddPayload {
        passes,
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

/// The document as pretty-printed JSON.
pub fn render(r: &RunResults) -> String {
    document(r).to_json()
}
