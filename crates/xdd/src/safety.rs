//! Refusing to destroy data: before a block device is written, look for
//! signs that it is in use (a mount, partitions, holders such as LVM, swap)
//! or holds something (a file system or partition table signature). Any
//! sign refuses the write unless `-force` is given. Reading is always
//! allowed.

use std::io::Read;

/// (offset, magic bytes, what it means) for the signatures we look for.
const SIGNATURES: &[(usize, &[u8], &str)] = &[
    (1080, &[0x53, 0xEF], "an ext2/ext3/ext4 file system"),
    (0, b"XFSB", "an XFS file system"),
    (65600, b"_BHRfS_M", "a btrfs file system"),
    (512, b"EFI PART", "a GPT partition table"),
    (4096, b"EFI PART", "a GPT partition table (4K sectors)"),
    (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
    (4086, b"SWAPSPACE2", "a swap area"),
    (32769, b"CD001", "an ISO 9660 file system"),
    (3, b"NTFS    ", "an NTFS file system"),
    (510, &[0x55, 0xAA], "an MBR partition table or boot sector"),
];

/// Bytes read from the start of the device to look for signatures.
const PROBE_BYTES: usize = 70_000;

/// Why writing `path` (a block device with device number `rdev`) would
/// destroy something, or None when nothing was found.
pub fn block_device_in_use(path: &str, rdev: u64) -> Option<String> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    mounted(path, major, minor)
        .or_else(|| sysfs_users(major, minor))
        .or_else(|| swap_in_use(path))
        .or_else(|| signature(path))
}

fn mounted(path: &str, major: u32, minor: u32) -> Option<String> {
    let id = format!("{major}:{minor}");
    let canon = std::fs::canonicalize(path).ok();
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f.get(2) == Some(&id.as_str()) {
                return Some(format!("it is mounted on {}", f.get(4).unwrap_or(&"?")));
            }
        }
    }
    let text = std::fs::read_to_string("/proc/mounts").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(' ');
        let (src, mp) = (f.next()?, f.next()?);
        let same = std::fs::canonicalize(src)
            .ok()
            .is_some_and(|s| Some(s) == canon);
        same.then(|| format!("it is mounted on {mp}"))
    })
}

/// Partitions (subdirectories named like the device) or holders (LVM,
/// device mapper, md) in sysfs.
fn sysfs_users(major: u32, minor: u32) -> Option<String> {
    let dir = format!("/sys/dev/block/{major}:{minor}");
    let holders = std::fs::read_dir(format!("{dir}/holders")).ok()?.count();
    if holders > 0 {
        return Some(format!(
            "{holders} device(s) are built on it (see {dir}/holders)"
        ));
    }
    let parts = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("partition").exists())
        .count();
    (parts > 0).then(|| format!("it has {parts} partition(s)"))
}

fn swap_in_use(path: &str) -> Option<String> {
    let canon = std::fs::canonicalize(path).ok()?;
    let text = std::fs::read_to_string("/proc/swaps").ok()?;
    text.lines().skip(1).find_map(|l| {
        let dev = l.split_whitespace().next()?;
        (std::fs::canonicalize(dev).ok()? == canon).then(|| "it is in use as swap".to_string())
    })
}

/// Looks for a known signature in the first blocks of `path`.
pub fn signature(path: &str) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = vec![0u8; PROBE_BYTES];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    signature_in(&buf[..n])
}

/// The first signature found in `head` (the start of a device).
pub fn signature_in(head: &[u8]) -> Option<String> {
    SIGNATURES.iter().find_map(|(off, magic, what)| {
        let hit = head.get(*off..off + magic.len()) == Some(*magic);
        hit.then(|| format!("it holds {what}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_recognised() {
        let mut head = vec![0u8; PROBE_BYTES];
        assert_eq!(signature_in(&head), None);
        head[1080] = 0x53;
        head[1081] = 0xEF;
        assert!(signature_in(&head).unwrap().contains("ext2"));
        let mut head = vec![0u8; PROBE_BYTES];
        head[0..4].copy_from_slice(b"XFSB");
        assert!(signature_in(&head).unwrap().contains("XFS"));
        let mut head = vec![0u8; PROBE_BYTES];
        head[510] = 0x55;
        head[511] = 0xAA;
        assert!(signature_in(&head).unwrap().contains("MBR"));
        let mut head = vec![0u8; PROBE_BYTES];
        head[65600..65608].copy_from_slice(b"_BHRfS_M");
        assert!(signature_in(&head).unwrap().contains("btrfs"));
    }

    #[test]
    fn short_heads_are_fine() {
        assert_eq!(signature_in(&[0u8; 10]), None);
    }
}
