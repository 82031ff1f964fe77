//! Where each task's transfers go, as IOR places them: the file a task
//! works on (IOR's GetTestFileName: `-F` appends the pretend rank, `-u`
//! puts it in a directory of that number, `-m` appends the repetition,
//! `@` gives several names), the task whose data a reader reads (`-C`,
//! `-Z`, `-Q`, `-X`), and the offset of every transfer (sequential,
//! `-z` shuffled with glibc's generator as IOR does, so the same seed
//! gives IOR's order, or `-z -z` random blocks).

use crate::params::Params;
use iolab_core::random::GlibcRand;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// The tasks of a test and how they sit on nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Geometry {
    /// Tasks taking part (IOR's numTasks).
    pub tasks: u64,
    /// Nodes they run on.
    pub nodes: u64,
    /// Tasks on task 0's node (IOR's numTasksOnNode0, "clients per node").
    pub tasks_on_node0: u64,
    /// Task 1 shares task 0's node: tasks fill a node before the next
    /// (IOR's tasksBlockMapping), so moving a node means moving by
    /// `tasks_on_node0` tasks.
    pub block_mapping: bool,
}

impl Geometry {
    /// How many tasks to move to reach the next node.
    pub fn node_shift(&self) -> u64 {
        match self.block_mapping {
            true => self.tasks_on_node0.max(1),
            false => 1,
        }
    }
}

/// The tasks a test of `p` runs on out of `all` (`-N` caps them).
pub fn test_tasks(p: &Params, all: u64) -> u64 {
    p.num_tasks.unwrap_or(all).min(all)
}

/// Every file a test of `p` on `tasks` tasks uses, as (repetition,
/// file, the `-u` directory made for it): one per task with `-F`, one
/// shared otherwise, again per repetition with `-m`. What is checked
/// before the run, and named when it may be left, is this one list.
pub fn test_files(
    p: &Params,
    tasks: u64,
) -> impl Iterator<Item = (u64, PathBuf, Option<PathBuf>)> + '_ {
    let reps = if p.multi_file {
        p.repetitions.max(1)
    } else {
        1
    };
    let names = if p.file_per_proc { tasks } else { 1 };
    (0..reps).flat_map(move |rep| {
        (0..names).map(move |task| {
            let (file, dir) = file_name(p, task, tasks, rep);
            (rep, file, dir)
        })
    })
}

/// The longest name a test of `p` on `tasks` tasks gives the backend:
/// its longest file's, and when `chunked` (a store of whole objects,
/// one object per transfer named `FILE-OFFSET-LENGTH`) with the suffix
/// of its last transfer. A backend that bounds its names (S3 keys are
/// at most 1024 bytes) is asked about it before anything is sent.
pub fn longest_name(p: &Params, tasks: u64, chunked: bool) -> Option<Vec<u8>> {
    let mut longest = test_files(p, tasks)
        .map(|(_, file, _)| file.into_os_string().into_vec())
        .max_by_key(Vec::len)?;
    if chunked {
        let sharers = if p.file_per_proc { 1 } else { tasks };
        let size = p
            .block_bytes
            .saturating_mul(p.segments)
            .saturating_mul(sharers);
        let last = size.saturating_sub(p.transfer_bytes);
        longest.extend_from_slice(format!("-{last}-{}", p.transfer_bytes).as_bytes());
    }
    Some(longest)
}

/// The name of the file task `pretend` works on in repetition `rep`
/// (`-m` only), and the directory `-u` makes for it.
pub fn file_name(p: &Params, pretend: u64, tasks: u64, rep: u64) -> (PathBuf, Option<PathBuf>) {
    let names: Vec<&[u8]> = p.test_file.as_bytes().split(|&b| b == b'@').collect();
    let mut dir = None;
    let mut name: Vec<u8> = match p.file_per_proc {
        true => names[(pretend % tasks) as usize % names.len()].to_vec(),
        false => names[0].to_vec(),
    };
    if p.file_per_proc {
        if p.unique_dir {
            let (d, f) = split_dir(&name);
            let mut sub = d.to_vec();
            sub.extend_from_slice(pretend.to_string().as_bytes());
            dir = Some(PathBuf::from(OsString::from_vec(sub.clone())));
            sub.push(b'/');
            sub.extend_from_slice(f);
            name = sub;
        }
        name.extend_from_slice(format!(".{pretend:08}").as_bytes());
    }
    if p.multi_file {
        name.extend_from_slice(format!(".{rep}").as_bytes());
    }
    (PathBuf::from(OsStr::from_bytes(&name)), dir)
}

/// (`dir/` with its slash, or empty; the file name).
fn split_dir(name: &[u8]) -> (&[u8], &[u8]) {
    match name.iter().rposition(|&b| b == b'/') {
        Some(i) => (&name[..=i], &name[i + 1..]),
        None => (&[], name),
    }
}

