//! `iolab report SERIES... -o DIR`: from the store, one chart per phase
//! and metric (SVG and PNG: the figure against the plan's x, one line per
//! series, error bars from the repeats), `figures.csv`, and `index.html`,
//! a self-contained page with the charts inline, the table of figures
//! and the facts of every run. DIR is created, or must be empty or hold
//! an earlier report (nothing of anyone else's is overwritten).

use crate::exit::{self, Ended, Halt, HaltKind};
use clap::Parser;
use iolab_report::series::{chart, html};
use iolab_store::{RunRecord, Series, Store, StoreError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "iolab report",
    about = "Charts (SVG, PNG) and a self-contained HTML report of series from the results store"
)]
struct Cli {
    /// Series labels (as `iolab sweep` recorded them; see `iolab results list`).
    #[arg(required_unless_present = "live")]
    series: Vec<String>,
    /// Chart a live stream instead (a `--live FILE` of jsonl): each
    /// phase's rate and p99 over time.
    #[arg(long, value_name = "FILE", conflicts_with = "series")]
    live: Option<PathBuf>,
    /// Output directory (created; if it exists it must be empty or hold an earlier report).
    #[arg(short, long)]
    output: PathBuf,
    /// The results store. Default: $IOLAB_STORE, else ./iolab.sqlite.
    #[arg(long, env = "IOLAB_STORE", default_value = crate::runner::store::DEFAULT_STORE)]
    store: PathBuf,
    /// A TrueType font for the charts' text (default: DejaVu Sans or Liberation Sans).
    #[arg(long)]
    font: Option<PathBuf>,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

fn usage(msg: impl std::fmt::Display) -> Halt {
    Halt::usage(format!("iolab report: {msg}"))
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let cli: Cli = exit::parse_clap(prog, args)?;
    if let Some(file) = &cli.live {
        return live_report(&cli, file);
    }
    // `series:NAME` names the series NAME: compared without the prefix.
    let named: Vec<&str> = cli
        .series
        .iter()
        .map(|l| l.strip_prefix("series:").unwrap_or(l))
        .collect();
    if let Some(twice) = named
        .iter()
        .enumerate()
        .find_map(|(i, l)| named[..i].contains(l).then_some(l))
    {
        return Err(usage(format!(
            "series {twice} is given twice; give each series once"
        )));
    }
    let (series, runs) = load(&cli.store, &cli.series).map_err(usage)?;
    let text = crate::font::load(cli.font.as_ref()).map_err(usage)?;
    let place = Place::new(&cli.output)
        .map_err(|msg| usage(format!("-o {}: {msg}", cli.output.display())))?;
    if !text {
        iolab_core::say!("{}", crate::font::none_found("iolab report"));
    }
    let wrote = write(place.path(), &series, &runs, text).and_then(|n| place.finish().map(|()| n));
    if wrote.is_err() && crate::runner::root().is_cancelled() {
        return interrupted();
    }
    match wrote {
        Ok(n) => {
            let _ = outln!(
                "wrote {} ({n} charts)",
                cli.output.join("index.html").display()
            );
            Ok(iolab_core::Outcome::Completed)
        }
        // Nothing was put in place, and a new directory was never made.
        Err(msg) => Err(Halt::new(HaltKind::Output, format!("iolab report: {msg}"))),
    }
}

/// Where a report goes: into an earlier report's directory itself (each
/// file put in place once all are written), or, for a new or empty
/// directory, into a hidden one beside it that takes its name once the
/// report is complete: a report killed midway (kill -9) left a directory
/// of charts without a page, which the next report then refused.
enum Place {
    Earlier(PathBuf),
    New(iolab_output::StagedDir),
}

impl Place {
    fn new(dir: &Path) -> Result<Place, String> {
        match check_dir(dir)? {
            true => Ok(Place::Earlier(dir.to_path_buf())),
            false => iolab_output::StagedDir::new(dir)
                .map(Place::New)
                .map_err(|e| format!("cannot create it: {e}")),
        }
    }

    fn path(&self) -> &Path {
        match self {
            Place::Earlier(d) => d,
            Place::New(s) => s.path(),
        }
    }

