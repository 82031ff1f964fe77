//! `iolab demo`: the quick-start job. In a fresh temporary directory that
//! is removed afterwards: a short mdtest (files and directories, 2 tasks,
//! a small tree, data written, read back and verified), then a short XDD
//! run (sequential writes of a sequenced pattern, then reads verifying
//! it), each printing its usual report.

use crate::exit::{Ended, Halt};
use std::ffi::OsString;

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
pub fn main(_prog: &str, args: Vec<OsString>) -> Ended {
    // --help and --version exit 0; anything else is bad usage (exit 2).
    crate::exit::parse_clap::<Cli>("demo", args)?;
    // What a demo killed or stopped at once (kill -9, a second Ctrl-C)
    // left: its directory says whose it was, and that owner is gone.
    for d in iolab_core::tmp::remove_stale("iolab-demo") {
        iolab_core::say!(
            "iolab demo: removed {}: left by a demo that was stopped",
            d.display()
        );
    }
    // A random name of mode 0700 (mkdtemp), not iolab-demo-PID, which
    // anyone could plant a link at beforehand; claimed (an owner file
    // locked while this runs), so that the next demo removes it if this
    // one is killed.
    let private = iolab_core::tmp::PrivateDir::claimed("iolab-demo").map_err(|e| {
        Halt::failed(format!(
            "iolab demo: cannot create a directory in {}: {e}",
            std::env::temp_dir().display()
        ))
    })?;
    let dir = private.path().to_path_buf();
    let target = dir.join("xdd.dat");
    let steps: [(&str, String); 3] = [
        ("mdtest", format!("-d {}/md -n 1000 -z 1 -b 4 -w 4k -e 4k -X -i 2 --tasks 2", dir.display())),
        ("xdd", format!("-op write -target {} -reqsize 128 -mbytes 64 -passes 2 -datapattern sequenced", target.display())),
        ("xdd", format!("-op read -target {} -reqsize 128 -mbytes 64 -passes 2 -datapattern sequenced -verify contents -deletefile", target.display())),
    ];
    let mut ended = Ok(iolab_core::Outcome::Completed);
    // After whatever a step's tool says of its own files.
    crate::signals::set_closing_words(format!(
        "\niolab demo: stopped at once; everything the demo made is in {}: the next `iolab demo` removes it, or remove it by hand\n",
        dir.display()
    ));
    for (tool, line) in steps {
        // A tool that says more (mdtest's list) sets its own words while
        // it runs, which must not outlive its step.
        crate::signals::set_last_words(String::new());
        let _ = outln!("\n==> iolab {tool} {line}\n");
        let args = line.split(' ').map(OsString::from).collect();
        // Each report names its own command line, which can be pasted.
        let command = format!("iolab {tool} {line}");
        ended = if tool == "mdtest" {
            crate::mdtest::main_as(tool, args, command)
        } else {
            crate::xdd::main_as(tool, args, command)
        };
        if crate::exit::ended_code(&ended) != 0 {
            break;
        }
    }
    let _ = std::fs::remove_file(&target);
    // The directory is gone if the steps cleaned up; `private` removes
    // whatever a failed step left.
    drop(private);
    ended
}
