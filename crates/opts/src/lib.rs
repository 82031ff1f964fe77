//! The one option-table engine behind iolab's legacy command lines. A tool
//! declares its options once, as a table of [`Entry`] rows (name, letter,
//! aliases, how values are taken, help, the function that reads them, an
//! example and the check it must satisfy); two front ends read a command
//! line through the same table:
//!
//! - [`dash`]: XDD's single-dash style (`-op read`, `-op target 1 write`,
//!   case-insensitive names, aliases, options with several values);
//! - [`getopt`]: mdtest's getopt style (`-FC`, `-n10`, `-n=10`, `-n 10`,
//!   `--tasks N`, `-R[seed]`).
//!
//! Values are read with a [`Cursor`] (numbers with k/m/g/t suffixes,
//! bounded counts, seconds, keywords, paths), every failure is one
//! [`OptError`] naming the option, and help text is generated from the
//! table. Arguments are `OsString`s in both front ends: a path value may be
//! any bytes; a value read as text that is not UTF-8 is an error naming the
//! option.
//!
//! ```
//! use iolab_opts::{getopt, Arity, Check, Entry};
//! use std::ffi::OsString;
//!
//! #[derive(Default)]
//! struct Raw { items: u64, files_only: bool }
//!
//! static TABLE: &[Entry<Raw, Raw>] = &[
//!     Entry { name: "", short: Some('n'), aliases: &[], arity: Arity::Number, scoped: false,
//!         args: "N", help: "items per task",
//!         apply: |c, r, _| { r.items = c.count("items", 1, 1 << 32)?; Ok(()) },
//!         example: "-n 10", check: Check::Ok(|r| r.items == 10) },
//!     Entry { name: "files-only", short: Some('F'), aliases: &[], arity: Arity::Flag, scoped: false,
//!         args: "", help: "files only",
//!         apply: |_, r, _| { r.files_only = true; Ok(()) },
//!         example: "-F", check: Check::Ok(|r| r.files_only) },
//! ];
//!
//! let args: Vec<OsString> = ["-Fn10"].iter().map(OsString::from).collect();
//! let mut raw = Raw::default();
//! getopt::parse(TABLE, &args, &mut raw).unwrap();
//! assert!(raw.files_only && raw.items == 10);
//!
//! let too_many: Vec<OsString> = ["-n", "9t"].iter().map(OsString::from).collect();
//! let e = getopt::parse(TABLE, &too_many, &mut Raw::default()).unwrap_err();
//! assert!(e.to_string().starts_with("-n: items") && e.message.contains("4294967296"));
//! assert!(getopt::help(TABLE).contains("-F, --files-only"));
//! ```

pub mod cursor;
pub mod dash;
pub mod entry;
pub mod error;
pub mod getopt;
pub mod man;

pub use cursor::{Cursor, MAX_SECONDS};
pub use entry::{duplicate, Apply, Arity, Check, Entry, Example, ExampleError, Given};
pub use error::OptError;

/// Splits a command line written as one string on whitespace, for tests
/// and examples.
pub fn words(line: &str) -> Vec<std::ffi::OsString> {
    line.split_whitespace().map(Into::into).collect()
}

#[cfg(test)]
mod tests;
