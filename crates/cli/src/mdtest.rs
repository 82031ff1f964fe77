//! `iolab mdtest` (and the `mdtest` link): parse mdtest's command line,
//! check everything before touching the disk, run each test on the
//! communicator (threads, MPI ranks, or both), print mdtest's report from
//! one process and write the JSON/CSV exports.

use crate::exit::{Ended, Halt, NotStarted};
use crate::progress::Reporter;
use crate::runner::{Given, Render, Run, Session};
use iolab_backend::Backend;
use iolab_comm::Transport;
use iolab_core::clock::mdtest_timestamp;
use iolab_core::env::fs_info;
use iolab_core::{FailureKind, Outcome};
use iolab_mdtest::results::{CommInfo, MdtestDocument, MdtestPayload, TestResult, SCHEMA};
use iolab_mdtest::sweep::{Answers, Hooks, Sweep};
use iolab_mdtest::{args, preflight, Config, Observer, Plan, Progress, Unfinished};
use iolab_report::mdtest::{csv, text};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Version string printed as `mdtest-<version>`.
pub fn version() -> String {
    format!("iolab-{}", env!("CARGO_PKG_VERSION"))
}

/// Entry point of `iolab mdtest` (and of the `mdtest` link).
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    main_as(prog, args, crate::process_command_line())
}

/// [`main`] recording `command` as the command line (the demo runs
/// mdtest in-process and records what a user would type).
pub fn main_as(prog: &str, args: Vec<OsString>, command: String) -> Ended {
    match prepare(prog, &args, &command)? {
        Some(setup) => Ok(run(prog, setup)),
        None => Err(Halt::shown()),
    }
}

struct Setup {
    /// The run, opened through the runner (--json, --csv, -x checked;
    /// --stats loaded and --store opened on rank 0).
    session: Session<Config>,
    cfg: Config,
    plan: Plan,
    wall: Option<iolab_mdtest::stonewall::WallCounts>,
    world: iolab_comm::World,
    backend: Box<dyn Backend>,
}

/// Checks a command line as `iolab mdtest` reads it, without touching
/// anything (for a sweep's plan): the option table, the validation of
/// every value and combination, the backend's options, the plan's sizes,
/// and for a run of one process (`alone`: no launcher, so `--tasks` is
/// every task) what needs the task count (-f/-l, -N, -d paths). Returns
/// the options the line gives, for the sweep to find one set twice.
pub fn check_args(argv: &[OsString], alone: bool) -> crate::tools::Checked {
    let Some(r) = read_args(argv)? else {
        return Err("-h prints the help and runs nothing".into());
    };
    Plan::new(&r.cfg).map_err(|e| e.to_string())?;
    if alone {
        r.cfg
            .check_tasks(r.cfg.tasks_per_process)
            .map_err(|e| e.to_string())?;
    }
    let given = args::options_given(argv).map_err(|e| e.to_string())?;
    Ok(crate::tools::given(given))
}

/// A command line read and validated, before anything is started.
struct ReadArgs {
    cfg: Config,
    /// With the backend's options applied; not started.
    backend: Box<dyn Backend>,
    /// What the parser warns of (printed by rank 0).
    warnings: Vec<String>,
}

/// The command line as a validated config and its backend; None for -h.
fn read_args(argv: &[OsString]) -> Result<Option<ReadArgs>, String> {
    let (backend_opts, argv) = iolab_backend::split_args(argv);
    let raw = args::parse_os(&argv).map_err(|e| e.to_string())?;
    if raw.help {
        return Ok(None);
    }
    let cfg = Config::from_raw(&raw).map_err(|e| e.to_string())?;
    let opts = iolab_backend::parse_options(&backend_opts).map_err(|e| e.to_string())?;
    let backend =
        iolab_backend::with_options(&cfg.backend, &opts).map_err(|e| format!("-a: {e}"))?;
    Ok(Some(ReadArgs {
        cfg,
        backend,
        warnings: raw.warnings,
    }))
}

/// What every rank checked on its own, before the ranks agree.
struct Checked {
    cfg: Config,
    plan: Plan,
    wall: Option<iolab_mdtest::stonewall::WallCounts>,
    backend: Box<dyn Backend>,
    warnings: Vec<String>,
}

