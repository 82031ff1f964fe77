//! The collector configuration: the kit's config.sh variables (read as
//! they are), the same keys in TOML, or the short `local,1s` form a
//! benchmark's `--stats` takes. Everything is validated here, before any
//! collector starts.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One statistic a collector can record. The first eight are the kit's;
/// the last five are what any Linux node has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    /// CPU, memory, paging and swapping totals (/proc/stat, /proc/vmstat).
    Vmstat,
    /// Lustre OST and MDT RPC service statistics (ptlrpc `stats`).
    Service,
    /// OST bulk read/write histograms (`brw_stats`).
    Brw,
    /// SCSI disk I/O statistics (`sd_iostats`, a Lustre kernel patch).
    Sdio,
    /// ldiskfs block allocator statistics (`mb_stats`).
    Mballoc,
    /// Lustre target operation statistics (obdfilter `stats`, mdt `md_stats`).
    Io,
    /// ldiskfs/ext4 journal statistics (jbd2 `info`).
    Jbd,
    /// Lustre client request statistics (osc, mdc and llite `stats`).
    Client,
    /// Block device counters, one row per device (/proc/diskstats).
    Disk,
    /// Memory figures (/proc/meminfo).
    Meminfo,
    /// Network interface counters (/proc/net/dev).
    Net,
    /// CPU time per core (/proc/stat).
    Cpu,
    /// Space and inodes of the configured paths (statfs).
    Statfs,
}

impl Stat {
    /// Every statistic, in the order files and tables list them.
    pub const ALL: [Stat; 13] = [
        Stat::Vmstat,
        Stat::Service,
        Stat::Brw,
        Stat::Sdio,
        Stat::Mballoc,
        Stat::Io,
        Stat::Jbd,
        Stat::Client,
        Stat::Disk,
        Stat::Meminfo,
        Stat::Net,
        Stat::Cpu,
        Stat::Statfs,
    ];

    /// The statistics every Linux node has (the `local` short form).
    pub const LINUX: [Stat; 6] = [
        Stat::Vmstat,
        Stat::Disk,
        Stat::Meminfo,
        Stat::Net,
        Stat::Cpu,
        Stat::Statfs,
    ];

    /// The name used in file names and CSV names (`disk`).
    pub fn name(self) -> &'static str {
        match self {
            Stat::Vmstat => "vmstat",
            Stat::Service => "service",
            Stat::Brw => "brw",
            Stat::Sdio => "sdio",
            Stat::Mballoc => "mballoc",
            Stat::Io => "io",
            Stat::Jbd => "jbd",
            Stat::Client => "client",
            Stat::Disk => "disk",
            Stat::Meminfo => "meminfo",
            Stat::Net => "net",
            Stat::Cpu => "cpu",
            Stat::Statfs => "statfs",
        }
    }

    /// The statistic a file or CSV name stands for.
    pub fn from_name(name: &str) -> Option<Stat> {
        Stat::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The config.sh variable that sets its interval (`DISK_INTERVAL`).
    pub fn variable(self) -> String {
        format!("{}_INTERVAL", self.name().to_ascii_uppercase())
    }
}

/// The longest interval accepted, in seconds: a day. A longer one would
/// only ever record the start and stop samples, which 0 already asks for.
pub const MAX_INTERVAL_S: u64 = 86_400;

/// What one node's collector records: handed to the collector as JSON,
/// so a remote node needs no config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// Seconds between samples per statistic; 0 = at start and stop only.
    /// A statistic not listed is not collected.
    pub intervals: BTreeMap<Stat, u64>,
    /// Mounted paths whose statfs figures are recorded.
    pub statfs_paths: Vec<PathBuf>,
}

impl Spec {
    /// Every Linux statistic every `interval_s` seconds; statfs only
    /// when `paths` names some.
    pub fn local(interval_s: u64, paths: Vec<PathBuf>) -> Spec {
        Spec {
            intervals: Stat::LINUX
                .iter()
                .filter(|s| **s != Stat::Statfs || !paths.is_empty())
                .map(|s| (*s, interval_s))
                .collect(),
            statfs_paths: paths,
        }
    }

