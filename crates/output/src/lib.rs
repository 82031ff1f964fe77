//! Every file a tool writes for the user (`--json`, `--csv`, legacy
//! `-csvout`/`-output`, tarballs, report directories) goes through here:
//! checked for writability before the run (so a typo costs nothing) and
//! written to a temporary name beside the target, renamed over it only
//! once complete. A failed write (a full file system) leaves the target
//! as it was: no truncated file, no `.part`, no 0-byte output. A file
//! that collects runs (XDD's `-csvout`) takes each run's record in one
//! O_APPEND write instead ([`append_record`]), so that runs ending
//! together all keep theirs.
//!
//! These files are not the storage under test, so they use `std::fs`,
//! not the backend.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("run.json");
//! iolab_output::check_file("--json", &path).unwrap();
//! iolab_output::write_atomically(&path, b"{}").unwrap();
//! assert_eq!(std::fs::read(&path).unwrap(), b"{}");
//! ```

mod fifo;
mod temps;

pub use temps::{remove_stale, Stale};

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// An output the run could not write, named by the option that asked for it.
#[derive(Debug, thiserror::Error)]
#[error("{option} {}: {why}", path.display())]
pub struct OutputError {
    /// The option (`--json`, `-csvout`, `--tarball`, ...).
    pub option: String,
    /// The path given.
    pub path: PathBuf,
    /// What is wrong and what to do.
    pub why: String,
}

impl OutputError {
    fn new(option: &str, path: &Path, why: impl Into<String>) -> OutputError {
        OutputError {
            option: option.to_string(),
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// What an output's name holds now, as writing it must treat it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Nothing: the file is made.
    Nothing,
    /// A regular file of its own name: replaced whole (or appended to).
    File,
    /// A symbolic link to a regular file, or a dangling one: the link is
    /// replaced, never written or read through.
    LinkToFile,
    /// A directory: refused.
    Directory,
    /// A block device, named or linked to: refused, since an output
    /// written there would land on a disk's data.
    BlockDevice,
    /// A character device, FIFO or socket (`/dev/stdout`, `/dev/null`, a
    /// named pipe), named or linked to: written in place.
    InPlace,
}

fn found(path: &Path) -> io::Result<Found> {
    use std::os::unix::fs::FileTypeExt;
    let own = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(e),
    };
    let link = own.file_type().is_symlink();
    let m = match link {
        true => match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::LinkToFile),
            Err(e) => return Err(e),
        },
        false => own,
    };
    let t = m.file_type();
    Ok(if t.is_block_device() {
        Found::BlockDevice
    } else if t.is_dir() {
        Found::Directory
    } else if !t.is_file() {
        Found::InPlace
    } else if link {
        Found::LinkToFile
    } else {
        Found::File
    })
}

/// The error of an output named at a block device.
fn block_device(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a block device: an output is written to a file, never onto a device",
            path.display()
        ),
    )
}

/// Most bytes of an existing file [`earlier_head`] reads.
pub const EARLIER_HEAD_BYTES: u64 = 64 << 10;

/// What stands where an output that picks its own file names (a man
/// page, a chart, a node's table) would replace a file, looked at
/// without following a link, so that its writer can tell whether an
/// earlier run of its own made it: `Ok(None)` when nothing is there,
/// `Ok(Some(head))` with the first [`EARLIER_HEAD_BYTES`] of a regular
/// file, else why nothing there may be replaced ([`Unreplaceable`]).
/// iolab writes over nothing it did not make.
pub fn earlier_head(path: &Path) -> Result<Option<Vec<u8>>, Unreplaceable> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreplaceable::Unseen(e.to_string())),
        Ok(m) if !m.is_file() => return Err(Unreplaceable::NotFile),
        Ok(_) => {}
    }
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| io::Read::read_to_end(&mut io::Read::take(f, EARLIER_HEAD_BYTES), &mut head))
        .map(|_| Some(head))
        .map_err(|e| Unreplaceable::Unread(e.to_string()))
}

/// Why a file where an output goes may not be replaced, whoever made it
/// ([`earlier_head`]); its text follows the path in a message.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Unreplaceable {
    /// Its metadata cannot be read.
    #[error("cannot be looked at ({0})")]
    Unseen(String),
    /// A link, a directory, a FIFO or a device: no output of iolab's.
    #[error("is not a regular file")]
    NotFile,
    /// It cannot be opened or read.
    #[error("cannot be read ({0})")]
    Unread(String),
}

