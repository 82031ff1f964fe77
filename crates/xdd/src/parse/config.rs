//! Stage two of the command line: the settings the option table recorded,
//! replayed in order onto one option set per target, then validated. A
//! `Config` that exists is internally consistent; nothing has touched the
//! file system yet.

use crate::error::UsageError;
use crate::parse::values::*;
use serde::{Deserialize, Serialize};

/// Options that apply to the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalOpts {
    /// Number of passes.
    pub passes: u64,
    /// Seconds between passes.
    pub passdelay_s: f64,
    /// Whole-run time limit in seconds (0 = none).
    pub runtime_s: f64,
    /// Do not synchronise targets at the start of each pass.
    pub nobarrier: bool,
    /// Stop a target's pass after this many errors (0 = no limit).
    pub maxerrors: u64,
    /// Error messages printed at most (the rest are counted).
    pub maxerrorstoprint: u64,
    /// Stop the run at the first error.
    pub stoponerror: bool,
    /// TARGET_PASS and TARGET_AVERAGE rows.
    pub verbose: bool,
    /// QUEUE_PASS rows.
    pub qthreadinfo: bool,
    /// Results file (`-output`).
    pub output: Option<String>,
    /// CSV results file (`-csvout`).
    pub csvout: Option<String>,
    /// File the COMBINED rows are appended to (`-combinedout`).
    pub combinedout: Option<String>,
    /// Error messages file (`-errout`).
    pub errout: Option<String>,
    /// JSON document file (`--json`).
    pub json: Option<String>,
    /// Identification strings, concatenated.
    pub id: Vec<String>,
    /// Column selection.
    pub outputformat: OutputFormat,
    /// Report the deskewed bandwidth.
    pub deskew: bool,
    /// Synchronise all targets every N operations (0 = never).
    pub syncio: u64,
    /// Real-time priority for every thread.
    pub maxpri: bool,
    /// mlockall the process.
    pub processlock: bool,
    /// Lock the I/O buffers in memory (on unless -nomemlock).
    pub memlock: bool,
    /// Every thread on this processor.
    pub singleproc: Option<usize>,
    /// Threads spread over processors.
    pub roundrobin: Option<RoundRobin>,
    /// Show the plan and stop before any I/O.
    pub dryrun: bool,
    /// Allow writing to a block device that looks in use.
    pub force: bool,
    /// Heartbeat settings.
    pub heartbeat: HeartbeatOpts,
    /// Lockstep relations.
    pub lockstep: Vec<LockstepSpec>,
    /// Start triggers.
    pub starttriggers: Vec<TriggerSpec>,
    /// Stop triggers.
    pub stoptriggers: Vec<TriggerSpec>,
    /// CPU percentages relative to one CPU (false) or to all (true).
    pub percentcpu_absolute: bool,
    /// The command line as typed (for `-id commandline`).
    pub command_line: String,
    /// Keep the files this run created even when it fails or is
    /// interrupted (-keepfiles).
    #[serde(default)]
    pub keepfiles: bool,
    /// The global clock to line runs on several hosts up (-timeserver).
    #[serde(default)]
    pub timeserver: Option<TimeServer>,
    /// Start every target at this global time, seconds since the Unix
    /// epoch as `gettime` prints it (-starttime).
    #[serde(default)]
    pub starttime_s: Option<u64>,
    /// Collect system statistics during the run (`--stats CONFIG`, read
    /// by `iolab stats`); into the JSON.
    #[serde(default)]
    pub stats: Option<String>,
    /// The results store to record the run in (`--store PATH`).
    #[serde(default)]
    pub store: Option<String>,
    /// Namespaced backend options as given, `--` stripped
    /// (`s3.endpoint=URL`); each target's backend gets its own.
    #[serde(default)]
    pub backend_options: Vec<String>,
}

/// Where the time server is (`-timeserver host H port P bounce B key F`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeServer {
    /// Host name or address.
    pub host: String,
    /// TCP port (XDD's default 2000).
    pub port: u16,
    /// Clock exchanges; the shortest round trip is used.
    pub bounce: u32,
    /// `key FILE` (iolab): the key file the server must prove it holds
    /// (else `IOLAB_KEY_FILE`; else the time is unauthenticated, as XDD's).
    #[serde(default)]
    pub key: Option<String>,
}

