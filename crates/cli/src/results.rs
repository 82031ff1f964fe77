//! `iolab results`: read the results store (list, show, export,
//! compare) and record runs written earlier with `--json` (import).
//! A run is named by its id, a series by its label (`series:LABEL` when
//! the label is all digits).

use crate::exit::{self, Ended, Halt, HaltKind};
use clap::{Parser, Subcommand};
use iolab_core::Outcome;
use iolab_report::store as fmt;
use iolab_store::{compare, Store, StoreError};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "iolab results",
    about = "The results store: list, show, export and compare recorded runs and series"
)]
struct Cli {
    /// The store (SQLite). Default: $IOLAB_STORE, else ./iolab.sqlite.
    #[arg(long, global = true, env = "IOLAB_STORE", default_value = crate::runner::store::DEFAULT_STORE)]
    store: PathBuf,
    #[command(subcommand)]
    cmd: Cmd,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Every series, then every run.
    List,
    /// One run (facts and figures) or one series (points, means, spreads, plan).
    Show {
        /// Run id, or series label.
        id: String,
    },
    /// One run (its JSON envelope, or its figures as CSV) or one series
    /// (points with repeats and spreads as JSON, or one CSV row per point
    /// and figure).
    Export {
        /// Run id, or series label.
        id: String,
        /// As JSON.
        #[arg(long, required_unless_present = "csv", conflicts_with = "csv")]
        json: bool,
        /// As CSV.
        #[arg(long)]
        csv: bool,
        /// Write here instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// B against A: two runs, or two series point by point; the ratio and
    /// whether the difference exceeds the spread (improvement, regression).
    Compare {
        /// The baseline: run id or series label.
        a: String,
        /// The one compared with it.
        b: String,
        /// Exit 1 when any figure regressed, or a point or figure of A is
        /// missing in B (B failed it, or no longer measures it).
        #[arg(long)]
        fail_on_regression: bool,
    },
    /// Record result files written with --json (by any iolab tool).
    Import {
        /// The JSON files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// A run or a series, as named on the command line.
enum Target {
    Run(i64),
    Series(String),
}

impl Target {
    fn parse(s: &str) -> Target {
        match (s.strip_prefix("series:"), s.parse::<i64>()) {
            (Some(label), _) => Target::Series(label.to_string()),
            (None, Ok(id)) => Target::Run(id),
            (None, Err(_)) => Target::Series(s.to_string()),
        }
    }
}

/// What went wrong, of the kind that gives its exit status.
fn fail(e: StoreError) -> Halt {
    let kind = match e {
        StoreError::Sqlite(_)
        | StoreError::Json(_)
        | StoreError::Payload(_)
        | StoreError::UnreadableWal { .. } => HaltKind::Failed,
        _ => HaltKind::Usage,
    };
    Halt::new(kind, format!("iolab results: {e}"))
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let cli: Cli = exit::parse_clap(prog, args)?;
    if let Cmd::Import { files } = &cli.cmd {
        return import(&cli.store, files);
    }
    let store = Store::open_existing(&cli.store).map_err(fail)?;
    let done = match cli.cmd {
        Cmd::List => list(&store),
        Cmd::Show { id } => show(&store, &id),
        Cmd::Export {
            id, json, output, ..
        } => export(&store, &id, json, output),
        Cmd::Compare {
            a,
            b,
            fail_on_regression,
        } => return compare(&store, &a, &b, fail_on_regression),
        Cmd::Import { .. } => Ok(()),
    };
    done.map_err(fail)?;
    Ok(Outcome::Completed)
}

fn list(store: &Store) -> Result<(), StoreError> {
    let _ = out!(
        "{}",
        fmt::list::render(&store.series_list()?, &store.runs()?)
    );
    Ok(())
}

fn show(store: &Store, id: &str) -> Result<(), StoreError> {
    let text = match Target::parse(id) {
        Target::Run(n) => fmt::show::run(&store.run(n)?),
        Target::Series(l) => fmt::show::series(&store.series(&l)?),
    };
    let _ = out!("{text}");
    Ok(())
}

fn export(store: &Store, id: &str, json: bool, output: Option<PathBuf>) -> Result<(), StoreError> {
    use fmt::export::*;
    let text = match (Target::parse(id), json) {
        (Target::Run(n), true) => return export_run_json(store, n, output),
        (Target::Run(n), false) => run_csv(&store.run(n)?),
        (Target::Series(l), true) => series_json(&store.series(&l)?),
        (Target::Series(l), false) => series_csv(&store.series(&l)?),
    };
    match output {
        None => {
            let _ = out!("{text}");
        }
        Some(p) => iolab_output::write_atomically(&p, text.as_bytes())
            .map_err(|e| StoreError::NotFound(format!("-o {}: cannot write: {e}", p.display())))?,
    }
    Ok(())
}

/// A run's envelope, its payload streamed from the store to the output
/// (a long run's is ~90 MB: never whole in memory). Written to `-o`
/// atomically: complete or not at all.
fn export_run_json(store: &Store, id: i64, output: Option<PathBuf>) -> Result<(), StoreError> {
    use std::io::Write;
    let run = store.run(id)?;
    // The store's own failure, kept typed (the writer is told only an
    // I/O error).
    let mut failed = None;
    let mut fill = |w: &mut dyn Write| {
        fmt::export::write_run_json(&run, w, |p| {
            store.write_payload(id, p).map_err(|e| {
                let io = std::io::Error::other(e.to_string());
                failed = Some(e);
                io
            })
        })
    };
    let written = match &output {
        None => {
            let mut w = std::io::BufWriter::with_capacity(64 << 10, crate::output::Stdout);
            fill(&mut w).and_then(|()| w.flush())
        }
        Some(p) => iolab_output::write_with(p, &mut fill),
    };
    if let Some(e) = failed {
        return Err(e);
    }
    match (written, output) {
        (Ok(()), _) => Ok(()),
        // A closed standard output is noted by the output layer.
        (Err(_), None) => Ok(()),
        (Err(e), Some(p)) => Err(StoreError::NotFound(format!(
            "-o {}: cannot write: {e}",
            p.display()
        ))),
    }
}

fn compare(store: &Store, a: &str, b: &str, strict: bool) -> Ended {
    let c = match (Target::parse(a), Target::parse(b)) {
        (Target::Run(x), Target::Run(y)) => store.run(x).and_then(|ra| {
            let rb = store.run(y)?;
            Ok(compare::runs(a, &ra.figures, b, &rb.figures))
        }),
        (Target::Series(x), Target::Series(y)) => store
            .series(&x)
            .and_then(|sa| Ok(compare::series(&sa, &store.series(&y)?))),
        _ => Err(StoreError::NotFound(
            "compare two runs (ids) or two series (labels), not one of each".into(),
        )),
    };
    let c = c.map_err(fail)?;
    let _ = out!("{}", fmt::compare::render(&c));
    match strict && c.regressed() {
        true => Err(Halt::said(HaltKind::Failed)),
        false => Ok(Outcome::Completed),
    }
}

/// The schema each tool of this iolab writes its documents in: an
/// import of a later one (`iolab.mdtest/99`) is refused.
const NEWEST_SCHEMAS: &[&str] = &[
    iolab_mdtest::results::SCHEMA,
    iolab_ior::SCHEMA,
    iolab_io500::SCHEMA,
    iolab_report::xdd::json::SCHEMA,
    iolab_report::lst::json::SCHEMA,
    iolab_report::s3bench::json::SCHEMA,
    crate::xddcp::SCHEMA,
    crate::stats::RUN_SCHEMA,
    crate::survey::DISK_SCHEMA,
    crate::survey::OBDFILTER_SCHEMA,
    crate::survey::MDS_SCHEMA,
    crate::survey::OST_SCHEMA,
];

/// Records each file; every file is read and checked before the store
/// is opened, so a bad one records nothing. Each is read as it goes
/// (its envelope's fields kept, its payload checked and then copied into
/// the store), so a long run's document is never whole in memory.
fn import(path: &std::path::Path, files: &[PathBuf]) -> Ended {
    let mut heads = Vec::new();
    for f in files {
        let head = iolab_core::input::open(f)
            .map_err(|e| e.to_string())
            .and_then(|r| iolab_results::stream::read_head(r).map_err(|e| e.to_string()))
            .and_then(|h| {
                iolab_results::stream::check_schema_known(&h.schema, NEWEST_SCHEMAS)
                    .and_then(|()| iolab_results::stream::check_consistent(&h))
                    .map_err(|e| e.to_string())?;
                Ok(h)
            });
        let h =
            head.map_err(|e| Halt::usage(format!("iolab results import: {}: {e}", f.display())))?;
        heads.push(h);
    }
    let mut store = Store::open(path).map_err(fail)?;
    for (f, h) in files.iter().zip(&heads) {
        match store.import_file(f, h).map_err(fail)? {
            iolab_store::Recorded::New(id) => {
                let _ = outln!("{}: run {id}", f.display());
            }
            iolab_store::Recorded::Already(id) => {
                let _ = outln!(
                    "{}: already recorded as run {id}; not recorded again",
                    f.display()
                );
            }
        }
    }
    Ok(Outcome::Completed)
}
