//! The one flow every survey goes through (disk, obdfilter on disks or
//! over the network, mds, ost): its run opened through the runner
//! (`--json`, `--csv`, `--stats`, `--store` checked before anything is
//! created), the kit's PREFIX.summary and PREFIX.detail, the progress on
//! a terminal, each point's line as it is measured, the backend's end and
//! notes, and the survey's report handed back to the runner. A survey
//! gives only what is its own: its checked config as a [`Planned`] and
//! its engine's run; its report says what it measured ([`Surveyed`]).

use crate::exit::{Ended, Halt, HaltKind};
use crate::runner::{Given, Render, Report, Run};
use iolab_core::live::Board;
use iolab_core::{Failure, FailureKind, Outcome};
use iolab_report::survey as fmt;
use iolab_results::Figure;
use iolab_survey::ParamError;
use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Where a survey's result files go: the kit's `rslt` and `rslt_loc`.
pub struct Place<'a> {
    /// `--rslt`: the result file prefix.
    pub rslt: Option<&'a str>,
    /// `--rslt-loc`: the directory of the default prefix.
    pub rslt_loc: &'a str,
}

impl Place<'_> {
    /// Refuses a place whose files would not be where it names: an empty
    /// `--rslt` or `--rslt-loc`, or a prefix ending in `/`, `.` or `..`
    /// (its files would be the hidden `.summary` and `.detail` there, or
    /// in the directory above). Checked before anything is created.
    fn check(&self) -> Result<(), ParamError> {
        if self.rslt_loc.is_empty() {
            return Err(ParamError::new(
                "rslt-loc",
                "is empty: name the directory for the results (default /tmp)",
            ));
        }
        let Some(prefix) = self.rslt else {
            return Ok(());
        };
        let last = prefix.rsplit('/').next().unwrap_or_default();
        if matches!(last, "" | "." | "..") {
            return Err(ParamError::new(
                "rslt",
                format!(
                    "'{prefix}' does not end in a file name, so the results would be {prefix}.summary and {prefix}.detail; give a prefix such as {}run1",
                    prefix.trim_end_matches('.')
                ),
            ));
        }
        Ok(())
    }

    /// PREFIX.summary and PREFIX.detail of `--rslt`, checked with the
    /// other outputs before anything is created: a device, a directory
    /// or a FIFO nobody reads there is refused, and so is `--json`,
    /// `--csv` or `--store` on either. (The default prefix's files are
    /// made new, so nothing is there to check.)
    fn planned(&self) -> iolab_output::Planned {
        let files = self
            .rslt
            .map(|p| ["summary", "detail"].map(|ext| PathBuf::from(format!("{p}.{ext}"))));
        match files {
            Some([summary, detail]) => iolab_output::Planned::new()
                .file("--rslt", Some(&summary))
                .file("--rslt", Some(&detail)),
            None => iolab_output::Planned::new(),
        }
    }
}

/// A survey checked and planned: what the shared flow needs of it.
pub struct Planned<C> {
    /// `disk`, `obdfilter`, `mds` or `ost`: its messages start with
    /// `iolab survey NAME`, its document's tool is `survey NAME`.
    pub name: &'static str,
    /// Its document's schema (`iolab.survey.disk/1`).
    pub schema: &'static str,
    /// The kit's name for its default result prefix (`sgpdd_survey`).
    pub rslt: &'static str,
    /// The checked config, as the document records it.
    pub config: C,
    /// How many points it measures.
    pub points: usize,
    /// What a second Ctrl-C (which ends the process at once) leaves.
    pub leftovers: Vec<PathBuf>,
    /// The local paths whose file systems the results describe.
    pub paths: Vec<PathBuf>,
    /// What the planning had to say.
    pub notes: Vec<String>,
    /// Other processes whose live figures this run's stream merges (the
    /// object survey's remote agents).
    pub peers: Option<Box<dyn iolab_live::peers::Peers>>,
}

