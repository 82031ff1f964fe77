//! `disk`: the sgpdd-survey. Sequential O_DIRECT I/O straight to block
//! devices (or files), sweeping record size, concurrent regions and
//! threads. Each region is its own area of the device, its threads taking
//! the next record in turn (as one sgp_dd instance with `thr=` threads
//! does). Writing destroys what the devices hold: a device that is
//! mounted or holds any signature is refused unless forced.

use crate::io::{cpath, open_data, read_full_at, write_all_at, WriteData};
use crate::{check_range, doubling, mem_total_kb, Header, ParamError, MB};
use iolab_backend::{Backend, Handle, OpenOptions};
use iolab_core::buffer::IoBuffer;
use iolab_core::{Failure, Outcome};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::Instant;

/// Bytes left alone at the start of each device, so that the regions start
/// MiB-aligned away from where labels live (the kit skips 1024 blocks).
pub const START_OFFSET: u64 = 1 << 20;

/// What a survey point does to the devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Overwrite the regions (destroys data).
    Write,
    /// Read them back.
    Read,
}

impl Action {
    /// The kit's name (`write`, `read`).
    pub fn name(self) -> &'static str {
        match self {
            Action::Write => "write",
            Action::Read => "read",
        }
    }

    /// Parses the kit's `actions` list (`"write read"`).
    pub fn parse_list(text: &str) -> Result<Vec<Action>, ParamError> {
        let list: Result<Vec<_>, _> = text
            .split_whitespace()
            .map(|w| match w {
                "write" => Ok(Action::Write),
                "read" => Ok(Action::Read),
                other => Err(ParamError::new(
                    "actions",
                    format!("unknown action '{other}': use write and/or read"),
                )),
            })
            .collect();
        let list = list?;
        if list.is_empty() {
            return Err(ParamError::new(
                "actions",
                "give at least one of write, read",
            ));
        }
        Ok(list)
    }
}

/// The disk survey's parameters (the kit's variable names, units as the
/// kit's: size in MB per device, record sizes in KB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskConfig {
    /// Block devices or existing files.
    pub devices: Vec<PathBuf>,
    /// MB moved per device per action (`size`).
    pub size_mb: u64,
    /// Smallest record size, KB (`rszlo`).
    pub rszlo_kb: u64,
    /// Largest record size, KB (`rszhi`).
    pub rszhi_kb: u64,
    /// Fewest concurrent regions per device (`crglo`).
    pub crglo: u64,
    /// Most concurrent regions per device (`crghi`).
    pub crghi: u64,
    /// Fewest threads per device (`thrlo`).
    pub thrlo: u64,
    /// Most threads per device (`thrhi`).
    pub thrhi: u64,
    /// Actions in order (`actions`).
    pub actions: Vec<Action>,
    /// Most threads on one region (the kit's SG_MAX_QUEUE, 16).
    pub max_queue: u64,
    /// Write even a device that is mounted or holds data.
    pub force: bool,
}

/// Limits a user's numbers are checked against before anything is opened.
pub const MAX_RSZ_KB: u64 = 64 * 1024;
/// Most regions per device.
pub const MAX_REGIONS: u64 = 4096;
/// Most threads per device.
pub const MAX_THREADS: u64 = 16384;

/// One device as planned: where, how big, its logical block size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// As given.
    pub path: PathBuf,
    /// Capacity in bytes.
    pub bytes: u64,
    /// Logical block size (O_DIRECT alignment).
    pub block_bytes: u64,
    /// A block device (not a file).
    pub is_block: bool,
}

/// A checked configuration with its devices measured.
#[derive(Debug, Clone)]
pub struct DiskPlan {
    /// The parameters.
    pub cfg: DiskConfig,
    /// The devices.
    pub devices: Vec<Device>,
    /// Live figures (`--live`): each region thread records its records
    /// under the action's name (`write`, `read`).
    pub live: Option<std::sync::Arc<iolab_core::live::Board>>,
    /// The run's cancellation token (the session's, set by the caller;
    /// a plan of its own reads the process's stop flag).
    pub cancel: iolab_core::CancelToken,
    /// The devices held for writing ([`DiskPlan::claim`]), until the
    /// last clone of the plan goes; None: [`run`] claims them itself.
    pub claims: Option<std::sync::Arc<Vec<iolab_backend::safety::DeviceClaim>>>,
}

