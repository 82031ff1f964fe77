//! Lustre placement for the target survey: on a Lustre mount, ost-survey
//! measures each OST by writing one file striped on that OST alone. The
//! OSTs come from `lfs osts MOUNT` and each file is created by
//! `lfs setstripe -c 1 -i INDEX FILE` before it is opened, as the kit's
//! script does. The mds-survey finds MDTs with `lfs mdts MOUNT`, makes
//! its directories on one with `lfs mkdir -i INDEX DIR` and stripes the
//! files made in them with `lfs setstripe -c COUNT DIR`. `lfs` is the one
//! interface Lustre gives for this (the layout ioctls need Lustre's
//! headers), so it is run as a command: when a survey sets up, never
//! inside the timed operations.
//!
//! ```
//! let osts = iolab_survey::lustre::parse_osts(
//!     "OBDS:\n0: fs-OST0000_UUID ACTIVE\n1: fs-OST0001_UUID INACTIVE\n2: fs-OST0002_UUID ACTIVE\n",
//! );
//! assert_eq!(osts.active, vec![0, 2]);
//! assert_eq!(osts.inactive, vec![1]);
//! ```

use iolab_launch::{Finished, Remote, WaitError};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Longest an `lfs` command may take: a healthy file system answers in
/// well under a second, one with an unreachable server can block for
/// good, which must not hang the survey before it starts.
pub const LFS_TIMEOUT: Duration = Duration::from_secs(60);

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

/// The OSTs `lfs osts` (or the MDTs `lfs mdts`) lists, by index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Osts {
    /// Indices of active OSTs, in the order listed.
    pub active: Vec<u32>,
    /// Indices listed as anything but ACTIVE (left out of the survey).
    pub inactive: Vec<u32>,
    /// Every listed index with its name (the UUID without `_UUID`,
    /// e.g. `lustre-MDT0000`), in the order listed.
    pub names: Vec<(u32, String)>,
}

impl Osts {
    /// The index of the target named `name` (e.g. `lustre-MDT0001`).
    pub fn index_of(&self, name: &str) -> Option<u32> {
        self.names.iter().find(|(_, n)| n == name).map(|(i, _)| *i)
    }
}

/// Reads `lfs osts` / `lfs mdts` output: lines `INDEX: NAME_UUID STATE`;
/// other lines (the `OBDS:` / `MDTS:` heading) are skipped.
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
        let (Some(uuid), Some(state)) = (words.next(), words.next()) else {
            continue;
        };
        match state {
            "ACTIVE" => out.active.push(index),
            _ => out.inactive.push(index),
        }
        let name = uuid.strip_suffix("_UUID").unwrap_or(uuid);
        out.names.push((index, name.to_string()));
    }
    out
}

/// Lists the OSTs of the file system mounted at `mount`; the error says
/// which command failed and how.
pub fn osts(mount: &Path) -> Result<Osts, crate::SurveyError> {
    list("osts", mount)
}

/// Lists the MDTs of the file system mounted at `mount` (`lfs mdts`).
pub fn mdts(mount: &Path) -> Result<Osts, crate::SurveyError> {
    list("mdts", mount)
}

