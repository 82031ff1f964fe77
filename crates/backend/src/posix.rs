//! POSIX backend: direct system calls through libc, no allocation per call.

use crate::{Backend, Capabilities, DirEntry, FsStat, Handle, OpenOptions, Stat};
use std::ffi::{CStr, OsStr};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The POSIX backend (local file systems, NFS, Lustre, GPFS clients...).
#[derive(Debug, Default, Clone, Copy)]
pub struct Posix;

#[inline]
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn to_stat(st: &libc::stat) -> Stat {
    let fmt = st.st_mode & libc::S_IFMT;
    Stat {
        size: st.st_size as u64,
        is_dir: fmt == libc::S_IFDIR,
        is_file: fmt == libc::S_IFREG,
        is_block_device: fmt == libc::S_IFBLK,
        rdev: st.st_rdev,
        ino: st.st_ino,
        mtime_ns: (st.st_mtime.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_mtime_nsec.max(0) as u64),
    }
}

fn flags(o: OpenOptions) -> libc::c_int {
    let mut f = match (o.read, o.write) {
        (true, true) => libc::O_RDWR,
        (false, true) => libc::O_WRONLY,
        _ => libc::O_RDONLY,
    };
    if o.create {
        f |= libc::O_CREAT;
    }
    if o.exclusive {
        f |= libc::O_EXCL;
    }
    if o.truncate {
        f |= libc::O_TRUNC;
    }
    if o.direct {
        f |= libc::O_DIRECT;
    }
    if o.sync {
        f |= libc::O_SYNC;
    }
    if o.nonblock {
        f |= libc::O_NONBLOCK;
    }
    f | libc::O_CLOEXEC
}

