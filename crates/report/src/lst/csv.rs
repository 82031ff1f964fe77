//! CSV: one row per sweep point and group (clients, servers), the mean
//! over the point's repeats, and why a failed point stopped (`failed`,
//! empty for a point that completed).

use crate::csvw::CsvText;
use iolab_lst::result::{GroupSummary, PointResult};
use iolab_lst::Report;

/// The header row.
pub const HEADER: &str = "clients,concurrency,repeats,group,nodes,rpcs,errors,rx_bytes,tx_bytes,\
r_rpc_per_s_avg,r_rpc_per_s_min,r_rpc_per_s_max,w_rpc_per_s_avg,w_rpc_per_s_min,w_rpc_per_s_max,\
r_mib_per_s_avg,r_mib_per_s_min,r_mib_per_s_max,w_mib_per_s_avg,w_mib_per_s_min,w_mib_per_s_max,\
lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_max_ns,failed";

/// The whole CSV document.
pub fn render(report: &Report) -> String {
    let mut out = CsvText::new();
    out.record(HEADER.split(','));
    for p in &report.points {
        out.record(row(p, "clients", &p.mean.clients));
        out.record(row(p, "servers", &p.mean.servers));
    }
    out.finish()
}

fn row(p: &PointResult, name: &str, g: &GroupSummary) -> Vec<String> {
    let l = &p.mean.latency;
    let mut v = vec![
        p.clients.to_string(),
        p.concurrency.to_string(),
        p.runs.len().to_string(),
        name.to_string(),
        g.nodes.to_string(),
        g.rpcs.to_string(),
        g.errors.to_string(),
        g.rx_bytes.to_string(),
        g.tx_bytes.to_string(),
    ];
    for s in [g.r_rpc_per_s, g.w_rpc_per_s, g.r_mib_per_s, g.w_mib_per_s] {
        v.extend([s.avg, s.min, s.max].map(|x| format!("{x:.3}")));
    }
    v.extend([l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns].map(|x| x.to_string()));
    v.push(p.failed.clone().unwrap_or_default());
    v
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
        assert!(lines[1].ends_with(','), "a completed point: empty `failed`");
    }

    #[test]
    fn a_failed_point_says_why_in_its_rows_quoted() {
        let (_, mut report) = super::super::text::tests::report();
        report.points[0].failed = Some("node b: connection reset, \"x\"".into());
        let csv = super::render(&report);
        let row = csv.lines().nth(1).unwrap_or_default();
        assert!(
            row.ends_with(r#","node b: connection reset, ""x""""#),
            "{csv}"
        );
    }
}
