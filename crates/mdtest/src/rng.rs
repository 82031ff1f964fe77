//! Randomness and file data that match IOR's mdtest, so a run can be split
//! between the two tools:
//!
//! - [`GlibcRand`] (from `iolab_core::random`, re-exported): glibc's
//!   `srand`/`rand`, which mdtest seeds with `-R`/`--random-seed`.
//! - [`Permutation`]: the order `-R` visits items in, built exactly as
//!   mdtest builds its `rand_array`: `srand(seed + rank)`, then a
//!   Fisher-Yates pass from the top, `k = (rand() / RAND_MAX) * n` in
//!   double precision. Every phase of a task visits in the same order.
//! - File data: without `-G`, byte `i` is `i + 1` with the item number in
//!   the first 8 bytes (mdtest 1.x and iolab's default); with `-G SEED`,
//!   IOR's default ("timestamp") packets: 64-bit little-endian word `i` is
//!   `writer_rank << 32 | (SEED + i)`, the bytes past the last whole word
//!   are their own offset, and nothing is stamped per item. Data written by
//!   either tool with the same `-G` verifies (`-X`) in the other.
//!
//! ```
//! use iolab_mdtest::rng::{GlibcRand, Permutation};
//! let mut r = GlibcRand::new(1);
//! assert_eq!(r.next_rand(), 1804289383); // glibc's first rand() after srand(1)
//! let p = Permutation::new(10, 7);
//! let mut seen: Vec<u64> = (0..10).map(|i| p.apply(i)).collect();
//! seen.sort_unstable();
//! assert_eq!(seen, (0..10).collect::<Vec<_>>());
//! ```

use iolab_core::random::Permutation as Feistel;
pub use iolab_core::random::{GlibcRand, RAND_MAX};
use std::sync::Arc;

/// mdtest's visiting order for `-R`: a table of item indices shuffled the
/// way mdtest shuffles its `rand_array`. Cloning shares the table.
///
/// The table holds [`TABLE_BYTES_PER_ITEM`] bytes per item (mdtest holds
/// 8). When it would not fit ([`matches_mdtest`] is false: more than 2^32
/// items per task, or a table above an eighth of physical memory) a
/// table-free Feistel bijection is used instead, and the order no longer
/// matches mdtest's (which would need twice that memory per rank).
#[derive(Debug, Clone)]
pub struct Permutation {
    order: Order,
}

#[derive(Debug, Clone)]
enum Order {
    Table(Arc<[u32]>),
    Feistel(Feistel),
}

impl Permutation {
    /// mdtest's order of `0..n` for seed `seed` (mdtest passes its
    /// `--random-seed` plus the rank; only the low 32 bits count, as in
    /// mdtest's `int`).
    pub fn new(n: u64, seed: u64) -> Self {
        let order = if matches_mdtest(n) {
            Order::Table(mdtest_shuffle(n, seed as u32).into())
        } else {
            Order::Feistel(Feistel::new(n, seed))
        };
        Permutation { order }
    }

    /// The item visited `i`-th (i < n).
    #[inline]
    pub fn apply(&self, i: u64) -> u64 {
        match &self.order {
            Order::Table(t) => u64::from(t[i as usize]),
            Order::Feistel(f) => f.apply(i),
        }
    }
}

/// Bytes of [`Permutation`]'s table per item, for callers that bound
/// memory before a run.
pub const TABLE_BYTES_PER_ITEM: u64 = 4;

/// True when a [`Permutation`] of `n` items keeps mdtest's order: its
/// table fits in u32 indices and in an eighth of physical memory.
pub fn matches_mdtest(n: u64) -> bool {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let memory = (pages.max(0) as u64).saturating_mul(page.max(0) as u64);
    let table = n.saturating_mul(TABLE_BYTES_PER_ITEM);
    n <= 1 << 32 && (memory == 0 || table <= memory / 8)
}

/// mdtest's `rand_array` for `n` items (n <= 2^32) after `srand(seed)`.
fn mdtest_shuffle(n: u64, seed: u32) -> Vec<u32> {
    let mut rng = GlibcRand::new(seed);
    // Every index fits in u32 (the caller checked n - 1 does).
    let mut a: Vec<u32> = (0..n).map(|s| s as u32).collect();
    let mut top = n;
    while top > 1 {
        top -= 1;
        // mdtest's arithmetic, double for double: k can equal top.
        let k = (f64::from(rng.next_rand()) / f64::from(RAND_MAX) * top as f64) as u64;
        a.swap(k as usize, top as usize);
    }
    a
}

/// The bytes mdtest writes (see the module doc): `i + 1` without a data
/// seed; with one, IOR's packets of writer rank 0 ([`fill_pattern_for`]).
pub fn fill_pattern(buf: &mut [u8], seed: Option<u64>) {
    fill_pattern_for(buf, seed, 0);
}

/// The bytes a task of rank `writer` writes: `i + 1` without a data seed;
/// with `-G SEED`, IOR's default packets: word `i` (little-endian) is
/// `writer << 32 | (SEED + i)`, trailing bytes hold their own offset.
pub fn fill_pattern_for(buf: &mut [u8], seed: Option<u64>, writer: u64) {
    match seed {
        None => buf
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i as u64 + 1) as u8),
        Some(s) => {
            let mut words = buf.chunks_exact_mut(8);
            for (i, w) in (&mut words).enumerate() {
                w.copy_from_slice(&ior_word(s, writer, i as u64).to_le_bytes());
            }
            let whole = buf.len() / 8 * 8;
            for (i, b) in buf.iter_mut().enumerate().skip(whole) {
                *b = i as u8;
            }
        }
    }
}

