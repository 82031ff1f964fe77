//! A result document read from a file without holding it: its envelope
//! fields ([`read_head`]: the whole document is checked, the payload
//! skipped as it is read) and its payload's bytes ([`copy_payload`]:
//! copied as they come, without the space between tokens). A long run's
//! document (xdd's 30,000 passes make ~90 MB) is then recorded in the
//! memory of a short one.
//!
//! ```
//! use iolab_results::stream::{copy_payload, read_head};
//! let text = r#"{"schema": "iolab.x/1", "envelope": 1,
//!   "tool": {"name": "x", "version": "0.1.0", "compatible_with": null},
//!   "command_line": "iolab x", "started_unix_ns": 1, "finished_unix_ns": 2,
//!   "config": {}, "environment": {"host": {"hostname": "h", "kernel": "", "arch": "",
//!   "cpus": 1, "memory_bytes": 0}, "filesystems": []}, "outcome": {"status": "completed"},
//!   "notes": [], "payload": {"passes": [ {"n": "a, \"b\"}"}, 2 ]}}"#;
//! let head = read_head(text.as_bytes()).unwrap();
//! assert_eq!((head.tool.name.as_str(), head.payload.is_null()), ("x", true));
//! let mut payload = Vec::new();
//! assert!(copy_payload(text.as_bytes(), &mut payload).unwrap());
//! assert_eq!(payload, br#"{"passes":[{"n":"a, \"b\"}"},2]}"#);
//! ```

use crate::{Envelope, ParseError, ENVELOPE_VERSION};
use serde::de::IgnoredAny;
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read, Write};

/// The envelope's fields of the document read from `r`, its payload
/// `null`. The whole document is read and must be well-formed; an
/// envelope version this build does not know is refused (as
/// [`crate::parse_any`]).
pub fn read_head(r: impl Read) -> Result<Envelope<Value, Value>, ParseError> {
    let r = BufReader::with_capacity(64 << 10, r);
    let doc: Envelope<Value, IgnoredAny> =
        serde_json::from_reader(r).map_err(|e| ParseError(format!("not an iolab result: {e}")))?;
    if doc.envelope > ENVELOPE_VERSION {
        return Err(ParseError(format!(
            "envelope version {} is newer than this iolab ({ENVELOPE_VERSION})",
            doc.envelope
        )));
    }
    Ok(doc.with_payload(Value::Null))
}

/// A schema's name and version (`iolab.survey.disk/1`: `survey.disk`, 1).
fn schema_parts(schema: &str) -> Option<(&str, u64)> {
    let (name, v) = schema.strip_prefix("iolab.")?.rsplit_once('/')?;
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((name, v.parse().ok()?))
}

/// Refuses a schema newer than the one of its name among `newest` (the
/// schemas this iolab writes): a later iolab's document, which this one
/// would store and show as what it is not. A name not among them (no
/// tool of this iolab's) is left to [`check_consistent`].
pub fn check_schema_known(schema: &str, newest: &[&str]) -> Result<(), ParseError> {
    let Some((name, v)) = schema_parts(schema) else {
        return Ok(());
    };
    let known = newest
        .iter()
        .find(|n| schema_parts(n).is_some_and(|(m, _)| m == name));
    match known {
        Some(k) if schema_parts(k).is_some_and(|(_, kv)| v > kv) => Err(ParseError(format!(
            "schema {schema:?} is newer than this iolab's {k:?}: import it with the iolab that wrote it, or a later one"
        ))),
        _ => Ok(()),
    }
}

/// Checks what a document says of itself beyond its form, for a
/// document brought from outside (`results import`): its schema names
/// its tool (`iolab.mdtest/2` is `mdtest`'s, `iolab.survey.disk/1`
/// `survey disk`'s), it finished no earlier than it started, and each
/// stated figure's mean lies within its extremes, all finite, its
/// spread not negative, of at least one value (a spread only of two or
/// more), and each figure stated once. A hand-edited file that breaks
/// one of them would be stored as a run no tool made.
pub fn check_consistent<P>(doc: &Envelope<Value, P>) -> Result<(), ParseError> {
    let fail = |why: String| Err(ParseError(why));
    let named = schema_parts(&doc.schema).map(|(name, _)| name.replace('.', " "));
    match named {
        None => {
            return fail(format!(
                "schema {:?} is not an iolab schema (iolab.TOOL/N)",
                doc.schema
            ))
        }
        Some(n) if n != doc.tool.name => {
            return fail(format!(
                "schema {:?} is not the schema of tool {:?}",
                doc.schema, doc.tool.name
            ))
        }
        Some(_) => {}
    }
    if doc.finished_unix_ns < doc.started_unix_ns {
        return fail(format!(
            "finished_unix_ns {} is before started_unix_ns {}",
            doc.finished_unix_ns, doc.started_unix_ns
        ));
    }
    for (i, f) in doc.figures.iter().enumerate() {
        check_figure(f)?;
        let same = |g: &crate::Figure| {
            (&g.phase, &g.metric, &g.unit, &g.scope) == (&f.phase, &f.metric, &f.unit, &f.scope)
        };
        if doc.figures[..i].iter().any(same) {
            return fail(format!(
                "figure {} {} ({}){} is given twice; a run states each figure once",
                f.phase,
                f.metric,
                f.unit,
                scope_words(&f.scope)
            ));
        }
    }
    Ok(())
}

