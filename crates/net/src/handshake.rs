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
//! and the client's parameters cannot be altered on the way. From then on
//! both sides hold session keys derived from the key, both nonces and the
//! hello, and every frame, the verdict first, carries a tag under them
//! ([`crate::seal`]): the server's terms and every byte after the
//! handshake are authenticated too, not only the handshake. Without a key
//! both MACs are empty, no frame is tagged, and the handshake only
//! compares parameters (as XDD does). A key on one side only fails the
//! handshake.
//!
//! The server alone judges the parameters (a function given by the
//! caller) and sends its verdict, so a mismatch stops both sides with the
//! same message and nothing written.

use crate::conn::{Cancel, Conn};
use crate::frame::Kind;
use crate::key::SharedKey;
use crate::seal::{Seal, Side};
use crate::NetError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of this handshake; a peer with another one is refused.
/// Version 2: frames after a keyed handshake are tagged, the verdict
/// included. Version 3: the tag covers the payload through its POLYVAL
/// ([`crate::seal`]), so version 2's tags do not check.
pub const PROTOCOL: u32 = 3;

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

/// What a handshake past its bound timed out doing.
const WHOLE: &str = "completing the handshake (it is bounded as a whole)";

/// The client side: sends `params`, proves the key, and waits for the
/// server's verdict, all within the connection's `idle_timeout` (a
/// bound on the whole exchange, not on each read).
pub fn client(
    c: &mut Conn,
    tool: &str,
    params: &Value,
    key: Option<&SharedKey>,
    cancel: Cancel<'_>,
) -> Result<Agreed, NetError> {
    c.bound_by(c.idle_timeout, WHOLE);
    let r = client_steps(c, tool, params, key, cancel);
    c.unbound();
    r
}

fn client_steps(
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
    if let Some(k) = key {
        let seal = Seal::new(
            k,
            Side::Client,
            nonce_c.as_bytes(),
            ch.nonce.as_bytes(),
            &hello,
        );
        c.seal_with(seal);
    }
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
/// message both sides will show. Returns the client's parameters. The
/// whole exchange is bounded by the connection's `idle_timeout`, not
/// each read: a peer that trickles its bytes is cut off at that time.
/// A server that takes many peers at once uses [`crate::gate::Gate`],
/// which costs a waiting peer no thread.
pub fn server(
    c: &mut Conn,
    params: &Value,
    key: Option<&SharedKey>,
    judge: impl FnOnce(&Value) -> Result<(), String>,
    cancel: Cancel<'_>,
) -> Result<Agreed, NetError> {
    c.bound_by(c.idle_timeout, WHOLE);
    let r = server_steps(c, params, key, judge, cancel);
    c.unbound();
    r
}

fn server_steps(
    c: &mut Conn,
    params: &Value,
    key: Option<&SharedKey>,
    judge: impl FnOnce(&Value) -> Result<(), String>,
    cancel: Cancel<'_>,
) -> Result<Agreed, NetError> {
    let (h, hello_bytes) = c.recv_owned(cancel)?;
    let (open, challenge) = Opened::from_hello(h.kind, hello_bytes, key)?;
    c.send(Kind::Control, 0, 0, &challenge, cancel)?;
    let (h, proof) = c.recv_owned(cancel)?;
    if let Some(seal) = open.seal(key) {
        c.seal_with(seal);
    }
    let (verdict, agreed) =
        open.verdict(h.kind, &proof, key, |p| judge(p).map(|()| params.clone()))?;
    // The verdict is sent even on refusal so the client shows the reason.
    c.send(Kind::Control, 0, 0, &verdict, cancel)?;
    agreed
}

/// The server's side of a handshake between its two reads, whoever
/// moves the bytes (the blocking [`server`], or [`crate::gate::Gate`]'s
/// poll loop): made from the client's hello, it answers with the
/// challenge, then judges the proof.
pub(crate) struct Opened {
    hello: Hello,
    hello_bytes: Vec<u8>,
    nonce_s: String,
}

impl Opened {
    /// Reads the hello (a frame of `kind`) and makes the challenge to
    /// send back.
    pub(crate) fn from_hello(
        kind: Kind,
        hello_bytes: Vec<u8>,
        key: Option<&SharedKey>,
    ) -> Result<(Opened, Vec<u8>), NetError> {
        if kind != Kind::Control {
            return Err(NetError::Protocol(format!(
                "expected a handshake message, got a {kind:?} frame"
            )));
        }
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
        let bytes = serde_json::to_vec(&ch).map_err(|e| NetError::Protocol(e.to_string()))?;
        let open = Opened {
            hello,
            hello_bytes,
            nonce_s,
        };
        Ok((open, bytes))
    }

    /// The server's seal of this connection under `key` (none without a
    /// key): it tags the verdict and every frame after it.
    pub(crate) fn seal(&self, key: Option<&SharedKey>) -> Option<Seal> {
        let k = key?;
        Some(Seal::new(
            k,
            Side::Server,
            self.hello.nonce.as_bytes(),
            self.nonce_s.as_bytes(),
            &self.hello_bytes,
        ))
    }

    /// Judges the proof (a frame of `kind`): versions, the key, then
    /// `judge`, which returns the parameters to send back. Returns the
    /// verdict to send (always, so that a refused client shows why)
    /// and what it means here. An error means there is no verdict to
    /// send: the proof was not even a handshake message.
    pub(crate) fn verdict(
        self,
        kind: Kind,
        proof: &[u8],
        key: Option<&SharedKey>,
        judge: impl FnOnce(&Value) -> Result<Value, String>,
    ) -> Result<(Vec<u8>, Result<Agreed, NetError>), NetError> {
        if kind != Kind::Control {
            return Err(NetError::Protocol(format!(
                "expected a handshake message, got a {kind:?} frame"
            )));
        }
        let proof: Proof = serde_json::from_slice(proof)
            .map_err(|e| NetError::Protocol(format!("bad handshake message: {e}")))?;
        let judged = judge_hello(
            &self.hello,
            &self.hello_bytes,
            &self.nonce_s,
            &proof,
            key,
            judge,
        );
        let v = match &judged {
            Ok(params) => Verdict {
                accepted: true,
                message: String::new(),
                params: params.clone(),
            },
            Err(e) => Verdict {
                accepted: false,
                message: e.to_string(),
                params: Value::Null,
            },
        };
        let bytes = serde_json::to_vec(&v).map_err(|e| NetError::Protocol(e.to_string()))?;
        let agreed = judged.map(|_| Agreed {
            peer_params: self.hello.params,
            authenticated: key.is_some(),
        });
        Ok((bytes, agreed))
    }
}

/// The server's judgement: versions, then the key, then the caller's
/// rules for the parameters.
fn judge_hello(
    hello: &Hello,
    hello_bytes: &[u8],
    nonce_s: &str,
    proof: &Proof,
    key: Option<&SharedKey>,
    judge: impl FnOnce(&Value) -> Result<Value, String>,
) -> Result<Value, NetError> {
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
    // A peer that refuses to shake hands (a server that cannot take this
    // client) says why in an Error frame: shown, not called a bad frame.
    if h.kind == Kind::Error {
        return Err(NetError::Rejected(format!(
            "the peer refused: {}",
            crate::peer_text(&b)
        )));
    }
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
