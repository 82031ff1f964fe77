//! Stage three: from a validated config, everything each target needs to
//! run, derived once: operations per pass, request sizes, the seek plan,
//! the data pattern and verifier mode, the throttle schedule, and which
//! coordination rules apply to it. Planning writes no file; it reads a
//! -seek load list, and the size of an existing target when a pass is
//! limited only by time (so that the cycled range stays inside it).

// The plan stage: a Config to what each target does (offsets, data,
// rate).
pub mod datapat;
pub mod placement;
pub mod seek;
pub mod throttle;
pub mod unique;

use crate::error::UsageError;
use crate::parse::config::{Config, GlobalOpts, TargetOpts};
use crate::parse::values::*;
use crate::plan::datapat::{DataPattern, VerifyMode};
use crate::plan::seek::{SeekConfig, SeekPattern as Sp, SeekPlan};
use crate::plan::throttle::{Schedule, ThrottleSpec as Ts};

/// Range cycled over by runs limited only by time, when no -seek range.
pub const DEFAULT_TIMED_RANGE_BYTES: u64 = 1 << 30;

/// One target, ready to run.
#[derive(Debug, Clone)]
pub struct TargetPlan {
    /// Target number.
    pub index: usize,
    /// Its options.
    pub opts: TargetOpts,
    /// The backend it runs on, by name (`iolab_backend::by_name`): XDD's
    /// `null` target is the null backend, `s3://` targets S3, everything
    /// else POSIX.
    pub backend: &'static str,
    /// What that backend can do, asked once here: the run and the copy
    /// decide by these, never by the backend's name.
    pub caps: iolab_backend::Capabilities,
    /// Operations per pass; u64::MAX when only a time limit ends a pass.
    pub ops: u64,
    /// Offsets repeat every `wrap` operations (time-limited runs).
    pub wrap: u64,
    /// Bytes of a full request.
    pub xfer_bytes: u64,
    /// Bytes of the last request (smaller when -bytes is not a multiple).
    pub last_bytes: u64,
    /// Where each request goes.
    pub seek: SeekPlan,
    /// Write buffer contents.
    pub pattern: DataPattern,
    /// Read verification.
    pub verify: Option<VerifyMode>,
    /// Rate limit.
    pub schedule: Option<Schedule>,
    /// Read share in hundredths of a percent (10000 = all reads).
    pub read_e4: u64,
    /// The lockstep relation in which this target is the slave.
    pub slave_of: Option<LockstepSpec>,
    /// The lockstep relation in which this target is the master.
    pub master_of: Option<LockstepSpec>,
    /// (target, condition) that must hold before each pass starts.
    pub start_after: Vec<(usize, Measure)>,
    /// (target, condition) that ends this target's pass.
    pub stop_when: Vec<(usize, Measure)>,
}

impl TargetPlan {
    /// True when operation `n` of a pass reads (spreads reads evenly so
    /// that any prefix of the pass holds the -rwratio share).
    #[inline]
    pub fn is_read(&self, n: u64) -> bool {
        let reads = |k: u64| (k as u128 * self.read_e4 as u128) / 10_000;
        reads(n + 1) > reads(n)
    }

    /// Bytes of operation `n`.
    #[inline]
    pub fn op_bytes(&self, n: u64) -> u64 {
        if n + 1 == self.ops {
            self.last_bytes
        } else {
            self.xfer_bytes
        }
    }

    /// Bytes per pass as planned (0 when only time-limited).
    pub fn planned_bytes(&self) -> u64 {
        if self.ops == u64::MAX {
            0
        } else {
            (self.ops - 1) * self.xfer_bytes + self.last_bytes
        }
    }
}

/// The whole run, ready to start.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Run-wide options.
    pub global: GlobalOpts,
    /// Per target.
    pub targets: Vec<TargetPlan>,
}

