//! What one side can check of an end-to-end target on its own, before
//! anything is opened: a role, a destination list that maps every
//! QThread to a port, an amount, a sequential copy, a readable key. The
//! rules that compare the two sides (guide 10.5) are judged by the
//! destination in the handshake instead ([`super::terms`]), so that both
//! sides stop with the same message.

use crate::error::UsageError;
use crate::parse::config::{Config, TargetOpts};
use crate::parse::values::{EngineKind, SeekPattern};

fn err(opt: &str, i: usize, msg: impl std::fmt::Display) -> UsageError {
    UsageError::new(opt, format!("target {i}: {msg}"))
}

/// Checks every end-to-end target, and that no two targets share a port.
pub fn validate(c: &Config) -> Result<(), UsageError> {
    let mut used: Vec<(String, u16, usize)> = Vec::new();
    for (i, t) in c.targets.iter().enumerate() {
        if t.restart.any() && !t.e2e.any() {
            return Err(err(
                "restart",
                i,
                "-restart applies to end-to-end copies; add -e2e issource or -e2e isdestination",
            ));
        }
        if !t.e2e.any() {
            continue;
        }
        target(c, i, t)?;
        for (host, port) in t.e2e.endpoints(t.queuedepth).unwrap_or_default() {
            if let Some((_, _, j)) = used.iter().find(|(h, p, _)| *h == host && *p == port) {
                return Err(err(
                    "endtoend",
                    i,
                    format!("port {port} of {host} is also used by target {j}; give each target its own -e2e port range"),
                ));
            }
            used.push((host, port, i));
        }
    }
    Ok(())
}

fn target(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let e = &t.e2e;
    if e.issource && e.isdestination {
        return Err(err(
            "endtoend",
            i,
            "give -e2e issource or -e2e isdestination, not both",
        ));
    }
    if e.role().is_none() {
        return Err(err(
            "endtoend",
            i,
            "say which side this is: -e2e issource (reads and sends) or -e2e isdestination (receives and writes)",
        ));
    }
    e.endpoints(t.queuedepth)
        .map_err(|m| err("endtoend", i, m.to_string()))?;
    if e.noclobber && e.issource {
        return Err(err(
            "endtoend",
            i,
            "noclobber applies to the destination side",
        ));
    }
    noclobber(i, t)?;
    if t.engine == EngineKind::Uring {
        return Err(err(
            "engine",
            i,
            "io_uring does not drive end-to-end copies; drop -engine uring",
        ));
    }
    if t.numreqs.is_none() && t.bytes.is_none() {
        return Err(err(
            "endtoend",
            i,
            "a copy needs an amount: -numreqs or -bytes/-kbytes/-mbytes/-gbytes (the same on both sides)",
        ));
    }
    if t.rwratio.is_some() {
        return Err(err(
            "rwratio",
            i,
            "an end-to-end side only reads (source) or only writes (destination); drop -rwratio",
        ));
    }
    let s = &t.seek;
    if s.pattern != SeekPattern::Sequential || s.load.is_some() || t.randomize {
        return Err(err(
            "seek",
            i,
            "an end-to-end copy moves the target in order; drop -seek and -randomize",
        ));
    }
    key(i, t)?;
    restart(c, i, t)
}

/// A `noclobber` destination builds its copy under a temporary name
/// and renames it once complete ([`super::partial`]): the name must be
/// beside the destination (rename(2) stays in one directory), and the
/// options that make, remake or delete the target's file do not fit.
fn noclobber(i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let e = &t.e2e;
    if let Some(p) = &e.partial {
        if !e.noclobber {
            return Err(err(
                "endtoend",
                i,
                "partial NAME names where a noclobber destination builds its copy; add -e2e noclobber",
            ));
        }
        let dir = |s: &str| std::path::Path::new(s).parent().map(|d| d.to_path_buf());
        if *p == t.path || dir(p) != dir(&t.path) {
            return Err(err(
                "endtoend",
                i,
                format!("partial {p}: give another name in the directory of {} (it is renamed to it once the copy is complete)", t.path),
            ));
        }
    }
    if e.noclobber && (t.createnewfiles || t.recreatefiles || t.reopen || t.deletefile) {
        return Err(err(
            "endtoend",
            i,
            "noclobber builds the copy under a temporary name and renames it once complete; drop -createnewfiles, -recreatefiles, -reopen and -deletefile",
        ));
    }
    Ok(())
}

/// The key file, when one is named (option or environment), must be
/// usable before anything starts.
fn key(i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let named = t.e2e.key.as_deref().map(std::path::Path::new);
    iolab_net::SharedKey::resolve(named)
        .map(drop)
        .map_err(|e| err("endtoend", i, format!("key: {e}")))
}

fn restart(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let r = &t.restart;
    if !r.any() {
        return Ok(());
    }
    // A resume runs the passes left, the first from its offset: each
    // pass must copy the same bytes, which -passoffset would move.
    if c.global.passes > 1 && t.passoffset > 0 {
        return Err(err(
            "restart",
            i,
            "a restartable copy of several passes copies the same bytes each pass; drop -passoffset or -restart",
        ));
    }
    if t.createnewfiles || t.recreatefiles || t.deletefile {
        return Err(err(
            "restart",
            i,
            "-createnewfiles, -recreatefiles and -deletefile would lose what a restart resumes",
        ));
    }
    let total = total_bytes(t);
    match r.offset {
        Some(o) if o > total => Err(err(
            "restart",
            i,
            format!("offset {o} is past the end of the copy ({total} bytes)"),
        )),
        _ => Ok(()),
    }
}

/// Bytes one pass of the target moves (-numreqs wins over -bytes).
pub fn total_bytes(t: &TargetOpts) -> u64 {
    match (t.numreqs, t.bytes) {
        (Some(n), _) => n.saturating_mul(t.xfer_bytes()),
        (None, Some(b)) => b,
        (None, None) => 0,
    }
}
