//! I/O buffers: aligned heap memory (O_DIRECT needs it) or a System V
//! shared memory segment (`-sharedmemory`), optionally locked in memory.
//! Allocated once per QThread before any thread starts.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Where the memory came from, so that Drop returns it the right way.
enum Source {
    Heap(Layout),
    Shm,
}

/// A zeroed, aligned byte buffer owned by one QThread.
pub struct IoBuffer {
    ptr: *mut u8,
    len: usize,
    source: Source,
    /// True when mlock succeeded.
    pub locked: bool,
}

// SAFETY: the buffer is plain memory owned by one IoBuffer; moving it to
// another thread moves the ownership with it.
unsafe impl Send for IoBuffer {}

/// The system page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

impl IoBuffer {
    /// A heap buffer of `len` bytes aligned to `align` (a power of two).
    pub fn heap(len: usize, align: usize) -> std::io::Result<Self> {
        let layout = Layout::from_size_align(len.max(1), align.max(page_size()))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(std::io::Error::from(std::io::ErrorKind::OutOfMemory));
        }
        Ok(Self {
            ptr,
            len,
            source: Source::Heap(layout),
            locked: false,
        })
    }

    /// A buffer in a private System V shared memory segment; the segment
    /// is marked for removal at once so nothing outlives the process.
    pub fn shared(len: usize) -> std::io::Result<Self> {
        // SAFETY: plain syscalls; shmat's result is checked before use.
        unsafe {
            let id = libc::shmget(libc::IPC_PRIVATE, len.max(1), libc::IPC_CREAT | 0o600);
            if id < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let p = libc::shmat(id, std::ptr::null(), 0);
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
            if p as isize == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Self {
                ptr: p.cast(),
                len,
                source: Source::Shm,
                locked: false,
            })
        }
    }

    /// Locks the pages in memory; returns the error when not permitted.
    pub fn lock(&mut self) -> std::io::Result<()> {
        // SAFETY: the range is memory this buffer owns.
        if unsafe { libc::mlock(self.ptr.cast(), self.len) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.locked = true;
        Ok(())
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Address alignment actually obtained.
    pub fn address(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for IoBuffer {
    fn drop(&mut self) {
        // SAFETY: ptr came from the matching allocator and is freed once.
        unsafe {
            if self.locked {
                libc::munlock(self.ptr.cast(), self.len);
            }
            match self.source {
                Source::Heap(layout) => dealloc(self.ptr, layout),
                Source::Shm => {
                    libc::shmdt(self.ptr.cast());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_buffers_are_aligned_and_zeroed() {
        let mut b = IoBuffer::heap(10_000, 8192).unwrap();
        assert_eq!(b.address() % 8192, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[9_999] = 7;
        assert_eq!(b.as_slice()[9_999], 7);
    }

    #[test]
    fn shared_buffers_work() {
        let mut b = IoBuffer::shared(8192).unwrap();
        b.as_mut_slice()[0] = 1;
        assert_eq!(b.as_slice()[0], 1);
        assert_eq!(b.address() % page_size(), 0);
    }
}
