//! Where a destination's copy starts: `-restart offset N`, else the
//! record in its restart file, else the beginning. Decided before any
//! port is bound, with the checks that keep a resume honest: the record
//! is for this destination and this size, the file really holds the
//! bytes the record promises, and (`-e2e noclobber`) an existing file is
//! only ever continued, never overwritten.

use super::terms::{self, ResumeFrom, Terms};
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
    /// The restart record it came from, for the source to be judged
    /// against in the handshake.
    pub from: Option<ResumeFrom>,
    /// The restart file this run keeps, when it keeps one.
    pub file: Option<PathBuf>,
    /// The temporary name the copy is built under, renamed to the
    /// destination once complete ([`super::partial`]); None when the
    /// destination is written at its own name.
    pub work: Option<String>,
}

fn bad(msg: String) -> RunError {
    RunError::Usage(UsageError::new("restart", msg))
}

/// Decides where destination target `t` resumes; `g` gives its backend
/// options (`--s3.*`), so the destination asked is the one the copy
/// writes. `work` is the temporary name it builds a new copy under
/// ([`super::partial::work_path`]).
pub fn decide(t: &TargetPlan, g: &GlobalOpts, work: Option<&str>) -> Result<Resume, RunError> {
    let o = &t.opts;
    let terms = Terms::of(t, 1, 0);
    let start = terms::start_bytes(t);
    let end = start + t.planned_bytes();
    let file = o.restart.monitored().then(|| o.restart.file_for(&o.path));
    // The partial copy first: one planted by someone else is named as
    // such before its record is looked at.
    let there = work.map(super::partial::present).transpose()?;
    let record = match &file {
        Some(f) if record_present(f)? => Some(load(f, &o.path, end, g.passes)?),
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
    let (written, size) = match (work, there) {
        (Some(w), Some(true)) if wanted.is_none() => return Err(super::partial::unresumable(o, w)),
        (Some(w), Some(true)) => (w.to_string(), std::fs::metadata(w).map(|m| m.len()).ok()),
        (Some(w), _) => (w.to_string(), None),
        (None, _) => (o.path.clone(), existing_size(t, g)),
    };
    if needed > start && !t.caps.discards && size.unwrap_or(0) < needed {
        let at = Short {
            offset,
            pass,
            written: &written,
            size,
        };
        return Err(at.refusal(o, file.as_deref()));
    }
    let device = size == Some(u64::MAX);
    if o.e2e.noclobber
        && work.is_none()
        && size.is_some()
        && wanted.is_none()
        && !t.caps.discards
        && !device
    {
        return Err(RunError::Usage(UsageError::new(
            "endtoend",
            exists(o, file.as_deref()),
        )));
    }
    Ok(Resume {
        offset,
        pass,
        from: record.map(|r| ResumeFrom {
            file: file.clone().unwrap_or_default(),
            source: r.source,
            source_id: r.source_id,
            copy_samples: copy_samples(t, &written, needed),
            copy: written,
        }),
        file: file.map(PathBuf::from),
        work: work.map(str::to_string),
    })
}

/// The samples of the copy so far ([`super::samples`]), in `written`:
/// its blocks below `needed` that a block-device source's samples are
/// compared with. None when nothing was written, when the destination
/// keeps nothing (`null`) or is not this machine's files (an object
/// store), or when it cannot be read: the source's identity is all that
/// is compared then.
fn copy_samples(t: &TargetPlan, written: &str, needed: u64) -> Vec<Option<u32>> {
    let start = terms::start_bytes(t);
    if needed <= start || !t.caps.local || t.caps.discards {
        return Vec::new();
    }
    let offsets = super::samples::offsets(start, t.planned_bytes());
    super::samples::take(Path::new(written), &offsets, needed).unwrap_or_default()
}

/// A resume offset past what the copy's file holds.
struct Short<'a> {
    offset: u64,
    pass: u64,
    /// The file the copy so far is in.
    written: &'a str,
    /// Its size; None when it does not exist.
    size: Option<u64>,
}

