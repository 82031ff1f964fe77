//! `iolab s3bench BENCH`: warp's object-storage benchmarks with warp's
//! names and flags (clap). Parses and checks everything (exit 2 before
//! any request but the bucket's HEAD), builds one S3 endpoint per
//! `--host` with the credentials, hands the run to `crates/s3bench`,
//! prints warp's analysis and writes `--json`, `--csv` and `--store`.

use crate::exit::{self, Ended, Halt, HaltKind};
use crate::runner::options::{self, RunOptions};
use crate::runner::{Given, Render, Run as RunnerRun};
use clap::{Args, Parser, Subcommand};
use iolab_backend::s3::{check_bucket, Endpoint, S3Config, Signing};
use iolab_comm::{connect, CommMode, World};
use iolab_report::s3bench::json::SCHEMA;
use iolab_s3bench::config::{AutoTerm, Distrib};
use iolab_s3bench::live::Phase;
use iolab_s3bench::{parse, Bench, Config, Live, NotStarted, Report, Run};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "iolab s3bench",
    about = "Object-storage benchmarks as MinIO's warp runs them: get, put, stat, delete, list, mixed, multipart",
    after_help = "Examples:
  iolab s3bench get --host 127.0.0.1:9000 --bucket bench --obj.size 1MiB --objects 200 --duration 30s
  iolab s3bench mixed --host s3-{1...4}:9000 --bucket bench --get-distrib 40 --list-distrib 10 --autoterm
Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or --access-key and --secret-key-file.
The bucket must exist; the run deletes what it made (unless --noclear) and nothing else."
)]
struct Cli {
    #[command(subcommand)]
    bench: BenchCmd,
}

/// The command line as clap defines it, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Subcommand, Debug)]
enum BenchCmd {
    /// GET of objects uploaded first (or listed with --list-existing).
    Get(ReadArgs),
    /// PUT of new objects.
    Put(PutArgs),
    /// HEAD of objects uploaded first.
    Stat(ReadArgs),
    /// DELETE of objects uploaded first, until none is left.
    Delete(DeleteArgs),
    /// LIST, one page of --max-keys a request, of objects uploaded first.
    List(ListArgs),
    /// GET, HEAD, PUT, DELETE and LIST by ratio over a pool of objects.
    Mixed(MixedArgs),
    /// Whole objects uploaded in --parts parts (create, parts, complete).
    Multipart(MultipartArgs),
}

#[derive(Args, Debug)]
struct Common {
    /// Endpoints, separated by commas: HOST:PORT or a URL; {1...4} expands as in warp.
    /// Default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, 127.0.0.1:9000.
    #[arg(long)]
    host: Option<String>,
    /// HTTPS for endpoints given without a scheme.
    #[arg(long)]
    tls: bool,
    /// Access key id (else $AWS_ACCESS_KEY_ID).
    #[arg(long)]
    access_key: Option<String>,
    /// Secret key ON THE COMMAND LINE, where every user sees it (ps): accepted as warp does;
    /// prefer $AWS_SECRET_ACCESS_KEY or --secret-key-file.
    #[arg(long, conflicts_with = "secret_key_file")]
    secret_key: Option<String>,
    /// A file (mode 0600) holding the secret key.
    #[arg(long)]
    secret_key_file: Option<PathBuf>,
    /// Signing region (else $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1).
    #[arg(long)]
    region: Option<String>,
    /// The bucket to work in; it must exist.
    #[arg(long, default_value = "warp-benchmark-bucket")]
    bucket: String,
    /// What every key of the run starts with (and where --list-existing lists).
    #[arg(long, default_value = "")]
    prefix: String,
    /// Workers (requests in flight) over the whole run; under mpirun shared by the ranks.
    #[arg(long, default_value_t = 20)]
    concurrent: usize,
    /// Longest time of the timed phase (Go duration: 5m, 30s, 1m30s).
    #[arg(long, default_value = "5m")]
    duration: String,
    /// Stop once the rate has been steady (see --autoterm.dur, --autoterm.pct).
    #[arg(long)]
    autoterm: bool,
    /// The least time the rate must have been steady [15s] (with --autoterm).
    #[arg(long = "autoterm.dur")]
    autoterm_dur: Option<String>,
    /// How close (percent) the last slices' rates must be [7.5] (with --autoterm).
    #[arg(long = "autoterm.pct")]
    autoterm_pct: Option<f64>,
    /// Leave the run's objects in the bucket.
    #[arg(long)]
    noclear: bool,
    /// Requests per second over the whole run (0: no limit).
    #[arg(long, default_value_t = 0.0)]
    rps_limit: f64,
    /// Length of the analysis's time segments (default 1s, or --duration when shorter).
    #[arg(long = "analyze.dur")]
    analyze_dur: Option<String>,
    /// Seed of the run's random choices (object sizes, keys, ranges); printed in --json.
    #[arg(long)]
    seed: Option<u64>,
    /// Bound on each request, seconds.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// --json, --csv (one row per op type and endpoint), --stats and
    /// --store: the runner's.
    #[command(flatten)]
    run: RunOptions<{ options::EVERY }>,
}

