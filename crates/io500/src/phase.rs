//! The 12 scored phases in IO500's order, their names and groups, and the
//! equivalent command each runs (what `--dry-run` prints).

use crate::config::{Config, HARD_FILE_BYTES, HARD_TRANSFER};
use serde::{Deserialize, Serialize};

/// A scored phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// ior-easy-write.
    IorEasyWrite,
    /// mdtest-easy-write.
    MdtestEasyWrite,
    /// ior-hard-write.
    IorHardWrite,
    /// mdtest-hard-write.
    MdtestHardWrite,
    /// find.
    Find,
    /// ior-easy-read.
    IorEasyRead,
    /// mdtest-easy-stat.
    MdtestEasyStat,
    /// ior-hard-read.
    IorHardRead,
    /// mdtest-hard-stat.
    MdtestHardStat,
    /// mdtest-easy-delete.
    MdtestEasyDelete,
    /// mdtest-hard-read.
    MdtestHardRead,
    /// mdtest-hard-delete.
    MdtestHardDelete,
}

/// Which mean a phase's score enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Group {
    /// Bandwidth, GiB/s.
    Bandwidth,
    /// Metadata rate, kIOPS.
    Iops,
}

impl Phase {
    /// Every scored phase in the order IO500 runs them.
    pub const ALL: [Phase; 12] = [
        Phase::IorEasyWrite,
        Phase::MdtestEasyWrite,
        Phase::IorHardWrite,
        Phase::MdtestHardWrite,
        Phase::Find,
        Phase::IorEasyRead,
        Phase::MdtestEasyStat,
        Phase::IorHardRead,
        Phase::MdtestHardStat,
        Phase::MdtestEasyDelete,
        Phase::MdtestHardRead,
        Phase::MdtestHardDelete,
    ];

    /// IO500's name (also the ini section of the phase).
    pub fn name(self) -> &'static str {
        match self {
            Phase::IorEasyWrite => "ior-easy-write",
            Phase::MdtestEasyWrite => "mdtest-easy-write",
            Phase::IorHardWrite => "ior-hard-write",
            Phase::MdtestHardWrite => "mdtest-hard-write",
            Phase::Find => "find",
            Phase::IorEasyRead => "ior-easy-read",
            Phase::MdtestEasyStat => "mdtest-easy-stat",
            Phase::IorHardRead => "ior-hard-read",
            Phase::MdtestHardStat => "mdtest-hard-stat",
            Phase::MdtestEasyDelete => "mdtest-easy-delete",
            Phase::MdtestHardRead => "mdtest-hard-read",
            Phase::MdtestHardDelete => "mdtest-hard-delete",
        }
    }

    /// The section holding the phase's shared parameters (`ior-easy`).
    pub fn base_section(self) -> &'static str {
        match self {
            Phase::IorEasyWrite | Phase::IorEasyRead => "ior-easy",
            Phase::IorHardWrite | Phase::IorHardRead => "ior-hard",
            Phase::MdtestEasyWrite | Phase::MdtestEasyStat | Phase::MdtestEasyDelete => {
                "mdtest-easy"
            }
            Phase::MdtestHardWrite
            | Phase::MdtestHardStat
            | Phase::MdtestHardRead
            | Phase::MdtestHardDelete => "mdtest-hard",
            Phase::Find => "find",
        }
    }

    /// Bandwidth or IOPS.
    pub fn group(self) -> Group {
        match self {
            Phase::IorEasyWrite | Phase::IorHardWrite | Phase::IorEasyRead | Phase::IorHardRead => {
                Group::Bandwidth
            }
            _ => Group::Iops,
        }
    }

    /// Whether the phase is stonewalled (and must last the minimum).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Phase::IorEasyWrite
                | Phase::MdtestEasyWrite
                | Phase::IorHardWrite
                | Phase::MdtestHardWrite
        )
    }

    /// The write phase whose data this phase works on.
    pub fn depends_on(self) -> Option<Phase> {
        match self {
            Phase::IorEasyRead => Some(Phase::IorEasyWrite),
            Phase::IorHardRead => Some(Phase::IorHardWrite),
            Phase::MdtestEasyStat | Phase::MdtestEasyDelete => Some(Phase::MdtestEasyWrite),
            Phase::MdtestHardStat | Phase::MdtestHardRead | Phase::MdtestHardDelete => {
                Some(Phase::MdtestHardWrite)
            }
            _ => None,
        }
    }
}

