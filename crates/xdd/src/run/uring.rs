//! `-engine uring`: one thread keeps up to `depth` requests in flight with
//! io_uring, instead of one QThread per outstanding request.
//!
//! The engine owns `depth` slots, each a (token, buffer) pair: the token is
//! the slot index, sent as the request's `user_data`, and the buffer is a
//! region of one [`IoBuffer`] allocated once, aligned for O_DIRECT (the
//! caller may pass its own, in shared memory or locked). A slot's buffer is
//! handed to the kernel when its request is submitted and is not touched
//! again until that request's completion is reaped. Requests are pulled lazily from an
//! iterator of [`Request`]s (typically from [`crate::plan::seek::PassSeeks`]), so
//! an adapter can pace them (`-throttle`) or stop them early.
//!
//! ```no_run
//! use iolab_xdd::run::uring::{IoOp, Request, UringConfig, UringEngine, NoHooks};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = std::fs::File::open("/etc/hostname")?;
//! let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
//! let cfg = UringConfig { depth: 8, buf_bytes: 4096, align: 4096, ..UringConfig::default() };
//! let mut engine = UringEngine::new(fd, IoOp::Read, &cfg)?; // Err names why io_uring is missing
//! let reqs = (0..4).map(|i| Request { index: i, offset_bytes: i * 4096 });
//! let stats = engine.run(reqs, &mut NoHooks)?;
//! println!("{} ops, {} bytes, p50 {} ns", stats.ops, stats.bytes, stats.latency.percentile(0.5));
//! # Ok(()) }
//! ```
//!
//! Per request the loop does no allocation, formatting or locking: it
//! fills free slots, submitting them in growing chunks (1, 2, 4, ...) so
//! the device starts on the first while the next are prepared, waits for
//! at least one completion (with the last chunk, in one system call) and
//! reaps every completion that is ready.
//!
//! What makes it as fast as fio's io_uring engine (measurements in
//! docs/xdd.md), each optional and dropped when the kernel refuses it
//! ([`Tuning`]): the ring is set up for one issuing thread that reaps its
//! own completions (SINGLE_ISSUER, COOP_TASKRUN, DEFER_TASKRUN), the file is
//! registered (requests name it by index, no per-request file lookup) and
//! the slot buffers are registered (READ_FIXED/WRITE_FIXED, no per-request
//! page pinning). The clock is read once per submitted batch and once per
//! reaped batch, as fio does: every request of a batch leaves in the same
//! system call, and every completion of a reap was posted before it began.

use crate::run::buffer::IoBuffer;
use io_uring::{opcode, squeue, types, IoUring};
use iolab_core::clock::mono_ns;
use iolab_core::stats::Histogram;
use std::io;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
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

/// Optional ring features. Each is asked for only when set, and dropped
/// without error when the kernel refuses it (older kernels, seccomp, a
/// locked-memory limit); [`UringEngine::tuning`] says which are in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Set the ring up for one issuing thread that reaps its own
    /// completions (IORING_SETUP_SINGLE_ISSUER, COOP_TASKRUN and, Linux
    /// 6.1+, DEFER_TASKRUN): completions are posted when the thread asks
    /// for them, not by interrupting it.
    pub setup_flags: bool,
    /// Register the file: requests name it by a fixed index, sparing the
    /// kernel a file lookup and reference count per request.
    pub fixed_file: bool,
    /// Register the slot buffers (READ_FIXED/WRITE_FIXED): their pages are
    /// pinned once, not at every request.
    pub fixed_buffers: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Self::ALL
    }
}

impl Tuning {
    /// Every optional feature (the default).
    pub const ALL: Self = Self {
        setup_flags: true,
        fixed_file: true,
        fixed_buffers: true,
    };
    /// None: a plain ring, plain reads and writes.
    pub const NONE: Self = Self {
        setup_flags: false,
        fixed_file: false,
        fixed_buffers: false,
    };
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
    /// Extra bytes per slot: a request is a window of `buf_bytes` that
    /// [`UringHooks::place`] may start anywhere in its slot's
    /// `buf_bytes + slack_bytes` (unique write data uses it; see
    /// [`crate::plan::unique`]).
    pub slack_bytes: usize,
    /// Optional ring features to try.
    pub tuning: Tuning,
}

