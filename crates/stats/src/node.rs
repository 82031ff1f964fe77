//! One node's collector: its run directory, the detached process that
//! samples into it, and the halt that stops it and packs what it wrote.
//! Everything here runs on the node itself (locally, or as the command
//! the remote shell starts).

use crate::archive;
use crate::collect::{self, Reader, Sink};
use crate::config::{Spec, Stat};
use crate::sample::Sample;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a collector stopped because its console is gone has to
/// write its last samples and end before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// The collector's pid, present while it runs.
pub const PID_FILE: &str = "collector.pid";
/// The collector's spec, for a halt that must take the stop samples itself.
pub const SPEC_FILE: &str = "spec.json";
/// The detached collector's standard error.
pub const LOG_FILE: &str = "collector.log";

/// How long start waits for a collector's first samples, and halt for
/// a collector to finish its last ones.
const SETTLE: Duration = Duration::from_secs(30);

/// The run directory of `node` under the configured `tmp`.
pub fn run_dir(tmp: &Path, node: &str) -> PathBuf {
    tmp.join("iolab-stats").join(node)
}

/// Why a node-side step failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A collector is already recording into this directory.
    #[error("a collector (pid {pid}) is already running in {dir}; stop it first")]
    Running {
        /// Its pid.
        pid: i32,
        /// The run directory.
        dir: String,
    },
    /// No collector was started here.
    #[error("no collector was started in {0}")]
    NotStarted(String),
    /// The collector ended before its first samples.
    #[error("the collector ended before its first samples: {0}")]
    Died(String),
    /// The shared parent of run directories is not this user's own.
    #[error("{0} is a link, another user's, or writable by others: iolab does not work in it (remove it, or set TMP to another directory)")]
    Unsafe(String),
    /// The run directory holds what no collector wrote; iolab keeps it
    /// and does not work beside it.
    #[error("{dir} holds {what}, which no iolab collector wrote there: iolab removes only its own files and does not record beside others' (move it away, or set TMP to another directory)")]
    Foreign {
        /// The run directory.
        dir: String,
        /// What is there (`notes.txt`, `a link x`...).
        what: String,
    },
    /// A file could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> NodeError {
    let path = path.display().to_string();
    move |source| NodeError::Io { what, path, source }
}

/// The pid in `dir`'s pid file, if it names a live collector. A pid the
/// system has given to another program since is not ours.
pub fn running_pid(dir: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(dir.join(PID_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    is_collector(pid, dir).then_some(pid)
}

/// True when `pid` is alive (not a zombie) and is the iolab stats
/// collector of `dir` (not one of another run).
fn is_collector(pid: i32, dir: &Path) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, r)| r.trim_start().chars().next());
    if matches!(state, Some('Z') | Some('X') | None) {
        return false;
    }
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
    let dir = dir.as_os_str().as_encoded_bytes();
    words.contains(&&b"stats"[..]) && words.contains(&&b"collect"[..]) && words.contains(&dir)
}

/// Makes a fresh run directory for `spec`, refusing one a live collector
/// still uses. What an earlier run left there (a stop that could not
/// write its tarball, a killed `stats run`) is removed, file by file,
/// and only that ([`own_files`]); a directory holding anything else is
/// refused ([`NodeError::Foreign`]) and left as it is.
pub fn prepare(dir: &Path, spec: &Spec) -> Result<(), NodeError> {
    if let Some(pid) = running_pid(dir) {
        return Err(NodeError::Running {
            pid,
            dir: dir.display().to_string(),
        });
    }
    if let Some(parent) = dir.parent() {
        private_dir(parent)?;
    }
    for name in own_files(dir)? {
        let p = dir.join(&name);
        std::fs::remove_file(&p).map_err(io("cannot remove", &p))?;
    }
    std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
    let json = serde_json::to_vec_pretty(spec).unwrap_or_default();
    std::fs::write(dir.join(SPEC_FILE), json).map_err(io("cannot write", dir))
}

/// Names a collector writes in its run directory: its pid file (and the
/// temporary one it renames), spec, log and notes, and a `.jsonl` or
/// `.absent` file per statistic.
fn collector_name(name: &str) -> bool {
    let fixed = [
        PID_FILE,
        "collector.pid.tmp",
        SPEC_FILE,
        LOG_FILE,
        archive::NOTES_FILE,
    ];
    fixed.contains(&name)
        || Stat::ALL
            .iter()
            .any(|s| name == archive::samples_file(*s) || name == archive::absent_file(*s))
}

