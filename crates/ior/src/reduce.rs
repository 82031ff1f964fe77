//! One task's figures of an access, exchanged at its end, and what
//! every task computes from all of them (IOR's ReduceIterResults and
//! CheckFileSize): the earliest starts and latest ends of each step, the
//! bytes, the stonewall's figures, the files' sizes and IOR's warnings.

use crate::results::{Access, AccessResult, DataError, Stonewall, TaskTimes};
use iolab_comm::Comm;

/// The six timers of an access (wall-clock ns), in IOR's order.
pub const OPEN_START: usize = 0;
/// Open returned.
pub const OPEN_STOP: usize = 1;
/// First transfer starts.
pub const RDWR_START: usize = 2;
/// Last transfer (and -e's fsync) ended.
pub const RDWR_STOP: usize = 3;
/// Close starts.
pub const CLOSE_START: usize = 4;
/// Close returned.
pub const CLOSE_STOP: usize = 5;

const FLAG_HIT: u64 = 1;
const FLAG_FAILED: u64 = 2;
const FLAG_INTERRUPTED: u64 = 4;

/// One task's figures of one access.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskFigures {
    /// The timers.
    pub timers: [u64; 6],
    /// Bytes moved.
    pub bytes: u64,
    /// Transfers made.
    pub transfers: u64,
    /// Transfers a check found wrong.
    pub errors: u64,
    /// File offset of the first wrong byte (u64::MAX: none).
    pub first_error: u64,
    /// Transfers made when the wall stopped it.
    pub wall_transfers: u64,
    /// Bytes moved when the wall stopped it.
    pub wall_bytes: u64,
    /// Its time to the wall (task 0's is the figure).
    pub wall_ns: u64,
    /// Its file's size afterwards (a file per task), or the shared file's.
    pub file_bytes: u64,
    /// Whose data it worked on.
    pub pretend: u64,
    /// Deadline hit, failed, interrupted.
    pub flags: u64,
}

const WORDS: usize = 16;

impl TaskFigures {
    /// Marks the deadline hit, a failure, a stop.
    pub fn set(&mut self, hit: bool, failed: bool, interrupted: bool) {
        self.flags |= (u64::from(hit) * FLAG_HIT)
            | (u64::from(failed) * FLAG_FAILED)
            | (u64::from(interrupted) * FLAG_INTERRUPTED);
    }

    /// True when the task failed.
    pub fn failed(&self) -> bool {
        self.flags & FLAG_FAILED != 0
    }

    /// True when a stop was requested during it.
    pub fn interrupted(&self) -> bool {
        self.flags & FLAG_INTERRUPTED != 0
    }

    fn words(&self) -> [u64; WORDS] {
        let t = self.timers;
        [
            t[0],
            t[1],
            t[2],
            t[3],
            t[4],
            t[5],
            self.bytes,
            self.transfers,
            self.errors,
            self.first_error,
            self.wall_transfers,
            self.wall_bytes,
            self.wall_ns,
            self.file_bytes,
            self.pretend,
            self.flags,
        ]
    }

    fn encode(&self) -> Vec<u8> {
        self.words().iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn decode(b: &[u8]) -> TaskFigures {
        let w = |i: usize| {
            b.get(i * 8..i * 8 + 8)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        };
        TaskFigures {
            timers: [w(0), w(1), w(2), w(3), w(4), w(5)],
            bytes: w(6),
            transfers: w(7),
            errors: w(8),
            first_error: w(9),
            wall_transfers: w(10),
            wall_bytes: w(11),
            wall_ns: w(12),
            file_bytes: w(13),
            pretend: w(14),
            flags: w(15),
        }
    }
}

/// Every task's figures, in task order (collective).
pub fn gather(comm: &dyn Comm, mine: &TaskFigures) -> Vec<TaskFigures> {
    comm.all_gather(&mine.encode())
        .iter()
        .map(|b| TaskFigures::decode(b))
        .collect()
}

/// What the test's parameters say about an access.
pub struct Shape<'a> {
    /// Write or read.
    pub access: Access,
    /// Iteration number.
    pub iteration: u64,
    /// The read checks what it reads.
    pub checked: bool,
    /// Bytes per transfer.
    pub transfer_bytes: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// Block x segments x tasks.
    pub expected_bytes: u64,
    /// A file per task.
    pub file_per_proc: bool,
    /// A wear-out followed the wall.
    pub wearout: bool,
    /// There was a deadline (-D): say so when sizes differ.
    pub deadline: bool,
    /// The backend keeps what is written (not the null backend), so
    /// that file sizes mean something.
    pub sizes_kept: bool,
    /// The file each task worked on, by pretend rank (for messages).
    pub path_of: &'a dyn Fn(u64) -> String,
}

