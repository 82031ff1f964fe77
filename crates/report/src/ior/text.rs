//! IOR 4's text report, piece by piece as a run prints it: the header,
//! each test's start and `Options:`, the results table's header and
//! rows (with IOR's warnings before a row), the remove rows, the
//! `Max Write` lines, the `Summary of all tests:` table and `Finished`.
//! Numbers are laid out with IOR's widths and precisions (its PPDouble:
//! 10 columns, 6 decimals below 1, 2 below 3600, none above).

use iolab_ior::results::{AccessResult, OpSummary, TestResult};
use iolab_ior::Test;
use std::fmt::Write;

const MIB: f64 = 1048576.0;

/// IOR's `key: value` lines (`%-20s: %s`).
fn kv(s: &mut String, key: &str, value: impl std::fmt::Display) {
    let _ = writeln!(s, "{key:<20}: {value}");
}

/// The run's header (IOR's PrintHeader): version, start, command line,
/// machine.
pub fn header(version: &str, began: &str, command: &str, machine: &str) -> String {
    let mut s = format!("IOR-{version}: MPI Coordinated Test of Parallel I/O\n");
    kv(&mut s, "Began", began);
    kv(&mut s, "Command line", command);
    kv(&mut s, "Machine", machine);
    s
}

/// A byte count as IOR's HumanReadable writes it (`1 MiB`, `2.50 GiB`,
/// `262144 bytes`).
pub fn human(v: u64) -> String {
    for (unit, name) in [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB")] {
        if v >= unit {
            return match v % unit {
                0 => format!("{} {name}", v / unit),
                _ => format!("{:.2} {name}", v as f64 / unit as f64),
            };
        }
    }
    format!("{v} bytes")
}

/// A test's start (ShowTestStart) and its `Options:` (ShowSetup), up to
/// and with the results table's header.
pub fn test_start(t: &TestResult) -> String {
    let p = &t.test.params;
    let mut s = String::new();
    kv(&mut s, "TestID", p.id);
    kv(&mut s, "StartTime", &t.started);
    kv(&mut s, "Path", &t.path);
    if let Some(fs) = &t.fs {
        let _ = writeln!(s, "{}", fs_line(fs));
    }
    if let Some(d) = &p.debug {
        let _ = write!(s, "\n*** DEBUG MODE ***\n*** {d} ***\n\n");
    }
    s.push_str(&options(t));
    s.push_str("\nResults: \n\n");
    s.push_str("access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n");
    s.push_str("------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n");
    s
}

/// IOR's `FS` line.
fn fs_line(fs: &iolab_ior::results::FsSpace) -> String {
    let gib = fs.total_bytes as f64 / (1u64 << 30) as f64;
    let (size, unit) = match gib > 1024.0 {
        true => (gib / 1024.0, "TiB"),
        false => (gib, "GiB"),
    };
    let used = |free: u64, total: u64| match total {
        0 => 0.0,
        _ => (1.0 - free as f64 / total as f64) * 100.0,
    };
    format!(
        "{:<20}: {size:.1} {unit}   Used FS: {:2.1}%   Inodes: {:.1} Mi   Used Inodes: {:2.1}%",
        "FS",
        used(fs.free_bytes, fs.total_bytes),
        fs.inodes as f64 / (1u64 << 20) as f64,
        used(fs.inodes_free, fs.inodes)
    )
}

/// `Options:` as ShowSetup prints them.
fn options(t: &TestResult) -> String {
    let mut s = String::from("\nOptions: \n");
    for (k, v) in option_lines(t) {
        kv(&mut s, k, v);
    }
    s
}

/// The keys and values of `Options:`, in IOR's order (also the JSON's
/// `Options` object).
pub fn option_lines(t: &TestResult) -> Vec<(&'static str, String)> {
    use iolab_ior::params::Hog;
    let (p, g) = (&t.test.params, &t.geometry);
    let mut v: Vec<(&'static str, String)> = vec![
        ("api", t.test.api.name().into()),
        ("apiVersion", String::new()),
        ("test filename", p.test_file.to_string_lossy().into_owned()),
        (
            "access",
            if p.file_per_proc {
                "file-per-process"
            } else {
                "single-shared-file"
            }
            .into(),
        ),
        ("type", "independent".into()),
        ("segments", p.segments.to_string()),
        (
            "ordering in a file",
            if p.random_offset > 0 {
                "random"
            } else {
                "sequential"
            }
            .into(),
        ),
    ];
    if p.reorder == 0 && p.reorder_random == 0 {
        v.push(("ordering inter file", "no tasks offsets".into()));
    }
    if p.reorder > 0 {
        v.push(("ordering inter file", "constant task offset".into()));
        v.push(("task offset", p.task_per_node_offset.to_string()));
    }
    if p.reorder_random > 0 {
        v.push(("ordering inter file", "random task offset".into()));
        v.push(("task offset", p.task_per_node_offset.to_string()));
        v.push(("reorder random seed", p.reorder_seed.to_string()));
    }
    v.push(("nodes", g.nodes.to_string()));
    v.push(("tasks", g.tasks.to_string()));
    v.push(("clients per node", g.tasks_on_node0.to_string()));
    match p.hog {
        Hog::PerTask(b) => v.push(("memoryPerTask", human(b))),
        Hog::PerNode(b) => v.push(("memoryPerNode", human(b))),
        Hog::NodePercent(n) => v.push(("memoryPerNode", format!("{n}%"))),
        Hog::None => {}
    }
    for (k, x) in [
        ("memoryBuffer", "CPU"),
        ("dataAccess", "CPU"),
        ("GPUDirect", "0"),
    ] {
        v.push((k, x.into()));
    }
    v.push(("repetitions", p.repetitions.to_string()));
    v.push(("xfersize", human(p.transfer_bytes)));
    v.push(("blocksize", human(p.block_bytes)));
    v.push(("aggregate filesize", human(expected(t))));
    if p.verbose > 0 {
        v.push(("verbose", p.verbose.to_string()));
    }
    if p.deadline_s > 0 {
        v.push(("stonewallingTime", p.deadline_s.to_string()));
        v.push(("stoneWallingWearOut", u8::from(p.wearout).to_string()));
    }
    v
}

