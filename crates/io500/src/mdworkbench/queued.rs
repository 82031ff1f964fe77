//! md-workbench through the task's metadata queue (io500 `--engine
//! uring --qd N`): the same objects, sets, counts and order per object
//! as the sync loops, with up to N objects in flight.
//!
//! Each object is a unit of md-workbench's loop with its steps: in the
//! benchmark, stat, read (checked) and delete of the oldest object of a
//! set, then the create of the new object in the set above; in the
//! precreate one create (or one mkdir of a set); in the cleanup one
//! delete (or one rmdir of a set, once every delete completed). A unit
//! holds one slot of the queue and sends its next step only when the one
//! before it completed, so an object's steps run in md-workbench's order
//! while the other slots' objects go on. Units start in the sync loops'
//! order (object after object, set after set), so the objects in flight
//! lie in different sets: different directories, whose locks the kernel
//! takes one removal or create at a time.
//!
//! `waitingTime` is kept per object: after a step that took t, the
//! unit's next step waits `waitingTime x t` (t from submission to
//! completion) while the other units go on.
//!
//! Deletes name the set's directory by a descriptor opened from
//! md-workbench's directory without following links (`SetDirs`), and
//! one name in it, as the sync loops' deletes do.

use super::{leaf, peer, stamp, wait, Task, OBJECT_BYTES, SETS};
use crate::latency::Op;
use iolab_backend::{c_path, MetaDone, MetaOp, MetaQueue};
use std::io;
use std::time::Duration;

/// One step of a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Mkdir,
    Stat,
    Read,
    Delete,
    Create,
    Rmdir,
}

impl Step {
    /// The operation's name, as the sync loops name a failure.
    fn name(self) -> &'static str {
        match self {
            Step::Mkdir => "mkdir",
            Step::Stat => "stat",
            Step::Read => "read",
            Step::Delete => "delete",
            Step::Create => "create",
            Step::Rmdir => "rmdir",
        }
    }

    /// The latency histogram of an object operation.
    fn op(self) -> Option<Op> {
        match self {
            Step::Stat => Some(Op::Stat),
            Step::Read => Some(Op::Read),
            Step::Delete => Some(Op::Delete),
            Step::Create => Some(Op::Create),
            Step::Mkdir | Step::Rmdir => None,
        }
    }
}

/// A benchmark unit's steps, in md-workbench's order.
const BENCH: &[Step] = &[Step::Stat, Step::Read, Step::Delete, Step::Create];

/// One object of md-workbench's loop (or one set) and its steps.
#[derive(Debug, Clone, Copy)]
struct Unit {
    /// (owner, set, index) of the object stat'ed, read and deleted (of
    /// the set made or removed: its index unused).
    old: (u64, u64, u64),
    /// (owner, set, index) of the object created.
    new: (u64, u64, u64),
    steps: &'static [Step],
    /// The step under way or next.
    at: usize,
}

impl Unit {
    fn one(step: &'static [Step], obj: (u64, u64, u64)) -> Unit {
        Unit {
            old: obj,
            new: obj,
            steps: step,
            at: 0,
        }
    }

    fn step(&self) -> Step {
        self.steps[self.at]
    }

    /// The object (or set) the current step works on.
    fn object(&self) -> (u64, u64, u64) {
        match self.step() {
            Step::Create => self.new,
            _ => self.old,
        }
    }
}

/// The slots of the units in flight, and which wait for what.
struct Slots {
    units: Vec<Option<Unit>>,
    free: Vec<u32>,
    /// Units whose next step can go now.
    ready: Vec<u32>,
    /// Units whose next step waits (`waitingTime`): (not before, slot).
    waiting: Vec<(u64, u32)>,
}

impl Slots {
    fn new(depth: usize) -> Slots {
        Slots {
            units: vec![None; depth],
            free: (0..depth as u32).rev().collect(),
            ready: Vec::with_capacity(depth),
            waiting: Vec::with_capacity(depth),
        }
    }

    /// Moves the waiting units whose time came to the ready ones; the
    /// earliest time still to come.
    fn due(&mut self, now: u64) -> Option<u64> {
        let mut i = 0;
        while i < self.waiting.len() {
            if self.waiting[i].0 <= now {
                let (_, s) = self.waiting.swap_remove(i);
                self.ready.push(s);
            } else {
                i += 1;
            }
        }
        self.waiting.iter().map(|w| w.0).min()
    }
}

