//! The restart monitor of an end-to-end copy (`-restart`): the offset
//! below which every byte of the destination is written and durable,
//! recorded atomically every `frequency` seconds and at the end, so a
//! killed copy resumes from there (`-restart offset N` or the file).
//!
//! QThreads finish requests out of order, so "bytes written" is not one
//! counter. Each QThread handles its own requests in ascending offset
//! order and publishes its *low mark*: the offset of its first request not
//! yet written (or the end, once it has none left). Every byte below the
//! smallest low mark is written: a request below it belongs to some
//! QThread whose low mark is above it, so that QThread has finished it.
//!
//! Durability: the monitor takes the watermark first, then flushes the
//! file (fdatasync), then records the watermark. Everything below it was
//! written before the flush began, so it is on stable storage when the
//! record says so. XDD 7.0's monitor stayed at 0 under load; this one
//! moves whenever the slowest QThread does.
//!
//! The file (`-restart file NAME`, by default `DESTINATION.restart`;
//! text, one `key value` per line; `source` is the source side's name of
//! its target and `source_*` which state of which file that was
//! ([`SourceId`]), `offset` the watermark, `total` where the copy ends):
//!
//! ```text
//! # iolab xdd restart file
//! version 2
//! source /data/big.dat
//! source_size 53687091200
//! source_mtime_ns 1794999000123456789
//! source_ctime_ns 1794999000123456789
//! source_ino 1234567
//! destination /scratch/big.dat
//! offset 1073741824
//! total 53687091200
//! updated_unix_ns 1795000000000000000
//! ```
//!
//! A resume is only honest while the source holds what it held: the
//! bytes below the offset came from it. The source side states its
//! file's [`SourceId`] in the handshake, the destination compares it
//! with the record's, and a source that changed is refused (version 1
//! records, which do not say, are refused too).
//!
//! A copy of several passes (`-passes N`) copies the same bytes N times;
//! its record also says which pass the offset is in (`pass P`, 1 when
//! the line is absent, as in records of one-pass copies), and a resume
//! runs passes P..N, the first from the offset. The QThreads' low marks
//! are then positions over all passes ([`Course`]), so the watermark
//! still only moves forward, across pass boundaries too.
//!
//! It is replaced atomically (written to `NAME.tmp`, flushed, renamed over
//! `NAME`, directory flushed), so a crash leaves the old record or the new
//! one, never half of one.
//!
//! ```
//! use iolab_xdd::record::restart::Watermark;
//! let w = Watermark::new(2, 0);
//! w.set_low(0, 4096);
//! w.set_low(1, 8192);
//! assert_eq!(w.value(), 4096);
//! ```

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Version of the restart file's layout (2: the source's identity).
pub const VERSION: u32 = 2;

/// Which file, in which state, a copy's source was: what a resume
/// compares, so that bytes of a changed source are never joined to
/// those copied before. Fields a source's storage does not keep are 0
/// (S3 has no inode or ctime). The device number is left out: an NFS
/// or btrfs mount may get another one after a reboot, which would
/// refuse an honest resume; a file moved to another file system has
/// another ctime anyway.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceId {
    /// Size in bytes.
    pub size: u64,
    /// Last modification, Unix nanoseconds.
    pub mtime_ns: u64,
    /// Last status change (ctime), Unix nanoseconds: moves with every
    /// write, also when the modification time is put back.
    pub ctime_ns: u64,
    /// Inode number: another file now at the name has another.
    pub ino: u64,
}

impl SourceId {
    /// The identity of a file as its backend stats it.
    pub fn of(st: &iolab_backend::Stat) -> SourceId {
        SourceId {
            size: st.size,
            mtime_ns: st.mtime_ns,
            ctime_ns: st.ctime_ns,
            ino: st.ino,
        }
    }

