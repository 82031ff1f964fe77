//! The io500 app's ini file: a strict reader and the table of every
//! section and key it knows, with defaults (what `--list` prints). An
//! unknown section or key, a line that is not `key = value`, or a value
//! of the wrong kind is an [`IniError`] naming the line.

use std::collections::BTreeMap;

/// What a key's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any text.
    Text,
    /// TRUE/FALSE (also true/false, yes/no, 1/0).
    Bool,
    /// A whole number.
    Uint,
    /// A size with an optional k/m/g/t suffix (powers of two, as IOR).
    Size,
    /// A number with a fraction, not negative (`0.5`).
    Float,
}

/// One key of the table.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// Section name, without brackets.
    pub section: &'static str,
    /// Key name as written in the ini.
    pub key: &'static str,
    /// Default value ("" when unset).
    pub default: &'static str,
    /// Value kind.
    pub kind: Kind,
    /// Whether iolab acts on the key; one that is not may only keep its
    /// default, otherwise the run is refused naming it.
    pub implemented: bool,
    /// What it does.
    pub help: &'static str,
}

const fn k(
    section: &'static str,
    key: &'static str,
    default: &'static str,
    kind: Kind,
    implemented: bool,
    help: &'static str,
) -> Key {
    Key {
        section,
        key,
        default,
        kind,
        implemented,
        help,
    }
}

use Kind::{Bool, Float, Size, Text, Uint};

/// Sections of the scored phases that take only `API` and `run`.
pub const PHASE_SECTIONS: [&str; 11] = [
    "ior-easy-write",
    "mdtest-easy-write",
    "ior-hard-write",
    "mdtest-hard-write",
    "ior-easy-read",
    "mdtest-easy-stat",
    "ior-hard-read",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
];

/// Sections of the extended phases iolab runs in extended mode
/// (`--mode=extended`): the two take [`FIND_KEYS_FROM`]'s keys, the
/// last `API` and `run`.
pub const RUNNABLE_EXTENDED: [&str; 3] = ["find-easy", "find-hard", "ior-rnd4K-easy-read"];

/// The section whose keys `find-easy` and `find-hard` take, as in the
/// io500 app.
pub const FIND_KEYS_FROM: &str = "find";

/// The sections of the md-workbench phases (extended mode), which take
/// only `run`; their parameters are `[mdworkbench]`'s.
pub const MDWB_SECTIONS: [&str; 3] = [
    "mdworkbench-create",
    "mdworkbench-bench",
    "mdworkbench-delete",
];

/// Sections of extended phases iolab does not run: accepted (any key,
/// as text) in standard mode; extended mode refuses them unless their
/// `run` is FALSE. They come from other versions of the io500 app.
pub const EXTENDED_SECTIONS: [&str; 4] =
    ["ior-rnd4K", "ior-rnd1MB", "ior-rnd-write", "ior-rnd-read"];

