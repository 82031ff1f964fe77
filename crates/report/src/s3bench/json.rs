//! JSON: the results envelope (made by the binary's runner) with schema
//! `iolab.s3bench/1`; the checked configuration as its configuration, the
//! report as its payload, the per-op figures (`iolab_s3bench::figures`)
//! as its headline figures.

/// The payload schema.
pub const SCHEMA: &str = "iolab.s3bench/1";
