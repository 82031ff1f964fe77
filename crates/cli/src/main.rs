//! The `iolab` binary: picks a subcommand (or, when invoked through a link
//! named `mdtest` or `xdd`, behaves as that tool) and hands it the raw
//! arguments. Each subcommand lives in a module of the same name.

use std::ffi::OsString;
use std::process::ExitCode;

mod clock;
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
mod xdd;
mod xddcp;

/// Exit status for bad usage (kept for the subcommands not yet moved to
/// [`exit::status`]).
pub const EXIT_USAGE: u8 = exit::USAGE;
/// Exit status when the run met I/O errors.
pub const EXIT_IO: u8 = exit::FAILED;

const USAGE: &str = "\
iolab: storage performance toolkit

Usage: iolab <command> [options...]

Commands:
  mdtest   metadata benchmark, a drop-in mdtest (iolab mdtest -h)
  xdd      XDD data I/O benchmark (iolab xdd -help)
  lst      network self-test as LNet selftest: agents, ping and brw (iolab lst --help)
  stats    stats-collect: system and Lustre statistics on every node (iolab stats -h)
  survey   the Lustre I/O kit's surveys: disk, obdfilter, ost, mds, plot (iolab survey --help)
  sweep    scaling sweep of any tool from a TOML plan, recorded in the store (iolab sweep --help)
  report   charts and an HTML page of series from the store (iolab report --help)
  results  the results store: list, show, export, compare (iolab results --help)
  demo     the quick-start run: a short mdtest in a temporary directory
  timeserver  XDD's global clock server (iolab timeserver -help)
  gettime     read the global clock from a timeserver (iolab gettime -help)
  xddcp    copy files to another host with XDD's end-to-end copy (iolab xddcp -h)
  io500    the IO500 benchmark from its ini file (iolab io500 --help)

Also callable through links named `mdtest`, `xdd`, `xddcp`, `timeserver` or `gettime`.
Options: -h/--help, -V/--version
";

/// A subcommand's entry point: the arguments after its name, and the
/// name the user typed (for messages and `Command line used:`).
type Entry = fn(prog: &str, args: Vec<OsString>) -> ExitCode;

fn lookup(name: &str) -> Option<Entry> {
    match name {
        "demo" => Some(demo::main),
        "mdtest" => Some(mdtest::main),
        "xdd" => Some(xdd::main),
        "lst" => Some(lst::main),
        "stats" => Some(stats::main),
        "survey" => Some(survey::main),
        "results" => Some(results::main),
        "sweep" => Some(sweep::main),
        "report" => Some(report::main),
        "timeserver" => Some(clock::timeserver),
        "gettime" => Some(clock::gettime),
        "xddcp" => Some(xddcp::main),
        "io500" => Some(io500::main),
        _ => None,
    }
}

fn main() -> ExitCode {
    signals::install();
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = args.remove(0);
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(entry) = lookup(&base).filter(|_| base != "demo") {
        return entry(&base, args);
    }
    let Some(first) = args.first().map(|a| a.to_string_lossy().into_owned()) else {
        eprint!("{USAGE}");
        return ExitCode::from(EXIT_USAGE);
    };
    match first.as_str() {
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            println!("iolab {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        name => match lookup(name) {
            Some(entry) => {
                args.remove(0);
                entry(name, args)
            }
            None => {
                eprintln!("iolab: unknown command '{name}'\n\n{USAGE}");
                ExitCode::from(EXIT_USAGE)
            }
        },
    }
}
