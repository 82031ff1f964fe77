//! Checks made once before any task starts and before anything is
//! created: what the backend can do for these options, test directories
//! left by earlier runs, and the -x file.

use crate::config::{Config, ConfigError};
use crate::names::test_dir;
use crate::plan::Plan;
use crate::stonewall::{self, WallCounts};
use iolab_backend::{c_path, Backend};

/// The longest path the run can make under each `-d` root: its last
/// test directory, the deepest tree directory, and in it the item with
/// the largest task and number, as the rename phase names it aside
/// (`-XX`). A backend that bounds its paths (S3 keys are at most 1024
/// bytes) is asked about them before anything is made, not when the
/// run reaches them.
pub fn longest_paths(cfg: &Config, plan: &Plan, tasks: u64) -> Vec<std::ffi::CString> {
    let last_task = tasks.saturating_sub(1) as usize;
    let last_dir = plan.dirs_per_tree.saturating_sub(1);
    let last_item = plan
        .dirs_per_tree
        .saturating_mul(plan.items_per_dir)
        .saturating_sub(1);
    let file = crate::names::prefix("file", Some(last_task));
    cfg.dirs
        .iter()
        .map(|root| {
            let td = test_dir(
                root,
                cfg.iterations.saturating_sub(1),
                plan.loops.saturating_sub(1),
            );
            let unique = cfg.unique_dir.then_some(last_task);
            let mut names = crate::names::Names::new(&td, unique, plan.branch);
            names
                .item_with_suffix(last_dir, &file, last_item, b"-XX")
                .to_owned()
        })
        .collect()
}

/// Checks the backend's capabilities against the options, then the test
/// directories (through the backend). Returns the counts read from -x for
/// runs without a create phase.
pub fn preflight(
    cfg: &Config,
    plan: &Plan,
    be: &dyn Backend,
    cancel: &iolab_core::CancelToken,
) -> Result<Option<WallCounts>, ConfigError> {
    check_capabilities(cfg, be)?;
    if be.capabilities().local {
        local_roots(cfg)?;
    }
    // A remove-only run clears what a stopped run left, which may be
    // some of its test directories: one must be there, not each.
    let p = cfg.phases;
    let clearing = p.remove && !p.create && !p.stat && !p.read && !p.rename;
    let mut any = false;
    for root in &cfg.dirs {
        for iter in 0..cfg.iterations {
            for lp in 0..plan.loops {
                // Many iterations or loops make this long: Ctrl-C must work.
                if cancel.is_cancelled() {
                    return Err(ConfigError(
                        "interrupted while checking the test directories; nothing was created"
                            .into(),
                    ));
                }
                any |= check_test_dir(cfg, be, &test_dir(root, iter, lp), lp, clearing)?;
            }
        }
    }
    if clearing && !any {
        let td = cfg
            .dirs
            .first()
            .map(|r| test_dir(r, 0, 0))
            .unwrap_or_default();
        return Err(ConfigError(format!(
            "-r: none of this run's test directories exists ({} is the first); nothing to remove: give the options of the run that made them",
            td.display()
        )));
    }
    match (&cfg.stonewall_file, cfg.phases.create) {
        (Some(f), false) => read_wall(f, plan).map(Some),
        _ => Ok(None),
    }
}

/// Reads the -x file and checks its counts against this run's plan: a
/// count beyond the items each task has here names items this run does
/// not know (IOR's mdtest then works on names past its tree), so it is
/// bad usage before anything runs, not a task failing half-way.
fn read_wall(f: &std::path::Path, plan: &Plan) -> Result<WallCounts, ConfigError> {
    let w = stonewall::read(f).map_err(|e| ConfigError(e.to_string()))?;
    let most = plan.items_per_task;
    let over = |what: &str, n: u64| {
        Err(ConfigError(format!(
            "-x {}: records {n} {what} per task, more than the {most} items per task of this run; give the -n/-I/-z/-b of the run that wrote it",
            f.display()
        )))
    };
    if w.files > most {
        return over("files", w.files);
    }
    match w.dirs {
        Some(d) if d > most => over("directories", d),
        _ => Ok(w),
    }
}

