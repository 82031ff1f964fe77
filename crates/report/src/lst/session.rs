//! The session console's listings: `list_batch` and `query`, in lst's
//! words, with iolab's totals of a batch's last run under `query`.

use iolab_lst::session::BatchInfo;
use iolab_lst::spec::Test;
use std::fmt::Write;

/// `list_batch`: every batch's name, or (for one batch) its state and
/// tests.
pub fn list(batches: &[BatchInfo], all: bool) -> String {
    let mut out = String::new();
    for b in batches {
        if all {
            let _ = writeln!(out, "Batch: {}", b.name);
            continue;
        }
        let _ = writeln!(
            out,
            "Batch: {} Tests: {} State: {}",
            b.name,
            b.tests.len(),
            if b.running { "Running" } else { "Idle" }
        );
        for (i, t) in b.tests.iter().enumerate() {
            let kind = match t.test {
                Test::Ping => "ping",
                Test::Brw { .. } => "brw",
            };
            let loops = t.loop_count.map_or(-1, |n| n as i128);
            let _ = writeln!(
                out,
                "        Test {}({kind}) (loop: {loops}, concurrency: {})",
                i + 1,
                t.concurrency
            );
        }
    }
    out
}

/// `query`: whether the batch runs; once a run has ended, what it moved.
pub fn query(batches: &[BatchInfo]) -> String {
    let mut out = String::new();
    for b in batches {
        let state = if b.running { "running" } else { "idle" };
        let _ = writeln!(out, "Batch is {state}");
        if let Some(t) = &b.last {
            let _ = writeln!(
                out,
                "[last run] RPCs: {} errors: {} sent: {} bytes received: {} bytes",
                t.rpcs, t.errors, t.tx_bytes, t.rx_bytes
            );
            if let Some(f) = &t.failure {
                let _ = writeln!(out, "[last run] failed: {f}");
            }
        }
    }
    out
}
