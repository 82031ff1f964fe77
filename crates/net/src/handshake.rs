//! The parameter handshake, run on every connection before any data moves.
//!
//! ```text
//! client                                   server
//!   Hello {proto, tool, nonce_c, params} ->
//!                                        <- Challenge {proto, nonce_s, auth, server_mac}
//!   Proof {client_mac}                   ->
//!                                        <- Verdict {accepted, message, params}
//! ```
//!
//! With a shared key, `server_mac = HMAC(key, "server" | nonce_c | nonce_s
//! | hello)` and `client_mac = HMAC(key, "client" | nonce_s | nonce_c |
//! hello)`: each side proves it holds the key over nonces the other chose,
//! so neither a replayed exchange nor a peer without the key gets through,
//! and the client's parameters cannot be altered on the way. Without a key
//! both MACs are empty and the handshake only compares parameters (as XDD
//! does). A key on one side only fails the handshake.
//!
//! The server alone judges the parameters (a function given by the
//! caller) and sends its verdict, so a mismatch stops both sides with the
//! same message and nothing written.

use crate::conn::{Cancel, Conn};
use crate::frame::Kind;
use crate::key::SharedKey;
use crate::NetError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of this handshake; a peer with another one is refused.
pub const PROTOCOL: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Hello {
    proto: u32,
    tool: String,
    nonce: String,
    params: Value,
}

#[derive(Serialize, Deserialize)]
struct Challenge {
    proto: u32,
    nonce: String,
    auth: bool,
    mac: String,
}

#[derive(Serialize, Deserialize)]
struct Proof {
    mac: String,
}

#[derive(Serialize, Deserialize)]
struct Verdict {
    accepted: bool,
    message: String,
    params: Value,
}

/// What a successful handshake leaves each side with.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreed {
    /// The other side's parameters.
    pub peer_params: Value,
    /// True when the shared key authenticated both sides.
    pub authenticated: bool,
}

/// The client side: sends `params`, proves the key, and waits for the
/// server's verdict.
pub fn client(
    c: &mut Conn,
    tool: &str,
    params: &Value,
    key: Option<&SharedKey>,
    cancel: Cancel<'_>,
) -> Result<Agreed, NetError> {
    let nonce_c = nonce()?;
    let hello = serde_json::to_vec(&Hello {
        proto: PROTOCOL,
        tool: tool.to_string(),
        nonce: nonce_c.clone(),
        params: params.clone(),
    })
    .map_err(|e| NetError::Protocol(e.to_string()))?;
    c.send(Kind::Control, 0, 0, &hello, cancel)?;
    let ch: Challenge = recv_json(c, cancel)?;
    if ch.proto != PROTOCOL {
        return Err(NetError::Protocol(format!(
            "the peer speaks handshake version {}, this iolab {PROTOCOL}: use the same iolab on both sides",
            ch.proto
        )));
    }
    let mac = key.map_or_else(String::new, |k| {
        k.mac_hex(&[b"client", ch.nonce.as_bytes(), nonce_c.as_bytes(), &hello])
    });
    // The proof goes out even when the server failed our check, so that
    // the server too sees the failure and says so, instead of a closed
    // connection.
    send_json(c, &Proof { mac }, cancel)?;
    check_server(&ch, &nonce_c, &hello, key)?;
    let v: Verdict = recv_json(c, cancel)?;
    if !v.accepted {
        return Err(NetError::Rejected(v.message));
    }
    Ok(Agreed {
        peer_params: v.params,
        authenticated: key.is_some(),
    })
}

fn check_server(
    ch: &Challenge,
    nonce_c: &str,
    hello: &[u8],
    key: Option<&SharedKey>,
) -> Result<(), NetError> {
    match (key, ch.auth) {
        (None, false) => Ok(()),
        (Some(k), true) => {
            let parts: [&[u8]; 4] = [b"server", nonce_c.as_bytes(), ch.nonce.as_bytes(), hello];
            if k.verify_hex(&parts, &ch.mac) {
                Ok(())
            } else {
                Err(NetError::Auth(
                    "the server does not hold the same key: check the key file on both hosts"
                        .into(),
                ))
            }
        }
        (Some(_), false) => Err(NetError::Auth(
            "a key was given here but the server runs without one".into(),
        )),
        (None, true) => Err(NetError::Auth(
            "the server requires a key: give the same key file on this side".into(),
        )),
    }
}