#[derive(Args, Debug)]
struct Sizing {
    /// Object size (10MiB, 1KiB), or weighted buckets SIZE:WEIGHT,SIZE:WEIGHT,...
    #[arg(long = "obj.size")]
    obj_size: Option<String>,
    /// Random sizes up to --obj.size, spread over its doublings as warp draws them.
    #[arg(long = "obj.randsize")]
    obj_randsize: bool,
}

#[derive(Args, Debug)]
struct ReadArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizing: Sizing,
    /// Objects uploaded first; with --list-existing, the most listed (0: all).
    #[arg(long)]
    objects: Option<u64>,
    /// Read objects already under --prefix instead of uploading them.
    #[arg(long)]
    list_existing: bool,
    /// GET a random range of each object (get only).
    #[arg(long)]
    range: bool,
}

#[derive(Args, Debug)]
struct PutArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizing: Sizing,
}

#[derive(Args, Debug)]
struct DeleteArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizing: Sizing,
    /// Objects uploaded first.
    #[arg(long)]
    objects: Option<u64>,
    /// Refused: iolab deletes only objects it made.
    #[arg(long)]
    list_existing: bool,
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizing: Sizing,
    /// Objects uploaded first.
    #[arg(long)]
    objects: Option<u64>,
    /// Keys asked for per LIST request.
    #[arg(long, default_value_t = 100)]
    max_keys: u32,
}

#[derive(Args, Debug)]
struct MixedArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    sizing: Sizing,
    /// Objects uploaded first (the pool).
    #[arg(long)]
    objects: Option<u64>,
    /// GET and HEAD objects already under --prefix; PUT and DELETE only the run's own.
    #[arg(long)]
    list_existing: bool,
    /// Weight of GET.
    #[arg(long, default_value_t = 45.0)]
    get_distrib: f64,
    /// Weight of HEAD.
    #[arg(long, default_value_t = 30.0)]
    stat_distrib: f64,
    /// Weight of PUT.
    #[arg(long, default_value_t = 15.0)]
    put_distrib: f64,
    /// Weight of DELETE (at most --put-distrib).
    #[arg(long, default_value_t = 10.0)]
    delete_distrib: f64,
    /// Weight of LIST (one page of --max-keys of the worker's objects); warp has none.
    #[arg(long, default_value_t = 0.0)]
    list_distrib: f64,
    /// Keys asked for per LIST request.
    #[arg(long, default_value_t = 100)]
    max_keys: u32,
}

#[derive(Args, Debug)]
struct MultipartArgs {
    #[command(flatten)]
    common: Common,
    /// Parts per object.
    #[arg(long, default_value_t = 10)]
    parts: u32,
    /// Bytes per part (at least 5MiB).
    #[arg(long = "part.size", default_value = "5MiB")]
    part_size: String,
}

/// Entry point from the dispatcher.
pub fn main(prog: &str, args: Vec<OsString>) -> Ended {
    let line = redacted(&crate::process_words());
    let cli: Cli = exit::parse_clap(prog, args)?;
    let world = connect(CommMode::Auto).map_err(|e| Halt::usage(format!("iolab {prog}: {e}")))?;
    let leader = world.transport().rank() == 0;
    // Under mpirun every rank finds the same fault; one says it.
    let setup = Setup::of(&cli, world.transport().size()).map_err(|msg| match leader {
        true => Halt::usage(format!("iolab {prog}: {msg}")),
        false => Halt::said(HaltKind::Usage),
    })?;
    run(prog, &world, setup, &line)
}

