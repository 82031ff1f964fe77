//! The wire unit: a fixed 32-byte header and a payload. The header says
//! what the payload is, where its bytes belong (offset) and in which
//! order it was sent (sequence), and carries a CRC-32C computed over the
//! header's other fields and the payload, so a corrupted length, offset or
//! byte is caught before anything is written. On a connection whose
//! handshake proved a shared key, a 32-byte authentication tag follows
//! each frame's payload ([`crate::seal`]): the CRC catches damage, the
//! tag a change made on purpose (a CRC anyone can recompute).
//!
//! Layout (little-endian):
//!
//! | bytes | field |
//! | --- | --- |
//! | 0..4 | magic `IOLB` |
//! | 4 | kind |
//! | 5 | flags |
//! | 6 | frame options: bit 0 = payload not checksummed; bit 1 = a [`TAG_BYTES`]-byte tag follows the payload |
//! | 7 | reserved, zero |
//! | 8..12 | payload length |
//! | 12..16 | CRC-32C of bytes 0..12, 16..32 and (unless bit 0 of byte 6) the payload |
//! | 16..24 | offset (bytes, in the target) |
//! | 24..32 | sequence number |

use crate::sum::ZeroShift;
use crate::NetError;

/// Bytes of the tag that follows a tagged frame's payload (the keyed
/// BLAKE3 output of `seal`).
pub const TAG_BYTES: usize = 32;

/// `IOLB` read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"IOLB");
/// Bytes in a header.
pub const HEADER_BYTES: usize = 32;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Handshake messages (JSON payload).
    Control = 1,
    /// A block of data for `offset`.
    Data = 2,
    /// The sender has no more data; payload empty.
    End = 3,
    /// The sender stopped with an error; payload is the message.
    Error = 4,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Control,
            2 => Kind::Data,
            3 => Kind::End,
            4 => Kind::Error,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the payload is.
    pub kind: Kind,
    /// Free for the protocol above (e.g. "last block of the pass").
    pub flags: u8,
    /// The CRC covers the header only, not the payload: for peers that
    /// agreed to verify data themselves or not at all (a network test
    /// with `check=none`), so as to measure the wire, not the checksum.
    pub unchecked: bool,
    /// An authentication tag of [`TAG_BYTES`] follows the payload: the
    /// frame was sent on a connection whose handshake proved a key.
    pub tagged: bool,
    /// Payload bytes that follow.
    pub len: u32,
    /// CRC-32C over the header (this field excluded) and the payload.
    pub crc: u32,
    /// Where the payload belongs, in bytes.
    pub offset: u64,
    /// Sender's frame counter.
    pub seq: u64,
}

impl Header {
    /// A header for `payload`, its checksum computed.
    pub fn new(kind: Kind, flags: u8, offset: u64, seq: u64, payload: &[u8]) -> Header {
        Header::unsummed(kind, flags, offset, seq, payload.len() as u32).summed(payload)
    }

    /// A checked header for a payload whose sum was taken once
    /// ([`PayloadSum`]): the same CRC as [`Header::new`] computes, without
    /// reading the payload again.
    pub fn with_sum(kind: Kind, flags: u8, offset: u64, seq: u64, sum: &PayloadSum) -> Header {
        Header::unsummed(kind, flags, offset, seq, sum.len).summed_once(sum)
    }

    /// A header whose CRC covers only the header (see [`Header::unchecked`]).
    pub fn new_unchecked(kind: Kind, flags: u8, offset: u64, seq: u64, len: u32) -> Header {
        let mut h = Header::unsummed(kind, flags, offset, seq, len);
        h.unchecked = true;
        h.summed(&[])
    }

    /// A header for a payload of `len` bytes whose options are still to
    /// be set and whose CRC is still to be taken ([`Header::summed`]).
    pub(crate) fn unsummed(kind: Kind, flags: u8, offset: u64, seq: u64, len: u32) -> Header {
        Header {
            kind,
            flags,
            unchecked: false,
            tagged: false,
            len,
            crc: 0,
            offset,
            seq,
        }
    }

    /// This header with its CRC taken over its fields (options included)
    /// and `payload`.
    pub(crate) fn summed(mut self, payload: &[u8]) -> Header {
        self.crc = self.checksum(payload);
        self
    }

    /// This header with its CRC taken over its fields and a payload
    /// summed once.
    pub(crate) fn summed_once(mut self, sum: &PayloadSum) -> Header {
        let mut b = self.encode();
        b[12..16].fill(0);
        self.crc = sum.extend(crc32c::crc32c(&b));
        self
    }