/// Checks that the file `path` can be written later without touching an
/// existing file: not a directory, its directory exists and takes a new
/// file (a probe proves what access(2) cannot: a read-only mount, ACLs),
/// and an existing file is writable. Creates nothing. A FIFO is opened
/// and held open until the run writes it, so its reader sees no end
/// before the run's first byte.
pub fn check_file(option: &str, path: &Path) -> Result<(), OutputError> {
    let fail = |why: String| OutputError::new(option, path, why);
    if path.as_os_str().is_empty() {
        return Err(fail("an empty name; give a file name".into()));
    }
    too_long(path).map_or(Ok(()), |why| Err(fail(why)))?;
    let what = found(path).map_err(|e| fail(format!("cannot look at it: {e}")))?;
    match what {
        Found::Directory => return Err(fail("is a directory; give a file name".into())),
        Found::BlockDevice => {
            return Err(fail(
                "is a block device; an output is written to a file, never onto a device".into(),
            ))
        }
        Found::InPlace | Found::File => {
            use std::os::unix::fs::OpenOptionsExt;
            let opened = match fifo::is_fifo(path) {
                true => fifo::hold(path),
                // O_NONBLOCK: a device's open does not wait either.
                false => OpenOptions::new()
                    .append(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(path)
                    .map(drop),
            };
            opened.map_err(|e| match e.raw_os_error() {
                Some(libc::ENXIO) => {
                    fail("is a FIFO that no program reads; start its reader first".into())
                }
                _ => fail(format!("cannot be written: {e}")),
            })?;
            if what == Found::InPlace {
                return Ok(());
            }
        }
        Found::Nothing | Found::LinkToFile => {}
    }
    // A file is replaced by one made beside it: its directory must take one.
    let parent = parent_of(path);
    if !parent.is_dir() {
        return Err(fail(format!(
            "the directory {} does not exist; create it or give another path",
            parent.display()
        )));
    }
    probe_dir(&parent).map_err(|e| {
        fail(format!(
            "cannot create a file in {}: {e}; give a writable path",
            parent.display()
        ))
    })
}

/// Checks that `dir` can hold new files: an existing writable directory,
/// or a path whose nearest existing ancestor is one (it will be created
/// when the run writes). Creates nothing.
pub fn check_dir(option: &str, dir: &Path) -> Result<(), OutputError> {
    let fail = |why: String| OutputError::new(option, dir, why);
    too_long(dir).map_or(Ok(()), |why| Err(fail(why)))?;
    let mut at = dir.to_path_buf();
    while !at.exists() {
        at = match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
    }
    if !at.is_dir() {
        return Err(fail(format!("{} is not a directory", at.display())));
    }
    probe_dir(&at).map_err(|e| {
        fail(format!(
            "cannot create files in {}: {e}; give a writable directory",
            at.display()
        ))
    })
}

/// Why `path` is longer than the system takes (PATH_MAX in all, NAME_MAX
/// a name; a name's hidden temporary takes 22 bytes more), if it is.
fn too_long(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    const PATH_MAX: usize = libc::PATH_MAX as usize;
    const NAME_MAX: usize = 255;
    let len = path.as_os_str().as_bytes().len();
    if len >= PATH_MAX {
        return Some(format!(
            "{len} bytes long; the system takes paths of fewer than {PATH_MAX} (PATH_MAX)"
        ));
    }
    let longest = path.iter().map(|c| c.as_bytes().len()).max().unwrap_or(0);
    (longest > NAME_MAX).then(|| {
        format!("a name in it is {longest} bytes long; a file system takes at most {NAME_MAX} (NAME_MAX)")
    })
}

/// Creates and removes a temporary file in `dir`.
fn probe_dir(dir: &Path) -> io::Result<()> {
    tempfile::Builder::new()
        .prefix(".iolab-probe")
        .tempfile_in(dir)
        .and_then(|t| t.close())
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, and
/// renames it over `path`; on any failure the temporary file is removed
/// and `path` is as it was.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

/// Replaces `path` with `bytes` as [`write_atomically`] does (a reader
/// sees the old file or the new one whole, never part of one), without
/// syncing them to the disk first: for a file rewritten several times a
/// second whose readers need it whole but not durable, as a live
/// OpenMetrics textfile (a crash loses a state the next run rewrites).
/// A sync each time was most of what `--live` cost a run, and disk
/// writes beside the storage under test.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::unlisted(path)?;
    f.write_all(bytes)?;
    f.put_in_place(false)
}

/// [`write_atomically`] with the contents written by `fill` as it makes
/// them, so a large output (every pass of a long run) is never held
/// whole in memory. An error from `fill` leaves `path` as it was.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(64 << 10, AtomicFile::create(path)?);
    fill(&mut w)?;
    w.into_inner().map_err(|e| e.into_error())?.commit()
}

