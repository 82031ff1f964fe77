//! The rows of a live stream: one per interval and phase (and per host
//! or rank under MPI and across hosts), and the header that ties the
//! stream to its results document.

use serde::{Deserialize, Serialize};

/// The schema of the live stream, in the results' document family
/// (`iolab.<tool>/<n>` for results, `iolab.live/<n>` for the stream).
pub const SCHEMA: &str = "iolab.live/1";

/// The first record of a stream: which run it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`SCHEMA`].
    pub schema: String,
    /// The results envelope's version ([`iolab_results`'s
    /// `ENVELOPE_VERSION`] as the binary passes it).
    pub envelope: u32,
    /// The run id the results document carries (`run_id`).
    pub run_id: String,
    /// The tool (`mdtest`, `xdd`).
    pub tool: String,
    /// The sampling interval, in seconds.
    pub interval_s: f64,
    /// Wall-clock time of `t = 0`, Unix nanoseconds.
    pub started_unix_ns: u64,
}

/// Latency percentiles of the operations finished in one interval, with
/// the keys of the results' latency object. Every figure is the middle of
/// the histogram bucket that holds it (within 0.8 % of the value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Operations timed in the interval.
    pub count: u64,
    /// Mean in ns.
    pub mean_ns: f64,
    /// Median in ns.
    pub p50_ns: u64,
    /// 90th percentile in ns.
    pub p90_ns: u64,
    /// 99th percentile in ns.
    pub p99_ns: u64,
    /// 99.9th percentile in ns.
    pub p999_ns: u64,
    /// Largest in ns (the top of the highest bucket, not above the run's
    /// exact maximum).
    pub max_ns: u64,
}

/// One interval of one phase: for one host or rank when `host`/`rank`
/// are set, for the whole run (every rank and host merged) when not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// End of the interval, seconds since the run's start.
    pub t: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub interval_s: f64,
    /// The phase or op type, as the tool's results JSON names it.
    pub phase: String,
    /// The host of a per-host row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The rank of a per-rank row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// Operations finished in the interval.
    pub ops: u64,
    /// Bytes moved by them.
    pub bytes: u64,
    /// Operations that failed in the interval.
    pub errors: u64,
    /// Operations finished since the start.
    pub ops_total: u64,
    /// Bytes moved since the start.
    pub bytes_total: u64,
    /// Failed operations since the start.
    pub errors_total: u64,
    /// `ops / interval_s`.
    pub ops_per_sec: f64,
    /// `bytes / interval_s`.
    pub bytes_per_sec: f64,
    /// Latency of the interval's timed operations (`null` when none was
    /// timed).
    pub latency: Option<Latency>,
    /// On an aggregate row: the ranks whose report of the interval had
    /// not come when the row was written (it holds the others' figures
    /// only); absent when every rank's is in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u64>,
    /// True on the last row of each phase and source, written when the
    /// run ended (normally, interrupted or failed).
    #[serde(default)]
    pub last: bool,
}

impl Row {
    /// Whether this is an aggregate row (no host, no rank).
    pub fn is_aggregate(&self) -> bool {
        self.host.is_none() && self.rank.is_none()
    }
}

/// One record of a stream as a reader meets it.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// The first line.
    Header(Header),
    /// Every other line.
    Row(Row),
}
