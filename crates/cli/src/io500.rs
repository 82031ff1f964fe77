//! `iolab io500 config.ini`: the IO500 benchmark. Reads and checks the
//! ini (exit 2 naming what is wrong, before anything is created), makes
//! the datadir and resultdir, runs the phases (crates/io500) on the
//! communicator, prints the `[RESULT]`/`[SCORE ]` lines and writes
//! result_summary.txt, result.txt and result.json into the resultdir.

use crate::exit::{Ended, Halt, NotStarted};
use crate::runner::{options, Render, Report, Run, RunOptions, Session};
use iolab_backend::Backend;
use iolab_comm::{connect, CommMode, Transport, World};
use iolab_core::env::fs_info;
use iolab_core::{Failure, Outcome};
use iolab_io500::ini::Ini;
use iolab_io500::results::Detail;
use iolab_io500::run::{RunObserver, Runner};
use iolab_io500::{
    cleanup, commands, mdphase, validity, Config, Layout, Phase, PhaseReport, Prepared,
};
use iolab_mdtest::output::check_writable;
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
    /// The name the timestamped datadir and resultdir take, as the app's
    /// `--timestamp` (default: the start time, %Y.%m.%d-%H.%M.%S).
    #[arg(long, value_name = "NAME")]
    timestamp: Option<String>,
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
    let s = prepare(prog, &cli, &backend_opts)?;
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
    /// The name of the timestamped directories: `--timestamp`'s, else the
    /// start time.
    stamp: String,
    /// `--timestamp NAME` was given.
    named: bool,
    /// The backend's options (`--s3.bucket=B`), for the cleanup command
    /// the run names.
    backend_opts: Vec<String>,
}

impl Setup {
    fn transport(&self) -> Arc<dyn Transport> {
        self.world.transport()
    }
    fn leader(&self) -> bool {
        self.transport().rank() == 0
    }
}

/// Reads and checks the ini and the options; under MPI every rank
/// checks, and the ranks agree on the options and the verdict before any
/// of them goes on (`ranks`).
fn prepare(prog: &str, cli: &Cli, backend_opts: &[String]) -> Result<Setup, Halt> {
    let read = read_config(cli);
    // Also when the ini was refused: the ranks say so together.
    let world = connect(CommMode::Auto).map_err(|e| NotStarted::from(e.to_string()).halt(prog))?;
    // Rank 0's start time: a collective, so every rank reaches it
    // whatever its ini said.
    let stamp = start_stamp(&*world.transport());
    let options = read
        .as_ref()
        .ok()
        .map(|(cfg, _)| option_lines(cfg, cli, backend_opts));
    let checked =
        read.and_then(|(cfg, ini_text)| check(cli, backend_opts, cfg, ini_text, &world, stamp));
    let c = crate::ranks::settle(prog, &world, options.as_deref(), checked)?;
    Ok(Setup {
        cfg: c.cfg,
        ini_text: c.ini_text,
        layout: c.layout,
        resultdir: c.resultdir,
        world,
        threads: cli.tasks,
        backend: c.backend,
        stamp: c.stamp,
        named: cli.timestamp.is_some(),
        backend_opts: backend_opts.to_vec(),
    })
}

/// What one rank checked, before the ranks agree.
struct Checked {
    cfg: Config,
    ini_text: String,
    layout: Layout,
    resultdir: PathBuf,
    backend: Box<dyn Backend>,
    stamp: String,
}

/// What the ranks compare: the ini's values and the options.
fn option_lines(cfg: &Config, cli: &Cli, backend_opts: &[String]) -> Vec<String> {
    let mut lines = crate::ranks::option_lines(cfg, &[]);
    lines.extend([
        format!("--tasks = {}", cli.tasks),
        format!("--mode = {}", cli.mode),
        format!("--engine = {}", cli.engine),
        format!("--qd = {:?}", cli.qd),
        format!("--timestamp = {:?}", cli.timestamp),
        format!("--dry-run = {}", cli.dry_run),
        format!("--cleanup = {}", cli.cleanup),
        format!("backend options = {}", backend_opts.join(" ")),
    ]);
    lines
}

/// The ini read and checked alone, and its text.
fn read_config(cli: &Cli) -> Result<(Config, String), NotStarted> {
    let Some(file) = &cli.ini else {
        return Err(String::from(
            "give the ini file: iolab io500 config.ini (iolab io500 --list prints every key)",
        )
        .into());
    };
    let ini_text = iolab_core::input::read_text(file, iolab_core::input::TEXT_MAX_BYTES)
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
    Ok((cfg, ini_text))
}