/// The files an earlier collector left in `dir` (empty when it does not
/// exist), to be removed: regular files of this user's with a name a
/// collector writes, in a directory its spec shows a collector used. Err
/// ([`NodeError::Foreign`]) names the first thing that is not one: a
/// link, a directory, another user's file, another name, or a
/// collector's name with no spec beside it (a `notes.txt` of someone's).
/// Nothing is followed or changed.
pub fn own_files(dir: &Path) -> Result<Vec<std::ffi::OsString>, NodeError> {
    use std::os::unix::fs::MetadataExt;
    let foreign = |what: String| NodeError::Foreign {
        dir: dir.display().to_string(),
        what,
    };
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("cannot read", dir)(e)),
    };
    if !m.file_type().is_dir() {
        return Err(foreign("itself: it is not a directory".into()));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io("cannot read", dir))? {
        let e = e.map_err(io("cannot read", dir))?;
        let name = e.file_name();
        let m = std::fs::symlink_metadata(e.path()).map_err(io("cannot read", &e.path()))?;
        let shown = name.to_string_lossy().into_owned();
        if !m.file_type().is_file() {
            return Err(foreign(format!("{shown} (not a regular file)")));
        }
        if m.uid() != me {
            return Err(foreign(format!("{shown} (another user's)")));
        }
        if !collector_name(&shown) {
            return Err(foreign(shown));
        }
        names.push(name);
    }
    if !names.is_empty() && !names.iter().any(|n| n == SPEC_FILE) {
        let list: Vec<String> = names
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        return Err(foreign(format!(
            "{} (with no {SPEC_FILE}, so no collector ran there)",
            list.join(", ")
        )));
    }
    Ok(names)
}

/// Checks, creating nothing, that a collector can start in `dir`: its
/// parent passes [`check_base`], and whatever `dir` holds was left by a
/// collector ([`own_files`]). Run on every node before any collector
/// starts (`iolab stats check-node`).
pub fn check_dir(dir: &Path) -> Result<(), NodeError> {
    check_base(dir.parent().unwrap_or(dir))?;
    own_files(dir).map(drop)
}

/// Makes sure `dir` (TMP/iolab-stats, a name anyone can predict in a
/// shared TMP) is a directory of this user's that nobody else can write
/// in: made with mode 0700 when missing; a link, or a directory of
/// another user's or open to others, is refused. Run directories under
/// it are then out of others' reach, and nothing is followed.
fn private_dir(dir: &Path) -> Result<(), NodeError> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(up) = dir.parent() {
        std::fs::create_dir_all(up).map_err(io("cannot create", up))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("cannot create", dir)(e)),
    }
    check_base(dir)
}

/// Checks, creating nothing, that `base` (TMP/iolab-stats) can be worked
/// in: absent (it will be made 0700), or a directory of this user's that
/// nobody else can write in. A link or another user's directory is
/// [`NodeError::Unsafe`], naming it; run before any collector starts.
pub fn check_base(base: &Path) -> Result<(), NodeError> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::symlink_metadata(base) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("cannot read", base)(e)),
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(NodeError::Unsafe(base.display().to_string()));
    }
    Ok(())
}

/// The note halt writes when the collector was gone before the stop; a
/// node whose record has it failed (its samples stop where it died).
pub const NOT_RUNNING_NOTE: &str =
    "the collector was not running at stop (killed?); the stop samples were taken by the halt";

/// Starts `exe stats collect` on this node, detached (its own process
/// group, no terminal, output to the log), and returns its pid once its
/// start samples are on disk.
pub fn detach(exe: &Path, dir: &Path, spec: &Spec) -> Result<u32, NodeError> {
    spawn_collector(exe, dir, spec).map(|c| c.id())
}

