//! IOR's parameters as the command line, `-O` and `-f` scripts set them,
//! before validation: one [`Params`] per test, with IOR's defaults, and
//! the [`Globals`] that belong to the whole invocation (outputs, tasks).

use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;

/// What a transfer's bytes are (`-l`, `--dataPacketType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Packet {
    /// iolab's unique data (no `-l`): a random base with every 4 KiB
    /// stamped with its file offset and a tag of the run's signature and
    /// the writer, so that no store can compress or deduplicate it.
    #[default]
    Unique,
    /// IOR's `t` (timestamp): word i of every transfer is the writer's
    /// rank in the high half and signature + i in the low half.
    Timestamp,
    /// IOR's `o` (offset): timestamp, with the first word of every 4 KiB
    /// holding the transfer's offset times the block's number.
    Offset,
    /// IOR's `i` (incompressible): words from glibc's `rand_r` seeded by
    /// signature + rank, with the offset words of `o`.
    Incompressible,
    /// IOR's `r` (random): every word from a generator seeded by
    /// signature + rank + offset.
    Random,
}

impl Packet {
    /// IOR's letter (`u` for iolab's unique data).
    pub fn letter(self) -> char {
        match self {
            Packet::Unique => 'u',
            Packet::Timestamp => 't',
            Packet::Offset => 'o',
            Packet::Incompressible => 'i',
            Packet::Random => 'r',
        }
    }

    /// From `-l`'s value: IOR reads its first letter only (`offset`,
    /// `o`); anything else is an error naming it.
    pub fn parse(text: &str) -> Result<Packet, crate::IorError> {
        match text.chars().next() {
            Some('t') => Ok(Packet::Timestamp),
            Some('o') => Ok(Packet::Offset),
            Some('i') => Ok(Packet::Incompressible),
            Some('r') => Ok(Packet::Random),
            _ => Err(crate::IorError::Packet(text.to_string())),
        }
    }
}

/// `-M`: memory to hog, as bytes or as a share of the node's memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hog {
    /// None.
    #[default]
    None,
    /// Bytes per task (`memoryPerTask`).
    PerTask(u64),
    /// Bytes per node (`-M 2g`, `memoryPerNode`), shared by its tasks.
    PerNode(u64),
    /// Percent of the node's memory (`-M 75%`), shared by its tasks.
    NodePercent(u64),
}

/// The summary format (`-O summaryFormat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// IOR's text.
    #[default]
    Default,
    /// IOR's JSON document.
    Json,
    /// IOR's CSV rows.
    Csv,
}

