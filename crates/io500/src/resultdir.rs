//! The files a run writes into its resultdir, and whether files of
//! those names that are there already are an earlier iolab io500 run's
//! (which a rerun into the same resultdir replaces, as the io500 app
//! does) or anything else (a user's notes, the app's own results, a
//! link), which the run refuses to write over.

use crate::ini::CONFIG_HEADER;
use std::path::{Path, PathBuf};

/// `result_summary.txt`: the `[RESULT]` and `[SCORE ]` lines.
pub const SUMMARY: &str = "result_summary.txt";
/// `result.txt`: the ini as comments, then each phase's figures.
pub const RESULT_TXT: &str = "result.txt";
/// `result.json`: iolab's results envelope.
pub const RESULT_JSON: &str = "result.json";
/// `config-orig.ini`: the ini as given.
pub const CONFIG_ORIG: &str = "config-orig.ini";
/// `config.ini`: every key with the value the run used.
pub const CONFIG: &str = "config.ini";

/// Every file a run writes into its resultdir.
pub const RESULT_FILES: [&str; 5] = [SUMMARY, RESULT_TXT, RESULT_JSON, CONFIG_ORIG, CONFIG];

/// The largest result file read to tell whose it is.
const MAX_READ_BYTES: u64 = 64 << 20;

/// `result.txt`'s opening: the ini of the run, each line as a comment,
/// then its `[run]` block.
pub fn ini_as_comments(ini_text: &str) -> String {
    let mut s = String::from("; the ini file of this run\n");
    for l in ini_text.lines() {
        s.push_str(&format!("; {l}\n"));
    }
    s.push_str("\n[run]\n");
    s
}

/// A file of a result file's name in the resultdir that the run would
/// write over and that iolab io500 did not write.
#[derive(Debug, thiserror::Error)]
#[error("resultdir {}: {} is there and was not written by iolab io500 ({why}); a run writes over nothing it did not make: move it away, or name another resultdir (or set timestamp-resultdir = TRUE)", resultdir.display(), file.display())]
pub struct NotOurs {
    /// The resultdir.
    pub resultdir: PathBuf,
    /// The file.
    pub file: PathBuf,
    /// What tells it apart from a run's.
    pub why: String,
}

/// Checks the files the run will write in `resultdir`: each that is
/// there must be a regular file of an earlier iolab io500 run, which the
/// run then replaces; anything else is refused, naming it.
pub fn check_result_files(resultdir: &Path) -> Result<(), NotOurs> {
    let text = |name: &str| read(&resultdir.join(name));
    let txt = text(RESULT_TXT);
    for name in RESULT_FILES {
        let why = match (name, text(name)) {
            (_, Ok(None)) => continue,
            (_, Err(why)) => why,
            (SUMMARY, Ok(Some(t))) => summary(&t),
            (RESULT_TXT, Ok(Some(t))) => result_txt(&t),
            (RESULT_JSON, Ok(Some(t))) => result_json(&t),
            (CONFIG, Ok(Some(t))) => config(&t),
            (_, Ok(Some(t))) => config_orig(&t, &txt),
        };
        if !why.is_empty() {
            return Err(NotOurs {
                resultdir: resultdir.to_path_buf(),
                file: resultdir.join(name),
                why,
            });
        }
    }
    Ok(())
}

/// The text of `path`: None when there is nothing of that name; why it
/// is not a run's when it is not a regular file of text (a link is not
/// followed).
fn read(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot look at it: {e}")),
    };
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(format!("larger than {MAX_READ_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "not text".into())
}

/// "" when every line is a result or score line, as a run writes them.
fn summary(t: &str) -> String {
    let tags = ["[RESULT]", "[      ]", "[SCORE ]", "[SCOREX]"];
    let ours = !t.is_empty() && t.lines().all(|l| tags.iter().any(|g| l.starts_with(g)));
    why(ours, "lines other than [RESULT] and [SCORE ] lines")
}

fn result_txt(t: &str) -> String {
    let ours = t.starts_with("; the ini file of this run\n") && t.contains("\n[SCORE]\n");
    why(ours, "not iolab's result.txt")
}

fn result_json(t: &str) -> String {
    let schema = serde_json::from_str::<serde_json::Value>(t)
        .ok()
        .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(String::from));
    why(
        schema.as_deref() == Some(crate::results::SCHEMA),
        "not an iolab io500 results envelope",
    )
}

fn config(t: &str) -> String {
    why(
        t.lines().next() == Some(CONFIG_HEADER),
        "no iolab io500 header line",
    )
}

/// config-orig.ini is the ini as given: a run's when iolab's result.txt
/// beside it opens with that same ini.
fn config_orig(t: &str, txt: &Result<Option<String>, String>) -> String {
    let ours = match txt {
        Ok(Some(txt)) => result_txt(txt).is_empty() && txt.starts_with(&ini_as_comments(t)),
        _ => false,
    };
    why(ours, "not the ini of an iolab io500 result.txt beside it")
}

fn why(ours: bool, not: &str) -> String {
    match ours {
        true => String::new(),
        false => not.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_s_files_are_told_from_others() {
        let ini = "[global]\ndatadir = /x\n";
        let txt = format!("{}datadir = /x\n\n[SCORE]\nBW = 0\n", ini_as_comments(ini));
        assert!(result_txt(&txt).is_empty());
        assert!(config_orig(ini, &Ok(Some(txt.clone()))).is_empty());
        assert!(!config_orig("[global]\n", &Ok(Some(txt))).is_empty());
        assert!(!config_orig(ini, &Ok(None)).is_empty());
        assert!(!result_txt("my notes\n").is_empty());
        assert!(summary("[RESULT] x\n[SCORE ] y\n").is_empty());
        assert!(!summary("").is_empty() && !summary("[RESULT] x\nnotes\n").is_empty());
        assert!(result_json(r#"{"schema": "iolab.io500/1", "envelope": 1}"#).is_empty());
        assert!(!result_json(r#"{"schema": "iolab.mdtest/1"}"#).is_empty());
        assert!(config(&format!("{CONFIG_HEADER}\n[global]\n")).is_empty());
        assert!(!config("[global]\n").is_empty());
    }
}
