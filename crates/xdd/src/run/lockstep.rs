//! `-lockstep` as XDD runs it (base/lockstep.c): the master and its slave
//! take turns. The master does its `<when>` amount, waits for those
//! operations to complete, hands the turn to the slave and waits for its
//! next turn; the slave does its `<what>` amount and hands the turn back.
//! So the slave trails its master by one turn all the time (guide 5.4).
//! When one side's pass ends, the other gets one more turn; then it stops
//! too (`stop`) or runs on alone (`complete`). Every wait is bounded and
//! sees the pass's end and the run's stop.

use crate::parse::values::{LockstepSpec, Measure};
use crate::plan::TargetPlan;
use iolab_core::clock::mono_ns;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The master's side of a pair.
pub(crate) const MASTER: usize = 0;
/// The slave's side of a pair.
pub(crate) const SLAVE: usize = 1;

/// How long a waiter sleeps before it looks at the pass's end again: a
/// time limit or a stop flag is seen within this even if nobody wakes it.
const WAIT_SLICE: Duration = Duration::from_millis(2);

/// The length of one turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Quota {
    /// This many operations.
    Ops(u64),
    /// This many nanoseconds of the side's time.
    Ns(u64),
}

impl Quota {
    /// One turn of `plan`'s target measured by `m`. Byte amounts are whole
    /// requests (at least one): XDD counted the bytes as operations.
    fn of(m: Measure, plan: &TargetPlan) -> Quota {
        let xfer = plan.xfer_bytes.max(1);
        let ops = |bytes: u64| Quota::Ops(bytes.div_ceil(xfer).max(1));
        match m {
            Measure::Op(k) => Quota::Ops(k.max(1)),
            Measure::Kbytes(k) => ops(k.saturating_mul(1 << 10)),
            Measure::Mbytes(k) => ops(k.saturating_mul(1 << 20)),
            Measure::Percent(p) => Quota::Ops(((plan.ops as f64 * p / 100.0).ceil() as u64).max(1)),
            Measure::Time(s) => Quota::Ns(((s * 1e9) as u64).max(1)),
        }
    }
}

/// How one target plays its pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Side {
    /// [`MASTER`] or [`SLAVE`].
    pub side: usize,
    /// Its turn.
    pub quota: Quota,
    /// Runs on alone once the other's pass has ended (`complete`).
    pub complete: bool,
    /// The side that has the first turn of a pass (the slave with `run`).
    pub first: usize,
}

/// The pair `plan`'s target is in: the slave's target number (whose
/// progress holds the pair's [`Turns`]) and this target's side.
pub(crate) fn pair(plan: &TargetPlan) -> Option<(usize, Side)> {
    let side = |spec: &LockstepSpec, side, m| Side {
        side,
        quota: Quota::of(m, plan),
        complete: spec.complete,
        first: if spec.startup_run { SLAVE } else { MASTER },
    };
    match (&plan.slave_of, &plan.master_of) {
        (Some(s), _) => Some((s.slave, side(s, SLAVE, s.what))),
        (None, Some(s)) => Some((s.slave, side(s, MASTER, s.when))),
        (None, None) => None,
    }
}

#[derive(Debug, Default)]
struct State {
    /// The pass each side is in.
    pass: [u64; 2],
    /// Whether that side's pass has ended.
    done: [bool; 2],
    /// The pass the turns below belong to (both sides have begun it).
    turn_pass: u64,
    /// Whose turn it is.
    holder: usize,
    /// Operations admitted in this turn.
    issued: u64,
    /// Of those, completed.
    completed: u64,
    /// When this turn began.
    turn_start_ns: u64,
}

impl State {
    fn other_done(&self, side: usize, pass: u64) -> bool {
        let o = 1 - side;
        self.pass[o] > pass || (self.pass[o] == pass && self.done[o])
    }

    fn hand_to(&mut self, side: usize) {
        self.holder = side;
        self.issued = 0;
        self.completed = 0;
        self.turn_start_ns = mono_ns();
    }

    fn used_up(&self, q: Quota) -> bool {
        match q {
            Quota::Ops(k) => self.issued >= k,
            Quota::Ns(ns) => mono_ns().saturating_sub(self.turn_start_ns) >= ns,
        }
    }
}

/// The turns of one master and slave, kept in the slave's progress.
#[derive(Debug, Default)]
pub struct Turns {
    state: Mutex<State>,
    moved: Condvar,
}

