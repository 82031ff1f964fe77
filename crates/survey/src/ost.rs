//! `ost`: the ost-survey. One file of `size` MB per target (a directory or
//! mount point), written on every target in turn and then read back on
//! every target, 1 MiB at a time, O_DIRECT when the file system allows
//! (else buffered, the write fdatasync'd inside the timing, as the kit's
//! `dd; sync`). Then worst/best per operation, average +/- standard
//! deviation (population, as the kit's), the per-target table, and the
//! outliers: a target whose speed is below [`OUTLIER_FRACTION_OF_MEDIAN`]
//! of the median, or more than [`OUTLIER_SIGMAS`] standard deviations
//! below the average, for that operation.
//!
//! On Lustre (`ost_indices` set), every "target" is the same mount and
//! each file is placed on one OST with [`crate::lustre::place`] before it
//! is written, as the kit's ost-survey does.

use crate::io::{cpath, open_data, read_full_at, write_all_at, WriteData};
use crate::{Header, ParamError, MB};
use iolab_backend::{Backend, Handle, OpenOptions};
use iolab_core::buffer::IoBuffer;
use iolab_core::live::{Board, Recorder};
use iolab_core::{Failure, Outcome};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A target slower than this fraction of the median is an outlier.
pub const OUTLIER_FRACTION_OF_MEDIAN: f64 = 0.8;
/// A target this many standard deviations below the average is an outlier.
pub const OUTLIER_SIGMAS: f64 = 2.0;
/// I/O size (the kit's dd bs=1M).
pub const BLOCK_BYTES: u64 = 1 << 20;
/// Largest file, MB.
pub const MAX_SIZE_MB: u64 = 1 << 20;

/// The target survey's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OstConfig {
    /// Target directories or mount points, indexed from 0 in this order.
    pub targets: Vec<PathBuf>,
    /// File size per target, MB (the kit's `-s`, default 30).
    pub size_mb: u64,
    /// Lustre: the OST index each target's file is striped on, in target
    /// order (the targets are then the mount point repeated); empty
    /// elsewhere.
    #[serde(default)]
    pub ost_indices: Vec<u32>,
}

impl OstConfig {
    /// Checks the size and that each target is a directory.
    pub fn validate(&self, b: &dyn Backend) -> Result<(), ParamError> {
        if self.size_mb == 0 || self.size_mb > MAX_SIZE_MB {
            return Err(ParamError::new(
                "size",
                format!("must be 1..={MAX_SIZE_MB} MB"),
            ));
        }
        if !self.ost_indices.is_empty() && self.ost_indices.len() != self.targets.len() {
            return Err(ParamError::new(
                "targets",
                "one OST index per target is needed on Lustre",
            ));
        }
        // On Lustre the mount is repeated on purpose, one file per OST.
        let osts = Some(self.ost_indices.as_slice()).filter(|o| !o.is_empty());
        crate::io::distinct_targets(b, "targets", &self.targets, osts)?;
        let part = b.capabilities().min_part_bytes;
        if part > BLOCK_BYTES && self.size_mb * (MB as u64) > BLOCK_BYTES {
            return Err(crate::io::lacks(
                b,
                &format!(
                    "ost-survey writes each file {} KiB at a time, below the {} KiB least part of the backend's multi-request writes",
                    BLOCK_BYTES >> 10,
                    part >> 10
                ),
                "give -s 1 (one request per file) or use --backend posix",
            ));
        }
        if !self.ost_indices.is_empty() && !b.capabilities().local {
            return Err(crate::io::lacks(
                b,
                "placing a file on each OST runs `lfs setstripe` on a Lustre mount",
                "drop --lustre",
            ));
        }
        crate::io::check_target_dirs(&self.targets, b)
    }

    /// The survey's file for target `i` (created exclusively, removed at
    /// the end); on Lustre, named after its OST.
    pub fn file(&self, i: usize) -> PathBuf {
        let base = file_in(&self.targets[i]);
        match self.ost_indices.get(i) {
            Some(ost) => base.with_extension(format!("{}.ost{ost:04x}", std::process::id())),
            None => base,
        }
    }

    /// The index reported for target `i`: its OST index on Lustre, its
    /// position elsewhere.
    pub fn index(&self, i: usize) -> usize {
        self.ost_indices.get(i).map_or(i, |&o| o as usize)
    }
}

