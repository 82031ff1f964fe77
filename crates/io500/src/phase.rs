//! The 12 scored phases in IO500's order (and the extended ones), their
//! names and groups, and the
//! layout of a run's files ([`crate::commands`] has the command lines
//! each phase runs).

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
    /// find-easy (extended mode): the names `*01*` under mdtest-easy.
    FindEasy,
    /// find-hard (extended mode): find's criteria under mdtest-hard only.
    FindHard,
    /// ior-rnd4K-easy-read (extended mode, unscored): random 4 KiB
    /// reads of what ior-easy-write wrote.
    #[serde(rename = "ior-rnd4K-easy-read")]
    IorRnd4kEasyRead,
    /// mdworkbench-create (extended mode, unscored): md-workbench's
    /// precreate.
    MdworkbenchCreate,
    /// mdworkbench-bench (extended mode, in `[SCOREX]`): md-workbench's
    /// two benchmark iterations.
    MdworkbenchBench,
    /// mdworkbench-delete (extended mode, unscored): md-workbench's
    /// cleanup.
    MdworkbenchDelete,
}

/// Which mean a phase's score enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Group {
    /// Bandwidth, GiB/s.
    Bandwidth,
    /// Metadata rate, kIOPS.
    Iops,
    /// Reported and not scored (ior-rnd4K-easy-read in GiB/s,
    /// mdworkbench-create and -delete in kIOPS).
    Unscored,
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

    /// Every phase of extended mode (`--mode=extended`), in the io500
    /// app's order: the 12 scored ones and the extended ones iolab runs.
    pub const EXTENDED: [Phase; 18] = [
        Phase::IorEasyWrite,
        Phase::MdtestEasyWrite,
        Phase::MdworkbenchCreate,
        Phase::FindEasy,
        Phase::IorHardWrite,
        Phase::MdtestHardWrite,
        Phase::Find,
        Phase::FindHard,
        Phase::MdworkbenchBench,
        Phase::IorEasyRead,
        Phase::MdtestEasyStat,
        Phase::IorHardRead,
        Phase::MdtestHardStat,
        Phase::MdworkbenchDelete,
        Phase::MdtestEasyDelete,
        Phase::MdtestHardRead,
        Phase::MdtestHardDelete,
        Phase::IorRnd4kEasyRead,
    ];

    /// The phases of a run in order: [`Phase::ALL`], or
    /// [`Phase::EXTENDED`] in extended mode.
    pub fn order(extended: bool) -> &'static [Phase] {
        match extended {
            true => &Phase::EXTENDED,
            false => &Phase::ALL,
        }
    }

    /// Whether the phase runs only in extended mode (and so counts only
    /// in the `[SCOREX]` line, if at all).
    pub fn is_extended(self) -> bool {
        matches!(
            self,
            Phase::FindEasy
                | Phase::FindHard
                | Phase::IorRnd4kEasyRead
                | Phase::MdworkbenchCreate
                | Phase::MdworkbenchBench
                | Phase::MdworkbenchDelete
        )
    }

    /// The phase after which the timestamp file is made: mdtest-easy-write,
    /// or in extended mode mdworkbench-create (as the app orders them, so
    /// that find sees md-workbench's objects as older).
    pub fn timestamp_after(extended: bool) -> Phase {
        match extended {
            true => Phase::MdworkbenchCreate,
            false => Phase::MdtestEasyWrite,
        }
    }

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
            Phase::FindEasy => "find-easy",
            Phase::FindHard => "find-hard",
            Phase::IorRnd4kEasyRead => "ior-rnd4K-easy-read",
            Phase::MdworkbenchCreate => "mdworkbench-create",
            Phase::MdworkbenchBench => "mdworkbench-bench",
            Phase::MdworkbenchDelete => "mdworkbench-delete",
        }
    }

    /// The section holding the phase's shared parameters (`ior-easy`).
    pub fn base_section(self) -> &'static str {
        match self {
            Phase::IorEasyWrite | Phase::IorEasyRead | Phase::IorRnd4kEasyRead => "ior-easy",
            Phase::IorHardWrite | Phase::IorHardRead => "ior-hard",
            Phase::MdtestEasyWrite | Phase::MdtestEasyStat | Phase::MdtestEasyDelete => {
                "mdtest-easy"
            }
            Phase::MdtestHardWrite
            | Phase::MdtestHardStat
            | Phase::MdtestHardRead
            | Phase::MdtestHardDelete => "mdtest-hard",
            Phase::Find => "find",
            Phase::FindEasy => "find-easy",
            Phase::FindHard => "find-hard",
            Phase::MdworkbenchCreate | Phase::MdworkbenchBench | Phase::MdworkbenchDelete => {
                "mdworkbench"
            }
        }
    }

    /// Bandwidth or IOPS.
    pub fn group(self) -> Group {
        match self {
            Phase::IorEasyWrite | Phase::IorHardWrite | Phase::IorEasyRead | Phase::IorHardRead => {
                Group::Bandwidth
            }
            Phase::IorRnd4kEasyRead | Phase::MdworkbenchCreate | Phase::MdworkbenchDelete => {
                Group::Unscored
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
            Phase::IorEasyRead | Phase::IorRnd4kEasyRead => Some(Phase::IorEasyWrite),
            Phase::FindEasy => Some(Phase::MdtestEasyWrite),
            Phase::FindHard => Some(Phase::MdtestHardWrite),
            Phase::IorHardRead => Some(Phase::IorHardWrite),
            Phase::MdtestEasyStat | Phase::MdtestEasyDelete => Some(Phase::MdtestEasyWrite),
            Phase::MdtestHardStat | Phase::MdtestHardRead | Phase::MdtestHardDelete => {
                Some(Phase::MdtestHardWrite)
            }
            Phase::MdworkbenchBench | Phase::MdworkbenchDelete => Some(Phase::MdworkbenchCreate),
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
