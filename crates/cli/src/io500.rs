//! `iolab io500 config.ini`: the IO500 benchmark. Reads and checks the
//! ini (exit 2 naming what is wrong, before anything is created), makes
//! the datadir and resultdir, runs the phases (crates/io500) on the
//! communicator, prints the `[RESULT]`/`[SCORE ]` lines and writes
//! result_summary.txt, result.txt and result.json into the resultdir.

use crate::store_hook::StoreHook;
use iolab_backend::Backend;
use iolab_comm::{connect, CommMode, Transport, World};
use iolab_core::env::{fs_info, host_info};
use iolab_core::{Failure, Outcome};
use iolab_io500::ini::Ini;
use iolab_io500::run::{RunObserver, Runner};
use iolab_io500::{cleanup, commands, mdphase, validity, Config, Layout, Phase, PhaseReport};
use iolab_mdtest::output::{check_writable, write_atomically};
use iolab_report::io500 as fmt;
use iolab_results::{Envelope, Environment};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Most tasks (threads) per process.
const MAX_TASKS: usize = 4096;

#[derive(clap::Parser, Debug)]
#[command(
    about = "The IO500 benchmark from one binary: the io500 app's ini file, phases and score lines"
)]
struct Cli {
    /// The io500 ini file (`iolab io500 --list` prints every key).
    ini: Option<PathBuf>,
    /// Tasks (threads) per process; under mpirun, per rank.
    #[arg(long, default_value_t = 1)]
    tasks: usize,
    /// Print every section and key with its default, as `io500 --list`.
    #[arg(long)]
    list: bool,
    /// Print each phase's equivalent command; run and create nothing.
    #[arg(long)]
    dry_run: bool,
    /// Remove what a killed run left under datadir, as `io500 --cleanup`.
    #[arg(long)]
    cleanup: bool,
    /// `standard` runs the 12 scored phases; `extended` also runs
    /// md-workbench, find-easy, find-hard and ior-rnd4K-easy-read and prints `[SCOREX]`,
    /// as the io500 app's `--mode=extended`.
    #[arg(long, default_value = "standard", value_parser = ["standard", "extended"])]
    mode: String,
    /// Record the run and its phases' scores in this results store.
    #[arg(long)]
    store: Option<PathBuf>,
    /// How the mdtest phases' tasks issue their operations: `sync` (one
    /// at a time) or `uring` (io_uring, `--qd` in flight per task).
    #[arg(long, default_value = "sync", value_parser = ["sync", "uring"])]
    engine: String,
    /// Operations each task keeps in flight with `--engine uring` (1 to 4096).
    #[arg(long)]
    qd: Option<u32>,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> ExitCode {
    let command = std::iter::once(format!("iolab {prog}"))
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    // `--s3.bucket=B` and the like are the backend's, as for mdtest.
    let (backend_opts, args) = iolab_backend::split_args(&args);
    let cli: Cli = match crate::exit::parse_clap(prog, args) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if cli.list {
        let _ = out!("{}", iolab_io500::ini::list());
        return ExitCode::SUCCESS;
    }
    let s = match prepare(&cli, &backend_opts) {
        Ok(s) => s,
        Err(e) => {
            if iolab_comm::launcher_rank().unwrap_or(0) == 0 {
                eprintln!("{prog}: {}", e.msg);
            }
            return match e.failure {
                Some(f) => crate::exit::status(&Outcome::Error(f)),
                None => crate::exit::usage(),
            };
        }
    };
    if cli.dry_run {
        return dry_run(&s);
    }
    if cli.cleanup {
        return cleanup_only(prog, &s);
    }
    run(prog, s, &cli, command)
}

/// A checked run, before anything is created.
struct Setup {
    cfg: Config,
    ini_text: String,
    layout: Layout,
    resultdir: PathBuf,
    world: World,
    threads: usize,
    backend: Box<dyn Backend>,
}

impl Setup {
    fn transport(&self) -> Arc<dyn Transport> {
        self.world.transport()
    }
    fn leader(&self) -> bool {
        self.transport().rank() == 0
    }
}

/// Why a run did not start: bad input (exit 2), or a backend that could
/// not start, such as a storage service refusing the credentials (exit 1).
struct NotStarted {
    msg: String,
    failure: Option<Failure>,
}

impl From<String> for NotStarted {
    fn from(msg: String) -> Self {
        NotStarted { msg, failure: None }
    }
}

fn prepare(cli: &Cli, backend_opts: &[String]) -> Result<Setup, NotStarted> {
    let Some(file) = &cli.ini else {
        return Err(String::from(
            "give the ini file: iolab io500 config.ini (iolab io500 --list prints every key)",
        )
        .into());
    };
    let ini_text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read the ini file: {e}", file.display()))?;
    let ini = Ini::parse(&ini_text, &file.display().to_string()).map_err(|e| e.to_string())?;
    let mut cfg = Config::from_ini(&ini, file.clone()).map_err(|e| e.to_string())?;
    if cli.mode == "extended" {
        cfg = cfg
            .extended()
            .map_err(|e| format!("--mode=extended: {e}"))?;
    }
    cfg.md_queue_depth = md_engine(cli)?;
    if cli.tasks == 0 || cli.tasks > MAX_TASKS {
        return Err(format!("--tasks {}: must be 1 to {MAX_TASKS}", cli.tasks).into());
    }
    let world = connect(CommMode::Auto).map_err(|e| e.to_string())?;
    let tasks = (cli.tasks * world.transport().size()) as u64;
    cfg.check_tasks(tasks, cli.tasks as u64)
        .map_err(|e| e.to_string())?;
    let stamp = start_stamp(&*world.transport());
    let with = |p: &Path, on: bool| if on { p.join(&stamp) } else { p.to_path_buf() };
    let resultdir = with(&cfg.resultdir, cfg.timestamp_resultdir);
    let layout = Layout {
        datadir: with(&cfg.datadir, cfg.timestamp_datadir),
        private_dir: resultdir.clone(),
    };
    for p in Phase::ALL
        .into_iter()
        .filter(|p| p.base_section().starts_with("mdtest"))
    {
        mdphase::check(
            &commands::mdtest_args(&cfg, &layout, p, cli.tasks as u64),
            tasks,
        )
        .map_err(|e| format!("[{}]: {e}", p.base_section()))?;
    }
    let opts = iolab_backend::parse_options(backend_opts).map_err(|e| e.to_string())?;
    let backend = iolab_backend::with_options(cfg.api(Phase::IorEasyWrite), &opts)
        .map_err(|e| format!("api: {e}"))?;
    iolab_io500::check_backend(&cfg, &*backend).map_err(|e| e.to_string())?;
    if !cli.dry_run {
        // Before anything asks the backend (an object store answers only
        // once its connection is set up).
        backend.init().map_err(|e| NotStarted {
            msg: format!("cannot start the {} backend: {e}", backend.name()),
            failure: Some(Failure::io("backend init", None, &e)),
        })?;
    }
    Ok(Setup {
        resultdir,
        cfg,
        ini_text,
        layout,
        world,
        threads: cli.tasks,
        backend,
    })
}

/// The mdtest phases' queue depth from `--engine` and `--qd`.
fn md_engine(cli: &Cli) -> Result<Option<u32>, String> {
    match (cli.engine.as_str(), cli.qd) {
        ("uring", qd) => {
            let qd = qd.unwrap_or(iolab_mdtest::config::DEFAULT_QD as u32);
            match u64::from(qd) {
                1..=iolab_mdtest::config::MAX_QD => Ok(Some(qd)),
                _ => Err(format!(
                    "--qd {qd}: between 1 and {}",
                    iolab_mdtest::config::MAX_QD
                )),
            }
        }
        (_, Some(_)) => Err("--qd: operations in flight need --engine uring".into()),
        _ => Ok(None),
    }
}

/// IO500's `%Y.%m.%d-%H.%M.%S` start time, rank 0's on every rank.
fn start_stamp(t: &dyn Transport) -> String {
    let mine = iolab_core::clock::format_local(
        iolab_core::clock::wall_ns() / 1_000_000_000,
        "%Y.%m.%d-%H.%M.%S",
    );
    let all = t.all_gather(mine.as_bytes());
    all.first()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or(mine)
}

fn dry_run(s: &Setup) -> ExitCode {
    if s.leader() {
        let cmds: Vec<(String, String)> = s
            .cfg
            .phases()
            .iter()
            .map(|&p| {
                let c = commands::equivalent_command(&s.cfg, &s.layout, p, s.threads as u64);
                (p.name().to_string(), c)
            })
            .collect();
        print_now(&fmt::dry_run(&cmds));
    }
    ExitCode::SUCCESS
}

/// `--cleanup`: removes what the phases make under datadir (and, with
/// timestamp-datadir, under each of its timestamped directories).
fn cleanup_only(prog: &str, s: &Setup) -> ExitCode {
    if !s.leader() {
        return ExitCode::SUCCESS;
    }
    let left = cleanup::cleanup_datadir(
        &*s.backend,
        &s.cfg.datadir,
        s.cfg.timestamp_datadir,
        &s.layout.private_dir,
    );
    for l in &left {
        eprintln!(
            "{prog}: left (not made by io500 phases, or not removable): {}",
            l.display()
        );
    }
    ExitCode::SUCCESS
}

/// Prints each phase's `[RESULT]` line as it ends.
struct Printer<'a> {
    cfg: &'a Config,
}