/// Derives the plan.
pub fn plan(cfg: &Config) -> Result<Plan, UsageError> {
    let targets = cfg
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| target_plan(cfg, i, t))
        .collect::<Result<_, _>>()?;
    Ok(Plan {
        global: cfg.global.clone(),
        targets,
    })
}

/// Operations per pass and last request size: -numreqs wins over the
/// byte amounts; a byte amount that is not a whole number of requests
/// ends with a short request so exactly that many bytes move.
fn amounts(t: &TargetOpts) -> (u64, u64) {
    let x = t.xfer_bytes();
    match (t.numreqs, t.bytes) {
        (Some(n), _) => (n, x),
        (None, Some(b)) => (b.div_ceil(x), if b % x == 0 { x } else { b % x }),
        (None, None) => (u64::MAX, x),
    }
}

fn target_plan(cfg: &Config, i: usize, t: &TargetOpts) -> Result<TargetPlan, UsageError> {
    let (ops, last_bytes) = amounts(t);
    let wrap = if ops == u64::MAX {
        let range = match t.seek.range_blocks {
            Some(blocks) => blocks,
            None => timed_range_bytes(i, t, &cfg.global)? / t.blocksize,
        };
        timed_requests(t, range)
    } else {
        ops
    };
    stagger_fits(i, t)?;
    let seek = SeekPlan::new(&seek_config(t, wrap)?, i as u64)
        .map_err(|e| UsageError::new("seek", format!("target {i}: {e}")))?;
    let schedule = match t.throttle {
        None => None,
        Some(th) => Some(
            Schedule::new(
                match th.kind {
                    ThrottleKind::Ops => Ts::Ops(th.rate),
                    ThrottleKind::Bw => Ts::BandwidthMb(th.rate),
                },
                t.xfer_bytes(),
            )
            .map_err(|e| UsageError::new("throttle", format!("target {i}: {e}")))?
            .with_variance(th.variance_pct, i as u64),
        ),
    };
    let g = &cfg.global;
    Ok(TargetPlan {
        index: i,
        opts: t.clone(),
        backend: backend_name(t),
        caps: target_capabilities(t),
        ops,
        wrap,
        xfer_bytes: t.xfer_bytes(),
        last_bytes,
        seek,
        pattern: data_pattern(i, t)?,
        verify: t.verify.map(|v| match v {
            VerifyKind::Location => VerifyMode::Location,
            VerifyKind::Contents => VerifyMode::Contents,
        }),
        schedule,
        read_e4: (t.read_percent() * 100.0).round() as u64,
        // Validation leaves a target in one relation at most.
        slave_of: g.lockstep.iter().find(|l| l.slave == i).copied(),
        master_of: g.lockstep.iter().find(|l| l.master == i).copied(),
        start_after: g
            .starttriggers
            .iter()
            .filter(|s| s.to == i)
            .map(|s| (s.from, s.when))
            .collect(),
        stop_when: g
            .stoptriggers
            .iter()
            .filter(|s| s.to == i)
            .map(|s| (s.from, s.when))
            .collect(),
    })
}

/// Requests a time-limited pass makes before its offsets repeat: as
/// many as fit in `range_blocks` one step apart (a sequential pass with
/// `-seek interleave N` steps N requests, a stagger with a stride steps
/// the stride), so that the last one ends inside the range.
fn timed_requests(t: &TargetOpts, range_blocks: u64) -> u64 {
    let req = t.reqsize;
    let interleaved = req.saturating_mul(t.seek.interleave.max(1));
    let step = match (t.seek.pattern, t.seek.stagger_stride_blocks) {
        (SeekPattern::Sequential, _) => interleaved,
        (SeekPattern::Stagger, Some(stride)) if stride > req => {
            (stride - req).saturating_add(interleaved)
        }
        _ => req,
    };
    match range_blocks.checked_sub(req) {
        Some(past_first) => past_first / step + 1,
        None => 1,
    }
}

