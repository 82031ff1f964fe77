//! What any Linux node has: pure parsers of /proc text (tested on sample
//! text) and the statfs call. Each returns rows; reading the files is the
//! collector's job.

use crate::sample::Row;
use std::path::Path;

/// Names of the /proc/stat CPU time columns, in the kernel's order.
const CPU_COLUMNS: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

/// Clock ticks per second for /proc/stat (USER_HZ).
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// One `cpu...` line of /proc/stat as a row of milliseconds per state.
fn cpu_row(series: &str, fields: &[&str], hz: u64) -> Row {
    let mut row = Row::new(series);
    for (name, v) in CPU_COLUMNS.iter().zip(fields) {
        if let Ok(ticks) = v.parse::<u64>() {
            row = row.counter(&format!("{name}_ms"), ticks * 1000 / hz);
        }
    }
    row
}

/// Per-core CPU time from /proc/stat: one row per `cpuN`.
pub fn parse_cpu(stat: &str, hz: u64) -> Vec<Row> {
    stat.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?;
            let core = name.strip_prefix("cpu")?;
            if core.is_empty() || !core.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            Some(cpu_row(name, &w.collect::<Vec<_>>(), hz))
        })
        .collect()
}

/// The vmstat-like totals: CPU time, context switches, interrupts and
/// forks from /proc/stat; paging and swapping from /proc/vmstat; free,
/// buffer, cache and swap memory from /proc/meminfo. One row, `total`.
pub fn parse_vmstat(stat: &str, vmstat: &str, meminfo: &str, hz: u64) -> Row {
    let mut row = Row::new("total");
    for l in stat.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let first = |i: usize| w.get(i).and_then(|v| v.parse::<u64>().ok());
        match w.first().copied() {
            Some("cpu") => {
                let cpu = cpu_row("total", &w[1..], hz);
                row.counters.extend(cpu.counters);
            }
            Some("ctxt") => row = row.counter("context_switches", first(1).unwrap_or(0)),
            Some("intr") => row = row.counter("interrupts", first(1).unwrap_or(0)),
            Some("processes") => row = row.counter("forks", first(1).unwrap_or(0)),
            Some("procs_running") => row = row.gauge("procs_running", first(1).unwrap_or(0) as f64),
            Some("procs_blocked") => row = row.gauge("procs_blocked", first(1).unwrap_or(0) as f64),
            _ => {}
        }
    }
    const PAGING: [&str; 6] = [
        "pgpgin",
        "pgpgout",
        "pswpin",
        "pswpout",
        "pgfault",
        "pgmajfault",
    ];
    for l in vmstat.lines() {
        if let Some((k, v)) = l.split_once(' ') {
            if PAGING.contains(&k) {
                row = row.counter(k, v.trim().parse().unwrap_or(0));
            }
        }
    }
    let mem = parse_meminfo(meminfo);
    let kb = |k: &str| mem.gauges.get(&format!("{k}_kb")).copied().unwrap_or(0.0);
    row.gauge("free_kb", kb("MemFree"))
        .gauge("buffers_kb", kb("Buffers"))
        .gauge("cache_kb", kb("Cached"))
        .gauge("swapped_kb", kb("SwapTotal") - kb("SwapFree"))
}

/// /proc/meminfo as one row of gauges (`MemFree_kb`, `HugePages_Total`).
pub fn parse_meminfo(text: &str) -> Row {
    let mut row = Row::new("total");
    for l in text.lines() {
        let Some((key, rest)) = l.split_once(':') else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let Some(Ok(v)) = w.next().map(str::parse::<u64>) else {
            continue;
        };
        let name = match w.next() {
            Some("kB") => format!("{key}_kb"),
            _ => key.to_string(),
        };
        row = row.gauge(&name, v as f64);
    }
    row
}

/// /proc/diskstats column names after major, minor and device name.
const DISK_COLUMNS: [&str; 17] = [
    "reads",
    "reads_merged",
    "read_sectors",
    "read_ms",
    "writes",
    "writes_merged",
    "write_sectors",
    "write_ms",
    "in_flight",
    "io_ms",
    "weighted_io_ms",
    "discards",
    "discards_merged",
    "discard_sectors",
    "discard_ms",
    "flushes",
    "flush_ms",
];

/// /proc/diskstats: one row per device; sectors are 512 bytes whatever
/// the device's block size, so `read_bytes`/`write_bytes` are added.
pub fn parse_diskstats(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let name = w.get(2)?;
            let mut row = Row::new(*name);
            for (col, v) in DISK_COLUMNS.iter().zip(&w[3..]) {
                let v: u64 = v.parse().ok()?;
                row = if *col == "in_flight" {
                    row.gauge(col, v as f64)
                } else {
                    row.counter(col, v)
                };
            }
            let sectors = |k: &str| row.counters.get(k).copied().unwrap_or(0);
            let (r, wr) = (sectors("read_sectors"), sectors("write_sectors"));
            Some(
                row.counter("read_bytes", r * 512)
                    .counter("write_bytes", wr * 512),
            )
        })
        .collect()
}

