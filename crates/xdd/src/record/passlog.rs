//! Every pass's figures, kept out of memory: each target thread writes
//! its passes, one JSON line each, to a spool of its own (an unlinked
//! temporary file in `TMPDIR`, so nothing is left behind even after
//! kill -9), and the formatters read them back pass by pass. A run of
//! 40,000 passes then takes the memory of a run of 10 (issue 17 item
//! 12); what the reports need over the whole run (target totals) is
//! summed as the passes go ([`crate::record::results::RunResults::totals`]).
//!
//! ```
//! use iolab_xdd::record::passlog::{PassLog, PassSpool};
//! use iolab_xdd::results::TargetPass;
//! let mut spool = PassSpool::new().unwrap();
//! for pass in 1..=3 {
//!     spool.push(&TargetPass { pass, ..Default::default() });
//! }
//! let log = PassLog::spooled(vec![spool.finish().unwrap()]);
//! assert_eq!(log.len(), 3);
//! assert_eq!(log.iter().map(|p| p[0].pass).collect::<Vec<_>>(), [1, 2, 3]);
//! ```

use crate::record::pass::TargetPass;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

/// One target's passes being written, in the order they ran.
pub struct PassSpool {
    out: BufWriter<File>,
    /// Runs of consecutive pass numbers written: (first, last).
    ranges: Vec<(u64, u64)>,
    error: Option<io::Error>,
}

impl PassSpool {
    /// An empty spool in the temporary directory.
    pub fn new() -> io::Result<PassSpool> {
        Ok(PassSpool {
            out: BufWriter::with_capacity(64 << 10, tempfile::tempfile()?),
            ranges: Vec::new(),
            error: None,
        })
    }

    /// Adds a pass. The first failure is kept and returned by
    /// [`PassSpool::finish`]; later passes are then not written.
    pub fn push(&mut self, tp: &TargetPass) {
        if self.error.is_some() {
            return;
        }
        let r = serde_json::to_writer(&mut self.out, tp)
            .map_err(io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        match r {
            Ok(()) => match self.ranges.last_mut() {
                Some((_, last)) if *last + 1 == tp.pass => *last = tp.pass,
                _ => self.ranges.push((tp.pass, tp.pass)),
            },
            Err(e) => self.error = Some(e),
        }
    }

    /// The first write that failed, if any (the run is then an error).
    pub fn failed(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// The spool, written out, ready to be read back.
    pub fn finish(self) -> io::Result<Spooled> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        Ok(Spooled {
            file: Arc::new(file),
            ranges: self.ranges,
        })
    }
}

/// A target's finished spool.
#[derive(Debug, Clone)]
pub struct Spooled {
    file: Arc<File>,
    ranges: Vec<(u64, u64)>,
}

#[derive(Debug, Clone)]
enum Source {
    Memory(Vec<Vec<TargetPass>>),
    Spool(Vec<Spooled>),
}

/// Every pass of a run, per pass the targets that ran it, read back in
/// pass order ([`PassLog::iter`]) as often as a formatter needs.
#[derive(Debug, Clone)]
pub struct PassLog {
    source: Source,
    passes: u64,
    /// The first spool read that failed (a formatter's output is then
    /// incomplete and must fail).
    error: Arc<Mutex<Option<String>>>,
}

impl Default for PassLog {
    fn default() -> Self {
        PassLog::from_passes(Vec::new())
    }
}

impl PassLog {
    /// Passes held in memory (tests, small documents).
    pub fn from_passes(passes: Vec<Vec<TargetPass>>) -> PassLog {
        let passes: Vec<_> = passes.into_iter().filter(|p| !p.is_empty()).collect();
        PassLog {
            passes: passes.len() as u64,
            source: Source::Memory(passes),
            error: Default::default(),
        }
    }

    /// The targets' spools, one per target in target order.
    pub fn spooled(spools: Vec<Spooled>) -> PassLog {
        let mut ranges: Vec<(u64, u64)> = spools.iter().flat_map(|s| s.ranges.clone()).collect();
        PassLog {
            passes: union_len(&mut ranges),
            source: Source::Spool(spools),
            error: Default::default(),
        }
    }

    /// Number of passes that at least one target ran.
    pub fn len(&self) -> u64 {
        self.passes
    }

    /// No pass ran.
    pub fn is_empty(&self) -> bool {
        self.passes == 0
    }

    /// The passes in order, each with its targets in target order.
    pub fn iter(&self) -> PassIter<'_> {
        let streams = match &self.source {
            Source::Memory(p) => {
                let all: Vec<TargetPass> = p.iter().flatten().cloned().collect();
                vec![Stream::Memory(all.into_iter())]
            }
            Source::Spool(s) => s.iter().map(|s| Stream::open(&s.file)).collect(),
        };
        let mut it = PassIter {
            log: self,
            streams,
            heads: Vec::new(),
        };
        it.heads = (0..it.streams.len()).map(|i| it.pull(i)).collect();
        it
    }