/// The range a time-limited pass cycles over without `-seek range`: the
/// default, or what an existing target holds from the farthest start of
/// its passes (its offsets) to its end, when that is smaller (a read
/// past the end would be a short transfer, a write would grow the file).
/// An existing target that leaves less than one request there has no
/// range to cycle over: refused, as reading would run off its end and
/// writing would grow it.
fn timed_range_bytes(i: usize, t: &TargetOpts, g: &GlobalOpts) -> Result<u64, UsageError> {
    // A sink (the null target) has no size: nothing runs off its end.
    let size = if t.createnewfiles || target_capabilities(t).discards {
        None
    } else {
        existing_size(t, g)
    };
    let Some(size) = size else {
        return Ok(DEFAULT_TIMED_RANGE_BYTES);
    };
    let (from, moved) = farthest_start(i, t, g.passes);
    let room = size.saturating_sub(from);
    if room >= t.xfer_bytes() {
        return Ok(room.min(DEFAULT_TIMED_RANGE_BYTES));
    }
    let limit = if t.timelimit_s > 0.0 {
        "-timelimit"
    } else {
        "-runtime"
    };
    let fix = "give a smaller -reqsize, an amount (-numreqs, -bytes) or -seek range";
    let Some(&(option, _)) = moved.first() else {
        return Err(UsageError::new(
            &limit[1..],
            format!(
                "target {i} ({}) holds {size} bytes, less than one request of {} bytes: \
                 a pass limited only by time cycles over the target's size; {fix}",
                t.path,
                t.xfer_bytes()
            ),
        ));
    };
    let offsets: Vec<String> = moved.iter().map(|(o, v)| format!("-{o} {v}")).collect();
    Err(UsageError::new(
        option,
        format!(
            "target {i} ({}) holds {size} bytes, and with {} its last pass starts at byte {from}, \
             leaving less than one request of {} bytes: a pass limited only by time ({limit}) \
             cycles between its offsets and the target's end; lower the offsets or {fix}",
            t.path,
            offsets.join(", "),
            t.xfer_bytes()
        ),
    ))
}

/// The byte at which the last pass of target `i` starts
/// (`startoffset + i x targetoffset + (passes - 1) x passoffset`
/// blocks, as the seek plan places it), and the offset options that move
/// it there, with their values.
fn farthest_start(i: usize, t: &TargetOpts, passes: u64) -> (u64, Vec<(&'static str, u64)>) {
    let later = passes.saturating_sub(1);
    let parts = [
        ("startoffset", t.startoffset, 1),
        ("targetoffset", t.targetoffset, i as u64),
        ("passoffset", t.passoffset, later),
    ];
    let moved: Vec<_> = parts
        .iter()
        .filter(|(_, v, times)| *v != 0 && *times != 0)
        .map(|&(o, v, _)| (o, v))
        .collect();
    let blocks = parts.iter().fold(0u64, |b, (_, v, times)| {
        b.saturating_add(v.saturating_mul(*times))
    });
    (blocks.saturating_mul(t.blocksize), moved)
}

/// Size of an existing file or block device (None when there is none),
/// asked of the target's backend.
fn existing_size(t: &TargetOpts, g: &GlobalOpts) -> Option<u64> {
    let be = target_backend(t, g).ok()?;
    let path = std::ffi::CString::new(t.path.as_bytes()).ok()?;
    match be.stat(&path) {
        Ok(st) if st.is_file => Some(st.size),
        // A device's stat size is 0; its open handle knows the size.
        Ok(st) if st.is_block_device => {
            let h = be.open(&path, iolab_backend::OpenOptions::read()).ok()?;
            let size = be.fstat(&h).map_or(0, |s| s.size);
            let _ = be.close(h);
            Some(size)
        }
        _ => None,
    }
}

/// A target's backend, by [`backend_name`], with the backend options
/// given for it (`--s3.endpoint=...`), not started yet.
pub fn target_backend(
    t: &TargetOpts,
    g: &GlobalOpts,
) -> Result<Box<dyn iolab_backend::Backend>, iolab_backend::OptionError> {
    let name = backend_name(t);
    let opts = iolab_backend::parse_options(&g.backend_options)?.only(name);
    iolab_backend::with_options(name, &opts)
}

/// The backend a target runs on: XDD's `null` target is the null
/// backend, an `s3://bucket/key` target the S3 backend, every other
/// target POSIX. With [`bucket`], the one place that reads the target's
/// spelling; what follows asks the backend's [`target_capabilities`].
pub fn backend_name(t: &TargetOpts) -> &'static str {
    if t.name == "null" {
        "null"
    } else if t.path.starts_with("s3://") {
        "s3"
    } else {
        "posix"
    }
}