impl DiskConfig {
    /// Checks every parameter and device; refuses to plan writes to a
    /// device in use or holding data unless forced. Opens devices
    /// read-only, writes nothing.
    pub fn validate(&self, b: &dyn Backend) -> Result<DiskPlan, ParamError> {
        self.checked(b, true)
    }

    /// [`DiskConfig::validate`] without the look at what the devices
    /// hold, for a caller that claims the plan next ([`DiskPlan::claim`]
    /// looks once the devices are held, so the look is not taken twice:
    /// on a large device it reads for a while).
    pub fn plan(&self, b: &dyn Backend) -> Result<DiskPlan, ParamError> {
        self.checked(b, false)
    }

    fn checked(&self, b: &dyn Backend, look: bool) -> Result<DiskPlan, ParamError> {
        let caps = b.capabilities();
        if !caps.shared_writes && !caps.discards {
            return Err(crate::io::lacks(
                b,
                "survey disk writes each device at many offsets from many threads at once",
                "use --backend posix on block devices or files",
            ));
        }
        check_range("rszlo", self.rszlo_kb, "rszhi", self.rszhi_kb, MAX_RSZ_KB)?;
        check_range("crglo", self.crglo, "crghi", self.crghi, MAX_REGIONS)?;
        check_range("thrlo", self.thrlo, "thrhi", self.thrhi, MAX_THREADS)?;
        if self.size_mb == 0 {
            return Err(ParamError::new(
                "size",
                "must be at least 1 (MB per device)",
            ));
        }
        if self.max_queue == 0 {
            return Err(ParamError::new("max-queue", "must be at least 1"));
        }
        if self.size_mb * 1024 / self.crghi < self.rszhi_kb {
            return Err(ParamError::new(
                "size",
                format!(
                    "{} MB split into crghi={} regions is less than one rszhi={} KB record each; raise size or lower crghi/rszhi",
                    self.size_mb, self.crghi, self.rszhi_kb
                ),
            ));
        }
        if self.actions.is_empty() {
            return Err(ParamError::new(
                "actions",
                "give at least one of write, read",
            ));
        }
        if self.devices.is_empty() {
            return Err(ParamError::new(
                "devices",
                "give at least one block device or file (or set scsidevs/rawdevs)",
            ));
        }
        if points(self).is_empty() {
            return Err(no_point(self));
        }
        crate::io::distinct_targets(b, "devices", &self.devices, None)?;
        let devices = self
            .devices
            .iter()
            .map(|p| self.check_device(b, p, look))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DiskPlan {
            cfg: self.clone(),
            devices,
            live: None,
            cancel: iolab_core::CancelToken::process(),
            claims: None,
        })
    }

    /// Where the survey's writes land on each device, for the look at
    /// what they would destroy ([`iolab_backend::safety::Writes`]): the
    /// range from [`START_OFFSET`] to `size` past it, and the head of
    /// every region of every point.
    pub fn writes(&self) -> iolab_backend::safety::Writes {
        let mut heads = Vec::new();
        for (rsz_kb, crg, _) in points(self) {
            let region_bytes = self.size_mb * 1024 / crg / rsz_kb * rsz_kb * 1024;
            heads.extend((0..crg).map(|j| START_OFFSET + j * region_bytes));
        }
        let end = START_OFFSET + self.size_mb * (1 << 20);
        iolab_backend::safety::Writes {
            ranges: std::iter::once(START_OFFSET..end).collect(),
            heads,
        }
    }

    fn check_device(
        &self,
        b: &dyn Backend,
        path: &std::path::Path,
        look: bool,
    ) -> Result<Device, ParamError> {
        let shown = path.display().to_string();
        let c = cpath(path).map_err(|e| ParamError::new("devices", format!("{shown}: {e}")))?;
        let st = b
            .stat(&c)
            .map_err(|e| ParamError::new("devices", format!("{shown}: {e}")))?;
        if b.capabilities().discards {
            // Nothing is kept: the device is as big as the survey needs.
            return Ok(Device {
                path: path.to_path_buf(),
                bytes: START_OFFSET + self.size_mb * (1 << 20),
                block_bytes: 512,
                is_block: false,
            });
        }
        if !st.is_block_device && !st.is_file {
            return Err(ParamError::new(
                "devices",
                format!("{shown} is neither a block device nor a regular file"),
            ));
        }
        let (bytes, block_bytes) = if st.is_block_device {
            let g = b
                .device_geometry(&c)
                .map_err(|e| ParamError::new("devices", format!("{shown}: {e}")))?;
            (g.bytes, g.block_bytes)
        } else {
            (st.size, 512)
        };
        if !(self.rszlo_kb * 1024).is_multiple_of(block_bytes) {
            return Err(ParamError::new(
                "rszlo",
                format!(
                    "{} KB is not a multiple of {shown}'s {block_bytes}-byte blocks",
                    self.rszlo_kb
                ),
            ));
        }
        let needed = START_OFFSET + self.size_mb * (1 << 20);
        let grows = !st.is_block_device && self.actions.first() == Some(&Action::Write);
        if bytes < needed && !grows {
            return Err(ParamError::new(
                "size",
                format!(
                    "{shown} holds {} MB after its first MiB, less than size={} MB; lower size",
                    bytes.saturating_sub(START_OFFSET) >> 20,
                    self.size_mb
                ),
            ));
        }
        if look && self.actions.contains(&Action::Write) && !self.force {
            let why = match st.is_block_device {
                true => b.device_in_use_at(&c, st.rdev, &self.writes()),
                false => b.file_in_use(&c),
            };
            if let Some(why) = why {
                return Err(refused(&shown, &why));
            }
        }
        Ok(Device {
            path: path.to_path_buf(),
            bytes,
            block_bytes,
            is_block: st.is_block_device,
        })
    }
}

