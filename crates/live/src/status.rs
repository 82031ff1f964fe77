//! The one-line status a terminal shows while a run goes (the progress
//! bar's job for tools without one): per phase, the rate and the p99 of
//! the last interval. A pure function: the binary draws it.

use crate::row::Row;

/// `file_create 12.3k ops/s 45.6 MB/s p99 1.2 ms | ...` for the
/// aggregate rows of one interval, with the time since the start first.
pub fn line(t: f64, rows: &[Row]) -> String {
    let mut parts = vec![format!("{:>6.1}s", t)];
    for r in rows.iter().filter(|r| r.is_aggregate()) {
        let mut s = format!("{} {} ops/s", r.phase, si(r.ops_per_sec));
        if r.bytes > 0 {
            s += &format!(" {}B/s", si(r.bytes_per_sec));
        }
        if let Some(l) = r.latency {
            s += &format!(" p99 {}", duration(l.p99_ns));
        }
        if r.errors_total > 0 {
            s += &format!(" {} errors", r.errors_total);
        }
        parts.push(s);
    }
    parts.join(" | ")
}

/// A number with an SI prefix and three significant digits.
pub fn si(v: f64) -> String {
    let (d, p) = match v.abs() {
        x if x >= 1e12 => (1e12, "T"),
        x if x >= 1e9 => (1e9, "G"),
        x if x >= 1e6 => (1e6, "M"),
        x if x >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    let digits = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$}{p}")
}

/// Nanoseconds in the largest unit that keeps a digit before the point.
pub fn duration(ns: u64) -> String {
    let v = ns as f64;
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} µs", v / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} ms", v / 1e6),
        _ => format!("{:.2} s", v / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(1.5e9), "1.50G");
        assert_eq!(duration(1_234_567), "1.2 ms");
        assert_eq!(duration(950), "950 ns");
    }
}
