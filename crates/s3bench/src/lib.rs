//! `iolab s3bench`: object-storage workloads as MinIO's warp runs them
//! (get, put, stat, delete, list, mixed by ratio, multipart) over the S3
//! backend's [`Endpoint`](iolab_backend::s3::Endpoint)s, with warp's
//! analysis: per op type and per endpoint, request counts and rates,
//! latency and time-to-first-byte percentiles, object sizes, and the
//! fastest, median and slowest time segment. Workers are threads of a
//! process, or of every MPI rank; each phase starts on all of them at
//! once and every rank's record is merged exactly.
//!
//! The stages: [`parse`] (warp's values) -> [`Config`] (checked) ->
//! [`run()`] (prepare, timed phase, cleanup, check; [`worker`] is one
//! worker) -> [`Report`] ([`analysis`]) -> [`figures`] and [`notes`].
//!
//! ```
//! use iolab_s3bench::{parse, mix::Mix, config::Distrib, Op};
//! assert_eq!(parse::duration_s("1m30s").unwrap(), 90.0);
//! let m = Mix::new(&Distrib { get: 40.0, stat: 25.0, put: 15.0, delete: 10.0, list: 10.0 });
//! let gets = (0..1000).filter(|&n| m.at(0, 1, n) == Op::Get).count();
//! assert_eq!(gets, 400);
//! ```

pub mod analysis;
pub mod autoterm;
pub mod config;
pub mod error;
pub mod figures;
pub mod hosts;
pub mod limit;
pub mod listing;
pub mod live;
pub mod mix;
pub mod notes;
pub mod parse;
pub mod record;
pub mod result;
pub mod run;
pub mod sizes;
mod worker;

pub use config::{Bench, Config, Op};
pub use live::Live;
pub use result::Report;
pub use run::{run, NotStarted, Run};
