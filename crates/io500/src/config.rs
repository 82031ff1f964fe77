//! The validated configuration of a run: every value of the ini read
//! into its type and checked, before anything is created.

use crate::ini::{parse_bool, Ini, IniError};
use crate::phase::Phase;
use std::path::PathBuf;

/// ior-hard's transfer (and block) size, fixed by the IO500 rules.
pub const HARD_TRANSFER: u64 = 47008;
/// mdtest-hard's file size, fixed by the IO500 rules.
pub const HARD_FILE_BYTES: u64 = 3901;
/// Write phases of a valid run last at least this long (seconds).
pub const MIN_WRITE_S: u64 = 300;
/// The same under the student cluster competition rules (`scc`).
pub const MIN_WRITE_S_SCC: u64 = 30;
/// Upper bound of `stonewall-time`, so that it converts to nanoseconds.
pub const MAX_STONEWALL_S: u64 = 100_000_000;

/// ior-easy's parameters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IorEasy {
    /// Bytes per transfer.
    pub transfer_bytes: u64,
    /// Bytes each task writes (before the stonewall).
    pub block_bytes: u64,
    /// One file per task (else one shared file, a block per task).
    pub file_per_proc: bool,
    /// A directory per task for its file.
    pub unique_dir: bool,
}

/// `[mdworkbench]`'s parameters.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mdworkbench {
    /// Objects per set and per benchmark iteration (`precreatePerSet`,
    /// `filesPerProc`), when the ini gives them; else sized at run time
    /// from mdtest-easy-write's rate, as the app.
    pub sizing: Option<(u64, u64)>,
    /// `waitingTime`: after each operation, wait this share of its time.
    pub waiting_factor: f64,
}

/// A validated io500 configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Config {
    /// The ini file it was read from.
    pub ini_file: PathBuf,
    /// `[global] datadir` as given (a timestamp is appended at run time
    /// when `timestamp_datadir`).
    pub datadir: PathBuf,
    /// Append the start time to datadir.
    pub timestamp_datadir: bool,
    /// `[global] resultdir` as given.
    pub resultdir: PathBuf,
    /// Append the start time to resultdir.
    pub timestamp_resultdir: bool,
    /// Drop the page cache before each phase.
    pub drop_caches: bool,
    /// Verbosity of the output.
    pub verbosity: u64,
    /// Student cluster competition rules.
    pub scc: bool,
    /// Seconds of each write phase before the stonewall.
    pub stonewall_s: u64,
    /// `[debug] pause-dir`: before each phase, wait while it holds a
    /// file named after the phase.
    pub pause_dir: Option<PathBuf>,
    /// ior-easy's parameters.
    pub ior_easy: IorEasy,
    /// ior-hard's segments.
    pub ior_hard_segments: u64,
    /// mdtest-easy's files per task.
    pub mdtest_easy_n: u64,
    /// mdtest-hard's files per task.
    pub mdtest_hard_n: u64,
    /// mdtest-hard's files per directory (-I), when set.
    pub mdtest_hard_files_per_dir: Option<u64>,
    /// The md-workbench phases' parameters.
    pub mdworkbench: Mdworkbench,
    /// Phases to run (the 12 scored ones, in order), false when an ini
    /// `run = FALSE` turned it off.
    pub run: Vec<(Phase, bool)>,
    /// Whether the timestamp file is made.
    pub run_timestamp: bool,
    /// Backend of each phase (`posix`), from its `API` keys or the global one.
    pub apis: Vec<(Phase, String)>,
    /// Extended sections found in the ini (run only in extended mode).
    pub extended: Vec<String>,
    /// Extended mode (`--mode=extended`): the extended phases iolab runs
    /// ([`Phase::EXTENDED`]) run too, and the `[SCOREX]` line is printed.
    pub extended_mode: bool,
    /// Extended phases iolab cannot run that are on (their `run` is not
    /// FALSE), by section: extended mode refuses them.
    pub not_runnable: Vec<String>,
    /// The mdtest phases' metadata engine: None for the sync engine, or
    /// the queue depth of `--engine uring` (the command line's, not the
    /// ini's: the io500 app has no such key).
    pub md_queue_depth: Option<u32>,
}

