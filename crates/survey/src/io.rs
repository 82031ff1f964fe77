//! Data-path helpers shared by the bandwidth surveys: opening with
//! O_DIRECT when the file system allows it, whole-record reads and writes
//! through the backend, and a data pattern that no device can compress.

use iolab_backend::{Backend, Handle, OpenOptions};
use std::ffi::CStr;
use std::io;

/// Opens `path` with O_DIRECT when `direct`; a file system that refuses it
/// (EINVAL, as tmpfs does) gets a buffered open instead. Returns the
/// handle and whether it is direct.
pub fn open_data(
    b: &dyn Backend,
    path: &CStr,
    mut opts: OpenOptions,
    direct: bool,
) -> io::Result<(Handle, bool)> {
    opts.direct = direct && b.capabilities().direct_io;
    match b.open(path, opts) {
        Err(e) if opts.direct && e.raw_os_error() == Some(libc::EINVAL) => {
            opts.direct = false;
            b.open(path, opts).map(|h| (h, false))
        }
        r => r.map(|h| (h, opts.direct)),
    }
}

/// Writes all of `buf` at `offset` (retrying short writes).
pub fn write_all_at(b: &dyn Backend, h: &Handle, buf: &[u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = b.write_at(h, &buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        done += n;
    }
    Ok(())
}

/// Reads all of `buf` at `offset`; a file that ends early is an error
/// (the survey asked for data that is not there).
pub fn read_full_at(b: &dyn Backend, h: &Handle, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = b.read_at(h, &mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "short read: {} of {} bytes at offset {offset}",
                    done,
                    buf.len()
                ),
            ));
        }
        done += n;
    }
    Ok(())
}

/// Fills `buf` with a pseudo-random pattern seeded by `seed`, so that
/// compressing or deduplicating storage cannot flatter the figures.
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// A C path for the backend.
pub fn cpath(p: &std::path::Path) -> io::Result<std::ffi::CString> {
    iolab_backend::c_path(p)
}

/// Checks that `targets` is not empty and that each is a directory the
/// backend can see; the error names `targets` and the path.
pub fn check_target_dirs(
    targets: &[std::path::PathBuf],
    b: &dyn Backend,
) -> Result<(), crate::ParamError> {
    if targets.is_empty() {
        return Err(crate::ParamError::new(
            "targets",
            "give at least one target directory",
        ));
    }
    for t in targets {
        let shown = t.display().to_string();
        let st = cpath(t)
            .and_then(|c| b.stat(&c))
            .map_err(|e| crate::ParamError::new("targets", format!("{shown}: {e}")))?;
        if !st.is_dir {
            return Err(crate::ParamError::new(
                "targets",
                format!("{shown} is not a directory"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_not_constant() {
        let mut a = vec![0u8; 4096];
        fill_pattern(&mut a, 1);
        assert!(a.iter().any(|&x| x != a[0]));
        let mut b = vec![0u8; 4096];
        fill_pattern(&mut b, 2);
        assert_ne!(a, b);
    }
}
