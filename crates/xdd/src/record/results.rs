//! Plain report data: what each QThread, target and pass measured. Every
//! figure the formatters print is derived from these counts, and counts
//! merge exactly (sums, histogram merge), so a target's pass is the merge
//! of its QThreads and the run is the merge of its targets.

pub use super::pass::{Counts, Latency, QthreadPass, TargetPass};
use crate::parse::config::Config;
use iolab_core::env::HostInfo;

/// A target's time stamps (-timestamps), for the CLI to write.
#[derive(Debug, Clone)]
pub struct Timestamps {
    /// What to write and where.
    pub options: crate::record::timestamp::TsOptions,
    /// Header facts.
    pub info: crate::record::timestamp::TsInfo,
    /// Entries of every QThread, by start time.
    pub entries: Vec<crate::record::timestamp::TsEntry>,
}

/// Facts about one target that are not counts.
#[derive(Debug, Clone, Default)]
pub struct TargetInfo {
    /// Path used (for -createnewfiles, the last one).
    pub path: String,
    /// O_DIRECT was actually used.
    pub direct_io: bool,
    /// A block device.
    pub block_device: bool,
    /// Requests per pass as planned (u64::MAX when only time-limited).
    pub planned_ops: u64,
    /// Seek range in blocks.
    pub range_blocks: u64,
    /// Process ID.
    pub pid: u32,
    /// The file system holding the target.
    pub fs: Option<iolab_core::env::FsInfo>,
    /// Time stamps, when asked for.
    pub timestamps: Option<Timestamps>,
    /// Failures outside operations (a per-pass file could not be opened).
    pub failures: u64,
    /// Seek distance histogram (-seek disthist).
    pub disthist: Option<crate::plan::seek::SeekHistogram>,
    /// Seek location histogram (-seek seekhist).
    pub seekhist: Option<crate::plan::seek::SeekHistogram>,
}

/// What `-timeserver` measured before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct GlobalClock {
    /// Global time minus this host's wall clock, ns.
    pub offset_ns: i64,
    /// The shortest round trip to the server, ns (the offset is within
    /// half of it).
    pub rtt_ns: u64,
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunResults {
    /// The configuration that ran.
    pub config: Config,
    /// The machine.
    pub host: HostInfo,
    /// Wall-clock start, ns since the Unix epoch.
    pub start_wall_ns: u64,
    /// Wall-clock end.
    pub end_wall_ns: u64,
    /// Per pass (outer), per target (inner), read back from the spools
    /// the targets wrote as they ran.
    pub passes: crate::record::passlog::PassLog,
    /// Per target, its passes merged one after another (TARGET_AVERAGE),
    /// summed as the passes ran.
    pub totals: Vec<Counts>,
    /// Per target facts.
    pub targets: Vec<TargetInfo>,
    /// Things the user should know (placement refused, O_DIRECT fallback).
    pub notes: Vec<String>,
    /// Error messages, at most -maxerrorstoprint of them.
    pub error_messages: Vec<String>,
    /// Peak resident memory of the process at the end of the run (VmHWM
    /// of /proc/self/status), bytes; 0 when unknown.
    pub peak_rss_bytes: u64,
    /// How the run ended: completed, interrupted (Ctrl-C, SIGTERM),
    /// -runtime reached, or an error (the first, with op, path, errno).
    pub outcome: iolab_core::Outcome,
    /// The global clock this run was lined up on (-timeserver), if any.
    pub global_clock: Option<GlobalClock>,
    /// Statistics collected during the run (`--stats`), as JSON.
    pub stats: Option<serde_json::Value>,
}

impl RunResults {
    /// A target's passes merged one after another (TARGET_AVERAGE).
    pub fn target_total(&self, target: usize) -> Counts {
        self.totals.get(target).cloned().unwrap_or_default()
    }

    /// All targets merged (COMBINED): targets ran side by side, so elapsed
    /// is the longest target total.
    pub fn combined(&self) -> Counts {
        let mut c = Counts::default();
        for t in 0..self.targets.len() {
            c.merge_parallel(&self.target_total(t));
        }
        c
    }

    /// Every error the run saw (I/O errors, short transfers, bad data).
    pub fn error_count(&self) -> u64 {
        let c = self.combined();
        c.errors + c.verify_failed_ops + self.targets.iter().map(|t| t.failures).sum::<u64>()
    }
}