fn bad(msg: String) -> IniError {
    IniError(msg)
}

impl Config {
    /// Reads and checks the ini. `file` names it in messages.
    pub fn from_ini(ini: &Ini, file: PathBuf) -> Result<Config, IniError> {
        let text = |s: &str, k: &str| crate::ini::value_or_default(ini, s, k);
        let flag = |s: &str, k: &str| parse_bool(&text(s, k)).unwrap_or(false);
        let num = |s: &str, k: &str| text(s, k).parse::<u64>().unwrap_or(0);
        let size = |s: &str, k: &str| iolab_core::units::parse_size(&text(s, k)).unwrap_or(0);
        let ior_easy = IorEasy {
            transfer_bytes: size("ior-easy", "transferSize"),
            block_bytes: size("ior-easy", "blockSize"),
            file_per_proc: flag("ior-easy", "filePerProc"),
            unique_dir: flag("ior-easy", "uniqueDir"),
        };
        let mut run = Vec::new();
        let mut apis = Vec::new();
        for p in Phase::EXTENDED {
            let on = flag(p.base_section(), "run") && flag(p.name(), "run");
            run.push((p, on));
            apis.push((p, api_of(ini, p)?));
        }
        let cfg = Config {
            ini_file: file,
            datadir: PathBuf::from(text("global", "datadir")),
            timestamp_datadir: flag("global", "timestamp-datadir"),
            resultdir: PathBuf::from(text("global", "resultdir")),
            timestamp_resultdir: flag("global", "timestamp-resultdir"),
            drop_caches: flag("global", "drop-caches"),
            verbosity: num("global", "verbosity"),
            scc: flag("global", "scc"),
            stonewall_s: num("debug", "stonewall-time"),
            pause_dir: Some(text("debug", "pause-dir"))
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            ior_easy,
            ior_hard_segments: num("ior-hard", "segmentCount"),
            mdtest_easy_n: num("mdtest-easy", "n"),
            mdtest_hard_n: num("mdtest-hard", "n"),
            mdtest_hard_files_per_dir: ini
                .get("mdtest-hard", "files-per-dir")
                .and_then(|v| v.parse().ok())
                .filter(|&v| v > 0),
            mdworkbench: mdworkbench(ini)?,
            run,
            run_timestamp: flag("timestamp", "run"),
            apis,
            extended: ini
                .sections
                .iter()
                .filter(|s| {
                    crate::ini::EXTENDED_SECTIONS.contains(&s.as_str())
                        || crate::ini::RUNNABLE_EXTENDED.contains(&s.as_str())
                        || crate::ini::MDWB_SECTIONS.contains(&s.as_str())
                        || s.as_str() == "mdworkbench"
                })
                .cloned()
                .collect(),
            extended_mode: false,
            not_runnable: not_runnable(ini),
            md_queue_depth: None,
        };
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), IniError> {
        let e = &self.ior_easy;
        if e.transfer_bytes == 0 {
            return Err(bad(
                "[ior-easy] transferSize = 0: must be at least one byte".into(),
            ));
        }
        if e.block_bytes == 0 || !e.block_bytes.is_multiple_of(e.transfer_bytes) {
            return Err(bad(format!(
                "[ior-easy] blockSize = {}: must be a non-zero multiple of transferSize ({})",
                e.block_bytes, e.transfer_bytes
            )));
        }
        if self.stonewall_s > MAX_STONEWALL_S {
            return Err(bad(format!(
                "[debug] stonewall-time = {}: above the limit of {MAX_STONEWALL_S} s",
                self.stonewall_s
            )));
        }
        if self.datadir.as_os_str().is_empty() {
            return Err(bad("[global] datadir is empty".into()));
        }
        if self.resultdir.as_os_str().is_empty() {
            return Err(bad("[global] resultdir is empty".into()));
        }
        Ok(())
    }

