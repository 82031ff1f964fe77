//! `iolab io500 config.ini`: the IO500 benchmark. Reads and checks the
//! ini (exit 2 naming what is wrong, before anything is created), makes
//! the datadir and resultdir, runs the phases (crates/io500) on the
//! communicator, prints the `[RESULT]`/`[SCORE ]` lines and writes
//! result_summary.txt, result.txt and result.json into the resultdir.

use crate::exit::{Ended, Halt, HaltKind, NotStarted};
use crate::runner::{options, Render, Report, Run, RunOptions, Session};
use iolab_backend::Backend;
use iolab_comm::{connect, CommMode, Transport, World};
use iolab_core::env::fs_info;
use iolab_core::{Failure, Outcome};
use iolab_io500::ini::Ini;
use iolab_io500::run::{RunObserver, Runner};
use iolab_io500::{cleanup, commands, mdphase, validity, Config, Layout, Phase, PhaseReport};
use iolab_mdtest::output::{check_writable, write_atomically};
use iolab_report::io500 as fmt;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
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
    /// --store: the run and its phases' scores recorded (the runner's);
    /// the JSON is always resultdir/result.json.
    #[command(flatten)]
    run: RunOptions<{ options::STORE }>,
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
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let command = std::iter::once(format!("iolab {prog}"))
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    // `--s3.bucket=B` and the like are the backend's, as for mdtest.
    let (backend_opts, args) = iolab_backend::split_args(&args);
    let cli: Cli = crate::exit::parse_clap(prog, args)?;
    if cli.list {
        let _ = out!("{}", iolab_io500::ini::list());
        return Err(Halt::shown());
    }
    if let Some(e) = ignored_with(&cli) {
        return Err(Halt::usage(format!("iolab {prog}: {e}")));
    }
    let s = prepare(&cli, &backend_opts).map_err(|e| e.halt(prog))?;
    if cli.dry_run {
        return dry_run(&s);
    }
    if cli.cleanup {
        return cleanup_only(prog, &s);
    }
    run(prog, s, &cli, command)
}

/// An option the chosen mode would ignore: --dry-run runs nothing, so
/// records nothing and cleans nothing; --cleanup records nothing.
fn ignored_with(cli: &Cli) -> Option<&'static str> {
    match (cli.dry_run, cli.cleanup, cli.run.store.is_some()) {
        (true, true, _) => {
            Some("--dry-run with --cleanup: a dry run removes nothing; give one of them")
        }
        (true, _, true) => Some("--dry-run with --store: a dry run records nothing; drop --store"),
        (_, true, true) => Some("--cleanup with --store: a cleanup records nothing; drop --store"),
        _ => None,
    }
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
        // A missing bucket or a refused option is bad input (exit 2), a
        // service that fails an I/O error (exit 1), as for mdtest and xdd.
        backend
            .init()
            .map_err(|e| NotStarted::backend_init(backend.name(), &e))?;
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

fn dry_run(s: &Setup) -> Ended {
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
    Ok(Outcome::Completed)
}

/// `--cleanup`: removes what the phases make under datadir (and, with
/// timestamp-datadir, under each of its timestamped directories).
fn cleanup_only(prog: &str, s: &Setup) -> Ended {
    if !s.leader() {
        return Ok(Outcome::Completed);
    }
    let be = &*s.backend;
    let (datadir, stamped) = (&s.cfg.datadir, s.cfg.timestamp_datadir);
    // What there is, then a bar on a terminal, as after a Ctrl-C.
    let printer = Printer::new(&s.cfg, prog, false);
    let (entries, inside) = cleanup::count_datadir(be, datadir, stamped);
    if inside > 0 {
        printer.cleanup_started(datadir, entries);
    }
    // Ctrl-C stops it cleanly, naming what it did not get to.
    let tick = |n: u64| {
        printer.cleanup_progress(n);
        !crate::runner::root().is_cancelled()
    };
    let out = cleanup::cleanup_datadir(be, datadir, stamped, &s.layout.private_dir, Some(&tick));
    printer.cleanup_done(&out);
    for l in &out.left {
        iolab_core::say!("{prog}: left: {l}");
    }
    Ok(match out.confirmed() {
        true => Outcome::Completed,
        _ if crate::runner::root().is_cancelled() => Outcome::Interrupted,
        // A listing or removal that failed: what it holds is not known.
        false => Outcome::Error(Failure::other(
            "cleanup",
            "not all of the datadir could be listed or removed",
        )),
    })
}

/// Prints each phase's `[RESULT]` line as it ends, and the final
/// cleanup's progress: a bar on a terminal, a line before and after it
/// in scripts.
struct Printer<'a> {
    cfg: &'a Config,
    prog: &'a str,
    /// How to stop the cleanup, and what then removes the rest.
    hint: String,
    cleanup: std::sync::Mutex<Option<(u64, Option<indicatif::ProgressBar>)>>,
}

