//! `iolab completions bash|zsh|fish` and `iolab man DIR`: shell
//! completions and man pages generated from the same definitions that
//! parse: clap's for the new commands (clap_complete, clap_mangen), the
//! option tables for the legacy ones (mdtest, xdd, timeserver, gettime:
//! `iolab_opts::man`), so neither can drift from what the parser reads.

use crate::exit::{self, Ended, Halt, HaltKind};
use clap::{Arg, ArgAction, Command};
use clap_complete::Shell;
use iolab_opts::{Arity, Entry};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A getopt-style table (mdtest) as clap arguments, so its options
/// complete like any other.
fn getopt_args<R, C>(cmd: Command, table: &[Entry<R, C>]) -> Command {
    table.iter().enumerate().fold(cmd, |cmd, (i, e)| {
        let id = format!("{i}:{}", e.name);
        let mut a = Arg::new(id).help(e.help);
        if let Some(c) = e.short {
            a = a.short(c);
        }
        if !e.name.is_empty() {
            a = a.long(e.name);
        }
        a = match e.arity {
            Arity::Flag => a.action(ArgAction::Count),
            _ => a
                .action(ArgAction::Append)
                .value_name(e.args.trim_matches(['<', '>'])),
        };
        cmd.arg(a)
    })
}

/// A tool read by the single-dash front end (xdd, timeserver, gettime):
/// its options are words clap cannot describe, so they complete as free
/// arguments; its man page lists them.
pub fn dash_tool(name: &'static str, about: &'static str) -> Command {
    Command::new(name).about(about).arg(
        Arg::new("options")
            .num_args(0..)
            .trailing_var_arg(true)
            .allow_hyphen_values(true)
            .help("options as the tool's -help lists them"),
    )
}

/// mdtest's command line as clap arguments (for completions).
pub fn mdtest_command() -> Command {
    // The table has its own -h and -V.
    let cmd = Command::new("mdtest")
        .about("metadata benchmark, a drop-in mdtest")
        .disable_help_flag(true)
        .disable_version_flag(true);
    getopt_args(cmd, iolab_mdtest::args::OPTIONS)
}

/// IOR's command line as clap arguments (for completions).
pub fn ior_command() -> Command {
    let cmd = Command::new("ior")
        .about("parallel file and object I/O benchmark, a drop-in IOR")
        .disable_help_flag(true)
        .disable_version_flag(true);
    getopt_args(cmd, iolab_ior::options::OPTIONS)
}

/// IOR's man page, from its option table.
pub fn ior_page() -> String {
    let page = iolab_opts::man::Page {
        name: "iolab-ior",
        about: "parallel file and object I/O benchmark, a drop-in IOR",
        synopsis: "iolab ior [options...]   (or a link named ior)",
        description: &["Writes and reads files (a file per task or one shared file) in IOR's patterns, with IOR's stonewalling, checks and reports; see docs/ior.md."],
    };
    iolab_opts::man::render(&page, iolab_ior::options::OPTIONS)
}

/// `iolab completions`' own command line.
pub fn completions_command() -> Command {
    Command::new("completions")
        .about("shell completions: iolab completions bash|zsh|fish")
        .arg(
            Arg::new("shell")
                .value_parser(["bash", "zsh", "fish"])
                .required(true),
        )
}

/// `iolab man`'s own command line.
pub fn man_command() -> Command {
    Command::new("man")
        .about("write the man pages (iolab.1, iolab-SUBCOMMAND.1) into DIR")
        .arg(Arg::new("dir").required(true).value_name("DIR"))
}

/// Every tool of the registry, as one clap command.
pub fn command() -> Command {
    crate::TOOLS.iter().fold(
        Command::new("iolab")
            .about("storage performance toolkit")
            .version(env!("CARGO_PKG_VERSION")),
        |top, t| top.subcommand((t.command)().name(t.name)),
    )
}

