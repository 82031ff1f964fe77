//! Free loopback ports for agents and servers iolab (or a test) starts
//! on this machine and tells their clients of before they listen.
//!
//! A port the kernel hands out for `bind(0)` lies in its ephemeral range
//! (`net.ipv4.ip_local_port_range`, 32768 up by default), which is also
//! where every outgoing connection takes its source port. Between the
//! moment such a port is found free and the moment the agent binds it,
//! any connection on the machine may take it, and the agent fails with
//! "address in use". So the ports here come from below that range, where
//! the kernel puts no source port, and a run of them is searched from a
//! place that differs between processes and calls, so two callers at the
//! same time rarely try the same ones.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

/// The lowest port searched: below it lie the well-known and registered
/// services a machine is likely to run.
const LOWEST: u16 = 10_000;

/// Where Linux's ephemeral range starts when /proc does not say.
const EPHEMERAL_DEFAULT: u16 = 32_768;

/// How many places are tried before giving up.
const TRIES: u64 = 2_000;

static CALLS: AtomicU64 = AtomicU64::new(0);

/// The first port of `n` consecutive loopback ports that nothing listens
/// on now, all below the kernel's ephemeral range. Errors when no such
/// run is found in `TRIES` places (the range is crowded or too small).
pub fn free_loopback_run(n: u16) -> std::io::Result<u16> {
    let top = ephemeral_start().max(LOWEST + n + 1);
    let span = u64::from(top - LOWEST - n);
    let seed = crate::random::mix(
        u64::from(std::process::id()) << 32
            ^ CALLS.fetch_add(1, Ordering::Relaxed)
            ^ crate::clock::wall_ns(),
    );
    for k in 0..TRIES {
        let base = LOWEST + ((seed.wrapping_add(k.wrapping_mul(7_919))) % span) as u16;
        // Held together until the whole run is found, so the ports
        // differ from one another and from other runs found meanwhile.
        let held: Result<Vec<TcpListener>, _> = (0..n)
            .map(|i| TcpListener::bind(("127.0.0.1", base + i)))
            .collect();
        if held.is_ok() {
            return Ok(base);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!(
            "no {n} free loopback ports in a row between {LOWEST} and {top} (the start of the ephemeral range)"
        ),
    ))
}

/// `n` free loopback ports, as `free_loopback_run` finds them.
pub fn free_loopback_ports(n: u16) -> std::io::Result<Vec<u16>> {
    let base = free_loopback_run(n)?;
    Ok((base..base + n).collect())
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ports_are_free_distinct_and_below_the_ephemeral_range() {
        let ports = free_loopback_ports(3).unwrap();
        assert_eq!(ports.len(), 3);
        assert!(ports.windows(2).all(|w| w[1] == w[0] + 1));
        assert!(ports[2] < ephemeral_start().max(LOWEST + 4));
        // Free: each can be bound now.
        let held: Vec<TcpListener> = ports
            .iter()
            .map(|p| TcpListener::bind(("127.0.0.1", *p)).unwrap())
            .collect();
        // A run found while those are held is another run.
        let other = free_loopback_ports(3).unwrap();
        assert!(
            other.iter().all(|p| !ports.contains(p)),
            "{ports:?} {other:?}"
        );
        drop(held);
    }
}
