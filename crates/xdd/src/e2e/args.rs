//! The `-e2e` and `-restart` options as the option table applies them
//! (XDD 7.0 sections 10.5 and 10.7): words of the command line into
//! [`super::opts`]. Kept apart from the options' types so that the
//! configuration can hold those types without reaching the parser.

use super::opts::{Destination, E2eOpts};
use crate::error::UsageError;
use crate::parse::config::RawConfig;
use crate::parse::cursor::Cursor;

/// `-e2e OPERATOR [VALUE] ...`: one or more operators in a row.
pub fn e2e_option(c: &mut Cursor, r: &mut RawConfig, t: Option<usize>) -> Result<(), UsageError> {
    // With XDD's other spellings (parse_func.c's xddfunc_endtoend):
    // issrc, isdest, dest, host, baseport.
    const OPS: [&str; 15] = [
        "issource",
        "issrc",
        "isdestination",
        "isdest",
        "destination",
        "dest",
        "host",
        "port",
        "baseport",
        "portcount",
        "key",
        "timeout",
        "sockbuf",
        "noclobber",
        "partial",
    ];
    let expects = "issource, isdestination, destination HOST[:PORT[,N]], port N, portcount N, key FILE (or - for standard input), timeout SECONDS, sockbuf BYTES, noclobber or partial NAME";
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
        "issource" | "issrc" => Box::new(|e| e.issource = true),
        "isdestination" | "isdest" => Box::new(|e| e.isdestination = true),
        "destination" | "dest" | "host" => {
            let d =
                parse_destination(c.value("HOST[:PORT[,N]]")?).map_err(|m| c.err(m.to_string()))?;
            Box::new(move |e| e.destinations.push(d.clone()))
        }
        "port" | "baseport" => {
            let p = c.count("port number", 1, 65_535)? as u16;
            Box::new(move |e| e.port = Some(p))
        }
        "portcount" => {
            let n = c.count("port count", 1, crate::parse::validate::MAX_QTHREADS)? as u32;
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
        "partial" => {
            let f = c.value("file name")?.to_string();
            Box::new(move |e| e.partial = Some(f.clone()))
        }
        _ => Box::new(|e| e.noclobber = true),
    })
}

/// Reads `host[:baseport[,nports]]` (an IPv6 host in brackets).
pub fn parse_destination(s: &str) -> Result<Destination, super::error::E2eError> {
    let bad = |why: &str| super::error::E2eError::Destination {
        given: s.to_string(),
        why: why.to_string(),
    };
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
    // XDD's fourth field, a NUMA node for the destination's threads.
    let count = match count.map(|n| n.split_once(',')) {
        Some(Some((_, node))) => {
            return Err(bad(&format!(
                "the NUMA node ',{node}' (XDD's fourth field) is not implemented: iolab places no thread on a NUMA node; give HOST:PORT,N"
            )))
        }
        _ => count,
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
                .filter(|&n| n > 0 && u64::from(n) <= crate::parse::validate::MAX_QTHREADS)
                .ok_or_else(|| {
                    bad(&format!(
                        "the number of ports must be 1 to {}",
                        crate::parse::validate::MAX_QTHREADS
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
    // With XDD's other spellings: freq, byteoffset.
    const OPS: [&str; 6] = [
        "enable",
        "frequency",
        "freq",
        "file",
        "offset",
        "byteoffset",
    ];
    let expects = "enable, frequency SECONDS, file NAME or offset BYTES";
    operators(c, &OPS, expects, |c, op| {
        match op {
            "enable" => r.set(t, |o| o.restart.enable = true),
            "frequency" | "freq" => {
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
