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
mod lst_session;
mod mdtest;
mod progress;
mod report;
mod results;
mod signals;
mod stats;
mod stats_hook;
mod store_hook;
mod survey;
mod sweep;
mod tools;
mod xdd;
mod xddcp;

/// Exit status for bad usage (kept for the subcommands not yet moved to
/// [`exit::status`]).
pub const EXIT_USAGE: u8 = exit::USAGE;
/// Exit status when the run met I/O errors.
pub const EXIT_IO: u8 = exit::FAILED;

/// The process's command line as typed, program included (args_os: an
/// argument that is not UTF-8 must not panic), for the results' record.
pub fn process_command_line() -> String {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tool's entry point, from the registry (`tools::TOOLS`).
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
        return ExitCode::from(EXIT_USAGE);
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
                ExitCode::from(EXIT_USAGE)
            }
        },
    }
}
