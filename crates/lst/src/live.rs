//! An agent's live counters, read by `lst stat` while a batch runs.
//! Each data loop (a client job, a server connection) registers its own
//! block and is its only writer, so the loop's adds never contend for a
//! cache line with another loop and take no lock; a reading sums the
//! blocks of the loops running now and the totals of those that ended.

use crate::result::LiveStats;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// One loop's counters, on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Block {
    rx_msgs: AtomicU64,
    tx_msgs: AtomicU64,
    rx_bytes: AtomicU64,
    tx_bytes: AtomicU64,
    errors: AtomicU64,
}

impl Block {
    fn read(&self) -> LiveStats {
        LiveStats {
            rx_msgs: self.rx_msgs.load(Relaxed),
            tx_msgs: self.tx_msgs.load(Relaxed),
            rx_bytes: self.rx_bytes.load(Relaxed),
            tx_bytes: self.tx_bytes.load(Relaxed),
            errors: self.errors.load(Relaxed),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    running: Vec<Arc<Block>>,
    ended: LiveStats,
}

/// Messages and payload bytes received and sent, since the agent started.
#[derive(Debug, Default)]
pub struct LiveCounters {
    inner: Mutex<Inner>,
}

/// A data loop's handle on its block; when dropped, its counts move to
/// the agent's totals.
#[derive(Debug)]
pub struct LiveHandle<'a> {
    block: Arc<Block>,
    owner: &'a LiveCounters,
}

impl LiveCounters {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A block for one data loop (taken once, before the loop).
    pub fn register(&self) -> LiveHandle<'_> {
        let block = Arc::new(Block::default());
        self.lock().running.push(Arc::clone(&block));
        LiveHandle { block, owner: self }
    }

    /// The counters now.
    pub fn snapshot(&self) -> LiveStats {
        let g = self.lock();
        g.running.iter().fold(g.ended, |t, b| add(t, b.read()))
    }
}

fn add(a: LiveStats, b: LiveStats) -> LiveStats {
    LiveStats {
        rx_msgs: a.rx_msgs + b.rx_msgs,
        tx_msgs: a.tx_msgs + b.tx_msgs,
        rx_bytes: a.rx_bytes + b.rx_bytes,
        tx_bytes: a.tx_bytes + b.tx_bytes,
        errors: a.errors + b.errors,
    }
}

impl LiveHandle<'_> {
    /// Counts one message received with `bytes` of payload.
    pub fn received(&self, bytes: usize) {
        self.block.rx_msgs.fetch_add(1, Relaxed);
        self.block.rx_bytes.fetch_add(bytes as u64, Relaxed);
    }

    /// Counts one message sent with `bytes` of payload.
    pub fn sent(&self, bytes: usize) {
        self.block.tx_msgs.fetch_add(1, Relaxed);
        self.block.tx_bytes.fetch_add(bytes as u64, Relaxed);
    }
}

impl LiveHandle<'_> {
    /// Counts one payload that failed its check.
    pub fn error(&self) {
        self.block.errors.fetch_add(1, Relaxed);
    }
}

impl Drop for LiveHandle<'_> {
    fn drop(&mut self) {
        let mut g = self.owner.lock();
        g.running.retain(|b| !Arc::ptr_eq(b, &self.block));
        g.ended = add(g.ended, self.block.read());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_both_ways_across_loops_that_end() {
        let c = LiveCounters::default();
        let a = c.register();
        a.received(4096);
        a.received(0);
        {
            let b = c.register();
            b.sent(10);
            assert_eq!(c.snapshot().tx_msgs, 1);
        }
        a.sent(5);
        a.error();
        let s = c.snapshot();
        assert_eq!(s.errors, 1);
        assert_eq!(
            (s.rx_msgs, s.rx_bytes, s.tx_msgs, s.tx_bytes),
            (2, 4096, 2, 15)
        );
        drop(a);
        assert_eq!(c.snapshot(), s, "ended loops keep their counts");
        assert!(c.lock().running.is_empty());
    }
}
