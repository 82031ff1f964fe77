//! What transfers hold, and the check of what is read back.
//!
//! Without `-l`, iolab's unique data (`iolab_core::unique`): a random
//! base laid over the file with a period of at least 1 MiB and the first
//! 16 bytes of every 4 KiB stamped with its file offset and a tag of the
//! signature and the writer (IOR's pretend rank); a write is taken from
//! the buffer in place, without a copy. With `-l`, IOR's packet types,
//! word for word as IOR 4 lays them out (native byte order):
//!
//! - `t`: word i of every transfer is `rank << 32 | (signature + i)`;
//! - `o`: `t`, and word 512 j of a transfer at offset X is
//!   `rank << 32 | (u32)(X * (j + 1))`;
//! - `i`: every word `rand_r` of signature + rank (glibc's), twice, as
//!   the high and low halves, with the offset words of `o`;
//! - `r`: word i is a generator's i-th output from `rand_r` of
//!   signature + rank + X.
//!
//! A check ([`Generator::first_difference`]) builds what the writer
//! wrote at that offset and compares all of it, so a read names the
//! first byte that differs; IOR counts one error per transfer.

use crate::params::{Packet, Params};
use iolab_core::buffer::IoBuffer;
use iolab_core::unique::Shape;

/// IOR's multiplier of its `r` packets.
const GOLDEN: u64 = 0x9e37_ffff_fffc_0001;
/// Words between the offset words of `o` and `i` (4 KiB).
const STRIDE_WORDS: usize = 512;
/// Largest unique-data transfer read into the cache before it is
/// written (`iolab_core::buffer::warm`). The base is at least 1 MiB, so
/// a transfer's bytes have left the cache since the window last passed,
/// and a file system copies them under the file's lock, where on a
/// shared file the other tasks wait: IOR's source, a buffer of one
/// transfer, stays in the cache. Up to a quarter of a core's L2 (1 MiB
/// on the machine this was measured on) the warmed bytes are still
/// there when the copy starts; beyond, warming would only add a read.
/// docs/ior.md ("Speed") gives the figures.
const WARM_MAX: usize = 256 << 10;

/// glibc's `rand_r`: three steps of its LCG folded into 31 bits.
pub fn rand_r(seed: &mut u32) -> u32 {
    let step = |n: u32| n.wrapping_mul(1_103_515_245).wrapping_add(12_345);
    let mut next = step(*seed);
    let mut result = (next / 65_536) % 2048;
    next = step(next);
    result = (result << 10) ^ ((next / 65_536) % 1024);
    next = step(next);
    result = (result << 10) ^ ((next / 65_536) % 1024);
    *seed = next;
    result
}

/// Bytes of buffer one generator needs for `p`'s transfers.
pub fn generator_bytes(p: &Params) -> u64 {
    let len = p.transfer_bytes as usize;
    match p.packet {
        Packet::Unique => Shape::new(0, 0, len).buffer_len(len) as u64,
        _ => p.transfer_bytes,
    }
}

/// Bytes of buffer a task needs for `p`: a generator to write, one to
/// check, and the read buffer.
pub fn buffer_bytes(p: &Params) -> u64 {
    2 * generator_bytes(p) + p.transfer_bytes
}

/// Who wrote a transfer, as its bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer {
    /// IOR's signature (`-G`, or the iteration's clock).
    pub signature: u32,
    /// IOR's pretend rank: the task whose data it is.
    pub rank: u32,
}

/// Makes the bytes of transfers (to write them, or to check them).
pub struct Generator {
    packet: Packet,
    who: Writer,
    len: usize,
    shape: Shape,
    tag: u64,
    buf: IoBuffer,
    warm: bool,
}

impl Generator {
    /// A generator of `len`-byte transfers of `packet` by `who`, its
    /// buffer page-aligned (O_DIRECT).
    pub fn new(packet: Packet, who: Writer, len: usize) -> std::io::Result<Generator> {
        let shape = Shape::new(0, 0, len);
        let size = match packet {
            Packet::Unique => shape.buffer_len(len),
            _ => len,
        };
        let buf = IoBuffer::heap(size.max(1), iolab_core::buffer::page_size())?;
        let mut g = Generator {
            packet,
            who,
            len,
            shape,
            tag: iolab_core::random::mix(u64::from(who.signature) << 32 | u64::from(who.rank)),
            buf,
            warm: false,
        };
        g.fill();
        Ok(g)
    }

    /// The same generator, reading each unique-data transfer of up to
    /// `WARM_MAX` bytes into the cache before handing it out when
    /// `shared` (tasks that write one file take turns on its lock; a
    /// task alone would only pay for the read).
    pub fn warming(mut self, shared: bool) -> Generator {
        self.warm = shared;
        self
    }

    /// The writer it makes transfers for.
    pub fn writer(&self) -> Writer {
        self.who
    }

    /// Makes the buffer's base (once per iteration: IOR's
    /// generate_memory_pattern).
    fn fill(&mut self) {
        let who = self.who;
        let buf = self.buf.as_mut_slice();
        match self.packet {
            Packet::Unique => self.shape.fill(buf),
            Packet::Timestamp | Packet::Offset => {
                let base = who.signature as i32 as i64 as u64;
                for_words(buf, |i| {
                    u64::from(who.rank) << 32 | base.wrapping_add(i as u64)
                });
            }
            Packet::Incompressible => {
                let mut seed = who.signature.wrapping_add(who.rank);
                let hi = u64::from(rand_r(&mut seed)) << 32;
                let w = hi | u64::from(rand_r(&mut seed));
                for_words(buf, |_| w);
            }
            Packet::Random => {}
        }
    }