/// This rank's checks, touching nothing: the task count, each mdtest
/// phase's command line, the backend; `stamp` is rank 0's start time.
fn check(
    cli: &Cli,
    backend_opts: &[String],
    cfg: Config,
    ini_text: String,
    world: &World,
    stamp: String,
) -> Result<Checked, NotStarted> {
    let tasks = (cli.tasks * world.transport().size()) as u64;
    cfg.check_tasks(tasks, cli.tasks as u64)
        .map_err(|e| e.to_string())?;
    let stamp = match &cli.timestamp {
        Some(t) => checked_stamp(t)?,
        None => stamp,
    };
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
    Ok(Checked {
        cfg,
        ini_text,
        layout,
        resultdir,
        backend,
        stamp,
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

/// `--timestamp NAME`: one directory name (no `/`, not `.` or `..`).
fn checked_stamp(t: &str) -> Result<String, String> {
    match t {
        "" | "." | ".." => Err(format!("--timestamp '{t}': give a directory name")),
        _ if t.contains(['/', '\0']) => Err(format!(
            "--timestamp '{t}': one directory name, without '/'"
        )),
        _ => Ok(t.to_string()),
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
        // A phase the run would skip is said so, not given a command.
        let cmds: Vec<(String, Result<String, String>)> = s
            .cfg
            .phases()
            .iter()
            .map(|&p| {
                let c = match s.cfg.not_run(p) {
                    Some(why) => Err(why),
                    None => Ok(commands::equivalent_command(
                        &s.cfg,
                        &s.layout,
                        p,
                        s.threads as u64,
                    )),
                };
                (p.name().to_string(), c)
            })
            .collect();
        print_now(&fmt::dry_run(&cmds));
    }
    Ok(Outcome::Completed)
}

/// `--cleanup`: removes what the phases make under datadir (and, with
/// timestamp-datadir, under each of its timestamped directories, or only
/// under the one `--timestamp NAME` names), says how much it found and
/// removed, or that there was nothing to remove.
fn cleanup_only(prog: &str, s: &Setup) -> Ended {
    if !s.leader() {
        return Ok(Outcome::Completed);
    }
    let be = &*s.backend;
    let datadir = &s.cfg.datadir;
    let (runs, shown) = match (s.cfg.timestamp_datadir, s.named) {
        (false, _) => (cleanup::Runs::Datadir, datadir),
        (true, false) => (cleanup::Runs::Stamped, datadir),
        (true, true) => (cleanup::Runs::Named(&s.stamp), &s.layout.datadir),
    };
    let private = &s.layout.private_dir;
    // What there is, then a bar on a terminal, as after a Ctrl-C.
    let printer = Printer::new(&s.cfg, prog, false, cleanup_command(s));
    let entries = cleanup::count_datadir(be, datadir, runs, private);
    printer.cleanup_started(shown, entries);
    // Ctrl-C stops it cleanly, naming what it did not get to.
    let tick = |n: u64| {
        printer.cleanup_progress(n);
        !crate::runner::root().is_cancelled()
    };
    let out = cleanup::cleanup_datadir(be, datadir, runs, private, Some(&tick));
    printer.cleanup_done(&out);
    for l in &out.left {
        iolab_core::say!("{prog}: left: {l}");
    }
    if entries == 0 && out.removed == 0 {
        iolab_core::say!("{prog}: nothing to remove: {}", nothing_there(s, runs));
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

/// Where `--cleanup` looked and found nothing a run makes; with
/// timestamp-datadir and no `--timestamp`, that a run given a name of
/// its own is cleaned by naming it.
fn nothing_there(s: &Setup, runs: cleanup::Runs) -> String {
    let (datadir, private) = (s.cfg.datadir.display(), s.layout.private_dir.display());
    let place = match runs {
        cleanup::Runs::Datadir => datadir.to_string(),
        cleanup::Runs::Named(_) => s.layout.datadir.display().to_string(),
        cleanup::Runs::Stamped => format!(
            "{datadir} or its timestamped directories (named by a start time, %Y.%m.%d-%H.%M.%S; for a run given --timestamp NAME add --timestamp NAME)"
        ),
    };
    format!("no file a run makes in {place}, and no stonewall file in {private}")
}

/// The command that removes what this run leaves: with a timestamped
/// datadir or resultdir it names this run's timestamp, so that only its
/// directory is visited (and its own resultdir's stonewall files), and
/// a name given with `--timestamp`, which `--cleanup` alone does not
/// look for, is found.
fn cleanup_command(s: &Setup) -> String {
    let q = |w: &str| iolab_launch::quote(w).unwrap_or_else(|_| w.to_string());
    let mut words = vec!["iolab io500 --cleanup".to_string()];
    words.extend(s.backend_opts.iter().map(|o| q(o)));
    if s.cfg.timestamp_datadir || s.cfg.timestamp_resultdir {
        words.push(format!("--timestamp {}", q(&s.stamp)));
    }
    words.push(q(&s.cfg.ini_file.to_string_lossy()));
    words.join(" ")
}

/// Prints each phase's `[RESULT]` line as it ends and, on a terminal,
/// how long the run will take at least and a bar of the phases (the
/// current one named); then the final cleanup's progress: a bar on a
/// terminal, a line before and after it in scripts.
struct Printer<'a> {
    cfg: &'a Config,
    prog: &'a str,
    /// A run's cleanup (`--cleanup` when false).
    run: bool,
    /// The command that removes what a run leaves ([`cleanup_command`]).
    cleanup_cmd: String,
    phases: std::sync::Mutex<Option<indicatif::ProgressBar>>,
    cleanup: std::sync::Mutex<Option<(u64, Option<indicatif::ProgressBar>)>>,
}

impl<'a> Printer<'a> {
    /// For a run (`run`) or for `--cleanup`; `cleanup_cmd` removes what
    /// a run leaves.
    fn new(cfg: &'a Config, prog: &'a str, run: bool, cleanup_cmd: String) -> Self {
        Printer {
            cfg,
            prog,
            run,
            cleanup_cmd,
            phases: std::sync::Mutex::new(None),
            cleanup: std::sync::Mutex::new(None),
        }
    }

    /// How to stop the cleanup, and what then removes the rest: after an
    /// interrupted run a second Ctrl-C ends the process at once; a
    /// completed run's cleanup, and `--cleanup`, stop at the first.
    fn hint(&self) -> String {
        let cmd = &self.cleanup_cmd;
        match (self.run, crate::runner::root().is_cancelled()) {
            (true, true) => format!("a second Ctrl-C stops at once; {cmd} removes the rest"),
            (true, false) => format!("Ctrl-C stops; {cmd} removes the rest"),
            (false, _) => "Ctrl-C stops; the same command removes the rest".to_string(),
        }
    }

    /// The phases' bar, made at the first phase on a terminal, after a
    /// line saying the least the run takes: each write phase lasts at
    /// least stonewall-time; the others depend on what the writes made.
    fn phases_bar(&self) -> std::sync::MutexGuard<'_, Option<indicatif::ProgressBar>> {
        let mut g = self.phases.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() && crate::progress::shown(true) {
            let all = self.cfg.phases();
            let writes = all
                .iter()
                .filter(|p| p.is_write() && self.cfg.runs(**p))
                .count() as u64;
            let least = writes * self.cfg.stonewall_s;
            iolab_core::say!(
                "{}: {} phases; the {writes} write phases run for stonewall-time = {} s each, so the run takes at least {}, and the reads, stats, finds and deletes as long as the storage needs",
                self.prog,
                all.len(),
                self.cfg.stonewall_s,
                crate::progress::human_s(least as f64)
            );
            *g = Some(crate::progress::bar(
                all.len() as u64,
                crate::progress::Unit::Items,
            ));
        }
        g
    }
}

impl RunObserver for Printer<'_> {
    fn phase_started(&self, p: Phase) {
        if let Some(b) = &*self.phases_bar() {
            b.set_message(p.name());
        }
    }

    fn phase_done(&self, r: &PhaseReport) {
        let line = fmt::result_line(r, validity::phase_invalid(self.cfg, r));
        match &*self.phases.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(b) => {
                b.suspend(|| print_now(&line));
                b.inc(1);
            }
            None => print_now(&line),
        }
        match &r.detail {
            Detail::Failed(why) => iolab_core::say!("iolab io500: {} failed: {why}", r.name),
            Detail::Interrupted => iolab_core::say!("iolab io500: {} interrupted", r.name),
            _ => {}
        }
    }

    fn cleanup_started(&self, datadir: &Path, entries: u64) {
        if entries == 0 {
            return;
        }
        if let Some(b) = self.phases.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish_and_clear();
        }
        let prog = self.prog;
        let why = match crate::runner::root().is_cancelled() {
            true => "interrupted; removing",
            false => "removing",
        };
        iolab_core::say!(
            "{prog}: {why} what the phases left in {}: {entries} entries ({})",
            datadir.display(),
            self.hint()
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
fn outputs(resultdir: &Path) -> [PathBuf; 5] {
    iolab_io500::resultdir::RESULT_FILES.map(|n| resultdir.join(n))
}

/// Checks and creates what the run needs (rank 0), before any phase:
/// the datadir and the resultdir checked, the run opened through the
/// runner (`--store`), then the resultdir and datadir made. Returns the
/// session (rank 0) and what was made for the datadir (removed
/// at the end).
fn make_dirs(
    prog: &str,
    s: &Setup,
    cli: &Cli,
    command: &str,
) -> Result<(Option<Session<Config>>, Prepared), String> {
    if !s.leader() {
        return Ok((None, Prepared::default()));
    }
    let be = &*s.backend;
    check_stamps_free(s)?;
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
    make_resultdir(s)?;
    let made = iolab_io500::prepare_datadir(be, &s.layout).map_err(|e| {
        if s.cfg.timestamp_resultdir {
            // Made just now for this run, and empty.
            let _ = std::fs::remove_dir(&s.resultdir);
        }
        format!("datadir: {e}")
    })?;
    Ok((Some(session), made))
}

/// A timestamped datadir or resultdir that is already there is another
/// run's, started in the same second: refused (exit 2) before anything
/// is made, so that neither run removes or overwrites the other's files.
fn check_stamps_free(s: &Setup) -> Result<(), String> {
    let stamped = [
        (s.cfg.timestamp_datadir, &s.layout.datadir, "datadir"),
        (s.cfg.timestamp_resultdir, &s.resultdir, "resultdir"),
    ];
    for (on, dir, what) in stamped {
        if on && dir.symlink_metadata().is_ok() {
            return Err(format!(
                "{what} {}: already there, another run's (started in the same second?); start again, or give --timestamp",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Makes the resultdir: a timestamped one here or not at all (one made
/// since the check is another run's), with the parents it needs.
fn make_resultdir(s: &Setup) -> Result<(), String> {
    let cannot =
        |e: std::io::Error| format!("resultdir {}: cannot create: {e}", s.resultdir.display());
    if !s.cfg.timestamp_resultdir {
        return std::fs::create_dir_all(&s.resultdir).map_err(cannot);
    }
    if let Some(parent) = s.resultdir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    std::fs::create_dir(&s.resultdir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => format!(
            "resultdir {}: made by another run since it was checked (started in the same second?); start again",
            s.resultdir.display()
        ),
        _ => cannot(e),
    })
}

/// Checks the resultdir before anything is made: the lengths of its
/// names, a directory (not a file, not a link to nothing) where it or
/// its nearest existing ancestor is, room to write the results, no
/// entry of the names mdtest's stonewall files take, no file of a result
/// file's name that iolab io500 did not write, and not inside
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
    // A rerun replaces an earlier run's results, nothing else.
    iolab_io500::resultdir::check_result_files(&s.resultdir).map_err(|e| e.to_string())?;
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
    // Every rank learns whether rank 0 could set up, so none runs alone,
    // and rank 0 says why not before any rank ends.
    let made = make_dirs(prog, &s, cli, &command).map_err(NotStarted::from);
    let (session, prepared) = crate::ranks::settle(prog, &s.world, None, made)?;
    if s.leader() {
        print_now(&format!(
            "IO500 version iolab-{} ({})\nresult-dir = {}\n",
            env!("CARGO_PKG_VERSION"),
            match s.cfg.extended_mode {
                true => "extended",
                false => "standard",
            },
            s.resultdir.display()
        ));
    }
    crate::signals::set_last_words(format!(
        "\n{prog}: stopped at once by a second signal; no result was written and cleanup was skipped or cut short. What this run made may be left in {}\n{prog}: remove it with: {}\n",
        s.layout.datadir.display(),
        cleanup_command(&s)
    ));
    let printer = Printer::new(&s.cfg, prog, true, cleanup_command(&s));
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
        kept: prepared.kept,
    };
    let (mut result, made_run) = runner.run();
    if let Some(h) = rank_live {
        result.outcome = h.finish().outcome(result.outcome.clone());
    }
    // Dropping `s` at each return finalises MPI: bounded after a failed or
    // interrupted run (see `bound_mpi_finalize`).
    let Some(session) = session else {
        crate::signals::bound_mpi_finalize(crate::exit::code(&result.outcome));
        return Ok(result.outcome);
    };
    // The results first, as the app prints its score before it cleans
    // up: a cleanup stopped or killed cannot take them with it.
    let interrupted = result.outcome == Outcome::Interrupted;
    let mut outcome = finish(prog, &s, session, result);
    crate::signals::set_last_words(format!(
        "\n{prog}: stopped at once by a second signal; the results are in {}; cleanup was cut short. What this run made may be left in {}\n{prog}: remove it with: {}\n",
        s.resultdir.display(),
        s.layout.datadir.display(),
        cleanup_command(&s)
    ));
    // After an interrupted run a second Ctrl-C ends the process at once;
    // after a completed one the first stops the cleanup at its next entry.
    let go_on = || interrupted || !crate::runner::root().is_cancelled();
    let left = runner.final_cleanup(&made_run, &go_on);
    for l in &left.left {
        iolab_core::say!("{prog}: left: {l}");
    }
    if !go_on() {
        outcome = outcome.worst(Outcome::Interrupted);
    }
    // The datadir this run made (a timestamped one, usually) goes too,
    // with the parents it made for it, each only when empty.
    iolab_io500::remove_made(&*s.backend, &prepared.made);
    if let Err(e) = s.backend.finalize() {
        iolab_core::say!(
            "{prog}: warning: the {} backend did not finish cleanly: {e}",
            s.backend.name()
        );
    }
    crate::signals::bound_mpi_finalize(crate::exit::code(&outcome));
    Ok(outcome)
}

/// Prints the score line and hands the report to the runner, which
/// writes result.json with result_summary.txt, result.txt and the ini
/// beside it (config-orig.ini as given, config.ini with every value),
/// all of them or none, and records the run; returns how the run ended
/// (a file that cannot be written is an error).
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
    let [summary, txt, json, orig, config] = outputs(&s.resultdir);
    let values = Ini::parse(&s.ini_text, "")
        .map(|ini| iolab_io500::ini::values(&ini, s.cfg.extended_mode))
        .unwrap_or_default();
    let mut staged_files = Vec::new();
    for (path, bytes) in [
        (summary, fmt::summary(p, &invalid)),
        (txt, fmt::result_txt(p, &s.ini_text)),
        (orig, s.ini_text.clone()),
        (config, values),
    ] {
        match staged(&path, bytes.as_bytes()) {
            Ok(f) => staged_files.push((path, f)),
            Err(e) => {
                // One file that cannot be written: none is put in place
                // (the staged ones are dropped, their temporaries removed).
                iolab_core::say!(
                    "{prog}: {}: cannot write: {e}; no result file was written",
                    path.display()
                );
                let failure = Failure::io("write", Some(path.display().to_string()), &e);
                let outcome = result.outcome.clone().worst(Outcome::Error(failure));
                drop(staged_files);
                let mut report = Report::new(outcome, p);
                report.figures = fmt::figures(p);
                return session.finish(report, Render::plain());
            }
        }
    }
    for (path, f) in staged_files {
        session.beside_json(path, f);
    }
    let outcome = result.outcome.clone();
    session.document_at(json);
    let mut report = Report::new(outcome, p);
    report.notes = p.notes.clone();
    report.notes.extend(s.backend.notes());
    report
        .notes
        .extend(p.invalid_reasons.iter().map(|r| format!("invalid: {r}")));
    report.figures = fmt::figures(p);
    report.filesystems = vec![fs_info(
        &s.layout
            .datadir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    )];
    session.finish(report, Render::plain())
}

/// `bytes` written whole under a temporary name beside `path`, to be put
/// in place with the rest of the results.
fn staged(path: &Path, bytes: &[u8]) -> std::io::Result<iolab_output::AtomicFile> {
    let mut f = iolab_output::AtomicFile::create(path)?;
    std::io::Write::write_all(&mut f, bytes)?;
    Ok(f)
}

/// Prints at once; a closed stdout stops the run (crate::output).
fn print_now(s: &str) {
    let _ = crate::output::print_bytes(s.as_bytes());
}
