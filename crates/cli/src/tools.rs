//! The tool registry's row type and what reads the table: every
//! subcommand of `iolab` is one row of [`crate::TOOLS`] (in main.rs, the
//! binary's root, so that the rows may name the modules that read the
//! table without a circle of files), and everything that needs to know
//! the tools reads it: dispatch
//! (by subcommand or by the name of a link), the usage text, the sweep's
//! check of a plan's command lines, shell completions and man pages.
//! Adding a tool is one row (plus its crates and its cli module).

use crate::TOOLS;
use std::ffi::OsString;

/// A subcommand's entry point: the arguments after its name, and the
/// name the user typed (for messages and `Command line used:`); it
/// returns how it ended, which `main` maps to the exit status.
pub type Entry = fn(prog: &str, args: Vec<OsString>) -> crate::exit::Ended;

/// What a tool's check of a command line says: the options it gives
/// (each at its word), or why the tool refuses it.
pub type Checked = Result<Vec<iolab_sweep::plan::Given>, String>;

/// Checks a command line as the tool would read it, running nothing;
/// `alone`: run as one process (no launcher), so that what needs the
/// number of processes is checked too. A tool whose parser refuses an
/// option given twice itself (clap's) returns no options.
pub type SweepCheck = fn(args: &[OsString], alone: bool) -> Checked;

/// The options an option table traced ([`iolab_opts::Given`]), as the
/// sweep takes them.
pub fn given(traced: Vec<iolab_opts::Given>) -> Vec<iolab_sweep::plan::Given> {
    traced
        .into_iter()
        .map(|g| iolab_sweep::plan::Given {
            word: g.word,
            option: g.option,
        })
        .collect()
}

/// One tool of the binary.
pub struct Tool {
    /// The subcommand (and, with `link`, the name of a link to the binary).
    pub name: &'static str,
    /// One line for the usage text.
    pub about: &'static str,
    /// How to ask the tool for its help.
    pub help: &'static str,
    /// Runs it.
    pub entry: Entry,
    /// Callable through a link of this name (`mdtest`, `xdd`, ...).
    pub link: bool,
    /// Runs across MPI ranks (its tasks span the processes mpirun or
    /// srun starts); any other tool refuses to start as one of several
    /// ([`refuse_as_rank`]).
    pub ranks: bool,
    /// Its command-line check, when a sweep may run it.
    pub sweep: Option<SweepCheck>,
    /// Its command line for completions and, unless `page` is given, its
    /// man page (clap_mangen).
    pub command: fn() -> clap::Command,
    /// A man page generated from its option table (the legacy tools).
    pub page: Option<fn() -> String>,
}

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Refuses `t`, a tool that runs as one process, when a launcher
/// started this process as one of several ranks: each rank would run a
/// benchmark of its own on the same targets and print a report of its
/// own. Exit 2 on every rank, before anything is made; rank 0 says why
/// (every rank when the launcher numbers none), so the job's output
/// holds the message once. `prog` is how the user named the tool. Its
/// options are not read first: a tool's own check refuses what a sweep
/// cannot run (lst's sessions, survey plot), which is no typo here.
pub fn refuse_as_rank(t: &Tool, prog: &str) -> Result<(), crate::exit::Halt> {
    use crate::exit::{Halt, HaltKind};
    let Some(size) = crate::rank_env::one_of_several().filter(|_| !t.ranks) else {
        return Ok(());
    };
    if iolab_comm::launcher_rank().unwrap_or(0) != 0 {
        return Err(Halt::said(HaltKind::Usage));
    }
    let ranks = size.map_or("several".to_string(), |n| n.to_string());
    let across: Vec<&str> = TOOLS.iter().filter(|t| t.ranks).map(|t| t.name).collect();
    let line = format!(
        "{prog}: started as one of {ranks} MPI ranks (mpirun, srun), but {} runs as one process: \
         every rank would run its own benchmark on the same targets. Run it once, without \
         mpirun/srun (or with -n 1); the tools that run across ranks are {}\n",
        t.name,
        across.join(", ")
    );
    // The line and its newline in one write: mpirun puts its own lines
    // on the same standard error, between two writes.
    iolab_core::say_part!("{line}");
    Err(Halt::said(HaltKind::Usage))
}

/// The usage text, from the table.
pub fn usage() -> String {
    let mut s = String::from(
        "iolab: storage performance toolkit\n\nUsage: iolab <command> [options...]\n\nCommands:\n",
    );
    for t in TOOLS {
        let hint = match t.help {
            "" => String::new(),
            h => format!(" (iolab {} {h})", t.name),
        };
        s.push_str(&format!("  {:<11} {}{hint}\n", t.name, t.about));
    }
    let links: Vec<String> = TOOLS
        .iter()
        .filter(|t| t.link)
        .map(|t| format!("`{}`", t.name))
        .collect();
    s.push_str(&format!(
        "\nAlso callable through links named {}.\nOptions: -h/--help, -V/--version\n",
        links.join(", ")
    ));
    s.push('\n');
    s.push_str(crate::live::HELP);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep crate's list of tools a plan may name and the tools
    /// with a sweep check here are the same list.
    #[test]
    fn the_sweeps_tools_are_the_registrys() {
        let mut here: Vec<&str> = TOOLS
            .iter()
            .filter(|t| t.sweep.is_some())
            .map(|t| t.name)
            .collect();
        let mut sweep = iolab_sweep::plan::TOOLS.to_vec();
        here.sort_unstable();
        sweep.sort_unstable();
        assert_eq!(here, sweep);
    }

    #[test]
    fn names_are_unique_and_usage_lists_each() {
        let u = usage();
        for (i, t) in TOOLS.iter().enumerate() {
            assert!(TOOLS[..i].iter().all(|o| o.name != t.name), "{}", t.name);
            assert!(u.contains(&format!("  {:<11} ", t.name)), "{u}");
        }
    }
}
