//! Running a plan, one file after another: start the destination side
//! through the remote shell and wait until it listens (with `-f`, on the
//! next port range when this one is taken), run the source side here,
//! then collect both ends. Nothing is printed; each file's result is
//! handed to the caller as soon as it is known.

use crate::args;
pub use crate::leftover::{Cleanup, Left};
use crate::plan::{Job, Plan, PORT_TRIES};
use iolab_launch::{Remote, WaitError};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// Exit status of a side that was interrupted (Ctrl-C, SIGTERM).
pub const INTERRUPTED: u8 = 130;

/// The name of a copy's private temporary directory, before its random
/// part (`TMPDIR/iolab-xddcp-XXXXXX`).
pub const TMP_PREFIX: &str = "iolab-xddcp";

/// The environment variable through which xddcp asks its source side
/// for its live intervals: a file in the copy's private directory, which
/// the source side creates (never one that exists) and to which it
/// appends each interval as one JSON line.
pub const LIVE_FORWARD_ENV: &str = "IOLAB_LIVE_FORWARD";

/// The environment variable that tells a source side the interval, in
/// seconds, at which to sample what it forwards (xddcp's
/// `--live-interval`): its rows would otherwise be its default second's,
/// and a second's operations would land in one of xddcp's intervals.
pub const LIVE_INTERVAL_ENV: &str = "IOLAB_LIVE_FORWARD_INTERVAL";

/// What xddcp tells its caller as the copies go.
pub struct Hooks<'a> {
    /// The bytes a copy has moved so far, a few times a second (with
    /// `opts.progress`).
    pub moving: &'a dyn Fn(&Job, u64),
    /// With [`Plan::live`]: each live interval the source side of file
    /// `i` sent (`Some`, one JSON line), and `None` once that side has
    /// ended and every interval it sent was handed on.
    pub live: &'a dyn Fn(usize, Option<&[u8]>),
}

/// Removes the private temporary directories that xddcp runs killed
/// with kill -9 left (their owner gone: [`iolab_core::tmp::remove_stale`]),
/// and returns them.
pub fn remove_stale() -> Vec<std::path::PathBuf> {
    iolab_core::tmp::remove_stale(TMP_PREFIX)
}

/// How one file's copy ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Every byte is on the destination.
    Copied,
    /// It did not finish: the exit status it stands for (1 failed, 2
    /// refused, 130 interrupted) and the reason, as a side said it.
    Failed {
        /// 1, 2 or 130.
        code: u8,
        /// Why.
        why: String,
    },
}

/// One file's result.
#[derive(Debug, Clone, PartialEq)]
pub struct FileResult {
    /// The source file.
    pub source: String,
    /// `host:file` on the destination (`[v6]:file` for an IPv6 host).
    pub destination: String,
    /// Bytes this run put on the destination (a resumed copy moves only
    /// the rest): the source's count of a copy the destination confirmed
    /// whole, else what the destination says it wrote before it stopped
    /// (0 when it wrote nothing, or could not say: `bytes_known`).
    pub bytes: u64,
    /// False when the destination side ended without saying what it
    /// wrote (killed): `bytes` then counts none of it.
    pub bytes_known: bool,
    /// Seconds from starting the source side until it ended, which it
    /// does once the destination has confirmed every request written.
    pub seconds: f64,
    /// How it ended.
    pub status: Status,
    /// What the destination refused on the way (connections that failed
    /// the handshake: a stranger, a stale source), as it said it.
    pub refused: Vec<String>,
    /// What a copy that did not finish left on the destination to be
    /// resumed (with `-a`), as the destination said it, or as xddcp
    /// found it when the destination side could not say (killed).
    pub left: Option<Left>,
    /// Without `-a`: the partial copy a destination side that was killed
    /// left behind, and what xddcp did about it.
    pub cleanup: Option<Cleanup>,
}

impl FileResult {
    /// 10^6 bytes per second over `seconds`.
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e6
        } else {
            0.0
        }
    }
}

