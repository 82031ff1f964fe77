//! `iolab mdtest`: parse the legacy command line, run the engine, render.

use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point of `iolab mdtest` (and of the `mdtest` link).
pub fn main(prog: &str, _args: Vec<OsString>) -> ExitCode {
    eprintln!("iolab: '{prog}' is not implemented yet");
    ExitCode::from(crate::EXIT_USAGE)
}
