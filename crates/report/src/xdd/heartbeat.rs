//! Heartbeat lines (-heartbeat): what one reporter thread prints every N
//! seconds from a snapshot of the targets' progress. Pure formatting.

use iolab_xdd::values::HeartbeatOpts;

/// One target's progress at the moment of a heartbeat.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Target number.
    pub target: usize,
    /// Current pass.
    pub pass: u64,
    /// Operations done this pass.
    pub ops: u64,
    /// Bytes done this pass.
    pub bytes: u64,
    /// Operations planned per pass (u64::MAX = time-limited).
    pub planned_ops: u64,
    /// Seconds since the pass started.
    pub pass_elapsed_s: f64,
    /// The target's pass has not begun: it waits at the pass barrier,
    /// for a start delay, a trigger, or the run's start. Its counters
    /// were cleared for the pass, so they say nothing yet.
    pub waiting: bool,
}

impl Sample {
    fn rate(&self, v: u64) -> f64 {
        iolab_xdd::figures::per_second(v, self.pass_elapsed_s)
    }
    fn pct(&self) -> f64 {
        if self.planned_ops == u64::MAX || self.planned_ops == 0 {
            0.0
        } else {
            self.ops as f64 * 100.0 / self.planned_ops as f64
        }
    }
    fn etc_s(&self) -> f64 {
        let r = self.rate(self.ops);
        if r > 0.0 && self.planned_ops != u64::MAX {
            self.planned_ops.saturating_sub(self.ops) as f64 / r
        } else {
            0.0
        }
    }
}

/// The figures asked for; ops, bw and pct when none were.
fn fields(o: &HeartbeatOpts) -> Vec<&'static str> {
    let all = [
        (o.ops, "ops"),
        (o.bytes, "bytes"),
        (o.kbytes, "kbytes"),
        (o.mbytes, "mbytes"),
        (o.gbytes, "gbytes"),
        (o.bw, "bw"),
        (o.iops, "iops"),
        (o.pct, "pct"),
        (o.etc, "etc"),
    ];
    let chosen: Vec<&str> = all.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
    if chosen.is_empty() {
        vec!["ops", "bw", "pct"]
    } else {
        chosen
    }
}

fn value(f: &str, s: &Sample) -> String {
    match f {
        "ops" => s.ops.to_string(),
        "bytes" => s.bytes.to_string(),
        "kbytes" => format!("{:.3}", s.bytes as f64 / 1e3),
        "mbytes" => format!("{:.3}", s.bytes as f64 / 1e6),
        "gbytes" => format!("{:.3}", s.bytes as f64 / 1e9),
        "bw" => format!("{:.3}", s.rate(s.bytes) / 1e6),
        "iops" => format!("{:.3}", s.rate(s.ops)),
        "pct" => format!("{:.1}", s.pct()),
        _ => format!("{:.1}", s.etc_s()),
    }
}

fn label(f: &str) -> &'static str {
    match f {
        "ops" => "OPS",
        "bytes" => "B",
        "kbytes" => "KB",
        "mbytes" => "MB",
        "gbytes" => "GB",
        "bw" => "MB/s",
        "iops" => "IOPS",
        "pct" => "%",
        _ => "ETC_s",
    }
}

/// A terminal heartbeat line over all shown targets; ends with a carriage
/// return (overwriting itself) unless `lf` was asked for.
pub fn line(
    o: &HeartbeatOpts,
    host: &str,
    tod: &str,
    run_elapsed_s: f64,
    samples: &[Sample],
) -> String {
    let mut s = String::new();
    if o.hostname {
        s += &format!("HOST {host} ");
    }
    if o.tod {
        s += &format!("TOD {tod} ");
    }
    if o.elapsed {
        s += &format!("ELAPSED {run_elapsed_s:.1} ");
    }
    s += &format!(
        "Pass {:04}",
        samples.iter().map(|x| x.pass).max().unwrap_or(0)
    );
    for x in samples {
        s += " |";
        if o.target {
            s += &format!(" tgt {:04}", x.target);
        }
        // XDD's word for a target not started; not figures of 0 ops.
        if x.waiting {
            s += &format!(" WAITING for pass {:04}", x.pass.max(1));
            continue;
        }
        for f in fields(o) {
            s += &format!(" {} {}", value(f, x), label(f));
        }
    }
    s + if o.lf { "\n" } else { "\r" }
}

/// Header of a per-target heartbeat CSV file (-heartbeat output PREFIX).
pub fn csv_header(o: &HeartbeatOpts) -> String {
    let mut cols = vec!["elapsed_s", "tod", "host", "target", "pass"];
    cols.extend(fields(o));
    crate::csvw::record(cols)
}

/// One line of a per-target heartbeat CSV file; none while the target
/// waits for its pass to begin (it has no figures of that pass yet).
pub fn csv_line(
    o: &HeartbeatOpts,
    host: &str,
    tod: &str,
    run_elapsed_s: f64,
    x: &Sample,
) -> Option<String> {
    if x.waiting {
        return None;
    }
    let mut v = vec![
        format!("{run_elapsed_s:.3}"),
        tod.to_string(),
        host.to_string(),
        x.target.to_string(),
        x.pass.to_string(),
    ];
    v.extend(fields(o).iter().map(|f| value(f, x)));
    Some(crate::csvw::record(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_show_what_was_asked() {
        let o = HeartbeatOpts {
            interval_s: 1.0,
            ops: true,
            iops: true,
            target: true,
            lf: true,
            elapsed: true,
            ..Default::default()
        };
        let s = Sample {
            target: 1,
            pass: 2,
            ops: 50,
            bytes: 5000,
            planned_ops: 100,
            pass_elapsed_s: 2.0,
            waiting: false,
        };
        let l = line(&o, "h", "t", 3.0, &[s]);
        assert_eq!(l, "ELAPSED 3.0 Pass 0002 | tgt 0001 50 OPS 25.000 IOPS\n");
        let d = line(&HeartbeatOpts::default(), "h", "t", 0.0, &[s]);
        assert!(d.ends_with('\r') && d.contains("50.0 %"), "{d}");
        assert_eq!(
            csv_line(&o, "h", "t", 3.0, &s).unwrap(),
            "3.000,t,h,1,2,50,25.000\n"
        );
        // A host name with a comma is quoted, not cut into two columns.
        assert_eq!(
            csv_line(&o, "h,1", "t", 3.0, &s).unwrap(),
            "3.000,t,\"h,1\",1,2,50,25.000\n"
        );
    }

    /// A target whose pass has not begun (at the pass barrier, in a
    /// start delay) is said to wait, not shown with the 0 ops of its
    /// cleared counters; the others keep their figures.
    #[test]
    fn a_target_waiting_for_its_pass_shows_no_figures() {
        let o = HeartbeatOpts {
            interval_s: 1.0,
            ops: true,
            target: true,
            lf: true,
            ..Default::default()
        };
        let done = Sample {
            target: 0,
            pass: 2,
            ops: 100,
            planned_ops: 100,
            pass_elapsed_s: 1.0,
            ..Default::default()
        };
        let waiting = Sample {
            target: 1,
            pass: 2,
            waiting: true,
            ..Default::default()
        };
        let l = line(&o, "h", "t", 3.0, &[done, waiting]);
        assert_eq!(
            l,
            "Pass 0002 | tgt 0000 100 OPS | tgt 0001 WAITING for pass 0002\n"
        );
        assert_eq!(csv_line(&o, "h", "t", 3.0, &waiting), None);
    }
}
