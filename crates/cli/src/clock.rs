//! `iolab timeserver` and `iolab gettime` (also through links named
//! `timeserver` and `gettime`): XDD's global clock, served and read over
//! iolab's framed TCP (crates/net, module `clock`). The command lines are
//! XDD's (guide section 5.5), read through the same option engine as
//! `iolab xdd`.
//!
//! Global time is printed in whole seconds since the Unix epoch, as XDD's
//! gettime prints it, so `g=$(gettime -timeserver H -add 20)` followed by
//! `-starttime $g` or `gettime -waitfortime $g` works as the guide's
//! script does.
//!
//! `-key FILE` (or `IOLAB_KEY_FILE`) on the server and its clients makes
//! every answer authenticated (crates/net's keyed handshake and tagged
//! frames); without a key the time is XDD's, unauthenticated, and both
//! commands say so on standard error.

use crate::exit::{Ended, Halt};
use iolab_core::{Failure, Outcome};
use iolab_net::SharedKey;
use iolab_net::{clock, conn, Cancel};
use iolab_opts::{dash, Arity, Check, Entry, OptError};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `timeserver`.
#[derive(Debug, Clone, PartialEq)]
struct ServerRaw {
    port: u16,
    bind: String,
    key: Option<PathBuf>,
    help: bool,
}

impl Default for ServerRaw {
    fn default() -> Self {
        Self {
            port: clock::DEFAULT_PORT,
            bind: "0.0.0.0".into(),
            key: None,
            help: false,
        }
    }
}

/// Options of `gettime`.
#[derive(Debug, Clone, PartialEq)]
struct GetRaw {
    host: Option<String>,
    port: u16,
    add_s: i64,
    bounce: u32,
    verbose: bool,
    wait_for_s: Option<u64>,
    timeout_s: f64,
    key: Option<PathBuf>,
    help: bool,
}

impl Default for GetRaw {
    fn default() -> Self {
        Self {
            host: None,
            port: clock::DEFAULT_PORT,
            add_s: 0,
            bounce: 100,
            verbose: false,
            wait_for_s: None,
            timeout_s: 10.0,
            key: None,
            help: false,
        }
    }
}

/// Largest `-add`: a century either way.
const MAX_ADD_S: i64 = 100 * 366 * 86_400;

fn port(c: &mut iolab_opts::Cursor) -> Result<u16, OptError> {
    Ok(c.count("port number (0: any free port)", 0, 65_535)? as u16)
}

/// `-key FILE`: the key file's name (read when the command runs).
fn key_file(c: &mut iolab_opts::Cursor) -> Result<Option<PathBuf>, OptError> {
    Ok(Some(PathBuf::from(c.path("key file")?)))
}

/// The help of `-key`, the same for the server and its clients.
const KEY_HELP: &str = "shared key file (mode 600, no link; - reads it from standard input): every answer is authenticated, and one from anyone without the key is refused (else IOLAB_KEY_FILE; else unauthenticated, as XDD; iolab's own option)";

/// The port of a server to reach: 0 names no server.
fn server_port(c: &mut iolab_opts::Cursor) -> Result<u16, OptError> {
    Ok(c.count("port number", 1, 65_535)? as u16)
}

static SERVER_OPTS: &[Entry<ServerRaw, ServerRaw>] = &[
    Entry {
        name: "port",
        short: None,
        aliases: &["p"],
        arity: Arity::Words,
        scoped: false,
        args: "<port>",
        help: "TCP port to serve on (default 2000, as XDD's; 0 picks a free one and says which)",
        apply: |c, r, _| {
            r.port = port(c)?;
            Ok(())
        },
        example: "-port 2100",
        check: Check::Ok(|r| r.port == 2100),
    },
    Entry {
        name: "bind",
        short: None,
        aliases: &[],
        arity: Arity::Words,
        scoped: false,
        args: "<address>",
        help: "address to listen on (default 0.0.0.0, every interface; iolab's own option)",
        apply: |c, r, _| {
            r.bind = c.value("address")?.to_string();
            Ok(())
        },
        example: "-bind 127.0.0.1",
        check: Check::Ok(|r| r.bind == "127.0.0.1"),
    },
    Entry {
        name: "key",
        short: None,
        aliases: &[],
        arity: Arity::Words,
        scoped: false,
        args: "<file>",
        help: KEY_HELP,
        apply: |c, r, _| {
            r.key = key_file(c)?;
            Ok(())
        },
        example: "-key clock.key",
        check: Check::Ok(|r| r.key.as_deref() == Some(std::path::Path::new("clock.key"))),
    },
    Entry {
        name: "help",
        short: None,
        aliases: &["h"],
        arity: Arity::Words,
        scoped: false,
        args: "",
        help: "this help",
        apply: |_, r, _| {
            r.help = true;
            Ok(())
        },
        example: "-help",
        check: Check::Action,
    },
];

