//! The surveys' outputs: the kit's summary lines (stdout and
//! `${rslt}.summary`, same bytes), the `${rslt}.detail` post-mortem text,
//! CSV, and for `iolab survey plot` the parsed summaries, gnuplot input and
//! charts. Pure functions from `iolab_survey` results to bytes.

pub mod csv;
pub mod detail;
pub mod figures;
pub mod parse;
pub mod plot;
pub mod summary;