/// A checked run, before any request.
struct Setup {
    cfg: Config,
    endpoints: Vec<Endpoint>,
    given: Given,
    warn_secret: bool,
}

impl Setup {
    fn of(cli: &Cli, ranks: usize) -> Result<Setup, String> {
        let (cfg, c) = config(&cli.bench)?;
        cfg.validate(ranks).map_err(|e| e.to_string())?;
        let endpoints = endpoints(&cfg, c)?;
        Ok(Setup {
            cfg,
            endpoints,
            given: c.run.0.clone(),
            warn_secret: c.secret_key.is_some(),
        })
    }
}

/// Default object counts and sizes per benchmark, as warp's.
fn defaults(bench: Bench) -> (u64, &'static str) {
    match bench {
        Bench::Get | Bench::Mixed => (2500, "10MiB"),
        Bench::Stat | Bench::List => (10_000, "1KiB"),
        Bench::Delete => (25_000, "1KiB"),
        Bench::Put | Bench::Multipart => (0, "10MiB"),
    }
}

/// The benchmark's own flags, common to several benchmarks.
struct Own<'a> {
    bench: Bench,
    sizing: Option<&'a Sizing>,
    objects: Option<u64>,
    list_existing: bool,
    range: bool,
    max_keys: u32,
    distrib: Distrib,
    parts: Option<(u32, &'a str)>,
}

fn own(b: &BenchCmd) -> (Own<'_>, &Common) {
    let base = |bench, sizing| Own {
        bench,
        sizing,
        objects: None,
        list_existing: false,
        range: false,
        max_keys: 100,
        distrib: Distrib::default(),
        parts: None,
    };
    match b {
        BenchCmd::Get(a) | BenchCmd::Stat(a) => {
            let bench = if matches!(b, BenchCmd::Get(_)) {
                Bench::Get
            } else {
                Bench::Stat
            };
            let o = Own {
                objects: a.objects,
                list_existing: a.list_existing,
                range: a.range,
                ..base(bench, Some(&a.sizing))
            };
            (o, &a.common)
        }
        BenchCmd::Put(a) => (base(Bench::Put, Some(&a.sizing)), &a.common),
        BenchCmd::Delete(a) => {
            let o = Own {
                objects: a.objects,
                list_existing: a.list_existing,
                ..base(Bench::Delete, Some(&a.sizing))
            };
            (o, &a.common)
        }
        BenchCmd::List(a) => {
            let o = Own {
                objects: a.objects,
                max_keys: a.max_keys,
                ..base(Bench::List, Some(&a.sizing))
            };
            (o, &a.common)
        }
        BenchCmd::Mixed(a) => {
            let distrib = Distrib {
                get: a.get_distrib,
                stat: a.stat_distrib,
                put: a.put_distrib,
                delete: a.delete_distrib,
                list: a.list_distrib,
            };
            let o = Own {
                objects: a.objects,
                list_existing: a.list_existing,
                max_keys: a.max_keys,
                distrib,
                ..base(Bench::Mixed, Some(&a.sizing))
            };
            (o, &a.common)
        }
        BenchCmd::Multipart(a) => {
            let o = Own {
                parts: Some((a.parts, a.part_size.as_str())),
                ..base(Bench::Multipart, None)
            };
            (o, &a.common)
        }
    }
}

/// `--autoterm` and its settings; a setting without it is refused
/// rather than ignored.
fn autoterm(c: &Common) -> Result<Option<AutoTerm>, String> {
    if !c.autoterm {
        return match (&c.autoterm_dur, c.autoterm_pct) {
            (Some(_), _) => Err("--autoterm.dur needs --autoterm".into()),
            (_, Some(_)) => Err("--autoterm.pct needs --autoterm".into()),
            _ => Ok(None),
        };
    }
    Ok(Some(AutoTerm {
        min_stable_s: parse::duration_s(c.autoterm_dur.as_deref().unwrap_or("15s"))
            .map_err(|e| format!("--autoterm.dur: {e}"))?,
        pct: c.autoterm_pct.unwrap_or(7.5),
    }))
}

