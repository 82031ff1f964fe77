//! A test file on the backend, the way the API and the backend's
//! capabilities ask:
//!
//! - a file (POSIX, DUMMY): one handle, transfers at their offsets;
//! - a mapping (MMAP): the POSIX file mapped with mmap(2), transfers
//!   copied in and out, msync(2) for fsync, as IOR's MMAP does (the
//!   mapping covers the file's own extent, not the whole test's);
//! - chunks, on a store that keeps whole objects (S3): each transfer is
//!   one object named `FILE-OFFSET-LENGTH`, as IOR's S3 backend
//!   (aiori-S3-libs3) names them, so that many tasks write one shared
//!   file at interleaved offsets; a reader finds the chunk length from
//!   the object at offset 0 (one LIST), the size of the file is the sum
//!   of its chunks, and removing it removes every chunk.

use crate::config::Api;
use iolab_backend::{c_path, Backend, Capabilities, Handle, OpenOptions};
use std::ffi::{CStr, OsStr};
use std::io::{self, ErrorKind};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A transfer that failed after `moved` of its bytes had gone (a
/// short write before ENOSPC, a read that met the end of the file):
/// those bytes were moved, and are counted.
#[derive(Debug)]
pub struct Failed {
    /// Bytes of the transfer the backend wrote or read before the error.
    pub moved: usize,
    /// What went wrong.
    pub error: io::Error,
}

impl From<io::Error> for Failed {
    fn from(error: io::Error) -> Failed {
        Failed { moved: 0, error }
    }
}

/// How test files map onto the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One backend file per test file.
    Whole,
    /// One object per transfer (`FILE-OFFSET-LENGTH`).
    Chunks,
}

impl Layout {
    /// The layout a backend with `caps` needs, or why it cannot hold
    /// IOR's files.
    pub fn of(caps: &Capabilities) -> Result<Layout, crate::IorError> {
        if caps.shared_writes || caps.discards {
            Ok(Layout::Whole)
        } else if caps.whole_object_writes {
            Ok(Layout::Chunks)
        } else {
            Err(crate::IorError::Layout)
        }
    }
}

/// How to reach test files: the backend, the layout, the API.
#[derive(Clone, Copy)]
pub struct Files<'a> {
    /// The backend.
    pub be: &'a dyn Backend,
    /// How files map onto it.
    pub layout: Layout,
    /// MMAP maps files; the others call the backend.
    pub api: Api,
    /// O_DIRECT (`--posix.odirect`, `-O useO_DIRECT=1`).
    pub direct: bool,
    /// `-E`: an existing file may be written over.
    pub use_existing: bool,
}

/// An open test file.
pub enum Open {
    /// A backend handle.
    Plain(Handle),
    /// A mapping over a POSIX file.
    Mapped(Mapped),
    /// One object per transfer.
    Chunks(Chunks),
}

/// A file mapped into memory.
pub struct Mapped {
    handle: Handle,
    ptr: *mut u8,
    len: usize,
}

/// A file kept as one object per transfer.
pub struct Chunks {
    base: Vec<u8>,
    /// Bytes per chunk (the writer's transfer size).
    len: u64,
    write: bool,
    exclusive: bool,
    name: Vec<u8>,
}

fn cstr(b: &[u8]) -> io::Result<&CStr> {
    CStr::from_bytes_with_nul(b)
        .map_err(|_| io::Error::new(ErrorKind::InvalidInput, "a NUL byte in a file name"))
}

impl Chunks {
    /// The object holding the chunk at `offset`, NUL-terminated in a
    /// reused buffer.
    fn chunk(&mut self, offset: u64) -> io::Result<&CStr> {
        use std::io::Write;
        self.name.clear();
        self.name.extend_from_slice(&self.base);
        write!(self.name, "-{offset}-{}\0", self.len)?;
        cstr(&self.name)
    }
}

/// A chunk's offset and length from its name, when `name` is one of
/// `file`'s (`FILE-OFFSET-LENGTH`, digits only).
pub fn chunk_of(file: &[u8], name: &[u8]) -> Option<(u64, u64)> {
    let rest = name.strip_prefix(file)?.strip_prefix(b"-")?;
    let text = std::str::from_utf8(rest).ok()?;
    let (off, len) = text.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(off) && digits(len)).then(|| Some((off.parse().ok()?, len.parse().ok()?)))?
}

/// (parent directory, file name) of `path`.
fn split(path: &Path) -> (PathBuf, Vec<u8>) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map_or(Vec::new(), |n| n.as_bytes().to_vec());
    (parent, name)
}

