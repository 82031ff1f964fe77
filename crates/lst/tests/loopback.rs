//! The engine in one process: two agents on loopback threads and the
//! console, without the CLI.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use iolab_lst::agent::{self, AgentConfig};
use iolab_lst::console::{self, Node, Plan};
use iolab_lst::spec::{BrwOp, Check, Distribute, Limit, Test};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

fn plan(test: Test, from: &[String], to: &[String], concurrency: Vec<u32>) -> Plan {
    let nodes = |v: &[String]| v.iter().map(|a| Node::parse(a, 1).unwrap()).collect();
    Plan {
        test,
        from: nodes(from),
        to: nodes(to),
        distribute: Distribute::parse("1:2").unwrap(),
        concurrency,
        clients: vec![from.len() as u32],
        repeat: 2,
        limit: Limit::Count(64),
        key_file: None,
        rsh: None,
        agent_cmd: vec![],
        connect_timeout_s: 10.0,
    }
}

#[test]
fn a_sweep_over_two_agents_counts_every_byte() {
    let stop = Arc::new(AtomicBool::new(false));
    let addrs: Vec<String> = (0..2).map(|_| free_addr()).collect();
    let agents: Vec<_> = addrs
        .iter()
        .map(|a| {
            let cfg = AgentConfig {
                listen: a.clone(),
                ..Default::default()
            };
            let s = Arc::clone(&stop);
            std::thread::spawn(move || agent::serve(cfg, s))
        })
        .collect();
    let test = Test::Brw {
        op: BrwOp::Read,
        size: 1000,
        check: Check::Full,
    };
    let p = plan(test, &addrs[..1], &addrs, vec![1, 4]);
    let mut seen = 0;
    let report = console::run(&p, &iolab_core::CancelToken::new(), None, |_| seen += 1);
    assert_eq!(report.outcome, iolab_core::Outcome::Completed);
    assert_eq!(seen, 2);
    for point in &report.points {
        assert_eq!(point.runs.len(), 2);
        for r in &point.runs {
            assert_eq!(r.clients.rpcs, 64);
            assert_eq!(r.clients.rx_bytes, 64 * 1000);
            assert_eq!(
                r.servers.nodes, 2,
                "distribute 1:2: the client uses both servers"
            );
            assert_eq!(r.servers.tx_bytes, 64 * 1000);
            assert_eq!(r.latency.count, 64);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for a in agents {
        a.join().unwrap().unwrap();
    }
}

#[test]
fn megabyte_bulk_rpcs_go_both_ways() {
    let stop = Arc::new(AtomicBool::new(false));
    let addrs: Vec<String> = (0..2).map(|_| free_addr()).collect();
    let agents: Vec<_> = addrs
        .iter()
        .map(|a| {
            let cfg = AgentConfig {
                listen: a.clone(),
                ..Default::default()
            };
            let s = Arc::clone(&stop);
            std::thread::spawn(move || agent::serve(cfg, s))
        })
        .collect();
    for op in [BrwOp::Write, BrwOp::Read] {
        let test = Test::Brw {
            op,
            size: 1 << 20,
            check: Check::Simple,
        };
        let mut p = plan(test, &addrs[..1], &addrs[1..], vec![4]);
        // One server: each client takes it alone (LNet refuses a B above
        // the servers there are).
        p.distribute = Distribute::parse("1:1").unwrap();
        p.limit = Limit::Count(16);
        p.repeat = 1;
        let report = console::run(&p, &iolab_core::CancelToken::new(), None, |_| {});
        assert_eq!(report.outcome, iolab_core::Outcome::Completed, "{op:?}");
        let r = &report.points[0].runs[0];
        assert_eq!(r.clients.rx_bytes + r.clients.tx_bytes, 16 << 20, "{op:?}");
        assert_eq!(r.servers.rx_bytes + r.servers.tx_bytes, 16 << 20, "{op:?}");
    }
    stop.store(true, Ordering::Relaxed);
    for a in agents {
        a.join().unwrap().unwrap();
    }
}
