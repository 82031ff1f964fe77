//! Strangers on a port, over real loopback sockets: a connection that
//! sends nothing, one that trickles a byte now and then, a flood. The
//! handshake is bounded as a whole, a gate serves the real peer while
//! the strangers wait, and drops them when their time is up.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_net::frame::{Header, Kind};
use iolab_net::gate::{Event, Gate};
use iolab_net::{conn, handshake, Cancel, NetError, SharedKey};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Bounds a wait that would otherwise hang the test (never a measure).
const HANG: Duration = Duration::from_secs(60);

fn key() -> SharedKey {
    SharedKey::new(b"0123456789abcdef0123").unwrap()
}

/// The bytes of a handshake frame too long to finish at a byte a time.
fn slow_frame() -> impl Iterator<Item = u8> {
    let body = vec![b' '; 60_000];
    let h = Header::new(Kind::Control, 0, 0, 0, &body).encode();
    h.into_iter().chain(body)
}

/// A stranger that sends one byte every `every` until told to stop or
/// the server closes; returns whether the server closed on it.
fn trickler(addr: String, every: Duration, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(every)).unwrap();
        // A well-formed frame of 60,000 bytes, one byte at a time: it
        // would take hours to complete, and every read sees a byte.
        for b in slow_frame() {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            if s.write_all(&[b]).is_err() {
                return true;
            }
            let mut buf = [0u8; 16];
            match s.read(&mut buf) {
                Ok(0) => return true,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                _ => {}
            }
        }
        false
    })
}

/// Waits until the server closes `s` (EOF or reset); false after HANG.
fn closed_by_server(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(HANG)).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn a_trickling_client_is_cut_off_by_the_handshake_bound_not_kept_by_its_bytes() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    // A byte every 200 ms: well inside the 1 s each read may wait.
    let t = trickler(addr, Duration::from_millis(200), Arc::clone(&stop));
    let (mut c, _) = conn::accept(&l, HANG, Cancel::process()).unwrap();
    c.idle_timeout = Duration::from_secs(1);
    let r = handshake::server(&mut c, &json!({}), None, |_| Ok(()), Cancel::process());
    drop(c);
    let closed = t.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    match r {
        Err(NetError::Timeout { what }) => assert!(what.contains("handshake"), "{what}"),
        other => panic!("the trickler must be timed out as a whole: {other:?}"),
    }
    assert!(closed, "the stranger sees its connection closed");
}