fn span(all: &[TaskFigures], start: usize, stop: usize) -> f64 {
    let s = all.iter().map(|f| f.timers[start]).min().unwrap_or(0);
    let e = all.iter().map(|f| f.timers[stop]).max().unwrap_or(0);
    e.saturating_sub(s) as f64 / 1e9
}

/// The access's result from every task's figures (the same on every task).
pub fn reduce(all: &[TaskFigures], shape: &Shape) -> AccessResult {
    let tasks = all.len().max(1) as u64;
    let bytes: u64 = all.iter().map(|f| f.bytes).sum();
    let total_s = span(all, OPEN_START, CLOSE_STOP);
    let rdwr_s = span(all, RDWR_START, RDWR_STOP);
    let zero = TaskFigures::default();
    let t0 = all.first().unwrap_or(&zero);
    let own_s = t0.timers[RDWR_STOP].saturating_sub(t0.timers[RDWR_START]) as f64 / 1e9;
    let per = |n: f64, s: f64| if s > 0.0 { n / s } else { 0.0 };
    let pairs = all.iter().map(|f| f.transfers).max().unwrap_or(0);
    let mut r = AccessResult {
        access: Some(shape.access),
        iteration: shape.iteration,
        checked: shape.checked,
        bytes,
        file_bytes: file_bytes(all, shape),
        expected_bytes: shape.expected_bytes,
        transfers: all.iter().map(|f| f.transfers).sum(),
        transfer_bytes: shape.transfer_bytes,
        block_bytes: shape.block_bytes,
        bw_bytes_per_s: per(bytes as f64, total_s),
        iops: per((bytes / shape.transfer_bytes.max(1)) as f64, rdwr_s),
        latency_s: per(own_s, t0.transfers as f64),
        open_s: span(all, OPEN_START, OPEN_STOP),
        rdwr_s,
        close_s: span(all, CLOSE_START, CLOSE_STOP),
        total_s,
        pairs_accessed: pairs,
        deadline_hit: all.iter().any(|f| f.flags & FLAG_HIT != 0),
        // A failure or a stop request ended a task, not the wall, and
        // the tasks were not brought level: no stonewall figures (IOR
        // aborts there).
        stonewall: (shape.wearout && !all.iter().any(|f| f.failed() || f.interrupted()))
            .then(|| stonewall(all, tasks)),
        errors: all.iter().map(|f| f.errors).sum(),
        first_error: first_error(all, shape),
        tasks: all
            .iter()
            .map(|f| TaskTimes {
                total_s: f.timers[CLOSE_STOP].saturating_sub(f.timers[OPEN_START]) as f64 / 1e9,
                access_s: f.timers[RDWR_STOP].saturating_sub(f.timers[RDWR_START]) as f64 / 1e9,
            })
            .collect(),
        warnings: Vec::new(),
        interrupted: all.iter().any(|f| f.interrupted()),
        failed: all.iter().any(|f| f.failed()),
    };
    // A stopped or failed access is short of its size, and the stop or
    // the error says why: no warning.
    if r.measured() {
        r.warnings = size_warnings(all, shape, &r);
    }
    r
}