/// mdtest's man page, from its option table.
pub fn mdtest_page() -> String {
    let page = iolab_opts::man::Page {
        name: "iolab-mdtest",
        about: "metadata benchmark, a drop-in mdtest",
        synopsis: "iolab mdtest [options...]   (or a link named mdtest)",
        description: &["Creates, stats, reads and removes files and directories in a tree, as mdtest does; see the README."],
    };
    iolab_opts::man::render(&page, iolab_mdtest::args::OPTIONS)
}

/// xdd's man page, from its option table.
pub fn xdd_page() -> String {
    let page = iolab_opts::man::Page {
        name: "iolab-xdd",
        about: "XDD data I/O benchmark",
        synopsis: "iolab xdd -op read|write -target NAME [options...]   (or a link named xdd)",
        description: &["Reads or writes targets with XDD's command line; see docs/xdd.md."],
    };
    iolab_opts::man::render(&page, iolab_xdd::options::OPTIONS)
}

/// `iolab completions SHELL`, read by clap so that a wrong word or an
/// unknown option is named as every other command names it.
#[derive(clap::Parser)]
struct CompletionsArgs {
    /// The shell to write completions for.
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

/// `iolab man DIR`.
#[derive(clap::Parser)]
struct ManArgs {
    /// The directory to write the pages into (made when missing).
    dir: PathBuf,
}

/// Entry point: `iolab completions SHELL`.
pub fn completions(prog: &str, args: Vec<OsString>) -> Ended {
    let a: CompletionsArgs = exit::parse_clap(prog, args)?;
    // clap's value parser has already refused any other shell.
    let shell = a
        .shell
        .parse::<Shell>()
        .map_err(|_| Halt::said(HaltKind::Usage))?;
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut command(), "iolab", &mut text);
    crate::output::print_bytes(&text).map_err(|_| Halt::said(HaltKind::Failed))?;
    Ok(iolab_core::Outcome::Completed)
}

/// Every page: (file stem, roff text): `iolab` and one per tool of the
/// registry, from its option table or else from clap.
fn pages() -> Result<Vec<(String, String)>, std::io::Error> {
    let roff = |c: Command| -> Result<String, std::io::Error> {
        let mut b = Vec::new();
        clap_mangen::Man::new(c).render(&mut b)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    };
    let mut out = vec![("iolab".to_string(), roff(command())?)];
    for t in crate::TOOLS {
        let stem = format!("iolab-{}", t.name);
        let text = match t.page {
            Some(page) => page(),
            None => roff((t.command)().name(stem.clone()))?,
        };
        out.push((stem, text));
    }
    Ok(out)
}

/// Entry point: `iolab man DIR`. A file of a page's name already in DIR
/// is replaced only when it is an earlier iolab page of that name
/// ([`replaceable`]); otherwise the command is refused (exit 2) before
/// anything is written. Every page is written to a temporary file first
/// and put in place only once all are written, so a failure leaves DIR
/// as it was.
pub fn man(prog: &str, args: Vec<OsString>) -> Ended {
    let dir = exit::parse_clap::<ManArgs>(prog, args)?.dir;
    let usage = |e: String| Halt::usage(format!("iolab {prog}: {e}"));
    iolab_output::check_dir("DIR", &dir).map_err(|e| usage(e.to_string()))?;
    let failed = |e: std::io::Error| {
        Halt::new(
            HaltKind::Output,
            format!("iolab {prog}: {}: {e}", dir.display()),
        )
    };
    let pages = pages().map_err(failed)?;
    for (stem, _) in &pages {
        replaceable(&dir.join(format!("{stem}.1")), stem).map_err(usage)?;
    }
    std::fs::create_dir_all(&dir).map_err(failed)?;
    let mut staged = Vec::with_capacity(pages.len());
    for (stem, text) in &pages {
        let path = dir.join(format!("{stem}.1"));
        let mut f = iolab_output::AtomicFile::create(&path).map_err(failed)?;
        f.write_all(text.as_bytes()).map_err(failed)?;
        staged.push((path, f));
    }
    for (path, f) in staged {
        f.commit().map_err(failed)?;
        let _ = outln!("{}", path.display());
    }
    Ok(iolab_core::Outcome::Completed)
}

