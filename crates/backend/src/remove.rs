//! Removing what a tool made under a directory, the way `rm -r` does it:
//! every directory below the one the user named is opened from its
//! parent's descriptor without following a symbolic link
//! ([`Backend::open_dir_at`]), and every name is removed relative to the
//! directory that holds it ([`Backend::unlink_at`], [`Backend::rmdir_at`]).
//! So a link planted anywhere below, where a directory is expected, is
//! never followed: files it leads to are not touched.
//!
//! Only names the tool makes are removed (the `ours` predicate); anything
//! else stays and is reported with why, and so is anything the walk could
//! not confirm it removed (a listing or a removal that failed, a walk
//! stopped early), so that no caller claims a removal it did not see.
//!
//! ```
//! use iolab_backend::remove::Remover;
//! let root = std::env::temp_dir().join(format!("iolab-remove-doc-{}", std::process::id()));
//! std::fs::create_dir_all(root.join("run/sub")).unwrap();
//! std::fs::write(root.join("run/sub/made.1"), b"x").unwrap();
//! std::fs::write(root.join("run/precious"), b"x").unwrap();
//! let be = iolab_backend::Posix;
//! let ours = |name: &[u8], _is_dir: bool| name.starts_with(b"made.") || name == b"sub";
//! let top = iolab_backend::Backend::open_dir(&be, &iolab_backend::c_path(&root).unwrap()).unwrap();
//! let out = Remover::new(&be, &ours).remove_dir(&top, c"run", &root.join("run"));
//! assert_eq!(out.removed, 2);
//! assert_eq!(out.left.len(), 1, "precious stays, and is named");
//! assert!(out.confirmed());
//! std::fs::remove_dir_all(&root).unwrap();
//! ```

use crate::{not_a_directory, Backend, Dir};
use std::ffi::{CStr, OsStr};
use std::fmt;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Deepest nesting a walk enters: deeper than any tree the tools make
/// (mdtest's depth is at most 64), so that a planted chain of
/// directories cannot exhaust descriptors or a thread's stack.
pub const MAX_DEPTH: usize = 128;

/// How many removals between two calls of the progress callback.
const TICK: u64 = 1024;

/// Why a path stayed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// Not a name the tool makes: someone else's, left alone.
    NotOurs,
    /// A symbolic link (or a file) stands where the tool makes a
    /// directory: neither followed nor removed.
    NotADirectory,
    /// Listing or removing it failed: what it still holds is not known.
    Failed(String),
    /// The walk was asked to stop before it was done there.
    Stopped,
    /// Nested deeper than [`MAX_DEPTH`]: not entered.
    TooDeep,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::NotOurs => f.write_str("not made by this run"),
            Why::NotADirectory => {
                f.write_str("a symbolic link or a file where a directory belongs: not followed")
            }
            Why::Failed(e) => f.write_str(e),
            Why::Stopped => f.write_str("not removed: the removal was stopped"),
            Why::TooDeep => write!(f, "nested deeper than {MAX_DEPTH} levels: not entered"),
        }
    }
}

/// A path that stayed, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Left {
    /// The path (the directory the walk started from, joined with names).
    pub path: PathBuf,
    /// Why it stayed.
    pub why: Why,
}

impl Left {
    /// Whether the walk knows what stayed there (a name not ours, a link
    /// not followed), as against a path whose contents it could not see
    /// or finish (a failure, a stop).
    pub fn known(&self) -> bool {
        matches!(self.why, Why::NotOurs | Why::NotADirectory)
    }
}

impl fmt::Display for Left {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path.display(), self.why)
    }
}

/// What a walk removed and what stayed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removal {
    /// Entries removed (files, links and directories).
    pub removed: u64,
    /// What stayed, with why.
    pub left: Vec<Left>,
}

impl Removal {
    /// Whether the walk saw every removal through: nothing failed, nothing
    /// was left unvisited. What stayed then is only what is not ours.
    pub fn confirmed(&self) -> bool {
        self.left.iter().all(Left::known)
    }

    /// Adds another walk's figures to these.
    pub fn merge(&mut self, other: Removal) {
        self.removed += other.removed;
        self.left.extend(other.left);
    }

