//! One CSV row per test, iteration and phase.

use iolab_mdtest::results::MdtestPayload;
use std::io::{self, Write};

/// Column names, in order.
pub const HEADER: &str = "tasks,iteration,phase,items,elapsed_s,rate_ops_per_s,stonewall_items,stonewall_elapsed_s,stonewall_rate_ops_per_s,latency_mean_ns,latency_p50_ns,latency_p90_ns,latency_p99_ns,latency_p999_ns,latency_max_ns";

/// The CSV text: a header line, then one row per phase result.
pub fn render(r: &MdtestPayload) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write(r, &mut out);
    out
}

/// [`render`] into `w` row by row (a run of many iterations is never
/// whole in memory).
pub fn write(r: &MdtestPayload, w: &mut dyn Write) -> io::Result<()> {
    let mut out = ::csv::WriterBuilder::new().flexible(true).from_writer(w);
    out.write_record(HEADER.split(','))?;
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
                out.write_record([
                    t.tasks.to_string(),
                    it.iteration.to_string(),
                    p.phase.key().to_string(),
                    p.items.to_string(),
                    format!("{:.9}", p.elapsed_s),
                    format!("{:.3}", p.rate),
                    wi,
                    we,
                    wr,
                    format!("{:.1}", l.mean_ns),
                    l.p50_ns.to_string(),
                    l.p90_ns.to_string(),
                    l.p99_ns.to_string(),
                    l.p999_ns.to_string(),
                    l.max_ns.to_string(),
                ])?;
            }
        }
    }
    out.flush()
}
