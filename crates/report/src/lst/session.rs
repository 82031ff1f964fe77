//! The session console's listings in lst's words: `list_batch`,
//! `query`, `list_group`, `ping`, `show_session` and `show_error`, with
//! iolab's totals of a batch's last run under `query`.

use iolab_lst::session::{
    BatchInfo, GroupInfo, GroupSample, NodeInfo, NodeState, PingEntry, SessionInfo,
};
use iolab_lst::spec::Test;
use std::fmt::Write;

/// lst's header of a node-count table.
const NODES_TITLE: &str = "\tACTIVE\tBUSY\tDOWN\tUNKNOWN\tTOTAL";

/// Which nodes a verbose listing shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeFilter {
    /// Active nodes (`--active`).
    pub active: bool,
    /// Busy nodes (`--busy`; `--invalid` sets busy, down and unknown).
    pub busy: bool,
    /// Down nodes.
    pub down: bool,
    /// Nodes of unknown state.
    pub unknown: bool,
}

impl NodeFilter {
    /// Every state.
    pub fn all() -> NodeFilter {
        NodeFilter {
            active: true,
            busy: true,
            down: true,
            unknown: true,
        }
    }

    /// Whether any state is asked for (a verbose listing).
    pub fn any(&self) -> bool {
        self.active || self.busy || self.down || self.unknown
    }

    fn shows(&self, s: NodeState) -> bool {
        match s {
            NodeState::Active => self.active,
            NodeState::Busy => self.busy,
            NodeState::Down => self.down,
            NodeState::Unknown => self.unknown,
        }
    }
}

/// `list_batch` without a name: lst's numbered list.
pub fn batch_names(batches: &[BatchInfo]) -> String {
    let mut out = String::new();
    for (i, b) in batches.iter().enumerate() {
        let _ = writeln!(out, "{}) {}", i + 1, b.name);
    }
    let _ = writeln!(out, "Total {} batches", batches.len());
    out
}

/// The counts of `nodes` by state: active, busy, down, unknown, total.
fn counts<'a>(nodes: impl Iterator<Item = &'a NodeInfo>) -> [usize; 5] {
    let mut c = [0; 5];
    for n in nodes {
        let i = match n.state {
            NodeState::Active => 0,
            NodeState::Busy => 1,
            NodeState::Down => 2,
            NodeState::Unknown => 3,
        };
        c[i] += 1;
        c[4] += 1;
    }
    c
}

/// Every node once (a node may be in several tests).
fn unique<'a>(lists: impl Iterator<Item = &'a NodeInfo>) -> Vec<&'a NodeInfo> {
    let mut out: Vec<&NodeInfo> = Vec::new();
    for n in lists {
        if !out.iter().any(|m| m.node == n.node) {
            out.push(n);
        }
    }
    out
}

fn client_server_table(out: &mut String, clients: &[&NodeInfo], servers: &[&NodeInfo]) {
    let _ = writeln!(out, "{NODES_TITLE}");
    for (role, nodes) in [("client", clients), ("server", servers)] {
        let c = counts(nodes.iter().copied());
        let _ = writeln!(
            out,
            "{role}\t{}\t{}\t{}\t{}\t{}",
            c[0], c[1], c[2], c[3], c[4]
        );
    }
}

