//! `iolab qualify`'s `--out DIR`, checked before anything is made or
//! run: new, empty, or an earlier (or interrupted) qualification's, with
//! no link at any of its names (a planted `results.sqlite` link would
//! have the store written wherever it points) and no report.html that
//! iolab did not write. While a qualification runs it holds an exclusive
//! flock on DIR itself, so a second one on the same DIR is refused
//! (exit 2) instead of measuring the same points again; the kernel drops
//! the lock when the process ends, `kill -9` included.

use crate::qualify_show as show;
use iolab_qualify::machine::Machine;
use iolab_qualify::plan::{self, Plan};
use std::fs::{DirEntry, File};
use std::path::Path;

/// The files a qualification keeps in its directory.
fn is_ours(name: &str) -> bool {
    [
        "plan.toml",
        "results.sqlite",
        "results.sqlite-wal",
        "results.sqlite-shm",
        "report.html",
    ]
    .contains(&name)
        || name.starts_with(".results.sqlite.sweep.")
        || name.starts_with(".report.html.")
        || name.starts_with(".plan.toml.")
}

/// Refuses an entry of DIR that no qualification of DIR made, or that
/// is a link: the store and the pages are opened by name, and a link
/// there would be followed out of DIR. A files' directory
/// (`iolab-qualify.TOKEN`, when the plan's `dir` is DIR) is this
/// qualification's when its owner file names DIR.
fn check_entry(dir: &Path, e: &DirEntry) -> Result<(), String> {
    let name = e.file_name().to_string_lossy().into_owned();
    let kind = e
        .file_type()
        .map_err(|err| format!("{name}: cannot be looked at: {err}"))?;
    if kind.is_symlink() {
        return Err(format!(
            "{name} is a symbolic link: a qualification makes none and follows none; remove it, or give a new or empty directory"
        ));
    }
    let sweep_dir = name.starts_with(".results.sqlite.sweep.");
    if is_ours(&name) && (kind.is_file() || (sweep_dir && kind.is_dir())) {
        return Ok(());
    }
    if is_ours(&name) {
        return Err(format!(
            "{name} is not a regular file, so no qualification made it: give a new or empty directory"
        ));
    }
    if name.starts_with("iolab-qualify.") && kind.is_dir() && show::names_out(&e.path(), dir) {
        return Ok(());
    }
    Err(format!(
        "holds {name}, which no qualification made: give a new or empty directory"
    ))
}

/// Refuses a report.html iolab did not write (it is replaced at the
/// end), as `iolab report` refuses an index.html without its mark.
fn check_report(dir: &Path) -> Result<(), String> {
    let path = dir.join("report.html");
    if !path.exists() {
        return Ok(());
    }
    match std::fs::read_to_string(&path) {
        Ok(page) if iolab_report::written_by(&page, iolab_report::qualify::html::GENERATOR) => Ok(()),
        _ => Err("report.html is not a page iolab qualify wrote, and would be replaced: move it away, or give a new or empty directory".into()),
    }
}

/// The plan DIR holds, when it is an earlier (or interrupted)
/// qualification; an error when DIR holds anything else.
pub fn previous(dir: &Path) -> Result<Option<Plan>, String> {
    let fail = |why: String| format!("--out {}: {why}", dir.display());
    if !dir.exists() {
        iolab_output::check_dir("--out", dir).map_err(|e| e.to_string())?;
        return Ok(None);
    }
    let entries: Vec<DirEntry> = std::fs::read_dir(dir)
        .map_err(|e| fail(format!("cannot read it: {e}")))?
        .flatten()
        .collect();
    if entries.is_empty() {
        return Ok(None);
    }
    for e in &entries {
        check_entry(dir, e).map_err(fail)?;
    }
    check_report(dir).map_err(fail)?;
    let plan_toml = dir.join("plan.toml");
    let text = iolab_core::input::read_text(&plan_toml, iolab_core::input::TEXT_MAX_BYTES)
        .map_err(|e| {
            fail(format!(
                "has no readable plan.toml ({e}): give a new or empty directory"
            ))
        })?;
    let raw = Plan::read(&text).map_err(|e| fail(format!("plan.toml: {e}")))?;
    let m = Machine::probe().map_err(|e| fail(e.to_string()))?;
    plan::fill(raw, &m, None)
        .map(Some)
        .map_err(|e| fail(format!("plan.toml: {e}")))
}

/// An exclusive flock on DIR, held while the qualification runs (the
/// descriptor is close-on-exec: the tools it starts do not hold it).
pub struct OutLock {
    _dir: File,
}

/// Locks DIR, an existing directory; refused, naming the holder, when
/// another qualification holds it.
pub fn lock(dir: &Path) -> Result<OutLock, String> {
    let fail = |why: String| format!("--out {}: {why}", dir.display());
    let f = File::open(dir).map_err(|e| fail(format!("cannot open it to lock it: {e}")))?;
    if f.try_lock().is_err() {
        let holder = iolab_core::env::flock_holder(&f).unwrap_or_else(|| "another process".into());
        return Err(fail(format!(
            "another qualification is running in it ({holder}): wait for it to end (or stop it), then run the same command again"
        )));
    }
    Ok(OutLock { _dir: f })
}
