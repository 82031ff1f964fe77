//! `iolab xddcp` (and a link named `xddcp`): XDD's network file copy.
//! Parses the command line, checks it (exit 2, nothing started), runs
//! the copies through `iolab_xddcp` and prints one line per file and a
//! total. Exit status: 0 every file copied, 1 a copy failed, 2 bad usage
//! or a side refused (ports taken, a file that would be overwritten, the
//! two sides disagree), 130 interrupted.

use clap::Parser;
use iolab_xddcp::plan::{plan, Job, Options};
use iolab_xddcp::run::{run, worst, FileResult, Status};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// The file to copy (with -F: the file listing them)
    source_file: PathBuf,
    /// [shellhost@]destination_host:destination_file (with -F: a directory)
    destination: String,
    /// Bytes to copy, k/m/g suffixes allowed [the whole file]
    size: Option<String>,
}

impl Args {
    fn options(self) -> Options {
        Options {
            restart: self.restart,
            dio_destination: self.dio_destination,
            dio_source: self.dio_source,
            next_free_ports: self.next_free_ports,
            file_list: self.file_list,
            base_port: self.base_port,
            ordered: self.ordered,
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

/// Entry point of `iolab xddcp` (and of the `xddcp` link).
pub fn main(prog: &str, args: Vec<OsString>) -> ExitCode {
    let a: Args = match crate::exit::parse_clap(prog, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let p = match plan(&a.options()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{prog}: {e}");
            return crate::exit::usage();
        }
    };
    let t0 = std::time::Instant::now();
    let bar = Bar::default();
    let each = |r: &FileResult| {
        bar.done();
        println!("{}", line(r));
        if let Status::Failed { .. } = r.status {
            eprintln!("{}", line(r));
        }
        for why in &r.refused {
            eprintln!(
                "xddcp: {}: the destination refused a connection: {why}",
                r.destination
            );
        }
    };
    let results = run(&p, each, &|job, bytes| bar.show(job, bytes));
    let copied: Vec<&FileResult> = results
        .iter()
        .filter(|r| r.status == Status::Copied)
        .collect();
    let bytes: u64 = results.iter().map(|r| r.bytes).sum();
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "xddcp: total: {} of {} files copied, {bytes} bytes, {secs:.3} s, {:.3} MB/s",
        copied.len(),
        p.jobs.len(),
        if secs > 0.0 {
            bytes as f64 / secs / 1e6
        } else {
            0.0
        }
    );
    let code = results.iter().fold(0u8, |c, r| match &r.status {
        Status::Copied => c,
        Status::Failed { code, .. } => worst(c, *code),
    });
    let code = if results.len() < p.jobs.len() && code == 0 {
        crate::exit::INTERRUPTED
    } else {
        code
    };
    ExitCode::from(code)
}