/// Every key of the non-phase sections, in `--list` order.
pub const KEYS: &[Key] = &[
    k(
        "global",
        "datadir",
        "./datafiles",
        Text,
        true,
        "The directory where the IO500 runs",
    ),
    k(
        "global",
        "timestamp-datadir",
        "TRUE",
        Bool,
        true,
        "Append the start time to datadir",
    ),
    k(
        "global",
        "resultdir",
        "./results",
        Text,
        true,
        "The result directory",
    ),
    k(
        "global",
        "timestamp-resultdir",
        "TRUE",
        Bool,
        true,
        "Append the start time to resultdir",
    ),
    k(
        "global",
        "api",
        "POSIX",
        Text,
        true,
        "The API used by default in every phase",
    ),
    k(
        "global",
        "drop-caches",
        "FALSE",
        Bool,
        true,
        "Drop the page cache before each phase (writes /proc/sys/vm/drop_caches)",
    ),
    k(
        "global",
        "drop-caches-cmd",
        "sudo -n bash -c \"echo 3 > /proc/sys/vm/drop_caches\"",
        Text,
        false,
        "A command to drop caches: only the io500 app's default, which iolab does itself (writes /proc/sys/vm/drop_caches)",
    ),
    k(
        "global",
        "io-buffers-on-gpu",
        "FALSE",
        Bool,
        false,
        "Allocate I/O buffers on a GPU",
    ),
    k(
        "global",
        "verbosity",
        "1",
        Uint,
        true,
        "Verbosity of the output (0 prints only results)",
    ),
    k(
        "global",
        "scc",
        "FALSE",
        Bool,
        true,
        "Student cluster competition rules (write phases of 30 s)",
    ),
    k(
        "global",
        "dataPacketType",
        "timestamp",
        Text,
        false,
        "Data written (iolab always writes scrambled data)",
    ),
    k(
        "debug",
        "stonewall-time",
        "300",
        Uint,
        true,
        "Seconds of each write phase before the stonewall; below 300 the run is invalid",
    ),
    k(
        "debug",
        "pause-dir",
        "",
        Text,
        true,
        "Before each phase, wait while this directory holds a file named after the phase; the run is then invalid",
    ),
    k(
        "ior-easy",
        "API",
        "",
        Text,
        true,
        "The API of the ior-easy phases",
    ),
    k(
        "ior-easy",
        "transferSize",
        "2m",
        Size,
        true,
        "Transfer size",
    ),
    k(
        "ior-easy",
        "blockSize",
        "9920000m",
        Size,
        true,
        "Block size per task; a multiple of transferSize",
    ),
    k(
        "ior-easy",
        "filePerProc",
        "TRUE",
        Bool,
        true,
        "One file per task",
    ),
    k(
        "ior-easy",
        "uniqueDir",
        "FALSE",
        Bool,
        true,
        "A directory per task for its file",
    ),
    k(
        "ior-easy",
        "hintsFileName",
        "",
        Text,
        false,
        "MPI-IO hints file",
    ),
    k(
        "ior-easy",
        "posix.odirect",
        "FALSE",
        Bool,
        false,
        "O_DIRECT",
    ),
    k(
        "ior-easy",
        "verbosity",
        "0",
        Uint,
        true,
        "Verbosity of IOR (no effect in iolab)",
    ),
    k(
        "ior-easy",
        "run",
        "TRUE",
        Bool,
        true,
        "Run the ior-easy phases",
    ),
    k(
        "mdtest-easy",
        "API",
        "",
        Text,
        true,
        "The API of the mdtest-easy phases",
    ),
    k("mdtest-easy", "n", "1000000", Uint, true, "Files per task"),
    k(
        "mdtest-easy",
        "run",
        "TRUE",
        Bool,
        true,
        "Run the mdtest-easy phases",
    ),
    k(
        "mdworkbench",
        "API",
        "",
        Text,
        true,
        "The API of the md-workbench phases (extended mode)",
    ),
    k(
        "mdworkbench",
        "waitingTime",
        "0.0",
        Float,
        true,
        "After each operation, wait this share of its time (1.0 is 100%)",
    ),
    k(
        "mdworkbench",
        "precreatePerSet",
        "",
        Uint,
        true,
        "Objects per set (10 sets per task); unset: sized from mdtest-easy-write's rate, as the app; set both or neither",
    ),
    k(
        "mdworkbench",
        "filesPerProc",
        "",
        Uint,
        true,
        "Objects of each set per benchmark iteration, at most precreatePerSet; set both or neither",
    ),
    k(
        "mdworkbench",
        "run",
        "TRUE",
        Bool,
        true,
        "Run the md-workbench phases (extended mode)",
    ),
    k(
        "mdworkbench",
        "verbosity",
        "",
        Uint,
        true,
        "Verbosity of md-workbench (no effect in iolab)",
    ),
    k(
        "timestamp",
        "run",
        "TRUE",
        Bool,
        true,
        "Create the timestamp file find compares with",
    ),
    k(
        "ior-hard",
        "API",
        "",
        Text,
        true,
        "The API of the ior-hard phases",
    ),
    k(
        "ior-hard",
        "segmentCount",
        "10000000",
        Uint,
        true,
        "Segments: each task writes one 47008-byte transfer per segment",
    ),
    k(
        "ior-hard",
        "collective",
        "FALSE",
        Bool,
        false,
        "Collective I/O",
    ),
    k(
        "ior-hard",
        "verbosity",
        "0",
        Uint,
        true,
        "Verbosity of IOR (no effect in iolab)",
    ),
    k(
        "ior-hard",
        "run",
        "TRUE",
        Bool,
        true,
        "Run the ior-hard phases",
    ),
    k(
        "mdtest-hard",
        "API",
        "",
        Text,
        true,
        "The API of the mdtest-hard phases",
    ),
    k("mdtest-hard", "n", "1000000", Uint, true, "Files per task"),
    k(
        "mdtest-hard",
        "files-per-dir",
        "",
        Uint,
        true,
        "Files per directory (mdtest -I); the run is then invalid",
    ),
    k(
        "mdtest-hard",
        "run",
        "TRUE",
        Bool,
        true,
        "Run the mdtest-hard phases",
    ),
    k(
        "find",
        "external-script",
        "",
        Text,
        false,
        "An external find script",
    ),
    k(
        "find",
        "external-mpi-args",
        "",
        Text,
        false,
        "Startup arguments of the external script",
    ),
    k(
        "find",
        "external-extra-args",
        "",
        Text,
        false,
        "Extra arguments of the external script",
    ),
    k("find", "nproc", "", Uint, false, "Processes of the find"),
    k(
        "find",
        "pfind-queue-length",
        "10000",
        Uint,
        true,
        "pfind's queue length (no effect in iolab)",
    ),
    k(
        "find",
        "pfind-steal-next",
        "FALSE",
        Bool,
        true,
        "pfind's work stealing (no effect in iolab)",
    ),
    k(
        "find",
        "pfind-parallelize-single-dir-access-using-hashing",
        "FALSE",
        Bool,
        true,
        "pfind's hashed readdir (no effect: iolab reads each directory with one task)",
    ),
    k("find", "run", "TRUE", Bool, true, "Run the find phase"),
];

