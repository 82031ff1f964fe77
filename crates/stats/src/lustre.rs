//! Lustre (and ldiskfs/jbd2) statistics: where the files live, and pure
//! parsers for their text, so a node without Lustre is told apart from a
//! node whose files fail to read, and the parsers are tested on sample
//! text. The files are those `lctl get_param` reads, read directly so no
//! sample needs a process.

use crate::config::Stat;
use crate::sample::Row;
use std::path::{Path, PathBuf};

/// Where the statistics are looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Lustre parameter trees, searched in order (first hit wins).
    pub lustre_roots: Vec<PathBuf>,
    /// ldiskfs per-device directories (`mb_stats`).
    pub ldiskfs: PathBuf,
    /// jbd2 per-journal directories (`info`).
    pub jbd2: PathBuf,
    /// Lustre's patched SCSI statistics.
    pub sd_iostats: PathBuf,
}

impl Default for Sources {
    fn default() -> Self {
        Sources::under(Path::new("/"))
    }
}

impl Sources {
    /// The usual places, under `root` instead of `/` (tests use a tree
    /// of sample files).
    pub fn under(root: &Path) -> Sources {
        Sources {
            lustre_roots: vec![
                root.join("proc/fs/lustre"),
                root.join("sys/fs/lustre"),
                root.join("sys/kernel/debug/lustre"),
            ],
            ldiskfs: root.join("proc/fs/ldiskfs"),
            jbd2: root.join("proc/fs/jbd2"),
            sd_iostats: root.join("proc/scsi/sd_iostats"),
        }
    }

    /// The files behind `stat`, each with the label its rows start with.
    /// Empty when the statistic does not exist on this node.
    pub fn files(&self, stat: Stat) -> Vec<(String, PathBuf)> {
        let lustre = |patterns: &[&[&str]]| {
            let mut out: Vec<(String, PathBuf)> = Vec::new();
            for root in &self.lustre_roots {
                for p in patterns {
                    for (label, path) in glob(root, p) {
                        if !out.iter().any(|(l, _)| *l == label) {
                            out.push((label, path));
                        }
                    }
                }
            }
            out
        };
        match stat {
            Stat::Service => {
                lustre(&[&["ost", "OSS", "*", "stats"], &["mds", "MDS", "*", "stats"]])
            }
            Stat::Io => lustre(&[&["obdfilter", "*", "stats"], &["mdt", "*", "md_stats"]]),
            Stat::Brw => lustre(&[
                &["obdfilter", "*", "brw_stats"],
                &["osd-ldiskfs", "*", "brw_stats"],
            ]),
            Stat::Client => lustre(&[
                &["osc", "*", "stats"],
                &["mdc", "*", "stats"],
                &["llite", "*", "stats"],
            ]),
            Stat::Mballoc => glob(&self.ldiskfs, &["*", "mb_stats"]),
            Stat::Jbd => glob(&self.jbd2, &["*", "info"]),
            Stat::Sdio => glob(&self.sd_iostats, &["*"]),
            _ => Vec::new(),
        }
    }

