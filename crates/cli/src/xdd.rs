//! `iolab xdd`: parse the XDD command line, run the engine, render the
//! reports and write them where the options say. One reporter thread owns
//! the terminal during the run (heartbeat lines or a progress bar).
//! Exit status (through `crate::exit`): 0 success or -runtime reached, 1
//! the run saw an error (I/O, verify, a dead worker, an output that could
//! not be written), 2 bad usage, a refused target or an output that cannot
//! be written, 130 interrupted.

use crate::exit::{Ended, Halt, HaltKind};
use crate::runner::{Given, Render, Report, Run, Session};
use anyhow::Context;
use iolab_core::{Failure, Outcome};
use iolab_report::xdd as report;
use iolab_xdd::config::{Action, Config};
use iolab_xdd::error::RunError;
use iolab_xdd::parse::{parse_os, Parsed};
use iolab_xdd::plan::{plan, Plan};
use iolab_xdd::progress::Progress;
use iolab_xdd::results::{RunResults, TargetInfo};
use std::ffi::OsString;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

fn usage_exit(prog: &str, msg: impl std::fmt::Display) -> Halt {
    Halt::usage(format!("{prog}: {msg}"))
}

/// Entry point of `iolab xdd` (and of the `xdd` link).
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    main_as(prog, args, crate::process_command_line())
}

/// [`main`] recording `command` as the command line (the demo runs xdd
/// in-process and records what a user would type).
pub fn main_as(prog: &str, args: Vec<OsString>, command: String) -> Ended {
    if args.is_empty() {
        iolab_core::say_part!("{}", iolab_xdd::options::short_help());
        return Err(Halt::said(HaltKind::Usage));
    }
    let mut cfg = match parse_os(&args) {
        Ok(Parsed::Run(c)) => *c,
        Ok(Parsed::Action(a)) => return action(prog, a),
        Err(e) => return Err(usage_exit(prog, e)),
    };
    // The whole command as typed, program included, as mdtest records it
    // (`iolab xdd ...`, or `xdd ...` through the link), so a stored run
    // can be pasted again.
    cfg.global.command_line = command;
    let p = plan(&cfg).map_err(|e| usage_exit(prog, e))?;
    iolab_xdd::outputs::check(&cfg).map_err(|e| usage_exit(prog, e))?;
    iolab_xdd::validate::preflight(&cfg).map_err(|e| usage_exit(prog, e))?;
    let g = &cfg.global;
    let given = Given {
        json: g.json.as_ref().map(Into::into),
        csv: None,
        stats: g.stats.clone(),
        store: g.store.as_ref().map(Into::into),
    };
    let line = g.command_line.clone();
    let run = Run::new(prog, "xdd", report::json::SCHEMA, &line, cfg.clone(), given)
        .compatible_with("XDD 7.0")
        .outputs(planned(&cfg));
    if cfg.global.dryrun {
        run.check()?;
        return Ok(dry_run(&cfg, &p));
    }
    let session = run.open()?;
    crate::signals::set_last_words(last_words(prog, &cfg));
    run_and_report(&cfg, &p, session).map_err(|e| {
        iolab_core::say!("{prog}: {e:#}");
        Halt::said(run_error_kind(&e))
    })
}

/// What a second signal says before the process ends at once: the files
/// this run creates that may be left (write targets that were not there,
/// `-createnewfiles`' pass files, heartbeat files written as the run
/// goes), the first 20; nothing when it creates none.
fn last_words(prog: &str, cfg: &Config) -> String {
    let mut names = Vec::new();
    let local = |t: &&iolab_xdd::config::TargetOpts| iolab_xdd::plan::target_capabilities(t).local;
    for t in cfg.targets.iter().filter(local).filter(|t| t.writes()) {
        if t.createnewfiles {
            let passes = cfg.global.passes.min(crate::signals::LISTED as u64 + 1);
            names.extend((1..=passes).map(|p| iolab_xdd::run::target::pass_file_name(&t.path, p)));
        } else if std::fs::symlink_metadata(&t.path).is_err() {
            names.push(t.path.clone());
        }
    }
    let streamed = iolab_xdd::outputs::planned(cfg).into_iter();
    names.extend(
        streamed
            .filter(|(opt, _)| *opt == "heartbeat")
            .map(|(_, p)| p),
    );
    let lead = "stopped at once by a second signal; cleanup was skipped or cut short. What this run creates may be left:";
    crate::signals::listed(prog, lead, &names, "and more files of this run")
}

