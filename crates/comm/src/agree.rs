//! Before a run, the ranks agree that they were given the same options
//! and that every check passed on every one of them, so that a fault
//! found on one rank stops all of them before anything is made (rather
//! than leave the others waiting in a collective it never joins).
//!
//! Each rank checks on its own, calling no collective, then every rank
//! calls [`agree`] once: one gather of each rank's verdict and a digest
//! of its options, and, only when the digests differ, a second gather of
//! the options themselves to name the first that differs. Every rank gets
//! the same [`Verdict`].
//!
//! ```
//! use iolab_comm::agree::{agree, Ready, Verdict};
//! use iolab_comm::SingleProcess;
//! let options = vec!["items = 10".to_string()];
//! let ready = Ready { options: Some(&options), refusal: None };
//! assert_eq!(agree(&SingleProcess::new(), &ready), Verdict::Go);
//! ```

use crate::Transport;

/// What one rank brings to the agreement.
#[derive(Debug, Clone, Default)]
pub struct Ready<'a> {
    /// Its options as `name = value` lines in a fixed order (what is
    /// legitimately per rank left out), or `None` when it could not read
    /// them (its refusal says why).
    pub options: Option<&'a [String]>,
    /// The first check that failed on this rank.
    pub refusal: Option<Refusal>,
}

/// A check that failed on a rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The exit status every rank ends with (2: bad input, 1: a failure).
    pub status: u8,
    /// What the rank found, as the single-process run would say it
    /// (without the tool's name).
    pub message: String,
}

/// What the ranks agreed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Same options everywhere and no check failed: the run may start.
    Go,
    /// Rank `rank` was given other options than rank `reference` (the
    /// lowest rank that read its options; rank 0 unless it could not).
    Differ {
        /// The rank compared with.
        reference: usize,
        /// The first rank whose options differ from `reference`'s.
        rank: usize,
        /// That rank's host.
        host: String,
        /// The first line that differs, on `reference` (None: it has
        /// fewer lines).
        ours: Option<String>,
        /// The same line on `rank`.
        theirs: Option<String>,
    },
    /// A check failed on `rank`: rank 0's own refusal when it has one,
    /// else the lowest rank's.
    Refused {
        /// The rank that refused.
        rank: usize,
        /// Its host.
        host: String,
        /// What it found.
        refusal: Refusal,
    },
}

impl Verdict {
    /// The exit status every rank ends with; 0 for [`Verdict::Go`].
    pub fn status(&self) -> u8 {
        match self {
            Verdict::Go => 0,
            Verdict::Differ { .. } => 2,
            Verdict::Refused { refusal, .. } => refusal.status,
        }
    }
}

/// One rank's contribution to the first gather, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// 0 when every check passed, else the exit status.
    status: u8,
    /// The digest of its options, when it read them.
    digest: Option<u64>,
    host: String,
    message: String,
}

impl Entry {
    fn encode(&self) -> Vec<u8> {
        let mut b = vec![self.status, u8::from(self.digest.is_some())];
        b.extend_from_slice(&self.digest.unwrap_or(0).to_le_bytes());
        b.extend_from_slice(&(self.host.len() as u32).to_le_bytes());
        b.extend_from_slice(self.host.as_bytes());
        b.extend_from_slice(self.message.as_bytes());
        b
    }

    /// Reads an entry back; a malformed one (never sent by this code)
    /// reads as a refusal, so that it cannot pass for agreement.
    fn decode(b: &[u8]) -> Entry {
        let bad = || Entry {
            status: 1,
            digest: None,
            host: "?".into(),
            message: "sent a malformed verdict".into(),
        };
        if b.len() < 14 {
            return bad();
        }
        let digest = u64::from_le_bytes(b[2..10].try_into().unwrap_or([0; 8]));
        let host_len = u32::from_le_bytes(b[10..14].try_into().unwrap_or([0; 4])) as usize;
        let Some(host) = b.get(14..14 + host_len) else {
            return bad();
        };
        Entry {
            status: b[0],
            digest: (b[1] == 1).then_some(digest),
            host: String::from_utf8_lossy(host).into_owned(),
            message: String::from_utf8_lossy(&b[14 + host_len..]).into_owned(),
        }
    }
}

