//! A directory opened for calls relative to it ([`crate::Backend::open_dir`]
//! and the `*_at` calls), as `rm -r` works: a directory is reached from
//! its parent's descriptor, never by a path a planted symbolic link could
//! redirect.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// An open directory. Closed when dropped.
#[derive(Debug)]
pub struct Dir(Inner);

#[derive(Debug)]
enum Inner {
    /// A directory descriptor (POSIX).
    Fd(OwnedFd),
    /// A directory named by its path, for a backend without descriptors
    /// (an object store, whose "directories" are key prefixes and hold
    /// no links).
    Path(CString),
    /// A backend that keeps nothing (`null`).
    Token,
}

impl Dir {
    /// A directory held by its descriptor.
    pub fn from_fd(fd: OwnedFd) -> Dir {
        Dir(Inner::Fd(fd))
    }

    /// A directory named by its path.
    pub fn from_path(path: &CStr) -> Dir {
        Dir(Inner::Path(path.to_owned()))
    }

    /// A directory of a backend that stores nothing.
    pub fn token() -> Dir {
        Dir(Inner::Token)
    }

    /// The descriptor, for a directory held by one.
    pub fn raw_fd(&self) -> Option<RawFd> {
        match &self.0 {
            Inner::Fd(fd) => Some(fd.as_raw_fd()),
            _ => None,
        }
    }

    /// The path, for a directory named by one.
    pub fn path(&self) -> Option<&CStr> {
        match &self.0 {
            Inner::Path(p) => Some(p),
            _ => None,
        }
    }

    /// `<path>/<name>` for a directory named by its path; an error for
    /// one held otherwise (a directory another backend opened).
    pub fn join(&self, name: &CStr) -> io::Result<CString> {
        let base = self.path().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a directory opened by another backend",
            )
        })?;
        let mut p = Vec::with_capacity(base.to_bytes().len() + name.to_bytes().len() + 1);
        p.extend_from_slice(base.to_bytes());
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(name.to_bytes());
        // Both parts are C strings already: no NUL inside.
        CString::new(p).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    }
}

/// Whether an error of opening a directory without following links says
/// that a link (or another non-directory) stands where a directory was
/// expected: ELOOP from O_NOFOLLOW or RESOLVE_NO_SYMLINKS, ENOTDIR.
pub fn not_a_directory(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_dir_joins_names() {
        let d = Dir::from_path(c"/a/b");
        assert_eq!(d.join(c"c").unwrap().as_c_str(), c"/a/b/c");
        assert_eq!(Dir::from_path(c"/").join(c"x").unwrap().as_c_str(), c"/x");
        assert!(Dir::token().join(c"x").is_err());
        assert!(d.raw_fd().is_none() && Dir::token().path().is_none());
    }
}