/// The key `section.key`: from the table, or `API`/`run` of a phase
/// section, or a key of an extended section. Names are matched without
/// regard to case, as the io500 app matches them; the key returned
/// carries the table's spelling.
pub fn lookup(section: &str, key: &str) -> Option<Key> {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    if let Some(k) = KEYS
        .iter()
        .find(|k| same(k.section, section) && same(k.key, key))
    {
        return Some(*k);
    }
    if let Some(s) = MDWB_SECTIONS.iter().find(|s| same(s, section)) {
        return same(key, "run").then(|| k(s, "run", "TRUE", Bool, true, "Run this phase"));
    }
    if let Some(s) = RUNNABLE_EXTENDED[..2].iter().find(|s| same(s, section)) {
        let k = KEYS
            .iter()
            .find(|k| k.section == FIND_KEYS_FROM && same(k.key, key))?;
        return Some(Key { section: s, ..*k });
    }
    let phase = PHASE_SECTIONS
        .iter()
        .chain(RUNNABLE_EXTENDED[2..].iter())
        .chain(EXTENDED_SECTIONS.iter())
        .find(|s| same(s, section))?;
    let key = ["API", "run", "collective"]
        .into_iter()
        .find(|k| same(k, key))
        .unwrap_or(key);
    match key {
        "API" => Some(k(phase, "API", "", Text, true, "The API of this phase")),
        "run" => Some(k(phase, "run", "TRUE", Bool, true, "Run this phase")),
        "collective" if phase.starts_with("ior-hard-") => Some(k(
            phase,
            "collective",
            "FALSE",
            Bool,
            false,
            "Collective I/O of this phase",
        )),
        // Extended phases are never run: their tuning keys are kept as text.
        _ if EXTENDED_SECTIONS.contains(phase) => {
            Some(k(phase, "", "", Text, true, "A key of an extended phase"))
        }
        _ => None,
    }
}

/// Whether `name` is a section iolab knows.
pub fn known_section(name: &str) -> bool {
    canonical_section(name).is_some()
}

