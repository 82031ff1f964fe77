//! What goes in the write buffer (`-datapattern`) and how reads are checked
//! (`-verify location|contents`).
//!
//! A buffer is filled once with [`DataPattern::prefill`]; only the
//! `sequenced` pattern changes from request to request, and
//! [`DataPattern::patch`] rewrites just that, so the hot loop of every other
//! pattern does nothing per request.
//!
//! ```
//! use iolab_xdd::plan::datapat::{DataPattern, Verifier, VerifyMode};
//! let mut pat = DataPattern::default();
//! pat.apply_words(&["sequenced"]).unwrap();
//! let mut buf = vec![0u8; 4096];
//! pat.prefill(&mut buf, 8192);
//! pat.patch(&mut buf, 8192); // per request: carries its own file offset
//! assert_eq!(u64::from_le_bytes(buf[8..16].try_into().unwrap()), 8200);
//! let v = Verifier::new(&pat, VerifyMode::Location, 4096);
//! assert!(v.check(&buf, 8192).is_ok());
//! buf[100] ^= 1;
//! let m = v.check(&buf, 8192);
//! assert_eq!((m.first_bad_offset, m.bad_units), (Some(8192 + 96), 1));
//! ```
//!
//! # Patterns (guide 5.2, `-datapattern`)
//! Several `-datapattern` options combine, as in XDD: the CLI calls
//! [`DataPattern::apply_words`] once per option, in order.
//! - Default (no `-datapattern`), and `random`: unique incompressible
//!   blocks (see [`crate::plan::unique`]): random bytes, every 4 KiB stamped
//!   with its offset and the run, target and pass, so that no store can
//!   compress or deduplicate them. XDD writes zeros here; `0x00` does.
//! - `compress PCT`, `dedupe PCT`: the same, with PCT% of every 4 KiB
//!   zero, or PCT% of the 4 KiB blocks repeating earlier blocks (fio's
//!   `buffer_compress_percentage` and `dedupe_percentage`).
//! - a single character (`-datapattern A`) or `0xNN`: that byte everywhere.
//! - `sequenced`: the buffer is 64-bit little-endian words, each holding its
//!   own absolute byte offset in the target (the guide's "block address
//!   times the size of a 64-bit integer", counted in 8-byte words). This is
//!   what `-verify location` checks.
//! - `prefix <hex>`: with `sequenced`, the hex digits fill the top bits of
//!   every word (4 bits per digit) and the offset the rest.
//! - `inverse`: the ones' complement of whatever the pattern is.
//! - `ascii <string>`, `hex <digits>`: written once at the start of the
//!   buffer, the rest zero, unless `replicate` repeats them throughout.
//! - `replicate`: repeat the ascii/hex/character pattern over the buffer.
//! - `file <path>` and `wholefile [<path>]` (names of later XDD releases, not in the
//!   7.0 guide): `file` takes the pattern bytes from a file, used like
//!   `hex`; `wholefile` lays those bytes over the whole target, so the byte
//!   at target offset X is `pattern[X % len]`. That varies per request, and
//!   `-verify contents` checks it.
//! - `lfpat`, `ltpat`, `cjtpat`, `crpat`, `cspat`: Fibre Channel 8B/10B
//!   test frames (low frequency, low transition density, compliant jitter,
//!   compliant random, compliant supply noise), byte for byte as XDD's own
//!   tables define them (see [`named_bytes`]), repeated from the start of
//!   every buffer as XDD does, so data written by either tool verifies in
//!   the other.
//!
//! # Verification
//! [`Verifier::check`] returns a [`Mismatch`]: the absolute file offset of
//! the first bad byte (or word) and how many were bad. `location` compares
//! 8-byte words with the sequenced pattern (so a misplaced block shows as
//! bad words); `contents` compares bytes with whatever the pattern is. The
//! caller counts failed requests against `-maxerrors` with [`ErrorBudget`].

use crate::plan::unique::{self, Shape, STAMP_BYTES, UNIT};

/// The base pattern before the `inverse`/`replicate`/`prefix` modifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternKind {
    /// One byte everywhere (default 0).
    Byte(u8),
    /// Unique incompressible blocks (the default).
    Random,
    /// 64-bit words holding their own file offset.
    Sequenced,
    /// Bytes from `ascii`/`hex`, written once or replicated.
    Bytes(Vec<u8>),
    /// A named 8B/10B stress pattern, always replicated.
    Named(NamedPattern),
}

/// The 8B/10B stress patterns named by the guide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedPattern {
    /// Low frequency.
    Lfpat,
    /// Low transition density.
    Ltpat,
    /// Compliant jitter.
    Cjtpat,
    /// Compliant random.
    Crpat,
    /// Compliant supply noise ("sequential" in the guide).
    Cspat,
}

/// A complete `-datapattern` setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPattern {
    /// The base pattern.
    pub kind: PatternKind,
    /// `prefix`: (value, number of bits) for the top of sequenced words.
    pub prefix: Option<(u64, u32)>,
    /// `inverse`: complement every byte.
    pub inverse: bool,
    /// `replicate`: repeat ascii/hex/character data over the buffer.
    pub replicate: bool,
    /// `wholefile`: the byte at target offset X is `bytes[X % len]`.
    pub whole_file: bool,
    /// `compress PCT`: share of every 4 KiB left zero (random data only).
    pub compress_pct: u8,
    /// `dedupe PCT`: share of 4 KiB blocks repeating others (random only).
    pub dedupe_pct: u8,
    /// True when a `-datapattern` option set the base pattern.
    pub explicit: bool,
    /// The request size the buffers are made for (see [`DataPattern::fit`]).
    pub request_bytes: usize,
    /// Mixed into every stamp: differs per run and target.
    pub stamp_key: u64,
    /// The target index, mixed into stamps.
    pub target: usize,
}

impl Default for DataPattern {
    fn default() -> Self {
        Self {
            kind: PatternKind::Random,
            prefix: None,
            inverse: false,
            replicate: false,
            whole_file: false,
            compress_pct: 0,
            dedupe_pct: 0,
            explicit: false,
            request_bytes: 0,
            stamp_key: 0,
            target: 0,
        }
    }
}

