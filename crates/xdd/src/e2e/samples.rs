//! Samples of a copy's bytes, for a resume whose source is a block
//! device. A file's identity (size, times, inode: [`SourceId`]) moves
//! with every write, so a changed file is refused on a resume; a block
//! device node's moves only when the device is written through that
//! node, not through a file system mounted on it, another node of the
//! same device or another host on a shared disk. So a
//! source on a block device also sends, in its handshake terms, the
//! CRC-32C of [`COUNT`] blocks of [`BYTES`] spread evenly over the copy's
//! range, and a destination resuming compares those that lie in the
//! part it already holds with the same blocks of its copy. A change that
//! touches none of those blocks is not seen: this catches a device that
//! was rewritten or reformatted, not one changed byte.
//!
//! [`SourceId`]: crate::record::restart::SourceId

use std::os::unix::fs::FileExt;
use std::path::Path;

/// Blocks sampled over a copy's range (fewer when it is shorter).
pub const COUNT: u64 = 256;

/// Bytes per sampled block.
pub const BYTES: u64 = 4096;

/// Where the samples of a copy of `bytes` bytes from byte `start` lie:
/// up to [`COUNT`] blocks of [`BYTES`], evenly spread, the first at the
/// start and the last ending at the copy's end, each a whole number of
/// blocks from the start. Both sides compute them from the figures the
/// handshake makes them agree on (start and size).
pub fn offsets(start: u64, bytes: u64) -> Vec<u64> {
    let blocks = bytes / BYTES;
    if blocks == 0 {
        return Vec::new();
    }
    let n = blocks.min(COUNT);
    let last = blocks - 1;
    let mut out: Vec<u64> = (0..n)
        .map(|i| start + (i * last / (n - 1).max(1)) * BYTES)
        .collect();
    out.dedup();
    out
}

/// The CRC-32C of each block of `path` at `offsets`, those that end at
/// or below `below` (the bytes a copy holds); the others are None.
pub fn take(path: &Path, offsets: &[u64], below: u64) -> std::io::Result<Vec<Option<u32>>> {
    let f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; BYTES as usize];
    offsets
        .iter()
        .map(|&o| {
            if o + BYTES > below {
                return Ok(None);
            }
            f.read_exact_at(&mut buf, o)?;
            Ok(Some(crc32c::crc32c(&buf)))
        })
        .collect()
}

/// The CRC-32C of every block of `path` at `offsets` (a source's).
pub fn take_all(path: &Path, offsets: &[u64]) -> std::io::Result<Vec<u32>> {
    Ok(take(path, offsets, u64::MAX)?
        .into_iter()
        .flatten()
        .collect())
}

/// The first offset at which the copy has a sample and it differs from
/// the source's.
pub fn first_difference(offsets: &[u64], source: &[u32], copy: &[Option<u32>]) -> Option<u64> {
    offsets
        .iter()
        .zip(source.iter().zip(copy))
        .find(|(_, (s, c))| matches!(c, Some(c) if c != *s))
        .map(|(o, _)| *o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_from_the_start_to_the_end() {
        assert!(offsets(0, 4095).is_empty());
        assert_eq!(offsets(100, 4096), [100]);
        assert_eq!(offsets(0, 3 * 4096 + 5), [0, 4096, 8192]);
        let o = offsets(8192, 64 << 20);
        assert_eq!(o.len(), COUNT as usize);
        assert_eq!((o[0], *o.last().unwrap()), (8192, 8192 + (64 << 20) - 4096));
        assert!(o
            .windows(2)
            .all(|w| w[0] < w[1] && (w[1] - w[0]) % BYTES == 0));
    }

    #[test]
    fn a_changed_block_below_the_resume_is_found_and_one_above_is_not() {
        let dir = iolab_core::tmp::PrivateDir::new("iolab-samples").unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let data: Vec<u8> = (0..64 * 4096).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        let mut changed = data.clone();
        changed[10 * 4096 + 7] ^= 1;
        changed[60 * 4096] ^= 1;
        std::fs::write(&b, &changed).unwrap();
        let o = offsets(0, data.len() as u64);
        let src = take_all(&a, &o).unwrap();
        assert_eq!(src.len(), o.len());
        let below = 32 * 4096;
        let copy = take(&b, &o, below).unwrap();
        assert!(copy[32..].iter().all(Option::is_none));
        assert_eq!(first_difference(&o, &src, &copy), Some(10 * 4096));
        let same = take(&a, &o, below).unwrap();
        assert_eq!(first_difference(&o, &src, &same), None);
    }
}
