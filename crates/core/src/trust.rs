//! Files iolab takes on trust from a file system other users share: a
//! secret (a key, an S3 secret key) that nobody else may have read, and
//! a file or directory a run resumes from or writes in (a partial copy,
//! its restart record, a directory of outputs) that nobody else may have
//! planted or changed. One rule each, for every tool, so that one tool
//! does not refuse what another takes silently.
//!
//! ```
//! use std::os::unix::fs::PermissionsExt;
//! let dir = std::env::temp_dir().join(format!("iolab-trust-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let key = dir.join("key");
//! std::fs::write(&key, "0123456789abcdef0123\n").unwrap();
//! std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
//! let e = iolab_core::trust::read_secret(&key).unwrap_err().to_string();
//! assert!(e.contains("other users may read it (mode 644)"), "{e}");
//! std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
//! assert_eq!(iolab_core::trust::read_secret(&key).unwrap().len(), 21);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a file or directory is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Distrust {
    /// A symbolic link stands at the name (it is never followed).
    #[error("a symbolic link, never followed: remove it")]
    Link,
    /// Something other than a regular file stands at the name.
    #[error("not a regular file")]
    NotFile,
    /// Something other than a directory stands at the name.
    #[error("not a directory")]
    NotDir,
    /// Another user owns it: they may have planted it.
    #[error("owned by uid {owner}, not by this user (uid {me}): another user may have put it there; remove it")]
    Owner {
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Group or others may write it: they may have changed it.
    #[error("other users may change it (mode {mode:o}): remove it, or chmod go-w it")]
    Writable {
        /// Its permission bits.
        mode: u32,
    },
}

/// A secret file that could not be taken. The message leaves the
/// file's name to the caller (which says the option and path first),
/// but for the command that mends it.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// It could not be opened or read.
    #[error("{source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a regular file (a FIFO, a device, a directory): a secret is
    /// read from a file, and a FIFO's open would wait for a writer.
    #[error("{}: not a regular file; a secret is read from a file of mode 600", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// A symbolic link stands at the name: a secret's link is never
    /// followed, so that nobody who can plant one at the name (in a
    /// shared directory, or where the key file was before) chooses which
    /// file is taken as the key, and so that the file whose mode is
    /// judged is the file named.
    #[error("a symbolic link, never followed for a secret: name the file itself (mode 600)")]
    Link {
        /// The file.
        path: PathBuf,
    },
    /// Group or others may read, write or run it.
    #[error("other users may {} it (mode {mode:o}): chmod 600 {}", others_may(*mode), path.display())]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// What group or others may do to a file of `mode`, as the refusal of a