impl TimeServer {
    /// The key the server must prove, from `key FILE` or
    /// `IOLAB_KEY_FILE`; none when neither names one.
    pub fn shared_key(&self) -> Result<Option<iolab_net::SharedKey>, iolab_net::NetError> {
        iolab_net::SharedKey::resolve(self.key.as_deref().map(std::path::Path::new))
    }
}

impl Default for TimeServer {
    fn default() -> Self {
        Self {
            host: String::new(),
            port: 2000,
            bounce: 100,
            key: None,
        }
    }
}

impl Default for GlobalOpts {
    fn default() -> Self {
        Self {
            passes: 1,
            passdelay_s: 0.0,
            runtime_s: 0.0,
            nobarrier: false,
            maxerrors: 0,
            maxerrorstoprint: 10,
            stoponerror: false,
            verbose: false,
            qthreadinfo: false,
            output: None,
            csvout: None,
            combinedout: None,
            errout: None,
            json: None,
            id: Vec::new(),
            outputformat: OutputFormat::default(),
            deskew: false,
            syncio: 0,
            maxpri: false,
            processlock: false,
            memlock: true,
            singleproc: None,
            roundrobin: None,
            dryrun: false,
            force: false,
            heartbeat: HeartbeatOpts::default(),
            lockstep: Vec::new(),
            starttriggers: Vec::new(),
            stoptriggers: Vec::new(),
            percentcpu_absolute: false,
            command_line: String::new(),
            keepfiles: false,
            timeserver: None,
            starttime_s: None,
            stats: None,
            store: None,
            backend_options: Vec::new(),
        }
    }
}

/// Options of one target. After `validate`, `path` is the full path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetOpts {
    /// Target name as given on the command line.
    pub name: String,
    /// Target name joined with `-targetdir`.
    pub path: String,
    /// `-targetdir` prefix.
    pub targetdir: String,
    /// Bytes per block.
    pub blocksize: u64,
    /// Blocks per request.
    pub reqsize: u64,
    /// Requests per pass (`-numreqs`); wins over the byte amounts.
    pub numreqs: Option<u64>,
    /// Bytes per pass (`-bytes`, `-kbytes`, `-mbytes`, `-gbytes`).
    pub bytes: Option<u64>,
    /// Operation.
    pub op: Op,
    /// Percent of operations that are reads (overrides `op` when set).
    pub rwratio: Option<f64>,
    /// QThreads (or ring depth).
    pub queuedepth: u64,
    /// First block of the range.
    pub startoffset: u64,
    /// Blocks added to the start for every pass after the first.
    pub passoffset: u64,
    /// Blocks times the target number added to the start.
    pub targetoffset: u64,
    /// Bytes to preallocate.
    pub preallocate: u64,
    /// New file per pass (name.PASS).
    pub createnewfiles: bool,
    /// Delete and recreate the file every pass.
    pub recreatefiles: bool,
    /// Close and reopen every pass.
    pub reopen: bool,
    /// Delete the file at the end of the run.
    pub deletefile: bool,
    /// O_DIRECT.
    pub dio: bool,
    /// fsync at the end of each pass.
    pub syncwrite: bool,
    /// fsync every N writes (0 = never).
    pub flushwrite: u64,
    /// Rate limit.
    pub throttle: Option<ThrottleSpec>,
    /// `-throttle var P` as given, before or after the rate it varies
    /// (kept so that neither order loses it; validation refuses it
    /// without a rate).
    #[serde(skip)]
    pub throttle_var: Option<f64>,
    /// Data pattern.
    pub datapattern: PatternOpts,
    /// Read verification.
    pub verify: Option<VerifyKind>,
    /// Access pattern.
    pub seek: SeekOpts,
    /// New random locations every pass.
    pub randomize: bool,
    /// Per-pass time limit in seconds (0 = none).
    pub timelimit_s: f64,
    /// Seconds before this target starts (once).
    pub startdelay_s: f64,
    /// Seconds times the target number before each pass.
    pub targetstartdelay_s: f64,
    /// Processor for this target's threads.
    pub processor: Option<usize>,
    /// Buffer alignment in bytes (0 = page size).
    pub memalign: u64,
    /// Buffer in a System V shared memory segment.
    pub sharedmemory: bool,
    /// QThread ordering.
    pub ordering: Ordering,
    /// Time stamping.
    pub timestamps: TimestampOpts,
    /// I/O engine.
    pub engine: EngineKind,
    /// Report operations slower than this many seconds (0 = off).
    pub reportthreshold_s: f64,
    /// End-to-end copy settings (`-endtoend`).
    #[serde(default)]
    pub e2e: crate::e2e::opts::E2eOpts,
    /// Restart settings of an end-to-end copy (`-restart`).
    #[serde(default)]
    pub restart: crate::e2e::opts::RestartOpts,
}

