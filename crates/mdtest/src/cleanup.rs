//! Removal after a failed or interrupted run: only names iolab makes
//! (`mdtest_tree.*`, `file.mdtest.*`, `dir.mdtest.*`) inside test
//! directories this run created are removed; anything else is left and
//! reported, so nothing we did not create is ever deleted.

use std::path::{Path, PathBuf};

fn ours(name: &str) -> bool {
    name.starts_with("mdtest_tree.")
        || name.starts_with("file.mdtest.")
        || name.starts_with("dir.mdtest.")
}

/// Removes iolab's items under `dir` and then `dir` itself if empty.
/// Returns the paths that had to be left behind.
pub fn remove_ours(dir: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    sweep(dir, &mut left);
    if std::fs::remove_dir(dir).is_err() && dir.exists() {
        left.push(dir.to_path_buf());
    }
    left
}

fn sweep(dir: &Path, left: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if !ours(&name) {
            left.push(path);
            continue;
        }
        if is_dir {
            sweep(&path, left);
            if std::fs::remove_dir(&path).is_err() {
                left.push(path);
            }
        } else if std::fs::remove_file(&path).is_err() {
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
        let left = remove_ours(&t);
        assert!(t.join("mdtest_tree.0/precious").exists());
        assert!(!t.join("mdtest_tree.0/file.mdtest.0.1").exists());
        assert!(!t.join("mdtest_tree.0/mdtest_tree.1").exists());
        assert!(left.iter().any(|p| p.ends_with("precious")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
