//! A file system with a round-trip cost: a FUSE passthrough to a backing
//! directory that sleeps a set delay in every request before doing it,
//! with up to [`THREADS`] requests served at once (as a network file
//! system's server would), so that a client keeping many operations in
//! flight sees them overlap and one keeping one sees every delay in turn.
//!
//! It counts the requests it served and the most it held at once
//! ([`DelayFs::peak_in_flight`]): a test asserts on those counts, never
//! on a time.
//!
//! Mounted by [`DelayFs::mount`] (in the test process, on `fuser`'s
//! threads) or by the `iolab-delayfs` binary (the bench scripts);
//! unmounted on drop. A test process killed outright leaves its mount
//! dead ("transport endpoint is not connected"): the ledger in
//! `/run/iolab-testkit/delayfs` names it, and the next mount detaches it.
//!
//! Names are cached by the kernel (entries live a minute; every change
//! goes through this mount, so the cache stays true) and attributes are
//! not: each stat asks the server, as on a network file system.
//!
//! ```no_run
//! use std::time::Duration;
//! let fs = iolab_testkit::delayfs::DelayFs::mount("/tmp/back".as_ref(), "/tmp/mnt".as_ref(), Duration::from_millis(1)).unwrap();
//! std::fs::write("/tmp/mnt/f", b"x").unwrap();
//! assert!(fs.requests() > 0);
//! ```

use fuser::{
    BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation,
    INodeNo, LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    SessionACL, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Requests served at once (FUSE reader threads, each with its own
/// cloned /dev/fuse descriptor).
pub const THREADS: usize = 64;
/// How long the kernel keeps a name.
const ENTRY_TTL: Duration = Duration::from_secs(60);
/// Attributes are asked for at every stat.
const ATTR_TTL: Duration = Duration::ZERO;
/// Where mounts are recorded until they are unmounted.
const LEDGER: &str = "/run/iolab-testkit/delayfs";

/// What every request counts.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    in_flight: AtomicU64,
    peak: AtomicU64,
}

/// The passthrough: inode numbers to backing paths, and the delay.
struct Passthrough {
    delay: Duration,
    inodes: Mutex<HashMap<u64, PathBuf>>,
    counters: Arc<Counters>,
}

/// One request being served: counted in flight until dropped.
struct Served<'a>(&'a Counters);

impl Drop for Served<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn time(s: i64, ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32)
}

/// The FUSE inode number of a backing inode (1 is the root's).
fn fuse_ino(st_ino: u64) -> u64 {
    st_ino + 1
}

fn attr_of(st: &libc::stat, ino: u64) -> FileAttr {
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    };
    FileAttr {
        ino: INodeNo(ino),
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: time(st.st_atime, st.st_atime_nsec),
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        crtime: UNIX_EPOCH,
        kind,
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

fn lstat(p: &Path) -> io::Result<libc::stat> {
    let c = cpath(p)?;
    // SAFETY: stat is plain data, for which all zeroes is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a writable stat.
    check(unsafe { libc::lstat(c.as_ptr(), &mut st) })?;
    Ok(st)
}

impl Passthrough {
    /// Waits out the round trip; the request stays counted in flight
    /// until the returned guard drops.
    fn serve(&self) -> Served<'_> {
        let c = &*self.counters;
        c.requests.fetch_add(1, Ordering::SeqCst);
        let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        c.peak.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        Served(c)
    }

    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        let map = self.inodes.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&ino.0).cloned().ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    /// The entry of `p`, remembered under its inode number.
    fn entry(&self, p: PathBuf) -> io::Result<FileAttr> {
        let st = lstat(&p)?;
        let ino = fuse_ino(st.st_ino);
        self.inodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ino, p);
        Ok(attr_of(&st, ino))
    }

    fn attr(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let p = self.path(ino)?;
        let st = lstat(&p).map_err(|e| errno(&e))?;
        Ok(attr_of(&st, ino.0))
    }
}