/// The table's spelling of section `name`, matched without regard to
/// case as the io500 app does.
pub fn canonical_section(name: &str) -> Option<&'static str> {
    KEYS.iter()
        .map(|k| k.section)
        .chain(PHASE_SECTIONS)
        .chain(RUNNABLE_EXTENDED)
        .chain(MDWB_SECTIONS)
        .chain(EXTENDED_SECTIONS)
        .find(|s| s.eq_ignore_ascii_case(name))
}

/// An ini file that cannot be used, naming the line, section or key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IniError(pub String);

/// A parsed ini: `(section, key) -> (value, line)` for the keys given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    values: BTreeMap<(String, String), (String, usize)>,
    /// Sections that appeared, in file order.
    pub sections: Vec<String>,
}

impl Ini {
    /// Reads ini text strictly, with the io500 app's grammar: a line is
    /// blank, a comment (`#` or `;` first), `[section]` or `key = value`;
    /// a comment may follow a section or a value after white space (`x ;
    /// note`), so a value holds no `#` or `;`; white space around names
    /// and values is not part of them; names match without regard to
    /// case. A UTF-8 byte-order mark at the top (which some editors
    /// write) is skipped. `file` names the ini in errors.
    pub fn parse(text: &str, file: &str) -> Result<Ini, IniError> {
        let mut ini = Ini::default();
        let mut section: Option<&'static str> = None;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let at = |msg: String| IniError(format!("{file}:{line_no}: {msg}"));
            let line = raw.trim_matches(space);
            if line.is_empty() || line.starts_with(['#', ';']) {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let name = section_name(rest).map_err(|why| at(format!("'{line}': {why}")))?;
                let Some(name) = canonical_section(name) else {
                    return Err(at(format!(
                        "unknown section [{name}] (iolab io500 --list shows every section)"
                    )));
                };
                ini.sections.push(name.to_string());
                section = Some(name);
                continue;
            }
            let Some((key, rest)) = line.split_once('=') else {
                return Err(at(format!("'{line}' is not 'key = value'")));
            };
            let key = key.trim_end_matches(space);
            if !is_name(key, true) {
                return Err(at(format!("'{line}' is not 'key = value'")));
            }
            let value = value_of(rest).map_err(|why| at(format!("'{line}': {why}")))?;
            let value = unquote(value);
            let Some(sec) = section else {
                return Err(at(format!("'{key}' comes before any [section]")));
            };
            let Some(spec) = lookup(sec, key) else {
                return Err(at(format!(
                    "unknown key '{key}' in [{sec}] (iolab io500 --list shows every key)"
                )));
            };
            // The table's spelling (a key of an extended section as given).
            let key = if spec.key.is_empty() { key } else { spec.key };
            if value.is_empty() {
                // `key =` leaves the key unset, as the io500 app reads it.
                continue;
            }
            check_value(spec.kind, value)
                .map_err(|why| at(format!("[{sec}] {key} = {value}: {why}")))?;
            if !spec.implemented && value != spec.default && !is_default_bool(spec, value) {
                return Err(at(format!(
                    "[{sec}] {key} = {value}: not implemented by iolab io500 (only the default '{}' is accepted; see docs/io500.md)",
                    spec.default
                )));
            }
            let slot = (sec.to_string(), key.to_string());
            if ini.values.contains_key(&slot) {
                return Err(at(format!("[{sec}] {key} is given twice")));
            }
            ini.values.insert(slot, (value.to_string(), line_no));
        }
        Ok(ini)
    }

    /// The value given for `section.key`, if any.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.values
            .get(&(section.to_string(), key.to_string()))
            .map(|(v, _)| v.as_str())
    }

    /// Every value given, as `(section, key, value)`, sorted.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.values
            .iter()
            .map(|((s, k), (v, _))| (s.as_str(), k.as_str(), v.as_str()))
    }
}

/// White space as the app's `[[:space:]]` (the C locale's).
fn space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '\x0b' | '\x0c')
}

/// A section's or key's name: letters, digits, `_`, `-` (and `.` in
/// keys), as the app's grammar.
fn is_name(s: &str, key: bool) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (key && b == b'.'))
}

