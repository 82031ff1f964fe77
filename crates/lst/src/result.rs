//! What a run returns: counters per node as the agents report them, and
//! the group summaries lst stat prints (avg/min/max over the nodes of a
//! group, for what they received `[R]` and what they sent `[W]`).

use iolab_core::stats::{Histogram, HistogramWire, Percentiles};
use serde::{Deserialize, Serialize};

/// One client node's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientStats {
    /// The node (as given on the command line).
    pub node: String,
    /// RPCs completed (a reply received).
    pub rpcs: u64,
    /// Replies that failed the payload check, or whose request the server
    /// found damaged.
    pub errors: u64,
    /// Payload bytes received (read replies).
    pub rx_bytes: u64,
    /// Payload bytes sent (write requests).
    pub tx_bytes: u64,
    /// From the first request to the last reply, in nanoseconds.
    pub elapsed_ns: u64,
    /// Round-trip time of every RPC, in nanoseconds.
    pub latency: HistogramWire,
    /// RPCs issued whose reply never came because the job failed (in
    /// flight when a connection broke); 0, and absent from the JSON, for
    /// a job that ended well.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One server node's counters since the console's last reset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    /// The node.
    pub node: String,
    /// Requests served.
    pub rpcs: u64,
    /// Requests whose payload failed the check.
    pub errors: u64,
    /// Payload bytes received (write requests).
    pub rx_bytes: u64,
    /// Payload bytes sent (read replies).
    pub tx_bytes: u64,
    /// From the first request's arrival to the last reply, in nanoseconds.
    pub span_ns: u64,
}

/// An agent's live counters: every data message it received and sent,
/// as client and as server, since it started (what LNet's `lst stat`
/// reads from a node). Rates are differences between two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveStats {
    /// Data messages received (requests as a server, replies as a client).
    pub rx_msgs: u64,
    /// Data messages sent.
    pub tx_msgs: u64,
    /// Payload bytes received.
    pub rx_bytes: u64,
    /// Payload bytes sent.
    pub tx_bytes: u64,
    /// Payloads that failed their check here (brw errors: read replies
    /// as a client, write requests as a server); absent from older agents.
    #[serde(default)]
    pub errors: u64,
}

/// Average, smallest and largest over the nodes of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Mean over nodes.
    pub avg: f64,
    /// Smallest node.
    pub min: f64,
    /// Largest node.
    pub max: f64,
}

impl Spread {
    pub(crate) fn of(values: impl Iterator<Item = f64>) -> Spread {
        let (mut n, mut sum, mut min, mut max) = (0usize, 0.0, f64::INFINITY, 0.0f64);
        for v in values {
            n += 1;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        if n == 0 {
            return Spread::default();
        }
        Spread {
            avg: sum / n as f64,
            min,
            max,
        }
    }

    fn mean(all: &[Spread]) -> Spread {
        let n = all.len().max(1) as f64;
        Spread {
            avg: all.iter().map(|s| s.avg).sum::<f64>() / n,
            min: all.iter().map(|s| s.min).sum::<f64>() / n,
            max: all.iter().map(|s| s.max).sum::<f64>() / n,
        }
    }
}

/// lst stat's numbers for one group: message rates and bandwidth, each
/// for what the nodes received (`r`) and sent (`w`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Nodes in the group.
    pub nodes: usize,
    /// RPCs over all nodes.
    pub rpcs: u64,
    /// Errors over all nodes.
    pub errors: u64,
    /// Payload bytes received over all nodes.
    pub rx_bytes: u64,
    /// Payload bytes sent over all nodes.
    pub tx_bytes: u64,
    /// Messages received per second, per node.
    pub r_rpc_per_s: Spread,
    /// Messages sent per second, per node.
    pub w_rpc_per_s: Spread,
    /// MiB received per second, per node.
    pub r_mib_per_s: Spread,
    /// MiB sent per second, per node.
    pub w_mib_per_s: Spread,
}

/// (rpcs, rx_bytes, tx_bytes, seconds) of one node.
type NodeLine = (u64, u64, u64, f64);

