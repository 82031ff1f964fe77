//! libblkid, the prober behind `blkid` and `wipefs`, loaded at run time
//! (`libblkid.so.1`, which util-linux installs on every Linux system)
//! rather than linked at build time: building iolab needs neither
//! libblkid's headers nor libclang, so the quick start builds on a bare
//! machine. Only the few calls the safety check makes are bound. When the
//! library cannot be loaded, every probe fails with a message saying so,
//! and the safety check treats that as "cannot tell", which refuses.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `BLKID_SUBLKS_TYPE`: define TYPE.
pub const SUBLKS_TYPE: c_int = 1 << 5;
/// `BLKID_SUBLKS_USAGE`: define USAGE.
pub const SUBLKS_USAGE: c_int = 1 << 7;
/// `BLKID_SUBLKS_MAGIC`: define SBMAGIC and SBMAGIC_OFFSET.
pub const SUBLKS_MAGIC: c_int = 1 << 9;
/// `BLKID_SUBLKS_BADCSUM`: report a superblock whose checksum fails.
pub const SUBLKS_BADCSUM: c_int = 1 << 10;

type RawProbe = *mut c_void;

/// The entry points used, from libblkid's stable ABI (blkid.h).
struct Api {
    new_probe: unsafe extern "C" fn() -> RawProbe,
    free_probe: unsafe extern "C" fn(RawProbe),
    set_device: unsafe extern "C" fn(RawProbe, c_int, i64, i64) -> c_int,
    enable_superblocks: unsafe extern "C" fn(RawProbe, c_int) -> c_int,
    set_superblocks_flags: unsafe extern "C" fn(RawProbe, c_int) -> c_int,
    enable_partitions: unsafe extern "C" fn(RawProbe, c_int) -> c_int,
    do_probe: unsafe extern "C" fn(RawProbe) -> c_int,
    lookup_value:
        unsafe extern "C" fn(RawProbe, *const c_char, *mut *const c_char, *mut usize) -> c_int,
}

/// Why libblkid could not probe.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BlkidError {
    /// The library is not installed (or not loadable) here.
    #[error("libblkid.so.1 (util-linux) cannot be loaded")]
    NotLoaded,
    /// The library lacks a function iolab calls.
    #[error("libblkid has no {0}")]
    Symbol(String),
    /// A probe could not be made.
    #[error("blkid_new_probe failed")]
    NewProbe,
    /// A call returned an error code.
    #[error("{call} failed ({rc})")]
    Call {
        /// The libblkid function.
        call: &'static str,
        /// What it returned.
        rc: c_int,
    },
}

static API: OnceLock<Result<Api, BlkidError>> = OnceLock::new();

fn api() -> Result<&'static Api, BlkidError> {
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Looks up `name` in `lib` and reinterprets it as the function type `F`.
///
/// # Safety
/// `F` must be the C signature libblkid gives `name`.
unsafe fn symbol<F: Copy>(lib: *mut c_void, name: &CStr) -> Result<F, BlkidError> {
    // SAFETY: `lib` is a live handle from dlopen; `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(BlkidError::Symbol(name.to_string_lossy().into_owned()));
    }
    // SAFETY: a function pointer and a data pointer have the same size on
    // every platform Linux runs on; the caller vouches for the signature.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

fn load() -> Result<Api, BlkidError> {
    let lib = [c"libblkid.so.1", c"libblkid.so"]
        .iter()
        // SAFETY: dlopen with a NUL-terminated name; the handle is never
        // closed, so the functions taken from it stay valid.
        .map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
        .find(|h| !h.is_null())
        .ok_or(BlkidError::NotLoaded)?;
    // SAFETY: each type below is the blkid.h prototype of its name.
    unsafe {
        Ok(Api {
            new_probe: symbol(lib, c"blkid_new_probe")?,
            free_probe: symbol(lib, c"blkid_free_probe")?,
            set_device: symbol(lib, c"blkid_probe_set_device")?,
            enable_superblocks: symbol(lib, c"blkid_probe_enable_superblocks")?,
            set_superblocks_flags: symbol(lib, c"blkid_probe_set_superblocks_flags")?,
            enable_partitions: symbol(lib, c"blkid_probe_enable_partitions")?,
            do_probe: symbol(lib, c"blkid_do_probe")?,
            lookup_value: symbol(lib, c"blkid_probe_lookup_value")?,
        })
    }
}

