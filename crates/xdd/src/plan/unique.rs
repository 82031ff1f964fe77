//! Unique incompressible write data now lives in `iolab_core::unique`
//! (the surveys write it too); re-exported here so xdd's call sites keep
//! their paths.

pub use iolab_core::unique::{tag, Shape, DEDUPE_POOL, MIN_PERIOD, STAMP_BYTES, UNIT};
