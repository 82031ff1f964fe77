//! What one test of the object survey is, wherever it runs: its shape
//! and each target's share of the result. Shared by the local workers
//! (`obdfilter`), the agents on other hosts (`remote`) and the network
//! cases (`echo`), so that none of them depends on another for its types.

use crate::sampler::TargetRates;
use serde::{Deserialize, Serialize};

/// The shape of one test on one target: record size, records per thread,
/// threads, threads per object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Record size, bytes.
    pub rsz_bytes: u64,
    /// Records per thread.
    pub count: u64,
    /// Threads per target.
    pub thr: u64,
    /// Threads per object.
    pub per_obj: u64,
}

/// One target's share of a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    /// The target directory.
    pub target: String,
    /// Bytes, elapsed time and per-interval bytes/s.
    pub rates: TargetRates,
    /// O_DIRECT was used by every worker.
    pub direct: bool,
    /// The first error, if any.
    pub error: Option<String>,
}