/// What a survey's report gives the flow.
pub trait Surveyed: Serialize {
    /// How it ended.
    fn outcome(&self) -> Outcome;
    /// What it had to say.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// Its CSV rows.
    fn csv(&self) -> String;
    /// Its headline figures.
    fn figures(&self) -> Vec<Figure>;
}

impl Surveyed for iolab_survey::disk::DiskReport {
    fn outcome(&self) -> Outcome {
        self.outcome.clone()
    }
    fn csv(&self) -> String {
        fmt::csv::disk(&self.points)
    }
    fn figures(&self) -> Vec<Figure> {
        fmt::figures::disk(&self.points)
    }
}

impl Surveyed for iolab_survey::obdfilter::ObdReport {
    fn outcome(&self) -> Outcome {
        self.outcome.clone()
    }
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
    fn csv(&self) -> String {
        fmt::csv::obdfilter(&self.points)
    }
    /// The same figures on disks and over the network (`case=network`).
    fn figures(&self) -> Vec<Figure> {
        fmt::figures::obdfilter(&self.points)
    }
}

impl Surveyed for iolab_survey::mds::MdsReport {
    fn outcome(&self) -> Outcome {
        self.outcome.clone()
    }
    fn csv(&self) -> String {
        fmt::csv::mds(&self.points)
    }
    fn figures(&self) -> Vec<Figure> {
        fmt::figures::mds(&self.points)
    }
}

impl Surveyed for iolab_survey::ost::OstReport {
    fn outcome(&self) -> Outcome {
        self.outcome.clone()
    }
    fn csv(&self) -> String {
        fmt::csv::ost(self)
    }
    fn figures(&self) -> Vec<Figure> {
        fmt::figures::ost(self)
    }
}

/// Bad usage of survey `name`: exit 2 naming the parameter.
pub fn usage_error(name: &str, e: &ParamError) -> Halt {
    Halt::usage(format!("iolab survey {name}: {e}"))
}

/// Runs survey `p` on `backend` (None: the network case, which moves no
/// data through one): `run` prints its header and measures, giving each
/// point's summary line and detail to the [`Lines`]. Returns how it
/// ended, for the exit status.
pub fn conduct<C, R>(
    p: Planned<C>,
    place: Place<'_>,
    given: Given,
    line: &str,
    backend: Option<&dyn iolab_backend::Backend>,
    run: impl FnOnce(&mut Lines, Option<Arc<Board>>, &iolab_core::CancelToken) -> Result<R, Halt>,
) -> Ended
where
    C: Serialize + Clone,
    R: Surveyed,
{
    place.check().map_err(|e| usage_error(p.name, &e))?;
    let prog = format!("iolab survey {}", p.name);
    let tool = format!("survey {}", p.name);
    let mut session = Run::new(&prog, &tool, p.schema, line, p.config, given)
        .outputs(place.planned())
        .open()?;
    let mut lines = Lines::create(&place, p.rslt, p.points).map_err(|e| usage_error(p.name, &e))?;
    let board = session.live(false, p.peers);
    session.start();
    warn_leftovers(&p.leftovers);
    let cancel = session.cancel().clone();
    let measured = run(&mut lines, board, &cancel)?;
    let unwritten = lines.finish();
    // A .summary or .detail that could not be written is an output
    // failure (exit 1) of a survey that otherwise ran.
    let outcome = match unwritten {
        Some(f) => measured.outcome().worst(Outcome::Error(f)),
        None => measured.outcome(),
    };
    session.stop_watching(&outcome);
    let mut report = Report::new(outcome.clone(), &measured);
    report.notes = p.notes;
    report.notes.extend(measured.notes());
    if let Some(b) = backend {
        report.notes.extend(finish_backend(b));
    }
    report.figures = measured.figures();
    let local = backend.is_some_and(|b| b.capabilities().local);
    report.filesystems = match local {
        true => p
            .paths
            .iter()
            .map(|t| iolab_core::env::fs_info(t))
            .collect(),
        false => Vec::new(),
    };
    let csv = measured.csv();
    let write_csv = |_: &&R, w: &mut dyn Write| w.write_all(csv.as_bytes());
    let ended = session.finish(report, Render::csv(&write_csv));
    // The survey's own failure is said once; an output that failed was
    // said by the runner. A stop is said too, with what it left, as
    // every tool says it; quiet after a closed stdout, as a tool SIGPIPE
    // ended is.
    match &outcome {
        Outcome::Error(f) => iolab_core::say!("iolab survey: {f}"),
        Outcome::Interrupted if !crate::output::stdout_closed() => {
            iolab_core::say!("{prog}: interrupted; {}", what_is_left(&p.leftovers));
        }
        _ => {}
    }
    Ok(ended)
}

