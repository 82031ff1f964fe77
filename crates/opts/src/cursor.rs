//! Reading one option's values off the argument list, with typed readers
//! (numbers with k/m/g/t suffixes, bounded counts, seconds, keywords,
//! paths). Every error names the option being read, so `-reqsize abc`
//! says `-reqsize: ...`.
//!
//! Arguments are `OsString`s: a path value may be any bytes
//! ([`Cursor::path`]); a value read as text that is not UTF-8 is an error
//! naming the option.

use crate::error::OptError;
use std::ffi::{OsStr, OsString};

/// Longest duration (or rate) a decimal-seconds value may give, about
/// three years: anything longer is a typo, and this converts to
/// nanoseconds in a u64 without overflow.
pub const MAX_SECONDS: f64 = 1e8;

/// The arguments after an option name, consumed left to right.
pub struct Cursor<'a> {
    toks: &'a [OsString],
    pos: usize,
    /// The option whose values are being read (for messages).
    pub opt: &'static str,
    /// The option was named with two dashes (for messages).
    pub long: bool,
    /// Every token is a value, even one that starts with a dash (the
    /// getopt front end has already decided which words are values).
    raw: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor over `toks` starting at `pos`, where a token that looks
    /// like an option ends the values (XDD style).
    pub fn new(toks: &'a [OsString], pos: usize) -> Self {
        Self {
            toks,
            pos,
            opt: "",
            long: false,
            raw: false,
        }
    }

    /// A cursor whose every token is a value (getopt style: the one
    /// value the front end found, attached or separate).
    pub fn values(toks: &'a [OsString]) -> Self {
        Self {
            raw: true,
            ..Self::new(toks, 0)
        }
    }

    /// Index of the next unread token.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// True when a value is left to read.
    pub fn has_value(&self) -> bool {
        self.peek_os().is_some()
    }

    /// The next token, unread, if it is a value (any bytes).
    pub fn peek_os(&self) -> Option<&'a OsStr> {
        self.toks
            .get(self.pos)
            .map(OsString::as_os_str)
            .filter(|t| self.raw || !looks_like_option(t))
    }

    /// The next token as text even when it looks like an option, read:
    /// for an option whose value names an option (`-help -op`).
    pub fn any_word(&mut self) -> Option<&'a str> {
        let w = self.toks.get(self.pos).and_then(|t| t.to_str())?;
        self.pos += 1;
        Some(w)
    }

    /// The next token, unread, if it is a value in UTF-8.
    pub fn peek(&self) -> Option<&'a str> {
        self.peek_os().and_then(OsStr::to_str)
    }

    /// The next value as text; an error naming `what` when it is missing
    /// or not UTF-8.
    pub fn value(&mut self, what: &str) -> Result<&'a str, OptError> {
        let v = self.path_os(what)?;
        v.to_str().ok_or_else(|| {
            self.err(format!(
                "{what} {v:?} is not valid UTF-8; give it as UTF-8 text"
            ))
        })
    }

    /// The next value as a path: any bytes are accepted.
    pub fn path(&mut self, what: &str) -> Result<OsString, OptError> {
        self.path_os(what).map(OsStr::to_os_string)
    }

    fn path_os(&mut self, what: &str) -> Result<&'a OsStr, OptError> {
        match self.peek_os() {
            Some(v) => {
                self.pos += 1;
                Ok(v)
            }
            None => Err(self.err(format!("missing {what}"))),
        }
    }

    /// A whole number (k/m/g/t suffixes allowed: powers of two), zero
    /// included.
    pub fn u64(&mut self, what: &str) -> Result<u64, OptError> {
        let v = self.value(what)?;
        iolab_core::units::parse_size(v).map_err(|e| self.err(format!("{what}: {e}")))
    }

    /// A whole number greater than zero.
    pub fn positive(&mut self, what: &str) -> Result<u64, OptError> {
        self.count(what, 1, u64::MAX)
    }

    /// A whole number within `min..=max`; the error names the option and
    /// the limit, so a huge value is refused before anything is sized
    /// from it.
    pub fn count(&mut self, what: &str, min: u64, max: u64) -> Result<u64, OptError> {
        let n = self.u64(what)?;
        if n < min {
            let m = if min == 1 {
                "greater than 0".to_string()
            } else {
                format!("at least {min}")
            };
            return Err(self.err(format!("{what} must be {m}")));
        }
        if n > max {
            return Err(self.err(format!(
                "{what} {n} is above the limit of {max}; give at most {max}"
            )));
        }
        Ok(n)
    }

    /// A small index (target or processor number), without suffixes.
    pub fn index(&mut self, what: &str) -> Result<usize, OptError> {
        let v = self.value(what)?;
        v.parse::<usize>()
            .map_err(|_| self.err(format!("{what}: '{v}' is not a whole number")))
    }

    /// A non-negative decimal number such as `2.5`, at most
    /// [`MAX_SECONDS`].
    pub fn seconds(&mut self, what: &str) -> Result<f64, OptError> {
        let v = self.value(what)?;
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && (0.0..=MAX_SECONDS).contains(&x) => Ok(x),
            Ok(x) if x.is_finite() && x > MAX_SECONDS => Err(self.err(format!(
                "{what} {v} is above the limit of {MAX_SECONDS}; give at most {MAX_SECONDS}"
            ))),
            _ => Err(self.err(format!("{what}: '{v}' is not a non-negative number"))),
        }
    }

    /// One of `words` (case-insensitive), returned lower-cased.
    pub fn keyword(&mut self, what: &str, words: &[&str]) -> Result<String, OptError> {
        let v = self.value(what)?.to_ascii_lowercase();
        if words.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.err(format!(
                "'{v}' is not a valid {what}; expected one of: {}",
                words.join(", ")
            )))
        }
    }

    /// An error about the current option.
    pub fn err(&self, message: impl Into<String>) -> OptError {
        OptError {
            long: self.long,
            ..OptError::new(self.opt, message)
        }
    }
}

