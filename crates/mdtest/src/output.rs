//! The user's output files (--json, --csv, -x): checked for writability
//! before any I/O, written atomically afterwards, through the one output
//! layer every tool uses (`iolab_output`).

use std::path::Path;

/// Checks that `path` can be written later without touching an existing
/// file; the error names the path.
pub fn check_writable(path: &Path) -> Result<(), Unwritable> {
    iolab_output::check_file("", path).map_err(Unwritable)
}

/// A file that cannot be written: the output layer's refusal, told
/// without an option name (the caller puts its own in front).
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.to_string().trim_start())]
pub struct Unwritable(#[source] pub iolab_output::OutputError);

pub use iolab_output::write_atomically;
