//! Result columns: the `-outputformat` tokens of guide section 8.2, each
//! with its header, its units and how its value is computed from a row.
//! Bandwidth is in 10^6 bytes per second, as XDD prints it.

use super::rows::Row;
use iolab_xdd::tokens::Token;

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

/// The text table's default: XDD's default columns, then iolab's latency
/// percentiles and CPU cost.
pub fn default_tokens() -> Vec<Token> {
    [Token::XDD_DEFAULT, Token::IOLAB_EXTRA].concat()
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

/// The column for a token spelling (any case, `+` optional), None when
/// it names no token.
pub fn column(token: &str) -> Option<Column> {
    token.parse().ok().map(column_of)
}

/// The column of a token: the match is exhaustive, so every token the
/// parser accepts has a column.
pub fn column_of(token: Token) -> Column {
    let c = |header, units, numeric, value| Column {
        header,
        units,
        numeric,
        value,
    };
    use Token as T;
    match token {
        T::What => c("What", "UNITS>>", false, |r, _| r.what.to_string()),
        T::Pass => c("Pass", "Number", true, |r, _| r.pass.to_string()),
        T::Target => c("Target", "Number", true, |r, _| r.target.to_string()),
        T::Queue => c("Queue", "Number", true, |r, _| r.queue.to_string()),
        T::BytesXfered => c("Bytes_Xfered", "Bytes", true, |r, _| {
            r.counts.bytes().to_string()
        }),
        T::BytesRead => c("Bytes_Read", "Bytes", true, |r, _| {
            r.counts.read_bytes.to_string()
        }),
        T::BytesWritten => c("Bytes_Written", "Bytes", true, |r, _| {
            r.counts.write_bytes.to_string()
        }),
        T::Ops => c("Ops", "#ops", true, |r, _| r.counts.ops().to_string()),
        T::ReadOps => c("Read_Ops", "#ops", true, |r, _| {
            r.counts.read_ops.to_string()
        }),
        T::WriteOps => c("Write_Ops", "#ops", true, |r, _| {
            r.counts.write_ops.to_string()
        }),
        T::Bandwidth => c("Bandwidth", "MBytes/s", true, |r, _| {
            f3(r.figures.bandwidth_mb_per_s)
        }),
        T::ReadBandwidth => c("Read_Bandwidth", "MBytes/s", true, |r, _| {
            f3(r.figures.read_bandwidth_mb_per_s)
        }),
        T::WriteBandwidth => c("Write_Bandwidth", "MBytes/s", true, |r, _| {
            f3(r.figures.write_bandwidth_mb_per_s)
        }),
        T::Iops => c("IOPS", "Ops/s", true, |r, _| f3(r.figures.iops)),
        T::ReadIops => c("Read_IOPS", "Ops/s", true, |r, _| f3(r.figures.read_iops)),
        T::WriteIops => c("Write_IOPS", "Ops/s", true, |r, _| f3(r.figures.write_iops)),
        T::Latency => c("Latency", "millisec", true, |r, _| {
            ms(r.counts.latency.mean())
        }),
        T::ElapsedTime1stOp => c("Elapsed_1st_Op", "seconds", true, |r, _| {
            format!("{:.6}", r.figures.first_op_s)
        }),
        T::ElapsedTimePass => c("Elapsed", "seconds", true, |r, _| f3(r.figures.elapsed_s)),
        T::OverheadTime => c("Overhead", "seconds", true, |r, _| {
            let io_per_q = r.counts.io_ns as f64 / r.queue.max(1) as f64;
            format!(
                "{:.6}",
                (r.counts.elapsed_ns as f64 - io_per_q).max(0.0) / 1e9
            )
        }),
        T::PatternFillTime => c("Pattern_Fill", "seconds", true, |r, _| {
            format!("{:.6}", r.figures.pattern_fill_s)
        }),
        T::BufferFlushTime => c("Flush_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.figures.flush_s)
        }),
        T::CpuTime => c("CPU_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.figures.cpu.user_s + r.figures.cpu.system_s)
        }),
        T::PercentCpu => c("Pct_CPU", "percent", true, |r, x| {
            pct(r.counts.cpu_user_ns + r.counts.cpu_sys_ns, r, x)
        }),
        T::UserTime => c("User_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.figures.cpu.user_s)
        }),
        T::SystemTime => c("Sys_Time", "seconds", true, |r, _| {
            format!("{:.6}", r.figures.cpu.system_s)
        }),
        T::PercentUser => c("Pct_User", "percent", true, |r, x| {
            pct(r.counts.cpu_user_ns, r, x)
        }),
        T::PercentSystem => c("Pct_Sys", "percent", true, |r, x| {
            pct(r.counts.cpu_sys_ns, r, x)
        }),
        T::OpType => c("Op_Type", "text", false, |r, _| r.op_type.to_string()),
        T::XferSizeBytes => c("Xfer_Size", "bytes", true, |r, _| {
            format!("{:.0}", avg_xfer(r))
        }),
        T::XferSizeBlocks => c("Xfer_Size", "blocks", true, |r, _| {
            f3(avg_xfer(r) / r.blocksize.max(1) as f64)
        }),
        T::XferSizeKbytes => c("Xfer_Size", "KBytes", true, |r, _| f3(avg_xfer(r) / 1024.0)),
        T::XferSizeMbytes => c("Xfer_Size", "MBytes", true, |r, _| {
            f3(avg_xfer(r) / 1048576.0)
        }),
        T::Delim => c("|", "|", false, |_, _| "|".to_string()),
        T::LatP50 => c("Lat_p50", "millisec", true, |r, _| pctl(r, 0.50)),
        T::LatP90 => c("Lat_p90", "millisec", true, |r, _| pctl(r, 0.90)),
        T::LatP99 => c("Lat_p99", "millisec", true, |r, _| pctl(r, 0.99)),
        T::LatP999 => c("Lat_p99.9", "millisec", true, |r, _| pctl(r, 0.999)),
        T::LatMax => c("Lat_max", "millisec", true, |r, _| {
            ms(r.counts.latency.max() as f64)
        }),
        T::CpuUsPerOp => c("CPU_us/op", "microsec", true, |r, _| {
            format!("{:.3}", r.figures.cpu.us_per_op)
        }),
        T::E2eIoTime => c("E2E_I/O", "seconds", true, |r, _| e2e(r, |e| f3(e.io_s))),
        T::E2eSrTime => c("E2E_S/R", "seconds", true, |r, _| e2e(r, |e| f3(e.sr_s))),
        T::E2ePercentSrTime => c("E2E_Pct_S/R", "percent", true, |r, _| {
            e2e(r, |e| format!("{:.2}", e.sr_percent))
        }),
        T::E2eLagTime => c("E2E_Lag", "millisec", true, |r, _| e2e(r, |e| f3(e.lag_ms))),
        T::E2ePercentLagTime => c("E2E_Pct_Lag", "percent", true, |r, _| {
            e2e(r, |e| format!("{:.2}", e.lag_percent))
        }),
        T::E2eFirstReadTime => c("E2E_1st_Rd", "millisec", true, |r, _| {
            e2e(r, |e| f3(e.first_read_ms))
        }),
        T::E2eLastWriteTime => c("E2E_Lst_Wrt", "millisec", true, |r, _| {
            e2e(r, |e| f3(e.last_write_ms))
        }),
    }
}

