//! CRC-32C of payloads that are one fixed window of bytes with small
//! patches rewritten per payload (a generated block whose every 4 KiB
//! carries a 16-byte stamp): computed from the window's sum, taken once,
//! and the patches alone, instead of a pass over every byte.
//!
//! CRC-32C is affine over GF(2): for equal lengths, crc(A ^ B) = crc(A) ^
//! crc(B) ^ crc(0ⁿ). A payload P is its window W with the patched slots
//! zeroed, XOR a delta D that is zero except in those slots, so crc(P) =
//! crc(W) ^ L(D), where L is the CRC's linear part (register starting at
//! zero, no final inversion). L(D) is run by Horner's rule over the
//! slots: between two slots the register is carried over `stride - 16`
//! zero bytes by a precomputed linear map ([`ZeroShift`]), and each slot's
//! 16 bytes go through the hardware CRC. A 1 MiB payload with 256 slots
//! costs 256 such steps instead of a CRC over 1 MiB.
//!
//! ```
//! use iolab_net::sum::{SlotSum, SLOT_BYTES};
//! let stride = 4096;
//! let mut payload: Vec<u8> = (0..4 * stride).map(|i| (i * 7 % 251) as u8).collect();
//! let sums = SlotSum::new(stride).unwrap();
//! // Slots 0, 1 and 3 are rewritten per payload; slot 2 never is.
//! let stamped = [true, true, false, true];
//! let window = sums.window_crc(&payload, stamped.iter().copied());
//! let patches = [Some([1u8; SLOT_BYTES]), Some([2; SLOT_BYTES]), None, Some([3; SLOT_BYTES])];
//! for (k, p) in patches.iter().enumerate() {
//!     if let Some(p) = p {
//!         payload[k * stride..k * stride + SLOT_BYTES].copy_from_slice(p);
//!     }
//! }
//! assert_eq!(sums.crc(window, patches), crc32c::crc32c(&payload));
//! ```

/// Bytes of a patch: the slot at the head of every stride.
pub const SLOT_BYTES: usize = 16;

/// Zero bytes fed to the CRC for a slot that holds no patch.
const ZEROS: [u8; SLOT_BYTES] = [0; SLOT_BYTES];

/// The linear map that carries a CRC-32C register over `n` zero bytes,
/// as four 256-entry tables (one per byte of the register): four
/// look-ups and three XORs per use, whatever `n` is.
#[derive(Clone)]
pub struct ZeroShift {
    table: Box<[[u32; 256]; 4]>,
}

impl std::fmt::Debug for ZeroShift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeroShift").finish_non_exhaustive()
    }
}

impl ZeroShift {
    /// The map for `n` zero bytes. Its columns come from
    /// `crc32c_combine`, whose part linear in the first CRC is exactly
    /// this shift.
    pub fn new(n: usize) -> ZeroShift {
        let mut cols = [0u32; 32];
        for (i, c) in cols.iter_mut().enumerate() {
            *c = crc32c::crc32c_combine(1 << i, 0, n);
        }
        let mut table = Box::new([[0u32; 256]; 4]);
        for (b, t) in table.iter_mut().enumerate() {
            for (x, e) in t.iter_mut().enumerate() {
                *e = (0..8)
                    .filter(|bit| x >> bit & 1 == 1)
                    .fold(0, |acc, bit| acc ^ cols[8 * b + bit]);
            }
        }
        ZeroShift { table }
    }

    /// The register `v` carried over the zero bytes.
    #[inline]
    pub fn apply(&self, v: u32) -> u32 {
        let t = &self.table;
        t[0][(v & 0xff) as usize]
            ^ t[1][(v >> 8 & 0xff) as usize]
            ^ t[2][(v >> 16 & 0xff) as usize]
            ^ t[3][(v >> 24) as usize]
    }
}

/// Sums of payloads whose length is a multiple of `stride` and whose
/// only bytes that change from payload to payload are the
/// [`SLOT_BYTES`] at the head of each stride (slot k at `k * stride`).
#[derive(Debug, Clone)]
pub struct SlotSum {
    stride: usize,
    gap: ZeroShift,
}

impl SlotSum {
    /// Sums for slots every `stride` bytes; None when `stride` is shorter
    /// than a slot.
    pub fn new(stride: usize) -> Option<SlotSum> {
        (stride >= SLOT_BYTES).then(|| SlotSum {
            stride,
            gap: ZeroShift::new(stride - SLOT_BYTES),
        })
    }