static GET_OPTS: &[Entry<GetRaw, GetRaw>] = &[
    Entry { name: "timeserver", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<host>", help: "host name or address of the machine running timeserver (required)",
        apply: |c, r, _| { r.host = Some(c.value("host name")?.to_string()); Ok(()) },
        example: "-timeserver node1", check: Check::Ok(|r| r.host.as_deref() == Some("node1")) },
    Entry { name: "port", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<port>", help: "the time server's port (default 2000)",
        apply: |c, r, _| { r.port = server_port(c)?; Ok(()) },
        example: "-timeserver h -port 2100", check: Check::Ok(|r| r.port == 2100) },
    Entry { name: "add", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<seconds>", help: "seconds to add to the global time printed (may be negative)",
        apply: |c, r, _| {
            let v = c.value("seconds")?;
            let n: i64 = v.parse().map_err(|_| c.err(format!("'{v}' is not a whole number of seconds")))?;
            if n.unsigned_abs() > MAX_ADD_S as u64 { return Err(c.err(format!("at most {MAX_ADD_S} seconds either way"))); }
            r.add_s = n;
            Ok(())
        },
        example: "-timeserver h -add 20", check: Check::Ok(|r| r.add_s == 20) },
    Entry { name: "bounce", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<times>", help: "clock exchanges; the one with the shortest round trip is used (default 100)",
        apply: |c, r, _| { r.bounce = c.count("number of exchanges", 1, 100_000)? as u32; Ok(()) },
        example: "-timeserver h -bounce 5", check: Check::Ok(|r| r.bounce == 5) },
    Entry { name: "verbose", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "", help: "also print the offset to the server and the round trip",
        apply: |_, r, _| { r.verbose = true; Ok(()) },
        example: "-timeserver h -verbose", check: Check::Ok(|r| r.verbose) },
    Entry { name: "waitfortime", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<global seconds>", help: "wait until the global clock reaches this time (seconds, as gettime prints it), then print it",
        apply: |c, r, _| { r.wait_for_s = Some(c.count("global time in seconds", 0, u64::MAX / 1_000_000_000)?); Ok(()) },
        example: "-timeserver h -waitfortime 1700000000", check: Check::Ok(|r| r.wait_for_s == Some(1_700_000_000)) },
    Entry { name: "timeout", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<seconds>", help: "how long to keep trying to reach the server (default 10; iolab's own option)",
        apply: |c, r, _| {
            let s = c.seconds("seconds")?;
            if s <= 0.0 { return Err(c.err("must be more than 0 seconds")); }
            r.timeout_s = s;
            Ok(())
        },
        example: "-timeserver h -timeout 2.5", check: Check::Ok(|r| r.timeout_s == 2.5) },
    Entry { name: "key", short: None, aliases: &[], arity: Arity::Words, scoped: false,
        args: "<file>", help: KEY_HELP,
        apply: |c, r, _| { r.key = key_file(c)?; Ok(()) },
        example: "-timeserver h -key clock.key", check: Check::Ok(|r| r.key.as_deref() == Some(std::path::Path::new("clock.key"))) },
    Entry { name: "help", short: None, aliases: &["h"], arity: Arity::Words, scoped: false,
        args: "", help: "this help",
        apply: |_, r, _| { r.help = true; Ok(()) },
        example: "-help", check: Check::Action },
];

/// Parses `args` with `table`; help (if asked) stops parsing.
fn parse<R: Default>(
    table: &[Entry<R, R>],
    args: &[OsString],
    help: fn(&R) -> bool,
) -> Result<R, OptError> {
    let mut raw = R::default();
    dash::parse(table, args, &mut raw, help)?;
    Ok(raw)
}

/// Entry point of `iolab timeserver`.
pub fn timeserver(prog: &str, args: Vec<OsString>) -> Ended {
    let raw = match parse(SERVER_OPTS, &args, |r| r.help) {
        Ok(r) if r.help => {
            let _ = out!(
                "{}",
                dash::full_help(
                    SERVER_OPTS,
                    prog,
                    &format!("Usage: {prog} [-port N] [-bind ADDR] [-key FILE]")
                )
            );
            return Err(Halt::shown());
        }
        Ok(r) => r,
        Err(e) => return Err(usage(prog, &e.to_string())),
    };
    let key = the_key(prog, raw.key.as_deref())?;
    let addr = format!("{}:{}", raw.bind, raw.port);
    let listener = conn::listen(&addr).map_err(|e| not_bound(prog, e))?;
    let shown = listener.local_addr().map_or(addr, |a| a.to_string());
    // The first line names the address (scripts read the port of `-port
    // 0` from it); the warning follows.
    iolab_core::say!("{prog}: serving the global clock on {shown} until Ctrl-C");
    if key.is_none() {
        iolab_core::say!("{prog}: warning: {}", clock::UNAUTHENTICATED);
    }
    let outcome = match clock::serve(&listener, key.as_ref(), Cancel::process()) {
        Err(iolab_net::NetError::Cancelled) => Outcome::Interrupted,
        Err(e) => Outcome::Error(Failure::other("serve", e.to_string())),
        Ok(()) => Outcome::Completed,
    };
    Ok(outcome)
}

/// Entry point of `iolab gettime`.
pub fn gettime(prog: &str, args: Vec<OsString>) -> Ended {
    let raw = match parse(GET_OPTS, &args, |r| r.help) {
        Ok(r) if r.help => {
            let u = format!("Usage: {prog} -timeserver HOST [-port N] [-add S] [-bounce N] [-verbose] [-waitfortime T] [-timeout S] [-key FILE]");
            let _ = out!("{}", dash::full_help(GET_OPTS, prog, &u));
            return Err(Halt::shown());
        }
        Ok(r) => r,
        Err(e) => return Err(usage(prog, &e.to_string())),
    };
    let Some(host) = raw.host.clone() else {
        return Err(usage(
            prog,
            "-timeserver: the time server's host is required (-timeserver HOST)",
        ));
    };
    let key = the_key(prog, raw.key.as_deref())?;
    if key.is_none() {
        iolab_core::say!("{prog}: warning: {}", clock::UNAUTHENTICATED);
    }
    let addr = format!("{host}:{}", raw.port);
    let timeout = Duration::from_secs_f64(raw.timeout_s);
    let est = match clock::estimate(&addr, raw.bounce, timeout, key.as_ref(), Cancel::process()) {
        Ok(e) => e,
        Err(iolab_net::NetError::Cancelled) => return Ok(Outcome::Interrupted),
        Err(e) => {
            iolab_core::say!("{prog}: -timeserver {host} -port {}: {e}", raw.port);
            return Ok(Outcome::Error(Failure::other("gettime", e.to_string())));
        }
    };
    // A time too far off is bad input, refused before anything is
    // printed or waited for.
    let wait = match raw.wait_for_s.map(|t| est.wait_until(t)) {
        Some(Err(e)) => return Err(usage(prog, &format!("-waitfortime: {e}"))),
        Some(Ok(w)) => Some(w),
        None => None,
    };
    report(&raw, &est);
    match (raw.wait_for_s, wait) {
        (Some(t), Some(left)) => Ok(wait_for(prog, &raw, &est, t, left)),
        _ => Ok(Outcome::Completed),
    }
}

/// Prints the global time (and, with -verbose, how it was found).
fn report(raw: &GetRaw, est: &clock::Estimate) {
    let now_s = (est.global_now_ns() / 1_000_000_000) as i64;
    if raw.verbose {
        let _ = outln!("Global Time now is {}", now_s + raw.add_s);
        let _ = outln!(
            "offset to the server {} ns, shortest round trip {} ns (the offset is within half of it), {} exchanges",
            est.offset_ns, est.rtt_ns, est.bounces
        );
    } else {
        let _ = outln!("{}", now_s + raw.add_s);
    }
}

/// Sleeps until the global clock reads `t_s`, `left` from now (None:
/// it already has), polling Ctrl-C, then prints the time again. A time
/// already past is a note, not an error; a wait says how long it will
/// be, once, on standard error, and a long one counts down on a
/// terminal.
fn wait_for(
    prog: &str,
    raw: &GetRaw,
    est: &clock::Estimate,
    t_s: u64,
    left: Option<Duration>,
) -> Outcome {
    let Some(left) = left else {
        iolab_core::say!("{prog}: note: -waitfortime {t_s} has already passed; not waiting");
        return Outcome::Completed;
    };
    iolab_core::say!(
        "{prog}: waiting {} until the global clock reads {t_s}",
        crate::progress::human_s(left.as_secs_f64())
    );
    let local_target = est.local_at(t_s.saturating_mul(1_000_000_000));
    let bar = (left >= COUNTDOWN && crate::progress::shown(true))
        .then(|| crate::progress::countdown(&format!("{prog}: -waitfortime {t_s}"), left));
    let start = iolab_core::clock::wall_ns();
    loop {
        let now = iolab_core::clock::wall_ns();
        if now >= local_target {
            break;
        }
        if crate::runner::root().is_cancelled() {
            return Outcome::Interrupted;
        }
        if let Some(b) = &bar {
            b.set_position(now.saturating_sub(start) / 1_000_000_000);
        }
        let left = Duration::from_nanos(local_target - now);
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    report(raw, est);
    Outcome::Completed
}

/// Waits at least this long count down on a terminal.
const COUNTDOWN: Duration = Duration::from_secs(10);

/// The key named by `-key` or `IOLAB_KEY_FILE`, if any; a file that
/// cannot be one (unreadable, open to others, a link, too short) is bad
/// input (exit 2), as `-e2e key` and `lst --key`.
fn the_key(prog: &str, named: Option<&std::path::Path>) -> Result<Option<SharedKey>, Halt> {
    SharedKey::resolve(named).map_err(|e| usage(prog, &format!("-key: {e}")))
}

/// A listening socket that could not be had: a port in use (or a port
/// below 1024 without root) is the host's state, not bad input (exit 1,
/// as `lst agent`); an address this host has not is (exit 2).
fn not_bound(prog: &str, e: iolab_net::NetError) -> Halt {
    use std::io::ErrorKind::{AddrInUse, PermissionDenied};
    match &e {
        iolab_net::NetError::Bind { source, .. }
            if matches!(source.kind(), AddrInUse | PermissionDenied) =>
        {
            Halt::failed(format!("{prog}: -port: {e}"))
        }
        _ => usage(prog, &format!("-port: {e}")),
    }
}

fn usage(prog: &str, msg: &str) -> Halt {
    Halt::usage(format!("{prog}: {msg}"))
}

/// `timeserver`'s man page, from its option table.
pub fn server_page() -> String {
    let page = iolab_opts::man::Page {
        name: "iolab-timeserver",
        about: "XDD's global clock server",
        synopsis: "iolab timeserver [-port N] [options...]   (or a link named timeserver)",
        description: &["Serves this host's clock to gettime and to xdd -timeserver."],
    };
    iolab_opts::man::render(&page, SERVER_OPTS)
}

/// `gettime`'s man page, from its option table.
pub fn gettime_page() -> String {
    let page = iolab_opts::man::Page {
        name: "iolab-gettime",
        about: "read the global clock from a timeserver",
        synopsis: "iolab gettime -timeserver HOST [options...]   (or a link named gettime)",
        description: &["Prints the global time a timeserver gives, as XDD's gettime."],
    };
    iolab_opts::man::render(&page, GET_OPTS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_opts::Example;

    fn run<R: Default>(
        table: &[Entry<R, R>],
        help: fn(&R) -> bool,
        e: &str,
    ) -> Result<Example<R>, OptError> {
        let r = parse(table, &iolab_opts::words(e), help)?;
        Ok(if help(&r) {
            Example::Action
        } else {
            Example::Run(r)
        })
    }

    #[test]
    fn every_entry_example() {
        for o in SERVER_OPTS {
            o.verify(run(SERVER_OPTS, |r| r.help, o.example)).unwrap();
        }
        for o in GET_OPTS {
            o.verify(run(GET_OPTS, |r| r.help, o.example)).unwrap();
        }
        assert!(iolab_opts::duplicate(SERVER_OPTS).is_none());
        assert!(iolab_opts::duplicate(GET_OPTS).is_none());
        let helps = SERVER_OPTS.iter().map(|o| o.help);
        for h in helps.chain(GET_OPTS.iter().map(|o| o.help)) {
            assert_eq!(crate::completions::cut_off(h), None);
        }
    }

    /// Every example the help prints parses: none teaches a command line
    /// that is refused (`-bounce 0` was shown as one).
    #[test]
    fn every_example_help_prints_parses() {
        let check = |help: String, prog: &str, parses: &dyn Fn(&str) -> bool| {
            let lead = format!("example: {prog} ");
            let lines: Vec<String> = help
                .lines()
                .filter_map(|l| l.trim().strip_prefix(&lead).map(str::to_string))
                .collect();
            assert!(!lines.is_empty(), "{help}");
            for l in lines {
                assert!(parses(&l), "`{prog} {l}` is refused");
            }
        };
        let words = |l: &str| iolab_opts::words(l);
        check(dash::full_help(GET_OPTS, "gettime", ""), "gettime", &|l| {
            parse(GET_OPTS, &words(l), |r| r.help).is_ok()
        });
        check(
            dash::full_help(SERVER_OPTS, "timeserver", ""),
            "timeserver",
            &|l| parse(SERVER_OPTS, &words(l), |r| r.help).is_ok(),
        );
    }

    #[test]
    fn bad_values_name_their_option() {
        for (line, opt) in [
            ("-port 70000", "port"),
            ("-add x", "add"),
            // Negating i64::MIN panicked; port 0 names no server.
            ("-add -9223372036854775808", "add"),
            ("-port 0", "port"),
            ("-timeout 0", "timeout"),
            ("-timeserver h -bounce 0", "bounce"),
            ("-bogus", "bogus"),
        ] {
            let e = parse(GET_OPTS, &iolab_opts::words(line), |r| r.help).unwrap_err();
            assert_eq!(e.option, opt, "{line}: {e}");
        }
    }
}
