//! `iolab ior` (and the `ior` link): read IOR's command line (and its
//! `-f` script), check everything before anything is created, run the
//! tests on the communicator (threads, MPI ranks, or both), print IOR's
//! report from one process as it goes, and write the outputs: IOR's
//! summary file (`-O summaryFile`, in `-O summaryFormat`), its per-task
//! CSV (`-O saveRankPerformanceDetailsCSV`), and iolab's --json, --csv,
//! --store and --live (each task's transfers, per access: `write`,
//! `read`).

use crate::exit::{Ended, Halt, NotStarted};
use crate::runner::{Given, Render, Report, Run, Session};
use iolab_backend::Backend;
use iolab_core::{Failure, FailureKind, Outcome};
use iolab_ior::params::Format;
use iolab_ior::results::{AccessResult, CommInfo, TestResult};
use iolab_ior::run::{Observer, Runner};
use iolab_ior::{options, script, Config, IorPayload, Test, SCHEMA};
use iolab_report::ior::{csv, summary_csv, summary_json, text};
use std::ffi::OsString;
use std::path::Path;

/// The version printed as `IOR-<version>`.
pub fn version() -> String {
    format!("iolab-{}", env!("CARGO_PKG_VERSION"))
}

/// Entry point of `iolab ior` (and of the `ior` link).
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let command = crate::process_command_line();
    match prepare(prog, &args, &command)? {
        Some(setup) => Ok(run(prog, setup, &command)),
        None => Err(Halt::shown()),
    }
}

/// A command line read and checked, before anything is started.
struct ReadArgs {
    cfg: Config,
    backend: Box<dyn Backend>,
}

/// The command line (and its script) as validated tests and their
/// backend; None for -h.
fn read_args(argv: &[OsString]) -> Result<Option<ReadArgs>, String> {
    let (backend_opts, argv) = iolab_backend::split_args(argv);
    let mut raw = options::parse_os(&argv).map_err(|e| e.to_string())?;
    if raw.globals.help {
        return Ok(None);
    }
    let tests = match raw.globals.script.clone() {
        None => vec![raw.params.clone()],
        Some(f) => {
            let text = iolab_core::input::read_text(&f, iolab_core::input::TEXT_MAX_BYTES)
                .map_err(|e| format!("-f {}: cannot read: {e}", f.display()))?;
            script::parse(&text, &raw.params, &mut raw.globals)
                .map_err(|e| format!("-f {}: {e}", f.display()))?
        }
    };
    let cfg = Config::new(tests, raw.globals).map_err(|e| e.to_string())?;
    let opts = iolab_backend::parse_options(&backend_opts).map_err(|e| e.to_string())?;
    let name = cfg.tests[0].api.backend();
    if let Some(t) = cfg.tests.iter().find(|t| t.api.backend() != name) {
        return Err(format!(
            "test {}: -a {} runs on another backend than test 0's -a {}; one run uses one backend",
            t.params.id,
            t.api.name(),
            cfg.tests[0].api.name()
        ));
    }
    if opts.flag("posix", "odirect") && cfg.tests.iter().any(|t| t.api == iolab_ior::Api::Mmap) {
        return Err("-a MMAP: O_DIRECT (--posix.odirect) does not apply to a mapping".into());
    }
    let backend = iolab_backend::with_options(name, &opts).map_err(|e| format!("-a: {e}"))?;
    check_backend(&cfg, &*backend)?;
    Ok(Some(ReadArgs { cfg, backend }))
}

/// What the tests need from the backend.
fn check_backend(cfg: &Config, be: &dyn Backend) -> Result<(), String> {
    let caps = be.capabilities();
    iolab_ior::file::Layout::of(&caps)
        .map_err(|e| format!("-a {}: {e}", cfg.tests[0].api.name()))?;
    for t in &cfg.tests {
        if t.api == iolab_ior::Api::Mmap && t.params.odirect {
            return Err("-a MMAP: O_DIRECT (--posix.odirect) does not apply to a mapping".into());
        }
        if t.params.odirect && !caps.direct_io {
            return Err(format!(
                "--posix.odirect: the {} backend has no direct I/O",
                be.name()
            ));
        }
        if t.params.unique_dir && t.params.file_per_proc && !caps.directories && !caps.discards {
            return Err(format!("-u: the {} backend has no directories", be.name()));
        }
    }
    Ok(())
}

