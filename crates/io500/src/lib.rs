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
//! iolab_io500::prepare_datadir(&*backend, &layout).unwrap();
//! let runner = Runner { cfg: &cfg, layout, resultdir: String::new(),
//!     transport: std::sync::Arc::new(iolab_comm::SingleProcess::new()), threads: 2,
//!     backend: &*backend, observer: &Silent, live: None };
//! let result = runner.run();
//! assert_eq!(result.payload.phases.len(), 12);
//! assert!(!result.payload.valid, "a 1 s stonewall cannot be submitted");
//! assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the datadir is left empty");
//! std::fs::remove_dir(&dir).unwrap();
//! ```

pub mod cleanup;
pub mod commands;
pub mod config;
pub mod failure;
pub mod find;
pub mod ini;
pub mod ior;
pub mod latency;
pub mod mdphase;
pub mod mdworkbench;
pub mod phase;
pub mod results;
pub mod run;
pub mod validity;

pub use config::{check_backend, Config};
pub use phase::{Layout, Phase};
pub use results::{Io500Payload, PhaseReport, RunResult, Score, SCHEMA};

/// Makes the datadir (if missing) and the phase directories in it,
/// through the backend. Fails, naming the path, when a phase directory
/// already holds anything (left by an earlier run: `--cleanup` removes
/// it), so that a run never writes over data it did not make.
pub fn prepare_datadir(be: &dyn iolab_backend::Backend, layout: &Layout) -> Result<(), String> {
    use iolab_backend::c_path;
    let mk = |p: &std::path::Path| -> Result<(), String> {
        let c = c_path(p).map_err(|e| format!("{}: {e}", p.display()))?;
        match be.exists(&c) {
            Ok(true) => Ok(()),
            Ok(false) => be
                .mkdir(&c, 0o755)
                .map_err(|e| format!("{}: cannot create: {e}", p.display())),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    };
    check_leftovers(be, layout)?;
    let exists = |p: &std::path::Path| c_path(p).and_then(|c| be.exists(&c)).unwrap_or(true);
    let mut parents = Vec::new();
    let mut p = layout.datadir.as_path();
    while !p.as_os_str().is_empty() && !exists(p) {
        parents.push(p.to_path_buf());
        match p.parent() {
            Some(q) => p = q,
            None => break,
        }
    }
    for d in parents.iter().rev() {
        mk(d)?;
    }
    for d in cleanup::PHASE_DIRS {
        mk(&layout.path(d))?;
    }
    Ok(())
}

/// Refuses a datadir whose phase directories or private files exist
/// with something in them.
pub fn check_leftovers(be: &dyn iolab_backend::Backend, layout: &Layout) -> Result<(), String> {
    use iolab_backend::c_path;
    let exists = |p: &std::path::Path| c_path(p).and_then(|c| be.exists(&c)).unwrap_or(false);
    for d in cleanup::RUN_DIRS {
        let p = layout.path(d);
        if !exists(&p) {
            continue;
        }
        let mut any = false;
        let c = c_path(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        be.list_each(&c, &mut |_| {
            any = true;
            false
        })
        .map_err(|e| format!("{}: cannot list: {e}", p.display()))?;
        if any {
            return Err(format!(
                "datadir {}: {} is not empty (left by an earlier run?); remove it with iolab io500 --cleanup on the same ini, or use another datadir",
                layout.datadir.display(),
                p.display()
            ));
        }
    }
    let ts = layout.timestamp_file();
    let local = ["mdtest-easy", "mdtest-hard"].map(|b| layout.stonewall_file(b));
    for f in std::iter::once(ts.clone()).chain(local) {
        let there = match f == ts {
            true => exists(&f),
            false => f.exists(),
        };
        if there {
            return Err(format!(
                "datadir {}: {} exists (left by an earlier run?); remove it with iolab io500 --cleanup on the same ini",
                layout.datadir.display(),
                f.display()
            ));
        }
    }
    Ok(())
}
