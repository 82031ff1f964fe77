//! Checks across options that the table cannot make one option at a
//! time. Runs before anything touches the file system, so a bad command
//! line exits 2 having created nothing.

use crate::error::UsageError;
use crate::parse::config::{Config, TargetOpts};
use crate::parse::values::{Measure, Op, VerifyKind};

/// Sector size O_DIRECT transfers must be a multiple of.
pub const DIO_ALIGN: u64 = 512;

// Limits on numbers from the command line, each checked before anything
// is allocated or created (docs/xdd.md, "Limits", lists them).

/// QThreads of one target, and of all targets together: each is an OS
/// thread with its own buffer (io_uring: ring entries per target).
pub const MAX_QTHREADS: u64 = 4096;
/// Targets in one run.
pub const MAX_TARGETS: u64 = 4096;
/// `-blocksize` in bytes.
pub const MAX_BLOCKSIZE: u64 = 1 << 30;
/// `-reqsize` in blocks.
pub const MAX_REQSIZE_BLOCKS: u64 = 1 << 30;
/// Bytes of one request (`-reqsize` x `-blocksize`): Linux moves at most
/// about 2 GiB per read or write call, so a larger request could not be
/// issued as one operation.
pub const MAX_REQUEST_BYTES: u64 = 1 << 30;
/// `-memalign` in bytes.
pub const MAX_MEMALIGN: u64 = 1 << 30;
/// Buckets of `-seek disthist` and `-seek seekhist`.
pub const MAX_HIST_BUCKETS: u64 = 1 << 20;
/// `-timestamps size`: entries per QThread.
pub const MAX_TS_ENTRIES: u64 = 1 << 24;
/// Bytes of one time stamp entry in memory.
pub const TS_ENTRY_BYTES: u64 = 64;
/// Entries per QThread when `-ts size` is not given (see target.rs).
pub const TS_DEFAULT_ENTRIES: u64 = 1 << 18;
/// `-passes`.
pub const MAX_PASSES: u64 = 1_000_000;
/// Operations in a `-lockstep` or trigger condition.
pub const MAX_MEASURE_OPS: u64 = 1 << 32;
/// Bytes in a `-lockstep` or trigger condition (1 PiB).
pub const MAX_MEASURE_BYTES: u64 = 1 << 50;
/// Longest interval a `-throttle` may put between two requests of a
/// target: a slower rate would park QThreads in one long sleep.
pub const MAX_THROTTLE_INTERVAL_S: f64 = 3600.0;
/// Any duration or rate given as a decimal (about 3 years in seconds),
/// so it converts to nanoseconds without overflow.
pub const MAX_SECONDS: f64 = iolab_opts::MAX_SECONDS;

/// Validates a resolved configuration.
pub fn validate(c: &Config) -> Result<(), UsageError> {
    if c.targets.is_empty() {
        return Err(UsageError::new(
            "targets",
            "no target given: use -target NAME or -targets N NAME1 ... NAMEN (NAME may be `null`)",
        ));
    }
    for (i, t) in c.targets.iter().enumerate() {
        target(c, i, t)?;
        range_within_size(c, i, t)?;
    }
    resources(c, iolab_core::env::memory_limit().bytes)?;
    backend_options(c)?;
    clock(c)?;
    crate::e2e::validate::validate(c)?;
    relations(c)
}

/// Backend options (`--s3.endpoint=URL`) must be known, well formed, and
/// for a backend some target runs on; each target's backend must accept
/// its own.
fn backend_options(c: &Config) -> Result<(), UsageError> {
    let given = &c.global.backend_options;
    let opts = iolab_backend::parse_options(given)
        .map_err(|e| UsageError::new("backend options", e.to_string()))?;
    if opts.flag("posix", "odirect") {
        // Under xdd it would open O_DIRECT behind -dio's back: no aligned
        // buffers, no size checks, and a report saying direct I/O is off.
        return Err(UsageError::new(
            "backend options",
            "--posix.odirect: xdd's direct I/O is -dio (aligned buffers, sizes checked, reported)",
        ));
    }
    let used: Vec<&str> = c.targets.iter().map(crate::plan::backend_name).collect();
    if let Some(b) = opts.backends().find(|b| !used.contains(b)) {
        return Err(UsageError::new(
            "backend options",
            format!("--{b}.* options given but no target is on the {b} backend"),
        ));
    }
    for t in &c.targets {
        crate::plan::target_backend(t, &c.global)
            .map_err(|e| UsageError::new("backend options", e.to_string()))?;
    }
    Ok(())
}

