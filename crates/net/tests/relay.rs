//! A relay between client and server that passes the handshake through
//! and then changes frames the way anyone on the path can (a payload
//! rewritten and its CRC-32C made to match, a frame dropped, replayed or
//! stripped of its tag, the server's verdict rewritten): with a key,
//! every such frame is refused as forged before its bytes are handed
//! over; without one, the changed bytes arrive (the relay really works).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_net::frame::{Kind, HEADER_BYTES, TAG_BYTES};
use iolab_net::gate::{Event, Gate};
use iolab_net::{conn, handshake, Cancel, Conn, NetError, SharedKey};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// What the relay does to the frame it is handed (its index in its
/// direction, its bytes: header, payload and tag): the frames to send
/// on instead (none drops it, two replay it).
type Edit = Box<dyn FnMut(usize, Vec<u8>) -> Vec<Vec<u8>> + Send>;

fn key() -> SharedKey {
    SharedKey::new(b"relay test key, 32 bytes long!!!").unwrap()
}

fn pass() -> Edit {
    Box::new(|_, f| vec![f])
}

/// Makes the frame's CRC-32C match its (changed) bytes, as a relay
/// that knows the format can.
fn fix_crc(f: &mut [u8]) {
    f[12..16].fill(0);
    let len = u32::from_le_bytes(f[8..12].try_into().unwrap()) as usize;
    let mut crc = crc32c::crc32c(&f[..HEADER_BYTES]);
    if f[6] & 1 == 0 {
        crc = crc32c::crc32c_append(crc, &f[HEADER_BYTES..HEADER_BYTES + len]);
    }
    f[12..16].copy_from_slice(&crc.to_le_bytes());
}

/// Reads one whole frame (its tag included when its header says so).
fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut f = vec![0u8; HEADER_BYTES];
    s.read_exact(&mut f).ok()?;
    let len = u32::from_le_bytes(f[8..12].try_into().unwrap()) as usize;
    let tag = if f[6] & 2 == 2 { TAG_BYTES } else { 0 };
    f.resize(HEADER_BYTES + len + tag, 0);
    s.read_exact(&mut f[HEADER_BYTES..]).ok()?;
    Some(f)
}

fn pump(mut from: TcpStream, mut to: TcpStream, mut edit: Edit) {
    let mut i = 0;
    while let Some(f) = read_frame(&mut from) {
        for out in edit(i, f) {
            if to.write_all(&out).is_err() {
                return;
            }
        }
        i += 1;
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// A relay from a port of its own to `upstream` for one connection,
/// editing the client's frames with `up` and the server's with `down`.
/// Returns its address.
fn relay(upstream: String, up: Edit, down: Edit) -> String {
    let front = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = front.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let (client, _) = front.accept().unwrap();
        let server = TcpStream::connect(upstream).unwrap();
        let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let a = std::thread::spawn(move || pump(client, server, up));
        pump(s2, c2, down);
        let _ = a.join();
    });
    addr
}

/// Changes the `n`th data frame (counting from the handshake's two
/// client frames) as `change` says, fixing its CRC.
fn on_data(n: usize, change: impl Fn(Vec<u8>) -> Vec<Vec<u8>> + Send + 'static) -> Edit {
    Box::new(move |i, f| if i == 2 + n { change(f) } else { vec![f] })
}

fn flip_payload(mut f: Vec<u8>) -> Vec<Vec<u8>> {
    f[HEADER_BYTES] ^= 0x01;
    fix_crc(&mut f);
    vec![f]
}

/// What a receiver got (each payload) and how it ended.
type Received = (Vec<Vec<u8>>, Result<(), NetError>);

/// Serves one connection on `l` with `key`, then receives data frames
/// until an error, an End or three frames: what arrived, and how it
/// ended.
fn receiver(l: TcpListener, key: Option<SharedKey>) -> std::thread::JoinHandle<Received> {
    std::thread::spawn(move || {
        let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
        let judged = handshake::server(
            &mut c,
            &json!({"resume": 0}),
            key.as_ref(),
            |_| Ok(()),
            Cancel::process(),
        );
        if let Err(e) = judged {
            return (Vec::new(), Err(e));
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            let h = match c.recv_header(Cancel::process()) {
                Ok(h) if h.kind == Kind::End => return (got, Ok(())),
                Ok(h) => h,
                Err(e) => return (got, Err(e)),
            };
            match c.recv_payload(&h, &mut buf, Cancel::process()) {
                Ok(p) => got.push(p.to_vec()),
                Err(e) => return (got, Err(e)),
            }
        }
    })
}

