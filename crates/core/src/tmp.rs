//! Private temporary directories: a fresh directory of mode 0700 with a
//! random name (mkdtemp(3)) under the temporary directory, removed with
//! everything in it when dropped. A shared /tmp then gives nobody a name
//! to plant a link at beforehand, as `/tmp/tool-PID` names do, and what
//! the run writes inside cannot be reached by other users.
//!
//! ```
//! let d = iolab_core::tmp::PrivateDir::new("iolab-doc").unwrap();
//! std::fs::write(d.path().join("x"), b"1").unwrap();
//! let p = d.path().to_path_buf();
//! drop(d);
//! assert!(!p.exists());
//! ```

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// A directory this process made for itself; removed on drop.
#[derive(Debug)]
pub struct PrivateDir(PathBuf);

impl PrivateDir {
    /// Makes `TMPDIR/PREFIX-XXXXXX` (random, mode 0700).
    pub fn new(prefix: &str) -> std::io::Result<PrivateDir> {
        let mut template = std::env::temp_dir()
            .join(format!("{prefix}-XXXXXX"))
            .into_os_string()
            .into_vec();
        template.push(0);
        // SAFETY: template is a writable, NUL-terminated buffer ending in
        // XXXXXX, which mkdtemp fills in place; it is not used meanwhile.
        let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        template.pop();
        Ok(PrivateDir(PathBuf::from(OsString::from_vec(template))))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
