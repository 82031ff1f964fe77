//! `-M` and `-O memoryPerTask`: memory each task holds, every page
//! touched, while its test runs (a rough stand-in for an application's
//! memory, as IOR's HogMemory).

use crate::params::{Hog, Params};
use crate::plan::Geometry;

/// The memory held (released when dropped).
pub struct Held(#[allow(dead_code)] Vec<u8>);

/// Bytes this task holds for `p`.
pub fn bytes(p: &Params, geo: &Geometry) -> u64 {
    let per_node = geo.tasks_on_node0.max(1);
    match p.hog {
        Hog::None => 0,
        Hog::PerTask(b) => b,
        Hog::PerNode(b) => b / per_node,
        Hog::NodePercent(pct) => iolab_core::env::host_info().memory_bytes / 100 * pct / per_node,
    }
}

/// Takes and touches the memory; none when it cannot be had (the test
/// then runs without it).
pub fn hold(p: &Params, geo: &Geometry) -> Option<Held> {
    let n = usize::try_from(bytes(p, geo)).ok().filter(|&n| n > 0)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    // Written, not just reserved: every page is made resident.
    v.resize(n, 1u8);
    Some(Held(v))
}