    fn finish(self) -> Result<(), String> {
        match self {
            Place::Earlier(_) => Ok(()),
            Place::New(s) => s
                .commit()
                .map_err(|e| format!("cannot put the report in place: {e}")),
        }
    }
}

/// Ctrl-C or SIGTERM stops a report before its next chart: nothing is
/// put in place (the files written are dropped, a new directory is never
/// made), as [`interrupted`] then says.
fn go_on() -> Result<(), String> {
    match crate::runner::root().is_cancelled() {
        true => Err("interrupted".into()),
        false => Ok(()),
    }
}

/// How a report stopped by [`go_on`] ends: exit 130.
fn interrupted() -> Ended {
    iolab_core::say!("iolab report: interrupted; nothing written");
    Ok(iolab_core::Outcome::Interrupted)
}

/// The series and every run of theirs.
fn load(store: &Path, labels: &[String]) -> Result<(Vec<Series>, Vec<RunRecord>), StoreError> {
    let store = Store::open_existing(store)?;
    let series: Vec<Series> = labels
        .iter()
        .map(|l| store.series(l.strip_prefix("series:").unwrap_or(l)))
        .collect::<Result<_, _>>()?;
    let mut runs = Vec::new();
    for r in series.iter().flat_map(|s| &s.points).flat_map(|p| &p.runs) {
        runs.push(store.run(r.run_id)?);
    }
    Ok((series, runs))
}

/// The directory is new or empty (false), or an earlier report's (true).
fn check_dir(dir: &Path) -> Result<bool, String> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(false);
    }
    if !dir.is_dir() {
        return Err("exists and is not a directory; give a new or empty directory".into());
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read it: {e}"))?;
    if entries.next().is_none() {
        return Ok(false);
    }
    let page =
        iolab_core::input::read_text(&dir.join("index.html"), iolab_core::input::RECORD_MAX_BYTES)
            .unwrap_or_default();
    match iolab_report::written_by(&page, html::GENERATOR) {
        true => Ok(true),
        false => {
            Err("exists and is not an earlier iolab report; give a new or empty directory".into())
        }
    }
}

/// True when `page` names the file `name` as a whole word (`src="a.svg"`,
/// `files: a.svg, a.png<`), not inside a longer name.
fn names_file(page: &str, name: &str) -> bool {
    let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || "._-".contains(c)));
    page.match_indices(name).any(|(i, _)| {
        edge(page[..i].chars().next_back()) && edge(page[i + name.len()..].chars().next())
    })
}

/// The report's files, each written under a temporary name; they are
/// put in place together once every one is complete, so a full file
/// system leaves no truncated chart and no page pointing at a missing one.
#[derive(Default)]
struct Pending(Vec<(PathBuf, iolab_output::AtomicFile)>);

impl Pending {
    fn put(&mut self, path: PathBuf, bytes: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut f = iolab_output::AtomicFile::create(&path).map_err(fail)?;
        f.write_all(bytes).map_err(fail)?;
        self.0.push((path, f));
        Ok(())
    }

