//! IOR 4's CSV output (`-O summaryFormat=CSV`): for each test, its
//! header line and one row per access of each iteration, with IOR's
//! columns and its four decimals. IOR writes no header block and no
//! summary in this format, and neither does this. An access the stop
//! request or a failed call cut short is no measurement and has no row.

use iolab_ior::IorPayload;
use std::fmt::Write;

/// IOR's header line.
pub const HEADER: &str =
    "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter";

/// The CSV text of a run.
pub fn render(p: &IorPayload) -> String {
    let mut s = String::new();
    for t in &p.tests {
        s.push_str(HEADER);
        s.push('\n');
        for r in t.measured() {
            let _ = writeln!(
                s,
                "{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{},{}",
                r.access.map_or("", |a| a.name()),
                r.bw_bytes_per_s / 1048576.0,
                r.iops,
                r.latency_s,
                r.block_bytes as f64 / 1024.0,
                r.transfer_bytes as f64 / 1024.0,
                r.open_s,
                r.rdwr_s,
                r.close_s,
                r.total_s,
                t.geometry.tasks,
                r.iteration
            );
        }
    }
    s
}
