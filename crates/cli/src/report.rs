//! `iolab report SERIES... -o DIR`: from the store, one chart per phase
//! and metric (SVG and PNG: the figure against the plan's x, one line per
//! series, error bars from the repeats), `figures.csv`, and `index.html`,
//! a self-contained page with the charts inline, the table of figures
//! and the facts of every run. DIR is created, or must be empty or hold
//! an earlier report (nothing of anyone else's is overwritten). The page
//! lists the files written beside it with their digests (a `<meta>` in
//! its head); the next report into DIR replaces or removes those alone,
//! and each only while it is as written. DIR may not be a link. What a
//! report killed with -9 left (its hidden files, named for its process)
//! the next report into DIR removes.

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
    let charts = chart::charts(&series);
    let names = charts
        .iter()
        .flat_map(|c| [format!("{}.svg", c.stem()), format!("{}.png", c.stem())])
        .chain([FIGURES.to_string()]);
    let place = Place::new(&cli.output)
        .and_then(|p| p.check_replaces(names).map(|()| p))
        .map_err(|msg| usage(format!("-o {}: {msg}", cli.output.display())))?;
    if !text {
        iolab_core::say!("{}", crate::font::none_found("iolab report"));
    }
    let wrote = write(place.path(), &charts, &series, &runs, text)
        .and_then(|files| files.commit(place.earlier()))
        .and_then(|n| place.finish().map(|()| n));
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

/// The file of figures beside the page.
const FIGURES: &str = "figures.csv";

/// The page.
const PAGE: &str = "index.html";

/// The files an earlier report's page lists, with their digests
/// ([`html::manifest_of`]); None for a page that lists none (an older
/// iolab's): of such a report, nothing is removed.
type Listed = Option<Vec<(String, String)>>;

/// Where a report goes: into an earlier report's directory itself (each
/// file put in place once all are written), or, for a new or empty
/// directory, into a hidden one beside it that takes its name once the
/// report is complete: a report killed midway (kill -9) left a directory
/// of charts without a page, which the next report then refused.
enum Place {
    Earlier(PathBuf, Listed),
    New(iolab_output::StagedDir),
}

impl Place {
    fn new(dir: &Path) -> Result<Place, String> {
        // `LINK/` would name what the link leads to: the link is checked.
        let dir: PathBuf = dir.components().collect();
        let earlier = check_dir(&dir)?;
        clear_stale(&dir, earlier.is_some());
        match earlier {
            Some(listed) => Ok(Place::Earlier(dir, listed)),
            None => iolab_output::StagedDir::new(&dir)
                .map(Place::New)
                .map_err(|e| format!("cannot create it: {e}")),
        }
    }

    fn path(&self) -> &Path {
        match self {
            Place::Earlier(d, _) => d,
            Place::New(s) => s.path(),
        }
    }

    /// What the earlier report there wrote, when there is one.
    fn earlier(&self) -> Option<&Listed> {
        match self {
            Place::Earlier(_, listed) => Some(listed),
            Place::New(_) => None,
        }
    }