/// -starttime needs a global clock, and the clock needs a host; its key
/// file, when one is named, must be usable before anything starts.
fn clock(c: &Config) -> Result<(), UsageError> {
    if let Some(ts) = &c.global.timeserver {
        ts.shared_key()
            .map_err(|e| UsageError::new("timeserver", format!("key: {e}")))?;
    }
    match (&c.global.timeserver, c.global.starttime_s) {
        (Some(ts), _) if ts.host.is_empty() => Err(UsageError::new(
            "timeserver",
            "no host given: use -timeserver host NAME",
        )),
        (None, Some(_)) => Err(UsageError::new(
            "starttime",
            "needs -timeserver host NAME: the start time is read on the global clock",
        )),
        _ => Ok(()),
    }
}

/// Threads and memory of the whole run against what the machine can
/// give: the QThread cap and the buffers (data, verify copy, time stamp
/// tables) against the memory this process may take.
pub fn resources(c: &Config, memory_bytes: u64) -> Result<(), UsageError> {
    if c.targets.len() as u64 > MAX_TARGETS {
        return Err(UsageError::new(
            "targets",
            format!(
                "{} targets is above the limit of {MAX_TARGETS}",
                c.targets.len()
            ),
        ));
    }
    let threads: u64 = c.targets.iter().map(|t| t.queuedepth).sum();
    if threads > MAX_QTHREADS {
        return Err(UsageError::new(
            "queuedepth",
            format!("{threads} QThreads over all targets is above the limit of {MAX_QTHREADS}; lower -queuedepth or the number of targets"),
        ));
    }
    let mut total: u64 = 0;
    for t in &c.targets {
        total = total.saturating_add(buffer_bytes(t).saturating_mul(t.queuedepth));
    }
    if total > memory_bytes {
        return Err(UsageError::new(
            "queuedepth",
            format!(
                "the buffers need {total} bytes (targets x -queuedepth x (request size, and the base of unique write data, see -datapattern; verify copy; time stamps)), above the {memory_bytes} bytes this process may take (the least of the machine's memory, ulimit -v and its cgroup's limit); lower -queuedepth, -reqsize or -blocksize"
            ),
        ));
    }
    Ok(())
}

/// Memory one QThread of `t` holds: its data buffer (at least the
/// alignment), a copy for verification, and its time stamp table.
fn buffer_bytes(t: &TargetOpts) -> u64 {
    let xfer = t.xfer_bytes();
    // Unique write data is a window on a base of at least a period
    // (crate::plan::unique), with room for reads beside it; its verify copy is
    // one period.
    let period = t
        .datapattern
        .build()
        .ok()
        .filter(|p| p.kind == crate::plan::datapat::PatternKind::Random)
        .map(|_| crate::plan::unique::Shape::new(0, 0, xfer as usize).period as u64);
    let data = match period {
        Some(p) => p.saturating_add(xfer.saturating_mul(2)),
        None => xfer,
    }
    .max(t.memalign);
    let verify = match (t.verify.is_some(), period) {
        (false, _) => 0,
        (true, Some(p)) => p,
        (true, None) => data,
    };
    let ts = if t.timestamps.enabled {
        t.timestamps.size.unwrap_or(TS_DEFAULT_ENTRIES) * TS_ENTRY_BYTES
    } else {
        0
    };
    data.saturating_add(verify).saturating_add(ts)
}

/// Bytes of all passes together must fit the 64-bit counters.
fn run_bytes(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let per_pass = match (t.numreqs, t.bytes) {
        (Some(n), _) => n.saturating_mul(t.xfer_bytes()),
        (None, Some(b)) => b,
        (None, None) => 0,
    };
    if per_pass.checked_mul(c.global.passes).is_none() {
        return Err(UsageError::new(
            "passes",
            format!(
                "target {i}: {} passes of {per_pass} bytes overflow a 64-bit byte count; lower -passes or the amount",
                c.global.passes
            ),
        ));
    }
    Ok(())
}