impl fuser::Filesystem for Passthrough {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let _s = self.serve();
        match self.child(parent, name).map(|p| self.entry(p)) {
            Ok(Ok(a)) => reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &a, Generation(0)),
            Ok(Err(e)) => reply.error(errno(&e)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let _s = self.serve();
        match self.attr(ino) {
            Ok(a) => reply.attr(&ATTR_TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let _s = self.serve();
        let r = self.path(ino).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            if let Some(m) = mode {
                // SAFETY: a NUL-terminated path.
                check(unsafe { libc::chmod(c.as_ptr(), m & 0o7777) }).map_err(|e| errno(&e))?;
            }
            if let Some(n) = size {
                // SAFETY: a NUL-terminated path.
                check(unsafe { libc::truncate(c.as_ptr(), n as i64) }).map_err(|e| errno(&e))?;
            }
            self.attr(ino)
        });
        match r {
            Ok(a) => reply.attr(&ATTR_TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let _s = self.serve();
        let r = self.child(parent, name).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            // SAFETY: a NUL-terminated path.
            check(unsafe { libc::mknod(c.as_ptr(), mode & !umask, u64::from(rdev)) })
                .map_err(|e| errno(&e))?;
            self.entry(p).map_err(|e| errno(&e))
        });
        match r {
            Ok(a) => reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let _s = self.serve();
        let r = self.child(parent, name).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            // SAFETY: a NUL-terminated path.
            check(unsafe { libc::mkdir(c.as_ptr(), mode & !umask) }).map_err(|e| errno(&e))?;
            self.entry(p).map_err(|e| errno(&e))
        });
        match r {
            Ok(a) => reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _s = self.serve();
        let r = self.child(parent, name).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            // SAFETY: a NUL-terminated path.
            check(unsafe { libc::unlink(c.as_ptr()) }).map_err(|e| errno(&e))
        });
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _s = self.serve();
        let r = self.child(parent, name).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            // SAFETY: a NUL-terminated path.
            check(unsafe { libc::rmdir(c.as_ptr()) }).map_err(|e| errno(&e))
        });
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let _s = self.serve();
        let r = self.child(parent, name).and_then(|from| {
            let to = self.child(newparent, newname)?;
            std::fs::rename(&from, &to).map_err(|e| errno(&e))?;
            let mut map = self.inodes.lock().unwrap_or_else(|p| p.into_inner());
            map.values_mut()
                .filter(|p| **p == from)
                .for_each(|p| *p = to.clone());
            Ok(())
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let _s = self.serve();
        let r = self.path(ino).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            let f = flags.0 & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY);
            // SAFETY: a NUL-terminated path; no O_CREAT, so no mode.
            check(unsafe { libc::open(c.as_ptr(), f | libc::O_CLOEXEC) }).map_err(|e| errno(&e))
        });
        match r {
            Ok(fd) => reply.opened(FileHandle(fd as u64), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let _s = self.serve();
        let r = self.child(parent, name).and_then(|p| {
            let c = cpath(&p).map_err(|e| errno(&e))?;
            let f = flags | libc::O_CREAT | libc::O_CLOEXEC;
            // SAFETY: a NUL-terminated path and a mode for O_CREAT.
            let fd = check(unsafe { libc::open(c.as_ptr(), f, mode & !umask) })
                .map_err(|e| errno(&e))?;
            match self.entry(p) {
                Ok(a) => Ok((fd, a)),
                Err(e) => {
                    // SAFETY: closing the descriptor opened above, once.
                    unsafe { libc::close(fd) };
                    Err(errno(&e))
                }
            }
        });
        match r {
            // One time-to-live for name and attributes here: none, so
            // that the next stat asks (a LOOKUP, then GETATTRs).
            Ok((fd, a)) => reply.created(
                &ATTR_TTL,
                &a,
                Generation(0),
                FileHandle(fd as u64),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let _s = self.serve();
        let mut buf = vec![0u8; size as usize];
        // SAFETY: `buf` is writable for its length; fh is a descriptor
        // this server opened.
        let n = unsafe {
            libc::pread(
                fh.0 as i32,
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as i64,
            )
        };
        match n {
            n if n >= 0 => reply.data(&buf[..n as usize]),
            _ => reply.error(errno(&io::Error::last_os_error())),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let _s = self.serve();
        // SAFETY: `data` is readable for its length; fh is ours.
        let n =
            unsafe { libc::pwrite(fh.0 as i32, data.as_ptr().cast(), data.len(), offset as i64) };
        match n {
            n if n >= 0 => reply.written(n as u32),
            _ => reply.error(errno(&io::Error::last_os_error())),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let _s = self.serve();
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let _s = self.serve();
        // SAFETY: fh is a descriptor this server opened, closed once here.
        unsafe { libc::close(fh.0 as i32) };
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let _s = self.serve();
        // SAFETY: fh is ours.
        match check(unsafe { libc::fsync(fh.0 as i32) }) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let _s = self.serve();
        let dir = match self.path(ino) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let mut names = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .flatten()
                .map(|e| {
                    (
                        e.file_name(),
                        e.file_type().map(|t| t.is_dir()).unwrap_or(false),
                    )
                })
                .collect::<Vec<_>>(),
            Err(e) => return reply.error(errno(&e)),
        };
        names.sort();
        for (i, (name, is_dir)) in names.iter().enumerate().skip(offset as usize) {
            let kind = if *is_dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            let ino = lstat(&dir.join(name))
                .map(|s| fuse_ino(s.st_ino))
                .unwrap_or(u64::MAX);
            if reply.add(INodeNo(ino), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let _s = self.serve();
        let Ok(p) = self.path(ino).or_else(|_| self.path(INodeNo(1))) else {
            return reply.error(Errno::ENOENT);
        };
        let Ok(c) = cpath(&p) else {
            return reply.error(Errno::EINVAL);
        };
        // SAFETY: zeroed statvfs is valid; statvfs fills it.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path and a writable statvfs.
        match check(unsafe { libc::statvfs(c.as_ptr(), &mut s) }) {
            Ok(_) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(errno(&e)),
        }
    }
}

/// A mounted delayed passthrough; unmounted on drop.
pub struct DelayFs {
    mountpoint: PathBuf,
    session: Option<BackgroundSession>,
    counters: Arc<Counters>,
    ledger: PathBuf,
}

impl DelayFs {
    /// Mounts `backing` at `mountpoint` (both existing directories) with
    /// `delay` per request. Detaches first any mount a killed process
    /// left behind.
    pub fn mount(backing: &Path, mountpoint: &Path, delay: Duration) -> io::Result<DelayFs> {
        reap_stale();
        let backing = backing.canonicalize()?;
        let counters = Arc::new(Counters::default());
        let fs = Passthrough {
            delay,
            inodes: Mutex::new(HashMap::from([(1, backing)])),
            counters: counters.clone(),
        };
        let mut cfg = Config::default();
        cfg.mount_options = vec![
            MountOption::FSName("iolab-delayfs".into()),
            MountOption::Subtype("iolab-delayfs".into()),
        ];
        cfg.acl = SessionACL::Owner;
        cfg.n_threads = Some(THREADS);
        cfg.clone_fd = true;
        let ledger = record(mountpoint)?;
        let session = match fuser::spawn_mount(fs, mountpoint, &cfg) {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_file(&ledger);
                return Err(e);
            }
        };
        Ok(DelayFs {
            mountpoint: mountpoint.to_path_buf(),
            session: Some(session),
            counters,
            ledger,
        })
    }

    /// Requests served so far.
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::SeqCst)
    }

    /// The most requests it held at once since the last reset.
    pub fn peak_in_flight(&self) -> u64 {
        self.counters.peak.load(Ordering::SeqCst)
    }

    /// Starts counting the peak afresh.
    pub fn reset_peak(&self) {
        self.counters.peak.store(0, Ordering::SeqCst);
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }
}

impl Drop for DelayFs {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            if s.umount_and_join().is_err() {
                detach(&self.mountpoint);
            }
        }
        let _ = std::fs::remove_file(&self.ledger);
    }
}

