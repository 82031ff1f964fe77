//! Deterministic randomness: a permutation of item indices for -R (no
//! table in memory, so -n 10^8 costs nothing) and the data pattern of -w.

/// splitmix64: a tiny, well-mixed generator step.
#[inline]
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pseudo-random bijection of `0..n`: a 4-round Feistel network over the
/// next power of two, cycle-walking values that fall outside `0..n`.
#[derive(Debug, Clone, Copy)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    /// The permutation of `0..n` chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut keys = [0; 4];
        let mut s = seed;
        for k in &mut keys {
            s = splitmix64(s);
            *k = s;
        }
        Permutation {
            n,
            half_bits,
            mask: (1 << half_bits) - 1,
            keys,
        }
    }

    fn round(&self, v: u64) -> u64 {
        let (mut l, mut r) = (v >> self.half_bits, v & self.mask);
        for k in self.keys {
            let f = splitmix64(r ^ k) & self.mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The image of `i` (i < n).
    #[inline]
    pub fn apply(&self, i: u64) -> u64 {
        let mut v = self.round(i);
        while v >= self.n {
            v = self.round(v);
        }
        v
    }
}

/// The bytes mdtest writes: byte `i` is `i + 1` (mod 256), or, with a data
/// seed (-G), a splitmix64 stream of that seed. The first 8 bytes (1 byte
/// for short files) are replaced by the item number per file.
pub fn fill_pattern(buf: &mut [u8], seed: Option<u64>) {
    match seed {
        None => buf
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i as u64 + 1) as u8),
        Some(s) => {
            for (w, chunk) in buf.chunks_mut(8).enumerate() {
                let v = splitmix64(s ^ w as u64).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
        }
    }
}

/// Stamps the item number at the front of a buffer (mdtest's layout).
#[inline]
pub fn stamp_item(buf: &mut [u8], item: u64) {
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&item.to_le_bytes());
    } else if let Some(b) = buf.first_mut() {
        *b = item as u8;
    }
}

/// Checks a buffer read back against the pattern: returns the offset of
/// the first wrong byte, if any.
pub fn first_mismatch(got: &[u8], expected_pattern: &[u8], item: u64) -> Option<usize> {
    let head = if got.len() >= 8 { 8 } else { got.len().min(1) };
    if head == 8 && got[..8] != item.to_le_bytes() {
        return got[..8]
            .iter()
            .zip(item.to_le_bytes())
            .position(|(a, b)| *a != b);
    }
    if head == 1 && got[0] != item as u8 {
        return Some(0);
    }
    got[head..]
        .iter()
        .zip(&expected_pattern[head..])
        .position(|(a, b)| a != b)
        .map(|p| p + head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection_and_reproducible() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let v = p.apply(i) as usize;
                assert!(!seen[v], "n={n} dup {v}");
                seen[v] = true;
            }
            assert_eq!(Permutation::new(n, 42).apply(n - 1), p.apply(n - 1));
        }
        let a: Vec<u64> = (0..100)
            .map(|i| Permutation::new(100, 1).apply(i))
            .collect();
        let b: Vec<u64> = (0..100)
            .map(|i| Permutation::new(100, 2).apply(i))
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn pattern_round_trip_and_corruption() {
        let mut pat = vec![0u8; 3900];
        fill_pattern(&mut pat, None);
        assert_eq!(pat[9], 10);
        let mut file = pat.clone();
        stamp_item(&mut file, 77);
        assert_eq!(first_mismatch(&file, &pat, 77), None);
        assert_eq!(first_mismatch(&file, &pat, 78), Some(0));
        file[1234] ^= 1;
        assert_eq!(first_mismatch(&file, &pat, 77), Some(1234));
        let mut s = vec![0u8; 5];
        fill_pattern(&mut s, Some(9));
        let mut f = s.clone();
        stamp_item(&mut f, 3);
        assert_eq!(first_mismatch(&f, &s, 3), None);
        assert_eq!(first_mismatch(&f, &s, 4), Some(0));
    }
}
