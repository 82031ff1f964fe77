//! Lustre placement for the target survey: on a Lustre mount, ost-survey
//! measures each OST by writing one file striped on that OST alone. The
//! OSTs come from `lfs osts MOUNT` and each file is created by
//! `lfs setstripe -c 1 -i INDEX FILE` before it is opened, as the kit's
//! script does. `lfs` is the one interface Lustre gives for this (the
//! layout ioctl needs Lustre's headers), so it is run as a command: once
//! per OST when the survey starts, never inside the timed I/O.
//!
//! ```
//! let osts = iolab_survey::lustre::parse_osts(
//!     "OBDS:\n0: fs-OST0000_UUID ACTIVE\n1: fs-OST0001_UUID INACTIVE\n2: fs-OST0002_UUID ACTIVE\n",
//! );
//! assert_eq!(osts.active, vec![0, 2]);
//! assert_eq!(osts.inactive, vec![1]);
//! ```

use std::path::Path;
use std::process::{Command, Stdio};

/// `f_type` of a Lustre client mount (statfs(2)).
pub const LUSTRE_SUPER_MAGIC: i64 = 0x0BD0_0BD0;

/// The `lfs` command: `$LFS` when set (a site's own path), else `lfs`
/// from PATH.
pub fn lfs_command() -> String {
    std::env::var("LFS")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "lfs".to_string())
}

/// True when `path` is on a Lustre client mount.
pub fn is_lustre(path: &Path) -> bool {
    let Ok(c) = iolab_backend::c_path(path) else {
        return false;
    };
    // SAFETY: an all-zero statfs is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is a valid, writable statfs.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    rc == 0 && st.f_type as i64 == LUSTRE_SUPER_MAGIC
}

/// The OSTs `lfs osts` lists, by index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Osts {
    /// Indices of active OSTs, in the order listed.
    pub active: Vec<u32>,
    /// Indices listed as anything but ACTIVE (left out of the survey).
    pub inactive: Vec<u32>,
}

/// Reads `lfs osts` output: lines `INDEX: NAME_UUID STATE`; other lines
/// (the `OBDS:` heading) are skipped.
pub fn parse_osts(text: &str) -> Osts {
    let mut out = Osts::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(index) = words
            .next()
            .and_then(|w| w.strip_suffix(':'))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        match (words.next(), words.next()) {
            (Some(_uuid), Some("ACTIVE")) => out.active.push(index),
            (Some(_uuid), Some(_state)) => out.inactive.push(index),
            _ => {}
        }
    }
    out
}

/// Lists the OSTs of the file system mounted at `mount`; the error says
/// which command failed and how.
pub fn osts(mount: &Path) -> Result<Osts, String> {
    let lfs = lfs_command();
    let out = Command::new(&lfs)
        .arg("osts")
        .arg(mount)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run '{lfs} osts': {e} (set LFS to lfs's path)"))?;
    if !out.status.success() {
        return Err(format!(
            "'{lfs} osts {}' failed ({}): {}",
            mount.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(parse_osts(&String::from_utf8_lossy(&out.stdout)))
}

/// Creates `file` (which must not exist) with one stripe on OST `index`.
pub fn place(file: &Path, index: u32) -> std::io::Result<()> {
    let lfs = lfs_command();
    let out = Command::new(&lfs)
        .args(["setstripe", "-c", "1", "-i", &index.to_string()])
        .arg(file)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "'{lfs} setstripe -c 1 -i {index}' failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_and_odd_lines_are_skipped() {
        let o = parse_osts("OBDS:\n\n 3: a-OST0003_UUID ACTIVE\nnot: a line\n7: b\n");
        assert_eq!(o.active, vec![3]);
        assert_eq!(o.inactive, Vec::<u32>::new());
    }

    #[test]
    fn a_tmpfs_is_not_lustre() {
        assert!(!is_lustre(Path::new("/proc")));
    }
}
