//! Result columns: the `-outputformat` tokens of guide section 8.2, each
//! with its header, its units and how its value is computed from a row.
//! Bandwidth is in 10^6 bytes per second, as XDD prints it.

use super::rows::Row;

/// How many CPUs a percentage is relative to (-percentcpu absolute).
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Divide CPU percentages by this (1 = relative to one CPU).
    pub cpu_divisor: f64,
}

/// A column: header, units, value.
pub struct Column {
    /// Header line text.
    pub header: &'static str,
    /// Units line text.
    pub units: &'static str,
    /// Right-align (numbers) or left-align (text).
    pub numeric: bool,
    /// The value for one row.
    pub value: fn(&Row, Ctx) -> String,
}

/// XDD's default columns, then iolab's latency percentiles and CPU cost.
pub const DEFAULT_TOKENS: &[&str] = &[
    "WHAT",
    "PASS",
    "TARGET",
    "QUEUE",
    "BYTESXFERED",
    "OPS",
    "ELAPSEDTIMEPASS",
    "BANDWIDTH",
    "IOPS",
    "LATENCY",
    "PERCENTCPU",
    "OPTYPE",
    "XFERSIZEBYTES",
    "LATP50",
    "LATP90",
    "LATP99",
    "LATP999",
    "LATMAX",
    "CPUUSPEROP",
];

fn secs(c: &iolab_xdd::results::Counts) -> f64 {
    c.elapsed_ns as f64 / 1e9
}
fn rate(v: u64, r: &Row) -> f64 {
    let s = secs(&r.counts);
    if s > 0.0 {
        v as f64 / s
    } else {
        0.0
    }
}
fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}
fn pct(ns: u64, r: &Row, x: Ctx) -> String {
    let e = r.counts.elapsed_ns.max(1) as f64;
    format!("{:.3}", ns as f64 / e * 100.0 / x.cpu_divisor)
}
fn f3(v: f64) -> String {
    format!("{v:.3}")
}
fn avg_xfer(r: &Row) -> f64 {
    r.counts.bytes() as f64 / r.counts.ops().max(1) as f64
}
fn pctl(r: &Row, q: f64) -> String {
    ms(r.counts.latency.percentile(q) as f64)
}

