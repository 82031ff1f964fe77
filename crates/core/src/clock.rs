//! Clocks. Phase boundaries use the real-time clock so that tasks on
//! different nodes can be compared (earliest start, latest end); per-op
//! latencies use the monotonic clock, which never jumps.

/// Nanoseconds on the monotonic clock (CLOCK_MONOTONIC): for intervals
/// inside one process.
#[inline]
pub fn mono_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds since the Unix epoch on the real-time clock: comparable
/// across processes and, with synchronised clocks, across nodes.
#[inline]
pub fn wall_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// CPU time (user + system) consumed by the whole process, in ns.
pub fn process_cpu_ns() -> u64 {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time consumed by the calling thread, in ns.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[inline]
fn read(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here
    // exist on every Linux kernel iolab supports.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Local wall-clock time formatted as mdtest prints it:
/// `11/23/2009 09:05:29`.
pub fn mdtest_timestamp() -> String {
    format_local(wall_ns() / 1_000_000_000, "%m/%d/%Y %H:%M:%S")
}

/// Formats Unix seconds in local time with a strftime pattern.
pub fn format_local(unix_secs: u64, pattern: &str) -> String {
    let t = unix_secs as libc::time_t;
    // SAFETY: zeroed `tm` is a valid value; localtime_r and strftime write
    // into buffers we own and bound by their lengths.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        let mut buf = [0u8; 128];
        let fmt = std::ffi::CString::new(pattern).unwrap_or_default();
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance() {
        let a = mono_ns();
        let w = wall_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(mono_ns() >= a + 2_000_000);
        assert!(wall_ns() > w);
        assert!(w > 1_600_000_000 * 1_000_000_000);
    }

    #[test]
    fn timestamp_shape() {
        let s = mdtest_timestamp();
        assert_eq!(s.len(), 19, "{s}");
        assert_eq!(&s[2..3], "/");
        assert_eq!(&s[13..14], ":");
    }
}
