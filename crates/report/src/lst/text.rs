//! The text report: for each sweep point, lst stat's blocks
//! (`[LNet Rates of clients]`, `[LNet Bandwidth of servers]`, with
//! `[R]`/`[W]` lines of Avg/Min/Max over the group's nodes), then our
//! own latency and error lines; a sweep adds a table of its points.

use iolab_lst::result::{GroupSummary, MeanResult, Spread};
use iolab_lst::{Plan, Report};
use std::fmt::Write;

/// The whole text report.
pub fn render(plan: &Plan, report: &Report) -> String {
    let mut out = String::new();
    let sweep = report.points.len() > 1;
    for p in &report.points {
        let _ = writeln!(
            out,
            "# {} clients {} concurrency {} repeats {}",
            test_name(plan),
            p.clients,
            p.concurrency,
            p.runs.len()
        );
        if let Some(why) = &p.failed {
            let _ = writeln!(
                out,
                "[Failed] {why}: the counts below are those up to the failure"
            );
        }
        out.push_str(&point(&p.mean));
    }
    if sweep {
        out.push_str(&table(report));
    }
    out
}

/// `ping` or `brw write size=4096 check=full`.
pub fn test_name(plan: &Plan) -> String {
    match plan.test {
        iolab_lst::spec::Test::Ping => "ping".into(),
        iolab_lst::spec::Test::Brw { op, size, check } => {
            format!("brw {op:?} size={size} check={check:?}").to_lowercase()
        }
    }
}

/// One point's blocks.
pub fn point(m: &MeanResult) -> String {
    let mut out = String::new();
    group(&mut out, "clients", &m.clients);
    group(&mut out, "servers", &m.servers);
    let l = &m.latency;
    let us = |ns: u64| ns as f64 / 1000.0;
    let _ = writeln!(
        out,
        "[RPC latency] count: {} mean: {:.1} us p50: {:.1} us p90: {:.1} us p99: {:.1} us max: {:.1} us",
        l.count,
        l.mean_ns / 1000.0,
        us(l.p50_ns),
        us(l.p90_ns),
        us(l.p99_ns),
        us(l.max_ns)
    );
    let _ = writeln!(
        out,
        "[Errors] clients: {} servers: {} (RPCs: clients {} servers {})",
        m.clients.errors, m.servers.errors, m.clients.rpcs, m.servers.rpcs
    );
    out
}

fn group(out: &mut String, name: &str, g: &GroupSummary) {
    let _ = writeln!(out, "[LNet Rates of {name}]");
    line(out, "R", &g.r_rpc_per_s, "RPC/s", 0);
    line(out, "W", &g.w_rpc_per_s, "RPC/s", 0);
    let _ = writeln!(out, "[LNet Bandwidth of {name}]");
    line(out, "R", &g.r_mib_per_s, "MiB/s", 2);
    line(out, "W", &g.w_mib_per_s, "MiB/s", 2);
}

fn line(out: &mut String, rw: &str, s: &Spread, unit: &str, prec: usize) {
    let _ = writeln!(
        out,
        "[{rw}] Avg: {:<8.prec$} {unit} Min: {:<8.prec$} {unit} Max: {:<8.prec$} {unit}",
        s.avg, s.min, s.max
    );
}

/// The sweep table: one row per point, the client group's numbers.
fn table(report: &Report) -> String {
    let mut out = String::from(
        "\n# sweep (client group, mean over repeats)\n clients concurrency     RPC/s   R MiB/s   W MiB/s  p50 us  p99 us  errors\n",
    );
    for p in &report.points {
        let c = &p.mean.clients;
        let _ = writeln!(
            out,
            "{:>8} {:>11} {:>9.0} {:>9.2} {:>9.2} {:>7.1} {:>7.1} {:>7}",
            p.clients,
            p.concurrency,
            c.w_rpc_per_s.avg,
            c.r_mib_per_s.avg,
            c.w_mib_per_s.avg,
            p.mean.latency.p50_ns as f64 / 1000.0,
            p.mean.latency.p99_ns as f64 / 1000.0,
            p.errors()
        );
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use iolab_lst::result::{ClientStats, PointResult, RunResult, ServerStats};

    pub(crate) fn report() -> (Plan, Report) {
        let c = ClientStats {
            node: "a".into(),
            rpcs: 1000,
            tx_bytes: 1000 * 4096,
            elapsed_ns: 500_000_000,
            ..Default::default()
        };
        let s = ServerStats {
            node: "b".into(),
            rpcs: 1000,
            rx_bytes: 1000 * 4096,
            span_ns: 500_000_000,
            ..Default::default()
        };
        let run = RunResult::new(vec![c], vec![s]);
        let points = vec![
            PointResult::new(1, 1, vec![run.clone()]),
            PointResult::new(1, 2, vec![run]),
        ];
        let plan = Plan {
            test: iolab_lst::spec::Test::Brw {
                op: iolab_lst::spec::BrwOp::Write,
                size: 4096,
                check: iolab_lst::spec::Check::Full,
            },
            from: vec![],
            to: vec![],
            distribute: Default::default(),
            concurrency: vec![1, 2],
            clients: vec![1],
            repeat: 1,
            limit: iolab_lst::spec::Limit::Count(1000),
            key_file: None,
            rsh: None,
            agent_cmd: vec![],
            connect_timeout_s: 1.0,
        };
        let report = Report {
            points,
            outcome: iolab_core::Outcome::Completed,
        };
        (plan, report)
    }

    #[test]
    fn blocks_follow_lst_stat() {
        let (plan, report) = report();
        let t = render(&plan, &report);
        assert!(t.contains("# brw write size=4096 check=full clients 1 concurrency 2 repeats 1\n"));
        assert!(t.contains(
            "[LNet Rates of clients]\n[R] Avg: 2000     RPC/s Min: 2000     RPC/s Max: 2000     RPC/s\n"
        ));
        assert!(t.contains(
            "[LNet Bandwidth of servers]\n[R] Avg: 7.81     MiB/s Min: 7.81     MiB/s Max: 7.81     MiB/s\n[W] Avg: 0.00 "
        ));
        assert!(t.contains("[Errors] clients: 0 servers: 0 (RPCs: clients 1000 servers 1000)"));
        assert!(t.contains("# sweep"), "two points make a sweep table");
        assert_eq!(t.matches("[LNet Rates of servers]").count(), 2);
    }
}
