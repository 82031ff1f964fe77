//! The aligned I/O buffer now lives in `iolab_core::buffer` (the surveys
//! use it too); re-exported here so xdd's call sites keep their paths.

pub use iolab_core::buffer::{page_size, IoBuffer};