/// XDD's own files (checked for writing by `outputs::check` already),
/// the targets' files (a copy's temporary name too) and the restart
/// records, so that the runner refuses two of them on one file:
/// `-output x --json x` kept only the JSON, `--json t -target t` wrote
/// it over the target's data, `-restart file t -target t` replaced the
/// copy with its record.
fn planned(cfg: &Config) -> iolab_output::Planned {
    use std::path::Path;
    let mut p = iolab_output::Planned::new();
    // --json is the runner's own.
    for (opt, path) in iolab_xdd::outputs::planned(cfg) {
        if opt != "json" {
            p = p.file(&format!("-{opt}"), Some(Path::new(&path)));
        }
    }
    let local = cfg
        .targets
        .iter()
        .filter(|t| iolab_xdd::plan::target_capabilities(t).local);
    for t in local {
        if t.createnewfiles {
            for pass in 1..=cfg.global.passes {
                let name = iolab_xdd::run::target::pass_file_name(&t.path, pass);
                p = p.data("-target", Some(Path::new(&name)));
            }
        } else {
            p = p.data("-target", Some(Path::new(&t.path)));
        }
        let partial = iolab_xdd::e2e::partial::planned(t);
        p = p.data("-e2e partial", partial.as_deref().map(Path::new));
    }
    for (opt, path) in iolab_xdd::outputs::records(cfg) {
        p = p.record(&format!("-{opt}"), Some(Path::new(&path)));
    }
    p
}

/// How a run that could not finish ended, as a typed kind: a refused
/// target or bad usage found late is usage (exit 2), Ctrl-C is
/// interrupted, anything else a failure.
fn run_error_kind(e: &anyhow::Error) -> HaltKind {
    match e.downcast_ref::<RunError>() {
        Some(RunError::Usage(_) | RunError::Refused(_)) => HaltKind::Usage,
        Some(RunError::Interrupted) => HaltKind::Interrupted,
        _ => HaltKind::Failed,
    }
}

/// Checks a command line as `iolab xdd` reads it, without opening any
/// target (for a sweep's plan); returns the options it gives, for the
/// sweep to find one set twice.
pub fn check_args(args: &[OsString], _alone: bool) -> crate::tools::Checked {
    match parse_os(args).map_err(|e| e.to_string())? {
        Parsed::Run(_) => {}
        Parsed::Action(_) => return Err("-help/-version print and run nothing".into()),
    }
    let given = iolab_xdd::parse::options_given(args).map_err(|e| e.to_string())?;
    Ok(crate::tools::given(given))
}

fn action(prog: &str, a: Action) -> Ended {
    use iolab_xdd::options::{full_help, help_for, short_help};
    match a {
        Action::Version => {
            let _ = outln!(
                "iolab xdd version {} (XDD 7.0 command line)",
                env!("CARGO_PKG_VERSION")
            );
        }
        Action::FullHelp => {
            let _ = out!("{}", full_help());
        }
        Action::Help(None) => {
            let _ = out!("{}", short_help());
        }
        Action::Help(Some(o)) => match help_for(&o) {
            Some(h) => {
                let _ = out!("{h}");
            }
            None => {
                return Err(usage_exit(
                    prog,
                    format!("-help: no option named '{o}' (xdd -fullhelp lists them all)"),
                ))
            }
        },
    }
    Err(Halt::shown())
}

