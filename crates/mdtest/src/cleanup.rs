//! Removal after a failed or interrupted run: only names iolab makes
//! (`mdtest_tree.*`, `file.mdtest.*`, `dir.mdtest.*`) inside test
//! directories this run created are removed; anything else is left and
//! reported, so nothing we did not create is ever deleted. Everything
//! goes through the backend, as the benchmark itself does.

use iolab_backend::{c_path, Backend};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn ours(name: &[u8]) -> bool {
    name.starts_with(b"mdtest_tree.")
        || name.starts_with(b"file.mdtest.")
        || name.starts_with(b"dir.mdtest.")
}

/// Removes iolab's items under `dir` and then `dir` itself if empty.
/// Returns the paths that had to be left behind.
pub fn remove_ours(be: &dyn Backend, dir: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    sweep(be, dir, &mut left);
    if remove(be, dir, true).is_err() && exists(be, dir) {
        left.push(dir.to_path_buf());
    }
    left
}

fn exists(be: &dyn Backend, p: &Path) -> bool {
    c_path(p).and_then(|c| be.exists(&c)).unwrap_or(true)
}

fn remove(be: &dyn Backend, p: &Path, is_dir: bool) -> std::io::Result<()> {
    let c = c_path(p)?;
    if is_dir {
        be.rmdir(&c)
    } else {
        be.unlink(&c)
    }
}

fn sweep(be: &dyn Backend, dir: &Path, left: &mut Vec<PathBuf>) {
    let Ok(entries) = c_path(dir).and_then(|c| be.list(&c)) else {
        return;
    };
    for e in entries {
        let path = dir.join(OsStr::from_bytes(&e.name));
        if !ours(&e.name) {
            left.push(path);
            continue;
        }
        if e.is_dir {
            sweep(be, &path, left);
        }
        if remove(be, &path, e.is_dir).is_err() {
            left.push(path);
        }
    }
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
        let left = remove_ours(&iolab_backend::Posix, &t);
        assert!(t.join("mdtest_tree.0/precious").exists());
        assert!(!t.join("mdtest_tree.0/file.mdtest.0.1").exists());
        assert!(!t.join("mdtest_tree.0/mdtest_tree.1").exists());
        assert!(left.iter().any(|p| p.ends_with("precious")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