/// Ok when `path` may take page `stem`: nothing is there, or a regular
/// file whose first `.TH` line names `stem` (an earlier `iolab man`'s
/// page, clap's or an option table's, in either case); else why not.
fn replaceable(path: &Path, stem: &str) -> Result<(), String> {
    let refuse = |what: &str| {
        format!(
            "{} {what}, and this command writes a page by that name: move it away, or give another directory",
            path.display()
        )
    };
    let Some(head) = iolab_output::earlier_head(path).map_err(|why| refuse(&why.to_string()))?
    else {
        return Ok(());
    };
    let names = String::from_utf8_lossy(&head)
        .lines()
        .find_map(|l| l.strip_prefix(".TH "))
        .and_then(|rest| rest.split_whitespace().next())
        .is_some_and(|name| name.eq_ignore_ascii_case(stem));
    match names {
        true => Ok(()),
        false => Err(refuse("is not an iolab man page")),
    }
}

/// Why a help text reads as cut off mid-sentence (it ends on a word that
/// cannot end one: "a percentage of its"), or None. clap drops a
/// one-line doc comment's full stop, so the last word is what is judged.
#[cfg(test)]
pub(crate) fn cut_off(text: &str) -> Option<String> {
    // Words no sentence ends on ("on", "in", "this" can: "listen on").
    const DANGLING: &[&str] = &[
        "a", "an", "the", "of", "its", "their", "his", "her", "our", "your", "my", "to", "and",
        "or", "but", "nor", "with", "as", "for", "by", "from", "at", "per", "than", "into", "onto",
        "each", "every",
    ];
    let text = text.trim();
    if text.is_empty() {
        return Some("no help".into());
    }
    if text.ends_with([',', ';', ':', '(', '-']) {
        return Some(format!("`{text}` ends with a mark that continues it"));
    }
    let last = text
        .rsplit(|c: char| c.is_whitespace())
        .next()
        .unwrap_or("")
        .trim_end_matches('.')
        .to_lowercase();
    DANGLING
        .contains(&last.as_str())
        .then(|| format!("`{text}` ends on `{last}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every help text of `cmd` and its subcommands that is cut off.
    fn cut_offs(cmd: &Command, path: &str, found: &mut Vec<String>) {
        let path = format!("{path} {}", cmd.get_name());
        let texts = cmd.get_about().into_iter().chain(cmd.get_long_about());
        for t in texts {
            found.extend(cut_off(&t.to_string()).map(|w| format!("{path}: {w}")));
        }
        for a in cmd.get_arguments() {
            for t in a.get_help().into_iter().chain(a.get_long_help()) {
                let w = cut_off(&t.to_string());
                found.extend(w.map(|w| format!("{path} {}: {w}", a.get_id())));
            }
        }
        for s in cmd.get_subcommands() {
            cut_offs(s, &path, found);
        }
    }

    /// No option's help, in any subcommand's --help or a legacy tool's
    /// table, stops mid-sentence (qualify's --baseline read "every limit
    /// as a percentage of its").
    #[test]
    fn no_help_text_is_cut_off() {
        let mut found = Vec::new();
        cut_offs(&command(), "", &mut found);
        for o in iolab_xdd::options::OPTIONS {
            found.extend(cut_off(o.help).map(|w| format!("xdd -{}: {w}", o.name)));
        }
        assert!(found.is_empty(), "{}", found.join("\n"));
        assert!(cut_off("every limit as a percentage of its").is_some());
        assert!(cut_off("every limit as a percentage of its limit of the same name").is_none());
    }
}