/// The refusal to write `shown`, in use or holding data, for `why`.
fn refused(shown: &str, why: &str) -> ParamError {
    ParamError::new(
        "force",
        format!(
            "refusing to write {shown}: {why}. The write survey destroys everything on it; pass --force (in an `iolab qualify` plan: `force = true` under [devices]) only if that is what you want"
        ),
    )
}

/// The error of a sweep whose ranges select no point: every thread
/// count is below the region count, or above `max_queue` per region.
fn no_point(cfg: &DiskConfig) -> ParamError {
    ParamError::new(
        "thrlo",
        format!(
            "crglo..crghi={}..{}, thrlo..thrhi={}..{} and max-queue={} select no point (each needs regions <= threads <= regions x max-queue); widen thrlo..thrhi or lower crglo",
            cfg.crglo, cfg.crghi, cfg.thrlo, cfg.thrhi, cfg.max_queue
        ),
    )
}

impl DiskPlan {
    /// Claims every block device the survey writes (unless forced), and
    /// looks at each again once held ([`iolab_backend::safety::claim_unused_at`]):
    /// a device mounted, held by another program or given a file system
    /// since [`DiskConfig::validate`] is refused here, as bad usage, before
    /// the caller creates anything. The claims last as long as the plan.
    pub fn claim(&mut self, b: &dyn Backend) -> Result<(), ParamError> {
        let claims = claim_devices(self, b).map_err(|(shown, why)| refused(&shown, &why))?;
        self.claims = Some(std::sync::Arc::new(claims));
        Ok(())
    }
}

/// One region's part of one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionResult {
    /// The device.
    pub device: String,
    /// Region number on that device.
    pub region: u64,
    /// Byte offset of the region.
    pub offset: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Seconds from the region's first record to its last (its own clock,
    /// as each of the kit's sgp_dd instances times itself; the aggregate's
    /// clock runs from the common start, before any thread is going).
    pub elapsed_s: f64,
    /// O_DIRECT was used (else buffered, synced before the clock stopped).
    pub direct: bool,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

