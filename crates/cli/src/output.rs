//! Standard output for every subcommand. A closed stdout (`iolab ... |
//! head -1`) is not a crash: the first write that meets EPIPE marks stdout
//! closed and asks the engines to stop, as Ctrl-C does, so they clean up
//! what they created; `main` then exits with 141 (128 + SIGPIPE), the
//! status a shell shows for a tool that SIGPIPE ended. Rust ignores
//! SIGPIPE, so without this every `println!` after the reader left would
//! panic (exit 101) and skip the clean-up.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout met a closed pipe.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// The exit status after stdout was closed: 128 + SIGPIPE.
pub const CLOSED_STATUS: u8 = 128 + libc::SIGPIPE as u8;

/// Writes `args` to stdout and flushes (lines appear as they are
/// measured, also into a pipe). A closed pipe stops the run (see the
/// module doc); any error is returned so a loop can end early.
pub fn print(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    if stdout_closed() {
        return Err(io::ErrorKind::BrokenPipe.into());
    }
    let mut out = io::stdout().lock();
    let r = out.write_fmt(args).and_then(|()| out.flush());
    if let Err(e) = &r {
        if e.kind() == io::ErrorKind::BrokenPipe {
            mark_closed();
        }
    }
    r
}

/// Writes raw bytes to stdout, as [`print`].
pub fn print_bytes(bytes: &[u8]) -> io::Result<()> {
    if stdout_closed() {
        return Err(io::ErrorKind::BrokenPipe.into());
    }
    let mut out = io::stdout().lock();
    let r = out.write_all(bytes).and_then(|()| out.flush());
    if let Err(e) = &r {
        if e.kind() == io::ErrorKind::BrokenPipe {
            mark_closed();
        }
    }
    r
}

/// Standard output as a writer, through [`print_bytes`] (wrap it in a
/// `BufWriter`: every write is flushed).
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        print_bytes(bytes).map(|()| bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// True under CI (`CI` set): no progress bar or live status, whatever
/// stderr is.
pub fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Records that the reader of stdout has gone and asks the run to stop.
pub fn mark_closed() {
    CLOSED.store(true, Ordering::SeqCst);
    // The process's stop flag, which the runner's root token reads: a
    // closed stdout stops the whole process (and output sits below the
    // runner, so it does not name the root itself).
    iolab_core::stop::request();
}

/// True once a write met a closed stdout.
pub fn stdout_closed() -> bool {
    CLOSED.load(Ordering::SeqCst)
}

/// `print!` that returns the write's `io::Result` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::print(format_args!($($arg)*)) };
}

/// `println!` that returns the write's `io::Result` instead of panicking.
macro_rules! outln {
    () => { $crate::output::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::print(format_args!("{}\n", format_args!($($arg)*))) };
}
