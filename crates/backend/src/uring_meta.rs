//! The POSIX backend's [`MetaQueue`]: metadata operations through
//! io_uring, up to `depth` in flight for the thread that made the queue.
//!
//! Each operation holds one slot, a (token, buffers) pair: the token is
//! the slot's index and rides in every request's `user_data` (with the
//! step of the chain in its low bits); the buffers are the slot's copy of
//! the path, its `statx` result and its data region. A slot leaves the
//! free list in [`MetaQueue::push`] and comes back only when the last
//! request of its chain completes, so the kernel never sees a buffer that
//! is being reused.
//!
//! Order inside an operation is the kernel's: a create is a chain of
//! linked requests (open with O_CREAT into the ring's own descriptor
//! table, write, fsync, close), each starting once the one before it
//! completed. The file never enters the process's descriptor table
//! (io_uring's direct descriptors: slot i opens into fixed file i), so
//! tasks on threads do not share a table lock for it. After the open,
//! links are hard: a failed write still closes the file. A failed open
//! cancels the rest of its chain.
//!
//! The submitting thread works too. On Linux up to 6.18 at least, every
//! path operation (an open that creates, statx, mkdirat, unlinkat) goes
//! to io_uring's worker threads (io-wq), never inline; the thread that
//! submitted them would only sleep until one completes. So when the
//! kernel already holds `depth - 1` operations, the queue runs the next
//! one itself, with the plain system calls, and hands it over at the
//! next [`MetaQueue::complete`] beside the kernel's. At most `depth`
//! operations are in flight either way: on a file system with a round
//! trip, that one waits its round trip with the others; on a local one,
//! where the handoff to a worker costs about what the call does, the
//! thread and the workers share the work. The workers are kept off the
//! CPU the thread was on when it made the queue (where it may run on
//! others), so that the two do not take turns on one CPU. A directory's
//! create or removal the thread runs itself whatever the kernel holds:
//! it holds the parent's lock for nearly all its work, so beside the
//! workers it would only take turns on that lock. Every operation runs
//! in the thread while the process has a queue per CPU it may run on:
//! its tasks then leave no CPU to the workers. Otherwise each kind of
//! operation is timed both ways, beside the workers and alone in the
//! thread, and the faster kept for a while ([`Choice`]). Turns in the thread
//! that wait (two in a row past [`SLOW_HERE_NS`]) leave the next ones
//! to the kernel for a while, so a round trip is waited for in the ring.
//!
//! What is missing is named at [`UringMeta::new`]: no io_uring at all
//! (old kernel, seccomp, `kernel.io_uring_disabled`), an opcode the
//! kernel lacks (asked with IORING_REGISTER_PROBE) or no direct
//! descriptors (Linux 5.19).

use crate::queue::{MetaDone, MetaError, MetaOp, MetaQueue};
use io_uring::{opcode, squeue, types, IoUring, Probe};
use std::ffi::CStr;
use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Queues alive in this process, one per task that has one. With as
/// many as the CPUs it may run on, the tasks leave no CPU to io-wq's
/// workers, and a thread runs its operations itself (see `my_turn`).
static QUEUES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of a slot's path buffer: PATH_MAX, its NUL included.
const PATH_BYTES: usize = libc::PATH_MAX as usize;
/// io_uring_enter's IORING_ENTER_GETEVENTS (linux/io_uring.h), which the
/// crate does not export.
const ENTER_GETEVENTS: u32 = 1;
/// An operation that ran in the submitting thread for longer than this
/// waited on a device or a server rather than the CPU: past it, the
/// thread leaves its turns to the kernel's workers (tmpfs: 2-6 us per
/// operation; the delayed FUSE file system of the tests: 5 ms per request).
const SLOW_HERE_NS: u64 = 50_000;
/// Most turns left to the kernel in a row before the thread tries again.
const MAX_BACKOFF: u32 = 4096;
/// Most requests in one chain (open, write, fsync, close).
const CHAIN_MAX: u32 = 4;
/// Steps kept in the low bits of `user_data`.
const STEP_BITS: u32 = 3;
/// Completions of one kind that make an epoch of the [`Choice`].
const EPOCH: u32 = 4096;
/// Epochs the faster way is kept before both are tried again.
const KEEP: u32 = 32;
/// A pause this long between two completions of one kind ends its
/// epoch unmeasured: the phase ended, or the task waited for the others.
const GAP_NS: u64 = 50_000_000;
/// Beside the workers is kept only when its epoch took less than this
/// share (per cent) of the one alone: alone costs the CPU less.
const BESIDE_WINS_BELOW_PCT: u64 = 95;

/// The requests of one operation, in chain order.
type Chain = [squeue::Entry; CHAIN_MAX as usize];

/// Where in its chain a request is; its CQE says which step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Step {
    Open = 0,
    Create = 1,
    Write = 2,
    Read = 3,
    Fsync = 4,
    Close = 5,
    /// The one request of a one-request operation (mkdir, stat, ...).
    Only = 6,
}

impl Step {
    fn from_bits(b: u64) -> Step {
        match b {
            0 => Step::Open,
            1 => Step::Create,
            2 => Step::Write,
            3 => Step::Read,
            4 => Step::Fsync,
            5 => Step::Close,
            _ => Step::Only,
        }
    }
}

/// Kinds of operation ([`Kind`]): the last one's index and one.
const KINDS: usize = Kind::Read as usize + 1;

/// What a slot's operation is, for naming its one request and its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mkdir,
    Rmdir,
    Unlink,
    Stat,
    Create,
    Read,
}

impl Kind {
    fn only_step_name(self) -> &'static str {
        match self {
            Kind::Mkdir => "mkdir",
            Kind::Rmdir => "rmdir",
            Kind::Unlink => "unlink",
            Kind::Stat => "stat",
            Kind::Create => "create",
            Kind::Read => "read",
        }
    }
}

/// Which way the task shares one kind of operation with the kernel's
/// workers while the process leaves them a CPU: beside them (the task
/// runs one itself only when the kernel holds depth - 1) or alone (the
/// task runs every one itself, the kernel taking only what the task
/// leaves it after slow turns). Where a call is fast, a worker's
/// handover costs about what the call does, and which way is faster
/// changes with the machine and the moment: on the 2-core VM this was
/// written on, with 1 task on tmpfs, beside ran file stat at 0.73 x the
/// sync engine in one spell and 1.25 x the bare loop in another. So each
/// way is timed over an epoch of [`EPOCH`] completions, beside first,
/// and the faster is kept for [`KEEP`] epochs; then both are tried
/// again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Choice {
    way: Way,
    /// How long the last epoch beside the workers took.
    beside_ns: u64,
    /// Completions in this epoch, and when it started and last counted.
    count: u32,
    start_ns: u64,
    last_ns: u64,
}

/// Where a [`Choice`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Timing an epoch beside the workers.
    TryBeside,
    /// Timing an epoch alone.
    TryAlone,
    /// Keeping the faster (`alone` or not) for `left` more epochs.
    Kept { alone: bool, left: u32 },
}

impl Choice {
    fn new() -> Choice {
        Choice {
            way: Way::TryBeside,
            beside_ns: 0,
            count: 0,
            start_ns: 0,
            last_ns: 0,
        }
    }

    /// The task runs this kind itself.
    fn alone(&self) -> bool {
        match self.way {
            Way::TryBeside => false,
            Way::TryAlone => true,
            Way::Kept { alone, .. } => alone,
        }
    }

    /// Counts a completion at `now_ns`; the one that ends an epoch starts
    /// the next.
    fn done(&mut self, now_ns: u64) {
        let gap = now_ns.saturating_sub(self.last_ns) > GAP_NS;
        self.last_ns = now_ns;
        if self.start_ns == 0 || gap {
            (self.start_ns, self.count) = (now_ns, 0);
            return;
        }
        self.count += 1;
        if self.count == EPOCH {
            self.epoch(now_ns - self.start_ns);
            (self.start_ns, self.count) = (now_ns, 0);
        }
    }

    /// An epoch of `took_ns` ended: go on to the next step.
    fn epoch(&mut self, took_ns: u64) {
        self.way = match self.way {
            Way::TryBeside => {
                self.beside_ns = took_ns;
                Way::TryAlone
            }
            Way::TryAlone => Way::Kept {
                alone: self.beside_ns * 100 >= took_ns * BESIDE_WINS_BELOW_PCT,
                left: KEEP,
            },
            Way::Kept { left: 1, .. } => Way::TryBeside,
            Way::Kept { alone, left } => Way::Kept {
                alone,
                left: left - 1,
            },
        };
    }
}