impl Short<'_> {
    /// The refusal, with advice that fits where the offset came from:
    /// `-restart offset` (no record is to blame), or the record `file`.
    fn refusal(&self, o: &crate::parse::config::TargetOpts, file: Option<&str>) -> RunError {
        let (offset, written) = (self.offset, self.written);
        let held = self.size.map_or("does not exist".to_string(), |s| {
            format!("has only {s} bytes")
        });
        bad(match o.restart.offset {
            Some(n) => format!(
                "-restart offset {n} resumes the copy at byte {offset}, but {written} {held}: give an offset it holds, or leave -restart offset out to start over"
            ),
            None => format!(
                "the copy would resume at byte {offset}{}, but {written} {held}; remove the restart file{} to start over",
                match self.pass {
                    1 => String::new(),
                    p => format!(" of pass {p}"),
                },
                file.map(|f| format!(" {f}")).unwrap_or_default()
            ),
        })
    }
}

/// Why a `noclobber` destination that exists, with no record of this
/// copy, is refused, and what the user can do: resume it only when a
/// restart record is there to resume from.
fn exists(o: &crate::parse::config::TargetOpts, file: Option<&str>) -> String {
    let head = format!(
        "{} exists and iolab does not overwrite it (-e2e noclobber)",
        o.path
    );
    let record = o.restart.file_for(&o.path);
    match file {
        Some(f) => format!(
            "{head}, and no restart record ({f}) says this copy made it: remove it, or copy to another name"
        ),
        None if Path::new(&record).is_file() => format!(
            "{head}: remove it, or resume it with -restart (xddcp: -a), from its restart record {record}"
        ),
        None => format!("{head}: remove it, or copy to another name"),
    }
}

/// Whether restart file `f` is there: a regular file is; a link at its
/// name (or at the name its replacement is written to, `f.tmp`) is
/// refused without being opened, since a planted link would have the
/// copy read someone else's file as its record, or replace it.
fn record_present(f: &str) -> Result<bool, RunError> {
    let tmp = format!("{f}.tmp");
    if std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad(format!(
            "{tmp} (where the restart file {f} is rewritten) is a symbolic link, which iolab never follows: remove it"
        )));
    }
    match std::fs::symlink_metadata(f) {
        Ok(m) if m.file_type().is_symlink() => Err(bad(format!(
            "restart file {f} is a symbolic link, which iolab never reads or replaces: remove it (or name another file with -restart file)"
        ))),
        Ok(m) if !m.is_file() => Err(bad(format!(
            "restart file {f} is not a regular file: remove it, or name another with -restart file"
        ))),
        // In a shared directory anyone may plant a record: one this user
        // did not write would decide where the copy resumes.
        Ok(m) => match iolab_core::trust::own_file(&m) {
            Ok(()) => Ok(true),
            Err(why) => Err(bad(format!("restart file {f} is not taken: {why}"))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(bad(format!("restart file {f}: {e}"))),
    }
}

/// Refuses, before any port is bound (so before the source sends a
/// byte), a destination the copy could not make or must not write
/// through: a name whose directory is missing or not writable, a
/// directory, a link that leads nowhere, with `-e2e noclobber`
/// (xddcp's) any link at the name, a block device that looks in use
/// (a file system on it, mounted, held) unless `-force`, and a
/// character device with a restart file (nothing of it can be resumed)
/// or, under `noclobber`, with direct I/O (as XDD's xddcp). Files of this
/// machine only; a `null` destination writes nothing.
pub fn check_destination(t: &TargetPlan, g: &GlobalOpts) -> Result<(), RunError> {
    if !t.caps.local || t.caps.discards {
        return Ok(());
    }
    let o = &t.opts;
    let path = Path::new(&o.path);
    let why = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            let leads = std::fs::metadata(path).is_ok();
            match (o.e2e.noclobber, leads) {
                (false, true) => return special(t, g),
                (_, false) => "is a symbolic link to nothing; the copy is never written through it: remove it, or name the file itself".to_string(),
                (true, true) => "is a symbolic link; the copy is never written through a link at its name (-e2e noclobber): remove it, or name the file itself".to_string(),
            }
        }
        Ok(m) if m.is_dir() => "is a directory: name a file in it".to_string(),
        Ok(_) => return special(t, g),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match creatable_in(t, g, path) {
            Ok(()) => return Ok(()),
            Err(why) => why,
        },
        Err(e) => e.to_string(),
    };
    Err(RunError::Usage(UsageError::new(
        "endtoend",
        format!("destination {}: {why}", o.path),
    )))
}