impl Default for UringConfig {
    fn default() -> Self {
        Self {
            depth: 1,
            buf_bytes: 4096,
            align: 4096,
            slack_bytes: 0,
            tuning: Tuning::ALL,
        }
    }
}

impl UringConfig {
    /// Distance in bytes between two slot buffers: the request size
    /// rounded up to the alignment, so that every slot is aligned.
    pub fn slot_stride(&self) -> Option<usize> {
        self.slot_bytes()?
            .max(1)
            .checked_next_multiple_of(self.align.max(1))
    }

    /// Bytes of one slot: the request and its slack.
    pub fn slot_bytes(&self) -> Option<usize> {
        self.buf_bytes.checked_add(self.slack_bytes)
    }

    /// Size of the one buffer holding every slot.
    pub fn buffer_bytes(&self) -> Option<usize> {
        self.slot_stride()?.checked_mul(self.depth as usize)
    }
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
    /// Monotonic ns just before its batch was submitted.
    pub start_ns: u64,
    /// Monotonic ns when its batch of completions was reaped.
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
    /// Before submission, given the whole slot (request and slack):
    /// patch it and return where the request's bytes start. The default
    /// calls [`UringHooks::prepare`] and starts at 0.
    fn place(&mut self, req: Request, slot: &mut [u8]) -> usize {
        self.prepare(req, slot);
        0
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
    /// `io_uring_enter` calls made (submitting, waiting or both).
    pub enter_calls: u64,
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

/// A slot's request while it is in flight; its token is its index in
/// `UringEngine::slots`, its buffer the token-th region of the buffer.
#[derive(Debug, Clone, Copy)]
struct Slot {
    req: Request,
    start_ns: u64,
    /// Where the request's bytes start in the slot.
    at: usize,
}

/// The io_uring engine for one file descriptor. Not `Send`: a ring set up
/// for a single issuer must be driven by the thread that made it.
pub struct UringEngine {
    ring: IoUring,
    fd: RawFd,
    op: IoOp,
    /// Dropped by hand in `Drop`, and only when nothing is in flight.
    buf: ManuallyDrop<IoBuffer>,
    buf_bytes: usize,
    slack: usize,
    stride: usize,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Tokens queued since the last submission (capacity: depth).
    batch: Vec<u32>,
    in_flight: u32,
    tuning: Tuning,
    /// `io_uring_enter` calls made since the last `run` began.
    enter_calls: u64,
    _one_thread: PhantomData<*mut ()>,
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

/// Sets up a ring, with the single-issuer flags when asked and accepted:
/// all three (6.1+), else SINGLE_ISSUER and COOP_TASKRUN (6.0), else none.
/// Returns the ring and whether any flag was accepted.
fn setup_ring(entries: u32, flags: bool) -> Result<(IoUring, bool), UringError> {
    if flags {
        let mut b = IoUring::builder();
        b.setup_single_issuer()
            .setup_coop_taskrun()
            .setup_defer_taskrun();
        if let Ok(r) = b.build(entries) {
            return Ok((r, true));
        }
        let mut b = IoUring::builder();
        b.setup_single_issuer().setup_coop_taskrun();
        if let Ok(r) = b.build(entries) {
            return Ok((r, true));
        }
    }
    let ring = IoUring::new(entries).map_err(unavailable)?;
    Ok((ring, false))
}

fn check_config(cfg: &UringConfig) -> Result<usize, UringError> {
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
    cfg.buffer_bytes()
        .ok_or(UringError::Config("slot buffers larger than memory"))
}

impl UringEngine {
    /// Sets up a ring of `cfg.depth` entries and its slot buffers (on the
    /// heap) for `fd`, which must stay open while [`UringEngine::run`] runs.
    pub fn new(fd: RawFd, op: IoOp, cfg: &UringConfig) -> Result<Self, UringError> {
        let bytes = check_config(cfg)?;
        let buf = IoBuffer::heap(bytes, cfg.align)
            .map_err(|_| UringError::Config("cannot allocate the slot buffers"))?;
        Self::with_buffer(fd, op, cfg, buf)
    }

    /// As [`UringEngine::new`], with slot buffers carved out of `buf`
    /// (at least [`UringConfig::buffer_bytes`] long, aligned to
    /// `cfg.align`): shared memory or locked pages, as the caller chose.
    pub fn with_buffer(
        fd: RawFd,
        op: IoOp,
        cfg: &UringConfig,
        buf: IoBuffer,
    ) -> Result<Self, UringError> {
        let bytes = check_config(cfg)?;
        if buf.len() < bytes || !buf.address().is_multiple_of(cfg.align) {
            return Err(UringError::Config(
                "the slot buffer is too small or misaligned",
            ));
        }
        let entries = cfg.depth.next_power_of_two();
        let (ring, setup_flags) = setup_ring(entries, cfg.tuning.setup_flags)?;
        let idle = Slot {
            req: Request {
                index: 0,
                offset_bytes: 0,
            },
            start_ns: 0,
            at: 0,
        };
        let mut e = Self {
            ring,
            fd,
            op,
            buf: ManuallyDrop::new(buf),
            buf_bytes: cfg.buf_bytes,
            slack: cfg.slack_bytes,
            stride: cfg.slot_stride().unwrap_or(bytes),
            slots: vec![idle; cfg.depth as usize],
            free: (0..cfg.depth).rev().collect(),
            batch: Vec::with_capacity(cfg.depth as usize),
            in_flight: 0,
            tuning: Tuning {
                setup_flags,
                ..Tuning::NONE
            },
            enter_calls: 0,
            _one_thread: PhantomData,
        };
        e.register(cfg.tuning);
        Ok(e)
    }

    /// Registers the file and the slot buffers when asked; a refusal
    /// leaves the plain path in use.
    fn register(&mut self, want: Tuning) {
        let io = self.op != IoOp::Noop && self.fd >= 0;
        let sub = self.ring.submitter();
        self.tuning.fixed_file = io && want.fixed_file && sub.register_files(&[self.fd]).is_ok();
        // One registered buffer per slot, indexed by token (at most 16384).
        let per_slot = u16::try_from(self.slots.len()).is_ok();
        if io && want.fixed_buffers && per_slot && self.buf_bytes > 0 {
            let len = self.buf.len();
            let base = self.buf.region_mut(0, len).as_mut_ptr();
            let iovecs: Vec<libc::iovec> = (0..self.slots.len())
                .map(|i| libc::iovec {
                    // SAFETY: slot i lies inside the buffer (its size was
                    // checked against depth * stride).
                    iov_base: unsafe { base.add(i * self.stride) }.cast(),
                    iov_len: self.buf_bytes + self.slack,
                })
                .collect();
            // SAFETY: every iovec points into `self.buf`, which is freed
            // only in `Drop` once nothing is in flight; the kernel keeps the
            // registered pages pinned by itself until the ring closes.
            self.tuning.fixed_buffers = unsafe { sub.register_buffers(&iovecs) }.is_ok();
        }
    }

    /// The optional features in use (those asked for and accepted).
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Slot buffer `i` (for pre-filling write data once before a run).
    pub fn buffer_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        (i < self.slots.len()).then(|| {
            self.buf
                .region_mut(i * self.stride, self.buf_bytes + self.slack)
        })
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
        self.enter_calls = 0;
        loop {
            if issuing {
                issuing = self.fill(&mut reqs, hooks);
                self.stamp_batch();
            }
            if self.in_flight == 0 {
                stats.enter_calls = self.enter_calls;
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
        // Submitted in chunks of 1, 2, 4, ... requests: the device starts
        // on the first while the kernel still prepares the next ones. One
        // submission of the whole batch left the device idle for that time
        // and ran the queue in lock step (0.8-0.97 of fio on a virtio disk;
        // see docs/xdd.md); a submission per request costs a system call
        // each, as fio's default does.
        let mut chunk = 1;
        while let Some(&token) = self.free.last() {
            if self.batch.len() >= chunk {
                self.stamp_batch();
                // A refusal (EBUSY) leaves the entries queued: the next
                // submit_and_wait sends them or reports the error.
                self.ring.submit().ok();
                self.enter_calls += 1;
                chunk *= 2;
            }
            let Some(req) = reqs.next() else {
                return false;
            };
            self.free.pop();
            let slot = self
                .buf
                .region_mut(token as usize * self.stride, self.buf_bytes + self.slack);
            let at = hooks.place(req, slot).min(self.slack);
            self.slots[token as usize].req = req;
            self.slots[token as usize].at = at;
            let entry = self.entry(token);
            // SAFETY: the entry points at slot `token`'s region, which is
            // neither reused nor freed until this entry's completion is
            // reaped: the slot leaves the free list here and returns to it
            // only in `reap`, and `Drop` waits for (or leaks) in-flight
            // slots. The ring has room: it has at least `depth` entries
            // and at most `depth` are queued or in flight.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_err() {
                // Only if the kernel has not consumed earlier entries yet.
                self.ring.submit().ok();
                self.enter_calls += 1;
                // SAFETY: as above.
                if unsafe { self.ring.submission().push(&entry) }.is_err() {
                    self.free.push(token);
                    return true;
                }
            }
            self.batch.push(token);
            self.in_flight += 1;
        }
        true
    }

    /// Gives the requests queued since the last submission their start
    /// time: they leave together in the next system call.
    fn stamp_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let now = mono_ns();
        for &t in &self.batch {
            self.slots[t as usize].start_ns = now;
        }
        self.batch.clear();
    }

    fn submit_and_wait(&mut self) -> io::Result<()> {
        loop {
            self.enter_calls += 1;
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
        let want = self.buf_bytes as i32;
        let end_ns = mono_ns();
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            let token = cqe.user_data() as u32;
            let slot = self.slots[token as usize];
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
                buf: self
                    .buf
                    .region(token as usize * self.stride + slot.at, self.buf_bytes),
            };
            go_on &= hooks.complete(&c);
            self.free.push(token);
            self.in_flight -= 1;
        }
        go_on
    }

    /// The submission entry for slot `token`'s request.
    fn entry(&mut self, token: u32) -> squeue::Entry {
        let Slot { req, at, .. } = self.slots[token as usize];
        let off = req.offset_bytes;
        let len = self.buf_bytes as u32;
        let ptr = self
            .buf
            .region_mut(token as usize * self.stride + at, self.buf_bytes)
            .as_mut_ptr();
        let e = match (self.tuning.fixed_file, self.op) {
            (_, IoOp::Noop) => opcode::Nop::new().build(),
            (true, op) => self.rw(types::Fixed(0), op, ptr, len, token, off),
            (false, op) => self.rw(types::Fd(self.fd), op, ptr, len, token, off),
        };
        e.user_data(u64::from(token))
    }

    /// A read or write of `len` bytes at `ptr`, through the registered
    /// buffer `token` when buffers are registered.
    fn rw<F: RwTarget>(
        &self,
        fd: F,
        op: IoOp,
        ptr: *mut u8,
        len: u32,
        token: u32,
        off: u64,
    ) -> squeue::Entry {
        let index = token as u16;
        match (op == IoOp::Read, self.tuning.fixed_buffers) {
            (true, true) => F::read_fixed(fd, ptr, len, index, off),
            (true, false) => F::read(fd, ptr, len, off),
            (false, true) => F::write_fixed(fd, ptr, len, index, off),
            (false, false) => F::write(fd, ptr, len, off),
        }
    }
}

/// A file named by descriptor or by registered index; the io-uring crate
/// takes either through a sealed trait, so this picks the opcode builder.
trait RwTarget: Copy {
    fn read(self, ptr: *mut u8, len: u32, off: u64) -> squeue::Entry;
    fn write(self, ptr: *mut u8, len: u32, off: u64) -> squeue::Entry;
    fn read_fixed(self, ptr: *mut u8, len: u32, index: u16, off: u64) -> squeue::Entry;
    fn write_fixed(self, ptr: *mut u8, len: u32, index: u16, off: u64) -> squeue::Entry;
}

macro_rules! rw_target {
    ($t:ty) => {
        impl RwTarget for $t {
            fn read(self, ptr: *mut u8, len: u32, off: u64) -> squeue::Entry {
                opcode::Read::new(self, ptr, len).offset(off).build()
            }
            fn write(self, ptr: *mut u8, len: u32, off: u64) -> squeue::Entry {
                opcode::Write::new(self, ptr, len).offset(off).build()
            }
            fn read_fixed(self, ptr: *mut u8, len: u32, index: u16, off: u64) -> squeue::Entry {
                opcode::ReadFixed::new(self, ptr, len, index)
                    .offset(off)
                    .build()
            }
            fn write_fixed(self, ptr: *mut u8, len: u32, index: u16, off: u64) -> squeue::Entry {
                opcode::WriteFixed::new(self, ptr, len, index)
                    .offset(off)
                    .build()
            }
        }
    };
}
rw_target!(types::Fd);
rw_target!(types::Fixed);

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Slot buffers must outlive the kernel's use of them: wait for every
        // in-flight request; if waiting fails, leak the buffer instead.
        while self.in_flight > 0 {
            if self.ring.submit_and_wait(self.in_flight as usize).is_err() {
                return; // `buf` is never dropped: leaked
            }
            let n = self.ring.completion().count() as u32;
            self.in_flight -= n.min(self.in_flight);
        }
        // SAFETY: nothing is in flight, so the kernel no longer writes the
        // buffer (registered pages stay pinned by the ring, not by us), and
        // `buf` is not used again.
        unsafe { ManuallyDrop::drop(&mut self.buf) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::datapat::{DataPattern, Verifier, VerifyMode};
    use crate::plan::seek::{SeekConfig, SeekPattern, SeekPlan};
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
                iolab_core::say!("SKIP: {e}");
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
            ..UringConfig::default()
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

    /// With slack, a request is the window `place` chose in its slot:
    /// the file gets those bytes, and completions see the same window.
    #[test]
    fn slack_lets_a_request_start_anywhere_in_its_slot() {
        let Some(()) = uring_or_skip() else { return };
        let t = TempFile::new("slack");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&t.0)
            .unwrap();
        let cfg = UringConfig {
            depth: 3,
            buf_bytes: 4096,
            slack_bytes: 8192,
            ..UringConfig::default()
        };
        let mut e = UringEngine::new(f.as_raw_fd(), IoOp::Write, &cfg).unwrap();
        for i in 0..3 {
            let b = e.buffer_mut(i).unwrap();
            assert_eq!(b.len(), 3 * 4096);
            b.chunks_mut(4096)
                .enumerate()
                .for_each(|(k, c)| c.fill(k as u8 + 1));
        }
        /// Request i starts (i % 3) * 4 KiB into its slot; completions
        /// must see that window.
        struct Window(u64);
        impl UringHooks for Window {
            fn place(&mut self, req: Request, _slot: &mut [u8]) -> usize {
                (req.index % 3) as usize * 4096
            }
            fn complete(&mut self, c: &Completion<'_>) -> bool {
                self.0 += u64::from(c.buf[0] == (c.req.index % 3) as u8 + 1);
                true
            }
        }
        let mut h = Window(0);
        let reqs = (0..9).map(|i| Request {
            index: i,
            offset_bytes: i * 4096,
        });
        let st = e.run(reqs, &mut h).unwrap();
        assert_eq!((st.ops, st.errors, h.0), (9, 0, 9));
        let data = std::fs::read(&t.0).unwrap();
        for (i, c) in data.chunks(4096).enumerate() {
            assert!(c.iter().all(|&b| b == (i % 3) as u8 + 1), "request {i}");
        }
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
                iolab_core::say!("SKIP: O_DIRECT not supported at {}: {e}", t.0.display())
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
            ..UringConfig::default()
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
            ..UringConfig::default()
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
            ..UringConfig::default()
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
            ..UringConfig::default()
        };
        assert!(matches!(
            UringEngine::new(0, IoOp::Read, &cfg),
            Err(UringError::Config(_))
        ));
        let cfg = UringConfig {
            depth: 1,
            buf_bytes: 4096,
            align: 3000,
            ..UringConfig::default()
        };
        assert!(matches!(
            UringEngine::new(0, IoOp::Read, &cfg),
            Err(UringError::Config(_))
        ));
        let msg = unavailable(io::Error::from_raw_os_error(libc::EPERM)).to_string();
        assert!(msg.contains("seccomp") && msg.contains("psync"), "{msg}");
    }

    #[test]
    fn slots_are_aligned_regions_of_one_buffer() {
        let cfg = UringConfig {
            depth: 3,
            buf_bytes: 5000,
            align: 4096,
            ..UringConfig::default()
        };
        assert_eq!(
            (cfg.slot_stride(), cfg.buffer_bytes()),
            (Some(8192), Some(3 * 8192))
        );
        let mut e = UringEngine::new(-1, IoOp::Noop, &cfg).unwrap();
        for i in 0..3 {
            let b = e.buffer_mut(i).unwrap();
            assert_eq!((b.len(), b.as_ptr() as usize % 4096), (5000, 0));
            b.fill(i as u8 + 1);
        }
        assert!(e.buffer_mut(3).is_none());
        assert!(
            e.buffer_mut(0).unwrap().iter().all(|&x| x == 1),
            "slots do not overlap"
        );
        let small = IoBuffer::heap(8192, 4096).unwrap();
        assert!(matches!(
            UringEngine::with_buffer(-1, IoOp::Noop, &cfg, small),
            Err(UringError::Config(_))
        ));
    }

    /// Reads a file written with a known byte through an engine built
    /// with `tuning`, from `buf`; returns the features the engine used.
    fn read_back(tuning: Tuning, shared: bool) -> Tuning {
        let t = TempFile::new(
            &format!("tuning-{tuning:?}-{shared}").replace([' ', '{', '}', ':', ','], ""),
        );
        std::fs::write(&t.0, vec![9u8; 16 * 4096]).unwrap();
        let f = std::fs::File::open(&t.0).unwrap();
        let cfg = UringConfig {
            depth: 4,
            buf_bytes: 4096,
            align: 4096,
            slack_bytes: 0,
            tuning,
        };
        let buf = IoBuffer::new(cfg.buffer_bytes().unwrap(), 4096, shared).unwrap();
        let mut e = UringEngine::with_buffer(f.as_raw_fd(), IoOp::Read, &cfg, buf).unwrap();
        struct AllNines(u64);
        impl UringHooks for AllNines {
            fn complete(&mut self, c: &Completion<'_>) -> bool {
                self.0 += u64::from(c.buf.iter().all(|&x| x == 9));
                true
            }
        }
        let mut h = AllNines(0);
        let reqs = (0..16).map(|i| Request {
            index: i,
            offset_bytes: i * 4096,
        });
        let s = e.run(reqs, &mut h).unwrap();
        assert_eq!((s.ops, s.bytes, s.errors, h.0), (16, 16 * 4096, 0, 16));
        // At least one per refill of the 4 slots, at most 3 per request.
        assert!((4..=48).contains(&s.enter_calls), "{}", s.enter_calls);
        e.tuning()
    }

    #[test]
    fn a_plain_ring_without_the_optional_features_works() {
        let Some(()) = uring_or_skip() else { return };
        assert_eq!(read_back(Tuning::NONE, false), Tuning::NONE);
    }

    #[test]
    fn optional_features_are_used_only_when_accepted() {
        let Some(()) = uring_or_skip() else { return };
        // Whatever this kernel accepts, the engine reads correctly, from
        // heap or shared memory, and never claims a feature not asked for.
        for shared in [false, true] {
            let got = read_back(Tuning::ALL, shared);
            iolab_core::say!("kernel accepted {got:?} (shared memory: {shared})");
        }
        let only_file = Tuning {
            fixed_file: true,
            ..Tuning::NONE
        };
        let got = read_back(only_file, false);
        assert!(!got.setup_flags && !got.fixed_buffers, "{got:?}");
    }
}