    /// What differs between this (recorded) identity and `now`, each
    /// said as a user reads it; empty when they are the same.
    pub fn changes(&self, now: &SourceId) -> Vec<String> {
        let mut out = Vec::new();
        if self.size != now.size {
            out.push(format!("size (was {} bytes, now {})", self.size, now.size));
        }
        if self.mtime_ns != now.mtime_ns {
            out.push("modification time".into());
        }
        if self.ino != now.ino {
            out.push("inode (another file has its name)".into());
        }
        if self.ctime_ns != now.ctime_ns {
            out.push("status change time (ctime)".into());
        }
        out
    }
}

/// The smallest low mark over QThreads; see the module doc.
#[derive(Debug)]
pub struct Watermark {
    lows: Vec<AtomicU64>,
}

impl Watermark {
    /// `qthreads` low marks, all starting at `start` (0, or the resume
    /// offset).
    pub fn new(qthreads: usize, start: u64) -> Self {
        Self {
            lows: (0..qthreads.max(1))
                .map(|_| AtomicU64::new(start))
                .collect(),
        }
    }

    /// QThread `q`'s first unwritten byte is now `offset` (u64::MAX when
    /// it has nothing left). One relaxed store: cheap on the hot path.
    #[inline]
    pub fn set_low(&self, q: usize, offset: u64) {
        if let Some(l) = self.lows.get(q) {
            l.store(offset, Ordering::Release);
        }
    }

    /// Every byte below this offset is written.
    pub fn value(&self) -> u64 {
        self.lows
            .iter()
            .map(|l| l.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }
}

/// Where a copy of several passes is, as one number: pass `p`'s byte
/// `o` is position `(p - 1) x (end - start) + (o - start)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Course {
    /// The copy's first byte in the target.
    pub start: u64,
    /// The byte after its last.
    pub end: u64,
    /// Passes, from 1.
    pub passes: u64,
}

impl Course {
    fn span(&self) -> u64 {
        self.end.saturating_sub(self.start).max(1)
    }

    /// The position of byte `offset` of pass `pass`.
    pub fn position(&self, pass: u64, offset: u64) -> u64 {
        let into = offset.clamp(self.start, self.end) - self.start;
        pass.saturating_sub(1).saturating_mul(self.span()) + into
    }

    /// The (pass, offset) of a position; a pass's end is the next
    /// pass's start, except after the last pass.
    pub fn place(&self, position: u64) -> (u64, u64) {
        let span = self.span();
        if position >= self.passes.saturating_mul(span) {
            return (self.passes.max(1), self.end);
        }
        (position / span + 1, self.start + position % span)
    }
}

/// One restart record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The source file as the source side named it.
    pub source: String,
    /// That file as it was when the copy began.
    pub source_id: SourceId,
    /// The destination file.
    pub destination: String,
    /// The pass `offset` is in, from 1.
    pub pass: u64,
    /// Every byte below this offset is written and durable.
    pub offset: u64,
    /// The byte after the copy's last: its size when it starts at 0
    /// (`-startoffset` moves both).
    pub total: u64,
    /// When the record was made, Unix ns.
    pub updated_unix_ns: u64,
}

/// A restart file that cannot be used; the message names the file and line.
#[derive(Debug, thiserror::Error)]
#[error("restart file {path}: {why}")]
pub struct RestartError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub why: String,
}

impl Record {
    /// The text written to the file.
    pub fn render(&self) -> String {
        let id = &self.source_id;
        format!(
            "# iolab xdd restart file\nversion {VERSION}\nsource {}\nsource_size {}\nsource_mtime_ns {}\nsource_ctime_ns {}\nsource_ino {}\ndestination {}\npass {}\noffset {}\ntotal {}\nupdated_unix_ns {}\n",
            self.source, id.size, id.mtime_ns, id.ctime_ns, id.ino, self.destination, self.pass, self.offset, self.total, self.updated_unix_ns
        )
    }