fn per_s(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

const MIB: f64 = 1048576.0;

impl GroupSummary {
    fn of(lines: &[NodeLine], errors: u64) -> GroupSummary {
        let rate = |f: fn(&NodeLine) -> f64| Spread::of(lines.iter().map(f));
        GroupSummary {
            nodes: lines.len(),
            rpcs: lines.iter().map(|l| l.0).sum(),
            errors,
            rx_bytes: lines.iter().map(|l| l.1).sum(),
            tx_bytes: lines.iter().map(|l| l.2).sum(),
            r_rpc_per_s: rate(|l| per_s(l.0, l.3)),
            w_rpc_per_s: rate(|l| per_s(l.0, l.3)),
            r_mib_per_s: rate(|l| per_s(l.1, l.3) / MIB),
            w_mib_per_s: rate(|l| per_s(l.2, l.3) / MIB),
        }
    }

    /// The client group's summary.
    pub fn of_clients(c: &[ClientStats]) -> GroupSummary {
        let lines: Vec<NodeLine> = c
            .iter()
            .map(|n| (n.rpcs, n.rx_bytes, n.tx_bytes, n.elapsed_ns as f64 / 1e9))
            .collect();
        Self::of(&lines, c.iter().map(|n| n.errors).sum())
    }

    /// The server group's summary.
    pub fn of_servers(s: &[ServerStats]) -> GroupSummary {
        let lines: Vec<NodeLine> = s
            .iter()
            .map(|n| (n.rpcs, n.rx_bytes, n.tx_bytes, n.span_ns as f64 / 1e9))
            .collect();
        Self::of(&lines, s.iter().map(|n| n.errors).sum())
    }

    /// Field-wise mean over repeats (counts summed).
    pub fn mean(all: &[GroupSummary]) -> GroupSummary {
        let spread =
            |f: fn(&GroupSummary) -> Spread| Spread::mean(&all.iter().map(f).collect::<Vec<_>>());
        GroupSummary {
            nodes: all.first().map_or(0, |g| g.nodes),
            rpcs: all.iter().map(|g| g.rpcs).sum(),
            errors: all.iter().map(|g| g.errors).sum(),
            rx_bytes: all.iter().map(|g| g.rx_bytes).sum(),
            tx_bytes: all.iter().map(|g| g.tx_bytes).sum(),
            r_rpc_per_s: spread(|g| g.r_rpc_per_s),
            w_rpc_per_s: spread(|g| g.w_rpc_per_s),
            r_mib_per_s: spread(|g| g.r_mib_per_s),
            w_mib_per_s: spread(|g| g.w_mib_per_s),
        }
    }
}

/// One run (one repeat of one sweep point).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The client group.
    pub clients: GroupSummary,
    /// The server group.
    pub servers: GroupSummary,
    /// Round-trip times over every client's RPCs.
    pub latency: Percentiles,
    /// Each client.
    pub client_nodes: Vec<ClientStats>,
    /// Each server.
    pub server_nodes: Vec<ServerStats>,
}

impl RunResult {
    /// Summaries of the nodes' counters.
    pub fn new(client_nodes: Vec<ClientStats>, server_nodes: Vec<ServerStats>) -> RunResult {
        let mut h = Histogram::new();
        for c in &client_nodes {
            h.merge(&Histogram::from_wire(&c.latency));
        }
        RunResult {
            clients: GroupSummary::of_clients(&client_nodes),
            servers: GroupSummary::of_servers(&server_nodes),
            latency: h.percentiles(),
            client_nodes,
            server_nodes,
        }
    }

    /// RPCs that failed their payload check, each once. Every RPC's
    /// verdict ends at its client: a read reply it checked, or a write
    /// request its server checked and marked bad in the reply. So the
    /// clients' count holds every failure, and the servers' count (the
    /// same write failures again) is not added to it.
    pub fn errors(&self) -> u64 {
        self.clients.errors
    }
}

