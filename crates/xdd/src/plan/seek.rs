//! Where each request goes: the XDD `-seek` access patterns, `-randomize`
//! and the `-startoffset`/`-passoffset`/`-targetoffset` offsets.
//!
//! Nothing here holds a list of locations. A [`SeekPlan`] is built once per
//! target; [`SeekPlan::pass`] gives a small `Copy` value, [`PassSeeks`], whose
//! [`PassSeeks::offset`] computes the byte offset of request `i` in O(1), so a
//! run of 100 million requests costs no memory. Only `-seek load` holds the
//! loaded locations, because they came from a file.
//!
//! ```
//! use iolab_xdd::seek::{SeekConfig, SeekPattern, SeekPlan};
//! let cfg = SeekConfig { reqsize_blocks: 8, num_reqs: 4, ..SeekConfig::default() };
//! let plan = SeekPlan::new(&cfg, 0).unwrap();
//! let pass = plan.pass(1);
//! // Sequential, 8 blocks of 1024 bytes per request.
//! assert_eq!((0..4).map(|i| pass.offset(i)).collect::<Vec<_>>(), [0, 8192, 16384, 24576]);
//! let random = SeekConfig { pattern: SeekPattern::Random, range_blocks: Some(1 << 20), ..cfg };
//! let a = SeekPlan::new(&random, 0).unwrap().pass(1).offset(3);
//! let b = SeekPlan::new(&random, 0).unwrap().pass(1).offset(3);
//! assert_eq!(a, b); // same seed, same list, every run
//! ```
//!
//! # Units
//! All positions in the configuration are in blocks of `-blocksize` bytes
//! (default 1024), as the XDD guide defines `-startoffset`, `-passoffset`,
//! `-targetoffset`, `-seek range` and `-reqsize`. The first block of pass `p`
//! (1-based, as XDD numbers passes) on target `t` is
//! `startoffset + t * targetoffset + (p - 1) * passoffset`; every pattern is
//! laid out from there.
//!
//! # Patterns
//! - `sequential` (default): request `i` at `i * reqsize * interleave`.
//!   `interleave N` leaves room for N cooperating streams: N processes or
//!   targets on one file, each with `-targetoffset reqsize`, interleave their
//!   requests without overlap. `interleave 1` is plain sequential.
//! - `stagger [STRIDE]`: XDD 7's spacing. With a stride (blocks) larger
//!   than a request, request `i` is at `i * STRIDE`, leaving
//!   `STRIDE - reqsize` blocks between requests. Otherwise the requests are
//!   spread over the range: the gap between them is
//!   `(range - reqsize - num_reqs * reqsize) / (num_reqs - 1)` blocks, XDD's
//!   formula (256 MiB in a 2 GiB range reads about every 8th request-sized
//!   block, as in the guide's example); see [`stagger_step`].
//! - `random`: request-aligned slots drawn uniformly from the range
//!   (`slot * reqsize`, `slot < range / reqsize`), so O_DIRECT alignment holds
//!   whenever it holds for the request size. Reproducible: the same seed gives
//!   the same list on every run and every pass. XDD 7.0 ignores `-seek seed`;
//!   iolab honours it.
//! - `none`: every request at the first block of the range.
//! - `load FILE`: locations from a file written by `save` (format below); the
//!   loaded locations are absolute, offsets are not added again. A list
//!   shorter than the pass is reused from its start.
//!
//! `-randomize` makes each pass different: for `random` it draws with a
//! per-pass seed; for the other patterns it visits the same locations in a
//! per-pass shuffled order, using a keyed Feistel permutation of the request
//! indices (a bijection on `0..num_reqs`, by cycle-walking), so every
//! location is still visited exactly once per pass and no list is built.
//!
//! # Random numbers
//! iolab's own SplitMix64 (Steele, Lea, Flood 2014), used counter-style: the
//! `n`th output is a pure function of `(seed, n)`, which is what lets
//! `offset(i)` be computed for any `i` without generating `0..i` first. No
//! crate: the generator is ten lines and must never change under us, since
//! saved results depend on its exact sequence.
//!
//! # QThreads
//! XDD 7.0 hands a target's operations, in operation-number order, to its
//! QThreads; op N+1 goes to the next QThread (the ordering section of the
//! guide counts on this). iolab's static equivalent is round robin:
//! QThread `q` of `qd` issues the requests `i` with `i % qd == q`
//! ([`qthread_requests`]). Because `offset(i)` takes the target-wide index, a
//! dynamic split (a shared atomic counter) works equally well.
//!
//! # Seek list file (`-seek save` / `-seek load`)
//! XDD's layout, so either tool loads the other's lists. `-seek save NAME`
//! writes one file per target, named as XDD 7 names it: `NAME.T<target>.txt`
//! ([`save_file_name`]). The file opens with two comment lines,
//! `# Longest seek=L, Shortest seek=S, Average seek distance=A` (distances
//! in blocks between consecutive locations; the average divides by the
//! request count, as XDD does) and `#Ordinal Location Reqsize Operation
//! Time1 Time2`, then one line per request: the index (10 digits), the
//! absolute block location (12 digits), the request size in blocks, `r` or
//! `w`, and two 16-digit times that iolab writes as zeros (XDD's scheduled
//! time for throttled runs, unused when loading here). On load, lines that
//! start with `#` are comments, further columns after the location are
//! ignored, and indices must run 0, 1, 2, ... without gaps.