    /// Reads a record; every field is required, the version must be known,
    /// and the offset may not pass the total.
    pub fn parse(text: &str, path: &Path) -> Result<Record, RestartError> {
        let bad = |why: String| RestartError {
            path: path.display().to_string(),
            why,
        };
        let mut fields = std::collections::HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once(' ')
                .ok_or_else(|| bad(format!("line {}: expected `key value`", n + 1)))?;
            fields.insert(k.to_string(), v.trim().to_string());
        }
        let text_of = |k: &str| {
            fields
                .get(k)
                .cloned()
                .ok_or_else(|| bad(format!("no `{k}` line")))
        };
        let num = |k: &str| -> Result<u64, RestartError> {
            text_of(k)?
                .parse()
                .map_err(|_| bad(format!("`{k}` is not a whole number")))
        };
        match num("version")? {
            v if v == u64::from(VERSION) => {}
            1 => return Err(bad(
                "version 1, from an older iolab, does not record which state of the source it copied, so a resume could join bytes of a changed source to the old ones: remove it and the copy it describes (its destination, or the partial copy beside it) to start over".into(),
            )),
            v => return Err(bad(format!("version {v} is not {VERSION}"))),
        }
        let pass = match fields.contains_key("pass") {
            true => num("pass")?,
            false => 1,
        };
        if pass == 0 {
            return Err(bad("`pass` counts from 1".into()));
        }
        let r = Record {
            source: text_of("source")?,
            source_id: SourceId {
                size: num("source_size")?,
                mtime_ns: num("source_mtime_ns")?,
                ctime_ns: num("source_ctime_ns")?,
                ino: num("source_ino")?,
            },
            destination: text_of("destination")?,
            pass,
            offset: num("offset")?,
            total: num("total")?,
            updated_unix_ns: num("updated_unix_ns")?,
        };
        if r.offset > r.total {
            return Err(bad(format!(
                "offset {} is past the total {}",
                r.offset, r.total
            )));
        }
        Ok(r)
    }

    /// Reads the record at `path`, a regular file of this user that no
    /// other may write: a symbolic link at the name is not followed
    /// (O_NOFOLLOW), so a planted one cannot have another file read as
    /// the record, and another user's file is not taken.
    pub fn load(path: &Path) -> Result<Record, RestartError> {
        let err = |why: String| RestartError {
            path: path.display().to_string(),
            why,
        };
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => err("a symbolic link, never followed: remove it".into()),
                _ => err(e.to_string()),
            })?;
        // Another user's record (planted in a shared directory), or one
        // others may change, would decide where this copy resumes.
        let m = f.metadata().map_err(|e| err(e.to_string()))?;
        iolab_core::trust::own_file(&m).map_err(|why| err(why.to_string()))?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).map_err(|e| err(e.to_string()))?;
        Record::parse(&text, path)
    }

    /// Replaces the record at `path` atomically (temporary file, flush,
    /// rename, directory flush).
    /// A temporary file whose writing fails (a full file system) is
    /// removed: the old record stays, and nothing half-made beside it.
    pub fn store(&self, path: &Path) -> std::io::Result<()> {
        let tmp = tmp_path(path);
        // A link planted at the temporary name is not written through.
        // Mode 644 whatever the umask: a record others may write is
        // refused by the next run's load.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        let written = self.write_to(f).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        std::fs::File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
    }

    /// The record into `f`, flushed to stable storage.
    fn write_to(&self, mut f: std::fs::File) -> std::io::Result<()> {
        f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        f.write_all(self.render().as_bytes())?;
        f.sync_all()
    }
}

