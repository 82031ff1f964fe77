//! The `-endtoend` (`-e2e`) and `-restart` options: their values and
//! the QThread-to-address mapping they imply ([`super::args`] reads them
//! from the command line). Nothing here opens a socket.

use serde::{Deserialize, Serialize};

/// Base port when neither `-e2e port` nor `host:port` gives one (xddcp's
/// default too).
pub const DEFAULT_PORT: u16 = 40010;

/// Seconds the source retries its connects and the destination waits
/// for its source, when `-e2e timeout` does not say.
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;

/// Seconds between restart records when `-restart frequency` does not say.
pub const DEFAULT_FREQUENCY_S: f64 = 1.0;

/// Which side of a copy this instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads the target and sends it (`-e2e issource`).
    Source,
    /// Receives and writes the target (`-e2e isdestination`).
    Destination,
}

/// One `-e2e destination host[:baseport[,nports]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destination {
    /// Host name or address on the destination side (both sides name it).
    pub host: String,
    /// First port of its range, when given.
    pub base_port: Option<u16>,
    /// Ports (QThreads) on this address, when given.
    pub ports: Option<u32>,
}

impl Destination {
    /// `host:base,n` as written on the command line (normalised).
    pub fn describe(&self) -> String {
        let mut s = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if let Some(p) = self.base_port {
            s += &format!(":{p}");
        }
        if let Some(n) = self.ports {
            s += &format!(",{n}");
        }
        s
    }
}

/// Every `-e2e` setting of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct E2eOpts {
    /// `issource` was given.
    pub issource: bool,
    /// `isdestination` was given.
    pub isdestination: bool,
    /// Destination addresses, in order.
    pub destinations: Vec<Destination>,
    /// `port N`: base port for addresses that give none.
    pub port: Option<u16>,
    /// `portcount N`: ports for addresses that give none.
    pub portcount: Option<u32>,
    /// `key FILE` (iolab): shared key for the handshake.
    pub key: Option<String>,
    /// `timeout S` (iolab): connect retries, accept wait and idle limit.
    pub timeout_s: Option<f64>,
    /// `sockbuf BYTES` (iolab): socket send and receive buffers, for
    /// links whose bandwidth x delay is beyond what the kernel's own
    /// tuning reaches (it is then off; capped by net.core.*mem_max).
    #[serde(default)]
    pub sockbuf: Option<u64>,
    /// `noclobber` (iolab): the destination refuses an existing file
    /// unless a restart record for it says how much of it is written,
    /// and builds a new copy under a temporary name
    /// ([`super::partial`]), renamed to the destination's once complete.
    pub noclobber: bool,
    /// `partial NAME` (iolab, with `noclobber`): the temporary name the
    /// copy is built under [`DESTINATION.partial`].
    #[serde(default)]
    pub partial: Option<String>,
}

impl E2eOpts {
    /// The side this target is on, when it is an end-to-end target.
    pub fn role(&self) -> Option<Role> {
        match (self.issource, self.isdestination) {
            (true, false) => Some(Role::Source),
            (false, true) => Some(Role::Destination),
            _ => None,
        }
    }

    /// True when any -e2e operator was given for the target.
    pub fn any(&self) -> bool {
        *self != E2eOpts::default()
    }

