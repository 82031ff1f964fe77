//! Running the curves: each point is run through `iolab sweep`'s engine
//! (the tool as a child process with `--json`, recorded in the store at
//! once), one point at a time, and after each the curve's knee decides
//! whether the next is run. Everything decided is decided from the
//! store, so a rerun walks the same curves, skips what is recorded and
//! carries on at the first missing point; a baseline's curves are
//! walked the same way without running anything ([`walk_stored`]).
//!
//! A data read point reads the files its write point left: the write
//! and read curves of a mode advance together, point by point, and a
//! read point whose files this process has not just written (a rerun,
//! or the write curve ended sooner) has them written first by the same
//! write command, not recorded. A data write point whose files this
//! process has not written has them written so too, before its first
//! repeat: every repeat then writes over files, as a run alone after
//! the qualification does ([`Prepare::ToWriteOver`]).

use crate::curves::{Curve, Curves};
use crate::knee::{self, Next, Stop};
use crate::layer::Layer;
use crate::plan::Plan;
use crate::verdict::{LineEnd, Measured, MeasuredPoint};
use iolab_store::{Series, Store, StoreError};
use iolab_sweep::plan::{Plan as Sweep, PointSpec};
use iolab_sweep::run::{self as sweep, SweepError, Unrecorded, WorkDir};
use std::path::Path;

/// Why a write point's command runs once unrecorded before a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepare {
    /// A read point of the same key reads its files.
    ToRead,
    /// The write point itself, whose files are new: so that every one of
    /// its repeats writes over files, as a run of the same command after
    /// it does. Otherwise its first repeat alone paid for allocating them
    /// (on tmpfs at 0.71 of the repeats after it), and the point's mean
    /// came out below what its tool gives run alone.
    ToWriteOver,
}

/// What the run tells its caller as it goes (it prints nothing).
#[derive(Debug)]
pub enum Event<'a> {
    /// A curve's next point runs: the events up to the next `Curve`
    /// are that curve's (a write curve and its read curve take turns).
    Curve {
        /// Its number (from 1), its place in the plan's curves.
        n: usize,
        /// How many curves.
        of: usize,
        /// Its label.
        label: &'a str,
        /// Its points up to the cap.
        points: usize,
    },
    /// A repeat of a point, as the sweep reports it.
    Sweep(sweep::Event<'a>),
    /// A point's files are written first, not recorded: a read point's,
    /// or a data write point's (see [`Prepare`]).
    Preparing {
        /// The write curve's label.
        label: &'a str,
        /// The point.
        key: &'a str,
        /// Which point they are written for.
        why: Prepare,
    },
    /// A curve is complete.
    CurveDone {
        /// Its number (from 1), as [`Event::Curve`] gives it.
        n: usize,
        /// Its label.
        label: &'a str,
        /// Its points measured.
        measured: &'a Measured,
    },
}

/// How the run ended.
#[derive(Debug)]
pub struct Ran {
    /// Each curve as measured (None: not reached, when interrupted).
    pub measured: Vec<Option<Measured>>,
    /// Ctrl-C or SIGTERM stopped it; a rerun carries on.
    pub interrupted: bool,
}

/// Why the run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A curve's sweep plan or the store.
    #[error("{0}")]
    Sweep(#[from] SweepError),
    /// The store.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A read point's files could not be written.
    #[error("{label}: writing the files of {key} for the read failed: {why}")]
    Prepare {
        /// The write curve.
        label: String,
        /// The point.
        key: String,
        /// How it ended.
        why: String,
    },
}

/// One curve being walked: its points by line, what each gave.
struct Walk<'a> {
    curve: &'a Curve,
    sweep: Sweep,
    points: Vec<PointSpec>,
    /// Point indexes of each line, in order.
    lines: Vec<Vec<usize>>,
    /// What each line's points gave so far (watched figures' means).
    seen: Vec<Vec<Option<Vec<f64>>>>,
    /// The (phase, metric) pairs the knee watches.
    watched: Vec<(String, String)>,
    measured: Vec<MeasuredPoint>,
}

