//! `iolab xddcp` (and a link named `xddcp`): XDD's network file copy.
//! Parses the command line, checks it (exit 2, nothing started), runs
//! the copies through `iolab_xddcp` and prints one line per file and a
//! total. Exit status: 0 every file copied, 1 a copy failed, 2 bad usage
//! or a side refused (ports taken, a file that would be overwritten, the
//! two sides disagree), 130 interrupted.

use crate::exit::{Ended, Halt};
use crate::runner::{options, Render, Report, Run, RunOptions};
use clap::Parser;
use iolab_core::{Failure, FailureKind, Outcome};
use iolab_xddcp::plan::{plan, Job, Options};
use iolab_xddcp::run::{run, worst, Cleanup, FileResult, Hooks, Status};
use std::ffi::OsString;
use std::path::PathBuf;

/// The schema of xddcp's document.
pub(crate) const SCHEMA: &str = "iolab.xddcp/1";

#[derive(Parser, Debug)]
#[command(
    name = "xddcp",
    about = "Copy files to another host with XDD's end-to-end copy (docs/e2e.md)",
    after_help = "The destination side runs `iolab xdd` on destination_host through the remote shell \
(--rsh, else IOLAB_RSH, else ssh). With `shellhost@address:file` the remote shell reaches \
shellhost and the data goes to address (for example `exec:ip netns exec`: ns1@10.213.7.2:/data/f). \
Every connection proves a key made for the run (docs/e2e.md, Authentication).\n\
Example: iolab xddcp -t 4 -a /data/big node7:/scratch/big"
)]
struct Args {
    /// Keep a restart file on the destination; running the same command again resumes the copy
    #[arg(short = 'a')]
    restart: bool,
    /// Direct I/O on the destination side
    #[arg(short = 'd')]
    dio_destination: bool,
    /// Direct I/O on the source side
    #[arg(short = 's')]
    dio_source: bool,
    /// When the ports are taken on the destination, take the next free range (XDD killed every xdd there instead)
    #[arg(short = 'f')]
    next_free_ports: bool,
    /// source_file is a list of files, one per line; destination_file is a directory
    #[arg(short = 'F')]
    file_list: bool,
    /// First port [40010]
    #[arg(short = 'p', value_name = "PORT")]
    base_port: Option<u16>,
    /// Write in order on the destination (serial ordering)
    #[arg(short = 'o')]
    ordered: bool,
    /// QThreads on each side [8]
    #[arg(short = 't', value_name = "THREADS")]
    threads: Option<u32>,
    /// Log files of both sides here, and time stamp files on both sides
    #[arg(short = 'v')]
    verbose: bool,
    /// As -v, plus binary time stamp dumps
    #[arg(short = 'w')]
    dumps: bool,
    /// The remote shell (a command prefix such as `ssh -p 2222`, or `exec:ip netns exec` for an agent that passes words on unquoted)
    #[arg(long, value_name = "AGENT")]
    rsh: Option<String>,
    /// The iolab program on the destination host [this program's path]
    #[arg(long, value_name = "PATH")]
    remote_iolab: Option<String>,
    /// Your key file instead of the run's one-time key (else IOLAB_KEY_FILE); read here, handed to both sides on standard input
    #[arg(long, value_name = "FILE")]
    key: Option<String>,
    /// Seconds each side waits for the other [120]
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Write a block device destination even when it looks in use (a file system on it), as xdd -force
    #[arg(long)]
    force: bool,
    /// --json (schema iolab.xddcp/1) and --store, the runner's.
    #[command(flatten)]
    run: RunOptions<{ options::JSON | options::STORE }>,
    /// The file to copy (with -F: the file listing them)
    source_file: PathBuf,
    /// [shellhost@]destination_host:destination_file (with -F: a directory)
    destination: String,
    /// Bytes to copy, k/m/g suffixes allowed [the whole file]
    size: Option<String>,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Args as clap::CommandFactory>::command()
}

impl Args {
    /// The options as the results document records them.
    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "source_file": self.source_file,
            "destination": self.destination,
            "size": self.size,
            "file_list": self.file_list,
            "restart": self.restart,
            "threads": self.threads,
            "base_port": self.base_port,
            "next_free_ports": self.next_free_ports,
            "ordered": self.ordered,
            "dio_source": self.dio_source,
            "dio_destination": self.dio_destination,
            "timeout_s": self.timeout,
            "force": self.force,
        })
    }

    fn options(self) -> Options {
        Options {
            restart: self.restart,
            dio_destination: self.dio_destination,
            dio_source: self.dio_source,
            next_free_ports: self.next_free_ports,
            file_list: self.file_list,
            base_port: self.base_port,
            ordered: self.ordered,
            force: self.force,
            threads: self.threads,
            verbose: self.verbose,
            dumps: self.dumps,
            rsh: self.rsh,
            remote_iolab: self.remote_iolab,
            key: self.key,
            timeout_s: self.timeout,
            source: self.source_file,
            destination: self.destination,
            size: self.size,
            progress: crate::progress::shown(true),
        }
    }
}