/// Copies every file of the plan in order, calling `each` with every
/// result and `hooks` as the copies go. Stops after a file that was
/// refused or interrupted.
pub fn run(p: &Plan, mut each: impl FnMut(&FileResult), hooks: &Hooks<'_>) -> Vec<FileResult> {
    let mut out = Vec::new();
    for (i, job) in p.jobs.iter().enumerate() {
        let live = |line: Option<&[u8]>| (hooks.live)(i, line);
        let r = copy(p, job, i, &|bytes| (hooks.moving)(job, bytes), &live);
        each(&r);
        let stop = matches!(r.status, Status::Failed { code, .. } if code != 1);
        out.push(r);
        if stop || p.cancel.is_cancelled() {
            break;
        }
    }
    out
}

fn failed(p: &Plan, job: &Job, code: u8, why: impl Into<String>) -> FileResult {
    FileResult {
        source: job.source.display().to_string(),
        destination: shown(p, job),
        bytes: 0,
        bytes_known: true,
        seconds: 0.0,
        status: Status::Failed {
            code,
            why: why.into(),
        },
        refused: Vec::new(),
        left: None,
        cleanup: None,
    }
}

/// `host:file` of `job`, as the user reads it (`[::1]:/d/copy`).
fn shown(p: &Plan, job: &Job) -> String {
    format!("{}:{}", args::bracket(&p.addr), job.destination)
}

/// The bytes an end-to-end destination says it wrote before it stopped
/// (`xdd: note: e2e destination target N: this run wrote B bytes before
/// it stopped`, which `iolab xdd` prints for a destination that did not
/// finish), summed over its targets; None when it said nothing of it.
fn written(stderr: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(stderr);
    let figures: Vec<u64> = text
        .lines()
        .filter(|l| l.contains("e2e destination target "))
        .filter_map(|l| {
            let rest = l.split(": this run wrote ").nth(1)?;
            rest.strip_suffix(" bytes before it stopped")?.parse().ok()
        })
        .collect();
    (!figures.is_empty()).then(|| figures.iter().sum())
}

/// What the destination of `job` kept for a resume, from its note
/// (`the partial copy is kept as PATH beside its restart record
/// PATH.restart, which says its first B of T bytes are written`).
fn left(job: &Job, stderr: &[u8]) -> Option<Left> {
    let text = String::from_utf8_lossy(stderr);
    let note = text
        .lines()
        .find(|l| l.contains("the partial copy is kept"))?;
    let partial = note
        .split("kept as ")
        .nth(1)
        .and_then(|r| r.split(" beside ").next())
        .map_or_else(|| job.partial.clone(), str::to_string);
    let recorded_bytes = note
        .split("which says its first ")
        .nth(1)
        .and_then(|r| r.split(' ').next()?.parse().ok());
    Some(Left {
        partial: Some(partial),
        record: format!("{}.restart", job.destination),
        recorded_bytes,
        written: written(stderr),
    })
}

/// The destination's lines about connections it dropped (it says them
/// as notes on standard error, and goes on waiting for its source).
fn refused(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains("dropped a connection"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// The lines a side wrote that say what went wrong (its `xdd:` lines).
fn reason(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("listening on") && !l.trim().is_empty())
        .collect();
    let pick: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.contains(": note: "))
        .collect();
    let chosen = if pick.is_empty() { lines } else { pick };
    chosen.join("; ")
}

/// What a side that ended with `code` said, or its status when it said
/// nothing.
fn said(code: u8, stderr: &[u8]) -> String {
    match reason(stderr) {
        r if !r.is_empty() => r,
        _ if code == INTERRUPTED => "interrupted".into(),
        _ => format!("exit status {code}"),
    }
}