/// What the options need from the backend, asked before the run starts
/// so that an unsupported combination fails with exit 2, not mid-run.
pub fn check_capabilities(cfg: &Config, be: &dyn Backend) -> Result<(), ConfigError> {
    let caps = be.capabilities();
    let name = be.name();
    let missing = |opt: &str, what: &str| {
        Err(ConfigError(format!(
            "{opt}: the {name} backend cannot {what}; choose another backend (-a) or drop {opt}"
        )))
    };
    if !caps.directories {
        return missing("-d", "make directories, which mdtest's tree needs");
    }
    if cfg.rename_dirs && !caps.rename {
        return missing("-U", "rename");
    }
    if cfg.mknod && !caps.mknod {
        return missing("-k", "create files with mknod");
    }
    check_engine(cfg, be)
}

/// `--engine uring` needs the backend's metadata queue, and a queue this
/// machine can make: io_uring refused (`kernel.io_uring_disabled`,
/// seccomp) or an opcode missing is named here, before anything is
/// created (exit 2), never a silent fall back to the sync engine.
fn check_engine(cfg: &Config, be: &dyn Backend) -> Result<(), ConfigError> {
    let Some(qd) = cfg.engine.queue_depth() else {
        return Ok(());
    };
    if !be.capabilities().queued_metadata {
        return Err(ConfigError(format!(
            "--engine uring: the {} backend cannot queue metadata operations; use --engine sync",
            be.name()
        )));
    }
    // A queue's table of direct descriptors may not be larger than the
    // open-file limit: named here rather than as a kernel that lacks it.
    if let Some(limit) = iolab_core::env::open_files_limit().filter(|&l| u64::from(qd) > l) {
        return Err(ConfigError(format!(
            "--qd {qd} exceeds the open-file limit ({limit}); lower --qd or raise ulimit -n"
        )));
    }
    let bytes = cfg.write_bytes.max(cfg.read_bytes) as usize;
    match be.metadata_queue(qd, bytes) {
        Ok(_) => Ok(()),
        Err(e) => Err(ConfigError(format!(
            "--engine uring: {e}; use --engine sync"
        ))),
    }
}

/// On local storage: a -d that is a link to nothing (mdtest would try
/// to make the directory and meet the link), and the same directory
/// given twice in `-d a@b` (its tasks would make the same test
/// directories), are bad usage found before anything is made.
fn local_roots(cfg: &Config) -> Result<(), ConfigError> {
    let mut seen: Vec<(&std::path::Path, std::path::PathBuf)> = Vec::new();
    for root in &cfg.dirs {
        let link = std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink());
        if link && !root.exists() {
            return Err(ConfigError(format!(
                "-d {}: a symbolic link to nothing; give a directory (or a link to one)",
                root.display()
            )));
        }
        let key = std::fs::canonicalize(root).unwrap_or_else(|_| lexical(root));
        if let Some((first, _)) = seen.iter().find(|(_, k)| *k == key) {
            return Err(ConfigError(format!(
                "-d {}: the same directory as {} given before it; give each directory once",
                root.display(),
                first.display()
            )));
        }
        seen.push((root, key));
    }
    Ok(())
}

/// `root` without `.` components (`x`, `./x` and `x/` are one name).
fn lexical(root: &std::path::Path) -> std::path::PathBuf {
    root.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

fn check_test_dir(
    cfg: &Config,
    be: &dyn Backend,
    td: &std::path::Path,
    lp: u64,
    clearing: bool,
) -> Result<bool, ConfigError> {
    let root = td.parent().unwrap_or(td);
    // A link where a test directory goes is never followed into: mdtest
    // makes that directory itself (a local check; the backend's exists
    // follows links, and a dangling one would fail the create mid-run).
    // (A run without create meets the link where it walks the tree, and
    // says there that no link below -d is followed.)
    let link = cfg.phases.create
        && be.capabilities().local
        && std::fs::symlink_metadata(td).is_ok_and(|m| m.file_type().is_symlink());
    if link {
        return Err(ConfigError(format!(
            "-d {}: {} is a symbolic link where mdtest makes its test directory; remove it or use another -d",
            root.display(),
            td.display()
        )));
    }
    let exists = c_path(td)
        .and_then(|c| be.exists(&c))
        .map_err(|e| ConfigError(format!("-d {}: {}: {e}", root.display(), td.display())))?;
    if cfg.phases.create && exists {
        return Err(ConfigError(format!(
            "-d {}: {} already exists (left by an earlier run?); remove it with a -r run of the same options, or use another -d",
            root.display(),
            td.display()
        )));
    }
    // A remove-only run skips a directory a stopped run never made.
    if !cfg.phases.create && lp == 0 && !exists && !clearing {
        return Err(ConfigError(format!(
            "-d {}: {} does not exist; run the create phase (-C) with the same options first",
            root.display(),
            td.display()
        )));
    }
    Ok(exists)
}