/// What the ranks compare of their options: everything but the outputs,
/// which rank 0 alone writes.
const RANK_0_ONLY: &[&str] = &["json", "csv", "stats", "store"];

/// Everything that can fail on bad input, done before anything is
/// created; under MPI every rank checks, and the ranks agree on the
/// options and the verdict before any of them goes on (`ranks`).
fn prepare(prog: &str, argv: &[OsString], command: &str) -> Result<Option<Setup>, Halt> {
    let read = match read_args(argv) {
        Ok(None) => {
            let _ = out!("{}", args::help(prog));
            return Ok(None);
        }
        Ok(Some(r)) => Ok(r),
        Err(e) => Err(NotStarted::from(e)),
    };
    let compared =
        |r: &ReadArgs| crate::ranks::options_with_backend(&r.cfg, RANK_0_ONLY, r.backend.name());
    let (world, c) = crate::ranks::connect_and_settle(prog, read, compared, check)?;
    // Last, so that a run refused above leaves no store behind; one rank
    // collects and records.
    let session = Run::new(
        prog,
        "mdtest",
        SCHEMA,
        command,
        c.cfg.clone(),
        given(&c.cfg),
    )
    .compatible_with("mdtest 1.9.3 / IOR mdtest 4.x")
    .outputs(planned(&c.cfg))
    .leader(world.transport().rank() == 0)
    .open()
    .map_err(|h| NotStarted::refused(prog, h));
    let session = crate::ranks::settle(prog, &world, None, session)?;
    if world.transport().rank() == 0 {
        c.warnings
            .iter()
            .for_each(|w| iolab_core::say!("{prog}: warning: {w}"));
    }
    Ok(Some(Setup {
        session,
        cfg: c.cfg,
        plan: c.plan,
        wall: c.wall,
        world,
        backend: c.backend,
    }))
}

/// This rank's checks, touching nothing: the backend started, the plan,
/// the task count, the environment and the test directories.
fn check(r: ReadArgs, world: &iolab_comm::World) -> Result<Checked, NotStarted> {
    let ReadArgs {
        cfg,
        backend,
        warnings,
    } = r;
    // Before the checks below, which already ask the backend (an object
    // store answers them only once its connection is set up).
    // A place that is not there (a missing --s3.bucket) is bad usage,
    // exit 2; a service that fails or refuses is an I/O error, exit 1.
    // A path the backend cannot address as given goes first: nothing
    // has been sent yet.
    use std::os::unix::ffi::OsStrExt;
    let dirs = cfg.dirs.iter().map(|d| d.as_os_str().as_bytes());
    NotStarted::check_paths(&*backend, "-d", dirs)?;
    let plan = Plan::new(&cfg).map_err(|e| e.to_string())?;
    let total = cfg.tasks_per_process * world.transport().size() as u64;
    // The deepest names too (an S3 key over 1024 bytes), before init.
    for p in preflight::longest_paths(&cfg, &plan, total) {
        backend.check_path(&p).map_err(|e| {
            NotStarted::from(format!(
                "-d, -z, -b, -n or -I: the run's longest path, {}, cannot be made: {e}",
                p.to_string_lossy()
            ))
        })?;
    }
    backend
        .init()
        .map_err(|e| NotStarted::backend_init(backend.name(), &e))?;
    cfg.check_tasks(total).map_err(|e| e.to_string())?;
    cfg.check_environment(&*backend)
        .map_err(|e| e.to_string())?;
    let wall =
        preflight(&cfg, &plan, &*backend, crate::runner::root()).map_err(|e| e.to_string())?;
    Ok(Checked {
        cfg,
        plan,
        wall,
        backend,
        warnings,
    })
}

/// The run options as mdtest's option table read them.
fn given(cfg: &Config) -> Given {
    Given {
        json: cfg.json.clone(),
        csv: cfg.csv.clone(),
        stats: cfg.stats.clone(),
        store: cfg.store.clone(),
    }
}

