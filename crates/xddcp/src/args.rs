//! The two `iolab xdd` command lines of one file's copy: the
//! destination's (run on the destination host through the remote shell)
//! and the source's (run here). They agree on everything guide 10.5
//! requires, by construction.

use crate::plan::{Job, Plan, REQUEST_BYTES};

/// Words shared by both sides: amount, request size, QThreads, address.
fn common(p: &Plan, job: &Job, port: u16) -> Vec<String> {
    let mut w: Vec<String> = vec![
        "-blocksize".into(),
        "1024".into(),
        "-reqsize".into(),
        (REQUEST_BYTES / 1024).to_string(),
        "-bytes".into(),
        job.bytes.to_string(),
        "-e2e".into(),
        "destination".into(),
        format!("{}:{port},{}", bracket(&p.addr), p.threads),
        "-e2e".into(),
        "timeout".into(),
        p.timeout_s.to_string(),
    ];
    // The key goes on standard input (see crate::run), never here: `ps`
    // shows every argument to every user.
    w.extend([
        "-e2e".into(),
        "key".into(),
        iolab_net::key::STDIN_KEY.into(),
    ]);
    if p.opts.restart {
        w.extend(["-restart".into(), "enable".into()]);
    }
    w
}

/// `host` as it goes before `:port` or `:path`: an IPv6 address in
/// brackets (`[::1]:/data/copy`).
pub fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Time stamp words for `-v` / `-w`, writing next to `prefix`.
fn stamps(p: &Plan, prefix: &str) -> Vec<String> {
    let mut w = Vec::new();
    if p.opts.verbose || p.opts.dumps {
        w.extend(["-ts", "detailed", "-ts", "output"].map(String::from));
        w.push(prefix.to_string());
    }
    if p.opts.dumps {
        w.extend(["-ts".into(), "dump".into(), prefix.to_string()]);
    }
    w
}

/// The destination side's command (program first): receive and write
/// `job.destination`, never over a file it did not make, built under
/// `job.partial` and renamed once complete.
pub fn destination(p: &Plan, job: &Job, port: u16) -> Vec<String> {
    let mut w = vec![
        p.remote_iolab.clone(),
        "xdd".into(),
        "-op".into(),
        "write".into(),
        "-target".into(),
        job.destination.clone(),
    ];
    w.extend(common(p, job, port));
    w.extend(
        [
            "-e2e",
            "isdestination",
            "-e2e",
            "noclobber",
            "-e2e",
            "partial",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    w.push(job.partial.clone());
    if p.opts.force {
        w.push("-force".into());
    }
    if p.opts.dio_destination {
        w.push("-dio".into());
    }
    if p.opts.ordered {
        w.extend(["-ordering".into(), "serial".into()]);
    }
    w.extend(stamps(p, &format!("{}.xddcp-ts", job.destination)));
    w
}

/// The source side's command (program first): read and send
/// `job.source`; the results go to `json` for xddcp to read.
/// With `heartbeat`, it also writes its progress to `HEARTBEAT.T0000.csv`
/// (see [`crate::run::progress_file`]).
pub fn source(
    p: &Plan,
    job: &Job,
    port: u16,
    json: &str,
    log_prefix: &str,
    heartbeat: Option<&str>,
) -> Vec<String> {
    let mut w = vec![
        p.local_iolab.display().to_string(),
        "xdd".into(),
        "-op".into(),
        "read".into(),
        "-target".into(),
        job.source.display().to_string(),
    ];
    w.extend(common(p, job, port));
    w.extend(["-e2e".into(), "issource".into()]);
    if p.opts.dio_source {
        w.push("-dio".into());
    }
    w.extend(["--json".into(), json.to_string()]);
    w.extend(stamps(p, log_prefix));
    if let Some(prefix) = heartbeat {
        let hb = ["-heartbeat", HEARTBEAT_S, "-heartbeat", "bytes"];
        w.extend(hb.map(String::from));
        w.extend(["-heartbeat".into(), "output".into(), prefix.into()]);
    }
    w
}

/// Seconds between the source side's progress samples.
const HEARTBEAT_S: &str = "0.25";
