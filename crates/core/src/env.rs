//! Facts about the machine and the file systems a run touches, recorded in
//! every JSON report so a result can be reproduced.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Host and kernel facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    /// Node name (uname -n).
    pub hostname: String,
    /// Kernel name and release (uname -s -r).
    pub kernel: String,
    /// Machine architecture (uname -m).
    pub arch: String,
    /// Online CPUs.
    pub cpus: usize,
    /// Physical memory in bytes.
    pub memory_bytes: u64,
    /// Page size in bytes.
    #[serde(default)]
    pub page_size: u64,
    /// Clock ticks per second (times(2), /proc CPU counters).
    #[serde(default)]
    pub clock_ticks: u64,
    /// The user running the program (`USER`).
    #[serde(default)]
    pub user: String,
}

/// The file system under one path, from /proc/self/mountinfo and statvfs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FsInfo {
    /// The path asked about.
    pub path: String,
    /// Mount point that holds it.
    pub mount_point: String,
    /// File system type (ext4, xfs, tmpfs, lustre, ...).
    pub fs_type: String,
    /// Mount source (device or server).
    pub source: String,
    /// Mount options (per-mount and super-block options).
    pub options: String,
    /// Total size in bytes.
    pub size_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Total inodes.
    pub inodes: u64,
    /// Inodes in use.
    pub used_inodes: u64,
}

/// uname(2)'s fields, as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uname {
    /// Kernel name (`Linux`).
    pub sysname: String,
    /// Node name.
    pub nodename: String,
    /// Kernel release.
    pub release: String,
    /// Kernel version.
    pub version: String,
    /// Hardware name (`x86_64`).
    pub machine: String,
}

/// Reads uname(2); None when it fails.
pub fn uname() -> Option<Uname> {
    // SAFETY: utsname is plain data, for which all zeroes is valid.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a writable utsname; uname only fills it in.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let s = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some(Uname {
        sysname: s(&u.sysname),
        nodename: s(&u.nodename),
        release: s(&u.release),
        version: s(&u.version),
        machine: s(&u.machine),
    })
}

/// Reads uname(2) and sysconf facts about this host.
pub fn host_info() -> HostInfo {
    let u = uname().unwrap_or_default();
    // SAFETY: sysconf has no memory-safety preconditions.
    let (cpus, pages, page, ticks) = unsafe {
        (
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
            libc::sysconf(libc::_SC_CLK_TCK),
        )
    };
    HostInfo {
        kernel: format!("{} {}", u.sysname, u.release),
        hostname: u.nodename,
        arch: u.machine,
        cpus: cpus.max(1) as usize,
        memory_bytes: (pages.max(0) as u64) * (page.max(0) as u64),
        page_size: page.max(1) as u64,
        clock_ticks: ticks.max(0) as u64,
        user: std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(user_from_uid),
    }
}

/// How much more memory this process may take, and what sets that
/// bound: the least of the machine's memory, the address space left under
/// `RLIMIT_AS` (`ulimit -v`), and what its cgroup's `memory.max` (v2, or
/// v1's `memory.limit_in_bytes`, the nearest limited ancestor included)
/// leaves above the cgroup's current use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Bytes this process may still allocate.
    pub bytes: u64,
    /// Which limit that is, for messages.
    pub source: &'static str,
}

/// The memory limit that applies to this process now (see [`MemoryLimit`]).
pub fn memory_limit() -> MemoryLimit {
    let mut best = MemoryLimit {
        bytes: host_info().memory_bytes,
        source: "this machine's memory",
    };
    let mut offer = |bytes: Option<u64>, source| {
        if let Some(b) = bytes.filter(|b| *b < best.bytes) {
            best = MemoryLimit { bytes: b, source };
        }
    };
    offer(
        address_space_left(),
        "the address space left under ulimit -v (RLIMIT_AS)",
    );
    offer(
        cgroup_memory_left(),
        "what the cgroup's memory limit leaves",
    );
    best
}

/// The soft open-file limit (`ulimit -n`, RLIMIT_NOFILE); `None` when
/// unlimited or unknown. io_uring's table of direct descriptors may hold
/// no more entries than it, and every descriptor a thread opens counts
/// against it.
pub fn open_files_limit() -> Option<u64> {
    // SAFETY: all-zero is a valid rlimit; getrlimit only fills it in.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(r.rlim_cur as u64)
}

