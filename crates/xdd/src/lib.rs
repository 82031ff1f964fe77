//! The XDD data I/O benchmark engine.
