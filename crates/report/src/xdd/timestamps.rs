//! The text reports of `-timestamps` (XDD guide 10.7): one line per
//! operation (`detailed`) and the summary. Columns follow XDD's with two
//! fixes: every column's unit is the unit of its values (XDD labels some
//! second-valued columns as milliseconds), and the summary covers every
//! entry (XDD's summarises only its first). Times are the monotonic clock
//! in nanoseconds, or Unix-epoch nanoseconds with `normalize`.

use iolab_xdd::timestamp::{distance_blocks, summarize, TsEntry, TsInfo, TsSummary};
use std::fmt::Write;

/// The detailed report: one line per entry, then the summary.
pub fn detailed(info: &TsInfo, entries: &[TsEntry], normalize: bool) -> String {
    let mut w = String::new();
    let bs = info.block_size.max(1);
    let _ = writeln!(
        w,
        "Start of DETAILED Time Stamp Report, Target, {}, QThread, {}, Number of entries, {}, Dropped entries, {}, Time stamp units, {}",
        info.target,
        qthread_label(info.qthread),
        entries.len(),
        info.dropped,
        if normalize { "ns since Unix epoch" } else { "ns monotonic" }
    );
    let _ = writeln!(w, "Target, QThread, RWV Op, Pass, Op Number, Block Location, Offset, Xfer Bytes, Distance, StartTS, EndTS, IO Time, Relative Start, Dead Time, Loop Time, Inst Bandwidth");
    let _ = writeln!(w, "UNITS>>, number, text, number, number, blocks, bytes, bytes, blocks, ns, ns, ms, ms, us, ms, MB/s");
    let shift = if normalize {
        info.wall_minus_mono_ns
    } else {
        0
    };
    let t0 = entries.first().map_or(0, |e| e.start_ns);
    let mut prev: Option<&TsEntry> = None;
    for e in entries {
        let io_ns = e.end_ns.saturating_sub(e.start_ns);
        let dist = prev.map_or(0, |p| distance_blocks(p, e, bs));
        let dead_ns = prev.map_or(0, |p| e.start_ns.saturating_sub(p.end_ns));
        let loop_ns = prev.map_or(io_ns, |p| e.end_ns.saturating_sub(p.end_ns));
        let mbs = if io_ns == 0 {
            0.0
        } else {
            e.xfer_bytes as f64 * 1e3 / io_ns as f64
        };
        let _ = writeln!(
            w,
            "{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {:.6}, {:.6}, {:.3}, {:.6}, {:.3}",
            info.target,
            e.qthread,
            e.op.code() as char,
            e.pass,
            e.op_number,
            e.offset_bytes / bs,
            e.offset_bytes,
            e.xfer_bytes,
            dist,
            e.start_ns as i64 + shift,
            e.end_ns as i64 + shift,
            io_ns as f64 / 1e6,
            e.start_ns.saturating_sub(t0) as f64 / 1e6,
            dead_ns as f64 / 1e3,
            loop_ns as f64 / 1e6,
            mbs
        );
        prev = Some(e);
    }
    let _ = writeln!(w, "End of DETAILED Time Stamp Report");
    w + &summary(info, &summarize(entries, bs))
}

/// The summary report.
pub fn summary(info: &TsInfo, s: &TsSummary) -> String {
    let mut w = String::new();
    let ms = |ns: f64| ns / 1e6;
    let us = |ns: f64| ns / 1e3;
    let _ = writeln!(
        w,
        "Start of SUMMARY Time Stamp Report, Target, {}, QThread, {}, Number of entries, {}, Dropped entries, {}",
        info.target,
        qthread_label(info.qthread),
        s.entries,
        info.dropped
    );
    let _ = writeln!(
        w,
        "Average seek distance in {} byte blocks, {:.3}, request size in blocks, {:.3}",
        info.block_size, s.distance_blocks.mean, s.mean_req_blocks
    );
    let _ = writeln!(
        w,
        "Range: Longest seek distance in blocks, {}, shortest seek distance in blocks, {}",
        s.distance_blocks.max, s.distance_blocks.min
    );
    let _ = writeln!(
        w,
        "Average I/O time in milliseconds, {:.6}, average dead time in microseconds, {:.3}",
        ms(s.io_ns.mean),
        us(s.dead_ns.mean)
    );
    let _ = writeln!(w, "I/O Time Range: Longest I/O time in milliseconds, {:.6}, shortest I/O time in milliseconds, {:.6}", ms(s.io_ns.max as f64), ms(s.io_ns.min as f64));
    let _ = writeln!(w, "Dead Time Range: Longest dead time in microseconds, {:.3}, shortest dead time in microseconds, {:.3}", us(s.dead_ns.max as f64), us(s.dead_ns.min as f64));
    let mbs = if s.span_ns == 0 {
        0.0
    } else {
        s.xfer_bytes as f64 * 1e3 / s.span_ns as f64
    };
    let _ = writeln!(w, "Bytes transferred, {}, first start to last end in milliseconds, {:.6}, bandwidth in MB/s (10^6), {:.3}", s.xfer_bytes, ms(s.span_ns as f64), mbs);
    let _ = writeln!(w, "End of SUMMARY Time Stamp Report");
    w
}

fn qthread_label(q: u32) -> String {
    if q == u32::MAX {
        "all".into()
    } else {
        q.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_xdd::timestamp::OpType;

    fn entry(op: u64) -> TsEntry {
        TsEntry {
            pass: 1,
            qthread: 0,
            op_number: op,
            op: OpType::Write,
            offset_bytes: (op * 4) << 20,
            req_bytes: 4 << 20,
            xfer_bytes: 4 << 20,
            start_ns: 1_000_000 + op * 1_000_000,
            end_ns: 1_500_000 + op * 1_000_000,
        }
    }

    fn info() -> TsInfo {
        TsInfo {
            target: 0,
            qthread: 0,
            block_size: 1024,
            dropped: 0,
            wrapped: false,
            oneshot: false,
            wall_minus_mono_ns: 0,
        }
    }

    #[test]
    fn detailed_text_columns_and_units() {
        let entries: Vec<TsEntry> = (0..3).map(entry).collect();
        let text = detailed(&info(), &entries, false);
        let lines: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = lines[1].split(", ").collect();
        let units: Vec<&str> = lines[2].split(", ").collect();
        assert_eq!(header.len(), units.len());
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        assert_eq!(units[col("IO Time")], "ms");
        let row: Vec<&str> = lines[4].split(", ").collect(); // op 1
        assert_eq!(row.len(), header.len());
        assert_eq!(row[col("Block Location")], "4096");
        assert_eq!(row[col("IO Time")], "0.500000"); // 0.5 ms, not 500
        assert_eq!(row[col("Relative Start")], "1.000000");
        assert_eq!(row[col("Dead Time")], "500.000"); // us
        assert_eq!(row[col("Inst Bandwidth")], "8388.608"); // 4 MiB / 0.5 ms in 10^6 B/s
        assert!(text.contains(
            "Start of SUMMARY Time Stamp Report, Target, 0, QThread, 0, Number of entries, 3"
        ));
        assert!(text.contains("Average I/O time in milliseconds, 0.500000"));
    }
}
