//! The store's file as seen without SQLite: what kind of file a path is
//! and what SQLite's header in it says (its application id), so that a
//! FIFO is never opened (it blocks) and a database of someone else's is
//! refused before SQLite touches it (opening one in WAL mode makes its
//! `-wal` and `-shm` files); a store to record into opened for writing
//! before SQLite opens it (which would fall back to reading it alone),
//! no link at its name followed, and its other names found; the lock
//! that lets a reading command read a store `immutable` (creating
//! nothing) with no writer changing it meanwhile; and the locks by which
//! a sweep claims its series.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// SQLite's header: the first 16 bytes of every database.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The header's length, and where in it the application id is (a
/// big-endian u32, `PRAGMA application_id`).
const HEADER_BYTES: usize = 100;
const APPLICATION_ID_AT: usize = 68;

/// What is at a store's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    /// Nothing, or nothing this process can see (SQLite then says why).
    Missing,
    /// A symbolic link (to a store, to nothing): never followed, so that
    /// one planted at a store's name cannot have a store made, or
    /// written, where it points.
    Link,
    /// Something other than a regular file (a FIFO, a device, a
    /// directory), never opened: a FIFO's open waits for a writer.
    NotAFile,
    /// An empty file.
    Empty,
    /// A SQLite database; its application id (0 when its header is cut
    /// short, for SQLite to judge).
    Database(u32),
    /// Any other file (shorter than SQLite's header, other bytes).
    Other,
}

/// What is at `path` (a link at its name not followed), read without
/// SQLite.
pub(crate) fn head(path: &Path) -> Head {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Head::Missing;
    };
    if meta.file_type().is_symlink() {
        return Head::Link;
    }
    if !meta.is_file() {
        return Head::NotAFile;
    }
    // A regular file: opening it does not block (a FIFO put there since
    // the check would, but that is a race with the user's own hands).
    let Ok(f) = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    else {
        return Head::Missing;
    };
    let mut bytes = Vec::with_capacity(HEADER_BYTES);
    if f.take(HEADER_BYTES as u64).read_to_end(&mut bytes).is_err() {
        return Head::Missing;
    }
    match bytes.len() {
        0 => Head::Empty,
        _ if !bytes.starts_with(MAGIC) => Head::Other,
        n if n < HEADER_BYTES => Head::Database(0),
        _ => {
            let mut id = [0u8; 4];
            id.copy_from_slice(&bytes[APPLICATION_ID_AT..APPLICATION_ID_AT + 4]);
            Head::Database(u32::from_be_bytes(id))
        }
    }
}

/// Opens the store's file for reading and writing, as a process that
/// records into it: a symbolic link at its name is not followed (ELOOP),
/// and a missing file is created (mode 0644 less the umask, as SQLite
/// makes one) only where nothing is (O_EXCL), so that a link planted
/// there since [`head`] looked is not followed either. Proves, before
/// SQLite opens it (which would fall back to reading alone without a
/// word), that this process may write the file: its mode, an immutable
/// flag and a read-only mount all say no here. Returns the file and
/// whether this call created it.
pub(crate) fn open_writable(path: &Path) -> io::Result<(File, bool)> {
    let open = |create: bool| {
        File::options()
            .read(true)
            .write(true)
            .create_new(create)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    };
    match open(false) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => match open(true) {
            // Another process made it meanwhile (two creating one store).
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open(false).map(|f| (f, false)),
            r => r.map(|f| (f, true)),
        },
        r => r.map(|f| (f, false)),
    }
}

/// How the store file open as `f` has other names than the path it was
/// opened by, none when it has one. SQLite cannot tell them apart: it
/// keeps a write-ahead log and its shared memory beside each name, so
/// two processes recording through two names each miss the other's log
/// and corrupt the store, and a series claimed through one name would
/// not be seen through the other by a directory beside it. Hard links
/// count; so does a bind mount of the file itself (the root of a mount).
/// A bind mount of its directory, or a symbolic link among the
/// directories above it, keeps one directory and so one log.
pub(crate) fn other_names(f: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    match f.metadata().map(|m| m.nlink()) {
        Ok(links) if links > 1 => Some(format!("{links} hard links")),
        _ if is_mount_root(f) => Some("a bind mount of the file".into()),
        _ => None,
    }
}

/// Whether `f` was opened at the root of a mount (statx's
/// STATX_ATTR_MOUNT_ROOT; false where the kernel does not say).
fn is_mount_root(f: &File) -> bool {
    // SAFETY: statx is plain data, for which all zeroes is valid.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for as long as `f` lives, the empty
    // path is NUL-terminated and static, and `stx` is a live statx the
    // kernel writes.
    let r = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            0,
            &mut stx,
        )
    };
    let bit = libc::STATX_ATTR_MOUNT_ROOT as u64;
    r == 0 && stx.stx_attributes_mask & bit != 0 && stx.stx_attributes & bit != 0
}

/// `PATH-wal`: the write-ahead log SQLite keeps beside a WAL database.
pub(crate) fn wal_of(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    p.into()
}

/// SQLite's lock bytes (its unix VFS, in every database file): a
/// connection takes a read lock on PENDING to start reading, then holds
/// a read lock in the SHARED range for as long as it is open in WAL mode.
const PENDING_BYTE: i64 = 0x4000_0000;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;

