//! What a run asks for, validated: the test (ping or bulk read/write),
//! how clients map to servers, how many RPCs each client keeps in flight,
//! and when it stops. Everything here is checked before any agent is
//! started or contacted.

use serde::{Deserialize, Serialize};

pub use crate::input::InputError;

/// Largest bulk size: the frame layer's payload limit allows more, but
/// lst's own limit is 1 MiB and a few MiB already saturate any link.
pub const MAX_BRW_BYTES: u64 = 16 << 20;
/// Most RPCs one client keeps in flight (LNet selftest's limit is 64 per
/// test; sites sweep up to that and a little beyond).
pub const MAX_CONCURRENCY: u32 = 1024;
/// Longest run, in seconds (a day).
pub const MAX_DURATION_S: f64 = 86_400.0;

/// Whether a bulk RPC reads from or writes to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BrwOp {
    /// The server sends `size` bytes in each reply.
    Read,
    /// The client sends `size` bytes in each request.
    Write,
}

/// How much of each bulk payload the receiver verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// Nothing beyond the frame's CRC.
    None,
    /// The first and last 8 bytes of the payload (as lst's `simple`).
    Simple,
    /// Every byte of the payload.
    Full,
}

/// One test, in lst's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "lowercase")]
pub enum Test {
    /// Empty request, empty reply.
    Ping,
    /// Bulk read or write of `size` bytes per RPC.
    Brw {
        /// Direction.
        op: BrwOp,
        /// Payload bytes per RPC.
        size: u32,
        /// Payload verification.
        check: Check,
    },
}

impl Test {
    /// Payload bytes in each request.
    pub fn request_bytes(&self) -> u32 {
        match self {
            Test::Brw {
                op: BrwOp::Write,
                size,
                ..
            } => *size,
            _ => 0,
        }
    }

    /// Payload bytes in each reply.
    pub fn reply_bytes(&self) -> u32 {
        match self {
            Test::Brw {
                op: BrwOp::Read,
                size,
                ..
            } => *size,
            _ => 0,
        }
    }

    /// The verification asked for (ping has none).
    pub fn check(&self) -> Check {
        match self {
            Test::Brw { check, .. } => *check,
            Test::Ping => Check::None,
        }
    }

