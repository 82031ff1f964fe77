//! The value readers behind the option table: one function per option
//! whose values need more than a number. Each records its settings into
//! the raw configuration; nothing is validated across options here.

use crate::error::UsageError;
use crate::parse::config::{RawConfig, TargetOpts};
use crate::parse::cursor::Cursor;
use crate::parse::validate::{
    MAX_HIST_BUCKETS, MAX_MEASURE_BYTES, MAX_MEASURE_OPS, MAX_MEMALIGN, MAX_SECONDS, MAX_TARGETS,
    MAX_TS_ENTRIES,
};
use crate::parse::values::*;

/// Parses `what` as a range-checked number in `unit`, for -lockstep and
/// the triggers. Byte measures stay below 1 PiB and operation counts
/// below 2^32, so the engine's products of them stay inside 64 bits.
pub(crate) fn measure(c: &mut Cursor, unit: &str, what: &str) -> Result<Measure, UsageError> {
    Ok(match unit {
        "time" => Measure::Time(c.seconds(what)?),
        "op" => Measure::Op(c.count(what, 1, MAX_MEASURE_OPS)?),
        "percent" => {
            let p = c.seconds(what)?;
            if p > 100.0 {
                return Err(c.err(format!("{what} {p} is above the limit of 100 (percent)")));
            }
            Measure::Percent(p)
        }
        "mbytes" => Measure::Mbytes(c.count(what, 1, MAX_MEASURE_BYTES >> 20)?),
        _ => Measure::Kbytes(c.count(what, 1, MAX_MEASURE_BYTES >> 10)?),
    })
}

pub(crate) fn amount(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
    unit: u64,
) -> Result<(), UsageError> {
    let n = c.positive("amount")?;
    let bytes = n
        .checked_mul(unit)
        .ok_or_else(|| c.err(format!("{n} is too large")))?;
    r.set(t, move |o| o.bytes = Some(bytes));
    Ok(())
}

pub(crate) fn flag_t(
    r: &mut RawConfig,
    t: Option<usize>,
    f: fn(&mut TargetOpts),
) -> Result<(), UsageError> {
    r.set(t, f);
    Ok(())
}

pub(crate) fn ordering(r: &mut RawConfig, t: Option<usize>, o: Ordering) -> Result<(), UsageError> {
    r.set(t, move |x| x.ordering = o);
    Ok(())
}

pub(crate) fn seek(c: &mut Cursor, r: &mut RawConfig, t: Option<usize>) -> Result<(), UsageError> {
    let words = [
        "save",
        "load",
        "disthist",
        "seekhist",
        "random",
        "range",
        "stagger",
        "interleave",
        "seed",
        "none",
        "sequential",
    ];
    let k = c.keyword("seek suboption", &words)?;
    match k.as_str() {
        "save" | "load" => {
            let f = c.value("file name")?.to_string();
            let save = k == "save";
            r.set(t, move |o| {
                if save {
                    o.seek.save = Some(f.clone())
                } else {
                    o.seek.load = Some(f.clone())
                }
            });
        }
        "disthist" | "seekhist" => {
            let n = c.count("number of buckets", 1, MAX_HIST_BUCKETS)? as u32;
            let dist = k == "disthist";
            r.set(t, move |o| {
                if dist {
                    o.seek.disthist = Some(n)
                } else {
                    o.seek.seekhist = Some(n)
                }
            });
        }
        "range" => {
            let n = c.positive("range in blocks")?;
            r.set(t, move |o| o.seek.range_blocks = Some(n));
        }
        "interleave" => {
            let n = c.positive("interleave factor")?;
            r.set(t, move |o| o.seek.interleave = n);
        }
        "seed" => {
            let n = c.u64("seed")?;
            r.set(t, move |o| o.seek.seed = n);
        }
        "stagger" => {
            // Later XDD takes an optional stride in blocks after stagger;
            // a following option, nothing or 0 (XDD's "no stride") means
            // the range is divided.
            let stride = match c.peek() {
                Some(v) if v.bytes().all(|b| b.is_ascii_digit()) => {
                    Some(c.u64("stagger stride in blocks")?).filter(|&n| n > 0)
                }
                _ => None,
            };
            r.set(t, move |o| {
                o.seek.pattern = SeekPattern::Stagger;
                o.seek.stagger_stride_blocks = stride;
            });
        }
        _ => {
            let p = match k.as_str() {
                "random" => SeekPattern::Random,
                "none" => SeekPattern::None,
                _ => SeekPattern::Sequential,
            };
            r.set(t, move |o| o.seek.pattern = p);
        }
    }
    Ok(())
}