/// The temporary name the record at `path` is rewritten under
/// (`NAME.tmp`), renamed over it once flushed.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Runs the monitor until `stop` is raised: every `every`, takes the
/// watermark, calls `flush` (fdatasync of the destination), and stores a
/// record made by `record(offset)` when the offset moved. Stores once more
/// at the end. Returns the last offset recorded; a failed flush or store
/// ends it with the error (the copy should then stop: a restart file that
/// cannot be kept is a broken promise).
pub fn monitor(
    mark: &Watermark,
    every: Duration,
    stop: &AtomicBool,
    flush: &mut dyn FnMut() -> std::io::Result<()>,
    store: &mut dyn FnMut(u64) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut recorded = None;
    let mut next = Instant::now() + every;
    loop {
        let last = stop.load(Ordering::Acquire);
        if last || Instant::now() >= next {
            let w = mark.value();
            if recorded != Some(w) {
                flush()?;
                store(w)?;
                recorded = Some(w);
            }
            next = Instant::now() + every;
        }
        if last {
            return Ok(recorded.unwrap_or(0));
        }
        std::thread::sleep(every.min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn watermark_is_the_slowest_qthreads_low_mark() {
        let w = Watermark::new(3, 100);
        assert_eq!(w.value(), 100);
        w.set_low(0, 400);
        w.set_low(1, 200);
        w.set_low(2, 300);
        assert_eq!(w.value(), 200);
        w.set_low(1, u64::MAX);
        assert_eq!(w.value(), 300);
    }

    /// Requests of `len` bytes dealt round robin to `q` threads, each
    /// finishing its own in order with random delays: at every moment the
    /// watermark must be a prefix that is entirely written.
    #[test]
    fn watermark_never_passes_an_unwritten_byte() {
        let (q, n, len) = (4usize, 400u64, 512u64);
        let w = Watermark::new(q, 0);
        let written: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
        let done = AtomicBool::new(false);
        let seen_max = Mutex::new(0u64);
        std::thread::scope(|s| {
            for t in 0..q {
                let (w, written) = (&w, &written);
                s.spawn(move || {
                    let mut k = t as u64;
                    while k < n {
                        if iolab_core::random::splitmix_nth(t as u64, k).is_multiple_of(7) {
                            std::thread::yield_now();
                        }
                        written[k as usize].store(true, Ordering::Release);
                        k += q as u64;
                        w.set_low(t, if k < n { k * len } else { u64::MAX });
                    }
                });
            }
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    let mark = w.value().min(n * len);
                    for r in 0..mark / len {
                        assert!(
                            written[r as usize].load(Ordering::Acquire),
                            "request {r} below {mark}"
                        );
                    }
                    let mut m = seen_max.lock().unwrap();
                    assert!(mark >= *m || mark == 0, "the watermark went back");
                    *m = (*m).max(mark);
                    if mark >= n * len {
                        done.store(true, Ordering::Release);
                    }
                }
            });
        });
        assert_eq!(w.value(), u64::MAX);
    }

    /// A link at the record's name is never read through, and one at
    /// its temporary name is never written through.
    #[test]
    fn links_at_the_records_names_are_not_followed() {
        let dir = std::env::temp_dir().join(format!("iolab-restart-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "version 1\n").unwrap();
        let p = dir.join("r.restart");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let e = Record::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("r.restart"),
            "{e}"
        );
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&victim, tmp_path(&p)).unwrap();
        let r = Record {
            source: "s".into(),
            source_id: SourceId::default(),
            destination: "d".into(),
            pass: 1,
            offset: 0,
            total: 1,
            updated_unix_ns: 1,
        };
        assert!(r.store(&p).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "version 1\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A record this user did not write (another user's, planted in a
    /// shared directory) or that others may change is not taken; the
    /// record this process stores is neither, whatever the umask.
    #[test]
    fn a_record_of_another_user_or_writable_by_others_is_refused() {
        let dir = std::env::temp_dir().join(format!("iolab-restart-own-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.restart");
        let r = Record {
            source: "s".into(),
            source_id: SourceId::default(),
            destination: "d".into(),
            pass: 1,
            offset: 0,
            total: 1,
            updated_unix_ns: 1,
        };
        r.store(&p).unwrap();
        assert_eq!(Record::load(&p).unwrap(), r);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Record::load(&p).unwrap_err().to_string();
        assert!(e.contains("other users may change it"), "{e}");
        r.store(&p).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o644
        );
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
            let e = Record::load(&p).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_round_trip_and_bad_ones_name_the_problem() {
        let dir = std::env::temp_dir().join(format!("iolab-restart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.txt");
        let r = Record {
            source: "/a b/src".into(),
            source_id: SourceId {
                size: 1 << 20,
                mtime_ns: 1_700_000_000_123_456_789,
                ctime_ns: 1_700_000_001_000_000_001,
                ino: 42,
            },
            destination: "/dst".into(),
            pass: 2,
            offset: 4096,
            total: 1 << 20,
            updated_unix_ns: 7,
        };
        r.store(&p).unwrap();
        assert_eq!(Record::load(&p).unwrap(), r);
        assert!(!tmp_path(&p).exists());
        for (text, why) in [
            ("version 2\n", "no `source` line"),
            ("version 9\nsource a\n", "version 9"),
            (
                &r.render().replace("version 2", "version 1"),
                "version 1, from an older iolab, does not record which state of the source",
            ),
            (
                &r.render()
                    .replace("source_ctime_ns 1700000001000000001\n", ""),
                "no `source_ctime_ns` line",
            ),
            (
                &r.render().replace("offset 4096", "offset x"),
                "`offset` is not",
            ),
            (
                &r.render().replace("offset 4096", "offset 99999999"),
                "past the total",
            ),
            (&r.render().replace("pass 2", "pass 0"), "counts from 1"),
        ] {
            let e = Record::parse(text, &p).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("r.txt"), "{e}");
        }
        // A record of a one-pass copy (no `pass` line) is in pass 1.
        let old = Record::parse(&r.render().replace("pass 2\n", ""), &p).unwrap();
        assert_eq!(old.pass, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn course_positions_run_on_across_passes() {
        let c = Course {
            start: 1000,
            end: 5000,
            passes: 3,
        };
        assert_eq!(c.position(1, 1000), 0);
        assert_eq!(c.position(2, 3000), 6000);
        assert_eq!(c.place(6000), (2, 3000));
        // A finished pass is the next one's start; the last stays at its end.
        assert_eq!(c.place(4000), (2, 1000));
        assert_eq!(c.place(12000), (3, 5000));
        assert_eq!(c.place(u64::MAX), (3, 5000));
        for pos in [0, 1, 3999, 4001, 11999] {
            let (p, o) = c.place(pos);
            assert_eq!(c.position(p, o), pos);
        }
    }

    #[test]
    fn monitor_flushes_before_it_records_and_records_at_the_end() {
        let w = Watermark::new(1, 0);
        let stop = AtomicBool::new(false);
        let log = Mutex::new(Vec::<String>::new());
        let last = std::thread::scope(|s| {
            let h = s.spawn(|| {
                monitor(
                    &w,
                    Duration::from_millis(10),
                    &stop,
                    &mut || {
                        log.lock().unwrap().push("flush".into());
                        Ok(())
                    },
                    &mut |o| {
                        log.lock().unwrap().push(format!("store {o}"));
                        Ok(())
                    },
                )
            });
            for k in 1..=5u64 {
                w.set_low(0, k * 1000);
                // Let the monitor see each step (waits on its log, not on time).
                while !log.lock().unwrap().contains(&format!("store {}", k * 1000)) {
                    std::thread::yield_now();
                }
            }
            stop.store(true, Ordering::Release);
            h.join().unwrap().unwrap()
        });
        assert_eq!(last, 5000);
        let log = log.into_inner().unwrap();
        for pair in log.chunks(2) {
            assert_eq!(pair[0], "flush", "{log:?}");
            assert!(pair[1].starts_with("store"), "{log:?}");
        }
    }
}
