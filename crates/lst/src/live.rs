//! An agent's live counters, read by `lst stat` while a batch runs. The
//! data loops add to them once per message: a relaxed atomic add on a
//! line of its own, no lock (the per-run counters of [`crate::server`]
//! stay per connection; these are the only shared writes in the loop).

use crate::result::LiveStats;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One counter on its own cache line, so that the receiving and the
/// sending side of different connections do not share a line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

/// Messages and payload bytes received and sent, since the agent started.
#[derive(Debug, Default)]
pub struct LiveCounters {
    rx_msgs: Padded,
    tx_msgs: Padded,
    rx_bytes: Padded,
    tx_bytes: Padded,
}

impl LiveCounters {
    /// Counts one message received with `bytes` of payload.
    pub fn received(&self, bytes: usize) {
        self.rx_msgs.0.fetch_add(1, Relaxed);
        self.rx_bytes.0.fetch_add(bytes as u64, Relaxed);
    }

    /// Counts one message sent with `bytes` of payload.
    pub fn sent(&self, bytes: usize) {
        self.tx_msgs.0.fetch_add(1, Relaxed);
        self.tx_bytes.0.fetch_add(bytes as u64, Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> LiveStats {
        LiveStats {
            rx_msgs: self.rx_msgs.0.load(Relaxed),
            tx_msgs: self.tx_msgs.0.load(Relaxed),
            rx_bytes: self.rx_bytes.0.load(Relaxed),
            tx_bytes: self.tx_bytes.0.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_both_ways() {
        let c = LiveCounters::default();
        c.received(4096);
        c.received(0);
        c.sent(10);
        let s = c.snapshot();
        assert_eq!(
            (s.rx_msgs, s.rx_bytes, s.tx_msgs, s.tx_bytes),
            (2, 4096, 1, 10)
        );
    }
}
