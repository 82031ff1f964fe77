//! The storage backend contract shared by every engine (mdtest, XDD,
//! surveys): a small object-safe trait chosen at run time by name, with
//! capabilities asked for when a run is planned so that an unsupported
//! combination fails before any task starts.
//!
//! Paths are `&CStr` so that hot loops can build names in a reused buffer
//! and call the backend without allocating.
//!
//! ```
//! use iolab_backend::{by_name, OpenOptions};
//! let dir = std::env::temp_dir().join(format!("iolab-doc-{}", std::process::id()));
//! let be = by_name("posix").unwrap();
//! let p = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
//! be.mkdir(&p, 0o755).unwrap();
//! assert!(be.stat(&p).unwrap().is_dir);
//! be.rmdir(&p).unwrap();
//! ```

pub mod blkid;
mod dio;
mod dir;
pub mod loops;
mod null;
mod options;
mod posix;
pub mod queue;
pub mod remove;
#[cfg(feature = "s3")]
pub mod s3;
pub mod safety;
mod uring_meta;
pub mod written;

pub use dir::{not_a_directory, Dir};
pub use null::Null;
pub use options::{
    backend_option, help as options_help, parse_options, split_args, split_args_at, BackendOptions,
    OptionError,
};
pub use posix::Posix;
pub use queue::{MetaDone, MetaError, MetaOp, MetaQueue};
use std::ffi::{CStr, CString};
use std::io;

/// An open file as a backend sees it. Owned: the backend that opened it
/// consumes it in [`Backend::close`], and everything else borrows it, so
/// a handle cannot be used after it is closed or closed twice.
///
/// `raw` is the backend's number for it (POSIX: the descriptor). A
/// backend that needs more per open file (an object store's key and
/// upload in progress) keeps it in `state`, which only that backend reads.
pub struct Handle {
    raw: i64,
    state: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Handle {
    /// A handle that is just a number (a file descriptor).
    pub fn new(raw: i64) -> Handle {
        Handle { raw, state: None }
    }

    /// A handle carrying the backend's own per-file state.
    pub fn with_state(raw: i64, state: Box<dyn std::any::Any + Send + Sync>) -> Handle {
        Handle {
            raw,
            state: Some(state),
        }
    }

    /// The backend's number for this handle.
    pub fn raw(&self) -> i64 {
        self.raw
    }

    /// The backend's per-file state, when it is of type `T`.
    pub fn state<T: 'static>(&self) -> Option<&T> {
        self.state.as_ref()?.downcast_ref()
    }

    /// Takes the per-file state out (in `close`).
    pub fn into_state<T: 'static>(self) -> Option<Box<T>> {
        self.state?.downcast().ok()
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("raw", &self.raw)
            .field("state", &self.state.is_some())
            .finish()
    }
}

/// How to open a file; the fields map onto open(2) flags for POSIX.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create the file when it does not exist.
    pub create: bool,
    /// Fail when it exists (with `create`): never touch a file we did not make.
    pub exclusive: bool,
    /// Truncate to zero length.
    pub truncate: bool,
    /// Bypass the page cache (O_DIRECT).
    pub direct: bool,
    /// Synchronous writes (O_SYNC).
    pub sync: bool,
    /// Do not block on open (O_NONBLOCK): opening a FIFO for reading must
    /// not wait for a writer.
    pub nonblock: bool,
    /// Refuse a symbolic link at the last name (O_NOFOLLOW, ELOOP): for
    /// files whose name iolab made up or checked, so that a link planted
    /// after the check is not followed. Backends without links ignore it.
    pub nofollow: bool,
    /// The file's whole length, when the writer knows it will write it in
    /// one request at offset 0: a backend that stores whole objects (S3)
    /// then sends that write as it comes, inside the caller's timed
    /// operation, instead of holding it until close.
    pub whole_len: Option<u64>,
}

