//! `-timestamp`: a bounded per-QThread table of I/O time stamps, its text
//! reports (detailed and summary) and its binary dump.
//!
//! Each QThread owns one [`TsTable`] (no lock in the hot loop); it holds at
//! most `size` entries, allocated up front. When it is full it either wraps
//! (keeps the most recent entries; XDD's behaviour when `size` is smaller
//! than the run) or, with `oneshot`, stops recording. Entries not kept are
//! counted as dropped, so a report says what it is missing.
//!
//! ```
//! use iolab_xdd::timestamp::{OpType, TsEntry, TsOptions, TsTable, summarize};
//! let opts = TsOptions { size: 2, ..TsOptions::default() };
//! let mut t = TsTable::new(&opts, 0, 0, 0);
//! for op in 0..3u64 {
//!     t.record(TsEntry { op_number: op, op: OpType::Read, req_bytes: 4096, xfer_bytes: 4096,
//!         offset_bytes: op * 4096, start_ns: op * 1000, end_ns: op * 1000 + 500, pass: 1, qthread: 0 });
//! }
//! let kept: Vec<u64> = t.entries().map(|e| e.op_number).collect();
//! assert_eq!((kept, t.dropped()), (vec![1, 2], 1)); // wrapped: newest two
//! assert_eq!(summarize(&t.to_vec(), 1024).io_ns.max, 500);
//! ```
//!
//! # Text reports
//! The detailed and summary reports are formatted by
//! `iolab_report::xdd::timestamps` from [`TsInfo`], the entries and
//! [`summarize`]'s [`TsSummary`].
//!
//! # Binary dump (`-timestamp dump FILE`), version 1
//! All integers little-endian. A 64-byte header:
//!
//! | offset | type | field |
//! | --- | --- | --- |
//! | 0 | `[u8; 8]` | magic `IOLABTS\0` |
//! | 8 | u32 | version = 1 |
//! | 12 | u32 | header length in bytes = 64 |
//! | 16 | u32 | record length in bytes = 64 |
//! | 20 | u32 | target number |
//! | 24 | u32 | QThread number (`u32::MAX`: several merged) |
//! | 28 | u32 | block size in bytes |
//! | 32 | u64 | number of records that follow |
//! | 40 | u64 | entries dropped (wrapped over or after a oneshot filled) |
//! | 48 | i64 | wall-clock minus monotonic clock, ns (add to a time stamp for Unix-epoch ns) |
//! | 56 | u32 | flags: bit 0 wrapped, bit 1 oneshot |
//! | 60 | u32 | reserved, 0 |
//!
//! then `records` records of 64 bytes, oldest first:
//!
//! | offset | type | field |
//! | --- | --- | --- |
//! | 0 | u64 | operation number (target-wide) |
//! | 8 | u64 | offset in bytes |
//! | 16 | u64 | requested bytes |
//! | 24 | u64 | bytes actually transferred |
//! | 32 | u64 | start, monotonic ns |
//! | 40 | u64 | end, monotonic ns |
//! | 48 | u32 | pass number (1-based) |
//! | 52 | u32 | QThread number |
//! | 56 | u8 | operation: `r`, `w` or `n` (noop) |
//! | 57 | `[u8; 7]` | zero |
//!
//! Readers must honour the header and record lengths, so later versions
//! may append fields.

use std::io::{self, Read, Write};
use std::path::PathBuf;

/// Dump file magic.
pub const DUMP_MAGIC: [u8; 8] = *b"IOLABTS\0";
/// Dump format version written by this code.
pub const DUMP_VERSION: u32 = 1;
const HEADER_LEN: u32 = 64;
const RECORD_LEN: u32 = 64;

/// The operation a time stamp describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpType {
    /// A read.
    #[default]
    Read,
    /// A write.
    Write,
    /// `-op noop`.
    Noop,
}

impl OpType {
    /// One-letter code used in reports and dumps.
    pub fn code(self) -> u8 {
        match self {
            OpType::Read => b'r',
            OpType::Write => b'w',
            OpType::Noop => b'n',
        }
    }