/// -dryrun: the preamble as planned, and nothing else.
fn dry_run(cfg: &Config, p: &Plan) -> Outcome {
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
    let host = crate::runner::host();
    let text = report::preamble::render(cfg, &host, iolab_core::clock::wall_ns(), &infos);
    let _ = outln!("{text}Dry run: configuration checked, no target opened, no I/O done.");
    Outcome::Completed
}

/// Says, once and before the run, that a global clock read without a
/// key (as XDD reads it) is unauthenticated: whoever answers on the time
/// server's port sets when the run starts and its `-ts normalize` times.
fn warn_unkeyed_clock(p: &Plan) {
    if let Some(ts) = &p.global.timeserver {
        if matches!(ts.shared_key(), Ok(None)) {
            iolab_core::say!(
                "xdd: warning: -timeserver {}:{}: {}",
                ts.host,
                ts.port,
                iolab_net::clock::UNAUTHENTICATED
            );
        }
    }
}

/// The side of the plan's one end-to-end target (true: the source);
/// none without one, or with several (each side then streams its own).
fn copy_side(p: &Plan) -> Option<bool> {
    let mut roles = p.targets.iter().filter_map(|t| t.opts.e2e.role());
    match (roles.next(), roles.next()) {
        (Some(r), None) => Some(r == iolab_xdd::e2e::opts::Role::Source),
        _ => None,
    }
}

/// Runs the plan with the reporter thread on the terminal, writes XDD's
/// own reports, and hands the JSON document's payload to the runner.
fn run_and_report(cfg: &Config, p: &Plan, mut session: Session<Config>) -> anyhow::Result<Outcome> {
    warn_unkeyed_clock(p);
    let link = Arc::new(iolab_xdd::e2e::link::LiveLink::default());
    let peers = copy_side(p).map(|source| crate::live::copy_side(link.clone(), source));
    let board = session.live(false, peers);
    let progress = Progress::new(p.targets.len())
        .with_live(board)
        .with_e2e_live(link);
    session.start();
    let cancel = session.cancel().clone();
    let ran = std::thread::scope(|s| {
        s.spawn(|| announce_listening(&progress));
        let reporter = s.spawn(|| reporter(p, &progress));
        let r = iolab_xdd::run::run(p, cfg, &progress, &cancel);
        progress.finished.store(true, Relaxed);
        let hb = reporter
            .join()
            .unwrap_or_else(|_| Some(Failure::other("heartbeat", "the reporter thread panicked")));
        r.map(|r| (r, hb))
    });
    // Collectors stop whatever happened to the run, so none outlives it
    // (dropping the session stops them too).
    let (mut results, hb_failure) = ran?;
    // A lost heartbeat file is part of how the run ended: in the JSON too.
    if let Some(f) = hb_failure {
        results.outcome = results.outcome.clone().worst(Outcome::Error(f));
    }
    session.stop_watching(&results.outcome);
    let mut outcome = results.outcome.clone();
    // Every output is attempted even when one fails, so that as much as
    // possible of a run is kept; a failed write is an error outcome.
    for w in [write_reports, write_timestamps, write_errors] {
        if let Err(e) = w(&results) {
            iolab_core::say!("xdd: {e:#}");
            outcome = outcome.worst(Outcome::Error(Failure::other("write", format!("{e:#}"))));
        }
    }
    // The JSON and the store's record are rendered from the pass log as
    // they are written: 30,000 passes make ~90 MB of JSON.
    let payload = report::json::payload(&results);
    let mut r = Report::new(outcome, payload);
    r.figures = report::json::figures(&results, &r.payload.combined);
    r.notes = results.notes.clone();
    r.filesystems = results
        .targets
        .iter()
        .filter_map(|t| t.fs.clone())
        .collect();
    r.window = Some((results.start_wall_ns, results.end_wall_ns));
    let lost = || results.passes.error();
    let render = Render {
        csv: None,
        lost: &lost,
    };
    Ok(session.finish(r, render))
}