/// A rate limit slow enough to leave more than an hour between requests.
fn throttle(i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let Some(th) = t.throttle else {
        return Ok(());
    };
    let interval_s = match th.kind {
        crate::parse::values::ThrottleKind::Ops => 1.0 / th.rate,
        crate::parse::values::ThrottleKind::Bw => t.xfer_bytes() as f64 / (th.rate * 1e6),
    };
    if interval_s > MAX_THROTTLE_INTERVAL_S {
        return Err(UsageError::new(
            "throttle",
            format!("target {i}: rate {} leaves {interval_s:.0} seconds between requests, above the limit of {MAX_THROTTLE_INTERVAL_S}; raise the rate", th.rate),
        ));
    }
    Ok(())
}

/// The farthest byte a target can reach, as a file offset (i64).
fn reach(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let passes = c.global.passes.saturating_sub(1);
    let blocks = t
        .passoffset
        .checked_mul(passes)
        .and_then(|b| b.checked_add(t.startoffset))
        .and_then(|b| b.checked_add(t.targetoffset.checked_mul(i as u64)?))
        .and_then(|b| b.checked_add(t.seek.range_blocks.unwrap_or(0)))
        .and_then(|b| b.checked_mul(t.blocksize));
    match blocks {
        Some(b) if b <= i64::MAX as u64 => Ok(()),
        _ => Err(UsageError::new(
            "startoffset",
            format!("target {i}: -startoffset, -passoffset, -targetoffset and -seek range reach beyond the largest file offset ({} bytes)", i64::MAX),
        )),
    }
}

/// `-seek range` must lie inside what can be read: a block device's
/// size, or, for a target that only reads, its file's size. Past it,
/// every request there would fail mid-run ("read moved 0 of N bytes").
/// Without it, the amount asked (-numreqs, -bytes) must fit a block
/// device from the start offset: a write ran up to the end and failed
/// there with ENOSPC, after changing the device.
fn range_within_size(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    // Without -seek range, the amount sets how far the requests go (a
    // time-limited run's range is already cut to an existing target).
    let ops = t
        .numreqs
        .or_else(|| t.bytes.map(|b| b.div_ceil(t.xfer_bytes().max(1))));
    let (range, asked) = match (t.seek.range_blocks, ops) {
        (Some(r), _) => (r, None),
        (None, Some(n)) => (
            n.saturating_mul(t.reqsize)
                .saturating_mul(t.seek.interleave.max(1)),
            Some(n),
        ),
        (None, None) => return Ok(()),
    };
    // Only a target on local storage has a size to look up here.
    if !crate::plan::target_capabilities(t).local {
        return Ok(());
    }
    // Through the target's backend, as every look at the storage under
    // test (a missing target is reported where it is opened).
    let (Ok(be), Ok(path)) = (
        crate::plan::target_backend(t, &c.global),
        iolab_backend::c_path(std::path::Path::new(&t.path)),
    ) else {
        return Ok(());
    };
    let Ok(st) = be.stat(&path) else {
        return Ok(());
    };
    let (size, what) = if st.is_block_device {
        match be.device_geometry(&path) {
            Ok(g) => (g.bytes, "the block device"),
            Err(_) => return Ok(()),
        }
    } else if st.is_file && !t.writes() && asked.is_none() {
        // Reading a file past its end by the amount asked is run and
        // reported as short reads (docs/xdd.md), as the file may grow.
        (st.size, "the file (a target that only reads)")
    } else {
        return Ok(());
    };
    let passes = c.global.passes.saturating_sub(1);
    let base = t
        .passoffset
        .saturating_mul(passes)
        .saturating_add(t.startoffset)
        .saturating_add(t.targetoffset.saturating_mul(i as u64));
    let end = base.saturating_add(range).saturating_mul(t.blocksize);
    if end <= size {
        return Ok(());
    }
    if let Some(n) = asked {
        let room = size.saturating_sub(base.saturating_mul(t.blocksize));
        return Err(UsageError::new(
            if t.numreqs.is_some() { "numreqs" } else { "bytes" },
            format!(
                "target {i} ({}): {n} requests of {} bytes (from block {base}) reach byte {end}, past the end of {what} at {size} bytes; ask for at most {room} bytes from there",
                t.path,
                t.xfer_bytes(),
            ),
        ));
    }
    Err(UsageError::new(
        "seek",
        format!(
            "target {i} ({}): -seek range {range} blocks of {} bytes (from block {base}) reaches byte {end}, past the end of {what} at {size} bytes; lower -seek range to at most {} blocks",
            t.path,
            t.blocksize,
            (size / t.blocksize.max(1)).saturating_sub(base)
        ),
    ))
}