impl RegionResult {
    /// The region's own bandwidth in MB/s.
    pub fn mb_per_s(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.bytes as f64 / MB / self.elapsed_s
        } else {
            0.0
        }
    }
}

/// One action at one survey point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionResult {
    /// What was done.
    pub action: Action,
    /// Seconds from the start to the last region's end.
    pub elapsed_s: f64,
    /// Aggregate MB/s (all data over the elapsed time); None when a region failed.
    pub mb_per_s: Option<f64>,
    /// Regions that succeeded.
    pub regions_ok: u64,
    /// Regions that failed.
    pub regions_failed: u64,
    /// The slowest region's own MB/s (the kit's sanity check).
    pub slowest_region_mb_per_s: f64,
    /// Every region.
    pub regions: Vec<RegionResult>,
}

/// What a survey point came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PointResult {
    /// The buffers would not fit in memory (the kit's ENOMEM).
    NoMem,
    /// The actions ran.
    Ran {
        /// One per action, in order.
        actions: Vec<ActionResult>,
    },
}

/// One line of the survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskPoint {
    /// KB moved per action over all devices.
    pub total_size_kb: u64,
    /// Record size, KB.
    pub rsz_kb: u64,
    /// Regions over all devices.
    pub crg: u64,
    /// Threads over all devices.
    pub thr: u64,
    /// What happened.
    pub result: PointResult,
}

/// The whole survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskReport {
    /// When and where.
    pub header: Header,
    /// Every point that ran, in order.
    pub points: Vec<DiskPoint>,
    /// How it ended.
    pub outcome: Outcome,
}

/// The (rsz KB, crg, thr) points per device, in the kit's order, skipping
/// thr < crg and more than `max_queue` threads on one region.
pub fn points(cfg: &DiskConfig) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for rsz in doubling(cfg.rszlo_kb, cfg.rszhi_kb) {
        for crg in doubling(cfg.crglo, cfg.crghi) {
            for thr in doubling(cfg.thrlo, cfg.thrhi) {
                if thr >= crg && thr / crg <= cfg.max_queue {
                    out.push((rsz, crg, thr));
                }
            }
        }
    }
    out
}

/// Claims every block device the survey writes (unless forced) and
/// looks at each once held ([`iolab_backend::safety::claim_unused_at`]),
/// and looks again at each file ([`Backend::file_in_use`]): a file
/// system made, mounted or built on a loop device since any earlier look
/// is refused now, before any write. Err names the device and why.
fn claim_devices(
    plan: &DiskPlan,
    b: &dyn Backend,
) -> Result<Vec<iolab_backend::safety::DeviceClaim>, (String, String)> {
    let mut claims = Vec::new();
    if plan.cfg.force || !plan.cfg.actions.contains(&Action::Write) || b.capabilities().discards {
        return Ok(claims);
    }
    let writes = plan.cfg.writes();
    for d in &plan.devices {
        let shown = d.path.display().to_string();
        let refused = |why: String| (shown.clone(), why);
        let c = cpath(&d.path).map_err(|e| refused(e.to_string()))?;
        if !d.is_block {
            if let Some(why) = b.file_in_use(&c) {
                return Err(refused(why));
            }
            continue;
        }
        let st = b.stat(&c).map_err(|e| refused(e.to_string()))?;
        claims.push(
            iolab_backend::safety::claim_unused_at(b, &c, st.rdev, &writes)
                .map_err(|e| refused(e.to_string()))?,
        );
    }
    Ok(claims)
}