/// A slot's operation while in flight.
#[derive(Debug, Clone, Copy)]
struct Slot {
    tag: u64,
    kind: Kind,
    start_ns: u64,
    /// Bytes the data step must move.
    want: u64,
    /// When it ended, for one run in this thread (a CQE's is its reaping).
    end_ns: u64,
    /// Bytes it moved.
    got: u64,
    error: Option<MetaError>,
}

/// An io_uring ring for metadata, with `depth` slots. Not `Send`: it is
/// set up for the one thread that submits on it.
pub(crate) struct UringMeta {
    ring: IoUring,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// `depth` path buffers of [`PATH_BYTES`].
    paths: Vec<u8>,
    /// One statx result per slot.
    stats: Vec<libc::statx>,
    /// `depth` data regions of `data_bytes`.
    data: Vec<u8>,
    data_bytes: usize,
    /// Tokens pushed since the last submission (their clocks start then).
    batch: Vec<u32>,
    /// Submit once this many operations are queued (1, 2, 4, ... per round).
    chunk: usize,
    in_flight: usize,
    /// Of those, the ones the kernel holds (the rest ran in this thread).
    in_ring: usize,
    /// Slots whose operation ran in this thread, to hand over.
    ready: Vec<u32>,
    /// Turns to let pass before this thread runs an operation again,
    /// after one took longer than [`SLOW_HERE_NS`] ...
    here_skip: u32,
    /// ... and how many it was last time (doubling while they stay slow).
    here_backoff: u32,
    /// The last turn here was slow: one alone is a preemption.
    slow_before: bool,
    /// Per [`Kind`], the way it is shared with the workers.
    choices: [Choice; KINDS],
    /// CPUs this process may run on, to compare with [`QUEUES`].
    cpus: usize,
    /// The kernel posts no CQE for a request that succeeded with
    /// IOSQE_CQE_SKIP_SUCCESS (5.17).
    skip_success: bool,
    _one_thread: PhantomData<*mut ()>,
}

/// The opcodes the queue uses, with the names a user can look up.
const NEEDED: &[(u8, &str)] = &[
    (opcode::OpenAt::CODE, "IORING_OP_OPENAT (Linux 5.6)"),
    (opcode::Close::CODE, "IORING_OP_CLOSE (Linux 5.6)"),
    (opcode::Statx::CODE, "IORING_OP_STATX (Linux 5.6)"),
    (opcode::MkDirAt::CODE, "IORING_OP_MKDIRAT (Linux 5.15)"),
    (opcode::UnlinkAt::CODE, "IORING_OP_UNLINKAT (Linux 5.11)"),
    (opcode::Read::CODE, "IORING_OP_READ (Linux 5.6)"),
    (opcode::Write::CODE, "IORING_OP_WRITE (Linux 5.6)"),
    (opcode::Fsync::CODE, "IORING_OP_FSYNC (Linux 5.1)"),
];

fn missing(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, what)
}

/// Why the kernel refused to set up a ring, in words a user can act on.
fn setup_refused(e: io::Error) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no io_uring (Linux 5.1 or later)",
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "refused by sysctl kernel.io_uring_disabled or a seccomp filter (containers)"
        }
        Some(libc::ENOMEM) => "locked-memory limit too low for this queue depth (ulimit -l)",
        _ => "ring setup failed",
    };
    missing(format!("io_uring is not available: {e} ({hint})"))
}

/// Why the kernel refused the table of `depth` direct descriptors: more
/// than the open-file limit (EMFILE, a limit the user can raise) or a
/// kernel without the table (before 5.19).
fn sparse_refused(depth: u32, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::EMFILE) => io::Error::new(
            e.kind(),
            format!(
                "a queue of {depth} needs {depth} direct descriptors, more than the open-file limit (ulimit -n) allows: {e}"
            ),
        ),
        _ => missing(format!(
            "io_uring here has no direct descriptors (a sparse file table, Linux 5.19): {e}"
        )),
    }
}

/// A ring of `entries`, set up for one issuing thread when the kernel
/// accepts it (6.1: completions wait until that thread asks for them).
fn setup_ring(entries: u32) -> io::Result<IoUring> {
    let mut b = IoUring::builder();
    b.setup_single_issuer()
        .setup_coop_taskrun()
        .setup_defer_taskrun();
    if let Ok(r) = b.build(entries) {
        return Ok(r);
    }
    IoUring::new(entries).map_err(setup_refused)
}