/// mdtest's own file besides --json and --csv (the stonewall file `-x`
/// writes when it creates): checked before the run with them, so that a
/// long run does not end with its results lost.
fn planned(cfg: &Config) -> iolab_output::Planned {
    let wall_out = cfg.stonewall_file.as_deref().filter(|_| cfg.phases.create);
    iolab_output::Planned::new().file("-x", wall_out)
}

fn run(prog: &str, mut s: Setup) -> Outcome {
    let transport = s.world.transport();
    let leader = transport.rank() == 0;
    // One collector set per job: the runner starts it on rank 0 for
    // every node it lists; the live sampler first, as the document
    // carries its run id.
    let board = s.session.live(true, crate::live::peers(&s.world));
    s.session.start();
    let mut doc = new_document(&s, &transport);
    crate::signals::set_last_words(last_words(prog, &s.cfg, &s.plan));
    if leader {
        print_now(&text::started(&doc.payload.started));
    }
    let running = AtomicBool::new(true);
    let sweep = Sweep {
        cfg: &s.cfg,
        plan: s.plan,
        backend: &*s.backend,
        wall: s.wall,
        transport: transport.clone(),
        live: board.as_deref(),
        cancel: s.session.cancel(),
    };
    let hooks = Shown {
        prog,
        leader,
        cfg: &s.cfg,
        session: &s.session,
    };
    std::thread::scope(|scope| {
        if leader {
            let cancel = s.session.cancel();
            scope.spawn(|| announce_stop(prog, &s.cfg, &s.plan, cancel, &running));
        }
        sweep.run(&mut doc, &hooks);
        running.store(false, Ordering::Release);
    });
    // The engine's headline figures, which the store records as stated.
    doc.figures = doc.payload.figures();
    if let Err(e) = s.backend.finalize() {
        iolab_core::say!(
            "{prog}: warning: the {} backend did not finish cleanly: {e}",
            s.backend.name()
        );
    }
    backend_notes(prog, &s, &mut doc);
    let finished = doc.payload.finished.clone();
    // The exports were written after each task count; once more with
    // the samples of the whole run and the backend's notes, and the run
    // recorded.
    let outcome = s.session.finish_document(doc, Render::csv(&write_csv));
    if leader {
        print_now(&text::finished(&finished));
    }
    drop(transport);
    crate::signals::bound_mpi_finalize(crate::exit::code(&outcome));
    drop(s.world);
    outcome
}

/// The CSV export, written as it is made.
fn write_csv(p: &MdtestPayload, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    csv::write(p, w)
}

/// Once the run is stopped, rank 0 says where its items are at once:
/// should the process be killed before it removes them (mpirun ends the
/// ranks one second after SIGTERM by default), they may be left there.
fn announce_stop(
    prog: &str,
    cfg: &Config,
    plan: &Plan,
    cancel: &iolab_core::CancelToken,
    running: &AtomicBool,
) {
    crate::signals::when_stopped(cancel, running, || {
        if cfg.phases.create {
            iolab_core::say_part!("{}", where_items_are(prog, cfg, plan, "stopping; removing what this run made. Should the process be killed first, it may be left in:"));
            iolab_core::say_part!(
                "{}",
                crate::signals::mpirun_grace_hint(prog).unwrap_or_default()
            );
        }
    });
}

/// What a second Ctrl-C prints as the process ends without cleaning up:
/// where this run's items may remain, and how to remove them.
fn last_words(prog: &str, cfg: &Config, plan: &Plan) -> String {
    where_items_are(
        prog,
        cfg,
        plan,
        "stopped at once by a second signal; cleanup was skipped. What this run made may be left in:",
    )
}

