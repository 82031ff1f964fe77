//! The data channel over real TCP sockets on loopback: handshakes with and
//! without keys, refusals seen on both sides, damaged frames caught, and
//! every wait bounded and cancellable.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_net::frame::{Header, Kind};
use iolab_net::{conn, handshake, Cancel, NetError, SharedKey};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn key(s: &str) -> SharedKey {
    SharedKey::new(format!("{s:0<16}").as_bytes()).unwrap()
}

/// Runs a server handshake on a fresh port in a thread and a client
/// handshake here; returns both results.
fn pair(
    server_key: Option<SharedKey>,
    client_key: Option<SharedKey>,
    server_params: Value,
    client_params: Value,
) -> (
    Result<handshake::Agreed, NetError>,
    Result<handshake::Agreed, NetError>,
) {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut c, _) = conn::accept(&l, WAIT, Cancel::process())?;
        let judge = |p: &Value| {
            if p["reqsize"] == server_params["reqsize"] {
                Ok(())
            } else {
                Err(format!(
                    "request sizes differ: source {} blocks, destination {}",
                    p["reqsize"], server_params["reqsize"]
                ))
            }
        };
        handshake::server(
            &mut c,
            &server_params,
            server_key.as_ref(),
            judge,
            Cancel::process(),
        )
    });
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    let client = handshake::client(
        &mut c,
        "test",
        &client_params,
        client_key.as_ref(),
        Cancel::process(),
    );
    (server.join().unwrap(), client)
}

#[test]
fn same_key_authenticates_both_sides_and_exchanges_parameters() {
    let (s, c) = pair(
        Some(key("k1")),
        Some(key("k1")),
        json!({"reqsize": 8, "side": "dst"}),
        json!({"reqsize": 8, "side": "src"}),
    );
    let (s, c) = (s.unwrap(), c.unwrap());
    assert!(s.authenticated && c.authenticated);
    assert_eq!(s.peer_params["side"], "src");
    assert_eq!(c.peer_params["side"], "dst");
}

#[test]
fn no_key_on_either_side_is_an_unauthenticated_handshake() {
    let (s, c) = pair(None, None, json!({"reqsize": 8}), json!({"reqsize": 8}));
    assert!(!s.unwrap().authenticated);
    assert!(!c.unwrap().authenticated);
}

#[test]
fn a_wrong_or_missing_key_fails_on_both_sides() {
    for (sk, ck) in [
        (Some(key("right")), Some(key("wrong"))),
        (Some(key("right")), None),
        (None, Some(key("right"))),
    ] {
        let what = format!("server {:?}, client {:?}", sk.is_some(), ck.is_some());
        let (s, c) = pair(sk, ck, json!({"reqsize": 8}), json!({"reqsize": 8}));
        assert!(matches!(s, Err(NetError::Auth(_))), "{what}: server {s:?}");
        assert!(matches!(c, Err(NetError::Auth(_))), "{what}: client {c:?}");
    }
}

#[test]
fn a_parameter_mismatch_stops_both_sides_with_the_same_message() {
    let (s, c) = pair(
        Some(key("k")),
        Some(key("k")),
        json!({"reqsize": 8}),
        json!({"reqsize": 16}),
    );
    let (Err(NetError::Rejected(sm)), Err(NetError::Rejected(cm))) = (s, c) else {
        panic!("both sides must refuse");
    };
    assert_eq!(sm, cm);
    assert!(sm.contains("request sizes differ"), "{sm}");
}

#[test]
fn data_frames_arrive_in_order_with_their_offsets() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let rx = std::thread::spawn(move || {
        let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut got = Vec::new();
        loop {
            let h = c.recv_header(Cancel::process()).unwrap();
            if h.kind == Kind::End {
                return got;
            }
            let p = c.recv_payload(&h, &mut buf, Cancel::process()).unwrap();
            got.push((h.seq, h.offset, p.len(), p[0]));
        }
    });
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    let block = vec![0u8; 1 << 20];
    for i in 0..50u64 {
        let mut b = block.clone();
        b[0] = i as u8;
        c.send(
            Kind::Data,
            0,
            i << 20,
            &b[..(1 << 20) - i as usize],
            Cancel::process(),
        )
        .unwrap();
    }
    c.send(Kind::End, 0, 0, &[], Cancel::process()).unwrap();
    let got = rx.join().unwrap();
    assert_eq!(got.len(), 50);
    for (i, (seq, off, len, first)) in got.into_iter().enumerate() {
        assert_eq!(
            (seq, off, len, first),
            (i as u64, (i as u64) << 20, (1 << 20) - i, i as u8)
        );
    }
}

#[test]
fn a_damaged_frame_is_caught_before_use() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
        let h = c.recv_header(Cancel::process()).unwrap();
        let mut buf = [0u8; 64];
        c.recv_payload(&h, &mut buf, Cancel::process())
            .map(|p| p.to_vec())
    });
    // A raw socket, so the damage happens after the checksum was made.
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    let mut payload = *b"sixteen bytes!!!";
    let h = Header::new(Kind::Data, 0, 8192, 0, &payload);
    payload[3] ^= 0x10;
    raw.write_all(&h.encode()).unwrap();
    raw.write_all(&payload).unwrap();
    let r = rx.join().unwrap();
    assert!(
        matches!(
            r,
            Err(NetError::Checksum {
                offset: 8192,
                seq: 0
            })
        ),
        "{r:?}"
    );
}