/// The most read from a `-datapattern file` or `wholefile` FILE (held in
/// memory): `file` fills one request, and a request is at most 1 GiB
/// (`MAX_REQUEST_BYTES` of the checks); `wholefile`'s period is kept as
/// large. A FIFO or a device is refused: it would hold the run, or
/// memory, before anything started.
pub const MAX_PATTERN_FILE_BYTES: u64 = 1 << 30;

/// Why `-datapattern` words were rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatternError {
    /// Nothing after `-datapattern`.
    #[error("-datapattern needs a value: a character, random, compress, dedupe, sequenced, prefix, inverse, ascii, hex, replicate, file, wholefile, lfpat, ltpat, cjtpat, crpat or cspat")]
    Missing,
    /// `ascii`, `hex` or `prefix` without its argument.
    #[error("-datapattern {0} needs an argument")]
    MissingArg(&'static str),
    /// Not hexadecimal.
    #[error("-datapattern {0}: '{1}' is not hexadecimal (digits 0-9, a-f)")]
    BadHex(&'static str, String),
    /// A prefix wider than a word.
    #[error("-datapattern prefix: at most 16 hex digits fit in a 64-bit word")]
    PrefixTooLong,
    /// `file` could not be read.
    #[error("-datapattern file {0}: {1}")]
    File(String, String),
    /// `compress`/`dedupe` percentage out of range.
    #[error("-datapattern {0}: '{1}' is not a percentage from 0 to {2}")]
    BadPercent(&'static str, String, u8),
    /// A word that is none of the above.
    #[error("-datapattern '{0}' is neither one character nor a known pattern")]
    Unknown(String),
    /// A modifier the pattern written does not use (XDD's guide says
    /// what each modifies); it would be dropped without a word.
    #[error("-datapattern {word} applies to {applies_to}, and the pattern written here is {made}: drop {word}, or give such a pattern")]
    Unused {
        /// The modifier as typed.
        word: String,
        /// The patterns it modifies.
        applies_to: &'static str,
        /// What the options make (see [`DataPattern::describe`]).
        made: String,
    },
}

impl DataPattern {
    /// Applies one `-datapattern` option's words; returns how many words it
    /// used (1, or 2 for `ascii`, `hex` and `prefix`).
    pub fn apply_words(&mut self, words: &[&str]) -> Result<usize, PatternError> {
        let first = *words.first().ok_or(PatternError::Missing)?;
        let arg = |name| words.get(1).copied().ok_or(PatternError::MissingArg(name));
        let named = |n| Some(PatternKind::Named(n));
        let lower = first.to_ascii_lowercase();
        if let Some(k) = self.apply_percent(&lower, words)? {
            return Ok(k);
        }
        let kind = match lower.as_str() {
            "random" => Some(PatternKind::Random),
            "sequenced" => Some(PatternKind::Sequenced),
            "lfpat" => named(NamedPattern::Lfpat),
            "ltpat" => named(NamedPattern::Ltpat),
            "cjtpat" => named(NamedPattern::Cjtpat),
            "crpat" => named(NamedPattern::Crpat),
            "cspat" => named(NamedPattern::Cspat),
            "inverse" => {
                self.inverse = true;
                None
            }
            "replicate" => {
                self.replicate = true;
                None
            }
            "wholefile" if words.len() < 2 => {
                self.whole_file = true;
                None
            }
            "wholefile" | "file" => {
                self.whole_file |= lower == "wholefile";
                let path = arg(if lower == "file" { "file" } else { "wholefile" })?;
                let bytes = iolab_core::input::read_bytes(
                    std::path::Path::new(path),
                    MAX_PATTERN_FILE_BYTES,
                )
                .map_err(|e| PatternError::File(path.to_string(), e.to_string()))?;
                if bytes.is_empty() {
                    return Err(PatternError::File(
                        path.to_string(),
                        "the file is empty".into(),
                    ));
                }
                self.kind = PatternKind::Bytes(bytes);
                self.explicit = true;
                return Ok(2);
            }
            "ascii" => {
                self.kind = PatternKind::Bytes(arg("ascii")?.as_bytes().to_vec());
                self.explicit = true;
                return Ok(2);
            }
            "hex" => {
                self.kind = PatternKind::Bytes(parse_hex("hex", arg("hex")?)?);
                self.explicit = true;
                return Ok(2);
            }
            "prefix" => {
                self.prefix = Some(parse_prefix(arg("prefix")?)?);
                return Ok(2);
            }
            _ => Some(PatternKind::Byte(parse_byte(first)?)),
        };
        if let Some(k) = kind {
            self.kind = k;
            self.explicit = true;
        }
        Ok(1)
    }

    /// Refuses a modifier among one `-datapattern` option's `words` that
    /// this (final) pattern does not use: `prefix` modifies sequenced
    /// words, `replicate` an ascii, hex or file pattern written once per
    /// buffer, a bare `wholefile` such a pattern, `compress` and `dedupe`
    /// unique random data; `inverse` applies to every pattern.
    pub fn check_modifier(&self, words: &[&str]) -> Result<(), PatternError> {
        let Some(first) = words.first() else {
            return Ok(());
        };
        let bytes = matches!(self.kind, PatternKind::Bytes(_));
        let (used, applies_to) = match first.to_ascii_lowercase().as_str() {
            "prefix" => (
                self.kind == PatternKind::Sequenced,
                "sequenced data (-datapattern sequenced)",
            ),
            "replicate" => (
                bytes && !self.whole_file,
                "an ascii, hex or file pattern, written once per buffer without it (a character fills the buffer, the test frames and wholefile repeat already)",
            ),
            "wholefile" if words.len() == 1 => (
                bytes,
                "the bytes of a file, ascii or hex pattern given with it",
            ),
            "compress" | "dedupe" => (
                self.kind == PatternKind::Random,
                "unique random data (the default or random), which a later -datapattern replaced",
            ),
            _ => (true, ""),
        };
        if used {
            return Ok(());
        }
        Err(PatternError::Unused {
            word: words.join(" "),
            applies_to,
            made: self.describe(),
        })
    }

    /// `compress PCT` and `dedupe PCT`: Some(words used) when `lower` is one.
    fn apply_percent(
        &mut self,
        lower: &str,
        words: &[&str],
    ) -> Result<Option<usize>, PatternError> {
        let (name, max): (&'static str, u8) = match lower {
            "compress" => ("compress", 99),
            "dedupe" => ("dedupe", 100),
            _ => return Ok(None),
        };
        let w = *words.get(1).ok_or(PatternError::MissingArg(name))?;
        let pct = w
            .trim_end_matches('%')
            .parse::<u8>()
            .ok()
            .filter(|&p| p <= max)
            .ok_or_else(|| PatternError::BadPercent(name, w.to_string(), max))?;
        if name == "compress" {
            self.compress_pct = pct;
        } else {
            self.dedupe_pct = pct;
        }
        self.kind = PatternKind::Random;
        self.explicit = true;
        Ok(Some(2))
    }

    /// Sizes the pattern for requests of `request_bytes` and keys its
    /// stamps to a run and a target (the plan calls this once).
    pub fn fit(&mut self, request_bytes: usize, run_key: u64, target: usize) {
        self.request_bytes = request_bytes;
        self.stamp_key = run_key;
        self.target = target;
    }

    /// The unique-data layout, for the `random` kind.
    pub fn shape(&self) -> Option<Shape> {
        (self.kind == PatternKind::Random)
            .then(|| Shape::new(self.compress_pct, self.dedupe_pct, self.request_bytes))
    }

    /// Bytes of I/O buffer a request of `len` bytes needs: more than `len`
    /// for unique data, whose requests are windows on a longer base.
    pub fn buffer_len(&self, len: usize) -> usize {
        self.shape().map_or(len, |s| s.buffer_len(len))
    }

    /// As [`DataPattern::buffer_len`], for a target that also reads
    /// (`-rwratio`): reads land in `len` more bytes after the base, so
    /// that they never overwrite it.
    pub fn mixed_buffer_len(&self, len: usize) -> usize {
        self.shape().map_or(len, |s| s.buffer_len(len) + len)
    }

    /// Patches a write buffer for the request at `file_offset` of `len`
    /// bytes in pass `pass`, and returns where in `buf` the request's bytes
    /// start (0 except for unique data). No allocation.
    #[inline]
    pub fn place(&self, buf: &mut [u8], file_offset: u64, len: usize, pass: u32) -> usize {
        match self.shape() {
            Some(s) => s.place(buf, file_offset, len, self.stamp_tag(pass)),
            None => {
                self.patch(&mut buf[..len], file_offset);
                0
            }
        }
    }

    /// The tag of the stamps of unique data written in pass `pass`.
    pub fn stamp_tag(&self, pass: u32) -> u64 {
        unique::tag(self.stamp_key, self.target, pass)
    }

    /// True when the buffer must be patched for every request.
    pub fn varies_per_request(&self) -> bool {
        matches!(self.kind, PatternKind::Sequenced | PatternKind::Random)
            || self.whole_file_bytes().is_some()
    }

    /// True when every request writes the same bytes (zeros, a character,
    /// a repeated string or frame): a store that compresses or
    /// deduplicates keeps a fraction of them.
    pub fn repeats(&self) -> bool {
        match &self.kind {
            PatternKind::Random | PatternKind::Sequenced => false,
            PatternKind::Bytes(_) => !self.whole_file,
            PatternKind::Byte(_) | PatternKind::Named(_) => true,
        }
    }

    /// The warning a write of this data carries, if any: zeros or one
    /// repeated buffer (or chosen percentages) let a store that compresses
    /// or deduplicates keep less than was written.
    pub fn shrink_note(&self) -> Option<String> {
        let what = match &self.kind {
            PatternKind::Random if self.compress_pct == 0 && self.dedupe_pct == 0 => return None,
            PatternKind::Random => "data chosen to be compressible or duplicated (-datapattern compress/dedupe)",
            PatternKind::Sequenced => "sequenced words, which compress",
            _ if self.repeats() => "the same bytes in every request (XDD's data; iolab's default is unique incompressible blocks)",
            _ => "a pattern that repeats",
        };
        Some(format!(
            "writes {what}: a store that compresses or deduplicates will show more than it stores"
        ))
    }

    /// What the data is, in words, for the report's preamble.
    pub fn describe(&self) -> String {
        let mut s = match &self.kind {
            PatternKind::Random if self.compress_pct == 0 && self.dedupe_pct == 0 => {
                "unique incompressible blocks (random, every 4 KiB stamped with offset and pass)"
                    .into()
            }
            PatternKind::Random => {
                let mut s = String::from("random blocks, every 4 KiB stamped with offset and pass");
                if self.compress_pct > 0 {
                    s += &format!(
                        ", {}% of each 4 KiB zero (compresses to ~{}%)",
                        self.compress_pct,
                        100 - self.compress_pct
                    );
                }
                if self.dedupe_pct > 0 {
                    s += &format!(", {}% of 4 KiB blocks duplicated", self.dedupe_pct);
                }
                s
            }
            PatternKind::Byte(0) => "zeros (0x00)".into(),
            PatternKind::Byte(b) => format!("the byte 0x{b:02x} repeated"),
            PatternKind::Sequenced => "sequenced (each 8-byte word holds its offset)".into(),
            PatternKind::Bytes(b) if self.whole_file => {
                format!("a {}-byte file laid over the target (wholefile)", b.len())
            }
            PatternKind::Bytes(b) if self.replicate => {
                format!("a {}-byte pattern repeated", b.len())
            }
            PatternKind::Bytes(b) => format!("a {}-byte pattern, then zeros", b.len()),
            PatternKind::Named(n) => format!("the {n:?} test frame repeated").to_lowercase(),
        };
        if self.inverse {
            s += ", inverted";
        }
        s
    }

    /// The pattern bytes when `wholefile` applies to them.
    fn whole_file_bytes(&self) -> Option<&[u8]> {
        match &self.kind {
            PatternKind::Bytes(b) if self.whole_file && !b.is_empty() => Some(b),
            _ => None,
        }
    }

    /// Fills a whole buffer once, before the first request; `file_offset` is
    /// where the first request goes (only `sequenced` uses it).
    pub fn prefill(&self, buf: &mut [u8], file_offset: u64) {
        match &self.kind {
            PatternKind::Byte(b) => buf.fill(*b),
            PatternKind::Random => {
                Shape::new(self.compress_pct, self.dedupe_pct, self.request_bytes).fill(buf)
            }
            PatternKind::Sequenced => {
                self.patch(buf, file_offset);
                return; // patch applies inverse itself
            }
            PatternKind::Bytes(_) if self.whole_file => {
                self.patch(buf, file_offset);
                return;
            }
            PatternKind::Bytes(bytes) if self.replicate => repeat_into(buf, bytes),
            PatternKind::Bytes(bytes) => {
                buf.fill(0);
                let n = bytes.len().min(buf.len());
                buf[..n].copy_from_slice(&bytes[..n]);
            }
            PatternKind::Named(n) => repeat_into(buf, &named_bytes(*n)),
        }
        if self.inverse {
            buf.iter_mut().for_each(|b| *b = !*b);
        }
    }

    /// Per-request update in place: rewrites the words of a `sequenced`
    /// buffer, the bytes of `wholefile` or the stamps of unique data (as
    /// pass 0; [`DataPattern::place`] is the write paths' form) for
    /// `file_offset`; does nothing for the other patterns. No allocation.
    #[inline]
    pub fn patch(&self, buf: &mut [u8], file_offset: u64) {
        if let Some(pat) = self.whole_file_bytes() {
            return self.patch_whole_file(buf, pat, file_offset);
        }
        if let Some(s) = self.shape() {
            let tag = unique::tag(self.stamp_key, self.target, 0);
            let len = buf.len();
            // A buffer of exactly the request: stamped where it is.
            s.place(buf, file_offset, len, tag);
            return;
        }
        if self.kind != PatternKind::Sequenced {
            return;
        }
        let mut chunks = buf.chunks_exact_mut(8);
        let mut off = file_offset;
        for c in &mut chunks {
            c.copy_from_slice(&self.sequenced_word(off).to_le_bytes());
            off += 8;
        }
        let tail = chunks.into_remainder();
        let n = tail.len();
        tail.copy_from_slice(&self.sequenced_word(off).to_le_bytes()[..n]);
    }

    /// Copies the pattern rotated to `file_offset`, in runs, not bytes.
    fn patch_whole_file(&self, buf: &mut [u8], pat: &[u8], file_offset: u64) {
        let mut start = (file_offset % pat.len() as u64) as usize;
        let mut done = 0;
        while done < buf.len() {
            let n = (pat.len() - start).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&pat[start..start + n]);
            done += n;
            start = 0;
        }
        if self.inverse {
            buf.iter_mut().for_each(|b| *b = !*b);
        }
    }

    /// The byte `wholefile` puts at target offset `offset`.
    fn whole_file_byte(&self, pat: &[u8], offset: u64) -> u8 {
        let b = pat[(offset % pat.len() as u64) as usize];
        if self.inverse {
            !b
        } else {
            b
        }
    }

    /// The sequenced word stored at byte `offset`, with prefix and inverse.
    #[inline]
    fn sequenced_word(&self, offset: u64) -> u64 {
        let w = match self.prefix {
            Some((value, bits)) if bits > 0 => {
                let keep = 64 - bits;
                let low = if keep == 0 {
                    0
                } else {
                    offset & ((1u64 << keep) - 1)
                };
                (value << keep) | low
            }
            _ => offset,
        };
        if self.inverse {
            !w
        } else {
            w
        }
    }
}

fn parse_byte(word: &str) -> Result<u8, PatternError> {
    let lower = word.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0x") {
        if h.len() <= 2 && !h.is_empty() {
            return u8::from_str_radix(h, 16).map_err(|_| PatternError::Unknown(word.into()));
        }
    }
    match word.as_bytes() {
        [b] => Ok(*b),
        _ => Err(PatternError::Unknown(word.into())),
    }
}