pub(crate) fn datapattern(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let first = c.value("pattern")?.to_string();
    let lower = first.to_ascii_lowercase();
    let mut words = vec![first];
    let takes_arg = matches!(
        lower.as_str(),
        "ascii" | "hex" | "prefix" | "file" | "compress" | "dedupe"
    );
    // Later XDD spells `-datapattern wholefile FILE`; a bare `wholefile`
    // (with a separate `file`) is read too.
    if takes_arg || (lower == "wholefile" && c.has_value()) {
        words.push(c.value(&format!("{lower} argument"))?.to_string());
    }
    // Checked now so that a bad pattern fails before anything is created.
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    crate::plan::datapat::DataPattern::default()
        .apply_words(&refs)
        .map_err(|e| {
            c.err(
                e.to_string()
                    .trim_start_matches("-datapattern ")
                    .to_string(),
            )
        })?;
    r.set(t, move |o| o.datapattern.words.push(words.clone()));
    Ok(())
}

pub(crate) fn heartbeat(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let hb = &mut r.global.heartbeat;
    if let Some(i) = t {
        hb.only_targets.push(i);
    }
    let v = c.value("heartbeat suboption")?.to_ascii_lowercase();
    if let Ok(secs) = v.parse::<f64>() {
        if !(secs.is_finite() && secs > 0.0 && secs <= MAX_SECONDS) {
            return Err(c.err(format!(
                "the heartbeat interval must be a number of seconds > 0 and at most {MAX_SECONDS}"
            )));
        }
        hb.interval_s = secs;
        return Ok(());
    }
    // Every spelling XDD's xddfunc_heartbeat takes.
    match v.as_str() {
        "ops" | "operations" => hb.ops = true,
        "bytes" | "b" => hb.bytes = true,
        "kbytes" | "kb" => hb.kbytes = true,
        "mbytes" | "mb" => hb.mbytes = true,
        "gbytes" | "gb" => hb.gbytes = true,
        "bw" | "bandwidth" => hb.bw = true,
        "iops" => hb.iops = true,
        "pct" | "percent" => hb.pct = true,
        "etc" | "eta" | "et" => hb.etc = true,
        "hostname" | "host" => hb.hostname = true,
        "target" | "tgt" => hb.target = true,
        "tod" | "time" => hb.tod = true,
        "elapsed" | "sec" => hb.elapsed = true,
        "lf" | "cr" | "nl" => hb.lf = true,
        "output" | "out" => hb.output = Some(c.value("output file prefix")?.to_string()),
        "ignorerestart" | "ir" | "ignore" => {
            return Err(c.err(format!(
                "'{v}' (XDD's heartbeat without the restart offset) is not implemented: iolab's heartbeat counts what this run moves"
            )))
        }
        _ => {
            return Err(c.err(format!(
                "'{v}' is not a heartbeat suboption: give #seconds, ops, bytes, kbytes, mbytes, gbytes, bw, iops, pct, etc, hostname, target, tod, elapsed, lf or output PREFIX"
            )))
        }
    }
    Ok(())
}

pub(crate) fn timestamps(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let words = [
        "summary",
        "detailed",
        "normalize",
        "output",
        "append",
        "dump",
        "wrap",
        "oneshot",
        "size",
        "triggertime",
        "triggerop",
    ];
    let k = c.keyword("timestamps suboption", &words)?;
    let text = match k.as_str() {
        "output" | "dump" => Some(c.value("file name prefix")?.to_string()),
        _ => None,
    };
    let num = match k.as_str() {
        "size" => Some(c.count("number of entries", 1, MAX_TS_ENTRIES)? as f64),
        "triggerop" => Some(c.u64("operation number")? as f64),
        "triggertime" => Some(c.seconds("seconds")?),
        _ => None,
    };
    r.set(t, move |o| {
        let ts = &mut o.timestamps;
        ts.enabled = true;
        match k.as_str() {
            "summary" => ts.summary = true,
            "detailed" => ts.detailed = true,
            "normalize" => ts.normalize = true,
            "output" => ts.output = text.clone(),
            "dump" => ts.dump = text.clone(),
            "append" => ts.append = true,
            "wrap" => ts.wrap = true,
            "oneshot" => ts.oneshot = true,
            "size" => ts.size = num.map(|n| n as u64),
            "triggerop" => ts.trigger_op = num.map(|n| n as u64),
            _ => ts.trigger_time_s = num,
        }
    });
    Ok(())
}