    fn leave(&mut self, path: PathBuf, why: Why) {
        self.left.push(Left { path, why });
    }
}

/// Whether a name (as listed, without the path) at the given place is one
/// the tool makes. `is_dir` is the listing's: a symbolic link is not a
/// directory, whatever it points at.
pub type Ours<'a> = &'a (dyn Fn(&[u8], bool) -> bool + Sync);

/// A removal walk over one backend, removing the names `ours` accepts.
pub struct Remover<'a> {
    be: &'a dyn Backend,
    ours: Ours<'a>,
    tick: Option<&'a (dyn Fn(u64) -> bool + Sync)>,
}

impl<'a> Remover<'a> {
    /// A walk that removes what `ours` accepts.
    pub fn new(be: &'a dyn Backend, ours: Ours<'a>) -> Self {
        Remover {
            be,
            ours,
            tick: None,
        }
    }

    /// Calls `tick` with the walk's removals so far every 1024 removals;
    /// when it returns false the walk stops and reports what it did not
    /// visit ([`Why::Stopped`]).
    pub fn on_tick(mut self, tick: &'a (dyn Fn(u64) -> bool + Sync)) -> Self {
        self.tick = Some(tick);
        self
    }

    /// Removes what is ours inside directory `name` of `parent`, then
    /// `name` itself once empty. `path` names `parent/name` in the report.
    /// A `name` that is missing is nothing to do; one that is a link or
    /// a file is left, not followed.
    pub fn remove_dir(&self, parent: &Dir, name: &CStr, path: &Path) -> Removal {
        let mut out = Removal::default();
        let mut walk = Walk::new(self);
        walk.remove_dir(parent, name, path, 1, &mut out);
        out
    }

    /// Removes what is ours inside the open directory `dir` (which stays).
    pub fn empty(&self, dir: &Dir, path: &Path) -> Removal {
        let mut out = Removal::default();
        let mut walk = Walk::new(self);
        walk.empty(dir, path, 1, &mut out);
        out
    }

    /// How many entries [`Remover::remove_dir`] would remove below
    /// `parent/name` (its contents that are ours and `name` itself), by
    /// listing only; 0 when it cannot be opened.
    pub fn count_dir(&self, parent: &Dir, name: &CStr) -> u64 {
        match self.be.open_dir_at(parent, name) {
            Ok(dir) => 1 + self.count(&dir, 1),
            Err(_) => 0,
        }
    }

    fn count(&self, dir: &Dir, depth: usize) -> u64 {
        if depth > MAX_DEPTH {
            return 0;
        }
        let (mut n, mut subdirs) = (0u64, Vec::new());
        let _ = self.be.list_at(dir, &mut |e| {
            if (self.ours)(&e.name, e.is_dir) {
                n += 1;
                if e.is_dir {
                    subdirs.push(e.name.clone());
                }
            }
            true
        });
        let mut cname = Vec::with_capacity(256);
        for sub in subdirs {
            if let Ok(d) = self.be.open_dir_at(dir, c_name(&mut cname, &sub)) {
                n += self.count(&d, depth + 1);
            }
        }
        n
    }
}

/// One walk's running state.
struct Walk<'r, 'a> {
    r: &'r Remover<'a>,
    /// Removals counted before the current directory's figures.
    removed_before: u64,
    /// The count at which the progress callback is called next.
    next_tick: u64,
    stopped: bool,
}

impl<'r, 'a> Walk<'r, 'a> {
    fn new(r: &'r Remover<'a>) -> Self {
        Walk {
            r,
            removed_before: 0,
            next_tick: TICK,
            stopped: false,
        }
    }

    /// Tells the progress callback, every [`TICK`] removals; false once
    /// it asked to stop.
    fn going(&mut self, removed_here: u64) -> bool {
        if self.stopped {
            return false;
        }
        let total = self.removed_before + removed_here;
        if let (Some(tick), true) = (self.r.tick, total >= self.next_tick) {
            self.next_tick = total + TICK;
            self.stopped = !tick(total);
        }
        !self.stopped
    }