/// One target's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OstTarget {
    /// Its index (position in the list).
    pub index: usize,
    /// The directory.
    pub path: String,
    /// Write MB/s.
    pub write_mb_per_s: f64,
    /// Write seconds.
    pub write_s: f64,
    /// Read MB/s.
    pub read_mb_per_s: f64,
    /// Read seconds.
    pub read_s: f64,
    /// O_DIRECT was used (else buffered).
    pub direct: bool,
    /// Why it failed, if it did (its figures are then left out).
    pub error: Option<String>,
}

/// Worst, best, average and deviation of one operation over the targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    /// Index of the slowest target.
    pub worst_index: usize,
    /// Its MB/s.
    pub worst: f64,
    /// Index of the fastest target.
    pub best_index: usize,
    /// Its MB/s.
    pub best: f64,
    /// Average MB/s.
    pub average: f64,
    /// Population standard deviation, MB/s.
    pub std_dev: f64,
    /// Median MB/s (the outlier rule's reference).
    pub median: f64,
}

/// A target flagged as slow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Its index.
    pub index: usize,
    /// `read` or `write`.
    pub op: String,
    /// Its MB/s.
    pub mb_per_s: f64,
    /// Which rule flagged it.
    pub reason: String,
}

/// The whole survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OstReport {
    /// When and where.
    pub header: Header,
    /// Per target, in index order.
    pub targets: Vec<OstTarget>,
    /// Read figures over the targets that worked.
    pub read: Option<OpSummary>,
    /// Write figures over the targets that worked.
    pub write: Option<OpSummary>,
    /// Slow targets.
    pub outliers: Vec<Outlier>,
    /// How it ended.
    pub outcome: Outcome,
}

/// The target survey's configuration: the directories as given, or on
/// Lustre (asked with `lustre`, or one target that is a Lustre mount)
/// the mount point once per active OST with that OST's index. Returns
/// notes on OSTs left out.
pub fn plan(
    targets: Vec<PathBuf>,
    size_mb: u64,
    lustre: bool,
) -> Result<(OstConfig, Vec<String>), ParamError> {
    use crate::lustre;
    let plain = OstConfig {
        targets,
        size_mb,
        ost_indices: vec![],
    };
    let on_lustre = plain.targets.len() == 1 && lustre::is_lustre(&plain.targets[0]);
    if !lustre && !on_lustre {
        return Ok((plain, vec![]));
    }
    let [mount] = plain.targets.as_slice() else {
        return Err(ParamError::new(
            "lustre",
            "give exactly one target, the Lustre mount point",
        ));
    };
    let osts = lustre::osts(mount).map_err(|e| ParamError::new("lustre", e.to_string()))?;
    if osts.active.is_empty() {
        return Err(ParamError::new(
            "lustre",
            format!("'lfs osts {}' lists no active OST", mount.display()),
        ));
    }
    let notes = match osts.inactive.is_empty() {
        true => vec![],
        false => vec![format!("OSTs not active, left out: {:?}", osts.inactive)],
    };
    let cfg = OstConfig {
        targets: vec![mount.clone(); osts.active.len()],
        ost_indices: osts.active,
        size_mb,
    };
    Ok((cfg, notes))
}

/// The survey's file in a target (created exclusively, removed at the end).
pub fn file_in(target: &Path) -> PathBuf {
    target.join(format!("iolab-ost-survey.{}", std::process::id()))
}

/// Runs the survey: every write, then every read, then the figures.
/// It stops between files and blocks once `cancel` (the run's token)
/// is cancelled.
pub fn run(
    cfg: &OstConfig,
    b: &dyn Backend,
    (cancel, live): (&iolab_core::CancelToken, Option<&Board>),
) -> OstReport {
    // Target i is worker i of the `write` and of the `read` phase; every
    // 1 MiB block is one timed operation.
    let rec = |phase: &str, i: usize| live.map_or_else(Recorder::off, |l| l.recorder(phase, i));
    let mut targets: Vec<OstTarget> = cfg
        .targets
        .iter()
        .enumerate()
        .map(|(i, p)| OstTarget {
            index: cfg.index(i),
            path: p.display().to_string(),
            write_mb_per_s: 0.0,
            write_s: 0.0,
            read_mb_per_s: 0.0,
            read_s: 0.0,
            direct: true,
            error: None,
        })
        .collect();
    let mut made = Vec::new();
    for (i, t) in targets.iter_mut().enumerate() {
        let f = cfg.file(i);
        let ost = cfg.ost_indices.get(i).copied();
        let stop = (cancel, &rec("write", i));
        match timed(b, &f, (Write(ost), cfg.size_mb), &mut made, stop) {
            Ok((s, direct)) => {
                (t.write_s, t.write_mb_per_s, t.direct) = (s, cfg.size_mb as f64 / s, direct)
            }
            Err(e) => t.error = Some(format!("write {}: {e}", f.display())),
        }
        if cancel.is_cancelled() {
            break;
        }
    }
    for (i, t) in targets.iter_mut().enumerate() {
        if t.error.is_some() || cancel.is_cancelled() {
            continue;
        }
        let f = cfg.file(i);
        let stop = (cancel, &rec("read", i));
        match timed(b, &f, (Read, cfg.size_mb), &mut made, stop) {
            Ok((s, _)) => (t.read_s, t.read_mb_per_s) = (s, cfg.size_mb as f64 / s),
            Err(e) => t.error = Some(format!("read {}: {e}", f.display())),
        }
    }
    for f in &made {
        if let Ok(c) = cpath(f) {
            let _ = b.unlink(&c);
        }
    }
    finish(targets, cancel.is_cancelled())
}

