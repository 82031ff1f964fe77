//! `-engine uring`: one thread keeps up to `depth` requests in flight with
//! io_uring, instead of one QThread per outstanding request.
//!
//! The engine owns `depth` slots, each a (token, buffer) pair: the token is
//! the slot index, sent as the request's `user_data`, and the buffer is
//! allocated once, aligned for O_DIRECT. A slot's buffer is handed to the
//! kernel when its request is submitted and is not touched again until that
//! request's completion is reaped. Requests are pulled lazily from an
//! iterator of [`Request`]s (typically from [`crate::seek::PassSeeks`]), so
//! an adapter can pace them (`-throttle`) or stop them early.
//!
//! ```no_run
//! use iolab_xdd::uring::{IoOp, Request, UringConfig, UringEngine, NoHooks};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = std::fs::File::open("/etc/hostname")?;
//! let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
//! let cfg = UringConfig { depth: 8, buf_bytes: 4096, align: 4096 };
//! let mut engine = UringEngine::new(fd, IoOp::Read, &cfg)?; // Err names why io_uring is missing
//! let reqs = (0..4).map(|i| Request { index: i, offset_bytes: i * 4096 });
//! let stats = engine.run(reqs, &mut NoHooks)?;
//! println!("{} ops, {} bytes, p50 {} ns", stats.ops, stats.bytes, stats.latency.percentile(0.5));
//! # Ok(()) }
//! ```
//!
//! Per request the loop does no allocation, formatting or locking: it
//! fills free slots, submits them in one system call, waits for at least
//! one completion and reaps every completion that is ready.
//!
//! A request's start time is taken when it is queued; the batch it belongs
//! to is submitted once every free slot is filled, so its latency includes
//! at most the time to prepare one batch (microseconds), as with fio's
//! batched submission.

use io_uring::{opcode, squeue, types, IoUring};
use iolab_core::clock::mono_ns;
use iolab_core::stats::Histogram;
use std::alloc::{self, Layout};
use std::io;
use std::os::fd::RawFd;

/// The operation every request of a run performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Read into the slot buffer.
    Read,
    /// Write the slot buffer.
    Write,
    /// `-op noop`: an io_uring no-op, to measure the engine itself.
    Noop,
}

/// Engine sizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringConfig {
    /// Requests in flight (`-queuedepth`).
    pub depth: u32,
    /// Bytes per request and per slot buffer.
    pub buf_bytes: usize,
    /// Buffer alignment in bytes (4096 suits O_DIRECT everywhere).
    pub align: usize,
}

/// One request: its target-wide index and its byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Target-wide request (operation) number.
    pub index: u64,
    /// Byte offset in the file.
    pub offset_bytes: u64,
}

/// A finished request, as the hooks see it.
#[derive(Debug)]
pub struct Completion<'a> {
    /// The request.
    pub req: Request,
    /// Monotonic ns just before submission.
    pub start_ns: u64,
    /// Monotonic ns when its completion was reaped.
    pub end_ns: u64,
    /// Bytes transferred, or `-errno`.
    pub result: i32,
    /// The slot buffer (data read, or data written).
    pub buf: &'a [u8],
}

/// Caller code run around each request; both methods have defaults.
pub trait UringHooks {
    /// Before submission: fill or patch the buffer (writes) for `req`.
    fn prepare(&mut self, req: Request, buf: &mut [u8]) {
        let _ = (req, buf);
    }
    /// After completion: verify, time-stamp. Return `false` to stop
    /// issuing new requests (those in flight still complete).
    fn complete(&mut self, c: &Completion<'_>) -> bool {
        let _ = c;
        true
    }
}

/// Hooks that do nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHooks;
impl UringHooks for NoHooks {}

