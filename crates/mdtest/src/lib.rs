//! The mdtest metadata benchmark: mdtest's options, phases, tree layout
//! and numbers, on any [`iolab_comm::Comm`] (threads, MPI ranks, or both)
//! and any [`iolab_backend::Backend`].
//!
//! ```
//! use iolab_mdtest::{args, Config, Engine, Plan, Progress, Quiet};
//! let dir = std::env::temp_dir().join(format!("iolab-mdtest-doc-{}", std::process::id()));
//! let line = format!("-n 10 -d {}", dir.display());
//! let raw = args::parse(&line.split(' ').map(String::from).collect::<Vec<_>>()).unwrap();
//! let cfg = Config::from_raw(&raw).unwrap();
//! let plan = Plan::new(&cfg).unwrap();
//! let backend = iolab_backend::by_name("posix").unwrap();
//! let progress = Progress::new(2);
//! let cancel = iolab_core::CancelToken::new();
//! iolab_mdtest::preflight(&cfg, &plan, &*backend, &cancel).unwrap();
//! let engine = Engine::new(&cfg, plan, &*backend, &Quiet, &progress, None).with_cancel(&cancel);
//! let results = iolab_comm::run_local(2, |c| engine.run(c).unwrap());
//! assert_eq!(results[0].total_items, 20);
//! assert!(!dir.exists(), "everything the run created is gone");
//! ```

pub mod args;
mod at_dirs;
mod cleanup;
pub mod config;
mod ctx;
pub mod engine;
pub mod exchange;
pub mod names;
pub mod output;
pub mod plan;
pub mod preflight;
pub mod results;
pub mod rng;
pub mod stonewall;
pub mod sweep;
#[cfg(test)]
mod testing;
mod work;

pub use config::{Config, ConfigError};
pub use engine::{preflight, Engine, Observer, Progress, Quiet, Unfinished};
pub use plan::Plan;
pub use results::{Phase, PhaseResult, TestResult};
