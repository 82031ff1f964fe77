//! The daemon's node management: `list_group`, `del_group`,
//! `update_group`, `ping` and `show_session`. A node's state is what it
//! last showed: active when its agent answered, down when it did not;
//! `ping` and `update_group --refresh` ask again.

use super::{check_name, check_timeout, probe_live, State};
use crate::console::{self, open_stat, Node};
use crate::proto::Command;
use crate::session::slot::Slot;
use crate::session::{
    GroupInfo, GroupUpdate, NodeInfo, NodeState, PingEntry, PingTarget, Reply, SessionInfo,
};
use iolab_net::{Cancel, Conn};
use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

/// How long `update_group --refresh` waits for a node's agent to answer
/// again before it reconnects it (an agent still in the session answers
/// at once; a refused or silent port is not waited on).
const REASK_WAIT: Duration = Duration::from_secs(1);

impl State {
    /// Marks down every agent whose connection to the session has closed
    /// (it died, or was killed mid-batch): seen without asking it
    /// anything, before every console command, so that `list_group` and
    /// `list_batch` need no `ping` to show it.
    pub(super) fn notice_gone(&mut self) {
        for s in &mut self.slots {
            let gone = s.stat.peer_gone() || s.ctl.as_ref().is_some_and(Conn::peer_gone);
            if gone {
                s.state = NodeState::Down;
            }
        }
    }

    /// A group node's state as last seen: down when it has no agent
    /// here (a refresh could not reach it).
    pub(super) fn state_of(&self, n: &Node) -> NodeState {
        self.slots
            .iter()
            .find(|s| s.node.addr == n.addr)
            .map_or(NodeState::Down, |s| s.state)
    }

    pub(super) fn list_groups(&self, name: Option<&str>) -> Result<Reply, String> {
        if let Some(n) = name {
            if !self.groups.contains_key(n) {
                return Err(format!("no group {n:?} in this session"));
            }
        }
        let groups = self
            .groups
            .iter()
            .filter(|(g, _)| name.is_none_or(|n| n == g.as_str()))
            .map(|(g, nodes)| GroupInfo {
                name: g.clone(),
                nodes: nodes
                    .iter()
                    .map(|n| NodeInfo {
                        node: n.name.clone(),
                        state: self.state_of(n),
                        running: false,
                    })
                    .collect(),
            })
            .collect();
        Ok(Reply::Groups { groups })
    }

    /// The batches whose tests name group `g`: (batch, running).
    fn users_of(&self, g: &str) -> Vec<(String, bool)> {
        self.batches
            .iter()
            .filter(|(_, b)| b.tests.iter().any(|t| t.from == g || t.to == g))
            .map(|(n, b)| (n.clone(), b.running.is_some()))
            .collect()
    }

    /// lst's `del_group`: refused while a test names the group; its
    /// nodes in no other group leave the session.
    pub(super) fn del_group(&mut self, name: &str) -> Result<(), String> {
        check_name("group", name)?;
        if !self.groups.contains_key(name) {
            return Err(format!("no group {name:?} in this session"));
        }
        if let Some((b, _)) = self.users_of(name).first() {
            return Err(format!(
                "group {name:?} is used by a test of batch {b:?}: a group a test refers to cannot be deleted"
            ));
        }
        self.groups.remove(name);
        self.drop_orphans();
        Ok(())
    }

    /// lst's `update_group`: refresh the nodes that are not active, or
    /// remove nodes by state or by name. Refused while a running batch
    /// uses the group, and when it would leave the group empty.
    pub(super) fn update_group(&mut self, name: &str, op: GroupUpdate) -> Result<(), String> {
        let nodes = self
            .groups
            .get(name)
            .cloned()
            .ok_or_else(|| format!("no group {name:?} in this session"))?;
        if let Some((b, _)) = self.users_of(name).into_iter().find(|(_, r)| *r) {
            return Err(format!(
                "group {name:?} is used by batch {b:?}, which is running: stop it first"
            ));
        }
        let keep: Vec<Node> = match op {
            GroupUpdate::Refresh => return self.refresh(&nodes),
            GroupUpdate::Clean(states) => nodes
                .iter()
                .filter(|n| !states.contains(&self.state_of(n)))
                .cloned()
                .collect(),
            GroupUpdate::Remove(words) => {
                let gone = crate::hosts::nodes(&words, self.cfg.port).map_err(|e| e.to_string())?;
                if let Some(g) = gone
                    .iter()
                    .find(|g| !nodes.iter().any(|n| n.addr == g.addr))
                {
                    return Err(format!(
                        "--remove: node {} is not in group {name:?}",
                        g.name
                    ));
                }
                nodes
                    .iter()
                    .filter(|n| !gone.iter().any(|g| g.addr == n.addr))
                    .cloned()
                    .collect()
            }
        };
        if keep.is_empty() {
            return Err(format!(
                "that would leave group {name:?} empty: delete it with del_group instead"
            ));
        }
        self.groups.insert(name.to_string(), keep);
        self.drop_orphans();
        Ok(())
    }