/// The configuration the command line asks for (not yet validated).
fn config(b: &BenchCmd) -> Result<(Config, &Common), String> {
    let (o, c) = own(b);
    let (objects, size) = defaults(o.bench);
    let sizes = match o.sizing {
        Some(s) => parse::obj_size(s.obj_size.as_deref().unwrap_or(size), s.obj_randsize)
            .map_err(|e| format!("--obj.size: {e}"))?,
        None => parse::obj_size(size, false).map_err(|e| e.to_string())?,
    };
    let (parts, part_size) = match o.parts {
        Some((n, s)) => (
            n,
            iolab_core::units::parse_size(s).map_err(|e| format!("--part.size: {e}"))?,
        ),
        None => (1, iolab_s3bench::config::MIN_PART),
    };
    let dur = |opt: &str, v: &str| parse::duration_s(v).map_err(|e| format!("{opt}: {e}"));
    let prefix = match c.prefix.trim_start_matches('/') {
        "" => String::new(),
        p if p.ends_with('/') => p.to_string(),
        p => format!("{p}/"),
    };
    let duration_s = dur("--duration", &c.duration)?;
    let segment_s = match &c.analyze_dur {
        Some(v) => dur("--analyze.dur", v)?,
        None => duration_s.min(1.0),
    };
    let cfg = Config {
        bench: o.bench,
        hosts: hosts(c)?,
        bucket: c.bucket.clone(),
        prefix,
        sizes,
        objects: o
            .objects
            .unwrap_or(if o.list_existing { 0 } else { objects }),
        concurrent: c.concurrent,
        duration_s,
        autoterm: autoterm(c)?,
        noclear: c.noclear,
        list_existing: o.list_existing,
        rps_limit: (c.rps_limit != 0.0).then_some(c.rps_limit),
        range: o.range,
        distrib: o.distrib,
        max_keys: o.max_keys,
        parts,
        part_size,
        segment_s,
        seed: c.seed.unwrap_or_else(fresh_seed),
    };
    if o.range && o.bench != Bench::Get {
        return Err("--range: applies to get".into());
    }
    Ok((cfg, c))
}

fn fresh_seed() -> u64 {
    iolab_core::random::mix(iolab_core::clock::wall_ns() ^ u64::from(std::process::id()) << 32)
}

fn hosts(c: &Common) -> Result<Vec<String>, String> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    let (text, source) = match &c.host {
        Some(h) => (h.clone(), "--host"),
        None => match var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")) {
            Some(v) => (v, "AWS_ENDPOINT_URL"),
            None => ("127.0.0.1:9000".to_string(), "--host"),
        },
    };
    parse::hosts(&text, c.tls).map_err(|e| format!("{source}: {e}"))
}

/// One endpoint per host, with the credentials.
fn endpoints(cfg: &Config, c: &Common) -> Result<Vec<Endpoint>, String> {
    check_bucket(&cfg.bucket).map_err(|e| format!("--bucket {}: {e}", cfg.bucket))?;
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    let secret = match (&c.secret_key, &c.secret_key_file) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(f)) => Some(read_secret(f)?),
        (None, None) => var("AWS_SECRET_ACCESS_KEY"),
    };
    let access = c.access_key.clone().or_else(|| var("AWS_ACCESS_KEY_ID"));
    if access.is_some() != secret.is_some() {
        return Err("give both halves of the credentials: --access-key (or AWS_ACCESS_KEY_ID) and --secret-key-file (or AWS_SECRET_ACCESS_KEY)".into());
    }
    if !(0.1..=3600.0).contains(&c.timeout) {
        return Err(format!("--timeout {}: give 0.1 to 3600 seconds", c.timeout));
    }
    let region = c
        .region
        .clone()
        .or_else(|| var("AWS_REGION"))
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into());
    cfg.hosts
        .iter()
        .map(|h| {
            let s3 = S3Config {
                endpoint: h.clone(),
                region: region.clone(),
                bucket: Some(cfg.bucket.clone()),
                access_key: access.clone(),
                secret_key: secret.clone(),
                session_token: var("AWS_SESSION_TOKEN"),
                path_style: true,
                timeout: Duration::from_secs_f64(c.timeout),
                signing: Signing::Header,
            };
            Endpoint::new(&s3, &cfg.bucket).map_err(|e| format!("--host {h}: {e}"))
        })
        .collect()
}

