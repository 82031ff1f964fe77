//! Property tests of the frame decoder: any 32 bytes decode or are
//! refused without a panic, a header survives encode/decode, and a real
//! loopback connection fed arbitrary bytes (mutated valid frames, junk)
//! ends every read with a frame or an error, never a panic or a hang.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_net::conn::{self, Cancel};
use iolab_net::frame::{Header, Kind, HEADER_BYTES};
use proptest::prelude::*;
use std::io::Write;
use std::time::{Duration, Instant};

/// Every frame kind.
fn kinds() -> Vec<Kind> {
    vec![Kind::Control, Kind::Data, Kind::End, Kind::Error]
}

/// A valid frame (header and payload) as bytes.
fn frame(kind: Kind, flags: u8, offset: u64, seq: u64, payload: &[u8]) -> Vec<u8> {
    let h = Header::new(kind, flags, offset, seq, payload);
    let mut v = h.encode().to_vec();
    v.extend_from_slice(payload);
    v
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        // A failing case is printed, not saved beside the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_header_bytes_decode_or_are_refused(b in any::<[u8; HEADER_BYTES]>(), max in any::<u32>()) {
        if let Ok(h) = Header::decode(&b, max) {
            prop_assert!(h.len <= max);
            prop_assert_eq!(h.encode(), b);
        }
    }

    #[test]
    fn a_header_survives_encode_and_decode(
        k in 0usize..64, flags in any::<u8>(), offset in any::<u64>(), seq in any::<u64>(),
        payload in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let kinds = kinds();
        let kind = kinds[k % kinds.len()];
        let h = Header::new(kind, flags, offset, seq, &payload);
        let back = Header::decode(&h.encode(), 256).unwrap();
        prop_assert_eq!(back, h);
        prop_assert!(back.verify(&payload).is_ok());
    }
}

proptest! {
    // Each case is a real TCP connection: fewer cases.
    #![proptest_config(ProptestConfig {
        cases: 48,
        // A failing case is printed, not saved beside the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_connection_fed_hostile_bytes_ends_every_read(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..4),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        junk in proptest::collection::vec(any::<u8>(), 0..80),
        cut in any::<usize>(),
    ) {
        let kinds = kinds();
        let mut bytes = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            bytes.extend(frame(kinds[i % kinds.len()], 0, i as u64, i as u64, p));
        }
        for (at, x) in &flips {
            if !bytes.is_empty() {
                let n = bytes.len();
                bytes[at % n] ^= x;
            }
        }
        bytes.extend(&junk);
        bytes.truncate(if bytes.is_empty() { 0 } else { cut % (bytes.len() + 1) });

        let listener = conn::listen("127.0.0.1:0").unwrap();
        listener.set_nonblocking(false).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let writer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = s.write_all(&bytes);
            // Dropped: the peer sees the end of the stream.
        });
        let mut c = conn::connect(&addr, Duration::from_secs(10), Cancel::process()).unwrap();
        c.max_payload = 64;
        c.idle_timeout = Duration::from_secs(5);
        let t0 = Instant::now();
        let mut frames = 0;
        while let Ok((h, p)) = c.recv_owned(Cancel::process()) {
            prop_assert!(h.len as usize == p.len() && p.len() <= 64);
            frames += 1;
            prop_assert!(frames <= payloads.len(), "more frames than were sent");
            prop_assert!(t0.elapsed() < Duration::from_secs(30), "reads did not end");
        }
        writer.join().unwrap();
    }
}
