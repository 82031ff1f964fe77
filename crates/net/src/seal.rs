//! The authentication of every frame after a keyed handshake.
//!
//! The handshake's proofs show that both sides hold the key, but they
//! cover only the handshake: a relay that passed them through could
//! rewrite every frame after them and fix its CRC-32C, which anyone can
//! compute. So each side derives session keys from the shared key, both
//! nonces and the client's hello (HMAC-SHA256 as a PRF; per direction a
//! 32-byte tag key K and a 16-byte hash key H), and every frame it sends
//! from the server's verdict on carries a tag of [`TAG_BYTES`] after its
//! payload:
//!
//! ```text
//! tag = BLAKE3-keyed(K, n | header | POLYVAL(H, payload))
//! ```
//!
//! where `n` is the frame's number in its direction (0 for the first
//! tagged frame; the verdict is the server's 0), counted by each side,
//! never read from the wire. The header is covered whole (kind, flags,
//! length, CRC, offset, sequence number), so no byte of a frame can
//! change; `n` makes a frame replayed, dropped, reordered or sent back
//! the other way fail; keys fresh per connection (both nonces) make a
//! frame moved from another connection fail. A frame whose tag fails is
//! [`crate::NetError::Forged`] and is never handed to the caller; a
//! receiver then checks its CRC, so that damage on the way is still
//! told as a checksum error (a frame whose tag holds was sent as it is,
//! CRC included, so its CRC needs no second pass).
//!
//! Why two steps: the payload is most of the bytes, and a keyed BLAKE3
//! pass over it (4-5 GB/s on one core here) cost each side as much CPU
//! as the copy itself. POLYVAL (RFC 8452, the universal hash of
//! AES-GCM-SIV) runs at memory speed with AVX-512 carry-less multiplies
//! ([`crate::polyval`]). Hashing with a universal hash and then applying
//! a PRF (BLAKE3-keyed) to the result is a MAC (Wegman-Carter-Shoup's
//! hash-then-PRF): a forgery of a frame with the same header needs
//! another payload of the same length with the same POLYVAL under the
//! secret H, which happens with probability at most (blocks of the
//! payload) / 2^128, below 2^-105 for the largest frame (64 MiB), and
//! the first failure ends the connection. Tags reveal nothing of H:
//! each is the PRF of a distinct input (`n` never repeats). Each frame
//! costs no allocation (the hashers live on the stack).

use crate::frame::{HEADER_BYTES, TAG_BYTES};
use crate::key::SharedKey;
use crate::polyval::{Polyval, BLOCK};

/// Which end of the handshake a side was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// It sent the hello.
    Client,
    /// It judged the hello and sent the verdict.
    Server,
}

/// One direction of a connection: its keys and the frames tagged so far.
struct Way {
    key: [u8; 32],
    poly: Polyval,
    frames: u64,
}

impl Way {
    fn tag(&self, header: &[u8; HEADER_BYTES], payload: &[u8]) -> blake3::Hash {
        let sum: [u8; BLOCK] = self.poly.hash(payload);
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(&self.frames.to_le_bytes());
        h.update(header);
        h.update(&sum);
        h.finalize()
    }
}

/// The session keys and frame counters of one authenticated connection.
pub(crate) struct Seal {
    send: Way,
    recv: Way,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seal")
            .field("sent", &self.send.frames)
            .field("received", &self.recv.frames)
            .finish()
    }
}

impl Seal {
    /// The seal of `side` of the connection whose handshake was made of
    /// `nonce_c` (the client's), `nonce_s` (the server's) and the
    /// client's `hello` as sent, under `key`.
    pub(crate) fn new(
        key: &SharedKey,
        side: Side,
        nonce_c: &[u8],
        nonce_s: &[u8],
        hello: &[u8],
    ) -> Seal {
        let way = |label: &[u8]| {
            let h = key.derive(&[b"iolab payload hash key", label, nonce_c, nonce_s, hello]);
            let mut poly = [0u8; BLOCK];
            poly.copy_from_slice(&h[..BLOCK]);
            Way {
                key: key.derive(&[b"iolab session key", label, nonce_c, nonce_s, hello]),
                poly: Polyval::new(&poly),
                frames: 0,
            }
        };
        let (up, down) = (way(b"client to server"), way(b"server to client"));
        match side {
            Side::Client => Seal {
                send: up,
                recv: down,
            },
            Side::Server => Seal {
                send: down,
                recv: up,
            },
        }
    }

