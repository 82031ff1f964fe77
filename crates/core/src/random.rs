//! One home for iolab's deterministic randomness, so every engine draws
//! the same way: SplitMix64 streams (seekable: output `n` without the
//! `n - 1` before it), an unbiased-enough map onto a range, a table-free
//! keyed permutation, and glibc's `rand()` for tools whose order must match
//! a C program's (`mdtest -R`).
//!
//! ```
//! use iolab_core::random::{below, splitmix_nth, GlibcRand, Permutation};
//! assert_eq!(GlibcRand::new(1).next_rand(), 1804289383); // glibc's first rand() after srand(1)
//! let p = Permutation::new(10, 7);
//! let mut v: Vec<u64> = (0..10).map(|i| p.apply(i)).collect();
//! v.sort_unstable();
//! assert_eq!(v, (0..10).collect::<Vec<_>>());
//! assert!(below(splitmix_nth(1, 2), 6) < 6);
//! ```

/// SplitMix64's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser: a bijective 64-bit mix.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One SplitMix64 step from state `z`: feed each output back in to get a
/// stream.
#[inline]
pub fn splitmix64(z: u64) -> u64 {
    mix(z.wrapping_add(GAMMA))
}

/// The `n`th output of a SplitMix64 stream seeded with `seed`.
#[inline]
pub fn splitmix_nth(seed: u64, n: u64) -> u64 {
    mix(seed.wrapping_add(n.wrapping_add(1).wrapping_mul(GAMMA)))
}

/// Fills `buf` with stream `seed`: word i (8 bytes, little-endian; the
/// last one cut to fit) is its `i`th output. Bytes no store can compress.
pub fn scramble(buf: &mut [u8], seed: u64) {
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let v = splitmix_nth(seed, i as u64).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// Maps a uniform 64-bit value onto `0..n` (multiply-high; the bias is
/// below 2^-40 for any range a device can have).
#[inline]
pub fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// A keyed permutation of `0..n` without a table: a balanced Feistel
/// network on the smallest even power-of-two domain that holds `n`, with
/// cycle-walking to stay below `n`. The domain is less than 4n, so a walk
/// takes under four steps on average; any `n` up to 2^64 costs nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    key: u64,
}

impl Permutation {
    const ROUNDS: u64 = 4;

    /// The permutation of `0..n` chosen by `key`.
    pub fn new(n: u64, key: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        Self {
            n,
            half_bits: bits.div_ceil(2).max(1),
            key,
        }
    }

    /// The image of `i`; values outside `0..n` map to themselves, so every
    /// input has a defined output.
    #[inline]
    pub fn apply(&self, i: u64) -> u64 {
        if i >= self.n {
            return i;
        }
        let mut x = self.round_trip(i);
        while x >= self.n {
            x = self.round_trip(x);
        }
        x
    }

    #[inline]
    fn round_trip(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for round in 0..Self::ROUNDS {
            let f = mix(r ^ self
                .key
                .wrapping_add(round.wrapping_mul(0xA24B_AED4_963E_E407)));
            (l, r) = (r, l ^ (f & mask));
        }
        (l << self.half_bits) | r
    }
}

/// glibc's `RAND_MAX`.
pub const RAND_MAX: i32 = 2_147_483_647;

/// Words of TYPE_3 state (degree 31) and the feedback tap (separation 3).
const DEG: usize = 31;
const SEP: usize = 3;

/// glibc's `rand()` after `srand(seed)`: an additive feedback generator
/// over 31 words, seeded with the Park-Miller minimal standard generator,
/// its first 310 outputs discarded, each output the new word shifted right
/// by one (so 0..=`RAND_MAX`).
#[derive(Debug, Clone)]
pub struct GlibcRand {
    state: [u32; DEG],
    front: usize,
    rear: usize,
}

impl GlibcRand {
    /// The generator `srand(seed)` leaves behind (seed 0 acts as 1).
    pub fn new(seed: u32) -> Self {
        let mut state = [0u32; DEG];
        // The seed is taken as a C int: a seed above 2^31 starts negative.
        let mut word = i64::from(if seed == 0 { 1 } else { seed } as i32);
        state[0] = word as u32;
        for s in state.iter_mut().skip(1) {
            // 16807 * word mod (2^31 - 1) without overflow (Schrage), with
            // C's truncating division, as glibc computes it.
            let (hi, lo) = (word / 127_773, word % 127_773);
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *s = word as u32;
        }
        let mut g = GlibcRand {
            state,
            front: SEP,
            rear: 0,
        };
        for _ in 0..10 * DEG {
            g.next_rand();
        }
        g
    }

    /// The next `rand()` value, in 0..=`RAND_MAX`.
    pub fn next_rand(&mut self) -> i32 {
        let sum = self.state[self.front].wrapping_add(self.state[self.rear]);
        self.state[self.front] = sum;
        self.front = (self.front + 1) % DEG;
        self.rear = (self.rear + 1) % DEG;
        (sum >> 1) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// srand/rand share one process-wide state: the tests that use the
    /// real glibc take turns.
    static GLIBC: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// The real glibc, through the libc crate.
    fn glibc_sequence(seed: u32, n: usize) -> Vec<i32> {
        let _turn = GLIBC.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: srand and rand have no memory-safety preconditions.
        unsafe {
            libc::srand(seed);
            (0..n).map(|_| libc::rand()).collect()
        }
    }

    #[test]
    fn glibc_rand_matches_the_real_glibc() {
        assert_eq!(libc::RAND_MAX, RAND_MAX);
        for seed in [
            0u32,
            1,
            2,
            42,
            12345,
            2_147_483_647,
            2_147_483_648,
            u32::MAX,
        ] {
            let mut ours = GlibcRand::new(seed);
            let mine: Vec<i32> = (0..1000).map(|_| ours.next_rand()).collect();
            assert_eq!(mine, glibc_sequence(seed, 1000), "seed {seed}");
        }
    }

    #[test]
    fn permutation_is_a_reproducible_bijection() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut v: Vec<u64> = (0..n).map(|i| p.apply(i)).collect();
            v.sort_unstable();
            assert_eq!(v, (0..n).collect::<Vec<_>>(), "n={n}");
            assert_eq!(Permutation::new(n, 42), p);
        }
        let a: Vec<u64> = (0..100)
            .map(|i| Permutation::new(100, 1).apply(i))
            .collect();
        let b: Vec<u64> = (0..100)
            .map(|i| Permutation::new(100, 2).apply(i))
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        assert_eq!(Permutation::new(10, 1).apply(12), 12);
    }

    #[test]
    fn splitmix_stream_is_seekable() {
        let mut z = 5u64;
        for n in 0..10 {
            z = z.wrapping_add(GAMMA);
            assert_eq!(mix(z), splitmix_nth(5, n));
        }
        assert_eq!(splitmix64(5), splitmix_nth(5, 0));
        assert_eq!(below(u64::MAX, 10), 9);
        assert_eq!(below(0, 10), 0);
    }
}