/// ` at SCOPE`, or nothing for the run's own figure.
fn scope_words(scope: &str) -> String {
    match scope {
        "" => String::new(),
        s => format!(" at {s}"),
    }
}

/// One figure's spread is one some values could have.
fn check_figure(f: &crate::Figure) -> Result<(), ParseError> {
    let s = &f.stat;
    let name = format!(
        "figure {} {} ({}){}",
        f.phase,
        f.metric,
        f.unit,
        scope_words(&f.scope)
    );
    let finite = [s.mean, s.min, s.max, s.std_dev]
        .iter()
        .all(|v| v.is_finite());
    if !finite || s.std_dev < 0.0 || s.min > s.mean || s.mean > s.max {
        return Err(ParseError(format!(
            "{name}: mean {} is not within min {} and max {} (std_dev {})",
            s.mean, s.min, s.max, s.std_dev
        )));
    }
    if s.n == 0 {
        return Err(ParseError(format!(
            "{name}: n is 0, a figure of no values; a figure has n 1 or more"
        )));
    }
    if s.n == 1 && s.std_dev != 0.0 {
        return Err(ParseError(format!(
            "{name}: std_dev {} of n 1 value; one value has no spread (std_dev 0)",
            s.std_dev
        )));
    }
    Ok(())
}

/// Copies the value of the document's top-level `payload` field, read
/// from `r` (a well-formed document, e.g. checked by [`read_head`]), to
/// `w` without whitespace between tokens; false when it has none under
/// that exact key. Reading stops where the payload ends.
pub fn copy_payload(r: impl Read, w: &mut dyn Write) -> io::Result<bool> {
    let mut r = BufReader::with_capacity(64 << 10, r);
    let mut scan = Scan::default();
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(false);
        }
        let n = buf.len();
        for &b in buf {
            if scan.step(b) {
                w.write_all(&scan.out)?;
                return Ok(true);
            }
        }
        if scan.out.len() >= 64 << 10 {
            w.write_all(&scan.out)?;
            scan.out.clear();
        }
        r.consume(n);
    }
}

/// Where a byte-by-byte scan of a document is.
#[derive(Default)]
struct Scan {
    /// Nesting depth (1 inside the top-level object).
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// Reading a depth-1 key into `key`.
    in_key: bool,
    key: Vec<u8>,
    /// The next token is the payload's value.
    payload_next: bool,
    /// In the payload's value.
    copying: bool,
    /// The payload's bytes not yet written.
    out: Vec<u8>,
}

impl Scan {
    /// Takes byte `b`; true once the payload's value has been read whole.
    fn step(&mut self, b: u8) -> bool {
        if self.in_string {
            return self.string_byte(b);
        }
        if b.is_ascii_whitespace() {
            return false;
        }
        if self.payload_next {
            self.payload_next = false;
            self.copying = true;
        }
        // A number or literal at depth 1 ends before the `,` or `}`.
        if self.copying && self.depth == 1 && matches!(b, b',' | b'}') {
            return true;
        }
        if self.copying {
            self.out.push(b);
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key && !self.copying {
                    self.in_key = true;
                    self.expect_key = false;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.expect_key = self.depth == 1 && b == b'{';
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.copying && self.depth == 1;
            }
            b',' => self.expect_key = self.depth == 1,
            b':' => self.payload_next = self.depth == 1 && !self.copying && self.key == b"payload",
            _ => {}
        }
        false
    }

    fn string_byte(&mut self, b: u8) -> bool {
        if self.copying {
            self.out.push(b);
        }
        let closes = !self.escaped && b == b'"';
        self.escaped = !self.escaped && b == b'\\';
        if !closes {
            if self.in_key {
                self.key.push(b);
            }
            return false;
        }
        self.in_string = false;
        self.in_key = false;
        // A string value at depth 1 is the whole payload.
        self.copying && self.depth == 1
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn payload_of(doc: &str) -> Option<String> {
        let mut out = Vec::new();
        // Read a byte at a time too: a token split between reads is one.
        struct Slow<'a>(&'a [u8]);
        impl Read for Slow<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let slow = {
            let mut o = Vec::new();
            let found = copy_payload(Slow(doc.as_bytes()), &mut o).unwrap();
            found.then(|| String::from_utf8(o).unwrap())
        };
        let found = copy_payload(doc.as_bytes(), &mut out).unwrap();
        let fast = found.then(|| String::from_utf8(out).unwrap());
        assert_eq!(slow, fast);
        fast
    }

    #[test]
    fn the_payload_value_of_any_kind_is_copied_compact() {
        let v = serde_json::json!({
            "notes": ["payload", {"payload": 1}],
            "config": {"payload": [1, 2]},
            "payload": {"s": "quote \" brace } comma , \\", "a": [1.5e-7, null, {}], "e": []},
            "after": 1
        });
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let want = v["payload"].to_string();
        assert_eq!(payload_of(&pretty).unwrap(), want);
        assert_eq!(payload_of(&v.to_string()).unwrap(), want);
        for (doc, want) in [
            (r#"{"payload": 12.5, "x": 1}"#, "12.5"),
            (r#"{"payload":null}"#, "null"),
            (r#"{"x": "a:b", "payload": "p, }"}"#, r#""p, }""#),
            (r#"{"x": {"payload": 1}, "payload": [ ] }"#, "[]"),
        ] {
            assert_eq!(payload_of(doc).as_deref(), Some(want), "{doc}");
        }
        assert_eq!(payload_of(r#"{"x": {"payload": 1}}"#), None);
    }
}
