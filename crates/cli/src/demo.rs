//! `iolab demo`: the quick-start job. A short mdtest (files and
//! directories, 2 tasks, a small tree) in a fresh temporary directory that
//! is removed afterwards, printing mdtest's report.

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs the embedded default benchmark.
pub fn main(_prog: &str, args: Vec<OsString>) -> ExitCode {
    if let Some(a) = args.first() {
        eprintln!(
            "iolab demo: takes no arguments (got '{}'); use `iolab mdtest` for options",
            a.to_string_lossy()
        );
        return ExitCode::from(crate::EXIT_USAGE);
    }
    let dir = std::env::temp_dir().join(format!("iolab-demo-{}", std::process::id()));
    let line = format!(
        "-d {} -n 1000 -z 1 -b 4 -w 4k -e 4k -X -i 2 --tasks 2",
        dir.display()
    );
    println!("iolab demo: iolab mdtest {line}\n");
    let code = crate::mdtest::main("mdtest", line.split(' ').map(OsString::from).collect());
    let _ = std::fs::remove_dir(&dir);
    code
}
