//! Write data no store can shrink: the default `-datapattern` (and
//! `random`, `compress PCT`, `dedupe PCT`).
//!
//! XDD writes zeros by default, and a store that compresses or deduplicates
//! (ZFS, btrfs with compression, VDO, most all-flash arrays) then keeps a
//! fraction of what was written and shows the difference as speed. iolab
//! writes what fio's `scramble_buffers` writes in spirit, at no per-byte
//! cost in the hot loop:
//!
//! - A *base* of random bytes, `period` bytes long (the request size, at
//!   least [`MIN_PERIOD`]), laid over the target so that the byte at file
//!   offset X is `base[X % period]`. The I/O buffer holds `period + len`
//!   bytes of that repeating base, and a request at offset X is written
//!   from `buf[X % period ..][..len]`: no copy, and the data never repeats
//!   closer than `period` bytes, beyond the window of the compressors
//!   that stores use (zlib 32 KiB, btrfs's 128 KiB extents).
//! - A 16-byte *stamp* at the start of every 4 KiB of the file, written
//!   into the buffer just before each write: the unit's file offset and a
//!   tag mixing the run, the target and the pass. No two 4 KiB blocks of a
//!   run are equal, whatever the block size of a deduplicating store
//!   (4 KiB or a multiple).
//! - `compress PCT`: the last PCT% of every 4 KiB unit of the base is
//!   zero, the rest random, so a compressor keeps about (100 - PCT)%.
//! - `dedupe PCT`: PCT% of the units of each period (spread evenly) hold
//!   one of [`DEDUPE_POOL`] fixed blocks and no stamp, so that share of
//!   the file's blocks repeats blocks written before.
//!
//! ```
//! use iolab_core::unique::{Shape, UNIT};
//! let s = Shape::new(0, 0, 8192);
//! let mut buf = vec![0u8; s.buffer_len(8192)];
//! s.fill(&mut buf);
//! let at = s.place(&mut buf, 3 * UNIT as u64, 8192, 42);
//! let req = &buf[at..at + 8192];
//! assert_eq!(u64::from_le_bytes(req[..8].try_into().unwrap()), 3 * UNIT as u64);
//! assert_ne!(req[..UNIT], req[UNIT..]);
//! ```

use crate::random::{mix, splitmix_nth};

/// The stamping unit: every 4 KiB of the file carries its own stamp.
pub const UNIT: usize = 4096;
/// Bytes of a stamp: the unit's offset, then the tag.
pub const STAMP_BYTES: usize = 16;
/// Shortest repeat of the base, beyond the windows of store compressors
/// (btrfs 128 KiB, ZFS's default 128 KiB record, zlib 32 KiB).
pub const MIN_PERIOD: usize = 1 << 20;
/// Distinct blocks the duplicated units of `dedupe PCT` are drawn from.
pub const DEDUPE_POOL: u64 = 16;
/// Seed of the base's random bytes (fixed, so `-verify contents` works).
const BASE_SEED: u64 = 0xDA7A_5EED;
/// Seed of the duplicated blocks' bytes.
const POOL_SEED: u64 = 0xD0D0_CAFE;

/// The layout of unique data for one target: how compressible, how much
/// duplicated, and the repeat period of the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Share of each unit left zero (0-99).
    pub compress_pct: u8,
    /// Share of units that repeat a pool block (0-100).
    pub dedupe_pct: u8,
    /// Repeat period of the base in bytes (a multiple of [`UNIT`]).
    pub period: usize,
}

impl Shape {
    /// The shape for requests of `len` bytes.
    pub fn new(compress_pct: u8, dedupe_pct: u8, len: usize) -> Self {
        let period = len.max(MIN_PERIOD).next_multiple_of(UNIT);
        Self {
            compress_pct: compress_pct.min(99),
            dedupe_pct: dedupe_pct.min(100),
            period,
        }
    }

    /// Bytes of buffer a request of `len` bytes needs.
    pub fn buffer_len(&self, len: usize) -> usize {
        self.period + len
    }

    /// Random bytes at the head of each unit (the rest is zero).
    fn random_bytes(&self) -> usize {
        (UNIT * (100 - usize::from(self.compress_pct)) / 100).max(STAMP_BYTES)
    }

