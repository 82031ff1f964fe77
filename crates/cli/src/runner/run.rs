//! A tool's description of its run ([`Run`]) and the checks made before
//! anything starts ([`Run::open`]), which give the run's [`Session`].

use super::envelope::Head;
use super::options::Given;
use super::session::Session;
use super::stats::Hook as StatsHook;
use super::store::StoreHook;
use super::watch::Watch;
use crate::exit::Halt;
use serde::Serialize;

/// A tool's description of its run, before anything starts.
pub struct Run<C> {
    head: Head,
    config: C,
    given: Given,
    outputs: iolab_output::Planned,
    leader: bool,
}

impl<C: Serialize> Run<C> {
    /// The run of `tool` (the document's tool name), its payload in
    /// `schema`, as `command_line` asked, with `config` (validated) and
    /// the run options `given`; its messages start with `prog`.
    pub fn new(
        prog: &str,
        tool: &str,
        schema: &'static str,
        command_line: &str,
        config: C,
        given: Given,
    ) -> Run<C> {
        Run {
            head: Head {
                prog: prog.to_string(),
                tool: tool.to_string(),
                schema,
                compatible_with: None,
                command_line: command_line.to_string(),
            },
            config,
            given,
            outputs: iolab_output::Planned::new(),
            leader: true,
        }
    }

    /// The tool whose semantics and output the run follows.
    pub fn compatible_with(mut self, with: &'static str) -> Run<C> {
        self.head.compatible_with = Some(with);
        self
    }

    /// Files of the tool's own, checked with `--json` and `--csv`; its
    /// data files ([`iolab_output::Planned::data`]: targets, test files)
    /// too, so that no output is planned over one of them.
    pub fn outputs(mut self, planned: iolab_output::Planned) -> Run<C> {
        self.outputs = planned;
        self
    }

    /// Under MPI, false on every rank but 0: such a rank checks what
    /// rank 0 checks but neither collects `--stats` nor opens or records
    /// `--store`, and writes nothing at the end (rank 0 does, for the
    /// whole job).
    pub fn leader(mut self, leader: bool) -> Run<C> {
        self.leader = leader;
        self
    }

    /// Checks every planned output and loads `--stats`, creating
    /// nothing and opening no store: what a dry run checks.
    pub fn check(&self) -> Result<(), Halt> {
        self.checked().map(drop)
    }

    fn checked(&self) -> Result<StatsHook, Halt> {
        let prog = &self.head.prog;
        let g = &self.given;
        iolab_output::Planned::new()
            .file("--json", g.json.as_deref())
            .file("--csv", g.csv.as_deref())
            .file("--live", crate::live::asked_file().as_deref())
            .data("--store", g.store.as_deref())
            .and(self.outputs.clone())
            .check()
            .map_err(|e| Halt::usage(format!("{prog}: {e}")))?;
        // The results name the configuration: one they cannot hold (a
        // path that is not UTF-8, which JSON cannot) is refused now, not
        // after the whole run, when its results could not be written.
        let recorded = g.json.is_some() || g.csv.is_some() || g.store.is_some();
        if let (true, Err(e)) = (recorded, serde_json::to_value(&self.config)) {
            return Err(Halt::usage(format!(
                "{prog}: the results cannot record this run's settings ({e}); give paths that are valid UTF-8"
            )));
        }
        // Every rank checks the configuration (so all refuse it
        // together); only the leader collects.
        let stats =
            StatsHook::load(g.stats.as_deref()).map_err(|e| Halt::usage(format!("{prog}: {e}")))?;
        Ok(match self.leader {
            true => stats,
            false => StatsHook::none(),
        })
    }

    /// Checks every planned output, loads `--stats` and opens `--store`
    /// (in that order, so a refused run leaves no store behind); the
    /// first that fails is bad usage naming its option, and nothing has
    /// been created.
    pub fn open(self) -> Result<Session<C>, Halt> {
        let stats = self.checked()?;
        let store = match self.leader {
            true => StoreHook::open(self.given.store.as_deref())
                .map_err(|e| Halt::usage(format!("{}: {e}", self.head.prog)))?,
            false => StoreHook::none(),
        };
        let watchers: Vec<Box<dyn Watch>> = vec![Box::new(stats)];
        Ok(Session::new(
            self.head,
            self.config,
            self.given,
            self.leader,
            store,
            watchers,
        ))
    }
}
