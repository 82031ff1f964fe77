//! A copy that stops part way never leaves a file that looks finished,
//! even when its destination is killed (kill -9 leaves no chance to
//! clean up). A `noclobber` destination (what xddcp starts) that is to
//! make a new file builds it under a temporary name, `-e2e partial NAME`
//! or `DESTINATION.partial`, and renames it to its own name (never over
//! a file) only once every byte is written and the run completed. With a
//! restart file the partial copy stays under that name when the run
//! fails, beside the record `DESTINATION.restart`, and the next run of
//! the same copy resumes it there; without one it is removed. A
//! destination that is a device is written where it is, and one a
//! restart record says this copy made (an earlier build's) is continued
//! at its name. A manual copy without `noclobber` keeps XDD's behaviour:
//! it writes its file at its name.

use crate::error::{RunError, UsageError};
use crate::parse::config::TargetOpts;
use crate::plan::TargetPlan;
use std::ffi::CString;
use std::path::Path;

/// The suffix of a partial copy's default name.
pub const SUFFIX: &str = ".partial";

/// True for a destination that builds a new file under a temporary name:
/// `noclobber`, a file of this machine (renamed with rename(2)), not a
/// `null` target.
pub fn applies(t: &TargetPlan) -> bool {
    let o = &t.opts;
    o.e2e.role() == Some(super::opts::Role::Destination)
        && o.e2e.noclobber
        && t.caps.local
        && !t.caps.discards
}

/// The temporary name destination `o` builds a new copy under, when it
/// is one that does ([`applies`]), for the check made before the run
/// that no output or restart record is planned on it.
pub fn planned(o: &TargetOpts) -> Option<String> {
    let caps = crate::plan::target_capabilities(o);
    let builds = o.e2e.role() == Some(super::opts::Role::Destination) && o.e2e.noclobber;
    (builds && caps.local && !caps.discards).then(|| name(o))
}

/// The temporary name of destination `o`'s copy.
pub fn name(o: &TargetOpts) -> String {
    o.e2e
        .partial
        .clone()
        .unwrap_or_else(|| format!("{}{SUFFIX}", o.path))
}

/// Where destination `t` writes until its copy is complete: its
/// temporary name when it builds a new file there (nothing is at its
/// own name), None when it writes its own name (not `noclobber`, a
/// device, or a file a record says this copy made).
pub fn work_path(t: &TargetPlan) -> Option<String> {
    if !applies(t) {
        return None;
    }
    match std::fs::symlink_metadata(&t.opts.path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(name(&t.opts)),
        _ => None,
    }
}

fn usage(msg: String) -> RunError {
    RunError::Usage(UsageError::new("endtoend", msg))
}

/// Whether a partial copy stands at the temporary name `work`, checked
/// before anything else of a resume: only a regular file this user's
/// earlier run can have left is taken; anything else (a link, another
/// user's file, one others may write: in a shared directory anyone may
/// plant one) is refused, never adopted.
pub fn present(work: &str) -> Result<bool, RunError> {
    let m = match std::fs::symlink_metadata(work) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(usage(format!("the partial copy {work}: {e}"))),
        Ok(m) => m,
    };
    iolab_core::trust::own_file(&m).map_err(|why| {
        RunError::Usage(UsageError::new(
            "restart",
            format!("the partial copy {work} is not taken: {why}"),
        ))
    })?;
    Ok(true)
}

/// A partial copy at `work` that nothing says how much of is written (no
/// restart record, no `-restart offset`) cannot be continued: refused,
/// with what to do.
pub fn unresumable(o: &TargetOpts, work: &str) -> RunError {
    let record = o.restart.file_for(&o.path);
    let why = match o.restart.monitored() {
        true => format!("no restart record ({record}) says how much of it is written"),
        false => "without -restart nothing says how much of it is written".to_string(),
    };
    usage(format!(
        "{work} is there: a copy to {} that did not finish left it, and {why}: remove it to start over",
        o.path
    ))
}

/// After a complete copy: moves `work` to `dest`, never over a file that
/// appeared there meanwhile, and flushes the directory so the name
/// survives a crash.
pub fn put_in_place(work: &str, dest: &str) -> std::io::Result<()> {
    rename_noreplace(work, dest)?;
    let dir = Path::new(dest)
        .parent()
        .filter(|d| !d.as_os_str().is_empty());
    std::fs::File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
}

/// The note for a partial copy kept for a resume: where it is and how
/// much of it its record `record` says is written (xddcp reads it).
pub fn kept(index: usize, dest: &str, path: &str, record: &str) -> String {
    format!(
        "target {index} ({dest}): the partial copy is kept as {path} beside {}; run the same copy again (-restart, xddcp -a) to resume it",
        recorded(record)
    )
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