#[test]
fn a_client_whose_server_trickles_gives_up_at_the_handshake_bound() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    // A "server" that answers a byte every 200 ms, never a whole frame.
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        for b in slow_frame() {
            if flag.load(Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let mut c = conn::connect(&addr, HANG, Cancel::process()).unwrap();
    c.idle_timeout = Duration::from_secs(1);
    let r = handshake::client(&mut c, "t", &json!({}), None, Cancel::process());
    stop.store(true, Ordering::Relaxed);
    drop(c);
    server.join().unwrap();
    assert!(matches!(r, Err(NetError::Timeout { .. })), "{r:?}");
}

/// A real client's handshake on `addr`, with `key`, in a thread.
fn client(
    addr: &str,
    key: Option<SharedKey>,
    n: u32,
) -> std::thread::JoinHandle<Result<handshake::Agreed, NetError>> {
    let addr = addr.to_string();
    std::thread::spawn(move || {
        let mut c = conn::connect(&addr, HANG, Cancel::process())?;
        c.idle_timeout = HANG;
        handshake::client(
            &mut c,
            "t",
            &json!({ "n": n }),
            key.as_ref(),
            Cancel::process(),
        )
    })
}

fn judge_n(port: usize, p: &Value) -> Result<Value, String> {
    match p["n"].as_u64() {
        Some(n) if n < 100 => Ok(json!({ "port": port })),
        _ => Err(format!("n {} is too large", p["n"])),
    }
}

#[test]
fn a_gate_serves_the_real_peer_while_strangers_trickle_and_say_nothing_then_drops_them() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let silent = TcpStream::connect(&addr).unwrap();
    let trickle = trickler(addr.clone(), Duration::from_millis(300), Arc::clone(&stop));
    // A limit far longer than the real handshake takes, so that the
    // strangers are certainly still pending when the peer comes.
    let mut gate = Gate::new(vec![l], Some(key()), Duration::from_secs(4));
    // Both strangers are taken before the real peer connects.
    let mut judge = judge_n;
    while gate.pending() < 2 {
        let e = gate.next(&mut judge, Duration::from_millis(100), Cancel::process());
        assert!(matches!(e, Err(NetError::Timeout { .. })), "{e:?}");
    }
    let real = client(&addr, Some(key()), 7);
    let first = gate.next(&mut judge, HANG, Cancel::process()).unwrap();
    let Event::Admitted {
        agreed, listener, ..
    } = first
    else {
        panic!("the real peer comes first: {first:?}");
    };
    assert_eq!((agreed.peer_params["n"].as_u64(), listener), (Some(7), 0));
    assert_eq!(gate.pending(), 2, "the strangers still wait");
    let theirs = real.join().unwrap().unwrap();
    assert!(theirs.authenticated);
    assert_eq!(theirs.peer_params["port"], 0);
    // Then both strangers are dropped for their time, as a whole.
    for _ in 0..2 {
        match gate.next(&mut judge, HANG, Cancel::process()).unwrap() {
            Event::Dropped {
                error: NetError::Timeout { what },
                ..
            } => assert!(what.contains("handshake"), "{what}"),
            other => panic!("a stranger must be dropped for its time: {other:?}"),
        }
    }
    assert_eq!(gate.pending(), 0);
    assert!(closed_by_server(silent), "the silent stranger is closed");
    assert!(trickle.join().unwrap(), "the trickler is closed");
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn a_gate_tells_a_refused_peer_why_and_drops_a_wrong_key() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let mut gate = Gate::new(vec![l], Some(key()), Duration::from_secs(20));
    let mut judge = judge_n;
    let refused = client(&addr, Some(key()), 500);
    match gate.next(&mut judge, HANG, Cancel::process()).unwrap() {
        Event::Refused {
            error: NetError::Rejected(m),
            ..
        } => assert_eq!(m, "n 500 is too large"),
        other => panic!("{other:?}"),
    }
    match refused.join().unwrap() {
        Err(NetError::Rejected(m)) => assert_eq!(m, "n 500 is too large", "the same message"),
        other => panic!("{other:?}"),
    }
    let wrong = client(
        &addr,
        Some(SharedKey::new(b"another key, 16+ bytes").unwrap()),
        1,
    );
    let e = gate.next(&mut judge, HANG, Cancel::process()).unwrap();
    assert!(
        matches!(
            e,
            Event::Dropped {
                error: NetError::Auth(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(matches!(wrong.join().unwrap(), Err(NetError::Auth(_))));
    let garbage = {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(b"GET / HTTP/1.0\r\n\r\n____________________")
            .unwrap();
        s
    };
    let e = gate.next(&mut judge, HANG, Cancel::process()).unwrap();
    assert!(
        matches!(
            e,
            Event::Dropped {
                error: NetError::Protocol(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(closed_by_server(garbage));
}

#[test]
fn past_its_pending_limit_a_gate_drops_the_oldest_and_still_admits_a_real_peer() {
    let l = conn::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let mut gate = Gate::new(vec![l], None, Duration::from_secs(30)).max_pending(4);
    let mut judge = judge_n;
    let flood: Vec<TcpStream> = (0..10)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    let mut dropped = 0;
    while dropped < 6 {
        match gate.next(&mut judge, HANG, Cancel::process()).unwrap() {
            Event::Dropped {
                error: NetError::Protocol(m),
                ..
            } if m.contains("too many") => dropped += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(gate.pending(), 4);
    let real = client(&addr, None, 3);
    loop {
        match gate.next(&mut judge, HANG, Cancel::process()).unwrap() {
            Event::Admitted { agreed, .. } => {
                assert_eq!(agreed.peer_params["n"], 3);
                break;
            }
            Event::Dropped { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    real.join().unwrap().unwrap();
    assert!(gate.pending() <= 4);
    drop(flood);
}

#[test]
fn a_gate_over_several_ports_says_which_and_a_retired_port_takes_no_more() {
    let ls: Vec<_> = (0..3)
        .map(|_| conn::listen("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<String> = ls
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let mut gate = Gate::new(ls, None, Duration::from_secs(20));
    let mut judge = judge_n;
    let c2 = client(&addrs[2], None, 2);
    match gate.next(&mut judge, HANG, Cancel::process()).unwrap() {
        Event::Admitted { listener, .. } => assert_eq!(listener, 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(c2.join().unwrap().unwrap().peer_params["port"], 2);
    gate.retire(2);
    assert!(gate.local_addr(2).is_none());
    let c0 = client(&addrs[0], None, 0);
    match gate.next(&mut judge, HANG, Cancel::process()).unwrap() {
        Event::Admitted { listener, .. } => assert_eq!(listener, 0),
        other => panic!("{other:?}"),
    }
    c0.join().unwrap().unwrap();
    let stop = AtomicBool::new(true);
    let e = gate.next(&mut judge, HANG, Cancel::with(&stop));
    assert!(matches!(e, Err(NetError::Cancelled)), "{e:?}");
}
