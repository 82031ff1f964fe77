//! From xddcp's command line to a checked plan: which files go where,
//! how many bytes each, over which address and ports, through which
//! remote shell. Everything that can be checked here is, before any
//! process starts or any file is created.

use iolab_launch::RemoteShell;
use iolab_net::SharedKey;
use std::path::{Path, PathBuf};

/// The first port when `-p` does not say (XDD's xddcp default).
pub const DEFAULT_BASE_PORT: u16 = 40010;
/// QThreads when `-t` does not say (XDD's xddcp default).
pub const DEFAULT_THREADS: u32 = 8;
/// Most QThreads a copy may use (xdd's limit per target).
pub const MAX_THREADS: u32 = 4096;
/// Bytes per request: 1 MiB (`-reqsize 1024` of 1024-byte blocks).
pub const REQUEST_BYTES: u64 = 1 << 20;
/// Port ranges tried with `-f` before giving up.
pub const PORT_TRIES: u32 = 10;

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `-a`: keep a restart file; rerunning the same command resumes.
    pub restart: bool,
    /// `-d`: direct I/O on the destination.
    pub dio_destination: bool,
    /// `-s`: direct I/O on the source.
    pub dio_source: bool,
    /// `-f`: ports in use on the destination: try the next range.
    pub next_free_ports: bool,
    /// `-F`: the source names a file listing the files to copy.
    pub file_list: bool,
    /// `-p`: first port.
    pub base_port: Option<u16>,
    /// `-o`: write in order on the destination.
    pub ordered: bool,
    /// `--force`: write a block device destination that looks in use (a
    /// file system on it), as `xdd -force`.
    pub force: bool,
    /// `-t`: QThreads on each side.
    pub threads: Option<u32>,
    /// `-v`: log files, and time stamp files on both sides.
    pub verbose: bool,
    /// `-w`: as `-v`, plus binary time stamp dumps.
    pub dumps: bool,
    /// `--rsh`: the remote shell (else IOLAB_RSH, else ssh).
    pub rsh: Option<String>,
    /// `--remote-iolab`: the iolab program on the destination host.
    pub remote_iolab: Option<String>,
    /// `--key`: shared key file for the handshake, read here and handed
    /// to both sides (else IOLAB_KEY_FILE, else a fresh one-time key).
    pub key: Option<String>,
    /// `--timeout`: seconds every wait for the other side is bounded by.
    pub timeout_s: Option<f64>,
    /// `source_file` (with `-F`: the file of names).
    pub source: PathBuf,
    /// `[shellhost@]destination_host:destination_file` (with `-F`: a
    /// directory).
    pub destination: String,
    /// `size`: bytes to copy (default: the source file's size).
    pub size: Option<String>,
    /// Report the bytes moved while a copy runs (the CLI asks for it on a
    /// terminal): the source side writes a heartbeat file that is read.
    pub progress: bool,
}

/// One file to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The local source file.
    pub source: PathBuf,
    /// The destination file on the destination host.
    pub destination: String,
    /// Bytes to copy.
    pub bytes: u64,
    /// The name the destination side builds the copy under until it is
    /// complete (`-e2e partial`): with `-a` `DESTINATION.partial`, which
    /// the next run resumes; else a name of this run's own
    /// (`DESTINATION.partial-XXXXXXXX`, random), so that what a killed
    /// destination side left there can only be this run's.
    pub partial: String,
}

/// The name the copy to `destination` is built under: see
/// [`Job::partial`].
fn partial_name(destination: &str, restart: bool) -> Result<String, PlanError> {
    if restart {
        return Ok(format!("{destination}.partial"));
    }
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).map_err(|e| {
        bad(
            "xddcp",
            format!("no random source for a temporary name: {e}"),
        )
    })?;
    Ok(format!(
        "{destination}.partial-{:08x}",
        u32::from_le_bytes(b)
    ))
}

/// A checked copy, ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Files, in order.
    pub jobs: Vec<Job>,
    /// The name the remote shell reaches the destination host by.
    pub shell_host: String,
    /// The destination's address for the data (`-e2e destination`).
    pub addr: String,
    /// First port.
    pub base_port: u16,
    /// QThreads on each side.
    pub threads: u32,
    /// The remote shell.
    pub rsh: RemoteShell,
    /// This iolab, which runs the source side.
    pub local_iolab: PathBuf,
    /// The iolab that runs the destination side.
    pub remote_iolab: String,
    /// Seconds every wait for the other side is bounded by.
    pub timeout_s: f64,
    /// The key both sides prove on every connection: the user's, or one
    /// made for this run. It reaches them on their standard input.
    pub key: SharedKey,
    /// True when the key is the user's (`--key`, IOLAB_KEY_FILE).
    pub user_key: bool,
    /// The options as given.
    pub opts: Options,
    /// The run's cancellation token (the session's, set by the caller;
    /// a plan of its own reads the process's stop flag): every wait on
    /// either side ends with it.
    pub cancel: iolab_core::CancelToken,
    /// The caller streams live figures at this interval (seconds): each
    /// source side samples at it and sends the caller its intervals
    /// ([`crate::run::Hooks::live`]). Set by the caller.
    pub live: Option<f64>,
}