    fn from_code(c: u8) -> io::Result<Self> {
        match c {
            b'r' => Ok(OpType::Read),
            b'w' => Ok(OpType::Write),
            b'n' => Ok(OpType::Noop),
            _ => Err(invalid(format!("unknown operation code {c}"))),
        }
    }
}

/// One time-stamped I/O operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TsEntry {
    /// Pass number, 1-based.
    pub pass: u32,
    /// QThread that issued it.
    pub qthread: u32,
    /// Target-wide operation number.
    pub op_number: u64,
    /// Read, write or noop.
    pub op: OpType,
    /// Byte offset in the target.
    pub offset_bytes: u64,
    /// Bytes asked for.
    pub req_bytes: u64,
    /// Bytes the system call returned.
    pub xfer_bytes: u64,
    /// Monotonic ns just before the request was issued.
    pub start_ns: u64,
    /// Monotonic ns just after it completed.
    pub end_ns: u64,
}

/// What happens when the table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TsMode {
    /// Overwrite the oldest entries (`wrap`; also the default).
    #[default]
    Wrap,
    /// Stop recording (`oneshot`).
    Oneshot,
}

/// `-timestamp` settings.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TsOptions {
    /// `size N`: entries per table; the caller sets it to the number of
    /// operations when the user did not.
    pub size: usize,
    /// `wrap` / `oneshot`.
    pub mode: TsMode,
    /// `summary` report wanted.
    pub summary: bool,
    /// `detailed` report wanted (includes the summary, as in XDD).
    pub detailed: bool,
    /// `normalize`: report times as Unix-epoch ns instead of monotonic.
    pub normalize: bool,
    /// `triggertime S`: start recording S seconds after the run start.
    pub trigger_time_s: Option<f64>,
    /// `triggerop N`: start recording at operation N.
    pub trigger_op: Option<u64>,
    /// `output FILE` for the text reports (default standard output).
    pub output: Option<PathBuf>,
    /// `append` to the output file instead of replacing it.
    pub append: bool,
    /// `dump FILE` for the binary dump.
    pub dump: Option<PathBuf>,
}

/// A bad `-timestamp` suboption.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("-timestamp {0}")]
pub struct TsOptionError(String);

impl TsOptions {
    /// Applies one `-timestamp` suboption; returns the words used (1 or 2).
    pub fn apply_words(&mut self, words: &[&str]) -> Result<usize, TsOptionError> {
        let first = *words
            .first()
            .ok_or_else(|| TsOptionError("needs a suboption".into()))?;
        let arg = || {
            words
                .get(1)
                .copied()
                .ok_or_else(|| TsOptionError(format!("{first} needs a value")))
        };
        let num_err =
            |v: &str| TsOptionError(format!("{first}: '{v}' is not a non-negative number"));
        match first.to_ascii_lowercase().as_str() {
            "summary" => self.summary = true,
            "detailed" => self.detailed = true,
            "normalize" => self.normalize = true,
            "wrap" => self.mode = TsMode::Wrap,
            "oneshot" => self.mode = TsMode::Oneshot,
            "append" => self.append = true,
            "size" => {
                let v = arg()?;
                self.size = v.parse().map_err(|_| num_err(v))?;
                return Ok(2);
            }
            "triggerop" => {
                let v = arg()?;
                self.trigger_op = Some(v.parse().map_err(|_| num_err(v))?);
                return Ok(2);
            }
            "triggertime" => {
                let v = arg()?;
                let s: f64 = v.parse().map_err(|_| num_err(v))?;
                if !(s.is_finite() && s >= 0.0) {
                    return Err(num_err(v));
                }
                self.trigger_time_s = Some(s);
                return Ok(2);
            }
            "output" => {
                self.output = Some(arg()?.into());
                return Ok(2);
            }
            "dump" => {
                self.dump = Some(arg()?.into());
                return Ok(2);
            }
            other => return Err(TsOptionError(format!("unknown suboption '{other}'"))),
        }
        Ok(1)
    }
}

