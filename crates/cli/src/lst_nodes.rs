//! `iolab lst`'s console commands about nodes and the session, as LNet
//! selftest's console has them: `list_group`, `del_group`,
//! `update_group`, `ping`, `show_session` and `show_error`. Each checks
//! its own words (exit 2) before asking the session daemon.

use crate::exit::{Ended, HaltKind};
use crate::lst_session::{ask, fail, usage};
use clap::{ArgGroup, Args};
use iolab_core::Outcome;
use iolab_lst::session::{GroupUpdate, NodeState, PingTarget, Reply, Request};
use iolab_report::lst::session as r;
use std::time::Duration;

/// How long the daemon may take over a request about groups (a refresh
/// reconnects agents).
const GROUP_WAIT: Duration = Duration::from_secs(3600);

/// `list_group [--active|--busy|--down|--unknown|--all] [NAME...]`.
#[derive(Args, Debug)]
pub struct ListGroupArgs {
    /// Groups to show (none: every group's name).
    names: Vec<String>,
    /// List the active nodes.
    #[arg(long)]
    active: bool,
    /// List the busy nodes.
    #[arg(long)]
    busy: bool,
    /// List the nodes that are down.
    #[arg(long)]
    down: bool,
    /// List the nodes of unknown state.
    #[arg(long)]
    unknown: bool,
    /// List every node.
    #[arg(long)]
    all: bool,
}

/// A group name.
#[derive(Args, Debug)]
pub struct GroupArg {
    /// The group.
    name: String,
}

/// `update_group NAME --refresh | --clean STATE | --remove LIST`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("op").required(true).args(["refresh", "clean", "remove"])))]
pub struct UpdateGroupArgs {
    /// The group.
    name: String,
    /// Ask the nodes that are not active again (reconnecting them).
    #[arg(long)]
    refresh: bool,
    /// Remove the nodes in this state: active, busy, down, unknown or invalid (not active).
    #[arg(long, value_name = "STATE")]
    clean: Option<String>,
    /// Remove these nodes (NIDs or hosts, ranges allowed, separated by commas or spaces).
    #[arg(long, value_name = "LIST")]
    remove: Option<String>,
}

/// `ping --session | --group NAME | --nodes LIST | --batch NAME [--server]`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("whom").required(true).args(["session", "group", "nodes", "batch"])))]
pub struct PingArgs {
    /// Every node of the session.
    #[arg(long)]
    session: bool,
    /// A group's nodes.
    #[arg(long, value_name = "NAME")]
    group: Option<String>,
    /// These nodes (NIDs or hosts, ranges allowed), in the session or not.
    #[arg(long, value_name = "LIST")]
    nodes: Option<String>,
    /// A batch's client nodes.
    #[arg(long, value_name = "NAME")]
    batch: Option<String>,
    /// With --batch: its server nodes.
    #[arg(long, requires = "batch")]
    server: bool,
    /// Seconds each node may take to answer.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
}

/// `show_error [--session] GROUP|NODES...`.
#[derive(Args, Debug)]
pub struct ShowErrorArgs {
    /// Groups, or nodes of the session (NIDs, ranges).
    #[arg(required = true, value_name = "GROUP|NODES")]
    targets: Vec<String>,
    /// Only the errors of this session (not the agents' earlier ones).
    #[arg(long)]
    session: bool,
}

/// `list_group`.
pub fn list_group(a: ListGroupArgs) -> Ended {
    let f = r::NodeFilter {
        active: a.active || a.all,
        busy: a.busy || a.all,
        down: a.down || a.all,
        unknown: a.unknown || a.all,
    };
    if a.names.is_empty() && f.any() {
        return Err(usage(
            "list_group",
            "--active, --busy, --down, --unknown and --all list a group's nodes: name the group"
                .into(),
        ));
    }
    let mut groups = Vec::new();
    let names: Vec<Option<String>> = match a.names.is_empty() {
        true => vec![None],
        false => a.names.iter().cloned().map(Some).collect(),
    };
    for name in names {
        match ask(&Request::ListGroup { name }, Duration::from_secs(60)) {
            Ok(Reply::Groups { groups: g }) => groups.extend(g),
            Ok(_) => {
                return Err(fail(
                    "list_group",
                    (HaltKind::Failed, "unexpected answer".into()),
                ))
            }
            Err(e) => return Err(fail("list_group", e)),
        }
    }
    let text = if a.names.is_empty() {
        r::group_names(&groups)
    } else if f.any() {
        r::group_nodes(&groups, f)
    } else {
        r::group_counts(&groups)
    };
    let _ = out!("{text}");
    Ok(Outcome::Completed)
}

