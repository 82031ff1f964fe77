//! The kit's summary lines, field widths as its scripts' printf formats:
//! a line starts with the point's parameters and each test adds its name
//! and figures; every field is followed by one space, as the scripts'
//! `echo -n "$str "` leave it.

use iolab_survey::disk::{DiskPoint, PointResult};
use iolab_survey::mds::MdsPoint;
use iolab_survey::obdfilter::{BracketResult, ObdPoint, ObdPointResult};
use iolab_survey::ost::{OpSummary, OstReport};
use iolab_survey::Header;

/// The first line: `DATE sgpdd-survey on DEVICES from HOST`.
pub fn header(h: &Header, survey: &str, on: &[String]) -> String {
    if on.is_empty() {
        format!("{} {} from {}\n", h.date, survey, h.host)
    } else {
        format!(
            "{} {} on {} from {}\n",
            h.date,
            survey,
            on.join(" "),
            h.host
        )
    }
}

/// How a disk-survey (sgpdd-survey) line is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiskLayout {
    /// The guide's line (seed 002): `total_size 8388608K rsz 1024 thr 1
    /// crg 1 180.45 MB/s 1 x 180.50 = 180.50 MB/s`, single spaces, `thr`
    /// before `crg`, no action names: each action's figures follow in
    /// the order of `actions`, which the header line names.
    #[default]
    Guide,
    /// The kit's current script: padded fields, `crg` before `thr`, each
    /// action's figures after its name.
    Kit,
}

/// The disk survey's first line: [`header`], and in the guide's layout
/// (whose lines do not name the actions) ` actions: write read` saying
/// whose figures come in which order.
pub fn disk_header(h: &Header, on: &[String], actions: &[&str], layout: DiskLayout) -> String {
    let line = header(h, "sgpdd-survey", on);
    match layout {
        DiskLayout::Kit => line,
        DiskLayout::Guide => format!("{} actions: {}\n", line.trim_end(), actions.join(" ")),
    }
}

/// One disk-survey line in the chosen layout.
pub fn disk_line_in(p: &DiskPoint, layout: DiskLayout) -> String {
    match layout {
        DiskLayout::Kit => disk_line(p),
        DiskLayout::Guide => disk_line_guide(p),
    }
}

/// The guide's layout (see [`DiskLayout::Guide`]).
fn disk_line_guide(p: &DiskPoint) -> String {
    let mut f = vec![format!(
        "total_size {}K rsz {} thr {} crg {}",
        p.total_size_kb, p.rsz_kb, p.thr, p.crg
    )];
    match &p.result {
        PointResult::NoMem => f.push("ENOMEM".into()),
        PointResult::Ran { actions } => {
            for a in actions {
                f.push(match a.mb_per_s {
                    Some(bw) => format!(
                        "{bw:.2} MB/s {} x {:.2} = {:.2} MB/s",
                        a.regions_ok,
                        a.slowest_region_mb_per_s,
                        a.regions_ok as f64 * a.slowest_region_mb_per_s
                    ),
                    None => "FAILED".into(),
                });
            }
        }
    }
    f.join(" ") + "\n"
}

/// The parameters that open a disk-survey line (the kit's layout).
pub fn disk_prefix(p: &DiskPoint) -> String {
    format!(
        "total_size {:8}K rsz {:4} crg {:5} thr {:5} ",
        p.total_size_kb, p.rsz_kb, p.crg, p.thr
    )
}

/// One disk-survey line in the kit's layout: per action its aggregate MB/s, then regions x the
/// slowest region's MB/s = their product; `ENOMEM` when the buffers would
/// not fit, `FAILED` in place of the figures when a region failed.
pub fn disk_line(p: &DiskPoint) -> String {
    let mut s = disk_prefix(p);
    match &p.result {
        PointResult::NoMem => s.push_str("ENOMEM"),
        PointResult::Ran { actions } => {
            for a in actions {
                s.push_str(a.action.name());
                s.push(' ');
                match a.mb_per_s {
                    Some(bw) => s.push_str(&format!(
                        "{:7.2} MB/s {:5} x {:6.2} = {:7.2} MB/s ",
                        bw,
                        a.regions_ok,
                        a.slowest_region_mb_per_s,
                        a.regions_ok as f64 * a.slowest_region_mb_per_s
                    )),
                    None => s.push_str("FAILED "),
                }
            }
        }
    }
    s.push('\n');
    s
}

/// The object survey's first line (the kit's, naming its local case).
pub fn obdfilter_header(h: &Header) -> String {
    obdfilter_header_for(h, "disk")
}