impl OpenOptions {
    /// Read-only.
    pub fn read() -> Self {
        Self {
            read: true,
            ..Self::default()
        }
    }
    /// Write-only, no creation.
    pub fn write() -> Self {
        Self {
            write: true,
            ..Self::default()
        }
    }
    /// Create a new file for writing; fails if it exists.
    pub fn create_new() -> Self {
        Self {
            write: true,
            create: true,
            exclusive: true,
            ..Self::default()
        }
    }
}

/// What `stat` returns: the fields engines look at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// Size in bytes.
    pub size: u64,
    /// A directory.
    pub is_dir: bool,
    /// A regular file.
    pub is_file: bool,
    /// A block device.
    pub is_block_device: bool,
    /// Device number of the file itself (for block devices, `st_rdev`).
    pub rdev: u64,
    /// Device number of the file system holding it (`st_dev`; 0 when
    /// the backend has none): with [`Stat::ino`], which file it is.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Last modification, Unix nanoseconds (0 when the backend does not
    /// keep it): what `find -newer` compares.
    pub mtime_ns: u64,
    /// Last status change (ctime), Unix nanoseconds (0 when the backend
    /// does not keep it): moves with every write and with any change of
    /// the modification time, so a file changed and its mtime put back
    /// still shows it.
    pub ctime_ns: u64,
    /// Bytes of storage the file holds (`st_blocks` x 512: less than its
    /// size where it has holes); 0 when the backend does not say.
    pub allocated_bytes: u64,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (no path), as bytes: names need not be UTF-8.
    pub name: Vec<u8>,
    /// The entry is a directory (without following symbolic links).
    pub is_dir: bool,
}

/// What `statfs` returns: the space and inodes of the file system that
/// holds a path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsStat {
    /// Fundamental block size in bytes.
    pub block_bytes: u64,
    /// Total blocks.
    pub blocks: u64,
    /// Blocks free for unprivileged users.
    pub blocks_available: u64,
    /// Blocks free, the file system's reserve included (what root may
    /// take on ext4, whose reserve is root's unless set otherwise).
    pub blocks_free: u64,
    /// Total inodes (0 when the file system does not count them).
    pub inodes: u64,
    /// Free inodes.
    pub inodes_free: u64,
    /// Mounted read-only.
    pub read_only: bool,
}

/// Optional features a backend may offer; engines ask for these when they
/// plan a run instead of comparing backend names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Directories exist as real objects (mkdir/rmdir/rename of dirs).
    pub directories: bool,
    /// O_DIRECT-style unbuffered I/O.
    pub direct_io: bool,
    /// mknod: special files and the empty regular files of mdtest -k.
    pub mknod: bool,
    /// fallocate-style preallocation.
    pub preallocate: bool,
    /// rename(2).
    pub rename: bool,
    /// Paths name files of this machine's file systems, so their type and
    /// mount can be described (not so for an object store).
    pub local: bool,
    /// Several handles may write one file at any offsets at once (IOR's
    /// shared file; an object is written by one uploader, in order).
    pub shared_writes: bool,
    /// `stat` returns modification times (`Stat::mtime_ns`).
    pub mtime: bool,
    /// Block devices can be opened, measured ([`Backend::device_geometry`])
    /// and checked for data before a write ([`Backend::device_in_use`]).
    pub block_devices: bool,
    /// Extended attributes can be set ([`Backend::setxattr`]).
    pub xattrs: bool,
    /// A sink (fio's `FIO_NOIO`): writes are dropped, reads fill nothing,
    /// every call succeeds. An engine run on it measures itself, so the
    /// limits of what a store can hold (one writer per object, no
    /// directories) do not apply.
    pub discards: bool,
    /// Least bytes of each write but the last when a file is written in
    /// several requests (S3's multipart parts: 5 MiB); 0 for no least.
    pub min_part_bytes: u64,
    /// Handles carry an OS file descriptor ([`Backend::raw_fd`]) that
    /// another I/O engine (io_uring) may submit requests on.
    pub raw_fd: bool,
    /// A file is an object written whole by one upload, in order, and
    /// readable only once the upload completes (S3): no reads mixed with
    /// its writes, no preallocation, no O_DIRECT, parts of a minimum
    /// size.
    pub whole_object_writes: bool,
    /// Metadata operations can be queued, many in flight for one thread
    /// ([`Backend::metadata_queue`]; POSIX: io_uring).
    pub queued_metadata: bool,
    /// The backend shares no descriptor between threads (no connection
    /// pool, no handle opened by one thread and used by another), so a
    /// task thread may take a descriptor table of its own
    /// (`unshare(CLONE_FILES)`) and stop sharing the process's table lock.
    pub thread_private_fds: bool,
}

