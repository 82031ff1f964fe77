//! Compact JSON re-indented as `serde_json`'s pretty printer writes it,
//! byte by byte as it comes: a stored payload of 100 MB goes out pretty
//! without being parsed or held (it is valid JSON; only the space
//! between tokens changes, strings and numbers are copied as they are).
//!
//! ```
//! use iolab_report::store::pretty::Pretty;
//! use std::io::Write;
//! let mut out = Vec::new();
//! let mut p = Pretty::new(&mut out, 0);
//! p.write_all(br#"{"a":[1,{}],"b":"x, {y}"}"#).unwrap();
//! p.finish().unwrap();
//! let want = serde_json::to_string_pretty(&serde_json::json!({"a": [1, {}], "b": "x, {y}"})).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), want);
//! ```

use std::io::{self, Write};

/// A writer that re-indents the compact JSON written to it into `out`.
pub struct Pretty<W: Write> {
    out: W,
    /// Output collected before it goes to `out` (one write per 64 KiB).
    buf: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// A `{` or `[` not written yet: `{}` and `[]` stay on one line.
    open: Option<u8>,
}

impl<W: Write> Pretty<W> {
    /// Writes into `out`, the value starting at nesting `depth` (1 for
    /// a value of a pretty object's field).
    pub fn new(out: W, depth: usize) -> Pretty<W> {
        Pretty {
            out,
            buf: Vec::with_capacity(64 << 10),
            depth,
            in_string: false,
            escaped: false,
            open: None,
        }
    }

    /// Writes what is left; the writer is done.
    pub fn finish(mut self) -> io::Result<()> {
        self.buf.extend(self.open.take());
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }

    fn newline(&mut self) {
        self.buf.push(b'\n');
        self.buf.extend(std::iter::repeat_n(b' ', 2 * self.depth));
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.buf.push(b);
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return;
        }
        if b.is_ascii_whitespace() {
            return;
        }
        if let Some(o) = self.open.take() {
            self.buf.push(o);
            if matches!((o, b), (b'{', b'}') | (b'[', b']')) {
                self.buf.push(b);
                return;
            }
            self.depth += 1;
            self.newline();
        }
        match b {
            b'{' | b'[' => self.open = Some(b),
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.newline();
                self.buf.push(b);
            }
            b',' => {
                self.buf.push(b);
                self.newline();
            }
            b':' => self.buf.extend_from_slice(b": "),
            b'"' => {
                self.in_string = true;
                self.buf.push(b);
            }
            _ => self.buf.push(b),
        }
    }
}

impl<W: Write> Write for Pretty<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        for &b in bytes {
            self.byte(b);
        }
        if self.buf.len() >= 64 << 10 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pretty(compact: &str, depth: usize) -> String {
        let mut out = Vec::new();
        let mut p = Pretty::new(&mut out, depth);
        // Byte by byte too: a token split between writes is still one.
        for b in compact.as_bytes() {
            p.write_all(&[*b]).unwrap();
        }
        p.finish().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn same_bytes_as_serde_json_pretty() {
        let v = json!({
            "s": "quote \" backslash \\ brace { bracket [ comma , colon : \u{e9}",
            "n": [1.5e-7, -0.0, 12345678901234567890u64, null, true],
            "empty": {"a": [], "o": {}},
            "deep": [[[{"x": [{}]}]]],
        });
        let want = serde_json::to_string_pretty(&v).unwrap();
        assert_eq!(pretty(&v.to_string(), 0), want);
        // Already pretty input comes out the same.
        assert_eq!(pretty(&want, 0), want);
    }

    #[test]
    fn a_field_value_is_indented_one_level_in() {
        let env = json!({"a": 1, "payload": {"p": [1, 2]}});
        let want = serde_json::to_string_pretty(&env).unwrap();
        let head = "{\n  \"a\": 1,\n  \"payload\": ";
        let got = format!("{head}{}\n}}", pretty(r#"{"p":[1,2]}"#, 1));
        assert_eq!(got, want);
    }
}