/// A QThread's bounded time stamp table.
#[derive(Debug, Clone)]
pub struct TsTable {
    entries: Vec<TsEntry>,
    cap: usize,
    /// Where the next entry goes once the table has wrapped.
    next: usize,
    wrapped: bool,
    dropped: u64,
    mode: TsMode,
    trigger_start_ns: u64,
    trigger_op: u64,
    /// Trigger already met: skip the trigger checks.
    armed: bool,
    target: u32,
    qthread: u32,
}

impl TsTable {
    /// Allocates the table for `target`/`qthread`; `run_start_ns` is the
    /// monotonic time `triggertime` counts from.
    pub fn new(opts: &TsOptions, target: u32, qthread: u32, run_start_ns: u64) -> Self {
        let trigger_start_ns = opts
            .trigger_time_s
            .map_or(0, |s| run_start_ns.saturating_add((s * 1e9) as u64));
        let trigger_op = opts.trigger_op.unwrap_or(0);
        Self {
            entries: Vec::with_capacity(opts.size),
            cap: opts.size,
            next: 0,
            wrapped: false,
            dropped: 0,
            mode: opts.mode,
            trigger_start_ns,
            trigger_op,
            armed: trigger_start_ns == 0 && trigger_op == 0,
            target,
            qthread,
        }
    }

    /// Records one operation. Never allocates: the table was sized at
    /// creation.
    #[inline]
    pub fn record(&mut self, e: TsEntry) {
        if !self.armed {
            if e.op_number < self.trigger_op || e.start_ns < self.trigger_start_ns {
                return;
            }
            self.armed = true;
        }
        if self.entries.len() < self.cap {
            self.entries.push(e);
        } else if self.mode == TsMode::Wrap && self.cap > 0 {
            self.entries[self.next] = e;
            self.next = (self.next + 1) % self.cap;
            self.wrapped = true;
            self.dropped += 1;
        } else {
            self.dropped += 1;
        }
    }

    /// Entries kept, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &TsEntry> {
        let (newer, older) = self.entries.split_at(self.next);
        older.iter().chain(newer)
    }

    /// Entries kept, oldest first, as a vector (for reports).
    pub fn to_vec(&self) -> Vec<TsEntry> {
        self.entries().copied().collect()
    }

    /// Number of entries kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Operations recorded but not kept (overwritten or past a oneshot).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Header fields for reports and dumps.
    pub fn info(&self, block_size: u64) -> TsInfo {
        TsInfo {
            target: self.target,
            qthread: self.qthread,
            block_size,
            dropped: self.dropped,
            wrapped: self.wrapped,
            oneshot: self.mode == TsMode::Oneshot,
            wall_minus_mono_ns: wall_minus_mono_ns(),
        }
    }
}

/// Merges QThread tables of one target, ordered by start time.
pub fn merge_by_start(tables: &[TsTable]) -> Vec<TsEntry> {
    let mut all: Vec<TsEntry> = tables.iter().flat_map(|t| t.entries().copied()).collect();
    all.sort_by_key(|e| (e.start_ns, e.op_number));
    all
}

/// Who and what a report or dump describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsInfo {
    /// Target number.
    pub target: u32,
    /// QThread number, `u32::MAX` for merged tables.
    pub qthread: u32,
    /// `-blocksize` in bytes, for block locations.
    pub block_size: u64,
    /// Entries not kept.
    pub dropped: u64,
    /// The table wrapped.
    pub wrapped: bool,
    /// The table was oneshot.
    pub oneshot: bool,
    /// Wall clock minus monotonic clock, ns (for `normalize`).
    pub wall_minus_mono_ns: i64,
}

/// The offset that turns a monotonic time stamp into Unix-epoch ns.
pub fn wall_minus_mono_ns() -> i64 {
    iolab_core::clock::wall_ns() as i64 - iolab_core::clock::mono_ns() as i64
}

