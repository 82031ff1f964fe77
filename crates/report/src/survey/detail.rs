//! The `${rslt}.detail` file: for each point the kit's `====> ` banner and
//! then what each region, target or thread reported, for post-mortem.

use iolab_survey::disk::{DiskPoint, PointResult};
use iolab_survey::mds::MdsPoint;
use iolab_survey::obdfilter::{BracketResult, ObdPoint, ObdPointResult};
use iolab_survey::ost::OstReport;
use iolab_survey::MB;

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
                io_mode(r.direct)
            ));
            end_line(&mut s, r.error.as_deref());
        }
    }
    s
}

/// The detail block of one object-survey point: per test, each target's
/// bytes, elapsed time, sampled MB/s and error, then the global bracket.
pub fn obdfilter(p: &ObdPoint) -> String {
    let mut s = format!(
        "=======================> {}\n",
        super::summary::obdfilter_prefix(p).trim_end()
    );
    let tests = match &p.result {
        ObdPointResult::Ran { tests } => tests,
        ObdPointResult::TooMuchBuffer => {
            return s + "Too much buffer space: threads x rsz above --max-buffer\n"
        }
        ObdPointResult::CreateFailed { message } => {
            return s + &format!("create failed: {message}\n")
        }
    };
    for t in tests {
        for r in &t.targets {
            let samples: Vec<String> = r
                .rates
                .samples
                .iter()
                .map(|x| format!("{:.2}", x / MB))
                .collect();
            s.push_str(&format!(
                "=============> {} {}\nbytes {} elapsed {:.6} s {:.2} MB/s samples(MB/s) [{}] {}",
                t.test,
                r.target,
                r.rates.amount,
                r.rates.elapsed_s,
                r.rates.overall() / MB,
                samples.join(" "),
                io_mode(r.direct)
            ));
            end_line(&mut s, r.error.as_deref());
        }
        let global = match &t.bracket {
            BracketResult::Ok { mb_per_s } => {
                format!("min {:.2} max {:.2} MB/s", mb_per_s.min, mb_per_s.max)
            }
            BracketResult::Error => "ERROR".to_string(),
            BracketResult::Short => "SHORT".to_string(),
        };
        s.push_str(&format!(
            "=============> {} global\n{:.2} MB/s {global}\n",
            t.test, t.mb_per_s
        ));
    }
    s
}

/// The detail block of one metadata-survey point.
pub fn mds(p: &MdsPoint) -> String {
    let mut s = format!(
        "=======================> {}\n",
        super::summary::mds_prefix(p).trim_end()
    );
    for t in &p.tests {
        for r in &t.targets {
            let samples: Vec<String> = r.rates.samples.iter().map(|x| format!("{x:.2}")).collect();
            s.push_str(&format!(
                "=============> {} {}\nops {} elapsed {:.6} s {:.2} ops/s samples(ops/s) [{}]",
                t.test,
                r.target,
                r.rates.amount,
                r.rates.elapsed_s,
                r.rates.overall(),
                samples.join(" ")
            ));
            end_line(&mut s, r.error.as_deref());
        }
        let global = match t.bracket {
            Some(b) => format!(
                "{:.2} ops/s min {:.2} max {:.2}",
                t.ops_per_sec, b.min, b.max
            ),
            None => "ERROR".to_string(),
        };
        s.push_str(&format!("=============> {} global\n{global}\n", t.test));
    }
    s
}

/// The target survey's detail: each target's path, mode and error.
pub fn ost(r: &OstReport) -> String {
    let mut s = String::new();
    for t in &r.targets {
        s.push_str(&format!(
            "=============> OST {} {}\nwrite {:.6} s {:.3} MB/s read {:.6} s {:.3} MB/s {}",
            t.index,
            t.path,
            t.write_s,
            t.write_mb_per_s,
            t.read_s,
            t.read_mb_per_s,
            io_mode(t.direct)
        ));
        end_line(&mut s, t.error.as_deref());
    }
    for (name, x) in [("read", &r.read), ("write", &r.write)] {
        if let Some(x) = x {
            s.push_str(&format!(
                "=============> {name} median {:.3} MB/s\n",
                x.median
            ));
        }
    }
    s
}

/// How a worker moved its data, as the detail lines say it.
fn io_mode(direct: bool) -> &'static str {
    if direct {
        "O_DIRECT"
    } else {
        "buffered+fdatasync"
    }
}

/// Ends a per-worker detail line, with its error when it had one.
fn end_line(s: &mut String, error: Option<&str>) {
    if let Some(e) = error {
        s.push_str(" error: ");
        s.push_str(e);
    }
    s.push('\n');
}