impl Backend for Posix {
    fn name(&self) -> &'static str {
        "posix"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            directories: true,
            direct_io: true,
            mknod: true,
            preallocate: true,
            rename: true,
            local: true,
            shared_writes: true,
            mtime: true,
            block_devices: true,
            xattrs: true,
            discards: false,
            min_part_bytes: 0,
            raw_fd: true,
            whole_object_writes: false,
            queued_metadata: true,
            thread_private_fds: true,
        }
    }

    fn mkdir(&self, path: &CStr, mode: u32) -> io::Result<()> {
        // SAFETY: `path` is a valid NUL-terminated string.
        check(unsafe { libc::mkdir(path.as_ptr(), mode as libc::mode_t) })
    }

    fn rmdir(&self, path: &CStr) -> io::Result<()> {
        // SAFETY: as above.
        check(unsafe { libc::rmdir(path.as_ptr()) })
    }

    fn open(&self, path: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        // SAFETY: as above; the mode argument is read only with O_CREAT.
        let fd = unsafe { libc::open(path.as_ptr(), flags(opts), 0o644 as libc::c_uint) };
        check(fd).map(|_| Handle::new(fd as i64))
    }

    fn close(&self, h: Handle) -> io::Result<()> {
        // SAFETY: closing a descriptor this backend returned.
        check(unsafe { libc::close(h.raw() as i32) })
    }

    fn write_at(&self, h: &Handle, buf: &[u8], offset: u64) -> io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe {
            libc::pwrite(
                h.raw() as i32,
                buf.as_ptr().cast(),
                buf.len(),
                offset as i64,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn read_at(&self, h: &Handle, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        // SAFETY: `buf` is valid and writable for `buf.len()` bytes.
        let n = unsafe {
            libc::pread(
                h.raw() as i32,
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as i64,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn fsync(&self, h: &Handle) -> io::Result<()> {
        // SAFETY: plain syscall on a descriptor.
        check(unsafe { libc::fsync(h.raw() as i32) })
    }

    fn fdatasync(&self, h: &Handle) -> io::Result<()> {
        // SAFETY: plain syscall on a descriptor.
        check(unsafe { libc::fdatasync(h.raw() as i32) })
    }

    fn stat(&self, path: &CStr) -> io::Result<Stat> {
        // SAFETY: stat is plain data, for which all zeroes is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is NUL-terminated and `st` a writable stat.
        check(unsafe { libc::stat(path.as_ptr(), &mut st) })?;
        Ok(to_stat(&st))
    }

    fn fstat(&self, h: &Handle) -> io::Result<Stat> {
        // SAFETY: stat is plain data, for which all zeroes is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat only writes `st`; a bad descriptor is EBADF.
        check(unsafe { libc::fstat(h.raw() as i32, &mut st) })?;
        let mut s = to_stat(&st);
        if s.is_block_device {
            s.size = block_device_size(h.raw() as i32)?;
        }
        Ok(s)
    }

    fn unlink(&self, path: &CStr) -> io::Result<()> {
        // SAFETY: valid C string.
        check(unsafe { libc::unlink(path.as_ptr()) })
    }

    fn rename(&self, from: &CStr, to: &CStr) -> io::Result<()> {
        // SAFETY: valid C strings.
        check(unsafe { libc::rename(from.as_ptr(), to.as_ptr()) })
    }

    fn mknod(&self, path: &CStr) -> io::Result<()> {
        // SAFETY: valid C string; a FIFO needs no device number.
        check(unsafe { libc::mknod(path.as_ptr(), libc::S_IFIFO | 0o644, 0) })
    }

    fn mknod_file(&self, path: &CStr) -> io::Result<()> {
        // Mode 0400 (S_IRUSR) as mdtest's make_node gives it: the file is
        // never written, only stat'ed, read and removed.
        // SAFETY: valid C string; a regular file needs no device number.
        check(unsafe { libc::mknod(path.as_ptr(), libc::S_IFREG | 0o400, 0) })
    }

    fn list(&self, path: &CStr) -> io::Result<Vec<DirEntry>> {
        let dir = std::path::Path::new(OsStr::from_bytes(path.to_bytes()));
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            out.push(DirEntry {
                is_dir: e.file_type()?.is_dir(),
                name: e.file_name().into_vec(),
            });
        }
        Ok(out)
    }

    fn list_each(&self, path: &CStr, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        // readdir(3) on one stream, one entry reused: no allocation per
        // entry (a find over millions of names calls this in its loop).
        let dir = DirStream::open(path)?;
        let mut entry = DirEntry {
            name: Vec::with_capacity(256),
            is_dir: false,
        };
        while let Some((name, d_type)) = dir.next()? {
            if name == b"." || name == b".." {
                continue;
            }
            entry.is_dir = match d_type {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => dir.is_dir_at(name)?,
                _ => false,
            };
            entry.name.clear();
            entry.name.extend_from_slice(name);
            if !each(&entry) {
                break;
            }
        }
        Ok(())
    }

    // statvfs fields are u64 on x86_64 but narrower elsewhere: keep u64::from.
    #[allow(clippy::useless_conversion)]
    fn statfs(&self, path: &CStr) -> io::Result<FsStat> {
        // SAFETY: zeroed statvfs is valid; statvfs(3) fills it.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid C string and a valid out-pointer.
        check(unsafe { libc::statvfs(path.as_ptr(), &mut st) })?;
        Ok(FsStat {
            block_bytes: u64::from(st.f_frsize),
            blocks: u64::from(st.f_blocks),
            blocks_available: u64::from(st.f_bavail),
            inodes: u64::from(st.f_files),
            inodes_free: u64::from(st.f_ffree),
            read_only: st.f_flag & libc::ST_RDONLY != 0,
        })
    }

    fn can_write(&self, path: &CStr) -> io::Result<bool> {
        // SAFETY: valid C string. access(2) answers for the real user,
        // which is who runs the benchmark; EROFS says read-only mount.
        let rc = unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) };
        match rc {
            0 => Ok(true),
            _ => {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EACCES | libc::EROFS | libc::EPERM) => Ok(false),
                    _ => Err(e),
                }
            }
        }
    }

    fn preallocate(&self, h: &Handle, offset: u64, len: u64) -> io::Result<()> {
        // SAFETY: plain syscall; posix_fallocate returns the error number.
        let rc = unsafe { libc::posix_fallocate(h.raw() as i32, offset as i64, len as i64) };
        if rc != 0 {
            Err(io::Error::from_raw_os_error(rc))
        } else {
            Ok(())
        }
    }

    fn sync_all(&self) {
        // SAFETY: sync(2) has no preconditions.
        unsafe { libc::sync() };
    }

    fn device_geometry(&self, path: &CStr) -> io::Result<crate::DeviceGeometry> {
        block_geometry(path)
    }

    fn device_in_use(&self, path: &CStr, rdev: u64) -> Option<String> {
        crate::safety::block_device_in_use(&path.to_string_lossy(), rdev)
    }

    fn setxattr(&self, path: &CStr, name: &CStr, value: &[u8]) -> io::Result<()> {
        // SAFETY: both strings are NUL-terminated; the value pointer and
        // length describe a live byte slice.
        let r = unsafe {
            libc::setxattr(
                path.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        check(r)
    }

    fn raw_fd(&self, h: &Handle) -> Option<i32> {
        Some(h.raw() as i32)
    }

    fn metadata_queue(
        &self,
        depth: u32,
        data_bytes: usize,
    ) -> io::Result<Box<dyn crate::MetaQueue>> {
        let q = crate::uring_meta::UringMeta::new(depth, data_bytes)?;
        Ok(Box::new(q))
    }
}

/// Size of a block device in bytes (BLKGETSIZE64).
fn block_device_size(fd: i32) -> io::Result<u64> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 into `size`.
    check(unsafe { libc::ioctl(fd, BLKGETSIZE64, &mut size) })?;
    Ok(size)
}

