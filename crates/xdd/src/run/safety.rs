//! The block-device safety check now lives in the POSIX backend
//! (`iolab_backend::safety`, asked through `Backend::device_in_use`);
//! re-exported here so xdd's call sites keep their paths.

pub use iolab_backend::safety::*;