/// The figures, outliers and outcome from the per-target results
/// (`interrupted`: the run's token was cancelled).
fn finish(targets: Vec<OstTarget>, interrupted: bool) -> OstReport {
    let ok: Vec<&OstTarget> = targets.iter().filter(|t| t.error.is_none()).collect();
    let read = summarise(ok.iter().map(|t| (t.index, t.read_mb_per_s)).collect());
    let write = summarise(ok.iter().map(|t| (t.index, t.write_mb_per_s)).collect());
    let mut outliers = Vec::new();
    for (op, s, pick) in [
        (
            "read",
            &read,
            (|t: &OstTarget| t.read_mb_per_s) as fn(&OstTarget) -> f64,
        ),
        ("write", &write, |t: &OstTarget| t.write_mb_per_s),
    ] {
        if let Some(s) = s {
            outliers.extend(ok.iter().filter_map(|t| flag(op, s, t.index, pick(t))));
        }
    }
    let failed = targets.len() - ok.len();
    let outcome = if interrupted {
        Outcome::Interrupted
    } else if failed > 0 {
        Outcome::Error(Failure::other(
            "ost survey",
            format!("{failed} target(s) failed"),
        ))
    } else {
        Outcome::Completed
    };
    OstReport {
        header: Header::now(),
        targets,
        read,
        write,
        outliers,
        outcome,
    }
}

/// Why `mb_per_s` is an outlier against `s`, if it is.
fn flag(op: &str, s: &OpSummary, index: usize, mb_per_s: f64) -> Option<Outlier> {
    let reason = if mb_per_s < OUTLIER_FRACTION_OF_MEDIAN * s.median {
        format!(
            "{:.0}% of the median {:.3} MB/s (threshold {:.0}%)",
            100.0 * mb_per_s / s.median,
            s.median,
            100.0 * OUTLIER_FRACTION_OF_MEDIAN
        )
    } else if s.std_dev > 0.0 && mb_per_s < s.average - OUTLIER_SIGMAS * s.std_dev {
        format!(
            "more than {OUTLIER_SIGMAS} standard deviations below the average {:.3} MB/s",
            s.average
        )
    } else {
        return None;
    };
    Some(Outlier {
        index,
        op: op.to_string(),
        mb_per_s,
        reason,
    })
}

/// Worst/best/average/deviation/median of (index, MB/s) pairs.
pub fn summarise(v: Vec<(usize, f64)>) -> Option<OpSummary> {
    let n = v.len() as f64;
    let worst = v
        .iter()
        .copied()
        .reduce(|a, b| if b.1 < a.1 { b } else { a })?;
    let best = v
        .iter()
        .copied()
        .reduce(|a, b| if b.1 > a.1 { b } else { a })?;
    let average = v.iter().map(|x| x.1).sum::<f64>() / n;
    let std_dev = (v.iter().map(|x| (x.1 - average).powi(2)).sum::<f64>() / n).sqrt();
    let mut sorted: Vec<f64> = v.iter().map(|x| x.1).collect();
    sorted.sort_by(f64::total_cmp);
    let m = sorted.len();
    let median = if m % 2 == 1 {
        sorted[m / 2]
    } else {
        (sorted[m / 2 - 1] + sorted[m / 2]) / 2.0
    };
    Some(OpSummary {
        worst_index: worst.0,
        worst: worst.1,
        best_index: best.0,
        best: best.1,
        average,
        std_dev,
        median,
    })
}

/// What [`timed`] does with a file.
#[derive(Clone, Copy)]
enum Pass {
    /// Create and write it; on Lustre, first place it on this OST.
    Write(Option<u32>),
    /// Read it back.
    Read,
}
use Pass::{Read, Write};

