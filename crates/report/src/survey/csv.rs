//! CSV: one row per survey point and test, every figure the summary line
//! shows plus the status, for spreadsheets and scripts.

use iolab_survey::disk::{DiskPoint, PointResult};
use iolab_survey::mds::MdsPoint;
use iolab_survey::obdfilter::{BracketResult, ObdPoint, ObdPointResult};
use iolab_survey::ost::OstReport;

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

/// The object survey's CSV header line.
pub const OBDFILTER_HEADER: &str =
    "ost,total_size_kb,rsz_kb,obj,thr,test,status,mb_per_s,min_mb_per_s,max_mb_per_s\n";

/// Header and rows of an object survey.
pub fn obdfilter(points: &[ObdPoint]) -> String {
    let mut s = String::from(OBDFILTER_HEADER);
    for p in points {
        let lead = format!(
            "{},{},{},{},{}",
            p.ost, p.total_size_kb, p.rsz_kb, p.obj, p.thr
        );
        match &p.result {
            ObdPointResult::TooMuchBuffer => s.push_str(&format!("{lead},,too_much_buffer,,,\n")),
            ObdPointResult::CreateFailed { .. } => {
                s.push_str(&format!("{lead},,create_failed,,,\n"))
            }
            ObdPointResult::Ran { tests } => {
                for t in tests {
                    let (status, min, max) = match &t.bracket {
                        BracketResult::Ok { mb_per_s } => (
                            "ok",
                            format!("{:.2}", mb_per_s.min),
                            format!("{:.2}", mb_per_s.max),
                        ),
                        BracketResult::Error => ("error", String::new(), String::new()),
                        BracketResult::Short => ("short", String::new(), String::new()),
                    };
                    s.push_str(&format!(
                        "{lead},{},{status},{:.2},{min},{max}\n",
                        t.test, t.mb_per_s
                    ));
                }
            }
        }
    }
    s
}

/// The metadata survey's CSV header line.
pub const MDS_HEADER: &str =
    "mdt,file_count,dir_count,thr,test,status,ops_per_sec,min_ops_per_sec,max_ops_per_sec\n";

/// Header and rows of a metadata survey.
pub fn mds(points: &[MdsPoint]) -> String {
    let mut s = String::from(MDS_HEADER);
    for p in points {
        for t in &p.tests {
            let lead = format!(
                "{},{},{},{},{}",
                p.mdt, p.file_count, p.dir_count, p.thr, t.test
            );
            match t.bracket {
                Some(b) => s.push_str(&format!(
                    "{lead},ok,{:.2},{:.2},{:.2}\n",
                    t.ops_per_sec, b.min, b.max
                )),
                None => s.push_str(&format!("{lead},error,,,\n")),
            }
        }
    }
    s
}

/// The target survey's CSV header line.
pub const OST_HEADER: &str =
    "index,path,read_mb_per_s,write_mb_per_s,read_s,write_s,outlier,error\n";

/// One row per target; `outlier` lists the operations that flagged it.
pub fn ost(r: &OstReport) -> String {
    let mut s = String::from(OST_HEADER);
    for t in &r.targets {
        let flags: Vec<&str> = r
            .outliers
            .iter()
            .filter(|o| o.index == t.index)
            .map(|o| o.op.as_str())
            .collect();
        let err = t.error.as_deref().unwrap_or("").replace([',', '\n'], ";");
        s.push_str(&format!(
            "{},{},{:.3},{:.3},{:.6},{:.6},{},{err}\n",
            t.index,
            t.path.replace(',', ";"),
            t.read_mb_per_s,
            t.write_mb_per_s,
            t.read_s,
            t.write_s,
            flags.join("+")
        ));
    }
    s
}
