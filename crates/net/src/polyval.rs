//! POLYVAL (RFC 8452), the universal hash inside [`crate::seal`]'s tag,
//! fast enough to run over every byte of a copy at memory speed.
//!
//! The RustCrypto `polyval` crate is the reference and the fallback; it
//! multiplies 4 blocks per reduction with 128-bit `pclmulqdq` (about 6
//! GB/s on one core here). Where the CPU has AVX-512 with VPCLMULQDQ,
//! [`Polyval::hash`] takes 32 blocks (512 bytes) per reduction, 4 blocks
//! per carry-less multiply, against the powers H^32..H^1 of the key
//! (aggregated reduction: S' = (S ^ X1)·H^32 ^ X2·H^31 ^ ... ^ X32·H, the
//! products summed unreduced and reduced once). Tests check it against
//! the crate, byte for byte, over every length up to a few blocks past
//! the 512-byte step and over random long inputs.

use polyval::universal_hash::UniversalHash;

/// Bytes of a POLYVAL block, key and result.
pub(crate) const BLOCK: usize = 16;

/// POLYVAL under one key H: [`Polyval::hash`] is POLYVAL(H, payload
/// padded with zeros to whole blocks).
#[derive(Clone)]
pub(crate) struct Polyval {
    soft: polyval::Polyval,
    #[cfg(target_arch = "x86_64")]
    wide: Option<wide::Powers>,
}

impl Polyval {
    /// POLYVAL under `h`; the wide path when this CPU has it.
    pub(crate) fn new(h: &[u8; BLOCK]) -> Polyval {
        Polyval {
            soft: polyval::Polyval::new(h.into()),
            #[cfg(target_arch = "x86_64")]
            wide: wide::Powers::new(h),
        }
    }

    /// POLYVAL of `data`, its last block padded with zeros.
    pub(crate) fn hash(&self, data: &[u8]) -> [u8; BLOCK] {
        #[cfg(target_arch = "x86_64")]
        if let Some(w) = &self.wide {
            return w.hash(data);
        }
        self.reference(data)
    }

