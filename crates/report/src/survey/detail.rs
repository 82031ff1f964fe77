//! The `${rslt}.detail` file: for each point the kit's `====> ` banner and
//! then what each region, target or thread reported, for post-mortem.

use iolab_survey::disk::{DiskPoint, PointResult};

/// The detail block of one disk-survey point.
pub fn disk(p: &DiskPoint) -> String {
    let mut s = format!(
        "==============> {}\n",
        super::summary::disk_prefix(p).trim_end()
    );
    let PointResult::Ran { actions } = &p.result else {
        s.push_str("ENOMEM: the buffers would not fit in MemTotal\n");
        return s;
    };
    for a in actions {
        s.push_str(&format!("=====> {}\n", a.action.name()));
        for r in &a.regions {
            s.push_str(&format!(
                "{} region {} offset {} bytes {} time {:.6} s {:.2} MB/s {}",
                r.device,
                r.region,
                r.offset,
                r.bytes,
                r.elapsed_s,
                r.mb_per_s(),
                if r.direct {
                    "O_DIRECT"
                } else {
                    "buffered+fdatasync"
                }
            ));
            if let Some(e) = &r.error {
                s.push_str(&format!(" error: {e}"));
            }
            s.push('\n');
        }
    }
    s
}