/// Which task's data task `rank` works on for a read (`check_write`:
/// the read-back of -W, one node further, as IOR moves it), as IOR 4.1
/// computes its rankOffset; `rep` varies -Z's seed when -X is negative.
pub fn pretend_rank(
    p: &Params,
    geo: &Geometry,
    rank: u64,
    rep: u64,
    check_write: bool,
) -> Result<u64, crate::IorError> {
    let n = geo.tasks.max(1);
    let shift = geo.node_shift();
    if p.reorder > 0 {
        let q = p.task_per_node_offset + u64::from(check_write);
        return Ok((rank + (q * shift) % n) % n);
    }
    if check_write || p.reorder_random == 0 {
        return Ok(rank);
    }
    let iseed = match p.reorder_seed {
        s if s < 0 => s.unsigned_abs() + rep,
        s => s as u64,
    } as u32;
    if p.reorder_random == 1 {
        let node = p.task_per_node_offset.min(geo.nodes.saturating_sub(1));
        let least = node * geo.tasks_on_node0;
        let mut g = GlibcRand::new((rank as u32).wrapping_add(iseed));
        for _ in 0..1_000_000 {
            let off = g.next_rand() as u64 % n;
            if off >= least {
                return Ok((rank + off) % n);
            }
        }
        return Err(crate::IorError::NoOffset {
            offset: p.task_per_node_offset,
            least,
            tasks: n,
        });
    }
    // -Z -Z: a shuffle of the tasks, the same on every task.
    let mut g = GlibcRand::new(iseed);
    let mut order: Vec<u64> = (0..n).collect();
    for i in 0..n as usize {
        let t = i + g.next_rand() as usize % (n as usize - i);
        order.swap(i, t);
    }
    Ok(order[rank as usize])
}

/// The offsets of one task's transfers in one pass over its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offsets {
    /// Sequential: transfer j of segment i at `j * t + i * block`
    /// (a file per task) or `j * t + (i * tasks + rank) * block`.
    Sequential {
        /// Transfers per block.
        per_block: u64,
        /// Bytes per transfer.
        transfer: u64,
        /// Bytes between segments.
        segment_stride: u64,
        /// This task's block within a segment.
        base: u64,
    },
    /// `-z`: the same shuffled offsets in every segment.
    Shuffled {
        /// Offsets within a segment.
        within: Vec<u64>,
        /// Bytes between segments.
        segment_stride: u64,
    },
    /// `-z -z`: each segment reads one random block of the file, in
    /// order (IOR's random offset > 1).
    RandomBlocks {
        /// Transfers per block.
        per_block: u64,
        /// Bytes per transfer.
        transfer: u64,
        /// Bytes per block.
        block: u64,
        /// Whole blocks in the file.
        blocks: u64,
        /// Seed of the block choices.
        seed: u64,
    },
}

impl Offsets {
    /// Sequential offsets of task `pretend`.
    pub fn sequential(p: &Params, tasks: u64, pretend: u64) -> Offsets {
        let (stride, base) = match p.file_per_proc {
            true => (p.block_bytes, 0),
            false => (tasks * p.block_bytes, pretend * p.block_bytes),
        };
        Offsets::Sequential {
            per_block: p.block_bytes / p.transfer_bytes,
            transfer: p.transfer_bytes,
            segment_stride: stride,
            base,
        }
    }

    /// `-z`'s offsets of task `pretend` for `seed` (IOR's
    /// GetOffsetArrayRandom): with a file per task, its block's transfers
    /// shuffled; on a shared file, each transfer of a segment goes to the
    /// task glibc's `rand() % tasks` names, all tasks drawing the same
    /// sequence, and each task shuffles its own.
    pub fn shuffled(p: &Params, tasks: u64, pretend: u64, seed: u32) -> Offsets {
        let mut g = GlibcRand::new(seed);
        let t = p.transfer_bytes;
        let mut within: Vec<u64> = match p.file_per_proc {
            true => (0..p.block_bytes / t).map(|j| j * t).collect(),
            false => (0..p.block_bytes * tasks / t)
                .filter(|_| g.next_rand() as u64 % tasks == pretend)
                .map(|j| j * t)
                .collect(),
        };
        let n = within.len();
        for i in 0..n {
            let v = g.next_rand() as usize % n;
            within.swap(v, i);
        }
        Offsets::Shuffled {
            within,
            segment_stride: match p.file_per_proc {
                true => p.block_bytes,
                false => tasks * p.block_bytes,
            },
        }
    }

    /// `-z -z` over a file of `file_bytes`; None when it holds no block.
    pub fn random_blocks(p: &Params, file_bytes: u64, seed: u64) -> Option<Offsets> {
        let blocks = file_bytes / p.block_bytes;
        (blocks > 0).then_some(Offsets::RandomBlocks {
            per_block: p.block_bytes / p.transfer_bytes,
            transfer: p.transfer_bytes,
            block: p.block_bytes,
            blocks,
            seed,
        })
    }

    /// Transfers per segment.
    pub fn per_segment(&self) -> u64 {
        match self {
            Offsets::Sequential { per_block, .. } | Offsets::RandomBlocks { per_block, .. } => {
                *per_block
            }
            Offsets::Shuffled { within, .. } => within.len() as u64,
        }
    }