/// Min, max and mean of one quantity.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Range {
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Mean value.
    pub mean: f64,
}

impl Range {
    fn of(values: impl Iterator<Item = u64>) -> Self {
        let (mut min, mut max, mut sum, mut n) = (u64::MAX, 0u64, 0u128, 0u64);
        for v in values {
            min = min.min(v);
            max = max.max(v);
            sum += u128::from(v);
            n += 1;
        }
        if n == 0 {
            return Self::default();
        }
        Self {
            min,
            max,
            mean: sum as f64 / n as f64,
        }
    }
}

/// Summary over every entry of a table (guide 10.7, corrected).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct TsSummary {
    /// Entries summarised.
    pub entries: u64,
    /// Bytes transferred by them.
    pub xfer_bytes: u64,
    /// Mean request size in blocks.
    pub mean_req_blocks: f64,
    /// Seek distance in blocks between consecutive entries.
    pub distance_blocks: Range,
    /// I/O time (end - start) in ns.
    pub io_ns: Range,
    /// Dead time (start - previous end, 0 when overlapping) in ns.
    pub dead_ns: Range,
    /// First start to last end, ns.
    pub span_ns: u64,
}

/// Summarises `entries` (in the order given: oldest first).
pub fn summarize(entries: &[TsEntry], block_size: u64) -> TsSummary {
    let bs = block_size.max(1);
    let pairs = || entries.windows(2).map(|w| (&w[0], &w[1]));
    let first = entries.iter().map(|e| e.start_ns).min().unwrap_or(0);
    let last = entries.iter().map(|e| e.end_ns).max().unwrap_or(0);
    let req_blocks: u64 = entries.iter().map(|e| e.req_bytes / bs).sum();
    TsSummary {
        entries: entries.len() as u64,
        xfer_bytes: entries.iter().map(|e| e.xfer_bytes).sum(),
        mean_req_blocks: req_blocks as f64 / entries.len().max(1) as f64,
        distance_blocks: Range::of(pairs().map(|(a, b)| distance_blocks(a, b, bs))),
        io_ns: Range::of(entries.iter().map(|e| e.end_ns.saturating_sub(e.start_ns))),
        dead_ns: Range::of(pairs().map(|(a, b)| b.start_ns.saturating_sub(a.end_ns))),
        span_ns: last.saturating_sub(first),
    }
}

/// Blocks between where `a` ended and `b` starts.
pub fn distance_blocks(a: &TsEntry, b: &TsEntry, bs: u64) -> u64 {
    (b.offset_bytes / bs).abs_diff((a.offset_bytes + a.req_bytes) / bs)
}

