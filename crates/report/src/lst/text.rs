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
