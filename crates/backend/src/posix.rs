//! POSIX backend: direct system calls through libc, no allocation per call.

use crate::{Backend, Capabilities, Dir, DirEntry, FsStat, Handle, OpenOptions, Stat};
use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
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
        dev: st.st_dev,
        ino: st.st_ino,
        mtime_ns: unix_ns(st.st_mtime, st.st_mtime_nsec),
        ctime_ns: unix_ns(st.st_ctime, st.st_ctime_nsec),
        allocated_bytes: (st.st_blocks.max(0) as u64).saturating_mul(512),
    }
}

/// A stat time (seconds, nanoseconds) as Unix nanoseconds; 0 before 1970.
fn unix_ns(s: libc::time_t, ns: libc::c_long) -> u64 {
    (s.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ns.max(0) as u64)
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
    if o.nofollow {
        f |= libc::O_NOFOLLOW;
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
        each_entry(&DirStream::open(path)?, each)
    }

    fn open_dir(&self, path: &CStr) -> io::Result<Dir> {
        // SAFETY: `path` is NUL-terminated; the result is checked.
        let fd = unsafe { libc::open(path.as_ptr(), DIR_FLAGS) };
        owned(fd).map(Dir::from_fd)
    }

    fn open_dir_at(&self, dir: &Dir, rel: &CStr) -> io::Result<Dir> {
        let at = dir_fd(dir)?;
        if rel.is_empty() {
            return walk_beneath(at, b"").map(Dir::from_fd);
        }
        match beneath(at, rel) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                // No openat2 (a kernel before 5.6, or a seccomp filter
                // that refuses it): one openat per name, each O_NOFOLLOW.
                walk_beneath(at, rel.to_bytes())
            }
            r => r,
        }
        .map(Dir::from_fd)
    }

    fn mkdir_at(&self, dir: &Dir, name: &CStr, mode: u32) -> io::Result<()> {
        // SAFETY: a directory descriptor this backend opened and a valid
        // C string.
        check(unsafe { libc::mkdirat(dir_fd(dir)?, name.as_ptr(), mode as libc::mode_t) })
    }

    fn stat_at(&self, dir: &Dir, name: &CStr) -> io::Result<Stat> {
        // SAFETY: stat is plain data, for which all zeroes is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a directory descriptor this backend opened, a valid C
        // string and a writable stat.
        check(unsafe { libc::fstatat(dir_fd(dir)?, name.as_ptr(), &mut st, 0) })?;
        Ok(to_stat(&st))
    }

    fn open_at(&self, dir: &Dir, name: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        // SAFETY: as stat_at; the mode argument is read only with O_CREAT.
        let fd = unsafe {
            libc::openat(
                dir_fd(dir)?,
                name.as_ptr(),
                flags(opts),
                0o644 as libc::c_uint,
            )
        };
        check(fd).map(|_| Handle::new(fd as i64))
    }

    fn unlink_at(&self, dir: &Dir, name: &CStr) -> io::Result<()> {
        // SAFETY: a directory descriptor this backend opened and a valid
        // C string; unlinkat never follows the name it removes.
        check(unsafe { libc::unlinkat(dir_fd(dir)?, name.as_ptr(), 0) })
    }

    fn rmdir_at(&self, dir: &Dir, name: &CStr) -> io::Result<()> {
        // SAFETY: as above; with AT_REMOVEDIR a link is ENOTDIR.
        check(unsafe { libc::unlinkat(dir_fd(dir)?, name.as_ptr(), libc::AT_REMOVEDIR) })
    }

    fn list_at(&self, dir: &Dir, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        // A stream of its own on the same directory ("." from its
        // descriptor), so that the listing starts at the top each time.
        // SAFETY: a directory descriptor and a constant C string.
        let fd = unsafe { libc::openat(dir_fd(dir)?, c".".as_ptr(), DIR_FLAGS) };
        each_entry(&DirStream::from_fd(owned(fd)?)?, each)
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
            blocks_free: u64::from(st.f_bfree),
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

    fn set_len(&self, h: &Handle, len: u64) -> io::Result<()> {
        let len = i64::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: plain syscall on a descriptor this backend returned.
        check(unsafe { libc::ftruncate(h.raw() as i32, len) })
    }

    fn direct_io_alignment(&self, path: &CStr) -> io::Result<Option<crate::DirectIoAlignment>> {
        crate::dio::alignment(path, block_geometry)
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

    fn device_in_use_at(
        &self,
        path: &CStr,
        rdev: u64,
        writes: &crate::safety::Writes,
    ) -> Option<String> {
        crate::safety::block_device_in_use_at(&path.to_string_lossy(), rdev, writes)
    }

    fn file_in_use(&self, path: &CStr) -> Option<String> {
        crate::safety::file_in_use(&path.to_string_lossy())
    }

    fn claim_device(&self, path: &CStr) -> io::Result<crate::safety::DeviceClaim> {
        crate::safety::DeviceClaim::take(path)
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

/// How directories are opened: for reading (a listing), not a
/// controlling terminal, closed on exec.
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// Calls `each` for every entry of an open stream but `.` and `..`.
/// readdir(3) on one stream, one entry reused: no allocation per entry
/// (a find over millions of names calls this in its loop).
fn each_entry(dir: &DirStream, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
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

/// A descriptor from a call's result, owned; the error of a failed one.
fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    check(fd)?;
    // SAFETY: a descriptor the call just returned, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The descriptor of a directory this backend opened.
fn dir_fd(dir: &Dir) -> io::Result<libc::c_int> {
    dir.raw_fd().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a directory opened by another backend",
        )
    })
}

/// openat2(2) of directory `rel` below `at`, refusing every symbolic
/// link on the way (and `..` out of `at`): one call however deep.
fn beneath(at: libc::c_int, rel: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: open_how is plain integers, for which all zeroes is valid
    // (and what the kernel wants in fields this build does not know).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (DIR_FLAGS | libc::O_NOFOLLOW) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH;
    // SAFETY: a directory descriptor, a valid C string, and an open_how
    // whose size is passed with it; the result is checked.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            at,
            rel.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    owned(fd as libc::c_int)
}

/// The same without openat2: one openat per name, each with O_NOFOLLOW,
/// from `at` down. `..` is refused as openat2 refuses it.
fn walk_beneath(at: libc::c_int, rel: &[u8]) -> io::Result<OwnedFd> {
    let mut cur: Option<OwnedFd> = None;
    let mut name = Vec::with_capacity(256);
    for part in rel.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
        if part == b".." {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        name.clear();
        name.extend_from_slice(part);
        name.push(0);
        let base = cur.as_ref().map_or(at, std::os::fd::AsRawFd::as_raw_fd);
        // SAFETY: a directory descriptor and a NUL-terminated name (a
        // part of a C string holds no NUL).
        let fd = unsafe { libc::openat(base, name.as_ptr().cast(), DIR_FLAGS | libc::O_NOFOLLOW) };
        cur = Some(owned(fd)?);
    }
    match cur {
        Some(fd) => Ok(fd),
        // An empty `rel` is the directory itself.
        // SAFETY: a directory descriptor and a constant C string.
        None => owned(unsafe { libc::openat(at, c".".as_ptr(), DIR_FLAGS) }),
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

    /// A stream over an open directory descriptor, which it takes.
    fn from_fd(fd: OwnedFd) -> io::Result<DirStream> {
        use std::os::fd::IntoRawFd;
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` is an open directory descriptor that the stream
        // owns from here (closedir closes it).
        let d = unsafe { libc::fdopendir(raw) };
        match std::ptr::NonNull::new(d) {
            Some(d) => Ok(DirStream(d)),
            None => {
                let e = io::Error::last_os_error();
                // SAFETY: fdopendir failed, so the descriptor is still ours.
                unsafe { libc::close(raw) };
                Err(e)
            }
        }
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
    fn nofollow_refuses_a_link_at_the_last_name() {
        let b = Posix;
        let (target, link) = (tmp("nf-target"), tmp("nf-link"));
        std::fs::write(target.to_str().unwrap(), b"x").unwrap();
        std::os::unix::fs::symlink(target.to_str().unwrap(), link.to_str().unwrap()).unwrap();
        let opts = OpenOptions {
            nofollow: true,
            ..OpenOptions::write()
        };
        let e = b.open(&link, opts).err().map(|e| e.raw_os_error());
        let followed = b.open(&link, OpenOptions::read()).map(|h| b.close(h));
        std::fs::remove_file(link.to_str().unwrap()).unwrap();
        std::fs::remove_file(target.to_str().unwrap()).unwrap();
        assert_eq!(e, Some(Some(libc::ELOOP)));
        assert!(followed.is_ok(), "without nofollow, a link is followed");
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
        assert!(st.ctime_ns >= st.mtime_ns, "{st:?}");
        let fs = b.statfs(&d).unwrap();
        assert!(fs.blocks > 0 && fs.block_bytes > 0);
        assert!(b.can_write(&d).unwrap());
        assert!(!b.can_write(c"/proc/self").unwrap_or(false));
        b.unlink(&f).unwrap();
        b.rmdir(&sub).unwrap();
        b.rmdir(&d).unwrap();
    }

    /// Below an open directory nothing is followed, with openat2 and
    /// with the one-openat-per-name walk used without it.
    #[test]
    fn directories_below_are_opened_without_following_links() {
        let root = std::env::temp_dir().join(format!("iolab-posix-at-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("other/c")).unwrap();
        std::os::unix::fs::symlink(root.join("other"), root.join("a/link")).unwrap();
        let b = Posix;
        let top = b.open_dir(&crate::c_path(&root).unwrap()).unwrap();
        let at = top.raw_fd().unwrap();
        assert!(b.open_dir_at(&top, c"a/b").is_ok());
        assert!(walk_beneath(at, b"a//b/").is_ok());
        for rel in [c"a/link", c"a/link/c"] {
            let e = b.open_dir_at(&top, rel).unwrap_err();
            assert!(crate::not_a_directory(&e), "{rel:?}: {e}");
            let e = walk_beneath(at, rel.to_bytes()).unwrap_err();
            assert!(crate::not_a_directory(&e), "{rel:?}: {e}");
        }
        assert_eq!(
            walk_beneath(at, b"a/../other").unwrap_err().raw_os_error(),
            Some(libc::EXDEV)
        );
        // unlinkat removes the link, not what it leads to; rmdir_at
        // refuses a link.
        let a = b.open_dir_at(&top, c"a").unwrap();
        assert!(b.open_dir_at(&a, c"../other").is_err(), "no way out");
        assert_eq!(
            b.rmdir_at(&a, c"link").unwrap_err().raw_os_error(),
            Some(libc::ENOTDIR)
        );
        b.unlink_at(&a, c"link").unwrap();
        assert!(root.join("other/c").is_dir());
        let mut names = Vec::new();
        b.list_at(&a, &mut |e| {
            names.push((e.name.clone(), e.is_dir));
            true
        })
        .unwrap();
        assert_eq!(names, vec![(b"b".to_vec(), true)]);
        b.rmdir_at(&a, c"b").unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn unknown_backend_is_named() {
        let e = crate::by_name("s4").err().unwrap().to_string();
        assert!(e.contains("s4") && e.contains("posix"), "{e}");
    }
}