/// Appends `record` to `path` (XDD's `-output`, `-csvout` and
/// `-combinedout`, which collect runs in one file, as XDD's fopen "a"
/// does) in one write(2) on a descriptor opened with O_APPEND: runs that
/// end at the same moment each add their record, whole and after the
/// others (a copy renamed over the file kept only the last writer's). A
/// record is made whole in memory by the caller, so it is in the file
/// complete or not at all; a short write (a full file system) is an
/// error saying that the file now ends with part of it. No link is
/// followed: a link at the name is replaced by a file holding the
/// record alone (nothing read or written through it), and one planted
/// between the look and the open is refused (O_NOFOLLOW). What is not a
/// regular file (a FIFO, /dev/stdout) is written in place; a block
/// device or a directory is refused.
pub fn append_record(path: &Path, record: &[u8]) -> io::Result<()> {
    match found(path)? {
        Found::BlockDevice => Err(block_device(path)),
        Found::Directory => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is a directory: nothing appended", path.display()),
        )),
        Found::LinkToFile => write_atomically(path, record),
        Found::InPlace => {
            let mut f = OpenOptions::new().append(true).open(path)?;
            f.write_all(record)?;
            f.flush()
        }
        Found::Nothing | Found::File => append_to_file(path, record),
    }
}

/// Takes the blocks `len` bytes appended to `f` will need (fallocate,
/// FALLOC_FL_KEEP_SIZE from its end), so that a file system without room
/// for a record refuses it whole instead of taking part of it. A file
/// system that cannot reserve (EOPNOTSUPP: some network and FUSE file
/// systems) is written without; another process appending meanwhile may
/// take the blocks, when the write itself can still come up short.
fn reserve(f: &std::fs::File, len: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let end = f.metadata()?.len();
    let (Ok(at), Ok(len)) = (libc::off_t::try_from(end), libc::off_t::try_from(len)) else {
        return Ok(());
    };
    loop {
        // SAFETY: a valid open descriptor; fallocate reads nothing from
        // this process's memory.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, at, len) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG) => return Err(e),
            // Not supported here: the write alone says.
            _ => return Ok(()),
        }
    }
}

/// [`append_record`] for a regular file, made if missing (0666 less
/// the umask, as any new output).
fn append_to_file(path: &Path, record: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: should a FIFO take the name after the look, its open
    // fails (no reader) or returns at once instead of waiting without
    // end; a regular file ignores it.
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} stopped being a regular file as it was opened: nothing appended",
            path.display()
        )));
    }
    if record.is_empty() {
        return Ok(());
    }
    reserve(&f, record.len()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "no room for this run's record ({} bytes) in {}: {e}; nothing appended",
                record.len(),
                path.display()
            ),
        )
    })?;
    // One write(2): the kernel puts it at the end of the file under the
    // file's lock, so writes of other processes land before or after
    // it, never inside it (a loop of writes could interleave).
    let written = loop {
        match f.write(record) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => break r?,
        }
    };
    if written < record.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!(
                "only {written} of {} bytes could be appended to {} (a full file system?): it now ends with part of this run's record",
                record.len(),
                path.display()
            ),
        ));
    }
    f.sync_data()
}

/// Opens `path` for a file written as the run goes (xdd's heartbeat
/// CSV, read with `tail -f` meanwhile): an empty file made beside it is
/// renamed over it at once, so a link planted at `path` is replaced,
/// never followed, and a file there before is replaced whole rather than
/// written into. What is not a regular file (a FIFO, /dev/stderr) is
/// written in place, as [`AtomicFile`] does.
pub fn create_streamed(path: &Path) -> io::Result<std::fs::File> {
    match AtomicFile::create(path)?.inner {
        Inner::InPlace(f) => Ok(f),
        Inner::Temp(tmp, path) => {
            std::fs::set_permissions(tmp.path(), default_permissions())?;
            tmp.persist(&path).map_err(|e| e.error)
        }
    }
}

