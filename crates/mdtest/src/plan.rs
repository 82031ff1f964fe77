//! The derived shape of a test: how many directories a tree has, which of
//! them hold items, how many items each task works on and how they are
//! spread over test-dir loops. Items are numbered as mdtest numbers them:
//! directory `d` (breadth-first id, root 0, children of `d` are
//! `d*b+1 ..= d*b+b`) holds items `d*I .. d*I+I-1`.

/// A tree shape or item count that cannot be planned, naming the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// What a plan is derived from: the tree and item options as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Branching factor (`-b`; 0 is taken as 1).
    pub branch: u64,
    /// Depth (`-z`).
    pub depth: u64,
    /// Items only in the leaves (`-L`).
    pub leaf_only: bool,
    /// Items per task asked with `-n` (0: not given).
    pub items_asked: u64,
    /// Items per directory asked with `-I` (0: not given).
    pub items_per_dir_asked: u64,
}

/// Tree shape and item distribution for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Plan {
    /// Branching factor.
    pub branch: u64,
    /// Depth (0 = only the root directory).
    pub depth: u64,
    /// Directories in one tree, root included.
    pub dirs_per_tree: u64,
    /// Id of the first leaf directory.
    pub first_leaf: u64,
    /// Directories that hold items (all, or only the leaves with -L).
    pub item_dirs: u64,
    /// Items in each of those directories.
    pub items_per_dir: u64,
    /// Items each task works on (the true count).
    pub items_per_task: u64,
    /// Number of test-dir loops (`test-dir.<iter>-<loop>`).
    pub loops: u64,
}

impl Plan {
    /// Derives the plan from a shape (mdtest's rules, with the count
    /// always the number of items really made). [`Plan::new`] derives it
    /// from a configuration.
    pub fn from_shape(cfg: &Shape) -> Result<Self, PlanError> {
        let (b, z) = (cfg.branch.max(1), cfg.depth);
        let dirs_per_tree =
            tree_size(b, z).ok_or_else(|| PlanError("-b/-z: the tree is too large".into()))?;
        let leaves = if z == 0 { 1 } else { b.pow(z as u32) };
        let item_dirs = if cfg.leaf_only { leaves } else { dirs_per_tree };
        let (items_per_dir, items_per_task) = match (cfg.items_asked, cfg.items_per_dir_asked) {
            (0, i) => (
                i,
                i.checked_mul(item_dirs)
                    .ok_or_else(|| PlanError("-I: too many items".into()))?,
            ),
            (n, 0) => (n / item_dirs, n / item_dirs * item_dirs),
            (n, i) => (i, n),
        };
        if items_per_dir == 0 {
            return Err(PlanError(format!(
                "-n {}: fewer items than directories that hold items ({item_dirs}); raise -n or use -I",
                cfg.items_asked
            )));
        }
        let capacity = items_per_dir * item_dirs;
        Ok(Plan {
            branch: b,
            depth: z,
            dirs_per_tree,
            first_leaf: dirs_per_tree - leaves,
            item_dirs,
            items_per_dir,
            items_per_task,
            loops: items_per_task.div_ceil(capacity).max(1),
        })
    }

    /// Items one test-dir loop holds at most.
    pub fn loop_capacity(&self) -> u64 {
        self.items_per_dir * self.item_dirs
    }

    /// Where the task's `k`-th item lives: (loop, directory id, item number).
    #[inline]
    pub fn locate(&self, k: u64, leaf_only: bool) -> (u64, u64, u64) {
        let cap = self.loop_capacity();
        let (lp, within) = (k / cap, k % cap);
        let dir = within / self.items_per_dir + if leaf_only { self.first_leaf } else { 0 };
        (
            lp,
            dir,
            dir * self.items_per_dir + within % self.items_per_dir,
        )
    }

    /// Parent of directory `d` (d > 0).
    #[inline]
    pub fn parent(&self, d: u64) -> u64 {
        (d - 1) / self.branch
    }
}

/// Directories in a tree of branching `b` and depth `z`.
fn tree_size(b: u64, z: u64) -> Option<u64> {
    if b == 1 {
        return Some(z + 1);
    }
    let mut total: u64 = 0;
    let mut level: u64 = 1;
    for _ in 0..=z {
        total = total.checked_add(level)?;
        level = level.checked_mul(b)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;
    use crate::config::{Config, ConfigError};

    fn plan(line: &str) -> Result<Plan, ConfigError> {
        let raw = parse(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        Plan::new(&Config::from_raw(&raw).unwrap())
    }

    #[test]
    fn seed_runs_give_mdtest_counts() {
        // mdtest -b 10 -z 2 -I 100: 111 directories, 11100 items per task.
        let p = plan("-b 10 -z 2 -I 100").unwrap();
        assert_eq!(
            (p.dirs_per_tree, p.items_per_task, p.loops),
            (111, 11100, 1)
        );
        // -z 1 -L -b 10 -I 1000: only the 10 leaves hold items.
        let p = plan("-z 1 -L -b 10 -I 1000").unwrap();
        assert_eq!(
            (p.item_dirs, p.items_per_task, p.first_leaf),
            (10, 10000, 1)
        );
        // -b 2 -z 3 -I 10: 15 directories.
        assert_eq!(plan("-b 2 -z 3 -I 10").unwrap().items_per_task, 150);
        // -n 100: one directory, 100 items.
        assert_eq!(plan("-n 100").unwrap().items_per_dir, 100);
    }

    #[test]
    fn n_is_truncated_to_whole_directories() {
        let p = plan("-n 10 -z 1 -b 2").unwrap();
        assert_eq!((p.items_per_dir, p.items_per_task), (3, 9));
        assert!(plan("-n 2 -z 1 -b 2").unwrap_err().0.contains("-n"));
    }

    #[test]
    fn n_with_i_gives_loops() {
        let p = plan("-n 25 -I 5 -z 1 -b 2").unwrap();
        assert_eq!((p.loop_capacity(), p.loops, p.items_per_task), (15, 2, 25));
        assert_eq!(p.locate(0, false), (0, 0, 0));
        assert_eq!(p.locate(7, false), (0, 1, 7));
        assert_eq!(p.locate(16, false), (1, 0, 1));
    }

    #[test]
    fn leaf_items_are_numbered_from_the_first_leaf() {
        let p = plan("-z 2 -b 2 -L -I 3").unwrap();
        assert_eq!((p.dirs_per_tree, p.first_leaf), (7, 3));
        assert_eq!(p.locate(0, true), (0, 3, 9));
        assert_eq!(p.locate(11, true), (0, 6, 20));
        assert_eq!(p.parent(6), 2);
        assert_eq!(p.parent(2), 0);
    }

    #[test]
    fn huge_trees_are_refused() {
        assert!(plan("-b 1000 -z 10 -I 1").is_err());
        assert_eq!(tree_size(1, 5), Some(6));
    }
}
