//! Files a user names as input: plans, ini files, setup files, scripts,
//! configurations, host and group lists, seek lists, data patterns. One
//! reader for all of them, so that none can hold a run before it starts:
//! a FIFO at the name is never waited on (its open would block, deaf to
//! Ctrl-C, until a writer came), a device (`/dev/zero`) or a directory is
//! refused, and no more than a stated number of bytes is ever read. The
//! error leaves the option and the path to the caller, which says them
//! first.
//!
//! ```
//! use iolab_core::input::{read_text, InputError, TEXT_MAX_BYTES};
//! let dir = std::env::temp_dir().join(format!("iolab-input-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let plan = dir.join("plan.toml");
//! std::fs::write(&plan, "label = \"x\"\n").unwrap();
//! assert_eq!(read_text(&plan, TEXT_MAX_BYTES).unwrap(), "label = \"x\"\n");
//! let e = read_text(std::path::Path::new("/dev/zero"), TEXT_MAX_BYTES).unwrap_err();
//! assert!(matches!(e, InputError::NotAFile { kind: "a character device" }), "{e}");
//! assert!(matches!(read_text(&plan, 4), Err(InputError::TooLarge { max_bytes: 4 })));
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// The most read from a text input (a plan, an ini or setup file, a
/// script, a configuration, a host list): thousands of entries fit in
/// far less, and a larger file is not one of these.
pub const TEXT_MAX_BYTES: u64 = 4 << 20;

/// The most read from a record iolab wrote and reads back whole (a
/// survey's summary, a live stream): a long run's, held in memory.
pub const RECORD_MAX_BYTES: u64 = 1 << 30;

/// Why a named input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It could not be opened or read (missing, not permitted, ...).
    #[error("{0}")]
    Read(#[from] io::Error),
    /// Something other than a regular file stands at the name.
    #[error("{kind}, not a regular file: give a regular file")]
    NotAFile {
        /// What stands there: "a FIFO", "a character device", ...
        kind: &'static str,
    },
    /// It holds more than the most read for this use.
    #[error("larger than {}, the most read from this file", shown(*max_bytes))]
    TooLarge {
        /// The most read.
        max_bytes: u64,
    },
    /// A text input whose bytes are not UTF-8.
    #[error("not UTF-8 text")]
    NotText,
}

/// A size said in the unit it is a whole number of.
fn shown(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// What a file type is, said for a refusal.
fn kind(t: FileType) -> Option<&'static str> {
    match () {
        _ if t.is_file() => None,
        _ if t.is_dir() => Some("a directory"),
        _ if t.is_fifo() => Some("a FIFO"),
        _ if t.is_char_device() => Some("a character device"),
        _ if t.is_block_device() => Some("a block device"),
        _ if t.is_socket() => Some("a socket"),
        _ if t.is_symlink() => Some(LINK),
        _ => Some("not a file"),
    }
}

/// Whether a symbolic link at the last component of a name is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Followed, as for any file a user names (a plan, a host list).
    Follow,
    /// Refused, never followed (O_NOFOLLOW): for a secret, which a link
    /// planted at its name must not be able to swap for another file.
    Refuse,
}

/// The kind of [`InputError::NotAFile`] for a link refused by
/// [`Links::Refuse`].
pub const LINK: &str = "a symbolic link";

/// Opens the regular file at `path` (a link at the name is followed, as
/// for any file a user names) without ever waiting on it, and refuses
/// anything else. No size is checked: for a file read as a stream that
/// may be of any size (a results document); [`open_bounded`] otherwise.
pub fn open(path: &Path) -> Result<File, InputError> {
    open_with(path, Links::Follow)
}

/// [`open`], but a symbolic link at the name is followed or refused as
/// `links` says. A refused link is [`InputError::NotAFile`] of kind
/// "a symbolic link", whether it stood there before the open or was put
/// there meanwhile.
pub fn open_with(path: &Path, links: Links) -> Result<File, InputError> {
    // Judged before the open, so that no device is opened at all (an
    // open can act: a tape rewinds) ...
    let before = match links {
        Links::Follow => std::fs::metadata(path)?,
        Links::Refuse => std::fs::symlink_metadata(path)?,
    };
    if let Some(kind) = kind(before.file_type()) {
        return Err(InputError::NotAFile { kind });
    }
    // ... and again on what was opened, since the name may have changed
    // meanwhile: O_NONBLOCK, so that a FIFO put there opens at once, and
    // O_NOFOLLOW, so that a link put there fails the open (ELOOP).
    let nofollow = match links {
        Links::Follow => 0,
        Links::Refuse => libc::O_NOFOLLOW,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | nofollow)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if links == Links::Refuse => InputError::NotAFile { kind: LINK },
            _ => InputError::Read(e),
        })?;
    if let Some(kind) = kind(f.metadata()?.file_type()) {
        return Err(InputError::NotAFile { kind });
    }
    set_blocking(&f)?;
    Ok(f)
}

