//! CSV: one row per survey point and test, every figure the summary line
//! shows plus the status, for spreadsheets and scripts.

use iolab_survey::disk::{DiskPoint, PointResult};

/// The disk survey's CSV header line.
pub const DISK_HEADER: &str =
    "total_size_kb,rsz_kb,crg,thr,action,status,mb_per_s,regions_ok,regions_failed,slowest_region_mb_per_s\n";

/// Header and rows of a disk survey.
pub fn disk(points: &[DiskPoint]) -> String {
    let mut s = String::from(DISK_HEADER);
    for p in points {
        let lead = format!("{},{},{},{}", p.total_size_kb, p.rsz_kb, p.crg, p.thr);
        match &p.result {
            PointResult::NoMem => s.push_str(&format!("{lead},,enomem,,,,\n")),
            PointResult::Ran { actions } => {
                for a in actions {
                    let (status, bw) = match a.mb_per_s {
                        Some(bw) => ("ok", format!("{bw:.2}")),
                        None => ("failed", String::new()),
                    };
                    s.push_str(&format!(
                        "{lead},{},{status},{bw},{},{},{:.2}\n",
                        a.action.name(),
                        a.regions_ok,
                        a.regions_failed,
                        a.slowest_region_mb_per_s
                    ));
                }
            }
        }
    }
    s
}
