//! The `null` backend: every call succeeds and nothing is stored. Reads
//! leave the buffer as it was and report the full length; writes are
//! discarded. It measures the tool itself (fio's null engine, XDD's
//! `null` target), so no call allocates or touches the system.

use crate::{Backend, Capabilities, Dir, DirEntry, Handle, OpenOptions, Stat};
use std::ffi::CStr;
use std::io;

/// The backend that stores nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Null;

impl Backend for Null {
    fn name(&self) -> &'static str {
        "null"
    }

    /// Nothing a real store offers: no directories, no O_DIRECT, no
    /// special files, no preallocation, no renames. Engines that need
    /// one of them refuse the run when they plan it.
    /// A sink and nothing more: it claims no feature of a store, but
    /// says it discards, so engines that only need calls to succeed run.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            discards: true,
            // No descriptors at all.
            thread_private_fds: true,
            ..Capabilities::default()
        }
    }

    fn mkdir(&self, _path: &CStr, _mode: u32) -> io::Result<()> {
        Ok(())
    }

    fn rmdir(&self, _path: &CStr) -> io::Result<()> {
        Ok(())
    }

    fn open(&self, _path: &CStr, _opts: OpenOptions) -> io::Result<Handle> {
        Ok(Handle::new(0))
    }

    fn close(&self, _h: Handle) -> io::Result<()> {
        Ok(())
    }

    fn write_at(&self, _h: &Handle, buf: &[u8], _offset: u64) -> io::Result<usize> {
        Ok(buf.len())
    }

    fn read_at(&self, _h: &Handle, buf: &mut [u8], _offset: u64) -> io::Result<usize> {
        Ok(buf.len())
    }

    fn fsync(&self, _h: &Handle) -> io::Result<()> {
        Ok(())
    }

    fn fdatasync(&self, _h: &Handle) -> io::Result<()> {
        Ok(())
    }

    /// Every path is an empty regular file.
    fn stat(&self, _path: &CStr) -> io::Result<Stat> {
        Ok(Stat {
            is_file: true,
            ..Stat::default()
        })
    }

    fn fstat(&self, _h: &Handle) -> io::Result<Stat> {
        self.stat(c"")
    }

    fn unlink(&self, _path: &CStr) -> io::Result<()> {
        Ok(())
    }

    fn rename(&self, _from: &CStr, _to: &CStr) -> io::Result<()> {
        Ok(())
    }

    fn open_dir(&self, _path: &CStr) -> io::Result<Dir> {
        Ok(Dir::token())
    }

    fn open_dir_at(&self, _dir: &Dir, _rel: &CStr) -> io::Result<Dir> {
        Ok(Dir::token())
    }

    fn mkdir_at(&self, _dir: &Dir, name: &CStr, mode: u32) -> io::Result<()> {
        self.mkdir(name, mode)
    }

    fn stat_at(&self, _dir: &Dir, name: &CStr) -> io::Result<Stat> {
        self.stat(name)
    }

    fn open_at(&self, _dir: &Dir, name: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        self.open(name, opts)
    }

    fn unlink_at(&self, _dir: &Dir, _name: &CStr) -> io::Result<()> {
        Ok(())
    }

    fn rmdir_at(&self, _dir: &Dir, _name: &CStr) -> io::Result<()> {
        Ok(())
    }

    /// Nothing is stored, so every directory is empty.
    fn list_at(&self, _dir: &Dir, _each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        Ok(())
    }

    fn mknod(&self, _path: &CStr) -> io::Result<()> {
        Ok(())
    }

    fn preallocate(&self, _h: &Handle, _offset: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }

    fn sync_all(&self) {}

    fn setxattr(&self, _path: &CStr, _name: &CStr, _value: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_succeeds_and_nothing_is_stored() {
        let be = crate::by_name("null").unwrap();
        assert_eq!(be.name(), "null");
        assert_eq!(
            be.capabilities(),
            Capabilities {
                discards: true,
                thread_private_fds: true,
                ..Capabilities::default()
            }
        );
        let h = be
            .open(c"/no/such/dir/f", OpenOptions::create_new())
            .unwrap();
        let mut buf = [7u8; 16];
        assert_eq!(be.write_at(&h, &buf, 1 << 40).unwrap(), 16);
        assert_eq!(be.read_at(&h, &mut buf, 0).unwrap(), 16);
        assert_eq!(buf, [7u8; 16], "reads leave the buffer as it was");
        assert!(be.raw_fd(&h).is_none());
        assert!(be.stat(c"/anything").unwrap().is_file);
        be.close(h).unwrap();
    }
}