impl RunObserver for Printer<'_> {
    fn phase_done(&self, r: &PhaseReport) {
        print_now(&fmt::result_line(r, validity::phase_invalid(self.cfg, r)));
        if let iolab_io500::results::Detail::Failed(why) = &r.detail {
            eprintln!("iolab io500: {} failed: {why}", r.name);
        }
    }
}

/// The files the run writes into resultdir.
fn outputs(resultdir: &Path) -> [PathBuf; 3] {
    ["result_summary.txt", "result.txt", "result.json"].map(|n| resultdir.join(n))
}

/// Checks and creates what the run needs (rank 0), before any phase.
fn make_dirs(s: &Setup, store: Option<&Path>) -> Result<(StoreHook, bool), String> {
    if !s.leader() {
        return Ok((StoreHook::none(), false));
    }
    let be = &*s.backend;
    iolab_io500::check_leftovers(be, &s.layout)?;
    let existing = nearest_existing(&s.resultdir);
    if !existing.is_dir() {
        return Err(format!(
            "resultdir {}: {} is not a directory",
            s.resultdir.display(),
            existing.display()
        ));
    }
    if s.resultdir.is_dir() {
        for f in outputs(&s.resultdir) {
            check_writable(&f).map_err(|e| format!("resultdir: {e}"))?;
        }
    } else {
        check_writable(&existing.join(".iolab-io500")).map_err(|e| format!("resultdir: {e}"))?;
    }
    let store = StoreHook::open(store)?;
    let created_datadir = !iolab_backend::c_path(&s.layout.datadir)
        .and_then(|c| be.exists(&c))
        .unwrap_or(true);
    std::fs::create_dir_all(&s.resultdir)
        .map_err(|e| format!("resultdir {}: cannot create: {e}", s.resultdir.display()))?;
    iolab_io500::prepare_datadir(be, &s.layout).map_err(|e| format!("datadir: {e}"))?;
    Ok((store, created_datadir))
}

