//! What makes a layer's figures depend on more than the point that gave
//! them, looked up once on this machine and told to the user before the
//! qualification runs.
//!
//! One such thing is known: an ext4 without a journal does not reuse an
//! inode freed in the last minute (six while its inode table block is
//! not written back), for a better chance of recovery after a crash, and
//! every create walks past all of them in its block group. A metadata
//! point removes its files, so the creates of the points after it pay
//! for those removals: on a VM whose TMP was such an ext4, the same
//! 2,000-file point gave 1.1k to 80k creates a second (docs/qualify.md).
//! [`spread`] and [`crate::curves::metadata_dirs`] keep the points
//! apart where the file system allows it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A note for the metadata layer when `dir` lies on an ext4 without a
/// journal; None elsewhere, or when it cannot be told.
pub fn metadata(dir: &Path) -> Option<String> {
    let dev = ext4_without_journal(dir, Path::new("/sys"), Path::new("/proc"))?;
    Some(format!(
        "{} is on an ext4 without a journal ({dev}): it keeps inodes freed in the last minutes from reuse, and a create walks past them in its block group. qualify spreads the metadata points' directories over its block groups (made together before the first point, in a directory marked a top directory, chattr +T), so that no point lands where another point of this run freed its files, but one may land where another program or a qualification minutes before did, and a create limit may then not come again in a run alone (docs/qualify.md, \"A limit and its tool run alone\")",
        dir.display()
    ))
}

/// Ext2/3/4's "top of directory hierarchy" flag (`chattr +T`).
const FS_TOPDIR_FL: libc::c_int = 0x0002_0000;

/// Marks `dir` a top directory for ext2/3/4's block allocator (`chattr
/// +T`): the directories made in it are then spread over the file
/// system's block groups (Orlov's spreading, as for directories at its
/// root) instead of kept in the group of their parent, and the files
/// made in each of them go in its group. So the metadata points'
/// directories, all made in the qualification's files' directory
/// before the first point ([`crate::curves::metadata_dirs`]), each go
/// in the emptiest group (the fewest directories) found from their
/// name's hash, each one counting against its group for the next: no
/// point's creates walk past the inodes another point of the run freed
/// (the module doc). A group that another program, or a qualification
/// minutes before, freed may still be picked. Errs where the file
/// system has no such flag (tmpfs, xfs, NFS, Lustre: nothing to spread
/// there); `dir` is opened without following a link.
pub fn spread(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let d = open_dir(dir)?;
    let flags = flags_of(&d)? | FS_TOPDIR_FL;
    // SAFETY: FS_IOC_SETFLAGS reads one int (the kernel's ABI is an int
    // whatever the request's encoded size) from the pointer, which
    // points at `flags`, alive for the call.
    if unsafe { libc::ioctl(d.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `dir` is marked a top directory ([`spread`]).
pub fn spread_already(dir: &Path) -> bool {
    open_dir(dir)
        .and_then(|d| flags_of(&d))
        .is_ok_and(|f| f & FS_TOPDIR_FL != 0)
}

/// `dir` opened to ask its flags, a link at its name not followed.
fn open_dir(dir: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
}

/// The inode flags of an open file (`lsattr`'s).
fn flags_of(d: &std::fs::File) -> std::io::Result<libc::c_int> {
    use std::os::unix::io::AsRawFd;
    let mut flags: libc::c_int = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one int to the pointer, which
    // points at `flags`, alive for the call.
    if unsafe { libc::ioctl(d.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(flags)
}

/// The block device of the ext4 holding `dir`, when that ext4 has no
/// journal. The kernel lists every ext4 it mounted in `proc/fs/ext4/DEV`
/// and every journal in `proc/fs/jbd2/DEV-INODE`; `sys/dev/block/M:m`
/// names the device of `dir`'s device number (a file system on no block
/// device, tmpfs or NFS, has none there). The device number, not
/// mountinfo's source (`core::env::fs_info`), since a source may be
/// `/dev/root` or a mapper name where the kernel's lists say `dm-0`; and
/// ext2 or ext3 mounted by the ext4 driver keep inodes alike.
fn ext4_without_journal(dir: &Path, sys: &Path, proc: &Path) -> Option<String> {
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let link = std::fs::read_link(sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
    let name = link.file_name()?.to_str()?.to_string();
    if !proc.join("fs/ext4").join(&name).is_dir() {
        return None;
    }
    let prefix = format!("{name}-");
    let journaled = std::fs::read_dir(proc.join("fs/jbd2")).is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    });
    (!journaled).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    // An ext4 with and without a journal, in loop files: the qualify
    // integration tests (an_ext4_without_a_journal_is_noted_...).

    #[test]
    fn a_directory_spread_says_so_and_one_not_spread_does_not() {
        let scratch = iolab_core::tmp::PrivateDir::new("iolab-spread").unwrap();
        let d = scratch.path();
        assert!(!spread_already(d));
        // Ext2/3/4 take the flag, other file systems refuse it.
        assert_eq!(spread(d).is_ok(), spread_already(d));
        assert!(spread(&d.join("none")).is_err());
        std::os::unix::fs::symlink(d, d.join("link")).unwrap();
        assert!(spread(&d.join("link")).is_err(), "a link is not followed");
    }

    #[test]
    fn no_block_device_or_no_directory_has_no_note() {
        assert_eq!(metadata(Path::new("/dev/shm")), None);
        assert_eq!(metadata(Path::new("/no/such/dir")), None);
    }

    #[test]
    fn the_kernels_lists_decide() {
        // Removed on drop, even when the test fails.
        let scratch = iolab_core::tmp::PrivateDir::new("iolab-caveat").unwrap();
        let t = scratch.path();
        let (sys, proc) = (t.join("sys"), t.join("proc"));
        let dev = std::fs::metadata(t.parent().unwrap()).unwrap().dev();
        let block = sys.join("dev/block");
        std::fs::create_dir_all(&block).unwrap();
        std::fs::create_dir_all(proc.join("fs/ext4/vdz")).unwrap();
        std::fs::create_dir_all(proc.join("fs/jbd2")).unwrap();
        let id = format!("{}:{}", libc::major(dev), libc::minor(dev));
        std::os::unix::fs::symlink("../../devices/virtual/block/vdz", block.join(&id)).unwrap();
        let dir = t.parent().unwrap();
        assert_eq!(ext4_without_journal(dir, &sys, &proc), Some("vdz".into()));
        std::fs::create_dir(proc.join("fs/jbd2/vdz-8")).unwrap();
        assert_eq!(ext4_without_journal(dir, &sys, &proc), None);
        std::fs::remove_dir_all(proc.join("fs/ext4/vdz")).unwrap();
        std::fs::remove_dir(proc.join("fs/jbd2/vdz-8")).unwrap();
        assert_eq!(ext4_without_journal(dir, &sys, &proc), None);
    }
}