/// Starts the destination and waits until it listens; `-f` moves to the
/// next port range when the ports are taken. Returns it and its port.
fn start_destination(p: &Plan, job: &Job) -> Result<(Remote, u16), (u8, String)> {
    let tries = if p.opts.next_free_ports {
        PORT_TRIES
    } else {
        1
    };
    let mut port = p.base_port;
    for k in 0..tries {
        let argv = args::destination(p, job, port);
        // The key travels on the remote shell's standard input, which
        // stays open: its closing (this process gone) ends the far side.
        let line = p.key.handoff_line();
        let mut r = p
            .rsh
            .spawn_with_stdin(&p.shell_host, &argv, &[], line.as_bytes())
            .map_err(|e| (2, e.to_string()))?;
        match wait_listening(&mut r, p.timeout_s, &p.cancel) {
            Ok(()) => return Ok((r, port)),
            Err(Ended::Exited(code, err)) => {
                // Ending without listening is a failure even at status 0;
                // a step Slurm would not make is a bad command line.
                let code = match p.rsh.refusal(err.as_bytes()) {
                    Some(_) => 2,
                    None => code.max(1),
                };
                let err = if err.is_empty() {
                    format!("it ended before listening (is `{}` iolab?)", p.remote_iolab)
                } else {
                    err
                };
                let taken = code == 2 && err.contains("cannot listen");
                if taken && k + 1 < tries {
                    port += p.threads as u16;
                    continue;
                }
                let hint = if taken && tries == 1 {
                    " (ports in use: choose others with -p, or let -f take the next free range)"
                } else if err.contains("add -force to overwrite it") {
                    " (xddcp: --force)"
                } else {
                    ""
                };
                return Err((code, format!("destination side: {err}{hint}")));
            }
            Err(Ended::Cancelled) => return Err((INTERRUPTED, "interrupted".into())),
            Err(Ended::Timeout) => {
                return Err((
                    1,
                    format!(
                        "the destination side did not start listening within {} s (is iolab at {} on {}?)",
                        p.timeout_s, p.remote_iolab, p.shell_host
                    ),
                ))
            }
        }
    }
    Err((1, "no free port range on the destination".into()))
}

enum Ended {
    Exited(u8, String),
    Cancelled,
    Timeout,
}

