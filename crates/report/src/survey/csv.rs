//! CSV: one row per survey point and test, every figure the summary line
//! shows plus the status, for spreadsheets and scripts.

use crate::csvw::CsvText;
use iolab_survey::disk::{DiskPoint, PointResult};
use iolab_survey::mds::MdsPoint;
use iolab_survey::obdfilter::{BracketResult, ObdPoint, ObdPointResult};
use iolab_survey::ost::OstReport;

/// The disk survey's CSV header line.
pub const DISK_HEADER: &str =
    "total_size_kb,rsz_kb,crg,thr,action,status,mb_per_s,regions_ok,regions_failed,slowest_region_mb_per_s\n";

/// The header line's fields.
fn header(line: &str) -> std::str::Split<'_, char> {
    line.trim_end().split(',')
}

/// Header and rows of a disk survey.
pub fn disk(points: &[DiskPoint]) -> String {
    let mut out = CsvText::new();
    out.record(header(DISK_HEADER));
    for p in points {
        let lead = [p.total_size_kb, p.rsz_kb, p.crg, p.thr].map(|x| x.to_string());
        match &p.result {
            PointResult::NoMem => out.record(
                lead.iter()
                    .map(String::as_str)
                    .chain(["", "enomem", "", "", "", ""]),
            ),
            PointResult::Ran { actions } => {
                for a in actions {
                    let (status, bw) = match a.mb_per_s {
                        Some(bw) => ("ok", format!("{bw:.2}")),
                        None => ("failed", String::new()),
                    };
                    let rest = [
                        a.action.name().to_string(),
                        status.to_string(),
                        bw,
                        a.regions_ok.to_string(),
                        a.regions_failed.to_string(),
                        format!("{:.2}", a.slowest_region_mb_per_s),
                    ];
                    out.record(lead.iter().chain(&rest));
                }
            }
        }
    }
    out.finish()
}

/// The object survey's CSV header line.
pub const OBDFILTER_HEADER: &str =
    "ost,total_size_kb,rsz_kb,obj,thr,test,status,mb_per_s,min_mb_per_s,max_mb_per_s\n";

/// Header and rows of an object survey.
pub fn obdfilter(points: &[ObdPoint]) -> String {
    let mut out = CsvText::new();
    out.record(header(OBDFILTER_HEADER));
    for p in points {
        let lead = [
            p.ost.to_string(),
            p.total_size_kb.to_string(),
            p.rsz_kb.to_string(),
            p.obj.to_string(),
            p.thr.to_string(),
        ];
        let lead = lead.iter().map(String::as_str);
        match &p.result {
            ObdPointResult::TooMuchBuffer => {
                out.record(lead.chain(["", "too_much_buffer", "", "", ""]))
            }
            ObdPointResult::CreateFailed { .. } => {
                out.record(lead.chain(["", "create_failed", "", "", ""]))
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
                    let bw = format!("{:.2}", t.mb_per_s);
                    let rest = [t.test.as_str(), status, &bw, &min, &max];
                    out.record(lead.clone().chain(rest));
                }
            }
        }
    }
    out.finish()
}

/// The metadata survey's CSV header line.
pub const MDS_HEADER: &str =
    "mdt,file_count,dir_count,thr,test,status,ops_per_sec,min_ops_per_sec,max_ops_per_sec\n";

/// Header and rows of a metadata survey.
pub fn mds(points: &[MdsPoint]) -> String {
    let mut out = CsvText::new();
    out.record(header(MDS_HEADER));
    for p in points {
        for t in &p.tests {
            let mut row = vec![
                p.mdt.to_string(),
                p.file_count.to_string(),
                p.dir_count.to_string(),
                p.thr.to_string(),
                t.test.to_string(),
            ];
            match t.bracket {
                Some(b) => {
                    row.push("ok".into());
                    row.extend([t.ops_per_sec, b.min, b.max].map(|x| format!("{x:.2}")));
                }
                None => row.extend(["error", "", "", ""].map(String::from)),
            }
            out.record(row);
        }
    }
    out.finish()
}

/// The target survey's CSV header line.
pub const OST_HEADER: &str =
    "index,path,read_mb_per_s,write_mb_per_s,read_s,write_s,outlier,error\n";

/// One row per target; `outlier` lists the operations that flagged it.
/// A path or an error holding a comma, a quote or a line break is quoted.
pub fn ost(r: &OstReport) -> String {
    let mut out = CsvText::new();
    out.record(header(OST_HEADER));
    for t in &r.targets {
        let flags: Vec<&str> = r
            .outliers
            .iter()
            .filter(|o| o.index == t.index)
            .map(|o| o.op.as_str())
            .collect();
        out.record([
            t.index.to_string(),
            t.path.clone(),
            format!("{:.3}", t.read_mb_per_s),
            format!("{:.3}", t.write_mb_per_s),
            format!("{:.6}", t.read_s),
            format!("{:.6}", t.write_s),
            flags.join("+"),
            t.error.clone().unwrap_or_default(),
        ]);
    }
    out.finish()
}