    /// Where `stat` was looked for, for the "absent" note.
    pub fn places(&self, stat: Stat) -> String {
        match stat {
            Stat::Mballoc => self.ldiskfs.display().to_string(),
            Stat::Jbd => self.jbd2.display().to_string(),
            Stat::Sdio => self.sd_iostats.display().to_string(),
            _ => self
                .lustre_roots
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// Files under `root` matching `pattern` (`*` = any entry), labelled by
/// the parts the stars matched plus, for a Lustre tree, the first
/// component (`osc/fs-OST0000-osc`), so rows from different kinds of
/// file never share a series name.
fn glob(root: &Path, pattern: &[&str]) -> Vec<(String, PathBuf)> {
    let mut found = vec![(Vec::<String>::new(), root.to_path_buf())];
    for part in pattern {
        let mut next = Vec::new();
        for (label, dir) in found {
            if *part == "*" {
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut names: Vec<String> = rd
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                for n in names {
                    let mut l = label.clone();
                    l.push(n.clone());
                    next.push((l, dir.join(n)));
                }
            } else {
                next.push((label, dir.join(part)));
            }
        }
        found = next;
    }
    let kind = pattern.first().filter(|p| **p != "*").copied();
    found
        .into_iter()
        .filter(|(_, p)| p.is_file())
        .map(|(l, p)| {
            let mut parts: Vec<String> = kind.map(str::to_string).into_iter().collect();
            parts.extend(l);
            (parts.join("/"), p)
        })
        .collect()
}

/// Reads every file of `stat` and parses it into rows; None when the
/// statistic does not exist here.
pub fn read(stat: Stat, sources: &Sources) -> Option<Vec<Row>> {
    let files = sources.files(stat);
    if files.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    for (label, path) in files {
        // A target can go away between the listing and the read.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        rows.extend(parse(stat, &label, &text));
    }
    Some(rows)
}

/// The parser for `stat`'s file text, rows prefixed with `label`.
pub fn parse(stat: Stat, label: &str, text: &str) -> Vec<Row> {
    match stat {
        Stat::Service | Stat::Io | Stat::Client => parse_stats(label, text),
        Stat::Brw => parse_brw_stats(label, text),
        Stat::Jbd => parse_jbd_info(label, text).into_iter().collect(),
        Stat::Mballoc | Stat::Sdio => parse_key_values(label, text).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// A Lustre `stats` file (lprocfs counters): after `snapshot_time`, one
/// line per counter, `NAME COUNT samples [UNIT] MIN MAX SUM [SUMSQ]`
/// (the last four only for counters that keep them). One row per
/// counter, `LABEL/NAME[UNIT]`: counters samples, sum, sumsq; gauges
/// min, max (over the target's life).
pub fn parse_stats(label: &str, text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 3 || w[2] != "samples" {
            continue;
        }
        let Ok(count) = w[1].parse::<u64>() else {
            continue;
        };
        let unit = w
            .get(3)
            .filter(|u| u.starts_with('['))
            .map(|u| u.trim_matches(|c| c == '[' || c == ']'))
            .unwrap_or("");
        let series = if unit.is_empty() {
            format!("{label}/{}", w[0])
        } else {
            format!("{label}/{}[{unit}]", w[0])
        };
        let nums: Vec<u64> = w.iter().skip(4).filter_map(|v| v.parse().ok()).collect();
        let mut row = Row::new(series).counter("samples", count);
        if let [min, max, sum, rest @ ..] = nums.as_slice() {
            row = row
                .gauge("min", *min as f64)
                .gauge("max", *max as f64)
                .counter("sum", *sum);
            if let Some(sumsq) = rest.first() {
                row = row.counter("sumsq", *sumsq);
            }
        }
        rows.push(row);
    }
    rows
}

/// A `brw_stats` file: histograms, each a header naming it (`pages per
/// bulk r/w  rpcs % cum % | rpcs % cum %`) and lines `BUCKET: n % cum% |
/// n % cum%`. One row per bucket, `LABEL/HISTOGRAM/BUCKET`, counters
/// read and write (the counts; the percentages follow from them).
pub fn parse_brw_stats(label: &str, text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once('|') else {
            continue;
        };
        let lw: Vec<&str> = left.split_whitespace().collect();
        let rw: Vec<&str> = right.split_whitespace().collect();
        let Some(first) = lw.first() else { continue };
        if let Some(bucket) = first.strip_suffix(':').filter(|_| lw.len() >= 2) {
            let (Some(name), Ok(read), Some(Ok(write))) = (
                section.as_ref(),
                lw[1].parse::<u64>(),
                rw.first().map(|v| v.parse::<u64>()),
            ) else {
                continue;
            };
            rows.push(
                Row::new(format!("{label}/{name}/{bucket}"))
                    .counter("read", read)
                    .counter("write", write),
            );
        } else if let Some(at) = lw.iter().position(|w| matches!(*w, "rpcs" | "ios" | "%")) {
            if at > 0 {
                section = Some(lw[..at].join("_").replace('/', "_"));
            }
        }
    }
    rows
}

/// A jbd2 `info` file: `N transactions (M requested), each up to B
/// blocks`, then averages such as `12ms logging transaction` or `21
/// handles per transaction`. One row, `LABEL`: counters transactions and
/// requested; gauges for each average (unit in the name).
pub fn parse_jbd_info(label: &str, text: &str) -> Option<Row> {
    let mut row = Row::new(label);
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.get(1) == Some(&"transactions") {
            row = row.counter("transactions", w[0].parse().ok()?);
            if let Some(req) = w.get(2).map(|v| v.trim_start_matches('(')) {
                row = row.counter("requested", req.parse().unwrap_or(0));
            }
            if let Some(at) = w.iter().position(|x| *x == "to") {
                row = row.gauge("max_blocks", w.get(at + 1)?.parse().unwrap_or(0.0));
            }
            continue;
        }
        let Some(head) = w.first() else { continue };
        let digits = head
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(head.len());
        let Ok(value) = head[..digits].parse::<f64>() else {
            continue;
        };
        let unit = &head[digits..];
        // `flushing data (in ordered mode)`: the words without their
        // parentheses, so the column reads flushing_data_in_ordered_mode_ms.
        let mut name: Vec<&str> = w[1..]
            .iter()
            .map(|x| x.trim_matches(|c| c == '(' || c == ')'))
            .filter(|x| !x.is_empty())
            .collect();
        if !unit.is_empty() {
            name.push(unit);
        }
        row = row.gauge(&name.join("_"), value);
    }
    Some(row)
}

/// Indented `key: number` text (ldiskfs `mb_stats`, sd_iostats): one
/// row, `LABEL`, a counter per key, nested keys joined with `.`. A value
/// such as `3/64` keeps its first number.
pub fn parse_key_values(label: &str, text: &str) -> Option<Row> {
    let mut row = Row::new(label);
    let mut stack: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let depth = line.len() - line.trim_start().len();
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        while stack.last().is_some_and(|(d, _)| *d >= depth) {
            stack.pop();
        }
        let key = key.trim().replace(' ', "_");
        let value = value.trim();
        if value.is_empty() {
            stack.push((depth, key));
            continue;
        }
        let first = value
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap_or("");
        if let Ok(v) = first.parse::<u64>() {
            let mut path: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
            path.push(&key);
            // The top heading (`mballoc:`) names the file, not a field.
            let name = if path.len() > 1 {
                path[1..].join(".")
            } else {
                key.clone()
            };
            row = row.counter(&name, v);
        }
    }
    (!row.counters.is_empty()).then_some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An OSS service `stats` file as Lustre's manual shows the format.
    const OST_IO_STATS: &str = "\
snapshot_time             1700000123.456789 secs.usecs
req_waittime              1200 samples [usec] 5 880 61234 9812345
req_qdepth                1200 samples [reqs] 0 3 40 90
req_active                1200 samples [reqs] 1 8 3100 9200
reqbuf_avail              2410 samples [bufs] 62 64 154000 9856000
ost_read                  400 samples [bytes] 4096 1048576 209715200 109951162777600
ost_write                 800 samples [bytes] 1048576 1048576 838860800 879609302220800
ost_punch                 2 samples [reqs]
";

    #[test]
    fn service_stats_keep_count_sum_and_extremes() {
        let rows = parse_stats("ost/ost_io", OST_IO_STATS);
        assert_eq!(rows.len(), 7);
        let w = rows
            .iter()
            .find(|r| r.series == "ost/ost_io/ost_write[bytes]")
            .unwrap();
        assert_eq!(w.counters["samples"], 800);
        assert_eq!(w.counters["sum"], 838_860_800);
        assert_eq!(w.counters["sumsq"], 879_609_302_220_800);
        assert_eq!(w.gauges["max"], 1_048_576.0);
        let p = rows
            .iter()
            .find(|r| r.series == "ost/ost_io/ost_punch[reqs]")
            .unwrap();
        assert_eq!(p.counters["samples"], 2);
        assert!(!p.counters.contains_key("sum"));
    }

    /// An MDT `md_stats` and an osc client `stats` file.
    const MD_STATS: &str = "\
snapshot_time             1700000123.000001 secs.usecs
open                      5000 samples [reqs]
close                     4990 samples [reqs]
mkdir                     12 samples [reqs]
getattr                   40 samples [reqs]
";
    const OSC_STATS: &str = "\
snapshot_time             1700000200.100000 secs.usecs
req_waittime              320 samples [usec] 60 9000 120000 90000000
req_active                320 samples [reqs] 1 8 900 3100
ost_write                 256 samples [bytes] 4096 4194304 268435456 281474976710656
ost_connect               1 samples [usec] 300 300 300 90000
";

    #[test]
    fn target_and_client_stats_share_the_format() {
        let md = parse_stats("mdt/fs-MDT0000", MD_STATS);
        assert_eq!(md.len(), 4);
        assert_eq!(md[0].series, "mdt/fs-MDT0000/open[reqs]");
        assert_eq!(md[0].counters["samples"], 5000);
        let osc = parse_stats("osc/fs-OST0000-osc-ffff", OSC_STATS);
        let w = osc
            .iter()
            .find(|r| r.series.ends_with("ost_write[bytes]"))
            .unwrap();
        assert_eq!(w.counters["sum"], 268_435_456);
        assert_eq!(w.gauges["min"], 4096.0);
    }

    /// brw_stats: two histograms of the several a target keeps.
    const BRW: &str = "\
snapshot_time:         1700000300.500000 (secs.usecs)

                           read      |     write
pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %
1:                      10  50  50   |    0   0   0
256:                    10  50 100   |  800 100 100

                           read      |     write
disk I/O size          ios   % cum % |  ios         % cum %
4K:                     10  50  50   |    0   0   0
1M:                     10  50 100   |  800 100 100
";

    #[test]
    fn brw_stats_become_buckets_with_read_and_write_counts() {
        let rows = parse_brw_stats("obdfilter/fs-OST0000", BRW);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[1].series,
            "obdfilter/fs-OST0000/pages_per_bulk_r_w/256"
        );
        assert_eq!(rows[1].counters["write"], 800);
        assert_eq!(rows[2].series, "obdfilter/fs-OST0000/disk_I_O_size/4K");
        assert_eq!(rows[2].counters["read"], 10);
    }