    /// Checks a spec that came as JSON (`start-node --spec`), where the
    /// config's own checks did not run: every interval at most
    /// [`MAX_INTERVAL_S`].
    pub fn check(&self, source: &str) -> Result<(), ConfigError> {
        for (stat, secs) in &self.intervals {
            interval_value(source, &stat.variable(), &secs.to_string())?;
        }
        Ok(())
    }
}

/// A whole configuration: what to record, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// What each collector records.
    pub spec: Spec,
    /// The kit's node list (`TARGETS`, which its gather script walks);
    /// with the other lists, all empty means "this node only, no remote
    /// shell".
    #[serde(default)]
    pub targets: Vec<String>,
    /// MDS nodes.
    pub mds_list: Vec<String>,
    /// OSS nodes.
    pub ost_list: Vec<String>,
    /// Client nodes.
    pub client_list: Vec<String>,
    /// Directory on each node that holds the collector's files (`TMP`).
    pub tmp: PathBuf,
    /// The remote shell (`RSH`, else the kit's `DSH` unless it is the
    /// kit's plain `ssh`); the command line comes first.
    pub rsh: Option<String>,
    /// The kit's `DSH` as the file set it.
    #[serde(default)]
    pub dsh: Option<String>,
    /// The iolab binary on the nodes (`IOLAB`); default: this binary's path.
    pub iolab: Option<PathBuf>,
    /// Variables accepted for the kit's sake but not used (`SCRIPT`).
    pub ignored: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            spec: Spec {
                intervals: BTreeMap::new(),
                statfs_paths: Vec::new(),
            },
            targets: Vec::new(),
            mds_list: Vec::new(),
            ost_list: Vec::new(),
            client_list: Vec::new(),
            tmp: PathBuf::from("/tmp"),
            rsh: None,
            dsh: None,
            iolab: None,
            ignored: Vec::new(),
        }
    }
}

impl Config {
    /// Every node of the lists, each once, in list order (a host that is
    /// both MDS and client gets one collector).
    pub fn nodes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in self
            .targets
            .iter()
            .chain(&self.mds_list)
            .chain(&self.ost_list)
            .chain(&self.client_list)
        {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
        out
    }

    /// True when no node list is given: collect on this node directly.
    pub fn is_local(&self) -> bool {
        self.nodes().is_empty()
    }
}

/// A configuration that cannot be used; the message names the variable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the stats config {path}: {why}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// A TOML configuration that is not TOML: the reader's message, on
    /// its lines (the file's line quoted, a caret under the column).
    #[error("{file}: {why}")]
    Toml {
        /// The file.
        file: String,
        /// The TOML reader's message.
        why: String,
    },
    /// A line that is not `NAME=value`.
    #[error("{file} line {line}: `{text}` is not a NAME=value assignment")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// A line the built-in reader (used only without bash) cannot read
    /// as bash would.
    #[error("{file} line {line}: `{text}` needs bash to be read ($(...), `...` or ${{NAME:-...}}), and there is no bash here; write the value out")]
    NeedsShell {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// Bash refused the file (its message names the line).
    #[error("{file}: bash cannot read it: {why}")]
    Shell {
        /// The file.
        file: String,
        /// Bash's complaint.
        why: String,
    },
    /// A variable that looks like one of the collector's, misspelt.
    #[error("{file}: unknown variable {name} (known: the *_INTERVAL variables, TARGETS, MDS_LIST, OST_LIST, CLIENT_LIST, TMP, STATFS_PATHS, RSH, DSH, IOLAB and the kit's other variables, which iolab accepts and does not need: {})", KIT_UNUSED.join(", "))]
    Unknown {
        /// The file.
        file: String,
        /// The variable.
        name: String,
    },
    /// A value out of range or of the wrong form.
    #[error("{file}: {name}={value}: {why}")]
    Value {
        /// The file.
        file: String,
        /// The variable.
        name: String,
        /// What was given.
        value: String,
        /// What is accepted.
        why: String,
    },
}

