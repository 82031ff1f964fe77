//! `iolab mdtest` (and the `mdtest` link): parse mdtest's command line,
//! check everything before touching the disk, run each test on the
//! communicator (threads, MPI ranks, or both), print mdtest's report from
//! one process and write the JSON/CSV exports.

use crate::progress::Reporter;
use iolab_comm::{connect, run_subset, CommMode, Transport};
use iolab_core::clock::mdtest_timestamp;
use iolab_core::env::{fs_info, host_info};
use iolab_mdtest::results::{CommInfo, RunReport, SCHEMA};
use iolab_mdtest::{args, preflight, Config, Engine, Failure, Plan, Progress};
use iolab_report::mdtest::{csv, json, text};
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// Version string printed as `mdtest-<version>`.
pub fn version() -> String {
    format!("iolab-{}", env!("CARGO_PKG_VERSION"))
}

/// Entry point of `iolab mdtest` (and of the `mdtest` link).
pub fn main(prog: &str, args: Vec<OsString>) -> ExitCode {
    // args() would panic on an argument that is not UTF-8.
    let command = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let setup = match prepare(prog, &args) {
        Ok(Some(s)) => s,
        Ok(None) => return ExitCode::SUCCESS,
        Err(msg) => {
            // Under mpirun every rank finds the same fault; one says it.
            if iolab_comm::launcher_rank().unwrap_or(0) == 0 {
                eprintln!("{prog}: {msg}");
            }
            return ExitCode::from(crate::EXIT_USAGE);
        }
    };
    run(prog, setup, command)
}

struct Setup {
    cfg: Config,
    plan: Plan,
    wall: Option<iolab_mdtest::stonewall::WallCounts>,
    world: iolab_comm::World,
}

/// Everything that can fail on bad input, done before anything is created.
fn prepare(prog: &str, argv: &[OsString]) -> Result<Option<Setup>, String> {
    let raw = args::parse_os(argv).map_err(|e| e.to_string())?;
    if raw.help {
        print!("{}", args::help(prog));
        return Ok(None);
    }
    let cfg = Config::from_raw(&raw).map_err(|e| e.to_string())?;
    let plan = Plan::new(&cfg).map_err(|e| e.to_string())?;
    let world = connect(CommMode::Auto).map_err(|e| e.to_string())?;
    let total = cfg.tasks_per_process * world.transport().size() as u64;
    cfg.check_tasks(total).map_err(|e| e.to_string())?;
    cfg.check_environment().map_err(|e| e.to_string())?;
    let wall = preflight(&cfg, &plan).map_err(|e| e.to_string())?;
    if world.transport().rank() == 0 {
        raw.warnings
            .iter()
            .for_each(|w| eprintln!("{prog}: warning: {w}"));
    }
    Ok(Some(Setup {
        cfg,
        plan,
        wall,
        world,
    }))
}

fn run(prog: &str, s: Setup, command: String) -> ExitCode {
    let transport = s.world.transport();
    let leader = transport.rank() == 0;
    let threads = s.cfg.tasks_per_process as usize;
    let backend = match iolab_backend::by_name(&s.cfg.backend) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{prog}: -a: {e}");
            return ExitCode::from(crate::EXIT_USAGE);
        }
    };
    let mut report = new_report(&s, &command, &transport);
    if leader {
        print_now(&text::started(&report.started));
    }
    let mut code = ExitCode::SUCCESS;
    for n in task_counts(&s.cfg, threads * transport.size()) {
        let progress = Progress::new(threads);
        let reporter = Reporter::new(leader, s.cfg.verbosity, threads.min(n), &progress);
        let engine = Engine::new(&s.cfg, s.plan, &*backend, &reporter, &progress, s.wall);
        let out = reporter.run_while(|| {
            run_subset(transport.clone(), threads, n, |c| {
                if c.task() == 0 {
                    print_header(&report, &s.cfg, c.tasks() as u64, c.nodes() as u64);
                }
                engine.run(c)
            })
        });
        match out.into_iter().next() {
            Some(Ok(t)) if leader => {
                print_now(&(text::counts(&s.cfg, &t) + &text::summary(&s.cfg, &t)));
                report.tests.push(t);
            }
            Some(Err(f)) => {
                code = report_failure(prog, leader, &f);
                report.failure = Some(f.message);
            }
            _ => {}
        }
        if leader {
            report.finished = mdtest_timestamp();
            write_exports(prog, &s.cfg, &report);
        }
        if report.failure.is_some() {
            break;
        }
    }
    if leader {
        print_now(&text::finished(&report.finished));
    }
    drop(transport);
    drop(s.world);
    code
}

fn new_report(s: &Setup, command: &str, t: &Arc<dyn Transport>) -> RunReport {
    let now = mdtest_timestamp();
    RunReport {
        schema: SCHEMA,
        iolab_version: env!("CARGO_PKG_VERSION").into(),
        started: now.clone(),
        finished: now,
        command_line: command.into(),
        config: s.cfg.clone(),
        plan: s.plan,
        comm: CommInfo {
            kind: t.kind().into(),
            ranks: t.size() as u64,
            tasks_per_rank: s.cfg.tasks_per_process,
        },
        host: host_info(),
        filesystems: s.cfg.dirs.iter().map(|d| fs_info(d)).collect(),
        tests: Vec::new(),
        failure: None,
    }
}

/// Task counts to run: the -f/-l/-s sweep, or all tasks.
fn task_counts(cfg: &Config, total: usize) -> Vec<usize> {
    match cfg.sweep {
        Some((f, l, s)) => (f..=l)
            .step_by(s as usize)
            .map(|n| n as usize)
            .filter(|&n| n <= total)
            .collect(),
        None => vec![total],
    }
}

fn print_header(r: &RunReport, cfg: &Config, tasks: u64, nodes: u64) {
    let first = &cfg.dirs[0];
    let path = first.canonicalize().unwrap_or_else(|_| first.clone());
    let fs = r.filesystems.first().cloned().unwrap_or_default();
    print_now(&text::header(
        &version(),
        tasks,
        nodes,
        &r.command_line,
        &path.display().to_string(),
        &fs,
    ));
}

fn report_failure(prog: &str, leader: bool, f: &Failure) -> ExitCode {
    if leader {
        if f.interrupted {
            eprintln!("{prog}: interrupted; removed what this run created");
        } else {
            eprintln!("{prog}: error: {}", f.message);
            eprintln!("{prog}: stopped all tasks and removed what this run created");
        }
        for p in &f.left {
            eprintln!(
                "{prog}: left behind (not created by this run, or not removable): {}",
                p.display()
            );
        }
    }
    ExitCode::from(if f.interrupted {
        crate::exit::INTERRUPTED
    } else {
        crate::EXIT_IO
    })
}

fn write_exports(prog: &str, cfg: &Config, r: &RunReport) {
    let outputs = [
        (cfg.json.as_ref(), json::render(r)),
        (cfg.csv.as_ref(), csv::render(r)),
    ];
    for (path, bytes) in outputs {
        if let Some(p) = path {
            if let Err(e) = std::fs::write(p, bytes) {
                eprintln!("{prog}: cannot write {}: {e}", p.display());
            }
        }
    }
}

fn print_now(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}