    fn remove_dir(
        &mut self,
        parent: &Dir,
        name: &CStr,
        path: &Path,
        depth: usize,
        out: &mut Removal,
    ) {
        let be = self.r.be;
        let dir = match be.open_dir_at(parent, name) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Err(e) if not_a_directory(&e) => return out.leave(path.into(), Why::NotADirectory),
            Err(e) => return out.leave(path.into(), Why::Failed(format!("cannot open: {e}"))),
        };
        // A listing may miss entries that change while it is read: when
        // the directory is not empty after a walk that removed something,
        // walk it again (three times at most).
        for attempt in 0..3 {
            let mut here = Removal::default();
            self.empty(&dir, path, depth, &mut here);
            if self.stopped {
                return out.merge(here);
            }
            match be
                .rmdir_at(parent, name)
                .and_then(|()| self.nothing_left(&dir))
            {
                Ok(()) => {
                    here.removed += 1;
                    self.removed_before += 1;
                    return out.merge(here);
                }
                Err(e) if e.kind() == ErrorKind::NotFound => return out.merge(here),
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOTEMPTY)
                        && here.removed > 0
                        && attempt < 2 =>
                {
                    out.removed += here.removed;
                }
                Err(e) => {
                    if here.left.is_empty() {
                        here.leave(path.into(), Why::Failed(format!("cannot remove: {e}")));
                    }
                    return out.merge(here);
                }
            }
        }
    }

    /// Whether a directory just removed holds nothing: always on a file
    /// system (rmdir(2) removes only an empty one); on an object store a
    /// directory is a prefix, whose marker's DELETE succeeds whatever is
    /// still under it, so a listing must find nothing there for the
    /// prefix to count as removed (else ENOTEMPTY, as rmdir(2)).
    fn nothing_left(&self, dir: &Dir) -> std::io::Result<()> {
        let caps = self.r.be.capabilities();
        if caps.local || caps.discards {
            return Ok(());
        }
        let mut any = false;
        self.r.be.list_at(dir, &mut |_| {
            any = true;
            false
        })?;
        match any {
            true => Err(std::io::Error::from_raw_os_error(libc::ENOTEMPTY)),
            false => Ok(()),
        }
    }

    /// Removes what is ours in `dir`, depth first; files as they are
    /// listed (one entry in memory at a time), then the subdirectories.
    fn empty(&mut self, dir: &Dir, path: &Path, depth: usize, out: &mut Removal) {
        if depth > MAX_DEPTH {
            return out.leave(path.into(), Why::TooDeep);
        }
        let (be, ours) = (self.r.be, self.r.ours);
        let mut subdirs: Vec<Vec<u8>> = Vec::new();
        let mut cname = Vec::with_capacity(256);
        let mut removed = 0u64;
        let mut left = Vec::new();
        let listed = be.list_at(dir, &mut |e| {
            if !self.going(removed) {
                return false;
            }
            let leave = |why| Left {
                path: path.join(OsStr::from_bytes(&e.name)),
                why,
            };
            if !ours(&e.name, e.is_dir) {
                // A name ours only as a directory: a link planted there.
                let link = !e.is_dir && ours(&e.name, true);
                left.push(leave(if link {
                    Why::NotADirectory
                } else {
                    Why::NotOurs
                }));
            } else if e.is_dir {
                subdirs.push(e.name.clone());
            } else {
                match be.unlink_at(dir, c_name(&mut cname, &e.name)) {
                    Ok(()) => removed += 1,
                    Err(err) if err.kind() == ErrorKind::NotFound => {}
                    Err(err) => left.push(leave(Why::Failed(format!("cannot remove: {err}")))),
                }
            }
            true
        });
        self.removed_before += removed;
        out.removed += removed;
        out.left.extend(left);
        if let Err(e) = listed {
            return out.leave(path.into(), Why::Failed(format!("cannot list: {e}")));
        }
        for sub in subdirs {
            if self.stopped {
                break;
            }
            let p = path.join(OsStr::from_bytes(&sub));
            self.remove_dir(dir, c_name(&mut cname, &sub), &p, depth + 1, out);
        }
        if self.stopped {
            out.leave(path.into(), Why::Stopped);
        }
    }
}