struct Setup {
    /// The run, opened through the runner (--json, --csv and IOR's own
    /// files checked; --stats loaded and --store opened on rank 0).
    session: Session<Config>,
    cfg: Config,
    world: iolab_comm::World,
    backend: Box<dyn Backend>,
    threads: usize,
}

/// What the ranks compare of their options: everything but the outputs,
/// which rank 0 alone writes.
const RANK_0_ONLY: &[&str] = &[
    "globals.json",
    "globals.csv",
    "globals.stats",
    "globals.store",
    "globals.summary_file",
    "tests.params.rank_csv",
];

/// Everything that can fail on bad input, done before anything is made;
/// under MPI every rank checks, and the ranks agree on the options and
/// the verdict before any of them goes on (`ranks`).
fn prepare(prog: &str, argv: &[OsString], command: &str) -> Result<Option<Setup>, Halt> {
    let read = match read_args(argv) {
        Ok(None) => {
            let _ = out!("{}", options::help(prog));
            return Ok(None);
        }
        Ok(Some(r)) => Ok(r),
        Err(e) => Err(NotStarted::from(e)),
    };
    let compared =
        |r: &ReadArgs| crate::ranks::options_with_backend(&r.cfg, RANK_0_ONLY, r.backend.name());
    let (world, (cfg, backend, threads)) =
        crate::ranks::connect_and_settle(prog, read, compared, check)?;
    let total = threads * world.transport().size();
    // Last, so that a run refused above leaves no store behind; one rank
    // collects and records.
    let session = Run::new(prog, "ior", SCHEMA, command, cfg.clone(), given(&cfg))
        .compatible_with("IOR 4.1")
        .outputs(planned(&cfg, total as u64, backend.capabilities().local))
        .leader(world.transport().rank() == 0)
        .open()
        .map_err(|h| NotStarted::refused(prog, h));
    let session = crate::ranks::settle(prog, &world, None, session)?;
    Ok(Some(Setup {
        session,
        cfg,
        world,
        backend,
        threads,
    }))
}

/// This rank's checks, touching nothing: the backend started, the task
/// count, and the names of the files its tasks use (`preflight`).
#[allow(clippy::type_complexity)]
fn check(
    r: ReadArgs,
    world: &iolab_comm::World,
) -> Result<(Config, Box<dyn Backend>, usize), NotStarted> {
    let ReadArgs { cfg, backend } = r;
    // A path the backend cannot address as given (each of `-o`'s
    // `@`-separated names) is refused before anything is sent.
    use std::os::unix::ffi::OsStrExt;
    let files = cfg
        .tests
        .iter()
        .flat_map(|t| t.params.test_file.as_bytes().split(|&b| b == b'@'));
    NotStarted::check_paths(&*backend, "-o", files)?;
    let t = world.transport();
    let threads = cfg.globals.tasks_per_process.unwrap_or(1) as usize;
    let total = threads * t.size();
    // The longest names the run makes too (a task's file, a transfer's
    // object), before init: an S3 key over 1024 bytes.
    let layout = iolab_ior::file::Layout::of(&backend.capabilities());
    let chunked = matches!(layout, Ok(iolab_ior::file::Layout::Chunks));
    let longest = cfg.tests.iter().filter_map(|test| {
        let tasks = iolab_ior::plan::test_tasks(&test.params, total as u64);
        iolab_ior::plan::longest_name(&test.params, tasks, chunked)
    });
    for name in longest {
        NotStarted::check_paths(
            &*backend,
            "-o (the longest name the run makes)",
            [&name[..]],
        )?;
    }
    backend
        .init()
        .map_err(|e| NotStarted::backend_init(backend.name(), &e))?;
    cfg.check_tasks(total as u64, threads as u64)
        .map_err(|e| e.to_string())?;
    let mine = (t.rank() * threads) as u64..((t.rank() + 1) * threads) as u64;
    iolab_ior::run::preflight_tasks(&cfg, total, mine, &*backend).map_err(|f| f.message)?;
    Ok((cfg, backend, threads))
}

/// The run options as IOR's option table read them.
fn given(cfg: &Config) -> Given {
    let g = &cfg.globals;
    Given {
        json: g.json.clone(),
        csv: g.csv.clone(),
        stats: g.stats.clone(),
        store: g.store.clone(),
    }
}

