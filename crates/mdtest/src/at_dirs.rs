//! The item phases' operations relative to directory descriptors: an
//! item's directory is opened from the `-d` directory without following
//! any symbolic link on the way ([`Backend::open_dir_at`]) and the item
//! made, stat'ed, read or removed in it by its name alone
//! ([`Backend::open_at`], [`Backend::stat_at`], [`Backend::unlink_at`],
//! [`Backend::rmdir_at`]). So a link planted below `-d` (a test
//! directory or a tree directory swapped for a link to someone else's
//! files) is refused, never followed, while `-d` itself, which the user
//! named, may be a link.
//!
//! The directory is kept open while consecutive items share it (they do,
//! in mdtest's order: items directory by directory), so an item costs one
//! comparison of its directory's path and one call on its name, with
//! nothing allocated: the kernel walks one name per item, not the whole
//! path. In bench/mdtest-vs-syscalls.sh's bare loop (tmpfs, items 6
//! names below `/`), file stat by path ran at 0.86 x the same loop by
//! name.

use iolab_backend::{Backend, Dir};
use std::ffi::CStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Open directories of one task's remove phase.
pub(crate) struct AtDirs {
    /// The `-d` directories as bytes (no trailing `/`; "" for `/`), each
    /// opened on first use.
    roots: Vec<(Vec<u8>, Option<Dir>)>,
    /// The directory items are being removed from: its path, which root
    /// it is below, and it (None when it is the root itself).
    parent: Vec<u8>,
    current: Option<(usize, Option<Dir>)>,
    /// The directory's path below its root, NUL-terminated.
    rel: Vec<u8>,
}

impl AtDirs {
    /// For the `-d` directories of the run.
    pub(crate) fn new(dirs: &[PathBuf]) -> Self {
        let roots = dirs
            .iter()
            .map(|d| {
                let mut b = d.as_os_str().as_bytes().to_vec();
                while b.last() == Some(&b'/') {
                    b.pop();
                }
                (b, None)
            })
            .collect();
        AtDirs {
            roots,
            parent: Vec::with_capacity(4096),
            current: None,
            rel: Vec::with_capacity(4096),
        }
    }

    /// Closes the directory below `-d` held open: a phase that removes
    /// directories, or a new iteration's tree, must not find an old one.
    /// The `-d` directories stay open (the run keeps them to its end), so
    /// a phase does not walk their paths again.
    pub(crate) fn reset(&mut self) {
        self.current = None;
    }

    /// Closes every directory, the `-d` ones included: before `-d`
    /// itself is removed, and after a failure.
    pub(crate) fn close_all(&mut self) {
        self.current = None;
        self.roots.iter_mut().for_each(|r| r.1 = None);
    }

    /// Removes `path` (a directory when `is_dir`), which lies below one of
    /// the `-d` directories; one outside them (none is) by its path.
    pub(crate) fn remove(&mut self, be: &dyn Backend, path: &CStr, is_dir: bool) -> io::Result<()> {
        match (self.place(be, path)?, is_dir) {
            (Some((dir, leaf)), true) => be.rmdir_at(dir, leaf),
            (Some((dir, leaf)), false) => be.unlink_at(dir, leaf),
            (None, true) => be.rmdir(path),
            (None, false) => be.unlink(path),
        }
    }

