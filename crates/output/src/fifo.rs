//! FIFOs named as outputs, held open from their check to their write.
//! A FIFO's check has to open it (only an open says whether a program
//! reads it); closing that descriptor would give the reader an end of
//! file before the run wrote a byte, and `cat`, `head` or `grep` would
//! leave, so the run's own open would find no reader. The descriptor of
//! the check is kept here and handed to the writer instead.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Mutex;

/// The FIFOs checked and not yet written: device, inode, descriptor.
static HELD: Mutex<Vec<(u64, u64, File)>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<(u64, u64, File)>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// The FIFO at `path` (a link to one followed), as device and inode; None
/// for anything else.
fn identity(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    m.file_type().is_fifo().then(|| (m.dev(), m.ino()))
}

/// Whether `path` is a FIFO.
pub(crate) fn is_fifo(path: &Path) -> bool {
    identity(path).is_some()
}

/// Opens the FIFO at `path` for writing without waiting for a reader
/// (none is ENXIO) and keeps the descriptor for [`take`]; one held
/// already is kept as it is.
pub(crate) fn hold(path: &Path) -> io::Result<()> {
    if identity(path).is_some_and(|(d, i)| held().iter().any(|h| (h.0, h.1) == (d, i))) {
        return Ok(());
    }
    // Without O_NONBLOCK the open waits, without end and deaf to Ctrl-C,
    // for a reader.
    let f = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    held().push((m.dev(), m.ino(), f));
    Ok(())
}

/// The descriptor [`hold`] kept for the FIFO at `path`, now blocking (a
/// full pipe makes the writer wait for its reader, as any FIFO writer
/// does), or None when none is held.
pub(crate) fn take(path: &Path) -> io::Result<Option<File>> {
    let Some((d, i)) = identity(path) else {
        return Ok(None);
    };
    let f = {
        let mut h = held();
        match h.iter().position(|x| (x.0, x.1) == (d, i)) {
            Some(at) => h.swap_remove(at).2,
            None => return Ok(None),
        }
    };
    let fd = f.as_raw_fd();
    // SAFETY: `fd` is the open descriptor `f` owns; F_GETFL and F_SETFL
    // only read and set its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(f))
}
