//! The `iolab` binary: picks a subcommand (or, when invoked through a link
//! named `mdtest` or `xdd`, behaves as that tool) and hands it the raw
//! arguments. Each subcommand lives in a module of the same name; what
//! every run needs is the runner's (`runner/`), and how a subcommand
//! ended becomes the exit status in `exit.rs` alone.

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
mod ior;
mod live;
mod live_view;
mod lst;
mod lst_nodes;
mod lst_session;
mod mdtest;
mod progress;
mod qualify;
mod qualify_out;
mod qualify_show;
mod rank_env;
mod ranks;
mod report;
mod results;
mod runner;
mod s3bench;
mod signals;
mod stats;
mod survey;
mod sweep;
mod tools;
use tools::Tool;
mod xdd;
mod xddcp;

/// The process's command line as typed, program included (args_os: an
/// argument that is not UTF-8 must not panic), for the results' record.
pub fn process_command_line() -> String {
    process_words().join(" ")
}

/// This process's command line, word by word as given.
pub fn process_words() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Every tool, in the order the usage text lists them.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "mdtest",
        about: "metadata benchmark, a drop-in mdtest",
        help: "-h",
        entry: crate::mdtest::main,
        link: true,
        ranks: true,
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
        ranks: false,
        sweep: Some(crate::xdd::check_args),
        command: || completions::dash_tool("xdd", "XDD data I/O benchmark"),
        page: Some(completions::xdd_page),
    },
    Tool {
        name: "ior",
        about: "parallel file and object I/O benchmark, a drop-in IOR",
        help: "-h",
        entry: crate::ior::main,
        link: true,
        ranks: true,
        sweep: None,
        command: crate::ior::command,
        page: Some(completions::ior_page),
    },
    Tool {
        name: "lst",
        about: "network self-test as LNet selftest: agents, ping and brw",
        help: "--help",
        entry: crate::lst::main,
        link: false,
        ranks: false,
        // clap refuses an option given twice itself.
        sweep: Some(|args, _| crate::lst::check_args(args).map(|()| Vec::new())),
        command: crate::lst::command,
        page: None,
    },
    Tool {
        name: "stats",
        about: "stats-collect: system and Lustre statistics on every node",
        help: "-h",
        entry: crate::stats::main,
        link: false,
        ranks: false,
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
        ranks: false,
        // clap refuses an option given twice itself.
        sweep: Some(|args, _| crate::survey::check_args(args).map(|()| Vec::new())),
        command: crate::survey::command,
        page: None,
    },
    Tool {
        name: "sweep",
        about: "scaling sweep of any tool from a TOML plan, recorded in the store",
        help: "--help",
        entry: crate::sweep::main,
        link: false,
        ranks: false,
        sweep: None,
        command: crate::sweep::command,
        page: None,
    },
    Tool {
        name: "qualify",
        about: "qualify storage layer by layer: network, devices, data, metadata, each to its knee, with a verdict",
        help: "--help",
        entry: crate::qualify::main,
        link: false,
        ranks: false,
        sweep: None,
        command: crate::qualify::command,
        page: None,
    },
    Tool {
        name: "report",
        about: "charts and an HTML page of series from the store",
        help: "--help",
        entry: crate::report::main,
        link: false,
        ranks: false,
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
        ranks: false,
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
        ranks: false,
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
        ranks: false,
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
        ranks: false,
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
        ranks: false,
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
        ranks: true,
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
        ranks: true,
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
        ranks: false,
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
        ranks: false,
        sweep: None,
        command: completions::man_command,
        page: None,
    },
];

fn main() -> ExitCode {
    // Before any thread: it sets the environment.
    rank_env::mark();
    signals::install(runner::root());
    let ended = dispatch();
    // The reader of stdout left: the run stopped and cleaned up as for
    // Ctrl-C, and ends as SIGPIPE would have ended it.
    if output::stdout_closed() {
        return exit::closed_stdout();
    }
    exit::end(exit::with_stdout(ended, output::stdout_failure()))
}

/// Runs the subcommand the arguments (or the program's name) choose.
fn dispatch() -> exit::Ended {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = args.remove(0);
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(t) = tools::find(&base).filter(|t| t.link) {
        if let Err(e) = live::take(&base, &mut args) {
            return live_refused(&base, &base, &args, &e);
        }
        tools::refuse_as_rank(t, &base)?;
        return (t.entry)(&base, args);
    }
    let Some(first) = args.first().map(|a| a.to_string_lossy().into_owned()) else {
        return Err(exit::Halt::usage(tools::usage().trim_end()));
    };
    match first.as_str() {
        "-h" | "--help" | "help" => {
            let _ = out!("{}", tools::usage());
            Err(exit::Halt::shown())
        }
        "-V" | "--version" => {
            let _ = outln!("iolab {}", env!("CARGO_PKG_VERSION"));
            Err(exit::Halt::shown())
        }
        name => match tools::find(name) {
            Some(t) => {
                args.remove(0);
                if let Err(e) = live::take(name, &mut args) {
                    return live_refused(name, &format!("iolab {name}"), &args, &e);
                }
                tools::refuse_as_rank(t, &format!("iolab {name}"))?;
                (t.entry)(name, args)
            }
            None => Err(exit::Halt::usage(format!(
                "iolab: unknown command '{name}'\n\n{}",
                tools::usage()
            ))),
        },
    }
}

/// A live option was refused: the tool's own options are checked first
/// (its error is the one a typo in them deserves), then the live one is
/// said. Exit 2 either way, nothing run.
fn live_refused(tool: &str, prog: &str, args: &[OsString], live_error: &str) -> exit::Ended {
    let said = match tools::find(tool)
        .and_then(|t| t.sweep)
        .map(|check| check(args, false))
    {
        Some(Err(e)) => e,
        _ => live_error.to_string(),
    };
    Err(exit::Halt::usage(format!("{prog}: {said}")))
}