    /// The open directory `path` lies in and its last name, the
    /// directory opened (no link followed below its `-d` directory) when
    /// it is not the one held; None for a path below no `-d` directory,
    /// which goes by its path. A link or a file on the way is ELOOP or
    /// ENOTDIR ([`iolab_backend::not_a_directory`]).
    pub(crate) fn place<'p>(
        &mut self,
        be: &dyn Backend,
        path: &'p CStr,
    ) -> io::Result<Option<(&Dir, &'p CStr)>> {
        let bytes = path.to_bytes_with_nul();
        let Some(slash) = bytes.iter().rposition(|&b| b == b'/') else {
            return Ok(None);
        };
        let leaf = CStr::from_bytes_with_nul(&bytes[slash + 1..]).unwrap_or(c"");
        let parent = &bytes[..slash];
        if (self.current.is_none() || self.parent != parent) && !self.enter(be, parent)? {
            return Ok(None);
        }
        let dir = match &self.current {
            Some((_, Some(d))) => d,
            Some((k, None)) => self.roots[*k].1.as_ref().ok_or(io::ErrorKind::NotFound)?,
            None => return Ok(None),
        };
        Ok(Some((dir, leaf)))
    }

    /// Opens the directory `path` lies in, as [`AtDirs::remove`] does
    /// on its first removal there, so that a phase can do it before its
    /// clock starts (a tree of one directory is one removal: the open
    /// would be half its time). A failure is left to that removal, which
    /// meets it again and reports it.
    pub(crate) fn prepare(&mut self, be: &dyn Backend, path: &CStr) {
        let bytes = path.to_bytes();
        if let Some(slash) = bytes.iter().rposition(|&b| b == b'/') {
            let _ = self.enter(be, &bytes[..slash]);
        }
    }

    /// Makes `parent` the directory removals are made in; false when it
    /// lies below no `-d` directory (removals there go by path).
    fn enter(&mut self, be: &dyn Backend, parent: &[u8]) -> io::Result<bool> {
        self.current = None;
        let Some(k) = self.root_of(parent) else {
            return Ok(false);
        };
        let opened = self.open_below(be, k, parent)?;
        self.parent.clear();
        self.parent.extend_from_slice(parent);
        self.current = Some((k, opened));
        Ok(true)
    }

    /// Opens `parent` (a directory at or below one of the `-d`
    /// directories) as [`AtDirs::remove`] opens an item's directory, no
    /// link followed below its root, and hands it over: a descriptor of
    /// its own that the caller keeps while removals in it are in flight
    /// (the uring engine's queue, `work/queued_remove.rs`).
    pub(crate) fn open_owned(&mut self, be: &dyn Backend, parent: &[u8]) -> io::Result<Dir> {
        let Some(k) = self.root_of(parent) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not below a -d directory",
            ));
        };
        match self.open_below(be, k, parent)? {
            Some(d) => Ok(d),
            // The root itself: a descriptor of its own ("." from it).
            None => {
                let root = self.roots[k].1.as_ref().ok_or(io::ErrorKind::NotFound)?;
                be.open_dir_at(root, c"")
            }
        }
    }

    /// The root `parent` lies in (or is): the longest that matches.
    fn root_of(&self, parent: &[u8]) -> Option<usize> {
        let inside = |r: &[u8]| {
            parent.starts_with(r) && (parent.len() == r.len() || parent[r.len()] == b'/')
        };
        (0..self.roots.len())
            .filter(|&k| inside(&self.roots[k].0))
            .max_by_key(|&k| self.roots[k].0.len())
    }

    /// Opens root `k` if needed, then `parent` below it without following
    /// links; None when `parent` is the root.
    fn open_below(&mut self, be: &dyn Backend, k: usize, parent: &[u8]) -> io::Result<Option<Dir>> {
        let (root, slot) = &mut self.roots[k];
        if slot.is_none() {
            self.rel.clear();
            self.rel
                .extend_from_slice(if root.is_empty() { b"/" } else { root });
            self.rel.push(0);
            let c = CStr::from_bytes_with_nul(&self.rel).unwrap_or(c"/");
            *slot = Some(be.open_dir(c)?);
        }
        let below = &parent[root.len()..];
        let below = below.strip_prefix(b"/").unwrap_or(below);
        if below.is_empty() {
            return Ok(None);
        }
        self.rel.clear();
        self.rel.extend_from_slice(below);
        self.rel.push(0);
        let rel = CStr::from_bytes_with_nul(&self.rel).unwrap_or(c".");
        let root_dir = slot.as_ref().ok_or(io::ErrorKind::NotFound)?;
        be.open_dir_at(root_dir, rel).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_backend::Posix;
    use std::ffi::CString;

    #[test]
    fn removes_below_roots_and_refuses_links_on_the_way() {
        let base = std::env::temp_dir().join(format!("iolab-remove-at-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (d, other) = (base.join("d"), base.join("other"));
        std::fs::create_dir_all(d.join("t/tree")).unwrap();
        std::fs::create_dir_all(other.join("tree")).unwrap();
        for f in ["d/t/tree/f.1", "d/t/tree/f.2", "other/tree/f.1"] {
            std::fs::write(base.join(f), b"x").unwrap();
        }
        std::os::unix::fs::symlink(&other, d.join("link")).unwrap();
        // -d given with a trailing slash, as users type it.
        let mut r = AtDirs::new(&[PathBuf::from(format!("{}/", d.display()))]);
        let c = |p: &str| CString::new(format!("{}/{p}", d.display())).unwrap();
        r.remove(&Posix, &c("t/tree/f.1"), false).unwrap();
        r.remove(&Posix, &c("t/tree/f.2"), false).unwrap();
        let e = r.remove(&Posix, &c("link/tree/f.1"), false).unwrap_err();
        assert!(iolab_backend::not_a_directory(&e), "{e}");
        assert!(other.join("tree/f.1").exists(), "not followed");
        r.remove(&Posix, &c("t/tree"), true).unwrap();
        r.remove(&Posix, &c("t"), true).unwrap();
        let e = r.remove(&Posix, &c("link"), true).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
        r.reset();
        r.remove(&Posix, &c("link"), false).unwrap();
        assert!(other.join("tree/f.1").exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_prepared_directory_is_the_one_removals_are_made_in() {
        let base = iolab_core::tmp::PrivateDir::new("iolab-remove-prepared").unwrap();
        let (d, other) = (base.path().join("d"), base.path().join("other"));
        std::fs::create_dir_all(d.join("t/tree")).unwrap();
        std::fs::create_dir_all(other.join("tree")).unwrap();
        std::os::unix::fs::symlink(&other, d.join("link")).unwrap();
        let mut r = AtDirs::new(std::slice::from_ref(&d));
        let c = |p: &str| CString::new(format!("{}/{p}", d.display())).unwrap();
        r.prepare(&Posix, &c("t/tree"));
        assert_eq!(r.parent, c("t").as_bytes(), "opened ahead");
        r.remove(&Posix, &c("t/tree"), true).unwrap();
        assert!(!d.join("t/tree").exists());
        // A link planted on the way: nothing is opened ahead, and the
        // removal itself meets the link and refuses it.
        r.reset();
        r.prepare(&Posix, &c("link/tree"));
        assert!(r.current.is_none());
        let e = r.remove(&Posix, &c("link/tree"), true).unwrap_err();
        assert!(iolab_backend::not_a_directory(&e), "{e}");
        assert!(other.join("tree").exists(), "not followed");
    }
}