/// One libblkid probe, freed on drop.
pub struct Probe {
    api: &'static Api,
    raw: RawProbe,
}

fn check(call: &'static str, rc: c_int) -> Result<(), BlkidError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(BlkidError::Call { call, rc })
    }
}

impl Probe {
    /// A new probe, or why libblkid is not usable here.
    pub fn new() -> Result<Probe, BlkidError> {
        let api = api()?;
        // SAFETY: blkid_new_probe has no preconditions.
        let raw = unsafe { (api.new_probe)() };
        if raw.is_null() {
            return Err(BlkidError::NewProbe);
        }
        Ok(Probe { api, raw })
    }

    /// Probes `len` bytes of the open descriptor `fd` from `offset`. The
    /// descriptor must stay open while the probe lives (blkid never closes
    /// a descriptor it was given).
    pub fn set_device(&mut self, fd: c_int, offset: i64, len: i64) -> Result<(), BlkidError> {
        // SAFETY: `raw` is a live probe; a bad descriptor is an error return.
        check("blkid_probe_set_device", unsafe {
            (self.api.set_device)(self.raw, fd, offset, len)
        })
    }

    /// Turns the superblock chain on, reporting the `flags` values.
    pub fn superblocks(&mut self, flags: c_int) -> Result<(), BlkidError> {
        // SAFETY: `raw` is a live probe.
        check("blkid_probe_enable_superblocks", unsafe {
            (self.api.enable_superblocks)(self.raw, 1)
        })?;
        // SAFETY: as above.
        check("blkid_probe_set_superblocks_flags", unsafe {
            (self.api.set_superblocks_flags)(self.raw, flags)
        })
    }

    /// Turns the partition-table chain on.
    pub fn partitions(&mut self) -> Result<(), BlkidError> {
        // SAFETY: `raw` is a live probe.
        check("blkid_probe_enable_partitions", unsafe {
            (self.api.enable_partitions)(self.raw, 1)
        })
    }

    /// Steps to the next signature, as `wipefs` does: true when one was
    /// found (its values can be looked up), false when there is none left.
    pub fn step(&mut self) -> Result<bool, BlkidError> {
        // SAFETY: `raw` is a live probe with a device set.
        match unsafe { (self.api.do_probe)(self.raw) } {
            0 => Ok(true),
            1 => Ok(false),
            rc => Err(BlkidError::Call {
                call: "blkid_do_probe",
                rc,
            }),
        }
    }

    /// A value of the signature just found (`TYPE`, `USAGE`, `PTTYPE`).
    pub fn value(&self, name: &CStr) -> Option<String> {
        let mut data: *const c_char = std::ptr::null();
        let mut len = 0usize;
        // SAFETY: `raw` is live; `name` is NUL-terminated; libblkid sets
        // `data` to a NUL-terminated string it owns until the next probe.
        let rc = unsafe { (self.api.lookup_value)(self.raw, name.as_ptr(), &mut data, &mut len) };
        if rc != 0 || data.is_null() {
            return None;
        }
        // SAFETY: as above; copied out before the probe moves on.
        let s = unsafe { CStr::from_ptr(data) }
            .to_string_lossy()
            .into_owned();
        (!s.is_empty()).then_some(s)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // SAFETY: `raw` came from blkid_new_probe and is freed once.
        unsafe { (self.api.free_probe)(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_library_loads_and_a_blank_file_holds_nothing() {
        let p = std::env::temp_dir().join(format!("iolab-blkid-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        f.write_all(&vec![0u8; 1 << 20]).unwrap();
        let mut pr = Probe::new().unwrap();
        pr.set_device(f.as_raw_fd(), 0, 1 << 20).unwrap();
        pr.superblocks(SUBLKS_TYPE | SUBLKS_USAGE).unwrap();
        pr.partitions().unwrap();
        assert!(!pr.step().unwrap(), "zeros hold no signature");
        drop(pr);
        std::fs::remove_file(&p).unwrap();
    }
}