    /// The crate's POLYVAL (the fallback, and the tests' reference).
    fn reference(&self, data: &[u8]) -> [u8; BLOCK] {
        let mut p = self.soft.clone();
        p.update_padded(data);
        p.finalize().into()
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    //! The AVX-512 VPCLMULQDQ path. Field products follow the
    //! AES-GCM-SIV reference's `gfmul` (Gueron, Langley, Lindell):
    //! schoolbook 128x128 carry-less multiply, then two folds by the
    //! constant 0xc2000000000000000000000000000001 that multiply by
    //! x^-128 modulo x^128 + x^127 + x^126 + x^121 + 1, which is POLYVAL's
    //! dot product.

    use super::BLOCK;
    use std::arch::x86_64::*;

    /// Blocks per reduction (one step of the loop: 8 registers of 4).
    const STEP_BLOCKS: usize = 32;
    /// Bytes per step.
    const STEP: usize = STEP_BLOCKS * BLOCK;

    /// H^32..H^1 laid out as the loop multiplies them: block k of a
    /// step (0-based) by H^(32-k), register i holding blocks 4i..4i+3.
    #[derive(Clone)]
    pub(super) struct Powers {
        /// Lane j of register i is H^(32 - 4i - j), as bytes.
        lanes: [[u8; 64]; STEP_BLOCKS / 4],
        /// H itself, for blocks past the last whole step.
        h: [u8; BLOCK],
    }

    /// True when this CPU has what the wide path needs (AVX-512F with
    /// VPCLMULQDQ: VPCLMULQDQ alone, on AVX2 only, is not enough).
    pub(super) fn available() -> bool {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("vpclmulqdq")
            && is_x86_feature_detected!("pclmulqdq")
    }

    impl Powers {
        /// The powers of `h`, or None when this CPU lacks the
        /// instructions.
        pub(super) fn new(h: &[u8; BLOCK]) -> Option<Powers> {
            if !available() {
                return None;
            }
            let mut pow = [[0u8; BLOCK]; STEP_BLOCKS + 1];
            pow[1] = *h;
            for k in 2..=STEP_BLOCKS {
                // SAFETY: `available()` found pclmulqdq (sse2 is x86_64's
                // baseline).
                pow[k] = unsafe { store(gfmul(load(&pow[k - 1]), load(h))) };
            }
            let mut lanes = [[0u8; 64]; STEP_BLOCKS / 4];
            for (i, reg) in lanes.iter_mut().enumerate() {
                for (j, lane) in reg.chunks_exact_mut(BLOCK).enumerate() {
                    lane.copy_from_slice(&pow[STEP_BLOCKS - 4 * i - j]);
                }
            }
            Some(Powers { lanes, h: *h })
        }

        /// POLYVAL of `data`, its last block padded with zeros.
        pub(super) fn hash(&self, data: &[u8]) -> [u8; BLOCK] {
            // SAFETY: a `Powers` exists only where `available()` found
            // avx512f, vpclmulqdq and pclmulqdq.
            unsafe { store(self.run(data)) }
        }

        #[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq")]
        fn run(&self, data: &[u8]) -> __m128i {
            let mut keys = [_mm512_setzero_si512(); STEP_BLOCKS / 4];
            for (k, l) in keys.iter_mut().zip(&self.lanes) {
                // SAFETY: `l` is 64 readable bytes; unaligned load.
                *k = unsafe { _mm512_loadu_si512(l.as_ptr().cast()) };
            }
            let mut acc = _mm_setzero_si128();
            let mut steps = data.chunks_exact(STEP);
            for step in steps.by_ref() {
                acc = step32(acc, step, &keys);
            }
            let h = load(&self.h);
            let mut blocks = steps.remainder().chunks_exact(BLOCK);
            for b in blocks.by_ref() {
                let b = <[u8; BLOCK]>::try_from(b).unwrap_or_default();
                acc = gfmul(_mm_xor_si128(acc, load(&b)), h);
            }
            let tail = blocks.remainder();
            if !tail.is_empty() {
                let mut last = [0u8; BLOCK];
                last[..tail.len()].copy_from_slice(tail);
                acc = gfmul(_mm_xor_si128(acc, load(&last)), h);
            }
            acc
        }
    }

    /// One step: 32 blocks folded into `acc`, one reduction.
    #[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq")]
    #[inline]
    fn step32(acc: __m128i, step: &[u8], keys: &[__m512i; STEP_BLOCKS / 4]) -> __m128i {
        let (mut lo, mut hi, mut mid) = (
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
        );
        for (i, chunk) in step.chunks_exact(64).enumerate() {
            // SAFETY: `chunk` is 64 readable bytes; unaligned load.
            let mut x = unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) };
            if i == 0 {
                x = _mm512_xor_si512(x, _mm512_zextsi128_si512(acc));
            }
            let k = keys[i];
            lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(x, k, 0x00));
            hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(x, k, 0x11));
            mid = _mm512_xor_si512(mid, _mm512_clmulepi64_epi128(x, k, 0x01));
            mid = _mm512_xor_si512(mid, _mm512_clmulepi64_epi128(x, k, 0x10));
        }
        let (lo, hi, mid) = (fold4(lo), fold4(hi), fold4(mid));
        reduce(
            _mm_xor_si128(lo, _mm_slli_si128(mid, 8)),
            _mm_xor_si128(hi, _mm_srli_si128(mid, 8)),
        )
    }

    /// The XOR of a register's four 128-bit lanes.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn fold4(v: __m512i) -> __m128i {
        let y = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
        _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1))
    }

    /// POLYVAL's dot product a·b·x^-128.
    #[target_feature(enable = "pclmulqdq")]
    #[inline]
    fn gfmul(a: __m128i, b: __m128i) -> __m128i {
        let lo = _mm_clmulepi64_si128(a, b, 0x00);
        let hi = _mm_clmulepi64_si128(a, b, 0x11);
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128(a, b, 0x10),
            _mm_clmulepi64_si128(a, b, 0x01),
        );
        reduce(
            _mm_xor_si128(lo, _mm_slli_si128(mid, 8)),
            _mm_xor_si128(hi, _mm_srli_si128(mid, 8)),
        )
    }

    /// The 256-bit product `hi:lo` times x^-128, reduced.
    #[target_feature(enable = "pclmulqdq")]
    #[inline]
    fn reduce(lo: __m128i, hi: __m128i) -> __m128i {
        // Low qword 1, high qword 0xc2000000_00000000.
        let poly = _mm_set_epi64x(0xc200_0000_0000_0000_u64 as i64, 1);
        let mut t = lo;
        for _ in 0..2 {
            let m = _mm_clmulepi64_si128(t, poly, 0x10);
            t = _mm_xor_si128(_mm_shuffle_epi32(t, 78), m);
        }
        _mm_xor_si128(hi, t)
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn load(b: &[u8; BLOCK]) -> __m128i {
        // SAFETY: `b` is 16 readable bytes; unaligned load.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn store(v: __m128i) -> [u8; BLOCK] {
        let mut b = [0u8; BLOCK];
        // SAFETY: `b` is 16 writable bytes; unaligned store.
        unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), v) };
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        (0..n as u64)
            .map(|i| (iolab_core::random::splitmix_nth(seed, i) >> 11) as u8)
            .collect()
    }

    #[test]
    fn rfc_8452_vector() {
        // RFC 8452, Appendix A: POLYVAL(H, X_1, X_2).
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let h: [u8; 16] = hex("25629347589242761d31f826ba4b757b").try_into().unwrap();
        let x = hex("4f4f95668c83dfb6401762bb2d01a262d1a24ddd2721d006bbe45f20d3c9f362");
        let want = hex("f7a3b47b846119fae5b7866cf5e5b77e");
        let p = Polyval::new(&h);
        assert_eq!(p.reference(&x).to_vec(), want);
        assert_eq!(p.hash(&x).to_vec(), want);
    }

    #[test]
    fn the_wide_path_is_the_reference_at_every_short_length() {
        let p = Polyval::new(&[0x5a; 16]);
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("CI").is_some() && wide::available() {
            assert!(p.wide.is_some(), "the wide path is used where it can be");
        }
        let data = bytes(7, 3 * 512 + 40);
        for n in 0..=data.len() {
            assert_eq!(p.hash(&data[..n]), p.reference(&data[..n]), "length {n}");
        }
    }

    proptest! {
        #[test]
        fn the_wide_path_is_the_reference(
            key in any::<[u8; 16]>(),
            seed in any::<u64>(),
            len in 0usize..(1 << 18),
        ) {
            let p = Polyval::new(&key);
            let data = bytes(seed, len);
            prop_assert_eq!(p.hash(&data), p.reference(&data));
        }
    }
}
