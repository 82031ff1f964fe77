//! Where a destination's copy starts: `-restart offset N`, else the
//! record in its restart file, else the beginning. Decided before any
//! port is bound, with the checks that keep a resume honest: the record
//! is for this destination and this size, the file really holds the
//! bytes the record promises, and (`-e2e noclobber`) an existing file is
//! only ever continued, never overwritten.

use super::terms::{self, Terms};
use crate::error::{RunError, UsageError};
use crate::parse::config::GlobalOpts;
use crate::plan::TargetPlan;
use crate::record::restart::Record;
use std::path::{Path, PathBuf};

/// A destination's decision.
#[derive(Debug, Clone)]
pub struct Resume {
    /// The byte the copy resumes at (a request boundary).
    pub offset: u64,
    /// The pass it resumes in, from 1 (a copy of several passes).
    pub pass: u64,
    /// The restart file it came from and the source recorded there.
    pub from: Option<(String, String)>,
    /// The restart file this run keeps, when it keeps one.
    pub file: Option<PathBuf>,
}

fn bad(msg: String) -> RunError {
    RunError::Usage(UsageError::new("restart", msg))
}

/// Decides where destination target `t` resumes; `g` gives its backend
/// options (`--s3.*`), so the destination asked is the one the copy
/// writes.
pub fn decide(t: &TargetPlan, g: &GlobalOpts) -> Result<Resume, RunError> {
    let o = &t.opts;
    let terms = Terms::of(t, 1, 0);
    let start = terms::start_bytes(t);
    let end = start + t.planned_bytes();
    let file = o.restart.monitored().then(|| o.restart.file_for(&o.path));
    let record = match &file {
        Some(f) if Path::new(f).exists() => Some(load(f, &o.path, end, g.passes)?),
        _ => None,
    };
    let wanted = o.restart.offset.or(record.as_ref().map(|r| r.offset));
    let offset = terms::round(wanted.unwrap_or(start), &terms);
    // `-restart offset` is a byte of the first pass.
    let pass = match o.restart.offset {
        Some(_) => 1,
        None => record.as_ref().map_or(1, |r| r.pass),
    };
    // A later pass rewrites a copy the first pass completed.
    let needed = if pass > 1 { end } else { offset };
    let size = existing_size(t, g);
    if needed > start && !t.caps.discards && size.unwrap_or(0) < needed {
        return Err(bad(format!(
            "the copy would resume at byte {offset}{}, but {} {}; remove the restart file{} to start over",
            if pass > 1 { format!(" of pass {pass}") } else { String::new() },
            o.path,
            size.map_or("does not exist".to_string(), |s| format!("has only {s} bytes")),
            file.as_deref().map(|f| format!(" {f}")).unwrap_or_default()
        )));
    }
    if o.e2e.noclobber && size.is_some() && wanted.is_none() && !t.caps.discards {
        return Err(RunError::Usage(UsageError::new("endtoend", format!(
            "{} exists and iolab does not overwrite it (-e2e noclobber): remove it, or resume it with -restart",
            o.path
        ))));
    }
    Ok(Resume {
        offset,
        pass,
        from: record.map(|r| (file.clone().unwrap_or_default(), r.source)),
        file: file.map(PathBuf::from),
    })
}

/// Reads a restart record and checks it is for this destination, this
/// amount and no more passes than this copy has.
fn load(f: &str, dest: &str, end: u64, passes: u64) -> Result<Record, RunError> {
    let r = Record::load(Path::new(f)).map_err(|e| bad(e.to_string()))?;
    if r.destination != dest {
        return Err(bad(format!(
            "restart file {f} is for {}, not {dest}; name another with -restart file",
            r.destination
        )));
    }
    if r.pass > passes {
        return Err(bad(format!(
            "restart file {f} records pass {} of the copy, this one has {passes} (-passes); give the same -passes, or remove the file to start over",
            r.pass
        )));
    }
    if r.total != end {
        return Err(bad(format!(
            "restart file {f} records a copy ending at byte {}, this one ends at {end}; give the same amount, or remove the file to start over",
            r.total
        )));
    }
    Ok(r)
}

/// Size of the destination file when it exists (None when it does not;
/// a block device counts as existing and large enough).
fn existing_size(t: &TargetPlan, g: &GlobalOpts) -> Option<u64> {
    let be = crate::plan::target_backend(&t.opts, g).ok()?;
    let p = std::ffi::CString::new(t.opts.path.as_bytes()).ok()?;
    let st = be.stat(&p).ok()?;
    if st.is_block_device {
        return Some(u64::MAX);
    }
    Some(st.size)
}