/// The secret in `path`: a file only its owner may read, by the rule
/// of every secret file ([`iolab_core::trust::read_secret`]).
fn read_secret(path: &Path) -> Result<String, String> {
    let opt = "--secret-key-file";
    let bytes = iolab_core::trust::read_secret(path)
        .map_err(|e| format!("{opt} {}: {e}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{opt} {}: not UTF-8 text", path.display()))?;
    match text.trim() {
        "" => Err(format!("{opt} {}: the file is empty", path.display())),
        k => Ok(k.to_string()),
    }
}

fn run(prog: &str, world: &World, s: Setup, line: &str) -> Ended {
    let transport = world.transport();
    let leader = transport.rank() == 0;
    let given = s.given.clone();
    let full = format!("iolab {prog}");
    let mut session = RunnerRun::new(&full, "s3bench", SCHEMA, line, s.cfg.clone(), given)
        .compatible_with("MinIO warp")
        .leader(leader)
        .open()?;
    if s.warn_secret && leader {
        iolab_core::say!("iolab {prog}: warning: --secret-key puts the key where every user of this machine sees it (ps); AWS_SECRET_ACCESS_KEY or --secret-key-file keeps it private");
    }
    // The tool draws its own bar, so no status line.
    let board = session.live(true, crate::live::peers(world));
    session.start();
    let started = iolab_core::clock::wall_ns();
    let live = Live::new(s.cfg.concurrent / transport.size());
    let cancel = session.cancel().clone();
    let r = Run {
        cfg: &s.cfg,
        endpoints: &s.endpoints,
        transport,
        live: &live,
        cancel: &cancel,
        board: board.as_deref(),
    };
    let at = format!("s3://{}/{}iolab-s3bench.*/", s.cfg.bucket, s.cfg.prefix);
    crate::signals::set_last_words(format!(
        "\n{prog}: stopped at once by a second signal; removal was cut short. Objects this run put may be left under {at} (its own prefix); remove them with an S3 client (aws s3 rm --recursive)\n"
    ));
    let running = std::sync::atomic::AtomicBool::new(true);
    let result = std::thread::scope(|scope| {
        if leader {
            scope.spawn(|| {
                crate::signals::when_stopped(&cancel, &running, || {
                    iolab_core::say_part!(
                        "iolab {prog}: stopping; removing the objects this run put. Should the process be killed first, they may be left under {at}\n{}",
                        crate::signals::mpirun_grace_hint(prog).unwrap_or_default()
                    );
                });
            });
        }
        let result = with_progress(leader, &s.cfg, &live, || iolab_s3bench::run(&r));
        running.store(false, std::sync::atomic::Ordering::Release);
        result
    });
    let report = result.map_err(|e| {
        let kind = match e {
            NotStarted::Refused(_) => HaltKind::Usage,
            NotStarted::Failed(_) => HaltKind::Failed,
        };
        match leader {
            true => Halt::new(kind, format!("iolab {prog}: {e}")),
            false => Halt::said(kind),
        }
    })?;
    let ended = iolab_core::clock::wall_ns();
    session.stop_watching(&report.outcome);
    if leader {
        let _ = out!("{}", iolab_report::s3bench::text::render(&report));
    }
    let mut handed = crate::runner::Report::new(report.outcome.clone(), &report);
    handed.notes = report.notes.clone();
    handed.figures = iolab_s3bench::figures::of(&report);
    handed.window = Some((started, ended));
    let csv = |r: &&Report, w: &mut dyn std::io::Write| {
        w.write_all(iolab_report::s3bench::csv::render(r).as_bytes())
    };
    let outcome = session.finish(handed, Render::csv(&csv));
    if leader && (outcome.is_failure() || outcome == iolab_core::Outcome::Interrupted) {
        iolab_core::say!("iolab {prog}: {outcome}");
    }
    Ok(outcome)
}