/// Size in bytes and logical block size of a block device (BLKGETSIZE64,
/// BLKSSZGET).
fn block_geometry(path: &CStr) -> io::Result<crate::DeviceGeometry> {
    const BLKSSZGET: libc::c_ulong = 0x1268;
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: a valid NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut bytes: u64 = 0;
    let mut block: libc::c_int = 0;
    // SAFETY: both ioctls write one integer of the type given through a
    // valid pointer to a local; the descriptor is open.
    let (r1, r2) = unsafe {
        (
            libc::ioctl(fd, BLKGETSIZE64 as _, &mut bytes as *mut u64),
            libc::ioctl(fd, BLKSSZGET as _, &mut block as *mut libc::c_int),
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    if r1 < 0 || r2 < 0 {
        return Err(err);
    }
    Ok(crate::DeviceGeometry {
        bytes,
        block_bytes: block.max(512) as u64,
    })
}

/// An open directory stream (closed on drop).
struct DirStream(std::ptr::NonNull<libc::DIR>);

impl DirStream {
    fn open(path: &CStr) -> io::Result<DirStream> {
        // SAFETY: `path` is NUL-terminated.
        let d = unsafe { libc::opendir(path.as_ptr()) };
        std::ptr::NonNull::new(d)
            .map(DirStream)
            .ok_or_else(io::Error::last_os_error)
    }

    /// The next entry's name and d_type; None at the end.
    fn next(&self) -> io::Result<Option<(&[u8], u8)>> {
        // readdir returns NULL both at the end and on error; errno tells.
        // SAFETY: errno is this thread's; the stream is open.
        let p = unsafe {
            *libc::__errno_location() = 0;
            libc::readdir64(self.0.as_ptr())
        };
        if p.is_null() {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(0) | None => Ok(None),
                Some(_) => Err(e),
            };
        }
        // SAFETY: a non-NULL dirent stays valid until the next readdir on
        // this stream, which needs &self again after the borrow ends.
        let d = unsafe { &*p };
        // SAFETY: d_name is NUL-terminated within the dirent.
        let name = unsafe { CStr::from_ptr(d.d_name.as_ptr()) };
        Ok(Some((name.to_bytes(), d.d_type)))
    }

    /// Whether `name` in this directory is a directory (no symlink
    /// followed), for file systems whose readdir leaves d_type unknown.
    fn is_dir_at(&self, name: &[u8]) -> io::Result<bool> {
        let name = std::ffi::CString::new(name)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
        // SAFETY: stat is plain data, for which all zeroes is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is the open stream's, `name` a valid C
        // string and `st` a writable stat.
        check(unsafe {
            libc::fstatat(
                libc::dirfd(self.0.as_ptr()),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        Ok(st.st_mode & libc::S_IFMT == libc::S_IFDIR)
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: opened by opendir, closed once here.
        unsafe { libc::closedir(self.0.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    fn tmp(name: &str) -> CString {
        let p = std::env::temp_dir().join(format!("iolab-posix-{}-{name}", std::process::id()));
        CString::new(p.to_str().unwrap()).unwrap()
    }

    #[test]
    fn file_round_trip() {
        let b = Posix;
        let p = tmp("f");
        let h = b.open(&p, OpenOptions::create_new()).unwrap();
        assert_eq!(b.write_at(&h, b"hello", 3).unwrap(), 5);
        b.fsync(&h).unwrap();
        b.close(h).unwrap();
        assert!(
            b.open(&p, OpenOptions::create_new()).is_err(),
            "O_EXCL must refuse"
        );
        let st = b.stat(&p).unwrap();
        assert!(st.is_file && st.size == 8);
        let h = b.open(&p, OpenOptions::read()).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(b.read_at(&h, &mut buf, 0).unwrap(), 8);
        assert_eq!(&buf[3..], b"hello");
        b.close(h).unwrap();
        let q = tmp("g");
        b.rename(&p, &q).unwrap();
        assert_eq!(b.stat(&p).unwrap_err().raw_os_error(), Some(libc::ENOENT));
        b.unlink(&q).unwrap();
    }

    #[test]
    fn dirs_and_fifos() {
        let b = Posix;
        let d = tmp("d");
        b.mkdir(&d, 0o755).unwrap();
        assert!(b.stat(&d).unwrap().is_dir);
        assert_eq!(
            b.mkdir(&d, 0o755).unwrap_err().raw_os_error(),
            Some(libc::EEXIST)
        );
        b.rmdir(&d).unwrap();
        let f = tmp("fifo");
        b.mknod(&f).unwrap();
        assert!(!b.stat(&f).unwrap().is_file);
        b.unlink(&f).unwrap();
        b.mknod_file(&f).unwrap();
        assert!(b.stat(&f).unwrap().is_file, "mknod(S_IFREG) makes a file");
        assert!(b.exists(&f).unwrap());
        b.unlink(&f).unwrap();
        assert!(!b.exists(&f).unwrap());
    }

    #[test]
    fn list_statfs_and_can_write() {
        let b = Posix;
        let d = tmp("ls");
        b.mkdir(&d, 0o755).unwrap();
        let sub = CString::new(format!("{}/sub", d.to_str().unwrap())).unwrap();
        let f = CString::new(format!("{}/f", d.to_str().unwrap())).unwrap();
        b.mkdir(&sub, 0o755).unwrap();
        b.mknod_file(&f).unwrap();
        let mut l = b.list(&d).unwrap();
        l.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].name.as_slice(), l[0].is_dir), (&b"f"[..], false));
        assert_eq!((l[1].name.as_slice(), l[1].is_dir), (&b"sub"[..], true));
        let mut seen = Vec::new();
        b.list_each(&d, &mut |e| {
            seen.push(e.clone());
            true
        })
        .unwrap();
        seen.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(seen, l, "list_each sees what list sees");
        let mut calls = 0;
        b.list_each(&d, &mut |_| {
            calls += 1;
            false
        })
        .unwrap();
        assert_eq!(calls, 1, "false stops the listing");
        // A symbolic link to a directory is not listed as one; a missing
        // directory is an error, not an empty listing.
        std::os::unix::fs::symlink("sub", format!("{}/link", d.to_str().unwrap())).unwrap();
        let mut link_is_dir = None;
        b.list_each(&d, &mut |e| {
            if e.name == b"link" {
                link_is_dir = Some(e.is_dir);
            }
            true
        })
        .unwrap();
        assert_eq!(link_is_dir, Some(false));
        std::fs::remove_file(format!("{}/link", d.to_str().unwrap())).unwrap();
        let missing = CString::new(format!("{}/missing", d.to_str().unwrap())).unwrap();
        let e = b.list_each(&missing, &mut |_| true).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let st = b.stat(&f).unwrap();
        assert!(st.mtime_ns > 1_600_000_000 * 1_000_000_000, "{st:?}");
        let fs = b.statfs(&d).unwrap();
        assert!(fs.blocks > 0 && fs.block_bytes > 0);
        assert!(b.can_write(&d).unwrap());
        assert!(!b.can_write(c"/proc/self").unwrap_or(false));
        b.unlink(&f).unwrap();
        b.rmdir(&sub).unwrap();
        b.rmdir(&d).unwrap();
    }

    #[test]
    fn unknown_backend_is_named() {
        let e = crate::by_name("s4").err().unwrap().to_string();
        assert!(e.contains("s4") && e.contains("posix"), "{e}");
    }
}