fn stonewall(all: &[TaskFigures], tasks: u64) -> Stonewall {
    let total: u64 = all.iter().map(|f| f.wall_bytes).sum();
    Stonewall {
        time_s: all.first().map_or(0.0, |f| f.wall_ns as f64 / 1e9),
        min_transfers: all.iter().map(|f| f.wall_transfers).min().unwrap_or(0),
        max_transfers: all.iter().map(|f| f.wall_transfers).max().unwrap_or(0),
        min_bytes: all.iter().map(|f| f.wall_bytes).min().unwrap_or(0),
        total_bytes: total,
        avg_bytes: total / tasks,
    }
}

/// The files' sizes: a file per task sums them; a shared file is
/// task 0's look at it (one stat, where IOR has every task stat it:
/// on an object store that is one listing of all its chunks per task).
fn file_bytes(all: &[TaskFigures], shape: &Shape) -> u64 {
    match shape.file_per_proc {
        true => all.iter().map(|f| f.file_bytes).sum(),
        false => all.first().map_or(0, |f| f.file_bytes),
    }
}

fn first_error(all: &[TaskFigures], shape: &Shape) -> Option<DataError> {
    all.iter()
        .enumerate()
        .find(|(_, f)| f.first_error != u64::MAX && f.errors > 0)
        .map(|(task, f)| DataError {
            path: (shape.path_of)(f.pretend),
            offset: f.first_error,
            task: task as u64,
        })
}

/// IOR's warnings when the bytes moved, the expected size and the
/// files' sizes differ.
fn size_warnings(all: &[TaskFigures], shape: &Shape, r: &AccessResult) -> Vec<String> {
    let _ = all;
    let mut out = Vec::new();
    let stat_differs = shape.sizes_kept && r.file_bytes != r.bytes;
    if r.expected_bytes != r.bytes || stat_differs {
        out.push(format!(
            "Expected aggregate file size       = {}",
            r.expected_bytes
        ));
        out.push(format!(
            "Stat() of aggregate file size      = {}",
            match shape.sizes_kept {
                true => r.file_bytes.to_string(),
                false => "(the backend keeps no data)".into(),
            }
        ));
        out.push(format!("Using actual aggregate bytes moved = {}", r.bytes));
        if shape.deadline {
            out.push("Maybe caused by deadlineForStonewalling".into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_travel_and_reduce_as_ior_reduces_them() {
        let f = |start: u64, bytes: u64, file: u64| TaskFigures {
            timers: [
                start,
                start + 1_000,
                start + 1_000,
                start + 2_000_000,
                start + 2_000_000,
                start + 2_001_000,
            ],
            bytes,
            transfers: bytes / 1024,
            first_error: u64::MAX,
            file_bytes: file,
            wall_transfers: bytes / 2048,
            wall_bytes: bytes / 2,
            wall_ns: 1_500_000,
            ..TaskFigures::default()
        };
        let all: Vec<TaskFigures> = [f(0, 4096, 4096), f(1_000_000, 8192, 8192)]
            .iter()
            .map(|x| TaskFigures::decode(&x.encode()))
            .collect();
        let path = |t: u64| format!("f.{t}");
        let shape = Shape {
            access: Access::Write,
            iteration: 0,
            checked: false,
            transfer_bytes: 1024,
            block_bytes: 4096,
            expected_bytes: 8192,
            file_per_proc: true,
            wearout: true,
            deadline: true,
            sizes_kept: true,
            path_of: &path,
        };
        let r = reduce(&all, &shape);
        assert_eq!(
            (r.bytes, r.file_bytes, r.transfers, r.pairs_accessed),
            (12288, 12288, 12, 8)
        );
        assert!((r.total_s - 0.003001).abs() < 1e-9, "{}", r.total_s);
        assert!((r.rdwr_s - 0.002999).abs() < 1e-9);
        let w = r.stonewall.unwrap();
        assert_eq!(
            (w.min_transfers, w.max_transfers, w.total_bytes, w.avg_bytes),
            (2, 4, 6144, 3072)
        );
        assert_eq!(w.time_s, 0.0015);
        // 12288 moved where 8192 were expected: IOR's three lines and the deadline's.
        assert_eq!(r.warnings.len(), 4, "{:?}", r.warnings);
    }
}