/// A client through a relay doing `up` to its frames: handshake, three
/// data frames, an End. Returns what the receiver got and how it ended.
fn through(key: Option<SharedKey>, up: Edit) -> Received {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let upstream = l.local_addr().unwrap().to_string();
    let rx = receiver(l, key.clone());
    let addr = relay(upstream, up, pass());
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    handshake::client(&mut c, "test", &json!({}), key.as_ref(), Cancel::process()).unwrap();
    assert_eq!(c.sealed(), key.is_some());
    for (i, b) in [b"first block", b"secnd block", b"third block"]
        .iter()
        .enumerate()
    {
        // The receiver may have given up already; what it says counts.
        let _ = c.send(Kind::Data, 0, i as u64 * 11, &b[..], Cancel::process());
    }
    let _ = c.send(Kind::End, 0, 3, &[], Cancel::process());
    rx.join().unwrap()
}

fn forged(r: &Result<(), NetError>) -> bool {
    matches!(r, Err(NetError::Forged { .. }))
}

#[test]
fn without_a_key_the_relay_s_change_arrives_unnoticed() {
    let (got, end) = through(None, on_data(0, flip_payload));
    end.unwrap();
    assert_eq!(
        got[0], b"girst block",
        "the relay changed it and fixed its CRC"
    );
    assert_eq!(got.len(), 3);
}

#[test]
fn with_a_key_a_payload_changed_and_its_crc_fixed_is_forged_and_not_handed_over() {
    let (got, end) = through(Some(key()), pass());
    end.unwrap();
    assert_eq!(got.len(), 3, "untouched, every frame passes");
    let (got, end) = through(Some(key()), on_data(0, flip_payload));
    assert!(got.is_empty(), "{got:?}");
    assert!(forged(&end), "{end:?}");
    let e = end.unwrap_err().to_string();
    assert!(e.contains("fails its authentication tag"), "{e}");
}

#[test]
fn with_a_key_a_header_changed_an_end_changed_or_a_tag_stripped_is_forged() {
    let moved = on_data(1, |mut f| {
        f[16] ^= 0x40; // its offset
        fix_crc(&mut f);
        vec![f]
    });
    let (got, end) = through(Some(key()), moved);
    assert_eq!(got.len(), 1);
    assert!(forged(&end), "{end:?}");
    // The End has no payload: its header is checked, tag and all, as it
    // arrives.
    let end_changed = on_data(3, |mut f| {
        f[16] = 9;
        fix_crc(&mut f);
        vec![f]
    });
    let (got, end) = through(Some(key()), end_changed);
    assert_eq!(got.len(), 3);
    assert!(forged(&end), "{end:?}");
    let stripped = on_data(0, |mut f| {
        f[6] &= !2;
        f.truncate(f.len() - TAG_BYTES);
        fix_crc(&mut f);
        vec![f]
    });
    let (got, end) = through(Some(key()), stripped);
    assert!(got.is_empty());
    assert!(forged(&end), "{end:?}");
}

#[test]
fn with_a_key_a_frame_replayed_dropped_or_swapped_is_forged() {
    let replayed = on_data(0, |f| vec![f.clone(), f]);
    let (got, end) = through(Some(key()), replayed);
    assert_eq!(got, vec![b"first block".to_vec()]);
    assert!(forged(&end), "{end:?}");
    let dropped = on_data(0, |_| vec![]);
    let (got, end) = through(Some(key()), dropped);
    assert!(got.is_empty());
    assert!(forged(&end), "{end:?}");
    // Frames 0 and 1 sent in the other order: held back, then both.
    let held = std::sync::Mutex::new(None);
    let swapped: Edit = Box::new(move |i, f| match i {
        2 => {
            *held.lock().unwrap() = Some(f);
            vec![]
        }
        3 => vec![f, held.lock().unwrap().take().unwrap()],
        _ => vec![f],
    });
    let (got, end) = through(Some(key()), swapped);
    assert!(got.is_empty());
    assert!(forged(&end), "{end:?}");
}

#[test]
fn with_a_key_damage_on_the_way_is_still_told_as_a_checksum_error() {
    let damaged = on_data(0, |mut f| {
        f[HEADER_BYTES + 2] ^= 0x10;
        vec![f]
    });
    let (_, end) = through(Some(key()), damaged);
    assert!(matches!(end, Err(NetError::Checksum { .. })), "{end:?}");
    // The tag is checked first and the CRC only once it fails: damage to
    // a header, or to an End (no payload), is still damage.
    let header = on_data(1, |mut f| {
        f[16] ^= 0x40;
        vec![f]
    });
    let (got, end) = through(Some(key()), header);
    assert_eq!(got.len(), 1);
    assert!(matches!(end, Err(NetError::Checksum { .. })), "{end:?}");
    let end_damaged = on_data(3, |mut f| {
        f[24] ^= 0x02;
        vec![f]
    });
    let (got, end) = through(Some(key()), end_damaged);
    assert_eq!(got.len(), 3);
    assert!(matches!(end, Err(NetError::Checksum { .. })), "{end:?}");
}