/// Hex digits to bytes; an odd count gets a leading zero nibble.
fn parse_hex(opt: &'static str, s: &str) -> Result<Vec<u8>, PatternError> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let bad = || PatternError::BadHex(opt, s.to_string());
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let padded = if digits.len() % 2 == 1 {
        format!("0{digits}")
    } else {
        digits.to_string()
    };
    (0..padded.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&padded[i..i + 2], 16).map_err(|_| bad()))
        .collect()
}

fn parse_prefix(s: &str) -> Result<(u64, u32), PatternError> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.len() > 16 {
        return Err(PatternError::PrefixTooLong);
    }
    let value = u64::from_str_radix(digits, 16)
        .map_err(|_| PatternError::BadHex("prefix", s.to_string()))?;
    Ok((value, 4 * digits.len() as u32))
}

/// Copies `pat` over `buf` by doubling, so a large buffer takes few copies.
fn repeat_into(buf: &mut [u8], pat: &[u8]) {
    if pat.is_empty() {
        buf.fill(0);
        return;
    }
    let first = pat.len().min(buf.len());
    buf[..first].copy_from_slice(&pat[..first]);
    let mut done = first;
    while done < buf.len() {
        let n = done.min(buf.len() - done);
        buf.copy_within(..n, done);
        done += n;
    }
}