    /// True when unit `u` of the period repeats a pool block (Bresenham's
    /// spread: exactly `dedupe_pct` of every 100 units).
    #[inline]
    pub fn is_duplicate(&self, unit_in_period: u64) -> bool {
        let p = u64::from(self.dedupe_pct);
        (unit_in_period + 1) * p / 100 > unit_in_period * p / 100
    }

    /// Fills a buffer with the repeating base (before the first request).
    pub fn fill(&self, buf: &mut [u8]) {
        let head = self.random_bytes();
        for (i, unit) in buf.chunks_mut(UNIT).enumerate() {
            let pos = (i * UNIT) % self.period;
            let u = (pos / UNIT) as u64;
            if self.is_duplicate(u) {
                fill_unit(unit, POOL_SEED, mix(u) % DEDUPE_POOL, head);
            } else {
                fill_unit(unit, BASE_SEED, u, head);
            }
        }
    }

    /// Stamps the units of a request for file offset `file_offset` and
    /// returns where in `buf` its `len` bytes start. Allocation-free.
    #[inline]
    pub fn place(&self, buf: &mut [u8], file_offset: u64, len: usize, tag: u64) -> usize {
        let start = self.start(buf.len(), file_offset, len);
        let req = &mut buf[start..start + len];
        for (at, stamp) in self.stamps(file_offset, len, tag) {
            if let Some(s) = stamp {
                req[at..at + STAMP_BYTES].copy_from_slice(&s);
            }
        }
        start
    }

    /// Where in a buffer of `buf_len` bytes [`Shape::place`] puts the
    /// request at `file_offset` of `len` bytes.
    #[inline]
    pub fn start(&self, buf_len: usize, file_offset: u64, len: usize) -> usize {
        let start = (file_offset % self.period as u64) as usize;
        if start + len <= buf_len {
            start
        } else {
            0
        }
    }

    /// The stamp slots of a request for `file_offset` of `len` bytes, in
    /// order: (position in the request, the 16 bytes [`Shape::place`]
    /// writes there, or None for a unit that repeats a pool block and
    /// keeps the base's bytes). A unit whose slot would end past the
    /// request is not stamped and not listed. Allocation-free.
    #[inline]
    pub fn stamps(&self, file_offset: u64, len: usize, tag: u64) -> Stamps {
        // First unit boundary at or after `file_offset`.
        let at = (UNIT - (file_offset % UNIT as u64) as usize) % UNIT;
        Stamps {
            at,
            len,
            file_offset,
            tag,
            unit: self.unit_in_period(file_offset + at as u64),
            units: (self.period / UNIT) as u64,
            shape: *self,
        }
    }

    /// The unit index within the period of file offset `off`.
    #[inline]
    pub fn unit_in_period(&self, off: u64) -> u64 {
        (off % self.period as u64) / UNIT as u64
    }
}

/// The stamp slots of one request ([`Shape::stamps`]).
#[derive(Debug, Clone)]
pub struct Stamps {
    at: usize,
    len: usize,
    file_offset: u64,
    tag: u64,
    // The unit index within the period is counted, not divided out, per
    // unit: a 1 MiB request has 256 stamps and this is on the hot path.
    unit: u64,
    units: u64,
    shape: Shape,
}

impl Iterator for Stamps {
    type Item = (usize, Option<[u8; STAMP_BYTES]>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.at + STAMP_BYTES > self.len {
            return None;
        }
        let at = self.at;
        let dup = self.shape.dedupe_pct > 0 && self.shape.is_duplicate(self.unit);
        let stamp = (!dup).then(|| {
            let mut s = [0u8; STAMP_BYTES];
            s[..8].copy_from_slice(&(self.file_offset + at as u64).to_le_bytes());
            s[8..].copy_from_slice(&self.tag.to_le_bytes());
            s
        });
        self.at += UNIT;
        self.unit += 1;
        if self.unit == self.units {
            self.unit = 0;
        }
        Some((at, stamp))
    }
}

/// A unit of `head` random bytes (stream `seed`, unit `n`) then zeros.
fn fill_unit(unit: &mut [u8], seed: u64, n: u64, head: usize) {
    let words = (UNIT / 8) as u64;
    for (j, c) in unit.chunks_mut(8).enumerate() {
        let w = if j * 8 < head {
            splitmix_nth(seed, n * words + j as u64).to_le_bytes()
        } else {
            [0; 8]
        };
        c.copy_from_slice(&w[..c.len()]);
    }
}

