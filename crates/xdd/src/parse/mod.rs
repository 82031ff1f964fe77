//! Stage one of the command line: expand `-setup` files in place, then
//! walk the tokens left to right through the option table. Later options
//! override earlier ones, as in XDD.

// The parse stage: words of the command line to a validated Config.
pub mod config;
pub mod cursor;
pub(crate) mod handlers;
pub mod options;
pub mod tokens;
pub mod validate;
pub mod values;

use crate::error::UsageError;
use crate::parse::config::{Action, Config, RawConfig};
use crate::parse::cursor::looks_like_option;
use crate::parse::options::OPTIONS;
use std::ffi::{OsStr, OsString};

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Run with this validated configuration.
    Run(Box<Config>),
    /// Print help or the version and stop.
    Action(Action),
}

/// Parses and validates a full XDD command line (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let os: Vec<OsString> = args.iter().map(OsString::from).collect();
    parse_os(&os)
}

/// [`parse`] for arguments as the system gives them: an argument that is
/// not UTF-8 is an error naming the option it belongs to.
pub fn parse_os(args: &[OsString]) -> Result<Parsed, UsageError> {
    let (mut raw, _) = read(args)?;
    if let Some(a) = raw.action.take() {
        return Ok(Parsed::Action(a));
    }
    let cfg = raw.resolve()?;
    crate::parse::validate::validate(&cfg)?;
    Ok(Parsed::Run(Box::new(cfg)))
}

/// Every option a full XDD command line gives (backend options such as
/// `--posix.odirect` included, and those of its `-setup` files, at the
/// `-setup` word), each at the index of its word in `args` and named the
/// same in any case or number of dashes (`-op`; `-op target 1` for one
/// target's), in order: for a caller that built the line from parts and
/// must know which part set what (`iolab sweep`).
pub fn options_given(args: &[OsString]) -> Result<Vec<iolab_opts::Given>, UsageError> {
    read(args).map(|(_, given)| given)
}

/// The raw configuration of a command line, its `-setup` files
/// expanded, and every option it gives ([`options_given`]).
fn read(args: &[OsString]) -> Result<(RawConfig, Vec<iolab_opts::Given>), UsageError> {
    let (toks, from): (Vec<OsString>, Vec<usize>) =
        expand_setup(args, 0, None)?.into_iter().unzip();
    let (backend_options, own_words) = iolab_backend::split_args(&toks);
    let (backend_at, own) = iolab_backend::split_args_at(&toks);
    let mut raw = RawConfig::default();
    raw.global.backend_options = backend_options;
    raw.global.command_line = args
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let traced =
        iolab_opts::dash::parse_traced(OPTIONS, &own_words, &mut raw, |r| r.action.is_some())?;
    let mut given: Vec<iolab_opts::Given> = backend_at
        .into_iter()
        .map(|(i, option)| iolab_opts::Given {
            word: from[i],
            option,
        })
        .chain(traced.into_iter().map(|g| iolab_opts::Given {
            word: from[own[g.word]],
            option: g.option,
        }))
        .collect();
    given.sort_by_key(|g| g.word);
    Ok((raw, given))
}

/// True for `-setup` in any case and with any number of dashes.
fn is_setup(a: &OsStr) -> bool {
    looks_like_option(a)
        && a.to_str()
            .is_some_and(|s| s.trim_start_matches('-').eq_ignore_ascii_case("setup"))
}

/// Replaces each `-setup FILE` with the options in FILE (several per line
/// allowed, `#` starts a comment, double quotes group words). Each word
/// comes with the index of the word of `args` it came from (`at`, for
/// the words of a nested file: the top `-setup`'s).
fn expand_setup(
    args: &[OsString],
    depth: usize,
    at: Option<usize>,
) -> Result<Vec<(OsString, usize)>, UsageError> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let from = at.unwrap_or(i);
        if is_setup(&args[i]) {
            let file = args
                .get(i + 1)
                .ok_or_else(|| UsageError::new("setup", "missing setup file name"))?;
            let shown = file.to_string_lossy();
            if depth > 8 {
                return Err(UsageError::new(
                    "setup",
                    format!("{shown}: -setup files nest more than 8 deep"),
                ));
            }
            let text = read_setup(std::path::Path::new(file))
                .map_err(|e| UsageError::new("setup", format!("setup file '{shown}': {e}")))?;
            let words: Vec<OsString> = split_words(&text).into_iter().map(Into::into).collect();
            out.extend(expand_setup(&words, depth + 1, Some(from))?);
            i += 2;
        } else {
            out.push((args[i].clone(), from));
            i += 1;
        }
    }
    Ok(out)
}