    /// Checks a test that came from a peer (the console or a client
    /// agent) before anything is allocated for it.
    pub fn validate(&self) -> Result<(), InputError> {
        match *self {
            Test::Brw { size, .. } if !(8..=MAX_BRW_BYTES).contains(&u64::from(size)) => {
                Err(InputError::invalid(
                    format!("brw size {size}"),
                    format!("must be between 8 bytes and {} MiB", MAX_BRW_BYTES >> 20),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Parses lst's test words: `ping`, or `brw read|write [size=N]
    /// [check=none|simple|full]` (size defaults to 4k, check to none).
    pub fn parse(words: &[String]) -> Result<Test, InputError> {
        let (first, rest) = words.split_first().ok_or(InputError::Missing(
            "no test given: say `ping` or `brw read|write size=N check=none|simple|full`",
        ))?;
        match first.as_str() {
            "ping" if rest.is_empty() => Ok(Test::Ping),
            "ping" => Err(InputError::Extra {
                test: "ping",
                got: rest.join(" "),
            }),
            "brw" => parse_brw(rest),
            other => Err(InputError::invalid(
                format!("unknown test {other:?}"),
                "say `ping` or `brw read|write size=N check=none|simple|full`",
            )),
        }
    }
}

fn parse_brw(words: &[String]) -> Result<Test, InputError> {
    let mut op = None;
    let (mut size, mut check) = (4096u64, Check::None);
    let mut seen: Vec<(&str, &String)> = Vec::new();
    for w in words {
        // A second read/write, size= or check= replaced the first
        // without a word: refused, naming both.
        let key = match w.split_once('=') {
            Some((k, _)) => k,
            None if w == "read" || w == "write" => "read|write",
            None => w.as_str(),
        };
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            return Err(InputError::invalid(
                "brw",
                format!("{w:?} repeats {first:?}: give each parameter once"),
            ));
        }
        seen.push((key, w));
        match w.split_once('=') {
            None if w == "read" => op = Some(BrwOp::Read),
            None if w == "write" => op = Some(BrwOp::Write),
            Some(("size", v)) => size = parse_brw_size(v)?,
            Some(("check", "none")) => check = Check::None,
            Some(("check", "simple")) => check = Check::Simple,
            Some(("check", "full")) => check = Check::Full,
            Some(("check", v)) => {
                return Err(InputError::invalid(
                    format!("brw check={v}"),
                    "say check=none, simple or full",
                ))
            }
            _ => {
                return Err(InputError::invalid(
                    "brw",
                    format!("unknown parameter {w:?} (read|write, size=N, check=none|simple|full)"),
                ))
            }
        }
    }
    let op = op.ok_or(InputError::Missing("brw needs `read` or `write`"))?;
    Ok(Test::Brw {
        op,
        size: size as u32,
        check,
    })
}

fn parse_brw_size(v: &str) -> Result<u64, InputError> {
    let n = iolab_core::units::parse_size(v).map_err(|source| InputError::Size {
        what: format!("brw size={v}"),
        source,
    })?;
    if !(8..=MAX_BRW_BYTES).contains(&n) {
        return Err(InputError::invalid(
            format!("brw size={v}"),
            format!("must be between 8 bytes and {} MiB", MAX_BRW_BYTES >> 20),
        ));
    }
    Ok(n)
}

/// How clients map to servers, as lst's `--distribute A:B`: clients in
/// groups of A, each group given B servers, the next group the next B
/// (wrapping round the server list), as LNet's console does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribute {
    /// Clients per group.
    pub clients: u32,
    /// Servers per group.
    pub servers: u32,
}

impl Default for Distribute {
    fn default() -> Self {
        Distribute {
            clients: 1,
            servers: 1,
        }
    }
}

impl Distribute {
    /// Parses `A:B` with both at least 1.
    pub fn parse(s: &str) -> Result<Distribute, InputError> {
        let what = || format!("--distribute {s:?}");
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| InputError::invalid(what(), "write it as A:B, e.g. 1:1 or 1:2"))?;
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=4096).contains(n))
        };
        match (num(a), num(b)) {
            (Some(clients), Some(servers)) => Ok(Distribute { clients, servers }),
            _ => Err(InputError::invalid(
                what(),
                "A and B must be whole numbers from 1 to 4096",
            )),
        }
    }

    /// Refuses B larger than the server group, as LNet's console does
    /// (`lstcon_dstnodes_prep` returns -EINVAL): a client cannot talk to
    /// more distinct servers than there are.
    pub fn check(&self, n_servers: usize) -> Result<(), InputError> {
        if self.servers as usize <= n_servers {
            return Ok(());
        }
        Err(InputError::invalid(
            format!("--distribute {}:{}", self.clients, self.servers),
            format!(
                "B ({}) is more than the {n_servers} server(s) of the server group: give B at most {n_servers}",
                self.servers
            ),
        ))
    }

    /// For each of `n_clients` clients, the indices of its servers among
    /// `n_servers`, as LNet's console hands them out: client i gets B
    /// servers starting at `((i / A) * B) % n_servers`, wrapping round,
    /// so uneven groups still give every client exactly B servers.
    pub fn map(&self, n_clients: usize, n_servers: usize) -> Result<Vec<Vec<usize>>, InputError> {
        self.check(n_servers)?;
        let (a, b) = (self.clients as usize, self.servers as usize);
        Ok((0..n_clients)
            .map(|c| {
                let start = (c / a) * b;
                (start..start + b).map(|s| s % n_servers).collect()
            })
            .collect())
    }
}

/// When each client stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Issue RPCs for this many seconds, then drain.
    DurationS(f64),
    /// Issue this many RPCs per client.
    Count(u64),
}

impl Limit {
    /// Checks the bounds: a positive duration up to a day, a count >= 1.
    pub fn validate(&self) -> Result<(), InputError> {
        match *self {
            Limit::DurationS(s) if !(s > 0.0 && s <= MAX_DURATION_S) => Err(InputError::invalid(
                format!("--duration {s}"),
                format!("must be more than 0 and at most {MAX_DURATION_S} seconds"),
            )),
            Limit::Count(0) => Err(InputError::invalid("--count 0", "must be at least 1")),
            _ => Ok(()),
        }
    }
}