/// The stamp tag of a pass: different for every run, target and pass.
pub fn tag(run_key: u64, target: usize, pass: u32) -> u64 {
    mix(run_key ^ mix((target as u64) << 32 | u64::from(pass)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn write(s: &Shape, len: usize, reqs: u64, tag: u64) -> Vec<u8> {
        let mut buf = vec![0u8; s.buffer_len(len)];
        s.fill(&mut buf);
        let mut out = Vec::new();
        for r in 0..reqs {
            let at = s.place(&mut buf, r * len as u64, len, tag);
            out.extend_from_slice(&buf[at..at + len]);
        }
        out
    }

    fn distinct_units(d: &[u8]) -> usize {
        d.chunks(UNIT).collect::<HashSet<_>>().len()
    }

    #[test]
    fn every_unit_differs_at_any_request_size() {
        for len in [4096, 65536, 1 << 20, 3 << 20] {
            let s = Shape::new(0, 0, len);
            let d = write(&s, len, (8 << 20) / len as u64, 7);
            assert_eq!(distinct_units(&d), d.len() / UNIT, "len {len}");
        }
    }

    #[test]
    fn the_file_repeats_no_closer_than_the_period() {
        let s = Shape::new(0, 0, 4096);
        let d = write(&s, 4096, 512, 1);
        // Away from the stamps, byte X is base[X % period].
        assert_eq!(d[100..4096], d[s.period + 100..s.period + 4096]);
        assert_ne!(d[100..4096], d[4096 + 100..8192]);
    }

    #[test]
    fn dedupe_share_is_exact_per_hundred_units() {
        let s = Shape::new(0, 50, 4096);
        assert_eq!((0..100).filter(|&u| s.is_duplicate(u)).count(), 50);
        let d = write(&s, 4096, 2048, 3);
        let units = d.len() / UNIT;
        let dup = units - distinct_units(&d);
        assert!(
            (units * 45 / 100..=units * 55 / 100).contains(&dup),
            "{dup}"
        );
    }

    #[test]
    fn stamps_skip_exactly_the_duplicate_units_across_the_period_wrap() {
        let len = 3 << 20;
        let s = Shape::new(0, 30, len);
        let mut buf = vec![0u8; s.buffer_len(len)];
        s.fill(&mut buf);
        let first = (s.period - 5 * UNIT) as u64; // starts 5 units before a wrap
        let at = s.place(&mut buf, first, len, 11);
        let req = &buf[at..at + len];
        for (i, unit) in req.chunks(UNIT).enumerate() {
            let off = first + (i * UNIT) as u64;
            let word = u64::from_le_bytes(unit[..8].try_into().unwrap());
            let dup = s.is_duplicate(s.unit_in_period(off));
            assert_eq!(word == off, !dup, "unit {i} at {off}");
        }
    }

    #[test]
    fn compress_zeroes_the_tail_of_each_unit() {
        let s = Shape::new(50, 0, 4096);
        let d = write(&s, 4096, 4, 3);
        assert!(d[2048..4096].iter().all(|&b| b == 0));
        assert!(d[16..2048].iter().filter(|&&b| b == 0).count() < 40);
    }

    #[test]
    fn unaligned_requests_stamp_the_units_they_start() {
        let s = Shape::new(0, 0, 1024);
        let mut buf = vec![0u8; s.buffer_len(1024)];
        s.fill(&mut buf);
        let at = s.place(&mut buf, 4096 - 512, 1024, 9);
        let r = &buf[at..at + 1024];
        assert_eq!(u64::from_le_bytes(r[512..520].try_into().unwrap()), 4096);
        assert_eq!(u64::from_le_bytes(r[520..528].try_into().unwrap()), 9);
    }

    #[test]
    fn tags_differ_by_run_target_and_pass() {
        let t: HashSet<u64> = [tag(1, 0, 1), tag(1, 1, 1), tag(1, 0, 2), tag(2, 0, 1)].into();
        assert_eq!(t.len(), 4);
    }
}