/// Counts of one [`UringEngine::run`].
#[derive(Debug, Clone, Default)]
pub struct UringStats {
    /// Requests completed (including failed ones).
    pub ops: u64,
    /// Bytes the kernel reported transferred.
    pub bytes: u64,
    /// Requests that moved fewer bytes than asked (end of file).
    pub short_ops: u64,
    /// Requests that failed.
    pub errors: u64,
    /// errno of the first failure.
    pub first_errno: Option<i32>,
    /// Submission-to-completion latency per request, ns.
    pub latency: Histogram,
}

/// Why the engine cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UringError {
    /// The kernel refused to set up a ring.
    #[error("io_uring is not available: {source} ({hint}); use the psync engine instead")]
    Unavailable {
        /// The setup error.
        source: io::Error,
        /// What usually causes it.
        hint: &'static str,
    },
    /// Bad sizing.
    #[error("io_uring engine: {0}")]
    Config(&'static str),
}

/// A heap buffer with a chosen alignment, for O_DIRECT.
#[derive(Debug)]
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (at least 1) aligned to `align`
    /// (a power of two).
    pub fn new(len: usize, align: usize) -> Option<Self> {
        let layout = Layout::from_size_align(len.max(1), align.max(1)).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = std::ptr::NonNull::new(unsafe { alloc::alloc_zeroed(layout) })?;
        Some(Self { ptr, layout })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// An in-flight slot: its token is its index in `UringEngine::slots`.
#[derive(Debug)]
struct Slot {
    buf: AlignedBuf,
    req: Request,
    start_ns: u64,
}

/// The io_uring engine for one file descriptor.
pub struct UringEngine {
    ring: IoUring,
    fd: RawFd,
    op: IoOp,
    slots: Vec<Slot>,
    free: Vec<u32>,
    in_flight: u32,
}

/// Checks that io_uring can be used here (kernel, seccomp, limits).
pub fn probe() -> Result<(), UringError> {
    IoUring::new(2).map(drop).map_err(unavailable)
}

fn unavailable(source: io::Error) -> UringError {
    let hint = match source.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no io_uring (needs Linux 5.1 or later)",
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "blocked by a seccomp filter (containers) or by sysctl kernel.io_uring_disabled"
        }
        Some(libc::ENOMEM) => "locked-memory limit too low for this queue depth (ulimit -l)",
        Some(libc::EINVAL) => "queue depth too large: at most 32768 entries",
        _ => "ring setup failed",
    };
    UringError::Unavailable { source, hint }
}

impl UringEngine {
    /// Sets up a ring of `cfg.depth` entries and its slot buffers for
    /// `fd`, which must stay open while [`UringEngine::run`] runs.
    pub fn new(fd: RawFd, op: IoOp, cfg: &UringConfig) -> Result<Self, UringError> {
        if cfg.depth == 0 {
            return Err(UringError::Config("queue depth must be at least 1"));
        }
        if cfg.buf_bytes > i32::MAX as usize {
            return Err(UringError::Config("request size must be below 2 GiB"));
        }
        if !cfg.align.is_power_of_two() {
            return Err(UringError::Config(
                "buffer alignment must be a power of two",
            ));
        }
        let ring = IoUring::new(cfg.depth.next_power_of_two()).map_err(unavailable)?;
        let mut slots = Vec::with_capacity(cfg.depth as usize);
        for _ in 0..cfg.depth {
            let buf = AlignedBuf::new(cfg.buf_bytes, cfg.align)
                .ok_or(UringError::Config("cannot allocate the slot buffers"))?;
            let req = Request {
                index: 0,
                offset_bytes: 0,
            };
            slots.push(Slot {
                buf,
                req,
                start_ns: 0,
            });
        }
        Ok(Self {
            ring,
            fd,
            op,
            slots,
            free: (0..cfg.depth).rev().collect(),
            in_flight: 0,
        })
    }