impl Task<'_> {
    /// mdworkbench-create's sets, then its objects, through the queue.
    pub(super) fn precreate_queued(&mut self, me: u64) {
        let sets = (0..SETS).map(|d| Unit::one(&[Step::Mkdir], (me, d, 0)));
        self.drive(&mut sets.into_iter());
        let per_set = self.spec.precreate_per_set;
        let objects = (0..per_set)
            .flat_map(|f| (0..SETS).map(move |d| Unit::one(&[Step::Create], (me, d, f))));
        self.drive(&mut objects.into_iter());
    }

    /// One mdworkbench-bench iteration from index `start`: for each
    /// object of each set, stat, read and delete the old one (of the set
    /// of the task below) and create the new one (in the set of the task
    /// above), as the sync loop.
    pub(super) fn bench_queued(&mut self, me: u64, tasks: u64, start: u64) {
        let (per_set, files) = (self.spec.precreate_per_set, self.spec.files_per_proc);
        let units = (0..files).flat_map(|f| (0..SETS).map(move |d| (f, d)));
        let mut units = units.map(|(f, d)| Unit {
            old: (peer(me, d, tasks, false), d, start + f),
            new: (peer(me, d, tasks, true), d, per_set + start + f),
            steps: BENCH,
            at: 0,
        });
        self.drive(&mut units);
    }

    /// mdworkbench-delete's objects (set after set for each index, so
    /// that the deletes in flight lie in different sets), then its sets.
    pub(super) fn cleanup_queued(&mut self, me: u64, first: u64) {
        let per_set = self.spec.precreate_per_set;
        let objects = (0..per_set)
            .flat_map(|f| (0..SETS).map(move |d| Unit::one(&[Step::Delete], (me, d, first + f))));
        self.drive(&mut objects.into_iter());
        let sets = (0..SETS).map(|d| Unit::one(&[Step::Rmdir], (me, d, 0)));
        self.drive(&mut sets.into_iter());
    }

    /// Runs `units` through the queue, as many at once as it holds, each
    /// unit's steps one after another; stops sending at the first failure
    /// or stop request and waits for what is in flight.
    fn drive(&mut self, units: &mut dyn Iterator<Item = Unit>) {
        let Some(mut q) = self.queue.take() else {
            return;
        };
        let mut slots = Slots::new(q.depth());
        let mut name = Vec::with_capacity(64);
        let mut more = true;
        loop {
            let going = self.going();
            let next_due = slots.due(iolab_core::clock::mono_ns());
            while going && q.has_room() {
                let s = match slots.ready.pop() {
                    Some(s) => s,
                    None if more => {
                        let Some(s) = slots.free.pop() else { break };
                        match units.next() {
                            Some(u) => slots.units[s as usize] = Some(u),
                            None => {
                                slots.free.push(s);
                                more = false;
                                break;
                            }
                        }
                        s
                    }
                    None => break,
                };
                if !self.push_step(&mut *q, &mut slots, s, &mut name) {
                    break;
                }
            }
            if q.in_flight() == 0 {
                match next_due {
                    Some(t) if going => {
                        let left = t.saturating_sub(iolab_core::clock::mono_ns());
                        wait(Duration::from_nanos(left));
                        continue;
                    }
                    _ if going && (more || !slots.ready.is_empty()) => continue,
                    _ => break,
                }
            }
            if let Err(e) = self.reap(&mut *q, &mut slots, next_due.filter(|_| going)) {
                let path = c_path(&self.spec.dir).unwrap_or_default();
                self.fail("io_uring_enter", &path, &e);
                // What is in flight is waited for when the queue drops.
                break;
            }
        }
        self.queue = Some(q);
    }

    /// Sends slot `s`'s next step; false (the failure recorded) when it
    /// could not be sent.
    fn push_step(
        &mut self,
        q: &mut dyn MetaQueue,
        slots: &mut Slots,
        s: u32,
        name: &mut Vec<u8>,
    ) -> bool {
        let Some(u) = slots.units[s as usize] else {
            return true;
        };
        let (owner, set, index) = u.object();
        let (be, dir) = (self.be, &self.spec.dir);
        let r = match u.step() {
            Step::Mkdir => {
                let path = self.names.set(owner, set);
                q.push(
                    u64::from(s),
                    &MetaOp::Mkdir {
                        path,
                        dir: None,
                        mode: 0o755,
                    },
                )
            }
            Step::Stat => {
                let path = self.names.object(owner, set, index);
                q.push(u64::from(s), &MetaOp::Stat { path, dir: None })
            }
            Step::Read => {
                let path = self.names.object(owner, set, index);
                q.push(
                    u64::from(s),
                    &MetaOp::Read {
                        path,
                        dir: None,
                        len: OBJECT_BYTES,
                    },
                )
            }
            Step::Create => {
                stamp(&mut self.data, owner, set, index);
                let path = self.names.object(owner, set, index);
                let op = MetaOp::Create {
                    path,
                    dir: None,
                    data: &self.data,
                    exclusive: true,
                    fsync: false,
                };
                q.push(u64::from(s), &op)
            }
            // In the set's directory, no link below the datadir followed.
            Step::Delete => self.sets.set_dir(be, dir, owner, set).and_then(|d| {
                let name = leaf(name, owner, set, Some(index));
                q.push(u64::from(s), &MetaOp::Unlink { dir: d, name })
            }),
            Step::Rmdir => self.sets.top(be, dir).and_then(|top| {
                let name = leaf(name, owner, set, None);
                q.push(u64::from(s), &MetaOp::Rmdir { dir: top, name })
            }),
        };
        match r {
            Ok(()) => true,
            Err(e) => {
                slots.units[s as usize] = None;
                slots.free.push(s);
                self.fail_at(u, &e);
                false
            }
        }
    }

    /// Reaps completions (waiting no later than `due` when a unit waits
    /// for its time): checks and counts each step and moves its unit on.
    fn reap(
        &mut self,
        q: &mut dyn MetaQueue,
        slots: &mut Slots,
        due: Option<u64>,
    ) -> io::Result<()> {
        let factor = self.spec.waiting_factor;
        let mut each = |d: &MetaDone<'_>| {
            let s = d.tag as u32;
            let Some(mut u) = slots.units[s as usize] else {
                return;
            };
            let ns = d.end_ns.saturating_sub(d.start_ns);
            self.tally.max_op_ns = self.tally.max_op_ns.max(ns);
            if let Some(k) = u.step().op() {
                self.lat.record(k, ns);
            }
            let ok = match d.result {
                Ok(n) => self.count(u, n, d.data),
                Err(e) => {
                    self.fail_at(u, &e.to_io());
                    false
                }
            };
            if ok {
                let moved = matches!(u.step(), Step::Create | Step::Read);
                self.live
                    .op(if moved { OBJECT_BYTES as u64 } else { 0 }, ns);
            }
            u.at += 1;
            if !ok || u.at == u.steps.len() {
                slots.units[s as usize] = None;
                slots.free.push(s);
                return;
            }
            slots.units[s as usize] = Some(u);
            match factor > 0.0 {
                // Bounded by the ini's check (MAX_WAITING_FACTOR).
                true => slots
                    .waiting
                    .push((d.end_ns + (ns as f64 * factor) as u64, s)),
                false => slots.ready.push(s),
            }
        };
        match due {
            Some(t) => q.complete_by(t, &mut each),
            None => q.complete(&mut each),
        }
        .map(|_| ())
    }

    /// Counts a step that completed (`n`: its bytes, a stat's size),
    /// checking a stat's size and a read's bytes; false on a mismatch.
    fn count(&mut self, u: Unit, n: u64, data: &[u8]) -> bool {
        let t = &mut self.tally;
        match u.step() {
            Step::Mkdir => t.dsets_created += 1,
            Step::Rmdir => t.dsets_deleted += 1,
            Step::Delete => t.deleted += 1,
            Step::Create => {
                t.created += 1;
                t.bytes_written += OBJECT_BYTES as u64;
            }
            Step::Stat if n == OBJECT_BYTES as u64 => t.stated += 1,
            Step::Stat => {
                let e = io::Error::other(format!("{n} bytes, written with {OBJECT_BYTES}"));
                self.fail_at(u, &e);
                return false;
            }
            Step::Read => {
                let (owner, set, index) = u.object();
                stamp(&mut self.data, owner, set, index);
                if self.data != data {
                    let e = io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the bytes differ from those written",
                    );
                    let p = self.names.object(owner, set, index).to_owned();
                    self.fail("verify", &p, &e);
                    return false;
                }
                t.read += 1;
                t.bytes_read += OBJECT_BYTES as u64;
            }
        }
        true
    }

    /// Records the failure of unit `u`'s current step, naming the object
    /// (or set) as the sync loops do.
    fn fail_at(&mut self, u: Unit, e: &io::Error) {
        let (owner, set, index) = u.object();
        let path = match u.step() {
            Step::Mkdir | Step::Rmdir => self.names.set(owner, set).to_owned(),
            _ => self.names.object(owner, set, index).to_owned(),
        };
        self.fail(u.step().name(), &path, e);
    }
}