impl<'a> Walk<'a> {
    fn new(i: usize, curve: &'a Curve, curves: &Curves) -> Result<Walk<'a>, SweepError> {
        let sweep = Sweep::parse(&curve.sweep)?;
        let points = sweep.points();
        let mut lines: Vec<(String, Vec<usize>)> = Vec::new();
        for p in &points {
            match lines.iter_mut().find(|(l, _)| *l == p.line) {
                Some((_, v)) => v.push(p.idx),
                None => lines.push((p.line.clone(), vec![p.idx])),
            }
        }
        let watched = curves
            .of_curve(i)
            .map(|f| (f.phase.clone(), f.metric.clone()))
            .collect();
        Ok(Walk {
            curve,
            sweep,
            seen: vec![Vec::new(); lines.len()],
            lines: lines.into_iter().map(|(_, v)| v).collect(),
            points,
            watched,
            measured: Vec::new(),
        })
    }

    /// The next point to run, or None when every line is done.
    fn next(&self, fraction: f64) -> Option<usize> {
        self.lines.iter().zip(&self.seen).find_map(|(line, seen)| {
            match knee::next(seen, line.len(), fraction) {
                Next::Run(i) => Some(line[i]),
                Next::Done(_) => None,
            }
        })
    }

    /// How each line ended (a line not finished is left out).
    fn ends(&self, fraction: f64) -> Vec<LineEnd> {
        let mut out = Vec::new();
        for (line, seen) in self.lines.iter().zip(&self.seen) {
            if let Next::Done(stop) = knee::next(seen, line.len(), fraction) {
                let at = match stop {
                    Stop::Flattened { at } | Stop::Failed { at } => at,
                    Stop::Cap => line.len() - 1,
                };
                let p = &self.points[line[at]];
                out.push(LineEnd {
                    line: p.line.clone(),
                    stop,
                    key: p.key.clone(),
                });
            }
        }
        out
    }

    /// Notes what point `idx` gave, from the series in the store.
    fn record(&mut self, idx: usize, series: Option<&Series>, repeats: u32) {
        let spec = &self.points[idx];
        let stored = series.and_then(|s| s.points.iter().find(|p| p.key == spec.key));
        let mut spreads: Vec<(String, String, iolab_results::Spread)> = self
            .watched
            .iter()
            .filter_map(|(ph, me)| stored?.spread(ph, me).map(|s| (ph.clone(), me.clone(), s)))
            .collect();
        // A point that moved nothing (a run too short for its start-up)
        // measured nothing: it is no result, not a limit of zero.
        let empty = !spreads.is_empty() && spreads.iter().all(|(_, _, s)| s.max <= 0.0);
        if empty {
            spreads.clear();
        }
        let completed = stored.map_or(0, |p| p.completed()) as u32;
        let state = (spreads.len() == self.watched.len() && completed > 0)
            .then(|| spreads.iter().map(|(_, _, s)| s.mean).collect());
        if let Some(l) = self.lines.iter().position(|l| l.contains(&idx)) {
            self.seen[l].push(state);
        }
        let nodes = self
            .curve
            .nodes
            .unwrap_or_else(|| spec.axes.get("nodes").and_then(|v| v.as_u64()).unwrap_or(1) as u32);
        self.measured.push(MeasuredPoint {
            key: spec.key.clone(),
            line: spec.line.clone(),
            x: spec.x,
            nodes,
            figures: spreads,
            completed,
            failed: repeats.saturating_sub(completed),
            empty,
        });
    }

    fn result(&self, fraction: f64) -> Measured {
        Measured {
            points: self.measured.clone(),
            ends: self.ends(fraction),
        }
    }
}

/// The series of `label`, None before its first run.
fn series(store: &Store, label: &str) -> Result<Option<Series>, StoreError> {
    match store.series(label) {
        Ok(s) => Ok(Some(s)),
        Err(StoreError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the series holds every repeat of point `key`.
fn complete(s: Option<&Series>, key: &str, repeats: u32) -> bool {
    s.and_then(|s| s.points.iter().find(|p| p.key == key))
        .is_some_and(|p| p.completed() as u32 >= repeats)
}

/// What the run shares: the plan, the store, the binary, the sweep's
/// directory, the caller's ears.
pub struct Ctx<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// Its curves.
    pub curves: &'a Curves,
    /// The store.
    pub store: &'a mut Store,
    /// The iolab binary the children run.
    pub iolab: &'a Path,
    /// The sweep's directory (children's JSON and output).
    pub work: &'a WorkDir,
}

/// Runs every curve of the plan to its knee (or cap), resuming what the
/// store holds.
pub fn run(cx: &mut Ctx, on: &mut dyn FnMut(Event)) -> Result<Ran, RunError> {
    let curves = cx.curves;
    let mut measured: Vec<Option<Measured>> = vec![None; curves.curves.len()];
    // A data read curve runs beside the write curve whose files it reads.
    let len = curves.curves.len();
    let groups: Vec<Vec<usize>> = (0..len)
        .filter(|&i| curves.curves[i].reads_after.is_none())
        .map(|i| {
            let mut g = vec![i];
            g.extend((0..len).filter(|&j| curves.curves[j].reads_after == Some(i)));
            g
        })
        .collect();
    for group in groups {
        let mut walks = Vec::new();
        for &i in &group {
            walks.push((i, Walk::new(i, &curves.curves[i], curves)?));
        }
        let interrupted = run_group(cx, &mut walks, on)?;
        for (i, w) in &walks {
            let m = w.result(cx.plan.knee);
            on(Event::CurveDone {
                n: i + 1,
                label: &w.curve.label,
                measured: &m,
            });
            measured[*i] = Some(m);
        }
        if interrupted {
            return Ok(Ran {
                measured,
                interrupted: true,
            });
        }
    }
    Ok(Ran {
        measured,
        interrupted: false,
    })
}

/// Runs a group's curves (one, or a write curve and its read curve)
/// point by point until each is done; true when interrupted.
fn run_group(
    cx: &mut Ctx,
    walks: &mut [(usize, Walk)],
    on: &mut dyn FnMut(Event),
) -> Result<bool, RunError> {
    let knee = cx.plan.knee;
    // The write point whose files are on disk now, written by this process.
    let mut written: Option<String> = None;
    loop {
        let mut progressed = false;
        for k in 0..walks.len() {
            let Some(idx) = walks[k].1.next(knee) else {
                continue;
            };
            progressed = true;
            let key = walks[k].1.points[idx].key.clone();
            let reads = walks[k].1.curve.reads_after.is_some();
            let label = walks[k].1.curve.label.clone();
            let before = series(cx.store, &label)?;
            let on_disk = written.as_deref() == Some(key.as_str())
                || complete(before.as_ref(), &key, cx.plan.repeats);
            if let Some(why) = prepare_for(walks[k].1.curve, on_disk) {
                match prepare(cx, &walks[0].1, &key, why, on)? {
                    Prepared::Written => written = Some(key.clone()),
                    Prepared::Failed => written = None,
                    Prepared::Interrupted => return Ok(true),
                }
            }
            let (i, w) = (walks[k].0, &walks[k].1);
            // Said before every point: the curves of a group take turns,
            // and what the sweep reports next is this curve's.
            on(Event::Curve {
                n: i + 1,
                of: cx.curves.curves.len(),
                label: &w.curve.label,
                points: w.points.len(),
            });
            let sum = sweep::run_selected(
                &w.sweep,
                cx.store,
                cx.iolab,
                cx.work,
                &|p| p.idx == idx,
                &mut |e| on(Event::Sweep(e)),
            )?;
            if sum.interrupted {
                return Ok(true);
            }
            if !reads && sum.recorded > 0 {
                written = Some(key.clone());
            }
            let after = series(cx.store, &label)?;
            walks[k].1.record(idx, after.as_ref(), cx.plan.repeats);
        }
        if !progressed {
            return Ok(false);
        }
    }
}

/// Whether a point of `curve` needs its write point's files written
/// first, and why; `done` when they are on disk, written by this
/// process, or the point needs no run.
fn prepare_for(curve: &Curve, done: bool) -> Option<Prepare> {
    match (done, curve.reads_after.is_some(), curve.layer) {
        (true, _, _) => None,
        (false, true, _) => Some(Prepare::ToRead),
        (false, false, Layer::Data) => Some(Prepare::ToWriteOver),
        (false, false, _) => None,
    }
}

/// How a point's unrecorded write ended.
enum Prepared {
    Written,
    /// It failed, and the point runs anyway (a write point's own).
    Failed,
    Interrupted,
}

/// Writes the files of the write curve's point `key` (unrecorded), for
/// the read point of the same key or the write point itself (`why`).
/// A read point cannot run without them: their write failing is an
/// error. A write point's repeats can: they run and fail as it did,
/// each recorded.
fn prepare(
    cx: &mut Ctx,
    write: &Walk,
    key: &str,
    why: Prepare,
    on: &mut dyn FnMut(Event),
) -> Result<Prepared, RunError> {
    let Some(p) = write.points.iter().find(|p| p.key == key) else {
        return Ok(Prepared::Written);
    };
    on(Event::Preparing {
        label: &write.curve.label,
        key,
        why,
    });
    let json = cx.work.path().join("prepare.json");
    let argv = write
        .sweep
        .command(&cx.iolab.to_string_lossy(), p, 0, &json.to_string_lossy())
        .map_err(SweepError::from)?;
    let ended = sweep::run_unrecorded(&argv, cx.work, "prepare")?;
    let _ = std::fs::remove_file(&json);
    match ended {
        Unrecorded::Done => Ok(Prepared::Written),
        Unrecorded::Interrupted => Ok(Prepared::Interrupted),
        // The write point's repeats run next, fail as it did, and are
        // recorded and named as its curve's failures.
        Unrecorded::Failed(_) if why == Prepare::ToWriteOver => Ok(Prepared::Failed),
        Unrecorded::Failed(why) => Err(RunError::Prepare {
            label: write.curve.label.clone(),
            key: key.to_string(),
            why,
        }),
    }
}

/// Walks every curve over what `store` holds, running nothing: the
/// curves as a qualification recorded them (a baseline's, or this one's
/// after its run). A curve stops at its first point not in the store.
pub fn walk_stored(
    plan: &Plan,
    curves: &Curves,
    store: &Store,
) -> Result<Vec<Option<Measured>>, RunError> {
    let mut out = Vec::new();
    for (i, c) in curves.curves.iter().enumerate() {
        let Some(s) = series(store, &c.label)? else {
            out.push(None);
            continue;
        };
        let mut w = Walk::new(i, c, curves)?;
        while let Some(idx) = w.next(plan.knee) {
            let key = &w.points[idx].key;
            if !s.points.iter().any(|p| p.key == *key && !p.runs.is_empty()) {
                break;
            }
            w.record(idx, Some(&s), plan.repeats);
        }
        out.push(Some(w.result(plan.knee)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fill;

    /// The default plan's curves on a 2-core machine.
    fn default_curves() -> Curves {
        let m = crate::machine::Machine::sample(2);
        crate::curves::curves(&fill(Plan::read("").unwrap(), &m, None).unwrap())
    }

    #[test]
    fn data_points_write_their_files_first_and_other_layers_run_as_they_are() {
        let c = default_curves();
        let why = |label: &str, on_disk: bool| {
            let curve = c.curves.iter().find(|k| k.label == label);
            prepare_for(curve.unwrap_or_else(|| panic!("no curve {label}")), on_disk)
        };
        for (label, wanted) in [
            ("data write file-per-task", Some(Prepare::ToWriteOver)),
            ("data write shared", Some(Prepare::ToWriteOver)),
            ("data read file-per-task", Some(Prepare::ToRead)),
            ("data read shared", Some(Prepare::ToRead)),
            ("network ping", None),
            ("metadata private", None),
            ("metadata shared", None),
        ] {
            assert_eq!(why(label, false), wanted, "{label}");
            // Files on disk already: nothing is written first.
            assert_eq!(why(label, true), None, "{label}");
        }
    }
}
