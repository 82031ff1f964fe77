//! Samples into tables: one per statistic and node, one line per series
//! per interval, counters turned into deltas and rates over the interval,
//! gauges as they were at its end. Pure: the CSV text is built here and
//! written by the caller.

use crate::config::Stat;
use crate::sample::{NodeSamples, Row, Sample, Series};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One statistic of one node as a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The node.
    pub node: String,
    /// The statistic.
    pub stat: Stat,
    /// Column names.
    pub header: Vec<String>,
    /// Cells, already formatted (empty = no value).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table as CSV text: a header line, then the rows; a series or
    /// column name holding a comma, a quote or a line break is quoted
    /// (the csv crate, RFC 4180), every other cell written as it is.
    pub fn to_csv(&self) -> String {
        let mut w = csv::WriterBuilder::new()
            .flexible(true)
            .from_writer(Vec::new());
        // A flexible writer into memory has nothing to fail on.
        let _ = w.write_record(&self.header);
        for r in &self.rows {
            let _ = w.write_record(r);
        }
        let bytes = w.into_inner().unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The file name the table is written to, inside its node's folder.
    pub fn file_name(&self) -> String {
        format!("{}.csv", self.stat.name())
    }

    /// The cells of column `name`, for readers and tests.
    pub fn column(&self, name: &str) -> Option<Vec<&str>> {
        let at = self.header.iter().position(|h| h == name)?;
        Some(self.rows.iter().map(|r| r[at].as_str()).collect())
    }
}

/// The columns every table starts with.
pub const LEAD: [&str; 4] = ["time_unix_s", "elapsed_s", "interval_s", "series"];

/// One table per statistic with at least two samples; absent statistics
/// are left out (the node's record says why).
pub fn tables(ns: &NodeSamples) -> Vec<Table> {
    ns.stats
        .iter()
        .filter_map(|(stat, series)| match series {
            Series::Samples(v) if v.len() >= 2 => Some(table(&ns.node, *stat, v)),
            _ => None,
        })
        .collect()
}

/// A table from the samples of one statistic.
pub fn table(node: &str, stat: Stat, samples: &[Sample]) -> Table {
    let mut counters = BTreeSet::new();
    let mut gauges = BTreeSet::new();
    for r in samples.iter().flat_map(|s| &s.rows) {
        counters.extend(r.counters.keys().cloned());
        gauges.extend(r.gauges.keys().cloned());
    }
    let mut header: Vec<String> = LEAD.iter().map(|s| s.to_string()).collect();
    for c in &counters {
        header.push(format!("{c}_delta"));
        header.push(format!("{c}_per_s"));
    }
    header.extend(gauges.iter().cloned());
    let first_ns = samples.first().map(|s| s.mono_ns).unwrap_or(0);
    let mut rows = Vec::new();
    for pair in samples.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let interval_s = b.mono_ns.saturating_sub(a.mono_ns) as f64 / 1e9;
        let before: BTreeMap<&str, &Row> = a.rows.iter().map(|r| (r.series.as_str(), r)).collect();
        for r in &b.rows {
            let mut line = vec![
                format!("{:.3}", b.unix_ns as f64 / 1e9),
                format!("{:.3}", b.mono_ns.saturating_sub(first_ns) as f64 / 1e9),
                format!("{interval_s:.3}"),
                r.series.clone(),
            ];
            let prev = before.get(r.series.as_str());
            for c in &counters {
                line.extend(rate_cells(
                    prev.and_then(|p| p.counters.get(c)),
                    r.counters.get(c),
                    interval_s,
                ));
            }
            for g in &gauges {
                line.push(r.gauges.get(g).map(|v| fmt_num(*v)).unwrap_or_default());
            }
            rows.push(line);
        }
    }
    Table {
        node: node.to_string(),
        stat,
        header,
        rows,
    }
}

/// Delta and rate of one counter; empty when either end is missing or
/// the counter went backwards (a reset: the interval's rate is unknown).
fn rate_cells(before: Option<&u64>, after: Option<&u64>, interval_s: f64) -> [String; 2] {
    match (before, after) {
        (Some(a), Some(b)) if b >= a => {
            let d = b - a;
            let rate = if interval_s > 0.0 {
                fmt_num(d as f64 / interval_s)
            } else {
                String::new()
            };
            [d.to_string(), rate]
        }
        _ => [String::new(), String::new()],
    }
}

/// Whole numbers without a fraction, others with three decimals.
fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(mono_ns: u64, writes: u64, flight: f64) -> Sample {
        Sample {
            unix_ns: 1_700_000_000_000_000_000 + mono_ns,
            mono_ns,
            rows: vec![Row::new("loop0")
                .counter("write_bytes", writes)
                .gauge("in_flight", flight)],
        }
    }

    #[test]
    fn counters_become_deltas_and_rates_per_interval() {
        let t = table(
            "n",
            Stat::Disk,
            &[
                s(0, 0, 0.0),
                s(2_000_000_000, 4096, 1.0),
                s(3_000_000_000, 8192, 0.0),
            ],
        );
        assert_eq!(
            t.header,
            [
                "time_unix_s",
                "elapsed_s",
                "interval_s",
                "series",
                "write_bytes_delta",
                "write_bytes_per_s",
                "in_flight"
            ]
        );
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][2..], ["2.000", "loop0", "4096", "2048", "1"]);
        assert_eq!(
            t.rows[1][1..],
            ["3.000", "1.000", "loop0", "4096", "4096", "0"]
        );
        assert!(t.to_csv().starts_with("time_unix_s,elapsed_s"));
    }

    #[test]
    fn a_counter_that_goes_back_has_no_rate() {
        let t = table("n", Stat::Disk, &[s(0, 100, 0.0), s(1_000_000_000, 5, 0.0)]);
        assert_eq!(t.rows[0][4..6], ["", ""]);
    }

    #[test]
    fn a_series_name_with_a_comma_is_quoted_and_reads_back_whole() {
        let row = |mono_ns, v| Sample {
            unix_ns: 1_700_000_000_000_000_000 + mono_ns,
            mono_ns,
            rows: vec![Row::new("md0,\"raid\"").counter("write_bytes", v)],
        };
        let t = table("n", Stat::Disk, &[row(0, 0), row(1_000_000_000, 4096)]);
        let text = t.to_csv();
        // The layout of everything else is as it was: plain cells unquoted.
        assert_eq!(
            text.lines().next(),
            Some("time_unix_s,elapsed_s,interval_s,series,write_bytes_delta,write_bytes_per_s")
        );
        assert!(
            text.contains(",1.000,1.000,\"md0,\"\"raid\"\"\",4096,4096\n"),
            "{text}"
        );
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let rec = r.records().next().unwrap().unwrap();
        assert_eq!(&rec[3], "md0,\"raid\"");
        assert_eq!(rec.len(), 6);
    }
}
