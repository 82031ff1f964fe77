//! Formatters: pure functions from an engine's result structs to bytes.
//! One module per engine, one file per format inside it; nothing here
//! measures or touches storage.

pub mod canvas;
pub mod csvw;
pub mod io500;
pub mod ior;
pub mod live;
pub mod lst;
pub mod mdtest;
pub mod qualify;
pub mod s3bench;
pub mod series;
pub mod store;
pub mod survey;
pub mod ticks;
pub mod xdd;
