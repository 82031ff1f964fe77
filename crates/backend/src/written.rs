//! Where a writer's writes land, and what a glance there shows. The
//! device safety look ([`crate::safety`]) probes the head and the tail of
//! a device; a file system can also start further in (a partition, a
//! loop device made with an offset, an image copied into the device) or
//! have its secondary superblocks there, and the writes would destroy it
//! all the same. So the look is also taken at every MiB boundary of the
//! ranges the writer writes (partitions, loop offsets and the secondary
//! superblocks of XFS allocation groups, btrfs mirrors and the ext4
//! backups of a file system that starts at one are MiB-aligned) and at
//! the head of each writer, aligned or not.
//!
//! At a MiB boundary one read ([`PEEK_BYTES`]) is looked at for magic
//! numbers long enough, or checked enough, that data written by chance
//! (such as a previous survey's) does not hold them ([`strong_magic`]).

use std::fs::File;
use std::ops::Range;

/// Bytes read at each offset looked at: up to and past the btrfs and
/// reiserfs superblocks at 64 KiB, taking in the headers of the first 8
/// KiB and the ISO 9660 and JFS ones at 32 KiB.
pub const PEEK_BYTES: usize = 68 << 10;

const MIB: u64 = 1 << 20;

/// What a writer will write: byte ranges, and where each of its writers
/// starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// The byte ranges written.
    pub ranges: Vec<Range<u64>>,
    /// Where each writer (a region, a thread's stretch) starts.
    pub heads: Vec<u64>,
}

impl Writes {
    /// True when nothing is written.
    pub fn is_empty(&self) -> bool {
        self.ranges.iter().all(|r| r.is_empty()) && self.heads.is_empty()
    }