    /// The offset of transfer `j` of segment `seg`.
    #[inline]
    pub fn at(&self, seg: u64, j: u64) -> u64 {
        match self {
            Offsets::Sequential {
                transfer,
                segment_stride,
                base,
                ..
            } => seg * segment_stride + base + j * transfer,
            Offsets::Shuffled {
                within,
                segment_stride,
            } => seg * segment_stride + within[j as usize],
            Offsets::RandomBlocks {
                transfer,
                block,
                blocks,
                seed,
                ..
            } => {
                let r = iolab_core::random::splitmix_nth(*seed, seg);
                iolab_core::random::below(r, *blocks) * block + j * transfer
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(line: &str) -> Params {
        crate::options::parse_os(&iolab_opts::words(line))
            .unwrap()
            .params
    }

    fn geo(tasks: u64, per_node: u64) -> Geometry {
        Geometry {
            tasks,
            nodes: tasks.div_ceil(per_node),
            tasks_on_node0: per_node,
            block_mapping: per_node > 1,
        }
    }

    #[test]
    fn names_as_ior_makes_them() {
        let name = |line: &str, t, rep| {
            let (f, d) = file_name(&params(line), t, 4, rep);
            (f.display().to_string(), d.map(|d| d.display().to_string()))
        };
        assert_eq!(name("-o /d/f", 2, 0), ("/d/f".into(), None));
        assert_eq!(name("-o /d/f -F", 2, 0), ("/d/f.00000002".into(), None));
        assert_eq!(
            name("-o /d/f -F -u", 3, 0),
            ("/d/3/f.00000003".into(), Some("/d/3".into()))
        );
        assert_eq!(name("-o /d/f -m", 0, 5), ("/d/f.5".into(), None));
        assert_eq!(name("-o /a/f@/b/f -F", 1, 0).0, "/b/f.00000001");
        assert_eq!(name("-o f -F -u", 0, 0).0, "0/f.00000000");
    }

    #[test]
    fn reordering_moves_by_nodes() {
        let p = params("-C -Q 1");
        // Two nodes of two tasks: task 0 reads task 2's data.
        assert_eq!(pretend_rank(&p, &geo(4, 2), 0, 0, false).unwrap(), 2);
        assert_eq!(pretend_rank(&p, &geo(4, 2), 0, 0, true).unwrap(), 0);
        // One node: moving a node comes back to the same task, as in IOR.
        assert_eq!(pretend_rank(&p, &geo(2, 2), 1, 0, false).unwrap(), 1);
        // Round-robin placement: the next task is on the next node.
        let rr = Geometry {
            block_mapping: false,
            ..geo(4, 2)
        };
        assert_eq!(pretend_rank(&p, &rr, 3, 0, false).unwrap(), 0);
        // -N 3 of 4 tasks on one node: the node's 4 tasks (IOR counts the
        // whole run) move the reader by 4 % 3, to the next task's file.
        let three_of_four = Geometry {
            tasks: 3,
            ..geo(4, 4)
        };
        let read: Vec<u64> = (0..3)
            .map(|t| pretend_rank(&p, &three_of_four, t, 0, false).unwrap())
            .collect();
        assert_eq!(read, [1, 2, 0]);
        let shuffle = params("-Z -Z -X 7");
        let mut seen: Vec<u64> = (0..6)
            .map(|r| pretend_rank(&shuffle, &geo(6, 1), r, 0, false).unwrap())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
        assert!(pretend_rank(&params("-Z"), &geo(4, 1), 1, 0, false).unwrap() < 4);
    }

    #[test]
    fn offsets_cover_each_block_once() {
        let p = params("-b 64k -t 16k -s 2");
        let o = Offsets::sequential(&p, 3, 1);
        assert_eq!(
            (o.at(0, 0), o.at(0, 3), o.at(1, 0)),
            (65536, 65536 + 49152, 262144)
        );
        // A file per task: each task's own.
        let f = params("-b 64k -t 16k -z -F");
        let z = Offsets::shuffled(&f, 3, 1, 5);
        let mut v: Vec<u64> = (0..4).map(|j| z.at(0, j)).collect();
        v.sort_unstable();
        assert_eq!(v, [0, 16384, 32768, 49152]);
        // Shared: every transfer of a segment goes to exactly one task.
        let s = params("-b 64k -t 16k -z");
        let mut all: Vec<u64> = (0..3)
            .flat_map(|t| {
                let o = Offsets::shuffled(&s, 3, t, 9);
                (0..o.per_segment()).map(move |j| o.at(1, j))
            })
            .collect();
        all.sort_unstable();
        let want: Vec<u64> = (0..12).map(|j| 3 * 65536 + j * 16384).collect();
        assert_eq!(all, want);
        let r = Offsets::random_blocks(&params("-b 4k -t 4k"), 40960, 3).unwrap();
        assert!((0..100).all(|s| r.at(s, 0).is_multiple_of(4096) && r.at(s, 0) < 40960));
        assert!(Offsets::random_blocks(&params("-b 4k -t 4k"), 100, 3).is_none());
    }
}