/// Parses a sweep list `1,2,4,8` of whole numbers in `1..=max`.
pub fn parse_list(option: &str, s: &str, max: u32) -> Result<Vec<u32>, InputError> {
    let v: Option<Vec<u32>> = s
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=max).contains(n))
        })
        .collect();
    v.filter(|v| !v.is_empty()).ok_or_else(|| {
        InputError::invalid(
            format!("{option} {s:?}"),
            format!("give whole numbers from 1 to {max}, separated by commas"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn tests_parse_as_lst_writes_them() {
        assert_eq!(Test::parse(&words("ping")), Ok(Test::Ping));
        assert_eq!(
            Test::parse(&words("brw write size=1M check=full")),
            Ok(Test::Brw {
                op: BrwOp::Write,
                size: 1 << 20,
                check: Check::Full
            })
        );
        assert!(Test::parse(&words("brw size=4k")).is_err());
        // The second of a repeated parameter won silently.
        for line in [
            "brw write size=4k size=8k",
            "brw read write",
            "brw read check=full check=none",
        ] {
            let e = Test::parse(&words(line)).unwrap_err().to_string();
            assert!(e.contains("give each parameter once"), "{line}: {e}");
        }
        assert!(Test::parse(&words("brw read size=1g")).is_err());
        assert!(Test::parse(&words("brw read check=most")).is_err());
        assert!(Test::parse(&words("pong")).is_err());
    }

    #[test]
    fn distribute_maps_groups_as_lst_does() {
        let d = Distribute::parse("1:1").unwrap();
        assert_eq!(d.map(3, 2), Ok(vec![vec![0], vec![1], vec![0]]));
        let d = Distribute::parse("2:1").unwrap();
        assert_eq!(d.map(4, 2), Ok(vec![vec![0], vec![0], vec![1], vec![1]]));
        let d = Distribute::parse("1:2").unwrap();
        assert_eq!(d.map(2, 2), Ok(vec![vec![0, 1], vec![0, 1]]));
        assert!(Distribute::parse("0:1").is_err());
        assert!(Distribute::parse("3").is_err());
    }

    /// LNet's `lstcon_dstnodes_prep`: client i's servers start at
    /// `((i / dist) * span) % nservers` and wrap, B of them each.
    fn lnet(d: Distribute, n_clients: usize, n_servers: usize) -> Vec<Vec<usize>> {
        let (dist, span) = (d.clients as usize, d.servers as usize);
        (0..n_clients)
            .map(|i| {
                let start = ((i / dist) * span) % n_servers;
                (0..span).map(|k| (start + k) % n_servers).collect()
            })
            .collect()
    }

    #[test]
    fn uneven_groups_map_as_lnet_does() {
        let d = Distribute::parse("1:2").unwrap();
        // 2 clients, 3 servers: the second client wraps to servers 3 and 1,
        // not to server 3 alone.
        assert_eq!(d.map(2, 3), Ok(vec![vec![0, 1], vec![2, 0]]));
        for (a, b) in [(1, 2), (2, 2), (1, 3), (3, 2), (2, 3), (1, 1), (4, 1)] {
            let d = Distribute {
                clients: a,
                servers: b,
            };
            for n_clients in 1..8 {
                for n_servers in b as usize..7 {
                    let got = d.map(n_clients, n_servers).unwrap();
                    assert_eq!(
                        got,
                        lnet(d, n_clients, n_servers),
                        "{a}:{b} {n_clients}x{n_servers}"
                    );
                    assert!(got.iter().all(|s| s.len() == b as usize));
                }
            }
        }
    }

    #[test]
    fn more_servers_per_client_than_the_group_has_is_refused() {
        let d = Distribute::parse("1:3").unwrap();
        let e = d.map(2, 2).unwrap_err().to_string();
        assert!(
            e.contains("--distribute 1:3") && e.contains("at most 2"),
            "{e}"
        );
        assert!(d.check(3).is_ok());
    }

    #[test]
    fn sweep_lists_are_bounded() {
        assert_eq!(parse_list("--clients", "1,2,4", 16), Ok(vec![1, 2, 4]));
        assert!(parse_list("--clients", "1,0", 16).is_err());
        assert!(parse_list("--clients", "", 16).is_err());
        assert!(parse_list("--concurrency", "2000", MAX_CONCURRENCY).is_err());
    }
}