    /// Seconds every network wait is bounded by.
    pub fn timeout_s(&self) -> f64 {
        self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S)
    }

    /// The queue depth the destinations imply (the sum of their port
    /// counts), when every one of them has a count.
    pub fn implied_queuedepth(&self) -> Option<u64> {
        if self.destinations.is_empty() {
            return None;
        }
        self.destinations
            .iter()
            .map(|d| d.ports.or(self.portcount).map(u64::from))
            .sum()
    }

    /// `host:base,n` of every destination, normalised, for the handshake.
    pub fn describe_destinations(&self) -> Vec<String> {
        self.destinations
            .iter()
            .map(Destination::describe)
            .collect()
    }

    /// The address and port of every QThread, in QThread order: QThread
    /// k uses the base port of its destination plus its rank there.
    pub fn endpoints(&self, queuedepth: u64) -> Result<Vec<(String, u16)>, super::error::E2eError> {
        let counts = self.counts(queuedepth)?;
        let mut out = Vec::new();
        for (d, n) in self.destinations.iter().zip(counts) {
            let base = d.base_port.or(self.port).unwrap_or(DEFAULT_PORT);
            let last = u64::from(base) + n - 1;
            if last > 65_535 {
                return Err(super::error::E2eError::PastMax {
                    destination: d.describe(),
                    ports: n,
                    base,
                });
            }
            for k in 0..n {
                let ep = (d.host.clone(), (u64::from(base) + k) as u16);
                if out.contains(&ep) {
                    return Err(super::error::E2eError::PortTwice {
                        port: ep.1,
                        host: ep.0,
                    });
                }
                out.push(ep);
            }
        }
        Ok(out)
    }

    /// Ports per destination: each its own count (or `portcount`); one
    /// destination without a count takes the whole queue depth.
    fn counts(&self, queuedepth: u64) -> Result<Vec<u64>, super::error::E2eError> {
        let given: Vec<Option<u64>> = self
            .destinations
            .iter()
            .map(|d| d.ports.or(self.portcount).map(u64::from))
            .collect();
        match given.as_slice() {
            [] => Err(super::error::E2eError::NoDestination),
            [None] => Ok(vec![queuedepth]),
            g if g.iter().all(Option::is_some) => Ok(g.iter().map(|n| n.unwrap_or(0)).collect()),
            _ => Err(super::error::E2eError::PortsOfEach),
        }
    }
}

/// Every `-restart` setting of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RestartOpts {
    /// `enable`: keep a restart file (destination), follow the
    /// destination's resume offset (source).
    pub enable: bool,
    /// `frequency S`: seconds between records.
    pub frequency_s: Option<f64>,
    /// `file NAME`: the restart file.
    pub file: Option<String>,
    /// `offset BYTES`: resume the copy at this byte.
    pub offset: Option<u64>,
}

impl RestartOpts {
    /// True when any -restart operator was given.
    pub fn any(&self) -> bool {
        *self != RestartOpts::default()
    }

    /// True when the destination keeps a restart file: `enable`, `file`
    /// or `frequency` was given.
    pub fn monitored(&self) -> bool {
        self.enable || self.file.is_some() || self.frequency_s.is_some()
    }

    /// Seconds between records.
    pub fn frequency_s(&self) -> f64 {
        self.frequency_s.unwrap_or(DEFAULT_FREQUENCY_S)
    }

    /// The restart file of a destination target at `path`: `file`, or
    /// `PATH.restart` beside it.
    pub fn file_for(&self, path: &str) -> String {
        self.file
            .clone()
            .unwrap_or_else(|| format!("{path}.restart"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::args::parse_destination;

    #[test]
    fn destinations_parse_with_and_without_ports() {
        let d = parse_destination("h1:40010,4").unwrap();
        assert_eq!(
            (d.host.as_str(), d.base_port, d.ports),
            ("h1", Some(40010), Some(4))
        );
        assert_eq!(parse_destination("h").unwrap().base_port, None);
        let v6 = parse_destination("[::1]:9,2").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.describe()),
            ("::1", "[::1]:9,2".into())
        );
        for bad in ["", ":5", "h:0", "h:70000", "h:5,0", "[::1"] {
            assert!(parse_destination(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn qthreads_map_to_base_port_plus_rank() {
        let e = E2eOpts {
            destinations: vec![
                parse_destination("a:100,2").unwrap(),
                parse_destination("b:200,3").unwrap(),
            ],
            ..Default::default()
        };
        assert_eq!(e.implied_queuedepth(), Some(5));
        let ep = e.endpoints(5).unwrap();
        assert_eq!(ep[1], ("a".into(), 101));
        assert_eq!(ep[4], ("b".into(), 202));
        let one = E2eOpts {
            destinations: vec![parse_destination("a").unwrap()],
            port: Some(3010),
            ..Default::default()
        };
        assert_eq!(one.implied_queuedepth(), None);
        assert_eq!(one.endpoints(4).unwrap()[3], ("a".into(), 3013));
        let high = E2eOpts {
            destinations: vec![parse_destination("a:65535,2").unwrap()],
            ..Default::default()
        };
        assert!(high.endpoints(2).unwrap_err().to_string().contains("65535"));
        let mixed = E2eOpts {
            destinations: vec![
                parse_destination("a:1,2").unwrap(),
                parse_destination("b").unwrap(),
            ],
            ..Default::default()
        };
        assert!(mixed.endpoints(2).is_err());
    }
}
