//! `iolab qualify [PLAN.toml] --out DIR`: the plan read and every curve
//! checked through its tool's own parser before anything is made or run
//! (exit 2), then the curves run through the sweep engine into
//! DIR/results.sqlite, and the verdict: a table on the terminal,
//! DIR/report.html, exit 0 when every layer passes and 1 naming the
//! first that does not. A rerun of the same command carries on where an
//! interrupted one stopped (130). The showing is in `qualify_show`.

use crate::exit;
use crate::qualify_out::{self as out_dir, OutLock};
use crate::qualify_show::{self as show, Shown};
use clap::Parser;
use iolab_core::{Failure, Outcome};
use iolab_qualify::curves::{self, Curves};
use iolab_qualify::machine::Machine;
use iolab_qualify::plan::{self, Plan};
use iolab_qualify::run::{self, Ctx};
use iolab_qualify::verdict::{self, Verdict};
use iolab_store::Store;
use iolab_sweep::run::{SweepError, WorkDir};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "iolab qualify",
    about = "Qualify storage layer by layer (network, devices, data, metadata): each curve grown to its knee, limits judged against the layer below, the plan's expectations and a baseline",
    after_help = "Without a plan: this machine (network on loopback, data and metadata under TMP, 1 to the core count tasks), in a few minutes.\n\
        The plan's keys are in docs/qualify.md. Rerun the same command to carry on after Ctrl-C.\n\
        Exit status: 0 every layer passed, 1 a layer failed (named), 2 bad plan or DIR (nothing run), 130 interrupted."
)]
struct Cli {
    /// The plan (TOML); without one, the embedded default for this machine.
    plan: Option<PathBuf>,
    /// The qualification's directory: plan.toml, results.sqlite, report.html.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// An earlier qualification's directory: every limit also as a percentage of its limit of the same name.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// Check the plan, print its curves and their first command lines; run nothing.
    #[arg(long)]
    dry_run: bool,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

fn usage(msg: impl std::fmt::Display) -> exit::Halt {
    exit::Halt::usage(format!("iolab qualify: {msg}"))
}

/// Everything checked before anything is made or run.
struct Checked {
    plan: Plan,
    curves: Curves,
    /// DIR holds this qualification already (a rerun).
    resumed: bool,
    baseline: Option<(String, Verdict)>,
    exe: PathBuf,
    /// DIR locked, when it existed (a new DIR is locked once made).
    lock: Option<OutLock>,
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> exit::Ended {
    let cli: Cli = exit::parse_clap(prog, args)?;
    let checked = check(&cli).map_err(usage)?;
    if checked.plan.runs(iolab_qualify::layer::Layer::Metadata) {
        if let Some(note) = iolab_qualify::caveat::metadata(&checked.plan.dir) {
            iolab_core::say!("iolab qualify: note: {note}");
        }
    }
    if cli.dry_run {
        return Ok(show::dry_run(&checked.plan, &checked.curves, &checked.exe));
    }
    qualify(&cli.out, checked)
}

/// The plan as given (or the default), filled, with every check done.
fn check(cli: &Cli) -> Result<Checked, String> {
    let text = match &cli.plan {
        Some(p) => iolab_core::input::read_text(p, iolab_core::input::TEXT_MAX_BYTES)
            .map_err(|e| format!("{}: cannot read the plan: {e}", p.display()))?,
        None => String::new(),
    };
    let named = cli
        .plan
        .as_ref()
        .map_or("the default plan".to_string(), |p| p.display().to_string());
    let raw = Plan::read(&text).map_err(|e| format!("{named}: {e}"))?;
    plan::check_sections(&raw).map_err(|e| format!("{named}: {e}"))?;
    // Locked before it is read, so that what is read stays true while
    // this qualification runs; a dry run reads and writes nothing after.
    let lock = (!cli.dry_run && cli.out.is_dir())
        .then(|| out_dir::lock(&cli.out))
        .transpose()?;
    let previous = out_dir::previous(&cli.out)?;
    let machine = Machine::probe().map_err(|e| format!("cannot look this machine up: {e}"))?;
    let plan = plan::fill(raw, &machine, previous.as_ref()).map_err(|e| format!("{named}: {e}"))?;
    if previous.as_ref().is_some_and(|p| *p != plan) {
        return Err(format!(
            "--out {}: it holds a qualification of another plan (its plan.toml); give the same plan to carry it on, or another --out",
            cli.out.display()
        ));
    }
    let curves = curves::curves(&plan);
    verdict::check_expectations(&plan, &curves).map_err(|e| format!("{named}: {e}"))?;
    for c in &curves.curves {
        iolab_sweep::plan::Plan::parse(&c.sweep)
            .and_then(|s| s.check_points(&crate::sweep::Tools))
            .map_err(|e| format!("{named}: curve '{}': {e}", c.label))?;
    }
    let needs_dir = plan.runs(iolab_qualify::layer::Layer::Data)
        || plan.runs(iolab_qualify::layer::Layer::Metadata);
    if needs_dir && !plan.dir.is_dir() {
        return Err(format!(
            "{named}: dir: {} is not a directory",
            plan.dir.display()
        ));
    }
    // The files' directory is made in it once the run starts: one that
    // cannot take it (a read-only mount, no permission) is refused now,
    // before --out holds a plan.toml that a fixed plan could not resume.
    if needs_dir {
        iolab_output::check_dir("dir", &plan.dir).map_err(|e| {
            let tmp = (plan.dir == machine.tmp).then_some(" (TMPDIR: the default dir)");
            format!("{named}: {e}{}", tmp.unwrap_or_default())
        })?;
    }
    show::check_files_dir(&plan, &cli.out)?;
    let baseline = cli.baseline.as_deref().map(baseline).transpose()?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the iolab binary to run: {e}"))?;
    Ok(Checked {
        resumed: previous.is_some(),
        plan,
        curves,
        baseline,
        exe,
        lock,
    })
}

/// An earlier qualification's verdict, from its plan and store.
fn baseline(dir: &Path) -> Result<(String, Verdict), String> {
    let fail = |why: String| format!("--baseline {}: {why}", dir.display());
    let plan_toml = dir.join("plan.toml");
    let text = iolab_core::input::read_text(&plan_toml, iolab_core::input::TEXT_MAX_BYTES)
        .map_err(|e| {
            fail(format!(
                "cannot read its plan.toml ({e}): name an earlier qualification's directory"
            ))
        })?;
    let m = Machine::probe().map_err(|e| fail(e.to_string()))?;
    let plan = Plan::read(&text)
        .and_then(|r| plan::fill(r, &m, None))
        .map_err(|e| fail(format!("plan.toml: {e}")))?;
    let store = Store::open_existing(&dir.join("results.sqlite"))
        .map_err(|e| fail(format!("results.sqlite: {e}")))?;
    let curves = curves::curves(&plan);
    let measured = run::walk_stored(&plan, &curves, &store).map_err(|e| fail(e.to_string()))?;
    Ok((
        format!("{} ({})", plan.label, dir.display()),
        verdict::judge(&plan, &curves, &measured),
    ))
}

/// DIR, its plan.toml and store, the sweep's directory in it, and the
/// files' directory: everything the run needs, made now.
fn open(dir: &Path, c: &mut Checked) -> Result<(Store, WorkDir, Option<PathBuf>), exit::Halt> {
    let made = c.lock.is_none();
    if made {
        c.lock = Some(lock_new(dir)?);
    }
    // The files' directory before anything in DIR: a dir that stopped
    // taking files since it was checked leaves no plan.toml or store.
    let files = show::files_dir(&c.plan, dir).map_err(|e| {
        if made {
            let _ = std::fs::remove_dir(dir);
        }
        usage(e)
    })?;
    if !c.resumed {
        iolab_output::write_atomically(&dir.join("plan.toml"), c.plan.to_toml().as_bytes())
            .map_err(|e| {
                usage(format!(
                    "--out {}: cannot write plan.toml: {e}",
                    dir.display()
                ))
            })?;
    }
    let store_path = dir.join("results.sqlite");
    let store =
        Store::open(&store_path).map_err(|e| usage(format!("{}: {e}", store_path.display())))?;
    let work = WorkDir::create(&store_path)
        .map_err(|e| usage(e.to_string()))?
        .with_cancel(crate::runner::root());
    for d in work.taken_over() {
        iolab_core::say!(
            "iolab qualify: took over {}: the qualification that made it is no longer running; its leftovers were removed",
            d.display()
        );
    }
    Ok((store, work, files))
}

/// Makes DIR, checked to be new, and locks it. Another qualification
/// may have made and locked it since it was checked: that one is
/// refused as any running one is, or, ended already, its files are.
fn lock_new(dir: &Path) -> Result<OutLock, exit::Halt> {
    std::fs::create_dir_all(dir)
        .map_err(|e| usage(format!("--out {}: cannot create it: {e}", dir.display())))?;
    let lock = out_dir::lock(dir).map_err(usage)?;
    match std::fs::read_dir(dir).map(|mut d| d.next().is_none()) {
        Ok(true) => Ok(lock),
        _ => Err(usage(format!(
            "--out {}: another qualification wrote in it since it was checked: run the same command again",
            dir.display()
        ))),
    }
}

/// Makes what the run needs, runs, judges, reports.
fn qualify(dir: &Path, mut checked: Checked) -> exit::Ended {
    let (mut store, work, files) = open(dir, &mut checked)?;
    let c = &checked;
    crate::signals::set_last_words(format!(
        "\niolab qualify: stopped at once; the run under way may still be running, and {} may hold its files\n",
        files.as_ref().map_or("nothing".into(), |f| f.display().to_string())
    ));
    let mut shown = Shown::start(&c.plan, &c.curves, dir, c.resumed);
    let ran = run::run(
        &mut Ctx {
            plan: &c.plan,
            curves: &c.curves,
            store: &mut store,
            iolab: &c.exe,
            work: &work,
        },
        &mut |e| shown.event(e),
    );
    drop(work);
    shown.finish();
    let store_path = dir.join("results.sqlite");
    let ran = match ran {
        Ok(r) => r,
        Err(run::RunError::Sweep(e @ SweepError::Launcher { .. })) => {
            return Err(usage(format!(
                "{e}; nothing more was run{} (rerun the same command once fixed)",
                files_left(&c.plan, files.as_deref())
            )));
        }
        Err(e) => {
            iolab_core::say!(
                "iolab qualify: {e}; what ran is in {}{}",
                store_path.display(),
                files_left(&c.plan, files.as_deref())
            );
            return Ok(Outcome::Error(Failure::other("qualify", e.to_string())));
        }
    };
    if ran.interrupted {
        if !crate::output::stdout_closed() {
            iolab_core::say!(
                "iolab qualify: interrupted; what ran is in {}; run the same command again to carry on{}",
                store_path.display(),
                files.as_ref().map_or(String::new(), |f| format!(" ({} keeps the data files meanwhile)", f.display()))
            );
        }
        return Ok(Outcome::Interrupted);
    }
    if let Some(f) = &files {
        let kept = show::remove_files_dir(&c.plan, f);
        if !kept.is_empty() {
            iolab_core::say!(
                "iolab qualify: note: kept {}: its tools' files were removed, not what the qualification did not make: {}",
                f.display(),
                kept.join(", ")
            );
        }
    }
    Ok(judge(dir, c, &store, &ran.measured))
}

/// After a run that could not go on: its tools' files removed from the
/// files' directory `files`, and it too when nothing else is in it (a
/// rerun makes it again, and writes again the files a read needs);
/// what is left, named for the message.
fn files_left(plan: &Plan, files: Option<&Path>) -> String {
    let Some(f) = files else {
        return String::new();
    };
    let kept = show::remove_files_dir(plan, f);
    match (kept.is_empty(), f.exists()) {
        (true, false) => String::new(),
        (true, true) => format!("; {} is left (it could not be removed)", f.display()),
        (false, _) => format!("; {} is left, holding {}", f.display(), kept.join(", ")),
    }
}

/// The verdict: the tables, DIR/report.html, and the outcome naming the
/// first layer that failed.
fn judge(
    dir: &Path,
    c: &Checked,
    store: &Store,
    measured: &[Option<iolab_qualify::verdict::Measured>],
) -> Outcome {
    let mut v = verdict::judge(&c.plan, &c.curves, measured);
    if let Some((_, base)) = &c.baseline {
        verdict::against_baseline(&mut v, base);
    }
    let baseline_name = c.baseline.as_ref().map(|(n, _)| n.as_str());
    let _ = out!(
        "\n{}",
        iolab_report::qualify::text::render(&v, baseline_name.is_some())
    );
    if let Err(e) = show::write_report(dir, &c.plan, &c.curves, store, &v, baseline_name) {
        iolab_core::say!("iolab qualify: {e}");
        return Outcome::Error(
            Failure::other("report", e).of_kind(iolab_core::FailureKind::Output),
        );
    }
    let _ = outln!("wrote {}", dir.join("report.html").display());
    match v.failed() {
        None => Outcome::Completed,
        Some((layer, why)) => {
            iolab_core::say!("iolab qualify: layer {layer} failed: {why}");
            Outcome::Error(Failure::other(
                "qualify",
                format!("layer {layer} failed: {why}"),
            ))
        }
    }
}
