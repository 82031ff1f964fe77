//! The shared secret that authenticates a handshake, and HMAC-SHA256 over
//! it (the handshake's proofs, and the session keys derived from it). The key is read from a file (never from the command line, where
//! `ps` would show it); [`KEY_FILE_ENV`] names a default file. The file
//! name [`STDIN_KEY`] (`-`) reads it from standard input instead: the
//! way a tool that starts both sides of a connection (xddcp, lst) hands
//! each side its one-time key, and standard input's closing then tells
//! that side its starter is gone (see [`SharedKey::from_stdin`]).

use crate::NetError;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::OnceLock;

/// The key file name that means: the first line of standard input, in hex.
pub const STDIN_KEY: &str = "-";

/// The key read from standard input, once per process (every target and
/// the validation before them share it).
static FROM_STDIN: OnceLock<Result<SharedKey, String>> = OnceLock::new();

/// Environment variable naming the key file when no option gives one.
pub const KEY_FILE_ENV: &str = "IOLAB_KEY_FILE";

/// Shortest key accepted, in bytes: shorter secrets are guessable.
pub const MIN_KEY_BYTES: usize = 16;

/// A shared secret. Debug output never shows it.
#[derive(Clone)]
pub struct SharedKey(Vec<u8>);

impl std::fmt::Debug for SharedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedKey({} bytes)", self.0.len())
    }
}

impl SharedKey {
    /// A key from bytes; refuses one shorter than [`MIN_KEY_BYTES`].
    pub fn new(bytes: &[u8]) -> Result<SharedKey, NetError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(NetError::Key(format!(
                "the key has {} bytes; at least {MIN_KEY_BYTES} are needed (e.g. `head -c 32 /dev/urandom | base64 > key`)",
                bytes.len()
            )));
        }
        Ok(SharedKey(bytes.to_vec()))
    }

    /// Reads a key file; a trailing newline is not part of the key. A
    /// file that group or others may read is refused, as every secret
    /// file of iolab ([`iolab_core::trust::read_secret`]): the key may
    /// be known.
    pub fn from_file(path: &Path) -> Result<SharedKey, NetError> {
        let mut b = iolab_core::trust::read_secret(path).map_err(|e| match e {
            iolab_core::trust::SecretError::Read { .. } => {
                NetError::Key(format!("cannot read key file {}: {e}", path.display()))
            }
            _ => NetError::Key(format!("key file {}: {e}", path.display())),
        })?;
        while b.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
            b.pop();
        }
        SharedKey::new(&b).map_err(|e| NetError::Key(format!("{}: {e}", path.display())))
    }

    /// A fresh random key of 32 bytes: the one-time key of a run whose
    /// both sides iolab starts.
    pub fn random() -> Result<SharedKey, NetError> {
        let mut b = [0u8; 32];
        getrandom::getrandom(&mut b)
            .map_err(|e| NetError::Key(format!("no random source for a one-time key: {e}")))?;
        SharedKey::new(&b)
    }

    /// The line that hands this key over on a standard input (hex, then
    /// a line feed), for [`SharedKey::from_stdin`] on the other side.
    pub fn handoff_line(&self) -> String {
        format!("{}\n", hex(&self.0))
    }

    /// A key from its hex form (as [`SharedKey::handoff_line`] writes it).
    pub fn from_hex(text: &str) -> Result<SharedKey, NetError> {
        let b = unhex(text.trim_end())
            .ok_or_else(|| NetError::Key("the key handed over is not hex".into()))?;
        SharedKey::new(&b)
    }

    /// The key handed over on standard input (its first line, hex), read
    /// once per process. The rest of standard input is then watched in
    /// the background: when it closes (the process that started this one
    /// died or gave up), a stop is requested ([`iolab_core::stop`]), so
    /// the run ends as on Ctrl-C.
    pub fn from_stdin() -> Result<SharedKey, NetError> {
        FROM_STDIN
            .get_or_init(|| {
                let line = read_stdin_lines(1).map_err(|e| e.to_string())?;
                let k = SharedKey::from_hex(&line[0]).map_err(|e| {
                    format!("key -: the first line of standard input must be the key in hex: {e}")
                })?;
                // Process-wide by nature (this process's parent is gone),
                // and before any run: the flag every root token reads.
                on_stdin_close(iolab_core::stop::request);
                Ok(k)
            })
            .clone()
            .map_err(NetError::Key)
    }

    /// The key named by `option` if given, else by [`KEY_FILE_ENV`], else
    /// none (an unauthenticated handshake). `-` reads standard input.
    pub fn resolve(option: Option<&Path>) -> Result<Option<SharedKey>, NetError> {
        if option.is_some_and(|p| p == Path::new(STDIN_KEY)) {
            return SharedKey::from_stdin().map(Some);
        }
        if let Some(p) = option {
            return SharedKey::from_file(p).map(Some);
        }
        match std::env::var_os(KEY_FILE_ENV) {
            Some(p) if !p.is_empty() => SharedKey::from_file(Path::new(&p)).map(Some),
            _ => Ok(None),
        }
    }

    fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        // HMAC takes a key of any length; new_from_slice cannot fail for it.
        let mut m = match Hmac::<Sha256>::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        for p in parts {
            // Length-prefix each part so that ("ab","c") and ("a","bc")
            // authenticate differently.
            m.update(&(p.len() as u64).to_le_bytes());
            m.update(p);
        }
        m
    }

    /// A 32-byte key derived from this one for `parts` (HMAC-SHA256 as a
    /// PRF): a connection's session keys ([`crate::seal`]), so that the
    /// shared key itself never keys a frame.
    pub(crate) fn derive(&self, parts: &[&[u8]]) -> [u8; 32] {
        self.mac(parts).finalize().into_bytes().into()
    }

    /// HMAC-SHA256 of `parts`, hex.
    pub fn mac_hex(&self, parts: &[&[u8]]) -> String {
        hex(&self.mac(parts).finalize().into_bytes())
    }

    /// Checks a hex MAC in constant time.
    pub fn verify_hex(&self, parts: &[&[u8]], mac: &str) -> bool {
        match unhex(mac) {
            Some(b) => self.mac(parts).verify_slice(&b).is_ok(),
            None => false,
        }
    }
}