    /// Switches extended mode on (`--mode=extended`); refuses, naming
    /// the section, an extended phase iolab cannot run that is on.
    pub fn extended(mut self) -> Result<Config, IniError> {
        if let Some(s) = self.not_runnable.first() {
            return Err(bad(format!(
                "[{s}]: iolab io500 cannot run this extended phase; set run = FALSE in [{s}] to run the other extended phases (md-workbench, find-easy, find-hard, ior-rnd4K-easy-read)"
            )));
        }
        self.extended_mode = true;
        Ok(self)
    }

    /// The phases of this run, in order.
    pub fn phases(&self) -> &'static [Phase] {
        Phase::order(self.extended_mode)
    }

    /// Whether `phase` runs.
    pub fn runs(&self, phase: Phase) -> bool {
        self.run.iter().any(|&(p, on)| p == phase && on)
    }

    /// Why `phase` will not run, as far as the ini tells before the run
    /// (the run may skip more: a phase whose input phase failed): its
    /// `run = FALSE`, a phase whose output it works on that does not
    /// run, or find without the timestamp file.
    pub fn not_run(&self, phase: Phase) -> Option<String> {
        if !self.runs(phase) {
            return Some("run = FALSE in the ini".into());
        }
        if let Some(dep) = phase.depends_on().filter(|&d| self.not_run(d).is_some()) {
            return Some(format!(
                "it works on what {} writes, which does not run",
                dep.name()
            ));
        }
        if matches!(phase, Phase::Find | Phase::FindHard) && !self.run_timestamp {
            return Some("the timestamp file is not made ([timestamp] run = FALSE)".into());
        }
        None
    }

    /// The backend name of `phase`.
    pub fn api(&self, phase: Phase) -> &str {
        self.apis
            .iter()
            .find(|(p, _)| *p == phase)
            .map(|(_, a)| a.as_str())
            .unwrap_or("posix")
    }

    /// Minimum write-phase length of a valid run, seconds.
    pub fn min_write_s(&self) -> u64 {
        match self.scc {
            true => MIN_WRITE_S_SCC,
            false => MIN_WRITE_S,
        }
    }

    /// Checks what depends on the task count: sizes that must fit in 64
    /// bits and buffers that must fit in memory.
    pub fn check_tasks(&self, tasks: u64, tasks_per_process: u64) -> Result<(), IniError> {
        let hard = self
            .ior_hard_segments
            .checked_mul(tasks)
            .and_then(|v| v.checked_mul(HARD_TRANSFER));
        if hard.is_none() {
            return Err(bad(format!(
                "[ior-hard] segmentCount = {}: the shared file of {tasks} tasks would exceed 2^64 bytes",
                self.ior_hard_segments
            )));
        }
        if !self.ior_easy.file_per_proc && self.ior_easy.block_bytes.checked_mul(tasks).is_none() {
            return Err(bad(format!(
                "[ior-easy] blockSize = {}: the shared file of {tasks} tasks would exceed 2^64 bytes",
                self.ior_easy.block_bytes
            )));
        }
        if let Some((p, i)) = self.mdworkbench.sizing {
            let objects = p
                .checked_add(i.saturating_mul(crate::mdworkbench::ITERATIONS))
                .and_then(|n| n.checked_mul(crate::mdworkbench::SETS))
                .and_then(|n| n.checked_mul(tasks));
            if objects.is_none() {
                return Err(bad(format!(
                    "[mdworkbench] precreatePerSet = {p}: the objects of {tasks} tasks would exceed 2^64"
                )));
            }
        }
        let memory = iolab_core::env::host_info().memory_bytes;
        let need = self
            .ior_easy
            .transfer_bytes
            .saturating_mul(tasks_per_process);
        if memory > 0 && need > memory {
            return Err(bad(format!(
                "[ior-easy] transferSize = {}: {tasks_per_process} tasks' buffers need {need} bytes, above this machine's {memory} bytes of memory",
                self.ior_easy.transfer_bytes
            )));
        }
        Ok(())
    }
}

/// The extended sections iolab cannot run whose phase is on: the
/// sections of other versions of the app, when given and their `run`
/// is not FALSE.
fn not_runnable(ini: &Ini) -> Vec<String> {
    let on = |s: &str| {
        ini.get(s, "run")
            .map(|v| parse_bool(v).unwrap_or(true))
            .unwrap_or(true)
    };
    crate::ini::EXTENDED_SECTIONS
        .iter()
        .filter(|s| ini.sections.iter().any(|x| x == *s) && on(s))
        .map(|s| s.to_string())
        .collect()
}

