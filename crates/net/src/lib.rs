//! TCP data channels for iolab's tools that cross hosts (XDD's end-to-end
//! copy, the network self-test, the surveys): framing with a CRC-32C on
//! every frame, a parameter handshake that stops both sides with the same
//! message on a mismatch, shared-key authentication (HMAC-SHA256
//! challenge, then a keyed-BLAKE3 tag on every frame after it: [`seal`]),
//! and connects, accepts, reads and writes that are all bounded in time
//! and cancellable.
//!
//! ```
//! use iolab_net::{conn, frame::Kind, handshake, Cancel};
//! use serde_json::json;
//! use std::time::Duration;
//! let l = conn::listen("127.0.0.1:0").unwrap();
//! let addr = l.local_addr().unwrap().to_string();
//! let server = std::thread::spawn(move || {
//!     let (mut c, _) = conn::accept(&l, Duration::from_secs(10), Cancel::process()).unwrap();
//!     handshake::server(&mut c, &json!({"reqsize": 8}), None,
//!         |p| if p["reqsize"] == 8 { Ok(()) } else { Err("request sizes differ".into()) },
//!         Cancel::process()).unwrap();
//!     let h = c.recv_header(Cancel::process()).unwrap();
//!     let mut buf = [0u8; 16];
//!     c.recv_payload(&h, &mut buf, Cancel::process()).unwrap().to_vec()
//! });
//! let mut c = conn::connect(&addr, Duration::from_secs(10), Cancel::process()).unwrap();
//! handshake::client(&mut c, "example", &json!({"reqsize": 8}), None, Cancel::process()).unwrap();
//! c.send(Kind::Data, 0, 4096, b"hello", Cancel::process()).unwrap();
//! assert_eq!(server.join().unwrap(), b"hello");
//! ```

pub mod clock;
pub mod conn;
pub mod frame;
pub mod gate;
pub mod handshake;
pub mod key;
mod polyval;
pub mod seal;
pub mod sum;

pub use conn::{Cancel, Conn};
pub use key::SharedKey;

/// Text a peer sent (its Error frame's reason), fit to print: control
/// characters (a terminal's escape sequences among them) shown as `?`,
/// and at most [`PEER_TEXT_MAX`] characters, the length said beyond. A
/// peer's words go to a terminal; they must not drive it, nor flood it.
pub fn peer_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text
        .chars()
        .take(PEER_TEXT_MAX)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let n = text.chars().count();
    if n > PEER_TEXT_MAX {
        out.push_str(&format!("... ({n} characters in all)"));
    }
    out
}

/// Most characters of a peer's text that [`peer_text`] keeps.
pub const PEER_TEXT_MAX: usize = 512;

/// What to do about a failed bind, by its cause: a port in use wants
/// another port, a name that does not resolve or an address no interface
/// has wants another address (it was once always blamed on the port).
fn bind_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            " (the port is in use: choose another port, or stop what listens there)"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            " (no interface of this host has that address: give one of its own)"
        }
        std::io::ErrorKind::PermissionDenied => " (a port below 1024 needs root)",
        _ if e.to_string().contains("lookup") => {
            " (the host name does not resolve here: check it, or give an address)"
        }
        _ => "",
    }
}

/// Everything that can go wrong on a data channel; every message names
/// the address, frame or rule involved.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// Could not listen.
    #[error("cannot listen on {addr}: {source}{}", bind_hint(source))]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The host name did not resolve.
    #[error("cannot resolve {addr}: {source}")]
    Resolve {
        /// `host:port`.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// No connection within the retry window.
    #[error("cannot connect to {addr} after {waited_s} s: {source}{hint}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// How long connects were retried.
        waited_s: f64,
        /// The last attempt's error.
        source: std::io::Error,
        /// What should listen there, as the tool that connected says it
        /// (` (is ... running there?)`, [`NetError::hinted`]); empty from
        /// [`conn::connect`].
        hint: &'static str,
    },
    /// A wait passed its deadline.
    #[error("timed out {what}")]
    Timeout {
        /// What was awaited.
        what: &'static str,
    },
    /// Ctrl-C, SIGTERM or a failed peer thread stopped the wait.
    #[error("cancelled")]
    Cancelled,
    /// The peer closed the connection between frames.
    #[error("the peer closed the connection")]
    Closed,
    /// A frame's CRC did not match: the data was damaged on the way.
    #[error(
        "checksum mismatch in the frame for offset {offset} (frame {seq}): data damaged in transit"
    )]
    Checksum {
        /// The frame's offset.
        offset: u64,
        /// The frame's sequence number.
        seq: u64,
    },
    /// On a connection whose handshake proved a key, a frame whose
    /// authentication tag does not hold: it was changed on the way (its
    /// CRC made to match), replayed, reordered or made without the key.
    #[error(
        "the frame for offset {offset} (frame {seq}) fails its authentication tag: it was changed on the way, replayed or reordered, or not sent by the holder of the key"
    )]
    Forged {
        /// The frame's offset, as its header says.
        offset: u64,
        /// The frame's sequence number, as its header says.
        seq: u64,
    },
    /// A frame or buffer larger than allowed.
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// The length seen.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// The stream is not what the protocol expects.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The shared key did not match, or only one side had one.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// The server refused the parameters (the same message on both sides).
    #[error("{0}")]
    Rejected(String),
    /// A key file problem.
    #[error("{0}")]
    Key(String),
    /// Any other socket error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl NetError {
    /// A connect that failed, told what should have listened there (`
    /// (is iolab timeserver running there, on that port?)`); any other
    /// error as it is.
    pub fn hinted(self, what: &'static str) -> NetError {
        match self {
            NetError::Connect {
                addr,
                waited_s,
                source,
                ..
            } => NetError::Connect {
                addr,
                waited_s,
                source,
                hint: what,
            },
            e => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_s_text_cannot_drive_the_terminal_or_flood_it() {
        assert_eq!(peer_text(b"disk full"), "disk full");
        assert_eq!(peer_text(b"\x1b[2Jgone\r\n"), "?[2Jgone??");
        let long = peer_text(&[b'x'; 1 << 20]);
        assert!(long.starts_with(&"x".repeat(PEER_TEXT_MAX)));
        assert!(
            long.ends_with("... (1048576 characters in all)"),
            "{}",
            &long[500..]
        );
        let e = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        assert!(bind_hint(&e).contains("in use"));
        let e = std::io::Error::from(std::io::ErrorKind::AddrNotAvailable);
        assert!(!bind_hint(&e).contains("in use"));
    }
}
