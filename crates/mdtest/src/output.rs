//! The user's output files (--json, --csv, -x): checked for writability
//! before any I/O, written atomically afterwards. These are not the
//! storage under test, so they use std::fs, not the backend.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Checks that `path` can be written later without touching an existing
/// file: it is not a directory, its parent is a directory we may write
/// in, and an existing file is writable. The error names the path.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("{shown}: is a directory"));
    }
    if path.exists() {
        return OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| format!("{shown}: cannot be written: {e}"));
    }
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(format!(
            "{shown}: the directory {} does not exist",
            parent.display()
        ));
    }
    // A probe file proves what access(2) cannot: a read-only mount, ACLs.
    let probe = temp_name(path, "iolab-probe");
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("{shown}: cannot create a file there: {e}")),
    }
}

/// Writes `bytes` to a temporary file next to `path`, then renames it
/// over `path`; the temporary file never outlives a failure.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A device, FIFO or other special file is written in place: renaming
    // over it would replace /dev/stdout or a named pipe with a file.
    if path.exists() && !path.metadata()?.is_file() {
        return OpenOptions::new().write(true).open(path)?.write_all(bytes);
    }
    let tmp = temp_name(path, "iolab-tmp");
    let r = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temp_name(path: &Path, tag: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{tag}.{}", std::process::id()));
    parent_of(path).join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_checks_name_the_path() {
        let dir = std::env::temp_dir().join(format!("iolab-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_writable(&dir.join("a.json")).is_ok());
        assert!(!dir.join("a.json").exists(), "the check creates nothing");
        assert!(check_writable(&dir).unwrap_err().contains("directory"));
        let e = check_writable(Path::new("/nonexistent-dir/x.json")).unwrap_err();
        assert!(e.contains("/nonexistent-dir"), "{e}");
        write_atomically(&dir.join("b"), b"hi").unwrap();
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"hi");
        assert!(write_atomically(Path::new("/nonexistent-dir/b"), b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
