//! Data-path helpers shared by the bandwidth surveys: opening with
//! O_DIRECT when the file system allows it, whole-record reads and writes
//! through the backend, and write data that no store can compress or
//! deduplicate ([`WriteData`]).

use iolab_backend::loops::{self, Backing};
use iolab_backend::{Backend, Handle, OpenOptions};
use std::ffi::CStr;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

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

/// What a survey pass writes: iolab's unique incompressible data
/// (`iolab_core::unique`, as xdd writes by default). Each writer's
/// aligned buffer holds a random base repeating no closer than 1 MiB
/// (filled before the clock starts); a record at file offset X is the
/// window of the buffer at X modulo that period, with every 4 KiB of it
/// stamped in place with its file offset and a tag of the run, the file
/// and the pass. No two 4 KiB blocks a survey writes are equal, so a
/// compressing or deduplicating store keeps all of them, and the hot
/// loop copies nothing.
pub struct WriteData {
    shape: iolab_core::unique::Shape,
    pass: u32,
}

impl WriteData {
    /// The data of a new pass writing records of `record_bytes`.
    pub fn new(record_bytes: usize) -> Self {
        Self {
            shape: iolab_core::unique::Shape::new(0, 0, record_bytes),
            pass: PASS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Bytes of a writer's buffer for records of `record_bytes`.
    pub fn buffer_len(&self, record_bytes: usize) -> usize {
        self.shape.buffer_len(record_bytes)
    }

    /// Fills a writer's buffer with the base (before the clock starts).
    pub fn fill(&self, buf: &mut [u8]) {
        self.shape.fill(buf);
    }

    /// Stamps the `len`-byte record at `offset` of file `file` (a number
    /// unique within the pass: device, object or target) in `buf` (filled
    /// by [`WriteData::fill`]) and returns where in `buf` it starts.
    #[inline]
    pub fn place(&self, buf: &mut [u8], file: u64, offset: u64, len: usize) -> usize {
        let tag = iolab_core::unique::tag(run_key() ^ file.rotate_left(32), 0, self.pass);
        self.shape.place(buf, offset, len, tag)
    }
}

/// Passes of this process so far: each pass's blocks carry its number.
static PASS: AtomicU32 = AtomicU32::new(0);

/// A number of this run (process), so that two runs' blocks differ too.
fn run_key() -> u64 {
    static KEY: OnceLock<u64> = OnceLock::new();
    *KEY.get_or_init(|| {
        iolab_core::random::mix(iolab_core::clock::wall_ns() ^ u64::from(std::process::id()) << 40)
    })
}

/// The error of a survey that needs what backend `b` lacks: names the
/// backend, what the survey does that needs it, and the fix.
pub fn lacks(b: &dyn Backend, does: &str, fix: &str) -> crate::ParamError {
    crate::ParamError::new(
        "backend",
        format!("{does}, which the {} backend cannot; {fix}", b.name()),
    )
}

/// A C path for the backend.
pub fn cpath(p: &std::path::Path) -> io::Result<std::ffi::CString> {
    iolab_backend::c_path(p)
}

/// Checks that `targets` is not empty and that each is a directory the
/// backend can see and make files in; the error names `targets` and
/// the path.
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
    // A sink has nothing to look at: every name is whatever it is asked to be.
    if b.capabilities().discards {
        return Ok(());
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
        // Every survey of directories makes its files in them: one that
        // cannot take a file (a read-only mount, no permission) is
        // refused now, not after the result files are made.
        let writable = cpath(t).and_then(|c| b.can_write(&c));
        if !writable.unwrap_or(true) {
            return Err(crate::ParamError::new(
                "targets",
                format!("{shown}: this process cannot create files in it (a read-only file system, or no write permission)"),
            ));
        }
    }
    Ok(())
}

/// What a target is, to find one given twice: a block device by its
/// number, a file or directory by its file system and inode (links
/// resolved, as stat resolves them), else its name without `.` parts or
/// a trailing `/` (a sink's or a store's names, a path not there yet).
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Device(u64),
    Inode(u64, u64),
    Name(std::path::PathBuf),
}

fn identity(b: &dyn Backend, p: &std::path::Path) -> Identity {
    if !b.capabilities().discards {
        if let Ok(st) = cpath(p).and_then(|c| b.stat(&c)) {
            if st.is_block_device {
                return Identity::Device(st.rdev);
            }
            if st.dev != 0 || st.ino != 0 {
                return Identity::Inode(st.dev, st.ino);
            }
        }
    }
    Identity::Name(p.components().collect())
}

/// Refuses a target given twice (the same device, file or directory
/// under two names counts): it would be written by two sets of workers
/// at once, or claimed twice. `tags` (one per target, such as a Lustre
/// MDT index) tell apart targets that share a path on purpose. The
/// error names `option` and both spellings.
pub fn distinct_targets(
    b: &dyn Backend,
    option: &str,
    targets: &[std::path::PathBuf],
    tags: Option<&[u32]>,
) -> Result<(), crate::ParamError> {
    let mut seen: Vec<(Identity, Option<u32>, &std::path::Path)> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let key = (identity(b, t), tags.and_then(|g| g.get(i).copied()));
        if let Some((_, _, first)) = seen
            .iter()
            .find(|(id, tag, _)| (id, tag) == (&key.0, &key.1))
        {
            let (a, z) = (first.display(), t.display());
            let names = match a.to_string() == z.to_string() {
                true => format!("{z} is given twice"),
                false => format!("{a} and {z} are the same target"),
            };
            return Err(crate::ParamError::new(
                option,
                format!("{names}: give each target once"),
            ));
        }
        seen.push((key.0, key.1, t));
    }
    if b.capabilities().local {
        no_shared_storage(option, targets)?;
    }
    Ok(())
}