/// The bucket of an `s3://BUCKET/KEY` target (`s3://BUCKET`), which must
/// be there before anything is made in it; None for any other target.
/// Read from the target's spelling here, beside [`backend_name`].
pub fn bucket(t: &TargetOpts) -> Option<String> {
    let rest = t.path.strip_prefix("s3://")?;
    Some(format!("s3://{}", rest.split('/').next().unwrap_or("")))
}

/// What a target's backend can do. A backend this build does not have
/// (S3 without the `s3` feature) can do nothing here; validation refuses
/// it by name with its backend options.
pub fn target_capabilities(t: &TargetOpts) -> iolab_backend::Capabilities {
    iolab_backend::by_name(backend_name(t))
        .map(|b| b.capabilities())
        .unwrap_or_default()
}

/// `-seek stagger` spreads requests over `-seek range`; a range that
/// cannot hold one request is refused, as it is for `-seek random`.
fn stagger_fits(i: usize, t: &TargetOpts) -> Result<(), UsageError> {
    match t.seek.range_blocks {
        Some(r) if t.seek.pattern == SeekPattern::Stagger && r < t.reqsize => Err(UsageError::new(
            "seek",
            format!(
                "target {i}: -seek range {r} blocks is smaller than -reqsize {} blocks, so stagger cannot place a request; raise -seek range",
                t.reqsize
            ),
        )),
        _ => Ok(()),
    }
}

fn seek_config(t: &TargetOpts, wrap: u64) -> Result<SeekConfig, UsageError> {
    let pattern = match (&t.seek.load, t.seek.pattern) {
        (Some(f), _) => Sp::Loaded(
            crate::plan::seek::load_list(
                std::path::Path::new(f),
                crate::plan::seek::last_block(t.blocksize, t.xfer_bytes()),
            )
            .map_err(|e| UsageError::new("seek", format!("load {f}: {e}")))?,
        ),
        (None, SeekPattern::Random) => Sp::Random,
        (None, SeekPattern::Stagger) => Sp::Stagger,
        (None, SeekPattern::None) => Sp::None,
        (None, SeekPattern::Sequential) => Sp::Sequential,
    };
    Ok(SeekConfig {
        pattern,
        block_size: t.blocksize,
        reqsize_blocks: t.reqsize,
        num_reqs: wrap,
        range_blocks: t.seek.range_blocks,
        stagger_stride_blocks: t.seek.stagger_stride_blocks,
        seed: t.seek.seed,
        interleave: t.seek.interleave,
        randomize: t.randomize,
        start_offset_blocks: t.startoffset,
        pass_offset_blocks: t.passoffset,
        target_offset_blocks: t.targetoffset,
    })
}

/// Builds the data pattern from the parsed words, sized for the target's
/// requests and keyed to this run (so that no two runs, targets or passes
/// write the same unique blocks).
fn data_pattern(i: usize, t: &TargetOpts) -> Result<DataPattern, UsageError> {
    let mut p = t
        .datapattern
        .build()
        .map_err(|e| UsageError::new("datapattern", format!("target {i}: {e}")))?;
    p.fit(t.xfer_bytes() as usize, run_key(), i);
    Ok(p)
}