use iolab_core::random::{below, mix, splitmix_nth, Permutation as Feistel};
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::Arc;

/// The file `-seek save NAME` writes for target `target`: XDD 7's
/// `NAME.T<target>.txt`.
pub fn save_file_name(name: &str, target: usize) -> String {
    format!("{name}.T{target}.txt")
}

/// Seed used when `-seek seed` is not given; fixed so runs repeat.
pub const DEFAULT_SEED: u64 = 72058;

/// The `-seek` access pattern.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SeekPattern {
    /// Consecutive requests from the start of the range (XDD's default).
    #[default]
    Sequential,
    /// Requests spread evenly over the range.
    Stagger,
    /// Request-aligned random locations within the range.
    Random,
    /// Always the first block of the range.
    None,
    /// Absolute block locations loaded from a seek list file.
    Loaded(Arc<[u64]>),
}

/// Everything that decides where requests go, in XDD's units (blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeekConfig {
    /// Access pattern (`-seek random|stagger|none|load`).
    pub pattern: SeekPattern,
    /// Bytes per block (`-blocksize`, default 1024).
    pub block_size: u64,
    /// Blocks per request (`-reqsize`).
    pub reqsize_blocks: u64,
    /// Requests per pass for the whole target (all QThreads).
    pub num_reqs: u64,
    /// `-seek range` in blocks; `None` means the implied range
    /// `num_reqs * reqsize_blocks`.
    pub range_blocks: Option<u64>,
    /// Stride in blocks given with `-seek stagger N`; used only when it
    /// is larger than a request (as XDD does), else the range is divided.
    pub stagger_stride_blocks: Option<u64>,
    /// `-seek seed`.
    pub seed: u64,
    /// `-seek interleave` factor (1 = none).
    pub interleave: u64,
    /// `-randomize`: a different order (or random draw) each pass.
    pub randomize: bool,
    /// `-startoffset` in blocks.
    pub start_offset_blocks: u64,
    /// `-passoffset` in blocks, added once per pass after the first.
    pub pass_offset_blocks: u64,
    /// `-targetoffset` in blocks, multiplied by the target number.
    pub target_offset_blocks: u64,
}

impl Default for SeekConfig {
    fn default() -> Self {
        Self {
            pattern: SeekPattern::Sequential,
            block_size: 1024,
            reqsize_blocks: 1,
            num_reqs: 0,
            range_blocks: None,
            stagger_stride_blocks: None,
            seed: DEFAULT_SEED,
            interleave: 1,
            randomize: false,
            start_offset_blocks: 0,
            pass_offset_blocks: 0,
            target_offset_blocks: 0,
        }
    }
}