    const JBD: &str = "\
3587 transactions (3580 requested), each up to 8192 blocks
average: 
  0ms waiting for transaction
  0ms request delay
  4ms running transaction
  0ms transaction was being locked
  1ms flushing data (in ordered mode)
  8ms logging transaction
  3203us average transaction commit time
  21 handles per transaction
  3 blocks per transaction
  4 logged blocks per transaction
";

    #[test]
    fn jbd_info_counts_transactions_and_keeps_averages() {
        let r = parse_jbd_info("vda1-8", JBD).unwrap();
        assert_eq!(r.counters["transactions"], 3587);
        assert_eq!(r.counters["requested"], 3580);
        assert_eq!(r.gauges["max_blocks"], 8192.0);
        assert_eq!(r.gauges["logging_transaction_ms"], 8.0);
        assert_eq!(r.gauges["average_transaction_commit_time_us"], 3203.0);
        assert_eq!(r.gauges["handles_per_transaction"], 21.0);
        assert_eq!(r.gauges["flushing_data_in_ordered_mode_ms"], 1.0);
        assert!(r.gauges.keys().all(|k| !k.contains(['(', ')'])), "{r:?}");
    }

    const MB_STATS: &str = "\
mballoc:
\treqs: 1200
\tsuccess: 1190
\tgroups_scanned: 40
\tcr_p2_aligned_stats:
\t\thits: 30
\t\tgroups_considered: 31
\textents_scanned: 800
\t\tgoal_hits: 700
\tbuddies_generated: 12/64
\tpreallocated: 5000
";