/// The name of `[ name ] ; comment` (given without its `[`).
fn section_name(rest: &str) -> Result<&str, String> {
    let (name, after) = rest
        .split_once(']')
        .ok_or("a section header must end with ']'")?;
    let name = name.trim_matches(space);
    if !is_name(name, false) {
        return Err("a section name holds letters, digits, '_' and '-' only".into());
    }
    match after.trim_start_matches(space) {
        "" => Ok(name),
        c if c.starts_with(['#', ';']) && after.starts_with(space) => Ok(name),
        _ => Err("only a comment may follow ']', after white space".into()),
    }
}

/// The value after `=`: up to a comment (`#` or `;` after white space),
/// without the white space around it. A `#` or `;` with no white space
/// before it is refused, as the app refuses it: it is not part of a
/// value.
fn value_of(rest: &str) -> Result<&str, String> {
    match rest.find(['#', ';']) {
        None => Ok(rest.trim_matches(space)),
        Some(j) if rest[..j].ends_with(space) => Ok(rest[..j].trim_matches(space)),
        Some(j) => Err(format!(
            "'{}' in a value: a value cannot hold '#' or ';', and a comment needs white space before it",
            &rest[j..=j]
        )),
    }
}

fn is_default_bool(spec: Key, value: &str) -> bool {
    spec.kind == Kind::Bool && parse_bool(value) == parse_bool(spec.default)
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

/// Reads an ini boolean.
/// As the app's parser: `true`/`false` in any case, or `1`/`0`.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

fn check_value(kind: Kind, v: &str) -> Result<(), String> {
    match kind {
        Kind::Text => Ok(()),
        Kind::Bool => parse_bool(v)
            .map(drop)
            .ok_or_else(|| "not a boolean (TRUE or FALSE)".to_string()),
        // Digits only, as the app's `^[0-9]+$` (Rust would take `+10`).
        Kind::Uint => match v.bytes().all(|b| b.is_ascii_digit()) {
            true => v
                .parse::<u64>()
                .map(drop)
                .map_err(|_| "too large".to_string()),
            false => Err("not a whole number".to_string()),
        },
        Kind::Size => iolab_core::units::parse_size(v)
            .map(drop)
            .map_err(|e| e.to_string()),
        Kind::Float => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(()),
            _ => Err("not a number of 0 or more (0.5)".to_string()),
        },
    }
}

/// What `iolab io500 --list` prints: every section and key with its
/// default, in the ini's own syntax, so that the output is a valid ini.
pub fn list() -> String {
    let mut out = String::new();
    let mut last = "";
    for key in KEYS {
        if key.section != last {
            out.push_str(&format!("\n[{}]\n", key.section));
            last = key.section;
        }
        out.push_str(&format!("# {}\n", key.help));
        out.push_str(&format!("{} = {}\n", key.key, key.default));
    }
    for s in PHASE_SECTIONS {
        out.push_str(&format!(
            "\n[{s}]\n# The API of this phase\nAPI = \n# Run this phase\nrun = TRUE\n"
        ));
        if s.starts_with("ior-hard-") {
            out.push_str("# Collective I/O of this phase (not implemented)\ncollective = FALSE\n");
        }
    }
    for s in &RUNNABLE_EXTENDED[..2] {
        out.push_str(&format!(
            "\n[{s}]\n# An extended phase (--mode=extended), with [{FIND_KEYS_FROM}]'s keys\n"
        ));
        for key in KEYS.iter().filter(|k| k.section == FIND_KEYS_FROM) {
            out.push_str(&format!("# {}\n{} = {}\n", key.help, key.key, key.default));
        }
    }
    out.push_str(
        "\n[ior-rnd4K-easy-read]\n# An extended phase (--mode=extended), not scored\nAPI = \nrun = TRUE\n",
    );
    for s in MDWB_SECTIONS {
        out.push_str(&format!(
            "\n[{s}]\n# An extended phase (--mode=extended), with [mdworkbench]'s parameters\nrun = TRUE\n"
        ));
    }
    for s in EXTENDED_SECTIONS {
        out.push_str(&format!(
            "\n# [{s}]: an extended phase iolab does not run (accepted; --mode=extended refuses it unless its run = FALSE)\n"
        ));
    }
    out.trim_start().to_string()
}

