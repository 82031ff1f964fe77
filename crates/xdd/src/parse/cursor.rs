//! Reading an option's values off the token list: the option-table
//! engine's cursor, re-exported where XDD's handlers have always found it.
//! Every error names the option being read, so `-reqsize abc` says
//! `-reqsize: ...`.

pub use iolab_opts::cursor::{looks_like_option, Cursor};
