//! The text report: preamble, the result table in aligned columns, verify
//! and seek-histogram summaries, and the ending time.

use super::columns::{selected, Column, Ctx};
use super::rows::{rows, Row};
use iolab_xdd::results::RunResults;
use std::io::{self, Write};

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
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_table(&mut out, cols, || rows.iter().cloned(), x);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`table`] written to `w`. `rows` makes the rows twice, once to
/// measure the columns and once to write them, so the rows of a long
/// run (one per pass) are never all in memory.
pub fn write_table<I: Iterator<Item = Row>>(
    w: &mut dyn Write,
    cols: &[Column],
    rows: impl Fn() -> I,
    x: Ctx,
) -> io::Result<()> {
    let mut widths: Vec<usize> = cols
        .iter()
        .map(|c| c.header.len().max(c.units.len()))
        .collect();
    for r in rows() {
        for (c, w) in cols.iter().zip(widths.iter_mut()) {
            *w = (*w).max((c.value)(&r, x).len());
        }
    }
    let line = |w: &mut dyn Write, vals: &[&str]| {
        let parts: Vec<String> = vals
            .iter()
            .zip(cols.iter().zip(&widths))
            .map(|(v, (c, &wd))| {
                if c.numeric {
                    format!("{v:>wd$}")
                } else {
                    format!("{v:<wd$}")
                }
            })
            .collect();
        writeln!(w, "{}", parts.join("  ").trim_end())
    };
    line(w, &cols.iter().map(|c| c.header).collect::<Vec<_>>())?;
    line(w, &cols.iter().map(|c| c.units).collect::<Vec<_>>())?;
    for r in rows() {
        let cells: Vec<String> = cols.iter().map(|c| (c.value)(&r, x)).collect();
        line(w, &cells.iter().map(String::as_str).collect::<Vec<_>>())?;
    }
    Ok(())
}

/// The whole text report.
pub fn render(r: &RunResults) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write(r, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The whole text report, written to `w` as it is made.
pub fn write(r: &RunResults, w: &mut dyn Write) -> io::Result<()> {
    let mut s = super::preamble::render(&r.config, &r.host, r.start_wall_ns, &r.targets);
    s.push('\n');
    w.write_all(s.as_bytes())?;
    let cols = selected(&r.config.global.outputformat, super::columns::is_e2e(r));
    write_table(w, &cols, || rows(r), ctx(r))?;
    let mut s = String::new();
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
    w.write_all(s.as_bytes())?;
    // A pass log that could not be read back whole leaves rows out.
    r.passes
        .error()
        .map_or(Ok(()), |e| Err(std::io::Error::other(e)))
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