/// Clears O_NONBLOCK of a file opened with it (so that the open did
/// not wait on a FIFO or device): Linux ignores it on regular files,
/// but a network or FUSE file system is told it and may answer a read
/// with EAGAIN, and a FIFO's writer should wait for its reader.
pub fn set_blocking(f: &File) -> io::Result<()> {
    // SAFETY: F_GETFL on a descriptor `f` owns and keeps open.
    let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL with flags read just above, on the same descriptor.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A regular file read as a stream, of at most `max_bytes`: a read past
/// them (a file that grew after it was opened) is an error of kind
/// [`io::ErrorKind::FileTooLarge`] whose inner error is
/// [`InputError::TooLarge`], never a stream cut short in silence.
#[derive(Debug)]
pub struct Bounded {
    file: io::Take<File>,
    max_bytes: u64,
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        // The take allows one byte more than the bound: reading it is
        // how a file past the bound shows.
        match self.file.limit() {
            0 if n > 0 => Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                InputError::TooLarge {
                    max_bytes: self.max_bytes,
                },
            )),
            _ => Ok(n),
        }
    }
}

/// [`open`], refused when the file holds more than `max_bytes`.
pub fn open_bounded(path: &Path, max_bytes: u64) -> Result<Bounded, InputError> {
    let f = open(path)?;
    if f.metadata()?.len() > max_bytes {
        return Err(InputError::TooLarge { max_bytes });
    }
    Ok(Bounded {
        file: f.take(max_bytes.saturating_add(1)),
        max_bytes,
    })
}

/// The error a [`Bounded`] read gave, as the [`InputError`] it stands for.
pub fn from_io(e: io::Error) -> InputError {
    match e.kind() {
        io::ErrorKind::FileTooLarge => match e.into_inner().map(|i| i.downcast::<InputError>()) {
            Some(Ok(inner)) => *inner,
            Some(Err(other)) => {
                InputError::Read(io::Error::new(io::ErrorKind::FileTooLarge, other))
            }
            None => InputError::Read(io::ErrorKind::FileTooLarge.into()),
        },
        _ => InputError::Read(e),
    }
}

/// The bytes of the regular file at `path`, at most `max_bytes` of them.
pub fn read_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, InputError> {
    let mut r = open_bounded(path, max_bytes)?;
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).map_err(from_io)?;
    Ok(bytes)
}

/// The text of the regular file at `path`, at most `max_bytes` of it
/// ([`TEXT_MAX_BYTES`] for a plan, a script or a configuration).
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, InputError> {
    String::from_utf8(read_bytes(path, max_bytes)?).map_err(|_| InputError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("iolab-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_without_waiting() {
        let d = scratch("kinds");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        // No writer: a blocking open would never return.
        let e = read_text(&fifo, TEXT_MAX_BYTES).unwrap_err();
        assert!(matches!(e, InputError::NotAFile { kind: "a FIFO" }), "{e}");
        assert!(matches!(open(&fifo), Err(InputError::NotAFile { .. })));
        let e = read_bytes(Path::new("/dev/zero"), u64::MAX).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a character device, not a regular file: give a regular file"
        );
        let e = read_text(&d, TEXT_MAX_BYTES).unwrap_err();
        assert!(
            matches!(
                e,
                InputError::NotAFile {
                    kind: "a directory"
                }
            ),
            "{e}"
        );
        // A link to a regular file is followed; a link to a FIFO is not.
        let link = d.join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(matches!(
            open(&link),
            Err(InputError::NotAFile { kind: "a FIFO" })
        ));
        let e = read_text(&d.join("missing"), TEXT_MAX_BYTES).unwrap_err();
        assert!(
            matches!(&e, InputError::Read(io) if io.kind() == io::ErrorKind::NotFound),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_is_refused_when_links_are_not_followed() {
        let d = scratch("nofollow");
        let f = d.join("f");
        std::fs::write(&f, "x").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(open_with(&link, Links::Follow).is_ok());
        let e = open_with(&link, Links::Refuse).unwrap_err();
        assert!(
            matches!(
                e,
                InputError::NotAFile {
                    kind: "a symbolic link"
                }
            ),
            "{e}"
        );
        // A link to nothing is refused as a link, not as a missing file.
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
        let e = open_with(&dangling, Links::Refuse).unwrap_err();
        assert!(
            matches!(
                e,
                InputError::NotAFile {
                    kind: "a symbolic link"
                }
            ),
            "{e}"
        );
        assert!(open_with(&f, Links::Refuse).is_ok());
        let e = open_with(&d.join("missing"), Links::Refuse).unwrap_err();
        assert!(
            matches!(&e, InputError::Read(io) if io.kind() == io::ErrorKind::NotFound),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn no_more_than_the_bound_is_read() {
        let d = scratch("bound");
        let f = d.join("f");
        std::fs::write(&f, "12345").unwrap();
        assert_eq!(read_text(&f, 5).unwrap(), "12345");
        let e = read_text(&f, 4).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { max_bytes: 4 }), "{e}");
        assert_eq!(
            InputError::TooLarge {
                max_bytes: TEXT_MAX_BYTES
            }
            .to_string(),
            "larger than 4 MiB, the most read from this file"
        );
        // A file that grows past the bound once opened is an error too,
        // not a stream cut short.
        let mut r = open_bounded(&f, 5).unwrap();
        std::fs::write(&f, "123456789").unwrap();
        let mut got = Vec::new();
        let e = from_io(r.read_to_end(&mut got).unwrap_err());
        assert!(matches!(e, InputError::TooLarge { max_bytes: 5 }), "{e}");
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert!(matches!(read_text(&f, 5), Err(InputError::NotText)));
        assert_eq!(read_bytes(&f, 5).unwrap(), [0xff, 0xfe]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