/// FNV-1a over the option lines: the same on every rank of one build,
/// and collisions are harmless (the lines themselves are compared).
fn digest(lines: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for line in lines {
        for &b in line.as_bytes().iter().chain(b"\n") {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Agrees with the other ranks on whether the run may start.
/// Collective over `t`: every rank calls it once, at the same point,
/// whatever its own checks found.
pub fn agree(t: &dyn Transport, ready: &Ready) -> Verdict {
    let mine = Entry {
        status: ready.refusal.as_ref().map_or(0, |r| r.status.max(1)),
        digest: ready.options.map(digest),
        host: iolab_core::env::hostname(),
        message: ready
            .refusal
            .as_ref()
            .map(|r| r.message.clone())
            .unwrap_or_default(),
    };
    let entries: Vec<Entry> = t
        .all_gather(&mine.encode())
        .iter()
        .map(|b| Entry::decode(b))
        .collect();
    if let Some(reference) = differing_digests(&entries) {
        let text = ready.options.map(|o| o.join("\n")).unwrap_or_default();
        let texts: Vec<String> = t
            .all_gather(text.as_bytes())
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        if let Some(v) = first_difference(&entries, &texts, reference) {
            return v;
        }
    }
    refused(&entries).unwrap_or(Verdict::Go)
}

/// The rank to compare with when the ranks that read their options did
/// not all get the same digest; None when they did.
fn differing_digests(entries: &[Entry]) -> Option<usize> {
    let mut known = entries
        .iter()
        .enumerate()
        .filter_map(|(r, e)| e.digest.map(|d| (r, d)));
    let (reference, first) = known.next()?;
    known.any(|(_, d)| d != first).then_some(reference)
}

/// The first rank whose option lines differ from `reference`'s, and the
/// first line that differs.
fn first_difference(entries: &[Entry], texts: &[String], reference: usize) -> Option<Verdict> {
    let ours: Vec<&str> = texts.get(reference)?.lines().collect();
    for (rank, (e, text)) in entries.iter().zip(texts).enumerate() {
        if e.digest.is_none() || rank == reference {
            continue;
        }
        let theirs: Vec<&str> = text.lines().collect();
        let at = (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i));
        if let Some(i) = at {
            return Some(Verdict::Differ {
                reference,
                rank,
                host: e.host.clone(),
                ours: ours.get(i).map(|s| s.to_string()),
                theirs: theirs.get(i).map(|s| s.to_string()),
            });
        }
    }
    None
}

/// Rank 0's refusal if it has one, else the lowest rank's.
fn refused(entries: &[Entry]) -> Option<Verdict> {
    let (rank, e) = entries.iter().enumerate().find(|(_, e)| e.status != 0)?;
    Some(Verdict::Refused {
        rank,
        host: e.host.clone(),
        refusal: Refusal {
            status: e.status,
            message: e.message.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(status: u8, digest: Option<u64>, message: &str) -> Entry {
        Entry {
            status,
            digest,
            host: "h".into(),
            message: message.into(),
        }
    }

    #[test]
    fn entries_survive_the_wire() {
        for e in [entry(0, Some(7), ""), entry(2, None, "-z: bad")] {
            assert_eq!(Entry::decode(&e.encode()), e);
        }
        assert_eq!(Entry::decode(b"x").status, 1, "malformed is a refusal");
    }

    #[test]
    fn the_lowest_refusing_rank_is_named() {
        let all = [
            entry(0, Some(1), ""),
            entry(2, None, "a"),
            entry(1, None, "b"),
        ];
        match refused(&all) {
            Some(Verdict::Refused { rank, refusal, .. }) => {
                assert_eq!(
                    (rank, refusal.status, refusal.message.as_str()),
                    (1, 2, "a")
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(refused(&[entry(0, Some(1), "")]), None);
    }

    #[test]
    fn only_ranks_that_read_their_options_are_compared() {
        let same = [
            entry(0, Some(5), ""),
            entry(2, None, "x"),
            entry(0, Some(5), ""),
        ];
        assert_eq!(differing_digests(&same), None);
        let differ = [
            entry(2, None, "x"),
            entry(0, Some(5), ""),
            entry(0, Some(6), ""),
        ];
        assert_eq!(differing_digests(&differ), Some(1));
    }

    #[test]
    fn the_first_differing_line_is_named() {
        let all = [
            entry(0, Some(1), ""),
            entry(0, Some(1), ""),
            entry(0, Some(2), ""),
        ];
        let texts = ["a = 1\nn = 5", "a = 1\nn = 5", "a = 1\nn = 4"].map(String::from);
        assert_eq!(
            first_difference(&all, &texts, 0),
            Some(Verdict::Differ {
                reference: 0,
                rank: 2,
                host: "h".into(),
                ours: Some("n = 5".into()),
                theirs: Some("n = 4".into()),
            })
        );
        let shorter = ["a = 1\nn = 5", "a = 1"].map(String::from);
        match first_difference(&all[..2], &shorter, 0) {
            Some(Verdict::Differ { theirs: None, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn digests_tell_lines_apart() {
        let a = ["n = 5".to_string()];
        let b = ["n = 4".to_string()];
        assert_ne!(digest(&a), digest(&b));
        assert_ne!(
            digest(&["ab".into(), "c".into()]),
            digest(&["a".into(), "bc".into()])
        );
    }

    #[test]
    fn one_process_agrees_with_itself() {
        let t = crate::SingleProcess::new();
        let refusal = Refusal {
            status: 2,
            message: "-n: bad".into(),
        };
        let ready = Ready {
            options: None,
            refusal: Some(refusal.clone()),
        };
        match agree(&t, &ready) {
            Verdict::Refused {
                rank: 0,
                refusal: r,
                ..
            } => assert_eq!(r, refusal),
            other => panic!("{other:?}"),
        }
    }
}
