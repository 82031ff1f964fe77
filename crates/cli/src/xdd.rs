//! `iolab xdd`: parse the XDD command line, run the engine, render the
//! reports and write them where the options say. One reporter thread owns
//! the terminal during the run (heartbeat lines or a progress bar).
//! Exit status: 0 success, 1 the run saw I/O or verify errors, 2 bad usage
//! or a refused target.

use anyhow::Context;
use iolab_report::xdd as report;
use iolab_xdd::config::{Action, Config};
use iolab_xdd::error::RunError;
use iolab_xdd::parse::{parse_os, Parsed};
use iolab_xdd::plan::{plan, Plan};
use iolab_xdd::progress::Progress;
use iolab_xdd::results::{RunResults, SystemFacts, TargetInfo};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

fn usage_exit(prog: &str, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("{prog}: {msg}");
    ExitCode::from(crate::EXIT_USAGE)
}

/// Entry point of `iolab xdd` (and of the `xdd` link).
pub fn main(prog: &str, args: Vec<OsString>) -> ExitCode {
    if args.is_empty() {
        eprint!("{}", iolab_xdd::options::short_help());
        return ExitCode::from(crate::EXIT_USAGE);
    }
    let cfg = match parse_os(&args) {
        Ok(Parsed::Run(c)) => *c,
        Ok(Parsed::Action(a)) => return action(prog, a),
        Err(e) => return usage_exit(prog, e),
    };
    let p = match plan(&cfg) {
        Ok(p) => p,
        Err(e) => return usage_exit(prog, e),
    };
    if cfg.global.dryrun {
        return dry_run(&cfg, &p);
    }
    match run_and_report(&cfg, &p) {
        Ok(code) => code,
        Err(e) => {
            let usage = e
                .downcast_ref::<RunError>()
                .is_some_and(|r| matches!(r, RunError::Usage(_) | RunError::Refused(_)));
            eprintln!("{prog}: {e:#}");
            ExitCode::from(if usage {
                crate::EXIT_USAGE
            } else {
                crate::EXIT_IO
            })
        }
    }
}

fn action(prog: &str, a: Action) -> ExitCode {
    use iolab_xdd::options::{full_help, help_for, short_help};
    match a {
        Action::Version => println!(
            "iolab xdd version {} (XDD 7.0 command line)",
            env!("CARGO_PKG_VERSION")
        ),
        Action::FullHelp => print!("{}", full_help()),
        Action::Help(None) => print!("{}", short_help()),
        Action::Help(Some(o)) => match help_for(&o) {
            Some(h) => print!("{h}"),
            None => {
                return usage_exit(
                    prog,
                    format!("-help: no option named '{o}' (xdd -fullhelp lists them all)"),
                )
            }
        },
    }
    ExitCode::SUCCESS
}

/// -dryrun: the preamble as planned, and nothing else.
fn dry_run(cfg: &Config, p: &Plan) -> ExitCode {
    let infos: Vec<TargetInfo> = p
        .targets
        .iter()
        .map(|t| TargetInfo {
            path: t.opts.path.clone(),
            planned_ops: t.ops,
            range_blocks: t.seek.range_blocks(),
            direct_io: t.opts.dio,
            ..Default::default()
        })
        .collect();
    let host = iolab_core::env::host_info();
    let text = report::preamble::render(
        cfg,
        &host,
        &SystemFacts::collect(),
        iolab_core::clock::wall_ns(),
        &infos,
    );
    println!("{text}Dry run: configuration checked, no target opened, no I/O done.");
    ExitCode::SUCCESS
}

