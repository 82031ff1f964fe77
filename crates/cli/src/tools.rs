//! The tool registry: every subcommand of `iolab` is one row here, and
//! everything that needs to know the tools reads this table: dispatch
//! (by subcommand or by the name of a link), the usage text, the sweep's
//! check of a plan's command lines, shell completions and man pages.
//! Adding a tool is one row (plus its crates and its cli module).

use crate::completions as doc;
use std::ffi::OsString;
use std::process::ExitCode;

/// A subcommand's entry point: the arguments after its name, and the
/// name the user typed (for messages and `Command line used:`).
pub type Entry = fn(prog: &str, args: Vec<OsString>) -> ExitCode;

/// Checks a command line as the tool would read it, running nothing.
pub type SweepCheck = fn(args: &[OsString]) -> Result<(), String>;

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
    /// Its command-line check, when a sweep may run it.
    pub sweep: Option<SweepCheck>,
    /// Its command line for completions and, unless `page` is given, its
    /// man page (clap_mangen).
    pub command: fn() -> clap::Command,
    /// A man page generated from its option table (the legacy tools).
    pub page: Option<fn() -> String>,
}

/// Every tool, in the order the usage text lists them.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "mdtest",
        about: "metadata benchmark, a drop-in mdtest",
        help: "-h",
        entry: crate::mdtest::main,
        link: true,
        sweep: Some(crate::mdtest::check_args),
        command: doc::mdtest_command,
        page: Some(doc::mdtest_page),
    },
    Tool {
        name: "xdd",
        about: "XDD data I/O benchmark",
        help: "-help",
        entry: crate::xdd::main,
        link: true,
        sweep: Some(crate::xdd::check_args),
        command: || doc::dash_tool("xdd", "XDD data I/O benchmark"),
        page: Some(doc::xdd_page),
    },
    Tool {
        name: "lst",
        about: "network self-test as LNet selftest: agents, ping and brw",
        help: "--help",
        entry: crate::lst::main,
        link: false,
        sweep: Some(crate::lst::check_args),
        command: crate::lst::command,
        page: None,
    },
    Tool {
        name: "stats",
        about: "stats-collect: system and Lustre statistics on every node",
        help: "-h",
        entry: crate::stats::main,
        link: false,
        sweep: None,
        command: crate::stats::command,
        page: None,
    },
    Tool {
        name: "survey",
        about: "the Lustre I/O kit's surveys: disk, obdfilter, ost, mds, plot",
        help: "--help",
        entry: crate::survey::main,
        link: false,
        sweep: Some(crate::survey::check_args),
        command: crate::survey::command,
        page: None,
    },
    Tool {
        name: "sweep",
        about: "scaling sweep of any tool from a TOML plan, recorded in the store",
        help: "--help",
        entry: crate::sweep::main,
        link: false,
        sweep: None,
        command: crate::sweep::command,
        page: None,
    },
    Tool {
        name: "report",
        about: "charts and an HTML page of series from the store",
        help: "--help",
        entry: crate::report::main,
        link: false,
        sweep: None,
        command: crate::report::command,
        page: None,
    },
    Tool {
        name: "results",
        about: "the results store: list, show, export, compare",
        help: "--help",
        entry: crate::results::main,
        link: false,
        sweep: None,
        command: crate::results::command,
        page: None,
    },
    Tool {
        name: "demo",
        about: "the quick-start run: a short mdtest in a temporary directory",
        help: "",
        entry: crate::demo::main,
        link: false,
        sweep: None,
        command: || clap::Command::new("demo").about("the quick-start run: a short mdtest"),
        page: None,
    },
    Tool {
        name: "timeserver",
        about: "XDD's global clock server",
        help: "-help",
        entry: crate::clock::timeserver,
        link: true,
        sweep: None,
        command: || doc::dash_tool("timeserver", "XDD's global clock server"),
        page: Some(crate::clock::server_page),
    },
    Tool {
        name: "gettime",
        about: "read the global clock from a timeserver",
        help: "-help",
        entry: crate::clock::gettime,
        link: true,
        sweep: None,
        command: || doc::dash_tool("gettime", "read the global clock from a timeserver"),
        page: Some(crate::clock::gettime_page),
    },
    Tool {
        name: "xddcp",
        about: "copy files to another host with XDD's end-to-end copy",
        help: "-h",
        entry: crate::xddcp::main,
        link: true,
        sweep: None,
        command: crate::xddcp::command,
        page: None,
    },
    Tool {
        name: "io500",
        about: "the IO500 benchmark from its ini file",
        help: "--help",
        entry: crate::io500::main,
        link: false,
        sweep: None,
        command: crate::io500::command,
        page: None,
    },
    Tool {
        name: "completions",
        about: "shell completions: iolab completions bash|zsh|fish",
        help: "",
        entry: doc::completions,
        link: false,
        sweep: None,
        command: doc::completions_command,
        page: None,
    },
    Tool {
        name: "man",
        about: "write the man pages into a directory: iolab man DIR",
        help: "",
        entry: doc::man,
        link: false,
        sweep: None,
        command: doc::man_command,
        page: None,
    },
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
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