/// Notes the mount (our pid and the mountpoint) in the ledger.
fn record(mountpoint: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(LEDGER)?;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let f = Path::new(LEDGER).join(format!("{}-{n}", std::process::id()));
    let mut text = format!("{}\n", std::process::id()).into_bytes();
    text.extend_from_slice(mountpoint.canonicalize()?.as_os_str().as_bytes());
    std::fs::write(&f, text)?;
    Ok(f)
}

fn detach(p: &Path) {
    if let Ok(c) = cpath(p) {
        // SAFETY: a NUL-terminated path; a lazy unmount of a FUSE mount.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Detaches the mounts of processes that are gone.
fn reap_stale() {
    let Ok(rd) = std::fs::read_dir(LEDGER) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(text) = std::fs::read(e.path()) else {
            continue;
        };
        let mut parts = text.splitn(2, |&b| b == b'\n');
        let pid: i32 = parts
            .next()
            .and_then(|p| std::str::from_utf8(p).ok()?.trim().parse().ok())
            .unwrap_or(0);
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = pid > 0 && unsafe { libc::kill(pid, 0) } == 0;
        if !alive {
            if let Some(mp) = parts.next() {
                detach(Path::new(OsStr::from_bytes(mp)));
            }
            let _ = std::fs::remove_file(e.path());
        }
    }
}
