//! A copy that stops part way never leaves a file that looks finished.
//! A destination that keeps a restart file and never overwrites
//! (`-e2e noclobber -restart enable`, what `xddcp -a` starts) moves its
//! partial file to `PATH.partial` when its run fails or is interrupted,
//! beside the record `PATH.restart`; the next run of the same copy moves
//! it back before it resumes. (Without a restart file a failed run's
//! file is removed.) A manual `-restart` copy keeps XDD's behaviour: the
//! partial file stays at its name.

use crate::error::{RunError, UsageError};
use crate::parse::config::TargetOpts;
use crate::plan::TargetPlan;
use std::ffi::CString;
use std::path::Path;
use std::sync::Mutex;

/// Partial copies this process moved back to their names, for
/// [`undo_restores`].
static RESTORED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The suffix of a partial copy.
pub const SUFFIX: &str = ".partial";

/// True for a destination whose partial copy goes by `PATH.partial`: a
/// file of this machine (renamed with rename(2)).
pub fn applies(t: &TargetPlan) -> bool {
    let o = &t.opts;
    o.e2e.role() == Some(super::opts::Role::Destination)
        && o.e2e.noclobber
        && o.restart.monitored()
        && t.caps.local
}

/// Before a resume: moves `PATH.partial` back to `PATH` when `PATH` is
/// not there and the copy's restart record is. A partial copy or record
/// that this user did not make (a link, another user's file, one others
/// may write: in a shared directory anyone may plant them) is refused,
/// before anything is done, rather than adopted.
pub fn restore(o: &TargetOpts) -> Result<(), RunError> {
    let partial = format!("{}{SUFFIX}", o.path);
    let record = o.restart.file_for(&o.path);
    trusted(&partial, "partial copy")?;
    let missing = matches!(std::fs::symlink_metadata(&o.path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let ours = |p: &str| {
        std::fs::symlink_metadata(p).is_ok_and(|m| iolab_core::trust::own_file(&m).is_ok())
    };
    // A record that is not ours is refused with its reason by the resume
    // (`resume::decide`), before anything is written.
    if !(missing && ours(&partial) && ours(&record)) {
        return Ok(());
    }
    rename_noreplace(&partial, &o.path).map_err(|e| {
        RunError::Usage(UsageError::new(
            "restart",
            format!(
                "cannot move the partial copy {partial} back to {}: {e}",
                o.path
            ),
        ))
    })?;
    RESTORED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(o.path.clone());
    Ok(())
}

/// Refuses `path` (bad usage) when something stands there that this
/// user's earlier run cannot have left: see [`iolab_core::trust::own_file`].
fn trusted(path: &str, what: &str) -> Result<(), RunError> {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    iolab_core::trust::own_file(&m).map_err(|why| {
        RunError::Usage(UsageError::new(
            "restart",
            format!("the {what} {path} is not taken: {why}"),
        ))
    })
}

/// After a run that failed before its targets ran: every partial copy
/// [`restore`] moved back goes to its `.partial` name again.
pub fn undo_restores() {
    let paths = std::mem::take(&mut *RESTORED.lock().unwrap_or_else(|p| p.into_inner()));
    for p in paths {
        let _ = rename_noreplace(&p, &format!("{p}{SUFFIX}"));
    }
}

/// After a failed run: moves `path` to `path.partial` (never over an
/// existing file); the note says where it is, and how much of it the
/// restart record `record` says is written.
pub fn set_aside(index: usize, path: &str, record: &str) -> String {
    let partial = format!("{path}{SUFFIX}");
    let recorded = format!(" beside {}", recorded(record));
    match rename_noreplace(path, &partial) {
        Ok(()) => format!(
            "target {index} ({path}): the partial copy is kept as {partial}{recorded}; run the same copy again (-restart, xddcp -a) to resume it"
        ),
        Err(e) => format!(
            "target {index} ({path}): the partial copy is kept (it could not be renamed to {partial}: {e}){recorded}; run the copy again with -restart to finish it"
        ),
    }
}

/// "its restart record NAME, which says its first B of T bytes are
/// written": what a kept partial copy's record promises, for the note
/// that says it is kept (xddcp reads the figure).
pub fn recorded(record: &str) -> String {
    match crate::record::restart::Record::load(Path::new(record)) {
        Ok(r) => format!(
            "its restart record {record}, which says its first {} of {} bytes are written",
            r.offset, r.total
        ),
        Err(e) => format!("its restart record, which cannot be read ({e})"),
    }
}

/// rename(2) that fails instead of replacing `to`.
fn rename_noreplace(from: &str, to: &str) -> std::io::Result<()> {
    let c = |s: &str| {
        CString::new(s).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both are valid NUL-terminated paths for the duration of the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