/// The four-byte FC Idle primitive repeated six times, then SOFn3: the
/// frame head XDD puts before cjtpat, crpat and cspat.
const FRAME_HEAD: [u8; 28] = {
    let mut v = [0u8; 28];
    let mut i = 0;
    while i < 24 {
        let idle = [0xBC, 0x95, 0xB5, 0xB5];
        v[i] = idle[i % 4];
        i += 1;
    }
    v[24] = 0xBC;
    v[25] = 0xB5;
    v[26] = 0x36;
    v[27] = 0x36;
    v
};

/// EOFn, the end of frame XDD puts after a pattern's CRC.
const FRAME_TAIL: [u8; 4] = [0xBC, 0xB5, 0xD5, 0xD5];

/// XDD's RPAT payload word, repeated 16 times in crpat.
const RPAT: [u8; 12] = [
    0xBE, 0xD7, 0x23, 0x47, 0x6B, 0x8F, 0xB3, 0x14, 0x5E, 0xFB, 0x35, 0x59,
];

/// Appends each (byte, count) run to `v`.
fn runs(v: &mut Vec<u8>, runs: &[(u8, usize)]) {
    for &(b, n) in runs {
        v.extend(std::iter::repeat_n(b, n));
    }
}

/// The bytes of a named pattern: XDD's own tables (its datapatterns.h),
/// so data written by one tool verifies in the other. Lengths, as XDD
/// prints them ("LFPAT length is ..."): lfpat 256, ltpat 512, cjtpat 248,
/// crpat 228, cspat 2048. Each buffer starts with the pattern's first byte
/// and repeats it to the buffer's end, as XDD does.
pub fn named_bytes(n: NamedPattern) -> Vec<u8> {
    let mut v = Vec::with_capacity(2048);
    match n {
        NamedPattern::Lfpat => runs(
            &mut v,
            &[(0xAB, 128), (0xEB, 1), (0x54, 124), (0xF4, 1), (0xAB, 2)],
        ),
        NamedPattern::Ltpat => {
            v.extend([0xEE, 0xFE, 0xC7, 0xF1, 0xFE, 0x27]);
            runs(&mut v, &[(0x7E, 6)]);
            v.extend([0xFC, 0xE3, 0xFC, 0xE3]);
            runs(&mut v, &[(0x7E, 30 * 16 + 12)]);
            v.extend([0xFC, 0xE3, 0xFC, 0xE3]);
        }
        NamedPattern::Cjtpat => {
            v.extend(FRAME_HEAD);
            runs(&mut v, &[(0x7E, 9 * 16 + 4 + 3)]);
            v.extend([0x74, 0x7E, 0xAB]);
            runs(&mut v, &[(0xB5, 2 + 3 * 16 + 1)]);
            v.extend([0x5E, 0x4A]);
            runs(&mut v, &[(0x7E, 4)]);
            v.extend([0xFE, 0xF5, 0x2E, 0xF6, 0xDD]);
            v.extend(FRAME_TAIL);
        }
        NamedPattern::Crpat => {
            v.extend(FRAME_HEAD);
            (0..16).for_each(|_| v.extend(RPAT));
            v.extend([0xEE, 0x23, 0x55, 0x16]);
            v.extend(FRAME_TAIL);
        }
        NamedPattern::Cspat => {
            v.extend(FRAME_HEAD);
            runs(&mut v, &[(0x7F, 2012)]);
            v.extend([0xF1, 0x96, 0xDB, 0x97]);
            v.extend(FRAME_TAIL);
        }
    }
    v
}