/// `[mdworkbench]`: `precreatePerSet` and `filesPerProc` both or
/// neither (as the app), at least 1, and no more objects per iteration
/// than a set holds (each iteration reads objects made before it).
fn mdworkbench(ini: &Ini) -> Result<Mdworkbench, IniError> {
    let num = |k: &str| {
        ini.get("mdworkbench", k)
            .and_then(|v| v.parse::<u64>().ok())
    };
    let waiting_factor = ini
        .get("mdworkbench", "waitingTime")
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    let sizing = match (num("precreatePerSet"), num("filesPerProc")) {
        (None, None) => None,
        (Some(p), Some(i)) => Some((p, i)),
        _ => {
            return Err(bad(
                "[mdworkbench]: set both precreatePerSet and filesPerProc, or neither (then they are sized from mdtest-easy-write's rate)".into(),
            ))
        }
    };
    if waiting_factor > crate::mdworkbench::MAX_WAITING_FACTOR {
        return Err(bad(format!(
            "[mdworkbench] waitingTime = {waiting_factor}: above the limit of {}",
            crate::mdworkbench::MAX_WAITING_FACTOR
        )));
    }
    if let Some((p, i)) = sizing {
        if p == 0 || i == 0 {
            return Err(bad(format!(
                "[mdworkbench] precreatePerSet = {p}, filesPerProc = {i}: both must be at least 1"
            )));
        }
        if i > p {
            return Err(bad(format!(
                "[mdworkbench] filesPerProc = {i}: above precreatePerSet = {p}; an iteration works on objects made before it, at most a set's worth"
            )));
        }
    }
    Ok(Mdworkbench {
        sizing,
        waiting_factor,
    })
}

/// The backend of a phase: its own `API`, its base section's, the global.
fn api_of(ini: &Ini, p: Phase) -> Result<String, IniError> {
    let (section, value) = [p.name(), p.base_section()]
        .into_iter()
        .find_map(|s| ini.get(s, "API").map(|v| (s, v)))
        .unwrap_or(("global", ini.get("global", "api").unwrap_or("POSIX")));
    let global = ini.get("global", "api").unwrap_or("POSIX");
    let name = match value.to_ascii_lowercase().as_str() {
        "posix" => "posix",
        "s3" => "s3",
        _ => {
            return Err(bad(format!(
                "[{section}] API = {value}: unknown or unsupported API for phase {} (iolab io500 runs POSIX or S3)",
                p.name()
            )))
        }
    };
    if !value.eq_ignore_ascii_case(global) {
        return Err(bad(format!(
            "[{section}] API = {value}: phase {} on another API than [global] api = {global} is not supported by iolab io500 (one backend per run)",
            p.name()
        )));
    }
    Ok(name.into())
}

/// What the running phases need from the backend, asked before anything
/// is created: a phase it cannot run is refused, naming the phase and
/// how to leave it out.
pub fn check_backend(cfg: &Config, be: &dyn iolab_backend::Backend) -> Result<(), IniError> {
    let caps = be.capabilities();
    let name = be.name();
    let refuse = |p: Phase, what: &str| {
        Err(bad(format!(
            "phase {}: the {name} backend cannot {what}; set run = FALSE in [{}] to run the other phases on it, or use another api",
            p.name(),
            p.base_section()
        )))
    };
    for &p in cfg.phases().iter().filter(|p| cfg.runs(**p)) {
        // IOR's files: a store of whole objects keeps one object per
        // transfer (iolab_ior::file), so a shared file runs there too.
        if matches!(p.base_section(), "ior-easy" | "ior-hard")
            && iolab_ior::file::Layout::of(&caps).is_err()
        {
            return refuse(
                p,
                "hold IOR's files (neither files written at any offset nor objects)",
            );
        }
        if matches!(p, Phase::Find | Phase::FindHard) && !caps.mtime {
            return refuse(p, "tell modification times, which find's -newer compares");
        }
    }
    if !caps.directories {
        return Err(bad(format!(
            "api: the {name} backend has no directories, which the IO500 layout needs"
        )));
    }
    check_md_engine(cfg, be)
}