/// The server side: reads the client's parameters, checks the key, and
/// lets `judge(client_params)` accept them (Ok) or refuse them with the
/// message both sides will show. Returns the client's parameters.
pub fn server(
    c: &mut Conn,
    params: &Value,
    key: Option<&SharedKey>,
    judge: impl FnOnce(&Value) -> Result<(), String>,
    cancel: Cancel<'_>,
) -> Result<Agreed, NetError> {
    let (_, hello_bytes) = c.recv_owned(cancel)?;
    let hello: Hello = serde_json::from_slice(&hello_bytes)
        .map_err(|e| NetError::Protocol(format!("bad hello: {e}")))?;
    let nonce_s = nonce()?;
    let mac = key.map_or_else(String::new, |k| {
        k.mac_hex(&[
            b"server",
            hello.nonce.as_bytes(),
            nonce_s.as_bytes(),
            &hello_bytes,
        ])
    });
    let ch = Challenge {
        proto: PROTOCOL,
        nonce: nonce_s.clone(),
        auth: key.is_some(),
        mac,
    };
    send_json(c, &ch, cancel)?;
    let proof: Proof = recv_json(c, cancel)?;
    let verdict = judge_hello(&hello, &hello_bytes, &nonce_s, &proof, key, judge);
    let v = Verdict {
        accepted: verdict.is_ok(),
        message: verdict
            .as_ref()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default(),
        params: params.clone(),
    };
    // The verdict is sent even on refusal so the client shows the reason.
    send_json(c, &v, cancel)?;
    verdict?;
    Ok(Agreed {
        peer_params: hello.params,
        authenticated: key.is_some(),
    })
}

/// The server's judgement: versions, then the key, then the caller's
/// rules for the parameters.
fn judge_hello(
    hello: &Hello,
    hello_bytes: &[u8],
    nonce_s: &str,
    proof: &Proof,
    key: Option<&SharedKey>,
    judge: impl FnOnce(&Value) -> Result<(), String>,
) -> Result<(), NetError> {
    if hello.proto != PROTOCOL {
        return Err(NetError::Rejected(format!(
            "handshake version {} (client) and {PROTOCOL} (server) differ: use the same iolab on both sides",
            hello.proto
        )));
    }
    if !key_ok(hello_bytes, nonce_s, &hello.nonce, proof, key) {
        return Err(NetError::Auth(
            "the client does not hold the same key as this server (or none)".into(),
        ));
    }
    judge(&hello.params).map_err(NetError::Rejected)
}

fn key_ok(
    hello: &[u8],
    nonce_s: &str,
    nonce_c: &str,
    proof: &Proof,
    key: Option<&SharedKey>,
) -> bool {
    match key {
        None => proof.mac.is_empty(),
        Some(k) => k.verify_hex(
            &[b"client", nonce_s.as_bytes(), nonce_c.as_bytes(), hello],
            &proof.mac,
        ),
    }
}

fn send_json<T: Serialize>(c: &mut Conn, v: &T, cancel: Cancel<'_>) -> Result<(), NetError> {
    let b = serde_json::to_vec(v).map_err(|e| NetError::Protocol(e.to_string()))?;
    c.send(Kind::Control, 0, 0, &b, cancel).map(drop)
}

fn recv_json<T: for<'de> Deserialize<'de>>(
    c: &mut Conn,
    cancel: Cancel<'_>,
) -> Result<T, NetError> {
    let (h, b) = c.recv_owned(cancel)?;
    if h.kind != Kind::Control {
        return Err(NetError::Protocol(format!(
            "expected a handshake message, got a {:?} frame",
            h.kind
        )));
    }
    serde_json::from_slice(&b)
        .map_err(|e| NetError::Protocol(format!("bad handshake message: {e}")))
}

/// 32 random bytes, hex: fresh for every handshake.
fn nonce() -> Result<String, NetError> {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b)
        .map_err(|e| NetError::Protocol(format!("no random source for a nonce: {e}")))?;
    Ok(crate::key::hex(&b))
}
