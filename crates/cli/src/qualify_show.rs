//! What `iolab qualify` shows and writes around its run: the plan's
//! length before it starts, a progress bar on a terminal (a line per
//! finished curve otherwise, so scripts stay quiet), a failed repeat's
//! tail, `--dry-run`'s command lines, the directory the data files go
//! in, and DIR/report.html.

use indicatif::ProgressBar;
use iolab_qualify::curves::Curves;
use iolab_qualify::knee::Stop;
use iolab_qualify::layer::Layer;
use iolab_qualify::plan::Plan;
use iolab_qualify::run::{Event, Prepare};
use iolab_qualify::verdict::Verdict;
use iolab_report::qualify::html::{self, LayerCharts};
use iolab_report::series::chart;
use iolab_store::Store;
use iolab_sweep::run::Event as Sweep;
use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `--dry-run`: each curve, its points up to the cap, and its first
/// point's command line.
pub fn dry_run(plan: &Plan, curves: &Curves, exe: &Path) -> iolab_core::Outcome {
    let _ = outln!(
        "qualify '{}': {} curves in layers {}; the plan is valid",
        plan.label,
        curves.curves.len(),
        plan.layers
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for c in &curves.curves {
        let Ok(s) = iolab_sweep::plan::Plan::parse(&c.sweep) else {
            continue;
        };
        let points = s.points();
        let keys: Vec<&str> = points.iter().map(|p| p.key.as_str()).collect();
        let first = points
            .first()
            .and_then(|p| s.command(&exe.to_string_lossy(), p, 1, "RUN.json").ok())
            .map(|a| a.join(" "))
            .unwrap_or_default();
        let _ = outln!(
            "{}: up to {} ({} points)\n  {first}",
            c.label,
            keys.last().unwrap_or(&""),
            keys.len()
        );
    }
    iolab_core::Outcome::Completed
}

/// The directory the devices, data and metadata runs make their files
/// in, when they run.
fn files_of(plan: &Plan) -> Option<PathBuf> {
    (!plan.layers.iter().all(|l| *l == Layer::Network)).then(|| plan.work_dir())
}

/// The file in the files' directory that names the qualification (its
/// `--out`) that made it: only that one uses it and removes it.
const OWNER: &str = ".iolab-qualify-out";

/// What [`OWNER`] holds for the qualification in `out`: its absolute path.
fn owner_of(out: &Path) -> String {
    std::path::absolute(out)
        .unwrap_or_else(|_| out.to_path_buf())
        .display()
        .to_string()
}

/// Whether `d` (a files' directory) holds an [`OWNER`] naming `out`.
pub fn names_out(d: &Path, out: &Path) -> bool {
    iolab_core::input::read_text(&d.join(OWNER), iolab_core::input::TEXT_MAX_BYTES)
        .is_ok_and(|o| o == owner_of(out))
}

/// Checks, before anything is made, that the files' directory is absent
/// or the one this qualification (`out`) made before it was interrupted:
/// a real directory of this user's, never a link, whose [`OWNER`] names
/// `out`. Any other is not its to fill or remove (a copied plan.toml
/// carries the token that names it).
pub fn check_files_dir(plan: &Plan, out: &Path) -> Result<(), String> {
    let Some(d) = files_of(plan) else {
        return Ok(());
    };
    let ours = || names_out(&d, out);
    match std::fs::symlink_metadata(&d) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() && m.uid() == iolab_core::trust::euid() && ours() => match foreign_entry(&d) {
            None => Ok(()),
            Some((p, what)) => Err(format!(
                "{}: {what}, in the files' directory an interrupted run left: qualify hands its tools only files it made there and follows no link; remove it, then run the same command again",
                p.display()
            )),
        },
        Ok(_) => Err(format!(
            "{} exists and was not made by the qualification in {}: remove it, or give another dir or token",
            d.display(),
            out.display()
        )),
    }
}