impl<'a> Printer<'a> {
    /// For a run (`run`) or for `--cleanup`.
    fn new(cfg: &'a Config, prog: &'a str, run: bool) -> Self {
        let ini = cfg.ini_file.display();
        let hint = match run {
            true => format!(
                "a second Ctrl-C stops at once; iolab io500 --cleanup {ini} removes the rest"
            ),
            false => "Ctrl-C stops; the same command removes the rest".to_string(),
        };
        Printer {
            cfg,
            prog,
            hint,
            cleanup: std::sync::Mutex::new(None),
        }
    }
}

impl RunObserver for Printer<'_> {
    fn phase_done(&self, r: &PhaseReport) {
        print_now(&fmt::result_line(r, validity::phase_invalid(self.cfg, r)));
        if let iolab_io500::results::Detail::Failed(why) = &r.detail {
            iolab_core::say!("iolab io500: {} failed: {why}", r.name);
        }
    }

    fn cleanup_started(&self, datadir: &Path, entries: u64) {
        if entries == 0 {
            return;
        }
        let prog = self.prog;
        let why = match crate::runner::root().is_cancelled() {
            true => "interrupted; removing",
            false => "removing",
        };
        iolab_core::say!(
            "{prog}: {why} what the phases left in {}: {entries} entries ({})",
            datadir.display(),
            self.hint
        );
        let bar = crate::progress::shown(true).then(|| {
            let b = crate::progress::bar(entries, crate::progress::Unit::Items);
            b.set_message("removing");
            b
        });
        *self.cleanup.lock().unwrap_or_else(|e| e.into_inner()) = Some((entries, bar));
    }

    fn cleanup_progress(&self, removed: u64) {
        if let Some((_, Some(b))) = &*self.cleanup.lock().unwrap_or_else(|e| e.into_inner()) {
            b.set_position(removed);
        }
    }

    fn cleanup_done(&self, r: &iolab_backend::remove::Removal) {
        let Some((entries, bar)) = self
            .cleanup
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        iolab_core::say!("{}: removed {} of {entries} entries", self.prog, r.removed);
    }
}

/// The files the run writes into resultdir.
fn outputs(resultdir: &Path) -> [PathBuf; 3] {
    ["result_summary.txt", "result.txt", "result.json"].map(|n| resultdir.join(n))
}

/// Checks and creates what the run needs (rank 0), before any phase:
/// the datadir and the resultdir checked, the run opened through the
/// runner (`--store`), then the resultdir and datadir made. Returns the
/// session (rank 0) and the directories made for the datadir (removed
/// at the end).
fn make_dirs(
    prog: &str,
    s: &Setup,
    cli: &Cli,
    command: &str,
) -> Result<(Option<Session<Config>>, Vec<PathBuf>), String> {
    if !s.leader() {
        return Ok((None, Vec::new()));
    }
    let be = &*s.backend;
    iolab_io500::check_datadir(be, &s.layout).map_err(|e| e.to_string())?;
    check_resultdir(s)?;
    // Everything is checked: the store is the first thing made.
    let run = Run::new(
        prog,
        "io500",
        iolab_io500::SCHEMA,
        command,
        s.cfg.clone(),
        cli.run.0.clone(),
    );
    let session = run
        .compatible_with("io500 app (ISC/SC lists), 12 scored phases")
        .open()
        .map_err(|h| NotStarted::refused(prog, h).msg)?;
    std::fs::create_dir_all(&s.resultdir)
        .map_err(|e| format!("resultdir {}: cannot create: {e}", s.resultdir.display()))?;
    let made = iolab_io500::prepare_datadir(be, &s.layout).map_err(|e| format!("datadir: {e}"))?;
    Ok((Some(session), made))
}