/// `-verify` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyMode {
    /// Words must hold their own offset (data written `sequenced`).
    Location,
    /// Bytes must equal the configured pattern.
    Contents,
}

/// The outcome of checking one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mismatch {
    /// Absolute file offset of the first bad byte (contents) or word
    /// (location); `None` when the buffer is good.
    pub first_bad_offset: Option<u64>,
    /// Bad bytes (contents) or bad 8-byte words (location).
    pub bad_units: u64,
}

impl Mismatch {
    /// True when nothing was wrong.
    pub fn is_ok(&self) -> bool {
        self.bad_units == 0
    }
}

/// Checks read buffers; built once per QThread, holds the expected bytes
/// for patterns that do not vary so a good buffer costs one `memcmp`.
#[derive(Debug, Clone)]
pub struct Verifier {
    mode: VerifyMode,
    pattern: DataPattern,
    expected: Vec<u8>,
}

impl Verifier {
    /// A verifier for requests up to `max_len` bytes.
    pub fn new(pattern: &DataPattern, mode: VerifyMode, max_len: usize) -> Self {
        let mut pattern = pattern.clone();
        if mode == VerifyMode::Location {
            pattern.kind = PatternKind::Sequenced;
        }
        let mut expected = Vec::new();
        if let Some(s) = pattern.shape() {
            expected.resize(s.period, 0);
            pattern.prefill(&mut expected, 0);
        } else if !pattern.varies_per_request() {
            expected.resize(max_len, 0);
            pattern.prefill(&mut expected, 0);
        }
        Self {
            mode,
            pattern,
            expected,
        }
    }

    /// Checks `buf`, read from `file_offset`. Allocation-free.
    pub fn check(&self, buf: &[u8], file_offset: u64) -> Mismatch {
        if let Some(pat) = self.pattern.whole_file_bytes() {
            return self.check_whole_file(buf, pat, file_offset);
        }
        if let Some(s) = self
            .pattern
            .shape()
            .filter(|_| self.mode == VerifyMode::Contents)
        {
            return self.check_unique(&s, buf, file_offset);
        }
        if self.pattern.varies_per_request() {
            return self.check_sequenced(buf, file_offset);
        }
        // A buffer longer than `max_len` is checked only as far as the
        // expected bytes reach; sizing the verifier is the caller's job.
        debug_assert!(
            buf.len() <= self.expected.len(),
            "Verifier built for shorter requests"
        );
        let n = buf.len().min(self.expected.len());
        let (buf, exp) = (&buf[..n], &self.expected[..n]);
        if buf == exp {
            return Mismatch::default();
        }
        let mut m = Mismatch::default();
        for (i, (a, b)) in buf.iter().zip(exp).enumerate() {
            if a != b {
                m.first_bad_offset.get_or_insert(file_offset + i as u64);
                m.bad_units += 1;
            }
        }
        m
    }