fn line(r: &FileResult) -> String {
    match &r.status {
        Status::Copied => format!(
            "xddcp: {} -> {}  {} bytes  {:.3} s  {:.3} MB/s",
            r.source,
            r.destination,
            r.bytes,
            r.seconds,
            r.mb_per_s()
        ),
        // Stopped by the user: said as such, not as a failure.
        Status::Failed {
            code: crate::exit::INTERRUPTED,
            why,
        } => match why.as_str() {
            "interrupted" => format!("xddcp: {} -> {}  interrupted", r.source, r.destination),
            _ => format!(
                "xddcp: {} -> {}  interrupted: {why}",
                r.source, r.destination
            ),
        },
        Status::Failed { why, .. } => {
            format!("xddcp: {} -> {}  FAILED: {why}", r.source, r.destination)
        }
    }
}

/// The progress bar of the file being copied (only drawn on a terminal:
/// the engine reports bytes only when the plan asked for progress).
#[derive(Default)]
struct Bar(std::cell::RefCell<Option<indicatif::ProgressBar>>);

impl Bar {
    /// `bytes` of `job` moved: draws (or first makes) its bar.
    fn show(&self, job: &Job, bytes: u64) {
        let mut slot = self.0.borrow_mut();
        let b = slot.get_or_insert_with(|| {
            let b = crate::progress::bar(job.bytes, crate::progress::Unit::Bytes);
            b.set_message(job.source.display().to_string());
            b
        });
        b.set_position(bytes.min(job.bytes));
    }

    /// The file ended: its bar goes before its line is printed.
    fn done(&self) {
        if let Some(b) = self.0.borrow_mut().take() {
            b.finish_and_clear();
        }
    }
}

/// One file in the results document.
#[derive(serde::Serialize)]
struct FileDoc<'a> {
    source: &'a str,
    destination: &'a str,
    bytes: u64,
    /// False when the destination side was killed before it said what
    /// it wrote: `bytes` counts none of that.
    bytes_known: bool,
    seconds: f64,
    mb_per_s: f64,
    copied: bool,
    /// The exit status the file stands for (0, 1, 2 or 130).
    exit_code: u8,
    why: Option<&'a str>,
    /// With -a, a copy that did not finish: the partial file and restart
    /// record it left, and the bytes that record says are written.
    left: Option<LeftDoc<'a>>,
    /// Without -a, the partial copy a killed destination side left, and
    /// whether xddcp removed it.
    cleanup: Option<CleanupDoc<'a>>,
}

/// What an unfinished `-a` copy left, in the results document.
#[derive(serde::Serialize)]
struct LeftDoc<'a> {
    /// None when the destination side ended before it made one.
    partial: Option<&'a str>,
    restart_file: &'a str,
    recorded_bytes: Option<u64>,
    /// What this run wrote into it, as the destination said (None: it
    /// was killed before it could).
    written_bytes: Option<u64>,
}

/// A killed destination side's partial copy, in the results document.
#[derive(serde::Serialize)]
struct CleanupDoc<'a> {
    partial: &'a str,
    /// Removed by xddcp; else it may still be there (`why`).
    removed: bool,
    why: Option<&'a str>,
}

fn cleanup_doc(c: &Cleanup) -> CleanupDoc<'_> {
    match c {
        Cleanup::Removed(p) => CleanupDoc {
            partial: p,
            removed: true,
            why: None,
        },
        Cleanup::Stays { path, why } | Cleanup::Unknown { path, why } => CleanupDoc {
            partial: path,
            removed: false,
            why: Some(why),
        },
    }
}

/// The payload of `iolab.xddcp/1`: every file and the totals.
#[derive(serde::Serialize)]
struct Payload<'a> {
    files: Vec<FileDoc<'a>>,
    files_planned: usize,
    files_copied: usize,
    bytes: u64,
    /// False when a killed destination side's bytes are not in `bytes`.
    bytes_known: bool,
    seconds: f64,
    mb_per_s: f64,
}

fn file_doc(r: &FileResult) -> FileDoc<'_> {
    let (copied, exit_code, why) = match &r.status {
        Status::Copied => (true, 0, None),
        Status::Failed { code, why } => (false, *code, Some(why.as_str())),
    };
    FileDoc {
        source: &r.source,
        destination: &r.destination,
        bytes: r.bytes,
        bytes_known: r.bytes_known,
        seconds: r.seconds,
        mb_per_s: r.mb_per_s(),
        copied,
        exit_code,
        why,
        left: r.left.as_ref().map(|l| LeftDoc {
            partial: l.partial.as_deref(),
            restart_file: &l.record,
            recorded_bytes: l.recorded_bytes,
            written_bytes: l.written,
        }),
        cleanup: r.cleanup.as_ref().map(cleanup_doc),
    }
}