/// Runs `f` while a bar on the terminal shows the preparation's objects
/// and the timed phase's seconds and requests (rank 0, a terminal, not CI).
fn with_progress<R>(leader: bool, cfg: &Config, live: &Live, f: impl FnOnce() -> R) -> R {
    use crate::progress::{bar, shown, Unit};
    use std::sync::atomic::{AtomicBool, Ordering};
    if !shown(leader) {
        return f();
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let b = bar(1, Unit::Items);
            while !done.load(Ordering::Relaxed) {
                match live.phase() {
                    Phase::Preparing => {
                        b.set_length(cfg.objects.max(1));
                        b.set_position(live.prepared());
                        b.set_message("preparing");
                    }
                    Phase::Timed => {
                        let secs = cfg.duration_s.ceil() as u64;
                        let at = live
                            .timed_start_ns()
                            .map_or(0, |t| iolab_core::clock::mono_ns().saturating_sub(t));
                        b.set_length(secs.max(1));
                        b.set_position((at / 1_000_000_000).min(secs));
                        b.set_message(format!("{} {} requests", cfg.bench.name(), live.requests()));
                    }
                    Phase::Cleaning => b.set_message("cleaning up"),
                    _ => {}
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            b.finish_and_clear();
        });
        let r = f();
        done.store(true, Ordering::Relaxed);
        r
    })
}

/// The command line for the record, with `--secret-key`'s value hidden.
/// It works on the words as given, not on their joined line: a secret
/// holding a space is one word, hidden whole.
fn redacted(words: &[String]) -> String {
    let mut out = Vec::new();
    let mut hide_next = false;
    for w in words {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
        } else if w.starts_with("--secret-key=") {
            out.push("--secret-key=***".to_string());
        } else {
            hide_next = w == "--secret-key";
            out.push(w.to_string());
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_secret_never_reaches_the_record() {
        assert_eq!(
            redacted(&words(
                "iolab s3bench get --secret-key abc --bucket b --secret-key=xyz"
            )),
            "iolab s3bench get --secret-key *** --bucket b --secret-key=***"
        );
        // A secret holding a space is one word, hidden whole.
        let given = [
            "iolab",
            "s3bench",
            "get",
            "--secret-key",
            "ab cd",
            "--bucket",
            "b",
        ];
        let given: Vec<String> = given.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            redacted(&given),
            "iolab s3bench get --secret-key *** --bucket b"
        );
    }

    #[test]
    fn autoterm_settings_need_autoterm() {
        let parse = |extra: &[&str]| {
            let argv = ["iolab s3bench", "get", "--host", "127.0.0.1:1"];
            let cli = Cli::try_parse_from(argv.iter().chain(extra)).unwrap();
            config(&cli.bench).map(|(c, _)| c.autoterm.map(|a| a.pct))
        };
        assert!(parse(&["--autoterm.pct", "3"])
            .unwrap_err()
            .contains("needs --autoterm"));
        assert!(parse(&["--autoterm.dur", "5s"])
            .unwrap_err()
            .contains("needs --autoterm"));
        assert_eq!(
            parse(&["--autoterm", "--autoterm.pct", "3"]).unwrap(),
            Some(3.0)
        );
        assert_eq!(parse(&[]).unwrap(), None);
    }

    #[test]
    fn flags_of_other_benchmarks_are_refused_by_name() {
        for (args, flag) in [
            (&["put", "--objects", "5"][..], "--objects"),
            (&["get", "--get-distrib", "5"][..], "--get-distrib"),
            (&["multipart", "--obj.size", "1MiB"][..], "--obj.size"),
            (&["get", "--no-such"][..], "--no-such"),
        ] {
            let argv = std::iter::once("iolab s3bench").chain(args.iter().copied());
            let e = Cli::try_parse_from(argv).unwrap_err().to_string();
            assert!(e.contains(flag), "{args:?}: {e}");
        }
    }

    #[test]
    fn warp_flags_parse_into_a_config() {
        let argv = [
            "iolab s3bench",
            "mixed",
            "--host",
            "a:1,b:2",
            "--obj.size",
            "4KiB",
            "--objects",
            "40",
            "--concurrent",
            "4",
            "--duration",
            "1m",
            "--list-distrib",
            "10",
            "--rps-limit",
            "100",
        ];
        let cli = Cli::try_parse_from(argv).unwrap();
        let (cfg, _) = config(&cli.bench).unwrap();
        assert_eq!(cfg.hosts, vec!["http://a:1", "http://b:2"]);
        assert_eq!(cfg.duration_s, 60.0);
        assert_eq!(cfg.rps_limit, Some(100.0));
        assert_eq!(cfg.distrib.list, 10.0);
        assert!(cfg.validate(1).is_ok());
    }
}