fn nearest_existing(p: &Path) -> PathBuf {
    let mut q = p;
    loop {
        if q.exists() {
            return q.to_path_buf();
        }
        match q.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => q = parent,
            _ => return PathBuf::from("."),
        }
    }
}

fn run(prog: &str, s: Setup, cli: &Cli, command: String) -> ExitCode {
    let t = s.transport();
    let made = make_dirs(&s, cli.store.as_deref());
    // Every rank learns whether rank 0 could set up, so none runs alone.
    let ok = t
        .all_gather(&[u8::from(made.is_ok())])
        .iter()
        .all(|v| v.first() == Some(&1));
    let (store, created_datadir) = match (made, ok) {
        (Ok(m), true) => m,
        (Err(e), _) => {
            eprintln!("{prog}: {e}");
            return crate::exit::usage();
        }
        (Ok(_), false) => return crate::exit::usage(),
    };
    if s.leader() {
        print_now(&format!(
            "IO500 version iolab-{} (the io500 app's phases on iolab's engines)\nresult-dir = {}\n",
            env!("CARGO_PKG_VERSION"),
            s.resultdir.display()
        ));
    }
    crate::signals::set_last_words(format!(
        "\n{prog}: stopped at once by a second signal; cleanup was skipped. What this run made may be left in {}\n{prog}: remove it with: iolab io500 --cleanup {}\n",
        s.layout.datadir.display(),
        s.cfg.ini_file.display()
    ));
    let printer = Printer { cfg: &s.cfg };
    let runner = Runner {
        cfg: &s.cfg,
        layout: s.layout.clone(),
        resultdir: s.resultdir.display().to_string(),
        transport: t.clone(),
        threads: s.threads,
        backend: &*s.backend,
        observer: &printer,
    };
    let result = runner.run();
    // Dropping `s` at each return finalises MPI: bounded after a failed or
    // interrupted run (see `bound_mpi_finalize`).
    if !s.leader() {
        crate::signals::bound_mpi_finalize(crate::exit::code(&result.outcome));
        return crate::exit::status(&result.outcome);
    }
    if created_datadir {
        // The datadir this run made (a timestamped one, usually) goes too.
        let _ = iolab_backend::c_path(&s.layout.datadir).and_then(|c| s.backend.rmdir(&c));
    }
    if let Err(e) = s.backend.finalize() {
        eprintln!(
            "{prog}: warning: the {} backend did not finish cleanly: {e}",
            s.backend.name()
        );
    }
    let outcome = finish(prog, &s, &store, result, &command);
    crate::signals::bound_mpi_finalize(crate::exit::code(&outcome));
    crate::exit::status(&outcome)
}