/// Reads a configuration: `local` or `local,Ns` (every Linux statistic
/// every N seconds on this node), a `.toml` file, or else the kit's
/// config.sh.
pub fn load(arg: &str) -> Result<Config, ConfigError> {
    if let Some(rest) = arg.strip_prefix("local") {
        return parse_local(arg, rest);
    }
    let path = Path::new(arg);
    let text =
        iolab_core::input::read_text(path, iolab_core::input::TEXT_MAX_BYTES).map_err(|e| {
            ConfigError::Read {
                path: arg.to_string(),
                why: e.to_string(),
            }
        })?;
    let cfg = if path.extension().is_some_and(|e| e == "toml") {
        parse_toml(arg, &text)?
    } else {
        read_sh(arg, &text)?
    };
    check(arg, &cfg)?;
    Ok(cfg)
}

/// What no single variable shows: a config that would record nothing,
/// or statfs with no path to ask.
pub fn check(file: &str, cfg: &Config) -> Result<(), ConfigError> {
    let bad = |name: &str, why: &str| ConfigError::Value {
        file: file.into(),
        name: name.into(),
        value: String::new(),
        why: why.into(),
    };
    if cfg.spec.intervals.is_empty() {
        return Err(bad(
            "*_INTERVAL",
            "none is set, so nothing would be collected (set e.g. VMSTAT_INTERVAL=1)",
        ));
    }
    if cfg.spec.intervals.contains_key(&Stat::Statfs) && cfg.spec.statfs_paths.is_empty() {
        return Err(bad(
            "STATFS_INTERVAL",
            "set without STATFS_PATHS: name the mounted paths to ask",
        ));
    }
    Ok(())
}

/// `local`, `local,1s`, `local,0`: the short form of `--stats`.
fn parse_local(arg: &str, rest: &str) -> Result<Config, ConfigError> {
    let interval = match rest {
        "" => "1",
        r if r.starts_with(',') => r[1..].trim_end_matches('s'),
        _ => {
            return Err(ConfigError::Value {
                file: arg.into(),
                name: "local".into(),
                value: arg.into(),
                why: "write local or local,Ns (N seconds, 0 = start and stop only)".into(),
            })
        }
    };
    let mut cfg = Config::default();
    // Named by what was given (`local,x`): the benchmarks' hook adds
    // `--stats: `, `iolab stats` its command.
    let secs = interval_value(arg, "local", interval)?;
    cfg.spec = Spec::local(secs, Vec::new());
    Ok(cfg)
}

/// Variables the kit's stats-collect scripts read (config.sh,
/// iokit-config, gather_stats_everywhere.sh, lstats.sh) that change how
/// the kit runs, not what it collects, and that iolab has no use for:
/// accepted and left unused. SCRIPT and PREFIX, OUTPREFIX, STIMEPREFIX
/// (the collector script and where it keeps its files: iolab's is
/// itself, in TMP/iolab-stats/NODE), DCP, TAR, UNTAR, AWK, XARGS (the
/// tools it runs: iolab copies nothing and writes its own tarballs),
/// USER (a login prefixed to each node for ssh and scp: give a login in
/// RSH), PRINT_INFO_MSGS, PRINT_DEBUG_MSGS (its chatter), and
/// ANALYSE_INTERVAL, BRW_ANALYSE, VMSTATE_ANALYSE (set by the kit's
/// config.sh for an analysis no script of it reads).
pub const KIT_UNUSED: [&str; 15] = [
    "SCRIPT",
    "PREFIX",
    "OUTPREFIX",
    "STIMEPREFIX",
    "DCP",
    "TAR",
    "UNTAR",
    "AWK",
    "XARGS",
    "USER",
    "PRINT_INFO_MSGS",
    "PRINT_DEBUG_MSGS",
    "ANALYSE_INTERVAL",
    "BRW_ANALYSE",
    "VMSTATE_ANALYSE",
];

/// Every variable a config.sh may set.
pub fn known_variables() -> Vec<String> {
    let mut v: Vec<String> = Stat::ALL.iter().map(|s| s.variable()).collect();
    v.extend(
        [
            "TARGETS",
            "MDS_LIST",
            "OST_LIST",
            "CLIENT_LIST",
            "TMP",
            "STATFS_PATHS",
            "RSH",
            "DSH",
            "IOLAB",
        ]
        .map(String::from),
    );
    v.extend(KIT_UNUSED.map(String::from));
    v
}

/// The variables kept out of the environment config.sh is sourced in, so
/// that only the file decides them: every known one but USER, which is
/// the login name in every environment and which a file may use
/// (`TMP=/tmp/$USER`).
fn sourced_variables() -> Vec<String> {
    known_variables()
        .into_iter()
        .filter(|v| v != "USER")
        .collect()
}