/// Writes (creating it) or reads `f` whole; returns seconds and whether
/// O_DIRECT was used. A created file is added to `made`.
fn timed(
    b: &dyn Backend,
    f: &Path,
    (pass, size_mb): (Pass, u64),
    made: &mut Vec<PathBuf>,
    stop: (&iolab_core::CancelToken, &Recorder),
) -> std::io::Result<(f64, bool)> {
    let c = cpath(f)?;
    let block = BLOCK_BYTES as usize;
    let data = matches!(pass, Write(_)).then(|| WriteData::new(block));
    let mut buf = IoBuffer::heap(data.as_ref().map_or(block, |d| d.buffer_len(block)), 4096)?;
    if let Some(d) = &data {
        d.fill(buf.as_mut_slice());
    }
    let opts = match pass {
        Write(None) => OpenOptions::create_new(),
        // `lfs setstripe` made the file (and fails on one that exists),
        // so it is ours to open for writing.
        Write(Some(ost)) => {
            crate::lustre::place(f, ost)?;
            made.push(f.to_path_buf());
            OpenOptions::write()
        }
        Read => OpenOptions::read(),
    };
    let t0 = Instant::now();
    let (h, direct) = open_data(b, &c, opts, true)?;
    if matches!(pass, Write(None)) {
        made.push(f.to_path_buf());
    }
    let r = move_all(b, &h, &mut buf, data.as_ref(), (size_mb, direct), stop);
    let closed = b.close(h);
    r?;
    closed?;
    Ok((t0.elapsed().as_secs_f64().max(1e-9), direct))
}

fn move_all(
    b: &dyn Backend,
    h: &Handle,
    buf: &mut IoBuffer,
    data: Option<&WriteData>,
    (size_mb, direct): (u64, bool),
    (cancel, rec): (&iolab_core::CancelToken, &Recorder),
) -> std::io::Result<()> {
    let write = data.is_some();
    let blocks = size_mb * (MB as u64) / BLOCK_BYTES;
    for i in 0..blocks {
        if cancel.is_cancelled() {
            return Err(std::io::Error::from_raw_os_error(libc::EINTR));
        }
        let (off, len) = (i * BLOCK_BYTES, BLOCK_BYTES as usize);
        let t0 = iolab_core::clock::mono_ns();
        let r = if let Some(d) = data {
            // One file per pass: the pass number alone tells them apart.
            let at = d.place(buf.as_mut_slice(), 0, off, len);
            write_all_at(b, h, &buf.as_slice()[at..at + len], off)
        } else {
            read_full_at(b, h, &mut buf.as_mut_slice()[..len], off)
        };
        if let Err(e) = r {
            rec.error();
            return Err(e);
        }
        rec.op(BLOCK_BYTES, iolab_core::clock::mono_ns().saturating_sub(t0));
    }
    if write && !direct {
        b.fdatasync(h)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kits_example_figures_come_out() {
        let w = summarise(vec![(0, 126.918), (1, 108.954), (2, 128.173), (3, 17.706)]).unwrap();
        assert_eq!((w.worst_index, w.best_index), (3, 2));
        assert!((w.average - 95.43775).abs() < 1e-3, "{w:?}");
        assert!((w.std_dev - 45.518).abs() < 1e-2, "{w:?}");
        assert!(flag("write", &w, 3, 17.706).is_some());
        assert!(flag("write", &w, 1, 108.954).is_none());
        assert!(summarise(vec![]).is_none());
    }

    #[test]
    fn a_survey_of_two_directories_removes_its_files() {
        let base = std::env::temp_dir().join(format!("iolab-ost-unit-{}", std::process::id()));
        let dirs: Vec<PathBuf> = (0..2).map(|i| base.join(format!("t{i}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        let cfg = OstConfig {
            targets: dirs.clone(),
            size_mb: 2,
            ost_indices: vec![],
        };
        let b = iolab_backend::by_name("posix").unwrap();
        cfg.validate(b.as_ref()).unwrap();
        let r = run(&cfg, b.as_ref(), (&iolab_core::CancelToken::new(), None));
        let left: usize = dirs
            .iter()
            .map(|d| std::fs::read_dir(d).unwrap().count())
            .sum();
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        assert_eq!(left, 0);
        assert!(r
            .targets
            .iter()
            .all(|t| t.read_mb_per_s > 0.0 && t.write_mb_per_s > 0.0));
        assert!(r.read.is_some() && r.write.is_some());
    }
}