/// Writes the binary dump (format in the module doc).
pub fn write_dump<W: Write>(mut w: W, info: &TsInfo, entries: &[TsEntry]) -> io::Result<()> {
    let mut h = Vec::with_capacity(HEADER_LEN as usize);
    h.extend_from_slice(&DUMP_MAGIC);
    for v in [
        DUMP_VERSION,
        HEADER_LEN,
        RECORD_LEN,
        info.target,
        info.qthread,
    ] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.extend_from_slice(
        &u32::try_from(info.block_size)
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    h.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    h.extend_from_slice(&info.dropped.to_le_bytes());
    h.extend_from_slice(&info.wall_minus_mono_ns.to_le_bytes());
    let flags = u32::from(info.wrapped) | (u32::from(info.oneshot) << 1);
    h.extend_from_slice(&flags.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    w.write_all(&h)?;
    for e in entries {
        let mut r = [0u8; RECORD_LEN as usize];
        let words = [
            e.op_number,
            e.offset_bytes,
            e.req_bytes,
            e.xfer_bytes,
            e.start_ns,
            e.end_ns,
        ];
        for (i, v) in words.iter().enumerate() {
            r[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        r[48..52].copy_from_slice(&e.pass.to_le_bytes());
        r[52..56].copy_from_slice(&e.qthread.to_le_bytes());
        r[56] = e.op.code();
        w.write_all(&r)?;
    }
    w.flush()
}

/// Reads a binary dump back: header fields and entries, oldest first.
pub fn read_dump<R: Read>(mut r: R) -> io::Result<(TsInfo, Vec<TsEntry>)> {
    let mut h = [0u8; HEADER_LEN as usize];
    r.read_exact(&mut h)?;
    if h[..8] != DUMP_MAGIC {
        return Err(invalid("not an iolab time stamp dump (bad magic)".into()));
    }
    // Fixed offsets inside buffers of known length: the copies cannot fail.
    let u32_at = |b: &[u8], o: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[o..o + 4]);
        u32::from_le_bytes(w)
    };
    let u64_at = |b: &[u8], o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(w)
    };
    let version = u32_at(&h, 8);
    let (hlen, rlen) = (u32_at(&h, 12) as usize, u32_at(&h, 16) as usize);
    if version == 0 || hlen < HEADER_LEN as usize || rlen < RECORD_LEN as usize {
        return Err(invalid(format!("unsupported dump version {version}")));
    }
    io::copy(
        &mut (&mut r).take((hlen - HEADER_LEN as usize) as u64),
        &mut io::sink(),
    )?;
    let flags = u32_at(&h, 56);
    let info = TsInfo {
        target: u32_at(&h, 20),
        qthread: u32_at(&h, 24),
        block_size: u64::from(u32_at(&h, 28)),
        dropped: u64_at(&h, 40),
        wrapped: flags & 1 != 0,
        oneshot: flags & 2 != 0,
        wall_minus_mono_ns: u64_at(&h, 48) as i64,
    };
    let n = u64_at(&h, 32);
    let mut rec = vec![0u8; rlen];
    let mut out = Vec::with_capacity(n.min(1 << 20) as usize);
    for _ in 0..n {
        r.read_exact(&mut rec)?;
        out.push(TsEntry {
            op_number: u64_at(&rec, 0),
            offset_bytes: u64_at(&rec, 8),
            req_bytes: u64_at(&rec, 16),
            xfer_bytes: u64_at(&rec, 24),
            start_ns: u64_at(&rec, 32),
            end_ns: u64_at(&rec, 40),
            pass: u32_at(&rec, 48),
            qthread: u32_at(&rec, 52),
            op: OpType::from_code(rec[56])?,
        });
    }
    Ok((info, out))
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 MiB writes 1 ms apart taking 0.5 ms each, like guide 10.7's run.
    fn entry(op: u64) -> TsEntry {
        TsEntry {
            pass: 1,
            qthread: 0,
            op_number: op,
            op: OpType::Write,
            offset_bytes: (op * 4) << 20,
            req_bytes: 4 << 20,
            xfer_bytes: 4 << 20,
            start_ns: 1_000_000 + op * 1_000_000,
            end_ns: 1_500_000 + op * 1_000_000,
        }
    }

    fn table(opts: &TsOptions, n: u64) -> TsTable {
        let mut t = TsTable::new(opts, 0, 0, 0);
        (0..n).for_each(|i| t.record(entry(i)));
        t
    }

    fn ops(t: &TsTable) -> Vec<u64> {
        t.entries().map(|e| e.op_number).collect()
    }

    #[test]
    fn bounded_wrap_keeps_newest() {
        let t = table(
            &TsOptions {
                size: 4,
                ..TsOptions::default()
            },
            10,
        );
        assert_eq!(ops(&t), [6, 7, 8, 9]);
        assert_eq!((t.len(), t.dropped()), (4, 6));
        assert!(t.info(1024).wrapped);
        assert_eq!(t.entries.capacity(), 4, "memory bounded by size");
    }

    #[test]
    fn oneshot_keeps_first() {
        let opts = TsOptions {
            size: 3,
            mode: TsMode::Oneshot,
            ..TsOptions::default()
        };
        let t = table(&opts, 10);
        assert_eq!((ops(&t), t.dropped()), (vec![0, 1, 2], 7));
    }

    #[test]
    fn triggers_delay_recording() {
        let by_op = TsOptions {
            size: 100,
            trigger_op: Some(5),
            ..TsOptions::default()
        };
        assert_eq!(ops(&table(&by_op, 8)), [5, 6, 7]);
        // Entry i starts at (i + 1) ms; trigger 3.5 ms after run start 0.
        let by_time = TsOptions {
            size: 100,
            trigger_time_s: Some(0.0035),
            ..TsOptions::default()
        };
        assert_eq!(ops(&table(&by_time, 6)), [3, 4, 5]);
    }

    #[test]
    fn parses_suboptions() {
        let mut o = TsOptions::default();
        for w in [
            &["size", "16"][..],
            &["oneshot"],
            &["detailed"],
            &["triggerop", "3"],
            &["output", "x.csv"],
            &["append"],
            &["dump", "d.bin"],
            &["triggertime", "1.5"],
        ] {
            assert_eq!(o.apply_words(w).unwrap(), w.len());
        }
        assert_eq!(
            (o.size, o.mode, o.trigger_op, o.trigger_time_s),
            (16, TsMode::Oneshot, Some(3), Some(1.5))
        );
        assert!(o.detailed && o.append);
        assert!(o.apply_words(&["size"]).is_err());
        assert!(o.apply_words(&["size", "-1"]).is_err());
        assert!(o
            .apply_words(&["bogus"])
            .unwrap_err()
            .to_string()
            .contains("bogus"));
    }

    #[test]
    fn summary_covers_every_entry_in_true_units() {
        let mut es: Vec<TsEntry> = (0..4).map(entry).collect();
        es[2].end_ns += 1_000_000; // one slow op: 1.5 ms, next starts late
        es[3].start_ns += 1_000_000;
        es[3].end_ns += 1_000_000;
        let s = summarize(&es, 1024);
        assert_eq!(s.entries, 4);
        assert_eq!((s.io_ns.min, s.io_ns.max), (500_000, 1_500_000));
        assert_eq!(s.io_ns.mean, 750_000.0);
        assert_eq!((s.dead_ns.min, s.dead_ns.max), (500_000, 500_000));
        assert_eq!(s.distance_blocks.max, 0);
        assert_eq!(s.mean_req_blocks, 4096.0);
        assert_eq!(s.span_ns, 5_500_000 - 1_000_000);
    }

    #[test]
    fn dump_round_trips() {
        let mut t = table(
            &TsOptions {
                size: 5,
                ..TsOptions::default()
            },
            7,
        );
        t.record(TsEntry {
            op: OpType::Read,
            xfer_bytes: 10,
            ..entry(7)
        });
        let info = t.info(512);
        let mut bytes = Vec::new();
        write_dump(&mut bytes, &info, &t.to_vec()).unwrap();
        assert_eq!(bytes.len(), 64 + 5 * 64);
        assert_eq!(&bytes[..8], b"IOLABTS\0");
        let (back_info, back) = read_dump(&bytes[..]).unwrap();
        assert_eq!(back_info, info);
        assert_eq!(back, t.to_vec());
        assert_eq!(back_info.dropped, 3);
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(read_dump(&bad[..]).is_err());
        assert!(read_dump(&bytes[..100]).is_err(), "truncated");
    }

    #[test]
    fn merge_orders_qthreads_by_start() {
        let opts = TsOptions {
            size: 10,
            ..TsOptions::default()
        };
        let mut a = TsTable::new(&opts, 0, 0, 0);
        let mut b = TsTable::new(&opts, 0, 1, 0);
        for i in 0..6 {
            let t = if i % 2 == 0 { &mut a } else { &mut b };
            t.record(TsEntry {
                qthread: (i % 2) as u32,
                ..entry(i)
            });
        }
        let m: Vec<u64> = merge_by_start(&[a, b])
            .iter()
            .map(|e| e.op_number)
            .collect();
        assert_eq!(m, [0, 1, 2, 3, 4, 5]);
    }
}
