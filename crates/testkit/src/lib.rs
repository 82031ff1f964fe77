//! Test fixtures for iolab's network features (dev-only).
//!
//! [`FakeCluster`] makes `n` "hosts", each a network namespace with an
//! address on a private /24, joined by a bridge that lives in a namespace
//! of its own. Before any address exists, the subnet gets an
//! `unreachable` route in the root namespace, so no packet for it can
//! leave the machine; the route also claims the subnet, so concurrent
//! tests pick different ones. Drop removes the namespaces (and with them
//! the veth pairs and the bridge) and the route, also when a test
//! panics; a cluster whose test process was killed outright is removed
//! by the next `FakeCluster::new` (a ledger in `/run/iolab-testkit` says
//! which process claimed each subnet). The remote shell into a host is `ip netns exec NS`.
//!
//! ```no_run
//! let c = iolab_testkit::FakeCluster::new(2).unwrap();
//! let (ns, addr) = c.host(1);
//! let l = c.in_host(1, || std::net::TcpListener::bind((addr, 0))).unwrap().unwrap();
//! let port = l.local_addr().unwrap().port();
//! c.in_host(0, || std::net::TcpStream::connect((addr, port)).unwrap()).unwrap();
//! println!("{ns} listens at {addr}:{port}");
//! ```

pub mod delayfs;
pub mod fault_proxy;
pub mod s3;
pub mod slurm;

use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// First two octets of every fake cluster's subnet.
pub const NET_PREFIX: (u8, u8) = (10, 213);

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A set of network namespaces on one private bridge.
#[derive(Debug)]
pub struct FakeCluster {
    hosts: Vec<String>,
    bridge: String,
    subnet: Option<u8>,
    created: Vec<String>,
}

