//! CSV: one row per sweep point and group (clients, servers), the mean
//! over the point's repeats.

use iolab_lst::result::{GroupSummary, PointResult};
use iolab_lst::Report;
use std::fmt::Write;

/// The header row.
pub const HEADER: &str = "clients,concurrency,repeats,group,nodes,rpcs,errors,rx_bytes,tx_bytes,\
r_rpc_per_s_avg,r_rpc_per_s_min,r_rpc_per_s_max,w_rpc_per_s_avg,w_rpc_per_s_min,w_rpc_per_s_max,\
r_mib_per_s_avg,r_mib_per_s_min,r_mib_per_s_max,w_mib_per_s_avg,w_mib_per_s_min,w_mib_per_s_max,\
lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_max_ns";

/// The whole CSV document.
pub fn render(report: &Report) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for p in &report.points {
        row(&mut out, p, "clients", &p.mean.clients);
        row(&mut out, p, "servers", &p.mean.servers);
    }
    out
}

fn row(out: &mut String, p: &PointResult, name: &str, g: &GroupSummary) {
    let l = &p.mean.latency;
    let _ = write!(
        out,
        "{},{},{},{name},{},{},{},{},{}",
        p.clients,
        p.concurrency,
        p.runs.len(),
        g.nodes,
        g.rpcs,
        g.errors,
        g.rx_bytes,
        g.tx_bytes
    );
    for s in [g.r_rpc_per_s, g.w_rpc_per_s, g.r_mib_per_s, g.w_mib_per_s] {
        let _ = write!(out, ",{:.3},{:.3},{:.3}", s.avg, s.min, s.max);
    }
    let _ = writeln!(out, ",{},{},{},{}", l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns);
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_row_per_point_and_group_with_the_header_columns() {
        let (_, report) = super::super::text::tests::report();
        let csv = super::render(&report);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + 2 * 2);
        let cols = super::HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == cols), "{csv}");
        assert!(
            lines[1].starts_with("1,1,1,clients,1,1000,0,0,4096000,2000.000,"),
            "{csv}"
        );
        assert!(
            lines[2].starts_with("1,1,1,servers,1,1000,0,4096000,0,"),
            "{csv}"
        );
    }
}
