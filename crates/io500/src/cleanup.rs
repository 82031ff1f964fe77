//! Removal of what a run leaves under its datadir: at the end of every
//! run (phases that were skipped or failed leave data), and for
//! `--cleanup` after a killed run. Only names iolab's phases make are
//! removed; anything else is left and reported, never deleted.

use crate::phase::Layout;
use iolab_backend::{c_path, Backend};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// Removes everything the phases made under `layout`'s datadir, then
/// the phase directories, the timestamp and stonewall files when empty
/// or ours. Returns what had to stay (not ours, or not removable).
pub fn remove_run_data(be: &dyn Backend, layout: &Layout) -> Vec<PathBuf> {
    let mut left = Vec::new();
    for top in RUN_DIRS {
        let dir = layout.path(top);
        if exists(be, &dir) {
            remove_ours(be, top, &dir, &mut left);
            rmdir(be, &dir, &mut left);
        }
    }
    let ts = layout.timestamp_file();
    if exists(be, &ts) {
        if let Err(e) = c_path(&ts).and_then(|c| be.unlink(&c)) {
            left.push(note(&ts, &e));
        }
    }
    // mdtest's stonewall files are local files (see Layout::private_dir).
    for f in ["mdtest-easy", "mdtest-hard"].map(|b| layout.stonewall_file(b)) {
        match std::fs::remove_file(&f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => left.push(note(&f, &e)),
            _ => {}
        }
    }
    left
}

/// `--cleanup`: removes what the phases make under `datadir` and, when
/// `timestamped`, under each of its timestamped directories (which go
/// too once empty). Returns what had to stay.
pub fn cleanup_datadir(
    be: &dyn Backend,
    datadir: &Path,
    timestamped: bool,
    private_dir: &Path,
) -> Vec<PathBuf> {
    let mut dirs = vec![datadir.to_path_buf()];
    if timestamped {
        if let Ok(c) = c_path(datadir) {
            let _ = be.list_each(&c, &mut |e| {
                let name = String::from_utf8_lossy(&e.name);
                if e.is_dir && is_stamp(&name) {
                    dirs.push(datadir.join(name.as_ref()));
                }
                true
            });
        }
    }
    let mut left = Vec::new();
    for d in dirs {
        let layout = Layout {
            datadir: d.clone(),
            private_dir: private_dir.to_path_buf(),
        };
        left.extend(remove_run_data(be, &layout));
        if d != datadir {
            // Only a run's own timestamped directory goes, once empty.
            let _ = c_path(&d).and_then(|c| be.rmdir(&c));
        }
    }
    left
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

fn note(p: &Path, e: &std::io::Error) -> PathBuf {
    PathBuf::from(format!("{} ({e})", p.display()))
}

fn exists(be: &dyn Backend, p: &Path) -> bool {
    c_path(p).and_then(|c| be.exists(&c)).unwrap_or(false)
}

fn rmdir(be: &dyn Backend, dir: &Path, left: &mut Vec<PathBuf>) {
    if let Err(e) = c_path(dir).and_then(|c| be.rmdir(&c)) {
        left.push(note(dir, &e));
    }
}

/// Removes the entries of `dir` that are ours, depth first. Files are
/// removed while the directory is read (one entry in memory at a time);
/// a second pass catches entries a listing skipped while it changed.
fn remove_ours(be: &dyn Backend, top: &str, dir: &Path, left: &mut Vec<PathBuf>) {
    let Ok(cdir) = c_path(dir) else { return };
    for _pass in 0..3 {
        let mut subdirs = Vec::new();
        let mut removed = 0u64;
        let mut path = dir.as_os_str().as_bytes().to_vec();
        let base = path.len();
        let listed = be.list_each(&cdir, &mut |e| {
            if !ours(top, &e.name, e.is_dir) {
                return true;
            }
            if e.is_dir {
                subdirs.push(dir.join(OsStr::from_bytes(&e.name)));
                return true;
            }
            path.truncate(base);
            path.push(b'/');
            path.extend_from_slice(&e.name);
            if let Ok(c) = c_path(Path::new(OsStr::from_bytes(&path))) {
                removed += u64::from(be.unlink(&c).is_ok());
            }
            true
        });
        if let Err(e) = listed {
            left.push(note(dir, &e));
            return;
        }
        for sub in &subdirs {
            remove_ours(be, top, sub, left);
            if c_path(sub).and_then(|c| be.rmdir(&c)).is_ok() {
                removed += 1;
            }
        }
        if removed == 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_look_like_the_app_s() {
        assert!(is_stamp("2025.11.25-18.58.35"));
        assert!(!is_stamp("2025.11.25-18.58.3x") && !is_stamp("data"));
    }

    #[test]
    fn removes_ours_and_keeps_the_rest() {
        let be = iolab_backend::by_name("posix").unwrap();
        let root = std::env::temp_dir().join(format!("iolab-io500-clean-{}", std::process::id()));
        let l = Layout {
            datadir: root.clone(),
            private_dir: root.clone(),
        };
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
        let left = remove_run_data(&*be, &l);
        // md-workbench's sets go; a directory not named like one stays.
        assert!(root.join("mdworkbench/0_x/file-1").exists());
        assert!(!root.join("mdworkbench/1_9").exists());
        std::fs::remove_dir_all(root.join("mdworkbench")).unwrap();
        let left: Vec<_> = left
            .into_iter()
            .filter(|p| !p.display().to_string().contains("mdworkbench"))
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(root.join("ior-hard/precious").exists());
        assert!(!root.join("mdtest-hard").exists() && !root.join("ior-easy").exists());
        assert!(!root.join("ior-hard/file").exists() && !root.join("timestampfile").exists());
        // --cleanup with timestamp-datadir: each timestamped run directory.
        let stamped = root.join("2025.11.25-18.58.35");
        std::fs::create_dir_all(stamped.join("ior-hard")).unwrap();
        std::fs::write(stamped.join("ior-hard/file"), b"x").unwrap();
        std::fs::create_dir_all(root.join("not-a-stamp/ior-hard")).unwrap();
        std::fs::write(root.join("not-a-stamp/ior-hard/file"), b"x").unwrap();
        let left = cleanup_datadir(&*be, &root, true, &root);
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(!stamped.exists() && root.join("not-a-stamp/ior-hard/file").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