/// After a stop: what the survey's own files and directories (`made`,
/// which it removes as it stops) came to, looked at, not assumed.
fn what_is_left(made: &[PathBuf]) -> String {
    if made.is_empty() {
        return "this survey makes no files, so nothing is left to remove".into();
    }
    let left: Vec<String> = made
        .iter()
        .filter(|m| std::fs::symlink_metadata(m).is_ok())
        .map(|m| m.display().to_string())
        .collect();
    match left.is_empty() {
        true => "removed what this run made".into(),
        false => format!("left what it could not remove: {}", left.join(" ")),
    }
}

/// What a second Ctrl-C (which ends the process at once) leaves behind.
fn warn_leftovers(dirs: &[PathBuf]) {
    crate::signals::set_last_words(last_words(dirs));
}

/// The words of [`warn_leftovers`]. A survey of devices or of the
/// network makes no files (it writes into what the user named, or sends
/// over the wire); it said "remove what it left by hand: " and nothing.
fn last_words(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "\niolab survey: stopped at once; this survey makes no files, so nothing is left to remove\n".into();
    }
    let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!(
        "\niolab survey: stopped at once; remove what it left by hand: {}\n",
        list.join(" ")
    )
}

/// Ends the backend's run and returns what it has to tell (S3: retried
/// requests), for the results' notes.
fn finish_backend(b: &dyn iolab_backend::Backend) -> Vec<String> {
    let mut notes = b.notes();
    if let Err(e) = b.finalize() {
        notes.push(format!(
            "the {} backend did not finish cleanly: {e}",
            b.name()
        ));
    }
    notes
}

/// The backend `--backend` names (posix when not given), ready for use.
/// An unknown name is bad usage (exit 2); a backend that cannot start,
/// such as a storage service refusing the credentials, is exit 1, as
/// for mdtest and xdd.
pub fn backend(survey: &str, name: Option<&str>) -> Result<Box<dyn iolab_backend::Backend>, Halt> {
    let name = name.unwrap_or("posix");
    let b = iolab_backend::by_name(name)
        .map_err(|e| usage_error(survey, &ParamError::new("backend", e.to_string())))?;
    b.init().map_err(|e| {
        Halt::new(
            HaltKind::Failed,
            format!("iolab survey {survey}: --backend {name}: {e}"),
        )
    })?;
    Ok(b)
}

/// The kit's default prefix: `RSLT_LOC/<name>_<date@time>_<host>`.
fn prefix(place: &Place<'_>, name: &str) -> String {
    place.rslt.map(str::to_string).unwrap_or_else(|| {
        let when = iolab_survey::strftime("%F@%R");
        // One file name inside RSLT_LOC, whatever the host calls itself.
        let host = iolab_core::env::hostname().replace('/', "_");
        format!("{}/{name}_{when}_{host}", place.rslt_loc)
    })
}

/// PREFIX.ext cannot be made, for `why`.
fn cannot_create(prefix: &str, ext: &str, why: &str) -> ParamError {
    ParamError::new(
        "rslt",
        format!("cannot create {prefix}.{ext}: {why}; choose another --rslt"),
    )
}

