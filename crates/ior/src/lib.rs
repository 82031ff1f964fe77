//! IOR on iolab's backends and communicator: IOR 4's command line
//! ([`options`], [`directive`] for `-O`, [`script`] for `-f`), its
//! checks ([`config`]), where transfers go ([`plan`]), what they hold
//! ([`data`]), the files on the backend ([`file`]: a file, a mapping,
//! or one object per transfer on S3), the transfer loop ([`xfer`]), one
//! access ([`phase`]), the tests and iterations ([`run`]) and the
//! figures ([`results`]). It prints nothing: an [`run::Observer`] sees
//! each access as it ends, and the formatters are in `iolab-report`.
//!
//! ```
//! use iolab_ior::{config::Config, options, run::{Runner, Silent}};
//! let dir = iolab_core::tmp::PrivateDir::new("iolab-ior-doc").unwrap();
//! let file = dir.path().join("f");
//! let mut args = iolab_opts::words("-w -r -R -F -b 64k -t 16k -s 2 -i 2 -o");
//! args.push(file.into_os_string());
//! let raw = options::parse_os(&args).unwrap();
//! let cfg = Config::new(vec![raw.params], raw.globals).unwrap();
//! let backend = iolab_backend::by_name("posix").unwrap();
//! let runner = Runner { cfg: &cfg, transport: std::sync::Arc::new(iolab_comm::SingleProcess::new()),
//!     threads: 3, backend: &*backend, observer: &Silent,
//!     cancel: &iolab_core::CancelToken::new(), live: None };
//! runner.preflight().unwrap();
//! let out = runner.run();
//! assert_eq!(out.outcome, iolab_core::Outcome::Completed);
//! let write = out.tests[0].iterations[1].write.as_ref().unwrap();
//! assert_eq!((write.bytes, write.file_bytes), (3 * 2 * 65536, 3 * 2 * 65536));
//! assert_eq!(out.tests[0].iterations[1].read.as_ref().unwrap().errors, 0);
//! assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the files are removed");
//! ```

pub mod config;
pub mod ctx;
pub mod data;
pub mod directive;
mod error;
pub mod file;
pub mod hog;
pub mod options;
pub mod outliers;
pub mod params;
pub mod phase;
pub mod plan;
mod preflight;
pub mod reduce;
pub mod results;
pub mod run;
pub mod script;
pub mod xfer;

pub use config::{Api, Config, ConfigError, Test};
pub use error::IorError;
pub use results::{Access, AccessResult, IorPayload, TestResult, SCHEMA};