    /// The 32 bytes on the wire.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4] = self.kind as u8;
        b[5] = self.flags;
        b[6] = u8::from(self.unchecked) | (u8::from(self.tagged) << 1);
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..16].copy_from_slice(&self.crc.to_le_bytes());
        b[16..24].copy_from_slice(&self.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// Reads a header, refusing a bad magic, an unknown kind or a payload
    /// longer than `max_len` (so a corrupt or hostile length never makes
    /// the receiver allocate or wait for gigabytes).
    pub fn decode(b: &[u8; HEADER_BYTES], max_len: u32) -> Result<Header, NetError> {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let dword = |i: usize| u64::from(word(i)) | (u64::from(word(i + 4)) << 32);
        if word(0) != MAGIC {
            return Err(NetError::Protocol(format!(
                "not an iolab stream (magic {:#010x}): is another program on this port?",
                word(0)
            )));
        }
        let kind = Kind::from_u8(b[4])
            .ok_or_else(|| NetError::Protocol(format!("unknown frame kind {}", b[4])))?;
        if b[6] > 3 || b[7] != 0 {
            return Err(NetError::Protocol(format!(
                "unknown frame options {:#04x} {:#04x}",
                b[6], b[7]
            )));
        }
        let len = word(8);
        if len > max_len {
            return Err(NetError::TooLarge { len, max: max_len });
        }
        Ok(Header {
            kind,
            flags: b[5],
            unchecked: b[6] & 1 == 1,
            tagged: b[6] & 2 == 2,
            len,
            crc: word(12),
            offset: dword(16),
            seq: dword(24),
        })
    }

    /// CRC-32C of the header fields (the CRC field excluded) and, unless
    /// the frame is unchecked, `payload`.
    pub fn checksum(&self, payload: &[u8]) -> u32 {
        let mut b = self.encode();
        b[12..16].fill(0);
        let c = crc32c::crc32c(&b);
        if self.unchecked {
            c
        } else {
            crc32c::crc32c_append(c, payload)
        }
    }

    /// Checks `payload` against the header; the error names the offset
    /// and sequence number of the bad frame.
    pub fn verify(&self, payload: &[u8]) -> Result<(), NetError> {
        if payload.len() != self.len as usize || self.checksum(payload) != self.crc {
            return Err(NetError::Checksum {
                offset: self.offset,
                seq: self.seq,
            });
        }
        Ok(())
    }
}

/// A payload's CRC-32C together with the linear map that carries any
/// CRC over the payload's length, so that a payload sent many times
/// unchanged (a generated block) costs a few table look-ups per frame
/// instead of a pass over its bytes. CRC(header ++ payload) =
/// M(CRC(header)) ^ CRC(payload), M depending only on the length: the
/// [`ZeroShift`] over that many bytes.
#[derive(Debug, Clone)]
pub struct PayloadSum {
    crc: u32,
    len: u32,
    shift: ZeroShift,
}

impl PayloadSum {
    /// Sums `payload` (at most u32::MAX bytes).
    pub fn new(payload: &[u8]) -> PayloadSum {
        PayloadSum {
            crc: crc32c::crc32c(payload),
            len: payload.len().min(u32::MAX as usize) as u32,
            shift: ZeroShift::new(payload.len()),
        }
    }

    /// The sum of another payload of the same length, whose
    /// CRC-32C is `crc` (found without reading it all: [`crate::sum`]),
    /// keeping the length's map, which is the costly part to build.
    #[inline]
    pub fn set_crc(&mut self, crc: u32) {
        self.crc = crc;
    }

    /// Bytes of the payload.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True for an empty payload.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// CRC-32C of `prefix ++ payload` from `prefix_crc` = CRC-32C(prefix).
    #[inline]
    pub fn extend(&self, prefix_crc: u32) -> u32 {
        self.crc ^ self.shift.apply(prefix_crc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_survives_the_wire() {
        let h = Header::new(Kind::Data, 7, 1 << 40, 99, b"payload");
        let back = Header::decode(&h.encode(), 1024).unwrap();
        assert_eq!(back, h);
        back.verify(b"payload").unwrap();
    }

    #[test]
    fn any_flipped_bit_is_caught() {
        let payload = vec![0xA5u8; 64];
        let h = Header::new(Kind::Data, 0, 4096, 3, &payload);
        for byte in 0..payload.len() {
            let mut p = payload.clone();
            p[byte] ^= 1;
            assert!(h.verify(&p).is_err(), "payload byte {byte}");
        }
        let mut moved = h;
        moved.offset += 512;
        assert!(matches!(
            moved.verify(&payload),
            Err(NetError::Checksum {
                offset: 4608,
                seq: 3
            })
        ));
    }

    #[test]
    fn a_payload_summed_once_gives_the_same_headers() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 31) as u8).collect();
        let sum = PayloadSum::new(&payload);
        for (offset, seq) in [(0, 0), (1 << 33, 9), (77, u64::MAX)] {
            let a = Header::new(Kind::Data, 1, offset, seq, &payload);
            let b = Header::with_sum(Kind::Data, 1, offset, seq, &sum);
            assert_eq!(a, b);
            b.verify(&payload).unwrap();
        }
        let empty = PayloadSum::new(&[]);
        assert_eq!(
            Header::with_sum(Kind::End, 0, 5, 6, &empty),
            Header::new(Kind::End, 0, 5, 6, &[])
        );
    }

    #[test]
    fn an_unchecked_frame_still_guards_its_header() {
        let h = Header::new_unchecked(Kind::Data, 0, 4096, 1, 8);
        let back = Header::decode(&h.encode(), 64).unwrap();
        assert!(back.unchecked);
        back.verify(b"anything").unwrap();
        let mut moved = back;
        moved.offset = 0;
        assert!(
            moved.verify(b"anything").is_err(),
            "header damage is caught"
        );
        assert!(back.verify(b"short").is_err(), "length still checked");
    }

    #[test]
    fn bad_magic_kind_and_length_are_refused() {
        let h = Header::new(Kind::End, 0, 0, 0, b"");
        let mut b = h.encode();
        b[0] = b'X';
        assert!(matches!(Header::decode(&b, 16), Err(NetError::Protocol(_))));
        let mut b = h.encode();
        b[4] = 200;
        assert!(matches!(Header::decode(&b, 16), Err(NetError::Protocol(_))));
        let mut b = h.encode();
        b[7] = 1;
        assert!(matches!(Header::decode(&b, 16), Err(NetError::Protocol(_))));
        let big = Header::new(Kind::Data, 0, 0, 0, &[0u8; 32]);
        assert!(matches!(
            Header::decode(&big.encode(), 16),
            Err(NetError::TooLarge { len: 32, max: 16 })
        ));
    }
}
