//! Host lists as lst's `add_group` reads them: ranges in brackets
//! (`192.168.1.[20-35]`, `n[1,3,5-7]`) and LNet NIDs (`ADDR@tcp`,
//! `ADDR@o2ib1`), which name an agent already running at ADDR.

use crate::console::Node;
use crate::input::InputError;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};

/// Most hosts one word may expand to.
pub const MAX_EXPANSION: usize = 4096;

/// Expands every bracketed range of `word` (`a[1-3]b[5,7]` gives six
/// names); a word without brackets is itself.
pub fn expand(word: &str) -> Result<Vec<String>, InputError> {
    let Some(open) = word.find('[') else {
        if word.contains(']') {
            return Err(InputError::invalid(
                format!("{word:?}"),
                "a ']' without its '['",
            ));
        }
        return Ok(vec![word.to_string()]);
    };
    let close = word[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or_else(|| InputError::invalid(format!("{word:?}"), "a '[' without its ']'"))?;
    let (head, list, tail) = (&word[..open], &word[open + 1..close], &word[close + 1..]);
    let mut out = Vec::new();
    for n in numbers(word, list)? {
        for rest in expand(tail)? {
            out.push(format!("{head}{n}{rest}"));
            if out.len() > MAX_EXPANSION {
                return Err(InputError::invalid(
                    format!("{word:?}"),
                    format!("more than {MAX_EXPANSION} hosts"),
                ));
            }
        }
    }
    Ok(out)
}

/// `1,3,5-7` as the numbers it names (kept as written, so `[01-03]`
/// keeps its leading zeros).
fn numbers(word: &str, list: &str) -> Result<Vec<String>, InputError> {
    let bad = || {
        InputError::invalid(
            format!("{word:?}"),
            "write a range as [A-B] or [A,B,C-D] with whole numbers",
        )
    };
    let mut out = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let width = if a.starts_with('0') { a.len() } else { 0 };
        let (lo, hi): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if lo > hi || (hi - lo) as usize >= MAX_EXPANSION {
            return Err(bad());
        }
        out.extend((lo..=hi).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

/// Whether `net` is an LNet network name (`tcp`, `tcp1`, `o2ib0`...).
fn is_lnet(net: &str) -> bool {
    let name = net.trim_end_matches(|c: char| c.is_ascii_digit());
    matches!(name, "tcp" | "o2ib" | "gni" | "kfi" | "ptl" | "lo")
}

/// One host of a group: a NID (`ADDR@tcp`, `ADDR:PORT@tcp`) is an agent
/// already running at ADDR (on `port` unless given); anything else is
/// read as `lst run` reads its nodes ([`Node::parse`]).
pub fn node(word: &str, port: u16) -> Result<Node, InputError> {
    match word.rsplit_once('@') {
        Some((addr, net)) if is_lnet(net) => {
            let mut n = Node::parse(addr, port)?;
            n.name = word.to_string();
            n.launch = None;
            Ok(n)
        }
        _ => Node::parse(word, port),
    }
}

/// Every node of an add_group host list (ranges expanded).
pub fn nodes(words: &[String], port: u16) -> Result<Vec<Node>, InputError> {
    let mut out = Vec::new();
    for w in words {
        for h in expand(w)? {
            out.push(node(&h, port)?);
            if out.len() > MAX_EXPANSION {
                break;
            }
        }
    }
    if out.is_empty() || out.len() > MAX_EXPANSION {
        return Err(InputError::GroupSize {
            got: out.len(),
            max: MAX_EXPANSION,
        });
    }
    distinct(&out)?;
    Ok(out)
}

/// The socket addresses `addr` resolves to now; none when it does not
/// resolve (the connection will say why), so it is compared as written.
fn resolve(addr: &str) -> Vec<SocketAddr> {
    addr.to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default()
}

/// Refuses a group that names one agent twice: the same `ADDR:PORT`
/// written twice, or two spellings (`localhost:7819`, `127.0.0.1:7819`)
/// that resolve to a common address. Each agent serves one console
/// connection and runs one client job at a time, so a node given twice
/// would be merged into one, or refuse its own console as busy.
pub fn distinct(group: &[Node]) -> Result<(), InputError> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut at: HashMap<SocketAddr, usize> = HashMap::new();
    for (i, n) in group.iter().enumerate() {
        let addrs = resolve(&n.addr);
        let twin = seen
            .get(&n.addr)
            .or_else(|| addrs.iter().find_map(|a| at.get(a)));
        if let Some(&j) = twin {
            return Err(InputError::SameAgent {
                first: group[j].name.clone(),
                second: n.name.clone(),
                addr: n.addr.clone(),
            });
        }
        seen.insert(n.addr.clone(), i);
        at.extend(addrs.into_iter().map(|a| (a, i)));
    }
    Ok(())
}

/// A node of `to` written otherwise than the `from` node whose agent it
/// is (`localhost:7819` and `127.0.0.1:7819`) becomes that node's
/// address, so that one agent is both client and server, as a node
/// written alike in both groups is, instead of being reached twice.
pub fn join_spellings(from: &[Node], to: &mut [Node]) {
    let at: Vec<(Vec<SocketAddr>, &Node)> = from.iter().map(|n| (resolve(&n.addr), n)).collect();
    for n in to.iter_mut() {
        if from.iter().any(|m| m.addr == n.addr) {
            continue;
        }
        let mine = resolve(&n.addr);
        if let Some((_, m)) = at.iter().find(|(a, _)| a.iter().any(|x| mine.contains(x))) {
            n.addr = m.addr.clone();
            n.launch = m.launch.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_as_lst_writes_them() {
        assert_eq!(
            expand("192.168.1.[20-22]@tcp").unwrap(),
            ["192.168.1.20@tcp", "192.168.1.21@tcp", "192.168.1.22@tcp"]
        );
        assert_eq!(expand("n[1,3-4]").unwrap(), ["n1", "n3", "n4"]);
        assert_eq!(expand("n[08-10]").unwrap(), ["n08", "n09", "n10"]);
        assert_eq!(expand("a[1-2]b[1-2]").unwrap().len(), 4);
        for bad in ["n[1-", "n]", "n[3-1]", "n[a-b]", "n[0-999999]"] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nids_name_running_agents() {
        let n = node("10.0.0.5@tcp", 7819).unwrap();
        assert_eq!((n.addr.as_str(), n.launch), ("10.0.0.5:7819", None));
        let n = node("10.0.0.5:9000@o2ib1", 7819).unwrap();
        assert_eq!((n.addr.as_str(), n.launch), ("10.0.0.5:9000", None));
        let n = node("ns1@10.0.0.5", 7819).unwrap();
        assert_eq!(n.launch.as_deref(), Some("ns1"));
        let words = ["10.0.0.[1-2]@tcp".to_string(), "10.0.0.2:7819".to_string()];
        assert!(nodes(&words, 7819)
            .unwrap_err()
            .to_string()
            .contains("same agent"));
        // Two spellings of one address and port are one agent too.
        let words = ["127.0.0.1:7819".to_string(), "localhost:7819".to_string()];
        assert!(nodes(&words, 7819)
            .unwrap_err()
            .to_string()
            .contains("same agent"));
    }
}