/// Writes `path` whole or not at all, through the output layer.
fn write_file(path: &str, text: &str) -> anyhow::Result<()> {
    iolab_output::write_atomically(std::path::Path::new(path), text.as_bytes())
        .with_context(|| format!("cannot write {path}"))
}

/// Appends this run's record, as `fill` writes it, to one of XDD's
/// collecting files (`-output`, `-csvout`, `-combinedout`: XDD opens them
/// with fopen "a"). The record is made whole in memory first and
/// appended in one write, so runs ending together each keep theirs, and
/// a pass log that cannot be read back appends nothing.
fn append_file(
    path: &str,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut record = Vec::new();
    fill(&mut record).with_context(|| format!("nothing appended to {path}"))?;
    iolab_output::append_record(std::path::Path::new(path), &record)
        .with_context(|| format!("cannot write {path}"))
}

/// The text report, CSV, combined line and JSON. Each is attempted even
/// when an earlier one failed; the first failure is returned.
fn write_reports(r: &RunResults) -> anyhow::Result<()> {
    let g = &r.config.global;
    let mut results = Vec::new();
    match &g.output {
        Some(f) => {
            // XDD opens -output for appending too (fopen "a").
            let text = append_file(f, |w| report::text::write(r, w));
            results.push(text.context("-output"));
        }
        None => {
            // Streamed too: with -verbose a long run has a row per pass.
            // A closed standard output is noted by the output layer.
            let mut w = std::io::BufWriter::with_capacity(64 << 10, crate::output::Stdout);
            let _ = report::text::write(r, &mut w).and_then(|()| w.flush());
        }
    }
    // XDD opens these for appending as well, so runs collect in one file.
    if let Some(f) = &g.csvout {
        let csv = append_file(f, |w| report::csv::write(r, w));
        results.push(csv.context("-csvout"));
    }
    if let Some(f) = &g.combinedout {
        let combined = report::csv::combined(r);
        results.push(append_file(f, |w| w.write_all(combined.as_bytes())).context("-combinedout"));
    }
    results.into_iter().collect()
}

