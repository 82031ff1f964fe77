//! Refusing to destroy data: before a block device is written, look for
//! signs that it is in use (a mount, partitions, holders such as LVM, a
//! loop device built on it ([`crate::loops`]), swap) or holds something
//! (a file system, a partition table, a RAID, LVM or LUKS member, any
//! signature libblkid knows). Any sign refuses the write unless forced
//! (xdd `-force`, `survey disk --force`). Reading is always allowed. The
//! POSIX backend answers [`crate::Backend::device_in_use`] with it, and
//! [`crate::Backend::device_in_use_at`] with the look also taken where a
//! writer's writes land ([`crate::written`]); a regular file is in use
//! when a loop device is built on it or it is swap ([`file_in_use`]).
//!
//! Signatures come from libblkid, the prober behind `blkid`, `wipefs` and
//! `lsblk`, not from a hand list: it knows about a hundred file systems,
//! RAID and crypto formats and partition tables, and is kept current by
//! util-linux. libblkid looks at the offset it is given; a file system
//! image copied a few MiB into a device would be missed by a probe at
//! offset 0 alone, so the device is also probed as if it began at each of
//! [`scan_offsets`]: every MiB of the first [`HEAD_SCAN_MIB`] MiB, the old
//! DOS partition start (sector 63), and every MiB of the last
//! [`TAIL_SCAN_MIB`] MiB. A window probe reads a few hundred KiB near its
//! start, so the whole scan stays well under a second even on a disk.
//!
//! libblkid checks a superblock before it names it (it answers "what can
//! be mounted here"), so a file system whose superblock is damaged or
//! half-overwritten is not reported. Such a device still holds someone's
//! data (fsck or a backup superblock can bring it back), so the bare magic
//! numbers of the commonest formats are also looked for at their places in
//! the first [`HEAD_BYTES`] bytes ([`BARE_MAGICS`]).

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, FromRawFd};

use crate::blkid::{BlkidError, Probe, SUBLKS_BADCSUM, SUBLKS_MAGIC, SUBLKS_TYPE, SUBLKS_USAGE};
use crate::written;
pub use crate::written::Writes;

/// MiB-aligned offsets probed from the start of the device.
pub const HEAD_SCAN_MIB: u64 = 64;
/// MiB-aligned offsets probed back from the end of the device.
pub const TAIL_SCAN_MIB: u64 = 8;

const MIB: u64 = 1 << 20;

/// Bytes read from the start of the device for [`BARE_MAGICS`]: past
/// btrfs's superblock at 64 KiB.
pub const HEAD_BYTES: usize = 70_000;

/// (offset, magic bytes, what it means): magic numbers that mean data even
/// when the superblock around them fails libblkid's checks.
pub const BARE_MAGICS: &[(usize, &[u8], &str)] = &[
    (1080, &[0x53, 0xEF], "an ext2/ext3/ext4 file system"),
    (0, b"XFSB", "an XFS file system"),
    (65600, b"_BHRfS_M", "a btrfs file system"),
    (512, b"EFI PART", "a GPT partition table"),
    (4096, b"EFI PART", "a GPT partition table (4K sectors)"),
    (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
    (4086, b"SWAPSPACE2", "a swap area"),
    (510, &[0x55, 0xAA], "an MBR partition table or boot sector"),
];
/// Where pre-2008 DOS tools started the first partition.
const DOS_LEGACY_START: u64 = 63 * 512;

/// Why writing `path` (a block device with device number `rdev`) would
/// destroy something, or None when nothing was found.
pub fn block_device_in_use(path: &str, rdev: u64) -> Option<String> {
    used(path, rdev, 0).or_else(|| signature(path))
}

/// As [`block_device_in_use`], and the device is also probed where the
/// writer's `writes` land ([`signature_where`]): a file system that
/// starts there, or whose secondary superblock is there, is found
/// although it lies past the head and tail the plain scan covers.
pub fn block_device_in_use_at(path: &str, rdev: u64, writes: &Writes) -> Option<String> {
    block_device_in_use(path, rdev).or_else(|| signature_where(path, writes))
}

/// Why writing the regular file `path` would destroy something in use:
/// a loop device is built on it (and maybe mounted), or it is a swap
/// file. What the file holds is not looked at: a file named for writing
/// is the writer's to overwrite.
pub fn file_in_use(path: &str) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    let id = crate::loops::identity(&m)?;
    loop_users(id, 0).or_else(|| swap_in_use(path))
}

/// Deepest chain of loop devices followed (a loop on a loop on ...).
const LOOP_DEPTH: u32 = 4;

