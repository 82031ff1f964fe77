//! Queued metadata: a backend that can keep many metadata operations in
//! flight for one thread offers a [`MetaQueue`]
//! ([`crate::Backend::metadata_queue`], [`crate::Capabilities::queued_metadata`]).
//! The POSIX backend's is io_uring (`uring_meta.rs`); an engine drives any
//! queue the same way: push while there is room, then reap completions.
//!
//! ```
//! use iolab_backend::{by_name, MetaOp};
//! let be = by_name("posix").unwrap();
//! let dir = std::env::temp_dir().join(format!("iolab-queue-doc-{}", std::process::id()));
//! let p = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
//! let mut q = match be.metadata_queue(4, 0) {
//!     Ok(q) => q,
//!     Err(e) => { eprintln!("no queue here: {e}"); return; } // io_uring blocked
//! };
//! q.push(7, &MetaOp::Mkdir { path: &p, dir: None, mode: 0o755 }).unwrap();
//! let mut tags = Vec::new();
//! while q.in_flight() > 0 {
//!     q.complete(&mut |d| tags.push((d.tag, d.result.is_ok()))).unwrap();
//! }
//! assert_eq!(tags, [(7, true)]);
//! // Removed relative to its parent, opened without following links.
//! let parent = be.open_dir(&std::ffi::CString::new(std::env::temp_dir().to_str().unwrap()).unwrap()).unwrap();
//! let name = std::ffi::CString::new(dir.file_name().unwrap().to_str().unwrap()).unwrap();
//! q.push(8, &MetaOp::Rmdir { dir: &parent, name: &name }).unwrap();
//! while q.in_flight() > 0 {
//!     q.complete(&mut |d| assert!(d.result.is_ok())).unwrap();
//! }
//! assert!(!dir.exists());
//! ```

use crate::Dir;
use std::ffi::CStr;
use std::io;

/// One metadata operation, as an engine asks for it. Paths are copied
/// by [`MetaQueue::push`], so the caller may reuse its name buffer at once.
#[derive(Debug, Clone, Copy)]
pub enum MetaOp<'a> {
    /// mkdir(2).
    Mkdir {
        /// The directory to make, or its name in `dir`.
        path: &'a CStr,
        /// The directory `path` is relative to, as for [`MetaOp::Stat`].
        dir: Option<&'a Dir>,
        /// Its mode.
        mode: u32,
    },
    /// rmdir of `name` in `dir` (unlinkat with AT_REMOVEDIR): a removal
    /// names its directory by a descriptor opened without following
    /// links ([`crate::Backend::open_dir_at`]), never by a path that a
    /// link planted on the way could redirect. `dir` must stay open
    /// until the operation completes: the queue holds its descriptor's
    /// number, not the directory.
    Rmdir {
        /// The directory holding `name`.
        dir: &'a Dir,
        /// The directory to remove (one name, no `/`).
        name: &'a CStr,
    },
    /// unlink of `name` in `dir` (unlinkat), as [`MetaOp::Rmdir`]; the
    /// name itself, even a link, is removed, never followed.
    Unlink {
        /// The directory holding `name`.
        dir: &'a Dir,
        /// The file to remove (one name, no `/`).
        name: &'a CStr,
    },
    /// stat(2) (links followed, as stat does).
    Stat {
        /// The path, or the name in `dir`.
        path: &'a CStr,
        /// The directory `path` is relative to (None: the process's
        /// working directory): an item by its name in a directory held
        /// open costs the kernel a walk of one name, not of the whole
        /// path. It must stay open until the operation completes.
        dir: Option<&'a Dir>,
    },
    /// A file made, written, maybe flushed and closed, in that order: open
    /// with O_CREAT (and O_EXCL when `exclusive`), `data` written at
    /// offset 0 when not empty, fsync when asked, close.
    Create {
        /// The file, or its name in `dir`.
        path: &'a CStr,
        /// The directory `path` is relative to, as for [`MetaOp::Stat`].
        dir: Option<&'a Dir>,
        /// What to write (copied into the queue's slot).
        data: &'a [u8],
        /// Fail when the file exists.
        exclusive: bool,
        /// fsync before closing.
        fsync: bool,
    },
    /// A file opened read-only, `len` bytes read from offset 0 when `len`
    /// is not 0, and closed; the bytes read are in [`MetaDone::data`].
    Read {
        /// The file, or its name in `dir`.
        path: &'a CStr,
        /// The directory `path` is relative to, as for [`MetaOp::Stat`].
        dir: Option<&'a Dir>,
        /// Bytes to read.
        len: usize,
    },
}