/// The most a setup file holds: options for thousands of targets fit in
/// far less, and a larger one (or `/dev/zero`) is not a setup file.
const MAX_SETUP_BYTES: u64 = iolab_core::input::TEXT_MAX_BYTES;

/// A setup file's text: a regular file (a FIFO or a device could hold the
/// run, or memory, without end) of at most [`MAX_SETUP_BYTES`].
fn read_setup(path: &std::path::Path) -> Result<String, String> {
    use iolab_core::input::{read_text, InputError};
    read_text(path, MAX_SETUP_BYTES).map_err(|e| match e {
        InputError::Read(e) => format!("cannot read it: {e}"),
        InputError::NotAFile { kind } => {
            format!("{kind}, not a regular file; give a text file of options")
        }
        e @ InputError::TooLarge { .. } => format!("{e}; a setup file holds options, not data"),
        e @ InputError::NotText => format!("cannot read it: {e}"),
    })
}

/// Splits setup-file text into words.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut cur = String::new();
        let mut quoted = false;
        let mut has = false;
        for ch in line.chars() {
            match ch {
                '"' => {
                    quoted = !quoted;
                    has = true;
                }
                c if c.is_whitespace() && !quoted => {
                    if has {
                        words.push(std::mem::take(&mut cur));
                        has = false;
                    }
                }
                c => {
                    cur.push(c);
                    has = true;
                }
            }
        }
        if has {
            words.push(cur);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn run(s: &str) -> Config {
        match parse(&args(s)).unwrap() {
            Parsed::Run(c) => *c,
            Parsed::Action(a) => panic!("{a:?}"),
        }
    }

    #[test]
    fn guide_precedence_example() {
        let c = run("-op read -op target 1 write -targets 3 s1 s2 s3 -reqsize 1 -numreqs 7");
        let ops: Vec<_> = c.targets.iter().map(|t| t.op).collect();
        use crate::parse::values::Op::*;
        assert_eq!(ops, [Read, Write, Read]);
        let c = run("-op target 1 write -op read -targets 2 a b -numreqs 1");
        assert_eq!(c.targets[1].op, Read, "later options win");
    }

    #[test]
    fn every_targets_list_adds_to_the_targets_as_xdd_s_does() {
        use crate::parse::values::Op::*;
        let names = |c: &Config| c.targets.iter().map(|t| t.path.clone()).collect::<Vec<_>>();
        let c = run("-op read -targets 1 new -op target 0 write -targets 1 keep -numreqs 1");
        assert_eq!(names(&c), ["new", "keep"]);
        let ops: Vec<_> = c.targets.iter().map(|t| t.op).collect();
        assert_eq!(ops, [Write, Read], "target 0 is the first named");
        let c = run("-target a -targets 2 b c -target d -numreqs 1");
        assert_eq!(names(&c), ["a", "b", "c", "d"]);
        let c = run("-targets -3 f -targets 1 g -numreqs 1");
        assert_eq!(names(&c), ["f", "f", "f", "g"]);
        for bad in [
            "-targets 0 a",
            "-targets -0 a",
            "-targets x a",
            "-targets -2",
            "-targets 4097 a",
        ] {
            let e = parse(&args(&format!("{bad} -numreqs 1"))).unwrap_err();
            assert_eq!(e.option, "targets", "{bad}: {e}");
        }
    }

    #[test]
    fn xdds_other_spellings_are_taken() {
        let c = run(
            "-target a -op write -reqsize 1 -numreqs 8 -e2e isdest -e2e dest 127.0.0.1:4000,2 \
             -e2e baseport 4100 -restart enable -restart freq 2 -restart byteoffset 4096 \
             -hb 1 -hb operations -hb eta -hb time -hb sec -hb nl",
        );
        let t = &c.targets[0];
        assert!(t.e2e.isdestination);
        assert_eq!(t.e2e.destinations.len(), 1);
        assert_eq!(t.e2e.port, Some(4100));
        assert_eq!(t.restart.frequency_s, Some(2.0));
        assert_eq!(t.restart.offset, Some(4096));
        let hb = &c.global.heartbeat;
        assert!(hb.ops && hb.etc && hb.tod && hb.elapsed && hb.lf);
        let c = run("-target a -op read -reqsize 1 -numreqs 1 -e2e issrc -e2e host 127.0.0.1:4000");
        assert!(c.targets[0].e2e.issource);
        // What iolab has no behaviour for is refused by name.
        let e = parse(&args(
            "-target a -op write -reqsize 1 -numreqs 1 -e2e isdest -e2e dest 127.0.0.1:4000,2,1",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("NUMA node"), "{e}");
        let e = parse(&args("-target a -reqsize 1 -numreqs 1 -hb ignorerestart")).unwrap_err();
        assert!(e.to_string().contains("not implemented"), "{e}");
    }

    #[test]
    fn errors_name_the_option() {
        for (line, opt) in [
            ("-targets 3 a b -numreqs 1", "targets"),
            ("-target a -reqsize", "reqsize"),
            ("-target a -reqsize x", "reqsize"),
            ("-target a -reqsize 0", "reqsize"),
            ("-target a -rwratio 101", "rwratio"),
            ("-target a -bogus", "bogus"),
            ("-target a -op target 5 write -numreqs 1", "target"),
            ("-target a -numreqs 1 -e2e issource", "endtoend"),
        ] {
            let e = parse(&args(line)).unwrap_err();
            assert_eq!(e.option, opt, "{line}: {e}");
        }
    }

    #[test]
    fn setup_file_is_inserted_in_place() {
        let dir = std::env::temp_dir().join(format!("xdd-setup-{}", std::process::id()));
        std::fs::write(
            &dir,
            "-blocksize 2048\n-reqsize 128 -mbytes 4 # comment\n-id \"two words\"\n",
        )
        .unwrap();
        let c = run(&format!(
            "-target a -reqsize 4 -setup {} -passes 2",
            dir.display()
        ));
        std::fs::remove_file(&dir).unwrap();
        let t = &c.targets[0];
        assert_eq!(
            (t.blocksize, t.reqsize, t.bytes),
            (2048, 128, Some(4 << 20))
        );
        assert_eq!(c.global.id, ["two words"]);
        assert_eq!(c.global.passes, 2);
    }

    #[test]
    fn a_setup_file_is_a_regular_file_of_bounded_size() {
        let args = |f: &str| -> Vec<OsString> {
            ["-target", "a", "-setup", f]
                .iter()
                .map(OsString::from)
                .collect()
        };
        let e = expand_setup(&args("/dev/zero"), 0, None).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let big = std::env::temp_dir().join(format!("xdd-setup-big-{}", std::process::id()));
        std::fs::write(&big, vec![b' '; (MAX_SETUP_BYTES + 1) as usize]).unwrap();
        let e = expand_setup(&args(big.to_str().unwrap()), 0, None).unwrap_err();
        std::fs::remove_file(&big).unwrap();
        assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
        // A FIFO with no writer is refused, not waited on.
        let fifo = std::env::temp_dir().join(format!("xdd-setup-fifo-{}", std::process::id()));
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = expand_setup(&args(fifo.to_str().unwrap()), 0, None).unwrap_err();
        std::fs::remove_file(&fifo).unwrap();
        assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
    }

    /// Which word set which option, in any case and number of dashes, a
    /// setup file's at its `-setup` word: a sweep refuses an option that
    /// two parts of a point's command line set.
    #[test]
    fn options_given_name_each_option_at_its_word() {
        let setup = std::env::temp_dir().join(format!("xdd-setup-given-{}", std::process::id()));
        std::fs::write(&setup, "-reqsize 8\n-op target 0 write\n").unwrap();
        let line = format!(
            "-targets 1 f --posix.odirect -setup {} ---REQSIZE 64 -op read",
            setup.display()
        );
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        let given = options_given(&args);
        std::fs::remove_file(&setup).unwrap();
        let got: Vec<(usize, String)> = given
            .unwrap()
            .into_iter()
            .map(|g| (g.word, g.option))
            .collect();
        let o = |w: usize, s: &str| (w, s.to_string());
        assert_eq!(
            got,
            [
                o(0, "-targets"),
                o(3, "--posix.odirect"),
                o(4, "-reqsize"),
                o(4, "-op target 0"),
                o(6, "-reqsize"),
                o(8, "-op")
            ]
        );
    }

    #[test]
    fn double_dash_and_case() {
        let c = run("--target a -NUMREQS 3 --json x.json");
        assert_eq!(c.targets[0].numreqs, Some(3));
        assert_eq!(c.global.json.as_deref(), Some("x.json"));
    }
}