/// Block x segments x tasks.
fn expected(t: &TestResult) -> u64 {
    let p = &t.test.params;
    p.block_bytes
        .saturating_mul(p.segments)
        .saturating_mul(t.geometry.tasks)
}

/// IOR's PPDouble: a number in 10 columns, left-justified, then `after`.
fn pp(s: &mut String, x: f64, after: &str) {
    if x < 0.0 || !x.is_finite() {
        let _ = write!(s, "   -      {after}");
        return;
    }
    let prec = if x < 1.0 {
        6
    } else if x < 3600.0 {
        2
    } else {
        0
    };
    let _ = write!(s, "{x:<10.prec$}{after}");
}

/// The lines an access prints: its stonewall line, IOR's warnings, and
/// its row of the results table.
pub fn access(r: &AccessResult) -> String {
    let mut s = String::new();
    if let Some(w) = &r.stonewall {
        let gib = (1u64 << 30) as f64;
        let _ = writeln!(
            s,
            "stonewalling pairs accessed min: {} max: {} -- min data: {:.1} GiB mean data: {:.1} GiB time: {:.1}s",
            w.min_transfers,
            w.max_transfers,
            w.min_bytes as f64 / gib,
            w.avg_bytes as f64 / gib,
            w.time_s
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    s.push_str(&row(r));
    s
}

/// One row of the results table (PrintReducedResult); an access the
/// stop request or a failed call cut short says so in place of figures
/// that are no measurement.
pub fn row(r: &AccessResult) -> String {
    let mut s = format!("{:<10}", r.access.map_or("", |a| a.name()));
    let cut = match (r.interrupted, r.failed) {
        (true, _) => Some("stopped by the interrupt"),
        (_, true) => Some("failed"),
        _ => None,
    };
    if let Some(how) = cut {
        let _ = writeln!(s, "{how} in iteration {}: not a measurement", r.iteration);
        return s;
    }
    pp(&mut s, r.bw_bytes_per_s / MIB, " ");
    pp(&mut s, r.iops, " ");
    pp(&mut s, r.latency_s, "  ");
    pp(&mut s, r.block_bytes as f64 / 1024.0, " ");
    pp(&mut s, r.transfer_bytes as f64 / 1024.0, " ");
    pp(&mut s, r.open_s, " ");
    pp(&mut s, r.rdwr_s, " ");
    pp(&mut s, r.close_s, " ");
    pp(&mut s, r.total_s, " ");
    let _ = writeln!(s, "{:<4}", r.iteration);
    s
}

/// The row of a removal (printed with `-v`).
pub fn removed(iteration: u64, secs: f64) -> String {
    let mut s = String::from("remove    -          -          -           -          -          -          -          -          ");
    pp(&mut s, secs, " ");
    let _ = writeln!(s, "{iteration:<4}");
    s
}

/// What follows a test's rows: `-O summaryAlways`'s summary, or (with
/// `-v`) the `Max Write`/`Max Read` lines; IOR's pairs line.
pub fn test_end(t: &TestResult) -> String {
    let p = &t.test.params;
    let mut s = String::new();
    if p.summary_always {
        s.push_str(&summary_header());
        s.push_str(&summary_rows(t));
    } else if p.verbose > 0 {
        let max = |f: fn(&iolab_ior::results::Iteration) -> Option<&AccessResult>| {
            t.iterations
                .iter()
                .filter_map(f)
                .filter(|r| r.measured())
                .map(|r| r.bw_bytes_per_s)
                .fold(0.0, f64::max)
        };
        if p.write {
            let m = max(|i| i.write.as_ref());
            let _ = writeln!(
                s,
                "Max Write: {:.2} MiB/sec ({:.2} MB/sec)",
                m / MIB,
                m / 1e6
            );
        }
        if p.read {
            let m = max(|i| i.read.as_ref());
            let _ = writeln!(
                s,
                "Max Read:  {:.2} MiB/sec ({:.2} MB/sec)",
                m / MIB,
                m / 1e6
            );
        }
    }
    if let Some(n) = t.pairs_note {
        let _ = writeln!(s, "Pairs deadlineForStonewallingaccessed: {n}");
    }
    s
}

/// The `Summary of all tests:` table's header.
pub fn summary_header() -> String {
    let mut s = String::from("\n");
    let _ = write!(
        s,
        "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>13}",
        "Operation",
        "Max(MiB)",
        "Min(MiB)",
        "Mean(MiB)",
        "StdDev",
        "Max(OPs)",
        "Min(OPs)",
        "Mean(OPs)",
        "StdDev",
        "Mean(s)",
        "Stonewall(s)",
        "Stonewall(MiB)"
    );
    s.push_str(" Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt ");
    let _ = writeln!(
        s,
        "{:>8} {:>8} {:>9} {:>5} RefNum",
        " blksiz", "xsize", "aggs(MiB)", "API"
    );
    s
}

/// A test's rows of the summary table (write, then read).
pub fn summary_rows(t: &TestResult) -> String {
    t.summary
        .iter()
        .map(|o| summary_row(&t.test, t, o))
        .collect()
}

fn summary_row(test: &Test, t: &TestResult, o: &OpSummary) -> String {
    let p = &test.params;
    let mut s = format!("{:<9} ", o.access.map_or("", |a| a.name()));
    for v in [
        o.bw_max / MIB,
        o.bw_min / MIB,
        o.bw_mean / MIB,
        o.bw_sd / MIB,
    ] {
        let _ = write!(s, "{v:>10.2} ");
    }
    for v in [o.ops_max, o.ops_min, o.ops_mean, o.ops_sd] {
        let _ = write!(s, "{v:>10.2} ");
    }
    let _ = write!(s, "{:>10.5} ", o.mean_time_s);
    match (o.stonewall_time_s, o.stonewall_bytes_per_s) {
        (Some(time), Some(rate)) => {
            let _ = write!(s, "{time:>10.2} {:>13.2} ", rate / MIB);
        }
        _ => {
            let _ = write!(s, "{:>10} {:>13} ", "NA", "NA");
        }
    }
    let _ = write!(
        s,
        "{:>5} {:>6} {:>3} {:>4} {:>3} {:>5} {:>8} {:>9} {:>4} {:>6} {:>8} {:>8} {:>9.1} {:>3} {:>6}",
        p.id,
        t.geometry.tasks,
        t.geometry.tasks_on_node0,
        p.repetitions,
        u8::from(p.file_per_proc),
        p.reorder,
        p.task_per_node_offset,
        p.reorder_random,
        p.reorder_seed,
        p.segments,
        p.block_bytes,
        p.transfer_bytes,
        o.agg_bytes as f64 / MIB,
        test.api.name(),
        p.ref_num
    );
    s.push('\n');
    s
}

/// `Summary of all tests:` with every test's rows; nothing when no test
/// has a summary (each was interrupted, as an interrupted mdtest prints
/// no SUMMARY).
pub fn summary(tests: &[TestResult]) -> String {
    if tests.iter().all(|t| t.summary.is_empty()) {
        return String::new();
    }
    let mut s = String::from("\nSummary of all tests:");
    s.push_str(&summary_header());
    for t in tests {
        s.push_str(&summary_rows(t));
    }
    s
}

/// The last line.
pub fn finished(when: &str) -> String {
    let mut s = String::new();
    kv(&mut s, "Finished", when);
    s
}

/// The whole report of a run in one piece (for `-O summaryFile`).
pub fn render(p: &iolab_ior::IorPayload, version: &str, command: &str) -> String {
    let mut s = header(version, &p.began, command, &p.machine);
    for t in &p.tests {
        s.push_str(&test_start(t));
        for it in &t.iterations {
            for r in it.write.iter().chain(it.read.iter()) {
                s.push_str(&access(r));
            }
            if let (Some(secs), true) = (it.remove_s, t.test.params.verbose > 0) {
                s.push_str(&removed(it.index, secs));
            }
        }
        s.push_str(&test_end(t));
    }
    s.push_str(&summary(&p.tests));
    s.push_str(&finished(&p.finished));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_ior_lays_them_out() {
        assert_eq!(human(262144), "262144 bytes");
        assert_eq!(human(1 << 20), "1 MiB");
        assert_eq!(human(3 << 29), "1.50 GiB");
        let mut s = String::new();
        pp(&mut s, 1043.034, " ");
        pp(&mut s, 0.000443, "  ");
        pp(&mut s, 11140.2, " ");
        assert_eq!(s, "1043.03    0.000443    11140      ");
        assert_eq!(removed(0, 0.000032), "remove    -          -          -           -          -          -          -          -          0.000032   0   \n");
        // IOR 4.1's header, column for column.
        assert_eq!(
            summary_header(),
            "\nOperation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum\n"
        );
    }
}