/// An end-to-end figure of a row; `-` on a row with no end-to-end span.
fn e2e(r: &Row, f: impl Fn(&iolab_xdd::e2e::counts::E2eFigures) -> String) -> String {
    r.figures.e2e.as_ref().map_or_else(|| "-".to_string(), f)
}

/// True when a run has an end-to-end target: its tables then end with
/// the percentage of time spent on the network (+E2EPERCENTSRTIME), as
/// guide section 10.5 says.
pub fn is_e2e(r: &iolab_xdd::results::RunResults) -> bool {
    r.config.targets.iter().any(|t| t.e2e.role().is_some())
}

fn with_e2e(defaults: &[Token], e2e: bool) -> Vec<Token> {
    let mut v = defaults.to_vec();
    if e2e {
        v.push(Token::E2ePercentSrTime);
    }
    v
}

/// The tokens of a run's -outputformat over `defaults` (replaced by
/// `new`, extended by `add`). Tokens were checked when the command line
/// was parsed; one that does not parse here cannot occur.
pub fn tokens_over(of: &iolab_xdd::values::OutputFormat, defaults: &[Token]) -> Vec<Token> {
    let base = if of.replace { &[][..] } else { defaults };
    let chosen = of.tokens.iter().filter_map(|t| t.parse::<Token>().ok());
    base.iter().copied().chain(chosen).collect()
}

/// The text table's columns for a run's -outputformat (`e2e`: the run
/// has an end-to-end target).
pub fn selected(of: &iolab_xdd::values::OutputFormat, e2e: bool) -> Vec<Column> {
    tokens_over(of, &with_e2e(&default_tokens(), e2e))
        .into_iter()
        .map(column_of)
        .collect()
}

/// The columns of `-csvout` and `-combinedout`: XDD's own default columns
/// (so a script written for XDD's CSV reads ours), or the -outputformat.
pub fn selected_xdd(of: &iolab_xdd::values::OutputFormat, e2e: bool) -> Vec<Column> {
    tokens_over(of, &with_e2e(Token::XDD_DEFAULT, e2e))
        .into_iter()
        .map(column_of)
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
        assert!(column("NOPE").is_none());
        let h: Vec<&str> = Token::XDD_DEFAULT
            .iter()
            .map(|t| column_of(*t).header)
            .collect();
        assert_eq!(
            h,
            [
                "What",
                "Pass",
                "Target",
                "Queue",
                "Bytes_Xfered",
                "Ops",
                "Elapsed",
                "Bandwidth",
                "IOPS",
                "Latency",
                "Pct_CPU",
                "Op_Type",
                "Xfer_Size"
            ]
        );
    }
}
