//! The checksum of each frame a `null` source sends, taken without a
//! pass over the request's bytes where the data pattern allows it.
//!
//! - A pattern that writes the same bytes for every request (zeros, a
//!   character, a repeated string): summed once per pass.
//! - Unique data (the default, `random`, `compress PCT`, `dedupe PCT`):
//!   a request of whole 4 KiB units at a 4 KiB-aligned offset is the
//!   window of the base at `offset % period` with the 16-byte stamp of
//!   each unit rewritten (duplicate units keep the base's bytes). Each
//!   window's sum with its stamp slots zeroed is taken the first time
//!   that window is sent (one window for 1 MiB requests over the default
//!   1 MiB period, 256 for 4 KiB requests); each frame then costs its
//!   stamps alone ([`iolab_net::sum::SlotSum`]).
//! - Anything else (a file source, `sequenced`, `wholefile`, an
//!   unaligned or short request, a period of more than [`MAX_WINDOWS`]
//!   units): the frame is summed in full as it is sent.

use crate::plan::datapat::DataPattern;
use crate::plan::unique::{Shape, UNIT};
use iolab_net::frame::PayloadSum;
use iolab_net::sum::SlotSum;

/// Most windows of the base a QThread keeps the sum of: a period of up
/// to 16 MiB (requests up to 16 MiB) in 4 KiB steps, 32 KiB of sums.
pub const MAX_WINDOWS: usize = 4096;

/// How a source QThread sums its frames for one pass.
#[derive(Debug)]
pub enum FrameSums {
    /// Every full request holds the same bytes: their sum, taken once.
    Constant(PayloadSum),
    /// Unique data from windows of a base (boxed: the shift tables).
    Unique(Box<UniqueSums>),
    /// Every frame is summed in full.
    Full,
}

/// Sums of unique-data requests of one size in one pass.
#[derive(Debug)]
pub struct UniqueSums {
    shape: Shape,
    tag: u64,
    len: usize,
    slots: SlotSum,
    /// Per window start (in units of the buffer): its sum with the
    /// stamped slots zeroed, once taken.
    windows: Vec<Option<u32>>,
    /// The frame's sum: the length's map, the CRC set per frame.
    payload: PayloadSum,
}

impl FrameSums {
    /// The sums for a source QThread sending requests of `len` bytes in
    /// pass `pass`. `generated` is true when the requests are the data
    /// pattern (the `null` source) and `buf` is the QThread's buffer,
    /// filled with the pattern.
    pub fn new(pattern: &DataPattern, generated: bool, buf: &[u8], len: usize, pass: u32) -> Self {
        if !generated || len == 0 || len > buf.len() {
            return FrameSums::Full;
        }
        if !pattern.varies_per_request() {
            return FrameSums::Constant(PayloadSum::new(&buf[..len]));
        }
        let Some(shape) = pattern.shape() else {
            return FrameSums::Full;
        };
        let windows = shape.period / UNIT;
        let slots =
            SlotSum::new(UNIT).filter(|_| len.is_multiple_of(UNIT) && windows <= MAX_WINDOWS);
        let Some(slots) = slots else {
            return FrameSums::Full;
        };
        FrameSums::Unique(Box::new(UniqueSums {
            shape,
            tag: pattern.stamp_tag(pass),
            len,
            slots,
            windows: vec![None; windows],
            // Its CRC is replaced per frame; only the length's map counts.
            payload: PayloadSum::new(&buf[..len]),
        }))
    }

    /// The sum of the request at file offset `offset` of `len` bytes,
    /// which [`DataPattern::place`] put at `at` in `buf` (or, for a
    /// pattern that does not vary, at 0); None when it must be summed in
    /// full. Allocation-free.
    #[inline]
    pub fn sum(&mut self, buf: &[u8], at: usize, offset: u64, len: usize) -> Option<&PayloadSum> {
        match self {
            FrameSums::Constant(s) => (len == s.len() as usize).then_some(&*s),
            FrameSums::Unique(u) => u.sum(buf, at, offset, len),
            FrameSums::Full => None,
        }
    }
}