fn run_and_report(cfg: &Config, p: &Plan) -> anyhow::Result<ExitCode> {
    let progress = Progress::new(p.targets.len());
    let results = std::thread::scope(|s| {
        let reporter = s.spawn(|| reporter(p, &progress));
        let r = iolab_xdd::run::run(p, cfg, &progress);
        progress.finished.store(true, Relaxed);
        let _ = reporter.join();
        r
    })?;
    write_reports(&results)?;
    write_timestamps(&results)?;
    write_errors(&results)?;
    let early = results.stopped_early.as_deref().unwrap_or("");
    if early.starts_with("interrupted") {
        // As a shell reports a job ended by SIGINT; the partial results
        // were written above.
        return Ok(ExitCode::from(130));
    }
    let failed = results.error_count() > 0 || early.contains("error");
    Ok(if failed {
        ExitCode::from(crate::EXIT_IO)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_file(path: &str, text: &str, append: bool) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .with_context(|| format!("cannot write {path}"))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {path}"))
}

fn write_reports(r: &RunResults) -> anyhow::Result<()> {
    let g = &r.config.global;
    let text = report::text::render(r);
    match &g.output {
        Some(f) => write_file(f, &text, false).context("-output")?,
        None => print!("{text}"),
    }
    if let Some(f) = &g.csvout {
        write_file(f, &report::csv::render(r), false).context("-csvout")?;
    }
    if let Some(f) = &g.combinedout {
        let fresh = std::fs::metadata(f).map_or(true, |m| m.len() == 0);
        write_file(f, &report::text::combined_only(r, fresh), true).context("-combinedout")?;
    }
    if let Some(f) = &g.json {
        write_file(f, &report::json::render(r), false).context("--json")?;
    }
    Ok(())
}

/// -timestamps reports (PREFIX.target.NNNN.csv, or standard output) and
/// binary dumps (PREFIX.target.NNNN.bin), one per target.
fn write_timestamps(r: &RunResults) -> anyhow::Result<()> {
    use iolab_xdd::timestamp::{open_output, summarize, write_detailed, write_dump, write_summary};
    for (i, t) in r.targets.iter().enumerate() {
        let Some(ts) = &t.timestamps else { continue };
        let o = &ts.options;
        let mut text: Vec<u8> = Vec::new();
        if o.detailed {
            write_detailed(&mut text, &ts.info, &ts.entries, o.normalize)?;
        } else {
            write_summary(
                &mut text,
                &ts.info,
                &summarize(&ts.entries, ts.info.block_size),
            )?;
        }
        match &o.output {
            Some(prefix) => {
                let path = format!("{}.target.{i:04}.csv", prefix.display());
                open_output(std::path::Path::new(&path), o.append)
                    .and_then(|mut f| f.write_all(&text))
                    .with_context(|| format!("-timestamps output {path}"))?;
            }
            None => std::io::stdout().write_all(&text)?,
        }
        if let Some(prefix) = &o.dump {
            let path = format!("{}.target.{i:04}.bin", prefix.display());
            let f =
                std::fs::File::create(&path).with_context(|| format!("-timestamps dump {path}"))?;
            write_dump(std::io::BufWriter::new(f), &ts.info, &ts.entries)
                .with_context(|| format!("-timestamps dump {path}"))?;
        }
    }
    Ok(())
}

/// Notes and error messages go to -errout or standard error.
fn write_errors(r: &RunResults) -> anyhow::Result<()> {
    let mut text = String::new();
    for n in &r.notes {
        text += &format!("xdd: note: {n}\n");
    }
    for m in &r.error_messages {
        text += &format!("xdd: error: {m}\n");
    }
    let total = r.error_count();
    if total > r.error_messages.len() as u64 {
        text += &format!(
            "xdd: {total} errors in all ({} shown; see -maxerrorstoprint)\n",
            r.error_messages.len()
        );
    }
    match &r.config.global.errout {
        Some(f) => write_file(f, &text, false).context("-errout"),
        None => {
            eprint!("{text}");
            Ok(())
        }
    }
}

/// The one thread that talks to the terminal while the run goes on.
fn reporter(p: &Plan, progress: &Progress) {
    let hb = &p.global.heartbeat;
    if hb.interval_s > 0.0 {
        heartbeat(p, progress);
    } else if std::io::stderr().is_terminal() {
        progress_bar(p, progress);
    }
}

fn samples(p: &Plan, progress: &Progress, now: u64) -> Vec<report::heartbeat::Sample> {
    let only = &p.global.heartbeat.only_targets;
    progress
        .targets
        .iter()
        .enumerate()
        .filter(|(i, _)| only.is_empty() || only.contains(i))
        .map(|(i, t)| {
            let start = t.pass_start_ns.load(Relaxed);
            report::heartbeat::Sample {
                target: i,
                pass: t.pass.load(Relaxed),
                ops: t.ops.load(Relaxed),
                bytes: t.bytes.load(Relaxed),
                planned_ops: t.planned_ops.load(Relaxed),
                pass_elapsed_s: if start == 0 {
                    0.0
                } else {
                    now.saturating_sub(start) as f64 / 1e9
                },
            }
        })
        .collect()
}

/// Sleeps in small steps so the reporter ends soon after the run.
fn nap_until_or_finished(progress: &Progress, deadline_ns: u64) -> bool {
    while iolab_core::clock::mono_ns() < deadline_ns {
        if progress.finished.load(Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !progress.finished.load(Relaxed)
}

fn heartbeat(p: &Plan, progress: &Progress) {
    let hb = &p.global.heartbeat;
    let host = iolab_core::env::hostname();
    let mut files: Vec<Option<std::fs::File>> = Vec::new();
    if let Some(prefix) = &hb.output {
        for i in 0..p.targets.len() {
            let f = std::fs::File::create(format!("{prefix}.T{i:04}.csv")).ok();
            if let Some(mut f) = f.as_ref() {
                let _ = f.write_all(report::heartbeat::csv_header(hb).as_bytes());
            }
            files.push(f);
        }
    }
    let step = (hb.interval_s * 1e9) as u64;
    let t0 = iolab_core::clock::mono_ns();
    let mut next = t0 + step;
    while nap_until_or_finished(progress, next) {
        let now = iolab_core::clock::mono_ns();
        next += step;
        let tod = iolab_core::clock::format_local(
            iolab_core::clock::wall_ns() / 1_000_000_000,
            "%H:%M:%S",
        );
        let el = (now - t0) as f64 / 1e9;
        let ss = samples(p, progress, now);
        if files.is_empty() {
            eprint!("{}", report::heartbeat::line(hb, &host, &tod, el, &ss));
        }
        for s in &ss {
            if let Some(Some(mut f)) = files.get(s.target).map(Option::as_ref) {
                let _ = f.write_all(report::heartbeat::csv_line(hb, &host, &tod, el, s).as_bytes());
            }
        }
    }
    if files.is_empty() && !hb.lf {
        eprintln!();
    }
}

fn progress_bar(p: &Plan, progress: &Progress) {
    let total: u64 = p
        .targets
        .iter()
        .map(|t| t.planned_bytes() * p.global.passes)
        .sum();
    let bar = indicatif::ProgressBar::new(total.max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    loop {
        let done: u64 = progress
            .targets
            .iter()
            .map(|t| t.earlier_bytes.load(Relaxed) + t.bytes.load(Relaxed))
            .sum();
        bar.set_position(done.min(total));
        if !nap_until_or_finished(progress, iolab_core::clock::mono_ns() + 200_000_000) {
            break;
        }
    }
    bar.finish_and_clear();
}