impl Files<'_> {
    /// Opens `path` to write it; `create`: make it (exclusively, unless
    /// `-E`), else open a file another task made. `extent` is the bytes a
    /// mapping must cover.
    pub fn open_write(
        &self,
        path: &Path,
        create: bool,
        extent: u64,
        transfer: u64,
    ) -> io::Result<Open> {
        if self.layout == Layout::Chunks {
            return Ok(Open::Chunks(Chunks {
                base: path.as_os_str().as_bytes().to_vec(),
                len: transfer,
                write: true,
                exclusive: !self.use_existing,
                name: Vec::new(),
            }));
        }
        let opts = OpenOptions {
            write: true,
            read: self.api == Api::Mmap,
            create,
            // IOR opens O_CREAT|O_RDWR: `-E` writes over the file's first
            // bytes and keeps the rest, so a test never destroys data past
            // its extent.
            exclusive: create && !self.use_existing,
            direct: self.direct,
            // The preflight refused a link here; one planted since is not followed.
            nofollow: true,
            ..OpenOptions::default()
        };
        let h = self.be.open(&c_path(path)?, opts)?;
        match self.api {
            Api::Mmap => Mapped::new(self.be, h, extent, true).map(Open::Mapped),
            _ => Ok(Open::Plain(h)),
        }
    }

    /// Opens `path` to read it.
    pub fn open_read(&self, path: &Path) -> io::Result<Open> {
        if self.layout == Layout::Chunks {
            return self.open_chunks(path);
        }
        let opts = OpenOptions {
            read: true,
            direct: self.direct,
            nofollow: true,
            ..OpenOptions::default()
        };
        let h = self.be.open(&c_path(path)?, opts)?;
        match self.api {
            Api::Mmap => {
                let size = self.be.fstat(&h)?.size;
                Mapped::new(self.be, h, size, false).map(Open::Mapped)
            }
            _ => Ok(Open::Plain(h)),
        }
    }

    fn open_chunks(&self, path: &Path) -> io::Result<Open> {
        let (dir, name) = split(path);
        let mut first = name.clone();
        first.extend_from_slice(b"-0-");
        let mut len = None;
        self.be
            .list_stat_each(&c_path(&dir)?, &first, &mut |e, _| {
                len = chunk_of(&name, &e.name).map(|(_, l)| l).filter(|&l| l > 0);
                len.is_none()
            })?;
        let len = len.ok_or_else(|| {
            io::Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: no object {}-0-LENGTH holds its first chunk",
                    path.display(),
                    path.display()
                ),
            )
        })?;
        Ok(Open::Chunks(Chunks {
            base: path.as_os_str().as_bytes().to_vec(),
            len,
            write: false,
            exclusive: false,
            name: Vec::new(),
        }))
    }

    /// Writes all of `buf` at `offset`; `once`: a short write is an
    /// error (IOR's -x) instead of being continued.
    #[inline]
    pub fn write_at(
        &self,
        f: &mut Open,
        buf: &[u8],
        offset: u64,
        once: bool,
    ) -> Result<(), Failed> {
        match f {
            Open::Plain(h) => write_all(self.be, h, buf, offset, once),
            Open::Mapped(m) => Ok(m.write_at(buf, offset)?),
            Open::Chunks(c) => {
                let opts = OpenOptions {
                    whole_len: Some(buf.len() as u64),
                    exclusive: c.exclusive,
                    nofollow: true,
                    ..OpenOptions::create_new()
                };
                let h = self.be.open(c.chunk(offset)?, opts)?;
                let r = write_all(self.be, &h, buf, 0, once);
                let closed = self.be.close(h);
                r?;
                Ok(closed?)
            }
        }
    }

    /// Reads all of `buf` from `offset`; the end of the file before it
    /// is full is an error naming the offset.
    #[inline]
    pub fn read_at(
        &self,
        f: &mut Open,
        buf: &mut [u8],
        offset: u64,
        once: bool,
    ) -> Result<(), Failed> {
        match f {
            Open::Plain(h) => read_all(self.be, h, buf, offset, once),
            Open::Mapped(m) => Ok(m.read_at(buf, offset)?),
            Open::Chunks(c) => {
                let mut got = 0;
                while got < buf.len() {
                    let at = offset + got as u64;
                    let start = at - at % c.len;
                    let end = ((start + c.len - at) as usize).min(buf.len() - got);
                    let opts = OpenOptions {
                        nofollow: true,
                        ..OpenOptions::read()
                    };
                    let h = self
                        .be
                        .open(c.chunk(start)?, opts)
                        .map_err(|error| Failed { moved: got, error })?;
                    let r = read_all(self.be, &h, &mut buf[got..got + end], at - start, once);
                    let closed = self.be.close(h);
                    r.map_err(|f| Failed {
                        moved: got + f.moved,
                        error: f.error,
                    })?;
                    closed.map_err(|error| Failed {
                        moved: got + end,
                        error,
                    })?;
                    got += end;
                }
                Ok(())
            }
        }
    }

    /// Flushes a file's data to storage (`-e`, `-Y`).
    pub fn fsync(&self, f: &Open) -> io::Result<()> {
        match f {
            Open::Plain(h) => self.be.fsync(h),
            Open::Mapped(m) => m.sync(),
            // Each chunk is stored once its PUT is answered.
            Open::Chunks(_) => Ok(()),
        }
    }

    /// Closes a file.
    pub fn close(&self, f: Open) -> io::Result<()> {
        match f {
            Open::Plain(h) => self.be.close(h),
            Open::Mapped(m) => m.close(self.be),
            Open::Chunks(c) => {
                let _ = (c.write, c.exclusive);
                Ok(())
            }
        }
    }

    /// The bytes `path` holds (for chunks: the sum of theirs).
    pub fn size(&self, path: &Path) -> io::Result<u64> {
        match self.layout {
            Layout::Whole => self.be.stat(&c_path(path)?).map(|s| s.size),
            Layout::Chunks => {
                let mut total = 0;
                self.each_chunk(path, &mut |_, size| {
                    total += size;
                    true
                })?;
                Ok(total)
            }
        }
    }

    /// Whether `path` exists (for chunks: any of them).
    pub fn exists(&self, path: &Path) -> io::Result<bool> {
        match self.layout {
            Layout::Whole => self.be.exists(&c_path(path)?),
            Layout::Chunks => {
                let mut any = false;
                self.each_chunk(path, &mut |_, _| {
                    any = true;
                    false
                })?;
                Ok(any)
            }
        }
    }

    /// Removes `path` (for chunks: every chunk, a page of names at a
    /// time, so that memory stays bounded).
    pub fn remove(&self, path: &Path) -> io::Result<()> {
        if self.layout == Layout::Whole {
            return self.be.unlink(&c_path(path)?);
        }
        let (dir, _) = split(path);
        for _ in 0..100_000_000u64 {
            let mut page = Vec::new();
            self.each_chunk(path, &mut |name, _| {
                page.push(dir.join(OsStr::from_bytes(name)));
                page.len() < 1000
            })?;
            if page.is_empty() {
                return Ok(());
            }
            for p in page {
                self.be.unlink(&c_path(&p)?)?;
            }
        }
        Err(io::Error::other(format!(
            "{}: its chunks did not run out",
            path.display()
        )))
    }

    /// Calls `each(name, size)` for every chunk of `path`, until it
    /// returns false.
    fn each_chunk(&self, path: &Path, each: &mut dyn FnMut(&[u8], u64) -> bool) -> io::Result<()> {
        let (dir, name) = split(path);
        let mut prefix = name.clone();
        prefix.push(b'-');
        self.be.list_stat_each(
            &c_path(&dir)?,
            &prefix,
            &mut |e, st| match chunk_of(&name, &e.name) {
                Some((_, len)) if !e.is_dir => each(&e.name, st.map_or(len, |s| s.size)),
                _ => true,
            },
        )
    }
}