    /// Every MiB boundary inside the ranges, and each range's start;
    /// sorted, each once.
    pub fn boundaries(&self) -> Vec<u64> {
        let mut v = Vec::new();
        for r in self.ranges.iter().filter(|r| !r.is_empty()) {
            v.push(r.start);
            v.extend((r.start.div_ceil(MIB)..r.end.div_ceil(MIB)).map(|m| m * MIB));
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The writers' heads, sorted, each once.
    pub fn heads(&self) -> Vec<u64> {
        let mut v = self.heads.clone();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Up to [`PEEK_BYTES`] of `f` from `off` (fewer at its end or on an error).
pub fn peek(f: &File, off: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; PEEK_BYTES];
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    buf.truncate(n);
    buf
}

/// (offset in a peek, magic, what it means): magic numbers of at least
/// four bytes at a fixed place, which written data does not hold by
/// chance at a given MiB boundary (once in 2^32 boundaries and less),
/// unlike the two-byte ext and MBR marks of [`crate::safety::BARE_MAGICS`].
pub const STRONG_MAGICS: &[(usize, &[u8], &str)] = &[
    (0, b"XFSB", "an XFS superblock"),
    (64, b"_BHRfS_M", "a btrfs superblock (a mirror copy)"),
    (65536 + 64, b"_BHRfS_M", "a btrfs superblock"),
    (65536 + 52, b"ReIsEr", "a reiserfs superblock"),
    (512, b"EFI PART", "a GPT partition table"),
    (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
    (0, b"SKUL\xba\xbe", "a LUKS2 secondary header"),
    (4086, b"SWAPSPACE2", "a swap area"),
    (4086, b"SWAP-SPACE", "a swap area"),
    (0, b"LABELONE", "an LVM physical volume label"),
    (512, b"LABELONE", "an LVM physical volume label"),
    (1024, b"LABELONE", "an LVM physical volume label"),
    (1536, b"LABELONE", "an LVM physical volume label"),
    (
        0,
        &[0xfc, 0x4e, 0x2b, 0xa9],
        "an md RAID member (version 1.1)",
    ),
    (
        4096,
        &[0xfc, 0x4e, 0x2b, 0xa9],
        "an md RAID member (version 1.2)",
    ),
    (3, b"NTFS    ", "an NTFS file system"),
    (3, b"EXFAT   ", "an exFAT file system"),
    (82, b"FAT32   ", "a FAT32 file system"),
    (54, b"FAT16   ", "a FAT16 file system"),
    (54, b"FAT12   ", "a FAT12 file system"),
    (1024, &[0x10, 0x20, 0xf5, 0xf2], "an F2FS file system"),
    (0, b"hsqs", "a squashfs image"),
    (32769, b"CD001", "an ISO 9660 image"),
    (32768, b"JFS1", "a JFS file system"),
    (
        4096 + 24,
        &[
            0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba,
            0x6d, 0x81,
        ],
        "a bcache device",
    ),
];

/// The first strong magic number in `peek` ([`STRONG_MAGICS`]), or an
/// ext superblock as its backups are stored (at the start of a block, at
/// 0 here; the primary at 1024), whose two-byte magic is backed by
/// fields random data does not agree on ([`ext_superblock`]).
pub fn strong_magic(peek: &[u8]) -> Option<&'static str> {
    let found = |off: usize, magic: &[u8]| peek.get(off..off + magic.len()) == Some(magic);
    if let Some((_, _, what)) = STRONG_MAGICS.iter().find(|(o, m, _)| found(*o, m)) {
        return Some(what);
    }
    [0usize, 1024]
        .iter()
        .any(|&at| ext_superblock(peek.get(at..at + 1024).unwrap_or_default()))
        .then_some("an ext2/ext3/ext4 superblock")
}

/// True when `sb` (1024 bytes) looks like an ext superblock: magic 0xEF53
/// at 56, a block size of 1-64 KiB, at most 8 x block size blocks per
/// group, inodes per group set, revision 0 or 1, state flags at most 7
/// (0 while mounted).
fn ext_superblock(sb: &[u8]) -> bool {
    let u16_at = |o: usize| sb.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        sb.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(magic), Some(log_bs), Some(bpg), Some(ipg), Some(rev), Some(state)) = (
        u16_at(56),
        u32_at(24),
        u32_at(32),
        u32_at(40),
        u32_at(76),
        u16_at(58),
    ) else {
        return false;
    };
    magic == 0xEF53
        && log_bs <= 6
        && bpg > 0
        && u64::from(bpg) <= 8 * (1024u64 << log_bs)
        && ipg > 0
        && rev <= 1
        && state <= 7
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_cover_every_mib_of_each_range_and_its_start() {
        let w = Writes {
            ranges: std::iter::once((MIB + 512)..(4 * MIB)).collect(),
            heads: vec![3 * MIB + 4096, MIB + 512],
        };
        assert_eq!(w.boundaries(), vec![MIB + 512, 2 * MIB, 3 * MIB]);
        assert_eq!(w.heads(), vec![MIB + 512, 3 * MIB + 4096]);
        assert!(Writes::default().is_empty());
    }

    #[test]
    fn strong_magics_are_found_and_random_data_is_not_taken_for_them() {
        let mut p = vec![0u8; PEEK_BYTES];
        assert_eq!(strong_magic(&p), None);
        p[65536 + 64..65536 + 72].copy_from_slice(b"_BHRfS_M");
        assert_eq!(strong_magic(&p), Some("a btrfs superblock"));
        // An ext backup superblock at a block start.
        let mut p = vec![0u8; PEEK_BYTES];
        p[56..58].copy_from_slice(&0xEF53u16.to_le_bytes());
        p[24..28].copy_from_slice(&2u32.to_le_bytes());
        p[32..36].copy_from_slice(&32768u32.to_le_bytes());
        p[40..44].copy_from_slice(&8192u32.to_le_bytes());
        p[76..80].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(strong_magic(&p), Some("an ext2/ext3/ext4 superblock"));
        // The bare two-byte ext magic in data is not enough.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut data = vec![0u8; PEEK_BYTES];
        for b in data.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = seed as u8;
        }
        data[1080..1082].copy_from_slice(&0xEF53u16.to_le_bytes());
        assert_eq!(strong_magic(&data), None);
    }
}