fn list(what: &str, mount: &Path) -> Result<Osts, crate::SurveyError> {
    let lfs = lfs_command();
    let mut cmd = Command::new(&lfs);
    cmd.arg(what).arg(mount);
    let out = bounded_output(cmd, LFS_TIMEOUT).map_err(|source| crate::SurveyError::LfsRun {
        lfs: lfs.to_string(),
        what: what.to_string(),
        source,
    })?;
    if !out.status.success() {
        return Err(crate::SurveyError::LfsFailed {
            lfs: lfs.to_string(),
            what: what.to_string(),
            mount: mount.to_path_buf(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(parse_osts(&String::from_utf8_lossy(&out.stdout)))
}

/// Runs `lfs ARGS... PATH`; the error names the command and what lfs said.
fn run_lfs(args: &[&str], path: &Path) -> std::io::Result<()> {
    let lfs = lfs_command();
    let mut cmd = Command::new(&lfs);
    cmd.args(args).arg(path);
    let out = bounded_output(cmd, LFS_TIMEOUT)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot run '{lfs}': {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "'{lfs} {} {}' failed ({}): {}",
        args.join(" "),
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// Runs `cmd` to its end, at most `limit`: then it is stopped and the
/// error is TimedOut. launch's local runner does the work: the command in
/// its own process group, its output read as it comes (a chatty one
/// cannot block on a full pipe), killed with iolab.
fn bounded_output(cmd: Command, limit: Duration) -> std::io::Result<Finished> {
    let argv: Vec<OsString> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(OsString::from)
        .collect();
    Remote::spawn_local(&argv, None)?
        .wait(limit, || false)
        .map_err(|e| match e {
            WaitError::Io(e) => e,
            _ => std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {} s", limit.as_secs_f64()),
            ),
        })
}

/// Creates `file` (which must not exist) with one stripe on OST `index`.
pub fn place(file: &Path, index: u32) -> std::io::Result<()> {
    run_lfs(&["setstripe", "-c", "1", "-i", &index.to_string()], file)
}

/// Creates directory `dir` (which must not exist) on MDT `index`.
pub fn mkdir_on(dir: &Path, index: u32) -> std::io::Result<()> {
    run_lfs(&["mkdir", "-i", &index.to_string()], dir)
}

/// Gives directory `dir` a default layout of `count` stripes: every file
/// then created in it gets `count` OST objects.
pub fn stripe_dir(dir: &Path, count: u64) -> std::io::Result<()> {
    run_lfs(&["setstripe", "-c", &count.to_string()], dir)
}

/// A Lustre client mount: where, and the file system's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount point.
    pub path: std::path::PathBuf,
    /// The file system's name (`lustre` in `10.0.0.1@tcp:/lustre`).
    pub fsname: String,
}

/// The Lustre client mounts listed in `/proc/self/mounts` text.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            let (source, at, fstype) = (w.next()?, w.next()?, w.next()?);
            if fstype != "lustre" {
                return None;
            }
            let fsname = source.rsplit_once(":/")?.1;
            Some(Mount {
                path: unescape_mount_field(at).into(),
                fsname: fsname.to_string(),
            })
        })
        .collect()
}

/// `/proc/self/mounts` writes space, tab, newline and backslash in
/// names as `\ooo` octal escapes.
fn unescape_mount_field(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This machine's Lustre client mounts (none when /proc cannot be read).
pub fn mounts() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mounts")
        .map(|t| parse_mounts(&t))
        .unwrap_or_default()
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
    fn mdts_are_listed_with_their_names() {
        let o = parse_osts("MDTS:\n0: fs-MDT0000_UUID ACTIVE\n1: fs-MDT0001_UUID INACTIVE\n");
        assert_eq!(o.index_of("fs-MDT0001"), Some(1));
        assert_eq!(o.index_of("fs-MDT0002"), None);
        assert_eq!(o.active, vec![0]);
    }

    #[test]
    fn lustre_mounts_are_found_with_their_fs_names() {
        let m = parse_mounts(
            "tmpfs /tmp tmpfs rw 0 0\n\
             10.0.0.1@tcp:10.0.0.2@tcp:/scratch /mnt/my\\040lustre lustre rw,flock 0 0\n\
             mgs@o2ib:/home /home lustre rw 0 0\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].path, Path::new("/mnt/my lustre"));
        assert_eq!(m[0].fsname, "scratch");
        assert_eq!(m[1].fsname, "home");
    }

    #[test]
    fn a_command_that_does_not_answer_is_killed_at_the_limit() {
        let mut c = Command::new("sleep");
        c.arg("30");
        let t0 = std::time::Instant::now();
        let e = bounded_output(c, Duration::from_millis(200)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let o = bounded_output(c, Duration::from_secs(20)).unwrap();
        assert_eq!(
            (o.stdout.as_slice(), o.stderr.as_slice()),
            (&b"out\n"[..], &b"err\n"[..])
        );
        assert_eq!(o.status.code(), Some(3));
    }

    #[test]
    fn a_tmpfs_is_not_lustre() {
        assert!(!is_lustre(Path::new("/proc")));
    }
}