/// The object survey's first line for the case that ran (`disk`,
/// `network`), as the kit's names it.
pub fn obdfilter_header_for(h: &Header, case: &str) -> String {
    format!(
        "{} Obdfilter-survey for case={case} from {}\n",
        h.date, h.host
    )
}

/// The parameters that open an object-survey line.
pub fn obdfilter_prefix(p: &ObdPoint) -> String {
    format!(
        "ost {:2} sz {:8}K rsz {:4} obj {:4} thr {:4} ",
        p.ost, p.total_size_kb, p.rsz_kb, p.obj, p.thr
    )
}

/// The kit's `[min,max] ` or a right-aligned `ERROR`/`SHORT`.
fn bracket(b: &BracketResult) -> String {
    match b {
        BracketResult::Ok { mb_per_s } => format!("[{:7.2},{:7.2}] ", mb_per_s.min, mb_per_s.max),
        BracketResult::Error => format!("{:>17} ", "ERROR"),
        BracketResult::Short => format!("{:>17} ", "SHORT"),
    }
}

/// One object-survey line: per test its name, aggregate MB/s and bracket.
pub fn obdfilter_line(p: &ObdPoint) -> String {
    let mut s = obdfilter_prefix(p);
    match &p.result {
        ObdPointResult::TooMuchBuffer => s.push_str("Too much buffer space"),
        ObdPointResult::CreateFailed { message } => {
            s.push_str(&format!("created objects failed: {message}"))
        }
        ObdPointResult::Ran { tests } => {
            for t in tests {
                s.push_str(&format!(
                    "{} {:7.2} {}",
                    t.test,
                    t.mb_per_s,
                    bracket(&t.bracket)
                ));
            }
        }
    }
    s.push('\n');
    s
}

/// The metadata survey's first line (the kit's `$(date) $0 from host`).
pub fn mds_header(h: &Header) -> String {
    format!("{} mds-survey from {}\n", h.date, h.host)
}

/// The parameters that open a metadata-survey line.
pub fn mds_prefix(p: &MdsPoint) -> String {
    format!(
        "mdt {:1} file {:7} dir {:4} thr {:4} ",
        p.mdt, p.file_count, p.dir_count, p.thr
    )
}

/// One metadata-survey line: per test its name, operations per second and
/// `[min,max]`, or a right-aligned ERROR in place of both.
pub fn mds_line(p: &MdsPoint) -> String {
    let mut s = mds_prefix(p);
    for t in &p.tests {
        s.push_str(&t.test);
        s.push(' ');
        match t.bracket {
            Some(b) => s.push_str(&format!(
                "{:7.2} [{:7.2},{:7.2}] ",
                t.ops_per_sec, b.min, b.max
            )),
            None => s.push_str(&format!("{:>17} ", "ERROR")),
        }
    }
    s.push('\n');
    s
}

/// The target survey's first line (the kit's `NAME: DATE OST speed survey on ...`).
pub fn ost_header(date_mdy: &str, targets: &[String], host: &str) -> String {
    format!(
        "ost-survey: {date_mdy} OST speed survey on {} from {host}\n",
        targets.join(" ")
    )
}

fn op_lines(name: &str, s: &OpSummary) -> String {
    format!(
        "Worst  {name} OST indx: {} speed: {:.6}\nBest   {name} OST indx: {} speed: {:.6}\n{name} Average: {:.6} +/- {:.6} MB/s\n",
        s.worst_index, s.worst, s.best_index, s.best, s.average, s.std_dev
    )
}

