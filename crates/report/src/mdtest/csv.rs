//! One CSV row per test, iteration and phase.

use iolab_mdtest::results::MdtestPayload;
use std::fmt::Write as _;

/// Column names, in order.
pub const HEADER: &str = "tasks,iteration,phase,items,elapsed_s,rate_ops_per_s,stonewall_items,stonewall_elapsed_s,stonewall_rate_ops_per_s,latency_mean_ns,latency_p50_ns,latency_p90_ns,latency_p99_ns,latency_p999_ns,latency_max_ns";

/// The CSV text: a header line, then one row per phase result.
pub fn render(r: &MdtestPayload) -> Vec<u8> {
    let mut s = String::from(HEADER);
    s.push('\n');
    for t in &r.tests {
        for it in &t.iterations {
            for p in &it.phases {
                let (wi, we, wr) =
                    p.stonewall
                        .map_or((String::new(), String::new(), String::new()), |w| {
                            (
                                w.items.to_string(),
                                format!("{:.9}", w.elapsed_s),
                                format!("{:.3}", w.rate),
                            )
                        });
                let l = &p.latency;
                let _ = writeln!(
                    s,
                    "{},{},{},{},{:.9},{:.3},{wi},{we},{wr},{:.1},{},{},{},{},{}",
                    t.tasks,
                    it.iteration,
                    p.phase.key(),
                    p.items,
                    p.elapsed_s,
                    p.rate,
                    l.mean_ns,
                    l.p50_ns,
                    l.p90_ns,
                    l.p99_ns,
                    l.p999_ns,
                    l.max_ns
                );
            }
        }
    }
    s.into_bytes()
}