/// The first line of `config.ini`, by which a rerun into the same
/// resultdir knows the file as one iolab io500 wrote (the io500 app's
/// config.ini has no such line).
pub const CONFIG_HEADER: &str = "; iolab io500: every key with the value the run used";

/// The resultdir's config.ini, as the app writes it: every key of the
/// table with the value the run used (as given, else its default), then
/// what else the ini gave (a phase's `API` and `run`, the extended
/// sections' keys), section by section, so that the file reruns the same
/// run. `[mdworkbench]`'s keys are used only in extended mode
/// (`extended`): without it they are written only when the ini had the
/// section, which a rerun would otherwise note as an extended section
/// the run did not ask for. A section the ini gave without keys is
/// written too: it has the same effect on the rerun (an extended
/// section is noted).
pub fn values(ini: &Ini, extended: bool) -> String {
    let given = |sec: &str| ini.sections.iter().any(|s| s == sec);
    let known = KEYS
        .iter()
        .filter(|k| k.section != "mdworkbench" || extended || given(k.section))
        .map(|k| (k.section, k.key, value_or_default(ini, k.section, k.key)));
    let in_table = |sec: &str, key: &str| KEYS.iter().any(|k| k.section == sec && k.key == key);
    let mut rest: Vec<_> = ini
        .entries()
        .filter(|(sec, key, _)| !in_table(sec, key))
        .map(|(s, k, v)| (s, k, v.to_string()))
        .collect();
    rest.sort();
    let mut out = String::new();
    let mut written: Vec<&str> = Vec::new();
    for (sec, key, value) in known.chain(rest) {
        if written.last() != Some(&sec) {
            out.push_str(&format!("\n[{sec}]\n"));
            written.push(sec);
        }
        out.push_str(&format!("{key} = {value}\n"));
    }
    for sec in &ini.sections {
        if !written.contains(&sec.as_str()) {
            out.push_str(&format!("\n[{sec}]\n"));
            written.push(sec);
        }
    }
    // The header tells a rerun into the same resultdir that the file is
    // iolab's to replace.
    format!("{CONFIG_HEADER}\n{}", out.trim_start())
}

