//! Progress on the terminal, one design for every tool: a bar on stderr
//! only when this process leads (rank 0), stderr is a terminal and `CI` is
//! not set ([`shown`]), drawn by one thread that reads the engine's
//! counters, in one style ([`bar`]); scripts and CI logs stay quiet.
//! For mdtest, [`Reporter`] also prints the -v phase lines on stdout.
//! Engines only bump counters and call the observer.

use indicatif::{ProgressBar, ProgressStyle};
use iolab_mdtest::{Observer, Phase, PhaseResult, Progress};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub use crate::output::ci;

/// Whether this process draws progress: the leader, on a terminal, not
/// under CI.
pub fn shown(leader: bool) -> bool {
    leader && std::io::stderr().is_terminal() && !ci() && !crate::live::full_screen()
}

/// What a bar counts.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Items (files, directories) of a phase.
    Items,
    /// Bytes of a run.
    Bytes,
}

/// A bar in iolab's one style: label, bar, done/total, rate, time left.
pub fn bar(total: u64, unit: Unit) -> ProgressBar {
    let template = match unit {
        Unit::Items => "{msg:<20} [{bar:30}] {pos}/{len} ({per_sec}, {eta})",
        Unit::Bytes => "{msg:<20} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    };
    let b = ProgressBar::new(total.max(1));
    b.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b
}

/// A countdown in the same style: `what`, and the whole seconds gone of
/// a wait of `total` (its position), with the time left. For waits on
/// a clock (`gettime -waitfortime`, `xdd -starttime`), drawn only where
/// [`shown`] says.
pub fn countdown(what: &str, total: Duration) -> ProgressBar {
    let b = ProgressBar::new(total.as_secs().max(1));
    b.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} s, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b.set_message(what.to_string());
    b
}

/// Observer and progress-bar owner for one test.
pub struct Reporter<'a> {
    leader: bool,
    verbosity: u64,
    local_tasks: u64,
    progress: &'a Progress,
    current: Mutex<Option<(Phase, u64)>>,
}

impl<'a> Reporter<'a> {
    /// A reporter; only the leader process (rank 0) shows anything.
    pub fn new(leader: bool, verbosity: u64, local_tasks: usize, progress: &'a Progress) -> Self {
        Reporter {
            leader,
            verbosity,
            local_tasks: local_tasks as u64,
            progress,
            current: Mutex::new(None),
        }
    }

    /// Runs `f` while a drawing thread shows progress on a terminal.
    pub fn run_while<R>(&self, f: impl FnOnce() -> R) -> R {
        if !shown(self.leader) {
            return f();
        }
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| self.draw(&done));
            let r = f();
            done.store(true, Ordering::Relaxed);
            r
        })
    }

    fn draw(&self, done: &AtomicBool) {
        let bar = bar(0, Unit::Items);
        let mut shown = false;
        let mut since = std::time::Instant::now();
        let mut last = None;
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            let cur = *self.current.lock().unwrap_or_else(|e| e.into_inner());
            if cur.map(|c| c.0) != last {
                last = cur.map(|c| c.0);
                since = std::time::Instant::now();
                bar.set_position(0);
            }
            // Only phases that last more than a second get a bar.
            if let (Some((phase, total)), true) = (cur, since.elapsed() > Duration::from_secs(1)) {
                shown = true;
                bar.set_message(phase.label());
                bar.set_length(total);
                bar.set_position(self.progress.total());
            }
        }
        if shown {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Reporter<'_> {
    fn phase_started(&self, _iteration: u64, phase: Phase, items_per_task: u64) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((phase, items_per_task * self.local_tasks));
    }

    fn phase_done(&self, iteration: u64, r: &PhaseResult) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if self.leader && self.verbosity >= 1 {
            let _ = out!(
                "{}",
                iolab_report::mdtest::text::phase_line(
                    iteration,
                    r.phase.label(),
                    r.elapsed_s,
                    r.rate
                )
            );
        }
    }
}

/// Progress of a run made of points (an lst sweep, `iolab sweep`, a
/// survey): its planned length said before it starts, then a bar with
/// the time left on a terminal, or one line per finished point on
/// standard error otherwise (logs, CI), each with the time left.
pub struct Points {
    label: String,
    total: u64,
    done: u64,
    started: std::time::Instant,
    per_point_s: Option<f64>,
    bar: Option<ProgressBar>,
}

impl Points {
    /// Says the plan (`label: N points ..., about T`) and starts counting.
    /// `per_point_s` is each point's planned length when it is known.
    pub fn start(label: &str, total: u64, what: &str, per_point_s: Option<f64>) -> Points {
        let length = match per_point_s {
            Some(s) => format!("about {} (plus start-up)", human_s(s * total as f64)),
            None => "length not known in advance".to_string(),
        };
        iolab_core::say!("{label}: {total} {what}; {length}");
        let bar = shown(true).then(|| {
            let b = bar(total, Unit::Items);
            b.set_message(label.to_string());
            b
        });
        Points {
            label: label.to_string(),
            total,
            done: 0,
            started: std::time::Instant::now(),
            per_point_s,
            bar,
        }
    }

    /// One point finished (`what` names it).
    pub fn point_done(&mut self, what: &str) {
        self.done += 1;
        if let Some(b) = &self.bar {
            b.set_position(self.done);
            return;
        }
        let left = self.total.saturating_sub(self.done) as f64;
        let each = self
            .per_point_s
            .unwrap_or(self.started.elapsed().as_secs_f64() / self.done as f64);
        iolab_core::say!(
            "{}: {}/{} done ({what}); about {} left",
            self.label,
            self.done,
            self.total,
            human_s(each * left)
        );
    }
}

impl Drop for Points {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// Seconds as people read them: `45 s`, `10.5 min`, `2.0 h`.
pub fn human_s(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