    /// The tag of the next frame sent (`header` as on the wire, then
    /// `payload`), counting it.
    pub(crate) fn sign(&mut self, header: &[u8; HEADER_BYTES], payload: &[u8]) -> [u8; TAG_BYTES] {
        let t = self.send.tag(header, payload);
        self.send.frames += 1;
        *t.as_bytes()
    }

    /// True when `tag` is the next received frame's (compared in
    /// constant time); counts the frame only then.
    pub(crate) fn check(
        &mut self,
        header: &[u8; HEADER_BYTES],
        payload: &[u8],
        tag: &[u8; TAG_BYTES],
    ) -> bool {
        // blake3::Hash's equality is constant-time.
        let ok = self.recv.tag(header, payload) == blake3::Hash::from(*tag);
        if ok {
            self.recv.frames += 1;
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(key: &[u8]) -> (Seal, Seal) {
        let k = SharedKey::new(key).unwrap();
        let c = Seal::new(&k, Side::Client, b"nc", b"ns", b"hello");
        let s = Seal::new(&k, Side::Server, b"nc", b"ns", b"hello");
        (c, s)
    }

    #[test]
    fn a_frame_passes_once_in_its_place_and_direction_only() {
        let (mut c, mut s) = pair(b"0123456789abcdef");
        let h = [7u8; HEADER_BYTES];
        let t0 = c.sign(&h, b"first");
        let t1 = c.sign(&h, b"second");
        assert!(!s.check(&h, b"second", &t1), "out of order");
        assert!(!s.check(&h, b"first", &t1), "another frame's tag");
        assert!(s.check(&h, b"first", &t0));
        assert!(!s.check(&h, b"first", &t0), "replayed");
        let mut other = h;
        other[16] ^= 1;
        assert!(!s.check(&other, b"second", &t1), "header changed");
        assert!(!s.check(&h, b"secoNd", &t1), "payload changed");
        assert!(s.check(&h, b"second", &t1));
        let back = s.sign(&h, b"first");
        assert_ne!(back, t0, "each direction has its own key");
        assert!(c.check(&h, b"first", &back));
    }

    #[test]
    fn every_bit_of_a_long_payload_counts() {
        let (mut c, mut s) = pair(b"0123456789abcdef");
        let h = [3u8; HEADER_BYTES];
        let payload: Vec<u8> = (0..(1 << 20) + 5).map(|i: u32| (i % 251) as u8).collect();
        let t = c.sign(&h, &payload);
        for at in [0, 511, 512, 300_000, 1 << 20, (1 << 20) + 4] {
            let mut bad = payload.clone();
            bad[at] ^= 0x10;
            assert!(!s.check(&h, &bad, &t), "byte {at}");
        }
        assert!(!s.check(&h, &payload[..1 << 20], &t), "shortened");
        assert!(s.check(&h, &payload, &t));
    }

    #[test]
    fn another_key_or_handshake_gives_other_tags() {
        let h = [1u8; HEADER_BYTES];
        let (mut c, _) = pair(b"0123456789abcdef");
        let (_, mut other_key) = pair(b"0123456789abcdeX");
        let k = SharedKey::new(b"0123456789abcdef").unwrap();
        let mut other_nonce = Seal::new(&k, Side::Server, b"nc", b"nS", b"hello");
        let t = c.sign(&h, b"data");
        assert!(!other_key.check(&h, b"data", &t));
        assert!(!other_nonce.check(&h, b"data", &t));
        assert_eq!(format!("{c:?}"), "Seal { sent: 1, received: 0 }");
    }
}
