//! What an end-to-end QThread measures besides the usual counts, and the
//! E2E figures of guide section 8.2 computed from them. Every time is
//! taken around the calls themselves (`mono_ns` before and after), so
//! each figure says where its seconds went:
//!
//! - send/receive (S/R): inside `send` (source) or `recv` of a data frame
//!   (destination), the wait for the peer included;
//! - storage: the read of the source target or the write of the
//!   destination target;
//! - lag: from the pass start until the first data frame left (source)
//!   or arrived (destination), the earliest QThread's;
//! - first read, last write: from the pass start until the first read
//!   completed (source: storage; destination: network) and the last
//!   write completed (destination: storage; source: network).

use serde::{Deserialize, Serialize};

/// Counters of one QThread (or a merge of several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct E2eCounts {
    /// QThread passes merged in (0: not an end-to-end span).
    pub qthreads: u64,
    /// Time in network sends or receives of data, ns.
    pub sr_ns: u64,
    /// Time in storage reads (source) or writes (destination), ns.
    pub storage_ns: u64,
    /// The QThreads' elapsed times added up, ns.
    pub elapsed_sum_ns: u64,
    /// Pass start to the first data frame, ns (0: none).
    pub lag_ns: u64,
    /// Pass start to the first completed read, ns (0: none).
    pub first_read_ns: u64,
    /// Pass start to the last completed write, ns.
    pub last_write_ns: u64,
    /// Data frames sent or received.
    pub frames: u64,
    /// Frames whose checksum did not match (data damaged in transit).
    pub checksum_errors: u64,
}

fn min_set(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (x, y) => x.min(y),
    }
}

impl E2eCounts {
    /// Adds `o`: sums, the earliest first times, the latest last time.
    pub fn merge(&mut self, o: &E2eCounts) {
        self.qthreads += o.qthreads;
        self.sr_ns += o.sr_ns;
        self.storage_ns += o.storage_ns;
        self.elapsed_sum_ns += o.elapsed_sum_ns;
        self.lag_ns = min_set(self.lag_ns, o.lag_ns);
        self.first_read_ns = min_set(self.first_read_ns, o.first_read_ns);
        self.last_write_ns = self.last_write_ns.max(o.last_write_ns);
        self.frames += o.frames;
        self.checksum_errors += o.checksum_errors;
    }
}

/// The E2E figures of a span (guide 8.2's +E2E tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct E2eFigures {
    /// +E2EIOTIME: storage plus network time, mean per QThread, s.
    pub io_s: f64,
    /// +E2ESRTIME: network send/receive time, mean per QThread, s.
    pub sr_s: f64,
    /// +E2EPERCENTSRTIME: send/receive time over the QThreads' elapsed
    /// time, percent (the figure XDD prints at the end of each line).
    pub sr_percent: f64,
    /// +E2ELAGTIME: pass start to the first data frame, ms.
    pub lag_ms: f64,
    /// +E2EPERCENTLAGTIME: lag over the span's elapsed time, percent.
    pub lag_percent: f64,
    /// +E2EFIRSTREADTIME: pass start to the first completed read, ms.
    pub first_read_ms: f64,
    /// +E2ELASTWRITETIME: pass start to the last completed write, ms.
    pub last_write_ms: f64,
    /// Data frames moved.
    pub frames: u64,
    /// Frames that failed their checksum.
    pub checksum_errors: u64,
}

impl E2eFigures {
    /// The figures of `e` over a span of `elapsed_ns`; None when the
    /// span was not end-to-end.
    pub fn of(e: &E2eCounts, elapsed_ns: u64) -> Option<E2eFigures> {
        if e.qthreads == 0 {
            return None;
        }
        let q = e.qthreads as f64;
        let pct = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                part as f64 * 100.0 / whole as f64
            }
        };
        Some(E2eFigures {
            io_s: (e.sr_ns + e.storage_ns) as f64 / q / 1e9,
            sr_s: e.sr_ns as f64 / q / 1e9,
            sr_percent: pct(e.sr_ns, e.elapsed_sum_ns),
            lag_ms: e.lag_ns as f64 / 1e6,
            lag_percent: pct(e.lag_ns, elapsed_ns),
            first_read_ms: e.first_read_ns as f64 / 1e6,
            last_write_ms: e.last_write_ns as f64 / 1e6,
            frames: e.frames,
            checksum_errors: e.checksum_errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_keep_first_and_last_and_percents_are_per_qthread() {
        let a = E2eCounts {
            qthreads: 1,
            sr_ns: 250,
            storage_ns: 250,
            elapsed_sum_ns: 1000,
            lag_ns: 30,
            first_read_ns: 40,
            last_write_ns: 900,
            frames: 2,
            checksum_errors: 0,
        };
        let mut m = a;
        m.merge(&E2eCounts {
            lag_ns: 10,
            first_read_ns: 0,
            last_write_ns: 950,
            ..a
        });
        assert_eq!((m.lag_ns, m.first_read_ns, m.last_write_ns), (10, 40, 950));
        let f = E2eFigures::of(&m, 1000).unwrap();
        assert_eq!((f.sr_percent, f.lag_percent), (25.0, 1.0));
        assert_eq!(f.io_s, 500e-9);
        assert!(E2eFigures::of(&E2eCounts::default(), 5).is_none());
    }
}