fn target(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    if t.recreatefiles && !t.writes() && !t.createnewfiles {
        // Recreating what it only reads would delete the file and then
        // fail to open it (XDD does the same).
        return Err(UsageError::new(
            "recreatefiles",
            format!("target {i} ({}): it only reads; -recreatefiles would delete what it reads (use -reopen)", t.path),
        ));
    }
    if t.createnewfiles && !t.writes() {
        // Each pass's new file (NAME.00000001, ...) is created empty by
        // no one: the read of it fails mid-run.
        return Err(UsageError::new(
            "createnewfiles",
            format!("target {i} ({}): it only reads; -createnewfiles makes a new file for each pass to write, and there would be nothing to read", t.path),
        ));
    }
    if t.preallocate > 0 && !t.writes() {
        // Preallocation reserves space for writes; a target that only
        // reads would print it in the preamble and do nothing.
        return Err(UsageError::new(
            "preallocate",
            format!(
                "target {i} ({}): it only reads; -preallocate reserves space for writing (drop it)",
                t.path
            ),
        ));
    }
    if t.throttle_var.is_some() && t.throttle.is_none() {
        return Err(UsageError::new(
            "throttle",
            format!("target {i}: -throttle var varies a rate: give -throttle ops N or bw N too"),
        ));
    }
    let timed = t.timelimit_s > 0.0 || c.global.runtime_s > 0.0;
    if t.numreqs.is_none() && t.bytes.is_none() && !timed {
        return Err(UsageError::new(
            "numreqs",
            format!("target {i} ({}): no amount given; use -numreqs, -bytes/-kbytes/-mbytes/-gbytes, -timelimit or -runtime", t.path),
        ));
    }
    // The parser bounds both factors by 2^30, so the product is exact.
    if t.xfer_bytes() > MAX_REQUEST_BYTES {
        return Err(UsageError::new(
            "reqsize",
            format!(
                "target {i}: -reqsize {} x -blocksize {} = {} bytes per request is above the limit of {MAX_REQUEST_BYTES}",
                t.reqsize,
                t.blocksize,
                t.xfer_bytes()
            ),
        ));
    }
    t.xfer_bytes()
        .checked_mul(t.numreqs.unwrap_or(1))
        .ok_or_else(|| {
            UsageError::new(
                "reqsize",
                format!("target {i}: request size times -numreqs overflows"),
            )
        })?;
    named(i, t)?;
    reach(c, i, t)?;
    throttle(i, t)?;
    run_bytes(c, i, t)?;
    let caps = crate::plan::target_capabilities(t);
    if caps.whole_object_writes {
        s3_target(i, t)?;
    }
    if t.dio {
        dio(c, i, t)?;
    }
    // The words together (a modifier with nothing to modify), before
    // -verify location asks what they make.
    t.datapattern
        .build()
        .map_err(|e| UsageError::new("datapattern", format!("target {i}: {e}")))?;
    if t.verify == Some(VerifyKind::Location) && !t.datapattern.is_sequenced() {
        return Err(UsageError::new(
            "verify",
            format!("target {i}: 'location' checks sequenced data; add -datapattern sequenced"),
        ));
    }
    if t.seek.interleave > 1 && t.seek.interleave > t.queuedepth.max(1) * 1024 {
        return Err(UsageError::new(
            "seek",
            format!(
                "target {i}: interleave factor {} is implausibly large",
                t.seek.interleave
            ),
        ));
    }
    if let Some(f) = &t.seek.load {
        std::fs::metadata(f).map_err(|e| {
            UsageError::new(
                "seek",
                format!("target {i}: cannot read seek file '{f}': {e}"),
            )
        })?;
        // A loaded list's locations are absolute (a saved list has the
        // offsets of its run in it): offsets given too were ignored.
        let moved = [
            ("startoffset", t.startoffset),
            ("targetoffset", t.targetoffset),
            ("passoffset", t.passoffset),
        ];
        if let Some((opt, _)) = moved.iter().find(|(_, v)| *v != 0) {
            return Err(UsageError::new(
                opt,
                format!(
                    "target {i}: -seek load's locations are absolute (a saved list holds the offsets of the run that saved it); put the offset in the file's locations, or leave -{opt} out"
                ),
            ));
        }
    }
    if t.engine == crate::parse::values::EngineKind::Uring {
        uring(c, i, t, &caps)?;
    }
    // An end-to-end destination's data comes from the network: a `null`
    // destination can check it before discarding it.
    let received = t.e2e.role() == Some(crate::e2e::opts::Role::Destination);
    if caps.discards && ((t.verify.is_some() && !received) || t.deletefile) {
        return Err(UsageError::new(
            if t.verify.is_some() {
                "verify"
            } else {
                "deletefile"
            },
            format!("target {i} is `null`: nothing to verify or delete"),
        ));
    }
    Ok(())
}