impl Default for TargetOpts {
    fn default() -> Self {
        Self {
            name: String::new(),
            path: String::new(),
            targetdir: String::new(),
            blocksize: 1024,
            reqsize: 128,
            numreqs: None,
            bytes: None,
            op: Op::Read,
            rwratio: None,
            queuedepth: 1,
            startoffset: 0,
            passoffset: 0,
            targetoffset: 0,
            preallocate: 0,
            createnewfiles: false,
            recreatefiles: false,
            reopen: false,
            deletefile: false,
            dio: false,
            syncwrite: false,
            flushwrite: 0,
            throttle: None,
            throttle_var: None,
            datapattern: PatternOpts::default(),
            verify: None,
            seek: SeekOpts::default(),
            randomize: false,
            timelimit_s: 0.0,
            startdelay_s: 0.0,
            targetstartdelay_s: 0.0,
            processor: None,
            memalign: 0,
            sharedmemory: false,
            ordering: Ordering::None,
            timestamps: TimestampOpts::default(),
            engine: EngineKind::Qthreads,
            reportthreshold_s: 0.0,
            e2e: Default::default(),
            restart: Default::default(),
        }
    }
}

impl TargetOpts {
    /// Bytes per full request.
    pub fn xfer_bytes(&self) -> u64 {
        self.reqsize * self.blocksize
    }

    /// Percent of operations that read.
    pub fn read_percent(&self) -> f64 {
        match (self.rwratio, self.op) {
            (Some(r), _) => r,
            (None, Op::Read) => 100.0,
            (None, _) => 0.0,
        }
    }

    /// True when any operation may write.
    pub fn writes(&self) -> bool {
        self.op != Op::Noop && self.read_percent() < 100.0
    }
}

/// A recorded target-specific setting, replayed once the targets exist.
pub type TargetSetter = Box<dyn Fn(&mut TargetOpts)>;

/// Options that stop parsing and print instead of running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `-help [option]`.
    Help(Option<String>),
    /// `-fullhelp`.
    FullHelp,
    /// `-version`.
    Version,
}

/// Everything the option table recorded, in command-line order.
#[derive(Default)]
pub struct RawConfig {
    /// Help or version asked for.
    pub action: Option<Action>,
    /// Global options, already applied in order.
    pub global: GlobalOpts,
    /// Target names in order (`-target`, `-targets`).
    pub names: Vec<String>,
    /// Target settings with the target they name (None = all).
    pub settings: Vec<(Option<usize>, TargetSetter)>,
}

impl RawConfig {
    /// Records a target setting for `scope` (None = every target).
    pub fn set(&mut self, scope: Option<usize>, f: impl Fn(&mut TargetOpts) + 'static) {
        self.settings.push((scope, Box::new(f)));
    }

    /// Replays the settings onto one option set per target.
    pub fn resolve(&self) -> Result<Config, UsageError> {
        let mut targets: Vec<TargetOpts> =
            self.names.iter().map(|_| TargetOpts::default()).collect();
        for (scope, f) in &self.settings {
            match scope {
                None => targets.iter_mut().for_each(f),
                Some(i) => match targets.get_mut(*i) {
                    Some(t) => f(t),
                    None => {
                        return Err(UsageError::new(
                            "target",
                            format!(
                                "target number {i} does not exist (there are {} targets, numbered from 0)",
                                targets.len()
                            ),
                        ))
                    }
                },
            }
        }
        for (t, name) in targets.iter_mut().zip(&self.names) {
            t.name = name.clone();
            t.path = format!("{}{}", t.targetdir, name);
            // -e2e destination host:port,N: N QThreads for that destination.
            if let Some(qd) = t.e2e.implied_queuedepth() {
                t.queuedepth = qd;
            }
        }
        Ok(Config {
            global: self.global.clone(),
            targets,
        })
    }
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Run-wide options.
    pub global: GlobalOpts,
    /// Per-target options; `path` is final.
    pub targets: Vec<TargetOpts>,
}