/// The checks of a destination that is a device (the name followed):
/// see [`check_destination`]. A block device is claimed and looked at
/// as the run will ([`iolab_backend::safety::claim_unused`]), then let
/// go: the run claims it again when it opens it, after the handshake.
fn special(t: &TargetPlan, g: &GlobalOpts) -> Result<(), RunError> {
    use std::os::unix::fs::FileTypeExt;
    let o = &t.opts;
    let Ok(kind) = std::fs::metadata(&o.path).map(|m| m.file_type()) else {
        return Ok(());
    };
    let refuse = |why: String| {
        Err(RunError::Usage(UsageError::new(
            "endtoend",
            format!("destination {}: {why}", o.path),
        )))
    };
    if kind.is_char_device() {
        if o.restart.monitored() {
            return refuse("is a character device, which a restart file cannot resume (nothing of what it was sent stays to be continued): drop -restart (xddcp: -a)".into());
        }
        if o.e2e.noclobber && o.dio {
            return refuse(
                "is a character device, which takes no direct I/O: drop -dio (xddcp: -d)".into(),
            );
        }
        return Ok(());
    }
    if !kind.is_block_device() || !o.writes() || g.force {
        return Ok(());
    }
    let be = crate::plan::target_backend(o, g).map_err(|e| RunError::Refused(e.to_string()))?;
    let c =
        iolab_backend::c_path(Path::new(&o.path)).map_err(|e| RunError::Refused(e.to_string()))?;
    let rdev = be.stat(&c).map(|st| st.rdev).unwrap_or(0);
    match iolab_backend::safety::claim_unused(be.as_ref(), &c, rdev) {
        Ok(claim) => {
            drop(claim);
            Ok(())
        }
        Err(why) => Err(RunError::Refused(format!(
            "target {} ({}): refusing to write to this block device because {why}; add -force to overwrite it",
            t.index, o.path
        ))),
    }
}

/// Whether a file can be made at `path` (which is not there): its
/// directory exists and this process may add to it, as the target's
/// backend answers (`can_write`).
fn creatable_in(t: &TargetPlan, g: &GlobalOpts, path: &Path) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "its directory {shown} does not exist: make it first"
        )),
        Err(e) => Err(format!("its directory {shown}: {e}")),
        Ok(m) if !m.is_dir() => Err(format!("{shown} is not a directory")),
        Ok(_) => {
            let be = crate::plan::target_backend(&t.opts, g).map_err(|e| e.to_string())?;
            let c = iolab_backend::c_path(dir).map_err(|e| e.to_string())?;
            match be.can_write(&c) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!(
                    "cannot make a file in {shown}: permission denied or a read-only file system"
                )),
                Err(e) => Err(format!("cannot make a file in {shown}: {e}")),
            }
        }
    }
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
/// a device counts as existing and large enough, u64::MAX: its size is
/// not its length, and a character device has none). Whether a block
/// device may be written at all is [`check_destination`]'s.
fn existing_size(t: &TargetPlan, g: &GlobalOpts) -> Option<u64> {
    let be = crate::plan::target_backend(&t.opts, g).ok()?;
    let p = std::ffi::CString::new(t.opts.path.as_bytes()).ok()?;
    let st = be.stat(&p).ok()?;
    if st.is_block_device || (!st.is_file && !st.is_dir && t.caps.local) {
        return Some(u64::MAX);
    }
    Some(st.size)
}