/// One sweep point: its repeats and their mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// Clients used (the first K of the group).
    pub clients: u32,
    /// RPCs in flight per client.
    pub concurrency: u32,
    /// The mean over repeats: rates averaged, counts summed.
    pub mean: MeanResult,
    /// Every repeat.
    pub runs: Vec<RunResult>,
    /// Why the point stopped when a node failed during it: its last
    /// repeat then holds the counts up to the failure (the clients' own,
    /// and those of the servers that still answered). Absent from the
    /// JSON for a point that completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// The mean of a point's repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanResult {
    /// The client group.
    pub clients: GroupSummary,
    /// The server group.
    pub servers: GroupSummary,
    /// Round-trip times over every repeat.
    pub latency: Percentiles,
}

impl PointResult {
    /// A point from its repeats.
    pub fn new(clients: u32, concurrency: u32, runs: Vec<RunResult>) -> PointResult {
        let mut h = Histogram::new();
        for c in runs.iter().flat_map(|r| &r.client_nodes) {
            h.merge(&Histogram::from_wire(&c.latency));
        }
        let c: Vec<_> = runs.iter().map(|r| r.clients).collect();
        let s: Vec<_> = runs.iter().map(|r| r.servers).collect();
        PointResult {
            clients,
            concurrency,
            mean: MeanResult {
                clients: GroupSummary::mean(&c),
                servers: GroupSummary::mean(&s),
                latency: h.percentiles(),
            },
            runs,
            failed: None,
        }
    }

    /// Failed RPCs over every repeat ([`RunResult::errors`]).
    pub fn errors(&self) -> u64 {
        self.runs.iter().map(|r| r.errors()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that completed no RPC does not pull the run's or the
    /// point's minimum round trip to 0: both are merges of the clients'.
    #[test]
    fn an_idle_client_leaves_the_latency_extremes_alone() {
        let mut h = Histogram::new();
        [3_000, 7_000, 5_000].iter().for_each(|&v| h.record(v));
        let busy = ClientStats {
            rpcs: 3,
            latency: h.to_wire(),
            ..ClientStats::default()
        };
        let run = RunResult::new(vec![ClientStats::default(), busy], vec![]);
        let l = run.latency;
        assert_eq!((l.count, l.min_ns, l.max_ns), (3, 3_000, 7_000));
        let point = PointResult::new(2, 1, vec![run.clone(), run]);
        let m = point.mean.latency;
        assert_eq!((m.count, m.min_ns, m.max_ns), (6, 3_000, 7_000));
    }

    /// A damaged write is counted by its server and by its client (the
    /// reply says so): one RPC, one failure.
    #[test]
    fn a_bad_write_seen_by_both_sides_is_one_failed_rpc() {
        let client = ClientStats {
            rpcs: 100,
            errors: 10,
            ..ClientStats::default()
        };
        let server = ServerStats {
            rpcs: 100,
            errors: 10,
            ..ServerStats::default()
        };
        let run = RunResult::new(vec![client], vec![server]);
        assert_eq!((run.clients.errors, run.servers.errors), (10, 10));
        assert_eq!(run.errors(), 10);
        assert_eq!(PointResult::new(1, 1, vec![run.clone(), run]).errors(), 20);
    }

    #[test]
    fn group_rates_are_per_node_and_spread() {
        let c = |rpcs, ns| ClientStats {
            rpcs,
            tx_bytes: rpcs * 1024,
            elapsed_ns: ns,
            ..Default::default()
        };
        let g = GroupSummary::of_clients(&[c(100, 1_000_000_000), c(300, 1_000_000_000)]);
        assert_eq!(g.rpcs, 400);
        assert_eq!(g.w_rpc_per_s.avg, 200.0);
        assert_eq!(g.w_rpc_per_s.min, 100.0);
        assert_eq!(g.w_rpc_per_s.max, 300.0);
        assert!((g.w_mib_per_s.avg - 200.0 * 1024.0 / MIB).abs() < 1e-9);
        assert_eq!(g.r_mib_per_s.max, 0.0);
    }
}