impl UringMeta {
    /// A queue of `depth` slots whose data regions hold `data_bytes`.
    pub(crate) fn new(depth: u32, data_bytes: usize) -> io::Result<UringMeta> {
        if depth == 0 || depth > 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("queue depth {depth}: between 1 and 4096"),
            ));
        }
        let ring = setup_ring((depth * CHAIN_MAX).next_power_of_two())?;
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|e| missing(format!("io_uring cannot say which operations it has (IORING_REGISTER_PROBE, Linux 5.6): {e}")))?;
        if let Some((_, name)) = NEEDED.iter().find(|(c, _)| !probe.is_supported(*c)) {
            return Err(missing(format!("io_uring here lacks {name}")));
        }
        ring.submitter()
            .register_files_sparse(depth)
            .map_err(|e| sparse_refused(depth, e))?;
        // The kernel hands path operations (mkdirat, unlinkat, statx, an
        // open that creates) to its io-wq workers, by default at most 4
        // per CPU: on 2 CPUs a queue of 16 kept only 8 in flight
        // (bench/mdtest-vs-syscalls.sh, QD16/QD1 7.9 on a slow file
        // system). As many workers as slots; a kernel before 5.15 keeps
        // its default.
        let _ = ring.submitter().register_iowq_max_workers(&mut [depth, 0]);
        let set = affinity();
        keep_workers_off_this_cpu(&ring, set.as_ref());
        let n = depth as usize;
        let stats = (0..n)
            // SAFETY: statx is plain data, for which all zeroes is valid.
            .map(|_| unsafe { std::mem::zeroed::<libc::statx>() })
            .collect();
        let idle = Slot {
            tag: 0,
            kind: Kind::Stat,
            start_ns: 0,
            want: 0,
            end_ns: 0,
            got: 0,
            error: None,
        };
        let skip_success = ring.params().is_feature_skip_cqe_on_success();
        QUEUES.fetch_add(1, Ordering::Relaxed);
        Ok(UringMeta {
            ring,
            slots: vec![idle; n],
            free: (0..depth).rev().collect(),
            paths: vec![0; n * PATH_BYTES],
            stats,
            data: vec![0; n * data_bytes],
            data_bytes,
            batch: Vec::with_capacity(n),
            chunk: 1,
            in_flight: 0,
            in_ring: 0,
            ready: Vec::with_capacity(n),
            here_skip: 0,
            here_backoff: 0,
            slow_before: false,
            choices: [Choice::new(); KINDS],
            cpus: cpu_count(set.as_ref()),
            skip_success,
            _one_thread: PhantomData,
        })
    }

    /// Copies `path` into slot `token`'s path buffer; a pointer to it.
    fn copy_path(&mut self, token: u32, path: &CStr) -> *const libc::c_char {
        let bytes = path.to_bytes_with_nul();
        let at = token as usize * PATH_BYTES;
        let dst = &mut self.paths[at..at + bytes.len()];
        dst.copy_from_slice(bytes);
        dst.as_ptr().cast()
    }

    /// Refuses what no slot can take, before a slot is taken and whether
    /// the operation goes to the kernel or runs here: a path longer than
    /// PATH_MAX, data larger than a slot's, a removal whose name has a
    /// slash or whose directory has no descriptor.
    fn fits(&self, op: &MetaOp<'_>) -> io::Result<()> {
        if op.path().to_bytes_with_nul().len() > PATH_BYTES {
            return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        let len = match *op {
            MetaOp::Create { dir, data, .. } => at_fd(dir).map(|_| data.len())?,
            MetaOp::Read { dir, len, .. } => at_fd(dir).map(|_| len)?,
            MetaOp::Stat { dir, .. } => at_fd(dir).map(|_| 0)?,
            MetaOp::Rmdir { dir, name } | MetaOp::Unlink { dir, name } => {
                if name.to_bytes().contains(&b'/') {
                    // A name with a slash would be resolved through
                    // directories that a planted link could stand for.
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "a removal through the queue takes one name in its directory, without '/'",
                    ));
                }
                return dir_fd(dir).map(drop);
            }
            MetaOp::Mkdir { dir, .. } => at_fd(dir).map(|_| 0)?,
        };
        if len > self.data_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{len} bytes do not fit the queue's {} bytes per slot",
                    self.data_bytes
                ),
            ));
        }
        Ok(())
    }

    fn user_data(token: u32, step: Step) -> u64 {
        (u64::from(token) << STEP_BITS) | step as u64
    }

    /// Writes `entries` to the submission queue.
    fn queue(&mut self, entries: &[squeue::Entry]) {
        for e in entries {
            // SAFETY: every pointer in the entries is into this queue's
            // slot buffers (path, statx, data) of a slot that is off the
            // free list until its chain's last CQE is reaped, and the
            // buffers are never resized. The ring has CHAIN_MAX entries per
            // slot and is drained at every `complete`, so it has room;
            // should it not, the entries are sent first.
            while unsafe { self.ring.submission().push(e) }.is_err() {
                let _ = self.ring.submit();
            }
        }
    }

    /// The request chain of `op` in slot `token`.
    fn entries(
        &mut self,
        token: u32,
        op: &MetaOp<'_>,
        path: *const libc::c_char,
    ) -> io::Result<(Chain, usize)> {
        let only = |e: squeue::Entry| e.user_data(Self::user_data(token, Step::Only));
        let mut out: Chain = std::array::from_fn(|_| opcode::Nop::new().build());
        let n = match *op {
            MetaOp::Mkdir { dir, mode, .. } => {
                let at = types::Fd(at_fd(dir)?);
                out[0] = only(opcode::MkDirAt::new(at, path).mode(mode).build());
                1
            }
            // Relative to a directory descriptor: unlinkat resolves one
            // name in it and removes that name, a link included, without
            // following anything.
            MetaOp::Rmdir { dir, .. } => {
                let at = types::Fd(dir_fd(dir)?);
                let e = opcode::UnlinkAt::new(at, path).flags(libc::AT_REMOVEDIR);
                out[0] = only(e.build());
                1
            }
            MetaOp::Unlink { dir, .. } => {
                out[0] = only(opcode::UnlinkAt::new(types::Fd(dir_fd(dir)?), path).build());
                1
            }
            MetaOp::Stat { dir, .. } => {
                let st: *mut libc::statx = &mut self.stats[token as usize];
                let at = types::Fd(at_fd(dir)?);
                let e = opcode::Statx::new(at, path, st.cast()).mask(libc::STATX_BASIC_STATS);
                out[0] = only(e.build());
                1
            }
            MetaOp::Create {
                dir,
                data,
                exclusive,
                fsync,
                ..
            } => {
                let at = (at_fd(dir)?, path);
                self.create_chain(token, at, data, exclusive, fsync, &mut out)
            }
            MetaOp::Read { dir, len, .. } => {
                self.read_chain(token, (at_fd(dir)?, path), len, &mut out)
            }
        };
        Ok((out, n))
    }

    fn data_region(&mut self, token: u32) -> *mut u8 {
        self.data[token as usize * self.data_bytes..].as_mut_ptr()
    }

    fn create_chain(
        &mut self,
        token: u32,
        at: (libc::c_int, *const libc::c_char),
        data: &[u8],
        exclusive: bool,
        fsync: bool,
        out: &mut Chain,
    ) -> usize {
        let ptr = self.data_region(token);
        let off = token as usize * self.data_bytes;
        self.data[off..off + data.len()].copy_from_slice(data);
        let excl = if exclusive { libc::O_EXCL } else { 0 };
        // No O_CLOEXEC: a direct descriptor is never in the process's
        // table (the kernel refuses the flag with EINVAL).
        let flags = libc::O_CREAT | excl | libc::O_WRONLY;
        let fixed = types::Fixed(token);
        let mut n = 0;
        out[n] = self.open(token, at, flags, 0o644, Step::Create);
        n += 1;
        if !data.is_empty() {
            let w = opcode::Write::new(fixed, ptr, data.len() as u32).offset(0);
            out[n] = w.build().user_data(Self::user_data(token, Step::Write));
            n += 1;
        }
        if fsync {
            let f = self.skip(opcode::Fsync::new(fixed).build());
            out[n] = f.user_data(Self::user_data(token, Step::Fsync));
            n += 1;
        }
        out[n] = Self::close(token);
        Self::link(&mut out[..=n])
    }

    fn read_chain(
        &mut self,
        token: u32,
        at: (libc::c_int, *const libc::c_char),
        len: usize,
        out: &mut Chain,
    ) -> usize {
        let ptr = self.data_region(token);
        let mut n = 0;
        // Straight to the kernel's workers: tried inline, an open whose
        // name is cached goes on to the file system's open in the
        // submitting thread, which on a network file system waits there
        // for its round trip and so holds up every operation behind it.
        let open = self.open(token, at, libc::O_RDONLY, 0, Step::Open);
        out[n] = open.flags(squeue::Flags::ASYNC);
        n += 1;
        if len > 0 {
            let r = opcode::Read::new(types::Fixed(token), ptr, len as u32).offset(0);
            out[n] = r.build().user_data(Self::user_data(token, Step::Read));
            n += 1;
        }
        out[n] = Self::close(token);
        Self::link(&mut out[..=n])
    }

    /// An open of `at` (a directory descriptor or AT_FDCWD, and a path)
    /// into fixed file `token`, its CQE skipped on success.
    fn open(
        &self,
        token: u32,
        (dir, path): (libc::c_int, *const libc::c_char),
        flags: i32,
        mode: u32,
        step: Step,
    ) -> squeue::Entry {
        let slot = types::DestinationSlot::try_from_slot_target(token).ok();
        let e = opcode::OpenAt::new(types::Fd(dir), path)
            .flags(flags)
            .mode(mode)
            .file_index(slot)
            .build();
        self.skip(e).user_data(Self::user_data(token, step))
    }

    fn close(token: u32) -> squeue::Entry {
        opcode::Close::new(types::Fixed(token))
            .build()
            .user_data(Self::user_data(token, Step::Close))
    }

    fn skip(&self, e: squeue::Entry) -> squeue::Entry {
        match self.skip_success {
            true => e.flags(squeue::Flags::SKIP_SUCCESS),
            false => e,
        }
    }

    /// Links a chain: the open soft (its failure cancels the rest), every
    /// later step hard (a failed write still closes the file).
    fn link(chain: &mut [squeue::Entry]) -> usize {
        let n = chain.len();
        for (i, e) in chain.iter_mut().enumerate().take(n - 1) {
            let flag = match i {
                0 => squeue::Flags::IO_LINK,
                _ => squeue::Flags::IO_HARDLINK,
            };
            *e = e.clone().flags(flag);
        }
        n
    }

    /// Starts the clocks of what was pushed since the last submission.
    fn start_clocks(&mut self) {
        let now = mono_ns();
        for &t in &self.batch {
            self.slots[t as usize].start_ns = now;
        }
        self.batch.clear();
    }

    /// Starts the clocks of what was pushed since the last submission and
    /// sends it; `wait` completions are awaited in the same call, until
    /// the monotonic `deadline_ns` when one is given.
    fn send(&mut self, wait: usize, deadline_ns: Option<u64>) -> io::Result<()> {
        self.start_clocks();
        loop {
            let r = match deadline_ns {
                None => self.ring.submit_and_wait(wait),
                Some(end) if wait == 0 || end <= mono_ns() => self.ring.submit(),
                Some(end) => {
                    let left = end - mono_ns().min(end);
                    let ts = types::Timespec::new()
                        .sec(left / 1_000_000_000)
                        .nsec((left % 1_000_000_000) as u32);
                    let args = types::SubmitArgs::new().timespec(&ts);
                    self.ring.submitter().submit_with_args(wait, &args)
                }
            };
            if let Some(r) = entered(r) {
                return r;
            }
        }
    }

    /// Records one CQE in its slot; true when it ends the slot's chain.
    fn record(&mut self, user_data: u64, res: i32) -> bool {
        let token = (user_data >> STEP_BITS) as usize;
        let step = Step::from_bits(user_data & ((1 << STEP_BITS) - 1));
        let slot = &mut self.slots[token];
        let name = match step {
            Step::Open => "open",
            Step::Create => "create",
            Step::Write => "write",
            Step::Read => "read",
            Step::Fsync => "fsync",
            Step::Close => "close",
            Step::Only => slot.kind.only_step_name(),
        };
        if res < 0 && res != -libc::ECANCELED {
            slot.error.get_or_insert(MetaError {
                step: name,
                errno: -res,
                short: None,
            });
        }
        match step {
            Step::Write | Step::Read if res >= 0 => {
                slot.got = res as u64;
                if slot.got < slot.want {
                    slot.error.get_or_insert(MetaError {
                        step: name,
                        errno: 0,
                        short: Some((slot.got, slot.want)),
                    });
                }
            }
            Step::Only if res >= 0 && slot.kind == Kind::Stat => {
                slot.got = self.stats[token].stx_size;
            }
            _ => {}
        }
        // A failed open whose CQE was to be skipped on success silences
        // the rest of its chain (the kernel cancels it without CQEs):
        // its own CQE ends the operation.
        let silenced = self.skip_success && res < 0 && matches!(step, Step::Open | Step::Create);
        silenced || matches!(step, Step::Close | Step::Only)
    }
}

