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

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A note for the metadata layer when `dir` lies on an ext4 without a
/// journal; None elsewhere, or when it cannot be told.
pub fn metadata(dir: &Path) -> Option<String> {
    let dev = ext4_without_journal(dir, Path::new("/sys"), Path::new("/proc"))?;
    Some(format!(
        "{} is on an ext4 without a journal ({dev}): it keeps inodes freed in the last minutes from reuse, so the metadata layer's creates pay for the removals of the points before them, and its create limits may not come again in a run alone (docs/qualify.md, \"A limit and its tool run alone\")",
        dir.display()
    ))
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