    /// Each file of `names` that is there already is one the earlier
    /// report wrote and is as it wrote it (the earlier page's digest):
    /// anything else there is not the report's to replace (exit 2,
    /// before anything is written). Beside a page of an older iolab,
    /// which lists no files, a regular file is replaced as it was then.
    fn check_replaces(&self, names: impl Iterator<Item = String>) -> Result<(), String> {
        let Place::Earlier(dir, listed) = self else {
            return Ok(());
        };
        for name in names {
            let path = dir.join(&name);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let ours = match listed {
                Some(files) => files
                    .iter()
                    .any(|(n, hex)| *n == name && as_written(&path, hex)),
                None => std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()),
            };
            if !ours {
                return Err(format!(
                    "{name} there is not a file of the earlier report (or was changed since it wrote it), and this report writes one by that name: move it away, or give another directory"
                ));
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<(), String> {
        match self {
            Place::Earlier(..) => Ok(()),
            Place::New(s) => s
                .commit()
                .map_err(|e| format!("cannot put the report in place: {e}")),
        }
    }
}

/// The most a file of a report holds (a chart is well under a MiB, the
/// figures a few): a larger file at one's name is not the report's, and
/// is not read whole to find that out.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// Whether `path` is a regular file (not a link) whose bytes have the
/// digest `hex`: a file a report wrote, as it wrote it.
fn as_written(path: &Path, hex: &str) -> bool {
    let regular =
        std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES);
    regular && std::fs::read(path).is_ok_and(|b| html::digest(&b) == hex)
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

/// The directory is new or empty (None), or an earlier report's (the
/// files its page lists). A link there is refused, not followed: the
/// report would be written where it leads, and a new report's directory
/// is put in place by a rename, which replaces no link.
fn check_dir(dir: &Path) -> Result<Option<Listed>, String> {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return Ok(None);
    };
    if meta.file_type().is_symlink() {
        return Err(
            "is a symbolic link, which is not followed; give the directory itself (new, empty, or an earlier report's)"
                .into(),
        );
    }
    if !meta.is_dir() {
        return Err("exists and is not a directory; give a new or empty directory".into());
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read it: {e}"))?;
    if entries.next().is_none() {
        return Ok(None);
    }
    let page = iolab_core::input::read_text(&dir.join(PAGE), iolab_core::input::RECORD_MAX_BYTES)
        .unwrap_or_default();
    match iolab_report::written_by(&page, html::GENERATOR) {
        true => Ok(Some(html::manifest_of(&page))),
        false => {
            Err("exists and is not an earlier iolab report; give a new or empty directory".into())
        }
    }
}

/// Removes what a report killed with -9 left for this one: its hidden
/// directory beside `dir` (a new report's) and, inside `dir` when it is
/// an earlier report's, its files not yet put in place. Only those of a
/// process that has ended ([`iolab_output::remove_stale`]); says so.
fn clear_stale(dir: &Path, earlier: bool) {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = dir.file_name().map(|n| n.to_string_lossy());
    let mut gone = match name {
        Some(n) => iolab_output::remove_stale(parent, Some(&n)),
        None => Vec::new(),
    };
    if earlier {
        gone.extend(iolab_output::remove_stale(dir, None));
    }
    let mut pids: Vec<u32> = gone.iter().map(|g| g.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let of: Vec<String> = gone
            .iter()
            .filter(|g| g.pid == pid)
            .map(|g| g.path.display().to_string())
            .collect();
        let more = match of.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        iolab_core::say!(
            "iolab report: removed what a report killed before it finished (pid {pid}, no longer running) left: {}{more}",
            of[..of.len().min(3)].join(", ")
        );
    }
}

/// The report's files, each written under a temporary name; they are
/// put in place together once every one is complete, so a full file
/// system leaves no truncated chart and no page pointing at a missing one.
#[derive(Default)]
struct Pending {
    files: Vec<(PathBuf, iolab_output::AtomicFile)>,
    /// The files beside the page, with their digests, for its list.
    listed: Vec<(String, String)>,
    /// The charts among them.
    charts: usize,
}

impl Pending {
    fn put(&mut self, path: PathBuf, bytes: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut f = iolab_output::AtomicFile::create(&path).map_err(fail)?;
        f.write_all(bytes).map_err(fail)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(name) = name.filter(|n| n != PAGE) {
            self.listed.push((name, html::digest(bytes)));
        }
        self.files.push((path, f));
        Ok(())
    }

    /// Puts every file in place, then removes the files of the earlier
    /// report in the same directory that this one does not write (its
    /// charts of series no longer asked for): the directory holds one
    /// report, not two mixed. Only files the earlier page lists, each
    /// only while it is as that report wrote it; of an earlier page that
    /// lists none (an older iolab's), nothing. Returns the chart count.
    fn commit(self, earlier: Option<&Listed>) -> Result<usize, String> {
        let Some(dir) = self
            .files
            .first()
            .and_then(|(p, _)| p.parent())
            .map(Path::to_path_buf)
        else {
            return Ok(0);
        };
        let (charts, written) = (self.charts, self.listed.clone());
        self.put_in_place()?;
        match earlier {
            None => {}
            Some(None) => iolab_core::say!(
                "iolab report: {}: the earlier report there is an older iolab's, whose page does not list its files: none was removed",
                dir.display()
            ),
            Some(Some(files)) => {
                for (name, hex) in files {
                    let path = dir.join(name);
                    if !written.iter().any(|(n, _)| n == name) && as_written(&path, hex) {
                        let _ = std::fs::remove_file(path);
                    }
                }
            }
        }
        Ok(charts)
    }

    fn put_in_place(self) -> Result<(), String> {
        for (path, f) in self.files {
            f.commit()
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

/// Writes the charts, figures.csv and index.html, not yet in place.
fn write(
    dir: &Path,
    charts: &[chart::Chart],
    series: &[Series],
    runs: &[RunRecord],
    text: bool,
) -> Result<Pending, String> {
    let mut files = Pending::default();
    let mut svgs = Vec::new();
    for c in charts {
        go_on()?;
        let svg = chart::svg(c, text).map_err(|e| e.to_string())?;
        files.put(dir.join(format!("{}.svg", c.stem())), svg.as_bytes())?;
        files.put(
            dir.join(format!("{}.png", c.stem())),
            &chart::png(c, text).map_err(|e| e.to_string())?,
        )?;
        files.charts += 1;
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
    files.put(dir.join(FIGURES), csv.as_bytes())?;
    let page = html::render(
        series,
        &drawn,
        runs,
        &files.listed,
        iolab_core::clock::wall_ns(),
    );
    files.put(dir.join(PAGE), page.as_bytes())?;
    Ok(files)
}

/// `iolab report --live FILE -o DIR`: the rate and p99 charts of a live
/// stream, and a page showing them.
fn live_report(cli: &Cli, file: &Path) -> Ended {
    let (title, rows) =
        read_live(file).map_err(|e| usage(format!("--live {}: {e}", file.display())))?;
    let text = crate::font::load(cli.font.as_ref()).map_err(usage)?;
    let charts = iolab_report::live::charts(&title, &rows);
    let names = charts.iter().flat_map(|c| {
        let stem = c.figure.stem();
        [format!("{stem}.svg"), format!("{stem}.png")]
    });
    let place = Place::new(&cli.output)
        .and_then(|p| p.check_replaces(names).map(|()| p))
        .map_err(|msg| usage(format!("-o {}: {msg}", cli.output.display())))?;
    if !text {
        iolab_core::say!("{}", crate::font::none_found("iolab report"));
    }
    let wrote = write_live(place.path(), &title, &charts, text)
        .and_then(|files| files.commit(place.earlier()))
        .and_then(|_| place.finish());
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

fn write_live(
    dir: &Path,
    title: &str,
    charts: &[iolab_report::live::TimeChart],
    text: bool,
) -> Result<Pending, String> {
    use iolab_report::live;
    let mut files = Pending::default();
    let mut imgs = String::new();
    for c in charts {
        go_on()?;
        let stem = c.figure.stem();
        files.put(
            dir.join(format!("{stem}.svg")),
            live::svg(c, text).map_err(|e| e.to_string())?.as_bytes(),
        )?;
        files.put(
            dir.join(format!("{stem}.png")),
            &live::png(c, text).map_err(|e| e.to_string())?,
        )?;
        files.charts += 1;
        imgs.push_str(&format!("<p><img src=\"{stem}.svg\" alt=\"{stem}\"></p>\n"));
    }
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"{}\">\n{}<title>iolab live: {}</title>\n</head>\n<body>\n<h1>{}</h1>\n{imgs}</body>\n</html>\n",
        html::GENERATOR,
        html::manifest(&files.listed),
        html_escape(title),
        html_escape(title)
    );
    files.put(dir.join(PAGE), page.as_bytes())?;
    Ok(files)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
