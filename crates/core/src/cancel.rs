//! Cancellation handed down to whoever must stop: a [`CancelToken`] is a
//! cheap handle (one `Arc`) that a caller clones into each worker; a
//! [`CancelToken::child`] stops with its parent but can be cancelled on
//! its own (one phase, one connection) without stopping the rest, as
//! tokio-util's `CancellationToken` and Go's `context` do.
//!
//! The binary's runner makes the root of a run with
//! [`CancelToken::process`], which the signal handler cancels. That root
//! is tied to the process-wide [`crate::stop`] flag in both directions:
//! cancelling it raises the flag, and a raised flag (an engine that
//! failed, a closed standard output) reads as cancelled. Engines that
//! still poll the flag therefore stop with the token and the other way
//! round, while they move to the token one by one.
//!
//! ```
//! use iolab_core::cancel::CancelToken;
//! let run = CancelToken::new();
//! let phase = run.child();
//! phase.cancel();
//! assert!(phase.is_cancelled() && !run.is_cancelled());
//! let next = run.child();
//! run.cancel();
//! assert!(next.is_cancelled());
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation handle: clone it freely; every clone sees the same
/// cancellation, and a child also sees its ancestors'.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Node>);

#[derive(Debug, Default)]
struct Node {
    cancelled: AtomicBool,
    /// Tied to [`crate::stop`]: the root of a process's run.
    process: bool,
    parent: Option<Arc<Node>>,
}

impl CancelToken {
    /// A token of its own, not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// The root token of this process's run: cancelled by Ctrl-C and
    /// SIGTERM (the binary's signal handler), by anything that raises
    /// [`crate::stop::request`], and it raises that flag when cancelled.
    pub fn process() -> CancelToken {
        CancelToken(Arc::new(Node {
            cancelled: AtomicBool::new(false),
            process: true,
            parent: None,
        }))
    }

    /// A token cancelled with this one, or on its own.
    pub fn child(&self) -> CancelToken {
        CancelToken(Arc::new(Node {
            cancelled: AtomicBool::new(false),
            process: false,
            parent: Some(Arc::clone(&self.0)),
        }))
    }

    /// Cancels this token and its children. Only atomic stores:
    /// async-signal-safe, so a signal handler may call it.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::Relaxed);
        if self.0.process {
            crate::stop::request();
        }
    }

    /// True once this token or an ancestor was cancelled: a few relaxed
    /// atomic loads, cheap enough for a loop's every turn.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        let mut at = Some(&self.0);
        while let Some(n) = at {
            if n.cancelled.load(Ordering::Relaxed) || (n.process && crate::stop::requested()) {
                return true;
            }
            at = n.parent.as_ref();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_see_their_ancestors_and_not_the_other_way() {
        let root = CancelToken::new();
        let a = root.child();
        let b = a.child();
        let c = root.child();
        b.cancel();
        assert!(b.is_cancelled());
        assert!(!a.is_cancelled() && !root.is_cancelled() && !c.is_cancelled());
        a.clone().cancel();
        assert!(a.is_cancelled() && !c.is_cancelled());
        root.cancel();
        assert!(c.is_cancelled() && c.child().is_cancelled());
    }

    /// The process root and the stop flag go together both ways (no
    /// other test of this crate reads the flag).
    #[test]
    fn the_process_root_moves_with_the_stop_flag() {
        crate::stop::reset();
        let root = CancelToken::process();
        let child = root.child();
        crate::stop::request();
        assert!(root.is_cancelled() && child.is_cancelled());
        crate::stop::reset();
        assert!(!child.is_cancelled());
        child.cancel();
        assert!(
            !crate::stop::requested(),
            "a child does not stop the process"
        );
        root.cancel();
        assert!(crate::stop::requested());
        crate::stop::reset();
    }
}
