//! `iolab sweep PLAN.toml`: check the whole plan (every point's options
//! through the tool's own parser) before anything runs, then run every
//! repeat not yet in the store, one line per repeat, and end with the
//! table of means and spreads. Exit status: 0 every repeat completed, 1
//! some failed (the others are recorded), 2 bad plan or store (nothing
//! ran), 130 interrupted (a rerun resumes).

use crate::exit::{self, Ended, Halt};
use clap::Parser;
use iolab_core::Outcome;
use iolab_report::store::clean;
use iolab_store::{Figure, Store, StoreError};
use iolab_sweep::plan::{Plan, PlanError, ToolCheck};
use iolab_sweep::run::{self, Event, SweepError, WorkDir};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "iolab sweep",
    about = "Run a scaling sweep: a tool over the axes of a plan, each point repeated, recorded in the results store",
    after_help = "The plan's keys are in docs/sweeps.md; examples/smp-affinity.toml is mdtest's scaling sweep.\n\
        A rerun of the same plan with the same store runs only the repeats not yet recorded.\n\
        Then: iolab results show LABEL, iolab report LABEL -o DIR, iolab results compare LABEL1 LABEL2."
)]
struct Cli {
    /// The plan (TOML).
    plan: PathBuf,
    /// The results store. Default: $IOLAB_STORE, else ./iolab.sqlite.
    #[arg(long, env = "IOLAB_STORE", default_value = crate::runner::store::DEFAULT_STORE)]
    store: PathBuf,
    /// Check the plan and print every point's command line; run nothing.
    #[arg(long)]
    dry_run: bool,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Each tool's own parser (from the registry), without running anything.
pub(crate) struct Tools;

impl ToolCheck for Tools {
    fn check(&self, tool: &str, args: &[String], alone: bool) -> crate::tools::Checked {
        let os: Vec<OsString> = args.iter().map(OsString::from).collect();
        match crate::tools::find(tool).and_then(|t| t.sweep) {
            Some(check) => check(&os, alone),
            None => Err(format!("no tool named {tool} that a sweep can run")),
        }
    }
}

/// Bad usage, exit 2; the message's control characters escaped (it may
/// quote the plan's labels and values).
fn usage(what: &Path, msg: impl std::fmt::Display) -> Halt {
    Halt::usage(clean(&format!("iolab sweep: {}: {msg}", what.display())).into_owned())
}

/// Bad usage for a plan that cannot run ([`usage`]); the TOML reader's
/// message keeps its lines (the plan's line, a caret under the column),
/// each escaped on its own.
fn plan_error(what: &Path, e: PlanError) -> Halt {
    match e {
        PlanError::Toml(msg) => {
            let lines: Vec<String> = msg
                .trim_end()
                .lines()
                .map(|l| clean(l).into_owned())
                .collect();
            let head = clean(&format!("iolab sweep: {}: ", what.display())).into_owned();
            Halt::usage(format!("{head}{}", lines.join("\n")))
        }
        e => usage(what, e),
    }
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let cli: Cli = exit::parse_clap(prog, args)?;
    let plan = iolab_core::input::read_text(&cli.plan, iolab_core::input::TEXT_MAX_BYTES)
        .map_err(|e| usage(&cli.plan, format!("cannot read the plan: {e}")))
        .and_then(|t| Plan::parse(&t).map_err(|e| plan_error(&cli.plan, e)))
        .and_then(|p| {
            p.check_points(&Tools)
                .map(|()| p)
                .map_err(|e| plan_error(&cli.plan, e))
        })?;
    let exe = std::env::current_exe().map_err(|e| {
        usage(
            &cli.plan,
            format!("cannot find the iolab binary to run: {e}"),
        )
    })?;
    if cli.dry_run {
        return dry_run(&plan, &exe);
    }
    let mut store =
        Store::open(&cli.store).map_err(|e| usage(&cli.store, format!("--store: {e}")))?;
    let work = WorkDir::create(&cli.store)
        .map_err(|e| usage(&cli.store, e))?
        .with_cancel(crate::runner::root());
    work.claim(&store, &plan.label)
        .map_err(|e| usage(&cli.store, e))?;
    for d in work.taken_over() {
        iolab_core::say!(
            "iolab sweep: took over {}: the sweep that made it is no longer running; its leftovers were removed",
            d.display()
        );
    }
    crate::signals::set_last_words(
        "\niolab sweep: stopped at once; the repeat that was running may still be running in its own process group\n"
            .to_string(),
    );
    let mut eta = Eta {
        started: std::time::Instant::now(),
        n: 0,
        of: 0,
    };
    let result = run::run(&plan, &mut store, &exe, &work, &mut |e| {
        show(&plan, &cli.store, e, &mut eta)
    });
    drop(work);
    match result {
        Ok(sum) => Ok(finish(&plan, &store, &cli.store, sum)),
        Err(SweepError::Store(e @ StoreError::PlanMismatch { .. })) => Err(usage(&cli.store, e)),
        Err(e @ SweepError::Launcher { .. }) => {
            say("\n");
            Err(Halt::usage(format!(
                "iolab sweep: {e}; nothing more was run"
            )))
        }
        Err(e) => Err(Halt::failed(format!("iolab sweep: {e}"))),
    }
}

/// `--dry-run`: every point's command line (labels, keys and words
/// with their control characters escaped, as every listing prints them).
fn dry_run(plan: &Plan, exe: &Path) -> Ended {
    let _ = outln!(
        "sweep '{}': {} points x {} repeats; the plan is valid",
        clean(&plan.label),
        plan.points().len(),
        plan.repeats
    );
    for p in plan.points() {
        match plan.command(&exe.to_string_lossy(), &p, 1, "RUN.json") {
            Ok(argv) => {
                let _ = outln!("{}: {}", clean(&p.key), clean(&argv.join(" ")));
            }
            Err(e) => return Err(usage(Path::new(&plan.label), e)),
        }
    }
    Ok(Outcome::Completed)
}

/// Writes to standard output. A closed pipe (`| head`) stops the sweep
/// as SIGPIPE would (crate::output): the repeat under way is stopped,
/// what was recorded stays, and a rerun resumes.
fn say(s: &str) {
    let _ = crate::output::print_bytes(s.as_bytes());
}

/// One line per event, on standard output (the tail of a failed child's
/// standard error on standard error).
/// Where the sweep is, for the time left after each repeat (the mean
/// repeat so far times the repeats still to run).
struct Eta {
    started: std::time::Instant,
    n: usize,
    of: usize,
}

impl Eta {
    fn left(&self) -> String {
        let rest = self.of.saturating_sub(self.n);
        if rest == 0 || self.n == 0 {
            return String::new();
        }
        let each = self.started.elapsed().as_secs_f64() / self.n as f64;
        format!(
            "; about {} left",
            crate::progress::human_s(each * rest as f64)
        )
    }
}

fn show(plan: &Plan, store: &Path, e: Event, eta: &mut Eta) {
    match e {
        Event::Planned { points, to_run, done, estimate_s } => say(&format!(
            "sweep '{}': {}, {points} points x {} repeats; {done} recorded already, {to_run} to run (store {}); {}\n",
            clean(&plan.label),
            plan.tool,
            plan.repeats,
            clean(&store.display().to_string()),
            match (to_run, estimate_s) {
                (0, _) => "nothing to run".to_string(),
                (_, Some(s)) => format!("about {} by the repeats recorded so far", crate::progress::human_s(s)),
                (_, None) => "the time left follows each repeat".to_string(),
            }
        )),
        Event::Started { n, of, point, repeat, .. } => {
            (eta.n, eta.of) = (n, of);
            let w = of.to_string().len();
            say(&format!("[{n:>w$}/{of}] {} #{repeat}: ", clean(&point.key)));
        }
        Event::Recorded { run_id, outcome, figures, elapsed_s, .. } => {
            let head = match iolab_store::counts(&outcome) {
                true => String::new(),
                false => format!("{outcome} (recorded, not counted): "),
            };
            say(&format!("{head}{} ({elapsed_s:.1} s, run {run_id}){}\n", clean(&headline(&figures)), eta.left()));
        }
        Event::Duplicate { run_id, .. } => say(&format!(
            "recorded meanwhile by another sweep of the plan (run {run_id}): not recorded twice{}\n",
            eta.left()
        )),
        // The repeat a closed stdout stopped: nobody is reading.
        Event::Failed { .. } if crate::output::stdout_closed() => {}
        Event::Failed { why, stderr_tail, .. } => {
            say(&format!("FAILED: {}{}\n", clean(&why), eta.left()));
            for l in stderr_tail.lines() {
                iolab_core::say!("    | {l}");
            }
        }
    }
}

/// Most figures a repeat's line shows (a survey's run states one per
/// test and thread count); `iolab results show RUN` has them all.
const LINE_FIGURES: usize = 6;

/// A repeat's figures on its line: `file_create 1234 ops/s`, and for a
/// run with inner points (mdtest's -f/-l, a survey's thread counts) each
/// with its scope, `file_create tasks=2 1234 ops/s`, as the series names
/// them.
fn headline(figures: &[Figure]) -> String {
    let mut figs: Vec<String> = figures
        .iter()
        .take(LINE_FIGURES)
        .map(|f| {
            let scope = match f.scope.is_empty() {
                true => String::new(),
                false => format!(" {}", f.scope),
            };
            format!(
                "{}{scope} {} {}",
                f.phase,
                iolab_report::store::num(f.stat.mean),
                f.unit
            )
        })
        .collect();
    if figures.len() > LINE_FIGURES {
        figs.push(format!("and {} more", figures.len() - LINE_FIGURES));
    }
    figs.join(", ")
}

/// `iolab results show ...` and `iolab report ...` for the series, to
/// be pasted into a shell: each word quoted for it, the label as
/// `series:LABEL` where `results` would read it as a run id.
fn next_steps(plan: &Plan, store: &Path) -> String {
    let word = iolab_io500::ior::shell_word;
    let store = path_word(store);
    let id = match plan.label.parse::<i64>() {
        Ok(_) => format!("series:{}", plan.label),
        Err(_) => plan.label.clone(),
    };
    format!(
        "see: iolab results --store {store} show {}; chart: iolab report --store {store} {} -o DIR",
        word(&id),
        word(&plan.label)
    )
}

/// `path` as one shell word that gives it back byte for byte: quoted
/// for a POSIX shell, or, when it holds a control character or bytes
/// that are not UTF-8 (which would print as escapes or as U+FFFD, naming
/// another file), in `$'...'` with those bytes as `\xHH` (bash, zsh,
/// ksh and POSIX.1-2024 shells read it).
fn path_word(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    match path.to_str() {
        Some(s) if !s.chars().any(iolab_core::text::unprintable) => iolab_io500::ior::shell_word(s),
        _ => {
            let mut w = String::from("$'");
            for &b in path.as_os_str().as_bytes() {
                match b {
                    b'\\' | b'\'' => w.push_str(&format!("\\{}", b as char)),
                    0x20..=0x7e => w.push(b as char),
                    _ => w.push_str(&format!("\\x{b:02x}")),
                }
            }
            w.push('\'');
            w
        }
    }
}

/// The table of the series, and how the sweep ended.
fn finish(plan: &Plan, store: &Store, path: &Path, sum: run::Summary) -> Outcome {
    if let Ok(s) = store.series(&plan.label) {
        say(&format!("\n{}", iolab_report::store::show::points(&s)));
    }
    say(&format!(
        "recorded {} runs now ({} skipped as done); {}\n",
        sum.recorded,
        sum.skipped,
        clean(&next_steps(plan, path))
    ));
    if sum.interrupted {
        // After a closed stdout (`| head`), quiet as SIGPIPE would be.
        if !crate::output::stdout_closed() {
            iolab_core::say!("iolab sweep: interrupted; run the same command again to resume");
        }
        return Outcome::Interrupted;
    }
    if sum.failed > 0 {
        let why = format!("{} repeats did not complete", sum.failed);
        iolab_core::say!("iolab sweep: {why}");
        return Outcome::Error(iolab_core::Failure::other("sweep", why));
    }
    Outcome::Completed
}