/// Where a run's data and private files live under the datadir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// The datadir of this run (with its timestamp, if any), through
    /// the backend.
    pub datadir: std::path::PathBuf,
    /// A local directory for mdtest's stonewall files (-x), which mdtest
    /// reads and writes as local files: the resultdir, as the io500 app
    /// does.
    pub private_dir: std::path::PathBuf,
}

impl Layout {
    /// `<datadir>/<name>`.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.datadir.join(name)
    }
    /// The file find compares modification times with.
    pub fn timestamp_file(&self) -> std::path::PathBuf {
        self.path("timestampfile")
    }
    /// mdtest's stonewall file (-x) of `base` (`mdtest-easy`), a local file.
    pub fn stonewall_file(&self, base: &str) -> std::path::PathBuf {
        self.private_dir.join(format!("{base}.stonewall"))
    }
}

/// mdtest's arguments for an mdtest phase (without the program name),
/// as IO500 passes them: these are run by iolab's mdtest engine.
pub fn mdtest_args(cfg: &Config, l: &Layout, phase: Phase, tasks_per_process: u64) -> Vec<String> {
    let base = phase.base_section();
    let dir = l.path(base);
    let mut a: Vec<String> = Vec::new();
    let mut push = |s: &str| a.push(s.to_string());
    match base {
        "mdtest-easy" => {
            push("-n");
            push(&cfg.mdtest_easy_n.to_string());
            for s in ["-u", "-L", "-F", "-P", "-G", "270669", "-N", "1"] {
                push(s);
            }
        }
        _ => {
            push("-n");
            push(&cfg.mdtest_hard_n.to_string());
            if let Some(k) = cfg.mdtest_hard_files_per_dir {
                push(&format!("-I={k}"));
            }
            let bytes = HARD_FILE_BYTES.to_string();
            for s in [
                "-t", "-w", &bytes, "-e", &bytes, "-P", "-G", "270670", "-N", "1", "-F",
            ] {
                push(s);
            }
        }
    }
    push("-d");
    push(&dir.display().to_string());
    push("-x");
    push(&l.stonewall_file(base).display().to_string());
    match phase {
        Phase::MdtestEasyWrite | Phase::MdtestHardWrite => {
            push("-C");
            push("-W");
            push(&cfg.stonewall_s.to_string());
        }
        Phase::MdtestEasyStat | Phase::MdtestHardStat => push("-T"),
        Phase::MdtestHardRead => push("-E"),
        _ => push("-r"),
    }
    push("-a");
    push(cfg.api(phase));
    push("--tasks");
    push(&tasks_per_process.to_string());
    a
}

/// What each phase runs, as a command line: `iolab mdtest ...` for the
/// mdtest phases (runnable as printed), and the IOR and pfind command
/// lines IO500 would run for the phases iolab's own data and find engines
/// do (they have no iolab command of their own).
pub fn equivalent_command(
    cfg: &Config,
    l: &Layout,
    phase: Phase,
    tasks_per_process: u64,
) -> String {
    let d = |n: &str| l.path(n).display().to_string();
    let sw = cfg.stonewall_s;
    match phase {
        Phase::IorEasyWrite | Phase::IorEasyRead => {
            let e = &cfg.ior_easy;
            let rw = match phase {
                Phase::IorEasyWrite => format!("-w -D {sw} -O stoneWallingWearOut=1"),
                _ => "-r -R".into(),
            };
            format!(
                "ior -C -Q 1 -g -G 271 -k -e -o {}/ior_file_easy -t {} -b {}{}{} {rw} (iolab io500's data engine)",
                d("ior-easy"),
                e.transfer_bytes,
                e.block_bytes,
                if e.file_per_proc { " -F" } else { "" },
                if e.unique_dir { " -u" } else { "" },
            )
        }
        Phase::IorHardWrite | Phase::IorHardRead => {
            let rw = match phase {
                Phase::IorHardWrite => format!("-w -D {sw} -O stoneWallingWearOut=1"),
                _ => "-r -R".into(),
            };
            format!(
                "ior -C -Q 1 -g -G 27 -k -e -o {}/file -t {HARD_TRANSFER} -b {HARD_TRANSFER} -s {} {rw} (iolab io500's data engine)",
                d("ior-hard"),
                cfg.ior_hard_segments
            )
        }
        Phase::Find => format!(
            "pfind {} -newer {} -size {HARD_FILE_BYTES}c -name *01* (iolab io500's find engine)",
            l.datadir.display(),
            l.timestamp_file().display()
        ),
        _ => {
            let args = mdtest_args(cfg, l, phase, tasks_per_process);
            format!("iolab mdtest {}", args.join(" "))
        }
    }
}