/// A key that differs from run to run: the wall clock and the process id.
fn run_key() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    iolab_core::random::mix(now ^ u64::from(std::process::id()) << 40)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse, Parsed};

    fn plan_of(line: &str) -> Plan {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        let Parsed::Run(c) = parse(&args).unwrap() else {
            panic!()
        };
        plan(&c).unwrap()
    }

    #[test]
    fn numreqs_wins_and_bytes_are_exact() {
        let p = plan_of("-target a -reqsize 4 -mbytes 1 -numreqs 3");
        assert_eq!(
            (p.targets[0].ops, p.targets[0].planned_bytes()),
            (3, 3 * 4096)
        );
        let p = plan_of("-target a -reqsize 4 -bytes 10000");
        let t = &p.targets[0];
        assert_eq!(
            (t.ops, t.last_bytes, t.planned_bytes()),
            (3, 10000 - 8192, 10000)
        );
    }

    #[test]
    fn rwratio_spreads_reads() {
        let p = plan_of("-target a -numreqs 100 -rwratio 30");
        let reads = (0..100).filter(|&n| p.targets[0].is_read(n)).count();
        assert_eq!(reads, 30);
        let p = plan_of("-target a -numreqs 10 -op write");
        assert!((0..10).all(|n| !p.targets[0].is_read(n)));
    }

    #[test]
    fn guide_example_4_offsets_stay_in_range() {
        let p =
            plan_of("-op read -target a -reqsize 8 -mbytes 16 -seek random -seek range 4000000");
        let t = &p.targets[0];
        assert_eq!(t.ops, 2048);
        let pass = t.seek.pass(1);
        assert!((0..2048).all(|n| pass.offset(n) + 8192 <= 4_000_000 * 1024));
    }

    #[test]
    fn a_timed_pass_ends_its_last_request_inside_the_range() {
        let wrap = |extra: &str| {
            let line = format!("-target a -reqsize 4 -timelimit 1 -seek range 64 {extra}");
            plan_of(&line).targets[0].wrap
        };
        assert_eq!(wrap(""), 16);
        // Requests 8 blocks apart: the 8th starts at 56 and ends at 60.
        assert_eq!(wrap("-seek interleave 2"), 8);
        // A stride of 16: requests at 0, 16, 32, 48.
        assert_eq!(wrap("-seek stagger 16"), 4);
        assert_eq!(wrap("-seek random"), 16);
    }

    #[test]
    fn the_last_pass_starts_past_every_offset() {
        let p = plan_of("-target a -reqsize 4 -numreqs 1 -startoffset 2 -passoffset 3 -targetoffset 5 -passes 4");
        let (bytes, moved) = farthest_start(2, &p.targets[0].opts, 4);
        assert_eq!(bytes, (2 + 2 * 5 + 3 * 3) * 1024);
        assert_eq!(
            moved,
            [("startoffset", 2), ("targetoffset", 5), ("passoffset", 3)]
        );
        let (bytes, moved) = farthest_start(0, &p.targets[0].opts, 1);
        assert_eq!((bytes, moved), (2048, vec![("startoffset", 2)]));
    }

    #[test]
    fn throttles_become_smooth_schedules() {
        let p = plan_of("-target a -numreqs 10 -throttle ops 100");
        let s = p.targets[0].schedule.unwrap();
        assert_eq!((s.due_ns(1), s.due_ns(100)), (10_000_000, 1_000_000_000));
        // 4 KiB requests at 4.096 MB/s: one per millisecond.
        let p = plan_of("-target a -numreqs 10 -reqsize 4 -throttle bw 4.096");
        assert_eq!(p.targets[0].schedule.unwrap().due_ns(5), 5_000_000);
        let p = plan_of("-target a -numreqs 10 -throttle target 0 ops 7.8 -throttle var 10");
        assert!(p.targets[0].schedule.is_some());
    }
}