    /// The bytes of the transfer at file offset `offset`, ready to write
    /// (IOR's update_write_memory_pattern). Allocation-free.
    #[inline]
    pub fn prepare(&mut self, offset: u64) -> &[u8] {
        let (len, who) = (self.len, self.who);
        match self.packet {
            Packet::Unique => {
                let at = self
                    .shape
                    .place(self.buf.as_mut_slice(), offset, len, self.tag);
                let bytes = &self.buf.as_slice()[at..at + len];
                if self.warm && len <= WARM_MAX {
                    iolab_core::buffer::warm(bytes);
                }
                bytes
            }
            Packet::Timestamp => self.buf.as_slice(),
            Packet::Offset | Packet::Incompressible => {
                let buf = self.buf.as_mut_slice();
                let rank = u64::from(who.rank) << 32;
                let x = offset as u32;
                for (j, w) in buf.chunks_exact_mut(8).step_by(STRIDE_WORDS).enumerate() {
                    let v = rank | u64::from(x.wrapping_mul(j as u32 + 1));
                    w.copy_from_slice(&v.to_ne_bytes());
                }
                self.buf.as_slice()
            }
            Packet::Random => {
                let mut seed = who
                    .signature
                    .wrapping_add(who.rank)
                    .wrapping_add(offset as u32);
                let mut state = u64::from(rand_r(&mut seed));
                for_words(self.buf.as_mut_slice(), |_| {
                    state = state.wrapping_mul(GOLDEN) >> 3;
                    state
                });
                self.buf.as_slice()
            }
        }
    }

    /// Where `got`, read at file offset `offset`, first differs from
    /// what the writer wrote there (an index into `got`), or None.
    pub fn first_difference(&mut self, got: &[u8], offset: u64) -> Option<usize> {
        let want = self.prepare(offset);
        let n = got.len().min(want.len());
        if got[..n] == want[..n] {
            return (got.len() != want.len()).then_some(n);
        }
        got.iter().zip(want).position(|(a, b)| a != b)
    }
}

/// Sets every whole 8-byte word of `buf` to `f(i)`.
fn for_words(buf: &mut [u8], mut f: impl FnMut(usize) -> u64) {
    for (i, w) in buf.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&f(i).to_ne_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        /// glibc's own, which the libc crate does not bind.
        #[link_name = "rand_r"]
        fn glibc_rand_r(seed: *mut libc::c_uint) -> libc::c_int;
    }

    #[test]
    fn rand_r_is_glibc_s() {
        for s0 in [0u32, 1, 27, 573, 0xdead_beef] {
            let (mut a, mut b) = (s0, s0);
            for _ in 0..100 {
                // SAFETY: rand_r only reads and writes the seed it is given.
                let want = unsafe { glibc_rand_r(&mut b) } as u32;
                assert_eq!(rand_r(&mut a), want);
                assert_eq!(a, b);
            }
        }
    }

    fn writer() -> Writer {
        Writer {
            signature: 27,
            rank: 3,
        }
    }

    #[test]
    fn ior_packets_as_ior_lays_them_out() {
        let word = |b: &[u8], i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        let mut t = Generator::new(Packet::Timestamp, writer(), 8192).unwrap();
        let b = t.prepare(4096).to_vec();
        assert_eq!(word(&b, 0), 3 << 32 | 27);
        assert_eq!(word(&b, 600), 3 << 32 | 627);
        let mut o = Generator::new(Packet::Offset, writer(), 8192).unwrap();
        let b = o.prepare(4096).to_vec();
        assert_eq!(word(&b, 0), 3 << 32 | 4096);
        assert_eq!(word(&b, 512), 3 << 32 | 8192);
        assert_eq!(word(&b, 1), 3 << 32 | 28);
        let mut r = Generator::new(Packet::Random, writer(), 64).unwrap();
        let (a, b) = (r.prepare(0).to_vec(), r.prepare(8).to_vec());
        assert_ne!(a, b);
        assert_eq!(r.prepare(0), &a[..]);
    }

    #[test]
    fn unique_data_differs_by_offset_and_writer_and_checks_name_the_byte() {
        let mut w = Generator::new(Packet::Unique, writer(), 47008).unwrap();
        let a = w.prepare(0).to_vec();
        let b = w.prepare(47008).to_vec();
        assert_ne!(a, b);
        let mut other = Generator::new(
            Packet::Unique,
            Writer {
                rank: 4,
                ..writer()
            },
            47008,
        )
        .unwrap();
        assert_eq!(other.first_difference(&a, 0), Some(8));
        let mut check = Generator::new(Packet::Unique, writer(), 47008).unwrap();
        assert_eq!(check.first_difference(&b, 47008), None);
        // A warming writer (a shared file's) writes the same bytes.
        let mut warmed = Generator::new(Packet::Unique, writer(), 47008)
            .unwrap()
            .warming(true);
        assert_eq!(warmed.prepare(47008), &b[..]);
        let mut bad = b.clone();
        bad[40000] ^= 1;
        assert_eq!(check.first_difference(&bad, 47008), Some(40000));
        for p in [
            Packet::Timestamp,
            Packet::Offset,
            Packet::Incompressible,
            Packet::Random,
        ] {
            let mut g = Generator::new(p, writer(), 16384).unwrap();
            let mut data = g.prepare(65536).to_vec();
            let mut c = Generator::new(p, writer(), 16384).unwrap();
            assert_eq!(c.first_difference(&data, 65536), None, "{p:?}");
            data[9000] ^= 0x40;
            assert_eq!(c.first_difference(&data, 65536), Some(9000), "{p:?}");
        }
    }
}
