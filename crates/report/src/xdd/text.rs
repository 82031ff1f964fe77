//! The text report: preamble, the result table in aligned columns, verify
//! and seek-histogram summaries, and the ending time.

use super::columns::{selected, Column, Ctx};
use super::rows::{rows, Row};
use iolab_xdd::results::RunResults;

/// Column context for a run (-percentcpu absolute divides by the CPUs).
pub fn ctx(r: &RunResults) -> Ctx {
    let div = if r.config.global.percentcpu_absolute {
        r.host.cpus.max(1) as f64
    } else {
        1.0
    };
    Ctx { cpu_divisor: div }
}

/// Lays out header, units and rows with aligned columns.
pub fn table(cols: &[Column], rows: &[Row], x: Ctx) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| cols.iter().map(|c| (c.value)(r, x)).collect())
        .collect();
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].len())
                .chain([c.header.len(), c.units.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |vals: Vec<&str>| {
        let parts: Vec<String> = vals
            .iter()
            .zip(cols.iter().zip(&widths))
            .map(|(v, (c, &w))| {
                if c.numeric {
                    format!("{v:>w$}")
                } else {
                    format!("{v:<w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut s = line(cols.iter().map(|c| c.header).collect());
    s += &line(cols.iter().map(|c| c.units).collect());
    for r in &cells {
        s += &line(r.iter().map(String::as_str).collect());
    }
    s
}

/// The whole text report.
pub fn render(r: &RunResults) -> String {
    let mut s = super::preamble::render(&r.config, &r.host, r.start_wall_ns, &r.targets);
    s.push('\n');
    let cols = selected(&r.config.global.outputformat, super::columns::is_e2e(r));
    s += &table(&cols, &rows(r), ctx(r));
    if r.config.global.deskew && super::rows::deskew(r).is_none() {
        s += "Deskew: no period in which every target was running; no DESKEW row\n";
    }
    s += &verify_summary(r);
    s += &seek_histograms(r);
    s += &slow_ops(r);
    s += &outcome_line(&r.outcome);
    s += &format!(
        "Ending time for this run, {}\n",
        iolab_core::clock::format_local(r.end_wall_ns / 1_000_000_000, "%a %b %e %H:%M:%S %Y")
    );
    s
}

/// How the run ended, when it did not simply complete.
fn outcome_line(o: &iolab_core::Outcome) -> String {
    use iolab_core::Outcome::*;
    match o {
        Completed => String::new(),
        TimeLimit { limit_s } => format!("Run ended early: -runtime {limit_s} seconds reached\n"),
        Interrupted => "Run ended early: interrupted (Ctrl-C or SIGTERM)\n".to_string(),
        Error(f) => format!("Run ended with an error: {f}\n"),
    }
}

fn verify_summary(r: &RunResults) -> String {
    let mut s = String::new();
    for i in 0..r.targets.len() {
        let c = r.target_total(i);
        if r.config.targets[i].verify.is_some() || c.errors > 0 {
            s += &format!(
                "Target {i} errors, {} I/O errors, {} reads failed -verify, {} bad units, first bad offset {}\n",
                c.errors,
                c.verify_failed_ops,
                c.verify_bad_units,
                c.first_bad_offset.map_or("none".to_string(), |o| o.to_string())
            );
        }
    }
    s
}

fn seek_histograms(r: &RunResults) -> String {
    let mut s = String::new();
    for (i, t) in r.targets.iter().enumerate() {
        for (name, h) in [("distance", &t.disthist), ("location", &t.seekhist)] {
            let Some(h) = h else { continue };
            s += &format!(
                "Target {i} seek {name} histogram, blocks per bucket, {}\n",
                h.bucket_width_blocks
            );
            for (b, n) in h.counts.iter().enumerate() {
                s += &format!(
                    "  {:>14}  {n}\n",
                    h.min_blocks + b as u64 * h.bucket_width_blocks
                );
            }
        }
    }
    s
}

fn slow_ops(r: &RunResults) -> String {
    let mut s = String::new();
    for i in 0..r.targets.len() {
        let th = r.config.targets[i].reportthreshold_s;
        for (op, off, ns) in r.target_total(i).slow_ops {
            s += &format!(
                "Target {i} op {op} at byte offset {off} took {:.3} ms (threshold {:.3} ms)\n",
                ns as f64 / 1e6,
                th * 1e3
            );
        }
    }
    s
}
