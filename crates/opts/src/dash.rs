//! XDD's single-dash front end: `-op read`, `-op target 1 write`, names
//! case-insensitive, aliases, one or more dashes accepted, each option
//! reading as many values as it needs. Later options override earlier
//! ones because they are applied in order.

use crate::cursor::{looks_like_option, Cursor};
use crate::entry::{Check, Entry, Given};
use crate::error::OptError;
use std::ffi::OsString;

/// Finds an option by name or alias (case-insensitive, dashes ignored).
pub fn lookup<'t, R, C>(table: &'t [Entry<R, C>], name: &str) -> Option<&'t Entry<R, C>> {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    table
        .iter()
        .find(|o| o.name == n || o.aliases.iter().any(|a| *a == n))
}

/// Applies every option of `toks` to `raw`, left to right; stops early
/// when `done(raw)` holds (an option that asked for help).
pub fn parse<R, C>(
    table: &[Entry<R, C>],
    toks: &[OsString],
    raw: &mut R,
    done: impl Fn(&R) -> bool,
) -> Result<(), OptError> {
    parse_traced(table, toks, raw, done).map(drop)
}

/// [`parse`], also returning every option given, in order ([`Given`]):
/// what the command line sets, as this parser reads it.
pub fn parse_traced<R, C>(
    table: &[Entry<R, C>],
    toks: &[OsString],
    raw: &mut R,
    done: impl Fn(&R) -> bool,
) -> Result<Vec<Given>, OptError> {
    let mut given = Vec::new();
    let mut pos = 0;
    while pos < toks.len() && !done(raw) {
        let (next, option) = apply_one(table, toks, pos, raw)?;
        given.push(Given { word: pos, option });
        pos = next;
    }
    Ok(given)
}

/// Applies the option at `pos`; returns the position after its values
/// and the option as [`Given`] names it.
fn apply_one<R, C>(
    table: &[Entry<R, C>],
    toks: &[OsString],
    pos: usize,
    raw: &mut R,
) -> Result<(usize, String), OptError> {
    let os = &toks[pos];
    let Some(tok) = os.to_str() else {
        return Err(OptError::general(format!(
            "argument {os:?} is not valid UTF-8 and is not an option; only file names may be other bytes"
        )));
    };
    let name = tok.trim_start_matches('-');
    if !looks_like_option(os) {
        return Err(OptError::new(
            name,
            format!("'{tok}' is not an option (options start with '-'; a value may be missing its option)"),
        ));
    }
    let spec = lookup(table, name)
        .ok_or_else(|| OptError::new(name, "unknown option (-fullhelp lists them all)"))?;
    let mut c = Cursor::new(toks, pos + 1);
    c.opt = spec.name;
    let scope = if spec.scoped {
        scope(&mut c, toks, pos)?
    } else {
        None
    };
    (spec.apply)(&mut c, raw, scope)?;
    let option = match scope {
        Some(t) => format!("-{} target {t}", spec.name),
        None => format!("-{}", spec.name),
    };
    Ok((c.pos(), option))
}

/// `target N` after the name scopes the option, but only when N is a
/// number: XDD's heartbeat has its own `target` word that takes none.
fn scope(c: &mut Cursor, toks: &[OsString], pos: usize) -> Result<Option<usize>, OptError> {
    let numbered = toks
        .get(pos + 2)
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.parse::<usize>().is_ok());
    if numbered && c.peek().is_some_and(|t| t.eq_ignore_ascii_case("target")) {
        c.value("target")?;
        return Ok(Some(c.index("target number after 'target'")?));
    }
    Ok(None)
}

/// Help for one option (`-help NAME`), or None when no option has it.
/// `prog` starts the example line, which is shown only for an example
/// that runs: one whose check is [`Check::Err`] tests a refusal, and
/// shown as an example it would teach a command line that is refused.
pub fn help_for<R, C>(table: &[Entry<R, C>], prog: &str, name: &str) -> Option<String> {
    let o = lookup(table, name)?;
    let mut s = format!("-{}", o.name);
    if o.scoped {
        s.push_str(" [target <target#>]");
    }
    if !o.args.is_empty() {
        s.push(' ');
        s.push_str(o.args);
    }
    s.push_str(&format!("\n    {}\n", o.help));
    if !o.aliases.is_empty() {
        let a: Vec<String> = o.aliases.iter().map(|a| format!("-{a}")).collect();
        s.push_str(&format!("    also: {}\n", a.join(", ")));
    }
    if !matches!(o.check, Check::Err(_)) && !o.example.is_empty() {
        s.push_str(&format!("    example: {prog} {}\n", o.example));
    }
    Some(s)
}

/// Every option with its synopsis and explanation, after `usage`.
pub fn full_help<R, C>(table: &[Entry<R, C>], prog: &str, usage: &str) -> String {
    let mut s = format!("{usage}\n\n");
    for o in table {
        s.push_str(&help_for(table, prog, o.name).unwrap_or_default());
    }
    s
}

/// The option names only, six to a line, between `usage` and `footer`.
pub fn short_help<R, C>(table: &[Entry<R, C>], usage: &str, footer: &str) -> String {
    let names: Vec<String> = table.iter().map(|o| format!("-{}", o.name)).collect();
    let mut s = format!("{usage}\n\nOptions:\n");
    for chunk in names.chunks(6) {
        s.push_str(&format!("  {}\n", chunk.join(" ")));
    }
    s.push_str(&format!("\n{footer}\n"));
    s
}