/// True when `name`, not a known variable, looks like a misspelling of
/// one: a `*_INTERVAL` iolab does not collect, or a name within two
/// edits of a known name of eight letters or more (`CLIENTS_LIST`,
/// `VMSTAT_INTERVALL`). A helper variable (`NODES`, the kit's
/// `PERCH_MDS_LIST`) is neither.
fn misspelt(name: &str, known: &[String]) -> bool {
    name.ends_with("_INTERVAL")
        || known
            .iter()
            .filter(|k| k.len() >= 8)
            .any(|k| edit_distance(name, k) <= 2)
}

/// Levenshtein distance between two ASCII names.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// What no single variable decides: the kit's DSH is the remote shell
/// when RSH is not set, unless it is the kit's plain `ssh` (iolab's own
/// default then applies: IOLAB_RSH, else ssh in batch mode, which never
/// waits for a password).
fn settle(cfg: &mut Config) {
    if cfg.rsh.is_none() {
        cfg.rsh = cfg.dsh.clone().filter(|d| d.trim() != "ssh");
    }
}

/// Reads the kit's config.sh as bash reads it ([`crate::shell`]); only
/// where there is no bash, with the built-in reader ([`parse_sh`]), which
/// refuses what it cannot read as bash would.
pub fn read_sh(file: &str, text: &str) -> Result<Config, ConfigError> {
    let known = known_variables();
    let vars = match crate::shell::source(file, &sourced_variables()) {
        Ok(crate::shell::Sourced::Vars(v)) => v,
        Ok(crate::shell::Sourced::NoBash) => return parse_sh(file, text),
        Ok(crate::shell::Sourced::Refused(why)) => {
            return Err(ConfigError::Shell {
                file: file.into(),
                why,
            })
        }
        Err(e) => {
            return Err(ConfigError::Read {
                path: file.into(),
                why: format!("cannot run bash to read it: {e}"),
            })
        }
    };
    let mut cfg = Config::default();
    for (name, value) in vars {
        if known.contains(&name) {
            set(&mut cfg, file, &name, &value)?;
        } else if misspelt(&name, &known) {
            // Looks like one of ours, misspelt: refused, not ignored.
            return Err(ConfigError::Unknown {
                file: file.into(),
                name,
            });
        } else {
            // A helper variable (NODES="n1 n2"; CLIENT_LIST="$NODES").
            cfg.ignored.push(name);
        }
    }
    settle(&mut cfg);
    Ok(cfg)
}

/// The built-in reader of the kit's config.sh, for machines without bash: `NAME=value` lines (optionally `export`ed,
/// values optionally quoted, `$NAME` of an earlier line expanded outside
/// single quotes), comments and blank lines. Anything else (`$(...)`,
/// backquotes, `${NAME:-default}`, `if`, ...) is refused, naming the
/// line, rather than guessed at.
pub fn parse_sh(file: &str, text: &str) -> Result<Config, ConfigError> {
    let mut cfg = Config::default();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim();
        let syntax = || ConfigError::Syntax {
            file: file.into(),
            line: i + 1,
            text: raw.trim().into(),
        };
        let (name, value) = line.split_once('=').ok_or_else(syntax)?;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(syntax());
        }
        let value = value.trim();
        let literal = value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'');
        if !literal && needs_shell(value) {
            return Err(ConfigError::NeedsShell {
                file: file.into(),
                line: i + 1,
                text: raw.trim().into(),
            });
        }
        let value = match literal {
            true => unquote(value),
            false => expand(&unquote(value), &seen),
        };
        set(&mut cfg, file, name, &value)?;
        seen.insert(name.to_string(), value);
    }
    settle(&mut cfg);
    Ok(cfg)
}

/// True when a value holds what only a shell can evaluate: a command
/// substitution or a `${...}` that is more than a name.
fn needs_shell(v: &str) -> bool {
    if v.contains("$(") || v.contains('`') {
        return true;
    }
    v.match_indices("${").any(|(at, _)| {
        let body = &v[at + 2..];
        match body.find('}') {
            Some(end) => !body[..end]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_'),
            None => true,
        }
    })
}