/// A token that starts another option in XDD style: a dash followed by a
/// letter or a second dash. Negative numbers are not options (and are
/// refused by the number readers).
pub fn looks_like_option(t: &OsStr) -> bool {
    let b = t.as_encoded_bytes();
    b.len() > 1 && b[0] == b'-' && (b[1].is_ascii_alphabetic() || b[1] == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn toks(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn readers_take_values_until_the_next_option() {
        let t = toks("4k 2.5 Read -next");
        let mut c = Cursor::new(&t, 0);
        c.opt = "x";
        assert_eq!(c.u64("n").unwrap(), 4096);
        assert_eq!(c.seconds("s").unwrap(), 2.5);
        assert_eq!(c.keyword("k", &["read", "write"]).unwrap(), "read");
        assert!(!c.has_value());
        assert_eq!(c.value("v").unwrap_err().to_string(), "-x: missing v");
    }

    #[test]
    fn counts_name_the_limit() {
        let t = toks("5000 0 9223372036854775808");
        let mut c = Cursor::new(&t, 0);
        c.opt = "qd";
        assert!(c
            .count("depth", 1, 4096)
            .unwrap_err()
            .message
            .contains("4096"));
        assert!(c
            .count("depth", 1, 4096)
            .unwrap_err()
            .message
            .contains("greater than 0"));
        assert!(c.count("depth", 1, 4096).is_err());
    }

    #[test]
    fn non_utf8_is_a_path_but_not_text() {
        let bad = OsString::from_vec(vec![b'f', 0xff]);
        let t = vec![bad.clone(), bad.clone()];
        let mut c = Cursor::values(&t);
        c.opt = "d";
        assert_eq!(c.path("dir").unwrap(), bad);
        let e = c.value("count").unwrap_err();
        assert!(e.to_string().starts_with("-d: count") && e.message.contains("UTF-8"));
    }

    #[test]
    fn seconds_are_bounded() {
        let t = toks("1e300 -1 1e8");
        let mut c = Cursor::values(&t);
        assert!(c.seconds("s").unwrap_err().message.contains("limit"));
        assert!(c.seconds("s").is_err());
        assert_eq!(c.seconds("s").unwrap(), 1e8);
    }
}