/// IOR's packet word `i`: the writer's rank in the high half, OR-ed with
/// the seed (a C int, sign-extended as C does) plus the word index.
#[inline]
fn ior_word(seed: u64, writer: u64, i: u64) -> u64 {
    let c_seed = seed as u32 as i32 as i64 as u64;
    (writer << 32) | c_seed.wrapping_add(i)
}

/// The writer's rank an IOR packet (`-G`) read back carries in its first
/// word, if it is one of `tasks`: with `-S` every task writes the same
/// files, so the last writer of a file may be any task.
pub fn packet_writer(got: &[u8], tasks: u64) -> Option<u64> {
    let w: [u8; 8] = got.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w) >> 32).filter(|&r| r < tasks)
}

/// Stamps the item number at the front of a buffer (mdtest 1.x's layout,
/// used without a data seed).
#[inline]
pub fn stamp_item(buf: &mut [u8], item: u64) {
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&item.to_le_bytes());
    } else if let Some(b) = buf.first_mut() {
        *b = item as u8;
    }
}

/// [`stamp_item`] without a data seed; IOR's `-G` packets carry no item
/// number, so with one the buffer is left as it is.
#[inline]
pub fn stamp_item_for(buf: &mut [u8], item: u64, seed: Option<u64>) {
    if seed.is_none() {
        stamp_item(buf, item);
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

/// Checks data read back from item `item`, written by rank `writer`: with
/// a data seed against IOR's packets (computed, no buffer needed),
/// otherwise as [`first_mismatch`] does against `legacy_pattern`.
pub fn first_mismatch_for(
    got: &[u8],
    legacy_pattern: &[u8],
    item: u64,
    seed: Option<u64>,
    writer: u64,
) -> Option<usize> {
    let Some(s) = seed else {
        return first_mismatch(got, legacy_pattern, item);
    };
    let whole = got.len() / 8 * 8;
    let bad_word = got[..whole]
        .chunks_exact(8)
        .enumerate()
        .find(|(i, w)| **w != ior_word(s, writer, *i as u64).to_le_bytes());
    if let Some((i, w)) = bad_word {
        let want = ior_word(s, writer, i as u64).to_le_bytes();
        let byte = w.iter().zip(want).position(|(a, b)| *a != b).unwrap_or(0);
        return Some(i * 8 + byte);
    }
    (whole..got.len()).find(|&i| got[i] != i as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// srand/rand share one process-wide state: the tests that use the
    /// real glibc take turns.
    static GLIBC: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// mdtest's shuffle written out with the real rand(), for comparison.
    fn mdtest_order_with_glibc(n: u64, seed: u32) -> Vec<u64> {
        let mut a: Vec<u64> = (0..n).collect();
        let _turn = GLIBC.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: srand and rand have no memory-safety preconditions.
        unsafe { libc::srand(seed) };
        let mut top = n;
        while top > 1 {
            top -= 1;
            // SAFETY: as above.
            let r = unsafe { libc::rand() };
            let k = (r as f64 / libc::RAND_MAX as f64 * top as f64) as u64;
            a.swap(k as usize, top as usize);
        }
        a
    }

    #[test]
    fn permutation_is_mdtests_rand_array() {
        for (n, seed) in [(1u64, 5u64), (2, 1), (10, 42), (1000, 7), (4097, 123_456)] {
            let p = Permutation::new(n, seed);
            let ours: Vec<u64> = (0..n).map(|i| p.apply(i)).collect();
            assert_eq!(
                ours,
                mdtest_order_with_glibc(n, seed as u32),
                "n={n} seed={seed}"
            );
        }
    }

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
        assert!(matches_mdtest(1 << 20) && !matches_mdtest((1 << 32) + 1));
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

    /// IOR's timestamp packets, word by word (utilities.c's layout).
    #[test]
    fn g_data_is_iors_packets() {
        let mut b = vec![0u8; 8 * 3 + 3];
        fill_pattern_for(&mut b, Some(1000), 2);
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(word(0), (2 << 32) | 1000);
        assert_eq!(word(2), (2 << 32) | 1002);
        assert_eq!(b[24..], [24, 25, 26]);
        let before = b.clone();
        stamp_item_for(&mut b, 99, Some(1000));
        assert_eq!(b, before, "IOR's packets carry no item number");
        let legacy = vec![0u8; b.len()];
        assert_eq!(first_mismatch_for(&b, &legacy, 99, Some(1000), 2), None);
        assert_eq!(first_mismatch_for(&b, &legacy, 99, Some(1000), 3), Some(4));
        assert_eq!(first_mismatch_for(&b, &legacy, 99, Some(1001), 2), Some(0));
        b[25] = 0;
        assert_eq!(first_mismatch_for(&b, &legacy, 99, Some(1000), 2), Some(25));
        // A negative C int seed is sign-extended before the OR, as in C.
        let mut n = vec![0u8; 8];
        fill_pattern_for(&mut n, Some(u64::from(u32::MAX)), 1);
        assert_eq!(u64::from_le_bytes(n[..8].try_into().unwrap()), u64::MAX);
    }
}