/// Checks the resultdir before anything is made: the lengths of its
/// names, a directory (not a file, not a link to nothing) where it or
/// its nearest existing ancestor is, room to write the results, no
/// entry of the names mdtest's stonewall files take, and not inside
/// what the run removes at its end.
fn check_resultdir(s: &Setup) -> Result<(), String> {
    // result_summary.txt is the longest name written there.
    iolab_io500::datadir::check_lengths("resultdir", &s.resultdir, 32)
        .map_err(|e| e.to_string())?;
    let existing = nearest_existing(&s.resultdir);
    if !existing.is_dir() {
        return Err(format!(
            "resultdir {}: {} is not a directory (or a link to one)",
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
    iolab_io500::check_private_files(&s.layout).map_err(|e| e.to_string())?;
    iolab_io500::check_resultdir(&*s.backend, &s.layout).map_err(|e| e.to_string())
}

/// The nearest of `p` and its ancestors that is there, a link to
/// nothing included (so that it is refused, not made through).
fn nearest_existing(p: &Path) -> PathBuf {
    let mut q = p;
    loop {
        if q.symlink_metadata().is_ok() {
            return q.to_path_buf();
        }
        match q.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => q = parent,
            _ => return PathBuf::from("."),
        }
    }
}

fn run(prog: &str, s: Setup, cli: &Cli, command: String) -> Ended {
    let t = s.transport();
    let made = make_dirs(prog, &s, cli, &command);
    // Every rank learns whether rank 0 could set up, so none runs alone.
    let ok = t
        .all_gather(&[u8::from(made.is_ok())])
        .iter()
        .all(|v| v.first() == Some(&1));
    let (session, made) = match (made, ok) {
        (Ok(m), true) => m,
        (Err(e), _) => return Err(Halt::usage(format!("{prog}: {e}"))),
        (Ok(_), false) => return Err(Halt::said(HaltKind::Usage)),
    };
    if s.leader() {
        print_now(&format!(
            "IO500 version iolab-{} (the io500 app's phases on iolab's engines)\nresult-dir = {}\n",
            env!("CARGO_PKG_VERSION"),
            s.resultdir.display()
        ));
    }
    crate::signals::set_last_words(format!(
        "\n{prog}: stopped at once by a second signal; cleanup was skipped or cut short. What this run made may be left in {}\n{prog}: remove it with: iolab io500 --cleanup {}\n",
        s.layout.datadir.display(),
        s.cfg.ini_file.display()
    ));
    let printer = Printer::new(&s.cfg, prog, true);
    // The live sampler: through the session on rank 0, which states its
    // run id; the other ranks only report to rank 0.
    let mut session = session;
    let peers = crate::live::peers(&s.world);
    let (board, rank_live) = match session.as_mut() {
        Some(x) => (x.live(false, peers), None),
        None => {
            let h = crate::live::start("io500", false, false, peers);
            (h.shared(), Some(h))
        }
    };
    if let Some(x) = session.as_mut() {
        x.start();
    }
    // The session's token on rank 0; the other ranks have no session and
    // run under a child of the process's root (an MPI peer's stop reaches
    // them through the stop flag the root is tied to).
    let cancel = match session.as_ref() {
        Some(x) => x.cancel().clone(),
        None => crate::runner::root().child(),
    };
    let runner = Runner {
        cfg: &s.cfg,
        layout: s.layout.clone(),
        resultdir: s.resultdir.display().to_string(),
        transport: t.clone(),
        threads: s.threads,
        backend: &*s.backend,
        observer: &printer,
        live: board.as_deref(),
        cancel: &cancel,
    };
    let mut result = runner.run();
    if let Some(h) = rank_live {
        result.outcome = h.finish().outcome(result.outcome.clone());
    }
    // Dropping `s` at each return finalises MPI: bounded after a failed or
    // interrupted run (see `bound_mpi_finalize`).
    let Some(session) = session else {
        crate::signals::bound_mpi_finalize(crate::exit::code(&result.outcome));
        return Ok(result.outcome);
    };
    // The datadir this run made (a timestamped one, usually) goes too,
    // with the parents it made for it, each only when empty.
    iolab_io500::remove_made(&*s.backend, &made);
    if let Err(e) = s.backend.finalize() {
        iolab_core::say!(
            "{prog}: warning: the {} backend did not finish cleanly: {e}",
            s.backend.name()
        );
    }
    let outcome = finish(prog, &s, session, result);
    crate::signals::bound_mpi_finalize(crate::exit::code(&outcome));
    Ok(outcome)
}

/// Prints the score line, writes the resultdir's text files and hands
/// the report to the runner, which writes result.json and records the
/// run; returns how the run ended (a file that cannot be written is an
/// error).
fn finish(
    prog: &str,
    s: &Setup,
    mut session: Session<Config>,
    result: iolab_io500::RunResult,
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
        iolab_core::say!("{prog}: note: {n}");
    }
    session.stop_watching(&result.outcome);
    let [summary, txt, json] = outputs(&s.resultdir);
    let mut outcome = result.outcome.clone();
    for (path, bytes) in [
        (&summary, fmt::summary(p, &invalid)),
        (&txt, fmt::result_txt(p, &s.ini_text)),
    ] {
        if let Err(e) = write_atomically(path, bytes.as_bytes()) {
            iolab_core::say!("{prog}: {}: cannot write: {e}", path.display());
            outcome = outcome.worst(Outcome::Error(Failure::io(
                "write",
                Some(path.display().to_string()),
                &e,
            )));
        }
    }
    session.document_at(json);
    let mut report = Report::new(outcome, p);
    report.notes = p.notes.clone();
    report.notes.extend(s.backend.notes());
    report
        .notes
        .extend(p.invalid_reasons.iter().map(|r| format!("invalid: {r}")));
    report.figures = fmt::figures(p);
    report.left_behind = p.left_behind.clone();
    report.filesystems = vec![fs_info(
        &s.layout
            .datadir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    )];
    session.finish(report, Render::plain())
}

/// Prints at once; a closed stdout stops the run (crate::output).
fn print_now(s: &str) {
    let _ = crate::output::print_bytes(s.as_bytes());
}