/// Writes all of `buf` at `off`, continuing a short write (unless
/// `once`); a failure says how many bytes had gone.
fn write_all(be: &dyn Backend, h: &Handle, buf: &[u8], off: u64, once: bool) -> Result<(), Failed> {
    let mut done = 0;
    while done < buf.len() {
        let at = off + done as u64;
        let n = be
            .write_at(h, &buf[done..], at)
            .map_err(|error| Failed { moved: done, error })?;
        done += n;
        if n == 0 || (once && done < buf.len()) {
            let what = match n {
                0 => "nothing written",
                _ => "-x: no retry",
            };
            let error = io::Error::new(
                ErrorKind::WriteZero,
                format!(
                    "short write at offset {at}: {n} of {} bytes ({what})",
                    buf.len() - (done - n)
                ),
            );
            return Err(Failed { moved: done, error });
        }
    }
    Ok(())
}

/// Reads all of `buf` from `off`, continuing a short read (unless
/// `once`); a failure says how many bytes had come.
fn read_all(
    be: &dyn Backend,
    h: &Handle,
    buf: &mut [u8],
    off: u64,
    once: bool,
) -> Result<(), Failed> {
    let mut got = 0;
    while got < buf.len() {
        let at = off + got as u64;
        let n = be
            .read_at(h, &mut buf[got..], at)
            .map_err(|error| Failed { moved: got, error })?;
        got += n;
        if n == 0 || (once && got < buf.len()) {
            let error = io::Error::new(
                ErrorKind::UnexpectedEof,
                format!(
                    "short read at offset {at}: the file ends before the transfer's {} bytes",
                    buf.len()
                ),
            );
            return Err(Failed { moved: got, error });
        }
    }
    Ok(())
}

