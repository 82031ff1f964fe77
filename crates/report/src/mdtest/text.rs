//! mdtest 1.9.3's text layout, line for line: the started line, the
//! launch and command lines, Path and FS, the item count, the SUMMARY
//! table(s) and the finished line.

use iolab_core::env::FsInfo;
use iolab_mdtest::results::{Phase, Stat4, SummaryRow};
use iolab_mdtest::{Config, TestResult};
use std::fmt::Write as _;

/// `-- started at 11/23/2009 09:05:29 --` and the blank line after it.
pub fn started(ts: &str) -> String {
    format!("-- started at {ts} --\n\n")
}

/// `-- finished at ... --`.
pub fn finished(ts: &str) -> String {
    format!("-- finished at {ts} --\n")
}

/// The launch block printed before a test runs.
pub fn header(
    version: &str,
    tasks: u64,
    nodes: u64,
    command: &str,
    path: &str,
    fs: &FsInfo,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mdtest-{version} was launched with {tasks} total task(s) on {nodes} node(s)"
    );
    let _ = writeln!(s, "Command line used: {command}");
    let _ = writeln!(s, "Path: {path}");
    let _ = writeln!(s, "{}", fs_line(fs));
    s
}

/// `FS: 15.6 GiB   Used FS: 0.0%   Inodes: 3.9 Mi   Used Inodes: 0.0%`
pub fn fs_line(fs: &FsInfo) -> String {
    let gib = fs.size_bytes as f64 / (1u64 << 30) as f64;
    let (size, unit) = if gib > 1024.0 {
        (gib / 1024.0, "TiB")
    } else {
        (gib, "GiB")
    };
    let pct = |used: u64, total: u64| {
        if total == 0 {
            0.0
        } else {
            used as f64 * 100.0 / total as f64
        }
    };
    format!(
        "FS: {size:.1} {unit}   Used FS: {:.1}%   Inodes: {:.1} Mi   Used Inodes: {:.1}%",
        pct(fs.used_bytes, fs.size_bytes),
        fs.inodes as f64 / (1u64 << 20) as f64,
        pct(fs.used_inodes, fs.inodes)
    )
}

/// The `N tasks, M files/directories` line (with the seed line for -R).
pub fn counts(cfg: &Config, t: &TestResult) -> String {
    let what = match (cfg.do_dirs, cfg.do_files) {
        (true, true) => "files/directories",
        (true, false) => "directories",
        _ => "files",
    };
    let mut s = String::from("\n");
    if let Some(seed) = t.random_seed {
        let _ = writeln!(s, "random seed: {seed}");
    }
    let _ = writeln!(s, "{} tasks, {} {what}", t.tasks, t.total_items);
    s
}

/// mdtest's `Continue stonewall hit` line for each iteration whose file
/// creation the wall (-W) stopped before the tasks made their items: the
/// fewest and most files a task had made at the wall, and their mean
/// (mdtest prints it during the iteration; here it comes before the
/// SUMMARY, with the rest of the report).
pub fn stonewall_lines(t: &TestResult) -> String {
    let mut s = String::new();
    for it in &t.iterations {
        for p in it.phases.iter().filter(|p| p.phase == Phase::FileCreate) {
            let Some(w) = p.stonewall.filter(|w| w.hit) else {
                continue;
            };
            let avg = w.items as f64 / p.tasks.max(1) as f64;
            let _ = writeln!(
                s,
                "Continue stonewall hit min: {} max: {} avg: {avg:.1} ",
                w.min_task_items, w.max_task_items
            );
        }
    }
    s
}

/// The SUMMARY table(s): rates (default), rates then times (-P), or
/// times only (-Z).
pub fn summary(cfg: &Config, t: &TestResult) -> String {
    let n = t.iterations_run();
    let mut s = String::new();
    if cfg.print_time_only {
        table(
            &mut s,
            &format!("SUMMARY time in seconds: (of {n} iterations)"),
            &t.summary,
            |r| Some(r.time_s),
        );
    } else if cfg.print_rate_and_time {
        table(
            &mut s,
            &format!("SUMMARY rate in ops/sec: (of {n} iterations)"),
            &t.summary,
            rate_rows,
        );
        table(
            &mut s,
            &format!("SUMMARY time in seconds: (of {n} iterations)"),
            &t.summary,
            |r| Some(r.time_s),
        );
    } else {
        table(
            &mut s,
            &format!("SUMMARY: (of {n} iterations)"),
            &t.summary,
            rate_rows,
        );
    }
    s.push('\n');
    s
}

