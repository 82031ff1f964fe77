//! What a collector records: samples of named rows, each with counters
//! (monotonic, turned into rates by the analysis) and gauges (levels,
//! reported as they are).

use crate::config::Stat;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One row of a statistic: a device, an interface, a CPU, a Lustre
/// target and counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What the row is about (`loop3`, `eth0`, `cpu1`, `OST0000/ost_write`).
    pub series: String,
    /// Values that only grow (until a reset); the analysis differences them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Values that are levels (free memory, requests in flight).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gauges: BTreeMap<String, f64>,
}

impl Row {
    /// An empty row for `series`.
    pub fn new(series: impl Into<String>) -> Row {
        Row {
            series: series.into(),
            ..Row::default()
        }
    }

    /// Adds a counter (builder style).
    pub fn counter(mut self, name: &str, value: u64) -> Row {
        self.counters.insert(name.to_string(), value);
        self
    }

    /// Adds a gauge (builder style).
    pub fn gauge(mut self, name: &str, value: f64) -> Row {
        self.gauges.insert(name.to_string(), value);
        self
    }
}

/// Every row of one statistic at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Wall clock, Unix nanoseconds (to line samples up with a benchmark's).
    pub unix_ns: u64,
    /// Monotonic clock, nanoseconds (the interval lengths come from it).
    pub mono_ns: u64,
    /// The rows.
    pub rows: Vec<Row>,
}

/// What one statistic gave on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Series {
    /// Samples in time order: the first at start, the last at stop.
    Samples(Vec<Sample>),
    /// The statistic does not exist here (no Lustre): why.
    Absent(String),
}

/// Everything one node's collector recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSamples {
    /// The node's name as the config lists it (the host name when local).
    pub node: String,
    /// Per statistic.
    pub stats: BTreeMap<Stat, Series>,
    /// Notes: a statistic that failed part way, a collector that was
    /// killed before its stop sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