#[test]
fn with_a_key_a_long_payload_changed_anywhere_and_its_crc_fixed_is_forged() {
    // Payloads past POLYVAL's 512-byte step, changed in a whole step,
    // in the blocks after the last step and in the padded last block.
    for (len, at) in [
        (4099, 7),
        (4099, 4096 + 1),
        (4099, 4098),
        (1 << 20, 600_000),
    ] {
        let l = conn::listen("127.0.0.1:0").unwrap();
        let upstream = l.local_addr().unwrap().to_string();
        let rx = std::thread::spawn(move || {
            let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
            handshake::server(
                &mut c,
                &json!({}),
                Some(&key()),
                |_| Ok(()),
                Cancel::process(),
            )
            .unwrap();
            let h = c.recv_header(Cancel::process()).unwrap();
            let mut buf = vec![0u8; len];
            c.recv_payload(&h, &mut buf, Cancel::process()).map(drop)
        });
        let change = on_data(0, move |mut f| {
            f[HEADER_BYTES + at] ^= 0x80;
            fix_crc(&mut f);
            vec![f]
        });
        let addr = relay(upstream, change, pass());
        let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
        handshake::client(&mut c, "test", &json!({}), Some(&key()), Cancel::process()).unwrap();
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
        let _ = c.send(Kind::Data, 0, 0, &payload, Cancel::process());
        let end = rx.join().unwrap();
        assert!(forged(&end), "length {len}, byte {at}: {end:?}");
    }
}

/// The server's verdict (its second frame) with its `resume` rewritten
/// and the CRC fixed: the client must not take the terms.
fn resume_rewritten() -> Edit {
    Box::new(|i, mut f| {
        if i == 1 {
            let text = String::from_utf8(f[HEADER_BYTES..f.len() - TAG_BYTES].to_vec()).unwrap();
            let changed = text.replace("\"resume\":0", "\"resume\":7");
            assert_ne!(text, changed, "{text}");
            let end = f.len() - TAG_BYTES;
            f[HEADER_BYTES..end].copy_from_slice(changed.as_bytes());
            fix_crc(&mut f);
        }
        vec![f]
    })
}

#[test]
fn with_a_key_a_verdict_rewritten_on_the_way_is_refused_by_the_client() {
    // The blocking server.
    let l = conn::listen("127.0.0.1:0").unwrap();
    let upstream = l.local_addr().unwrap().to_string();
    let _rx = receiver(l, Some(key()));
    let addr = relay(upstream, pass(), resume_rewritten());
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    let r = handshake::client(&mut c, "test", &json!({}), Some(&key()), Cancel::process());
    assert!(matches!(r, Err(NetError::Forged { .. })), "{r:?}");
    // A gate's verdict.
    let l = conn::listen("127.0.0.1:0").unwrap();
    let upstream = l.local_addr().unwrap().to_string();
    let gate = std::thread::spawn(move || {
        let mut g = Gate::new(vec![l], Some(key()), WAIT);
        let mut judge = |_: usize, _: &Value| Ok(json!({"resume": 0}));
        match g.next(&mut judge, WAIT, Cancel::process()).unwrap() {
            Event::Admitted { conn, .. } => conn,
            other => panic!("{other:?}"),
        }
    });
    let addr = relay(upstream, pass(), resume_rewritten());
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    let r = handshake::client(&mut c, "test", &json!({}), Some(&key()), Cancel::process());
    assert!(matches!(r, Err(NetError::Forged { .. })), "{r:?}");
    let admitted: Conn = gate.join().unwrap();
    assert!(admitted.sealed());
}

#[test]
fn a_gate_s_connection_carries_its_seal_both_ways() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let gate = std::thread::spawn(move || {
        let mut g = Gate::new(vec![l], Some(key()), WAIT);
        let mut judge = |_: usize, _: &Value| Ok(json!({}));
        let mut c = match g.next(&mut judge, WAIT, Cancel::process()).unwrap() {
            Event::Admitted { conn, .. } => conn,
            other => panic!("{other:?}"),
        };
        let h = c.recv_header(Cancel::process()).unwrap();
        let mut buf = [0u8; 16];
        let p = c
            .recv_payload(&h, &mut buf, Cancel::process())
            .unwrap()
            .to_vec();
        c.send(Kind::Data, 0, 0, b"pong", Cancel::process())
            .unwrap();
        p
    });
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    handshake::client(&mut c, "test", &json!({}), Some(&key()), Cancel::process()).unwrap();
    c.send(Kind::Data, 0, 0, b"ping", Cancel::process())
        .unwrap();
    let h = c.recv_header(Cancel::process()).unwrap();
    assert!(h.tagged);
    let mut buf = [0u8; 16];
    assert_eq!(
        c.recv_payload(&h, &mut buf, Cancel::process()).unwrap(),
        b"pong"
    );
    assert_eq!(gate.join().unwrap(), b"ping");
}
