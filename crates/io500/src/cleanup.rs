//! Removal of what a run leaves under its datadir: at the end of every
//! run (phases that were skipped or failed leave data), and for
//! `--cleanup` after a killed run. Only names iolab's phases make are
//! removed; anything else is left and reported, never deleted. Below the
//! datadir the user named nothing is followed: every directory is opened
//! from its parent without following a symbolic link and every name is
//! removed relative to it ([`iolab_backend::remove`]), so a phase
//! directory (or anything deeper) swapped for a link to other files is
//! named and left, and the files it leads to are not touched.

use crate::phase::Layout;
use iolab_backend::remove::{Left, Removal, Remover, Why};
use iolab_backend::{c_path, Backend, Dir};
use std::ffi::{CStr, CString};
use std::io::ErrorKind;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The phase directories under a datadir, made before the first phase.
pub const PHASE_DIRS: [&str; 4] = ["ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"];

/// Every directory a run may make under its datadir: the phase
/// directories and md-workbench's (made by its first phase, extended
/// mode only).
pub const RUN_DIRS: [&str; 5] = [
    "ior-easy",
    "ior-hard",
    "mdtest-easy",
    "mdtest-hard",
    crate::mdworkbench::DIR,
];

/// The file find compares with, in the datadir.
pub const TIMESTAMP_FILE: &str = "timestampfile";

/// The mdtest phases that keep a stonewall file (`<base>.stonewall`) in
/// the resultdir.
pub const STONEWALL_BASES: [&str; 2] = ["mdtest-easy", "mdtest-hard"];

/// Told how many entries a removal has removed so far (every 1024); a
/// false answer stops it (what it did not visit is then reported).
pub type Tick<'a> = Option<&'a (dyn Fn(u64) -> bool + Sync)>;

/// `N_M`: an md-workbench set (task N's set M).
fn is_set(name: &[u8]) -> bool {
    match name.iter().position(|&b| b == b'_') {
        Some(i) => {
            let (a, b) = (&name[..i], &name[i + 1..]);
            !a.is_empty()
                && !b.is_empty()
                && a.iter().all(u8::is_ascii_digit)
                && b.iter().all(u8::is_ascii_digit)
        }
        None => false,
    }
}