/// -timestamps reports (PREFIX.target.NNNN.csv, or standard output) and
/// binary dumps (PREFIX.target.NNNN.bin), one per target.
fn write_timestamps(r: &RunResults) -> anyhow::Result<()> {
    use iolab_xdd::timestamp::{summarize, write_dump};
    use report::timestamps;
    for (i, t) in r.targets.iter().enumerate() {
        let Some(ts) = &t.timestamps else { continue };
        let o = &ts.options;
        let text = if o.detailed {
            timestamps::detailed(&ts.info, &ts.entries, o.normalize)
        } else {
            timestamps::summary(&ts.info, &summarize(&ts.entries, ts.info.block_size))
        };
        match &o.output {
            Some(prefix) => {
                // Whole or not at all, and a link at the name replaced,
                // never followed (the name is made from a prefix).
                let path = iolab_xdd::outputs::ts_file(&prefix.to_string_lossy(), i, "csv");
                let write = match o.append {
                    true => iolab_output::append_record,
                    false => iolab_output::write_atomically,
                };
                write(std::path::Path::new(&path), text.as_bytes())
                    .with_context(|| format!("-timestamps output {path}"))?;
            }
            None => crate::output::print_bytes(text.as_bytes())?,
        }
        if let Some(prefix) = &o.dump {
            let path = iolab_xdd::outputs::ts_file(&prefix.to_string_lossy(), i, "bin");
            iolab_output::write_with(std::path::Path::new(&path), |w| {
                write_dump(w, &ts.info, &ts.entries)
            })
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
        Some(f) => write_file(f, &text).context("-errout"),
        None => {
            iolab_core::say_part!("{text}");
            Ok(())
        }
    }
}

/// Says where the end-to-end destinations listen, once they do (on
/// standard error, one line per target: `xddcp` waits for it), and how
/// long the run waits for `-starttime`, once, as the wait begins.
fn announce_listening(progress: &Progress) {
    let (mut listening, mut start) = (false, false);
    loop {
        if let (false, Some(at)) = (listening, progress.e2e_listening.get()) {
            for line in at {
                iolab_core::say!("xdd: e2e destination {line}");
            }
            listening = true;
        }
        if let (false, Some(w)) = (start, progress.start_wait.get()) {
            iolab_core::say!(
                "xdd: waiting {} until the global clock reads {} (-starttime)",
                crate::progress::human_s(w.left.as_secs_f64()),
                w.global_s
            );
            start = true;
        }
        if (listening && start) || progress.finished.load(Relaxed) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The one thread that talks to the terminal while the run goes on.
/// Returns the first heartbeat file write that failed.
fn reporter(p: &Plan, progress: &Progress) -> Option<Failure> {
    let hb = &p.global.heartbeat;
    if hb.interval_s > 0.0 {
        return heartbeat(p, progress);
    }
    if crate::progress::shown(true) {
        progress_bar(p, progress);
    }
    None
}

fn samples(p: &Plan, progress: &Progress, now: u64) -> Vec<report::heartbeat::Sample> {
    let only = &p.global.heartbeat.only_targets;
    progress
        .targets
        .iter()
        .enumerate()
        .filter(|(i, _)| only.is_empty() || only.contains(i))
        .map(|(i, t)| report::heartbeat::Sample {
            target: i,
            pass: t.pass.load(Relaxed),
            ops: t.ops.load(Relaxed),
            bytes: t.bytes.load(Relaxed),
            planned_ops: t.planned_ops.load(Relaxed),
            pass_elapsed_s: t.pass_elapsed_s(now),
            waiting: t.pass_start_ns.load(Relaxed) == 0,
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

/// Heartbeat lines on standard error, or CSV lines in one file per
/// target (`-hb output PREFIX`: PREFIX.T0000.csv...). The files were
/// checked before the run; a write that fails now is the run's error.
/// Standard error is a display: once it is closed (`2>&1 | head`), the
/// lines stop and the run goes on.
fn heartbeat(p: &Plan, progress: &Progress) -> Option<Failure> {
    let hb = &p.global.heartbeat;
    let host = iolab_core::env::hostname();
    let mut failure = None;
    let mut note = |path: &str, e: std::io::Error| {
        failure.get_or_insert_with(|| Failure::io("heartbeat output", Some(path.into()), &e));
    };
    let mut files: Vec<(String, Option<std::fs::File>)> = Vec::new();
    if let Some(prefix) = &hb.output {
        for i in 0..p.targets.len() {
            let path = iolab_xdd::outputs::heartbeat_file(prefix, i);
            // A link planted at the name is replaced, not followed.
            let f = iolab_output::create_streamed(std::path::Path::new(&path)).and_then(|mut f| {
                f.write_all(report::heartbeat::csv_header(hb).as_bytes())?;
                Ok(f)
            });
            match f {
                Ok(f) => files.push((path, Some(f))),
                Err(e) => {
                    note(&path, e);
                    files.push((path, None));
                }
            }
        }
    }
    let step = (hb.interval_s * 1e9) as u64;
    let t0 = iolab_core::clock::mono_ns();
    let mut next = t0 + step;
    let mut to_stderr = files.is_empty();
    while nap_until_or_finished(progress, next) {
        let now = iolab_core::clock::mono_ns();
        next += step;
        let tod = iolab_core::clock::format_local(
            iolab_core::clock::wall_ns() / 1_000_000_000,
            "%H:%M:%S",
        );
        let el = (now - t0) as f64 / 1e9;
        let ss = samples(p, progress, now);
        if to_stderr {
            let line = report::heartbeat::line(hb, &host, &tod, el, &ss);
            to_stderr = std::io::stderr().write_all(line.as_bytes()).is_ok();
        }
        for s in &ss {
            let line = report::heartbeat::csv_line(hb, &host, &tod, el, s);
            let file = files.get(s.target).map(|(p, f)| (p, f.as_ref()));
            if let (Some((path, Some(mut f))), Some(line)) = (file, line) {
                if let Err(e) = f.write_all(line.as_bytes()) {
                    note(path, e);
                }
            }
        }
    }
    if to_stderr && !hb.lf {
        let _ = std::io::stderr().write_all(b"\n");
    }
    failure
}

fn progress_bar(p: &Plan, progress: &Progress) {
    let total: u64 = p
        .targets
        .iter()
        .map(|t| t.planned_bytes() * p.global.passes)
        .sum();
    let new_bar = || {
        let bar = crate::progress::bar(total, crate::progress::Unit::Bytes);
        bar.set_message("xdd");
        bar
    };
    let mut bar = Some(new_bar());
    // While the run waits for -starttime, a countdown takes the bar's place.
    let mut countdown: Option<(indicatif::ProgressBar, std::time::Instant)> = None;
    loop {
        let waiting = progress
            .start_wait
            .get()
            .filter(|w| w.left >= COUNTDOWN && progress.run_start_ns.load(Relaxed) == 0);
        if let Some(w) = waiting {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            let (c, since) = countdown.get_or_insert_with(|| {
                let what = format!("xdd: -starttime {}", w.global_s);
                (
                    crate::progress::countdown(&what, w.left),
                    std::time::Instant::now(),
                )
            });
            c.set_position(since.elapsed().as_secs());
        } else {
            if let Some((c, _)) = countdown.take() {
                c.finish_and_clear();
            }
            let done: u64 = progress
                .targets
                .iter()
                .map(|t| t.earlier_bytes.load(Relaxed) + t.bytes.load(Relaxed))
                .sum();
            bar.get_or_insert_with(new_bar)
                .set_position(done.min(total));
        }
        if !nap_until_or_finished(progress, iolab_core::clock::mono_ns() + 200_000_000) {
            break;
        }
    }
    if let Some((c, _)) = countdown {
        c.finish_and_clear();
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// Waits for -starttime at least this long count down on a terminal.
const COUNTDOWN: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    fn config(line: &str) -> Config {
        let args: Vec<OsString> = line.split_whitespace().map(OsString::from).collect();
        match parse_os(&args) {
            Ok(Parsed::Run(c)) => *c,
            other => panic!("{line}: {other:?}"),
        }
    }

    /// A second signal names what the run creates: new write targets,
    /// pass files, heartbeat files; not a file that was there, a target
    /// only read, or the null target.
    #[test]
    fn last_words_name_what_the_run_creates() {
        let dir = iolab_core::tmp::PrivateDir::new("iolab-xdd-words").unwrap();
        let at = |n: &str| dir.path().join(n).display().to_string();
        std::fs::write(at("old"), b"x").unwrap();
        let line = format!(
            "-op write -targets 4 {} {} {} null -op target 2 read -numreqs 1 -hb 1 -hb output {}",
            at("new"),
            at("old"),
            at("read"),
            at("hb")
        );
        let words = last_words("xdd", &config(&line));
        assert!(words.contains("second signal"), "{words}");
        assert!(words.contains(&format!("  {}\n", at("new"))), "{words}");
        assert!(words.contains(&at("hb.T0000.csv")), "{words}");
        for not in [at("old"), at("read"), "null".into()] {
            assert!(!words.contains(&format!("  {not}\n")), "{not}: {words}");
        }
        let pass = format!(
            "-op write -target {} -numreqs 1 -passes 2 -createnewfiles",
            at("p")
        );
        let words = last_words("xdd", &config(&pass));
        assert!(words.contains(&at("p.00000002")), "{words}");
        assert_eq!(
            last_words(
                "xdd",
                &config(&format!("-op read -target {} -numreqs 1", at("old")))
            ),
            ""
        );
    }
}