    /// Bytes from one slot to the next.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// CRC-32C of `window` with every slot for which `patched` says true
    /// taken as zero (slot k is the k-th item; slots past its end are
    /// kept). One pass over the window, no allocation: taken once per
    /// window, the per-payload part is [`SlotSum::crc`].
    pub fn window_crc(&self, window: &[u8], patched: impl IntoIterator<Item = bool>) -> u32 {
        let mut crc = 0;
        let mut patched = patched.into_iter();
        for chunk in window.chunks(self.stride) {
            let zero = patched.next().unwrap_or(false) && chunk.len() >= SLOT_BYTES;
            crc = if zero {
                let c = crc32c::crc32c_append(crc, &ZEROS);
                crc32c::crc32c_append(c, &chunk[SLOT_BYTES..])
            } else {
                crc32c::crc32c_append(crc, chunk)
            };
        }
        crc
    }

    /// CRC-32C of the payload made of the window whose sum with its
    /// patched slots zeroed is `window_crc` and of `slots`: one item per
    /// stride of the payload, in order, `Some(bytes)` for a slot written
    /// with those bytes, None for one that keeps the window's bytes (a
    /// slot that was not zeroed in `window_crc`). The payload is as long
    /// as the items times the stride. Allocation-free.
    #[inline]
    pub fn crc(
        &self,
        window_crc: u32,
        slots: impl IntoIterator<Item = Option<[u8; SLOT_BYTES]>>,
    ) -> u32 {
        // The register of L(D), D the payload XOR its zeroed window: zero
        // outside the slots, so leading zeros leave it at 0 and each
        // step is "carry over the gap, then take the slot's bytes".
        let mut acc = 0u32;
        for slot in slots {
            let bytes = slot.as_ref().unwrap_or(&ZEROS);
            // crc32c_append inverts on the way in and out; the register
            // itself runs un-inverted.
            acc = !crc32c::crc32c_append(!self.gap.apply(acc), bytes);
        }
        // From the end of the last slot to the end of the payload.
        window_crc ^ self.gap.apply(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_zero_shift_is_appending_zero_bytes() {
        let data = b"some bytes to carry";
        for n in [0usize, 1, 7, 16, 4080, 1 << 20] {
            let s = ZeroShift::new(n);
            let raw = !crc32c::crc32c_append(!0, data);
            let with_zeros = [data.as_slice(), &vec![0u8; n]].concat();
            let want = !crc32c::crc32c_append(!0, &with_zeros);
            assert_eq!(s.apply(raw), want, "n {n}");
        }
    }

    #[test]
    fn a_stride_shorter_than_a_slot_is_refused() {
        assert!(SlotSum::new(15).is_none());
        assert_eq!(SlotSum::new(16).map(|s| s.stride()), Some(16));
    }

    /// Payload bytes for the properties: a window, some slots patched.
    fn patch(window: &[u8], stride: usize, slots: &[Option<[u8; 16]>]) -> Vec<u8> {
        let mut p = window.to_vec();
        for (k, s) in slots.iter().enumerate() {
            if let Some(s) = s {
                p[k * stride..k * stride + SLOT_BYTES].copy_from_slice(s);
            }
        }
        p
    }

    proptest! {
        #[test]
        fn the_slot_sum_is_the_crc_of_the_patched_payload(
            stride in prop_oneof![Just(16usize), Just(17), Just(64), Just(4096)],
            seed in any::<u64>(),
            slots in proptest::collection::vec(proptest::option::of(any::<[u8; 16]>()), 0..12),
        ) {
            let len = stride * slots.len();
            let window: Vec<u8> = (0..len as u64)
                .map(|i| (iolab_core::random::splitmix_nth(seed, i) >> 17) as u8)
                .collect();
            let sums = SlotSum::new(stride).unwrap();
            let w = sums.window_crc(&window, slots.iter().map(Option::is_some));
            let payload = patch(&window, stride, &slots);
            prop_assert_eq!(sums.crc(w, slots.iter().copied()), crc32c::crc32c(&payload));
        }

        #[test]
        fn a_flipped_bit_of_the_payload_is_seen(
            seed in any::<u64>(),
            at in 0usize..(4 * 64),
            bit in 0u8..8,
        ) {
            let stride = 64;
            let window: Vec<u8> = (0..4 * stride as u64)
                .map(|i| splitmix(seed, i))
                .collect();
            let sums = SlotSum::new(stride).unwrap();
            let slots = [Some([9u8; 16]), None, Some([7; 16]), Some([5; 16])];
            let w = sums.window_crc(&window, slots.iter().map(Option::is_some));
            let mut bad = patch(&window, stride, &slots);
            bad[at] ^= 1 << bit;
            prop_assert_ne!(sums.crc(w, slots), crc32c::crc32c(&bad));
        }
    }

    fn splitmix(seed: u64, i: u64) -> u8 {
        (iolab_core::random::splitmix_nth(seed, i) >> 13) as u8
    }
}
