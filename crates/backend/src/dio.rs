//! The O_DIRECT alignment of a path, for the checks an engine makes
//! before it runs: what statx states (`STATX_DIOALIGN`, Linux 6.1+)
//! where the file system states it, else the logical block size of the
//! block device itself (BLKSSZGET) or of the device under the file
//! system (sysfs). A transfer finer than this fails with EINVAL, one
//! request after another, so it is better told before the run.

use crate::{DeviceGeometry, DirectIoAlignment};
use std::ffi::CStr;
use std::io;

/// The alignment O_DIRECT needs at `path` (a file, a block device, or
/// the directory a file will be made in); None when nothing says, or
/// when the file takes no O_DIRECT at all (its open falls back).
/// `geometry` measures a block device (the POSIX backend's BLKSSZGET).
pub(crate) fn alignment(
    path: &CStr,
    geometry: fn(&CStr) -> io::Result<DeviceGeometry>,
) -> io::Result<Option<DirectIoAlignment>> {
    let Some(stx) = statx(path)? else {
        return Ok(None);
    };
    let mode = u32::from(stx.stx_mode) & libc::S_IFMT;
    if stx.stx_mask & libc::STATX_DIOALIGN != 0 {
        if stx.stx_dio_offset_align != 0 {
            return Ok(Some(DirectIoAlignment {
                offset_bytes: u64::from(stx.stx_dio_offset_align),
                memory_bytes: u64::from(stx.stx_dio_mem_align),
                source: "statx",
            }));
        }
        // The file system says this file takes no O_DIRECT.
        if mode == libc::S_IFREG {
            return Ok(None);
        }
    }
    let logical = if mode == libc::S_IFBLK {
        geometry(path).ok().map(|g| g.block_bytes)
    } else {
        logical_block_bytes(stx.stx_dev_major, stx.stx_dev_minor)
    };
    Ok(logical.map(|b| DirectIoAlignment {
        offset_bytes: b,
        memory_bytes: 0,
        source: "the device's logical block size",
    }))
}

/// statx(2) of `path` (links followed) asking for the type and the
/// direct I/O alignment; None on a kernel without statx.
fn statx(path: &CStr) -> io::Result<Option<libc::statx>> {
    // SAFETY: statx is plain data, for which all zeroes is valid.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let mask = libc::STATX_TYPE | libc::STATX_DIOALIGN;
    // SAFETY: a NUL-terminated path and a writable statx, both outliving
    // the call; AT_FDCWD resolves a relative path as open(2) does.
    let rc = unsafe { libc::statx(libc::AT_FDCWD, path.as_ptr(), 0, mask, &mut stx) };
    if rc == 0 {
        return Ok(Some(stx));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS) => Ok(None),
        _ => Err(e),
    }
}

/// The logical block size of block device `major:minor` from sysfs (a
/// partition's is its disk's); None for a file system on no block
/// device (tmpfs, NFS, btrfs's anonymous numbers).
fn logical_block_bytes(major: u32, minor: u32) -> Option<u64> {
    let dev = format!("/sys/dev/block/{major}:{minor}");
    ["queue", "../queue"].iter().find_map(|q| {
        let text = std::fs::read_to_string(format!("{dev}/{q}/logical_block_size")).ok()?;
        text.trim().parse::<u64>().ok().filter(|&b| b > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_an_error_and_a_directory_answers() {
        let none = |_: &CStr| Err(io::Error::from_raw_os_error(libc::ENOTTY));
        assert!(alignment(c"/nonexistent/iolab-dio", none).is_err());
        // Whatever holds the working directory answers without failing;
        // a figure, when there is one, is a power of two.
        let a = alignment(c".", none).unwrap();
        assert!(a.is_none_or(|a| a.offset_bytes.is_power_of_two()), "{a:?}");
    }
}