/// The value of `section.key`: as given, else the table's default.
pub fn value_or_default(ini: &Ini, section: &str, key: &str) -> String {
    ini.get(section, key)
        .map(str::to_string)
        .or_else(|| lookup(section, key).map(|k| k.default.to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_ini() {
        let ini = Ini::parse(
            "[global]\ndatadir = /x\n# c\n[ior-easy]\ntransferSize = 1m\nrun = FALSE\n",
            "t.ini",
        )
        .unwrap();
        assert_eq!(ini.get("global", "datadir"), Some("/x"));
        assert_eq!(ini.get("ior-easy", "transferSize"), Some("1m"));
        assert_eq!(ini.get("ior-easy", "run"), Some("FALSE"));
    }

    #[test]
    fn names_what_is_wrong() {
        let e = Ini::parse("[nope]\n", "t.ini").unwrap_err().0;
        assert!(e.contains("t.ini:1") && e.contains("[nope]"), "{e}");
        let e = Ini::parse("[global]\nfoo = 1\n", "t.ini").unwrap_err().0;
        assert!(e.contains("t.ini:2") && e.contains("foo"), "{e}");
        let e = Ini::parse("[ior-hard]\nsegmentCount = many\n", "t")
            .unwrap_err()
            .0;
        assert!(e.contains("segmentCount") && e.contains("many"), "{e}");
        let e = Ini::parse("[global]\ndrop-caches = maybe\n", "t")
            .unwrap_err()
            .0;
        assert!(e.contains("drop-caches"), "{e}");
        let e = Ini::parse("[find]\nexternal-script = /bin/x\n", "t")
            .unwrap_err()
            .0;
        assert!(e.contains("not implemented"), "{e}");
        let e = Ini::parse("datadir = /x\n", "t").unwrap_err().0;
        assert!(e.contains("before any [section]"), "{e}");
    }

    /// The io500 app's grammar (src/ini-parse.c's expressions): comments
    /// with `#` and `;` on their own lines and after white space, white
    /// space around names and values, empty values leaving the default,
    /// names in any case; and a UTF-8 byte-order mark at the top, which
    /// the app refuses and iolab skips.
    #[test]
    fn reads_what_the_io500_app_reads() {
        let text = "\u{feff}# made on Windows\r\n \t[ GLOBAL ]  ; the run\r\n\
            datadir = /mnt/x ; a comment\r\n\
            resultdir\t=\t/mnt/r\t# another\r\n\
            \t; an indented comment\r\n\
            api =\r\n\
            timestamp-datadir = #no value, so the default\n\
            Verbosity = 2\n\
            [Ior-Easy] # comment\n\
            transfersize = 1m \n\
            [ior-easy-write]\nrun = false\n";
        let ini = Ini::parse(text, "t.ini").unwrap();
        assert_eq!(ini.get("global", "datadir"), Some("/mnt/x"));
        assert_eq!(ini.get("global", "resultdir"), Some("/mnt/r"));
        assert_eq!(ini.get("global", "api"), None, "empty: the default");
        assert_eq!(ini.get("global", "timestamp-datadir"), None);
        assert_eq!(ini.get("global", "verbosity"), Some("2"));
        assert_eq!(ini.get("ior-easy", "transferSize"), Some("1m"));
        assert_eq!(ini.get("ior-easy-write", "run"), Some("false"));
        assert_eq!(ini.sections, ["global", "ior-easy", "ior-easy-write"]);
        let cfg = crate::Config::from_ini(&ini, "t.ini".into()).unwrap();
        assert_eq!(cfg.datadir, std::path::PathBuf::from("/mnt/x"));
        // What the app refuses: a comment without white space before it,
        // anything else after a section, a name with other characters.
        for (bad, needle) in [
            ("[global]\ndatadir = x;comment\n", "t.ini:2"),
            ("[global]\ndatadir = /a#b\n", "cannot hold '#'"),
            ("[global]\ndatadir =#x\n", "t.ini:2"),
            ("[global]# c\n", "after white space"),
            ("[global] x\n", "after white space"),
            ("[glo bal]\n", "letters, digits"),
            ("[global]\n= x\n", "not 'key = value'"),
            ("[global]\ndata dir = x\n", "not 'key = value'"),
            ("\u{feff}\u{feff}[global]\n", "t.ini:1"),
        ] {
            let e = Ini::parse(bad, "t.ini").unwrap_err().0;
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
    }

    /// config.ini reads back as the same run: the phases' own sections,
    /// an extended section given without keys, no `[mdworkbench]` the
    /// ini did not have (unless the run was extended).
    #[test]
    fn values_read_back_as_the_same_run() {
        let text = "[global]\ndatadir = /x\n[mdtest-hard-read]\nrun = FALSE\n\
            [ior-hard-write]\nAPI = POSIX\n[ior-rnd4K]\n[find-easy]\nnproc = \n";
        let ini = Ini::parse(text, "t.ini").unwrap();
        let out = values(&ini, false);
        assert!(out.starts_with(CONFIG_HEADER), "{out}");
        assert!(!out.contains("[mdworkbench]"), "{out}");
        let again = Ini::parse(&out, "config.ini").unwrap();
        for (sec, key, value) in ini.entries() {
            assert_eq!(again.get(sec, key), Some(value), "[{sec}] {key}: {out}");
        }
        let cfg = |i: &Ini| crate::Config::from_ini(i, "t".into()).unwrap();
        assert_eq!(cfg(&again).run, cfg(&ini).run);
        assert_eq!(cfg(&again).extended, cfg(&ini).extended);
        assert!(values(&ini, true).contains("[mdworkbench]\n"));
    }

    #[test]
    fn list_is_an_ini_that_parses() {
        let text = list();
        let ini = Ini::parse(&text, "list").unwrap();
        assert_eq!(ini.get("debug", "stonewall-time"), Some("300"));
        assert_eq!(ini.get("ior-easy", "transferSize"), Some("2m"));
    }
}