/// The size and logical block size of a block device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceGeometry {
    /// Capacity in bytes.
    pub bytes: u64,
    /// Logical block size in bytes (the O_DIRECT alignment).
    pub block_bytes: u64,
}

/// What O_DIRECT needs of a file's transfers, as the kernel states it
/// (statx's `STATX_DIOALIGN`) or as the device under it has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectIoAlignment {
    /// File offsets and lengths must be multiples of this many bytes.
    pub offset_bytes: u64,
    /// Buffers must start at a multiple of this many bytes (0: unknown).
    pub memory_bytes: u64,
    /// Where the figures come from, for messages: `statx` or `the
    /// device's logical block size`.
    pub source: &'static str,
}

/// A storage backend. Errors are `io::Error` so that the caller can name
/// the path and errno; every method is safe to call from many threads.
pub trait Backend: Send + Sync {
    /// Name as the user selects it (`posix`).
    fn name(&self) -> &'static str;
    /// What this backend can do.
    fn capabilities(&self) -> Capabilities;
    /// Creates a directory.
    fn mkdir(&self, path: &CStr, mode: u32) -> io::Result<()>;
    /// Removes an empty directory.
    fn rmdir(&self, path: &CStr) -> io::Result<()>;
    /// Opens (and maybe creates, with mode 0644) a file.
    fn open(&self, path: &CStr, opts: OpenOptions) -> io::Result<Handle>;
    /// Closes a handle.
    fn close(&self, h: Handle) -> io::Result<()>;
    /// Writes `buf` at `offset`; returns the bytes written.
    fn write_at(&self, h: &Handle, buf: &[u8], offset: u64) -> io::Result<usize>;
    /// Reads into `buf` from `offset`; returns the bytes read (0 at end).
    fn read_at(&self, h: &Handle, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Flushes a file's data and metadata to stable storage.
    fn fsync(&self, h: &Handle) -> io::Result<()>;
    /// Flushes a file's data (fdatasync).
    fn fdatasync(&self, h: &Handle) -> io::Result<()>;
    /// Metadata of a path.
    fn stat(&self, path: &CStr) -> io::Result<Stat>;
    /// Metadata of an open handle.
    fn fstat(&self, h: &Handle) -> io::Result<Stat>;
    /// Removes a file.
    fn unlink(&self, path: &CStr) -> io::Result<()>;
    /// Renames a file or directory.
    fn rename(&self, from: &CStr, to: &CStr) -> io::Result<()>;
    /// Creates a FIFO node.
    fn mknod(&self, path: &CStr) -> io::Result<()>;
    /// Creates an empty regular file with mknod(S_IFREG), without opening
    /// it (mdtest -k). Needs [`Capabilities::mknod`].
    fn mknod_file(&self, path: &CStr) -> io::Result<()> {
        let _ = path;
        Err(unsupported(self.name(), "mknod"))
    }
    /// True if `path` exists (an error other than "not found" is an error).
    fn exists(&self, path: &CStr) -> io::Result<bool> {
        match self.stat(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
    /// The entries of a directory, without `.` and `..`, in no set order.
    fn list(&self, path: &CStr) -> io::Result<Vec<DirEntry>> {
        let _ = path;
        Err(unsupported(self.name(), "list"))
    }
    /// Calls `each` for every entry of a directory, without `.` and `..`,
    /// in no set order, and stops early when it returns false. Unlike
    /// [`Backend::list`] a backend may stream the entries, so that a walk
    /// over a huge directory keeps one entry in memory at a time.
    fn list_each(&self, path: &CStr, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        for e in self.list(path)? {
            if !each(&e) {
                break;
            }
        }
        Ok(())
    }
    /// Opens directory `path` for the `*_at` calls. `path` is what the
    /// user named, so a symbolic link in it is followed; everything below
    /// it is reached with [`Backend::open_dir_at`], which follows none.
    /// A backend without descriptors names the directory by its path
    /// (after checking that it is one).
    fn open_dir(&self, path: &CStr) -> io::Result<Dir> {
        path_dir(self, path)
    }
    /// Opens directory `rel` (one or more names joined by `/`, no `..`)
    /// below `dir`, following no symbolic link on the way: a link, or
    /// anything but a directory, where a directory is expected is an
    /// error (ELOOP or ENOTDIR, see [`not_a_directory`]). POSIX resolves
    /// it from `dir`'s descriptor (openat2 with RESOLVE_NO_SYMLINKS, or
    /// one openat with O_NOFOLLOW per name).
    fn open_dir_at(&self, dir: &Dir, rel: &CStr) -> io::Result<Dir> {
        path_dir(self, &dir.join(rel)?)
    }
    /// [`Backend::mkdir`] of `name` in `dir` (mkdirat(2)), as
    /// [`Backend::stat_at`].
    fn mkdir_at(&self, dir: &Dir, name: &CStr, mode: u32) -> io::Result<()> {
        self.mkdir(&dir.join(name)?, mode)
    }
    /// [`Backend::stat`] of `name` in `dir` (fstatat(2)), a link at
    /// `name` followed as stat follows it. Only `name` is looked up: an
    /// engine that works item by item in one directory walks its path
    /// once, not for every item.
    fn stat_at(&self, dir: &Dir, name: &CStr) -> io::Result<Stat> {
        self.stat(&dir.join(name)?)
    }
    /// [`Backend::open`] of `name` in `dir` (openat(2)), as
    /// [`Backend::stat_at`].
    fn open_at(&self, dir: &Dir, name: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        self.open(&dir.join(name)?, opts)
    }
    /// Removes the file `name` in `dir` (unlinkat(2)): a symbolic link is
    /// removed itself, never followed.
    fn unlink_at(&self, dir: &Dir, name: &CStr) -> io::Result<()> {
        self.unlink(&dir.join(name)?)
    }
    /// Removes the empty directory `name` in `dir`; a link of that name
    /// is ENOTDIR, never followed.
    fn rmdir_at(&self, dir: &Dir, name: &CStr) -> io::Result<()> {
        self.rmdir(&dir.join(name)?)
    }
    /// [`Backend::list_each`] of an open directory: entries are read from
    /// the directory itself, not from whatever its path names now.
    fn list_at(&self, dir: &Dir, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        match dir.path() {
            Some(p) => self.list_each(p, each),
            None => Err(unsupported(self.name(), "listing an open directory")),
        }
    }
    /// Calls `each` for every entry of directory `path` whose name starts
    /// with `prefix` (all of them for an empty prefix), in no set order,
    /// with the entry's metadata when the listing carries it (an object
    /// store's LIST gives each object's size and modification time), so
    /// that a walk needs no `stat` per entry; stops early when `each`
    /// returns false. The default filters [`Backend::list_each`] and
    /// gives no metadata.
    fn list_stat_each(
        &self,
        path: &CStr,
        prefix: &[u8],
        each: &mut dyn FnMut(&DirEntry, Option<&Stat>) -> bool,
    ) -> io::Result<()> {
        self.list_each(path, &mut |e| !e.name.starts_with(prefix) || each(e, None))
    }
    /// The resolution of the modification times `stat` and
    /// [`Backend::list_stat_each`] return, nanoseconds: 1 for a file
    /// system with nanosecond times; an object store that keeps whole
    /// seconds says 1e9, so that a caller comparing times knows that two
    /// objects made within a second may carry the same time.
    fn mtime_granularity_ns(&self) -> u64 {
        1
    }
    /// Space and inodes of the file system holding `path`.
    fn statfs(&self, path: &CStr) -> io::Result<FsStat> {
        let _ = path;
        Err(unsupported(self.name(), "statfs"))
    }
    /// True if this process may create and remove entries in directory
    /// `path`; backends without permissions say yes.
    fn can_write(&self, path: &CStr) -> io::Result<bool> {
        let _ = path;
        Ok(true)
    }
    /// Refuses a path given to a run that this backend cannot address
    /// as given, sending nothing: an `InvalidInput` error, bad usage to
    /// the tools, which ask it of every path they were given before
    /// [`Backend::init`]. S3 refuses `.` and `..` key segments, keys
    /// over 1024 bytes, invalid bucket names, and an `s3://BUCKET/`
    /// that is not the `--s3.bucket` given; a file system takes any.
    fn check_path(&self, _path: &CStr) -> io::Result<()> {
        Ok(())
    }
    /// Called once before the first operation of a run (connections,
    /// sessions); POSIX needs nothing.
    fn init(&self) -> io::Result<()> {
        Ok(())
    }
    /// Called once after the last operation of a run.
    fn finalize(&self) -> io::Result<()> {
        Ok(())
    }
    /// Preallocates `len` bytes at `offset`.
    fn preallocate(&self, h: &Handle, offset: u64, len: u64) -> io::Result<()>;
    /// Sets the file's size to `len` bytes (ftruncate): what a failed
    /// preallocation grew is cut back, and the blocks past `len` freed.
    fn set_len(&self, h: &Handle, len: u64) -> io::Result<()> {
        let _ = (h, len);
        Err(unsupported(self.name(), "set_len"))
    }
    /// The O_DIRECT alignment of the file, block device or (for a file
    /// yet to be made) directory at `path`; None when it cannot be told
    /// (a file system that states none and has no block device under it,
    /// a backend without O_DIRECT) or the file takes no O_DIRECT.
    fn direct_io_alignment(&self, path: &CStr) -> io::Result<Option<DirectIoAlignment>> {
        let _ = path;
        Ok(None)
    }
    /// Flushes everything the system holds (sync(2)).
    fn sync_all(&self);
    /// The file descriptor behind a handle, when there is one; POSIX
    /// returns it so engines may submit io_uring requests.
    fn raw_fd(&self, h: &Handle) -> Option<i32> {
        let _ = h;
        None
    }
    /// Size and logical block size of the block device at `path`. Needs
    /// [`Capabilities::block_devices`].
    fn device_geometry(&self, path: &CStr) -> io::Result<DeviceGeometry> {
        let _ = path;
        Err(unsupported(self.name(), "block devices"))
    }
    /// Why writing the block device at `path` (device number `rdev`)
    /// would destroy something (a mount, holders, a signature), or None
    /// when nothing was found. A backend that cannot look says so, which
    /// refuses the write.
    fn device_in_use(&self, path: &CStr, rdev: u64) -> Option<String> {
        let _ = (path, rdev);
        Some(format!(
            "the {} backend cannot tell whether a block device is in use",
            self.name()
        ))
    }
    /// [`Backend::device_in_use`], the device also probed for signatures
    /// where the writer's `writes` land. A backend that looks no further
    /// answers as [`Backend::device_in_use`].
    fn device_in_use_at(&self, path: &CStr, rdev: u64, writes: &safety::Writes) -> Option<String> {
        let _ = writes;
        self.device_in_use(path, rdev)
    }
    /// Why writing the regular file at `path` would destroy something in
    /// use (a loop device built on it, a swap file), or None. A backend
    /// without local files has none that a loop device could use.
    fn file_in_use(&self, path: &CStr) -> Option<String> {
        let _ = path;
        None
    }
    /// Holds the block device at `path` exclusively until the claim is
    /// dropped ([`safety::DeviceClaim`]): asked before writing a device
    /// found unused, so that nothing mounts it meanwhile. A backend
    /// without block devices has nothing to claim.
    fn claim_device(&self, path: &CStr) -> io::Result<safety::DeviceClaim> {
        let _ = path;
        Ok(safety::DeviceClaim::none())
    }
    /// Sets extended attribute `name` of `path` to `value`. Needs
    /// [`Capabilities::xattrs`].
    fn setxattr(&self, path: &CStr, name: &CStr, value: &[u8]) -> io::Result<()> {
        let _ = (path, name, value);
        Err(unsupported(self.name(), "extended attributes"))
    }
    /// A queue that keeps up to `depth` metadata operations in flight for
    /// the calling thread, with `data_bytes` per operation for the data a
    /// create writes or a read reads. Needs
    /// [`Capabilities::queued_metadata`]; the error names what is missing
    /// (io_uring refused, an opcode the kernel lacks).
    fn metadata_queue(&self, depth: u32, data_bytes: usize) -> io::Result<Box<dyn MetaQueue>> {
        let _ = (depth, data_bytes);
        Err(unsupported(self.name(), "queued metadata operations"))
    }
    /// What the run should tell the user about the backend itself, after
    /// the run (for S3: requests retried). Empty for POSIX.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The error of an operation a backend does not offer.
pub fn unsupported(backend: &str, op: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("the {backend} backend does not support {op}"),
    )
}

/// A directory named by its path, for backends without descriptors:
/// checked to be a directory, as opening one would.
fn path_dir<B: Backend + ?Sized>(be: &B, path: &CStr) -> io::Result<Dir> {
    if be.stat(path)?.is_dir {
        Ok(Dir::from_path(path))
    } else {
        Err(io::Error::from_raw_os_error(libc::ENOTDIR))
    }
}

/// A path as the C string the trait takes; a path with a NUL byte in it
/// cannot name a file, so it is an `InvalidInput` error.
pub fn c_path(path: &std::path::Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: a path cannot contain a NUL byte", path.display()),
        )
    })
}