/// `del_group NAME`.
pub fn del_group(a: GroupArg) -> Ended {
    match ask(&Request::DelGroup { name: a.name }, GROUP_WAIT) {
        Ok(_) => {
            let _ = outln!("Group is deleted");
            Ok(Outcome::Completed)
        }
        Err(e) => Err(fail("del_group", e)),
    }
}

/// Words of a node list: separated by commas outside brackets, or spaces.
fn words(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut cur, mut depth) = (String::new(), 0u32);
    for c in list.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if (c == ',' && depth == 0) || c.is_whitespace() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A node list checked as add_group checks it.
fn node_words(opt: &str, list: &str) -> Result<Vec<String>, String> {
    let w = words(list);
    if w.is_empty() {
        return Err(format!("{opt}: no node named"));
    }
    iolab_lst::hosts::nodes(&w, iolab_lst::console::DEFAULT_PORT)
        .map_err(|e| format!("{opt}: {e}"))?;
    Ok(w)
}

/// `update_group`.
pub fn update_group(a: UpdateGroupArgs) -> Ended {
    let op = if a.refresh {
        Ok(GroupUpdate::Refresh)
    } else if let Some(s) = &a.clean {
        NodeState::parse_set(s)
            .map(GroupUpdate::Clean)
            .map_err(|e| format!("--clean {e}"))
    } else {
        node_words("--remove", a.remove.as_deref().unwrap_or("")).map(GroupUpdate::Remove)
    };
    let op = match op {
        Ok(o) => o,
        Err(e) => return Err(usage("update_group", e)),
    };
    match ask(&Request::UpdateGroup { name: a.name, op }, GROUP_WAIT) {
        Ok(_) => Ok(Outcome::Completed),
        Err(e) => Err(fail("update_group", e)),
    }
}

/// `ping`.
pub fn ping(a: PingArgs) -> Ended {
    if !(a.timeout > 0.0 && a.timeout <= 3600.0) {
        return Err(usage(
            "ping",
            format!("--timeout {}: more than 0, at most 3600 seconds", a.timeout),
        ));
    }
    let target = if a.session {
        PingTarget::Session
    } else if let Some(g) = a.group {
        PingTarget::Group(g)
    } else if let Some(b) = a.batch {
        PingTarget::Batch {
            name: b,
            server: a.server,
        }
    } else {
        match node_words("--nodes", a.nodes.as_deref().unwrap_or("")) {
            Ok(w) => PingTarget::Nodes(w),
            Err(e) => return Err(usage("ping", e)),
        }
    };
    let req = Request::Ping {
        target,
        timeout_s: a.timeout,
    };
    // Every node may take the whole timeout.
    match ask(&req, GROUP_WAIT) {
        Ok(Reply::Pinged { nodes }) => {
            let _ = out!("{}", r::ping(&nodes, &iolab_core::env::hostname()));
            Ok(Outcome::Completed)
        }
        Ok(_) => Err(fail("ping", (HaltKind::Failed, "unexpected answer".into()))),
        Err(e) => Err(fail("ping", e)),
    }
}

/// `show_session`.
pub fn show_session() -> Ended {
    match ask(&Request::ShowSession, Duration::from_secs(60)) {
        Ok(Reply::Session(s)) => {
            let _ = out!("{}", r::session(&s));
            Ok(Outcome::Completed)
        }
        Ok(_) => Err(fail(
            "show_session",
            (HaltKind::Failed, "unexpected answer".into()),
        )),
        Err(e) => Err(fail("show_session", e)),
    }
}

/// `show_error`: one reading of the nodes' error counts.
pub fn show_error(a: ShowErrorArgs) -> Ended {
    let req = Request::Sample {
        groups: a.targets,
        timeout_s: 10.0,
    };
    match ask(&req, Duration::from_secs(60)) {
        Ok(Reply::Sample { groups }) => {
            let _ = out!("{}", r::errors(&groups, a.session));
            Ok(Outcome::Completed)
        }
        Ok(_) => Err(fail(
            "show_error",
            (HaltKind::Failed, "unexpected answer".into()),
        )),
        Err(e) => Err(fail("show_error", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_split_outside_brackets() {
        assert_eq!(
            words("10.0.0.[2,3]@tcp,n1 n2"),
            ["10.0.0.[2,3]@tcp", "n1", "n2"]
        );
    }
}