#[test]
fn connecting_to_a_closed_port_gives_up_and_names_it() {
    // Bind then drop: the port is now (almost certainly) closed.
    let port = conn::listen("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let e = conn::connect(&addr, Duration::from_millis(500), Cancel::process()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, NetError::Connect { .. }), "{msg}");
    assert!(msg.contains(&addr), "{msg}");
}

#[test]
fn a_port_in_use_is_refused_with_its_address() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let e = conn::listen(&addr).unwrap_err();
    assert!(matches!(e, NetError::Bind { .. }));
    assert!(e.to_string().contains(&addr), "{e}");
}

#[test]
fn waits_end_when_cancelled() {
    let stop = AtomicBool::new(false);
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        // Nobody connects: only the flag can end this accept.
        let r = conn::accept(&l, Duration::from_secs(600), Cancel::with(&stop));
        assert!(matches!(r, Err(NetError::Cancelled)), "{r:?}");
    });
    stop.store(false, Ordering::Relaxed);
    // A connected peer that never sends: only the flag ends the read.
    let _peer = std::net::TcpStream::connect(&addr).unwrap();
    let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        let r = c.recv_header(Cancel::with(&stop));
        assert!(matches!(r, Err(NetError::Cancelled)), "{r:?}");
    });
}

#[test]
fn a_peer_that_closes_between_frames_is_closed_not_an_error() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let peer = std::net::TcpStream::connect(&addr).unwrap();
    let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
    drop(peer);
    assert!(matches!(
        c.recv_header(Cancel::process()),
        Err(NetError::Closed)
    ));
}

#[test]
fn the_clock_offset_to_a_server_on_this_host_is_within_the_round_trip() {
    use iolab_net::clock;
    let stop = AtomicBool::new(false);
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::scope(|s| {
        let server = s.spawn(|| clock::serve(&l, None, Cancel::with(&stop)));
        let e = clock::estimate(&addr, 20, WAIT, None, Cancel::process()).unwrap();
        // Same host, same clock: the true offset is 0, and the estimate's
        // error is at most half the smallest round trip (plus rounding).
        assert!(
            e.offset_ns.unsigned_abs() <= e.rtt_ns / 2 + 1,
            "offset {} ns with a {} ns round trip",
            e.offset_ns,
            e.rtt_ns
        );
        assert_eq!(e.bounces, 20);
        let g = e.global_now_ns();
        assert_eq!(e.local_at(g), g.saturating_add_signed(-e.offset_ns));
        // A second client at the same time is served too.
        clock::estimate(&addr, 1, WAIT, None, Cancel::process()).unwrap();
        stop.store(true, Ordering::Relaxed);
        assert!(matches!(server.join().unwrap(), Err(NetError::Cancelled)));
    });
}

/// A clock server serves at most MAX_CLIENTS at once (a thread each),
/// and a new client takes the place of the one connected longest: idle
/// connections held by a stranger, as many as there are places and more,
/// keep no client out; the oldest are let go. (The old server took every
/// connection on a thread of its own, without a bound; the next one made
/// clients wait, for good while a stranger held every place.)
#[test]
fn the_clock_server_serves_a_bounded_number_of_clients_and_the_newest() {
    use iolab_net::clock;
    let stop = AtomicBool::new(false);
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::scope(|s| {
        let server = s.spawn(|| clock::serve(&l, None, Cancel::with(&stop)));
        let idle: Vec<std::net::TcpStream> = (0..clock::MAX_CLIENTS + 20)
            .map(|_| std::net::TcpStream::connect(&addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let served = clock::estimate(&addr, 1, WAIT, None, Cancel::process());
        std::thread::sleep(Duration::from_millis(300));
        let let_go: Vec<bool> = idle
            .iter()
            .map(|c| {
                c.set_nonblocking(true).unwrap();
                matches!(c.peek(&mut [0u8; 1]), Ok(0))
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        drop(idle);
        assert!(matches!(server.join().unwrap(), Err(NetError::Cancelled)));
        served.unwrap();
        // The 20 beyond the places, then the client's: the 21 oldest.
        let gone = let_go.iter().filter(|g| **g).count();
        assert_eq!(gone, 21, "{let_go:?}");
        assert!(
            let_go[..21].iter().all(|g| *g),
            "not the oldest: {let_go:?}"
        );
    });
}

#[test]
fn payload_checksums_are_a_per_connection_agreement() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let rx = std::thread::spawn(move || {
        let (mut c, _) = conn::accept(&l, WAIT, Cancel::process()).unwrap();
        let mut buf = [0u8; 64];
        // This side requires checksums (the default): refused.
        let h = c.recv_header(Cancel::process()).unwrap();
        let refused = c.recv_payload(&h, &mut buf, Cancel::process()).is_err();
        // Now it agrees to go without: accepted.
        c.payload_crc = false;
        let h = c.recv_header(Cancel::process()).unwrap();
        let got = c
            .recv_payload(&h, &mut buf, Cancel::process())
            .unwrap()
            .to_vec();
        (refused, h.unchecked, got)
    });
    let mut c = conn::connect(&addr, WAIT, Cancel::process()).unwrap();
    c.payload_crc = false;
    c.send(Kind::Data, 0, 0, b"first", Cancel::process())
        .unwrap();
    c.send(Kind::Data, 0, 8, b"second", Cancel::process())
        .unwrap();
    let (refused, unchecked, got) = rx.join().unwrap();
    assert!(
        refused,
        "an unchecked frame must be refused by a side that wants checksums"
    );
    assert!(unchecked);
    assert_eq!(got, b"second");
}