/// Why iolab refuses a link where it writes.
const LINK: &str = "it is a symbolic link, which iolab does not write through";

/// PREFIX.ext as a symbolic link is refused, before anything is opened.
fn refuse_link(prefix: &str, ext: &str) -> Result<(), ParamError> {
    match std::fs::symlink_metadata(format!("{prefix}.{ext}")) {
        Ok(m) if m.file_type().is_symlink() => Err(cannot_create(prefix, ext, LINK)),
        _ => Ok(()),
    }
}

/// PREFIX.EXT at a prefix the user named: truncated as the kit does, but
/// a symbolic link there is not followed (it is refused), nor is a
/// device written or a FIFO without a reader waited for.
fn named(prefix: &str, ext: &str) -> Result<File, ParamError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let cannot = |e: std::io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) => cannot_create(prefix, ext, LINK),
        Some(libc::ENXIO) => cannot_create(prefix, ext, "it is a FIFO that no program reads"),
        _ => cannot_create(prefix, ext, &e.to_string()),
    };
    // Not truncated at open: what is there is looked at first. O_NONBLOCK:
    // a FIFO whose reader left is an error, not a wait no signal ends.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(format!("{prefix}.{ext}"))
        .map_err(cannot)?;
    let t = f.metadata().map_err(cannot)?.file_type();
    if t.is_block_device() || t.is_dir() {
        // Checked before the run too; this is the file actually opened.
        let why = "it is not a regular file; the results are written to a file";
        return Err(cannot_create(prefix, ext, why));
    }
    if t.is_file() {
        // Truncated as the kit does: the file is the user's --rslt.
        f.set_len(0).map_err(cannot)?;
    }
    // Writes wait for a FIFO's reader again (a full pipe is no error).
    iolab_core::input::set_blocking(&f).map_err(cannot)?;
    Ok(f)
}

/// Most names tried after the default one is taken.
const DEFAULT_NAME_TRIES: u32 = 100;

/// PREFIX.summary and PREFIX.detail at the default prefix, a name anyone
/// can predict in a shared directory (/tmp): both created exclusively,
/// never through a link someone planted there. When either is taken,
/// the next free name (PREFIX-2, PREFIX-3, ...) is used, and said.
fn default_results(prefix: &str) -> Result<(File, File, String), ParamError> {
    let fresh = |p: &str| {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(p)
    };
    let taken = |e: &std::io::Error| e.kind() == std::io::ErrorKind::AlreadyExists;
    let cannot = |p: &str, e: std::io::Error| {
        ParamError::new(
            "rslt",
            format!("cannot create {p}: {e}; choose a prefix with --rslt"),
        )
    };
    for n in 1..=DEFAULT_NAME_TRIES {
        let at = if n == 1 {
            prefix.to_string()
        } else {
            format!("{prefix}-{n}")
        };
        let (sp, dp) = (format!("{at}.summary"), format!("{at}.detail"));
        let summary = match fresh(&sp) {
            Ok(f) => f,
            Err(e) if taken(&e) => continue,
            Err(e) => return Err(cannot(&sp, e)),
        };
        let detail = match fresh(&dp) {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&sp);
                if taken(&e) {
                    continue;
                }
                return Err(cannot(&dp, e));
            }
        };
        if n > 1 {
            iolab_core::say!(
                "iolab survey: {prefix}.summary or .detail is already there (a file or a link); writing {sp} and {dp} instead"
            );
        }
        return Ok((summary, detail, at));
    }
    Err(ParamError::new(
        "rslt",
        format!("{prefix}.summary and the next {DEFAULT_NAME_TRIES} names are taken; choose a prefix with --rslt"),
    ))
}