/// Whether `name` (directory or not) is one iolab's phases make in `top`.
fn ours(top: &str, name: &[u8], is_dir: bool) -> bool {
    let starts = |p: &[u8]| name.starts_with(p);
    match (top, is_dir) {
        ("ior-easy", false) => starts(b"ior_file_easy"),
        // IOR's -u: a directory per task, named by its number.
        ("ior-easy", true) => !name.is_empty() && name.iter().all(u8::is_ascii_digit),
        // On an object store, one object per transfer (`file-OFFSET-LENGTH`).
        ("ior-hard", false) => {
            name == b"file" || iolab_ior::file::chunk_of(b"file", name).is_some()
        }
        ("mdtest-easy" | "mdtest-hard", false) => starts(b"file.mdtest.") || starts(b"dir.mdtest."),
        ("mdtest-easy" | "mdtest-hard", true) => {
            starts(b"test-dir.") || starts(b"mdtest_tree") || starts(b"dir.mdtest.")
        }
        // md-workbench: sets `N_M` holding objects `file-I`.
        ("mdworkbench", true) => is_set(name),
        ("mdworkbench", false) => {
            name.len() > 5 && starts(b"file-") && name[5..].iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// Opens a run's datadir: the directory the user named is followed (it
/// may be a link), what lies below it (the timestamped directory of the
/// run) is not.
pub fn open_datadir(be: &dyn Backend, named: &Path, datadir: &Path) -> std::io::Result<Dir> {
    let top = be.open_dir(&c_path(named)?)?;
    match datadir.strip_prefix(named) {
        Ok(rel) if !rel.as_os_str().is_empty() => be.open_dir_at(&top, &c_path(rel)?),
        _ => Ok(top),
    }
}

/// What [`remove_run_data`] would remove under `data` (by listing only),
/// for its progress: every entry (the timestamp file only when
/// `timestamp`; of the directories in `kept` only what they hold), and
/// how many of them the phases made inside their directories (a run that
/// completed leaves none).
pub fn count_run_data(be: &dyn Backend, data: &Dir, timestamp: bool, kept: &[&str]) -> (u64, u64) {
    let (mut entries, mut inside) = (0, 0);
    for top in RUN_DIRS {
        let Ok(c) = CString::new(top) else { continue };
        let ours = move |n: &[u8], d: bool| ours(top, n, d);
        let n = Remover::new(be, &ours).count_dir(data, &c);
        let within = n.saturating_sub(1);
        entries += if kept.contains(&top) { within } else { n };
        inside += within;
    }
    // The datadir holds the phase directories and little else.
    let mut stamp = false;
    if timestamp {
        let _ = be.list_at(data, &mut |e| {
            stamp |= e.name == TIMESTAMP_FILE.as_bytes();
            !stamp
        });
    }
    (entries + u64::from(stamp), inside)
}

/// Removes everything the phases made under `data` (the open datadir,
/// `datadir` in messages), then the phase directories (those in `kept`,
/// which were there before the run, are emptied and stay) and, when
/// `timestamp` (the caller knows it is a run's), the timestamp file.
/// Returns what it removed and what had to stay, with why.
pub fn remove_run_data(
    be: &dyn Backend,
    data: &Dir,
    datadir: &Path,
    timestamp: bool,
    kept: &[&str],
    tick: Tick,
) -> Removal {
    let mut out = Removal::default();
    let done = AtomicU64::new(0);
    let total = |n: u64| tick.is_none_or(|t| t(done.load(Ordering::Relaxed) + n));
    for top in RUN_DIRS {
        let Ok(c) = CString::new(top) else { continue };
        let ours = move |n: &[u8], d: bool| ours(top, n, d);
        let r = Remover::new(be, &ours).on_tick(&total);
        let path = datadir.join(top);
        let here = match kept.contains(&top) {
            true => empty_dir(be, &r, data, &c, &path),
            false => r.remove_dir(data, &c, &path),
        };
        done.fetch_add(here.removed, Ordering::Relaxed);
        out.merge(here);
    }
    if !timestamp {
        return out;
    }
    let ts = datadir.join(TIMESTAMP_FILE);
    let gone = CString::new(TIMESTAMP_FILE).map_err(std::io::Error::other);
    match gone.and_then(|c| be.unlink_at(data, &c)) {
        Ok(()) => out.removed += 1,
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => out.left.push(Left {
            path: ts,
            why: Why::Failed(format!("cannot remove: {e}")),
        }),
    }
    out
}

/// Removes what is ours inside directory `name` of `data` and keeps the
/// directory (one the site made before the run, for its layout); a link
/// there is named and not followed, as [`Remover::remove_dir`] does.
fn empty_dir(be: &dyn Backend, r: &Remover, data: &Dir, name: &CStr, path: &Path) -> Removal {
    let mut out = Removal::default();
    let why = match be.open_dir_at(data, name) {
        Ok(dir) => return r.empty(&dir, path),
        Err(e) if e.kind() == ErrorKind::NotFound => return out,
        Err(e) if iolab_backend::not_a_directory(&e) => Why::NotADirectory,
        Err(e) => Why::Failed(format!("cannot open: {e}")),
    };
    out.left.push(Left {
        path: path.to_path_buf(),
        why,
    });
    out
}

/// mdtest's stonewall files of `bases` (of [`STONEWALL_BASES`]) in a
/// layout: local files of the resultdir (see Layout::private_dir). A
/// run names those its mdtest write phases made (it refused to start
/// when one was there); `--cleanup` those [`stonewall_left`] finds.
pub fn remove_stonewall_files(layout: &Layout, bases: &[&str]) -> Removal {
    let mut out = Removal::default();
    for f in bases.iter().map(|b| layout.stonewall_file(b)) {
        match std::fs::remove_file(&f) {
            Ok(()) => out.removed += 1,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => out.left.push(Left {
                path: f,
                why: Why::Failed(format!("cannot remove: {e}")),
            }),
        }
    }
    out
}

/// The stonewall files a killed run left in `layout`'s private
/// directory: each base whose file is a regular file that reads as
/// mdtest's record (a count). Any other entry of such a name (a link, a
/// user's notes) is not a run's: it is named in `out` and left.
pub fn stonewall_left(layout: &Layout, out: &mut Removal) -> Vec<&'static str> {
    let mut found = Vec::new();
    for base in STONEWALL_BASES {
        let f = layout.stonewall_file(base);
        let why = match std::fs::symlink_metadata(&f) {
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Ok(m) if m.is_file() && iolab_mdtest::stonewall::read(&f).is_ok() => {
                found.push(base);
                continue;
            }
            Ok(_) => Why::NotOurs,
            Err(e) => Why::Failed(format!("cannot look at it: {e}")),
        };
        out.left.push(Left { path: f, why });
    }
    found
}

/// Whether `dir` holds a timestamp file as a run leaves it (an empty
/// regular file), looked at without following a link (an object store
/// has none): Ok(false) when there is none, the reason to leave it when
/// something else has its name.
fn run_timestamp(be: &dyn Backend, dir: &Path) -> Result<bool, Why> {
    let f = dir.join(TIMESTAMP_FILE);
    let st = match be.capabilities().local {
        true => std::fs::symlink_metadata(&f).map(|m| (m.is_file(), m.len())),
        false => c_path(&f)
            .and_then(|c| be.stat(&c))
            .map(|s| (s.is_file, s.size)),
    };
    match st {
        Ok((true, 0)) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Ok(_) => Err(Why::NotOurs),
        Err(e) => Err(Why::Failed(format!("cannot look at it: {e}"))),
    }
}

/// [`run_timestamp`], naming in `out` what is left.
fn timestamp_left(be: &dyn Backend, dir: &Path, out: &mut Removal) -> bool {
    run_timestamp(be, dir).unwrap_or_else(|why| {
        let path = dir.join(TIMESTAMP_FILE);
        out.left.push(Left { path, why });
        false
    })
}

/// The run directories `--cleanup` visits in a datadir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs<'a> {
    /// The datadir alone (`timestamp-datadir = FALSE`).
    Datadir,
    /// The datadir and each directory in it named as the app names a
    /// run by its start time (`timestamp-datadir = TRUE`).
    Stamped,
    /// Only the run directory of this name in the datadir (`--timestamp
    /// NAME` with `timestamp-datadir = TRUE`): a name the user chose
    /// cannot be told from other directories, so it is visited only
    /// when named.
    Named(&'a str),
}

impl Runs<'_> {
    /// Whether the datadir itself is visited (not when one run is named).
    fn top(self) -> bool {
        !matches!(self, Runs::Named(_))
    }

    /// The run directories to visit in `data`.
    fn stamps(self, be: &dyn Backend, data: &Dir) -> Vec<String> {
        match self {
            Runs::Datadir => Vec::new(),
            Runs::Stamped => stamps(be, data),
            Runs::Named(n) => vec![n.to_string()],
        }
    }
}

/// `--cleanup`: removes what the phases make under `datadir` and, as
/// `runs` says, under its timestamped directories (which go too once
/// empty), and the stonewall files in `private_dir`; private files that
/// are not as a run leaves them stay, named.
pub fn cleanup_datadir(
    be: &dyn Backend,
    datadir: &Path,
    runs: Runs,
    private_dir: &Path,
    tick: Tick,
) -> Removal {
    let layout = Layout {
        datadir: datadir.to_path_buf(),
        private_dir: private_dir.to_path_buf(),
    };
    let mut out = Removal::default();
    let bases = stonewall_left(&layout, &mut out);
    out.merge(remove_stonewall_files(&layout, &bases));
    let data = match c_path(datadir).and_then(|c| be.open_dir(&c)) {
        Ok(d) => d,
        Err(e) if e.kind() == ErrorKind::NotFound => return out,
        Err(e) => {
            out.left.push(Left {
                path: datadir.to_path_buf(),
                why: Why::Failed(format!("cannot open: {e}")),
            });
            return out;
        }
    };
    // The count told goes on across the timestamped directories.
    let done = AtomicU64::new(out.removed);
    let total = |n: u64| tick.is_none_or(|t| t(done.load(Ordering::Relaxed) + n));
    let remove = |d: &Dir, path: &Path, out: &mut Removal| {
        let stamp = timestamp_left(be, path, out);
        let r = remove_run_data(be, d, path, stamp, &[], Some(&total));
        done.fetch_add(r.removed, Ordering::Relaxed);
        out.merge(r);
    };
    if runs.top() {
        remove(&data, datadir, &mut out);
    }
    for stamp in runs.stamps(be, &data) {
        let Ok(c) = CString::new(stamp.as_str()) else {
            continue;
        };
        let path = datadir.join(&stamp);
        match be.open_dir_at(&data, &c) {
            Ok(d) => remove(&d, &path, &mut out),
            // Swapped for a link since it was listed: not followed.
            Err(e) if iolab_backend::not_a_directory(&e) => {
                out.left.push(Left {
                    path,
                    why: Why::NotADirectory,
                });
                continue;
            }
            Err(_) => continue,
        }
        // Only a run's own timestamped directory goes, once empty.
        if be.rmdir_at(&data, &c).is_ok() {
            out.removed += 1;
        }
    }
    out
}

/// What [`cleanup_datadir`] would remove, by listing (as
/// [`count_run_data`]): the stonewall files in `private_dir` it would
/// take, and what is ours in the datadir and in the run directories
/// `runs` names, each of those counted too.
pub fn count_datadir(be: &dyn Backend, datadir: &Path, runs: Runs, private_dir: &Path) -> u64 {
    let layout = Layout {
        datadir: datadir.to_path_buf(),
        private_dir: private_dir.to_path_buf(),
    };
    let walls = stonewall_left(&layout, &mut Removal::default()).len() as u64;
    let Ok(data) = c_path(datadir).and_then(|c| be.open_dir(&c)) else {
        return walls;
    };
    let ours = |dir: &Path| run_timestamp(be, dir) == Ok(true);
    let mut entries = walls;
    if runs.top() {
        entries += count_run_data(be, &data, ours(datadir), &[]).0;
    }
    for stamp in runs.stamps(be, &data) {
        let Ok(c) = CString::new(stamp.as_str()) else {
            continue;
        };
        if let Ok(d) = be.open_dir_at(&data, &c) {
            entries += count_run_data(be, &d, ours(&datadir.join(stamp)), &[]).0 + 1;
        }
    }
    entries
}

/// The timestamped directories in `data` (real directories only: a link
/// of such a name is not one).
fn stamps(be: &dyn Backend, data: &Dir) -> Vec<String> {
    let mut found = Vec::new();
    let _ = be.list_at(data, &mut |e| {
        let name = String::from_utf8_lossy(&e.name);
        if e.is_dir && is_stamp(&name) {
            found.push(name.into_owned());
        }
        true
    });
    found
}

/// `2025.11.25-18.58.35`: how IO500 names its timestamped directories.
pub fn is_stamp(n: &str) -> bool {
    n.len() == 19
        && n.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 | 13 | 16 => b == b'.',
            10 => b == b'-',
            _ => b.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    #[test]
    fn timestamps_look_like_the_app_s() {
        assert!(is_stamp("2025.11.25-18.58.35"));
        assert!(!is_stamp("2025.11.25-18.58.3x") && !is_stamp("data"));
    }

    fn remove_all(root: &Path) -> Removal {
        let be = iolab_backend::Posix;
        let data = open_datadir(&be, root, root).unwrap();
        remove_run_data(&be, &data, root, true, &[], None)
    }

    fn scratch(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("iolab-io500-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn removes_ours_and_keeps_the_rest() {
        let be = iolab_backend::Posix;
        let root = scratch("clean");
        let tree = root.join("mdtest-hard/test-dir.0-0/mdtest_tree.0");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("file.mdtest.0.1"), b"x").unwrap();
        std::fs::create_dir_all(root.join("ior-easy/3")).unwrap();
        std::fs::write(root.join("ior-easy/3/ior_file_easy.00000003"), b"x").unwrap();
        std::fs::create_dir_all(root.join("ior-hard")).unwrap();
        std::fs::write(root.join("ior-hard/file"), b"x").unwrap();
        std::fs::write(root.join("ior-hard/precious"), b"x").unwrap();
        std::fs::write(root.join("timestampfile"), b"").unwrap();
        std::fs::create_dir_all(root.join("mdworkbench/1_9")).unwrap();
        std::fs::write(root.join("mdworkbench/1_9/file-12"), b"x").unwrap();
        std::fs::create_dir_all(root.join("mdworkbench/0_x")).unwrap();
        std::fs::write(root.join("mdworkbench/0_x/file-1"), b"x").unwrap();
        let data = open_datadir(&be, &root, &root).unwrap();
        assert_eq!(count_run_data(&be, &data, true, &[]), (13, 8));
        let out = remove_all(&root);
        assert_eq!(out.removed, 11, "{out:?}");
        // md-workbench's sets go; a directory not named like one stays.
        assert!(root.join("mdworkbench/0_x/file-1").exists());
        assert!(!root.join("mdworkbench/1_9").exists());
        std::fs::remove_dir_all(root.join("mdworkbench")).unwrap();
        let left: Vec<_> = out
            .left
            .iter()
            .filter(|l| !l.path.display().to_string().contains("mdworkbench"))
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(out.confirmed());
        assert!(root.join("ior-hard/precious").exists());
        assert!(!root.join("mdtest-hard").exists() && !root.join("ior-easy").exists());
        assert!(!root.join("ior-hard/file").exists() && !root.join("timestampfile").exists());
        // --cleanup with timestamp-datadir: each timestamped run directory.
        let stamped = root.join("2025.11.25-18.58.35");
        std::fs::create_dir_all(stamped.join("ior-hard")).unwrap();
        std::fs::write(stamped.join("ior-hard/file"), b"x").unwrap();
        std::fs::create_dir_all(root.join("not-a-stamp/ior-hard")).unwrap();
        std::fs::write(root.join("not-a-stamp/ior-hard/file"), b"x").unwrap();
        let out = cleanup_datadir(&be, &root, Runs::Stamped, &root, None);
        assert_eq!(out.left.len(), 1, "{:?}", out.left);
        assert!(!stamped.exists() && root.join("not-a-stamp/ior-hard/file").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A phase directory, a test directory, a tree and a set swapped for
    /// links to io500-looking files elsewhere: nothing there is touched,
    /// each link is named as such.
    #[test]
    fn links_below_the_datadir_are_never_followed() {
        let root = scratch("links");
        let (data, other) = (root.join("data"), root.join("other"));
        for f in [
            "ior_file_easy.00000000",
            "file",
            "test-dir.0-0/mdtest_tree.0/file.mdtest.0.1",
            "mdtest_tree.0/file.mdtest.0.2",
            "0_0/file-1",
            "file-3",
        ] {
            let p = other.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"keep").unwrap();
        }
        let before = files(&other);
        std::fs::create_dir_all(data.join("mdtest-hard/test-dir.0-0")).unwrap();
        std::fs::create_dir_all(data.join("mdworkbench")).unwrap();
        symlink(&other, data.join("ior-easy")).unwrap();
        symlink(&other, data.join("ior-hard")).unwrap();
        symlink(&other, data.join("mdtest-easy")).unwrap();
        symlink(&other, data.join("mdtest-hard/test-dir.0-1")).unwrap();
        symlink(&other, data.join("mdtest-hard/test-dir.0-0/mdtest_tree.0")).unwrap();
        symlink(other.join("0_0"), data.join("mdworkbench/1_1")).unwrap();
        let out = cleanup_datadir(&iolab_backend::Posix, &data, Runs::Stamped, &root, None);
        assert_eq!(files(&other), before, "files behind the links were touched");
        let links: Vec<String> = out
            .left
            .iter()
            .filter(|l| l.why == Why::NotADirectory)
            .map(|l| l.path.strip_prefix(&data).unwrap().display().to_string())
            .collect();
        assert_eq!(
            links,
            [
                "ior-easy",
                "ior-hard",
                "mdtest-easy",
                "mdtest-hard/test-dir.0-1",
                "mdtest-hard/test-dir.0-0/mdtest_tree.0",
                "mdworkbench/1_1"
            ],
            "{:?}",
            out.left
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Every file under `dir` with its bytes, following nothing.
    pub(crate) fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                out.extend(files(&e.path()));
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
            }
        }
        out.sort();
        out
    }
}