/// `-target ''` names nothing: refused here rather than failing to
/// create a file called "" once the run has started.
fn named(i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    if t.name.is_empty() {
        return Err(UsageError::new(
            "target",
            format!("target {i}: the target name is empty; give a file or device name (or `null`)"),
        ));
    }
    Ok(())
}

/// Checks that look at the file system (nothing is created or written):
/// run after [`validate`] and before any target is opened.
pub fn preflight(c: &Config) -> Result<(), UsageError> {
    for (i, t) in c.targets.iter().enumerate() {
        reads_exist(i, t, c)?;
        no_link_per_pass(i, t, c)?;
    }
    Ok(())
}

/// The files -createnewfiles makes (NAME.00000001, ...) are named by
/// iolab, not the user: a link planted at one of those names would send
/// a pass's data elsewhere, so it is refused rather than followed.
fn no_link_per_pass(i: usize, t: &TargetOpts, c: &Config) -> Result<(), UsageError> {
    if !t.createnewfiles || !crate::plan::target_capabilities(t).local {
        return Ok(());
    }
    for pass in 1..=c.global.passes {
        let name = crate::run::target::pass_file_name(&t.path, pass);
        if std::fs::symlink_metadata(&name).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(UsageError::new(
                "createnewfiles",
                format!("target {i}: {name} is a symbolic link; the files made per pass are never written through one: remove it or name the target otherwise"),
            ));
        }
    }
    Ok(())
}

/// A target that is read (`-op read`, or `-rwratio` above 0) must exist
/// before the run: reading a file that is created by the run itself would
/// read past its end. An end-to-end destination writes what it receives;
/// `-preallocate` creates the file at its size first.
fn reads_exist(i: usize, t: &TargetOpts, c: &Config) -> Result<(), UsageError> {
    let destination = t.e2e.role() == Some(crate::e2e::opts::Role::Destination);
    // Only a file of this machine can be looked for here (not `null`, not
    // an object in a store).
    let local = crate::plan::target_capabilities(t).local;
    if !local || destination {
        return Ok(());
    }
    // -op noop opens the target without writing, so it must exist too.
    let noop = t.op == crate::parse::values::Op::Noop;
    if !noop && (t.read_percent() <= 0.0 || t.preallocate > 0) {
        return Ok(());
    }
    // Asked of the target's backend (a link whose target is missing is
    // missing: it could not be read).
    let missing = crate::plan::target_backend(t, &c.global)
        .ok()
        .zip(iolab_backend::c_path(std::path::Path::new(&t.path)).ok())
        .is_some_and(|(be, p)| matches!(be.exists(&p), Ok(false)));
    match missing {
        true => {
            let how = match (t.rwratio, noop) {
                (_, true) => "-op noop opens it (without reading or writing)".to_string(),
                (Some(r), _) => format!("-rwratio {r} reads {r}% of its requests"),
                (None, _) => "-op read reads it".to_string(),
            };
            Err(UsageError::new(
                if t.rwratio.is_some() && !noop { "rwratio" } else { "op" },
                format!(
                    "target {i} ({}) does not exist and {how}; create it first (for example with an -op write run of the same size) or add -preallocate",
                    t.path
                ),
            ))
        }
        false => Ok(()),
    }
}