/// Why a seek configuration or seek list file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SeekError {
    /// A size that must be positive is zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// The random range cannot hold one request.
    #[error(
        "-seek range {range} blocks is smaller than -reqsize {reqsize} blocks; raise -seek range"
    )]
    RangeTooSmall {
        /// Range in blocks.
        range: u64,
        /// Request size in blocks.
        reqsize: u64,
    },
    /// Offsets overflow 64 bits.
    #[error(
        "offsets overflow 64 bits; lower -startoffset/-targetoffset/-passoffset or -seek range"
    )]
    Overflow,
    /// A seek list file is malformed.
    #[error("seek list line {line}: {why}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A seek list file holds no locations.
    #[error("seek list holds no locations")]
    Empty,
    /// A seek list file that is no regular file, or is too large.
    #[error("seek list {path}: {source}")]
    Input {
        /// The file.
        path: String,
        /// Why it was not read.
        source: iolab_core::input::InputError,
    },
    /// Reading or writing a seek list file failed.
    #[error("seek list {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: io::Error,
    },
}

/// Blocks from one staggered request to the next, as XDD 7 computes it:
/// `reqsize * interleave + gap`, where the gap is `stride - reqsize` when a
/// stride larger than a request was given, and otherwise
/// `(range - reqsize - num_reqs * reqsize) / (num_reqs - 1)`, which spreads
/// the requests over the range and leaves the last request ending one
/// request short of its end. Where that would be negative (a range too small
/// to hold the requests apart) XDD overlaps requests; iolab lays them out
/// back to back instead.
fn stagger_step(cfg: &SeekConfig, range_blocks: u64) -> u64 {
    let req = cfg.reqsize_blocks;
    let n = cfg.num_reqs;
    let gap = match cfg.stagger_stride_blocks {
        Some(stride) if stride > req => stride - req,
        _ if n > 1 => {
            range_blocks
                .saturating_sub(req)
                .saturating_sub(n.saturating_mul(req))
                / (n - 1)
        }
        _ => 0,
    };
    req.saturating_mul(cfg.interleave).saturating_add(gap)
}

/// A validated, per-target seek plan; cheap to clone and share.
#[derive(Debug, Clone)]
pub struct SeekPlan {
    cfg: SeekConfig,
    /// First block of pass 1 for this target.
    base_block: u64,
    range_blocks: u64,
    stride_blocks: u64,
    slots: u64,
}

/// The plan for one pass: computes request offsets without allocating.
#[derive(Debug, Clone)]
pub struct PassSeeks<'a> {
    plan: &'a SeekPlan,
    base_block: u64,
    key: u64,
    perm: Option<Feistel>,
}

impl SeekPlan {
    /// Validates `cfg` for target number `target` (0-based).
    pub fn new(cfg: &SeekConfig, target: u64) -> Result<Self, SeekError> {
        if cfg.block_size == 0 {
            return Err(SeekError::Zero("-blocksize"));
        }
        if cfg.reqsize_blocks == 0 {
            return Err(SeekError::Zero("-reqsize"));
        }
        if cfg.interleave == 0 {
            return Err(SeekError::Zero("-seek interleave"));
        }
        let implied = cfg.num_reqs.checked_mul(cfg.reqsize_blocks);
        let range_blocks = match cfg.range_blocks {
            Some(r) => r,
            None => implied.ok_or(SeekError::Overflow)?,
        };
        let slots = range_blocks / cfg.reqsize_blocks;
        if cfg.pattern == SeekPattern::Random && slots == 0 {
            return Err(SeekError::RangeTooSmall {
                range: range_blocks,
                reqsize: cfg.reqsize_blocks,
            });
        }
        let stride_blocks = match cfg.pattern {
            SeekPattern::Stagger => stagger_step(cfg, range_blocks),
            _ => cfg.reqsize_blocks.saturating_mul(cfg.interleave),
        };
        let base_block = target
            .checked_mul(cfg.target_offset_blocks)
            .and_then(|t| t.checked_add(cfg.start_offset_blocks))
            .ok_or(SeekError::Overflow)?;
        // The farthest byte any request of pass 1 can touch must fit in u64.
        let span = stride_blocks
            .checked_mul(cfg.num_reqs.max(1))
            .and_then(|s| s.max(range_blocks).checked_add(base_block))
            .and_then(|b| b.checked_mul(cfg.block_size));
        if span.is_none() {
            return Err(SeekError::Overflow);
        }
        // Loaded locations are absolute: each request must end at a file
        // offset ([`load_list`] says which line does not).
        if let SeekPattern::Loaded(list) = &cfg.pattern {
            let last = last_block(
                cfg.block_size,
                cfg.reqsize_blocks.saturating_mul(cfg.block_size),
            );
            if list.iter().any(|&b| b > last) {
                return Err(SeekError::Overflow);
            }
        }
        Ok(Self {
            cfg: cfg.clone(),
            base_block,
            range_blocks,
            stride_blocks,
            slots,
        })
    }

