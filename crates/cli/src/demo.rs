//! `iolab demo`: the quick-start job. In a fresh temporary directory that
//! is removed afterwards: a short mdtest (files and directories, 2 tasks,
//! a small tree, data written, read back and verified), then a short XDD
//! run (sequential writes of a sequenced pattern, then reads verifying
//! it), each printing its usual report.

use std::ffi::OsString;
use std::process::ExitCode;

/// The quick-start run: a short mdtest, then a short XDD write and
/// verified read, in a temporary directory.
///
/// The mdtest has 2 tasks as threads and 1,000 files and directories in
/// a small tree, 4 KiB written, read back and verified, 2 iterations;
/// the XDD run writes 64 MiB with a sequenced pattern, then reads it
/// back and verifies it. Each prints its usual report after its command
/// line, which can be pasted with a directory of yours in place of the
/// temporary one (under TMPDIR, else /tmp), removed afterwards. It
/// takes no options: paste a printed command line to change one.
#[derive(clap::Parser, Debug)]
#[command(name = "iolab demo", version)]
struct Cli {}

/// The command line as clap defines it (help, completions, man page).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Runs the embedded default benchmarks.
pub fn main(_prog: &str, args: Vec<OsString>) -> ExitCode {
    // --help and --version exit 0; anything else is bad usage (exit 2).
    if let Err(code) = crate::exit::parse_clap::<Cli>("demo", args) {
        return code;
    }
    // A random name of mode 0700 (mkdtemp), not iolab-demo-PID, which
    // anyone could plant a link at beforehand.
    let private = match iolab_core::tmp::PrivateDir::new("iolab-demo") {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "iolab demo: cannot create a directory in {}: {e}",
                std::env::temp_dir().display()
            );
            return crate::exit::failed();
        }
    };
    let dir = private.path().to_path_buf();
    let target = dir.join("xdd.dat");
    let steps: [(&str, String); 3] = [
        ("mdtest", format!("-d {}/md -n 1000 -z 1 -b 4 -w 4k -e 4k -X -i 2 --tasks 2", dir.display())),
        ("xdd", format!("-op write -target {} -reqsize 128 -mbytes 64 -passes 2 -datapattern sequenced", target.display())),
        ("xdd", format!("-op read -target {} -reqsize 128 -mbytes 64 -passes 2 -datapattern sequenced -verify contents -deletefile", target.display())),
    ];
    let mut code = ExitCode::SUCCESS;
    for (tool, line) in steps {
        let _ = outln!("\n==> iolab {tool} {line}\n");
        let args = line.split(' ').map(OsString::from).collect();
        // Each report names its own command line, which can be pasted.
        let command = format!("iolab {tool} {line}");
        code = if tool == "mdtest" {
            crate::mdtest::main_as(tool, args, command)
        } else {
            crate::xdd::main_as(tool, args, command)
        };
        if code != ExitCode::SUCCESS {
            break;
        }
    }
    let _ = std::fs::remove_file(&target);
    let _ = std::fs::remove_dir(&dir);
    // The directory is gone if the steps cleaned up; `private` removes
    // whatever a failed step left.
    drop(private);
    code
}