fn rate_rows(r: &SummaryRow) -> Option<Stat4> {
    Some(r.rate)
}

fn table(
    s: &mut String,
    title: &str,
    rows: &[SummaryRow],
    pick: impl Fn(&SummaryRow) -> Option<Stat4>,
) {
    let _ = writeln!(s, "\n{title}");
    let _ = writeln!(
        s,
        "   Operation                      Max            Min           Mean        Std Dev"
    );
    let _ = writeln!(
        s,
        "   ---------                      ---            ---           ----        -------"
    );
    let timing = title.contains("time");
    for r in rows {
        if let Some(v) = pick(r) {
            row(s, r.phase.label(), v);
        }
        if let (Some(w), false) = (r.stonewall_rate, timing) {
            let label = if r.phase.label().starts_with("File") {
                "File creation (SW)"
            } else {
                "Dir. creation (SW)"
            };
            row(s, label, w);
        }
    }
}

fn row(s: &mut String, label: &str, v: Stat4) {
    let _ = writeln!(
        s,
        "   {label:<18}:{:>15.3}{:>15.3}{:>15.3}{:>15.3}",
        v.max, v.min, v.mean, v.std_dev
    );
}

/// A verbose (-v) line for one finished phase.
pub fn phase_line(iteration: u64, label: &str, elapsed_s: f64, rate: f64) -> String {
    format!(
        "V-1: iteration {}: {label:<18}: {elapsed_s:14.6} sec, {rate:14.3} ops/sec\n",
        iteration + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_mdtest::results::{summarize, IterationResult, Phase, PhaseResult};

    fn result() -> TestResult {
        let pr = |phase, rate: f64| PhaseResult {
            phase,
            items: 200,
            tasks: 2,
            elapsed_s: 200.0 / rate,
            rate,
            missing: 0,
            stonewall: None,
            latency: Default::default(),
        };
        let iterations = vec![
            IterationResult {
                iteration: 0,
                phases: vec![pr(Phase::DirCreate, 21489.415), pr(Phase::TreeCreate, 10.0)],
            },
            IterationResult {
                iteration: 1,
                phases: vec![pr(Phase::DirCreate, 17447.551), pr(Phase::TreeCreate, 10.0)],
            },
        ];
        TestResult {
            tasks: 2,
            nodes: 1,
            items_per_task: 100,
            total_items: 200,
            random_seed: None,
            stonewall_file_error: None,
            summary: summarize(&iterations),
            iterations,
            iterations_count: 2,
            missing_items: 0,
        }
    }

    #[test]
    fn rows_line_up_with_mdtest_193() {
        let cfg = iolab_mdtest::Config::from_raw(
            &iolab_mdtest::args::parse(&["-n".into(), "100".into()]).unwrap(),
        )
        .unwrap();
        let s = summary(&cfg, &result());
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "SUMMARY: (of 2 iterations)");
        assert_eq!(
            lines[2],
            "   Operation                      Max            Min           Mean        Std Dev"
        );
        assert_eq!(
            lines[4],
            "   Directory creation:      21489.415      17447.551      19468.483       2858.029"
        );
        assert_eq!(
            lines[5],
            "   Tree creation     :         10.000         10.000         10.000          0.000"
        );
        assert_eq!(lines[2].len(), lines[4].len());
        assert_eq!(
            counts(&cfg, &result()),
            "\n2 tasks, 200 files/directories\n"
        );
    }

    #[test]
    fn fs_line_format() {
        let fs = FsInfo {
            size_bytes: 16_750_372_454,
            used_bytes: 0,
            inodes: 4_089_446,
            used_inodes: 0,
            ..Default::default()
        };
        assert_eq!(
            fs_line(&fs),
            "FS: 15.6 GiB   Used FS: 0.0%   Inodes: 3.9 Mi   Used Inodes: 0.0%"
        );
    }
}