/// Descriptors open in the calling thread's table now (a task thread
/// that took a table of its own counts its own); 0 when /proc cannot
/// tell.
pub fn open_files_now() -> u64 {
    std::fs::read_dir("/proc/thread-self/fd").map_or(0, |d| d.count() as u64)
}

/// `RLIMIT_AS` minus the address space in use (VmSize); `None` unlimited.
fn address_space_left() -> Option<u64> {
    // SAFETY: all-zero is a valid rlimit; getrlimit only fills it in.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let used = status_kib(&status, "VmSize:").unwrap_or(0) * 1024;
    Some((r.rlim_cur as u64).saturating_sub(used))
}

/// A `KEY: N kB` figure of /proc/self/status, in KiB.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
}

/// The least room left under the memory limits of this process's cgroup
/// and its ancestors; `None` when none is limited or there is no cgroup fs.
fn cgroup_memory_left() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut least: Option<u64> = None;
    for line in text.lines() {
        // "0::/path" (v2), "N:memory:/path" (v1).
        let mut f = line.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        let (bases, files): (&[&str], _) = match ctrl {
            "" => (
                &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"],
                ("memory.max", "memory.current"),
            ),
            c if c.split(',').any(|x| x == "memory") => (
                &["/sys/fs/cgroup/memory"],
                ("memory.limit_in_bytes", "memory.usage_in_bytes"),
            ),
            _ => continue,
        };
        for base in bases {
            if let Some(left) = cgroup_left(Path::new(base), path, files) {
                least = Some(least.map_or(left, |l| l.min(left)));
            }
        }
    }
    least
}

/// The least room under `files.0` (limit) less `files.1` (use) from the
/// cgroup `path` under `base` up to `base`.
fn cgroup_left(base: &Path, path: &str, files: (&str, &str)) -> Option<u64> {
    let mut dir = base.join(path.trim_start_matches('/'));
    let mut least: Option<u64> = None;
    loop {
        let read = |f: &str| -> Option<u64> {
            std::fs::read_to_string(dir.join(f))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        if let Some(limit) = read(files.0) {
            let left = limit.saturating_sub(read(files.1).unwrap_or(0));
            least = Some(least.map_or(left, |l| l.min(left)));
        }
        if dir == base || !dir.pop() {
            return least;
        }
    }
}

/// The name of the process's real user from the password database (as
/// `id -un`), for when `$USER` is unset (cron, systemd, `env -i`); the
/// uid as a number when it has no entry.
fn user_from_uid() -> String {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: an all-zero passwd is a valid value of this plain C struct.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the right type and
    // buf's length is passed; getpwuid_r writes only inside them.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_name.is_null() {
        return uid.to_string();
    }
    // SAFETY: on success pw_name points to a NUL-terminated string in buf.
    unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }
        .to_string_lossy()
        .into_owned()
}

/// The process's peak resident memory (VmHWM), bytes; 0 when unknown.
pub fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Short host name of this node.
pub fn hostname() -> String {
    host_info().hostname
}

/// Describes the file system that holds `path` (the path must exist;
/// otherwise its nearest existing ancestor is described).
// statvfs fields are u64 on x86_64 but narrower elsewhere: keep u64::from.
#[allow(clippy::useless_conversion)]
pub fn fs_info(path: &Path) -> FsInfo {
    let probe = nearest_existing(path);
    let canon = probe.canonicalize().unwrap_or(probe.clone());
    let mut info = FsInfo {
        path: path.display().to_string(),
        ..Default::default()
    };
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        let mut best = 0usize;
        for line in text.lines() {
            if let Some(m) = parse_mountinfo_line(line) {
                let mp = Path::new(&m.0);
                if canon.starts_with(mp) && m.0.len() >= best {
                    best = m.0.len();
                    info.mount_point = m.0;
                    info.options = m.1;
                    info.fs_type = m.2;
                    info.source = m.3;
                }
            }
        }
    }
    if let Some(v) = statvfs(&canon) {
        // statvfs field types differ between targets; From widens them.
        let frsize = u64::from(if v.f_frsize > 0 {
            v.f_frsize
        } else {
            v.f_bsize
        });
        let (blocks, bfree) = (u64::from(v.f_blocks), u64::from(v.f_bfree));
        let (files, ffree) = (u64::from(v.f_files), u64::from(v.f_ffree));
        info.size_bytes = blocks * frsize;
        info.used_bytes = blocks.saturating_sub(bfree) * frsize;
        info.inodes = files;
        info.used_inodes = files.saturating_sub(ffree);
    }
    info
}

