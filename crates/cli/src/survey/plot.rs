//! `iolab survey plot`: the kit's plot-obdfilter/plot-sgpdd from a
//! .summary of any survey: PREFIX.csv and, per record size and test, a
//! gnuplot data file (.dat), script (.scr) and the chart (.svg, .png).

use crate::exit::{Ended, Halt, HaltKind};
use iolab_core::Outcome;
use iolab_report::survey as fmt;
use std::path::{Path, PathBuf};

/// Reads `summary` and writes every file beside `out` (default: the
/// summary's path without .summary), charts' text in `font`.
pub fn plot(summary: &Path, out: Option<&str>, font: Option<&PathBuf>) -> Ended {
    let text = iolab_core::input::read_text(summary, iolab_core::input::RECORD_MAX_BYTES).map_err(
        |e| {
            Halt::usage(format!(
                "iolab survey plot: cannot read {}: {e}",
                summary.display()
            ))
        },
    )?;
    let parsed = fmt::parse::parse(&text)
        .map_err(|e| Halt::usage(format!("iolab survey plot: {}: {e}", summary.display())))?;
    let prefix = out.map(str::to_string).unwrap_or_else(|| {
        let p = summary.display().to_string();
        p.strip_suffix(".summary").map(str::to_string).unwrap_or(p)
    });
    let charts = fmt::plot::charts(&parsed);
    check_outputs(&prefix, &charts)?;
    earlier_plot(&parsed, &prefix, &charts)
        .map_err(|e| Halt::usage(format!("iolab survey plot: {e}")))?;
    let with_text =
        crate::font::load(font).map_err(|e| Halt::usage(format!("iolab survey plot: {e}")))?;
    if !with_text {
        iolab_core::say!("{}", crate::font::none_found("iolab survey plot"));
    }
    let mut ok = write_out(&format!("{prefix}.csv"), fmt::plot::csv(&parsed).as_bytes());
    for c in &charts {
        // Ctrl-C, SIGTERM or a closed stdout: no further chart, and the
        // charts already written are each complete (written atomically).
        if crate::runner::root().is_cancelled() {
            return Ok(Outcome::Interrupted);
        }
        ok &= plot_chart(&parsed, c, &prefix, with_text);
    }
    match ok {
        true => Ok(Outcome::Completed),
        false => Err(Halt::said(HaltKind::Output)),
    }
}

/// The extensions of each chart's files.
const CHART_FILES: [&str; 4] = ["dat", "scr", "svg", "png"];

/// Every file the plot writes (PREFIX.csv, each chart's four) checked
/// before any is written, exit 2 naming the first that cannot be: a
/// chart's name taken by a directory once failed after the others were
/// written. A prefix must end in a file name: `--out ""` or `--out /`
/// wrote `.csv` and `-1024-read.dat` (in /).
fn check_outputs(prefix: &str, charts: &[fmt::plot::Chart]) -> Result<(), Halt> {
    let last = prefix.rsplit('/').next().unwrap_or_default();
    if matches!(last, "" | "." | "..") {
        return Err(Halt::usage(format!(
            "iolab survey plot: --out '{prefix}' does not end in a file name; give a prefix such as {}plot1",
            prefix.trim_end_matches('.')
        )));
    }
    let mut planned =
        iolab_output::Planned::new().file("--out", Some(&PathBuf::from(format!("{prefix}.csv"))));
    for c in charts {
        for ext in CHART_FILES {
            let p = PathBuf::from(format!("{prefix}{}.{ext}", c.stem()));
            planned = planned.file("--out", Some(&p));
        }
    }
    planned
        .check()
        .map_err(|e| Halt::usage(format!("iolab survey plot: {e}")))
}

/// Ok when every file the plot would replace is an earlier plot's: its
/// PREFIX.csv begins with the header this one writes, a chart's .dat with
/// the same first column, its .scr with `set title`, and its .svg or .png
/// is a chart beside a .scr of ours. Anything else (another program's
/// file, a link) is kept and named: iolab writes over nothing it did not
/// make.
fn earlier_plot(
    s: &fmt::parse::Summary,
    prefix: &str,
    charts: &[fmt::plot::Chart],
) -> Result<(), String> {
    let first_line = |t: &str| t.lines().next().unwrap_or_default().to_string();
    let csv_head = first_line(&fmt::plot::csv(s));
    // Whether a file stands at `path` (an earlier plot's, by `want`).
    let is = |path: &str, want: &dyn Fn(&[u8]) -> bool| -> Result<bool, String> {
        let refuse = |why: &str| {
            format!("{path} {why}, and the plot writes a file by that name: move it away, or give another --out")
        };
        match iolab_output::earlier_head(Path::new(path)).map_err(|why| refuse(&why.to_string()))? {
            None => Ok(false),
            Some(head) if want(&head) => Ok(true),
            Some(_) => Err(refuse("is not a file iolab survey plot wrote")),
        }
    };
    is(&format!("{prefix}.csv"), &|h| {
        h.starts_with(csv_head.as_bytes())
    })?;
    for c in charts {
        let base = format!("{prefix}{}", c.stem());
        let dat = first_line(&fmt::plot::dat(s.kind, c));
        let column = dat
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let first_word = |h: &[u8]| {
            String::from_utf8_lossy(h).split_whitespace().next() == Some(column.as_str())
        };
        is(&format!("{base}.dat"), &first_word)?;
        let script = is(&format!("{base}.scr"), &|h| h.starts_with(b"set title \""))?;
        is(&format!("{base}.svg"), &|h| {
            script && h.starts_with(b"<svg ")
        })?;
        is(&format!("{base}.png"), &|h| {
            script && h.starts_with(b"\x89PNG\r\n\x1a\n")
        })?;
    }
    Ok(())
}

/// The .dat, .scr, .svg and .png of one chart.
fn plot_chart(s: &fmt::parse::Summary, c: &fmt::plot::Chart, prefix: &str, text: bool) -> bool {
    let base = format!("{prefix}{}", c.stem());
    let file_name = |ext: &str| {
        let p = format!("{base}.{ext}");
        std::path::Path::new(&p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(p)
    };
    let script = fmt::plot::gnuplot(
        s.kind,
        c,
        &s.title,
        &file_name("dat"),
        &file_name("gnuplot.png"),
    );
    let mut ok = write_out(&format!("{base}.dat"), fmt::plot::dat(s.kind, c).as_bytes());
    ok &= write_out(&format!("{base}.scr"), script.as_bytes());
    for (ext, bytes) in [
        (
            "svg",
            fmt::plot::svg(s.kind, c, &s.title, text).map(String::into_bytes),
        ),
        ("png", fmt::plot::png(s.kind, c, &s.title, text)),
    ] {
        ok &= match bytes {
            Ok(b) => write_out(&format!("{base}.{ext}"), &b),
            Err(e) => {
                iolab_core::say!("iolab survey plot: {base}.{ext}: {e}");
                false
            }
        };
    }
    ok
}

fn write_out(path: &str, bytes: &[u8]) -> bool {
    match iolab_output::write_atomically(std::path::Path::new(path), bytes) {
        Ok(()) => {
            let _ = outln!("wrote {path}");
            true
        }
        Err(e) => {
            iolab_core::say!("iolab survey plot: cannot write {path}: {e}");
            false
        }
    }
}
