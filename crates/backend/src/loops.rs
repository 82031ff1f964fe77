//! Loop devices built on a block device or a file. The loop driver opens
//! its backing file or device without registering as a holder in sysfs
//! (a device-mapper or md device does) and without an exclusive claim,
//! so neither `holders/` nor an O_EXCL open shows that a loop device, and
//! the file system mounted on it, live on the device about to be written.
//! Every bound loop device is therefore asked what it is built on: by the
//! name sysfs gives (`/sys/block/loopN/loop/backing_file`) and by the
//! device and inode numbers LOOP_GET_STATUS64 returns, which still hold
//! when the name does not (a file deleted or renamed since, a name from
//! another mount namespace, or cut at 64 characters by older kernels).

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a write would destroy, as loop devices see it: the block device
/// with this device number, or the file with this (device, inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// A block device, by its `st_rdev`.
    Device(u64),
    /// A regular file, by its `st_dev` and `st_ino`.
    File {
        /// The file system's device number.
        dev: u64,
        /// The inode number.
        ino: u64,
    },
}

/// A bound loop device built on what was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopUser {
    /// `/dev/loopN`.
    pub path: PathBuf,
    /// Its own device number (`MAJ`, `MIN`), to look for its mounts.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// What sysfs names as its backing file, when it names one.
    pub backing_name: Option<String>,
}

/// Every bound loop device whose backing file or device is `what`.
pub fn built_on(what: Backing) -> Vec<LoopUser> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<LoopUser> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter_map(|e| loop_user(&e.path(), what))
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The loop device at sysfs directory `sys` when it is bound and built on `what`.
fn loop_user(sys: &Path, what: Backing) -> Option<LoopUser> {
    // An unbound loop device has no loop/ directory.
    if !sys.join("loop").exists() {
        return None;
    }
    let name = std::fs::read_to_string(sys.join("loop/backing_file"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string());
    let (major, minor) = dev_numbers(&sys.join("dev"))?;
    let path = Path::new("/dev").join(sys.file_name()?);
    let by_name = name.as_deref().is_some_and(|n| name_matches(n, what));
    let hit = by_name || status_matches(&path, what);
    hit.then_some(LoopUser {
        path,
        major,
        minor,
        backing_name: name,
    })
}

/// `MAJ:MIN` from a sysfs `dev` file.
fn dev_numbers(file: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(file).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// True when the backing name sysfs gives is `what` (links followed, as
/// the loop driver did when it opened it).
fn name_matches(name: &str, what: Backing) -> bool {
    let Ok(m) = std::fs::metadata(name.trim_end_matches(" (deleted)")) else {
        return false;
    };
    identity(&m) == Some(what)
}

/// What `m` is, as [`Backing`]: a block device or a regular file.
pub fn identity(m: &std::fs::Metadata) -> Option<Backing> {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_block_device() {
        Some(Backing::Device(m.rdev()))
    } else if t.is_file() {
        Some(Backing::File {
            dev: m.dev(),
            ino: m.ino(),
        })
    } else {
        None
    }
}

/// The kernel's `struct loop_info64` (linux/loop.h), as LOOP_GET_STATUS64 fills it.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// linux/loop.h's LOOP_GET_STATUS64.
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// True when LOOP_GET_STATUS64 on the loop device at `dev` says it is
/// built on `what`. The kernel gives the backing inode's device, inode
/// and rdev numbers in its "huge" encoding (linux/kdev_t.h).
fn status_matches(dev: &Path, what: Backing) -> bool {
    let Some(info) = status(dev) else {
        return false;
    };
    let same = |huge: u64, dev: u64| {
        let (maj, min) = decode_huge(huge);
        maj == libc::major(dev) && min == libc::minor(dev)
    };
    match what {
        Backing::Device(rdev) => info.lo_rdevice != 0 && same(info.lo_rdevice, rdev),
        Backing::File { dev, ino } => info.lo_inode == ino && same(info.lo_device, dev),
    }
}

/// LOOP_GET_STATUS64 of the loop device at `dev`; None when it is no
/// bound loop device (or cannot be opened).
fn status(dev: &Path) -> Option<LoopInfo64> {
    let f = std::fs::File::open(dev).ok()?;
    // SAFETY: an all-zero loop_info64 is valid (integers and byte arrays).
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: LOOP_GET_STATUS64 writes one loop_info64 through the
    // pointer, which points at one that lives across the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) };
    (rc == 0).then_some(info)
}

/// What a bound loop device maps: the bytes of `backing` from `offset`,
/// `len` of them (None: to its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// The file or device the loop device is built on.
    pub backing: Backing,
    /// Where in it the loop device's first byte is.
    pub offset: u64,
    /// How many bytes it maps; None to the backing's end.
    pub len: Option<u64>,
}

/// What the loop device at `dev` is built on; None when `dev` is no
/// bound loop device.
pub fn mapping(dev: &Path) -> Option<Mapping> {
    let info = status(dev)?;
    let dev_t = |huge: u64| {
        let (maj, min) = decode_huge(huge);
        libc::makedev(maj, min)
    };
    let backing = match info.lo_rdevice {
        0 => Backing::File {
            dev: dev_t(info.lo_device),
            ino: info.lo_inode,
        },
        r => Backing::Device(dev_t(r)),
    };
    Some(Mapping {
        backing,
        offset: info.lo_offset,
        len: (info.lo_sizelimit != 0).then_some(info.lo_sizelimit),
    })
}

/// (major, minor) of a dev_t in the kernel's new_encode_dev form.
fn decode_huge(d: u64) -> (u32, u32) {
    let major = ((d & 0xfff00) >> 8) as u32;
    let minor = ((d & 0xff) | ((d >> 12) & 0xfff00)) as u32;
    (major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_device_numbers_decode_as_the_kernel_encodes_them() {
        // new_encode_dev(MKDEV(7, 3)) and MKDEV(259, 300).
        assert_eq!(decode_huge(0x0703), (7, 3));
        let enc = |maj: u64, min: u64| (min & 0xff) | (maj << 8) | ((min & !0xff) << 12);
        assert_eq!(decode_huge(enc(259, 300)), (259, 300));
    }

    #[test]
    fn nothing_is_built_on_a_fresh_file() {
        let f = std::env::temp_dir().join(format!("iolab-loops-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let m = std::fs::metadata(&f).unwrap();
        let id = identity(&m).unwrap();
        assert!(matches!(id, Backing::File { .. }));
        assert!(built_on(id).is_empty());
        std::fs::remove_file(&f).unwrap();
    }
}
