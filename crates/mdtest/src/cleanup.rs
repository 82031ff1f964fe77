//! Removal after a failed or interrupted run: only names iolab makes
//! (`mdtest_tree.*`, `file.mdtest.*`, `dir.mdtest.*`) inside test
//! directories this run created are removed; anything else is left and
//! reported, so nothing we did not create is ever deleted. Everything
//! goes through the backend, as the benchmark itself does.

use iolab_backend::remove::{Removal, Remover, Why};
use iolab_backend::{c_path, Backend};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The names a run could have made: what its cleanup may remove. Not
/// every name of mdtest's pattern: one with a task, directory or item
/// number beyond the run's is someone else's (a user's object stored
/// inside the run's test directory on a shared bucket was removed).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Tasks in the run (item names carry a task below this).
    pub tasks: u64,
    /// Directories of one tree (tree names carry an id below this).
    pub dirs: u64,
    /// Item numbers of one tree (items are numbered below this).
    pub items: u64,
}

impl Bounds {
    /// The bounds of a run of `tasks` tasks with `plan`'s tree.
    pub fn of(plan: &crate::plan::Plan, tasks: u64) -> Bounds {
        Bounds {
            tasks,
            dirs: plan.dirs_per_tree,
            items: plan.dirs_per_tree.saturating_mul(plan.items_per_dir),
        }
    }

    /// Whether this run could have made `name`: `mdtest_tree.A` or
    /// `mdtest_tree.T.A` (-u), `file.mdtest.T.N`, `dir.mdtest.T.N`, the
    /// `shared` forms (-S), and the rename phase's `-XX` suffix.
    fn ours(&self, name: &[u8]) -> bool {
        let Ok(name) = std::str::from_utf8(name) else {
            return false;
        };
        let num = |s: &str, below: u64| {
            !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && s.parse::<u64>().is_ok_and(|n| n < below)
        };
        if let Some(rest) = name.strip_prefix("mdtest_tree.") {
            return match rest.split_once('.') {
                Some((t, a)) => num(t, self.tasks) && num(a, self.dirs),
                None => num(rest, self.dirs),
            };
        }
        let Some(rest) = name
            .strip_prefix("file.mdtest.")
            .or_else(|| name.strip_prefix("dir.mdtest."))
        else {
            return false;
        };
        let rest = rest.strip_suffix("-XX").unwrap_or(rest);
        match rest.split_once('.') {
            Some(("shared", n)) => num(n, self.items),
            Some((t, n)) => num(t, self.tasks) && num(n, self.items),
            None => false,
        }
    }
}

/// Removes this run's items (those `bounds` allows) under test directory
/// `dir` and then `dir` itself if empty, from `dir`'s parent (the `-d`
/// directory the user named) down, following no link ([`Remover`]).
/// Returns what it removed and what had to stay.
pub fn remove_ours(be: &dyn Backend, dir: &Path, bounds: Bounds) -> Removal {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return unseen(dir, "not a test directory");
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let opened = c_path(parent).and_then(|c| be.open_dir(&c));
    let name = CString::new(name.as_bytes());
    match (opened, name) {
        (Ok(p), Ok(n)) => {
            let ours = |name: &[u8], _is_dir: bool| bounds.ours(name);
            Remover::new(be, &ours).remove_dir(&p, &n, dir)
        }
        (Err(e), _) => unseen(dir, &format!("cannot open {}: {e}", parent.display())),
        (_, Err(e)) => unseen(dir, &e.to_string()),
    }
}

fn unseen(dir: &Path, why: &str) -> Removal {
    let mut r = Removal::default();
    r.left.push(iolab_backend::remove::Left {
        path: dir.to_path_buf(),
        why: Why::Failed(why.to_string()),
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_our_names() {
        let root = std::env::temp_dir().join(format!("iolab-clean-{}", std::process::id()));
        let t = root.join("test-dir.0-0");
        std::fs::create_dir_all(t.join("mdtest_tree.0/mdtest_tree.1/dir.mdtest.0.3")).unwrap();
        std::fs::write(t.join("mdtest_tree.0/file.mdtest.0.1"), b"x").unwrap();
        std::fs::write(t.join("mdtest_tree.0/precious"), b"keep").unwrap();
        // Names of mdtest's pattern this run could not have made.
        for other in ["file.mdtest.9.1", "file.mdtest.0.99999", "dir.mdtest.user"] {
            std::fs::write(t.join("mdtest_tree.0").join(other), b"keep").unwrap();
        }
        let bounds = Bounds {
            tasks: 2,
            dirs: 3,
            items: 30,
        };
        let out = remove_ours(&iolab_backend::Posix, &t, bounds);
        assert!(t.join("mdtest_tree.0/precious").exists());
        for other in ["file.mdtest.9.1", "file.mdtest.0.99999", "dir.mdtest.user"] {
            assert!(t.join("mdtest_tree.0").join(other).exists(), "{other}");
        }
        assert!(!t.join("mdtest_tree.0/file.mdtest.0.1").exists());
        assert!(!t.join("mdtest_tree.0/mdtest_tree.1").exists());
        assert!(out.left.iter().any(|l| l.path.ends_with("precious")));
        assert!(out.confirmed(), "{:?}", out.left);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