    fn check_whole_file(&self, buf: &[u8], pat: &[u8], file_offset: u64) -> Mismatch {
        let mut m = Mismatch::default();
        for (i, &b) in buf.iter().enumerate() {
            let off = file_offset + i as u64;
            if b != self.pattern.whole_file_byte(pat, off) {
                m.first_bad_offset.get_or_insert(off);
                m.bad_units += 1;
            }
        }
        m
    }

    /// Unique data: the base everywhere but at the stamps, whose offset
    /// word must hold the unit's offset (the tag, which names the run and
    /// pass that wrote it, is not checked).
    fn check_unique(&self, s: &Shape, buf: &[u8], file_offset: u64) -> Mismatch {
        let mut m = Mismatch::default();
        let mut j = 0;
        while j < buf.len() {
            let off = file_offset + j as u64;
            let in_unit = (off % UNIT as u64) as usize;
            let n = (UNIT - in_unit).min(buf.len() - j);
            let k = (off % s.period as u64) as usize;
            let got = &buf[j..j + n];
            let stamped = !s.is_duplicate(s.unit_in_period(off));
            let unit_off = (off - in_unit as u64).to_le_bytes();
            for (i, (&a, &b)) in got.iter().zip(&self.expected[k..k + n]).enumerate() {
                let at = in_unit + i;
                let bad = match at {
                    0..8 if stamped => a != unit_off[at],
                    8..STAMP_BYTES if stamped => false,
                    _ => a != b,
                };
                if bad {
                    m.first_bad_offset.get_or_insert(off + i as u64);
                    m.bad_units += 1;
                }
            }
            j += n;
        }
        m
    }

    fn check_sequenced(&self, buf: &[u8], file_offset: u64) -> Mismatch {
        let word_unit = self.mode == VerifyMode::Location;
        let mut m = Mismatch::default();
        let mut off = file_offset;
        for c in buf.chunks(8) {
            let want = self.pattern.sequenced_word(off).to_le_bytes();
            let want = &want[..c.len()];
            if c != want {
                let first = c.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
                m.first_bad_offset
                    .get_or_insert(if word_unit { off } else { off + first as u64 });
                m.bad_units += if word_unit {
                    1
                } else {
                    c.iter().zip(want).filter(|(a, b)| a != b).count() as u64
                };
            }
            off += 8;
        }
        m
    }
}

/// `-maxerrors` bookkeeping: the caller records each checked request and
/// ends the pass when this says so. `max_errors == 0` means no limit, as
/// in XDD's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorBudget {
    /// `-maxerrors`; 0 = unlimited.
    pub max_errors: u64,
    /// Requests that failed verification so far.
    pub failed_requests: u64,
    /// Bad bytes/words summed over those requests.
    pub bad_units: u64,
    /// First bad file offset seen in this pass.
    pub first_bad_offset: Option<u64>,
}

impl ErrorBudget {
    /// Records one checked request; returns `false` once the pass must end.
    pub fn record(&mut self, m: &Mismatch) -> bool {
        if !m.is_ok() {
            self.failed_requests += 1;
            self.bad_units += m.bad_units;
            if self.first_bad_offset.is_none() {
                self.first_bad_offset = m.first_bad_offset;
            }
        }
        self.max_errors == 0 || self.failed_requests < self.max_errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(opts: &[&[&str]]) -> DataPattern {
        let mut p = DataPattern::default();
        for o in opts {
            assert_eq!(p.apply_words(o).unwrap(), o.len());
        }
        p
    }

    #[test]
    fn a_modifier_must_modify_the_pattern_written() {
        let unused = |opts: &[&[&str]], m: &[&str]| {
            matches!(
                pat(opts).check_modifier(m),
                Err(PatternError::Unused { .. })
            )
        };
        assert!(unused(&[&["prefix", "1f"]], &["prefix", "1f"]));
        assert!(!unused(
            &[&["sequenced"], &["prefix", "1f"]],
            &["prefix", "1f"]
        ));
        assert!(unused(&[&["A"], &["replicate"]], &["replicate"]));
        assert!(!unused(&[&["ascii", "ab"], &["replicate"]], &["replicate"]));
        assert!(unused(&[&["wholefile"]], &["wholefile"]));
        assert!(!unused(&[&["hex", "0a"], &["wholefile"]], &["wholefile"]));
        assert!(unused(&[&["compress", "5"], &["A"]], &["compress", "5"]));
        assert!(!unused(
            &[&["compress", "5"], &["random"]],
            &["compress", "5"]
        ));
        // inverse and base patterns are never unused.
        assert!(!unused(&[&["A"], &["inverse"]], &["inverse"]));
        assert!(!unused(&[&["A"], &["sequenced"]], &["A"]));
        let e = pat(&[&["prefix", "1f"]])
            .check_modifier(&["prefix", "1f"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sequenced") && e.contains("unique incompressible"),
            "{e}"
        );
    }

    fn filled(p: &DataPattern, len: usize, off: u64) -> Vec<u8> {
        let mut b = vec![0xAAu8; len];
        p.prefill(&mut b, off);
        b
    }

    #[test]
    fn default_is_unique_and_characters_fill() {
        let d = DataPattern::default();
        assert!(d.varies_per_request() && !d.repeats() && !d.explicit);
        assert!(filled(&d, 64, 0).iter().filter(|&&b| b == 0).count() < 4);
        let zero = pat(&[&["0x00"]]);
        assert!(zero.repeats() && zero.explicit);
        assert!(filled(&zero, 64, 0).iter().all(|&b| b == 0));
        assert!(filled(&pat(&[&["Z"]]), 64, 0).iter().all(|&b| b == b'Z'));
        assert!(filled(&pat(&[&["0xa5"]]), 64, 0).iter().all(|&b| b == 0xA5));
        let inv = pat(&[&["0x0f"], &["inverse"]]);
        assert!(filled(&inv, 64, 0).iter().all(|&b| b == 0xF0));
    }

    #[test]
    fn ascii_once_unless_replicated() {
        let b = filled(&pat(&[&["ascii", "abc"]]), 8, 0);
        assert_eq!(b, b"abc\0\0\0\0\0");
        let r = filled(&pat(&[&["ascii", "abc"], &["replicate"]]), 8, 0);
        assert_eq!(r, b"abcabcab");
    }

    #[test]
    fn hex_parses_and_replicates() {
        let p = pat(&[&["hex", "0xdeadBEEF"], &["replicate"]]);
        assert_eq!(filled(&p, 6, 0), [0xDE, 0xAD, 0xBE, 0xEF, 0xDE, 0xAD]);
        let odd = pat(&[&["hex", "abc"]]);
        assert_eq!(&filled(&odd, 3, 0), &[0x0A, 0xBC, 0]);
        let mut p = DataPattern::default();
        assert!(matches!(
            p.apply_words(&["hex", "xyz"]),
            Err(PatternError::BadHex(..))
        ));
        assert_eq!(
            p.apply_words(&["hex"]),
            Err(PatternError::MissingArg("hex"))
        );
        assert!(matches!(
            p.apply_words(&["bogus"]),
            Err(PatternError::Unknown(_))
        ));
    }

    #[test]
    fn sequenced_words_hold_their_offset() {
        let p = pat(&[&["sequenced"]]);
        assert!(p.varies_per_request());
        let mut b = filled(&p, 20, 4096);
        let w = |b: &[u8], i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!((w(&b, 0), w(&b, 1)), (4096, 4104));
        assert_eq!(&b[16..20], &4112u64.to_le_bytes()[..4]);
        p.patch(&mut b, 1 << 40);
        assert_eq!(w(&b, 1), (1 << 40) + 8);
    }

    #[test]
    fn prefix_and_inverse_on_sequenced() {
        let p = pat(&[&["sequenced"], &["prefix", "A5"]]);
        let b = filled(&p, 16, 64);
        assert_eq!(
            u64::from_le_bytes(b[8..16].try_into().unwrap()),
            (0xA5 << 56) | 72
        );
        let i = pat(&[&["sequenced"], &["inverse"]]);
        let b = filled(&i, 8, 64);
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), !64u64);
        let mut e = DataPattern::default();
        assert_eq!(
            e.apply_words(&["prefix", "11112222333344445"]),
            Err(PatternError::PrefixTooLong)
        );
    }