/// `list_batch NAME [--test N]`: the batch's state and node counts,
/// then each test's (or test N's only).
pub fn batch_detail(b: &BatchInfo, test: Option<usize>) -> String {
    let mut out = String::new();
    if test.is_none() {
        let _ = writeln!(
            out,
            "Batch: {} Tests: {} State: {}",
            b.name,
            b.tests.len(),
            if b.running { "Running" } else { "Idle" }
        );
        let cl = unique(b.nodes.iter().flat_map(|t| &t.clients));
        let sv = unique(b.nodes.iter().flat_map(|t| &t.servers));
        client_server_table(&mut out, &cl, &sv);
    }
    for (i, t) in b.tests.iter().enumerate() {
        if test.is_some_and(|n| n != i + 1) {
            continue;
        }
        let kind = match t.test {
            Test::Ping => "ping",
            Test::Brw { .. } => "brw",
        };
        let loops = t.loop_count.map_or(-1, |n| n as i128);
        let _ = writeln!(
            out,
            "\tTest {}({kind}) (loop: {loops}, concurrency: {})",
            i + 1,
            t.concurrency
        );
        let nodes = b.nodes.get(i).cloned().unwrap_or_default();
        let cl: Vec<&NodeInfo> = nodes.clients.iter().collect();
        let sv: Vec<&NodeInfo> = nodes.servers.iter().collect();
        client_server_table(&mut out, &cl, &sv);
    }
    out
}

/// The client (or server) nodes of a batch, or of its test N.
pub fn batch_nodes(b: &BatchInfo, test: Option<usize>, server: bool) -> Vec<&NodeInfo> {
    unique(
        b.nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| test.is_none_or(|n| n == i + 1))
            .flat_map(|(_, t)| if server { &t.servers } else { &t.clients }),
    )
}

