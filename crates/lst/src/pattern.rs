//! The bulk payload's contents and their check. Word 0 carries the RPC's
//! tag (so a stale or misdirected buffer is caught), every other 8-byte
//! word a fixed pattern that depends on its position. The sender fills
//! the buffer once and rewrites only word 0 per RPC; `simple` checks the
//! first and last 8 bytes, `full` every byte.

use crate::spec::Check;

const SEED: u64 = 0x6c73_745f_696f_6c62;

fn word(i: usize) -> u64 {
    SEED ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn tag_word(tag: u64) -> u64 {
    SEED.rotate_left(17) ^ tag
}

/// Fills `buf` with the fixed pattern (done once per buffer).
pub fn fill(buf: &mut [u8]) {
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let w = word(i).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// Writes the tag into word 0 of a filled buffer (per RPC).
#[inline]
pub fn stamp(buf: &mut [u8], tag: u64) {
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&tag_word(tag).to_le_bytes());
    }
}

/// True when `buf` holds the pattern for `tag` as far as `check` looks.
pub fn verify(buf: &[u8], tag: u64, check: Check) -> bool {
    match check {
        Check::None => true,
        _ if buf.len() < 8 => true,
        Check::Simple => head_ok(buf, tag) && last_ok(buf),
        Check::Full => head_ok(buf, tag) && body_ok(buf),
    }
}

fn head_ok(buf: &[u8], tag: u64) -> bool {
    buf[..8] == tag_word(tag).to_le_bytes()
}

fn last_ok(buf: &[u8]) -> bool {
    let start = buf.len() - 8;
    (start..buf.len()).all(|b| buf[b] == word(b / 8).to_le_bytes()[b % 8])
}

fn body_ok(buf: &[u8]) -> bool {
    buf.chunks(8).enumerate().skip(1).all(|(i, chunk)| {
        let w = word(i).to_le_bytes();
        chunk == &w[..chunk.len()]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_buffer_verifies_and_any_change_is_caught_by_full() {
        let mut b = vec![0u8; 4099];
        fill(&mut b);
        stamp(&mut b, 42);
        assert!(verify(&b, 42, Check::Full));
        assert!(verify(&b, 42, Check::Simple));
        assert!(!verify(&b, 43, Check::Simple));
        b[2000] ^= 1;
        assert!(!verify(&b, 42, Check::Full));
        assert!(verify(&b, 42, Check::Simple));
        b[4098] ^= 1;
        assert!(!verify(&b, 42, Check::Simple));
    }
}