/// Waits until the destination says it listens, exits, or the time is up.
fn wait_listening(
    r: &mut Remote,
    timeout_s: f64,
    cancel: &iolab_core::CancelToken,
) -> Result<(), Ended> {
    let until = Instant::now() + Duration::from_secs_f64(timeout_s);
    loop {
        let err = r.stderr_so_far();
        if String::from_utf8_lossy(&err).contains("listening on") {
            return Ok(());
        }
        if r.has_exited() {
            // Let its last words arrive.
            std::thread::sleep(Duration::from_millis(50));
            let err = r.stderr_so_far();
            let code = exit_code_of(r);
            return Err(Ended::Exited(code, reason(&err)));
        }
        if cancel.is_cancelled() {
            r.stop();
            return Err(Ended::Cancelled);
        }
        if Instant::now() >= until {
            r.stop();
            return Err(Ended::Timeout);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The exit status of an exited remote (its agent passes it through).
fn exit_code_of(r: &mut Remote) -> u8 {
    r.exit_status()
        .and_then(|s| s.code())
        .map_or(1, |c| c.clamp(0, 255) as u8)
}

/// How long a side may go on after the other side has ended before
/// xddcp stops it: time to notice the closed connection by itself and
/// say so, short beside the -e2e timeout it would otherwise wait out.
pub const PEER_GRACE: Duration = Duration::from_secs(3);

/// How the source side ended.
struct SourceEnd {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// xddcp stopped it because the destination side had ended first.
    stopped_for_peer: bool,
}

/// Runs the source side to its end; Ctrl-C here passes SIGTERM on, so it
/// stops and says what it moved. When the destination side ends first
/// (it failed, or was killed), the source is given [`PEER_GRACE`] to
/// notice, then stopped: it would otherwise retry its connects or wait
/// for frames until the -e2e timeout. With a heartbeat file, `moving`
/// hears the bytes it has sent each time the file grows.
fn run_source(
    argv: &[String],
    key: &iolab_net::SharedKey,
    remote: &mut Remote,
    heartbeat: Option<&Path>,
    moving: &dyn Fn(u64),
    live: &mut Option<LiveTail<'_>>,
    cancel: &iolab_core::CancelToken,
) -> Result<SourceEnd, String> {
    let os: Vec<OsString> = argv.iter().map(OsString::from).collect();
    let line = key.handoff_line();
    let interval = live
        .as_ref()
        .map(|t| std::ffi::OsString::from(t.interval_s.to_string()));
    let env: Vec<(&str, &std::ffi::OsStr)> = live
        .iter()
        .map(|t| (LIVE_FORWARD_ENV, t.path.as_os_str()))
        .chain(interval.iter().map(|s| (LIVE_INTERVAL_ENV, s.as_os_str())))
        .collect();
    let mut child = Remote::spawn_local_env(&os, Some(line.as_bytes()), &env)
        .map_err(|e| format!("cannot start the source side ({}): {e}", argv[0]))?;
    let mut last = None;
    let mut peer_ended: Option<Instant> = None;
    let mut stopped_for_peer = false;
    if heartbeat.is_some() {
        moving(0);
    }
    for tick in 0u64.. {
        if child.has_exited() {
            break;
        }
        if cancel.is_cancelled() {
            child.terminate();
        }
        if peer_ended.is_none() && remote.has_exited() {
            peer_ended = Some(Instant::now());
        }
        if peer_ended.is_some_and(|t| t.elapsed() >= PEER_GRACE) && !stopped_for_peer {
            stopped_for_peer = true;
            child.terminate();
        }
        if let (Some(hb), 0) = (heartbeat, tick % 10) {
            if let Some(b) = last_bytes(hb).filter(|b| Some(*b) != last) {
                moving(b);
                last = Some(b);
            }
        }
        if let (Some(t), 0) = (live.as_mut(), tick % 10) {
            t.read();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // It has exited: the wait only joins the output collectors.
    let f = child
        .wait(Duration::from_secs(10), || false)
        .map_err(|e| e.to_string())?;
    Ok(SourceEnd {
        status: f.status,
        stdout: f.stdout,
        stderr: f.stderr,
        stopped_for_peer,
    })
}

/// Waits for the destination side once the source has ended: as long as
/// a copy may take to be confirmed when the source succeeded; else only
/// [`PEER_GRACE`] (it sees the closed connections at once, or is still
/// waiting for connections that will never come), then stops it. True
/// in the second member when xddcp stopped it.
fn finish_destination(
    mut remote: Remote,
    source_ok: bool,
    timeout_s: f64,
    cancel: &iolab_core::CancelToken,
) -> (Result<iolab_launch::Finished, WaitError>, bool) {
    let mut stopped = false;
    if !source_ok {
        let until = Instant::now() + PEER_GRACE;
        while !remote.has_exited() && Instant::now() < until && !cancel.is_cancelled() {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !remote.has_exited() {
            stopped = true;
            remote.stop();
        }
    }
    let wait = Duration::from_secs_f64(timeout_s + 10.0);
    (remote.wait(wait, || cancel.is_cancelled()), stopped)
}

/// How a side's process ended, in words: its exit status, or the signal
/// that killed it, named ("killed by signal 9 (SIGKILL)").
pub fn ended(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => match signal_name(sig) {
            Some(name) => format!("killed by signal {sig} ({name})"),
            None => format!("killed by signal {sig}"),
        },
        _ => status.to_string(),
    }
}

/// The name of a signal that ends a process by default.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

/// The exit status a side's end stands for: its code, or 1 for a side
/// killed by a signal (130 when xddcp itself was told to stop:
/// `stopped`).
fn code_of(status: &ExitStatus, stopped: bool) -> u8 {
    match status.code() {
        Some(c) => c.clamp(0, 255) as u8,
        None if stopped => INTERRUPTED,
        None => 1,
    }
}

/// The heartbeat file the source side writes for `prefix` (xdd's
/// `-heartbeat output PREFIX` names it after target 0).
pub fn progress_file(prefix: &Path) -> std::path::PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".T0000.csv");
    s.into()
}

/// The `bytes` figure of the last whole line of a heartbeat CSV (read
/// from its tail, so a long copy's file is never read whole).
fn last_bytes(file: &Path) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(file).ok()?;
    let len = f.metadata().ok()?.len();
    let mut head = String::new();
    (&f).take(4096).read_to_string(&mut head).ok()?;
    f.seek(SeekFrom::Start(len.saturating_sub(512))).ok()?;
    let mut tail = String::new();
    f.read_to_string(&mut tail).ok()?;
    bytes_column(&head, &tail)
}

/// The `bytes` column (named in the header, the first line of `head`) of
/// the last complete line of `tail`.
fn bytes_column(head: &str, tail: &str) -> Option<u64> {
    let col = head.lines().next()?.split(',').position(|c| c == "bytes")?;
    // Up to the last line feed: a line being written is left for later.
    let body = &tail[..tail.rfind('\n')?];
    let line = body.rsplit('\n').next()?;
    line.split(',').nth(col)?.parse().ok()
}

/// Bytes the source moved, from its JSON document.
fn moved(json: &Path) -> u64 {
    std::fs::read(json)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["payload"]["combined"]["read_bytes"].as_u64())
        .unwrap_or(0)
}

fn base_name(job: &Job) -> String {
    job.source
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into())
}