pub(crate) fn lockstep(c: &mut Cursor, r: &mut RawConfig) -> Result<(), UsageError> {
    let master = c.index("master target number")?;
    let slave = c.index("slave target number")?;
    let wu = c.keyword("<when>", &["time", "op", "percent", "mbytes", "kbytes"])?;
    let when = measure(c, &wu, "<howlong>")?;
    let hu = c.keyword("<what>", &["time", "op", "mbytes", "kbytes"])?;
    let what = measure(c, &hu, "<howmuch>")?;
    let startup_run = c.keyword("<startup>", &["wait", "run"])? == "run";
    let complete = c.keyword("<completion>", &["complete", "stop"])? == "complete";
    r.global.lockstep.push(LockstepSpec {
        master,
        slave,
        when,
        what,
        startup_run,
        complete,
    });
    Ok(())
}

pub(crate) fn trigger(c: &mut Cursor, r: &mut RawConfig, start: bool) -> Result<(), UsageError> {
    let from = c.index("target A")?;
    let to = c.index("target B")?;
    let u = c.keyword("condition", &["time", "op", "percent", "mbytes", "kbytes"])?;
    let when = measure(c, &u, "value")?;
    let spec = TriggerSpec { from, to, when };
    if start {
        r.global.starttriggers.push(spec);
    } else {
        r.global.stoptriggers.push(spec);
    }
    Ok(())
}

pub(crate) fn outputformat(c: &mut Cursor, r: &mut RawConfig) -> Result<(), UsageError> {
    let mode = c.keyword("mode", &["new", "add"])?;
    let spec = c.value("format string such as +PASS+TARGET+BANDWIDTH")?;
    let mut tokens = Vec::new();
    for tok in spec.split('+').map(str::trim).filter(|s| !s.is_empty()) {
        let up = tok.to_ascii_uppercase();
        if !crate::parse::tokens::is_known(&up) {
            return Err(c.err(format!(
                "unknown format token +{up} (see -help outputformat)"
            )));
        }
        tokens.push(up);
    }
    let of = &mut r.global.outputformat;
    if mode == "new" {
        of.replace = true;
        of.tokens = tokens;
    } else {
        of.tokens.extend(tokens);
    }
    Ok(())
}

/// `-targets N name1 ... nameN`, or `-targets -N name` (one name N
/// times): either adds to the targets already named, as XDD's
/// xddfunc_targets does (a second `-targets` does not replace the first).
pub(crate) fn targets(c: &mut Cursor, r: &mut RawConfig) -> Result<(), UsageError> {
    // The count may be negative (`-N`), which reads like an option.
    let word = c
        .any_word()
        .ok_or_else(|| c.err("missing number of targets"))?;
    let (digits, repeat) = match word.strip_prefix('-') {
        Some(d) => (d, true),
        None => (word, false),
    };
    let room = MAX_TARGETS.saturating_sub(r.names.len() as u64);
    let n = match digits.parse::<u64>() {
        Ok(n) if (1..=room).contains(&n) => n as usize,
        Ok(0) => return Err(c.err("the number of targets must not be 0")),
        Ok(n) => {
            return Err(c.err(format!(
                "{n} more targets would make more than {MAX_TARGETS}"
            )))
        }
        Err(_) => {
            return Err(c.err(format!(
            "the number of targets '{word}' is not a whole number (N, or -N for one name N times)"
        )))
        }
    };
    if repeat {
        let name = c.value("name")?;
        r.names.extend(std::iter::repeat_n(name.to_string(), n));
        return Ok(());
    }
    for i in 0..n {
        match c.peek() {
            Some(name) => {
                c.value("name")?;
                r.names.push(name.to_string());
            }
            None => {
                return Err(c.err(format!(
                    "expected {n} target names after '-targets {n}', found {i}"
                )))
            }
        }
    }
    Ok(())
}

pub(crate) fn throttle(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let k = c.keyword("throttle kind", &["ops", "bw", "iops", "var"])?;
    let rate = c.seconds("rate")?;
    if k == "var" {
        if !(0.0..=100.0).contains(&rate) {
            return Err(c.err("the variance is a percent of the rate, from 0 to 100"));
        }
        r.set(t, move |o| {
            o.throttle_var = Some(rate);
            if let Some(th) = o.throttle.as_mut() {
                th.variance_pct = rate
            }
        });
        return Ok(());
    }
    let kind = if k == "bw" {
        ThrottleKind::Bw
    } else {
        ThrottleKind::Ops
    };
    if rate <= 0.0 {
        return Err(c.err("the rate must be greater than 0.000"));
    }
    r.set(t, move |o| {
        let variance_pct = o
            .throttle_var
            .unwrap_or_else(|| o.throttle.map_or(0.0, |th| th.variance_pct));
        o.throttle = Some(ThrottleSpec {
            kind,
            rate,
            variance_pct,
        })
    });
    Ok(())
}