/// The line without a `#` comment (a `#` inside quotes is kept).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') => return &line[..i],
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

/// Removes one pair of surrounding quotes.
fn unquote(v: &str) -> String {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_string();
        }
    }
    v.to_string()
}

/// Replaces `$NAME` and `${NAME}` by earlier values (unknown names by
/// nothing, as the shell does).
fn expand(v: &str, seen: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            match b.find('}') {
                Some(end) => (&b[..end], &b[end + 1..]),
                None => (b, ""),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
        } else if let Some(val) = seen.get(name) {
            out.push_str(val);
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// Reads the TOML form: the same variables as config.sh, in lower case
/// (`disk_interval = 1`, `client_list = ["c1", "c2"]`).
pub fn parse_toml(file: &str, text: &str) -> Result<Config, ConfigError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Toml {
            file: file.into(),
            why: e.to_string().trim_end().to_string(),
        })?;
    let mut cfg = Config::default();
    for (key, value) in &table {
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::Array(items) => {
                let words: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect();
                words
                    .ok_or_else(|| ConfigError::Value {
                        file: file.into(),
                        name: key.clone(),
                        value: value.to_string(),
                        why: "a list must hold strings".into(),
                    })?
                    .join(" ")
            }
            other => other.to_string(),
        };
        set(&mut cfg, file, &key.to_ascii_uppercase(), &text)?;
    }
    settle(&mut cfg);
    Ok(cfg)
}