/// How the copy ended, as a typed outcome: the file that says most
/// (refused over interrupted over failed, as XDD's xddcp), or
/// interrupted when files were left unstarted.
fn outcome(results: &[FileResult], planned: usize) -> Outcome {
    let code = results.iter().fold(0u8, |c, r| match &r.status {
        Status::Copied => c,
        Status::Failed { code, .. } => worst(c, *code),
    });
    let why = results.iter().find_map(|r| match &r.status {
        Status::Failed { code: c, why } if *c == code => Some(format!("{}: {why}", r.source)),
        _ => None,
    });
    let failure = |kind| {
        let why = why.clone().unwrap_or_else(|| "a copy failed".into());
        Outcome::Error(Failure::other("copy", why).of_kind(kind))
    };
    match code {
        0 if results.len() < planned => Outcome::Interrupted,
        0 => Outcome::Completed,
        crate::exit::INTERRUPTED => Outcome::Interrupted,
        crate::exit::USAGE => failure(FailureKind::Refused),
        _ => failure(FailureKind::Failed),
    }
}

/// Totals of a finished copy, for the last line and the document.
struct Totals {
    planned: usize,
    copied: usize,
    bytes: u64,
    /// Every file's bytes are known (no destination side was killed
    /// before it said what it wrote).
    bytes_known: bool,
    seconds: f64,
}

impl Totals {
    fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e6
        } else {
            0.0
        }
    }
}

/// The copy's report: every file and the totals; its headline figure
/// is the whole copy's rate.
fn report<'a>(results: &'a [FileResult], t: &Totals, outcome: Outcome) -> Report<Payload<'a>> {
    let payload = Payload {
        files: results.iter().map(file_doc).collect(),
        files_planned: t.planned,
        files_copied: t.copied,
        bytes: t.bytes,
        bytes_known: t.bytes_known,
        seconds: t.seconds,
        mb_per_s: t.mb_per_s(),
    };
    let mut r = Report::new(outcome, payload);
    r.figures = vec![iolab_results::Figure {
        phase: "copy".into(),
        metric: "bandwidth".into(),
        unit: "MB/s".into(),
        scope: String::new(),
        stat: iolab_results::Spread::one(t.mb_per_s()),
    }];
    r
}

/// Entry point of `iolab xddcp` (and of the `xddcp` link).
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    // As given, the live options included (the dispatcher took them
    // out of `args`).
    let command_line = crate::process_command_line();
    let a: Args = crate::exit::parse_clap(prog, args)?;
    let config = a.config();
    let given = a.run.0.clone();
    let mut p = plan(&a.options()).map_err(|e| Halt::usage(format!("{prog}: {e}")))?;
    let mut session = Run::new(prog, "xddcp", SCHEMA, &command_line, config, given).open()?;
    p.cancel = session.cancel().clone();
    let (feed, peers) = crate::live::relay(Some(("read", "copy")));
    p.live = session
        .live(true, Some(peers))
        .map(|_| crate::live::asked_interval().as_secs_f64());
    // The plan before anything moves: how much there is to copy.
    let planned: u64 = p.jobs.iter().map(|j| j.bytes).sum();
    iolab_core::say!("{prog}: {} file(s), {planned} bytes to copy", p.jobs.len());
    for d in iolab_xddcp::run::remove_stale() {
        iolab_core::say!(
            "{prog}: removed {}: left by an xddcp run that was killed",
            d.display()
        );
    }
    session.start();
    let t0 = std::time::Instant::now();
    let bar = Bar::default();
    let each = |r: &FileResult| {
        bar.done();
        // Once: a copied file on standard output, a failed one on
        // standard error (the total line on stdout counts both).
        match r.status {
            Status::Failed { .. } => {
                iolab_core::say!("{}", line(r));
                if let Some(l) = &r.left {
                    iolab_core::say!("xddcp: {}: {}", r.destination, l.said());
                }
                if let Some(c) = &r.cleanup {
                    iolab_core::say!("xddcp: {}: {}", r.destination, c.said());
                }
            }
            Status::Copied => {
                let _ = outln!("{}", line(r));
            }
        }
        for why in &r.refused {
            iolab_core::say!(
                "xddcp: {}: the destination refused a connection: {why}",
                r.destination
            );
        }
    };
    let hooks = Hooks {
        moving: &|job, bytes| bar.show(job, bytes),
        live: &|i, line| feed.line(i, line),
    };
    let results = run(&p, each, &hooks);
    feed.close();
    let totals = Totals {
        planned: p.jobs.len(),
        copied: results
            .iter()
            .filter(|r| r.status == Status::Copied)
            .count(),
        bytes: results.iter().map(|r| r.bytes).sum(),
        bytes_known: results.iter().all(|r| r.bytes_known),
        seconds: t0.elapsed().as_secs_f64(),
    };
    let unknown = match totals.bytes_known {
        true => "",
        false => " (not counting what a killed destination side wrote, which it could not say)",
    };
    let _ = outln!(
        "xddcp: total: {} of {} files copied, {} bytes{unknown}, {:.3} s, {:.3} MB/s",
        totals.copied,
        totals.planned,
        totals.bytes,
        totals.seconds,
        totals.mb_per_s()
    );
    let outcome = outcome(&results, p.jobs.len());
    Ok(session.finish(report(&results, &totals, outcome), Render::plain()))
}