/// A command line that cannot run: the option at fault and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {message}")]
pub struct PlanError {
    /// The option or argument at fault (`-t`, `size`, `source_file`...).
    pub option: String,
    /// What is wrong and what to do.
    pub message: String,
}

fn bad(option: &str, message: impl Into<String>) -> PlanError {
    PlanError {
        option: option.to_string(),
        message: message.into(),
    }
}

/// Splits `[shellhost@]host:path`; an IPv6 host goes in brackets.
pub fn split_destination(d: &str) -> Result<(String, String, String), PlanError> {
    let want = "give destination_host:destination_file (or shellhost@address:file)";
    let (shell, rest) = match d.split_once('@') {
        Some((s, r)) if !s.is_empty() && !s.contains(':') && !s.contains('/') => {
            (Some(s.to_string()), r)
        }
        _ => (None, d),
    };
    let (host, path) = if let Some(r) = rest.strip_prefix('[') {
        let (h, after) = r
            .split_once(']')
            .ok_or_else(|| bad("destination", format!("'{d}': no ']' ({want})")))?;
        let p = after.strip_prefix(':').ok_or_else(|| {
            bad(
                "destination",
                format!("'{d}': no ':' after the host ({want})"),
            )
        })?;
        (h.to_string(), p.to_string())
    } else {
        let (h, p) = rest
            .split_once(':')
            .ok_or_else(|| bad("destination", format!("'{d}': no ':' ({want})")))?;
        (h.to_string(), p.to_string())
    };
    if host.is_empty() || path.is_empty() {
        return Err(bad("destination", format!("'{d}': {want}")));
    }
    Ok((shell.unwrap_or_else(|| host.clone()), host, path))
}

/// Checks the options and makes the plan.
pub fn plan(o: &Options) -> Result<Plan, PlanError> {
    let threads = o.threads.unwrap_or(DEFAULT_THREADS);
    if !(1..=MAX_THREADS).contains(&threads) {
        return Err(bad(
            "-t",
            format!("{threads} threads: give 1 to {MAX_THREADS}"),
        ));
    }
    let base_port = o.base_port.unwrap_or(DEFAULT_BASE_PORT);
    let tries = if o.next_free_ports { PORT_TRIES } else { 1 };
    if base_port == 0 {
        return Err(bad(
            "-p",
            "port 0 is no base port: give one from 1 to 65535",
        ));
    }
    if u64::from(base_port) + u64::from(threads) * u64::from(tries) > 65_536 {
        return Err(bad(
            "-p",
            format!("ports {base_port} and up cannot hold {tries} range(s) of {threads}; choose a lower base port"),
        ));
    }
    let timeout_s = o.timeout_s.unwrap_or(120.0);
    if !(timeout_s > 0.0 && timeout_s <= 1e6) {
        return Err(bad("--timeout", "give a number of seconds above 0"));
    }
    let (shell_host, addr, dest) = split_destination(&o.destination)?;
    let jobs = jobs(o, &dest)?;
    let (key, user_key) = key(o)?;
    let rsh = RemoteShell::resolve(o.rsh.as_deref()).map_err(|e| bad("--rsh", e.to_string()))?;
    let local_iolab = std::env::current_exe()
        .map_err(|e| bad("xddcp", format!("cannot find this program: {e}")))?;
    let remote_iolab = o
        .remote_iolab
        .clone()
        .unwrap_or_else(|| local_iolab.display().to_string());
    Ok(Plan {
        jobs,
        shell_host,
        addr,
        base_port,
        threads,
        rsh,
        local_iolab,
        remote_iolab,
        timeout_s,
        key,
        user_key,
        opts: o.clone(),
        cancel: iolab_core::CancelToken::process(),
        live: None,
    })
}

/// The key of the run: the user's file (`--key`, else IOLAB_KEY_FILE),
/// else a fresh random one. iolab starts both sides, so it can prove
/// every connection without asking anything of the user (as Slurm's
/// MUNGE credential proves each step it launches).
fn key(o: &Options) -> Result<(SharedKey, bool), PlanError> {
    match SharedKey::resolve(o.key.as_deref().map(Path::new)) {
        Ok(Some(k)) => Ok((k, true)),
        Ok(None) => SharedKey::random()
            .map(|k| (k, false))
            .map_err(|e| bad("--key", e.to_string())),
        Err(e) => Err(bad("--key", e.to_string())),
    }
}

