//! The `-endtoend` (`-e2e`) and `-restart` options: their values, how
//! the command line sets them, and the QThread-to-address mapping they
//! imply. Nothing here opens a socket.

use crate::config::{RawConfig, TargetOpts};
use crate::cursor::Cursor;
use crate::error::UsageError;
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
    /// unless a restart record for it says how much of it is written.
    pub noclobber: bool,
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
    pub fn endpoints(&self, queuedepth: u64) -> Result<Vec<(String, u16)>, String> {
        let counts = self.counts(queuedepth)?;
        let mut out = Vec::new();
        for (d, n) in self.destinations.iter().zip(counts) {
            let base = d.base_port.or(self.port).unwrap_or(DEFAULT_PORT);
            let last = u64::from(base) + n - 1;
            if last > 65_535 {
                return Err(format!(
                    "{}: {n} ports from {base} go past port 65535; choose a lower base port",
                    d.describe()
                ));
            }
            for k in 0..n {
                let ep = (d.host.clone(), (u64::from(base) + k) as u16);
                if out.contains(&ep) {
                    return Err(format!(
                        "port {} of {} is used by two QThreads; give the destinations separate port ranges",
                        ep.1, ep.0
                    ));
                }
                out.push(ep);
            }
        }
        Ok(out)
    }

    /// Ports per destination: each its own count (or `portcount`); one
    /// destination without a count takes the whole queue depth.
    fn counts(&self, queuedepth: u64) -> Result<Vec<u64>, String> {
        let given: Vec<Option<u64>> = self
            .destinations
            .iter()
            .map(|d| d.ports.or(self.portcount).map(u64::from))
            .collect();
        match given.as_slice() {
            [] => Err("no destination: give -e2e destination HOST[:PORT[,N]] on both sides".into()),
            [None] => Ok(vec![queuedepth]),
            g if g.iter().all(Option::is_some) => Ok(g.iter().map(|n| n.unwrap_or(0)).collect()),
            _ => Err(
                "with several destinations, give each its ports (HOST:PORT,N) or -e2e portcount N"
                    .into(),
            ),
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

/// `-e2e OPERATOR [VALUE] ...`: one or more operators in a row.
pub fn e2e_option(c: &mut Cursor, r: &mut RawConfig, t: Option<usize>) -> Result<(), UsageError> {
    const OPS: [&str; 9] = [
        "issource",
        "isdestination",
        "destination",
        "port",
        "portcount",
        "key",
        "timeout",
        "sockbuf",
        "noclobber",
    ];
    let expects = "issource, isdestination, destination HOST[:PORT[,N]], port N, portcount N, key FILE (or - for standard input), timeout SECONDS, sockbuf BYTES or noclobber";
    operators(c, &OPS, expects, |c, op| {
        let set = e2e_operator(c, op)?;
        r.set(t, move |o| set(&mut o.e2e));
        Ok(())
    })
}

/// Reads one or more operators of `ops` in a row (any case), each with
/// its values through `each`; none at all is an error saying what the
/// option `expects`.
fn operators(
    c: &mut Cursor,
    ops: &[&str],
    expects: &str,
    mut each: impl FnMut(&mut Cursor, &str) -> Result<(), UsageError>,
) -> Result<(), UsageError> {
    let mut any = false;
    while let Some(op) = c
        .peek()
        .map(str::to_ascii_lowercase)
        .filter(|w| ops.contains(&w.as_str()))
    {
        c.value("operator")?;
        each(c, &op)?;
        any = true;
    }
    if !any {
        return Err(c.err(format!(
            "expects {expects}{}",
            c.peek()
                .map(|w| format!(" (not '{w}')"))
                .unwrap_or_default()
        )));
    }
    Ok(())
}

type E2eSetter = Box<dyn Fn(&mut E2eOpts)>;

fn e2e_operator(c: &mut Cursor, op: &str) -> Result<E2eSetter, UsageError> {
    Ok(match op {
        "issource" => Box::new(|e| e.issource = true),
        "isdestination" => Box::new(|e| e.isdestination = true),
        "destination" => {
            let d = parse_destination(c.value("HOST[:PORT[,N]]")?).map_err(|m| c.err(m))?;
            Box::new(move |e| e.destinations.push(d.clone()))
        }
        "port" => {
            let p = c.count("port number", 1, 65_535)? as u16;
            Box::new(move |e| e.port = Some(p))
        }
        "portcount" => {
            let n = c.count("port count", 1, crate::validate::MAX_QTHREADS)? as u32;
            Box::new(move |e| e.portcount = Some(n))
        }
        "key" => {
            let f = c.value("key file")?.to_string();
            Box::new(move |e| e.key = Some(f.clone()))
        }
        "timeout" => {
            let s = c.seconds("seconds")?;
            if s <= 0.0 {
                return Err(c.err("the timeout must be more than 0 seconds"));
            }
            Box::new(move |e| e.timeout_s = Some(s))
        }
        "sockbuf" => {
            let b = c.count("bytes", 4096, 1 << 30)?;
            Box::new(move |e| e.sockbuf = Some(b))
        }
        _ => Box::new(|e| e.noclobber = true),
    })
}

/// Reads `host[:baseport[,nports]]` (an IPv6 host in brackets).
pub fn parse_destination(s: &str) -> Result<Destination, String> {
    let bad = |why: &str| format!("destination '{s}': {why} (HOST[:PORT[,N]])");
    let (host, rest) = if let Some(r) = s.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or_else(|| bad("no ']'"))?;
        (h.to_string(), after.strip_prefix(':').unwrap_or(after))
    } else {
        match s.split_once(':') {
            Some((h, r)) => (h.to_string(), r),
            None => (s.to_string(), ""),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let (port, count) = match rest.split_once(',') {
        Some((p, n)) => (p, Some(n)),
        None => (rest, None),
    };
    let base_port = match port {
        "" => None,
        p => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad("the port must be 1 to 65535"))?,
        ),
    };
    let ports = match count {
        None => None,
        Some(n) => Some(
            n.parse::<u32>()
                .ok()
                .filter(|&n| n > 0 && u64::from(n) <= crate::validate::MAX_QTHREADS)
                .ok_or_else(|| {
                    bad(&format!(
                        "the number of ports must be 1 to {}",
                        crate::validate::MAX_QTHREADS
                    ))
                })?,
        ),
    };
    Ok(Destination {
        host,
        base_port,
        ports,
    })
}

/// `-restart OPERATOR [VALUE] ...`: one or more operators in a row.
pub fn restart_option(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    const OPS: [&str; 4] = ["enable", "frequency", "file", "offset"];
    let expects = "enable, frequency SECONDS, file NAME or offset BYTES";
    operators(c, &OPS, expects, |c, op| {
        match op {
            "enable" => r.set(t, |o| o.restart.enable = true),
            "frequency" => {
                let s = c.seconds("seconds")?;
                if s <= 0.0 {
                    return Err(c.err("the frequency must be more than 0 seconds"));
                }
                r.set(t, move |o| o.restart.frequency_s = Some(s));
            }
            "file" => {
                let f = c.value("restart file name")?.to_string();
                r.set(t, move |o| o.restart.file = Some(f.clone()));
            }
            _ => {
                let n = c.u64("offset in bytes")?;
                r.set(t, move |o| o.restart.offset = Some(n));
            }
        }
        Ok(())
    })
}

/// After the settings are replayed: the queue depth the destination
/// list implies wins over -queuedepth (guide 6.2).
pub fn imply_queuedepth(t: &mut TargetOpts) {
    if let Some(qd) = t.e2e.implied_queuedepth() {
        t.queuedepth = qd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(high.endpoints(2).unwrap_err().contains("65535"));
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