    /// The configuration this plan was built from.
    pub fn config(&self) -> &SeekConfig {
        &self.cfg
    }

    /// The range in blocks (explicit `-seek range` or the implied one).
    pub fn range_blocks(&self) -> u64 {
        self.range_blocks
    }

    /// Bytes per request.
    pub fn request_bytes(&self) -> u64 {
        self.cfg.reqsize_blocks * self.cfg.block_size
    }

    /// The per-pass view; `pass_number` is 1-based as in XDD reports
    /// (0 is treated as 1).
    pub fn pass(&self, pass_number: u32) -> PassSeeks<'_> {
        let p = u64::from(pass_number.max(1) - 1);
        let base_block = self
            .base_block
            .saturating_add(p.saturating_mul(self.cfg.pass_offset_blocks));
        let key = if self.cfg.randomize {
            mix(self.cfg.seed ^ mix(p.wrapping_add(0x5EED)))
        } else {
            self.cfg.seed
        };
        let shuffle = self.cfg.randomize && self.cfg.pattern != SeekPattern::Random;
        let perm = shuffle.then(|| Feistel::new(self.cfg.num_reqs, key));
        PassSeeks {
            plan: self,
            base_block,
            key,
            perm,
        }
    }
}

impl PassSeeks<'_> {
    /// Block location of request `req_index` (target-wide index).
    #[inline]
    pub fn block(&self, req_index: u64) -> u64 {
        let i = match &self.perm {
            Some(f) => f.apply(req_index),
            None => req_index,
        };
        let plan = self.plan;
        match &plan.cfg.pattern {
            SeekPattern::Sequential | SeekPattern::Stagger => {
                self.base_block + i.wrapping_mul(plan.stride_blocks)
            }
            SeekPattern::Random => {
                let slot = below(splitmix_nth(self.key, i), plan.slots);
                self.base_block + slot * plan.cfg.reqsize_blocks
            }
            SeekPattern::None => self.base_block,
            SeekPattern::Loaded(list) => list[(i % list.len() as u64) as usize],
        }
    }

    /// Byte offset of request `req_index` in the target.
    #[inline]
    pub fn offset(&self, req_index: u64) -> u64 {
        self.block(req_index) * self.plan.cfg.block_size
    }

    /// Writes this pass's seek list (`-seek save`) with every request
    /// marked as a read; [`PassSeeks::save_ops`] records the real mix.
    pub fn save<W: Write>(&self, w: W) -> io::Result<()> {
        self.save_ops(w, |_| true)
    }

    /// Writes this pass's seek list in XDD's layout (module doc);
    /// `is_read(n)` says whether request `n` reads.
    pub fn save_ops<W: Write>(&self, mut w: W, is_read: impl Fn(u64) -> bool) -> io::Result<()> {
        let c = &self.plan.cfg;
        let (longest, shortest, average) = self.distance_summary();
        writeln!(
            w,
            "# Longest seek={longest}, Shortest seek={shortest}, Average seek distance={average}"
        )?;
        writeln!(w, "#Ordinal Location Reqsize Operation Time1 Time2")?;
        for i in 0..c.num_reqs {
            let op = if is_read(i) { 'r' } else { 'w' };
            writeln!(
                w,
                "{i:010} {:012} {} {op} {:016} {:016}",
                self.block(i),
                c.reqsize_blocks,
                0,
                0
            )?;
        }
        w.flush()
    }

    /// (longest, shortest, average) distance in blocks between consecutive
    /// locations, as XDD's seek file header counts them: shortest starts at
    /// the range, the average divides by the number of requests.
    fn distance_summary(&self) -> (u64, u64, u64) {
        let n = self.plan.cfg.num_reqs;
        let (mut longest, mut shortest, mut total) = (0u64, self.plan.range_blocks(), 0u128);
        for i in 1..n {
            let d = self.block(i).abs_diff(self.block(i - 1));
            longest = longest.max(d);
            shortest = shortest.min(d);
            total += u128::from(d);
        }
        let average = if n == 0 {
            0
        } else {
            (total / u128::from(n)) as u64
        };
        (longest, shortest, average)
    }

    /// Histogram of seek distances (`-seek disthist N`), in blocks, in
    /// target order. A request's distance is how far it starts from where
    /// the previous one ended, so purely sequential I/O has distance 0.
    pub fn distance_histogram(&self, categories: usize) -> SeekHistogram {
        let req = self.plan.cfg.reqsize_blocks;
        let n = self.plan.cfg.num_reqs;
        let dist = |i: u64| self.block(i).abs_diff(self.block(i - 1) + req);
        let max = (1..n).map(dist).max().unwrap_or(0);
        SeekHistogram::build(categories, 0, max, (1..n).map(dist))
    }

    /// Histogram of seek locations (`-seek seekhist N`) in blocks.
    pub fn location_histogram(&self, categories: usize) -> SeekHistogram {
        let n = self.plan.cfg.num_reqs;
        let min = (0..n).map(|i| self.block(i)).min().unwrap_or(0);
        let max = (0..n).map(|i| self.block(i)).max().unwrap_or(0);
        SeekHistogram::build(categories, min, max, (0..n).map(|i| self.block(i)))
    }
}