/// The summary and detail files and the terminal, as the points come.
pub struct Lines {
    summary: File,
    detail: File,
    /// PREFIX of the two files.
    at: String,
    /// The first write to either that failed: the survey's output
    /// failure (exit 1), said at the end.
    failed: Option<Failure>,
    /// The progress bar (points done of points planned), on a terminal only.
    bar: Option<indicatif::ProgressBar>,
}

impl Lines {
    /// Creates PREFIX.summary and PREFIX.detail (truncating, as the kit
    /// does) and says how many points are coming.
    fn create(place: &Place<'_>, name: &str, points: usize) -> Result<Self, ParamError> {
        let (summary, detail, at) = match place.rslt {
            Some(prefix) => {
                // Both are looked at before either is created or
                // truncated: a refused one leaves the other untouched.
                for ext in ["summary", "detail"] {
                    refuse_link(prefix, ext)?;
                }
                (
                    named(prefix, "summary")?,
                    named(prefix, "detail")?,
                    prefix.to_string(),
                )
            }
            None => default_results(&prefix(place, name))?,
        };
        // The plan before the first point: how many lines are coming.
        if points > 1 {
            iolab_core::say!("iolab survey: {points} points to measure; results in {at}.summary");
        }
        let bar = crate::progress::shown(true).then(|| {
            let b = crate::progress::bar(points as u64, crate::progress::Unit::Items);
            b.set_message("survey points");
            b
        });
        Ok(Self {
            summary,
            detail,
            at,
            failed: None,
            bar,
        })
    }

    /// Keeps the first failed write to PREFIX.`ext`.
    fn wrote(&mut self, ext: &str, r: std::io::Result<()>) {
        if let (Err(e), None) = (r, &self.failed) {
            let path = format!("{}.{ext}", self.at);
            self.failed = Some(Failure::io("write", Some(path), &e).of_kind(FailureKind::Output));
        }
    }

    /// A summary line: stdout and .summary, flushed at once.
    pub fn line(&mut self, s: &str) {
        // A closed stdout asks the survey to stop (crate::output); it
        // then cleans up as after Ctrl-C.
        let print = || {
            let _ = out!("{s}");
        };
        match &self.bar {
            Some(b) => b.suspend(print),
            None => print(),
        }
        let r = self
            .summary
            .write_all(s.as_bytes())
            .and_then(|()| self.summary.flush());
        self.wrote("summary", r);
    }

    /// A point is done: its line, its detail, the progress note.
    pub fn point(&mut self, line: &str, detail: &str) {
        self.line(line);
        let r = self.detail.write_all(detail.as_bytes());
        self.wrote("detail", r);
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// Ends the bar; the first failed write of the two files, if any.
    /// Both files are then removed: an output is complete or absent, and
    /// what they would have held was printed as it came.
    fn finish(&mut self) -> Option<Failure> {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        let failed = self.failed.take()?;
        for ext in ["summary", "detail"] {
            let path = format!("{}.{ext}", self.at);
            if std::fs::remove_file(&path).is_ok() {
                iolab_core::say!("iolab survey: removed {path}: it could not be written whole");
            }
        }
        Some(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_left_is_looked_at() {
        assert!(what_is_left(&[]).contains("makes no files"));
        let gone = std::env::temp_dir().join(format!("iolab-flow-gone-{}", std::process::id()));
        assert_eq!(what_is_left(&[gone]), "removed what this run made");
        let here = std::env::temp_dir();
        let said = what_is_left(std::slice::from_ref(&here));
        assert!(said.ends_with(&here.display().to_string()), "{said}");
    }

    #[test]
    fn last_words_name_what_is_left_or_say_nothing_is() {
        let none = last_words(&[]);
        assert!(none.contains("makes no files"), "{none}");
        assert!(!none.contains("by hand"), "{none}");
        let two = last_words(&[PathBuf::from("/a/w.1"), PathBuf::from("/b/w.1")]);
        assert!(two.ends_with("by hand: /a/w.1 /b/w.1\n"), "{two}");
    }
}