/// IOR's own files besides --json and --csv, checked with them before
/// the run starts.
fn planned(cfg: &Config, tasks: u64, local: bool) -> iolab_output::Planned {
    let g = &cfg.globals;
    let mut p = iolab_output::Planned::new().file("-O summaryFile", g.summary_file.as_deref());
    for t in &cfg.tests {
        let q = &t.params;
        p = p.file("-O saveRankPerformanceDetailsCSV", q.rank_csv.as_deref());
        if q.wearout && q.write {
            p = p.file("-O stoneWallingStatusFile", q.status_file.as_deref());
        }
        if local {
            p = p.and(test_files(q, tasks));
        }
    }
    p
}

/// The files a test reads and writes, so that no output is planned over
/// one (`-O summaryFile=F -o F` wrote the summary over the data `-k`
/// kept).
fn test_files(q: &iolab_ior::params::Params, tasks: u64) -> iolab_output::Planned {
    let tasks = iolab_ior::plan::test_tasks(q, tasks);
    iolab_ior::plan::test_files(q, tasks).fold(iolab_output::Planned::new(), |p, (_, file, _)| {
        p.data("-o", Some(&file))
    })
}

fn run(prog: &str, mut s: Setup, command: &str) -> Outcome {
    // IOR names each test's platform when -O platform does not.
    for t in &mut s.cfg.tests {
        t.params.platform.get_or_insert_with(platform);
    }
    let transport = s.world.transport();
    let leader = transport.rank() == 0;
    let mut payload = IorPayload {
        began: iolab_ior::ctx::ctime_now(),
        machine: machine(
            s.cfg
                .tests
                .iter()
                .map(|t| t.params.verbose)
                .max()
                .unwrap_or(0),
        ),
        comm: CommInfo {
            kind: transport.kind().into(),
            ranks: transport.size() as u64,
            tasks_per_rank: s.threads as u64,
        },
        ..IorPayload::default()
    };
    let shown = Shown {
        live: leader
            && s.cfg.globals.summary_format == Format::Default
            && s.cfg.globals.summary_file.is_none(),
    };
    let cancel = s.session.cancel().clone();
    // The live sampler (rank 0 writes; the other ranks report to it):
    // started before the run so that the document carries its run id.
    let board = s.session.live(false, crate::live::peers(&s.world));
    let runner = Runner {
        cfg: &s.cfg,
        transport: transport.clone(),
        threads: s.threads,
        backend: &*s.backend,
        observer: &shown,
        cancel: &cancel,
        live: board.as_deref(),
    };
    crate::signals::set_last_words(last_words(
        prog,
        &s.cfg,
        (s.threads * transport.size()) as u64,
        s.backend.capabilities().discards,
    ));
    if leader {
        announce(prog, &s.cfg, s.threads * transport.size());
        if shown.live {
            print_now(&text::header(
                &version(),
                &payload.began,
                command,
                &payload.machine,
            ));
        }
    }
    s.session.start();
    // Once stopped, rank 0 says where the test files are at once: a
    // rank killed by mpirun (another rank died, odls_base_sigkill_timeout)
    // may not get to remove them.
    let running = std::sync::atomic::AtomicBool::new(true);
    let tasks = (s.threads * transport.size()) as u64;
    let discards = s.backend.capabilities().discards;
    let r = std::thread::scope(|scope| {
        if leader {
            let (cancel, running, cfg) = (&cancel, &running, &s.cfg);
            scope.spawn(move || announce_stop(prog, cfg, tasks, discards, cancel, running));
        }
        let r = runner.run();
        running.store(false, std::sync::atomic::Ordering::Release);
        r
    });
    payload.tests = r.tests;
    payload.left_behind = r.left_behind;
    let outcome = r.outcome;
    payload.finished = iolab_ior::ctx::ctime_now();
    s.session.stop_watching(&outcome);
    let mut report = Report::new(outcome, payload);
    if leader {
        print_report(prog, &s, &mut report, command, &shown);
    }
    if let Err(e) = s.backend.finalize() {
        iolab_core::say!(
            "{prog}: warning: the {} backend did not finish cleanly: {e}",
            s.backend.name()
        );
    }
    report.figures = report.payload.figures();
    report.filesystems = filesystems(&*s.backend, &report.payload);
    let outcome = s.session.finish(report, Render::csv(&write_csv));
    drop(transport);
    crate::signals::bound_mpi_finalize(crate::exit::code(&outcome));
    drop(s.world);
    outcome
}