    /// Slot buffer `i` (for pre-filling write data once before a run).
    pub fn buffer_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        self.slots.get_mut(i).map(|s| s.buf.as_mut_slice())
    }

    /// Number of slots (the queue depth).
    pub fn depth(&self) -> usize {
        self.slots.len()
    }

    /// Issues every request from `reqs`, keeping up to `depth` in flight,
    /// and returns when all have completed or a hook asked to stop.
    pub fn run<I, H>(&mut self, reqs: I, hooks: &mut H) -> io::Result<UringStats>
    where
        I: IntoIterator<Item = Request>,
        H: UringHooks,
    {
        let mut reqs = reqs.into_iter();
        let mut stats = UringStats::default();
        let mut issuing = true;
        loop {
            if issuing {
                issuing = self.fill(&mut reqs, hooks);
            }
            if self.in_flight == 0 {
                return Ok(stats);
            }
            self.submit_and_wait()?;
            if !self.reap(hooks, &mut stats) {
                issuing = false;
            }
        }
    }

    /// Fills free slots from `reqs`; returns false when it ran out.
    fn fill<I: Iterator<Item = Request>, H: UringHooks>(
        &mut self,
        reqs: &mut I,
        hooks: &mut H,
    ) -> bool {
        while let Some(&token) = self.free.last() {
            let Some(req) = reqs.next() else {
                return false;
            };
            self.free.pop();
            let slot = &mut self.slots[token as usize];
            hooks.prepare(req, slot.buf.as_mut_slice());
            slot.req = req;
            let entry = build_entry(self.op, self.fd, slot, token);
            slot.start_ns = mono_ns();
            // SAFETY: the buffer belongs to `slot`, which is neither reused
            // nor freed until this entry's completion is reaped: the slot
            // leaves the free list here and returns to it only in `reap`,
            // and `Drop` waits for (or leaks) in-flight slots.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_err() {
                // The queue is as deep as the slot count, so this only
                // happens if the kernel has not consumed entries yet.
                self.ring.submit().ok();
                // SAFETY: as above.
                unsafe { self.ring.submission().push(&entry) }
                    .expect("submission queue full after submit");
            }
            self.in_flight += 1;
        }
        true
    }

    fn submit_and_wait(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Reaps every ready completion; returns false if a hook said stop.
    fn reap<H: UringHooks>(&mut self, hooks: &mut H, stats: &mut UringStats) -> bool {
        let mut go_on = true;
        let want = self.slots.first().map_or(0, |s| s.buf.as_slice().len()) as i32;
        for cqe in self.ring.completion() {
            let end_ns = mono_ns();
            let token = cqe.user_data() as u32;
            let slot = &self.slots[token as usize];
            let result = cqe.result();
            stats.ops += 1;
            stats.latency.record(end_ns.saturating_sub(slot.start_ns));
            if result < 0 {
                stats.errors += 1;
                stats.first_errno.get_or_insert(-result);
            } else {
                stats.bytes += result as u64;
                stats.short_ops += u64::from(result < want && self.op != IoOp::Noop);
            }
            let c = Completion {
                req: slot.req,
                start_ns: slot.start_ns,
                end_ns,
                result,
                buf: slot.buf.as_slice(),
            };
            go_on &= hooks.complete(&c);
            self.free.push(token);
            self.in_flight -= 1;
        }
        go_on
    }
}