/// Makes, with `make`, the hidden file or directory an output is written
/// under beside `target` before it takes `target`'s name:
/// `.NAME.PID.XXXXXX.iolab-tmp` (this process's id, random, made with
/// O_EXCL), for a file ([`AtomicFile`]) or a directory ([`StagedDir`]);
/// the caller holds it locked while it writes ([`remove_stale`]).
fn temp_beside<T>(
    target: &Path,
    make: impl FnOnce(&tempfile::Builder, PathBuf) -> io::Result<T>,
) -> io::Result<T> {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let prefix = temps::prefix(&name);
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(temps::SUFFIX);
    make(&b, parent_of(target))
}

/// A directory of outputs (a report's charts and page) made whole or not
/// at all: its files are written into a hidden directory beside it
/// (`.NAME.PID.XXXXXX.iolab-tmp`), renamed to NAME once complete, so a
/// run killed midway leaves no NAME half made, only that hidden
/// directory, which a later run removes ([`remove_stale`]); an error
/// (dropped without [`StagedDir::commit`]) removes it.
pub struct StagedDir {
    tmp: tempfile::TempDir,
    target: PathBuf,
    /// The hidden directory, held locked while this lives: whose it is.
    _held: Option<std::fs::File>,
}

impl StagedDir {
    /// Starts `target`, which must be absent or an empty directory; its
    /// parent directories are made if missing.
    pub fn new(target: &Path) -> io::Result<StagedDir> {
        let parent = parent_of(target);
        std::fs::create_dir_all(&parent)?;
        let tmp = temp_beside(target, |b, dir| b.tempdir_in(dir))?;
        let held = std::fs::File::open(tmp.path()).ok();
        if let Some(f) = &held {
            temps::hold(f);
        }
        Ok(StagedDir {
            tmp,
            target: target.to_path_buf(),
            _held: held,
        })
    }

    /// Where its files go meanwhile.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Puts the directory in place (replacing an empty one), with the
    /// usual permissions of a new directory (0777 & ~umask; tempfile made
    /// it 0700).
    pub fn commit(self) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::Permissions::from_mode(0o777 & !umask());
        std::fs::set_permissions(self.tmp.path(), mode)?;
        let staged = self.tmp.keep();
        std::fs::rename(&staged, &self.target).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&staged);
        })
    }
}

/// The temporary files being written now, for a process about to end at
/// once (a second Ctrl-C) to remove ([`remove_pending`]): a slot holds a
/// NUL-terminated path, leaked on purpose (a handler may read it at any
/// moment; a slot freed and reused leaves the old path valid, naming a
/// file renamed away or removed since). A file that finds no free slot
/// is not removed that way, only the usual ones.
static PENDING: [std::sync::atomic::AtomicPtr<libc::c_char>; 64] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; 64];

/// Takes a slot of [`PENDING`] for `path`; its index.
fn register_pending(path: &Path) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::Ordering;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let raw = Box::leak(c.into_boxed_c_str()).as_ptr().cast_mut();
    PENDING.iter().position(|slot| {
        slot.compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok()
    })
}

