//! What a tool's run hands the runner at its end: its [`Report`], and how
//! its outputs besides the JSON document are rendered ([`Render`]).

use iolab_core::env::FsInfo;
use iolab_core::Outcome;
use iolab_results::Figure;
use std::io::{self, Write};

/// What a tool's run returns to the runner.
#[derive(Debug)]
pub struct Report<P> {
    /// How it ended.
    pub outcome: Outcome,
    /// The tool's own results.
    pub payload: P,
    /// The headline figures it states (what the store indexes).
    pub figures: Vec<Figure>,
    /// Notes and warnings, as data.
    pub notes: Vec<String>,
    /// What it made and could not remove (said at the end).
    pub left_behind: Vec<String>,
    /// The file systems it touched, for the environment.
    pub filesystems: Vec<FsInfo>,
    /// Its own start and end (wall clock, Unix ns), when its engine
    /// timed them; else the session's.
    pub window: Option<(u64, u64)>,
    /// System statistics the tool collected itself (`stats run`); else
    /// `--stats`'s.
    pub stats: Option<serde_json::Value>,
}

impl<P> Report<P> {
    /// A report of `payload` that ended with `outcome`.
    pub fn new(outcome: Outcome, payload: P) -> Report<P> {
        Report {
            outcome,
            payload,
            figures: Vec::new(),
            notes: Vec::new(),
            left_behind: Vec::new(),
            filesystems: Vec::new(),
            window: None,
            stats: None,
        }
    }
}

/// Writes a run's CSV from its payload `P`, as it makes it.
pub type CsvWriter<'a, P> = dyn Fn(&P, &mut dyn Write) -> io::Result<()> + 'a;

/// How the runner renders a run's outputs besides the JSON document,
/// from its payload `P`.
pub struct Render<'a, P> {
    /// `--csv`'s contents, written as they are made.
    pub csv: Option<&'a CsvWriter<'a, P>>,
    /// Says, once the payload is written, whether part of it could not
    /// be read (a pass log): then the JSON and the record fail.
    pub lost: &'a dyn Fn() -> Option<String>,
}

impl<P> Clone for Render<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Render<'_, P> {}

impl<'a, P> Render<'a, P> {
    /// No CSV, nothing that can be lost.
    pub fn plain() -> Render<'a, P> {
        Render {
            csv: None,
            lost: &|| None,
        }
    }

    /// `--csv` written by `csv`.
    pub fn csv(csv: &'a CsvWriter<'a, P>) -> Render<'a, P> {
        Render {
            csv: Some(csv),
            lost: &|| None,
        }
    }
}
