//! The IO500 benchmark: the io500 app's ini file, its 12 scored phases in
//! its order (ior-easy and ior-hard through this crate's data engine, the
//! mdtest phases through iolab's mdtest engine, find through this crate's
//! walker) and the extended ones (md-workbench through
//! [`mdworkbench`]), the score and its validity, on any [`iolab_comm::Transport`]
//! (threads, MPI ranks, or both) and any [`iolab_backend::Backend`].
//!
//! ```
//! use iolab_io500::{ini::Ini, Config, phase::Layout, run::{Runner, Silent}};
//! let dir = std::env::temp_dir().join(format!("iolab-io500-doc-{}", std::process::id()));
//! let text = format!("[global]\ndatadir = {}\ntimestamp-datadir = FALSE\n\
//!     [debug]\nstonewall-time = 1\n[ior-easy]\ntransferSize = 64k\nblockSize = 256k\n\
//!     [ior-hard]\nsegmentCount = 4\n[mdtest-easy]\nn = 20\n[mdtest-hard]\nn = 20\n", dir.display());
//! let cfg = Config::from_ini(&Ini::parse(&text, "doc.ini").unwrap(), "doc.ini".into()).unwrap();
//! let backend = iolab_backend::by_name("posix").unwrap();
//! let layout = Layout { datadir: dir.clone(), private_dir: dir.clone() };
//! let prepared = iolab_io500::prepare_datadir(&*backend, &layout).unwrap();
//! let runner = Runner { cfg: &cfg, layout, resultdir: String::new(),
//!     transport: std::sync::Arc::new(iolab_comm::SingleProcess::new()), threads: 2,
//!     backend: &*backend, observer: &Silent, live: None,
//!     cancel: &iolab_core::CancelToken::new(), kept: prepared.kept };
//! let (result, made) = runner.run();
//! assert_eq!(result.payload.phases.len(), 12);
//! assert!(runner.final_cleanup(&made, &|| true).confirmed());
//! assert!(!result.payload.valid, "a 1 s stonewall cannot be submitted");
//! assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the datadir is left empty");
//! std::fs::remove_dir(&dir).unwrap();
//! ```

pub mod cleanup;
pub mod commands;
pub mod config;
pub mod datadir;
pub mod find;
pub mod ini;
pub mod ior;
pub mod latency;
pub mod mdphase;
pub mod mdworkbench;
pub mod phase;
pub mod resultdir;
pub mod results;
pub mod run;
pub mod validity;

pub use config::{check_backend, Config};
pub use phase::{Layout, Phase};
pub use results::{Io500Payload, PhaseReport, RunResult, Score, SCHEMA};

pub use datadir::{
    check_datadir, check_leftovers, check_private_files, check_resultdir, prepare_datadir,
    remove_made, DatadirError, Prepared,
};