/// The descriptor of a directory an operation is relative to; a
/// directory held otherwise (by path, by another backend) cannot be.
fn dir_fd(dir: &crate::Dir) -> io::Result<libc::c_int> {
    dir.raw_fd().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an operation through the queue relative to a directory needs its descriptor",
        )
    })
}

/// The descriptor an item's path is relative to: its directory's, or
/// AT_FDCWD for a path without one.
fn at_fd(dir: Option<&crate::Dir>) -> io::Result<libc::c_int> {
    dir.map_or(Ok(libc::AT_FDCWD), dir_fd)
}

/// Monotonic ns, as the engines' clocks read it.
fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl MetaQueue for UringMeta {
    fn depth(&self) -> usize {
        self.slots.len()
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn push(&mut self, tag: u64, op: &MetaOp<'_>) -> io::Result<()> {
        let Some(&token) = self.free.last() else {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the queue is full: reap completions first",
            ));
        };
        self.fits(op)?;
        let (kind, want) = match *op {
            MetaOp::Mkdir { .. } => (Kind::Mkdir, 0),
            MetaOp::Rmdir { .. } => (Kind::Rmdir, 0),
            MetaOp::Unlink { .. } => (Kind::Unlink, 0),
            MetaOp::Stat { .. } => (Kind::Stat, 0),
            MetaOp::Create { data, .. } => (Kind::Create, data.len() as u64),
            MetaOp::Read { len, .. } => (Kind::Read, len as u64),
        };
        // The chain is built only for the kernel: a turn here needs none.
        let chain = match self.my_turn(kind) {
            true => None,
            false => {
                let path = self.copy_path(token, op.path());
                Some(self.entries(token, op, path)?)
            }
        };
        self.free.pop();
        self.slots[token as usize] = Slot {
            tag,
            kind,
            start_ns: 0,
            want,
            end_ns: 0,
            got: 0,
            error: None,
        };
        self.in_flight += 1;
        let Some((entries, n)) = chain else {
            // This thread's turn (my_turn): it runs here, while the
            // kernel's workers go on with what was sent (all of it).
            if !self.batch.is_empty() {
                self.send(0, None)?;
            }
            self.run_here(token, op);
            self.ready.push(token);
            self.after_here(token);
            return Ok(());
        };
        self.queue(&entries[..n]);
        self.batch.push(token);
        self.in_ring += 1;
        // Sent in chunks of 1, 2, 4, ... operations: the kernel's workers
        // start on the first while the next ones are prepared.
        if self.batch.len() >= self.chunk {
            self.send(0, None)?;
            self.chunk *= 2;
        }
        Ok(())
    }

    fn complete(&mut self, done: &mut dyn FnMut(&MetaDone<'_>)) -> io::Result<usize> {
        self.reap(None, done)
    }

    fn complete_by(
        &mut self,
        deadline_ns: u64,
        done: &mut dyn FnMut(&MetaDone<'_>),
    ) -> io::Result<usize> {
        self.reap(Some(deadline_ns), done)
    }
}

impl UringMeta {
    /// Sends what was pushed, waits for a completion (until the deadline
    /// when one is given) and hands every completion ready to `done`.
    fn reap(
        &mut self,
        deadline_ns: Option<u64>,
        done: &mut dyn FnMut(&MetaDone<'_>),
    ) -> io::Result<usize> {
        self.chunk = 1;
        if self.ready.is_empty() {
            let wait = usize::from(self.in_flight > 0);
            self.send(wait, deadline_ns)?;
        } else {
            // Something is done already: no waiting, but what the kernel
            // finished meanwhile is posted and handed over with it.
            self.start_clocks();
            self.post()?;
        }
        let end_ns = mono_ns();
        let mut finished = self.hand_over_ready(done);
        loop {
            let cqe = {
                let mut cq = self.ring.completion();
                cq.sync();
                cq.next()
            };
            let Some(cqe) = cqe else { break };
            if !self.record(cqe.user_data(), cqe.result()) {
                continue;
            }
            self.hand_over((cqe.user_data() >> STEP_BITS) as u32, end_ns, done);
            self.in_ring -= 1;
            finished += 1;
        }
        Ok(finished)
    }

    /// Sends what is queued and has the kernel post the completions it
    /// holds for this thread (with DEFER_TASKRUN they wait for a
    /// GETEVENTS), without waiting for any.
    fn post(&mut self) -> io::Result<()> {
        let queued = self.ring.submission().len() as u32;
        loop {
            // SAFETY: io_uring_enter with no argument: it reads the
            // entries this queue wrote, whose buffers outlive them.
            let r = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(queued, 0, ENTER_GETEVENTS, None)
            };
            if let Some(r) = entered(r) {
                return r;
            }
        }
    }

    /// Hands the operations that ran in this thread to `done`.
    fn hand_over_ready(&mut self, done: &mut dyn FnMut(&MetaDone<'_>)) -> usize {
        let n = self.ready.len();
        while let Some(token) = self.ready.pop() {
            let end_ns = self.slots[token as usize].end_ns;
            self.hand_over(token, end_ns, done);
        }
        n
    }

    /// Hands slot `token`'s finished operation to `done` and frees it.
    fn hand_over(&mut self, token: u32, end_ns: u64, done: &mut dyn FnMut(&MetaDone<'_>)) {
        let slot = self.slots[token as usize];
        self.choices[slot.kind as usize].done(end_ns);
        let at = token as usize * self.data_bytes;
        let data = match slot.kind {
            Kind::Read => &self.data[at..at + slot.got as usize],
            _ => &[][..],
        };
        done(&MetaDone {
            tag: slot.tag,
            start_ns: slot.start_ns,
            end_ns,
            result: slot.error.map_or(Ok(slot.got), Err),
            data,
        });
        self.free.push(token);
        self.in_flight -= 1;
    }

    /// True when the next operation, of `kind`, runs in this thread: the
    /// kernel holds depth - 1, it makes or removes a directory, its kind
    /// runs alone here for now ([`Choice`]), or the process has a queue
    /// per CPU; and no operation here was slow lately.
    ///
    /// Tasks that fill the CPUs leave none to the kernel's workers, which
    /// then only take CPU time from the tasks and add their handovers: on
    /// tmpfs with 2 tasks on 2 CPUs, beside them file stat ran at
    /// 0.47-0.70 x a bare loop, create at 0.60-0.90, read at 0.45-0.86;
    /// with every operation in the threads at 0.88-1.24, 0.98-1.05 and
    /// 1.13-1.21.
    ///
    /// A directory's create and removal hold its parent's lock for nearly
    /// all of their work, so beside the kernel's workers they only take
    /// turns on it, and every handover of the lock costs: on tmpfs with 1
    /// task, mixed with the workers' they ran at 0.86-0.90 x a bare loop,
    /// all in the thread at 1.01-1.16 x (the sync engine 1.07). Where
    /// they wait on a server, two slow ones send them to the kernel as
    /// any other operation.
    fn my_turn(&mut self, kind: Kind) -> bool {
        let dir_op = matches!(kind, Kind::Mkdir | Kind::Rmdir);
        let kernel_full = self.in_ring + 1 >= self.slots.len();
        // Read only when it decides: the count is shared by every task.
        let crowded = || QUEUES.load(Ordering::Relaxed) >= self.cpus;
        let alone = self.choices[kind as usize].alone();
        if self.slots.len() < 2 || !(kernel_full || dir_op || alone || crowded()) {
            return false;
        }
        if self.here_skip > 0 {
            self.here_skip -= 1;
            return false;
        }
        true
    }

    /// An operation that took long here waited on something (a device, a
    /// server), and the kernel's operations behind it waited to be
    /// reaped and sent again for as long: the next turns go to the
    /// kernel, twice as many each time a probe is slow again.
    fn after_here(&mut self, token: u32) {
        let slot = &self.slots[token as usize];
        if slot.end_ns.saturating_sub(slot.start_ns) < SLOW_HERE_NS {
            self.here_backoff = 0;
            self.slow_before = false;
            return;
        }
        self.slow_before = !self.slow_before;
        if self.slow_before {
            return;
        }
        let depth = self.slots.len() as u32;
        self.here_backoff = (self.here_backoff * 2).clamp(depth * 16, MAX_BACKOFF);
        self.here_skip = self.here_backoff;
    }

    /// Runs `op` of slot `token` in this thread, with the system calls
    /// its chain stands for, and notes its result and clock in the slot.
    fn run_here(&mut self, token: u32, op: &MetaOp<'_>) {
        let t = token as usize;
        let start_ns = mono_ns();
        let r = match *op {
            MetaOp::Mkdir { path, dir, mode } => mkdir_here(here_fd(dir), path, mode),
            MetaOp::Rmdir { dir, name } => unlink_here(dir, name, libc::AT_REMOVEDIR, "rmdir"),
            MetaOp::Unlink { dir, name } => unlink_here(dir, name, 0, "unlink"),
            MetaOp::Stat { path, dir } => stat_here(here_fd(dir), path, &mut self.stats[t]),
            MetaOp::Create {
                path,
                dir,
                data,
                exclusive,
                fsync,
            } => create_here((here_fd(dir), path), data, exclusive, fsync),
            MetaOp::Read { path, dir, len } => {
                let at = t * self.data_bytes;
                read_here((here_fd(dir), path), &mut self.data[at..at + len])
            }
        };
        let slot = &mut self.slots[t];
        slot.start_ns = start_ns;
        slot.end_ns = mono_ns();
        match r {
            Ok(n) => slot.got = n,
            Err(e) => {
                slot.got = e.short.map_or(0, |s| s.0);
                slot.error = Some(e);
            }
        }
    }
}

/// What an io_uring_enter's result means for the queue: None to enter
/// again (a signal came), else done; the deadline (ETIME) or completions
/// due first (EBUSY, the caller reaps them) are not errors.
fn entered(r: io::Result<usize>) -> Option<io::Result<()>> {
    match r {
        Ok(_) => Some(Ok(())),
        Err(e) => match e.raw_os_error() {
            Some(libc::EINTR) => None,
            Some(libc::ETIME | libc::EBUSY) => Some(Ok(())),
            _ => Some(Err(e)),
        },
    }
}

/// A system call's result as the queue reports it: the errno named by
/// `step` when it failed.
fn sys(step: &'static str, rc: isize) -> Result<u64, MetaError> {
    match rc {
        r if r < 0 => Err(MetaError {
            step,
            errno: io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
            short: None,
        }),
        r => Ok(r as u64),
    }
}

/// mkdir in this thread.
fn mkdir_here(at: libc::c_int, path: &CStr, mode: u32) -> Result<u64, MetaError> {
    // SAFETY: a NUL-terminated path.
    sys("mkdir", unsafe { libc::mkdirat(at, path.as_ptr(), mode) }
        as isize)
}

/// The descriptor a turn in this thread resolves a path from (push
/// checked a directory's with `fits`).
fn here_fd(dir: Option<&crate::Dir>) -> libc::c_int {
    at_fd(dir).unwrap_or(-1)
}

/// statx in this thread, as the ring's (links followed, basic fields):
/// the size.
fn stat_here(at: libc::c_int, path: &CStr, st: &mut libc::statx) -> Result<u64, MetaError> {
    let mask = libc::STATX_BASIC_STATS;
    // SAFETY: a NUL-terminated path and a writable statx.
    let rc = unsafe { libc::statx(at, path.as_ptr(), 0, mask, st) };
    sys("stat", rc as isize).map(|_| st.stx_size)
}

/// unlinkat of one name in `dir` (push checked the descriptor and the name).
fn unlink_here(
    dir: &crate::Dir,
    name: &CStr,
    flags: i32,
    step: &'static str,
) -> Result<u64, MetaError> {
    let fd = dir.raw_fd().unwrap_or(-1);
    // SAFETY: a NUL-terminated name; unlinkat never follows it.
    sys(step, unsafe { libc::unlinkat(fd, name.as_ptr(), flags) }
        as isize)
    .map(|_| 0)
}

/// A transfer of `want` bytes that moved `got`: short is an error.
fn whole(step: &'static str, got: u64, want: u64) -> Result<u64, MetaError> {
    match got < want {
        true => Err(MetaError {
            step,
            errno: 0,
            short: Some((got, want)),
        }),
        false => Ok(got),
    }
}

/// The create chain in this thread: open with O_CREAT, write `data` at
/// 0, fsync when asked, close; the first failure is the one reported,
/// and the file is closed whatever failed after the open.
fn create_here(
    (at, path): (libc::c_int, &CStr),
    data: &[u8],
    exclusive: bool,
    fsync: bool,
) -> Result<u64, MetaError> {
    let excl = if exclusive { libc::O_EXCL } else { 0 };
    let flags = libc::O_CREAT | excl | libc::O_WRONLY | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path; the mode is read with O_CREAT.
    let fd = sys(
        "create",
        unsafe { libc::openat(at, path.as_ptr(), flags, 0o644 as libc::c_uint) } as isize,
    )? as i32;
    let mut r = Ok(0);
    if !data.is_empty() {
        // SAFETY: `data` is valid for its length.
        let n = unsafe { libc::pwrite(fd, data.as_ptr().cast(), data.len(), 0) };
        r = sys("write", n).and_then(|n| whole("write", n, data.len() as u64));
    }
    if fsync {
        // SAFETY: a descriptor opened above.
        let f = sys("fsync", unsafe { libc::fsync(fd) } as isize);
        r = r.and_then(|n| f.map(|_| n));
    }
    // SAFETY: as above; closed once.
    let c = sys("close", unsafe { libc::close(fd) } as isize);
    r.and_then(|n| c.map(|_| n))
}

/// The read chain in this thread: open read-only, read `buf.len()` bytes
/// at 0, close.
fn read_here((at, path): (libc::c_int, &CStr), buf: &mut [u8]) -> Result<u64, MetaError> {
    let flags = libc::O_RDONLY | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path.
    let fd = sys("open", unsafe { libc::openat(at, path.as_ptr(), flags) }
        as isize)? as i32;
    let mut r = Ok(0);
    if !buf.is_empty() {
        // SAFETY: `buf` is valid and writable for its length.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        r = sys("read", n).and_then(|n| whole("read", n, buf.len() as u64));
    }
    // SAFETY: a descriptor opened above; closed once.
    let c = sys("close", unsafe { libc::close(fd) } as isize);
    r.and_then(|n| c.map(|_| n))
}

/// The CPUs this thread may run on (its affinity mask), if the kernel
/// says.
fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data, for which all zeroes is valid;
    // sched_getaffinity fills it through a valid pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        (libc::sched_getaffinity(0, size, &mut set) == 0).then_some(set)
    }
}

/// How many CPUs are in `set`; 1 when it is unknown.
fn cpu_count(set: Option<&libc::cpu_set_t>) -> usize {
    // SAFETY: CPU_COUNT reads a valid, initialised set.
    set.map_or(1, |s| (unsafe { libc::CPU_COUNT(s) } as usize).max(1))
}

/// Keeps the ring's io-wq workers off the CPU this thread is on, when
/// the thread may run on others too (`set`, its affinity): the thread
/// runs operations itself while the workers run theirs, and on one CPU
/// they would take turns. Where the kernel cannot (before 5.14), the
/// workers go anywhere.
fn keep_workers_off_this_cpu(ring: &IoUring, set: Option<&libc::cpu_set_t>) {
    let Some(mut set) = set.copied() else { return };
    // SAFETY: sched_getcpu has no preconditions.
    let here = unsafe { libc::sched_getcpu() };
    if here < 0 {
        return;
    }
    // SAFETY: `here` is a CPU number the kernel gave, below CPU_SETSIZE;
    // the set is a valid, initialised one.
    let left = unsafe {
        libc::CPU_CLR(here as usize, &mut set);
        libc::CPU_COUNT(&set)
    };
    if left > 0 {
        let _ = ring.submitter().register_iowq_aff(&set);
    }
}

impl Drop for UringMeta {
    fn drop(&mut self) {
        QUEUES.fetch_sub(1, Ordering::Relaxed);
        // The slots' buffers must outlive the kernel's use of them: wait
        // for everything in flight; if waiting fails, leak them instead.
        while self.in_ring > 0 {
            if self.ring.submit_and_wait(1).is_err() {
                std::mem::forget(std::mem::take(&mut self.paths));
                std::mem::forget(std::mem::take(&mut self.data));
                std::mem::forget(std::mem::take(&mut self.stats));
                return;
            }
            let ends: Vec<(u64, i32)> = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result()))
                .collect();
            for (u, r) in ends {
                if self.record(u, r) {
                    self.in_ring -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backend;
    use std::ffi::CString;

    /// A queue, or None (and why) where io_uring is refused; under CI a
    /// refusal fails the test.
    fn queue(depth: u32, bytes: usize) -> Option<UringMeta> {
        match UringMeta::new(depth, bytes) {
            // Never crowded: the tests of turns run beside other tests'
            // queues; `crowded_tasks_run_their_operations_themselves`
            // sets it.
            Ok(mut q) => {
                q.cpus = usize::MAX;
                Some(q)
            }
            Err(e) => {
                let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0");
                assert!(!ci, "setup failed under CI: {e}");
                eprintln!("SKIP: {e}");
                None
            }
        }
    }

    struct Dir(std::path::PathBuf);
    impl Dir {
        fn new(name: &str) -> Dir {
            let d = std::env::temp_dir()
                .join(format!("iolab-uring-meta-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }
        fn c(&self, name: &str) -> CString {
            CString::new(self.0.join(name).to_str().unwrap()).unwrap()
        }
        /// The directory, opened for removals relative to it.
        fn open(&self) -> crate::Dir {
            crate::Posix.open_dir(&self.c("")).unwrap()
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    /// Drains the queue: (tag, result, data) of every completion.
    fn drain(q: &mut UringMeta) -> Vec<(u64, Result<u64, MetaError>, Vec<u8>)> {
        let mut out = Vec::new();
        while q.in_flight() > 0 {
            q.complete(&mut |d| out.push((d.tag, d.result, d.data.to_vec())))
                .unwrap();
        }
        out.sort_by_key(|x| x.0);
        out
    }

    /// Operations by name in an open directory: made, stat'ed and read
    /// there (not in the working directory), whether a turn runs in the
    /// kernel or in the thread (4 slots, 12 operations at once); a
    /// directory without a descriptor is refused at push.
    #[test]
    fn works_by_name_in_an_open_directory() {
        let Some(mut q) = queue(4, 16) else { return };
        let d = Dir::new("by-name");
        std::fs::create_dir(d.0.join("sub")).unwrap();
        let sub = crate::Posix.open_dir(&d.c("sub")).unwrap();
        let names: Vec<CString> = (0..12)
            .map(|i| CString::new(format!("f{i}")).unwrap())
            .collect();
        let data = b"by name";
        let mut done = Vec::new();
        for step in 0..3 {
            for (i, n) in names.iter().enumerate() {
                if !q.has_room() {
                    done.extend(drain(&mut q));
                }
                let (path, dir) = (n.as_c_str(), Some(&sub));
                let op = match step {
                    0 => MetaOp::Create {
                        path,
                        dir,
                        data,
                        exclusive: true,
                        fsync: false,
                    },
                    1 => MetaOp::Stat { path, dir },
                    _ => MetaOp::Read {
                        path,
                        dir,
                        len: data.len(),
                    },
                };
                q.push(i as u64, &op).unwrap();
            }
            done.extend(drain(&mut q));
        }
        assert_eq!(done.len(), 36);
        for (tag, r, got) in &done {
            assert_eq!(*r, Ok(data.len() as u64), "{tag}");
            assert!(got.is_empty() || got == data, "{tag}: {got:?}");
        }
        q.push(
            0,
            &MetaOp::Mkdir {
                path: c"m",
                dir: Some(&sub),
                mode: 0o755,
            },
        )
        .unwrap();
        assert_eq!(drain(&mut q)[0].1, Ok(0));
        assert!(d.0.join("sub/m").is_dir() && d.0.join("sub/f11").is_file());
        assert!(
            !std::path::Path::new("f0").exists(),
            "made in the working directory"
        );
        let by_path = crate::Dir::from_path(&d.c("sub"));
        let stat = MetaOp::Stat {
            path: c"f0",
            dir: Some(&by_path),
        };
        assert_eq!(
            q.push(1, &stat).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn creates_writes_stats_reads_and_removes_in_flight() {
        let Some(mut q) = queue(8, 64) else { return };
        let d = Dir::new("cycle");
        let names: Vec<CString> = (0..20).map(|i| d.c(&format!("f{i}"))).collect();
        let mut pending = names.iter().enumerate();
        let mut results = Vec::new();
        // More items than slots: push while there is room, reap, repeat.
        loop {
            while q.has_room() {
                let Some((i, p)) = pending.next() else { break };
                let data = format!("item {i}");
                let op = MetaOp::Create {
                    path: p,
                    dir: None,
                    data: data.as_bytes(),
                    exclusive: true,
                    fsync: i % 2 == 0,
                };
                q.push(i as u64, &op).unwrap();
            }
            if q.in_flight() == 0 {
                break;
            }
            q.complete(&mut |c| results.push((c.tag, c.result)))
                .unwrap();
        }
        assert_eq!(results.len(), 20);
        assert!(
            results
                .iter()
                .all(|(t, r)| *r == Ok(format!("item {t}").len() as u64)),
            "{results:?}"
        );
        for (i, p) in names.iter().enumerate() {
            q.push(i as u64, &MetaOp::Stat { path: p, dir: None })
                .unwrap();
            q.push(
                100 + i as u64,
                &MetaOp::Read {
                    path: p,
                    dir: None,
                    len: format!("item {i}").len(),
                },
            )
            .unwrap();
            let got = drain(&mut q);
            assert_eq!(
                got[0].1,
                Ok(format!("item {i}").len() as u64),
                "stat gives the size"
            );
            assert_eq!(
                got[1].2,
                format!("item {i}").as_bytes(),
                "read gives the bytes"
            );
        }
        let at = d.open();
        for i in 0..names.len() {
            let name = CString::new(format!("f{i}")).unwrap();
            q.push(
                i as u64,
                &MetaOp::Unlink {
                    dir: &at,
                    name: &name,
                },
            )
            .unwrap();
            if !q.has_room() {
                drain(&mut q);
            }
        }
        drain(&mut q);
        assert_eq!(
            std::fs::read_dir(&d.0).unwrap().count(),
            0,
            "every file removed"
        );
    }

    #[test]
    fn failures_name_their_step_and_errno() {
        failures_named(false);
        failures_named(true);
    }

    /// The thread makes and removes directories itself unless its turns
    /// are skipped: `kernel` skips them all, so the ring's run as well.
    fn only_the_kernel(q: &mut UringMeta, kernel: bool) {
        if kernel {
            q.here_skip = u32::MAX;
        }
    }

    fn failures_named(kernel: bool) {
        let Some(mut q) = queue(4, 16) else { return };
        only_the_kernel(&mut q, kernel);
        let d = Dir::new(&format!("fail-{kernel}"));
        let (sub, f) = (d.c("sub"), d.c("f"));
        q.push(
            1,
            &MetaOp::Mkdir {
                path: &sub,
                dir: None,
                mode: 0o755,
            },
        )
        .unwrap();
        q.push(
            2,
            &MetaOp::Create {
                path: &f,
                dir: None,
                data: b"abc",
                exclusive: true,
                fsync: false,
            },
        )
        .unwrap();
        drain(&mut q);
        q.push(
            3,
            &MetaOp::Mkdir {
                path: &sub,
                dir: None,
                mode: 0o755,
            },
        )
        .unwrap();
        q.push(
            4,
            &MetaOp::Create {
                path: &f,
                dir: None,
                data: b"abc",
                exclusive: true,
                fsync: false,
            },
        )
        .unwrap();
        q.push(
            5,
            &MetaOp::Read {
                path: &f,
                dir: None,
                len: 8,
            },
        )
        .unwrap();
        q.push(
            6,
            &MetaOp::Stat {
                path: &d.c("none"),
                dir: None,
            },
        )
        .unwrap();
        let got = drain(&mut q);
        let err = |i: usize| got[i].1.unwrap_err();
        assert_eq!((err(0).step, err(0).errno), ("mkdir", libc::EEXIST));
        assert_eq!((err(1).step, err(1).errno), ("create", libc::EEXIST));
        assert_eq!(
            (err(2).step, err(2).short),
            ("read", Some((3, 8))),
            "short read named"
        );
        assert_eq!((err(3).step, err(3).errno), ("stat", libc::ENOENT));
        let at = d.open();
        q.push(
            7,
            &MetaOp::Rmdir {
                dir: &at,
                name: c"sub",
            },
        )
        .unwrap();
        q.push(
            8,
            &MetaOp::Unlink {
                dir: &at,
                name: c"f",
            },
        )
        .unwrap();
        q.push(
            9,
            &MetaOp::Unlink {
                dir: &at,
                name: c"f",
            },
        )
        .unwrap_or(());
        let got = drain(&mut q);
        assert_eq!(got[0].1, Ok(0));
        // Two unlinks of one file in flight: one of them finds it gone.
        let gone = got[1..]
            .iter()
            .filter(|g| g.1.is_err_and(|e| e.errno == libc::ENOENT))
            .count();
        assert_eq!(gone, 1, "{got:?}");
        let long = CString::new(vec![b'a'; PATH_BYTES]).unwrap();
        assert!(
            q.push(
                10,
                &MetaOp::Stat {
                    path: &long,
                    dir: None
                }
            )
            .is_err(),
            "too long a path is refused"
        );
        let big = vec![0u8; 17];
        assert!(q
            .push(
                11,
                &MetaOp::Create {
                    path: &f,
                    dir: None,
                    data: &big,
                    exclusive: true,
                    fsync: false
                }
            )
            .is_err());
        assert_eq!(q.in_flight(), 0, "a refused push holds no slot");
    }

    /// A removal names one entry of an open directory: a link there is
    /// removed itself (or refused by rmdir), what it leads to stays, and a
    /// name with a slash, which would be resolved through directories a
    /// link could stand for, is refused before anything is sent.
    #[test]
    fn removals_follow_no_link() {
        removals_of_links(false);
        removals_of_links(true);
    }

    fn removals_of_links(kernel: bool) {
        let Some(mut q) = queue(4, 0) else { return };
        only_the_kernel(&mut q, kernel);
        let d = Dir::new(&format!("links-{kernel}"));
        std::fs::create_dir_all(d.0.join("other/sub")).unwrap();
        std::fs::write(d.0.join("other/f"), b"keep").unwrap();
        std::fs::create_dir(d.0.join("t")).unwrap();
        std::os::unix::fs::symlink(d.0.join("other"), d.0.join("t/link")).unwrap();
        std::os::unix::fs::symlink(d.0.join("other/f"), d.0.join("t/flink")).unwrap();
        let at = crate::Posix.open_dir_at(&d.open(), c"t").unwrap();
        q.push(
            1,
            &MetaOp::Rmdir {
                dir: &at,
                name: c"link",
            },
        )
        .unwrap();
        q.push(
            2,
            &MetaOp::Unlink {
                dir: &at,
                name: c"flink",
            },
        )
        .unwrap();
        for (tag, name) in [(3, c"link/f"), (4, c"link/sub")] {
            let e = q.push(tag, &MetaOp::Unlink { dir: &at, name }).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        }
        let e = q.push(
            5,
            &MetaOp::Rmdir {
                dir: &at,
                name: c"link/sub",
            },
        );
        assert!(e.is_err(), "a slash in an rmdir's name is refused");
        let got = drain(&mut q);
        assert_eq!(got.len(), 2, "the refused pushes held no slot: {got:?}");
        assert_eq!(
            got[0].1.unwrap_err().errno,
            libc::ENOTDIR,
            "rmdir of a link"
        );
        assert_eq!(got[1].1, Ok(0), "the link itself unlinked");
        assert!(d.0.join("t/link").is_symlink() && !d.0.join("t/flink").exists());
        assert!(d.0.join("other/f").exists() && d.0.join("other/sub").exists());
        let e = q.push(
            6,
            &MetaOp::Unlink {
                dir: &crate::Dir::from_path(c"/x"),
                name: c"f",
            },
        );
        assert!(e.is_err(), "a directory without a descriptor is refused");
        assert_eq!(q.in_flight(), 0);
    }

    /// complete_by returns at its deadline with nothing when nothing can
    /// complete (the open of a FIFO waits for a writer), and hands the
    /// completion over once it came.
    #[test]
    fn complete_by_returns_at_its_deadline() {
        let Some(mut q) = queue(2, 8) else { return };
        let d = Dir::new("deadline");
        let fifo = d.c("fifo");
        // SAFETY: a valid C string; the result is checked.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        q.push(
            1,
            &MetaOp::Read {
                path: &fifo,
                dir: None,
                len: 8,
            },
        )
        .unwrap();
        let mut got = Vec::new();
        let n = q
            .complete_by(mono_ns() + 20_000_000, &mut |c| got.push(c.tag))
            .unwrap();
        assert_eq!((n, got.len(), q.in_flight()), (0, 0, 1), "no writer yet");
        let n = q.complete_by(0, &mut |c| got.push(c.tag)).unwrap();
        assert_eq!(n, 0, "a deadline passed: no wait");
        // A writer that closes at once: the read ends short, at 0 bytes.
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .open(d.0.join("fifo"))
                .unwrap(),
        );
        while q.in_flight() > 0 {
            q.complete_by(u64::MAX, &mut |c| {
                got.push(c.tag);
                assert_eq!(c.result.unwrap_err().short, Some((0, 8)));
            })
            .unwrap();
        }
        assert_eq!(got, [1]);
    }

    /// With 2 slots, every second operation is the thread's turn: each
    /// pair below is one operation in the kernel and the same in this
    /// thread, and both end alike, errors and short reads included.
    #[test]
    fn the_thread_runs_the_turn_the_kernel_leaves_with_the_same_results() {
        let Some(mut q) = queue(2, 8) else { return };
        let d = Dir::new("here");
        std::fs::create_dir(d.0.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.0.join("sub"), d.0.join("link")).unwrap();
        let at = d.open();
        let (a, b) = (d.c("a"), d.c("b"));
        let create = |path| MetaOp::Create {
            dir: None,
            path,
            data: b"abc",
            exclusive: true,
            fsync: true,
        };
        let pairs: [[MetaOp<'_>; 2]; 6] = [
            [create(&a), create(&b)],
            [create(&a), create(&b)],
            [
                MetaOp::Read {
                    path: &a,
                    dir: None,
                    len: 8,
                },
                MetaOp::Read {
                    path: &b,
                    dir: None,
                    len: 8,
                },
            ],
            [
                MetaOp::Stat {
                    path: &a,
                    dir: None,
                },
                MetaOp::Stat {
                    path: &b,
                    dir: None,
                },
            ],
            [
                MetaOp::Mkdir {
                    path: &d.c("sub"),
                    dir: None,
                    mode: 0o755,
                },
                MetaOp::Rmdir {
                    dir: &at,
                    name: c"link",
                },
            ],
            [
                MetaOp::Unlink {
                    dir: &at,
                    name: c"a",
                },
                MetaOp::Unlink {
                    dir: &at,
                    name: c"b",
                },
            ],
        ];
        let mut ends = Vec::new();
        for (i, [kernel, here]) in pairs.iter().enumerate() {
            if matches!(kernel, MetaOp::Mkdir { .. }) {
                // A directory's create runs here unless turns are skipped.
                q.here_skip = 1;
            }
            q.push(2 * i as u64, kernel).unwrap();
            q.push(2 * i as u64 + 1, here).unwrap();
            assert_eq!(
                (q.in_ring, q.in_flight, q.ready.len()),
                (1, 2, 1),
                "pair {i}: the second ran here"
            );
            let got = drain(&mut q);
            ends.push((got[0].1, got[1].1, got[0].2.clone(), got[1].2.clone()));
        }
        let step = |r: Result<u64, MetaError>| r.map_err(|e| (e.step, e.errno, e.short));
        let same = |i: usize| {
            let (k, h, kd, hd) = &ends[i];
            assert_eq!((step(*k), kd), (step(*h), hd), "pair {i}");
        };
        assert_eq!(ends[0].1, Ok(3), "made, written and flushed here");
        same(0);
        assert_eq!(step(ends[1].1), Err(("create", libc::EEXIST, None)));
        same(1);
        assert_eq!(step(ends[2].1), Err(("read", 0, Some((3, 8)))));
        assert_eq!(ends[2].3, b"abc", "the bytes read here are handed over");
        same(2);
        assert_eq!(ends[3].1, Ok(3), "a stat here gives the size");
        same(3);
        assert_eq!(step(ends[4].0), Err(("mkdir", libc::EEXIST, None)));
        assert_eq!(step(ends[4].1), Err(("rmdir", libc::ENOTDIR, None)));
        assert!(
            d.0.join("link").is_symlink(),
            "the link itself refused, not followed"
        );
        same(5);
        assert!(!d.0.join("a").exists() && !d.0.join("b").exists());
        assert_eq!(q.in_flight(), 0);
    }

    /// Two slow operations in a row here (a server's round trip, not a
    /// preemption) leave the next turns to the kernel, 16 per slot, then
    /// twice as many each time the probe after them is slow again; one
    /// fast operation here ends it.
    #[test]
    fn slow_turns_here_go_to_the_kernel_for_a_while() {
        let Some(mut q) = queue(4, 0) else { return };
        q.in_ring = 3;
        let slow = |q: &mut UringMeta| {
            q.slots[0].start_ns = 0;
            q.slots[0].end_ns = SLOW_HERE_NS;
            q.after_here(0);
        };
        let turns = |q: &mut UringMeta| (0..10_000).take_while(|_| !q.my_turn(Kind::Stat)).count();
        slow(&mut q);
        assert_eq!(turns(&mut q), 0, "one slow operation alone: a preemption");
        slow(&mut q);
        assert_eq!(turns(&mut q), 64, "two in a row: 16 turns per slot");
        slow(&mut q);
        slow(&mut q);
        assert_eq!(turns(&mut q), 128, "slow again: twice as many");
        q.slots[0].end_ns = 1;
        q.after_here(0);
        slow(&mut q);
        slow(&mut q);
        assert_eq!(turns(&mut q), 64, "a fast one in between starts over");
        assert!(
            q.my_turn(Kind::Stat),
            "the kernel holds depth - 1: the thread's turn"
        );
        q.in_ring = 2;
        assert!(
            !q.my_turn(Kind::Stat),
            "room in the kernel: not the thread's turn"
        );
        assert!(
            q.my_turn(Kind::Mkdir),
            "a directory's create or removal: here"
        );
        slow(&mut q);
        slow(&mut q);
        assert!(!q.my_turn(Kind::Mkdir), "unless the turns here are slow");
        q.in_ring = 0;
    }

    /// With a queue per CPU, every operation runs in the thread, not
    /// only once the kernel holds depth - 1; slow turns still go to the
    /// kernel.
    #[test]
    fn crowded_tasks_run_their_operations_themselves() {
        let Some(mut q) = queue(4, 0) else { return };
        assert!(!q.my_turn(Kind::Stat), "room in the kernel: its turn");
        // This queue alone is one per CPU for a process on one CPU.
        q.cpus = 1;
        assert!(q.my_turn(Kind::Stat), "crowded: the thread's turn");
        let d = Dir::new("crowded");
        q.push(
            0,
            &MetaOp::Stat {
                path: &d.c(""),
                dir: None,
            },
        )
        .unwrap();
        assert_eq!((q.in_ring, q.ready.len()), (0, 1), "ran here");
        assert!(drain(&mut q)[0].1.is_ok());
        let slow = |q: &mut UringMeta| {
            q.slots[0].start_ns = 0;
            q.slots[0].end_ns = SLOW_HERE_NS;
            q.after_here(0);
        };
        slow(&mut q);
        slow(&mut q);
        assert!(!q.my_turn(Kind::Stat), "slow turns: the kernel's");
    }

    /// Feeds `choice` one epoch of completions `step_ns` apart.
    fn epoch_of(choice: &mut Choice, step_ns: u64) {
        for _ in 0..EPOCH {
            choice.done(choice.last_ns + step_ns);
        }
    }

    /// A just-kept way.
    fn kept(alone: bool) -> Way {
        Way::Kept { alone, left: KEEP }
    }

    #[test]
    fn each_way_is_timed_and_the_faster_kept_for_a_while() {
        let mut c = Choice::new();
        c.done(1);
        assert_eq!((c.alone(), c.way), (false, Way::TryBeside), "beside first");
        epoch_of(&mut c, 2_000);
        assert_eq!((c.alone(), c.way), (true, Way::TryAlone), "then alone");
        epoch_of(&mut c, 1_000);
        assert_eq!((c.alone(), c.way), (true, kept(true)), "alone was faster");
        for _ in 0..KEEP - 1 {
            epoch_of(&mut c, 1_000);
        }
        assert!(c.alone(), "kept for KEEP epochs");
        epoch_of(&mut c, 1_000);
        assert_eq!((c.alone(), c.way), (false, Way::TryBeside), "tried again");
        epoch_of(&mut c, 1_000);
        epoch_of(&mut c, 1_000);
        let tie = "a tie: alone, the cheaper";
        assert_eq!((c.alone(), c.way), (true, kept(true)), "{tie}");
        let mut c = Choice::new();
        c.done(1);
        epoch_of(&mut c, 1_000);
        epoch_of(&mut c, 1_100);
        let faster = "beside 9 % faster";
        assert_eq!((c.alone(), c.way), (false, kept(false)), "{faster}");
    }

    #[test]
    fn a_pause_ends_an_epoch_unmeasured() {
        let mut c = Choice::new();
        c.done(1);
        for _ in 0..EPOCH - 1 {
            c.done(c.last_ns + 1_000);
        }
        // The phase ended; the next one's first completion starts anew.
        c.done(c.last_ns + GAP_NS + 1);
        assert_eq!((c.count, c.way), (0, Way::TryBeside));
        c.done(c.last_ns + 1_000);
        assert_eq!(c.count, 1);
    }

    /// The chooser's way is the thread's turn: alone, every operation of
    /// that kind runs here while the kernel has room.
    #[test]
    fn a_kind_kept_alone_runs_in_the_thread() {
        let Some(mut q) = queue(4, 0) else { return };
        assert!(!q.my_turn(Kind::Stat), "beside: the kernel's turn");
        q.choices[Kind::Stat as usize].way = kept(true);
        assert!(q.my_turn(Kind::Stat), "alone: the thread's");
        assert!(!q.my_turn(Kind::Unlink), "other kinds keep their own way");
        let d = Dir::new("alone");
        q.push(
            0,
            &MetaOp::Stat {
                path: &d.c(""),
                dir: None,
            },
        )
        .unwrap();
        assert_eq!((q.in_ring, q.ready.len()), (0, 1), "ran here");
        assert!(drain(&mut q)[0].1.is_ok());
    }

    #[test]
    fn a_full_queue_refuses_a_push() {
        let Some(mut q) = queue(2, 0) else { return };
        let d = Dir::new("full");
        for i in 0..2 {
            q.push(
                i,
                &MetaOp::Stat {
                    path: &d.c(""),
                    dir: None,
                },
            )
            .unwrap();
        }
        assert!(!q.has_room());
        let e = q
            .push(
                3,
                &MetaOp::Stat {
                    path: &d.c(""),
                    dir: None,
                },
            )
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(drain(&mut q).len(), 2);
    }
}