/// Runs the survey; `on_point` sees each point as it completes.
pub fn run(plan: &DiskPlan, b: &dyn Backend, on_point: &mut dyn FnMut(&DiskPoint)) -> DiskReport {
    let mut report = DiskReport {
        header: Header::now(),
        points: Vec::new(),
        outcome: Outcome::Completed,
    };
    // Held until the survey ends: nothing mounts a device it writes. A
    // plan claimed by its caller ([`DiskPlan::claim`]) holds them already.
    let _claims = match &plan.claims {
        Some(_) => Vec::new(),
        None => match claim_devices(plan, b) {
            Ok(c) => c,
            Err((shown, why)) => {
                report.outcome = Outcome::Error(Failure::other(
                    "disk survey",
                    format!("refusing to write {shown}: {why}; nothing was written"),
                ));
                return report;
            }
        },
    };
    let ndevs = plan.devices.len() as u64;
    let mut failed = 0u64;
    for (rsz_kb, crg, thr) in points(&plan.cfg) {
        let records = plan.cfg.size_mb * 1024 / crg / rsz_kb;
        let point_kb = records * rsz_kb * crg * ndevs;
        let mut point = DiskPoint {
            total_size_kb: point_kb,
            rsz_kb,
            crg: crg * ndevs,
            thr: thr * ndevs,
            result: PointResult::NoMem,
        };
        let needed_kb = (rsz_kb * thr / crg + 64) * crg * ndevs;
        if mem_total_kb().is_some_and(|m| needed_kb > m) {
            on_point(&point);
            report.points.push(point);
            continue;
        }
        let mut actions = Vec::new();
        for &action in &plan.cfg.actions {
            let shape = Shape {
                rsz_bytes: rsz_kb * 1024,
                records,
                crg,
                per_region: thr / crg,
            };
            match run_action(plan, b, action, shape) {
                Some(a) => {
                    failed += a.regions_failed;
                    actions.push(a);
                }
                None => break,
            }
            if plan.cancel.is_cancelled() {
                break;
            }
        }
        if plan.cancel.is_cancelled() {
            report.outcome = Outcome::Interrupted;
            return report;
        }
        if actions.len() == plan.cfg.actions.len() {
            point.result = PointResult::Ran { actions };
        }
        on_point(&point);
        report.points.push(point);
    }
    if failed > 0 {
        report.outcome = Outcome::Error(Failure::other(
            "disk survey",
            format!("{failed} region run(s) failed; the .detail file says why"),
        ));
    }
    report
}

/// The shape of one action: record size, records per region, regions and
/// threads per region on each device.
#[derive(Debug, Clone, Copy)]
struct Shape {
    rsz_bytes: u64,
    records: u64,
    crg: u64,
    per_region: u64,
}

/// One region's shared state while it runs.
struct Region {
    device: usize,
    index: u64,
    offset: u64,
    handle: Option<(Handle, bool)>,
    next: AtomicU64,
    busy: AtomicUsize,
    moved: AtomicU64,
    /// When the region's first record was taken (ns after the common
    /// start): its own clock starts there, as each sgp_dd times itself.
    start_ns: AtomicU64,
    end_ns: AtomicU64,
    error: Mutex<Option<String>>,
}

/// Runs one action over every region of every device; None when the
/// buffers could not be allocated (reported as ENOMEM).
fn run_action(plan: &DiskPlan, b: &dyn Backend, action: Action, s: Shape) -> Option<ActionResult> {
    let regions = open_regions(plan, b, action, s);
    let workers = regions.len() * s.per_region as usize;
    let mut buffers = Vec::with_capacity(workers);
    let rsz = s.rsz_bytes as usize;
    let data = (action == Action::Write).then(|| WriteData::new(rsz));
    for _ in 0..workers {
        let len = data.as_ref().map_or(rsz, |d| d.buffer_len(rsz));
        let mut buf = IoBuffer::heap(len, 4096).ok()?;
        if let Some(d) = &data {
            d.fill(buf.as_mut_slice());
        }
        buffers.push(buf);
    }
    // Every buffer and handle exists before the first thread starts; the
    // clock starts as the barrier opens.
    let barrier = Barrier::new(workers + 1);
    let start = OnceLock::new();
    std::thread::scope(|scope| {
        for (w, buf) in buffers.into_iter().enumerate() {
            let region = &regions[w / s.per_region as usize];
            let (barrier, start, data) = (&barrier, &start, data.as_ref());
            let cancel = &plan.cancel;
            let live = plan
                .live
                .as_ref()
                .map_or_else(iolab_core::live::Recorder::off, |l| {
                    l.recorder(action.name(), w)
                });
            scope.spawn(move || {
                barrier.wait();
                let t0 = start.get().copied().unwrap_or_else(Instant::now);
                region_worker(b, region, data, s, buf, t0, (&live, cancel));
            });
        }
        let _ = start.set(Instant::now());
        barrier.wait();
    });
    let elapsed_ns = regions
        .iter()
        .map(|r| r.end_ns.load(Ordering::Relaxed))
        .max();
    let summary = summarise(plan, action, &regions, elapsed_ns.unwrap_or(0) as f64 / 1e9);
    for r in regions {
        if let Some((h, _)) = r.handle {
            let _ = b.close(h);
        }
    }
    Some(summary)
}

