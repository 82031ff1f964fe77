//! The `iolab` binary: picks a subcommand (or, when invoked through a link
//! named `mdtest` or `xdd`, behaves as that tool) and hands it the raw
//! arguments. Each subcommand lives in a module of the same name.

use std::ffi::OsString;
use std::process::ExitCode;

#[macro_use]
mod output;
mod clock;
mod completions;
mod demo;
mod exit;
mod font;
mod io500;
mod lst;
mod lst_nodes;
mod lst_session;
mod mdtest;
mod progress;
mod report;
mod results;
mod s3bench;
mod signals;
mod stats;
mod stats_hook;
mod store_hook;
mod survey;
mod sweep;
mod tools;
use tools::Tool;
mod xdd;
mod xddcp;

/// The process's command line as typed, program included (args_os: an
/// argument that is not UTF-8 must not panic), for the results' record.
pub fn process_command_line() -> String {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
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
        command: completions::mdtest_command,
        page: Some(completions::mdtest_page),
    },
    Tool {
        name: "xdd",
        about: "XDD data I/O benchmark",
        help: "-help",
        entry: crate::xdd::main,
        link: true,
        sweep: Some(crate::xdd::check_args),
        command: || completions::dash_tool("xdd", "XDD data I/O benchmark"),
        page: Some(completions::xdd_page),
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
        about: "the quick-start run: a short mdtest, then a short XDD write and verified read, in a temporary directory",
        help: "",
        entry: crate::demo::main,
        link: false,
        sweep: None,
        command: crate::demo::command,
        page: None,
    },
    Tool {
        name: "timeserver",
        about: "XDD's global clock server",
        help: "-help",
        entry: crate::clock::timeserver,
        link: true,
        sweep: None,
        command: || completions::dash_tool("timeserver", "XDD's global clock server"),
        page: Some(crate::clock::server_page),
    },
    Tool {
        name: "gettime",
        about: "read the global clock from a timeserver",
        help: "-help",
        entry: crate::clock::gettime,
        link: true,
        sweep: None,
        command: || completions::dash_tool("gettime", "read the global clock from a timeserver"),
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
        name: "s3bench",
        about: "object-storage benchmarks as warp runs them: get, put, stat, delete, list, mixed, multipart",
        help: "--help",
        entry: crate::s3bench::main,
        link: false,
        sweep: None,
        command: crate::s3bench::command,
        page: None,
    },
    Tool {
        name: "completions",
        about: "shell completions: iolab completions bash|zsh|fish",
        help: "",
        entry: completions::completions,
        link: false,
        sweep: None,
        command: completions::completions_command,
        page: None,
    },
    Tool {
        name: "man",
        about: "write the man pages into a directory: iolab man DIR",
        help: "",
        entry: completions::man,
        link: false,
        sweep: None,
        command: completions::man_command,
        page: None,
    },
];

/// A tool's entry point, from the registry (`TOOLS`).
fn lookup(name: &str) -> Option<tools::Entry> {
    tools::find(name).map(|t| t.entry)
}

fn main() -> ExitCode {
    signals::install();
    let code = dispatch();
    // The reader of stdout left: the run stopped and cleaned up as for
    // Ctrl-C, and ends as SIGPIPE would have ended it.
    if output::stdout_closed() {
        return ExitCode::from(output::CLOSED_STATUS);
    }
    code
}

/// Runs the subcommand the arguments (or the program's name) choose.
fn dispatch() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = args.remove(0);
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(t) = tools::find(&base).filter(|t| t.link) {
        return (t.entry)(&base, args);
    }
    let Some(first) = args.first().map(|a| a.to_string_lossy().into_owned()) else {
        eprint!("{}", tools::usage());
        return exit::usage();
    };
    match first.as_str() {
        "-h" | "--help" | "help" => {
            let _ = out!("{}", tools::usage());
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            let _ = outln!("iolab {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        name => match lookup(name) {
            Some(entry) => {
                args.remove(0);
                entry(name, args)
            }
            None => {
                eprintln!("iolab: unknown command '{name}'\n\n{}", tools::usage());
                exit::usage()
            }
        },
    }
}