/// /proc/net/dev column names, receive then transmit.
const NET_COLUMNS: [&str; 16] = [
    "rx_bytes",
    "rx_packets",
    "rx_errs",
    "rx_drop",
    "rx_fifo",
    "rx_frame",
    "rx_compressed",
    "rx_multicast",
    "tx_bytes",
    "tx_packets",
    "tx_errs",
    "tx_drop",
    "tx_fifo",
    "tx_colls",
    "tx_carrier",
    "tx_compressed",
];

/// /proc/net/dev: one row per interface.
pub fn parse_netdev(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let mut row = Row::new(name.trim());
            for (col, v) in NET_COLUMNS.iter().zip(rest.split_whitespace()) {
                row = row.counter(col, v.parse().ok()?);
            }
            Some(row)
        })
        .collect()
}

/// statfs of `path`: space and inodes, gauges.
pub fn statfs(path: &Path) -> std::io::Result<Row> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: statvfs is plain data; zeroed is a valid value for it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok(Row::new(path.display().to_string())
        .gauge("total_bytes", (st.f_blocks as u64 * frsize) as f64)
        .gauge("free_bytes", (st.f_bfree as u64 * frsize) as f64)
        .gauge("avail_bytes", (st.f_bavail as u64 * frsize) as f64)
        .gauge(
            "used_bytes",
            ((st.f_blocks - st.f_bfree) as u64 * frsize) as f64,
        )
        .gauge("files", st.f_files as f64)
        .gauge("files_free", st.f_ffree as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 800 20 0 3 0 0 0\ncpu0 60 5 30 400 10 0 2 0 0 0\ncpu1 40 0 20 400 10 0 1 0 0 0\nintr 12345 1 2 3\nctxt 999\nbtime 1700000000\nprocesses 77\nprocs_running 2\nprocs_blocked 1\n";

    #[test]
    fn cpu_rows_are_per_core_in_ms() {
        let rows = parse_cpu(STAT, 100);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].series, "cpu0");
        assert_eq!(rows[0].counters["user_ms"], 600);
        assert_eq!(rows[1].counters["idle_ms"], 4000);
    }

    #[test]
    fn vmstat_row_gathers_three_files() {
        let vm = "nr_free_pages 5\npgpgin 10\npgpgout 20\npswpin 0\npswpout 0\npgfault 300\npgmajfault 4\n";
        let mem = "MemTotal: 1000 kB\nMemFree: 400 kB\nBuffers: 10 kB\nCached: 200 kB\nSwapTotal: 50 kB\nSwapFree: 30 kB\nHugePages_Total: 0\n";
        let r = parse_vmstat(STAT, vm, mem, 100);
        assert_eq!(r.counters["user_ms"], 1000);
        assert_eq!(r.counters["context_switches"], 999);
        assert_eq!(r.counters["interrupts"], 12345);
        assert_eq!(r.counters["pgpgout"], 20);
        assert_eq!(r.gauges["procs_blocked"], 1.0);
        assert_eq!(r.gauges["free_kb"], 400.0);
        assert_eq!(r.gauges["swapped_kb"], 20.0);
        let m = parse_meminfo(mem);
        assert_eq!(m.gauges["HugePages_Total"], 0.0);
        assert_eq!(m.gauges["MemTotal_kb"], 1000.0);
    }

    #[test]
    fn diskstats_rows_per_device_with_bytes() {
        let t = "   7       3 loop3 10 0 80 5 4 0 2048 9 1 12 14 0 0 0 0 2 1\n 253 0 vda 1 2 3 4 5 6 7 8 0 10 11\n";
        let rows = parse_diskstats(t);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].series, "loop3");
        assert_eq!(rows[0].counters["write_sectors"], 2048);
        assert_eq!(rows[0].counters["write_bytes"], 2048 * 512);
        assert_eq!(rows[0].counters["flushes"], 2);
        assert_eq!(rows[0].gauges["in_flight"], 1.0);
        assert!(!rows[1].counters.contains_key("discards"));
    }

    #[test]
    fn netdev_rows_per_interface() {
        let t = "Inter-|   Receive |  Transmit\n face |bytes packets|bytes\n    lo: 100 2 0 0 0 0 0 0 100 2 0 0 0 0 0 0\n  eth0: 5 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n";
        let rows = parse_netdev(t);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].series, "eth0");
        assert_eq!(rows[1].counters["tx_bytes"], 7);
    }

    #[test]
    fn statfs_of_root_has_space() {
        let r = statfs(Path::new("/")).unwrap();
        assert!(r.gauges["total_bytes"] > 0.0);
        assert!(statfs(Path::new("/no/such/path")).is_err());
    }
}
