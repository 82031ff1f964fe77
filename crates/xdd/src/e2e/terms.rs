//! The terms each side of a copy puts in the handshake, and the
//! destination's judgement of the source's terms against its own: the
//! rules of guide section 10.5, plus what iolab adds (passes, start
//! offset, the QThread on each port, the resume offset). A broken rule
//! is one message, which the handshake shows on both sides.

use super::opts::Role;
use crate::parse::values::Op;
use crate::plan::TargetPlan;
use crate::record::restart::SourceId;
use serde::{Deserialize, Serialize};

/// Version of the end-to-end data protocol (frames and their meaning;
/// 2: the source states its file's identity, the resume's record says
/// the one it copied).
pub const E2E_PROTOCOL: u32 = 2;

/// The restart record a destination resumes from, as the handshake
/// carries it to be judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeFrom {
    /// The restart file.
    pub file: String,
    /// The source's name of its target, as recorded.
    pub source: String,
    /// That source as it was when the copy began.
    pub source_id: SourceId,
    /// Where the bytes written so far are (the destination, or its
    /// partial copy): what a user removes to start over.
    pub copy: String,
    /// The copy's samples ([`super::samples`]) at the offsets of the
    /// copy's range, those in the part it holds; empty when it could
    /// not be read. Kept by the destination for its judgement, not sent.
    #[serde(skip)]
    pub copy_samples: Vec<Option<u32>>,
}

/// One side's terms for one connection (QThread).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Terms {
    /// [`E2E_PROTOCOL`] of the sender.
    pub protocol: u32,
    /// Which side sent these terms.
    pub role: Role,
    /// Its -op.
    pub op: Op,
    /// The QThread this connection belongs to.
    pub qthread: u64,
    /// Its queue depth.
    pub queuedepth: u64,
    /// Bytes per request.
    pub reqsize_bytes: u64,
    /// Bytes per pass.
    pub bytes: u64,
    /// Passes.
    pub passes: u64,
    /// First byte of the copy in the target (-startoffset).
    pub start_bytes: u64,
    /// Bytes added to the start for every pass after the first
    /// (-passoffset).
    pub pass_offset_bytes: u64,
    /// The destination list, normalised (`host:port,n`).
    pub destinations: Vec<String>,
    /// The target as this side names it.
    pub path: String,
    /// `-restart offset` given on this side.
    pub restart_offset: Option<u64>,
    /// Any `-restart` given on this side (a source then follows the
    /// destination's resume offset).
    pub restart: bool,
    /// Destination only: the byte the copy resumes at.
    pub resume: u64,
    /// Destination only: the pass `resume` is in (1 from a peer that
    /// does not say).
    #[serde(default = "first_pass")]
    pub resume_pass: u64,
    /// Destination only: the restart record the resume offset came
    /// from, with the source it was recorded for.
    pub resume_from: Option<ResumeFrom>,
    /// Source only: its file's identity now (None when it could not be
    /// looked at), compared with the record's on a resume.
    #[serde(default)]
    pub source_id: Option<SourceId>,
    /// Source only, on a block device with `-restart`: the CRC-32C of
    /// the blocks [`super::samples::offsets`] names, which its identity
    /// cannot vouch for (a device node's times do not move when the
    /// device is written another way than through it).
    #[serde(default)]
    pub source_samples: Option<Vec<u32>>,
    /// This side streams live figures and links for them (see
    /// [`super::link`]); false from a peer that does not say.
    #[serde(default)]
    pub live: bool,
    /// This connection is the live link, not a QThread's.
    #[serde(default)]
    pub link: bool,
}

impl Terms {
    /// This side's terms for QThread `q` of `plan`.
    pub fn of(plan: &TargetPlan, passes: u64, q: u64) -> Terms {
        let t = &plan.opts;
        Terms {
            protocol: E2E_PROTOCOL,
            role: t.e2e.role().unwrap_or(Role::Source),
            op: t.op,
            qthread: q,
            queuedepth: t.queuedepth,
            reqsize_bytes: plan.xfer_bytes,
            bytes: plan.planned_bytes(),
            passes,
            start_bytes: start_bytes(plan),
            pass_offset_bytes: t.passoffset.saturating_mul(t.blocksize),
            destinations: t.e2e.describe_destinations(),
            path: t.path.clone(),
            restart_offset: t.restart.offset,
            restart: t.restart.any(),
            resume: start_bytes(plan),
            resume_pass: 1,
            resume_from: None,
            source_id: None,
            source_samples: None,
            live: false,
            link: false,
        }
    }
}

fn first_pass() -> u64 {
    1
}