    #[test]
    fn mballoc_keys_nest() {
        let r = parse_key_values("sdb", MB_STATS).unwrap();
        assert_eq!(r.counters["reqs"], 1200);
        assert_eq!(r.counters["cr_p2_aligned_stats.hits"], 30);
        assert_eq!(r.counters["buddies_generated"], 12);
        assert_eq!(r.counters["extents_scanned"], 800);
    }

    #[test]
    fn files_are_found_under_each_root_and_absent_when_missing() {
        let dir = std::env::temp_dir().join(format!("iolab-lustre-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let src = Sources::under(&dir);
        assert!(read(Stat::Service, &src).is_none());
        let oss = dir.join("proc/fs/lustre/ost/OSS/ost_io");
        std::fs::create_dir_all(&oss).unwrap();
        std::fs::write(oss.join("stats"), OST_IO_STATS).unwrap();
        let osc = dir.join("sys/kernel/debug/lustre/osc/fs-OST0000-osc");
        std::fs::create_dir_all(&osc).unwrap();
        std::fs::write(osc.join("stats"), OSC_STATS).unwrap();
        let rows = read(Stat::Service, &src).unwrap();
        assert!(rows
            .iter()
            .any(|r| r.series == "ost/ost_io/ost_write[bytes]"));
        let rows = read(Stat::Client, &src).unwrap();
        assert!(rows
            .iter()
            .any(|r| r.series == "osc/fs-OST0000-osc/ost_write[bytes]"));
        assert!(read(Stat::Brw, &src).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