/// `list_batch NAME --active|--invalid|--all [--server]`: the nodes in
/// the states asked, then how many.
pub fn node_states(nodes: &[&NodeInfo], f: NodeFilter) -> String {
    let mut out = String::new();
    let mut n = 0;
    for node in nodes.iter().filter(|x| f.shows(x.state)) {
        let _ = writeln!(out, "\t{}: {}", node.node, node.state.word());
        n += 1;
    }
    let _ = writeln!(out, "Total {n} nodes");
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

/// `query NAME --test N`: lst's line for one test, running while any of
/// its clients' jobs runs.
pub fn query_test(b: &BatchInfo, test: usize) -> String {
    let runs = b
        .nodes
        .get(test - 1)
        .is_some_and(|t| t.clients.iter().any(|n| n.running));
    let state = if runs { "is running" } else { "is stopped" };
    format!("{} [{test}] {state}\n", b.name)
}

/// `query NAME --all|--active|--idle`: each node, its state and whether
/// its job runs (`active`: only those running; `idle`: only the others).
pub fn query_nodes(nodes: &[&NodeInfo], active: bool, idle: bool) -> String {
    if nodes.is_empty() {
        return "Batch or test is empty\n".into();
    }
    let mut out = String::new();
    for n in nodes {
        if (active && !n.running) || (idle && n.running) {
            continue;
        }
        let run = if n.running { "Running" } else { "Idle" };
        let _ = writeln!(out, "{} [{}]: {run}", n.node, n.state.word());
    }
    out
}

/// `list_group` without a name: lst's numbered list.
pub fn group_names(groups: &[GroupInfo]) -> String {
    let mut out = String::new();
    for (i, g) in groups.iter().enumerate() {
        let _ = writeln!(out, "{}) {}", i + 1, g.name);
    }
    let _ = writeln!(out, "Total {} groups", groups.len());
    out
}

/// `list_group NAME...`: each group's node counts by state.
pub fn group_counts(groups: &[GroupInfo]) -> String {
    let mut out = format!("{NODES_TITLE}\n");
    for g in groups {
        let c = counts(g.nodes.iter());
        let _ = writeln!(
            out,
            "\t{}\t{}\t{}\t{}\t{}\t{}",
            c[0], c[1], c[2], c[3], c[4], g.name
        );
    }
    out
}

/// `list_group NAME... --active|--busy|--down|--unknown|--all`: each
/// group's nodes in the states asked.
pub fn group_nodes(groups: &[GroupInfo], f: NodeFilter) -> String {
    let mut out = String::new();
    for g in groups {
        let _ = writeln!(out, "Group [ {} ]", g.name);
        let mut n = 0;
        for node in g.nodes.iter().filter(|x| f.shows(x.state)) {
            let _ = writeln!(out, "\t{}: {}", node.node, node.state.word());
            n += 1;
        }
        let _ = writeln!(out, "Total {n} nodes [ {} ]", g.name);
    }
    out
}

/// `ping`: each node, its state and the session it serves; `console` is
/// this session's console host.
pub fn ping(nodes: &[PingEntry], console: &str) -> String {
    let mut out = String::new();
    for n in nodes {
        let (session, id) = match &n.session {
            Some(s) => (s.as_str(), console),
            None => ("<NULL>", "LNET_NID_ANY"),
        };
        let _ = writeln!(
            out,
            "\t{}: {} [session: {session} id: {id}]",
            n.node,
            n.state.word()
        );
    }
    out
}

/// `show_session`, in lst's layout (FEATURES is lst's bulk-length
/// feature bit, which every iolab agent has).
pub fn session(s: &SessionInfo) -> String {
    format!(
        "{} ID: {}@{}, KEY: {} FEATURES: 1 NODES: {}\n",
        s.name, s.started_ms, s.host, s.key, s.nodes
    )
}

/// `show_error [--session] GROUP|NODES...`: the nodes with payload
/// errors: brw errors since they joined this session, and (without
/// `session_only`) their agent's count since it started as RPC errors;
/// a node that did not answer counts as one, as in lst.
pub fn errors(groups: &[GroupSample], session_only: bool) -> String {
    let mut out = String::new();
    for g in groups {
        let _ = writeln!(out, "{}:", g.name);
        let mut n = g.failed.len();
        for node in &g.failed {
            let _ = writeln!(out, "RPC failure, can't show error on {node}");
        }
        for node in &g.nodes {
            let total = node.live.errors;
            let here = total.saturating_sub(node.errors_at_join);
            if (session_only && here == 0) || total == 0 {
                continue;
            }
            n += 1;
            let _ = write!(
                out,
                "{}: [Session {here} brw errors, 0 ping errors]",
                node.node
            );
            if session_only {
                let _ = writeln!(out);
            } else {
                let _ = writeln!(out, " [RPC: {total} errors, 0 dropped, 0 expired]");
            }
        }
        let _ = writeln!(out, "Total {n} error nodes in {}", g.name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, state: NodeState) -> NodeInfo {
        NodeInfo {
            node: name.into(),
            state,
            running: false,
        }
    }

    #[test]
    fn query_lists_nodes_and_their_jobs_as_lst() {
        let mut busy = node("n1@tcp", NodeState::Active);
        busy.running = true;
        let idle = node("n2@tcp", NodeState::Down);
        let both = [&busy, &idle];
        assert_eq!(
            query_nodes(&both, false, false),
            "n1@tcp [Active]: Running\nn2@tcp [Down]: Idle\n"
        );
        assert_eq!(
            query_nodes(&both, true, false),
            "n1@tcp [Active]: Running\n"
        );
        assert_eq!(query_nodes(&both, false, true), "n2@tcp [Down]: Idle\n");
        assert_eq!(query_nodes(&[], false, false), "Batch or test is empty\n");
    }

    #[test]
    fn group_listings_have_lsts_layout() {
        let g = vec![GroupInfo {
            name: "clients".into(),
            nodes: vec![
                node("10.0.0.2@tcp", NodeState::Active),
                node("10.0.0.3@tcp", NodeState::Down),
            ],
        }];
        assert_eq!(group_names(&g), "1) clients\nTotal 1 groups\n");
        assert_eq!(
            group_counts(&g),
            "\tACTIVE\tBUSY\tDOWN\tUNKNOWN\tTOTAL\n\t1\t0\t1\t0\t2\tclients\n"
        );
        let down = NodeFilter {
            down: true,
            ..Default::default()
        };
        assert_eq!(
            group_nodes(&g, down),
            "Group [ clients ]\n\t10.0.0.3@tcp: Down\nTotal 1 nodes [ clients ]\n"
        );
    }
}