/// The byte where a target's copy starts (-startoffset, in bytes).
pub fn start_bytes(plan: &TargetPlan) -> u64 {
    plan.seek.pass(1).offset(0)
}

fn differ(what: &'static str, s: impl std::fmt::Display, d: impl std::fmt::Display) -> TermsError {
    TermsError::Differ {
        what,
        src: s.to_string(),
        dst: d.to_string(),
    }
}

/// Why a destination refuses a source's terms; the message is what
/// both sides print.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermsError {
    /// Two versions of the protocol.
    #[error("end-to-end protocol {src} (source) and {dst} (destination) differ: use the same iolab on both sides")]
    Protocol {
        /// The source's.
        src: u32,
        /// The destination's.
        dst: u32,
    },
    /// The connecting side is not a source.
    #[error("the connecting side is not a source: give -e2e issource on the sending side")]
    NotASource,
    /// The source does not read.
    #[error("the source must read (guide 10.5): give it -op read, not -op {0}")]
    SourceOp(&'static str),
    /// The destination does not write.
    #[error("the destination must write (guide 10.5): give it -op write, not -op {0}")]
    DestinationOp(&'static str),
    /// A figure both sides must share differs.
    #[error("the two sides must have the same {what} (guide 10.5): the source has {src}, the destination {dst}")]
    Differ {
        /// The figure.
        what: &'static str,
        /// The source's value.
        src: String,
        /// The destination's value.
        dst: String,
    },
    /// A QThread's port reached by another QThread.
    #[error("the port of destination QThread {dst} was reached by source QThread {src}: the port ranges differ")]
    QThread {
        /// The source's QThread.
        src: u64,
        /// The destination's QThread.
        dst: u64,
    },
    /// The restart file is of another copy, or the sides resume apart.
    #[error("{0}")]
    Resume(String),
}

/// The destination's verdict on the source's terms `s`, given its own
/// terms `d`, on the port of QThread `q`. The message is what both
/// sides print.
pub fn judge(s: &Terms, d: &Terms) -> Result<(), TermsError> {
    if s.protocol != d.protocol {
        return Err(TermsError::Protocol {
            src: s.protocol,
            dst: d.protocol,
        });
    }
    if s.role != Role::Source {
        return Err(TermsError::NotASource);
    }
    if s.op != Op::Read {
        return Err(TermsError::SourceOp(op_name(s.op)));
    }
    if d.op != Op::Write {
        return Err(TermsError::DestinationOp(op_name(d.op)));
    }
    same(s, d)?;
    if s.qthread != d.qthread {
        return Err(TermsError::QThread {
            src: s.qthread,
            dst: d.qthread,
        });
    }
    resume(s, d).map_err(TermsError::Resume)
}

/// The figures both sides must share.
fn same(s: &Terms, d: &Terms) -> Result<(), TermsError> {
    if s.queuedepth != d.queuedepth {
        return Err(differ(
            "queue depth (-queuedepth or the ports of -e2e destination)",
            s.queuedepth,
            d.queuedepth,
        ));
    }
    if s.reqsize_bytes != d.reqsize_bytes {
        return Err(differ(
            "request size",
            format!("{} bytes", s.reqsize_bytes),
            format!("{} bytes", d.reqsize_bytes),
        ));
    }
    if s.bytes != d.bytes {
        return Err(differ(
            "amount to copy",
            format!("{} bytes", s.bytes),
            format!("{} bytes", d.bytes),
        ));
    }
    if s.destinations != d.destinations {
        return Err(differ(
            "destination list (-e2e destination)",
            s.destinations.join(" "),
            d.destinations.join(" "),
        ));
    }
    if s.passes != d.passes {
        return Err(differ("number of passes", s.passes, d.passes));
    }
    if s.pass_offset_bytes != d.pass_offset_bytes {
        return Err(differ(
            "-passoffset",
            format!("{} bytes", s.pass_offset_bytes),
            format!("{} bytes", d.pass_offset_bytes),
        ));
    }
    if s.start_bytes != d.start_bytes {
        return Err(differ(
            "start offset",
            format!("byte {}", s.start_bytes),
            format!("byte {}", d.start_bytes),
        ));
    }
    Ok(())
}

/// Where the copy resumes: the destination decided (`d.resume`); a
/// source that gave an offset must agree, and a source without -restart
/// may only start from the beginning.
fn resume(s: &Terms, d: &Terms) -> Result<(), String> {
    if let Some(r) = &d.resume_from {
        if r.source != s.path {
            return Err(format!(
                "the restart file {} records a copy of {}, but the source sends {}; remove the restart file to start over",
                r.file, r.source, s.path
            ));
        }
        // A record at the copy's start vouches for no byte: nothing old
        // to join new bytes to.
        if d.resume > d.start_bytes || d.resume_pass > 1 {
            unchanged(s, r)?;
            same_samples(s, r)?;
        }
    }
    match s.restart_offset {
        Some(o) if round(o, d) != d.resume || d.resume_pass > 1 => Err(format!(
            "the two sides resume at different bytes: the source has -restart offset {o}, the destination resumes at {}",
            at(d)
        )),
        None if !s.restart && (d.resume > d.start_bytes || d.resume_pass > 1) => Err(format!(
            "the destination resumes the copy at {}{}; give the source -restart enable (or -restart offset {}) too",
            at(d),
            d.resume_from
                .as_ref()
                .map(|r| format!(" (restart file {})", r.file))
                .unwrap_or_default(),
            d.resume
        )),
        _ => Ok(()),
    }
}

/// Refuses a source that is not, or no longer, the file the record
/// `r` was made from: the bytes written so far came from that file.
fn unchanged(s: &Terms, r: &ResumeFrom) -> Result<(), String> {
    let what = match &s.source_id {
        Some(now) => match r.source_id.changes(now) {
            c if c.is_empty() => return Ok(()),
            c => format!("what differs from the record: {}", c.join(", ")),
        },
        None => "the source side could not look at it to tell".into(),
    };
    Err(changed(s, r, &what))
}

/// Refuses a block-device source whose sampled blocks differ from the
/// copy's: its identity need not move with its contents.
fn same_samples(s: &Terms, r: &ResumeFrom) -> Result<(), String> {
    let Some(sums) = &s.source_samples else {
        return Ok(());
    };
    let offsets = super::samples::offsets(s.start_bytes, s.bytes);
    match super::samples::first_difference(&offsets, sums, &r.copy_samples) {
        None => Ok(()),
        Some(o) => Err(changed(
            s,
            r,
            &format!(
                "its {} bytes at byte {o} differ from the copy's",
                super::samples::BYTES
            ),
        )),
    }
}

/// The refusal of a resume from a changed source.
fn changed(s: &Terms, r: &ResumeFrom, what: &str) -> String {
    format!(
        "the source {} changed since the restart file {} was written ({what}): the copy so far, {}, holds bytes of the source as it was and cannot be continued; remove {} and {} to start over",
        s.path, r.file, r.copy, r.file, r.copy
    )
}

/// Where the destination resumes, as the messages say it.
fn at(d: &Terms) -> String {
    match d.resume_pass {
        1 => format!("byte {}", d.resume),
        p => format!("byte {} of pass {p}", d.resume),
    }
}

/// A resume offset rounded down to a request boundary of the copy.
pub fn round(offset: u64, t: &Terms) -> u64 {
    let end = t.start_bytes + t.bytes;
    if offset <= t.start_bytes {
        return t.start_bytes;
    }
    if offset >= end {
        return end;
    }
    let x = t.reqsize_bytes.max(1);
    t.start_bytes + (offset - t.start_bytes) / x * x
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Noop => "noop",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Terms, Terms) {
        let s = Terms {
            protocol: E2E_PROTOCOL,
            role: Role::Source,
            op: Op::Read,
            qthread: 0,
            queuedepth: 2,
            reqsize_bytes: 4096,
            bytes: 1 << 20,
            passes: 1,
            start_bytes: 0,
            pass_offset_bytes: 0,
            destinations: vec!["h:1,2".into()],
            path: "/src".into(),
            restart_offset: None,
            restart: false,
            resume: 0,
            resume_pass: 1,
            resume_from: None,
            source_id: Some(SourceId {
                size: 1 << 20,
                mtime_ns: 5,
                ctime_ns: 6,
                ino: 7,
            }),
            source_samples: None,
            live: false,
            link: false,
        };
        let d = Terms {
            role: Role::Destination,
            op: Op::Write,
            path: "/dst".into(),
            ..s.clone()
        };
        (s, d)
    }

    #[test]
    fn every_rule_has_its_message() {
        let (s, d) = pair();
        judge(&s, &d).unwrap();
        type Change = Box<dyn Fn(&mut Terms, &mut Terms)>;
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|s, _| s.op = Op::Write), "the source must read"),
            (
                Box::new(|_, d| d.op = Op::Read),
                "the destination must write",
            ),
            (Box::new(|s, _| s.queuedepth = 3), "same queue depth"),
            (Box::new(|s, _| s.reqsize_bytes = 8192), "same request size"),
            (Box::new(|s, _| s.bytes = 5), "same amount"),
            (
                Box::new(|s, _| s.destinations = vec!["x".into()]),
                "same destination list",
            ),
            (Box::new(|s, _| s.passes = 2), "number of passes"),
            (
                Box::new(|s, _| s.pass_offset_bytes = 512),
                "same -passoffset",
            ),
            (Box::new(|s, _| s.start_bytes = 512), "same start offset"),
            (Box::new(|s, _| s.qthread = 1), "port ranges differ"),
            (Box::new(|_, d| d.resume = 8192), "give the source -restart"),
            (
                Box::new(|s, d| {
                    s.restart_offset = Some(4096);
                    d.resume = 8192
                }),
                "resume at different bytes",
            ),
        ];
        for (f, want) in cases {
            let (mut s, mut d) = pair();
            f(&mut s, &mut d);
            let e = judge(&s, &d).unwrap_err().to_string();
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }

    /// A resume from a record is judged against the source's identity
    /// now: any field that moved refuses it, naming what; a record at
    /// the copy's start (nothing written) is taken whatever the source.
    #[test]
    fn a_resume_from_a_changed_source_is_refused() {
        let (mut s, mut d) = pair();
        s.restart = true;
        d.resume = 8192;
        let recorded = s.source_id.unwrap();
        d.resume_from = Some(ResumeFrom {
            file: "/dst.restart".into(),
            source: "/src".into(),
            source_id: recorded,
            copy: "/dst.partial".into(),
            copy_samples: Vec::new(),
        });
        judge(&s, &d).unwrap();
        type Change = fn(&mut SourceId);
        let changes: [(Change, &str); 4] = [
            (|i| i.size += 1, "size (was 1048576 bytes, now 1048577)"),
            (|i| i.mtime_ns += 1, "modification time"),
            (|i| i.ctime_ns += 1, "status change time (ctime)"),
            (|i| i.ino += 1, "inode (another file has its name)"),
        ];
        for (change, what) in changes {
            let mut now = recorded;
            change(&mut now);
            s.source_id = Some(now);
            let e = judge(&s, &d).unwrap_err().to_string();
            assert!(
                e.contains(&format!("what differs from the record: {what})"))
                    && e.contains("the source /src changed since the restart file /dst.restart")
                    && e.contains("remove /dst.restart and /dst.partial to start over"),
                "{e}"
            );
            d.resume = 0;
            judge(&s, &d).unwrap();
            d.resume = 8192;
        }
        s.source_id = None;
        let e = judge(&s, &d).unwrap_err().to_string();
        assert!(e.contains("could not look at it"), "{e}");
    }

    /// A block-device source's samples are compared with the copy's in
    /// the part the copy holds: one that differs there refuses the
    /// resume, naming its byte; one past it, or a copy that could not be
    /// sampled, does not.
    #[test]
    fn a_resume_from_a_device_whose_sampled_blocks_changed_is_refused() {
        let (mut s, mut d) = pair();
        s.restart = true;
        d.resume = 8192;
        let offsets = super::super::samples::offsets(s.start_bytes, s.bytes);
        let sums: Vec<u32> = (0..offsets.len() as u32).collect();
        let mut copy: Vec<Option<u32>> = sums
            .iter()
            .zip(&offsets)
            .map(|(c, o)| (*o + 4096 <= 8192).then_some(*c))
            .collect();
        s.source_samples = Some(sums);
        d.resume_from = Some(ResumeFrom {
            file: "/dst.restart".into(),
            source: "/src".into(),
            source_id: s.source_id.unwrap(),
            copy: "/dst".into(),
            copy_samples: copy.clone(),
        });
        judge(&s, &d).unwrap();
        copy[1] = Some(99);
        d.resume_from.as_mut().unwrap().copy_samples = copy;
        let e = judge(&s, &d).unwrap_err().to_string();
        assert!(
            e.contains("the source /src changed since the restart file /dst.restart was written (its 4096 bytes at byte 4096 differ from the copy's)"),
            "{e}"
        );
        d.resume_from.as_mut().unwrap().copy_samples = Vec::new();
        judge(&s, &d).unwrap();
    }

    #[test]
    fn resume_offsets_round_down_to_a_request() {
        let (_, d) = pair();
        assert_eq!(round(5000, &d), 4096);
        assert_eq!(round(u64::MAX, &d), 1 << 20);
        let mut s = pair().0;
        s.restart = true;
        s.restart_offset = Some(5000);
        let d = Terms {
            resume: 4096,
            ..pair().1
        };
        judge(&s, &d).unwrap();
    }
}