/// Opens one handle per region (a failed open fails that region only).
fn open_regions(plan: &DiskPlan, b: &dyn Backend, action: Action, s: Shape) -> Vec<Region> {
    let mut out = Vec::new();
    for (d, dev) in plan.devices.iter().enumerate() {
        for j in 0..s.crg {
            let opts = match action {
                Action::Write => OpenOptions::write(),
                Action::Read => OpenOptions::read(),
            };
            let opened = cpath(&dev.path).and_then(|c| open_data(b, &c, opts, true));
            let (handle, error) = match opened {
                Ok(h) => (Some(h), None),
                Err(e) => (None, Some(format!("open: {e}"))),
            };
            out.push(Region {
                device: d,
                index: j,
                offset: START_OFFSET + j * s.records * s.rsz_bytes,
                handle,
                next: AtomicU64::new(0),
                busy: AtomicUsize::new(s.per_region as usize),
                moved: AtomicU64::new(0),
                start_ns: AtomicU64::new(0),
                end_ns: AtomicU64::new(0),
                error: Mutex::new(error),
            });
        }
    }
    out
}

/// One thread of one region: takes the region's next record until none
/// is left, an error, or a stop request; writes records of `data`, reads
/// when there is none. The region's last thread syncs a buffered write
/// before its clock stops.
fn region_worker(
    b: &dyn Backend,
    r: &Region,
    data: Option<&WriteData>,
    s: Shape,
    mut buf: IoBuffer,
    t0: Instant,
    (live, cancel): (&iolab_core::live::Recorder, &iolab_core::CancelToken),
) {
    let action = match data {
        Some(_) => Action::Write,
        None => Action::Read,
    };
    if let Some((h, _)) = &r.handle {
        while !cancel.is_cancelled() && !has_error(r) {
            let i = r.next.fetch_add(1, Ordering::Relaxed);
            if i >= s.records {
                break;
            }
            if i == 0 {
                r.start_ns
                    .store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            let off = r.offset + i * s.rsz_bytes;
            let len = s.rsz_bytes as usize;
            let op_t0 = iolab_core::clock::mono_ns();
            let res = match data {
                Some(d) => {
                    let at = d.place(buf.as_mut_slice(), r.device as u64, off, len);
                    write_all_at(b, h, &buf.as_slice()[at..at + len], off)
                }
                None => read_full_at(b, h, &mut buf.as_mut_slice()[..len], off),
            };
            match res {
                Ok(()) => {
                    r.moved.fetch_add(s.rsz_bytes, Ordering::Relaxed);
                    live.op(s.rsz_bytes, iolab_core::clock::mono_ns() - op_t0);
                }
                Err(e) => {
                    live.error();
                    set_error(r, format!("{} at offset {off}: {e}", action.name()));
                }
            }
        }
    }
    if r.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
        if let (Action::Write, Some((h, false))) = (action, &r.handle) {
            if let Err(e) = b.fdatasync(h) {
                set_error(r, format!("fdatasync: {e}"));
            }
        }
        r.end_ns
            .store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

fn has_error(r: &Region) -> bool {
    r.error.lock().map(|e| e.is_some()).unwrap_or(true)
}

fn set_error(r: &Region, msg: String) {
    if let Ok(mut e) = r.error.lock() {
        e.get_or_insert(msg);
    }
}

/// The action's figures from its regions.
fn summarise(plan: &DiskPlan, action: Action, regions: &[Region], elapsed_s: f64) -> ActionResult {
    let results: Vec<RegionResult> = regions
        .iter()
        .map(|r| RegionResult {
            device: plan.devices[r.device].path.display().to_string(),
            region: r.index,
            offset: r.offset,
            bytes: r.moved.load(Ordering::Relaxed),
            elapsed_s: r
                .end_ns
                .load(Ordering::Relaxed)
                .saturating_sub(r.start_ns.load(Ordering::Relaxed)) as f64
                / 1e9,
            direct: r.handle.as_ref().is_some_and(|h| h.1),
            error: r.error.lock().ok().and_then(|e| e.clone()),
        })
        .collect();
    let ok: Vec<&RegionResult> = results.iter().filter(|r| r.error.is_none()).collect();
    let failed = (results.len() - ok.len()) as u64;
    let total: u64 = results.iter().map(|r| r.bytes).sum();
    let slowest = ok
        .iter()
        .map(|r| r.mb_per_s())
        .reduce(f64::min)
        .unwrap_or(0.0);
    ActionResult {
        action,
        elapsed_s,
        mb_per_s: (failed == 0 && elapsed_s > 0.0).then(|| total as f64 / MB / elapsed_s),
        regions_ok: ok.len() as u64,
        regions_failed: failed,
        slowest_region_mb_per_s: slowest,
        regions: results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> DiskConfig {
        DiskConfig {
            devices: vec![],
            size_mb: 8,
            rszlo_kb: 1024,
            rszhi_kb: 1024,
            crglo: 1,
            crghi: 4,
            thrlo: 1,
            thrhi: 64,
            actions: vec![Action::Write, Action::Read],
            max_queue: 16,
            force: false,
        }
    }

    #[test]
    fn points_skip_what_the_kit_skips() {
        let p = points(&cfg());
        assert!(p.iter().all(|&(_, c, t)| t >= c && t / c <= 16));
        assert_eq!(p.first(), Some(&(1024, 1, 1)));
        assert!(!p.contains(&(1024, 1, 32)));
        assert!(p.contains(&(1024, 4, 64)));
        assert!(!p.contains(&(1024, 4, 2)));
    }

    #[test]
    fn actions_parse_and_refuse_unknown_words() {
        assert_eq!(
            Action::parse_list("write read").unwrap(),
            vec![Action::Write, Action::Read]
        );
        assert_eq!(Action::parse_list("rewrite").unwrap_err().option, "actions");
        assert!(Action::parse_list(" ").is_err());
    }

    #[test]
    fn validation_names_the_parameter() {
        let b = iolab_backend::by_name("posix").unwrap();
        let mut c = cfg();
        assert_eq!(c.validate(b.as_ref()).unwrap_err().option, "devices");
        c.thrlo = 128;
        assert_eq!(c.validate(b.as_ref()).unwrap_err().option, "thrlo");
        let mut c = cfg();
        c.size_mb = 2;
        assert_eq!(c.validate(b.as_ref()).unwrap_err().option, "size");
    }

    #[test]
    fn a_file_survey_writes_and_reads_its_regions() {
        let dir = std::env::temp_dir().join(format!("iolab-disk-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("dev");
        std::fs::File::create(&f)
            .unwrap()
            .set_len(START_OFFSET + (4 << 20))
            .unwrap();
        let mut c = cfg();
        c.devices = vec![f];
        c.size_mb = 4;
        c.rszlo_kb = 256;
        c.rszhi_kb = 256;
        c.crghi = 2;
        c.thrhi = 2;
        let b = iolab_backend::by_name("posix").unwrap();
        let plan = c.validate(b.as_ref()).unwrap();
        let mut seen = 0;
        let r = run(&plan, b.as_ref(), &mut |_| seen += 1);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(seen, 3, "{:?}", r.points);
        let PointResult::Ran { actions } = &r.points[2].result else {
            panic!()
        };
        assert_eq!(actions.len(), 2);
        assert_eq!(actions[1].regions_ok, 2);
        assert_eq!(
            actions[1].regions.iter().map(|x| x.bytes).sum::<u64>(),
            4 << 20
        );
        assert!(actions[1].mb_per_s.unwrap() > 0.0);
    }
}
