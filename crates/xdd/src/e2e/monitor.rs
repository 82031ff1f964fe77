//! Joining the sessions to the prepared targets, and running the restart
//! monitor of each destination that keeps a restart file while its
//! QThreads write ([`crate::record::restart::monitor`]: flush, then record).

use super::opts::Role;
use super::session::Session;
use super::Link;
use crate::error::RunError;
use crate::record::restart::{Course, Record, Watermark};
use crate::run::runstate::RunState;
use crate::run::target::Target;
use iolab_backend::{Backend, Handle, OpenOptions};
use iolab_core::Failure;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// One destination's restart monitor, ready to run.
pub struct Monitor<'a> {
    /// Target number.
    pub target: usize,
    /// Its QThreads' low marks.
    pub mark: Arc<Watermark>,
    /// The restart file.
    pub file: PathBuf,
    /// The record, its pass, offset and time filled in at each store.
    pub record: Record,
    /// What the watermark's positions count.
    pub course: Course,
    /// Seconds between records.
    pub every: Duration,
    /// The backend, and a handle of the monitor's own on the destination
    /// file: fdatasync flushes the file, whichever descriptor wrote it.
    pub flush: Option<(&'a dyn Backend, Handle)>,
}

impl Monitor<'_> {
    /// Closes the monitor's handle (after the run).
    pub fn close(self) {
        if let Some((be, h)) = self.flush {
            let _ = be.close(h);
        }
    }
}

/// Gives every QThread its connection; returns the monitors to run.
/// Fails when a destination's file cannot be opened again for flushing.
pub fn attach<'a>(
    targets: &mut [Target<'a>],
    sessions: Vec<Option<Session>>,
) -> Result<Vec<Monitor<'a>>, RunError> {
    let mut out = Vec::new();
    for (tg, s) in targets.iter_mut().zip(sessions) {
        let Some(s) = s else { continue };
        tg.notes.extend(s.notes.iter().cloned());
        let qd = tg.qthreads.len();
        let keep = s.role == Role::Destination && s.restart_file.is_some();
        let course = Course {
            start: super::terms::start_bytes(tg.plan),
            end: s.end,
            passes: s.passes,
        };
        let at = course.position(s.resume_pass, s.resume);
        let mark = keep.then(|| Arc::new(Watermark::new(qd, at)));
        let rec = s.record(&tg.plan.opts.path);
        let first_op = s.first_op;
        tg.first_pass = s.resume_pass;
        for (q, conn) in tg.qthreads.iter_mut().zip(s.conns) {
            q.link = Some(Link {
                conn,
                first_op,
                first_pass: s.resume_pass,
                mark: mark.clone(),
                course,
            });
        }
        if let (Some(mark), Some(file)) = (mark, s.restart_file) {
            let flush = match &tg.handle {
                Some(_) => Some((tg.be, flush_handle(tg)?)),
                None => None,
            };
            out.push(Monitor {
                target: tg.plan.index,
                mark,
                file,
                record: rec,
                course,
                every: Duration::from_secs_f64(tg.plan.opts.restart.frequency_s()),
                flush,
            });
        }
    }
    Ok(out)
}

/// A read handle on the destination file, for the monitor's flushes.
fn flush_handle(tg: &Target) -> Result<Handle, RunError> {
    let path = std::ffi::CString::new(tg.path.as_bytes()).unwrap_or_default();
    tg.be
        .open(&path, OpenOptions::read())
        .map_err(|err| RunError::Target {
            target: tg.plan.index,
            path: tg.path.clone(),
            what: "open for the restart monitor's flushes",
            err,
        })
}

/// Runs `body` (the targets) with every monitor beside it; a monitor
/// that cannot flush or record fails the run (a restart file that is not
/// kept up is a broken promise).
pub fn run_with<R>(monitors: &[Monitor], state: &RunState, body: impl FnOnce() -> R) -> R {
    if monitors.is_empty() {
        return body();
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let hs: Vec<_> = monitors
            .iter()
            .map(|m| s.spawn(|| one(m, &stop, state)))
            .collect();
        let r = body();
        stop.store(true, std::sync::atomic::Ordering::Release);
        for h in hs {
            let _ = h.join();
        }
        r
    })
}

fn one(m: &Monitor, stop: &AtomicBool, state: &RunState) {
    let mut flush = || match &m.flush {
        Some((be, h)) => be.fdatasync(h),
        None => Ok(()),
    };
    let mut store = |position: u64| {
        let (pass, offset) = m.course.place(position);
        let r = Record {
            pass,
            offset,
            updated_unix_ns: iolab_core::clock::wall_ns(),
            ..m.record.clone()
        };
        r.store(&m.file)
    };
    if let Err(e) = crate::record::restart::monitor(&m.mark, m.every, stop, &mut flush, &mut store)
    {
        state.fail(Failure::io(
            "restart",
            Some(m.file.display().to_string()),
            &e,
        ));
    }
}

/// True when a target's files are kept even after a failed run: a
/// destination with a restart file, whose partial copy is the point.
pub fn keeps_partial(tg: &Target) -> bool {
    let o = &tg.plan.opts;
    o.e2e.role() == Some(Role::Destination) && o.restart.monitored()
}
