//! Standard output for every subcommand. A closed stdout (`iolab ... |
//! head -1`) is not a crash: the first write that meets EPIPE marks stdout
//! closed and asks the engines to stop, as Ctrl-C does, so they clean up
//! what they created; `main` then exits with 141 (128 + SIGPIPE), the
//! status a shell shows for a tool that SIGPIPE ended. Rust ignores
//! SIGPIPE, so without this every `println!` after the reader left would
//! panic (exit 101) and skip the clean-up.
//!
//! Any other failed write (a full disk under `> file`, `>/dev/full`, an
//! I/O error) loses the report, which must be whole or absent: the first
//! such error is kept, the run goes on (its files, `--json` and `--csv`,
//! are still written), and `main` makes it the run's failure once, at
//! the end ([`stdout_failure`]): `iolab: cannot write the report to
//! standard output: ...`, exit 1.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout met a closed pipe.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// The first write to stdout that failed otherwise than on a closed pipe.
static FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The exit status after stdout was closed: 128 + SIGPIPE.
pub const CLOSED_STATUS: u8 = 128 + libc::SIGPIPE as u8;

/// Writes `args` to stdout and flushes (lines appear as they are
/// measured, also into a pipe). A closed pipe stops the run (see the
/// module doc); any error is returned so a loop can end early.
pub fn print(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    if stdout_closed() {
        return Err(io::ErrorKind::BrokenPipe.into());
    }
    let mut screen = screen();
    if screen.hold(|| args.to_string()) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    let r = out.write_fmt(args).and_then(|()| out.flush());
    met(r)
}

/// Writes raw bytes to stdout, as [`print`].
pub fn print_bytes(bytes: &[u8]) -> io::Result<()> {
    if stdout_closed() {
        return Err(io::ErrorKind::BrokenPipe.into());
    }
    let mut screen = screen();
    if screen.hold(|| String::from_utf8_lossy(bytes).into_owned()) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    let r = out.write_all(bytes).and_then(|()| out.flush());
    met(r)
}

/// What a write to stdout met: a closed pipe stops the run; any other
/// error is kept for the end (the first one). Returns `r`.
fn met(r: io::Result<()>) -> io::Result<()> {
    if let Err(e) = &r {
        match e.kind() {
            io::ErrorKind::BrokenPipe => mark_closed(),
            _ => {
                let _ = FAILED.set(e.to_string());
            }
        }
    }
    r
}

/// The first write to stdout that failed otherwise than on a closed
/// pipe: the report is not whole, which makes the run a failure.
pub fn stdout_failure() -> Option<&'static str> {
    FAILED.get().map(String::as_str)
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

/// What the live figures hold of the terminal, so that the tool's own
/// lines on stdout neither land inside them nor are lost: the one-line
/// status (on stderr, without a newline) is wiped before a line is
/// printed, and while the full-screen view owns the terminal the lines
/// are held and printed once it is put away. Only when stdout is the
/// terminal: into a file or a pipe they go as they come.
pub enum Screen {
    /// Nothing of the live figures is on the terminal.
    Plain,
    /// The status line is on stderr's last line.
    Status,
    /// The full-screen view is up; what stdout was given meanwhile.
    Full(String),
}

static SCREEN: std::sync::Mutex<Screen> = std::sync::Mutex::new(Screen::Plain);

/// Whether stdout is a terminal, asked once.
fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| io::stdout().is_terminal())
}

/// The terminal's state, locked: held while the status line or the view
/// draws, and while a line is printed, so that they never interleave.
pub fn screen() -> std::sync::MutexGuard<'static, Screen> {
    SCREEN.lock().unwrap_or_else(|e| e.into_inner())
}

impl Screen {
    /// Makes room for a line on stdout: true when `text` (made only
    /// then) is held for later, the view being up; the status line is
    /// wiped first. Nothing to do (no live figures drawn) is one match.
    fn hold(&mut self, text: impl FnOnce() -> String) -> bool {
        if matches!(self, Screen::Plain) || !stdout_is_terminal() {
            return false;
        }
        match self {
            Screen::Full(held) => {
                held.push_str(&text());
                return true;
            }
            Screen::Status => {
                let mut e = io::stderr().lock();
                let _ = e.write_all(b"\r\x1b[K").and_then(|()| e.flush());
            }
            Screen::Plain => {}
        }
        *self = Screen::Plain;
        false
    }

    /// The view is put away (or never came up): what was held goes to
    /// stdout now.
    pub fn release(&mut self) {
        if let Screen::Full(held) = std::mem::replace(self, Screen::Plain) {
            let mut out = io::stdout().lock();
            let _ = met(out.write_all(held.as_bytes()).and_then(|()| out.flush()));
        }
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