/// A histogram over blocks, for the reporter to print.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SeekHistogram {
    /// Lowest value of bucket 0, in blocks.
    pub min_blocks: u64,
    /// Highest value seen, in blocks.
    pub max_blocks: u64,
    /// Width of each bucket in blocks (the last may hold `max` exactly).
    pub bucket_width_blocks: u64,
    /// Samples per bucket.
    pub counts: Vec<u64>,
}

impl SeekHistogram {
    fn build(categories: usize, min: u64, max: u64, values: impl Iterator<Item = u64>) -> Self {
        let categories = categories.max(1);
        let width = ((max - min) / categories as u64 + 1).max(1);
        let mut counts = vec![0u64; categories];
        for v in values {
            let b = (((v - min) / width) as usize).min(categories - 1);
            counts[b] += 1;
        }
        Self {
            min_blocks: min,
            max_blocks: max,
            bucket_width_blocks: width,
            counts,
        }
    }
}

/// The requests QThread `q` of `qd` issues: `q, q + qd, q + 2qd, ...` below
/// `num_reqs` (see the module doc for why round robin).
pub fn qthread_requests(num_reqs: u64, q: u64, qd: u64) -> impl Iterator<Item = u64> {
    (q..num_reqs).step_by(qd.max(1) as usize)
}

/// The most read from a seek list: XDD's `-seek save` lines for tens of
/// millions of requests; its offsets, 8 bytes each, are held in memory.
pub const MAX_SEEK_LIST_BYTES: u64 = 1 << 30;

/// The largest byte offset of a file (2^63 - 1): where no request may end.
pub const MAX_FILE_OFFSET: u64 = i64::MAX as u64;

/// The farthest block a loaded location may name: a request of
/// `request_bytes` there ends at [`MAX_FILE_OFFSET`] at most.
pub fn last_block(block_bytes: u64, request_bytes: u64) -> u64 {
    MAX_FILE_OFFSET.saturating_sub(request_bytes) / block_bytes.max(1)
}

/// Reads a seek list (`-seek load`): a regular file (a FIFO or a device
/// would hold the run before it starts) of at most
/// [`MAX_SEEK_LIST_BYTES`] whose locations are at most block
/// `max_block` ([`last_block`]); the result goes in
/// [`SeekPattern::Loaded`].
pub fn load_list(path: &Path, max_block: u64) -> Result<Arc<[u64]>, SeekError> {
    let input_err = |source| SeekError::Input {
        path: path.display().to_string(),
        source,
    };
    let f = iolab_core::input::open_bounded(path, MAX_SEEK_LIST_BYTES).map_err(input_err)?;
    parse_list(io::BufReader::new(f), max_block).map_err(|e| match e {
        SeekError::Io { source, .. } => input_err(iolab_core::input::from_io(source)),
        other => other,
    })
}

