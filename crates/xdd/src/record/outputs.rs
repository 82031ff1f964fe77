//! Every file a run will write, named with the option that asked for it,
//! and a check that each can be written, made before any target is
//! opened: a typo in `-output` must not cost a long run its results.

use crate::e2e::opts::Role;
use crate::error::UsageError;
use crate::parse::config::Config;
use std::path::Path;

/// (option, path) of every file the run's options will write.
pub fn planned(cfg: &Config) -> Vec<(&'static str, String)> {
    let g = &cfg.global;
    let mut out: Vec<(&'static str, String)> = Vec::new();
    let mut add = |opt, p: &Option<String>| {
        if let Some(p) = p {
            out.push((opt, p.clone()));
        }
    };
    add("output", &g.output);
    add("csvout", &g.csvout);
    add("combinedout", &g.combinedout);
    add("errout", &g.errout);
    add("json", &g.json);
    for (i, t) in cfg.targets.iter().enumerate() {
        add(
            "seek",
            &t.seek
                .save
                .as_ref()
                .map(|p| crate::plan::seek::save_file_name(p, i)),
        );
        let ts = &t.timestamps;
        if ts.enabled {
            add(
                "timestamps",
                &ts.output.as_ref().map(|p| ts_file(p, i, "csv")),
            );
            add(
                "timestamps",
                &ts.dump.as_ref().map(|p| ts_file(p, i, "bin")),
            );
        }
        if g.heartbeat.interval_s > 0.0 {
            add(
                "heartbeat",
                &g.heartbeat.output.as_ref().map(|p| heartbeat_file(p, i)),
            );
        }
    }
    out
}

/// (option, path) of the files a destination's restart monitor writes:
/// for each destination target that keeps a record (`-restart`), the
/// record and the temporary name it is rewritten under (`NAME.tmp`).
/// Not probed here (the resume checks the record where it reads it),
/// but none may be a target's or an output's file: the record replaced
/// the copy when `-restart file` named the destination.
pub fn records(cfg: &Config) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let keeps = |t: &&crate::parse::config::TargetOpts| {
        t.e2e.role() == Some(Role::Destination) && t.restart.monitored()
    };
    for t in cfg.targets.iter().filter(keeps) {
        let file = t.restart.file_for(&t.path);
        let tmp = crate::record::restart::tmp_path(Path::new(&file));
        out.push(("restart", file));
        out.push(("restart", tmp.display().to_string()));
    }
    out
}

/// The time stamp file of target `i` (`-ts output` / `-ts dump` prefix).
pub fn ts_file(prefix: &str, i: usize, ext: &str) -> String {
    format!("{prefix}.target.{i:04}.{ext}")
}

/// The heartbeat file of target `i` (`-heartbeat output` prefix).
pub fn heartbeat_file(prefix: &str, i: usize) -> String {
    format!("{prefix}.T{i:04}.csv")
}

/// Fails (naming the option) when one of the planned outputs cannot be
/// written. An existing file is opened for append, so its contents stay;
/// for a new one, its directory takes a probe file of a name of its own
/// (random, O_EXCL), never the output's name: runs started together,
/// appending to one `-csvout`, met on that name (`File exists`), and one
/// could remove the file another had just made.
pub fn check(cfg: &Config) -> Result<(), UsageError> {
    for (opt, path) in planned(cfg) {
        iolab_output::check_file(&format!("-{opt}"), Path::new(&path))
            .map_err(|e| UsageError::new(opt, format!("cannot write '{path}': {}", e.why)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse, Parsed};

    fn cfg(line: &str) -> Config {
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        match parse(&args) {
            Ok(Parsed::Run(c)) => *c,
            other => panic!("{:?}", other.err()),
        }
    }

    #[test]
    fn a_missing_directory_names_the_option() {
        let c = cfg("-op read -target null -numreqs 1 -csvout /nonexistent-dir/x.csv");
        let e = check(&c).unwrap_err();
        assert_eq!(e.option, "csvout");
        let c =
            cfg("-op read -targets 2 null null -numreqs 1 -hb 1 -hb output /nonexistent-dir/hb");
        assert_eq!(planned(&c).len(), 2);
        assert_eq!(check(&c).unwrap_err().option, "heartbeat");
    }

    /// Each destination that keeps a restart record lists it and its
    /// temporary name; a source, or a destination without `-restart`
    /// (or with only `-restart offset`), keeps none.
    #[test]
    fn destinations_with_a_restart_record_list_it_and_its_temporary_name() {
        let e2e = "-e2e destination 127.0.0.1:1";
        let c = cfg(
            "-op write -targets 2 a b -numreqs 1 -e2e target 0 destination 127.0.0.1:1 -e2e target 1 destination 127.0.0.1:9 -e2e isdestination -restart enable -restart target 1 file r",
        );
        let names: Vec<String> = records(&c).into_iter().map(|(_, p)| p).collect();
        assert_eq!(names, ["a.restart", "a.restart.tmp", "r", "r.tmp"]);
        for line in [
            format!("-op read -target a -numreqs 1 {e2e} -e2e issource -restart enable"),
            format!("-op write -target a -numreqs 1 {e2e} -e2e isdestination"),
            format!("-op write -target a -numreqs 1 {e2e} -e2e isdestination -restart offset 0"),
        ] {
            assert!(records(&cfg(&line)).is_empty(), "{line}");
        }
    }

    /// The check never takes the output's own name (runs started
    /// together met there, `File exists`): a dangling link at it, which
    /// the write replaces, is no reason to refuse the run, and nothing
    /// is left beside it.
    #[test]
    fn the_check_makes_nothing_at_the_outputs_name() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("x.csv");
        std::os::unix::fs::symlink(dir.path().join("gone"), &csv).unwrap();
        let c = cfg(&format!(
            "-op read -target null -numreqs 1 -csvout {}",
            csv.display()
        ));
        check(&c).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["x.csv"]);
        assert!(csv.is_symlink());
    }
}