/// What an object in an object store cannot do: it is uploaded whole
/// (parts assembled at close) and then read, never both in one pass.
fn s3_target(i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let (opt, why) = if t.rwratio.is_some_and(|r| r > 0.0 && r < 100.0) {
        ("rwratio", "cannot mix reads and writes: an object is readable only once its upload completes; run -op write, then -op read")
    } else if t.dio {
        ("dio", "has no O_DIRECT; drop -dio")
    } else if t.preallocate > 0 {
        ("preallocate", "cannot be preallocated; drop -preallocate")
    } else if t.writes() && t.xfer_bytes() < S3_MIN_PART_BYTES && several_requests(t) {
        ("reqsize", "is written in a multipart upload, one part per request, and S3 takes parts of at least 5 MiB (all but the last): use -reqsize 5120 or more with the default 1024-byte blocks, or one request")
    } else {
        return Ok(());
    };
    Err(UsageError::new(
        opt,
        format!("target {i} ({}): an S3 object {why}", t.path),
    ))
}

/// S3's smallest part of a multipart upload (but the last).
const S3_MIN_PART_BYTES: u64 = 5 << 20;

/// More than one request per pass (a time-limited run always may be).
fn several_requests(t: &TargetOpts) -> bool {
    match (t.numreqs, t.bytes) {
        (Some(n), _) => n > 1,
        (None, Some(b)) => b > t.xfer_bytes(),
        (None, None) => true,
    }
}

/// What the io_uring engine cannot do: one operation type per ring, one
/// request size, no per-operation coordination between QThreads.
fn uring(
    c: &Config,
    i: usize,
    t: &TargetOpts,
    caps: &iolab_backend::Capabilities,
) -> Result<(), UsageError> {
    let why = if !caps.raw_fd {
        Some("needs a backend with a file descriptor: a real file or device, not `null` or an S3 object")
    } else if t.rwratio.is_some_and(|r| r > 0.0 && r < 100.0) {
        Some("cannot mix reads and writes (-rwratio); use the default engine")
    } else if t
        .rwratio
        .is_some_and(|r| !(r == 100.0 && t.op == Op::Read || r == 0.0 && t.op == Op::Write))
    {
        // The ring runs -op's type: an -rwratio that says otherwise
        // would be ignored.
        Some("runs -op's one operation type: give -op read for -rwratio 100, -op write for -rwratio 0")
    } else if t.numreqs.is_none() && t.bytes.is_some_and(|b| b % t.xfer_bytes() != 0) {
        Some("needs -bytes to be a whole number of requests")
    } else if t.ordering != crate::parse::values::Ordering::None {
        Some("has no QThreads to order; drop -ordering")
    } else if c.global.syncio > 0
        || c.global
            .lockstep
            .iter()
            .any(|l| l.slave == i || l.master == i)
    {
        Some("cannot be paced per operation by -syncio or -lockstep")
    } else {
        None
    };
    match why {
        Some(w) => Err(UsageError::new(
            "engine",
            format!("target {i}: io_uring {w}"),
        )),
        None => Ok(()),
    }
}

/// -dio: request sizes and offsets must be multiples of what O_DIRECT
/// needs of the target (at least 512 bytes; more where the kernel or
/// the device says so, as on 4096-byte sectors), and the buffers must
/// be aligned as it asks: otherwise every request fails with EINVAL
/// during the run, saying nothing of alignment.
fn dio(c: &Config, i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    let found = dio_alignment(c, t);
    let (align, whose) = match found {
        Some(a) if a.offset_bytes > DIO_ALIGN => (
            a.offset_bytes,
            format!("the direct I/O alignment of {} ({})", t.path, a.source),
        ),
        _ => (DIO_ALIGN, "the sector size O_DIRECT needs".to_string()),
    };
    let aligned = |v: u64| v.is_multiple_of(align);
    let fix = format!("make them multiples of {align} bytes, or drop -dio");
    if !aligned(t.xfer_bytes()) {
        return Err(UsageError::new("dio", format!(
            "target {i}: request size {} bytes (-reqsize {} x -blocksize {}) is not a multiple of {align} bytes, {whose}; {fix}",
            t.xfer_bytes(), t.reqsize, t.blocksize
        )));
    }
    let starts = [
        ("startoffset", t.startoffset),
        ("passoffset", t.passoffset),
        ("targetoffset", t.targetoffset),
    ];
    if let Some((opt, b)) = starts
        .iter()
        .find(|(_, b)| !aligned(b.saturating_mul(t.blocksize)))
    {
        return Err(UsageError::new("dio", format!(
            "target {i}: -{opt} {b} blocks of {} bytes is not a multiple of {align} bytes, {whose}; offsets must be aligned for O_DIRECT: {fix}",
            t.blocksize
        )));
    }
    if let (None, Some(b)) = (t.numreqs, t.bytes) {
        if !aligned(b) {
            return Err(UsageError::new("dio", format!(
                "target {i}: -bytes {b} leaves a last request that is not a multiple of {align} bytes, {whose}; {fix}"
            )));
        }
    }
    let memory = found.map_or(0, |a| a.memory_bytes);
    let buffer = t.memalign.max(iolab_core::buffer::page_size() as u64);
    if memory > buffer {
        return Err(UsageError::new("memalign", format!(
            "target {i}: -dio needs buffers aligned to {memory} bytes ({whose}); give -memalign {memory}"
        )));
    }
    Ok(())
}

