//! Plain value types that options produce: what an operation is, how a
//! target is throttled, which pattern fills the buffer, and so on. They
//! carry no behaviour beyond parsing their own keywords, so the option
//! table, the validated config and the report all share them.

use serde::{Deserialize, Serialize};

/// The operation a target performs (`-op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read from the target.
    #[default]
    Read,
    /// Write to the target.
    Write,
    /// Do everything except the transfer itself (measures the tool).
    Noop,
}

/// What a rate limit counts (`-throttle ops|bw`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThrottleKind {
    /// Operations per second.
    Ops,
    /// 10^6 bytes per second.
    Bw,
}

/// A rate limit for one target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThrottleSpec {
    /// What the rate counts.
    pub kind: ThrottleKind,
    /// Operations per second or 10^6 bytes per second; always > 0.
    pub rate: f64,
    /// `-throttle var P`: jitter of each due time, percent of the interval.
    pub variance_pct: f64,
}

/// The access pattern (`-seek ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SeekPattern {
    /// Consecutive requests from the start of the range.
    #[default]
    Sequential,
    /// Uniformly random request-aligned locations within the range.
    Random,
    /// Sequential with equal gaps so the requests span the whole range.
    Stagger,
    /// Every request at the first block of the range.
    None,
}

/// Every `-seek` setting of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeekOpts {
    /// The access pattern.
    pub pattern: SeekPattern,
    /// Range in blocks (`-seek range`); None means implied by the amount.
    pub range_blocks: Option<u64>,
    /// Stride in blocks given after `-seek stagger` (later XDD's
    /// `seek_stride`); None when stagger came alone.
    pub stagger_stride_blocks: Option<u64>,
    /// Seed of the random generator (`-seek seed`).
    pub seed: u64,
    /// Interleave factor (`-seek interleave`), 1 when not given.
    pub interleave: u64,
    /// Save the locations to this file (`-seek save`).
    pub save: Option<String>,
    /// Load the locations from this file (`-seek load`).
    pub load: Option<String>,
    /// Buckets of the seek-distance histogram (`-seek disthist`).
    pub disthist: Option<u32>,
    /// Buckets of the seek-location histogram (`-seek seekhist`).
    pub seekhist: Option<u32>,
}

impl Default for SeekOpts {
    fn default() -> Self {
        Self {
            pattern: SeekPattern::Sequential,
            range_blocks: None,
            stagger_stride_blocks: None,
            // XDD's historical default seed, so `-seek random` without a
            // seed is reproducible from run to run.
            seed: 72058,
            interleave: 1,
            save: None,
            load: None,
            disthist: None,
            seekhist: None,
        }
    }
}

/// Every `-datapattern` option of one target, as words in command-line
/// order; the data-path module (`datapat`) gives them meaning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PatternOpts {
    /// One entry per option: the keyword and its argument, if any.
    pub words: Vec<Vec<String>>,
}

impl PatternOpts {
    /// The pattern the words build (each was checked when parsed); a
    /// modifier the pattern they make does not use is an error, as it
    /// would be dropped without a word.
    pub fn build(
        &self,
    ) -> Result<crate::plan::datapat::DataPattern, crate::plan::datapat::PatternError> {
        let mut dp = crate::plan::datapat::DataPattern::default();
        let options: Vec<Vec<&str>> = self
            .words
            .iter()
            .map(|w| w.iter().map(String::as_str).collect())
            .collect();
        for refs in &options {
            dp.apply_words(refs)?;
        }
        for refs in &options {
            dp.check_modifier(refs)?;
        }
        Ok(dp)
    }

    /// True when the words end up with the `sequenced` pattern.
    pub fn is_sequenced(&self) -> bool {
        self.build()
            .is_ok_and(|p| p.kind == crate::plan::datapat::PatternKind::Sequenced)
    }

    /// What the data is, for the preamble: the words as typed, then what
    /// they make (the default makes unique incompressible blocks).
    pub fn describe(&self) -> String {
        let made = self
            .build()
            .map_or_else(|e| e.to_string(), |p| p.describe());
        if self.words.is_empty() {
            return format!("default: {made}");
        }
        let typed: Vec<String> = self.words.iter().map(|w| w.join(" ")).collect();
        format!("{}: {made}", typed.join(", "))
    }
}

