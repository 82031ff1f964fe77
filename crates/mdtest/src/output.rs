//! The user's output files (--json, --csv, -x): checked for writability
//! before any I/O, written atomically afterwards, through the one output
//! layer every tool uses (`iolab_output`).

use std::path::Path;

/// Checks that `path` can be written later without touching an existing
/// file; the error names the path.
pub fn check_writable(path: &Path) -> Result<(), String> {
    iolab_output::check_file("", path).map_err(|e| e.to_string().trim_start().to_string())
}

pub use iolab_output::write_atomically;
