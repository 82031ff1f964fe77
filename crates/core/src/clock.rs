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
///
/// The local zone is the system's as localtime(3) finds it: `TZ` when set
/// (a zone name or a POSIX rule), else /etc/localtime, else UTC. A pattern
/// with a directive jiff does not know gives an empty string, as strftime(3)
/// gives 0 bytes.
pub fn format_local(unix_secs: u64, pattern: &str) -> String {
    let Ok(secs) = i64::try_from(unix_secs) else {
        return String::new();
    };
    let Ok(ts) = jiff::Timestamp::from_second(secs) else {
        return String::new();
    };
    let local = ts.to_zoned(jiff::tz::TimeZone::system());
    jiff::fmt::strtime::format(pattern, &local).unwrap_or_default()
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

    /// The patterns iolab prints, at a known instant in the zone the test
    /// process runs in (the tests below set no TZ, so compare with UTC only
    /// where the offset is known).
    #[test]
    fn patterns_match_strftime() {
        // 2009-11-23 09:05:29 UTC, a Monday.
        let t = 1_258_967_129;
        let utc = |p: &str| {
            let ts = jiff::Timestamp::from_second(t).unwrap();
            jiff::fmt::strtime::format(p, &ts.to_zoned(jiff::tz::TimeZone::UTC)).unwrap()
        };
        assert_eq!(utc("%m/%d/%Y %H:%M:%S"), "11/23/2009 09:05:29");
        assert_eq!(
            utc("%a %b %e %H:%M:%S %Z %Y"),
            "Mon Nov 23 09:05:29 UTC 2009"
        );
        assert_eq!(utc("%D"), "11/23/09");
        assert_eq!(utc("%F@%R"), "2009-11-23@09:05");
        assert_eq!(utc("%Y%m%d-%H%M%S"), "20091123-090529");
        // %e pads a one-digit day with a space, as strftime does.
        let ts = jiff::Timestamp::from_second(1_257_238_800).unwrap();
        let s = jiff::fmt::strtime::format("%a %b %e", &ts.to_zoned(jiff::tz::TimeZone::UTC));
        assert_eq!(s.unwrap(), "Tue Nov  3");
        assert_eq!(format_local(t as u64, "%Q%!"), "");
    }
}