/// Reads the first `n` lines of standard input (without their line
/// feeds): secrets a starting process handed over.
pub fn read_stdin_lines(n: usize) -> Result<Vec<String>, NetError> {
    let mut input = std::io::stdin().lock();
    let mut out = Vec::new();
    for _ in 0..n {
        let mut line = String::new();
        let got = input
            .read_line(&mut line)
            .map_err(|e| NetError::Key(format!("cannot read standard input: {e}")))?;
        if got == 0 {
            return Err(NetError::Key(
                "standard input ended before the key was handed over".into(),
            ));
        }
        out.push(line.trim_end_matches(['\n', '\r']).to_string());
    }
    Ok(out)
}

/// Calls `then` in a background thread once standard input closes: the
/// sign that the process which started this one (and holds the other
/// end) is gone.
pub fn on_stdin_close(then: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        drain_stdin();
        then();
    });
}

/// Reads standard input to its end.
fn drain_stdin() {
    let mut buf = [0u8; 256];
    let mut input = std::io::stdin();
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 == 1 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_depend_on_key_and_part_boundaries() {
        let k = SharedKey::new(b"0123456789abcdef").unwrap();
        let other = SharedKey::new(b"0123456789abcdeX").unwrap();
        let m = k.mac_hex(&[b"ab", b"c"]);
        assert!(k.verify_hex(&[b"ab", b"c"], &m));
        assert!(!k.verify_hex(&[b"a", b"bc"], &m));
        assert!(!other.verify_hex(&[b"ab", b"c"], &m));
        assert!(!k.verify_hex(&[b"ab", b"c"], "zz"));
    }

    #[test]
    fn a_random_key_goes_over_as_one_hex_line() {
        let k = SharedKey::random().unwrap();
        let line = k.handoff_line();
        assert_eq!(line.len(), 65);
        let back = SharedKey::new(&unhex(line.trim_end()).unwrap()).unwrap();
        assert_eq!(back.0, k.0);
        assert_ne!(SharedKey::random().unwrap().0, k.0);
    }

    #[test]
    fn short_keys_are_refused_and_newlines_trimmed() {
        assert!(SharedKey::new(b"short").is_err());
        let p = std::env::temp_dir().join(format!("iolab-key-{}", std::process::id()));
        std::fs::write(&p, b"0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let k = SharedKey::from_file(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(format!("{k:?}"), "SharedKey(16 bytes)");
    }

    /// A key file others may read is refused (as s3bench's secret file
    /// always was); it was taken.
    #[test]
    fn a_key_file_others_may_read_is_refused() {
        let p = std::env::temp_dir().join(format!("iolab-key-open-{}", std::process::id()));
        std::fs::write(&p, b"0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let e = SharedKey::resolve(Some(&p)).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(
            e.contains("other users may read it (mode 644): chmod 600"),
            "{e}"
        );
    }
}