/// Gives slot `i` back (its path stays allocated: see [`PENDING`]).
fn unregister_pending(i: usize) {
    PENDING[i].store(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
}

/// Removes every temporary output file still being written. For a
/// process that ends at once without running its destructors (a second
/// Ctrl-C): the outputs are then absent, not left as hidden
/// `.NAME.PID.XXXXXX.iolab-tmp` files. Async-signal-safe: atomic loads and
/// unlink(2) only.
pub fn remove_pending() {
    for slot in &PENDING {
        let p = slot.load(std::sync::atomic::Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a non-null slot holds a leaked, NUL-terminated path
            // that is never freed (see PENDING).
            unsafe { libc::unlink(p) };
        }
    }
}

/// A file being written under a temporary name beside its target;
/// [`AtomicFile::commit`] renames it over the target, dropping it without
/// a commit removes it. A target that is not a regular file (a FIFO,
/// `/dev/stdout`) is written in place: renaming over it would replace it.
pub struct AtomicFile {
    inner: Inner,
    /// Its slot of [`PENDING`] while it is being written; given back
    /// when it is dropped, after the file itself was put in place or
    /// removed (fields drop in order).
    pending: Option<Slot>,
}

/// A slot of [`PENDING`], given back on drop.
struct Slot(usize);

impl Drop for Slot {
    fn drop(&mut self) {
        unregister_pending(self.0);
    }
}

enum Inner {
    Temp(tempfile::NamedTempFile, PathBuf),
    InPlace(std::fs::File),
}

impl AtomicFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let mut f = AtomicFile::unlisted(path)?;
        if let Inner::Temp(tmp, _) = &f.inner {
            f.pending = register_pending(tmp.path()).map(Slot);
        }
        Ok(f)
    }

    /// [`AtomicFile::create`] without a slot of [`PENDING`]: for a file
    /// rewritten several times a second ([`replace`]), whose slot's path
    /// would be leaked each time; its temporary lives for one write.
    fn unlisted(path: &Path) -> io::Result<AtomicFile> {
        match found(path)? {
            Found::BlockDevice => return Err(block_device(path)),
            Found::InPlace => {
                let f = match fifo::take(path)? {
                    Some(f) => f,
                    None => OpenOptions::new().write(true).open(path)?,
                };
                return Ok(AtomicFile {
                    inner: Inner::InPlace(f),
                    pending: None,
                });
            }
            _ => {}
        }
        let tmp = temp_beside(path, |b, dir| b.tempfile_in(dir))?;
        temps::hold(tmp.as_file());
        Ok(AtomicFile {
            inner: Inner::Temp(tmp, path.to_path_buf()),
            pending: None,
        })
    }

    /// Syncs the data and puts the file in place of its target.
    pub fn commit(self) -> io::Result<()> {
        self.put_in_place(true)
    }

    fn put_in_place(self, sync: bool) -> io::Result<()> {
        match self.inner {
            Inner::InPlace(mut f) => f.flush(),
            Inner::Temp(mut tmp, path) => {
                tmp.flush()?;
                if sync {
                    tmp.as_file().sync_all()?;
                }
                // An existing file keeps its permissions; a new one (or
                // one replacing a link) gets the usual 0666 & ~umask
                // instead of tempfile's 0600.
                let mode = std::fs::symlink_metadata(&path)
                    .ok()
                    .filter(std::fs::Metadata::is_file)
                    .map_or_else(default_permissions, |m| m.permissions());
                std::fs::set_permissions(tmp.path(), mode)?;
                tmp.persist(&path).map(drop).map_err(|e| e.error)
            }
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::Temp(t, _) => t.write(buf),
            Inner::InPlace(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Temp(t, _) => t.flush(),
            Inner::InPlace(f) => f.flush(),
        }
    }
}

/// 0666 less the process's umask, read from /proc (umask(2) can only
/// be read by setting it, which would race with other threads creating
/// files); 022 when /proc does not say.
fn default_permissions() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o666 & !umask())
}

/// The process's umask, as /proc says it (umask(2) would have to set it
/// to read it, racing other threads); 022 when it cannot be read.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Every output a run will write, gathered as its options are read and
/// checked together before the run, so the first bad one is exit 2
/// naming its option, before anything is created.
#[derive(Debug, Default, Clone)]
pub struct Planned(Vec<(String, PathBuf, Kind)>);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    File,
    Dir,
    /// A file the run reads or writes as the storage under test (a
    /// target, a test file) or keeps (a results store): not checked
    /// here, but no output may land on it.
    Data,
    /// A file the run rewrites by its own means as it goes (a restart
    /// record, and the temporary name it is rewritten under): checked
    /// where it is read, but it may share its file with nothing else
    /// planned, data or output, as an output may not.
    Record,
}

impl Planned {
    /// No outputs yet.
    pub fn new() -> Planned {
        Planned::default()
    }

    /// A file the option `option` will write, if given.
    pub fn file(mut self, option: &str, path: Option<&Path>) -> Planned {
        if let Some(p) = path {
            self.0.push((option.into(), p.to_path_buf(), Kind::File));
        }
        self
    }