/// The target survey's report: count, worst/best/average per operation,
/// the per-target table (the kit's layout), then the outliers.
pub fn ost_report(r: &OstReport) -> String {
    let mut s = format!("Number of Active OST devices : {}\n", r.targets.len());
    if let Some(x) = &r.read {
        s.push_str(&op_lines("Read", x));
    }
    if let Some(x) = &r.write {
        s.push_str(&op_lines("Write", x));
    }
    s.push_str("Ost#  Read(MB/s)  Write(MB/s)  Read-time  Write-time\n");
    s.push_str("----------------------------------------------------\n");
    for t in &r.targets {
        match &t.error {
            None => s.push_str(&format!(
                "{}     {:.3}       {:.3}        {:.3}      {:.3}\n",
                t.index, t.read_mb_per_s, t.write_mb_per_s, t.read_s, t.write_s
            )),
            Some(e) => s.push_str(&format!("{}     FAILED: {e}\n", t.index)),
        }
    }
    if r.outliers.is_empty() {
        s.push_str("Outliers: none\n");
    }
    for o in &r.outliers {
        // By its index, not its place in the list: a Lustre file
        // system's active OSTs need not be numbered 0, 1, 2...
        let path = r
            .targets
            .iter()
            .find(|t| t.index == o.index)
            .map(|t| t.path.as_str())
            .unwrap_or("?");
        s.push_str(&format!(
            "Outlier OST indx: {} ({path}) {} speed: {:.6}: {}\n",
            o.index, o.op, o.mb_per_s, o.reason
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_survey::disk::{Action, ActionResult};

    fn point(result: PointResult) -> DiskPoint {
        DiskPoint {
            total_size_kb: 8388608,
            rsz_kb: 1024,
            crg: 1,
            thr: 1,
            result,
        }
    }

    fn action(bw: Option<f64>) -> ActionResult {
        ActionResult {
            action: Action::Write,
            elapsed_s: 1.0,
            mb_per_s: bw,
            regions_ok: 1,
            regions_failed: u64::from(bw.is_none()),
            slowest_region_mb_per_s: 180.5,
            regions: vec![],
        }
    }

    #[test]
    fn a_disk_line_has_the_kits_widths() {
        let l = disk_line(&point(PointResult::Ran {
            actions: vec![action(Some(180.45))],
        }));
        assert_eq!(
            l,
            "total_size  8388608K rsz 1024 crg     1 thr     1 write  180.45 MB/s     1 x 180.50 =  180.50 MB/s \n"
        );
    }

    #[test]
    fn enomem_and_failed_replace_the_figures() {
        assert!(disk_line(&point(PointResult::NoMem)).ends_with("thr     1 ENOMEM\n"));
        let l = disk_line(&point(PointResult::Ran {
            actions: vec![action(None)],
        }));
        assert!(l.ends_with("write FAILED \n"), "{l}");
    }

    #[test]
    fn an_obdfilter_line_has_the_kits_widths() {
        use iolab_survey::obdfilter::TestResult;
        use iolab_survey::sampler::Bracket;
        let t = |b| TestResult {
            test: "write".into(),
            mb_per_s: 613.54,
            bracket: b,
            targets: vec![],
        };
        let p = ObdPoint {
            ost: 8,
            total_size_kb: 67108864,
            rsz_kb: 1024,
            obj: 8,
            thr: 8,
            result: ObdPointResult::Ran {
                tests: vec![
                    t(BracketResult::Ok {
                        mb_per_s: Bracket {
                            min: 64.0,
                            max: 82.0,
                        },
                    }),
                    t(BracketResult::Error),
                ],
            },
        };
        assert_eq!(
            obdfilter_line(&p),
            "ost  8 sz 67108864K rsz 1024 obj    8 thr    8 write  613.54 [  64.00,  82.00] write  613.54             ERROR \n"
        );
    }

    #[test]
    fn an_mds_line_has_the_kits_widths() {
        use iolab_survey::mds::MdsTestResult;
        use iolab_survey::sampler::Bracket;
        let t = |name: &str, ops, b| MdsTestResult {
            test: name.into(),
            ops_per_sec: ops,
            bracket: b,
            targets: vec![],
        };
        let p = MdsPoint {
            mdt: 1,
            file_count: 100000,
            dir_count: 4,
            thr: 4,
            tests: vec![
                t(
                    "create",
                    5652.05,
                    Some(Bracket {
                        min: 999.01,
                        max: 46940.48,
                    }),
                ),
                t("destroy", 0.0, None),
            ],
        };
        assert_eq!(
            mds_line(&p),
            "mdt 1 file  100000 dir    4 thr    4 create 5652.05 [ 999.01,46940.48] destroy             ERROR \n"
        );
    }

    #[test]
    fn the_ost_table_has_the_kits_layout() {
        use iolab_survey::ost::OstTarget;
        let t = OstTarget {
            index: 3,
            path: "/mnt/3".into(),
            write_mb_per_s: 17.706,
            write_s: 5.648,
            read_mb_per_s: 2872.89,
            read_s: 0.035,
            direct: true,
            error: None,
        };
        let r = OstReport {
            header: Header {
                date: String::new(),
                host: String::new(),
            },
            targets: vec![t],
            read: None,
            write: None,
            outliers: vec![],
            outcome: iolab_core::Outcome::Completed,
        };
        let text = ost_report(&r);
        assert!(
            text.contains("\n3     2872.890       17.706        0.035      5.648\n"),
            "{text}"
        );
        assert!(text.starts_with("Number of Active OST devices : 1\n"));
    }

    #[test]
    fn the_header_names_survey_devices_and_host() {
        let h = Header {
            date: "Sun Nov 22 05:00:00 UTC 2026".into(),
            host: "n1".into(),
        };
        assert_eq!(
            header(&h, "sgpdd-survey", &["/dev/loop0".into()]),
            "Sun Nov 22 05:00:00 UTC 2026 sgpdd-survey on /dev/loop0 from n1\n"
        );
    }
}