/// Runs `ip ARGS`, failing with its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl FakeCluster {
    /// Makes `n_hosts` namespaces (1 to 250) on a fresh subnet. Needs
    /// root (CAP_NET_ADMIN) and iproute2; the error says which step failed.
    pub fn new(n_hosts: usize) -> Result<FakeCluster, String> {
        if !(1..=250).contains(&n_hosts) {
            return Err(format!("a fake cluster has 1 to 250 hosts, not {n_hosts}"));
        }
        let id = format!(
            "{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = FakeCluster {
            hosts: (0..n_hosts).map(|i| format!("iolab{id}h{i}")).collect(),
            bridge: format!("iolab{id}br"),
            subnet: None,
            created: Vec::new(),
        };
        reap_stale();
        c.claim_subnet()?;
        c.build()?;
        Ok(c)
    }

    /// Adds the unreachable route for the first free 10.213.X.0/24: the
    /// kernel refuses a second identical route, so this both guards and
    /// claims the subnet.
    fn claim_subnet(&mut self) -> Result<(), String> {
        let start = (std::process::id() as usize * 7 + NEXT.load(Ordering::Relaxed) as usize) % 250;
        let mut last = String::new();
        for k in 0..250 {
            let x = ((start + k) % 250 + 1) as u8;
            match ip(&["route", "add", "unreachable", &Self::cidr(x)]) {
                Ok(()) => {
                    self.subnet = Some(x);
                    ledger_write(x);
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(format!("no free 10.213.X.0/24 subnet: {last}"))
    }

    fn cidr(x: u8) -> String {
        format!("{}.{}.{x}.0/24", NET_PREFIX.0, NET_PREFIX.1)
    }

    fn build(&mut self) -> Result<(), String> {
        let br = self.bridge.clone();
        self.add_ns(&br)?;
        ip(&["-n", &br, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &br, "link", "set", "br0", "up"])?;
        for i in 0..self.hosts.len() {
            let h = self.hosts[i].clone();
            self.add_ns(&h)?;
            let port = format!("p{i}");
            ip(&[
                "link", "add", "eth0", "netns", &h, "type", "veth", "peer", "name", &port, "netns",
                &br,
            ])?;
            ip(&["-n", &br, "link", "set", &port, "master", "br0", "up"])?;
            let addr = format!("{}/24", self.addr(i));
            ip(&["-n", &h, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &h, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    fn add_ns(&mut self, name: &str) -> Result<(), String> {
        ip(&["netns", "add", name])?;
        self.created.push(name.to_string());
        ip(&["-n", name, "link", "set", "lo", "up"])
    }

    fn addr(&self, i: usize) -> Ipv4Addr {
        let x = self.subnet.unwrap_or(0);
        Ipv4Addr::new(NET_PREFIX.0, NET_PREFIX.1, x, (i + 1) as u8)
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// True when the cluster has no host (never: `new` refuses 0).
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Host `i`'s namespace name and address.
    pub fn host(&self, i: usize) -> (String, Ipv4Addr) {
        (self.hosts[i].clone(), self.addr(i))
    }

    /// The subnet, `10.213.X.0/24`.
    pub fn subnet(&self) -> String {
        Self::cidr(self.subnet.unwrap_or(0))
    }

    /// The remote shell that runs a command on a host: `ip netns exec`,
    /// which passes the words on as they are (hence `exec:`).
    pub fn rsh(&self) -> &'static str {
        "exec:ip netns exec"
    }

    /// Runs `f` on a thread that has entered host `i`'s network
    /// namespace (only that thread moves; the test's other threads stay
    /// where they are). A panic in `f` is passed on.
    pub fn in_host<T: Send>(&self, i: usize, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
        let path = format!("/run/netns/{}", self.hosts[i]);
        std::thread::scope(|s| {
            let h = s.spawn(move || {
                let ns = std::fs::File::open(&path)?;
                // SAFETY: setns only changes this thread's network
                // namespace; the descriptor is open for the call.
                let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
                if r != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(f())
            });
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// Runs `argv` inside host `i`'s namespace and waits for it.
    pub fn run(&self, i: usize, argv: &[&str]) -> std::io::Result<Output> {
        Command::new("ip")
            .args(["netns", "exec", &self.hosts[i]])
            .args(argv)
            .output()
    }
}

/// Where each claimed subnet records the process that claimed it, so a
/// later test can clean up after a test process that was killed (Drop
/// never ran).
fn ledger_dir() -> std::path::PathBuf {
    std::path::PathBuf::from("/run/iolab-testkit")
}

fn ledger_write(x: u8) {
    let d = ledger_dir();
    let _ = std::fs::create_dir_all(&d);
    let _ = std::fs::write(d.join(x.to_string()), std::process::id().to_string());
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the namespaces and routes of fake clusters whose process is
/// gone.
fn reap_stale() {
    let Ok(entries) = std::fs::read_dir(ledger_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let pid = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        let x = e.file_name().to_string_lossy().parse::<u8>().ok();
        let (Some(pid), Some(x)) = (pid, x) else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        reap_namespaces(pid);
        let _ = ip(&["route", "del", "unreachable", &FakeCluster::cidr(x)]);
        let _ = std::fs::remove_file(e.path());
    }
}

fn reap_namespaces(pid: u32) {
    let prefix = format!("iolab{pid}x");
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if name.starts_with(&prefix) {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        for ns in self.created.iter().rev() {
            let _ = ip(&["netns", "del", ns]);
        }
        if let Some(x) = self.subnet {
            let _ = ip(&["route", "del", "unreachable", &Self::cidr(x)]);
            let _ = std::fs::remove_file(ledger_dir().join(x.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_exists(cidr: &str) -> bool {
        let out = Command::new("ip")
            .args(["route", "show", cidr])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains("unreachable")
    }

    fn under_ci() -> bool {
        std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
    }

    #[test]
    fn hosts_reach_each_other_and_everything_goes_on_drop() {
        let c = match FakeCluster::new(2) {
            Ok(c) => c,
            Err(e) if !under_ci() => return println!("SKIPPED: {e}"),
            Err(e) => panic!("setup failed under CI: {e}"),
        };
        let cidr = c.subnet();
        assert!(
            route_exists(&cidr),
            "the guard route exists while the cluster lives"
        );
        let (ns0, _) = c.host(0);
        let (_, a1) = c.host(1);
        // A TCP round trip from host 0 to host 1 through the bridge (no
        // ping binary needed).
        let l = c
            .in_host(1, || std::net::TcpListener::bind((a1, 0)).unwrap())
            .unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            std::io::Write::write_all(&mut s, b"pong").unwrap();
        });
        let got = c
            .in_host(0, || {
                let mut s = std::net::TcpStream::connect((a1, port)).unwrap();
                let mut b = [0u8; 4];
                std::io::Read::read_exact(&mut s, &mut b).unwrap();
                b
            })
            .unwrap();
        server.join().unwrap();
        assert_eq!(&got, b"pong", "from {ns0} to {a1}");
        // The root namespace cannot reach the subnet: the guard route.
        let root = std::net::TcpStream::connect_timeout(
            &(a1, port).into(),
            std::time::Duration::from_secs(2),
        );
        assert!(root.is_err(), "the root namespace must not reach {a1}");
        drop(c);
        assert!(!route_exists(&cidr), "the route is gone after drop");
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        assert!(!String::from_utf8_lossy(&list.stdout).contains(&ns0));
    }

    #[test]
    fn a_panicking_test_still_cleans_up() {
        let r = std::panic::catch_unwind(|| {
            let c = FakeCluster::new(1).map_err(|e| e.to_string());
            let c = match c {
                Ok(c) => c,
                Err(e) => return Err(e),
            };
            let name = c.host(0).0;
            let cidr = c.subnet();
            std::panic::panic_any((name, cidr));
        });
        let payload = match r {
            Ok(Err(e)) if !under_ci() => return println!("SKIPPED: {e}"),
            Ok(Err(e)) => panic!("setup failed under CI: {e}"),
            Ok(Ok(())) => unreachable!(),
            Err(p) => p,
        };
        let (name, cidr) = payload.downcast_ref::<(String, String)>().unwrap().clone();
        assert!(!route_exists(&cidr));
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
    }

    #[test]
    fn a_killed_test_process_leftovers_are_reaped_by_the_next_cluster() {
        let mut child = Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let ns = format!("iolab{dead}x0h0");
        if let Err(e) = ip(&["netns", "add", &ns]) {
            if under_ci() {
                panic!("setup failed under CI: {e}");
            }
            return println!("SKIPPED: {e}");
        }
        let x = (1..=250u8)
            .rev()
            .find(|&x| ip(&["route", "add", "unreachable", &FakeCluster::cidr(x)]).is_ok())
            .unwrap();
        let d = ledger_dir();
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(x.to_string()), dead.to_string()).unwrap();
        let c = FakeCluster::new(1).unwrap();
        assert!(
            !route_exists(&FakeCluster::cidr(x)),
            "the dead process's route is gone"
        );
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        assert!(!String::from_utf8_lossy(&list.stdout).contains(&ns));
        assert!(!d.join(x.to_string()).exists());
        drop(c);
    }
}