/// secret says it (`read`, `write`, `read and write`...): a key that
/// others may write is refused as surely as one they may read, and the
/// message says which bit to take away.
fn others_may(mode: u32) -> String {
    let can: Vec<&str> = [(0o044, "read"), (0o022, "write"), (0o011, "run")]
        .into_iter()
        .filter(|(bits, _)| mode & bits != 0)
        .map(|(_, verb)| verb)
        .collect();
    match can.as_slice() {
        [] => "use".into(),
        [one] => (*one).into(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// This process's effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A file a run resumes from: a regular file (`m` from
/// `symlink_metadata`, or from the descriptor opened with O_NOFOLLOW)
/// that this user owns and that no group or other user may write.
pub fn own_file(m: &Metadata) -> Result<(), Distrust> {
    if m.file_type().is_symlink() {
        return Err(Distrust::Link);
    }
    if !m.is_file() {
        return Err(Distrust::NotFile);
    }
    owned_unshared(m)
}

/// A directory a run writes its files in: a real directory (`m` from
/// `symlink_metadata`: a link at the name is refused, never followed)
/// that this user owns and that no group or other user may write, so
/// nobody else chose what is in it or where it leads.
pub fn own_dir(m: &Metadata) -> Result<(), Distrust> {
    if m.file_type().is_symlink() {
        return Err(Distrust::Link);
    }
    if !m.is_dir() {
        return Err(Distrust::NotDir);
    }
    owned_unshared(m)
}

/// Owned by this user, writable by nobody else.
fn owned_unshared(m: &Metadata) -> Result<(), Distrust> {
    let me = euid();
    if m.uid() != me {
        return Err(Distrust::Owner { owner: m.uid(), me });
    }
    match m.mode() & 0o022 {
        0 => Ok(()),
        _ => Err(Distrust::Writable {
            mode: m.mode() & 0o7777,
        }),
    }
}

/// True for a secret's mode: no group or other user may use it (as ssh
/// asks of a private key; the owner alone, mode 600 or 400).
pub fn private(m: &Metadata) -> bool {
    m.mode() & 0o077 == 0
}

/// Reads the secret file at `path`: a regular file, never a symbolic
/// link (opened with O_NOFOLLOW), refused when group or others may read
/// it. The mode judged is that of the file opened.
pub fn read_secret(path: &Path) -> Result<Vec<u8>, SecretError> {
    use crate::input::{InputError, Links};
    let read = |source| SecretError::Read {
        path: path.to_path_buf(),
        source,
    };
    // A FIFO at the name is refused at once instead of waited on, deaf
    // to Ctrl-C, for a writer: the one reader of named input files.
    let mut f = crate::input::open_with(path, Links::Refuse).map_err(|e| match e {
        InputError::Read(source) => read(source),
        InputError::NotAFile { kind } if kind == crate::input::LINK => SecretError::Link {
            path: path.to_path_buf(),
        },
        _ => SecretError::NotAFile {
            path: path.to_path_buf(),
        },
    })?;
    let m = f.metadata().map_err(read)?;
    if !private(&m) {
        return Err(SecretError::Exposed {
            path: path.to_path_buf(),
            mode: m.mode() & 0o777,
        });
    }
    let mut b = Vec::new();
    f.read_to_end(&mut b).map_err(read)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("iolab-trust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_resumed_file_must_be_ours_unwritable_by_others_and_no_link() {
        let d = scratch("own");
        let f = d.join("f");
        std::fs::write(&f, "x").unwrap();
        chmod(&f, 0o644);
        assert_eq!(own_file(&std::fs::symlink_metadata(&f).unwrap()), Ok(()));
        chmod(&f, 0o664);
        let m = std::fs::symlink_metadata(&f).unwrap();
        assert_eq!(own_file(&m), Err(Distrust::Writable { mode: 0o664 }));
        let l = d.join("l");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        let m = std::fs::symlink_metadata(&l).unwrap();
        assert_eq!(own_file(&m), Err(Distrust::Link));
        assert_eq!(own_dir(&m), Err(Distrust::Link));
        let m = std::fs::symlink_metadata(&d).unwrap();
        assert_eq!(own_file(&m), Err(Distrust::NotFile));
        chmod(&d, 0o1777);
        let m = std::fs::symlink_metadata(&d).unwrap();
        assert_eq!(own_dir(&m), Err(Distrust::Writable { mode: 0o1777 }));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_of_another_user_is_not_ours() {
        if euid() != 0 {
            return;
        }
        let d = scratch("owner");
        let f = d.join("f");
        std::fs::write(&f, "x").unwrap();
        std::os::unix::fs::chown(&f, Some(65534), None).unwrap();
        let m = std::fs::symlink_metadata(&f).unwrap();
        let want = Distrust::Owner {
            owner: 65534,
            me: 0,
        };
        assert_eq!(own_file(&m), Err(want));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_secret_others_may_read_is_refused() {
        let d = scratch("secret");
        let f = d.join("k");
        std::fs::write(&f, "s").unwrap();
        for mode in [0o640, 0o604, 0o644] {
            chmod(&f, mode);
            let e = read_secret(&f).unwrap_err();
            assert!(matches!(e, SecretError::Exposed { .. }), "{e}");
        }
        // The refusal names what others may do: 602 is writable, not
        // readable, by them.
        for (mode, says) in [
            (0o602, "may write it (mode 602)"),
            (0o644, "may read it (mode 644)"),
            (0o666, "may read and write it (mode 666)"),
            (0o711, "may run it (mode 711)"),
        ] {
            chmod(&f, mode);
            let e = read_secret(&f).unwrap_err().to_string();
            assert!(e.contains(says), "{mode:o}: {e}");
        }
        chmod(&f, 0o400);
        assert_eq!(read_secret(&f).unwrap(), b"s");
        // A FIFO (no writer) is refused at once, not waited on; so is a
        // directory.
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_secret(&fifo).unwrap_err();
        assert!(matches!(e, SecretError::NotAFile { .. }), "{e}");
        let e = read_secret(&d).unwrap_err();
        assert!(matches!(e, SecretError::NotAFile { .. }), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A link at a secret's name is refused, even to a private file of
    /// this user: whoever planted it would choose the key.
    #[test]
    fn a_secret_behind_a_link_is_refused() {
        let d = scratch("secret-link");
        let f = d.join("k");
        std::fs::write(&f, "s").unwrap();
        chmod(&f, 0o600);
        let link = d.join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = read_secret(&link).unwrap_err();
        assert!(matches!(e, SecretError::Link { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("a symbolic link, never followed for a secret"),
            "{e}"
        );
        assert_eq!(read_secret(&f).unwrap(), b"s");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