/// What a second Ctrl-C says as it ends the process at once, cleanup
/// cut short: the files (and `-u` directories) the writing tests make,
/// the first few of them; nothing for the null backend, which keeps
/// nothing.
/// Once the run is stopped, rank 0 says where its files are at once:
/// a rank killed by mpirun (another rank died, odls_base_sigkill_timeout)
/// may not get to remove them.
fn announce_stop(
    prog: &str,
    cfg: &Config,
    tasks: u64,
    discards: bool,
    cancel: &iolab_core::CancelToken,
    running: &std::sync::atomic::AtomicBool,
) {
    crate::signals::when_stopped(cancel, running, || {
        let lead = "stopping; removing what this run made. Should the process be killed first, it may be left:";
        iolab_core::say_part!("{}", file_list(prog, cfg, tasks, discards, lead));
        iolab_core::say_part!(
            "{}",
            crate::signals::mpirun_grace_hint(prog).unwrap_or_default()
        );
    });
}

fn last_words(prog: &str, cfg: &Config, tasks: u64, discards: bool) -> String {
    let lead = "stopped at once by a second signal; cleanup was skipped or cut short. What this run writes may be left:";
    file_list(prog, cfg, tasks, discards, lead)
}

/// `lead` and the files (and -u directories) the writing tests make,
/// the first 20 of them.
fn file_list(prog: &str, cfg: &Config, tasks: u64, discards: bool, lead: &str) -> String {
    const SHOWN: usize = crate::signals::LISTED;
    let mut names = Vec::new();
    for t in cfg.tests.iter().filter(|t| t.params.write && !discards) {
        let p = &t.params;
        let n = iolab_ior::plan::test_tasks(p, tasks);
        for (_, file, dir) in iolab_ior::plan::test_files(p, n) {
            names.extend(
                dir.into_iter()
                    .chain([file])
                    .map(|x| x.display().to_string()),
            );
        }
        if names.len() > SHOWN {
            break;
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    crate::signals::listed(prog, lead, &names, "and more files of these tests")
}

/// The `--csv` export, written as it is made.
fn write_csv(p: &IorPayload, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    csv::write(p, w)
}

/// IOR's word when `-N` asks for more tasks than there are, and the
/// summary file's destination.
fn announce(prog: &str, cfg: &Config, tasks: usize) {
    if let Some(f) = &cfg.globals.summary_file {
        let _ = outln!("Writing output to {}", f.display());
    }
    for t in &cfg.tests {
        if let Some(n) = t.params.num_tasks.filter(|&n| n > tasks as u64) {
            iolab_core::say!("{prog}: WARNING: More tasks requested ({n}) than available ({tasks}), running with {tasks} tasks.");
        }
    }
}

/// `Linux host` (with `-vv`: and the kernel's release, version and
/// machine), from uname(2).
fn machine(verbose: u32) -> String {
    let Some(u) = iolab_core::env::uname() else {
        return "Unknown".into();
    };
    let mut m = format!("{} {}", u.sysname, u.nodename);
    if verbose >= 2 {
        m = format!("{m} {} {} {}", u.release, u.version, u.machine);
    }
    m
}

/// IOR's default `platform` (its GetPlatformName): the node name without
/// its trailing digits, then the system's name: `vm(Linux)`.
fn platform() -> String {
    let Some(u) = iolab_core::env::uname() else {
        return "Unknown(Unknown)".into();
    };
    let kept = u.nodename.trim_end_matches(|c: char| c.is_ascii_digit());
    // A name of digits only stays whole, as IOR's backward search stops
    // at its first character.
    let kept = if kept.is_empty() { &u.nodename } else { kept };
    format!("{kept}({})", u.sysname)
}

/// The file systems of the tests' files (a local backend's only).
fn filesystems(be: &dyn Backend, p: &IorPayload) -> Vec<iolab_core::env::FsInfo> {
    match be.capabilities().local {
        true => p
            .tests
            .iter()
            .map(|t| {
                iolab_core::env::fs_info(Path::new(&t.path).parent().unwrap_or(Path::new(".")))
            })
            .collect(),
        false => Vec::new(),
    }
}

/// After the run (rank 0): the summary and IOR's own files; the runner
/// writes --csv and --json and records the run.
fn print_report(
    prog: &str,
    s: &Setup,
    report: &mut Report<IorPayload>,
    command: &str,
    shown: &Shown,
) {
    let g = &s.cfg.globals;
    let p = &report.payload;
    let rendered = match g.summary_format {
        Format::Default if shown.live => text::summary(&p.tests) + &text::finished(&p.finished),
        Format::Default => text::render(p, &version(), command),
        Format::Json => summary_json::render(p, &version(), command),
        Format::Csv => summary_csv::render(p),
    };
    let mut outcome = report.outcome.clone();
    match &g.summary_file {
        None => print_now(&rendered),
        Some(f) => write_out(prog, &mut outcome, "-O summaryFile", f, rendered.as_bytes()),
    }
    for t in &s.cfg.tests {
        if let Some(f) = &t.params.rank_csv {
            let text = rank_csv(&p.tests, t.params.id);
            write_out(
                prog,
                &mut outcome,
                "-O saveRankPerformanceDetailsCSV",
                f,
                text.as_bytes(),
            );
        }
    }
    report.notes = p
        .tests
        .iter()
        .flat_map(|t| t.notes.iter().cloned())
        .collect();
    let notes = s.backend.notes();
    notes
        .iter()
        .for_each(|n| iolab_core::say!("{prog}: note: {n}"));
    report.notes.extend(notes);
    if !shown.live {
        for n in &report.notes {
            iolab_core::say!("{prog}: WARNING: {n}");
        }
    }
    if let Outcome::Error(f) = &outcome {
        iolab_core::say!("{prog}: error: {f}");
    }
    report.outcome = outcome;
}

/// IOR's per-task CSV of a test: `access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput`.
fn rank_csv(tests: &[TestResult], id: u32) -> String {
    let mut s = String::from(
        "access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput\n",
    );
    for t in tests.iter().filter(|t| t.test.params.id == id) {
        // An access the stop request or a failed call cut short is no
        // measurement.
        for r in t.measured() {
            let per_task = r.bytes as f64 / r.tasks.len().max(1) as f64;
            for (rank, x) in r.tasks.iter().enumerate() {
                s.push_str(&format!(
                    "{},{rank},{:.10e},{:.10e},{:.10e},{:.10e}\n",
                    r.access.map_or("", |a| a.name()),
                    x.total_s,
                    x.access_s,
                    per_task / x.total_s,
                    per_task / x.access_s
                ));
            }
        }
    }
    s
}

/// Writes an output whole; a failure makes the run an error (exit 1).
fn write_out(prog: &str, outcome: &mut Outcome, opt: &str, path: &Path, bytes: &[u8]) {
    if let Err(e) = iolab_output::write_atomically(path, bytes) {
        iolab_core::say!("{prog}: {opt} {}: cannot write: {e}", path.display());
        let f = Failure::io(
            &format!("write {opt}"),
            Some(path.display().to_string()),
            &e,
        )
        .of_kind(FailureKind::Output);
        *outcome = outcome.clone().worst(Outcome::Error(f));
    }
}

/// IOR's report as the run goes (rank 0, text to stdout only).
struct Shown {
    live: bool,
}

impl Observer for Shown {
    fn test_started(&self, t: &TestResult) {
        if self.live {
            print_now(&text::test_start(t));
        }
    }

    fn access_done(&self, _t: &Test, r: &AccessResult) {
        if self.live {
            print_now(&text::access(r));
        }
    }

    fn removed(&self, t: &Test, iteration: u64, secs: f64) {
        if self.live && t.params.verbose > 0 {
            print_now(&text::removed(iteration, secs));
        }
    }

    fn test_done(&self, t: &TestResult) {
        if !self.live {
            return;
        }
        let mut s = text::test_end(t);
        for n in &t.notes {
            s.push_str(&format!("WARNING: {n}\n"));
        }
        print_now(&s);
    }
}

/// Prints at once; a closed stdout stops the run (crate::output).
fn print_now(s: &str) {
    let _ = crate::output::print_bytes(s.as_bytes());
}

/// IOR's command line as clap arguments (for completions).
pub fn command() -> clap::Command {
    crate::completions::ior_command()
}
