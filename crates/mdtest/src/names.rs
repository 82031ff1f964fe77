//! Paths of tree directories and items, built in one reused buffer so that
//! the hot loops allocate nothing. Layout (mdtest's):
//! `<dir>/test-dir.<iter>-<loop>/<tree>.0/<tree>.<child>/.../<kind>.mdtest.<task>.<n>`
//! where `<tree>` is `mdtest_tree` (shared) or `mdtest_tree.<task>` (-u).

use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use iolab_core::units::push_u64;

/// The test directory of an iteration and loop.
pub fn test_dir(root: &Path, iter: u64, lp: u64) -> std::path::PathBuf {
    root.join(format!("test-dir.{iter}-{lp}"))
}

/// Name builder for one tree (one task's tree with -u, or the shared one).
pub struct Names {
    buf: Vec<u8>,
    /// Length of `<testdir>` in `buf`.
    test_len: usize,
    /// Length of the current directory's path in `buf`.
    dir_len: usize,
    cur_dir: Option<u64>,
    tree: Vec<u8>,
    branch: u64,
    chain: Vec<u64>,
}

impl Names {
    /// Names under `testdir` for tree `mdtest_tree[.<task>]`.
    pub fn new(testdir: &Path, unique_task: Option<usize>, branch: u64) -> Self {
        let mut tree = b"mdtest_tree".to_vec();
        if let Some(t) = unique_task {
            tree.push(b'.');
            push_u64(&mut tree, t as u64);
        }
        let mut buf = Vec::with_capacity(4096);
        buf.extend_from_slice(testdir.as_os_str().as_bytes());
        Names {
            test_len: buf.len(),
            dir_len: buf.len(),
            buf,
            cur_dir: None,
            tree,
            branch: branch.max(1),
            chain: Vec::with_capacity(72),
        }
    }

    /// Points the builder at another test directory (next loop).
    pub fn set_test_dir(&mut self, testdir: &Path) {
        self.buf.clear();
        self.buf.extend_from_slice(testdir.as_os_str().as_bytes());
        self.test_len = self.buf.len();
        self.dir_len = self.test_len;
        self.cur_dir = None;
    }

    fn enter_dir(&mut self, d: u64) {
        if self.cur_dir == Some(d) {
            self.buf.truncate(self.dir_len);
            return;
        }
        self.chain.clear();
        let mut a = d;
        while a > 0 {
            self.chain.push(a);
            a = (a - 1) / self.branch;
        }
        self.chain.push(0);
        self.buf.truncate(self.test_len);
        for &a in self.chain.iter().rev() {
            self.buf.push(b'/');
            self.buf.extend_from_slice(&self.tree);
            self.buf.push(b'.');
            push_u64(&mut self.buf, a);
        }
        self.dir_len = self.buf.len();
        self.cur_dir = Some(d);
    }

    fn finish(&mut self) -> &CStr {
        self.buf.push(0);
        // Paths come from the user's -d (a valid path, no NUL) and digits.
        CStr::from_bytes_with_nul(&self.buf).unwrap_or(c"")
    }

    /// Path of tree directory `d`.
    pub fn dir(&mut self, d: u64) -> &CStr {
        self.enter_dir(d);
        self.finish()
    }

    /// Path of item `n` in directory `d`: `<dir>/<prefix><n>`, where the
    /// prefix is e.g. `file.mdtest.3.` or `dir.mdtest.shared.`.
    #[inline]
    pub fn item(&mut self, d: u64, prefix: &[u8], n: u64) -> &CStr {
        self.item_with_suffix(d, prefix, n, b"")
    }

    /// Like [`Names::item`] with a suffix (the rename phase's `-XX`).
    pub fn item_with_suffix(&mut self, d: u64, prefix: &[u8], n: u64, suffix: &[u8]) -> &CStr {
        self.enter_dir(d);
        self.buf.push(b'/');
        self.buf.extend_from_slice(prefix);
        push_u64(&mut self.buf, n);
        self.buf.extend_from_slice(suffix);
        self.finish()
    }
}

/// Item name prefix: `file.mdtest.<task>.`, `dir.mdtest.shared.`, ...
pub fn prefix(kind: &str, task: Option<usize>) -> Vec<u8> {
    match task {
        Some(t) => format!("{kind}.mdtest.{t}.").into_bytes(),
        None => format!("{kind}.mdtest.shared.").into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits() {
        for v in [0u64, 7, 10, 12345, u64::MAX] {
            let mut b = Vec::new();
            push_u64(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
        }
    }

    #[test]
    fn mdtest_paths() {
        let mut n = Names::new(Path::new("/t/test-dir.0-0"), None, 2);
        assert_eq!(n.dir(0).to_str().unwrap(), "/t/test-dir.0-0/mdtest_tree.0");
        assert_eq!(
            n.dir(5).to_str().unwrap(),
            "/t/test-dir.0-0/mdtest_tree.0/mdtest_tree.2/mdtest_tree.5"
        );
        let p = prefix("file", Some(3));
        assert_eq!(
            n.item(5, &p, 52).to_str().unwrap(),
            "/t/test-dir.0-0/mdtest_tree.0/mdtest_tree.2/mdtest_tree.5/file.mdtest.3.52"
        );
        assert_eq!(
            n.item(5, &p, 53).to_str().unwrap(),
            "/t/test-dir.0-0/mdtest_tree.0/mdtest_tree.2/mdtest_tree.5/file.mdtest.3.53"
        );
        let mut u = Names::new(Path::new("d/test-dir.1-2"), Some(7), 10);
        assert_eq!(u.item(11, &prefix("dir", None), 1100).to_str().unwrap(), "d/test-dir.1-2/mdtest_tree.7.0/mdtest_tree.7.1/mdtest_tree.7.11/dir.mdtest.shared.1100");
        assert_eq!(
            u.item_with_suffix(0, &prefix("dir", Some(1)), 0, b"-XX")
                .to_str()
                .unwrap(),
            "d/test-dir.1-2/mdtest_tree.7.0/dir.mdtest.1.0-XX"
        );
        u.set_test_dir(Path::new("e"));
        assert_eq!(u.dir(0).to_str().unwrap(), "e/mdtest_tree.7.0");
    }

    #[test]
    fn chain_for_branch_one() {
        let mut n = Names::new(Path::new("x"), None, 1);
        assert_eq!(
            n.dir(3).to_str().unwrap(),
            "x/mdtest_tree.0/mdtest_tree.1/mdtest_tree.2/mdtest_tree.3"
        );
    }
}
