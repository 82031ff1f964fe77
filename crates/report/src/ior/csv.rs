//! iolab's CSV of a run (`--csv`): one row per test, iteration and
//! access, with the bytes moved and stored, the rates, the step times,
//! the stonewall's figures and the checks' errors; `stopped` is true on
//! the row of an access the stop request cut short and `failed` on one
//! a failed call cut short (neither is a measurement).

use iolab_ior::IorPayload;
use std::io::{self, Write};

/// Column names, in order.
pub const HEADER: &str = "test,iteration,access,tasks,bytes,file_bytes,transfers,transfer_bytes,bw_mib_per_s,iops,latency_s,open_s,rdwr_s,close_s,total_s,pairs_accessed,deadline_hit,stonewall_s,stonewall_bytes,errors,stopped,failed";

/// The CSV into `w`, row by row.
pub fn write(p: &IorPayload, w: &mut dyn Write) -> io::Result<()> {
    let mut out = ::csv::WriterBuilder::new().from_writer(w);
    out.write_record(HEADER.split(','))?;
    for t in &p.tests {
        for r in t.accesses() {
            let wall = r.stonewall.as_ref();
            out.write_record([
                t.test.params.id.to_string(),
                r.iteration.to_string(),
                r.access.map_or("", |a| a.name()).to_string(),
                t.geometry.tasks.to_string(),
                r.bytes.to_string(),
                r.file_bytes.to_string(),
                r.transfers.to_string(),
                r.transfer_bytes.to_string(),
                format!("{:.3}", r.bw_bytes_per_s / 1048576.0),
                format!("{:.3}", r.iops),
                format!("{:.9}", r.latency_s),
                format!("{:.9}", r.open_s),
                format!("{:.9}", r.rdwr_s),
                format!("{:.9}", r.close_s),
                format!("{:.9}", r.total_s),
                r.pairs_accessed.to_string(),
                r.deadline_hit.to_string(),
                wall.map_or(String::new(), |w| format!("{:.9}", w.time_s)),
                wall.map_or(String::new(), |w| w.total_bytes.to_string()),
                r.errors.to_string(),
                r.interrupted.to_string(),
                r.failed.to_string(),
            ])?;
        }
    }
    out.flush()
}

/// The CSV as bytes.
pub fn render(p: &IorPayload) -> Vec<u8> {
    let mut v = Vec::new();
    // Writing into memory cannot fail.
    let _ = write(p, &mut v);
    v
}