/// Starts the collector as [`detach`] does, calls `ready` with its pid
/// once the start samples are on disk, then stays until it ends: the
/// command the remote shell runs lives as long as the collector, for a
/// remote shell that kills what it started when its command returns (a
/// Slurm step under proctrack/cgroup). Once `stop` says so (the console
/// that started it is gone: `stats run` tethers its collectors), the
/// collector is stopped with SIGTERM, then SIGKILL after [`STOP_GRACE`].
pub fn foreground(
    exe: &Path,
    dir: &Path,
    spec: &Spec,
    ready: impl FnOnce(u32),
    stop: &dyn Fn() -> bool,
) -> Result<(), NodeError> {
    let mut child = spawn_collector(exe, dir, spec)?;
    ready(child.id());
    let waited = || io("cannot wait for the collector in", dir);
    let mut asked: Option<Instant> = None;
    let st = loop {
        if let Some(st) = child.try_wait().map_err(waited())? {
            break st;
        }
        match asked {
            None if stop() => {
                // SAFETY: kill(2) on the collector this function started.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                asked = Some(Instant::now());
            }
            Some(t) if t.elapsed() > STOP_GRACE => {
                let _ = child.kill();
                child.wait().map_err(waited())?;
                return Ok(());
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if asked.is_some() {
        return Ok(());
    }
    match st.success() {
        true => Ok(()),
        false => {
            let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
            Err(NodeError::Died(format!("{st}: {}", log.trim())))
        }
    }
}

fn spawn_collector(exe: &Path, dir: &Path, spec: &Spec) -> Result<std::process::Child, NodeError> {
    use std::os::unix::process::CommandExt;
    prepare(dir, spec)?;
    let log = File::create(dir.join(LOG_FILE)).map_err(io("cannot create", dir))?;
    let mut child = std::process::Command::new(exe)
        .args(["stats", "collect", "--dir"])
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(io("cannot start", exe))?;
    let until = Instant::now() + SETTLE;
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
            return Err(NodeError::Died(format!("{st}: {}", log.trim())));
        }
        if running_pid(dir) == Some(child.id() as i32) {
            return Ok(child);
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(NodeError::Died(format!(
                "no start samples within {SETTLE:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A [`Sink`] appending JSON lines to the run directory, flushed per
/// sample so a killed collector loses at most the line it was writing.
struct Files {
    dir: PathBuf,
}

impl Files {
    fn append(&self, name: String, bytes: &[u8]) -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(name))?;
        f.write_all(bytes)
    }
}

impl Sink for Files {
    fn absent(&mut self, stat: Stat, why: &str) -> std::io::Result<()> {
        self.append(archive::absent_file(stat), format!("{why}\n").as_bytes())
    }

    fn sample(&mut self, stat: Stat, sample: &Sample) -> std::io::Result<()> {
        self.append(archive::samples_file(stat), &archive::sample_line(sample))
    }

    fn note(&mut self, text: &str) -> std::io::Result<()> {
        self.append(archive::NOTES_FILE.into(), format!("{text}\n").as_bytes())
    }
}

/// The detached collector's body: reads the spec from `dir`, records
/// until `stop()`, writes the pid file once the start samples are in and
/// removes it after the stop samples.
pub fn collect(dir: &Path, stop: &dyn Fn() -> bool) -> Result<(), NodeError> {
    let spec_path = dir.join(SPEC_FILE);
    let text = std::fs::read(&spec_path).map_err(io("cannot read", &spec_path))?;
    let spec: Spec = serde_json::from_slice(&text).map_err(|e| NodeError::Io {
        what: "bad spec in",
        path: spec_path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    let reader = Reader::new(spec);
    let mut sink = Files {
        dir: dir.to_path_buf(),
    };
    let pid_path = dir.join(PID_FILE);
    let mut pid_err = None;
    let mut started = || {
        let tmp = dir.join("collector.pid.tmp");
        let r = std::fs::write(&tmp, std::process::id().to_string())
            .and_then(|_| std::fs::rename(&tmp, &pid_path));
        pid_err = r.err();
    };
    let r = collect::run(&reader, &mut sink, stop, &mut started);
    let _ = std::fs::remove_file(&pid_path);
    if let Some(e) = pid_err {
        return Err(NodeError::Io {
            what: "cannot write",
            path: pid_path.display().to_string(),
            source: e,
        });
    }
    r.map_err(io("cannot record into", dir))
}

/// Stops the collector recording in `dir` (SIGTERM, then SIGKILL if it
/// has not finished within a while), takes the stop samples itself when
/// the collector was already gone, packs the directory as a tar and
/// removes it.
pub fn halt(dir: &Path) -> Result<Vec<u8>, NodeError> {
    if !dir.join(SPEC_FILE).exists() {
        return Err(NodeError::NotStarted(dir.display().to_string()));
    }
    let mut notes = Vec::new();
    match running_pid(dir) {
        Some(pid) => {
            if !terminate(pid, dir) {
                notes.push(format!(
                    "the collector (pid {pid}) did not stop within {SETTLE:?} and was killed"
                ));
            }
        }
        None => notes.push(NOT_RUNNING_NOTE.to_string()),
    }
    if running_pid(dir).is_none() && !notes.is_empty() {
        // A full TMP must not cost the samples that did fit.
        if let Err(e) = stop_samples(dir) {
            notes.push(format!(
                "the stop samples could not be written ({e}); the samples written before are kept"
            ));
        }
    }
    // The notes travel in the tar, not through a file a full TMP refuses.
    let mut text = std::fs::read(dir.join(archive::NOTES_FILE)).unwrap_or_default();
    for n in &notes {
        text.extend_from_slice(n.as_bytes());
        text.push(b'\n');
    }
    let skip = [
        PID_FILE,
        SPEC_FILE,
        "collector.pid.tmp",
        archive::NOTES_FILE,
    ];
    let extra = [(archive::NOTES_FILE, text)];
    let extra = if extra[0].1.is_empty() {
        &[][..]
    } else {
        &extra[..]
    };
    archive::tar_dir(dir, &skip, extra).map_err(io("cannot pack", dir))
}

/// Removes a halted collector's run directory, once its record is safe
/// in the tarball; a directory with a live collector, or that no
/// collector used, is left alone. Only the collector's own files go
/// ([`collector_name`], regular files of this user's); anything put
/// there since is kept, with the directory, and named in the error.
pub fn forget(dir: &Path) -> Result<(), NodeError> {
    use std::os::unix::fs::MetadataExt;
    if !dir.join(SPEC_FILE).exists() {
        return Err(NodeError::NotStarted(dir.display().to_string()));
    }
    if let Some(pid) = running_pid(dir) {
        return Err(NodeError::Running {
            pid,
            dir: dir.display().to_string(),
        });
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut kept = Vec::new();
    for e in std::fs::read_dir(dir)
        .map_err(io("cannot read", dir))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = std::fs::symlink_metadata(e.path())
            .is_ok_and(|m| m.file_type().is_file() && m.uid() == me)
            && collector_name(&name);
        match ours {
            true => std::fs::remove_file(e.path()).map_err(io("cannot remove", &e.path()))?,
            false => kept.push(name),
        }
    }
    if !kept.is_empty() {
        return Err(NodeError::Foreign {
            dir: dir.display().to_string(),
            what: kept.join(", "),
        });
    }
    std::fs::remove_dir(dir).map_err(io("cannot remove", dir))?;
    // TMP/iolab-stats itself goes too once no node's run is left in it
    // (remove_dir removes only an empty directory).
    if let Some(parent) = dir.parent().filter(|p| p.ends_with("iolab-stats")) {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(())
}

/// SIGTERM and wait for the collector to go; SIGKILL after [`SETTLE`].
/// True when it ended by itself.
fn terminate(pid: i32, dir: &Path) -> bool {
    // SAFETY: kill has no memory effects; `pid` was checked to be our
    // collector just before.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let until = Instant::now() + SETTLE;
    while is_collector(pid, dir) {
        if Instant::now() >= until {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// One more sample of every statistic that has samples (a killed
/// collector never took its stop samples).
fn stop_samples(dir: &Path) -> Result<(), NodeError> {
    let spec_path = dir.join(SPEC_FILE);
    let text = std::fs::read(&spec_path).map_err(io("cannot read", &spec_path))?;
    let Ok(spec) = serde_json::from_slice::<Spec>(&text) else {
        return Ok(());
    };
    let reader = Reader::new(spec.clone());
    let mut sink = Files {
        dir: dir.to_path_buf(),
    };
    for stat in spec.intervals.keys() {
        if dir.join(archive::samples_file(*stat)).exists() {
            let s = reader.sample(*stat).map_err(io("cannot sample", dir))?;
            sink.sample(*stat, &s)
                .map_err(io("cannot record into", dir))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_collectors_own_files_are_taken_for_its() {
        let dir = std::env::temp_dir().join(format!("iolab-node-own-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(own_files(&dir).unwrap().is_empty(), "absent: nothing");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        let e = own_files(&dir).unwrap_err().to_string();
        assert!(e.contains("notes.txt") && e.contains("no spec.json"), "{e}");
        std::fs::write(dir.join(SPEC_FILE), "{}").unwrap();
        std::fs::write(dir.join("disk.jsonl"), "").unwrap();
        assert_eq!(own_files(&dir).unwrap().len(), 3);
        std::os::unix::fs::symlink("/etc/passwd", dir.join("cpu.absent")).unwrap();
        let e = own_files(&dir).unwrap_err().to_string();
        assert!(e.contains("cpu.absent (not a regular file)"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