/// What `m` (an lstat) is when it is not a regular file or directory of
/// this user: what the tools of a resumed run must never be handed (a
/// link would have them write, or the cleanup remove, through it).
fn not_ours(m: &std::fs::Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_symlink() {
        Some("a symbolic link")
    } else if !t.is_file() && !t.is_dir() {
        Some("neither a regular file nor a directory")
    } else if m.uid() != iolab_core::trust::euid() {
        Some("owned by another user")
    } else {
        None
    }
}

/// The first entry at or below the files' directory `d` that is
/// [`not_ours`], found without following any link.
fn foreign_entry(d: &Path) -> Option<(PathBuf, &'static str)> {
    let mut dirs = vec![d.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Some((dir, "a directory qualify cannot read"));
        };
        for e in entries.flatten() {
            // DirEntry::metadata is an lstat: a link is seen, not followed.
            let Ok(m) = e.metadata() else {
                return Some((e.path(), "an entry qualify cannot stat"));
            };
            if let Some(what) = not_ours(&m) {
                return Some((e.path(), what));
            }
            if m.is_dir() {
                dirs.push(e.path());
            }
        }
    }
    None
}

/// The files' directory (none when only the network is measured): made
/// now, mode 0700, with its [`OWNER`], or the one an interrupted run of
/// this qualification made.
pub fn files_dir(plan: &Plan, out: &Path) -> Result<Option<PathBuf>, String> {
    let Some(d) = files_of(plan) else {
        return Ok(None);
    };
    check_files_dir(plan, out)?;
    if std::fs::symlink_metadata(&d).is_err() {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&d)
            .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        iolab_output::write_atomically(&d.join(OWNER), owner_of(out).as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", d.join(OWNER).display()))?;
        if plan.runs(Layer::Metadata) {
            // Each point's tree in a block group of its own, where the
            // file system has such groups; elsewhere nothing to do.
            let _ = iolab_qualify::caveat::spread(&d);
        }
    }
    if let Err(e) = point_dirs(plan) {
        // Nothing is measured yet: what was made goes, as after a run.
        remove_files_dir(plan, &d);
        return Err(e);
    }
    Ok(Some(d))
}

