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

fn ours(name: &[u8], _is_dir: bool) -> bool {
    name.starts_with(b"mdtest_tree.")
        || name.starts_with(b"file.mdtest.")
        || name.starts_with(b"dir.mdtest.")
}

/// Removes iolab's items under test directory `dir` and then `dir`
/// itself if empty, from `dir`'s parent (the `-d` directory the user
/// named) down, following no link ([`Remover`]). Returns what it removed
/// and what had to stay.
pub fn remove_ours(be: &dyn Backend, dir: &Path) -> Removal {
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
        (Ok(p), Ok(n)) => Remover::new(be, &ours).remove_dir(&p, &n, dir),
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
        let out = remove_ours(&iolab_backend::Posix, &t);
        assert!(t.join("mdtest_tree.0/precious").exists());
        assert!(!t.join("mdtest_tree.0/file.mdtest.0.1").exists());
        assert!(!t.join("mdtest_tree.0/mdtest_tree.1").exists());
        assert!(out.left.iter().any(|l| l.path.ends_with("precious")));
        assert!(out.confirmed(), "{:?}", out.left);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