/// The live intervals a source side appends to its file, handed on line
/// by line as they come (a line still being written waits).
struct LiveTail<'a> {
    path: std::path::PathBuf,
    /// The caller's interval, the source side's too.
    interval_s: f64,
    at: u64,
    partial: Vec<u8>,
    to: &'a dyn Fn(Option<&[u8]>),
}

impl LiveTail<'_> {
    /// Hands on every whole line appended since the last call.
    fn read(&mut self) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return;
        };
        let mut new = Vec::new();
        if f.seek(SeekFrom::Start(self.at)).is_err() || f.read_to_end(&mut new).is_err() {
            return;
        }
        self.at += new.len() as u64;
        self.partial.extend_from_slice(&new);
        while let Some(n) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=n).collect();
            (self.to)(Some(&line[..n]));
        }
    }

    /// The source side has ended: its last lines, then the end.
    fn end(mut self) {
        self.read();
        (self.to)(None);
    }
}

/// Copies one file.
fn copy(
    p: &Plan,
    job: &Job,
    i: usize,
    moving: &dyn Fn(u64),
    live: &dyn Fn(Option<&[u8]>),
) -> FileResult {
    let (mut remote, port) = match start_destination(p, job) {
        Ok(x) => x,
        Err((code, why)) => return failed(p, job, code, why),
    };
    // The source's JSON and heartbeat go in a private directory (random
    // name, 0700): a name in /tmp that others can predict could be a
    // planted link.
    let private = match iolab_core::tmp::PrivateDir::claimed(TMP_PREFIX) {
        Ok(d) => d,
        Err(e) => return failed(p, job, 1, format!("cannot make a temporary directory: {e}")),
    };
    let tmp = private.path().join(format!("file-{i}"));
    let json = tmp.with_extension("json");
    let hb_prefix = tmp.with_extension("progress");
    let hb = p.opts.progress.then(|| hb_prefix.display().to_string());
    let log_prefix = format!("xddcp.{}", base_name(job));
    let json_arg = json.display().to_string();
    let argv = args::source(p, job, port, &json_arg, &log_prefix, hb.as_deref());
    let hb_file = hb.as_ref().map(|_| progress_file(&hb_prefix));
    let mut tail = p.live.map(|interval_s| LiveTail {
        path: tmp.with_extension("live"),
        interval_s,
        at: 0,
        partial: Vec::new(),
        to: live,
    });
    let t0 = Instant::now();
    let src = run_source(
        &argv,
        &p.key,
        &mut remote,
        hb_file.as_deref(),
        moving,
        &mut tail,
        &p.cancel,
    );
    if let Some(t) = tail {
        t.end();
    }
    let seconds = t0.elapsed().as_secs_f64();
    if let Some(f) = &hb_file {
        let _ = std::fs::remove_file(f);
    }
    if src.is_err() || p.cancel.is_cancelled() {
        remote.stop();
    }
    let source_ok = src.as_ref().is_ok_and(|s| s.status.success());
    let (dst, dst_stopped) = finish_destination(remote, source_ok, p.timeout_s, &p.cancel);
    let bytes = moved(&json);
    let _ = std::fs::remove_file(&json);
    let src = match src {
        Ok(x) => x,
        Err(why) => return failed(p, job, 1, why),
    };
    if p.opts.verbose || p.opts.dumps {
        log(
            &format!("{log_prefix}.source.log"),
            &src.stdout,
            &src.stderr,
        );
        if let Ok(f) = &dst {
            log(
                &format!("{log_prefix}.destination.log"),
                &f.stdout,
                &f.stderr,
            );
        }
    }
    let dst_said = dst.as_ref().map(|f| f.stderr.clone()).unwrap_or_default();
    // A side that a signal ended, or that xddcp lost, said nothing of
    // what it wrote.
    let dst_killed = dst.as_ref().map_or(true, |f| f.status.code().is_none());
    let status = status_of(&src, dst, dst_stopped, p.cancel.is_cancelled());
    let mut r = FileResult {
        source: job.source.display().to_string(),
        destination: shown(p, job),
        bytes,
        bytes_known: true,
        seconds,
        left: None,
        cleanup: None,
        status,
        refused: refused(&dst_said),
    };
    if matches!(r.status, Status::Failed { .. }) {
        unfinished(p, job, &dst_said, dst_killed, &mut r);
    }
    r
}