/// Prints the score line, writes the resultdir's files and records the
/// run; returns how the run ended (a file that cannot be written is an
/// error).
fn finish(
    prog: &str,
    s: &Setup,
    store: &StoreHook,
    result: iolab_io500::RunResult,
    command: &str,
) -> Outcome {
    let p = &result.payload;
    let invalid: Vec<bool> = p
        .phases
        .iter()
        .map(|r| validity::phase_invalid(&s.cfg, r))
        .collect();
    print_now(&fmt::score_line(&p.score, p.valid));
    print_now(&fmt::scorex_line(p).unwrap_or_default());
    for n in &p.notes {
        eprintln!("{prog}: note: {n}");
    }
    for l in &p.left_behind {
        eprintln!("{prog}: left behind: {l}");
    }
    let mut doc = envelope(s, &result, command);
    let [summary, txt, json] = outputs(&s.resultdir);
    let mut outcome = result.outcome.clone();
    for (path, bytes) in [
        (&summary, fmt::summary(p, &invalid)),
        (&txt, fmt::result_txt(p, &s.ini_text)),
    ] {
        if let Err(e) = write_atomically(path, bytes.as_bytes()) {
            eprintln!("{prog}: {}: cannot write: {e}", path.display());
            outcome = outcome.worst(Outcome::Error(Failure::io(
                "write",
                Some(path.display().to_string()),
                &e,
            )));
        }
    }
    doc.outcome = outcome.clone();
    if let Err(e) = write_atomically(&json, doc.to_json().as_bytes()) {
        eprintln!("{prog}: {}: cannot write: {e}", json.display());
        outcome = outcome.worst(Outcome::Error(Failure::io(
            "write",
            Some(json.display().to_string()),
            &e,
        )));
    }
    if let Err(f) = store.record(&doc) {
        eprintln!("{prog}: {f}");
        outcome = outcome.worst(Outcome::Error(f));
    }
    outcome
}

fn envelope(
    s: &Setup,
    result: &iolab_io500::RunResult,
    command: &str,
) -> Envelope<Config, iolab_io500::Io500Payload> {
    let environment = Environment {
        host: host_info(),
        filesystems: vec![fs_info(
            &s.layout
                .datadir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        )],
    };
    let mut doc = Envelope::new(
        iolab_io500::SCHEMA,
        "io500",
        command,
        s.cfg.clone(),
        environment,
        result.outcome.clone(),
        result.payload.clone(),
    );
    doc.notes = result.payload.notes.clone();
    doc.notes.extend(s.backend.notes());
    doc.notes.extend(
        result
            .payload
            .invalid_reasons
            .iter()
            .map(|r| format!("invalid: {r}")),
    );
    doc.tool.compatible_with = Some("io500 app (ISC/SC lists), 12 scored phases".into());
    doc.finished_unix_ns = iolab_core::clock::wall_ns();
    doc
}

/// Prints at once; a closed stdout stops the run (crate::output).
fn print_now(s: &str) {
    let _ = crate::output::print_bytes(s.as_bytes());
}