/// What O_DIRECT needs of target `t`, asked of its backend: of the file
/// or device, or for a file yet to be made, of its directory. None when
/// nothing says (the 512-byte floor applies).
fn dio_alignment(c: &Config, t: &TargetOpts) -> Option<iolab_backend::DirectIoAlignment> {
    if !crate::plan::target_capabilities(t).local {
        return None;
    }
    let be = crate::plan::target_backend(t, &c.global).ok()?;
    let path = std::path::Path::new(&t.path);
    let here = iolab_backend::c_path(path).ok()?;
    if be.stat(&here).is_ok() {
        return be.direct_io_alignment(&here).ok().flatten();
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    be.direct_io_alignment(&iolab_backend::c_path(dir).ok()?)
        .ok()
        .flatten()
}

/// Start triggers that could never fire are refused rather than left to
/// wait for ever: a cycle (each target waits for another of the cycle to
/// start; a lockstep slave that starts with `wait` waits for its master
/// too), and, with several passes, an `op` mark beyond the requests
/// of the watched target's pass (it then waits at the pass barrier for
/// the target that waits for it).
fn start_triggers_can_fire(c: &Config) -> Result<(), UsageError> {
    let triggers = c.global.starttriggers.iter().map(|t| (t.from, t.to));
    let lockstep = c.global.lockstep.iter().filter(|l| !l.startup_run);
    let edges: Vec<(usize, usize)> = triggers
        .chain(lockstep.map(|l| (l.master, l.slave)))
        .collect();
    for start in 0..c.targets.len() {
        // Follow "waits for" from `start`; coming back to it is a cycle.
        let (mut seen, mut stack) = (vec![false; c.targets.len()], vec![start]);
        while let Some(t) = stack.pop() {
            for &(from, _) in edges.iter().filter(|&&(_, to)| to == t) {
                if from == start {
                    let opt = if c.global.starttriggers.is_empty() {
                        "lockstep"
                    } else {
                        "starttrigger"
                    };
                    return Err(UsageError::new(
                        opt,
                        format!("target {start} waits, through the start triggers and lockstep slaves, for itself: none of them would start"),
                    ));
                }
                if !std::mem::replace(&mut seen[from], true) {
                    stack.push(from);
                }
            }
        }
    }
    if c.global.passes > 1 {
        for t in &c.global.starttriggers {
            let per_pass = c.targets.get(t.from).and_then(|s| s.numreqs);
            if let (Measure::Op(mark), Some(n)) = (t.when, per_pass) {
                if mark > n {
                    return Err(UsageError::new(
                        "starttrigger",
                        format!("op {mark}: target {} makes {n} requests a pass, and with -passes {} it waits for target {} at the end of the first", t.from, c.global.passes, t.to),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `-lockstep` pairs take turns (XDD's base/lockstep.c). Refused: a
/// target in a second relation (XDD chains relations into one ring of
/// turns, and a second master of a slave breaks that ring: the first
/// master is never woken again), a start trigger between the two of a
/// pair (the one would wait for progress the other makes only in turns
/// it cannot get), and a `percent` turn of a pass with no planned size.
fn lockstep_pairs(c: &Config) -> Result<(), UsageError> {
    let ls = &c.global.lockstep;
    for (k, l) in ls.iter().enumerate() {
        let earlier = ls[..k].iter().find(|e| {
            [e.master, e.slave].contains(&l.master) || [e.master, e.slave].contains(&l.slave)
        });
        if let Some(e) = earlier {
            let t = if [e.master, e.slave].contains(&l.slave) {
                l.slave
            } else {
                l.master
            };
            return Err(UsageError::new(
                "lockstep",
                format!("target {t} is in two -lockstep relations ({} {} and {} {}): iolab runs lockstep pairs only, one master and one slave taking turns (in XDD a second master of a slave is never woken again)", e.master, e.slave, l.master, l.slave),
            ));
        }
        let between =
            |a: usize, b: usize| (a, b) == (l.master, l.slave) || (b, a) == (l.master, l.slave);
        if let Some(t) = c
            .global
            .starttriggers
            .iter()
            .find(|t| between(t.from, t.to))
        {
            return Err(UsageError::new(
                "starttrigger",
                format!("{} {}: targets {} and {} take turns through -lockstep; one cannot wait to start for the other's progress", t.from, t.to, l.master, l.slave),
            ));
        }
        let timed = c
            .targets
            .get(l.master)
            .is_some_and(|m| m.numreqs.is_none() && m.bytes.is_none());
        if matches!(l.when, Measure::Percent(_)) && timed {
            return Err(UsageError::new(
                "lockstep",
                format!("percent: master target {} has no planned amount per pass (only a time limit); give -numreqs or -bytes, or a turn in op, kbytes, mbytes or time", l.master),
            ));
        }
    }
    Ok(())
}

/// -syncio's barrier needs every target to reach operation N, 2N, ...
/// on its own. A lockstep slave gets there only as its master grants
/// it work, and a target behind a start trigger only once another has
/// gone far enough: both can leave each waiting for the other at the
/// barrier (XDD then hangs), so the pair is refused.
fn syncio_can_meet(c: &Config) -> Result<(), UsageError> {
    if c.global.syncio == 0 {
        return Ok(());
    }
    let paced = if !c.global.lockstep.is_empty() {
        "-lockstep"
    } else if !c.global.starttriggers.is_empty() {
        "-starttrigger"
    } else {
        return Ok(());
    };
    Err(UsageError::new(
        "syncio",
        format!("cannot be used with {paced}: a target it holds back cannot reach the barrier, and the targets would wait for each other for ever"),
    ))
}

fn relations(c: &Config) -> Result<(), UsageError> {
    let n = c.targets.len();
    let check = |opt: &str, a: usize, b: usize| {
        if a >= n || b >= n {
            Err(UsageError::new(
                opt,
                format!("targets {a} and {b}: there are only {n} targets (numbered from 0)"),
            ))
        } else if a == b {
            Err(UsageError::new(
                opt,
                format!("target {a} cannot be paired with itself"),
            ))
        } else {
            Ok(())
        }
    };
    for l in &c.global.lockstep {
        check("lockstep", l.master, l.slave)?;
        if matches!(l.what, Measure::Percent(_)) {
            return Err(UsageError::new("lockstep", "<what> cannot be 'percent'"));
        }
    }
    for t in &c.global.starttriggers {
        check("starttrigger", t.from, t.to)?;
    }
    start_triggers_can_fire(c)?;
    lockstep_pairs(c)?;
    syncio_can_meet(c)?;
    for t in &c.global.stoptriggers {
        check("stoptrigger", t.from, t.to)?;
    }
    let hb = &c.global.heartbeat;
    let asked = crate::parse::values::HeartbeatOpts {
        interval_s: 0.0,
        ..hb.clone()
    } != Default::default();
    if hb.interval_s == 0.0 && asked {
        return Err(UsageError::new(
            "heartbeat",
            "heartbeat figures were chosen but no interval: add -heartbeat SECONDS",
        ));
    }
    if let Some(&bad) = c.global.heartbeat.only_targets.iter().find(|&&t| t >= n) {
        return Err(UsageError::new(
            "heartbeat",
            format!("target {bad} does not exist"),
        ));
    }
    let cpus = iolab_core::env::host_info().cpus;
    let procs = c
        .targets
        .iter()
        .filter_map(|t| t.processor)
        .chain(c.global.singleproc);
    if let Some(p) = procs.into_iter().find(|&p| p >= cpus) {
        return Err(UsageError::new(
            "processor",
            format!("processor {p} does not exist (this system has {cpus}, numbered from 0)"),
        ));
    }
    Ok(())
}
