//! Fault injection for the tests that show a dead worker is never lost
//! (`crates/cli/tests/xdd_robust.rs`). Compiled into debug builds only:
//! in a release build `injected` is constant false.

/// Debug builds only, for tests that show a dead worker is never lost:
/// `IOLAB_XDD_PANIC_TARGET=N` makes QThread 0 of target N panic in its
/// first pass after it took a few operations (see `qthread::run_pass`);
/// `N:target` makes target N's own thread panic before the barrier of
/// pass 2, so that it never arrives there. `q` is None for the target.
pub(crate) fn injected(target: usize, q: Option<usize>, pass: u64) -> bool {
    if !cfg!(debug_assertions) {
        return false;
    }
    let Ok(want) = std::env::var("IOLAB_XDD_PANIC_TARGET") else {
        return false;
    };
    match q {
        Some(0) => want == target.to_string() && pass == 1,
        Some(_) => false,
        None => want == format!("{target}:target") && pass == 2,
    }
}