/// Mounts, holders, loop devices and swap: the device with number `rdev`
/// is in use. `depth` counts the loop devices followed to get here.
fn used(path: &str, rdev: u64, depth: u32) -> Option<String> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    mounted(path, major, minor)
        .or_else(|| sysfs_users(major, minor))
        .or_else(|| loop_users(crate::loops::Backing::Device(rdev), depth))
        .or_else(|| swap_in_use(path))
}

/// The first loop device built on `what`, with what uses it in turn
/// (its mount point, its own partitions or holders, a loop on it).
fn loop_users(what: crate::loops::Backing, depth: u32) -> Option<String> {
    if depth >= LOOP_DEPTH {
        return None;
    }
    let users = crate::loops::built_on(what);
    let first = users.first()?;
    let shown = first.path.display().to_string();
    let rdev = libc::makedev(first.major, first.minor);
    let mut why = format!("the loop device {shown} is built on it");
    if let Some(more) = used(&shown, rdev, depth + 1) {
        why.push_str(&format!(", and {}", about(&shown, &more)));
    }
    if users.len() > 1 {
        let rest: Vec<String> = users[1..]
            .iter()
            .map(|u| u.path.display().to_string())
            .collect();
        why.push_str(&format!(" (so are {})", rest.join(", ")));
    }
    Some(why)
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

/// A reason said of "it" ([`used`]'s words) said of `what` instead.
fn about(what: &str, why: &str) -> String {
    match why.strip_prefix("it ") {
        Some(rest) => format!("{what} {rest}"),
        None => why.replace(" on it", &format!(" on {what}")),
    }
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

/// Looks for any signature libblkid knows in `path`, at offset 0 and at
/// each of [`scan_offsets`]. A device that cannot be opened or probed is
/// reported too: refusing is the safe answer when we cannot look.
pub fn signature(path: &str) -> Option<String> {
    match File::open(path) {
        Ok(f) => signature_in_file(&f).or_else(|| bare_magic(&read_head(&f))),
        Err(e) => Some(format!(
            "it could not be opened to look for signatures ({e})"
        )),
    }
}

/// The first signature found in `head` (the start of a device, held in
/// memory): it is probed through an anonymous memory file.
pub fn signature_in(head: &[u8]) -> Option<String> {
    let mut f = match memfile(head) {
        Ok(f) => f,
        Err(e) => return Some(format!("it could not be probed ({e})")),
    };
    let _ = f.flush();
    signature_in_file(&f).or_else(|| bare_magic(head))
}

/// The first of [`BARE_MAGICS`] found in `head`, whether or not the rest of
/// its superblock is valid.
fn bare_magic(head: &[u8]) -> Option<String> {
    BARE_MAGICS.iter().find_map(|(off, magic, what)| {
        let hit = head.get(*off..off + magic.len()) == Some(*magic);
        hit.then(|| format!("it holds {what} (its magic number; the rest may be damaged)"))
    })
}

/// Reads up to [`HEAD_BYTES`] from the start of `f`.
fn read_head(f: &File) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; HEAD_BYTES];
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], n as u64) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    buf.truncate(n);
    buf
}

fn memfile(bytes: &[u8]) -> std::io::Result<File> {
    // SAFETY: the name is a NUL-terminated literal; memfd_create has no
    // other preconditions and returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"iolab-probe".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by memfd_create and nothing else owns it.
    let mut f = unsafe { File::from_raw_fd(fd) };
    f.write_all(bytes)?;
    Ok(f)
}

/// Probes an open device or file at every scan offset.
fn signature_in_file(f: &File) -> Option<String> {
    let size = match (&*f).seek(SeekFrom::End(0)) {
        Ok(s) => s,
        Err(e) => return Some(format!("its size could not be read ({e})")),
    };
    scan_offsets(size).into_iter().find_map(|off| {
        probe_window(f, off, size - off).unwrap_or_else(|e| {
            Some(format!(
                "libblkid could not probe it at byte offset {off} ({e})"
            ))
        })
    })
}