/// How a reading command may read a store without creating its `-wal`
/// and `-shm` files.
pub(crate) enum Quiet {
    /// No connection has it open and none can open it while the lock is
    /// held (its PENDING byte, write-locked: a writer that comes waits,
    /// within its busy timeout): read it `immutable`, holding this.
    Held(File),
    /// It cannot be written by this process (a read-only file system,
    /// another user's file), so no lock can be taken: read it
    /// `immutable` as it is.
    Unwritable,
    /// A connection has it open or is opening it: read it the ordinary
    /// way, through the files that connection keeps.
    InUse,
}

/// Takes the lock that keeps writers off `path` while it is read
/// `immutable` ([`Quiet`]). The lock is an open file description lock
/// (F_OFD_SETLK): SQLite's own locks are POSIX record locks, which it
/// conflicts with, and unlike those it is not dropped when SQLite closes
/// another descriptor of the file in this process. Another reader
/// holding it is waited for (for at most `wait`: reading commands are
/// short), so that two reading at once both create nothing; a
/// connection holding SHARED is not (it keeps the store's files).
pub(crate) fn quiet(path: &Path, wait: Duration) -> Quiet {
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    else {
        return Quiet::Unwritable;
    };
    let until = Instant::now() + wait;
    // A connection open before the lock holds a SHARED lock.
    let unshared = |f: &File| ofd_lock(f, libc::F_OFD_GETLK, SHARED_FIRST, SHARED_SIZE);
    while unshared(&f) {
        if ofd_lock(&f, libc::F_OFD_SETLK, PENDING_BYTE, 1) {
            return match unshared(&f) {
                true => Quiet::Held(f),
                false => Quiet::InUse,
            };
        }
        if Instant::now() >= until {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Quiet::InUse
}

/// Where the bytes whose locks claim a key ([`claim`]) begin: far past
/// SQLite's own lock bytes (its PENDING byte and SHARED range, at 1 GiB),
/// which they must never meet. Locks may lie past a file's end.
const CLAIMS_FROM: i64 = 1 << 40;

/// How many bytes keys are spread over: two keys meet on one byte once
/// in 2^47.
const CLAIMS_SPAN: u64 = 1 << 47;

/// The byte of a store file whose lock claims `key`: its FNV-1a hash (the
/// same in every build, unlike std's hasher), folded into the span.
fn claim_byte(key: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key.as_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    CLAIMS_FROM + (h % CLAIMS_SPAN) as i64
}

/// Claims `key` on the store file open as `f` (read and write): the
/// write lock of its byte, an open file description lock, so the claim
/// is on the file itself, whatever path another process reached it by;
/// it is not dropped when SQLite closes another descriptor of the file,
/// and the kernel drops it when `f` is closed, the process's death
/// (kill -9) included. False when another open file holds it; Err when
/// the lock cannot be taken at all.
pub(crate) fn claim(f: &File, key: &str) -> io::Result<bool> {
    if ofd_lock(f, libc::F_OFD_SETLK, claim_byte(key), 1) {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// A write lock of `len` bytes at `start`: taken (`F_OFD_SETLK`), or
/// asked whether it could be (`F_OFD_GETLK`); true when it is (could be).
fn ofd_lock(f: &File, cmd: libc::c_int, start: i64, len: i64) -> bool {
    // SAFETY: flock is plain data; all zeros is a valid value (l_pid
    // must be 0 for OFD locks).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    // SAFETY: the descriptor is open for as long as `f` lives, and `fl`
    // is a live flock the kernel reads (and, for GETLK, writes).
    let r = unsafe { libc::fcntl(f.as_raw_fd(), cmd, &mut fl) };
    r == 0 && (cmd != libc::F_OFD_GETLK || fl.l_type == libc::F_UNLCK as libc::c_short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_read_without_sqlite() {
        let dir = std::env::temp_dir().join(format!("iolab-store-head-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let at = |name: &str, bytes: &[u8]| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            head(&p)
        };
        let mut db = MAGIC.to_vec();
        db.resize(HEADER_BYTES, 0);
        db[APPLICATION_ID_AT..APPLICATION_ID_AT + 4].copy_from_slice(&0x696f_6c62u32.to_be_bytes());
        assert_eq!(at("db", &db), Head::Database(0x696f_6c62));
        assert_eq!(at("short", &MAGIC[..]), Head::Database(0));
        assert_eq!(at("empty", b""), Head::Empty);
        assert_eq!(at("notes", b"x"), Head::Other);
        assert_eq!(head(&dir.join("none")), Head::Missing);
        assert_eq!(head(&dir), Head::NotAFile);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The lock a reader holds keeps the next reader (and so any
    /// connection, whose first read needs the same byte) off until it is
    /// dropped; a connection open in WAL mode makes the store in use.
    #[test]
    fn a_quiet_read_excludes_connections_and_needs_none_open() {
        let dir = std::env::temp_dir().join(format!("iolab-store-quiet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.db");
        let c = rusqlite::Connection::open(&p).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch("CREATE TABLE t (a); SELECT * FROM t;")
            .unwrap();
        let now = Duration::ZERO;
        let open = quiet(&p, now);
        drop(c);
        let first = quiet(&p, now);
        let second = quiet(&p, now);
        let held = matches!(first, Quiet::Held(_));
        drop(first);
        let again = quiet(&p, now);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(open, Quiet::InUse), "a connection was open");
        assert!(held, "nothing had it open");
        assert!(matches!(second, Quiet::InUse), "the first lock was held");
        assert!(
            matches!(again, Quiet::Held(_)),
            "the first lock was dropped"
        );
    }
}