/// Stacked devices followed at most this deep (a loop device on a loop
/// device on a partition...).
const MAX_STACK: usize = 8;

/// A target as storage: what it is, and what it is built on, nearest
/// first (a partition's whole disk; a loop device's backing file or
/// device, with the bytes of it the loop device maps).
struct Storage {
    is: Backing,
    on: Vec<(Backing, Option<loops::Mapping>)>,
}

fn storage(p: &std::path::Path) -> Option<Storage> {
    let is = loops::identity(&std::fs::metadata(p).ok()?)?;
    let mut on = Vec::new();
    let mut at = is;
    while on.len() < MAX_STACK {
        let Backing::Device(rdev) = at else { break };
        let next = match whole_disk(rdev) {
            Some(disk) => (Backing::Device(disk), None),
            None => match device_node(rdev).and_then(|d| loops::mapping(&d)) {
                Some(m) => (m.backing, Some(m)),
                None => break,
            },
        };
        on.push(next);
        at = next.0;
    }
    Some(Storage { is, on })
}

/// The whole disk of partition `rdev`, by sysfs; None when `rdev` is no
/// partition.
fn whole_disk(rdev: u64) -> Option<u64> {
    let sys = format!("/sys/dev/block/{}:{}", libc::major(rdev), libc::minor(rdev));
    let sys = std::path::Path::new(&sys);
    if !sys.join("partition").exists() {
        return None;
    }
    let parent = std::fs::canonicalize(sys).ok()?.parent()?.join("dev");
    let text = std::fs::read_to_string(parent).ok()?;
    let (maj, min) = text.trim().split_once(':')?;
    Some(libc::makedev(maj.parse().ok()?, min.parse().ok()?))
}

/// `/dev/NAME` of block device `rdev`, by its sysfs uevent.
fn device_node(rdev: u64) -> Option<std::path::PathBuf> {
    let uevent = format!(
        "/sys/dev/block/{}:{}/uevent",
        libc::major(rdev),
        libc::minor(rdev)
    );
    let text = std::fs::read_to_string(uevent).ok()?;
    let name = text.lines().find_map(|l| l.strip_prefix("DEVNAME="))?;
    Some(std::path::Path::new("/dev").join(name))
}

/// True when `a` and `b` may write the same bytes: one is built on the
/// other (a partition on its disk, a loop device on its file), or both
/// are loop devices mapping overlapping bytes of one backing.
fn overlap(a: &Storage, b: &Storage) -> bool {
    let under = |x: &Storage, y: &Storage| x.on.iter().any(|(s, _)| *s == y.is);
    if under(a, b) || under(b, a) {
        return true;
    }
    let direct = |x: &Storage| x.on.first().and_then(|(_, m)| *m);
    match (direct(a), direct(b)) {
        (Some(m), Some(n)) if m.backing == n.backing => {
            let end = |m: loops::Mapping| m.len.map_or(u64::MAX, |l| m.offset.saturating_add(l));
            m.offset < end(n) && n.offset < end(m)
        }
        _ => false,
    }
}

/// Refuses two targets that are one storage under two devices or files
/// (a disk and its partition, an image file and a loop device over it):
/// both would be written by two sets of workers and counted twice.
/// `--force` does not lift this: it is a wrong measurement, not a risk
/// taken.
fn no_shared_storage(
    option: &str,
    targets: &[std::path::PathBuf],
) -> Result<(), crate::ParamError> {
    let found: Vec<(usize, Storage)> = targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some((i, storage(t)?)))
        .collect();
    for (k, (i, a)) in found.iter().enumerate() {
        if let Some((j, _)) = found[k + 1..].iter().find(|(_, b)| overlap(a, b)) {
            return Err(crate::ParamError::new(
                option,
                format!(
                    "{} and {} share storage (one is built on the other, or both map the same bytes): the same bytes would be written twice and counted twice; give each storage once",
                    targets[*i].display(),
                    targets[*j].display()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_written_blocks_are_equal() {
        let d = WriteData::new(8192);
        let mut seen = std::collections::HashSet::new();
        let mut buf = vec![0u8; d.buffer_len(8192)];
        d.fill(&mut buf);
        for file in 0..2 {
            for i in 0..300u64 {
                let at = d.place(&mut buf, file, i * 8192, 8192);
                for b in buf[at..at + 8192].chunks(4096) {
                    assert!(seen.insert(b.to_vec()), "file {file} record {i}");
                }
            }
        }
        let e = WriteData::new(8192);
        let at = e.place(&mut buf, 0, 0, 8192);
        assert!(
            seen.insert(buf[at..at + 4096].to_vec()),
            "a second pass repeats the first"
        );
    }
}