    /// A directory the option `option` will write files into, if given.
    pub fn dir(mut self, option: &str, path: Option<&Path>) -> Planned {
        if let Some(p) = path {
            self.0.push((option.into(), p.to_path_buf(), Kind::Dir));
        }
        self
    }

    /// A file the option `option` names that the run uses as data (a
    /// target, a test file, a store), if given: no output may be
    /// written over it.
    pub fn data(mut self, option: &str, path: Option<&Path>) -> Planned {
        if let Some(p) = path {
            self.0.push((option.into(), p.to_path_buf(), Kind::Data));
        }
        self
    }

    /// A file the option `option` names that the run rewrites itself
    /// while it runs (a restart record), if given: not probed here, but
    /// refused on the file of any other planned output, record or data.
    pub fn record(mut self, option: &str, path: Option<&Path>) -> Planned {
        if let Some(p) = path {
            self.0.push((option.into(), p.to_path_buf(), Kind::Record));
        }
        self
    }

    /// Everything planned in `other` too.
    pub fn and(mut self, other: Planned) -> Planned {
        self.0.extend(other.0);
        self
    }

    /// Checks every planned output; the first that cannot be written is
    /// the error, and so is a data file of an empty name. Then two files
    /// planned on one file (two names of it
    /// included) are refused: the later write would replace the earlier
    /// (an output over a test file or a store loses the data).
    pub fn check(&self) -> Result<(), OutputError> {
        for (option, path, kind) in &self.0 {
            match kind {
                Kind::File => check_file(option, path)?,
                Kind::Dir => check_dir(option, path)?,
                // Not checked as an output, but an empty name is no file
                // at all (SQLite takes it for a private temporary store,
                // and the run would be recorded nowhere).
                Kind::Data if path.as_os_str().is_empty() => {
                    return Err(OutputError::new(
                        option,
                        path,
                        "an empty name; give a file name",
                    ))
                }
                Kind::Data | Kind::Record => {}
            }
        }
        self.distinct()
    }

