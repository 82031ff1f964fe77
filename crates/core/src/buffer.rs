//! I/O buffers: aligned heap memory (O_DIRECT needs it) or a System V
//! shared memory segment (`-sharedmemory`), optionally locked in memory.
//! The one aligned-buffer type of iolab: an xdd QThread owns one holding
//! a request, xdd's io_uring engine one holding a slot per request in
//! flight ([`IoBuffer::region_mut`]), so `-sharedmemory` and `-memlock`
//! apply to both alike; the surveys' workers own one each. Allocated
//! before any I/O starts.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Where the memory came from, so that Drop returns it the right way.
enum Source {
    Heap(Layout),
    /// The address shmat gave, which the aligned buffer may start after.
    Shm(*mut libc::c_void),
}

/// A zeroed, aligned byte buffer owned by one worker (an xdd QThread, a
/// survey thread).
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

/// Bytes of a cache line, as far as [`warm`] steps.
const LINE: usize = 64;

/// Brings `bytes` into this CPU's cache by reading one byte of each
/// cache line, before a system call copies them. Why: a file system
/// copies a write's bytes under the file's lock (tmpfs and ext4 hold
/// the inode's for the whole write), so on a shared file the writers
/// take turns and a source that misses the cache lengthens every turn;
/// read here, outside the lock, its misses overlap the other writers'
/// turns. Allocation-free; the loads are independent, so they overlap.
#[inline]
pub fn warm(bytes: &[u8]) {
    let mut acc = 0u8;
    for b in bytes.iter().step_by(LINE).chain(bytes.last()) {
        // SAFETY: a reference to a byte of the slice; volatile so that
        // the read is made though its value is not needed.
        acc ^= unsafe { std::ptr::read_volatile(b) };
    }
    std::hint::black_box(acc);
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

    /// A buffer in a private System V shared memory segment, aligned to
    /// `align` (a power of two; shmat gives page alignment, so a larger
    /// one takes a segment `align` bytes longer and starts inside it);
    /// the segment is marked for removal at once so nothing outlives
    /// the process.
    pub fn shared(len: usize, align: usize) -> std::io::Result<Self> {
        let align = align.max(page_size());
        if !align.is_power_of_two() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("alignment {align} is not a power of two"),
            ));
        }
        let slack = align - page_size();
        let size = len
            .max(1)
            .checked_add(slack)
            .ok_or(std::io::ErrorKind::OutOfMemory)?;
        // SAFETY: plain syscalls; shmat's result is checked before use.
        unsafe {
            let id = libc::shmget(libc::IPC_PRIVATE, size, libc::IPC_CREAT | 0o600);
            if id < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let p = libc::shmat(id, std::ptr::null(), 0);
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
            if p as isize == -1 {
                return Err(std::io::Error::last_os_error());
            }
            let skip = (p as usize).next_multiple_of(align) - p as usize;
            Ok(Self {
                ptr: p.cast::<u8>().add(skip),
                len,
                source: Source::Shm(p),
                locked: false,
            })
        }
    }

    /// A buffer of `len` bytes aligned to `align`: shared memory when
    /// `shared` (`-sharedmemory`), else heap.
    pub fn new(len: usize, align: usize, shared: bool) -> std::io::Result<Self> {
        if shared {
            Self::shared(len, align)
        } else {
            Self::heap(len, align)
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

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes `offset..offset + len`: one slot of a buffer shared out among
    /// requests in flight. The slice covers only that range, so holding it
    /// says nothing about the other slots, which the kernel may be filling.
    ///
    /// # Panics
    /// When the range is not inside the buffer.
    #[inline]
    pub fn region(&self, offset: usize, len: usize) -> &[u8] {
        self.check_range(offset, len);
        // SAFETY: the range is inside the buffer (checked above), whose
        // bytes are initialised (zeroed at allocation).
        unsafe { std::slice::from_raw_parts(self.ptr.add(offset), len) }
    }

    /// Bytes `offset..offset + len`, writable (see [`IoBuffer::region`]).
    ///
    /// # Panics
    /// When the range is not inside the buffer.
    #[inline]
    pub fn region_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        self.check_range(offset, len);
        // SAFETY: as in `region`, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) }
    }

    fn check_range(&self, offset: usize, len: usize) {
        let end = offset.checked_add(len);
        assert!(
            end.is_some_and(|e| e <= self.len),
            "region {offset}+{len} outside a {}-byte buffer",
            self.len
        );
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
                Source::Shm(base) => {
                    libc::shmdt(base);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_buffers_keep_a_large_alignment() {
        for align in [4096, 1 << 16, 2 << 20] {
            let mut b = IoBuffer::shared(10_000, align).unwrap();
            assert_eq!(b.address() % align, 0, "{align}");
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice()[9_999] = 1;
        }
        assert!(IoBuffer::shared(100, 3 << 12).is_err());
    }

    #[test]
    fn warming_reads_and_leaves_the_bytes() {
        let b: Vec<u8> = (0..=255).cycle().take(10_001).collect();
        warm(&b);
        warm(&b[3..70]);
        warm(&[]);
        assert!(b.iter().enumerate().all(|(i, &x)| x == (i % 256) as u8));
    }

    #[test]
    fn heap_buffers_are_aligned_and_zeroed() {
        let mut b = IoBuffer::heap(10_000, 8192).unwrap();
        assert_eq!(b.address() % 8192, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[9_999] = 7;
        assert_eq!(b.as_slice()[9_999], 7);
    }

    #[test]
    fn regions_are_slots_of_one_buffer() {
        let mut b = IoBuffer::new(3 * 4096, 4096, false).unwrap();
        assert_eq!((b.len(), b.is_empty()), (3 * 4096, false));
        b.region_mut(4096, 4096).fill(5);
        assert_eq!(b.region(4096, 4096).as_ptr() as usize % 4096, 0);
        assert!(b.region(0, 4096).iter().all(|&x| x == 0));
        assert!(b.region(4096, 4096).iter().all(|&x| x == 5));
        assert!(b.region(8192, 4096).iter().all(|&x| x == 0));
        let shared = IoBuffer::new(8192, 4096, true).unwrap();
        assert_eq!(shared.region(4096, 4096).len(), 4096);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_region_past_the_end_panics() {
        let b = IoBuffer::heap(4096, 4096).unwrap();
        let _ = b.region(4095, 2);
    }

    #[test]
    fn shared_buffers_work() {
        let mut b = IoBuffer::shared(8192, 0).unwrap();
        b.as_mut_slice()[0] = 1;
        assert_eq!(b.as_slice()[0], 1);
        assert_eq!(b.address() % page_size(), 0);
    }
}