/// The backends built in, by the name users type.
#[cfg(feature = "s3")]
pub const NAMES: &[&str] = &["posix", "null", "s3"];
/// The backends built in, by the name users type.
#[cfg(not(feature = "s3"))]
pub const NAMES: &[&str] = &["posix", "null"];

/// Picks a backend by name, with default options (for S3: the AWS_*
/// environment variables; a bad setting there is reported by `init`);
/// the error lists the names that exist.
pub fn by_name(name: &str) -> Result<Box<dyn Backend>, UnknownBackend> {
    match name.to_ascii_lowercase().as_str() {
        "posix" => Ok(Box::new(Posix)),
        "null" => Ok(Box::new(Null)),
        #[cfg(feature = "s3")]
        "s3" => Ok(Box::new(s3::S3::from_env())),
        _ => Err(UnknownBackend(name.to_string())),
    }
}

/// Picks a backend by name and applies its options (from
/// [`parse_options`]); options for another backend are an error.
pub fn with_options(name: &str, opts: &BackendOptions) -> Result<Box<dyn Backend>, OptionError> {
    let name = name.to_ascii_lowercase();
    if let Some(other) = opts.backends().find(|b| *b != name) {
        return Err(OptionError(format!(
            "--{other}.* options given but the backend is {name}; drop them or pick -a {other}"
        )));
    }
    #[cfg(feature = "s3")]
    if name == "s3" {
        return Ok(Box::new(s3::S3::from_options(opts)?));
    }
    let inner = by_name(&name).map_err(|e| OptionError(e.to_string()))?;
    let direct = opts.flag("posix", "odirect");
    if direct && !inner.capabilities().direct_io {
        return Err(OptionError(format!(
            "--posix.odirect: the {name} backend has no direct I/O"
        )));
    }
    Ok(match direct {
        true => Box::new(options::Tuned { inner, direct }),
        false => inner,
    })
}

/// The name given to `by_name` is not a backend iolab has.
#[derive(Debug, thiserror::Error)]
#[error("unknown backend '{0}': available backends are {NAMES:?}")]
pub struct UnknownBackend(pub String);