/// Probes `path` where a writer's `writes` land, past what
/// [`scan_offsets`] covers: every MiB boundary of its ranges is peeked at
/// for a strong magic number ([`crate::written`]), and each writer's
/// head that holds anything gets the full libblkid probe. A full probe
/// reads a few hundred KiB and a device holding data would need one per
/// MiB (about 50 s for 4 GiB of old data here: docs/surveys.md), so it is kept
/// to the heads; the peek is one read of [`crate::written::PEEK_BYTES`].
fn signature_where(path: &str, writes: &Writes) -> Option<String> {
    if writes.is_empty() {
        return None;
    }
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            return Some(format!(
                "it could not be opened to look for signatures ({e})"
            ))
        }
    };
    let size = match (&f).seek(SeekFrom::End(0)) {
        Ok(s) => s,
        Err(e) => return Some(format!("its size could not be read ({e})")),
    };
    // The peeks are far apart: no read-ahead around them.
    // SAFETY: posix_fadvise only advises the kernel about the open `f`.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    let done = scan_offsets(size);
    let fresh = |o: &u64| *o < size && done.binary_search(o).is_err();
    let heads: Vec<u64> = writes.heads().into_iter().filter(fresh).collect();
    let peeks = writes.boundaries().into_iter().filter(fresh);
    heads
        .iter()
        .find_map(|&off| head_signature(&f, off, size))
        .or_else(|| {
            peeks.into_iter().find_map(|off| {
                let peek = written::peek(&f, off);
                written::strong_magic(&peek)
                    .map(|what| at_offset(format!("{what} (its magic number)"), off))
            })
        })
}

/// What starts at writer head `off` of `f` (of `size` bytes): libblkid's
/// answer, else a strong magic number; nothing where it is all zeros.
fn head_signature(f: &File, off: u64, size: u64) -> Option<String> {
    let peek = written::peek(f, off);
    if peek.iter().all(|&b| b == 0) {
        return None;
    }
    let probed = probe_window(f, off, size - off).unwrap_or_else(|e| {
        Some(format!(
            "libblkid could not probe it at byte offset {off} ({e})"
        ))
    });
    // libblkid names what it can check whole; a damaged one, or a
    // secondary superblock it does not look for, is known by its magic.
    probed.or_else(|| {
        written::strong_magic(&peek)
            .map(|what| at_offset(format!("{what} (its magic number)"), off))
    })
}

/// Offsets at which the device is probed as if it began there: 0, sector
/// 63, every MiB of the first [`HEAD_SCAN_MIB`] MiB and of the last
/// [`TAIL_SCAN_MIB`] MiB, each below `size`.
pub fn scan_offsets(size: u64) -> Vec<u64> {
    let head = (0..HEAD_SCAN_MIB).map(|m| m * MIB);
    let tail_start = (size / MIB).saturating_sub(TAIL_SCAN_MIB);
    let tail = (tail_start..size.div_ceil(MIB)).map(|m| m * MIB);
    let mut v: Vec<u64> = head
        .chain([DOS_LEGACY_START])
        .chain(tail)
        .filter(|&o| o < size)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Runs every libblkid chain (superblocks, partition tables) over the
/// `len` bytes of `f` from `offset`, as `wipefs` does, and describes the
/// first signature found.
fn probe_window(f: &File, offset: u64, len: u64) -> Result<Option<String>, BlkidError> {
    let mut pr = Probe::new()?;
    let (off, len) = (to_loff(offset), to_loff(len));
    // `f` outlives `pr`, and blkid never closes a descriptor it was given.
    pr.set_device(f.as_raw_fd(), off, len)?;
    // BADCSUM: a superblock whose checksum fails is still someone's data.
    pr.superblocks(SUBLKS_TYPE | SUBLKS_USAGE | SUBLKS_MAGIC | SUBLKS_BADCSUM)?;
    pr.partitions()?;
    while pr.step()? {
        if let Some(what) = describe(&pr) {
            return Ok(Some(at_offset(what, offset)));
        }
    }
    Ok(None)
}

fn to_loff(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn at_offset(what: String, offset: u64) -> String {
    if offset == 0 {
        format!("it holds {what}")
    } else {
        format!("it holds {what} starting at byte offset {offset}")
    }
}

/// Words for what the probe just found, from its TYPE/USAGE/PTTYPE values.
fn describe(pr: &Probe) -> Option<String> {
    if let Some(pt) = pr.value(c"PTTYPE") {
        let name = match pt.as_str() {
            "dos" => "an MBR (DOS)".to_string(),
            "gpt" => "a GPT".to_string(),
            other => format!("a {other}"),
        };
        return Some(format!("{name} partition table (libblkid PTTYPE={pt})"));
    }
    let ty = pr.value(c"TYPE")?;
    let usage = pr.value(c"USAGE").unwrap_or_default();
    Some(format!("{} (libblkid TYPE={ty})", kind(&ty, &usage)))
}

/// A reader's name for a libblkid TYPE and USAGE.
fn kind(ty: &str, usage: &str) -> String {
    match (ty, usage) {
        ("ext2" | "ext3" | "ext4" | "jbd", _) => "an ext2/ext3/ext4 file system".into(),
        ("swap", _) => "a swap area".into(),
        ("LVM2_member" | "LVM1_member", _) => "an LVM physical volume".into(),
        (_, "raid") => "a RAID or volume-manager member".into(),
        (_, "crypto") => "an encrypted volume".into(),
        (_, "filesystem") => format!("a {ty} file system"),
        _ => format!("a {ty} signature"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBE_BYTES: usize = HEAD_BYTES;

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

    /// Windows of a few hundred bytes near the end probe as "nothing",
    /// not as an error that would refuse a blank device.
    #[test]
    fn tiny_tail_windows_probe_cleanly() {
        for len in [
            512usize,
            1 << 20,
            (1 << 20) + 512,
            (1 << 20) + 4096,
            3 << 20,
        ] {
            assert_eq!(signature_in(&vec![0u8; len]), None, "{len}");
        }
    }

    #[test]
    fn scan_offsets_cover_head_and_tail() {
        let size = 1024 * MIB;
        let v = scan_offsets(size);
        assert_eq!(v[0], 0);
        assert!(v.contains(&(2 * MIB)) && v.contains(&DOS_LEGACY_START));
        assert!(v.contains(&(size - MIB)) && v.iter().all(|&o| o < size));
        assert_eq!(v.len() as u64, HEAD_SCAN_MIB + 1 + TAIL_SCAN_MIB);
        assert_eq!(scan_offsets(10), vec![0]);
    }
}

/// A block device held exclusively (O_EXCL) while a run writes it: the
/// kernel then refuses to mount it, and mkfs (which opens with O_EXCL
/// too) refuses to run on it, until the claim is dropped. Without it a
/// device found unused was opened again at each point of a survey, and
/// could be mounted between the check and the writes.
#[derive(Debug, Default)]
pub struct DeviceClaim {
    /// The exclusive descriptor, closed (the claim dropped) with it.
    _fd: Option<std::os::fd::OwnedFd>,
}

impl DeviceClaim {
    /// No claim (a backend that has none to take).
    pub fn none() -> DeviceClaim {
        DeviceClaim { _fd: None }
    }

    /// Claims the block device at `path`: EBUSY when it is mounted or
    /// another program holds it exclusively.
    pub fn take(path: &std::ffi::CStr) -> std::io::Result<DeviceClaim> {
        use std::os::fd::FromRawFd;
        // SAFETY: a NUL-terminated path; O_EXCL without O_CREAT on a
        // block device is Linux's exclusive open (open(2)).
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_EXCL | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EBUSY) => std::io::Error::new(
                    e.kind(),
                    "it is in use (mounted, or held by another program): the kernel refused an exclusive open",
                ),
                _ => e,
            });
        }
        // SAFETY: a descriptor open(2) just returned, owned by nobody else.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        Ok(DeviceClaim { _fd: Some(fd) })
    }
}

