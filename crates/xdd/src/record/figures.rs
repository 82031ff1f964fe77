//! The figures every report shows, computed once from counts: the table,
//! the JSON document and the heartbeat all read them from here, so a
//! bandwidth cannot differ between two outputs of one run.

use crate::record::results::Counts;
use iolab_core::stats::Percentiles;
use serde::{Deserialize, Serialize};

/// `v` per second over `elapsed_s` (0 when no time passed).
#[inline]
pub fn per_second(v: u64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        v as f64 / elapsed_s
    } else {
        0.0
    }
}

/// CPU time of the QThreads over a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// User time, s.
    pub user_s: f64,
    /// System time, s.
    pub system_s: f64,
    /// CPU time over elapsed time, percent of one CPU.
    pub percent: f64,
    /// CPU microseconds per operation.
    pub us_per_op: f64,
}

/// -verify results over a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyFigures {
    /// Reads whose data was wrong.
    pub failed_ops: u64,
    /// Bad words (location) or bytes (contents).
    pub bad_units: u64,
    /// Lowest offset of bad data.
    pub first_bad_offset: Option<u64>,
}

/// What a span (QThread pass, target pass, target total, run) did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Operations completed.
    pub ops: u64,
    /// Reads completed.
    pub read_ops: u64,
    /// Writes completed.
    pub write_ops: u64,
    /// Elapsed time, s.
    pub elapsed_s: f64,
    /// Bandwidth in 10^6 bytes per second.
    pub bandwidth_mb_per_s: f64,
    /// Read bandwidth in 10^6 bytes per second.
    pub read_bandwidth_mb_per_s: f64,
    /// Write bandwidth in 10^6 bytes per second.
    pub write_bandwidth_mb_per_s: f64,
    /// Operations per second.
    pub iops: f64,
    /// Reads per second.
    pub read_iops: f64,
    /// Writes per second.
    pub write_iops: f64,
    /// Service time percentiles, ns.
    pub latency_ns: Percentiles,
    /// Time to the first completion, s.
    pub first_op_s: f64,
    /// CPU cost.
    pub cpu: CpuFigures,
    /// Time filling write buffers, s.
    pub pattern_fill_s: f64,
    /// Time in fsync/fdatasync, s.
    pub flush_s: f64,
    /// Failed or short operations.
    pub errors: u64,
    /// -verify results.
    pub verify: VerifyFigures,
    /// End-to-end figures, on an end-to-end span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e: Option<crate::e2e::counts::E2eFigures>,
}

impl Figures {
    /// The figures of `c`.
    pub fn of(c: &Counts) -> Self {
        let secs = c.elapsed_ns as f64 / 1e9;
        let cpu_ns = c.cpu_user_ns + c.cpu_sys_ns;
        Self {
            bytes: c.bytes(),
            read_bytes: c.read_bytes,
            write_bytes: c.write_bytes,
            ops: c.ops(),
            read_ops: c.read_ops,
            write_ops: c.write_ops,
            elapsed_s: secs,
            bandwidth_mb_per_s: per_second(c.bytes(), secs) / 1e6,
            read_bandwidth_mb_per_s: per_second(c.read_bytes, secs) / 1e6,
            write_bandwidth_mb_per_s: per_second(c.write_bytes, secs) / 1e6,
            iops: per_second(c.ops(), secs),
            read_iops: per_second(c.read_ops, secs),
            write_iops: per_second(c.write_ops, secs),
            latency_ns: c.latency.percentiles(),
            first_op_s: c.first_op_ns as f64 / 1e9,
            cpu: CpuFigures {
                user_s: c.cpu_user_ns as f64 / 1e9,
                system_s: c.cpu_sys_ns as f64 / 1e9,
                percent: if c.elapsed_ns > 0 {
                    cpu_ns as f64 * 100.0 / c.elapsed_ns as f64
                } else {
                    0.0
                },
                us_per_op: cpu_ns as f64 / 1e3 / c.ops().max(1) as f64,
            },
            pattern_fill_s: c.pattern_fill_ns as f64 / 1e9,
            flush_s: c.flush_ns as f64 / 1e9,
            errors: c.errors,
            verify: VerifyFigures {
                failed_ops: c.verify_failed_ops,
                bad_units: c.verify_bad_units,
                first_bad_offset: c.first_bad_offset,
            },
            e2e: crate::e2e::counts::E2eFigures::of(&c.e2e, c.elapsed_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_from_counts() {
        let c = Counts {
            read_bytes: 4_000_000,
            read_ops: 4,
            elapsed_ns: 2_000_000_000,
            cpu_user_ns: 4_000,
            ..Default::default()
        };
        let f = Figures::of(&c);
        assert_eq!((f.bandwidth_mb_per_s, f.iops, f.read_iops), (2.0, 2.0, 2.0));
        assert_eq!(f.cpu.us_per_op, 1.0);
        assert_eq!(per_second(5, 0.0), 0.0);
    }
}