impl Turns {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A side that panicked holding the lock fails the run; the other
        // still sees the stop through its bounded waits.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `me` begins pass `pass`; the turns start once both sides have.
    pub(crate) fn begin(&self, me: &Side, pass: u64) {
        let mut st = self.lock();
        st.pass[me.side] = pass;
        st.done[me.side] = false;
        if st.pass[1 - me.side] >= pass && st.turn_pass < pass {
            st.turn_pass = pass;
            st.hand_to(me.first);
        }
        self.moved.notify_all();
    }

    /// `me`'s pass `pass` has ended: the turn goes to the other side.
    pub(crate) fn end(&self, me: &Side, pass: u64) {
        let mut st = self.lock();
        if st.pass[me.side] == pass {
            st.done[me.side] = true;
        }
        if st.turn_pass == pass && st.holder == me.side {
            st.hand_to(1 - me.side);
        }
        self.moved.notify_all();
    }

    /// Waits until `me` may issue one more operation of pass `pass`;
    /// false when its pass ends instead (`ending`, or `stop` after the
    /// other side's pass ended and this side had its last turn).
    pub(crate) fn admit(&self, me: &Side, pass: u64, ending: impl Fn() -> bool) -> bool {
        let mut st = self.lock();
        loop {
            if st.turn_pass == pass {
                let other_done = st.other_done(me.side, pass);
                if other_done && me.complete {
                    return true;
                }
                if other_done && st.holder != me.side {
                    st.hand_to(me.side);
                }
                if st.holder == me.side {
                    if !st.used_up(me.quota) {
                        st.issued += 1;
                        return true;
                    }
                    if st.completed >= st.issued {
                        if other_done {
                            return false;
                        }
                        st.hand_to(1 - me.side);
                        self.moved.notify_all();
                        continue;
                    }
                }
            }
            if ending() {
                return false;
            }
            st = self
                .moved
                .wait_timeout(st, WAIT_SLICE)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// An operation `me` was admitted to is over (done, failed or given
    /// up): the turn can pass once all of its operations are.
    pub(crate) fn finished(&self, me: &Side) {
        let mut st = self.lock();
        if st.holder == me.side && st.completed < st.issued {
            st.completed += 1;
            if st.completed == st.issued {
                self.moved.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(side: usize, ops: u64, complete: bool) -> Side {
        Side {
            side,
            quota: Quota::Ops(ops),
            complete,
            first: MASTER,
        }
    }

    /// The master's turn, then the slave's, then the master's: neither
    /// may go on while the other has its turn.
    #[test]
    fn sides_take_turns() {
        let t = Turns::default();
        let (m, s) = (side(MASTER, 1, false), side(SLAVE, 2, false));
        t.begin(&m, 1);
        t.begin(&s, 1);
        let never = || true;
        assert!(!t.admit(&s, 1, never), "the slave waits for the master");
        assert!(t.admit(&m, 1, never));
        assert!(!t.admit(&m, 1, never), "one op a turn");
        t.finished(&m);
        assert!(!t.admit(&m, 1, never), "its turn is handed over");
        assert!(t.admit(&s, 1, never) && t.admit(&s, 1, never));
        assert!(!t.admit(&s, 1, never));
        t.finished(&s);
        t.finished(&s);
        assert!(!t.admit(&s, 1, never));
        assert!(t.admit(&m, 1, never));
    }

    /// When the master's pass ends, the slave has one more turn, then
    /// stops (`stop`) or runs alone (`complete`).
    #[test]
    fn the_other_side_ending_gives_one_last_turn() {
        for complete in [false, true] {
            let t = Turns::default();
            let (m, s) = (side(MASTER, 1, complete), side(SLAVE, 2, complete));
            t.begin(&m, 1);
            t.begin(&s, 1);
            assert!(t.admit(&m, 1, || true));
            t.finished(&m);
            t.end(&m, 1);
            let ran = (0..10).take_while(|_| t.admit(&s, 1, || true)).count();
            t.finished(&s);
            assert_eq!(ran, if complete { 10 } else { 2 }, "complete: {complete}");
        }
    }

    /// A side waiting for its turn sees its pass end.
    #[test]
    fn a_wait_ends_with_the_pass() {
        let t = Turns::default();
        let s = side(SLAVE, 1, false);
        t.begin(&side(MASTER, 1, false), 1);
        t.begin(&s, 1);
        let start = std::time::Instant::now();
        let end = start + Duration::from_millis(20);
        assert!(!t.admit(&s, 1, || std::time::Instant::now() >= end));
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