fn build_entry(op: IoOp, fd: RawFd, slot: &mut Slot, token: u32) -> squeue::Entry {
    let len = slot.buf.as_slice().len() as u32;
    let fd = types::Fd(fd);
    let e = match op {
        IoOp::Read => opcode::Read::new(fd, slot.buf.as_mut_slice().as_mut_ptr(), len)
            .offset(slot.req.offset_bytes)
            .build(),
        IoOp::Write => opcode::Write::new(fd, slot.buf.as_slice().as_ptr(), len)
            .offset(slot.req.offset_bytes)
            .build(),
        IoOp::Noop => opcode::Nop::new().build(),
    };
    e.user_data(u64::from(token))
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Slot buffers must outlive the kernel's use of them: wait for every
        // in-flight request; if waiting fails, leak the buffers instead.
        while self.in_flight > 0 {
            if self.ring.submit_and_wait(self.in_flight as usize).is_err() {
                std::mem::forget(std::mem::take(&mut self.slots));
                return;
            }
            let n = self.ring.completion().count() as u32;
            self.in_flight -= n.min(self.in_flight);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapat::{DataPattern, Verifier, VerifyMode};
    use crate::seek::{SeekConfig, SeekPattern, SeekPlan};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::PathBuf;

    /// Under CI (`CI=true`) a test that cannot set up fails instead of
    /// passing as skipped.
    fn ci_fails(why: &str) {
        if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
            panic!("setup failed under CI: {why}");
        }
    }

    /// Skips (returning None) when io_uring is blocked here, and says so.
    fn uring_or_skip() -> Option<()> {
        match probe() {
            Ok(()) => Some(()),
            Err(e) => {
                ci_fails(&e.to_string());
                eprintln!("SKIP: {e}");
                None
            }
        }
    }

    struct TempFile(PathBuf);
    impl TempFile {
        fn new(name: &str) -> Self {
            let dir =
                std::env::var_os("IOLAB_TEST_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
            Self(dir.join(format!("iolab-uring-{}-{name}", std::process::id())))
        }
    }
    impl Drop for TempFile {
        fn drop(&mut self) {
            std::fs::remove_file(&self.0).ok();
        }
    }

    /// Writes the sequenced pattern, patched per request.
    struct SeqWriter(DataPattern);
    impl UringHooks for SeqWriter {
        fn prepare(&mut self, req: Request, buf: &mut [u8]) {
            self.0.patch(buf, req.offset_bytes);
        }
    }

    /// Verifies each read and counts bad requests.
    struct Checker(Verifier, u64, u64);
    impl UringHooks for Checker {
        fn complete(&mut self, c: &Completion<'_>) -> bool {
            self.1 += u64::from(!self.0.check(c.buf, c.req.offset_bytes).is_ok());
            self.2 += 1;
            true
        }
    }

    fn seq_pattern() -> DataPattern {
        let mut p = DataPattern::default();
        p.apply_words(&["sequenced"]).unwrap();
        p
    }

    fn write_then_verify(file: &std::fs::File, reqs: u64, bs: usize) {
        let cfg = UringConfig {
            depth: 8,
            buf_bytes: bs,
            align: 4096,
        };
        let mut w = UringEngine::new(file.as_raw_fd(), IoOp::Write, &cfg).unwrap();
        let seq = (0..reqs).map(|i| Request {
            index: i,
            offset_bytes: i * bs as u64,
        });
        let ws = w.run(seq, &mut SeqWriter(seq_pattern())).unwrap();
        assert_eq!(
            (ws.ops, ws.bytes, ws.errors, ws.short_ops),
            (reqs, reqs * bs as u64, 0, 0)
        );
        // Read back in a shuffled order at depth 8 and check every word.
        let sc = SeekConfig {
            pattern: SeekPattern::Sequential,
            block_size: bs as u64,
            reqsize_blocks: 1,
            num_reqs: reqs,
            randomize: true,
            ..SeekConfig::default()
        };
        let plan = SeekPlan::new(&sc, 0).unwrap();
        let pass = plan.pass(1);
        let mut r = UringEngine::new(file.as_raw_fd(), IoOp::Read, &cfg).unwrap();
        let mut chk = Checker(
            Verifier::new(&DataPattern::default(), VerifyMode::Location, bs),
            0,
            0,
        );
        let rs = r
            .run(
                (0..reqs).map(|i| Request {
                    index: i,
                    offset_bytes: pass.offset(i),
                }),
                &mut chk,
            )
            .unwrap();
        assert_eq!((rs.ops, rs.bytes, rs.errors), (reqs, reqs * bs as u64, 0));
        assert_eq!((chk.1, chk.2), (0, reqs), "every read verified good");
        assert_eq!(rs.latency.count(), reqs);
    }

    #[test]
    fn writes_and_reads_a_real_file_with_depth() {
        let Some(()) = uring_or_skip() else { return };
        let t = TempFile::new("buffered");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&t.0)
            .unwrap();
        write_then_verify(&f, 64, 4096);
        assert_eq!(f.metadata().unwrap().len(), 64 * 4096);
    }

    #[test]
    fn direct_io_on_a_real_file_system() {
        let Some(()) = uring_or_skip() else { return };
        let t = TempFile::new("direct");
        let open = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&t.0);
        match open {
            Ok(f) => write_then_verify(&f, 32, 64 * 1024),
            Err(e) => {
                ci_fails(&e.to_string());
                eprintln!("SKIP: O_DIRECT not supported at {}: {e}", t.0.display())
            }
        }
    }

    #[test]
    fn short_reads_at_end_of_file_are_counted() {
        let Some(()) = uring_or_skip() else { return };
        let t = TempFile::new("short");
        std::fs::write(&t.0, vec![7u8; 6144]).unwrap();
        let f = std::fs::File::open(&t.0).unwrap();
        let cfg = UringConfig {
            depth: 4,
            buf_bytes: 4096,
            align: 4096,
        };
        let mut e = UringEngine::new(f.as_raw_fd(), IoOp::Read, &cfg).unwrap();
        let reqs = (0..3).map(|i| Request {
            index: i,
            offset_bytes: i * 4096,
        });
        let s = e.run(reqs, &mut NoHooks).unwrap();
        assert_eq!((s.ops, s.bytes, s.short_ops, s.errors), (3, 6144, 2, 0));
    }

    #[test]
    fn errors_are_counted_with_errno() {
        let Some(()) = uring_or_skip() else { return };
        let t = TempFile::new("wronly");
        std::fs::write(&t.0, [0u8; 4096]).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&t.0).unwrap();
        let cfg = UringConfig {
            depth: 2,
            buf_bytes: 4096,
            align: 4096,
        };
        let mut e = UringEngine::new(f.as_raw_fd(), IoOp::Read, &cfg).unwrap();
        let s = e
            .run(
                (0..5).map(|i| Request {
                    index: i,
                    offset_bytes: 0,
                }),
                &mut NoHooks,
            )
            .unwrap();
        assert_eq!((s.ops, s.errors, s.first_errno), (5, 5, Some(libc::EBADF)));
    }

    #[test]
    fn a_hook_can_stop_the_run() {
        let Some(()) = uring_or_skip() else { return };
        struct StopAfter(u64);
        impl UringHooks for StopAfter {
            fn complete(&mut self, _: &Completion<'_>) -> bool {
                self.0 += 1;
                self.0 < 3
            }
        }
        let cfg = UringConfig {
            depth: 4,
            buf_bytes: 64,
            align: 64,
        };
        let mut e = UringEngine::new(-1, IoOp::Noop, &cfg).unwrap();
        let mut h = StopAfter(0);
        let s = e
            .run(
                (0..1000).map(|i| Request {
                    index: i,
                    offset_bytes: 0,
                }),
                &mut h,
            )
            .unwrap();
        assert!(s.ops >= 3 && s.ops < 1000, "{}", s.ops);
        assert_eq!(s.ops, h.0, "in-flight requests drained and reported");
        assert_eq!(e.in_flight, 0);
    }

    #[test]
    fn rejects_bad_sizing() {
        let cfg = UringConfig {
            depth: 0,
            buf_bytes: 4096,
            align: 4096,
        };
        assert!(matches!(
            UringEngine::new(0, IoOp::Read, &cfg),
            Err(UringError::Config(_))
        ));
        let cfg = UringConfig {
            depth: 1,
            buf_bytes: 4096,
            align: 3000,
        };
        assert!(matches!(
            UringEngine::new(0, IoOp::Read, &cfg),
            Err(UringError::Config(_))
        ));
        let msg = unavailable(io::Error::from_raw_os_error(libc::EPERM)).to_string();
        assert!(msg.contains("seccomp") && msg.contains("psync"), "{msg}");
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        let mut b = AlignedBuf::new(8192, 4096).unwrap();
        assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[8191] = 1;
        assert_eq!(b.as_slice().len(), 8192);
    }
}