impl Mapped {
    /// Maps `len` bytes of the file behind `h` (a POSIX descriptor);
    /// `write`: read-write, grown to `len` first if shorter.
    fn new(be: &dyn Backend, h: Handle, len: u64, write: bool) -> io::Result<Mapped> {
        let fd = be.raw_fd(&h).ok_or_else(|| {
            io::Error::new(
                ErrorKind::Unsupported,
                "MMAP needs a file descriptor (POSIX)",
            )
        })?;
        let len = usize::try_from(len).map_err(|_| io::Error::from(ErrorKind::FileTooLarge))?;
        // Grown, never shrunk: IOR's MMAP truncates to the expected size,
        // which under `-E` would cut off the user's data past the extent.
        if write && be.fstat(&h)?.size < len as u64 {
            // SAFETY: ftruncate on a descriptor this handle owns.
            if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let mut ptr = std::ptr::null_mut();
        if len > 0 {
            let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
            // SAFETY: a fresh shared mapping of `len` bytes of an open
            // descriptor; the kernel picks the address.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            ptr = p.cast();
        }
        Ok(Mapped {
            handle: h,
            ptr,
            len,
        })
    }

    fn range(&self, offset: u64, n: usize) -> io::Result<usize> {
        match usize::try_from(offset)
            .ok()
            .filter(|&o| o.checked_add(n).is_some_and(|e| e <= self.len))
        {
            Some(o) => Ok(o),
            None => Err(io::Error::new(
                ErrorKind::UnexpectedEof,
                format!(
                    "offset {offset} + {n} bytes is past the mapped {} bytes",
                    self.len
                ),
            )),
        }
    }

    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        let o = self.range(offset, buf.len())?;
        // SAFETY: `o + buf.len() <= self.len` (checked above) lies in the
        // mapping, which is writable and lives as long as `self`.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), self.ptr.add(o), buf.len()) };
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let o = self.range(offset, buf.len())?;
        // SAFETY: as in write_at; the mapping is readable.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(o), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: the whole mapping, which is live.
        match unsafe { libc::msync(self.ptr.cast(), self.len, libc::MS_SYNC) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    fn close(self, be: &dyn Backend) -> io::Result<()> {
        let Mapped { handle, ptr, len } = self;
        if len > 0 {
            // SAFETY: unmaps the mapping made in `new`, used no more.
            unsafe { libc::munmap(ptr.cast(), len) };
        }
        be.close(handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_names_are_file_offset_length() {
        assert_eq!(chunk_of(b"file", b"file-47008-47008"), Some((47008, 47008)));
        assert_eq!(chunk_of(b"file", b"file-0-10"), Some((0, 10)));
        for other in [
            &b"file"[..],
            b"file-1",
            b"file-a-1",
            b"file2-0-1",
            b"file-0-1-2",
            b"file--1",
        ] {
            assert_eq!(
                chunk_of(b"file", other),
                None,
                "{:?}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn a_mapped_file_reads_back_what_was_copied_in() {
        let dir = iolab_core::tmp::PrivateDir::new("iolab-ior-mmap").unwrap();
        let be = iolab_backend::by_name("posix").unwrap();
        let files = Files {
            be: &*be,
            layout: Layout::Whole,
            api: Api::Mmap,
            direct: false,
            use_existing: false,
        };
        let p = dir.path().join("f");
        let mut f = files.open_write(&p, true, 8192, 4096).unwrap();
        files.write_at(&mut f, &[7u8; 4096], 4096, false).unwrap();
        assert!(files.write_at(&mut f, &[7u8; 4096], 8192, false).is_err());
        files.fsync(&f).unwrap();
        files.close(f).unwrap();
        assert_eq!(files.size(&p).unwrap(), 8192);
        let mut f = files.open_read(&p).unwrap();
        let mut buf = [0u8; 4096];
        files.read_at(&mut f, &mut buf, 4096, false).unwrap();
        assert_eq!(buf, [7u8; 4096]);
        files.close(f).unwrap();
    }

    #[test]
    fn a_link_planted_after_the_preflight_is_not_followed() {
        let dir = iolab_core::tmp::PrivateDir::new("iolab-ior-link").unwrap();
        let be = iolab_backend::by_name("posix").unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        let p = dir.path().join("test");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        for use_existing in [false, true] {
            let files = Files {
                be: &*be,
                layout: Layout::Whole,
                api: Api::Posix,
                direct: false,
                use_existing,
            };
            for create in [true, false] {
                let e = files.open_write(&p, create, 0, 7).err();
                assert!(e.is_some(), "-E {use_existing}, create {create}");
            }
            assert!(files.open_read(&p).is_err());
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    }
}