    /// Puts every file in place, then removes the files of the earlier
    /// report in the same directory that this one does not write (its
    /// charts of series no longer asked for): the directory holds one
    /// report, not two mixed. Only files the earlier iolab page names
    /// are removed, nothing else in the directory.
    fn commit(self) -> Result<(), String> {
        let Some(dir) = self
            .0
            .first()
            .and_then(|(p, _)| p.parent())
            .map(Path::to_path_buf)
        else {
            return Ok(());
        };
        let earlier = iolab_core::input::read_text(
            &dir.join("index.html"),
            iolab_core::input::RECORD_MAX_BYTES,
        )
        .unwrap_or_default();
        let written: Vec<PathBuf> = self.0.iter().map(|(p, _)| p.clone()).collect();
        self.put_in_place()?;
        if !iolab_report::written_by(&earlier, html::GENERATOR) {
            return Ok(());
        }
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let chart = name.ends_with(".svg") || name.ends_with(".png");
            let named = names_file(&earlier, &name);
            if chart && named && !written.contains(&e.path()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(())
    }

    fn put_in_place(self) -> Result<(), String> {
        for (path, f) in self.0 {
            f.commit()
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

/// Writes the charts, figures.csv and index.html; returns the chart count.
fn write(dir: &Path, series: &[Series], runs: &[RunRecord], text: bool) -> Result<usize, String> {
    let mut files = Pending::default();
    let mut put = |path: PathBuf, bytes: &[u8]| files.put(path, bytes);
    let charts = chart::charts(series);
    let mut svgs = Vec::new();
    for c in &charts {
        go_on()?;
        let svg = chart::svg(c, text).map_err(|e| e.to_string())?;
        put(dir.join(format!("{}.svg", c.stem())), svg.as_bytes())?;
        put(
            dir.join(format!("{}.png", c.stem())),
            &chart::png(c, text).map_err(|e| e.to_string())?,
        )?;
        svgs.push(svg);
    }
    let drawn: Vec<html::Drawn> = charts
        .iter()
        .zip(&svgs)
        .map(|(c, svg)| html::Drawn {
            chart: c,
            svg,
            files: (format!("{}.svg", c.stem()), format!("{}.png", c.stem())),
        })
        .collect();
    let csv: String = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = iolab_report::store::export::series_csv(s);
            match i {
                0 => t,
                _ => t.lines().skip(1).map(|l| format!("{l}\n")).collect(),
            }
        })
        .collect();
    put(dir.join("figures.csv"), csv.as_bytes())?;
    let page = html::render(series, &drawn, runs, iolab_core::clock::wall_ns());
    put(dir.join("index.html"), page.as_bytes())?;
    files.commit()?;
    Ok(charts.len())
}

/// `iolab report --live FILE -o DIR`: the rate and p99 charts of a live
/// stream, and a page showing them.
fn live_report(cli: &Cli, file: &Path) -> Ended {
    let (title, rows) =
        read_live(file).map_err(|e| usage(format!("--live {}: {e}", file.display())))?;
    let text = crate::font::load(cli.font.as_ref()).map_err(usage)?;
    let place = Place::new(&cli.output)
        .map_err(|msg| usage(format!("-o {}: {msg}", cli.output.display())))?;
    if !text {
        iolab_core::say!("{}", crate::font::none_found("iolab report"));
    }
    let wrote = write_live(place.path(), &title, &rows, text).and_then(|()| place.finish());
    if wrote.is_err() && crate::runner::root().is_cancelled() {
        return interrupted();
    }
    match wrote {
        Ok(()) => {
            let _ = outln!("wrote {}", cli.output.join("index.html").display());
            Ok(iolab_core::Outcome::Completed)
        }
        Err(msg) => Err(Halt::new(HaltKind::Output, format!("iolab report: {msg}"))),
    }
}

/// The stream's title (tool and run id) and rows; any line that does not
/// parse is an error naming it.
fn read_live(file: &Path) -> Result<(String, Vec<iolab_live::Row>), String> {
    use iolab_live::{format::jsonl, Record};
    let text = iolab_core::input::read_text(file, iolab_core::input::RECORD_MAX_BYTES)
        .map_err(|e| e.to_string())?;
    let mut title = String::new();
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match jsonl::parse(line) {
            Ok(Record::Header(h)) => title = format!("{} {}", h.tool, h.run_id),
            Ok(Record::Row(r)) => rows.push(r),
            Err(e) => {
                return Err(format!(
                    "line {}: not a live stream's line ({e}); give a --live-format jsonl file",
                    i + 1
                ))
            }
        }
    }
    if title.is_empty() {
        return Err("no header line: not an iolab live stream".into());
    }
    Ok((title, rows))
}

fn write_live(dir: &Path, title: &str, rows: &[iolab_live::Row], text: bool) -> Result<(), String> {
    use iolab_report::live;
    let mut files = Pending::default();
    let mut imgs = String::new();
    for c in live::charts(title, rows) {
        go_on()?;
        let stem = c.figure.stem();
        files.put(
            dir.join(format!("{stem}.svg")),
            live::svg(&c, text).map_err(|e| e.to_string())?.as_bytes(),
        )?;
        files.put(
            dir.join(format!("{stem}.png")),
            &live::png(&c, text).map_err(|e| e.to_string())?,
        )?;
        imgs.push_str(&format!("<p><img src=\"{stem}.svg\" alt=\"{stem}\"></p>\n"));
    }
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"{}\">\n<title>iolab live: {}</title>\n</head>\n<body>\n<h1>{}</h1>\n{imgs}</body>\n</html>\n",
        html::GENERATOR,
        html_escape(title),
        html_escape(title)
    );
    files.put(dir.join("index.html"), page.as_bytes())?;
    files.commit()
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
