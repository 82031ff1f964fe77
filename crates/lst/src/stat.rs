//! `lst stat`'s arithmetic: the rates of each group between two
//! readings of its nodes' live counters. Each node's rate is its own
//! counter difference over its own interval; the group's figures are
//! the average, smallest and largest over its nodes, as lst prints them.

use crate::result::Spread;
use crate::session::{GroupSample, NodeSample};
use serde::Serialize;

/// One group's rates over one interval.
#[derive(Debug, Clone, Serialize)]
pub struct GroupRates {
    /// Group name.
    pub name: String,
    /// Messages received per second (`[R]` of the rates block).
    pub r_rpc_per_s: Spread,
    /// Messages sent per second (`[W]`).
    pub w_rpc_per_s: Spread,
    /// Payload bytes received per second.
    pub r_bytes_per_s: Spread,
    /// Payload bytes sent per second.
    pub w_bytes_per_s: Spread,
    /// Nodes with a rate this interval (answered both readings).
    pub nodes: usize,
    /// Nodes that did not answer this reading.
    pub failed: usize,
}

/// The rates of every group of `cur` against the same group in `prev`
/// (nodes matched by name; a node missing from `prev` is skipped).
pub fn rates(prev: &[GroupSample], cur: &[GroupSample]) -> Vec<GroupRates> {
    cur.iter()
        .filter_map(|g| {
            let before = prev.iter().find(|p| p.name == g.name)?;
            let per_node: Vec<[f64; 4]> = g
                .nodes
                .iter()
                .filter_map(|n| {
                    let b = before.nodes.iter().find(|m| m.node == n.node)?;
                    node_rates(b, n)
                })
                .collect();
            let col = |k: usize| Spread::of(per_node.iter().map(|r| r[k]));
            Some(GroupRates {
                name: g.name.clone(),
                r_rpc_per_s: col(0),
                w_rpc_per_s: col(1),
                r_bytes_per_s: col(2),
                w_bytes_per_s: col(3),
                nodes: per_node.len(),
                failed: g.failed.len(),
            })
        })
        .collect()
}

/// A node's received and sent messages and bytes per second.
fn node_rates(b: &NodeSample, n: &NodeSample) -> Option<[f64; 4]> {
    let dt_s = n.at_ns.checked_sub(b.at_ns).filter(|&d| d > 0)? as f64 / 1e9;
    let per_s = |now: u64, then: u64| now.saturating_sub(then) as f64 / dt_s;
    let (l, p) = (&n.live, &b.live);
    Some([
        per_s(l.rx_msgs, p.rx_msgs),
        per_s(l.tx_msgs, p.tx_msgs),
        per_s(l.rx_bytes, p.rx_bytes),
        per_s(l.tx_bytes, p.tx_bytes),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::LiveStats;

    fn node(name: &str, at_s: u64, rx_msgs: u64, rx_bytes: u64) -> NodeSample {
        NodeSample {
            node: name.into(),
            at_ns: at_s * 1_000_000_000,
            live: LiveStats {
                rx_msgs,
                rx_bytes,
                ..Default::default()
            },
            errors_at_join: 0,
        }
    }

    #[test]
    fn group_rates_are_spreads_of_node_rates() {
        let g = |nodes| {
            vec![GroupSample {
                failed: Vec::new(),
                name: "s".into(),
                nodes,
            }]
        };
        let prev = g(vec![node("a", 10, 0, 0), node("b", 10, 100, 1000)]);
        let cur = g(vec![node("a", 12, 200, 2 << 20), node("b", 11, 200, 1000)]);
        let r = &rates(&prev, &cur)[0];
        assert_eq!((r.r_rpc_per_s.min, r.r_rpc_per_s.max), (100.0, 100.0));
        assert_eq!(r.r_bytes_per_s.max, (1 << 20) as f64);
        assert_eq!(r.r_bytes_per_s.min, 0.0);
        assert_eq!(r.r_bytes_per_s.avg, (1 << 19) as f64);
    }
}