/// `name` as a C string in a reused buffer (a listed name holds no NUL).
fn c_name<'b>(buf: &'b mut Vec<u8>, name: &[u8]) -> &'b CStr {
    buf.clear();
    buf.extend_from_slice(name);
    buf.push(0);
    CStr::from_bytes_with_nul(buf).unwrap_or(c"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{c_path, Posix};
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("iolab-remove-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn ours(name: &[u8], _is_dir: bool) -> bool {
        name.starts_with(b"mine")
    }

    /// Links planted at every depth lead to a directory of names the walk
    /// would remove; it removes the links' names it owns (as links), never
    /// what they lead to, and names everything else it left.
    #[test]
    fn never_follows_a_link_at_any_depth() {
        let root = scratch("links");
        let other = root.join("other");
        std::fs::create_dir_all(other.join("mine.d")).unwrap();
        std::fs::write(other.join("mine.1"), b"keep").unwrap();
        std::fs::write(other.join("mine.d/mine.2"), b"keep").unwrap();
        let run = root.join("run");
        std::fs::create_dir_all(run.join("mine.a/mine.b")).unwrap();
        std::fs::write(run.join("mine.a/mine.b/mine.f"), b"x").unwrap();
        symlink(&other, run.join("mine.link0")).unwrap();
        symlink(&other, run.join("mine.a/mine.link1")).unwrap();
        symlink(&other, run.join("mine.a/mine.b/mine.link2")).unwrap();
        symlink(&other, run.join("theirs")).unwrap();
        let top = Posix.open_dir(&c_path(&root).unwrap()).unwrap();
        let out = Remover::new(&Posix, &ours).remove_dir(&top, c"run", &run);
        assert!(other.join("mine.1").exists() && other.join("mine.d/mine.2").exists());
        assert!(!run.join("mine.a").exists() && !run.join("mine.link0").exists());
        assert!(run.join("theirs").is_symlink());
        assert_eq!(
            out.left,
            vec![Left {
                path: run.join("theirs"),
                why: Why::NotOurs
            }]
        );
        assert_eq!(out.removed, 6, "3 links, a file and 2 directories; not run");
        assert!(out.confirmed());
        // The top directory itself a link: not followed, named.
        std::fs::remove_dir_all(&run).unwrap();
        symlink(&other, &run).unwrap();
        let out = Remover::new(&Posix, &ours).remove_dir(&top, c"run", &run);
        assert_eq!(
            out.left,
            vec![Left {
                path: run.clone(),
                why: Why::NotADirectory
            }]
        );
        assert!(other.join("mine.1").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A link that takes the place of a directory after it was listed
    /// (the race `rm -r` guards against) is refused when it is opened.
    #[test]
    fn a_directory_swapped_for_a_link_is_not_entered() {
        let root = scratch("swap");
        let other = root.join("other");
        std::fs::create_dir_all(other.join("mine.x")).unwrap();
        std::fs::create_dir_all(root.join("run/mine.d")).unwrap();
        let top = Posix.open_dir(&c_path(&root).unwrap()).unwrap();
        let run = Posix.open_dir_at(&top, c"run").unwrap();
        std::fs::remove_dir(root.join("run/mine.d")).unwrap();
        symlink(&other, root.join("run/mine.d")).unwrap();
        let e = Posix.open_dir_at(&run, c"mine.d").unwrap_err();
        assert!(not_a_directory(&e), "{e}");
        let e = Posix.open_dir_at(&top, c"run/mine.d/mine.x").unwrap_err();
        assert!(not_a_directory(&e), "{e}");
        assert!(other.join("mine.x").is_dir());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn counts_what_it_would_remove_and_stops_when_told() {
        let root = scratch("count");
        std::fs::create_dir_all(root.join("run/mine.d")).unwrap();
        for i in 0..3000 {
            std::fs::write(root.join(format!("run/mine.d/mine.{i}")), b"").unwrap();
        }
        std::fs::write(root.join("run/other"), b"").unwrap();
        let top = Posix.open_dir(&c_path(&root).unwrap()).unwrap();
        let r = Remover::new(&Posix, &ours);
        assert_eq!(r.count_dir(&top, c"run"), 3002);
        let stop = |n: u64| n < 2048;
        let out =
            Remover::new(&Posix, &ours)
                .on_tick(&stop)
                .remove_dir(&top, c"run", &root.join("run"));
        assert_eq!(out.removed, 2048, "stopped at the second tick");
        assert!(!out.confirmed(), "{:?}", out.left);
        assert!(out.left.iter().any(|l| l.why == Why::Stopped));
        let out = Remover::new(&Posix, &ours).remove_dir(&top, c"run", &root.join("run"));
        assert_eq!(out.removed, 3000 - 2048 + 1);
        assert_eq!(out.left.len(), 1, "{:?}", out.left);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A backend named by paths (as S3): the default `*_at` calls join
    /// paths; a listing that fails is reported, never taken for empty.
    #[test]
    fn a_failed_listing_is_not_a_removal() {
        let root = scratch("unlisted");
        std::fs::create_dir_all(root.join("run/mine.d")).unwrap();
        std::fs::write(root.join("run/mine.d/mine.1"), b"").unwrap();
        let be = Unlistable;
        let top = be.open_dir(&c_path(&root).unwrap()).unwrap();
        assert!(top.path().is_some());
        let out = Remover::new(&be, &ours).remove_dir(&top, c"run", &root.join("run"));
        assert!(!out.confirmed());
        assert!(
            out.left[0].to_string().contains("cannot list"),
            "{:?}",
            out.left
        );
        assert!(root.join("run/mine.d/mine.1").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// POSIX by paths, whose listings fail.
    struct Unlistable;
    impl Backend for Unlistable {
        fn name(&self) -> &'static str {
            "unlistable"
        }
        fn capabilities(&self) -> crate::Capabilities {
            Posix.capabilities()
        }
        fn mkdir(&self, p: &CStr, m: u32) -> std::io::Result<()> {
            Posix.mkdir(p, m)
        }
        fn rmdir(&self, p: &CStr) -> std::io::Result<()> {
            Posix.rmdir(p)
        }
        fn open(&self, p: &CStr, o: crate::OpenOptions) -> std::io::Result<crate::Handle> {
            Posix.open(p, o)
        }
        fn close(&self, h: crate::Handle) -> std::io::Result<()> {
            Posix.close(h)
        }
        fn write_at(&self, h: &crate::Handle, b: &[u8], o: u64) -> std::io::Result<usize> {
            Posix.write_at(h, b, o)
        }
        fn read_at(&self, h: &crate::Handle, b: &mut [u8], o: u64) -> std::io::Result<usize> {
            Posix.read_at(h, b, o)
        }
        fn fsync(&self, h: &crate::Handle) -> std::io::Result<()> {
            Posix.fsync(h)
        }
        fn fdatasync(&self, h: &crate::Handle) -> std::io::Result<()> {
            Posix.fdatasync(h)
        }
        fn stat(&self, p: &CStr) -> std::io::Result<crate::Stat> {
            Posix.stat(p)
        }
        fn fstat(&self, h: &crate::Handle) -> std::io::Result<crate::Stat> {
            Posix.fstat(h)
        }
        fn unlink(&self, p: &CStr) -> std::io::Result<()> {
            Posix.unlink(p)
        }
        fn rename(&self, a: &CStr, b: &CStr) -> std::io::Result<()> {
            Posix.rename(a, b)
        }
        fn mknod(&self, p: &CStr) -> std::io::Result<()> {
            Posix.mknod(p)
        }
        fn list(&self, _p: &CStr) -> std::io::Result<Vec<crate::DirEntry>> {
            Err(std::io::Error::new(ErrorKind::TimedOut, "timed out"))
        }
        fn preallocate(&self, h: &crate::Handle, o: u64, l: u64) -> std::io::Result<()> {
            Posix.preallocate(h, o, l)
        }
        fn sync_all(&self) {}
    }
}