/// What `-verify` checks after each read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyKind {
    /// The sequenced words name the offset that was read.
    Location,
    /// The bytes equal the data pattern.
    Contents,
}

/// How QThreads of one target order their operations (section 5.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Ordering {
    /// Op N+1 is issued after op N completes.
    Serial,
    /// Op N+1 is issued after op N is issued.
    Loose,
    /// No coordination.
    #[default]
    None,
}

/// The I/O engine of one target (`-engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// One blocking pread/pwrite per QThread (XDD's model).
    #[default]
    Qthreads,
    /// io_uring with the queue depth as ring depth.
    Uring,
}

/// Which figures a heartbeat line shows (`-heartbeat`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HeartbeatOpts {
    /// Seconds between lines; 0 means no heartbeat.
    pub interval_s: f64,
    /// Completed operations.
    pub ops: bool,
    /// Bytes transferred.
    pub bytes: bool,
    /// 10^3 bytes transferred.
    pub kbytes: bool,
    /// 10^6 bytes transferred.
    pub mbytes: bool,
    /// 10^9 bytes transferred.
    pub gbytes: bool,
    /// 10^6 bytes per second.
    pub bw: bool,
    /// Operations per second.
    pub iops: bool,
    /// Percent of the pass done.
    pub pct: bool,
    /// Estimated seconds to completion.
    pub etc: bool,
    /// Prefix the host name.
    pub hostname: bool,
    /// Prefix each group with the target number.
    pub target: bool,
    /// Prefix the time of day.
    pub tod: bool,
    /// Prefix the seconds since the run started.
    pub elapsed: bool,
    /// End each line with a line feed instead of a carriage return.
    pub lf: bool,
    /// Write to PREFIX.T####.csv per target instead of stderr.
    pub output: Option<String>,
    /// Targets shown; empty means all (`-heartbeat target N ...`).
    pub only_targets: Vec<usize>,
}

/// Every `-timestamps` setting of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TimestampOpts {
    /// Time stamping is on.
    pub enabled: bool,
    /// Write the summary report.
    pub summary: bool,
    /// Write the detailed per-operation report.
    pub detailed: bool,
    /// ASCII report file prefix.
    pub output: Option<String>,
    /// Binary dump file prefix.
    pub dump: Option<String>,
    /// Wrap when the buffer is full.
    pub wrap: bool,
    /// Stop stamping when the buffer is full.
    pub oneshot: bool,
    /// Buffer size in entries.
    pub size: Option<u64>,
    /// Start stamping this many seconds into the run.
    pub trigger_time_s: Option<f64>,
    /// Start stamping at this operation number.
    pub trigger_op: Option<u64>,
    /// Append to the report file instead of replacing it.
    pub append: bool,
    /// Normalize to the global clock (no effect on one host).
    pub normalize: bool,
}

/// A progress measure of a lockstep or trigger condition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "unit", content = "value")]
pub enum Measure {
    /// Seconds since the pass started.
    Time(f64),
    /// Operations completed.
    Op(u64),
    /// Percent of the pass's operations completed.
    Percent(f64),
    /// 2^20 bytes transferred.
    Mbytes(u64),
    /// 2^10 bytes transferred.
    Kbytes(u64),
}

/// One `-lockstep` relation between a master and a slave target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LockstepSpec {
    /// Target that paces.
    pub master: usize,
    /// Target that is paced.
    pub slave: usize,
    /// How often the master releases the slave.
    pub when: Measure,
    /// How much the slave does per release.
    pub what: Measure,
    /// The slave starts with one task without waiting (`run`).
    pub startup_run: bool,
    /// When the master ends first, the slave finishes its work (`complete`)
    /// rather than stopping.
    pub complete: bool,
}

/// One `-starttrigger` or `-stoptrigger`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TriggerSpec {
    /// Target whose progress is watched.
    pub from: usize,
    /// Target started (or stopped) when the condition holds.
    pub to: usize,
    /// The condition.
    pub when: Measure,
}

/// `-roundrobin` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoundRobin {
    /// Over the first N processors.
    Count(usize),
    /// Over every online processor.
    All,
}

/// `-outputformat new|add` and its tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct OutputFormat {
    /// Replace the default columns instead of appending to them.
    pub replace: bool,
    /// Column tokens without the leading `+`, upper case.
    pub tokens: Vec<String>,
}