pub(crate) fn ordering_opt(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let modes = ["serial", "loose", "none"];
    let mut side = c.keyword(
        "side or mode",
        &["storage", "network", "both", "serial", "loose", "none"],
    )?;
    let mode = if modes.contains(&side.as_str()) {
        std::mem::replace(&mut side, "storage".into())
    } else {
        c.keyword("mode", &modes)?
    };
    if side == "network" {
        return Err(crate::error::unsupported(
            "ordering",
            "network ordering needs -endtoend",
        ));
    }
    let o = match mode.as_str() {
        "serial" => Ordering::Serial,
        "loose" => Ordering::Loose,
        _ => Ordering::None,
    };
    ordering(r, t, o)
}

pub(crate) fn id(c: &mut Cursor, r: &mut RawConfig) -> Result<(), UsageError> {
    let v = c.value("id string or 'commandline'")?;
    let s = if v.eq_ignore_ascii_case("commandline") {
        r.global.command_line.clone()
    } else {
        v.to_string()
    };
    r.global.id.push(s);
    Ok(())
}

pub(crate) fn syncwrite(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    // The synopsis shows an optional number; 0 turns it off again.
    let on = match c.peek().filter(|v| v.bytes().all(|b| b.is_ascii_digit())) {
        Some(_) => c.u64("number")? != 0,
        None => true,
    };
    r.set(t, move |o| o.syncwrite = on);
    Ok(())
}

pub(crate) fn rwratio(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let v = c.value("read percentage")?;
    let pct: f64 = v
        .parse()
        .map_err(|_| c.err(format!("'{v}' is not a number")))?;
    if !(0.0..=100.0).contains(&pct) {
        return Err(c.err(format!(
            "{pct} is outside 0..100 (percent of operations that read)"
        )));
    }
    r.set(t, move |o| o.rwratio = Some(pct));
    Ok(())
}

pub(crate) fn op(c: &mut Cursor, r: &mut RawConfig, t: Option<usize>) -> Result<(), UsageError> {
    let k = c.keyword("operation", &["read", "write", "noop"])?;
    let op = match k.as_str() {
        "read" => Op::Read,
        "write" => Op::Write,
        _ => Op::Noop,
    };
    r.set(t, move |o| {
        o.op = op;
        o.rwratio = None;
    });
    Ok(())
}

pub(crate) fn memalign(
    c: &mut Cursor,
    r: &mut RawConfig,
    t: Option<usize>,
) -> Result<(), UsageError> {
    let n = c.count("alignment in bytes", 1, MAX_MEMALIGN)?;
    if !n.is_power_of_two() {
        return Err(c.err(format!("{n} is not a power of two")));
    }
    r.set(t, move |o| o.memalign = n);
    Ok(())
}

pub(crate) fn action(r: &mut RawConfig, a: crate::parse::config::Action) -> Result<(), UsageError> {
    r.action.get_or_insert(a);
    Ok(())
}

/// `-timeserver host H port P bounce B key F`: one or more operators, in any
/// order and over several occurrences.
pub fn timeserver(c: &mut Cursor, r: &mut RawConfig, _: Option<usize>) -> Result<(), UsageError> {
    let ts = r.global.timeserver.get_or_insert_with(Default::default);
    let mut any = false;
    while let Some(op) = c
        .peek()
        .map(str::to_ascii_lowercase)
        .filter(|w| matches!(w.as_str(), "host" | "port" | "bounce" | "key"))
    {
        c.value("operator")?;
        match op.as_str() {
            "host" => ts.host = c.value("host name")?.to_string(),
            "port" => ts.port = c.count("port number", 1, 65_535)? as u16,
            "key" => ts.key = Some(c.value("key file")?.to_string()),
            _ => ts.bounce = c.count("bounce count", 1, 100_000)? as u32,
        }
        any = true;
    }
    if !any {
        return Err(c.err("expects host <name>, port <n>, bounce <n> or key <file>"));
    }
    Ok(())
}