/// Parses a seek list from any reader (see [`load_list`]); a location
/// past `max_block` is refused with its line, as its request would end
/// past the largest file offset.
pub fn parse_list<R: BufRead>(r: R, max_block: u64) -> Result<Arc<[u64]>, SeekError> {
    let mut out = Vec::new();
    for (n, line) in r.lines().enumerate() {
        let line = line.map_err(|source| SeekError::Io {
            path: String::new(),
            source,
        })?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let bad = |why: &str| SeekError::Parse {
            line: n + 1,
            why: why.to_string(),
        };
        let mut cols = t.split_whitespace();
        let idx: u64 = cols
            .next()
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| bad("index is not a number"))?;
        let block: u64 = cols
            .next()
            .ok_or_else(|| bad("missing block location"))?
            .parse()
            .map_err(|_| bad("block location is not a number"))?;
        if idx != out.len() as u64 {
            return Err(bad(&format!("expected index {}, found {idx}", out.len())));
        }
        if block > max_block {
            return Err(bad(&format!(
                "block {block}: a request there ends past the largest file offset (2^63 - 1 bytes); the last block a request of this size may start at is {max_block}"
            )));
        }
        out.push(block);
    }
    if out.is_empty() {
        return Err(SeekError::Empty);
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pattern: SeekPattern, num_reqs: u64) -> SeekConfig {
        SeekConfig {
            pattern,
            reqsize_blocks: 8,
            num_reqs,
            ..SeekConfig::default()
        }
    }

    fn blocks(p: &PassSeeks<'_>, n: u64) -> Vec<u64> {
        (0..n).map(|i| p.block(i)).collect()
    }

    #[test]
    fn sequential_default_steps_by_reqsize() {
        let plan = SeekPlan::new(&cfg(SeekPattern::Sequential, 4), 0).unwrap();
        assert_eq!(blocks(&plan.pass(1), 4), [0, 8, 16, 24]);
        assert_eq!(plan.pass(1).offset(3), 24 * 1024);
        assert_eq!(plan.range_blocks(), 32);
    }

    #[test]
    fn offsets_follow_the_guide() {
        // Guide 4.8: targetoffset 1024 on 4 targets starts them at blocks
        // 0, 1024, 2048, 3072; passoffset moves each later pass further in.
        let c = SeekConfig {
            target_offset_blocks: 1024,
            start_offset_blocks: 10,
            pass_offset_blocks: 100,
            ..cfg(SeekPattern::Sequential, 2)
        };
        for t in 0..4 {
            let plan = SeekPlan::new(&c, t).unwrap();
            assert_eq!(plan.pass(1).block(0), 10 + 1024 * t);
            assert_eq!(plan.pass(3).block(1), 10 + 1024 * t + 200 + 8);
        }
    }

    #[test]
    fn interleave_leaves_gaps_for_other_streams() {
        let c = SeekConfig {
            interleave: 3,
            ..cfg(SeekPattern::Sequential, 3)
        };
        assert_eq!(
            blocks(&SeekPlan::new(&c, 0).unwrap().pass(1), 3),
            [0, 24, 48]
        );
    }

    #[test]
    fn stagger_spreads_over_range() {
        // 256 requests of 8 blocks spread over 8x their size: every 8th slot.
        let c = SeekConfig {
            range_blocks: Some(256 * 8 * 8),
            ..cfg(SeekPattern::Stagger, 256)
        };
        let plan = SeekPlan::new(&c, 0).unwrap();
        assert_eq!(blocks(&plan.pass(1), 3), [0, 64, 128]);
        assert!(plan.pass(1).block(255) + 8 <= 256 * 64);
    }

    #[test]
    fn none_repeats_first_block() {
        let c = SeekConfig {
            start_offset_blocks: 5,
            ..cfg(SeekPattern::None, 3)
        };
        assert_eq!(blocks(&SeekPlan::new(&c, 0).unwrap().pass(1), 3), [5, 5, 5]);
    }

    #[test]
    fn random_is_reproducible_aligned_and_in_range() {
        let c = SeekConfig {
            range_blocks: Some(4_000_000),
            ..cfg(SeekPattern::Random, 2048)
        };
        let a = SeekPlan::new(&c, 0).unwrap();
        let b = SeekPlan::new(&c, 0).unwrap();
        assert_eq!(blocks(&a.pass(1), 2048), blocks(&b.pass(1), 2048));
        // Without -randomize every pass repeats the list (guide 4.9).
        assert_eq!(blocks(&a.pass(1), 64), blocks(&a.pass(2), 64));
        for blk in blocks(&a.pass(1), 2048) {
            assert_eq!(blk % 8, 0);
            assert!(blk + 8 <= 4_000_000);
        }
        let distinct: std::collections::HashSet<_> = blocks(&a.pass(1), 2048).into_iter().collect();
        assert!(distinct.len() > 2000, "{}", distinct.len());
    }

    #[test]
    fn random_seed_changes_list() {
        let c = SeekConfig {
            range_blocks: Some(1 << 30),
            ..cfg(SeekPattern::Random, 16)
        };
        let d = SeekConfig {
            seed: 7,
            ..c.clone()
        };
        let a = blocks(&SeekPlan::new(&c, 0).unwrap().pass(1), 16);
        let b = blocks(&SeekPlan::new(&d, 0).unwrap().pass(1), 16);
        assert_ne!(a, b);
    }

    #[test]
    fn random_covers_the_range_evenly() {
        let c = SeekConfig {
            range_blocks: Some(8 * 10),
            ..cfg(SeekPattern::Random, 10_000)
        };
        let plan = SeekPlan::new(&c, 0).unwrap();
        let h = plan.pass(1).location_histogram(10);
        assert_eq!(h.counts.iter().sum::<u64>(), 10_000);
        assert!(
            h.counts.iter().all(|&n| (800..1200).contains(&n)),
            "{:?}",
            h.counts
        );
    }

    #[test]
    fn randomize_is_a_permutation_per_pass() {
        for n in [1u64, 2, 3, 5, 17, 1000, 4097] {
            let c = SeekConfig {
                randomize: true,
                ..cfg(SeekPattern::Sequential, n)
            };
            let plan = SeekPlan::new(&c, 0).unwrap();
            let mut p1 = blocks(&plan.pass(1), n);
            let p2 = blocks(&plan.pass(2), n);
            if n >= 17 {
                assert_ne!(p1, p2, "passes must differ");
                assert_ne!(p1, (0..n).map(|i| i * 8).collect::<Vec<_>>());
            }
            p1.sort_unstable();
            assert_eq!(p1, (0..n).map(|i| i * 8).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn randomize_random_changes_each_pass() {
        let c = SeekConfig {
            randomize: true,
            range_blocks: Some(1 << 30),
            ..cfg(SeekPattern::Random, 32)
        };
        let plan = SeekPlan::new(&c, 0).unwrap();
        assert_ne!(blocks(&plan.pass(1), 32), blocks(&plan.pass(2), 32));
        assert_eq!(blocks(&plan.pass(2), 32), blocks(&plan.pass(2), 32));
    }

    #[test]
    fn qthreads_split_round_robin() {
        let q1: Vec<u64> = qthread_requests(10, 1, 4).collect();
        assert_eq!(q1, [1, 5, 9]);
        let mut all: Vec<u64> = (0..4).flat_map(|q| qthread_requests(10, q, 4)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
    }

    /// XDD's layout, line for line (its xdd_save_seek_list format).
    #[test]
    fn save_writes_xdds_layout_and_name() {
        let plan = SeekPlan::new(&cfg(SeekPattern::Sequential, 3), 0).unwrap();
        let mut text = Vec::new();
        plan.pass(1).save_ops(&mut text, |n| n != 1).unwrap();
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "# Longest seek=8, Shortest seek=8, Average seek distance=5",
                "#Ordinal Location Reqsize Operation Time1 Time2",
                "0000000000 000000000000 8 r 0000000000000000 0000000000000000",
                "0000000001 000000000008 8 w 0000000000000000 0000000000000000",
                "0000000002 000000000016 8 r 0000000000000000 0000000000000000",
            ]
        );
        assert_eq!(
            &parse_list(text.as_bytes(), u64::MAX).unwrap()[..],
            [0, 8, 16]
        );
        assert_eq!(save_file_name("seeks", 3), "seeks.T3.txt");
    }

    #[test]
    fn save_then_load_round_trips() {
        let c = SeekConfig {
            range_blocks: Some(1 << 20),
            ..cfg(SeekPattern::Random, 50)
        };
        let plan = SeekPlan::new(&c, 0).unwrap();
        let mut text = Vec::new();
        plan.pass(1).save(&mut text).unwrap();
        let head = String::from_utf8_lossy(&text[..120]).into_owned();
        assert!(head.starts_with("# Longest seek="), "{head}");
        assert!(head.contains("\n#Ordinal Location Reqsize Operation Time1 Time2\n"));
        let list = parse_list(&text[..], u64::MAX).unwrap();
        let loaded = SeekConfig {
            pattern: SeekPattern::Loaded(list),
            start_offset_blocks: 999, // not added again: locations are absolute
            ..cfg(SeekPattern::Sequential, 50)
        };
        let lp = SeekPlan::new(&loaded, 0).unwrap();
        assert_eq!(blocks(&lp.pass(1), 50), blocks(&plan.pass(1), 50));
        assert_eq!(
            lp.pass(1).block(50),
            plan.pass(1).block(0),
            "short lists wrap"
        );
    }

    #[test]
    fn loaded_locations_end_at_a_file_offset() {
        // 8 KiB requests of 1 KiB blocks: the last that fits ends at
        // 2^63 - 1 or just before.
        let last = last_block(1024, 8192);
        assert!(last * 1024 + 8192 <= MAX_FILE_OFFSET);
        assert!((last + 1) * 1024 + 8192 > MAX_FILE_OFFSET);
        let text = format!("0 0\n# gap\n1 {last}\n2 {}\n", last + 1);
        let e = parse_list(text.as_bytes(), last).unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("2^63 - 1"), "{e}");
        let list = parse_list(text.as_bytes(), u64::MAX).unwrap();
        let loaded = SeekConfig {
            pattern: SeekPattern::Loaded(list),
            ..cfg(SeekPattern::Sequential, 3)
        };
        assert!(matches!(
            SeekPlan::new(&loaded, 0),
            Err(SeekError::Overflow)
        ));
    }

    #[test]
    fn load_file_and_errors() {
        let dir = std::env::temp_dir().join(format!("iolab-seek-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("list.txt");
        std::fs::write(&p, "# c\n0 16 8 r\n\n1 32\n").unwrap();
        assert_eq!(&*load_list(&p, u64::MAX).unwrap(), &[16, 32]);
        std::fs::write(&p, "0 16\n2 32\n").unwrap();
        let e = load_list(&p, u64::MAX).unwrap_err().to_string();
        assert!(
            e.contains("line 2") && e.contains("expected index 1"),
            "{e}"
        );
        std::fs::write(&p, "# only\n").unwrap();
        assert!(matches!(load_list(&p, u64::MAX), Err(SeekError::Empty)));
        let missing = load_list(&dir.join("nope"), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("nope"), "{missing}");
        let e = load_list(Path::new("/dev/zero"), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a character device, not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn distance_histogram_sequential_is_zero() {
        let plan = SeekPlan::new(&cfg(SeekPattern::Sequential, 100), 0).unwrap();
        let h = plan.pass(1).distance_histogram(4);
        assert_eq!(h.counts, [99, 0, 0, 0]);
        assert_eq!(h.max_blocks, 0);
        let st = SeekConfig {
            range_blocks: Some(100 * 32),
            ..cfg(SeekPattern::Stagger, 100)
        };
        let h = SeekPlan::new(&st, 0).unwrap().pass(1).distance_histogram(4);
        assert_eq!(h.max_blocks, 24); // gap of 32 - 8 blocks between requests
        assert_eq!(h.counts[3], 99);
    }

    #[test]
    fn bad_configs_name_the_option() {
        let e = SeekPlan::new(&cfg(SeekPattern::Random, 0), 0).unwrap_err();
        assert!(e.to_string().contains("-seek range"), "{e}");
        let z = SeekConfig {
            reqsize_blocks: 0,
            ..cfg(SeekPattern::Sequential, 1)
        };
        assert!(SeekPlan::new(&z, 0)
            .unwrap_err()
            .to_string()
            .contains("-reqsize"));
        let o = SeekConfig {
            start_offset_blocks: u64::MAX / 2,
            ..cfg(SeekPattern::Sequential, 1)
        };
        assert!(matches!(SeekPlan::new(&o, 0), Err(SeekError::Overflow)));
    }

    #[test]
    fn large_counts_need_no_list() {
        let c = SeekConfig {
            randomize: true,
            ..cfg(SeekPattern::Sequential, 100_000_000)
        };
        let plan = SeekPlan::new(&c, 0).unwrap();
        let p = plan.pass(1);
        let b = p.block(99_999_999);
        assert!(b < 800_000_000 && (b & 7) == 0);
    }
}