/// One test's parameters, IOR's names in the comments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    /// `TestID`: its place in a script (0 for a command line).
    pub id: u32,
    /// `-a` (api): as typed (`POSIX`, `MMAP`, `DUMMY`, `S3`).
    pub api: String,
    /// `-o` (testFile); `@` separates several names (IOR's multiple file
    /// systems).
    #[serde(serialize_with = "lossy")]
    pub test_file: OsString,
    /// `-b` (blockSize).
    pub block_bytes: u64,
    /// `-t` (transferSize).
    pub transfer_bytes: u64,
    /// `-s` (segmentCount).
    pub segments: u64,
    /// `-F` (filePerProc).
    pub file_per_proc: bool,
    /// `-u` (uniqueDir).
    pub unique_dir: bool,
    /// `-w` (writeFile).
    pub write: bool,
    /// `-r` (readFile).
    pub read: bool,
    /// `-W` (checkWrite).
    pub check_write: bool,
    /// `-R` (checkRead).
    pub check_read: bool,
    /// `-k` (keepFile).
    pub keep: bool,
    /// `-K` (keepFileWithError).
    pub keep_with_error: bool,
    /// `-e` (fsync).
    pub fsync: bool,
    /// `-Y` (fsyncPerWrite).
    pub fsync_per_write: bool,
    /// `-E` (useExistingTestFile).
    pub use_existing: bool,
    /// `-g` (intraTestBarriers).
    pub intra_barriers: bool,
    /// `-i` (repetitions).
    pub repetitions: u64,
    /// `-m` (multiFile).
    pub multi_file: bool,
    /// `-d` (interTestDelay), seconds.
    pub inter_test_delay_s: u64,
    /// `-O interIODelay`, microseconds after each transfer.
    pub inter_io_delay_us: u64,
    /// `-D` (deadlineForStonewalling), seconds.
    pub deadline_s: u64,
    /// `-O stoneWallingWearOut`.
    pub wearout: bool,
    /// `-O stoneWallingWearOutIterations`: stop after this many
    /// transfers per task (0: no limit).
    pub wearout_iterations: u64,
    /// `-O stoneWallingStatusFile`.
    pub status_file: Option<PathBuf>,
    /// `-O minTimeDuration`, seconds.
    pub min_time_s: u64,
    /// `-T` (maxTimeDuration), minutes.
    pub max_time_min: u64,
    /// `-C` (reorderTasks), how many times given.
    pub reorder: u32,
    /// `-Z` (reorderTasksRandom): 1 random offsets, 2 a shuffle.
    pub reorder_random: u32,
    /// `-Q` (taskPerNodeOffset).
    pub task_per_node_offset: u64,
    /// `-X` (reorderTasksRandomSeed).
    pub reorder_seed: i64,
    /// `-z` (randomOffset): 1 shuffled, 2 random.
    pub random_offset: u32,
    /// `--random-offset-seed` (-1: from the clock).
    pub random_seed: i64,
    /// `--randomPrefill`, bytes.
    pub random_prefill_bytes: u64,
    /// `-G` (setTimeStampSignature); 0: a new one from the clock each
    /// iteration.
    pub signature: u32,
    /// `-l` (dataPacketType).
    pub packet: Packet,
    /// `-N` (numTasks); None: every task.
    pub num_tasks: Option<u64>,
    /// `-O numNodes`: the node count to assume.
    pub num_nodes: Option<u64>,
    /// `-O numTasksOnNode0`: the tasks per node to assume.
    pub tasks_on_node0: Option<u64>,
    /// `-v` (verbose), counted.
    pub verbose: u32,
    /// `-x` (singleXferAttempt).
    pub single_xfer_attempt: bool,
    /// `-A` (refNum).
    pub ref_num: i64,
    /// `-j` (outlierThreshold), seconds.
    pub outlier_threshold_s: u64,
    /// `-M` and `-O memoryPerTask`.
    pub hog: Hog,
    /// `-O summaryAlways`: a summary after each test.
    pub summary_always: bool,
    /// `--posix.odirect` (and `-O useO_DIRECT`).
    pub odirect: bool,
    /// `--warningAsErrors`.
    pub warning_as_errors: bool,
    /// `-O platform`.
    pub platform: Option<String>,
    /// `-O debug`: a string shown before the test.
    pub debug: Option<String>,
    /// `-O saveRankPerformanceDetailsCSV`.
    pub rank_csv: Option<PathBuf>,
}

fn lossy<S: serde::Serializer>(p: &OsString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

impl Default for Params {
    /// IOR 4's defaults (init_IOR_Param_t).
    fn default() -> Self {
        Params {
            id: 0,
            api: "POSIX".into(),
            test_file: "testFile".into(),
            block_bytes: 1 << 20,
            transfer_bytes: 256 << 10,
            segments: 1,
            file_per_proc: false,
            unique_dir: false,
            write: false,
            read: false,
            check_write: false,
            check_read: false,
            keep: false,
            keep_with_error: false,
            fsync: false,
            fsync_per_write: false,
            use_existing: false,
            intra_barriers: false,
            repetitions: 1,
            multi_file: false,
            inter_test_delay_s: 0,
            inter_io_delay_us: 0,
            deadline_s: 0,
            wearout: false,
            wearout_iterations: 0,
            status_file: None,
            min_time_s: 0,
            max_time_min: 0,
            reorder: 0,
            reorder_random: 0,
            task_per_node_offset: 1,
            reorder_seed: 0,
            random_offset: 0,
            random_seed: -1,
            random_prefill_bytes: 0,
            signature: 0,
            packet: Packet::Unique,
            num_tasks: None,
            num_nodes: None,
            tasks_on_node0: None,
            verbose: 0,
            single_xfer_attempt: false,
            ref_num: 0,
            outlier_threshold_s: 0,
            hog: Hog::None,
            summary_always: false,
            odirect: false,
            warning_as_errors: false,
            platform: None,
            debug: None,
            rank_csv: None,
        }
    }
}

/// What belongs to the whole invocation rather than to one test.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Globals {
    /// `-O summaryFile`: IOR's report goes there instead of stdout.
    pub summary_file: Option<PathBuf>,
    /// `-O summaryFormat`.
    pub summary_format: Format,
    /// `-f` (scriptFile).
    pub script: Option<PathBuf>,
    /// `-h`.
    #[serde(skip)]
    pub help: bool,
    /// `--tasks`: tasks (threads) per process.
    pub tasks_per_process: Option<u64>,
    /// `--json`: iolab's results envelope.
    pub json: Option<PathBuf>,
    /// `--csv`: iolab's CSV, one row per iteration and access.
    pub csv: Option<PathBuf>,
    /// `--store`: the results store to record the run in.
    pub store: Option<PathBuf>,
    /// `--stats`: statistics to collect during the run.
    pub stats: Option<String>,
}
