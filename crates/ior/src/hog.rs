//! `-M` and `-O memoryPerTask`: memory each task holds, every page
//! touched, while its test runs (a rough stand-in for an application's
//! memory, as IOR's HogMemory). What cannot be held is refused before
//! the run ([`check`]), and an allocation that fails when the test
//! starts is the test's error ([`hold`]): never a test run without it.

use crate::params::{Hog, Params};
use crate::plan::Geometry;
use iolab_core::env::MemoryLimit;

/// Memory `-M` or `-O memoryPerTask` asks for that cannot be held,
/// named by the option that asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {why}")]
pub struct HogError {
    /// The option as given (`-M 1099511627776`).
    pub option: String,
    /// Why it cannot be held, and what to do.
    pub why: String,
}

/// The memory held (released when dropped).
pub struct Held(#[allow(dead_code)] Vec<u8>);

/// Bytes this task holds for `p`.
pub fn bytes(p: &Params, geo: &Geometry) -> u64 {
    let per_node = geo.tasks_on_node0.max(1);
    match p.hog {
        Hog::None => 0,
        Hog::PerTask(b) => b,
        Hog::PerNode(b) => b / per_node,
        Hog::NodePercent(pct) => node_percent(pct) / per_node,
    }
}

fn node_percent(pct: u64) -> u64 {
    iolab_core::env::host_info().memory_bytes / 100 * pct
}

fn human(bytes: u64) -> String {
    iolab_core::units::human_binary(bytes as f64)
}

/// The option that asked for it, for messages.
fn option(p: &Params) -> String {
    match p.hog {
        Hog::PerTask(b) => format!("-O memoryPerTask={b}"),
        Hog::PerNode(b) => format!("-M {b}"),
        Hog::NodePercent(pct) => format!("-M {pct}%"),
        Hog::None => "-M".into(),
    }
}

/// The most a process of `per_process` tasks holds: the tasks' own
/// memory, or a node's whole share (the node's tasks, and so how much of
/// it is this process's, are known only once the test starts).
pub fn most_per_process(p: &Params, per_process: u64) -> u64 {
    match p.hog {
        Hog::None => 0,
        Hog::PerTask(b) => b.saturating_mul(per_process),
        Hog::PerNode(b) => b,
        Hog::NodePercent(pct) => node_percent(pct),
    }
}

/// Refuses (before anything runs) memory a process could not hold
/// within `limit`: touching pages that cannot be backed would swap or
/// bring the OOM killer rather than measure anything.
pub fn check(p: &Params, per_process: u64, limit: MemoryLimit) -> Result<(), HogError> {
    let need = most_per_process(p, per_process);
    if need <= limit.bytes {
        return Ok(());
    }
    let tasks = match per_process {
        1 => "this process's task".to_string(),
        n => format!("this process's {n} tasks"),
    };
    Err(HogError {
        option: option(p),
        why: format!(
            "{tasks} would hold {need} bytes ({}), more than {}: {}; ask for less",
            human(need),
            limit.source,
            human(limit.bytes)
        ),
    })
}

/// Takes and touches the memory (None when the test asks for none); an
/// error, naming the option, when it cannot be had now, before any page
/// is touched.
pub fn hold(p: &Params, geo: &Geometry) -> Result<Option<Held>, HogError> {
    let n = bytes(p, geo);
    if n == 0 {
        return Ok(None);
    }
    let limit = iolab_core::env::memory_limit();
    let cannot = |why: &str| HogError {
        option: option(p),
        why: format!("cannot hold {n} bytes for this task: {why}"),
    };
    if n > limit.bytes {
        return Err(cannot(&format!(
            "{} is {} bytes",
            limit.source, limit.bytes
        )));
    }
    let n = usize::try_from(n).map_err(|_| cannot("too large for this machine"))?;
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| cannot("the allocation was refused"))?;
    // Written, not just reserved: every page is made resident.
    v.resize(n, 1u8);
    Ok(Some(Held(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(hog: Hog) -> Params {
        Params {
            hog,
            ..Params::default()
        }
    }

    #[test]
    fn memory_beyond_the_limit_is_refused_by_its_option() {
        let limit = MemoryLimit {
            bytes: 1 << 30,
            source: "this machine's memory",
        };
        assert!(check(&with(Hog::None), 4, limit).is_ok());
        assert!(check(&with(Hog::PerTask(256 << 20)), 4, limit).is_ok());
        let e = check(&with(Hog::PerTask(256 << 20)), 5, limit)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-O memoryPerTask=268435456:"), "{e}");
        assert!(e.contains("this machine's memory"), "{e}");
        let e = check(&with(Hog::PerNode(1 << 40)), 1, limit)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-M 1099511627776:"), "{e}");
    }

    #[test]
    fn a_task_s_share_that_cannot_be_held_is_an_error_not_nothing() {
        let geo = Geometry {
            tasks: 1,
            nodes: 1,
            tasks_on_node0: 1,
            block_mapping: true,
        };
        let e = hold(&with(Hog::PerTask(u64::MAX / 2)), &geo)
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("-O memoryPerTask="), "{e}");
        assert!(hold(&with(Hog::None), &geo).unwrap().is_none());
        let held = hold(&with(Hog::PerTask(1 << 20)), &geo).unwrap();
        assert!(held.is_some());
    }
}