impl UniqueSums {
    /// See [`FrameSums::sum`].
    #[inline]
    fn sum(&mut self, buf: &[u8], at: usize, offset: u64, len: usize) -> Option<&PayloadSum> {
        let s = &self.shape;
        // Only the window `place` chose for this offset holds its bytes
        // (it falls back to 0 when the buffer is too short).
        let aligned = len == self.len && offset.is_multiple_of(UNIT as u64);
        if !aligned || at != (offset % s.period as u64) as usize || at + len > buf.len() {
            return None;
        }
        let window = &buf[at..at + len];
        let stamps = || s.stamps(offset, len, self.tag);
        let slot = self.windows.get_mut(at / UNIT)?;
        let zeroed = *slot.get_or_insert_with(|| {
            let stamped = stamps().map(|(_, stamp)| stamp.is_some());
            self.slots.window_crc(window, stamped)
        });
        let crc = self.slots.crc(zeroed, stamps().map(|(_, stamp)| stamp));
        self.payload.set_crc(crc);
        Some(&self.payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::datapat::PatternKind;
    use iolab_net::frame::{Header, Kind};
    use proptest::prelude::*;

    fn pattern(compress: u8, dedupe: u8, len: usize, key: u64) -> DataPattern {
        let mut p = DataPattern {
            compress_pct: compress,
            dedupe_pct: dedupe,
            ..DataPattern::default()
        };
        p.fit(len, key, 3);
        p
    }

    /// Sends `offsets` as a `null` source does (place, then sum) and
    /// checks every sum against the bytes sent; returns how many were
    /// taken without a full pass.
    fn send(p: &DataPattern, len: usize, pass: u32, offsets: &[u64]) -> usize {
        let mut buf = vec![0u8; p.buffer_len(len)];
        p.prefill(&mut buf, 0);
        let mut sums = FrameSums::new(p, true, &buf, len, pass);
        let mut fast = 0;
        for &off in offsets {
            let at = p.place(&mut buf, off, len, pass);
            let sent = &buf[at..at + len];
            if let Some(sum) = sums.sum(&buf, at, off, len) {
                assert_eq!(
                    Header::with_sum(Kind::Data, 0, off, 9, sum),
                    Header::new(Kind::Data, 0, off, 9, sent),
                    "len {len} offset {off}"
                );
                fast += 1;
            }
        }
        fast
    }

    fn lengths() -> impl Strategy<Value = usize> {
        prop_oneof![
            Just(4096usize),
            Just(65536),
            Just(1 << 20),
            Just(3 << 20),
            Just(1000),
            Just(3 * 4096 + 512),
            (1usize..64).prop_map(|u| u * 4096),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the shape, size, offsets (aligned, unaligned, across
        /// the period's end) and pass, the frame's checksum is the one
        /// of the bytes on the wire, and aligned whole-unit requests get
        /// it without a full pass.
        #[test]
        fn every_frame_sum_is_the_crc_of_the_bytes_sent(
            compress in prop_oneof![Just(0u8), 0u8..100],
            dedupe in prop_oneof![Just(0u8), 0u8..=100],
            len in lengths(),
            key in any::<u64>(),
            pass in 0u32..4,
            units in proptest::collection::vec(0u64..2048, 1..6),
            unaligned in proptest::collection::vec(prop_oneof![Just(0u64), 1u64..4096], 6),
        ) {
            let p = pattern(compress, dedupe, len, key);
            let offsets: Vec<u64> = units
                .iter()
                .zip(&unaligned)
                .map(|(u, d)| u * UNIT as u64 + d)
                .collect();
            let fast = send(&p, len, pass, &offsets);
            let aligned = offsets.iter().filter(|&&o| o.is_multiple_of(UNIT as u64)).count();
            if len.is_multiple_of(UNIT) {
                prop_assert_eq!(fast, aligned);
            } else {
                prop_assert_eq!(fast, 0);
            }
        }
    }

    #[test]
    fn a_sequential_copy_reuses_one_window_per_start() {
        let len = 1 << 20;
        let p = pattern(0, 0, len, 77);
        let offsets: Vec<u64> = (0..8).map(|n| n * len as u64).collect();
        assert_eq!(send(&p, len, 1, &offsets), 8);
        let small = pattern(25, 40, 4096, 5);
        let offsets: Vec<u64> = (0..600).map(|n| n * 4096).collect();
        assert_eq!(send(&small, 4096, 2, &offsets), 600);
    }

    #[test]
    fn a_short_last_request_and_another_pass_are_summed_right() {
        let len = 64 * 1024;
        let p = pattern(0, 10, len, 1);
        let mut buf = vec![0u8; p.buffer_len(len)];
        p.prefill(&mut buf, 0);
        for pass in [0, 1] {
            let mut sums = FrameSums::new(&p, true, &buf, len, pass);
            for (off, n) in [(0u64, len), (len as u64, len), (2 * len as u64, 8192)] {
                let at = p.place(&mut buf, off, n, pass);
                let got = sums.sum(&buf, at, off, n).map(|s| s.len());
                // The short one is summed in full: its length differs.
                assert_eq!(got, (n == len).then_some(n as u32), "pass {pass} at {off}");
            }
        }
        let mut sums = FrameSums::new(&p, true, &buf, len, 0);
        let at = p.place(&mut buf, 0, len, 0);
        let crc = Header::with_sum(Kind::Data, 0, 0, 0, sums.sum(&buf, at, 0, len).unwrap()).crc;
        let at1 = p.place(&mut buf, 0, len, 1);
        assert_eq!(at, at1);
        assert_ne!(
            crc,
            Header::new(Kind::Data, 0, 0, 0, &buf[at..at + len]).crc,
            "another pass's stamps give another sum"
        );
    }

    #[test]
    fn other_patterns_and_file_sources_are_summed_in_full_or_once() {
        let len = 8192;
        let mut buf = vec![0u8; 4 * len];
        let p = pattern(0, 0, len, 1);
        assert!(matches!(
            FrameSums::new(&p, false, &buf, len, 0),
            FrameSums::Full
        ));
        let mut seq = p.clone();
        seq.kind = PatternKind::Sequenced;
        assert!(matches!(
            FrameSums::new(&seq, true, &buf, len, 0),
            FrameSums::Full
        ));
        let mut zeros = p.clone();
        zeros.kind = PatternKind::Byte(0);
        zeros.prefill(&mut buf[..len], 0);
        let mut sums = FrameSums::new(&zeros, true, &buf, len, 0);
        let sum = sums.sum(&buf, 0, 4096, len).unwrap();
        assert_eq!(
            Header::with_sum(Kind::Data, 0, 4096, 1, sum),
            Header::new(Kind::Data, 0, 4096, 1, &buf[..len])
        );
        assert!(sums.sum(&buf, 0, 0, 100).is_none(), "a short request");
        let huge = pattern(0, 0, 32 << 20, 1);
        let big = vec![0u8; 1 << 16];
        assert!(matches!(
            FrameSums::new(&huge, true, &big, 1 << 16, 0),
            FrameSums::Full
        ));
    }
}