    #[test]
    fn random_is_fixed_and_not_flat() {
        let p = pat(&[&["random"]]);
        let a = filled(&p, 4096, 0);
        assert_eq!(a, filled(&p, 4096, 12345));
        let distinct: std::collections::HashSet<u8> = a.iter().copied().collect();
        assert!(distinct.len() > 200);
    }

    /// XDD's tables (datapatterns.h): lengths and bytes at the seams.
    #[test]
    fn named_patterns_are_xdds_bytes() {
        let idle_sof = [
            0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95,
            0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0x95, 0xB5, 0xB5, 0xBC, 0xB5, 0x36, 0x36,
        ];
        let eof = [0xBC, 0xB5, 0xD5, 0xD5];
        let lf = named_bytes(NamedPattern::Lfpat);
        assert_eq!(lf.len(), 256);
        assert_eq!(lf[..4], [0xAB; 4]);
        assert_eq!(lf[126..131], [0xAB, 0xAB, 0xEB, 0x54, 0x54]);
        assert_eq!(lf[252..], [0x54, 0xF4, 0xAB, 0xAB]);
        let lt = named_bytes(NamedPattern::Ltpat);
        assert_eq!(lt.len(), 512);
        assert_eq!(
            lt[..16],
            [
                0xEE, 0xFE, 0xC7, 0xF1, 0xFE, 0x27, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFC, 0xE3,
                0xFC, 0xE3
            ]
        );
        assert_eq!(lt[16], 0x7E);
        assert_eq!(lt[506..], [0x7E, 0x7E, 0xFC, 0xE3, 0xFC, 0xE3]);
        let cj = named_bytes(NamedPattern::Cjtpat);
        assert_eq!(cj.len(), 248);
        assert_eq!(cj[..28], idle_sof);
        assert_eq!(cj[28], 0x7E);
        assert_eq!(
            cj[172..184],
            [0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x74, 0x7E, 0xAB, 0xB5, 0xB5]
        );
        assert_eq!(
            cj[232..],
            [
                0xB5, 0x5E, 0x4A, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0xF5, 0x2E, 0xF6, 0xDD, 0xBC, 0xB5,
                0xD5, 0xD5
            ]
        );
        let cr = named_bytes(NamedPattern::Crpat);
        assert_eq!(cr.len(), 228);
        assert_eq!(cr[..28], idle_sof);
        assert_eq!(
            cr[28..40],
            [0xBE, 0xD7, 0x23, 0x47, 0x6B, 0x8F, 0xB3, 0x14, 0x5E, 0xFB, 0x35, 0x59]
        );
        assert_eq!(cr[208..220], cr[28..40]);
        assert_eq!(cr[220..], [0xEE, 0x23, 0x55, 0x16, 0xBC, 0xB5, 0xD5, 0xD5]);
        let cs = named_bytes(NamedPattern::Cspat);
        assert_eq!(cs.len(), 2048);
        assert_eq!(cs[..28], idle_sof);
        assert!(cs[28..2040].iter().all(|&b| b == 0x7F));
        assert_eq!(cs[2040..2044], [0xF1, 0x96, 0xDB, 0x97]);
        assert_eq!(cs[2044..], eof);
    }

    #[test]
    fn named_patterns_repeat() {
        for (name, first) in [
            ("lfpat", 0xAB),
            ("ltpat", 0xEE),
            ("crpat", 0xBC),
            ("cjtpat", 0xBC),
            ("cspat", 0xBC),
        ] {
            let p = pat(&[&[name]]);
            let b = filled(&p, 1000, 0);
            let unit = named_bytes(match &p.kind {
                PatternKind::Named(n) => *n,
                k => panic!("{k:?}"),
            });
            assert_eq!(b[0], first, "{name}");
            assert!(
                b.iter()
                    .enumerate()
                    .all(|(i, &x)| x == unit[i % unit.len()]),
                "{name}"
            );
        }
    }