/// Makes the metadata points' directories
/// ([`iolab_qualify::curves::metadata_dirs`]) that are not there yet: all
/// at once, before any point removes its files, so that each is spread
/// to a block group no other point of the run uses. A rerun finds those
/// it made (what else is in the files' directory was refused by
/// [`check_files_dir`]); mkdir follows no link at the name.
fn point_dirs(plan: &Plan) -> Result<(), String> {
    for p in iolab_qualify::curves::metadata_dirs(plan) {
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(format!("cannot create {}: {e}", p.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Removes, once the qualification is complete, what its tools made in
/// the files' directory `d` ([`iolab_qualify::curves::made_by_tools`]),
/// then the directory when nothing else is left in it. Only regular
/// files and directories of this user count as the tools' (by lstat);
/// anything else (someone's file, or a link at a tool's name, put there
/// while an interrupted run left it) is kept,
/// with [`OWNER`] so that a rerun still knows the directory; the names
/// kept are returned, for a note.
pub fn remove_files_dir(plan: &Plan, d: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(d) else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == OWNER {
            continue;
        }
        if !iolab_qualify::curves::made_by_tools(plan, &name) {
            kept.push(name);
            continue;
        }
        // A tool's name is not enough: a link or another's file put at
        // it is not the tool's (DirEntry::metadata is an lstat).
        let m = match e.metadata() {
            Ok(m) => m,
            Err(why) => {
                kept.push(format!("{name} (cannot stat it: {why})"));
                continue;
            }
        };
        if let Some(what) = not_ours(&m) {
            kept.push(format!("{name} ({what}: not its tool's, not removed)"));
            continue;
        }
        // remove_dir_all follows no link below the tool's directory.
        let gone = match m.is_dir() {
            true => std::fs::remove_dir_all(e.path()),
            false => std::fs::remove_file(e.path()),
        };
        if let Err(why) = gone {
            kept.push(format!("{name} (made by its tool, not removed: {why})"));
        }
    }
    if kept.is_empty() {
        let _ = std::fs::remove_file(d.join(OWNER));
        let _ = std::fs::remove_dir(d);
    }
    kept.sort();
    kept
}

/// The progress of a run: a bar on a terminal, a line per curve otherwise.
pub struct Shown {
    bar: Option<ProgressBar>,
    /// When the last run ended (or the run started): the next run's
    /// time, with what came before it (a sync, a read's files written).
    mark: Instant,
    /// Repeats run now.
    runs: u64,
    /// Runs left at most of each curve (its points up to its cap).
    most: Vec<u64>,
    /// Each curve's layer.
    layer: Vec<Layer>,
    /// Each layer's runs so far: how many, and their seconds.
    timed: BTreeMap<Layer, (u64, f64)>,
    /// Seconds a network run should take before one is timed.
    network_s: f64,
    /// The curve whose point runs now (index into `most`).
    curve: usize,
    label: String,
    /// The store, for the messages.
    store: String,
}

impl Shown {
    /// Says what will run and how long it may take, and starts counting.
    pub fn start(plan: &Plan, curves: &Curves, dir: &Path, resumed: bool) -> Shown {
        let points: Vec<u64> = curves
            .curves
            .iter()
            .map(|c| {
                iolab_sweep::plan::Plan::parse(&c.sweep).map_or(0, |s| s.points().len() as u64)
            })
            .collect();
        let most: Vec<u64> = points.iter().map(|p| p * plan.repeats as u64).collect();
        let net: u64 = curves
            .curves
            .iter()
            .zip(&most)
            .filter(|(c, _)| c.layer == Layer::Network)
            .map(|(_, m)| m)
            .sum();
        let network = match net {
            0 => String::new(),
            n => format!(
                "; the network's {n} at most take about {} each",
                crate::progress::human_s(plan.network.duration_s + 1.0)
            ),
        };
        iolab_core::say!(
            "iolab qualify '{}': {} layers, {} curves, at most {} runs ({} repeats a point; each curve stops one point after it flattens){}{network}; results in {}",
            plan.label,
            plan.layers.len(),
            curves.curves.len(),
            most.iter().sum::<u64>(),
            plan.repeats,
            if resumed { "; carrying on: what is recorded is not run again" } else { "" },
            dir.join("results.sqlite").display()
        );
        let bar = crate::progress::shown(true)
            .then(|| crate::progress::bar(most.iter().sum(), crate::progress::Unit::Items));
        Shown {
            bar,
            mark: Instant::now(),
            runs: 0,
            most,
            layer: curves.curves.iter().map(|c| c.layer).collect(),
            timed: BTreeMap::new(),
            network_s: plan.network.duration_s + 1.0,
            curve: 0,
            label: String::new(),
            store: dir.join("results.sqlite").display().to_string(),
        }
    }

    /// Runs left at most (a curve done has none left).
    fn left(&self) -> u64 {
        self.most.iter().sum()
    }

    /// The time left, estimated layer by layer: a metadata run can
    /// take ten times a network run, so one mean over all of them
    /// would be far off.
    fn eta(&self) -> String {
        let mut left: BTreeMap<Layer, u64> = BTreeMap::new();
        for (l, m) in self.layer.iter().zip(&self.most) {
            *left.entry(*l).or_default() += m;
        }
        let (secs, untimed) = estimate(&left, &self.timed, self.network_s);
        let more: Vec<String> = untimed
            .iter()
            .map(|(l, n)| format!("{n} {l} runs"))
            .collect();
        let timed = (secs > 0.0).then(|| {
            format!(
                "about {} left (an estimate, from each layer's runs so far)",
                crate::progress::human_s(secs)
            )
        });
        match (timed, more.is_empty()) {
            (None, true) => String::new(),
            (Some(t), true) => format!("; {t}"),
            (Some(t), false) => format!("; {t}, and {} not timed yet", more.join(", ")),
            (None, false) => format!("; {} left, not timed yet", more.join(", ")),
        }
    }

    /// One event of the run.
    pub fn event(&mut self, e: Event) {
        match e {
            Event::Curve { n, label, .. } => {
                self.curve = n - 1;
                self.label = label.to_string();
            }
            Event::Sweep(Sweep::Planned { done, .. }) => self.skip(done as u64),
            Event::Sweep(Sweep::Started { point, repeat, .. }) => {
                if let Some(b) = &self.bar {
                    b.set_message(format!("{} {} #{repeat}", self.label, point.key));
                }
            }
            Event::Sweep(Sweep::Recorded {
                point,
                repeat,
                run_id,
                outcome,
                ..
            }) => {
                self.ran();
                if !iolab_store::counts(&outcome) && !crate::output::stdout_closed() {
                    self.say_err(&format!(
                        "{} {} #{repeat}: {outcome}, not counted (iolab results --store {} show {run_id} says why)",
                        self.label, point.key, self.store
                    ));
                }
            }
            Event::Sweep(Sweep::Duplicate { .. }) => self.ran(),
            Event::Sweep(Sweep::Failed {
                point,
                repeat,
                why,
                stderr_tail,
            }) => {
                self.ran();
                if !crate::output::stdout_closed() {
                    self.say_err(&format!(
                        "{} {} #{repeat}: FAILED: {why}",
                        self.label, point.key
                    ));
                    for l in stderr_tail.lines() {
                        self.say_err(&format!("    | {l}"));
                    }
                }
            }
            Event::Preparing { label, key, why } => {
                if let Some(b) = &self.bar {
                    let what = match why {
                        Prepare::ToRead => "writing the files to read",
                        Prepare::ToWriteOver => "writing its files once, unmeasured",
                    };
                    b.set_message(format!("{label} {key}: {what}"));
                }
            }
            Event::CurveDone { n, label, measured } => self.curve_done(n - 1, label, measured),
        }
    }

    /// A curve ended: a line with how, and the bar's length shortened.
    fn curve_done(&mut self, i: usize, label: &str, measured: &iolab_qualify::verdict::Measured) {
        let ends: Vec<String> = measured
            .ends
            .iter()
            .map(|e| match e.stop {
                Stop::Flattened { .. } => format!("flat after {}", e.key),
                Stop::Cap => format!("cap {}", e.key),
                Stop::Failed { .. } => format!("FAILED at {}", e.key),
            })
            .collect();
        if let Some(m) = self.most.get_mut(i) {
            *m = 0;
        }
        // A curve without an end was interrupted: say what it recorded,
        // and no time left (the rerun carries on from there).
        let ending = match (ends.is_empty(), measured.points.last()) {
            (false, _) => format!("{}{}", ends.join(", "), self.eta()),
            (true, None) => "interrupted before any point was recorded".to_string(),
            (true, Some(p)) => format!("interrupted after {}", p.key),
        };
        let line = format!("{label}: {} points, {ending}", measured.points.len());
        match &self.bar {
            Some(b) => {
                b.set_length(self.runs + self.left());
                b.println(line);
            }
            None => {
                let _ = outln!("{line}");
            }
        }
    }

    fn ran(&mut self) {
        if let Some(&l) = self.layer.get(self.curve) {
            let t = self.timed.entry(l).or_default();
            t.0 += 1;
            t.1 += self.mark.elapsed().as_secs_f64();
        }
        self.mark = Instant::now();
        self.runs += 1;
        self.skip(1);
        if let Some(b) = &self.bar {
            b.set_position(self.runs);
        }
    }

    /// `n` runs of the curve under way are done (or recorded already).
    fn skip(&mut self, n: u64) {
        if let Some(m) = self.most.get_mut(self.curve) {
            *m = m.saturating_sub(n);
        }
    }

    fn say_err(&self, line: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| iolab_core::say!("{line}")),
            None => iolab_core::say!("{line}"),
        }
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// Seconds the runs `left` of each layer should take, at the mean of
/// that layer's runs `timed` so far (how many, their seconds); network
/// runs not yet timed at `network_s` each, the plan's duration. The
/// layers with runs left that nothing times yet come back apart, with
/// their runs left, rather than guessed.
fn estimate(
    left: &BTreeMap<Layer, u64>,
    timed: &BTreeMap<Layer, (u64, f64)>,
    network_s: f64,
) -> (f64, Vec<(Layer, u64)>) {
    let mut secs = 0.0;
    let mut untimed = Vec::new();
    for (&l, &n) in left.iter().filter(|(_, n)| **n > 0) {
        match timed.get(&l) {
            Some(&(runs, s)) if runs > 0 => secs += s / runs as f64 * n as f64,
            _ if l == Layer::Network => secs += network_s * n as f64,
            _ => untimed.push((l, n)),
        }
    }
    (secs, untimed)
}

/// DIR/report.html: the verdict, the chain of limits, each layer's
/// curves (the charts of its figures), the plan; written whole or not
/// at all.
pub fn write_report(
    dir: &Path,
    plan: &Plan,
    curves: &Curves,
    store: &Store,
    v: &Verdict,
    baseline: Option<&str>,
) -> Result<(), String> {
    let text = crate::font::load(None).unwrap_or(false);
    let mut charts = Vec::new();
    for &layer in &plan.layers {
        let series: Vec<iolab_store::Series> = curves
            .curves
            .iter()
            .filter(|c| c.layer == layer)
            .filter_map(|c| store.series(&c.label).ok())
            .collect();
        let wanted: Vec<(&str, &str)> = curves
            .figures
            .iter()
            .filter(|f| f.layer == layer)
            .map(|f| (f.phase.as_str(), f.metric.as_str()))
            .collect();
        let mut drawn = Vec::new();
        for c in chart::charts(&series)
            .iter()
            .filter(|c| wanted.contains(&(c.phase.as_str(), c.metric.as_str())))
        {
            let svg = chart::svg(c, text).map_err(|e| e.to_string())?;
            drawn.push((
                format!("{}: {} against {}", c.title(), c.y_label(), c.x_label),
                svg,
            ));
        }
        charts.push(LayerCharts {
            layer,
            charts: drawn,
        });
    }
    let page = html::render(
        v,
        &charts,
        &plan.to_toml(),
        baseline,
        iolab_core::clock::wall_ns(),
    );
    let path = dir.join("report.html");
    iolab_output::write_atomically(&path, page.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Network runs of 2 s and metadata runs of 10 s: each layer's runs
    /// left at its own mean (one mean over all runs, as before, gave
    /// 10 runs x 34/12 s = 28 s where 62 s are due); a layer not timed
    /// yet is named, not guessed, unless the plan says how long its
    /// runs are (the network's).
    #[test]
    fn the_time_left_is_each_layers_runs_at_that_layers_mean() {
        let left = BTreeMap::from([(Layer::Network, 0), (Layer::Data, 4), (Layer::Metadata, 6)]);
        let mut timed = BTreeMap::from([(Layer::Network, (6, 12.0)), (Layer::Data, (4, 2.0))]);
        let (secs, untimed) = estimate(&left, &timed, 2.0);
        assert_eq!((secs, untimed), (2.0, vec![(Layer::Metadata, 6)]));
        timed.insert(Layer::Metadata, (2, 20.0));
        assert_eq!(estimate(&left, &timed, 2.0), (62.0, vec![]));
        let fresh = BTreeMap::from([(Layer::Network, 3), (Layer::Data, 1)]);
        assert_eq!(
            estimate(&fresh, &BTreeMap::new(), 1.5),
            (4.5, vec![(Layer::Data, 1)])
        );
    }
}
