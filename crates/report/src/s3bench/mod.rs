//! `iolab s3bench`'s formats: the analysis as warp prints it (text),
//! one CSV row per op type and endpoint, and the JSON envelope. Pure
//! functions from the engine's [`iolab_s3bench::Report`] to text.

pub mod csv;
pub mod json;
pub mod text;