/// `--engine uring`: the backend must have a metadata queue and this
/// machine must be able to make one (io_uring not disabled, its opcodes
/// there); what is missing is named, before anything runs.
fn check_md_engine(cfg: &Config, be: &dyn iolab_backend::Backend) -> Result<(), IniError> {
    let Some(qd) = cfg.md_queue_depth else {
        return Ok(());
    };
    if !be.capabilities().queued_metadata {
        return Err(bad(format!(
            "--engine uring: the {} backend cannot queue metadata operations; use --engine sync",
            be.name()
        )));
    }
    be.metadata_queue(qd, HARD_FILE_BYTES as usize)
        .map(drop)
        .map_err(|e| bad(format!("--engine uring: {e}; use --engine sync")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Result<Config, IniError> {
        Config::from_ini(&Ini::parse(text, "t.ini")?, "t.ini".into())
    }

    #[test]
    fn defaults_are_the_io500_app_s() {
        let c = cfg("").unwrap();
        assert_eq!(c.stonewall_s, 300);
        assert_eq!(c.ior_easy.transfer_bytes, 2 << 20);
        assert_eq!(c.ior_hard_segments, 10_000_000);
        assert!(c.run.iter().all(|&(_, on)| on));
        assert_eq!(c.api(Phase::Find), "posix");
    }

    #[test]
    fn refuses_bad_values_naming_them() {
        let e = cfg("[ior-easy]\ntransferSize = 3m\nblockSize = 4m\n")
            .unwrap_err()
            .0;
        assert!(e.contains("blockSize"), "{e}");
        let e = cfg("[mdtest-easy]\nAPI = S3\n").unwrap_err().0;
        assert!(e.contains("mdtest-easy-write") && e.contains("S3"), "{e}");
        let e = cfg("[global]\napi = DAOS\n").unwrap_err().0;
        assert!(e.contains("DAOS"), "{e}");
        let c = cfg("[global]\napi = S3\n").unwrap();
        assert_eq!(c.api(Phase::MdtestHardRead), "s3");
        let c = cfg("[ior-hard]\nsegmentCount = 18446744073709551615\n").unwrap();
        assert!(c.check_tasks(2, 2).unwrap_err().0.contains("segmentCount"));
    }

    #[test]
    fn run_false_turns_phases_off() {
        let c = cfg("[mdtest-hard]\nrun = FALSE\n[ior-easy-read]\nrun = FALSE\n").unwrap();
        assert!(!c.runs(Phase::MdtestHardWrite) && !c.runs(Phase::MdtestHardDelete));
        assert!(!c.runs(Phase::IorEasyRead) && c.runs(Phase::IorEasyWrite));
    }

    #[test]
    fn extended_mode_runs_what_it_can_and_names_what_it_cannot() {
        let c = cfg("").unwrap().extended().unwrap();
        assert_eq!(c.phases().len(), 18);
        assert!(c.runs(Phase::FindEasy) && c.runs(Phase::IorRnd4kEasyRead));
        assert!(c.runs(Phase::MdworkbenchBench) && c.mdworkbench.sizing.is_none());
        let off = "[mdworkbench]\nrun = FALSE\n";
        let c = cfg(off).unwrap().extended().unwrap();
        assert!(!c.runs(Phase::MdworkbenchCreate) && !c.runs(Phase::MdworkbenchDelete));
        let c = cfg("[mdworkbench-bench]\nrun = FALSE\n").unwrap();
        assert!(c.runs(Phase::MdworkbenchCreate) && !c.runs(Phase::MdworkbenchBench));
        let e = cfg("[ior-rnd1MB]\nblockSize = 1g\n")
            .unwrap()
            .extended()
            .unwrap_err()
            .0;
        assert!(e.contains("[ior-rnd1MB]"), "{e}");
        // find-easy and find-hard take [find]'s keys, with its rules.
        let c = cfg("[find-easy]\npfind-queue-length = 5\nrun = FALSE\n[ior-rnd4K-easy-read]\nrun = FALSE\n")
            .unwrap();
        assert!(!c.runs(Phase::FindEasy) && !c.runs(Phase::IorRnd4kEasyRead));
        assert!(c.runs(Phase::FindHard));
        let e = cfg("[find-hard]\nexternal-script = /bin/x\n")
            .unwrap_err()
            .0;
        assert!(
            e.contains("find-hard") && e.contains("external-script"),
            "{e}"
        );
        assert!(cfg("[find-easy]\nbogus = 1\n")
            .unwrap_err()
            .0
            .contains("bogus"));
        // ior-rnd4K-easy-read reads ior-easy's files: off with ior-easy.
        let c = cfg("[ior-easy]\nrun = FALSE\n").unwrap();
        assert!(!c.runs(Phase::IorRnd4kEasyRead));
        // Standard mode runs none of them, and refuses nothing.
        assert_eq!(cfg("[ior-rnd1MB]\nx = 1\n").unwrap().phases().len(), 12);
    }

    #[test]
    fn mdworkbench_keys_are_checked() {
        let c = cfg("[mdworkbench]\nprecreatePerSet = 20\nfilesPerProc = 10\nwaitingTime = 0.5\n")
            .unwrap();
        assert_eq!(c.mdworkbench.sizing, Some((20, 10)));
        assert_eq!(c.mdworkbench.waiting_factor, 0.5);
        for (text, needle) in [
            ("precreatePerSet = 20\n", "both"),
            ("filesPerProc = 10\n", "both"),
            (
                "precreatePerSet = 5\nfilesPerProc = 10\n",
                "filesPerProc = 10",
            ),
            ("precreatePerSet = 0\nfilesPerProc = 0\n", "at least 1"),
            ("waitingTime = -1\n", "waitingTime"),
            ("waitingTime = 1e300\n", "limit"),
            ("precreatePerSet = many\n", "precreatePerSet"),
            ("colour = blue\n", "colour"),
        ] {
            let e = cfg(&format!("[mdworkbench]\n{text}")).unwrap_err().0;
            assert!(e.contains(needle), "{text}: {e}");
        }
        let e = cfg("[mdworkbench-bench]\nAPI = POSIX\n").unwrap_err().0;
        assert!(e.contains("API") && e.contains("mdworkbench-bench"), "{e}");
        let c = cfg("[mdworkbench]\nprecreatePerSet = 18446744073709551615\nfilesPerProc = 1\n")
            .unwrap();
        assert!(c
            .check_tasks(2, 2)
            .unwrap_err()
            .0
            .contains("precreatePerSet"));
    }

    #[test]
    fn the_io500_app_s_own_keys_and_defaults_are_accepted() {
        // Keys as the app's sample inis write them (their values are the
        // app's defaults, or empty).
        let text = "[global]\ndrop-caches-cmd = sudo -n bash -c \"echo 3 > /proc/sys/vm/drop_caches\"\n\
            [debug]\npause-dir = \n[ior-hard]\ncollective = \n[ior-hard-write]\nAPI = \ncollective = \nrun = TRUE\n\
            [ior-hard-read]\ncollective = \n[mdworkbench]\nwaitingTime = 0.0\nprecreatePerSet = \n\
            [mdworkbench-create]\nrun = TRUE\n[timestamp]\n[find-easy]\nexternal-script = \nnproc = \n\
            pfind-queue-length = 10000\n[find-hard]\npfind-steal-next = FALSE\n[ior-rnd4K-easy-read]\nAPI = \nrun = TRUE\n";
        let c = cfg(text).unwrap();
        assert_eq!(c.pause_dir, None);
        let e = cfg("[global]\ndrop-caches-cmd = /bin/drop\n")
            .unwrap_err()
            .0;
        assert!(e.contains("drop-caches-cmd"), "{e}");
        let e = cfg("[ior-hard-read]\ncollective = TRUE\n").unwrap_err().0;
        assert!(e.contains("collective"), "{e}");
        let c = cfg("[debug]\npause-dir = /tmp/p\n").unwrap();
        assert_eq!(c.pause_dir.as_deref(), Some(std::path::Path::new("/tmp/p")));
    }
}