/// Why a block device was not claimed for writing: the look's reason (a
/// mount point, a holder, a signature) or, when the look saw nothing, the
/// kernel's refusal of the exclusive open.
#[derive(Debug, thiserror::Error)]
pub enum ClaimRefused {
    /// The device is in use; the text says how (mounted at, held by, holds).
    #[error("{0}")]
    InUse(String),
    /// The exclusive open failed and the look could not say why.
    #[error("{0}")]
    Open(#[from] std::io::Error),
}

/// Claims the block device at `path` (device number `rdev`) for writing
/// ([`crate::Backend::claim_device`]), then looks at it once held: Err
/// says why it must not be written (mounted, held by another program, a
/// file system or other signature). The look comes after the claim, so a
/// file system made before it is seen and none can be made or mounted
/// after it; a claim the kernel refuses is explained by the look when it
/// can be (a mount point says more than EBUSY).
pub fn claim_unused(
    be: &dyn crate::Backend,
    path: &std::ffi::CStr,
    rdev: u64,
) -> Result<DeviceClaim, ClaimRefused> {
    claim_unused_at(be, path, rdev, &Writes::default())
}

/// [`claim_unused`], the look also probing the device where `writes`
/// land ([`crate::Backend::device_in_use_at`]).
pub fn claim_unused_at(
    be: &dyn crate::Backend,
    path: &std::ffi::CStr,
    rdev: u64,
    writes: &Writes,
) -> Result<DeviceClaim, ClaimRefused> {
    let claim = be.claim_device(path).map_err(|e| {
        be.device_in_use_at(path, rdev, writes)
            .map_or(ClaimRefused::Open(e), ClaimRefused::InUse)
    })?;
    match be.device_in_use_at(path, rdev, writes) {
        Some(why) => Err(ClaimRefused::InUse(why)),
        None => Ok(claim),
    }
}