    /// The first failure to read the spools back, if any.
    pub fn error(&self) -> Option<String> {
        self.error.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn note(&self, e: String) {
        if let Ok(mut g) = self.error.lock() {
            g.get_or_insert(e);
        }
    }
}

/// Number of pass numbers covered by `ranges` (they may overlap).
fn union_len(ranges: &mut [(u64, u64)]) -> u64 {
    ranges.sort_unstable();
    let mut n = 0;
    let mut covered_to = 0;
    for &(a, b) in ranges.iter() {
        let from = a.max(covered_to + 1);
        if b >= from {
            n += b - from + 1;
            covered_to = b;
        }
    }
    n
}

/// Reads a file from its start through a shared handle (positional
/// reads, so several readers of one spool do not move each other).
struct At<'a> {
    file: &'a File,
    offset: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// One spool read line by line (a line parsed from a slice is many
/// times faster than serde_json's byte-at-a-time reader).
struct Lines<'a> {
    reader: BufReader<At<'a>>,
    line: String,
}

impl Lines<'_> {
    fn next(&mut self) -> Option<Result<TargetPass, String>> {
        self.line.clear();
        match self.reader.read_line(&mut self.line) {
            Ok(0) => None,
            Ok(_) => Some(serde_json::from_str(&self.line).map_err(|e| e.to_string())),
            Err(e) => Some(Err(e.to_string())),
        }
    }
}

enum Stream<'a> {
    Memory(std::vec::IntoIter<TargetPass>),
    Spool(Lines<'a>),
}

impl<'a> Stream<'a> {
    fn open(file: &'a File) -> Stream<'a> {
        Stream::Spool(Lines {
            reader: BufReader::with_capacity(64 << 10, At { file, offset: 0 }),
            line: String::new(),
        })
    }
}

/// The passes of a [`PassLog`], in order: the targets' streams merged by
/// pass number (targets without a barrier run their passes at their own
/// pace, so one spool can be ahead of another).
pub struct PassIter<'a> {
    log: &'a PassLog,
    streams: Vec<Stream<'a>>,
    heads: Vec<Option<TargetPass>>,
}

impl PassIter<'_> {
    fn pull(&mut self, i: usize) -> Option<TargetPass> {
        match &mut self.streams[i] {
            Stream::Memory(it) => it.next(),
            Stream::Spool(lines) => match lines.next()? {
                Ok(tp) => Some(tp),
                Err(e) => {
                    self.log
                        .note(format!("cannot read the run's pass figures back: {e}"));
                    None
                }
            },
        }
    }
}

impl Iterator for PassIter<'_> {
    type Item = Vec<TargetPass>;

    fn next(&mut self) -> Option<Vec<TargetPass>> {
        let pass = self.heads.iter().flatten().map(|t| t.pass).min()?;
        let mut out = Vec::new();
        for i in 0..self.heads.len() {
            // In memory, all targets come from one stream, in order.
            while self.heads[i].as_ref().is_some_and(|t| t.pass == pass) {
                out.extend(self.heads[i].take());
                self.heads[i] = self.pull(i);
            }
        }
        out.sort_by_key(|t| t.target);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tp(target: usize, pass: u64) -> TargetPass {
        TargetPass {
            target,
            pass,
            ..Default::default()
        }
    }

    #[test]
    fn spools_merge_by_pass_and_count_every_pass_once() {
        let mut a = PassSpool::new().unwrap();
        let mut b = PassSpool::new().unwrap();
        // Target 1 missed pass 2 (its per-pass file could not be made).
        for p in [1, 2, 3] {
            a.push(&tp(0, p));
        }
        for p in [1, 3, 4] {
            b.push(&tp(1, p));
        }
        let log = PassLog::spooled(vec![a.finish().unwrap(), b.finish().unwrap()]);
        assert_eq!(log.len(), 4);
        let got: Vec<Vec<(usize, u64)>> = log
            .iter()
            .map(|p| p.iter().map(|t| (t.target, t.pass)).collect())
            .collect();
        assert_eq!(
            got,
            [
                vec![(0, 1), (1, 1)],
                vec![(0, 2)],
                vec![(0, 3), (1, 3)],
                vec![(1, 4)]
            ]
        );
        // Read twice, same passes; no read error.
        assert_eq!(log.iter().count(), 4);
        assert_eq!(log.error(), None);
    }

    #[test]
    fn memory_logs_read_like_spools() {
        let log = PassLog::from_passes(vec![vec![tp(0, 1), tp(1, 1)], vec![], vec![tp(0, 2)]]);
        assert_eq!(log.len(), 2);
        let sizes: Vec<usize> = log.iter().map(|p| p.len()).collect();
        assert_eq!(sizes, [2, 1]);
    }

    #[test]
    fn union_counts_overlaps_once() {
        assert_eq!(union_len(&mut [(1, 3), (2, 5), (7, 7)]), 6);
        assert_eq!(union_len(&mut []), 0);
    }
}
