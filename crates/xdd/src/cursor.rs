//! Reading an option's values off the token list. Every error names the
//! option being read, so `-reqsize abc` says `-reqsize: ...`.

use crate::error::UsageError;

/// The tokens after an option name, consumed left to right.
pub struct Cursor<'a> {
    toks: &'a [String],
    pos: usize,
    /// The option whose values are being read (for messages).
    pub opt: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor over `toks` starting at `pos`.
    pub fn new(toks: &'a [String], pos: usize) -> Self {
        Self { toks, pos, opt: "" }
    }

    /// Index of the next unread token.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next token, unread, if it is not another option.
    pub fn peek(&self) -> Option<&'a str> {
        self.toks
            .get(self.pos)
            .map(String::as_str)
            .filter(|t| !looks_like_option(t))
    }

    /// The next token, read, even when it looks like an option (names
    /// of files may begin with a dash only when given this way).
    pub fn next_raw(&mut self) -> Option<&'a str> {
        let t = self.toks.get(self.pos).map(String::as_str);
        self.pos += t.is_some() as usize;
        t
    }

    /// The next token as a value; an error naming `what` when missing.
    pub fn value(&mut self, what: &str) -> Result<&'a str, UsageError> {
        match self.peek() {
            Some(v) => {
                self.pos += 1;
                Ok(v)
            }
            None => Err(self.err(format!("missing {what}"))),
        }
    }

    /// A whole number (k/m/g/t suffixes allowed), zero included.
    pub fn u64(&mut self, what: &str) -> Result<u64, UsageError> {
        let v = self.value(what)?;
        iolab_core::units::parse_size(v).map_err(|e| self.err(format!("{what}: {e}")))
    }

    /// A whole number greater than zero.
    pub fn positive(&mut self, what: &str) -> Result<u64, UsageError> {
        let n = self.u64(what)?;
        if n == 0 {
            return Err(self.err(format!("{what} must be greater than 0")));
        }
        Ok(n)
    }

    /// A whole number within `min..=max` (k/m/g/t suffixes allowed); the
    /// error names the option and the limit, so a huge value is refused
    /// before anything is sized from it.
    pub fn count(&mut self, what: &str, min: u64, max: u64) -> Result<u64, UsageError> {
        let n = self.u64(what)?;
        if n < min {
            return Err(self.err(format!("{what} must be at least {min}")));
        }
        if n > max {
            return Err(self.err(format!(
                "{what} {n} is above the limit of {max} (see Limits in docs/xdd.md)"
            )));
        }
        Ok(n)
    }

    /// A small index (target or processor number).
    pub fn index(&mut self, what: &str) -> Result<usize, UsageError> {
        let v = self.value(what)?;
        v.parse::<usize>()
            .map_err(|_| self.err(format!("{what}: '{v}' is not a whole number")))
    }

    /// A non-negative decimal number such as `2.5`, at most
    /// [`MAX_SECONDS`](crate::validate::MAX_SECONDS) (so that it converts
    /// to nanoseconds without overflow).
    pub fn seconds(&mut self, what: &str) -> Result<f64, UsageError> {
        let v = self.value(what)?;
        let max = crate::validate::MAX_SECONDS;
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 && x <= max => Ok(x),
            Ok(x) if x.is_finite() && x > max => Err(self.err(format!(
                "{what} {v} is above the limit of {max} (see Limits in docs/xdd.md)"
            ))),
            _ => Err(self.err(format!("{what}: '{v}' is not a non-negative number"))),
        }
    }

    /// One of `words` (case-insensitive), returned lower-cased.
    pub fn keyword(&mut self, what: &str, words: &[&str]) -> Result<String, UsageError> {
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
    pub fn err(&self, message: impl Into<String>) -> UsageError {
        UsageError::new(self.opt, message)
    }
}

/// A token that starts another option: a dash followed by a letter.
/// Negative numbers are not options (and are rejected by the readers).
pub fn looks_like_option(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() > 1 && b[0] == b'-' && (b[1].is_ascii_alphabetic() || b[1] == b'-')
}