/// The files to copy: one, or (`-F`) every name in the list file, each
/// to the destination directory under its own base name.
fn jobs(o: &Options, dest: &str) -> Result<Vec<Job>, PlanError> {
    let dio = o.dio_source || o.dio_destination;
    if !o.file_list {
        let bytes = bytes_of(
            &o.source,
            o.size.as_deref(),
            o.dio_source,
            dio,
            "source_file",
        )?;
        return Ok(vec![Job {
            source: absolute(&o.source),
            destination: dest.to_string(),
            bytes,
            partial: partial_name(dest, o.restart)?,
        }]);
    }
    if o.size.is_some() {
        return Err(bad(
            "size",
            "with -F each file is copied whole; drop the size",
        ));
    }
    // A list of names: about a million fit.
    let list = iolab_core::input::read_text(&o.source, 64 << 20).map_err(|e| {
        bad(
            "-F",
            format!("cannot read the file list {}: {e}", o.source.display()),
        )
    })?;
    let mut out = Vec::new();
    for name in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let source = PathBuf::from(name);
        let base = source
            .file_name()
            .ok_or_else(|| bad("-F", format!("'{name}' names no file")))?
            .to_string_lossy()
            .into_owned();
        let bytes = bytes_of(&source, None, o.dio_source, dio, "-F")?;
        let destination = format!("{}/{base}", dest.trim_end_matches('/'));
        let partial = partial_name(&destination, o.restart)?;
        if out.iter().any(|j: &Job| j.destination == destination) {
            return Err(bad(
                "-F",
                format!("two files would be copied to {destination}"),
            ));
        }
        out.push(Job {
            source: absolute(&source),
            destination,
            bytes,
            partial,
        });
    }
    if out.is_empty() {
        return Err(bad("-F", format!("{} names no file", o.source.display())));
    }
    Ok(out)
}

/// The source's one name (symbolic links and `.` resolved): the source
/// side sends it and a restart record keeps it, so `a`, `./a` and
/// `/dir/a` resume the same copy. (It exists: [`bytes_of`] opened it.)
fn absolute(source: &Path) -> PathBuf {
    std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf())
}

/// Bytes to copy from `source`: `size` when given (no more than the
/// file or block device holds), else the whole of it; never 0, and a
/// multiple of 512 under direct I/O (`dio`, either side). A character
/// device (`/dev/zero`) has no length: it needs a size, and takes no
/// direct I/O on the source side (`dio_source`), as XDD's xddcp says.
fn bytes_of(
    source: &Path,
    size: Option<&str>,
    dio_source: bool,
    dio: bool,
    what: &str,
) -> Result<u64, PlanError> {
    use std::os::unix::fs::FileTypeExt;
    let shown = source.display();
    let meta =
        std::fs::metadata(source).map_err(|e| bad(what, format!("cannot read {shown}: {e}")))?;
    let kind = meta.file_type();
    // Before it is opened: opening a pipe waits for its writer.
    if !(meta.is_file() || kind.is_char_device() || kind.is_block_device()) {
        return Err(bad(
            what,
            format!("{shown} is not a file or a device (a directory, a pipe or a socket)"),
        ));
    }
    let mut f =
        std::fs::File::open(source).map_err(|e| bad(what, format!("cannot open {shown}: {e}")))?;
    let holds = if kind.is_char_device() {
        if size.is_none() {
            return Err(bad(what, format!("{shown} is a character device, which has no length: give the bytes to copy (size)")));
        }
        if dio_source {
            return Err(bad(
                "-s",
                format!("{shown} is a character device, which takes no direct I/O: drop -s"),
            ));
        }
        None
    } else if kind.is_block_device() {
        // A block device's length is where its end is.
        let end = std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0))
            .map_err(|e| bad(what, format!("cannot find the size of {shown}: {e}")))?;
        Some(end)
    } else {
        Some(meta.len())
    };
    let bytes = match size {
        None => holds.unwrap_or(0),
        Some(s) => {
            let n =
                iolab_core::units::parse_size(s).map_err(|e| bad("size", format!("'{s}': {e}")))?;
            if let Some(h) = holds.filter(|h| n > *h) {
                return Err(bad(
                    "size",
                    format!("{n} bytes is more than {shown} holds ({h})"),
                ));
            }
            n
        }
    };
    if bytes == 0 {
        return Err(bad(what, format!("{shown}: nothing to copy (0 bytes)")));
    }
    if dio && bytes % 512 != 0 {
        return Err(bad(
            if size.is_some() { "size" } else { "-d/-s" },
            format!("{shown}: {bytes} bytes is not a multiple of 512, which direct I/O needs; drop -d/-s"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_split_into_shell_host_address_and_path() {
        let s = |d: &str| split_destination(d).unwrap();
        assert_eq!(s("h:/x/y"), ("h".into(), "h".into(), "/x/y".into()));
        assert_eq!(
            s("ns1@10.0.0.2:/d:e"),
            ("ns1".into(), "10.0.0.2".into(), "/d:e".into())
        );
        assert_eq!(s("[::1]:f"), ("::1".into(), "::1".into(), "f".into()));
        for bad in ["h", "h:", ":f", "[::1", "[::1]f"] {
            assert!(split_destination(bad).is_err(), "{bad}");
        }
    }
}