impl MetaOp<'_> {
    /// The path the operation works on (a removal's: the name in its
    /// directory).
    pub fn path(&self) -> &CStr {
        match self {
            MetaOp::Rmdir { name, .. } | MetaOp::Unlink { name, .. } => name,
            MetaOp::Mkdir { path, .. }
            | MetaOp::Stat { path, .. }
            | MetaOp::Create { path, .. }
            | MetaOp::Read { path, .. } => path,
        }
    }
}

/// Why a queued operation failed: the step (`create`, `write`, `close`,
/// ...) and its errno, or a transfer that moved fewer bytes than asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaError {
    /// The system call that failed, as a user knows it.
    pub step: &'static str,
    /// Its errno; 0 for a short transfer.
    pub errno: i32,
    /// For a short read or write: (bytes moved, bytes asked).
    pub short: Option<(u64, u64)>,
}

impl MetaError {
    /// The error as an `io::Error` (a short transfer is `UnexpectedEof`
    /// for reads, `WriteZero` for writes).
    pub fn to_io(&self) -> io::Error {
        match self.short {
            Some((got, want)) => io::Error::new(
                match self.step {
                    "write" => io::ErrorKind::WriteZero,
                    _ => io::ErrorKind::UnexpectedEof,
                },
                format!("short {}: {got} of {want} bytes", self.step),
            ),
            None => io::Error::from_raw_os_error(self.errno),
        }
    }
}

/// A finished operation, as [`MetaQueue::complete`] hands it over.
#[derive(Debug)]
pub struct MetaDone<'a> {
    /// The caller's tag given to [`MetaQueue::push`].
    pub tag: u64,
    /// Monotonic ns just before the operation left in a submission.
    pub start_ns: u64,
    /// Monotonic ns when its completion was reaped.
    pub end_ns: u64,
    /// Bytes written or read (a stat: the size), or what failed.
    pub result: Result<u64, MetaError>,
    /// The bytes a [`MetaOp::Read`] read (empty otherwise).
    pub data: &'a [u8],
}

/// Metadata operations in flight for one thread. A queue is not shared:
/// the thread that made it pushes and reaps.
pub trait MetaQueue {
    /// Operations it can keep in flight.
    fn depth(&self) -> usize;
    /// Operations pushed and not yet completed.
    fn in_flight(&self) -> usize;
    /// True while another operation can be pushed.
    fn has_room(&self) -> bool {
        self.in_flight() < self.depth()
    }
    /// Queues `op`, tagged `tag` for its completion. It leaves at the next
    /// [`MetaQueue::complete`] (or earlier, in chunks, as the queue sees
    /// fit). Errors when full or when the op does not fit (a path longer
    /// than PATH_MAX, data larger than the slots).
    fn push(&mut self, tag: u64, op: &MetaOp<'_>) -> io::Result<()>;
    /// Sends what was pushed, waits for at least one completion when any
    /// operation is in flight, and calls `done` for every completion
    /// ready; returns how many.
    fn complete(&mut self, done: &mut dyn FnMut(&MetaDone<'_>)) -> io::Result<usize>;
    /// As [`MetaQueue::complete`], but waits for the first completion no
    /// later than `deadline_ns` (monotonic ns, as [`MetaDone::end_ns`]);
    /// 0 when none came by then. For an engine that must also send
    /// something at a set time (md-workbench's `waitingTime`).
    fn complete_by(
        &mut self,
        deadline_ns: u64,
        done: &mut dyn FnMut(&MetaDone<'_>),
    ) -> io::Result<usize>;
}