/// `headline`, then the test directories this run uses (the first few),
/// then how to remove them.
fn where_items_are(prog: &str, cfg: &Config, plan: &Plan, headline: &str) -> String {
    let mut dirs = Vec::new();
    'all: for root in &cfg.dirs {
        for iter in 0..cfg.iterations {
            for lp in 0..plan.loops {
                if dirs.len() > crate::signals::LISTED {
                    break 'all;
                }
                dirs.push(
                    iolab_mdtest::names::test_dir(root, iter, lp)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    let mut s = crate::signals::listed(prog, headline, &dirs, "and more test directories");
    // -X needs the read phase, which a remove-only run has not.
    let without = if cfg.verify_read {
        " and without -X"
    } else {
        ""
    };
    s.push_str(&format!(
        "{prog}: remove it with the same options, -r in place of -C/-T/-E/-r{without} (a directory the run never made is skipped)\n"
    ));
    s
}

/// What this binary shows around the sweep's counts: progress on a
/// terminal, the header, each count's figures, notes and the exports,
/// from the leader.
struct Shown<'a> {
    prog: &'a str,
    leader: bool,
    cfg: &'a Config,
    /// Writes the exports after each task count.
    session: &'a Session<Config>,
}

impl Hooks for Shown<'_> {
    fn watch(
        &self,
        local_tasks: usize,
        progress: &Progress,
        f: &mut dyn FnMut(&dyn Observer) -> Answers,
    ) -> Answers {
        let reporter = Reporter::new(self.leader, self.cfg.verbosity, local_tasks, progress);
        reporter.run_while(|| f(&reporter))
    }

    fn header(&self, doc: &MdtestDocument, tasks: u64, nodes: u64) {
        print_header(doc, self.cfg, tasks, nodes);
    }

    fn completed(&self, t: &TestResult) {
        if self.leader {
            let walls = text::stonewall_lines(t);
            print_now(&(text::counts(self.cfg, t) + &walls + &text::summary(self.cfg, t)));
        }
    }

    fn note(&self, note: &str) {
        // Quiet after a closed stdout, as a tool SIGPIPE ended is.
        if self.leader && !crate::output::stdout_closed() {
            iolab_core::say!("{}: note: {note}", self.prog);
        }
    }

    fn unfinished(&self, u: &Unfinished) {
        report_unfinished(self.prog, self.leader, u, &self.cfg.dirs);
    }

    fn count_ended(&self, doc: &mut MdtestDocument) {
        // The engine's headline figures, which the store records as stated.
        doc.figures = doc.payload.figures();
        // A write that fails makes the run an error (exit 1), and no
        // partial file stays.
        self.session.write(doc, Render::csv(&write_csv));
    }
}

/// What the backend has to say after the run (S3: retried requests, a
/// bucket left): printed, and added to the document.
fn backend_notes(prog: &str, s: &Setup, doc: &mut MdtestDocument) {
    let notes = s.backend.notes();
    notes
        .iter()
        .for_each(|n| iolab_core::say!("{prog}: note: {n}"));
    doc.notes.extend(notes);
}

/// The run's document, made by the runner, which the sweep fills.
fn new_document(s: &Setup, t: &Arc<dyn Transport>) -> MdtestDocument {
    let now = mdtest_timestamp();
    let payload = MdtestPayload {
        started: now.clone(),
        finished: now,
        plan: s.plan,
        comm: CommInfo {
            kind: t.kind().into(),
            ranks: t.size() as u64,
            tasks_per_rank: s.cfg.tasks_per_process,
        },
        tests: Vec::new(),
        left_behind: Vec::new(),
        left_behind_count: 0,
        cut_short: None,
    };
    // An object store's paths name no local file system.
    let filesystems = match s.backend.capabilities().local {
        true => s.cfg.dirs.iter().map(|d| fs_info(d)).collect(),
        false => Vec::new(),
    };
    s.session.document(Outcome::Completed, filesystems, payload)
}

fn print_header(doc: &MdtestDocument, cfg: &Config, tasks: u64, nodes: u64) {
    let first = &cfg.dirs[0];
    let path = first.canonicalize().unwrap_or_else(|_| first.clone());
    let fs = doc
        .environment
        .filesystems
        .first()
        .cloned()
        .unwrap_or_default();
    print_now(&text::header(
        &version(),
        tasks,
        nodes,
        &doc.command_line,
        &path.display().to_string(),
        &fs,
    ));
}

fn report_unfinished(prog: &str, leader: bool, u: &Unfinished, roots: &[PathBuf]) {
    if !leader {
        return;
    }
    // Removal is claimed only when the cleanup saw it through.
    let removed = match u.confirmed() {
        true => "removed what this run created",
        false => "could not confirm that what this run created was removed",
    };
    match &u.outcome {
        Outcome::Completed | Outcome::TimeLimit { .. } => return,
        // Quiet after a closed stdout, as a tool SIGPIPE ended is.
        Outcome::Interrupted if crate::output::stdout_closed() => {}
        Outcome::Interrupted => iolab_core::say!("{prog}: interrupted; {removed}"),
        // An output written after the run: nothing was stopped or removed.
        Outcome::Error(f) if f.kind == FailureKind::Output => {
            iolab_core::say!("{prog}: error: {f}")
        }
        Outcome::Error(f) => {
            iolab_core::say!("{prog}: error: {f}");
            iolab_core::say!("{prog}: stopped all tasks; {removed}");
        }
    }
    // How far the phase got, so that a failed run says what succeeded
    // (not after a closed stdout: a run SIGPIPE ended says nothing).
    let piped_off = matches!(u.outcome, Outcome::Interrupted) && crate::output::stdout_closed();
    if let Some(c) = u.cut_short.as_ref().filter(|_| !piped_off) {
        iolab_core::say!(
            "{prog}: {} was cut short in iteration {}: {} items done by all tasks (a count, not a measurement)",
            c.phase.label(),
            c.iteration,
            c.items
        );
    }
    for line in left_lines(&u.left, roots) {
        iolab_core::say!("{prog}: {line}");
    }
}

/// What the cleanup left, a line each for the first
/// [`iolab_mdtest::results::LEFT_LISTED`], then how many more and how
/// many in all under each `-d` directory (a read-only remount mid-run
/// leaves one per item: tens of thousands of lines otherwise).
fn left_lines(left: &[iolab_backend::remove::Left], roots: &[PathBuf]) -> Vec<String> {
    const SHOWN: usize = iolab_mdtest::results::LEFT_LISTED;
    let mut lines: Vec<String> = left
        .iter()
        .take(SHOWN)
        .map(|l| match l.known() {
            true => format!("left behind: {l}"),
            false => format!(
                "removal not confirmed at {l}; what this run made may remain there (a -r run with the same options removes it)"
            ),
        })
        .collect();
    if left.len() > SHOWN {
        let mut per_root: Vec<String> = roots
            .iter()
            .map(|r| (r, left.iter().filter(|l| l.path.starts_with(r)).count()))
            .filter(|&(_, n)| n > 0)
            .map(|(r, n)| format!("{n} under {}", r.display()))
            .collect();
        let placed = left
            .iter()
            .filter(|l| roots.iter().any(|r| l.path.starts_with(r)))
            .count();
        if placed < left.len() {
            per_root.push(format!("{} elsewhere", left.len() - placed));
        }
        lines.push(format!(
            "and {} more not removed ({} in all: {})",
            left.len() - SHOWN,
            left.len(),
            per_root.join(", ")
        ));
    }
    lines
}

/// Prints at once; a closed stdout stops the run (crate::output).
fn print_now(s: &str) {
    let _ = crate::output::print_bytes(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_backend::remove::{Left, Why};

    /// A read-only remount mid-run left one entry per item, each a line
    /// of its own (24,000 lines): now the first 20, then how many more
    /// and where, and a file is not said to have things "under" it.
    #[test]
    fn leftovers_are_listed_up_to_twenty_then_counted_by_root() {
        let roots = [PathBuf::from("/d/a"), PathBuf::from("/d/b")];
        let left: Vec<Left> = (0..50)
            .map(|i| Left {
                path: roots[i % 2].join(format!("file.mdtest.0.{i}")),
                why: Why::Failed("Read-only file system (os error 30)".into()),
            })
            .chain([Left {
                path: PathBuf::from("/elsewhere/x"),
                why: Why::NotOurs,
            }])
            .collect();
        let lines = left_lines(&left, &roots);
        assert_eq!(lines.len(), 21, "{lines:#?}");
        assert!(lines[0].starts_with("removal not confirmed at /d/a/file.mdtest.0.0 ("));
        assert!(lines.iter().all(|l| !l.contains("under /d/a/file")));
        assert_eq!(
            lines[20],
            "and 31 more not removed (51 in all: 25 under /d/a, 25 under /d/b, 1 elsewhere)"
        );
        assert_eq!(left_lines(&left[..3], &roots).len(), 3);
    }
}