/// A copy that did not finish counts what reached the destination,
/// which says so (the source's figure counts bytes it sent, some of
/// which may never have been written), and says what it left there.
/// A destination side that could not say (killed) wrote an unknown
/// number of bytes and may have left its partial copy: xddcp looks
/// ([`crate::leftover`]).
fn unfinished(p: &Plan, job: &Job, dst_said: &[u8], killed: bool, r: &mut FileResult) {
    if let Some(b) = written(dst_said) {
        r.bytes = b;
        r.left = left(job, dst_said);
        return;
    }
    r.bytes = 0;
    r.bytes_known = !killed;
    // A side that ended by itself without the note made nothing (it
    // stopped before its target was opened).
    if !killed {
        return;
    }
    if p.opts.restart {
        r.left = crate::leftover::kept(p, job);
    } else {
        r.cleanup = crate::leftover::clean_up(p, job);
    }
}

/// One side's exit code and what it said.
type Side = (u8, String);

/// The copy's status from how both sides ended. A side xddcp stopped
/// because the other had ended is a failure caused by the other (1,
/// never "interrupted"), and says so.
fn status_of(
    src: &SourceEnd,
    dst: Result<iolab_launch::Finished, WaitError>,
    dst_stopped: bool,
    stopped: bool,
) -> Status {
    let s: Side = match (src.status.code(), src.stopped_for_peer) {
        (_, true) => (
            1,
            "stopped by xddcp once the destination side had ended".into(),
        ),
        (Some(c), false) => {
            let code = c.clamp(0, 255) as u8;
            (code, said(code, &src.stderr))
        }
        (None, false) => (code_of(&src.status, stopped), ended(&src.status)),
    };
    let d: Side = match dst {
        _ if dst_stopped => (1, "stopped by xddcp once the source side had ended".into()),
        Ok(f) => {
            let code = code_of(&f.status, stopped);
            match f.status.code() {
                Some(_) => (code, said(code, &f.stderr)),
                None => (code, ended(&f.status)),
            }
        }
        Err(WaitError::Cancelled) => (INTERRUPTED, said(INTERRUPTED, &[])),
        Err(e) => (1, e.to_string()),
    };
    if s.0 == 0 && d.0 == 0 {
        return Status::Copied;
    }
    let mut code = worst(s.0, d.0);
    // xddcp itself was told to stop: which side noticed first (one
    // interrupted, the other failing on the closed link, or both
    // failing) is a race; the copy was interrupted.
    if code != 2 && stopped {
        code = INTERRUPTED;
        // What each side said of it (the link closed, the source ended
        // early) is the stop seen from there, no failure of its own.
        return Status::Failed {
            code,
            why: "Ctrl-C or SIGTERM stopped both sides".into(),
        };
    }
    let mut why = Vec::new();
    if d.0 != 0 {
        why.push(format!("destination side: {}", d.1));
    }
    if s.0 != 0 {
        why.push(format!("source side: {}", s.1));
    }
    Status::Failed {
        code,
        why: why.join("; "),
    }
}

/// The status that says most: usage (2) over interrupted (130) over
/// failed (1).
pub fn worst(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        0 => 0,
        2 => 3,
        INTERRUPTED => 2,
        _ => 1,
    };
    let c = if rank(a) >= rank(b) { a } else { b };
    if c == 0 || c == 2 || c == INTERRUPTED {
        c
    } else {
        1
    }
}