    #[test]
    fn verify_contents_reports_first_offset_and_count() {
        let p = pat(&[&["hex", "0102"], &["replicate"]]);
        let v = Verifier::new(&p, VerifyMode::Contents, 4096);
        let mut b = filled(&p, 1024, 0);
        assert!(v.check(&b, 1 << 20).is_ok());
        b[10] = 0;
        b[11] = 0;
        b[500] = 9;
        let m = v.check(&b, 1 << 20);
        assert_eq!(m.first_bad_offset, Some((1 << 20) + 10));
        assert_eq!(m.bad_units, 3);
    }

    #[test]
    fn verify_location_catches_misplaced_blocks() {
        let seq = pat(&[&["sequenced"]]);
        let v = Verifier::new(&DataPattern::default(), VerifyMode::Location, 0);
        let b = filled(&seq, 1024, 8192);
        assert!(v.check(&b, 8192).is_ok());
        // The same data read back from the wrong place: every word is bad.
        let m = v.check(&b, 4096);
        assert_eq!((m.first_bad_offset, m.bad_units), (Some(4096), 128));
        // Contents mode on a sequenced pattern counts bytes.
        let vc = Verifier::new(&seq, VerifyMode::Contents, 0);
        let mut b2 = b.clone();
        b2[17] ^= 0xFF;
        assert_eq!(
            vc.check(&b2, 8192),
            Mismatch {
                first_bad_offset: Some(8192 + 17),
                bad_units: 1
            }
        );
    }

    #[test]
    fn file_and_wholefile_patterns() {
        let p = std::env::temp_dir().join(format!("iolab-pat-{}", std::process::id()));
        std::fs::write(&p, b"0123456789").unwrap();
        let ps = p.to_str().unwrap();
        let once = pat(&[&["file", ps]]);
        assert_eq!(filled(&once, 12, 0), b"0123456789\0\0");
        let whole = pat(&[&["file", ps], &["wholefile"]]);
        assert!(whole.varies_per_request());
        let mut b = filled(&whole, 12, 7);
        assert_eq!(b, b"789012345678");
        whole.patch(&mut b, 23);
        assert_eq!(b, b"345678901234");
        let v = Verifier::new(&whole, VerifyMode::Contents, 12);
        assert!(v.check(&b, 23).is_ok());
        let m = v.check(&b, 24);
        assert_eq!((m.first_bad_offset, m.bad_units), (Some(24), 12));
        std::fs::write(&p, b"").unwrap();
        assert!(matches!(
            DataPattern::default().apply_words(&["file", ps]),
            Err(PatternError::File(..))
        ));
        std::fs::remove_file(&p).unwrap();
        let e = DataPattern::default()
            .apply_words(&["file", "/nonexistent/x"])
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x"), "{e}");
        // A device is refused, not read until memory runs out.
        let e = DataPattern::default()
            .apply_words(&["wholefile", "/dev/zero"])
            .unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn unique_data_is_placed_stamped_and_verified() {
        let mut p = pat(&[&["compress", "25"], &["dedupe", "10%"]]);
        assert_eq!(
            (p.compress_pct, p.dedupe_pct, p.kind.clone()),
            (25, 10, PatternKind::Random)
        );
        p.fit(8192, 77, 1);
        let mut buf = vec![0u8; p.buffer_len(8192)];
        assert!(buf.len() > 8192);
        p.prefill(&mut buf, 0);
        let at = p.place(&mut buf, 5 * 8192, 8192, 3);
        let req = buf[at..at + 8192].to_vec();
        let v = Verifier::new(&p, VerifyMode::Contents, 8192);
        assert!(v.check(&req, 5 * 8192).is_ok());
        // Misplaced: the stamps hold another offset and the base differs.
        assert!(!v.check(&req, 6 * 8192).is_ok());
        let mut bad = req.clone();
        bad[5000] ^= 1;
        let m = v.check(&bad, 5 * 8192);
        assert_eq!(
            (m.first_bad_offset, m.bad_units),
            (Some(5 * 8192 + 5000), 1)
        );
        // Another pass stamps another tag: the same offset, other bytes.
        let at2 = p.place(&mut buf, 5 * 8192, 8192, 4);
        assert_ne!(req, buf[at2..at2 + 8192]);
        assert!(p.describe().contains("25%") && p.describe().contains("10%"));
    }

    #[test]
    fn percentages_are_checked() {
        let mut p = DataPattern::default();
        for w in [
            &["compress", "100"][..],
            &["dedupe", "101"],
            &["compress", "x"],
        ] {
            assert!(
                matches!(p.apply_words(w), Err(PatternError::BadPercent(..))),
                "{w:?}"
            );
        }
        assert_eq!(
            p.apply_words(&["dedupe"]),
            Err(PatternError::MissingArg("dedupe"))
        );
    }

    #[test]
    fn wholefile_takes_its_file_as_later_xdd_spells_it() {
        let f = std::env::temp_dir().join(format!("iolab-wf-{}", std::process::id()));
        std::fs::write(&f, b"abc").unwrap();
        let p = pat(&[&["wholefile", f.to_str().unwrap()]]);
        std::fs::remove_file(&f).unwrap();
        assert!(p.whole_file && p.varies_per_request());
        assert_eq!(filled(&p, 5, 4), b"bcabc");
    }

    #[test]
    fn error_budget_stops_at_maxerrors() {
        let bad = Mismatch {
            first_bad_offset: Some(42),
            bad_units: 3,
        };
        let mut unlimited = ErrorBudget::default();
        assert!((0..100).all(|_| unlimited.record(&bad)));
        let mut b = ErrorBudget {
            max_errors: 2,
            ..ErrorBudget::default()
        };
        assert!(b.record(&Mismatch::default()));
        assert!(b.record(&bad));
        assert!(!b.record(&Mismatch {
            first_bad_offset: Some(7),
            bad_units: 1
        }));
        assert_eq!(
            (b.failed_requests, b.bad_units, b.first_bad_offset),
            (2, 4, Some(42))
        );
    }
}