    /// Asks every node of `nodes` that is not active again: a node whose
    /// agent answers is active; the others are reconnected (started
    /// again where the session started them).
    fn refresh(&mut self, nodes: &[Node]) -> Result<(), String> {
        // The whole refresh within the session's connect timeout: asking
        // again and reconnecting share it.
        let until = Instant::now() + Duration::from_secs_f64(self.cfg.connect_timeout_s);
        let mut again = Vec::new();
        for n in nodes {
            let Some(i) = self.slots.iter().position(|s| s.node.addr == n.addr) else {
                again.push(n.clone());
                continue;
            };
            // An agent still in the session answers at once; one that is
            // gone is reconnected below, within what is left.
            let ask = until
                .saturating_duration_since(Instant::now())
                .min(REASK_WAIT)
                .max(Duration::from_millis(10));
            if self.slots[i].state == NodeState::Active || self.reopen_stat(i, ask).is_ok() {
                continue;
            }
            if self.slots[i].ctl.is_none() {
                return Err(format!(
                    "node {} is down and a running batch holds its agent: stop that batch first",
                    n.name
                ));
            }
            end_slot(self.slots.remove(i));
            again.push(n.clone());
        }
        if again.is_empty() {
            return Ok(());
        }
        self.ensure_agents(&again, Some(until))
            .map_err(|e| e.to_string())
    }

    /// Ends the agents of the nodes no group names any more.
    fn drop_orphans(&mut self) {
        let (keep, gone): (Vec<Slot>, Vec<Slot>) =
            std::mem::take(&mut self.slots).into_iter().partition(|s| {
                self.groups
                    .values()
                    .any(|g| g.iter().any(|n| n.addr == s.node.addr))
            });
        self.slots = keep;
        for s in gone {
            end_slot(s);
        }
    }

    /// The nodes a ping asks.
    fn ping_nodes(&self, target: &PingTarget) -> Result<Vec<Node>, String> {
        Ok(match target {
            PingTarget::Session => self.slots.iter().map(|s| s.node.clone()).collect(),
            PingTarget::Group(g) => self
                .groups
                .get(g)
                .cloned()
                .ok_or_else(|| format!("no group {g:?} in this session"))?,
            PingTarget::Nodes(words) => {
                crate::hosts::nodes(words, self.cfg.port).map_err(|e| e.to_string())?
            }
            PingTarget::Batch { name, server } => {
                let b = self
                    .batches
                    .get(name)
                    .ok_or_else(|| format!("no batch {name:?} in this session"))?;
                let mut out: Vec<Node> = Vec::new();
                for t in &b.tests {
                    let g = if *server { &t.to } else { &t.from };
                    for n in self.groups.get(g).into_iter().flatten() {
                        if !out.iter().any(|m| m.addr == n.addr) {
                            out.push(n.clone());
                        }
                    }
                }
                out
            }
        })
    }

    /// lst's `ping`: each node of the session answers over its stat
    /// connection within the timeout (active) or not (down); a node
    /// outside the session is down when nothing accepts a connection at
    /// its address, unknown when something does.
    pub(super) fn ping(&mut self, target: &PingTarget, timeout_s: f64) -> Result<Reply, String> {
        check_timeout(timeout_s)?;
        let wait = Duration::from_secs_f64(timeout_s);
        let mut out = Vec::new();
        for n in self.ping_nodes(target)? {
            let entry = match self.slots.iter().position(|s| s.node.addr == n.addr) {
                Some(i) => {
                    let _ = match self.slots[i].state {
                        NodeState::Active => probe_live(&mut self.slots[i], wait).map(drop),
                        _ => self.reopen_stat(i, wait),
                    };
                    let s = &self.slots[i];
                    PingEntry {
                        node: n.name.clone(),
                        state: s.state,
                        session: (s.state == NodeState::Active).then(|| self.cfg.name.clone()),
                    }
                }
                None => PingEntry {
                    node: n.name.clone(),
                    state: probe(&n.addr, wait),
                    session: None,
                },
            };
            out.push(entry);
        }
        Ok(Reply::Pinged { nodes: out })
    }

    /// Opens a new stat connection to the agent of slot `i` (its last
    /// one failed) and reads it: the node is active again when the agent
    /// still serves this session, and stays down when it does not (it
    /// died, or was started again and knows nothing of this session:
    /// `update_group --refresh` reconnects it).
    fn reopen_stat(&mut self, i: usize, wait: Duration) -> Result<(), String> {
        let key = self.key.clone().flatten();
        let s = &mut self.slots[i];
        match open_stat(&s.node, &self.token, key.as_ref(), wait) {
            Ok(c) => s.stat = c,
            Err(e) => {
                s.state = NodeState::Down;
                return Err(e.to_string());
            }
        }
        probe_live(s, wait).map(drop)
    }

    pub(super) fn show_session(&self) -> Reply {
        Reply::Session(SessionInfo {
            name: self.cfg.name.clone(),
            key: self.cfg.key.clone(),
            started_ms: self.started_ms,
            host: iolab_core::env::hostname(),
            timeout_s: self.cfg.timeout_s,
            nodes: self.slots.len(),
        })
    }
}

/// Says goodbye to one agent and lets it go (one the session started
/// exits; it is given a few seconds).
fn end_slot(mut s: Slot) {
    if let Some(c) = &mut s.ctl {
        c.idle_timeout = console::COMMAND_TIMEOUT;
        let _ = console::send(c, &Command::Bye, Cancel::process());
    }
    drop((s.ctl, s.stat));
    if let Some(r) = s.remote {
        let _ = r.wait(Duration::from_secs(5), || false);
    }
}

/// A node outside the session: down when nothing accepts a connection at
/// `addr` within `wait`, unknown when something does (iolab cannot ask
/// an agent of another console which session it serves).
fn probe(addr: &str, wait: Duration) -> NodeState {
    let reachable = addr
        .to_socket_addrs()
        .ok()
        .into_iter()
        .flatten()
        .any(|a| std::net::TcpStream::connect_timeout(&a, wait).is_ok());
    if reachable {
        NodeState::Unknown
    } else {
        NodeState::Down
    }
}