/// `path`, or its nearest ancestor that exists. A relative path is taken
/// from `.`: popping `nd2` (gone after the run that made it) gave the
/// empty path, which names no file system.
fn nearest_existing(path: &Path) -> std::path::PathBuf {
    let mut probe = match path.is_relative() {
        true => Path::new(".").join(path),
        false => path.to_path_buf(),
    };
    while !probe.exists() && probe.pop() {}
    probe
}

/// (mount point, options, fs type, source) of one mountinfo line, with
/// the kernel's octal escapes (`\040` for space) undone.
fn parse_mountinfo_line(line: &str) -> Option<(String, String, String, String)> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    if l.len() < 6 || r.len() < 3 {
        return None;
    }
    let opts = format!("{},{}", l[5], r[2]);
    Some((unescape(l[4]), opts, r[0].to_string(), unescape(r[1])))
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = (b[i] == b'\\' && i + 4 <= b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 4]).ok())
            .flatten()
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        match octal {
            Some(v) => {
                out.push(v);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True when `path` is on a file system mounted read-only (statvfs's
/// `ST_RDONLY`): nobody can write there, this process included.
pub fn read_only_fs(path: &Path) -> bool {
    statvfs(path).is_some_and(|v| v.f_flag & libc::ST_RDONLY != 0)
}

fn statvfs(p: &Path) -> Option<libc::statvfs> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data, for which all zeroes is valid.
    let mut v: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `v` a writable statvfs.
    (unsafe { libc::statvfs(c.as_ptr(), &mut v) } == 0).then_some(v)
}

/// `pid N (command line)` of the process holding a flock on `f`'s inode,
/// read from /proc/locks: what a refusal names when a file or directory
/// is locked by another run (xdd's end-to-end destination, qualify's
/// `--out`). None when no holder is listed.
pub fn flock_holder(f: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = f.metadata().ok()?;
    let (maj, min) = (libc::major(m.dev()), libc::minor(m.dev()));
    let want = format!("{maj:02x}:{min:02x}:{}", m.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid: u32 = locks.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        let at = w.iter().position(|x| x.eq_ignore_ascii_case(&want))?;
        if w.get(1) != Some(&"FLOCK") {
            return None;
        }
        w.get(at.checked_sub(1)?)?.parse().ok()
    })?;
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Some(format!("pid {pid} ({cmd})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_has_a_name_and_cpus() {
        let h = host_info();
        assert!(!h.hostname.is_empty());
        assert!(h.kernel.starts_with("Linux"));
        assert!(h.cpus >= 1);
        assert!(h.memory_bytes > 0);
    }

    #[test]
    fn root_fs_is_described() {
        let f = fs_info(Path::new("/proc/self"));
        assert_eq!(f.fs_type, "proc");
        let t = fs_info(Path::new("/"));
        assert_eq!(t.mount_point, "/");
        assert!(t.size_bytes > 0);
    }

    /// mdtest's `-d nd2`, relative and removed by the run, was described
    /// as `file system nd2 on  (, )`: its ancestors ran out at the empty
    /// path instead of `.`.
    #[test]
    fn a_missing_relative_path_is_described_by_the_working_directory() {
        let gone = fs_info(Path::new("iolab-no-such-dir/below"));
        let here = fs_info(Path::new("."));
        assert!(!here.mount_point.is_empty() && !here.fs_type.is_empty());
        assert_eq!(
            (gone.mount_point, gone.fs_type, gone.source, gone.size_bytes),
            (here.mount_point, here.fs_type, here.source, here.size_bytes)
        );
        assert_eq!(gone.path, "iolab-no-such-dir/below");
    }

    #[test]
    fn mountinfo_parsing_unescapes() {
        let l = "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 - ext4 /dev/sda1 rw,errors=continue";
        let (mp, opts, ty, src) = parse_mountinfo_line(l).unwrap();
        assert_eq!(mp, "/mnt/a b");
        assert_eq!(ty, "ext4");
        assert_eq!(src, "/dev/sda1");
        assert_eq!(opts, "rw,noatime,rw,errors=continue");
    }
}