    fn distinct(&self) -> Result<(), OutputError> {
        // Each output against everything planned (the data can be one
        // file per task: thousands, against a handful of outputs).
        let keyed: Vec<_> = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, (_, _, kind))| *kind != Kind::Dir)
            .filter_map(|(i, (option, path, kind))| {
                Some((i, option, path, *kind, same_file_key(path)?))
            })
            .collect();
        let outputs = keyed.iter().filter(|e| e.3 != Kind::Data);
        for (i, option, path, _, key) in outputs {
            let other = keyed.iter().find(|e| e.0 != *i && e.4 == *key);
            if let Some((j, other_option, other_path, ..)) = other {
                // The message names the later of the two on the command line.
                let (option, path, first, first_path) = match j < i {
                    true => (option, path, other_option, other_path),
                    false => (other_option, other_path, option, path),
                };
                return Err(OutputError::new(
                    option,
                    path,
                    format!(
                        "is the same file as {first} {}: give each its own path",
                        first_path.display()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// What names one file, whatever the path's spelling: an existing
/// file's device and inode, a new one's canonical directory and name.
/// None for what is not a file to collide on (standard output `-`, a
/// character device such as /dev/null, a FIFO): outputs may share those.
#[derive(Debug, PartialEq)]
enum FileKey {
    Inode(u64, u64),
    Named(PathBuf),
}

fn same_file_key(path: &Path) -> Option<FileKey> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if path.as_os_str() == "-" {
        return None;
    }
    match std::fs::metadata(path) {
        Ok(m) => {
            let t = m.file_type();
            let shared = t.is_char_device() || t.is_fifo() || t.is_socket();
            (!shared).then(|| FileKey::Inode(m.dev(), m.ino()))
        }
        Err(_) => {
            let dir = std::fs::canonicalize(parent_of(path)).unwrap_or_else(|_| parent_of(path));
            Some(FileKey::Named(dir.join(path.file_name()?)))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// earlier_head: nothing there, a regular file's first bytes (at
    /// most EARLIER_HEAD_BYTES), and a link or a directory refused,
    /// the link not followed.
    #[test]
    fn earlier_head_reads_a_regular_file_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        assert_eq!(earlier_head(&f), Ok(None));
        std::fs::write(&f, vec![b'x'; EARLIER_HEAD_BYTES as usize + 10]).unwrap();
        let head = earlier_head(&f).unwrap().unwrap();
        assert_eq!(head.len() as u64, EARLIER_HEAD_BYTES);
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(earlier_head(&link), Err(Unreplaceable::NotFile));
        assert_eq!(earlier_head(dir.path()), Err(Unreplaceable::NotFile));
    }

    /// A FIFO whose reader is there before the run: the checks (the
    /// binary checks an output twice) give the reader no end of file,
    /// and the run writes on the descriptor the check opened.
    #[test]
    fn a_checked_fifo_s_reader_sees_no_end_before_the_rows() {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ff");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        check_file("--live", &p).unwrap();
        check_file("--live", &p).unwrap();
        let mut pfd = libc::pollfd {
            fd: reader.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout.
        let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
        assert_eq!(ready, 0, "the reader saw an end");
        let mut w = create_streamed(&p).unwrap();
        w.write_all(b"row\n").unwrap();
        drop(w);
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert_eq!(got, "row\n");
        // Nothing stays held: a reader of the next run sees the end.
        assert!(fifo::take(&p).unwrap().is_none());
    }

    #[test]
    fn checks_name_the_option_and_path_and_create_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        check_file("--json", &p).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let e = check_file("--json", dir.path()).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let e = check_file("--csv", Path::new("/nonexistent-dir/x.csv")).unwrap_err();
        assert!(
            e.to_string().starts_with("--csv /nonexistent-dir/x.csv"),
            "{e}"
        );
        check_dir("-o", &dir.path().join("new/deeper")).unwrap();
        assert!(!dir.path().join("new").exists());
        let e = Planned::new()
            .file("--json", Some(&p))
            .file("--tarball", Some(Path::new("/no/such/dir/x.tgz")))
            .check()
            .unwrap_err();
        assert_eq!(e.option, "--tarball");
    }

    #[test]
    fn two_outputs_or_an_output_and_data_on_one_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let a_again = dir.path().join(".").join("a");
        let e = Planned::new()
            .file("--json", Some(&a))
            .file("--csv", Some(&a_again))
            .check()
            .unwrap_err();
        assert_eq!(e.option, "--csv");
        assert!(e.why.contains("same file as --json"), "{e}");
        // An existing test file under another name (a hard link).
        std::fs::write(&b, b"data").unwrap();
        let b_link = dir.path().join("b2");
        std::fs::hard_link(&b, &b_link).unwrap();
        let e = Planned::new()
            .data("-o", Some(&b))
            .file("--json", Some(&b_link))
            .check()
            .unwrap_err();
        assert_eq!(e.option, "--json");
        assert_eq!(std::fs::read(&b).unwrap(), b"data");
        // Distinct files, two targets on one file, and outputs sharing
        // /dev/null or standard output are fine.
        Planned::new()
            .file("--json", Some(&a))
            .file("--csv", Some(&dir.path().join("c")))
            .data("-target", Some(&b))
            .data("-target", Some(&b_link))
            .file("-output", Some(Path::new("/dev/null")))
            .file("-csvout", Some(Path::new("/dev/null")))
            .check()
            .unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A record (a restart file) is refused on data, on an output and
    /// on another record, whichever comes first, but is not probed: it
    /// is checked where it is read.
    #[test]
    fn a_record_shares_its_file_with_nothing_planned() {
        let dir = tempfile::tempdir().unwrap();
        let (a, r) = (dir.path().join("a"), dir.path().join("r"));
        for (first, option) in [
            (Planned::new().data("-target", Some(&r)), "-target"),
            (Planned::new().file("-output", Some(&r)), "-output"),
            (Planned::new().record("-restart", Some(&r)), "-restart"),
        ] {
            let e = first.record("-restart", Some(&r)).check().unwrap_err();
            assert_eq!(e.option, "-restart");
            assert!(e.why.contains(&format!("same file as {option}")), "{e}");
        }
        let e = Planned::new()
            .record("-restart", Some(&r))
            .data("-target", Some(&r))
            .check()
            .unwrap_err();
        assert!(e.why.contains("same file as -restart"), "{e}");
        Planned::new()
            .data("-target", Some(&a))
            .record("-restart", Some(&r))
            .record("-restart", Some(Path::new("/no/such/dir/r")))
            .check()
            .unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// `--store ""` was let through (a store of an empty name is SQLite's
    /// private temporary database: the run was recorded nowhere, exit 0).
    #[test]
    fn a_data_file_of_an_empty_name_is_refused() {
        let e = Planned::new()
            .data("--store", Some(Path::new("")))
            .check()
            .unwrap_err();
        assert_eq!(e.option, "--store");
        assert!(e.why.contains("an empty name"), "{e}");
    }

    #[test]
    fn streamed_and_atomic_writes_replace_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        for (i, write) in [
            |p: &Path| create_streamed(p)?.write_all(b"new"),
            |p: &Path| write_atomically(p, b"new"),
            |p: &Path| append_record(p, b"new"),
        ]
        .iter()
        .enumerate()
        {
            let link = dir.path().join(format!("link{i}"));
            std::os::unix::fs::symlink(&victim, &link).unwrap();
            write(&link).unwrap();
            assert!(!link.is_symlink(), "{i}");
            assert_eq!(std::fs::read(&victim).unwrap(), b"keep", "{i}");
            // Nothing read through the link: an append starts afresh.
            assert_eq!(std::fs::read(&link).unwrap(), b"new", "{i}");
            check_file("--json", &link).unwrap();
        }
    }

    #[test]
    fn a_staged_directory_appears_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("deep/report");
        let staged = StagedDir::new(&target).unwrap();
        std::fs::write(staged.path().join("index.html"), b"page").unwrap();
        assert!(!target.exists(), "visible before it is complete");
        staged.commit().unwrap();
        assert_eq!(std::fs::read(target.join("index.html")).unwrap(), b"page");
        // Dropped unfinished: nothing stays, not even the hidden directory.
        let other = dir.path().join("deep/other");
        let staged = StagedDir::new(&other).unwrap();
        std::fs::write(staged.path().join("a.svg"), b"x").unwrap();
        drop(staged);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("deep"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report"]);
        // An empty directory is replaced.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let staged = StagedDir::new(&empty).unwrap();
        std::fs::write(staged.path().join("f"), b"1").unwrap();
        staged.commit().unwrap();
        assert!(empty.join("f").is_file());
    }

    #[test]
    fn writes_are_whole_and_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b");
        write_atomically(&p, b"hi").unwrap();
        append_record(&p, b" there").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"hi there");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let r = dir.path().join("r.prom");
        replace(&r, b"one").unwrap();
        replace(&r, b"two").unwrap();
        assert_eq!(std::fs::read(&r).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        std::fs::remove_file(&r).unwrap();
        assert!(write_atomically(Path::new("/nonexistent-dir/b"), b"x").is_err());
        // Dropped without commit: nothing stays.
        let mut f = AtomicFile::create(&dir.path().join("c")).unwrap();
        f.write_all(b"partial").unwrap();
        drop(f);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Processes' threads appending at once (as concurrent xdd runs do
    /// to one `-csvout`) keep every record, each whole: the file used to
    /// be copied and renamed over, so the last writer's copy won.
    #[test]
    fn concurrent_appends_keep_every_record_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("all.csv");
        std::fs::write(&p, b"old\n").unwrap();
        let (writers, each) = (8, 25);
        let start = std::sync::Barrier::new(writers);
        std::thread::scope(|s| {
            for w in 0..writers {
                let (p, start) = (&p, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..each {
                        // Large enough to take several pages, so that a
                        // write split in two would show.
                        let line = format!("{w},{i},{}\n", "x".repeat(20_000));
                        append_record(p, line.as_bytes()).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + writers * each);
        assert_eq!(lines[0], "old");
        let mut seen: Vec<&str> = lines[1..]
            .iter()
            .map(|l| {
                let (key, tail) = l.rsplit_once(',').unwrap();
                assert_eq!(tail.len(), 20_000, "a record cut or mixed: {key}");
                key
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), writers * each);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A new file is made with the usual permissions; a FIFO or
    /// character device is written in place; a directory or a block
    /// device is refused, nothing made.
    #[test]
    fn appends_make_a_file_write_devices_in_place_and_refuse_directories() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.csv");
        append_record(&p, b"a\n").unwrap();
        append_record(&p, b"b\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"a\nb\n");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        append_record(Path::new("/dev/null"), b"x").unwrap();
        assert!(append_record(dir.path(), b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
