//! What a QThread carries from pass to pass ([`QState`]) and what it
//! reads during one ([`PassCtx`]). Every I/O path runs on these, so they
//! sit below the paths: the run core and the end-to-end copy both name
//! them, and neither has to name the other.

use crate::parse::config::GlobalOpts;
use crate::plan::datapat::Verifier;
use crate::plan::seek::PassSeeks;
use crate::plan::TargetPlan;
use crate::record::restart::{Course, Watermark};
use crate::run::buffer::IoBuffer;
use crate::run::progress::Progress;
use crate::run::runstate::RunState;
use iolab_backend::{Backend, Handle};
use iolab_core::clock::mono_ns;
use iolab_net::Conn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What one QThread owns across passes.
pub struct QState {
    /// QThread number within its target.
    pub q: usize,
    /// Its I/O buffer (one full request).
    pub buf: IoBuffer,
    /// Read checker, when -verify is on.
    pub verifier: Option<Verifier>,
    /// Processor to run on.
    pub cpu: Option<usize>,
    /// Error messages kept (up to -maxerrorstoprint).
    pub messages: Vec<String>,
    /// Errors seen (printed or not).
    pub error_count: u64,
    /// Things refused but not errors (a processor pin), for the notes.
    pub notes: Vec<String>,
    /// Time stamp table, when -timestamps is on.
    pub ts: Option<crate::record::timestamp::TsTable>,
    /// Its connection, on an end-to-end target (-endtoend).
    pub link: Option<Link>,
    /// Its live recorders (`--live`).
    pub live: LiveOps,
}

/// A QThread's live recorders, one per op type: the rows' phases are
/// `read` and `write`, as the results count `read_ops` and `write_ops`.
#[derive(Debug)]
pub struct LiveOps {
    read: iolab_core::live::Recorder,
    write: iolab_core::live::Recorder,
}

impl LiveOps {
    /// Recorders that record nothing.
    pub fn off() -> Self {
        LiveOps {
            read: iolab_core::live::Recorder::off(),
            write: iolab_core::live::Recorder::off(),
        }
    }

    /// The recorders of QThread `q` of target `target` on `board`, for
    /// the op types it does (`read_e4`: reads per 10,000 operations).
    pub fn on(
        board: Option<&iolab_core::live::Board>,
        target: usize,
        q: usize,
        read_e4: u64,
    ) -> Self {
        let Some(b) = board else {
            return Self::off();
        };
        let worker = (target << 16) | q;
        let rec = |yes: bool, phase| match yes {
            true => b.recorder(phase, worker),
            false => iolab_core::live::Recorder::off(),
        };
        LiveOps {
            read: rec(read_e4 > 0, "read"),
            write: rec(read_e4 < 10_000, "write"),
        }
    }

    /// One operation that moved `bytes` in `latency_ns`; counted as the
    /// results count it (an operation that moved nothing is not).
    #[inline]
    pub fn op(&self, read: bool, bytes: u64, latency_ns: u64) {
        if bytes == 0 {
            return;
        }
        let r = if read { &self.read } else { &self.write };
        r.op(bytes, latency_ns);
    }

    /// One failed operation (`op` as the error path names it).
    pub fn error(&self, op: &str) {
        let r = if op == "read" {
            &self.read
        } else {
            &self.write
        };
        r.error();
    }
}

/// Counters every QThread of a target shares during one pass.
#[derive(Default)]
pub struct PassShared {
    /// Next operation number to hand out.
    pub next: AtomicU64,
    /// Operations issued so far, in order (loose ordering).
    pub issued: AtomicU64,
    /// Operations completed so far, in order (serial ordering).
    pub completed: AtomicU64,
    /// Set when the pass must end (time limit, -maxerrors, stop trigger).
    pub stop: AtomicBool,
    /// Errors in this pass over all QThreads (-maxerrors is per target).
    pub errors: AtomicU64,
}

/// Everything a QThread reads during one pass.
pub struct PassCtx<'a> {
    /// The target's plan.
    pub plan: &'a TargetPlan,
    /// Run-wide options.
    pub global: &'a GlobalOpts,
    /// Backend that does the I/O.
    pub backend: &'a dyn Backend,
    /// Open target; None for the `null` target.
    pub handle: Option<&'a Handle>,
    /// Offsets of this pass.
    pub seeks: PassSeeks<'a>,
    /// Shared pass counters.
    pub shared: &'a PassShared,
    /// Monotonic pass start, ns.
    pub start_ns: u64,
    /// Monotonic time the pass must end (u64::MAX = none).
    pub deadline_ns: u64,
    /// Everyone's progress.
    pub progress: &'a Progress,
    /// Run-wide stop and failure (-stoponerror, a dead worker, ENOSPC).
    pub run: &'a RunState,
    /// The path of the target file this pass (for error outcomes).
    pub path: &'a str,
    /// Pass number, from 1.
    pub pass: u32,
}

impl PassCtx<'_> {
    /// True when the pass must end now.
    #[inline]
    pub fn ending(&self) -> bool {
        self.shared.stop.load(Relaxed)
            || self.run.stopping()
            || (self.deadline_ns != u64::MAX && mono_ns() >= self.deadline_ns)
    }

    /// Ends the pass for every QThread of the target.
    pub fn stop_pass(&self) {
        self.shared.stop.store(true, Relaxed);
    }
}

/// One QThread's connection and where its share of the copy starts.
#[derive(Debug)]
pub struct Link {
    /// The connection to the QThread's peer.
    pub conn: Conn,
    /// Requests of pass `first_pass` before the resume offset, skipped.
    pub first_op: u64,
    /// The pass the copy resumes in (earlier passes do not run).
    pub first_pass: u64,
    /// The destination's watermark, when a restart file is kept.
    pub mark: Option<Arc<Watermark>>,
    /// The copy's bytes and passes, which the watermark's positions
    /// count.
    pub course: Course,
}

impl Link {
    /// Requests of pass `pass` this run skips (only the pass it resumes
    /// in starts past its beginning).
    #[inline]
    pub fn first_op_in(&self, pass: u32) -> u64 {
        match u64::from(pass) == self.first_pass {
            true => self.first_op,
            false => 0,
        }
    }

    /// QThread `q`'s first unwritten byte of pass `pass` is `offset`
    /// (u64::MAX: its share of the pass is written).
    #[inline]
    pub fn mark_low(&self, q: usize, pass: u32, offset: u64) {
        if let Some(m) = &self.mark {
            let pass = u64::from(pass);
            let at = match offset {
                u64::MAX => self.course.position(pass + 1, self.course.start),
                o => self.course.position(pass, o),
            };
            m.set_low(q, at);
        }
    }
}
