//! mdtest's getopt front end: grouped flags (`-FC`), attached values
//! (`-n10`, `-n=10`), separate values (`-n 10`), long options (`--tasks N`,
//! `--tasks=N`), and an optional value that must be attached (`-R`,
//! `-R42`). Options are applied in order.

use crate::cursor::Cursor;
use crate::entry::{Arity, Entry, Given};
use crate::error::OptError;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// Applies every option of `args` to `raw`; returns the warnings met
/// (an [`Arity::Number`] option followed by another option).
pub fn parse<R, C>(
    table: &[Entry<R, C>],
    args: &[OsString],
    raw: &mut R,
) -> Result<Vec<String>, OptError> {
    parse_traced(table, args, raw).map(|(warnings, _)| warnings)
}

/// [`parse`], also returning every option given, in order ([`Given`]):
/// what the command line sets, as this parser reads it.
pub fn parse_traced<R, C>(
    table: &[Entry<R, C>],
    args: &[OsString],
    raw: &mut R,
) -> Result<(Vec<String>, Vec<Given>), OptError> {
    let mut warnings = Vec::new();
    let mut given = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = args[i].as_bytes();
        let at = i;
        i += 1;
        if let Some(long) = w.strip_prefix(b"--") {
            let e;
            (i, e) = parse_long(table, long, args, i, raw)?;
            given.push(Given {
                word: at,
                option: e.label(),
            });
        } else if w.len() > 1 && w[0] == b'-' {
            let mut letters = Vec::new();
            i = parse_group(table, &w[1..], args, i, raw, &mut warnings, &mut letters)?;
            given.extend(letters.into_iter().map(|option| Given { word: at, option }));
        } else {
            return Err(OptError::general(format!(
                "unexpected argument {:?}: only options are taken (see -h)",
                args[i - 1]
            )));
        }
    }
    Ok((warnings, given))
}

/// True for a word that looks like an option rather than a value (a
/// negative number is a value).
fn option_like(w: &OsStr) -> bool {
    let b = w.as_bytes();
    b.len() > 1 && b[0] == b'-' && !b[1].is_ascii_digit()
}

fn os(b: &[u8]) -> OsString {
    OsStr::from_bytes(b).to_os_string()
}

/// Runs an entry's apply over its value, if any; a value it leaves
/// unread is an error.
fn apply<R, C>(
    e: &Entry<R, C>,
    long: bool,
    value: Option<OsString>,
    raw: &mut R,
) -> Result<(), OptError> {
    let toks: Vec<OsString> = value.into_iter().collect();
    let mut c = Cursor::values(&toks);
    c.opt = if long {
        e.name
    } else {
        e.short.map_or(e.name, letter)
    };
    c.long = long;
    (e.apply)(&mut c, raw, None)?;
    if c.has_value() {
        return Err(c.err(format!("takes no value (got {:?})", toks[0])));
    }
    Ok(())
}

/// The letter as a static string, for messages that name `-c`.
fn letter(c: char) -> &'static str {
    const ASCII: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    ASCII.find(c).map_or("?", |i| &ASCII[i..i + 1])
}

fn parse_long<'t, R, C>(
    table: &'t [Entry<R, C>],
    long: &[u8],
    args: &[OsString],
    mut i: usize,
    raw: &mut R,
) -> Result<(usize, &'t Entry<R, C>), OptError> {
    let (name, attached) = match long.iter().position(|&b| b == b'=') {
        Some(at) => (&long[..at], Some(os(&long[at + 1..]))),
        None => (long, None),
    };
    let name = String::from_utf8_lossy(name).into_owned();
    let e = table
        .iter()
        .find(|e| !e.name.is_empty() && e.name == name)
        .ok_or_else(|| OptError::long(&name, "unknown option (see -h)"))?;
    let value = match (e.arity, attached) {
        (Arity::Flag, Some(_)) => return Err(OptError::long(&name, "takes no value")),
        (Arity::Flag | Arity::Attached, None) => None,
        (_, Some(v)) => Some(v),
        (_, None) => {
            let v = args
                .get(i)
                .ok_or_else(|| OptError::long(&name, format!("needs a value ({})", e.args)))?;
            i += 1;
            Some(v.clone())
        }
    };
    apply(e, true, value, raw)?;
    Ok((i, e))
}

fn parse_group<R, C>(
    table: &[Entry<R, C>],
    group: &[u8],
    args: &[OsString],
    i: usize,
    raw: &mut R,
    warnings: &mut Vec<String>,
    given: &mut Vec<String>,
) -> Result<usize, OptError> {
    for (at, &b) in group.iter().enumerate() {
        let c = b as char;
        let e = table
            .iter()
            .find(|e| e.short == Some(c) && b.is_ascii())
            .ok_or_else(|| {
                OptError::new(&String::from_utf8_lossy(&[b]), "unknown option (see -h)")
            })?;
        let rest = &group[at + 1..];
        let rest = rest.strip_prefix(b"=").unwrap_or(rest);
        match e.arity {
            Arity::Flag => apply(e, false, None, raw)?,
            Arity::Attached => {
                let v = (!rest.is_empty()).then(|| os(rest));
                apply(e, false, v, raw)?;
                given.push(e.label());
                return Ok(i);
            }
            _ if !rest.is_empty() => {
                apply(e, false, Some(os(rest)), raw)?;
                given.push(e.label());
                return Ok(i);
            }
            arity => {
                let (next, applied) = separate(e, arity, args, i, raw, warnings)?;
                if applied {
                    given.push(e.label());
                }
                return Ok(next);
            }
        }
        given.push(e.label());
    }
    Ok(i)
}

/// The value of `-c` is the next word; returns the index after it and
/// whether the option was applied (not when ignored for want of a value).
fn separate<R, C>(
    e: &Entry<R, C>,
    arity: Arity,
    args: &[OsString],
    i: usize,
    raw: &mut R,
    warnings: &mut Vec<String>,
) -> Result<(usize, bool), OptError> {
    let c = e.short.unwrap_or('?');
    let next = args
        .get(i)
        .ok_or_else(|| OptError::new(letter(c), format!("needs a value ({})", e.args)))?;
    if arity == Arity::Number && option_like(next) {
        warnings.push(format!(
            "-{c} has no value (the next argument {next:?} is an option); -{c} is ignored, as mdtest did"
        ));
        return Ok((i, false));
    }
    apply(e, false, Some(next.clone()), raw)?;
    Ok((i + 1, true))
}

/// The option lines of a help screen: `  -n N          help`, one per
/// entry in table order.
pub fn help<R, C>(table: &[Entry<R, C>]) -> String {
    let mut s = String::new();
    for o in table {
        let mut name = String::new();
        if let Some(c) = o.short {
            name.push('-');
            name.push(c);
        }
        if !o.name.is_empty() {
            if !name.is_empty() {
                name.push_str(", ");
            }
            name.push_str("--");
            name.push_str(o.name);
        }
        if o.arity == Arity::Attached {
            name.push_str(o.args);
        } else if !o.args.is_empty() {
            name.push(' ');
            name.push_str(o.args);
        }
        s.push_str(&format!("  {name:<24} {}\n", o.help));
    }
    s
}