/// The column for a token (upper case, no `+`), None when unknown.
pub fn column(token: &str) -> Option<Column> {
    let c = |header, units, numeric, value| {
        Some(Column {
            header,
            units,
            numeric,
            value,
        })
    };
    match token {
        "WHAT" => c("What", "UNITS>>", false, |r, _| r.what.to_string()),
        "PASS" => c("Pass", "Number", true, |r, _| r.pass.to_string()),
        "TARGET" => c("Target", "Number", true, |r, _| r.target.to_string()),
        "QUEUE" => c("Queue", "Number", true, |r, _| r.queue.to_string()),
        "BYTESTRANSFERED" | "BYTESXFERED" => c("Bytes_Xfered", "Bytes", true, |r, _| {
            r.counts.bytes().to_string()
        }),
        "BYTESREAD" => c("Bytes_Read", "Bytes", true, |r, _| {
            r.counts.read_bytes.to_string()
        }),
        "BYTESWRITTEN" => c("Bytes_Written", "Bytes", true, |r, _| {
            r.counts.write_bytes.to_string()
        }),
        "OPS" => c("Ops", "#ops", true, |r, _| r.counts.ops().to_string()),
        "READOPS" => c("Read_Ops", "#ops", true, |r, _| {
            r.counts.read_ops.to_string()
        }),
        "WRITEOPS" => c("Write_Ops", "#ops", true, |r, _| {
            r.counts.write_ops.to_string()
        }),
        "BANDWIDTH" => c("Bandwidth", "MBytes/s", true, |r, _| {
            f3(rate(r.counts.bytes(), r) / 1e6)
        }),
        "READBANDWIDTH" => c("Read_Bandwidth", "MBytes/s", true, |r, _| {
            f3(rate(r.counts.read_bytes, r) / 1e6)
        }),
        "WRITEBANDWIDTH" => c("Write_Bandwidth", "MBytes/s", true, |r, _| {
            f3(rate(r.counts.write_bytes, r) / 1e6)
        }),
        "IOPS" => c("IOPS", "Ops/s", true, |r, _| f3(rate(r.counts.ops(), r))),
        "READIOPS" => c("Read_IOPS", "Ops/s", true, |r, _| {
            f3(rate(r.counts.read_ops, r))
        }),
        "WRITEIOPS" => c("Write_IOPS", "Ops/s", true, |r, _| {
            f3(rate(r.counts.write_ops, r))
        }),
        "LATENCY" => c("Latency", "millisec", true, |r, _| {
            ms(r.counts.latency.mean())
        }),
        "ELAPSEDTIME1STOP" => c("Elapsed_1st_Op", "seconds", true, |r, _| {
            format!("{:.6}", r.counts.first_op_ns as f64 / 1e9)
        }),
        "ELAPSEDTIMEPASS" => c("Elapsed", "seconds", true, |r, _| f3(secs(&r.counts))),
        "OVERHEADTIME" => c("Overhead", "seconds", true, |r, _| {
            let io_per_q = r.counts.io_ns as f64 / r.queue.max(1) as f64;
            format!(
                "{:.6}",
                (r.counts.elapsed_ns as f64 - io_per_q).max(0.0) / 1e9
            )
        }),
        "PATTERNFILLTIME" => c("Pattern_Fill", "seconds", true, |r, _| {
            format!("{:.6}", r.counts.pattern_fill_ns as f64 / 1e9)
        }),
        "BUFFERFLUSHTIME" => c("Flush_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.counts.flush_ns as f64 / 1e9)
        }),
        "CPUTIME" => c("CPU_Time", "seconds", true, |r, _| {
            format!(
                "{:.6}",
                (r.counts.cpu_user_ns + r.counts.cpu_sys_ns) as f64 / 1e9
            )
        }),
        "PERCENTCPUTIME" | "PERCENTCPU" => c("Pct_CPU", "percent", true, |r, x| {
            pct(r.counts.cpu_user_ns + r.counts.cpu_sys_ns, r, x)
        }),
        "USERTIME" | "USER" | "USRTIME" => c("User_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.counts.cpu_user_ns as f64 / 1e9)
        }),
        "SYSTEMTIME" | "SYSTEM" | "SYSTIME" => c("Sys_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.counts.cpu_sys_ns as f64 / 1e9)
        }),
        "PERCENTUSER" | "PERCENTUSERTIME" | "PERCENTUSR" => {
            c("Pct_User", "percent", true, |r, x| {
                pct(r.counts.cpu_user_ns, r, x)
            })
        }
        "PERCENTSYSTEM" | "PERCENTSYSTEMTIME" | "PERCENTSYS" => {
            c("Pct_Sys", "percent", true, |r, x| {
                pct(r.counts.cpu_sys_ns, r, x)
            })
        }
        "OPTYPE" => c("Op_Type", "text", false, |r, _| r.op_type.to_string()),
        "XFERSIZEBYTES" => c("Xfer_Size", "bytes", true, |r, _| {
            format!("{:.0}", avg_xfer(r))
        }),
        "XFERSIZEBLOCKS" => c("Xfer_Size", "blocks", true, |r, _| {
            f3(avg_xfer(r) / r.blocksize.max(1) as f64)
        }),
        "XFERSIZEKBYTES" => c("Xfer_Size", "KBytes", true, |r, _| f3(avg_xfer(r) / 1024.0)),
        "XFERSIZEMBYTES" => c("Xfer_Size", "MBytes", true, |r, _| {
            f3(avg_xfer(r) / 1048576.0)
        }),
        "DELIM" => c("|", "|", false, |_, _| "|".to_string()),
        "LATP50" => c("Lat_p50", "millisec", true, |r, _| pctl(r, 0.50)),
        "LATP90" => c("Lat_p90", "millisec", true, |r, _| pctl(r, 0.90)),
        "LATP99" => c("Lat_p99", "millisec", true, |r, _| pctl(r, 0.99)),
        "LATP999" => c("Lat_p99.9", "millisec", true, |r, _| pctl(r, 0.999)),
        "LATMAX" => c("Lat_max", "millisec", true, |r, _| {
            ms(r.counts.latency.max() as f64)
        }),
        "CPUUSPEROP" => c("CPU_us/op", "microsec", true, |r, _| {
            format!(
                "{:.3}",
                (r.counts.cpu_user_ns + r.counts.cpu_sys_ns) as f64
                    / 1e3
                    / r.counts.ops().max(1) as f64
            )
        }),
        _ => None,
    }
}

/// The columns for a run's -outputformat (default, new, or default + add).
pub fn selected(of: &iolab_xdd::values::OutputFormat) -> Vec<Column> {
    let base: Vec<&str> = if of.replace {
        Vec::new()
    } else {
        DEFAULT_TOKENS.to_vec()
    };
    base.into_iter()
        .chain(of.tokens.iter().map(String::as_str))
        .filter_map(column)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parser_token_has_a_column() {
        for t in iolab_xdd::tokens::TOKENS {
            assert!(column(t).is_some(), "{t}");
        }
    }
}