/// -v: a side's output, kept in a local log file, written whole beside
/// its name and renamed over it, so that a link planted at the name is
/// replaced, never followed (std::fs::write wrote through one, over the
/// file it pointed to).
fn log(path: &str, out: &[u8], err: &[u8]) {
    let mut all = out.to_vec();
    all.extend_from_slice(err);
    let _ = iolab_output::write_atomically(std::path::Path::new(path), &all);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_of_the_last_whole_heartbeat_line() {
        let head = "elapsed_s,tod,host,target,pass,bytes\n0.250,t,h,0,1,1048576\n";
        let tail = "1,1048576\n0.500,t,h,0,1,3145728\n0.75";
        assert_eq!(
            bytes_column(head, tail),
            Some(3145728),
            "not the line being written"
        );
        assert_eq!(bytes_column(head, "0.75"), None);
        assert_eq!(
            bytes_column(head, "x\n0.500,t,h,0,1,3145728\n"),
            Some(3145728)
        );
        assert_eq!(
            bytes_column("elapsed_s,tod\n", "1,2\n"),
            None,
            "no bytes column"
        );
    }

    #[test]
    fn the_destinations_written_bytes_and_what_it_left_are_read_from_its_notes() {
        let err = b"xdd: e2e destination target 0: listening on 127.0.0.1:41010\n\
xdd: note: e2e destination target 0: this run wrote 69206016 bytes before it stopped\n\
xdd: note: target 0 (/d/copy): the partial copy is kept as /d/copy.partial beside its restart record /d/copy.restart, which says its first 61865984 of 400000000 bytes are written; run the same copy again (-restart, xddcp -a) to resume it\n";
        assert_eq!(written(err), Some(69206016));
        assert_eq!(written(b"xdd: error: open: No such file\n"), None);
        let job = Job {
            source: "/s/src".into(),
            destination: "/d/copy".into(),
            bytes: 400000000,
            partial: "/d/copy.partial".into(),
        };
        let l = left(&job, err).unwrap();
        assert_eq!(l.partial.as_deref(), Some("/d/copy.partial"));
        assert_eq!(l.record, "/d/copy.restart");
        assert_eq!(l.recorded_bytes, Some(61865984));
        assert_eq!(l.written, Some(69206016));
        // The record and what was written, both said: they differ.
        assert!(
            l.said().contains("which records its first 61865984 bytes as written; run the same command again (with -a) to resume the copy (this run wrote 69206016 bytes before it stopped"),
            "{}",
            l.said()
        );
        assert_eq!(
            left(
                &job,
                b"xdd: note: e2e destination target 0: this run wrote 5 bytes before it stopped\n"
            ),
            None
        );
    }

    /// A copy xddcp was told to stop is said as interrupted: what each
    /// side said of the stop (the destination's "error" on a source that
    /// ended early) is no failure of the copy. It read "destination
    /// side: xdd: error: ...; source side: interrupted".
    #[test]
    fn a_stopped_copy_is_interrupted_not_an_error() {
        let src = SourceEnd {
            status: ExitStatus::from_raw(130 << 8),
            stdout: Vec::new(),
            stderr: b"xdd: interrupted\n".to_vec(),
            stopped_for_peer: false,
        };
        let dst = || {
            Ok(iolab_launch::Finished {
                status: ExitStatus::from_raw(1 << 8),
                stdout: Vec::new(),
                stderr: b"xdd: error: the source stopped before the end (interrupted or failed)\n"
                    .to_vec(),
            })
        };
        match status_of(&src, dst(), false, true) {
            Status::Failed { code, why } => {
                assert_eq!(code, INTERRUPTED);
                assert!(!why.contains("error"), "{why}");
                assert!(why.contains("Ctrl-C or SIGTERM"), "{why}");
            }
            s => panic!("{s:?}"),
        }
        // Not told to stop: the sides' own words, as before.
        match status_of(&src, dst(), false, false) {
            Status::Failed { why, .. } => {
                assert!(why.contains("destination side: xdd: error"), "{why}")
            }
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn the_progress_file_is_named_after_target_0() {
        let f = progress_file(Path::new("/tmp/x.progress"));
        assert_eq!(f, Path::new("/tmp/x.progress.T0000.csv"));
    }
}