/// Applies one variable.
fn set(cfg: &mut Config, file: &str, name: &str, value: &str) -> Result<(), ConfigError> {
    let list = || {
        value
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    match name {
        "TARGETS" => cfg.targets = list(),
        "MDS_LIST" => cfg.mds_list = list(),
        "OST_LIST" => cfg.ost_list = list(),
        "CLIENT_LIST" => cfg.client_list = list(),
        "STATFS_PATHS" => cfg.spec.statfs_paths = list().into_iter().map(PathBuf::from).collect(),
        "TMP" => cfg.tmp = nonempty_path(file, name, value)?,
        "IOLAB" => cfg.iolab = Some(nonempty_path(file, name, value)?),
        "RSH" => cfg.rsh = Some(value.to_string()).filter(|v| !v.trim().is_empty()),
        "DSH" => cfg.dsh = Some(value.to_string()).filter(|v| !v.trim().is_empty()),
        _ if KIT_UNUSED.contains(&name) => cfg.ignored.push(name.to_string()),
        _ => {
            let stat = Stat::ALL
                .into_iter()
                .find(|s| s.variable() == name)
                .ok_or_else(|| ConfigError::Unknown {
                    file: file.into(),
                    name: name.into(),
                })?;
            if value.is_empty() {
                // The kit treats an empty interval as "not collected".
                cfg.spec.intervals.remove(&stat);
            } else {
                let secs = interval_value(file, name, value)?;
                cfg.spec.intervals.insert(stat, secs);
            }
        }
    }
    Ok(())
}

fn nonempty_path(file: &str, name: &str, value: &str) -> Result<PathBuf, ConfigError> {
    if value.is_empty() {
        return Err(ConfigError::Value {
            file: file.into(),
            name: name.into(),
            value: value.into(),
            why: "must name a path".into(),
        });
    }
    Ok(PathBuf::from(value))
}

/// An interval: whole seconds from 0 to [`MAX_INTERVAL_S`].
fn interval_value(file: &str, name: &str, value: &str) -> Result<u64, ConfigError> {
    let bad = |why: String| ConfigError::Value {
        file: file.into(),
        name: name.into(),
        value: value.into(),
        why,
    };
    if value.trim().starts_with('-') {
        return Err(bad(
            "an interval cannot be negative (0 = at start and stop only, n = every n seconds)"
                .into(),
        ));
    }
    let secs: u64 = value
        .trim()
        .parse()
        .map_err(|_| bad("an interval is a whole number of seconds".into()))?;
    if secs > MAX_INTERVAL_S {
        return Err(bad(format!(
            "at most {MAX_INTERVAL_S} seconds (a day); use 0 for start and stop only"
        )));
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIT: &str = r#"#!/bin/bash
# profiling intervals
VMSTAT_INTERVAL=0
SERVICE_INTERVAL=2   # every two seconds
export BRW_INTERVAL="5"
SDIO_INTERVAL=
NODES="n1 n2"
SCRIPT=/usr/bin/lstat.sh
"#;

    #[test]
    fn the_kits_variables_are_read_as_they_are() {
        let text = KIT.replace(
            "NODES=\"n1 n2\"",
            "CLIENT_LIST=\"n1 n2\"\nOST_LIST=${CLIENT_LIST},n3",
        );
        let cfg = parse_sh("config.sh", &text).unwrap();
        assert_eq!(cfg.spec.intervals.get(&Stat::Vmstat), Some(&0));
        assert_eq!(cfg.spec.intervals.get(&Stat::Service), Some(&2));
        assert_eq!(cfg.spec.intervals.get(&Stat::Brw), Some(&5));
        assert!(!cfg.spec.intervals.contains_key(&Stat::Sdio));
        assert_eq!(cfg.client_list, ["n1", "n2"]);
        assert_eq!(cfg.ost_list, ["n1", "n2", "n3"]);
        assert_eq!(cfg.nodes(), ["n1", "n2", "n3"]);
        assert_eq!(cfg.ignored, ["SCRIPT"]);
        assert!(!cfg.is_local());
    }

    #[test]
    fn targets_is_a_node_list_and_dsh_the_remote_shell() {
        let cfg = parse_sh(
            "c.sh",
            "TARGETS=\"n1 n2\"\nCLIENT_LIST=n2,n3\nDSH=\"pdsh-rsh\"\nDCP=scp\nUSER=\nANALYSE_INTERVAL=1\nVMSTAT_INTERVAL=1\n",
        )
        .unwrap();
        assert_eq!(cfg.nodes(), ["n1", "n2", "n3"]);
        assert_eq!(cfg.rsh.as_deref(), Some("pdsh-rsh"));
        assert_eq!(cfg.ignored, ["DCP", "USER", "ANALYSE_INTERVAL"]);
        // The kit's plain ssh leaves iolab's own default; RSH wins.
        let cfg = parse_sh("c.sh", "DSH=ssh\nVMSTAT_INTERVAL=1\n").unwrap();
        assert_eq!(cfg.rsh, None);
        let cfg = parse_toml("c.toml", "rsh = \"a\"\ndsh = \"b\"\n").unwrap();
        assert_eq!(cfg.rsh.as_deref(), Some("a"));
    }

    #[test]
    fn misspellings_are_told_from_helpers() {
        let known = known_variables();
        for bad in [
            "CLIENTS_LIST",
            "OSS_LIST",
            "VMSTAT_INTERVALL",
            "OSC_INTERVAL",
        ] {
            assert!(misspelt(bad, &known), "{bad}");
        }
        for helper in [
            "NODES",
            "PERCH_MDS_LIST",
            "PERCH_BIG_FS_OST_LIST",
            "MDS",
            "HOSTS",
        ] {
            assert!(!misspelt(helper, &known), "{helper}");
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn an_unknown_variable_is_named() {
        let e = parse_sh("c.sh", KIT).unwrap_err();
        assert!(e.to_string().contains("unknown variable NODES"), "{e}");
    }

    #[test]
    fn a_negative_or_odd_interval_is_named() {
        let e = parse_sh("c.sh", "DISK_INTERVAL=-1").unwrap_err();
        assert!(e.to_string().contains("DISK_INTERVAL=-1") && e.to_string().contains("negative"));
        let e = parse_sh("c.sh", "CPU_INTERVAL=1.5").unwrap_err();
        assert!(e.to_string().contains("CPU_INTERVAL"), "{e}");
        let e = parse_sh("c.sh", "NET_INTERVAL=100000").unwrap_err();
        assert!(e.to_string().contains("86400"), "{e}");
        let e = parse_sh("c.sh", "if true; then").unwrap_err();
        assert!(matches!(e, ConfigError::Syntax { line: 1, .. }), "{e}");
    }

    #[test]
    fn without_bash_what_needs_a_shell_is_refused_naming_the_line() {
        for (text, line) in [
            ("TMP=/tmp\nVMSTAT_INTERVAL=${VMSTAT_INTERVAL:-2}\n", 2),
            ("CLIENT_LIST=$(hostname)\n", 1),
            ("CLIENT_LIST=`hostname`\n", 1),
        ] {
            let e = parse_sh("c.sh", text).unwrap_err();
            assert!(
                matches!(e, ConfigError::NeedsShell { line: l, .. } if l == line),
                "{e}"
            );
        }
        // Single quotes keep `$HOME` as it is, as bash does.
        let cfg = parse_sh("c.sh", "CLIENT_LIST='$HOME'\nVMSTAT_INTERVAL=1\n").unwrap();
        assert_eq!(cfg.client_list, ["$HOME"]);
    }

    #[test]
    fn bash_reads_config_sh_as_the_kit_does() {
        let dir = std::env::temp_dir().join(format!("iolab-cfg-bash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("config.sh");
        std::fs::write(
            &f,
            "VMSTAT_INTERVAL=${VMSTAT_INTERVAL:-2}\nNODES=\"n1 n2\"\nCLIENT_LIST=\"$NODES $(echo n3)\"\nTMP=${TMP:-/var/tmp}\n",
        )
        .unwrap();
        let cfg = load(f.to_str().unwrap()).unwrap();
        assert_eq!(cfg.spec.intervals.get(&Stat::Vmstat), Some(&2));
        assert_eq!(cfg.client_list, ["n1", "n2", "n3"]);
        assert_eq!(cfg.tmp, PathBuf::from("/var/tmp"));
        assert_eq!(cfg.ignored, ["NODES"]);
        std::fs::write(&f, "VMSTAT_INTERVAL=1\nVMSTAT_INTERVALL=2\n").unwrap();
        let e = load(f.to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("VMSTAT_INTERVALL"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn toml_means_the_same() {
        let cfg = parse_toml(
            "c.toml",
            "disk_interval = 1\nvmstat_interval = 0\nclient_list = [\"a\", \"b\"]\ntmp = \"/var/tmp\"\nstatfs_paths = [\"/mnt\"]\n",
        )
        .unwrap();
        assert_eq!(cfg.spec.intervals.get(&Stat::Disk), Some(&1));
        assert_eq!(cfg.client_list, ["a", "b"]);
        assert_eq!(cfg.tmp, PathBuf::from("/var/tmp"));
        assert_eq!(cfg.spec.statfs_paths, [PathBuf::from("/mnt")]);
        let e = parse_toml("c.toml", "disk_interval = -3").unwrap_err();
        assert!(e.to_string().contains("DISK_INTERVAL"), "{e}");
        let e = parse_toml("c.toml", "bogus = 1").unwrap_err();
        assert!(e.to_string().contains("BOGUS"), "{e}");
        // Not TOML: the reader's message and its lines, not "line 0".
        let e = parse_toml("c.toml", "disk_interval = 1\nbogus=1 2\n").unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("c.toml: TOML parse error at line 2"),
            "{text}"
        );
        assert!(text.lines().any(|l| l == "2 | bogus=1 2"), "{text}");
    }

    #[test]
    fn the_short_form_is_local() {
        let cfg = load("local,2s").unwrap();
        assert!(cfg.is_local());
        assert_eq!(cfg.spec.intervals.get(&Stat::Disk), Some(&2));
        assert_eq!(
            load("local").unwrap().spec.intervals.get(&Stat::Cpu),
            Some(&1)
        );
        assert!(load("local,-1").is_err());
        assert!(load("localhost").is_err());
        assert!(!load("local")
            .unwrap()
            .spec
            .intervals
            .contains_key(&Stat::Statfs));
    }

    #[test]
    fn a_config_that_records_nothing_or_statfs_without_paths_is_refused() {
        let cfg = parse_sh("c.sh", "TMP=/tmp\n").unwrap();
        let e = check("c.sh", &cfg).unwrap_err();
        assert!(e.to_string().contains("nothing would be collected"), "{e}");
        let cfg = parse_sh("c.sh", "STATFS_INTERVAL=1\n").unwrap();
        let e = check("c.sh", &cfg).unwrap_err();
        assert!(e.to_string().contains("STATFS_PATHS"), "{e}");
        let cfg = parse_sh("c.sh", "STATFS_INTERVAL=1\nSTATFS_PATHS=/\n").unwrap();
        assert!(check("c.sh", &cfg).is_ok());
    }
}
