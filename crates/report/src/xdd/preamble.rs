//! The preamble XDD prints before its results: run-wide options, the
//! system, and one block of options per target (guide section 8.2).

use iolab_core::env::HostInfo;
use iolab_xdd::config::{Config, TargetOpts};
use iolab_xdd::results::TargetInfo;
use iolab_xdd::values::*;

fn on(b: bool) -> &'static str {
    if b {
        "enabled"
    } else {
        "disabled"
    }
}

/// Where the preamble goes: XDD's text report, or the head of the
/// `-csvout` file, where a value holding a comma or a quote is quoted so a
/// CSV reader gets it back whole.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Text,
    Csv,
}

/// A line of `key, value` pairs, as XDD prints it. In the CSV form a value
/// that needs quoting is quoted and follows its comma directly (a CSV
/// reader takes a quote as opening a field only at the field's start).
fn kv(f: Form, fields: &[&str]) -> String {
    let mut s = String::new();
    for (i, v) in fields.iter().enumerate() {
        let quoted = crate::csvw::field(v);
        let quote = f == Form::Csv && quoted != *v;
        if i > 0 {
            s += if quote { "," } else { ", " };
        }
        s += if quote { &quoted } else { v };
    }
    s + "\n"
}

fn sizes(label: &str, blocks: u64, bs: u64) -> String {
    let b = blocks as f64 * bs as f64;
    format!(
        "\t\t{label}, {blocks}, blocks, {}, bytes, {:.3} KBytes, {:.3} MBytes, {:.3} GBytes, {:.6} TBytes\n",
        blocks * bs, b / 1024.0, b / 1048576.0, b / 1073741824.0, b / 1099511627776.0
    )
}

/// The run-wide part and the system part.
fn run_part(f: Form, c: &Config, h: &HostInfo, start_wall_ns: u64) -> String {
    let g = &c.global;
    let id = if g.id.is_empty() {
        "No ID Specified".to_string()
    } else {
        g.id.join(" ")
    };
    let qthreads: u64 = c.targets.iter().map(|t| t.queuedepth).sum();
    let (user, page, ticks) = (&h.user, h.page_size.max(1), h.clock_ticks);
    let mut s = format!(
        "IOIOIOIOIOIOIOIOIOI iolab xdd version {} (XDD 7.0 command line) IOIOIOIOIOIOIOIOIOI\n",
        env!("CARGO_PKG_VERSION")
    );
    s += &format!(
        "Starting time for this run, {}\n",
        iolab_core::clock::format_local(start_wall_ns / 1_000_000_000, "%a %b %e %H:%M:%S %Y")
    );
    s += &kv(f, &["ID for this run", &format!("'{id}'")]);
    s += &format!("Maximum Process Priority, {}\n", on(g.maxpri));
    s += &format!(
        "Passes, {}\nPass Delay in seconds, {}\n",
        g.passes, g.passdelay_s
    );
    s += &format!("Maximum Error Threshold, {}\n", g.maxerrors);
    s += &format!(
        "Target Offset, {}\n",
        c.targets.first().map_or(0, |t| t.targetoffset)
    );
    s += &format!("I/O Synchronization, {}\n", g.syncio);
    s += &format!("Total run-time limit in seconds, {}\n", g.runtime_s);
    s += &kv(
        f,
        &["Output file name", g.output.as_deref().unwrap_or("stdout")],
    );
    s += &kv(
        f,
        &["CSV output file name", g.csvout.as_deref().unwrap_or("")],
    );
    s += &kv(
        f,
        &[
            "Error output file name",
            g.errout.as_deref().unwrap_or("stderr"),
        ],
    );
    s += &format!("Pass synchronization barriers, {}\n", on(!g.nobarrier));
    s += &format!(
        "Number of Targets, {}\nNumber of I/O Threads, {qthreads}\n",
        c.targets.len()
    );
    s += &kv(f, &["Computer Name", &h.hostname, "User Name", user]);
    s += &kv(f, &["OS release and version", &h.kernel]);
    s += &kv(f, &["Machine hardware type", &h.arch]);
    s += &format!("Number of processors on this system, {}\n", h.cpus);
    s += &format!(
        "Page size in bytes, {page}\nNumber of physical pages, {}\n",
        h.memory_bytes / page
    );
    s += &format!(
        "Megabytes of physical memory, {}\n",
        h.memory_bytes / 1048576
    );
    s += &format!("Clock Ticks per second, {ticks}\n");
    s += &format!(
        "Seconds before starting, {}\n",
        c.targets.iter().map(|t| t.startdelay_s).fold(0.0, f64::max)
    );
    s
}

/// One target's block.
fn target_part(f: Form, i: usize, t: &TargetOpts, info: &TargetInfo) -> String {
    let rp = t.read_percent();
    let mut s = kv(f, &[&format!("\tTarget[{i}] Q[0]"), &info.path]);
    let dir = if t.targetdir.is_empty() {
        "./"
    } else {
        &t.targetdir
    };
    // XDD puts the directory in quotes of its own; in the CSV form a
    // directory that needs quoting gets CSV's quotes instead.
    s += &match f {
        Form::Csv if crate::csvw::field(dir) != dir => kv(f, &["\t\tTarget directory", dir]),
        _ => format!("\t\tTarget directory, \"{dir}\"\n"),
    };
    s += &format!("\t\tProcess ID, {}\n", info.pid);
    s += &format!(
        "\t\tProcessor, {}\n",
        t.processor.map_or("all/any".to_string(), |p| p.to_string())
    );
    s += &format!(
        "\t\tRead/write ratio, {rp:.2} READ, {:.2} WRITE\n",
        100.0 - rp
    );
    let th = t.throttle.map_or("0.00".to_string(), |x| {
        format!(
            "{:.2} {}",
            x.rate,
            if x.kind == ThrottleKind::Bw {
                "MB/sec"
            } else {
                "ops/sec"
            }
        )
    });
    s += &format!("\t\tThrottle, {th}\n");
    s += &format!("\t\tPer-pass time limit in seconds, {}\n", t.timelimit_s);
    s += &format!("\t\tPass seek randomization, {}\n", on(t.randomize));
    s += &format!("\t\tFile write synchronization, {}\n", on(t.syncwrite));
    s += &format!("\t\tBlocksize in bytes, {}\n", t.blocksize);
    s += &format!(
        "\t\tRequest size, {}, blocks, {}, bytes\n",
        t.reqsize,
        t.xfer_bytes()
    );
    let ops = if info.planned_ops == u64::MAX {
        "until time limit".to_string()
    } else {
        info.planned_ops.to_string()
    };
    s += &format!("\t\tNumber of Operations, {ops}, of, {ops}, target ops for all qthreads\n");
    s += &sizes("Start offset", t.startoffset, t.blocksize);
    if info.planned_ops != u64::MAX {
        let bytes = t
            .bytes
            .filter(|_| t.numreqs.is_none())
            .unwrap_or(info.planned_ops * t.xfer_bytes());
        s += &format!("\t\tTotal data transfer for this target, {bytes}, bytes\n");
    }
    s += &sizes("Pass Offset", t.passoffset, t.blocksize);
    s += &sizes("Seek range", info.range_blocks, t.blocksize);
    let pattern = match &t.seek.load {
        Some(f) => format!("loaded from {f}"),
        None => format!("{:?}", t.seek.pattern).to_lowercase(),
    };
    s += &format!("\t\tSeek pattern, {pattern}\n");
    s + &buffer_part(t, info)
}

/// The rest of a target's block: buffers, data, engine, time stamps.
fn buffer_part(t: &TargetOpts, info: &TargetInfo) -> String {
    let mut s = String::new();
    s += &format!("\t\tFlushwrite interval, {}\n", t.flushwrite);
    s += &format!(
        "\t\tI/O memory buffer is a {} memory buffer\n",
        if t.sharedmemory { "shared" } else { "normal" }
    );
    s += &format!(
        "\t\tI/O memory buffer alignment in bytes, {}\n",
        if t.memalign == 0 { 4096 } else { t.memalign }
    );
    s += &format!("\t\tData pattern in buffer, {}\n", t.datapattern.describe());
    s += &format!(
        "\t\tData buffer verification is {}.\n",
        t.verify
            .map_or("disabled".to_string(), |v| format!("{v:?}").to_lowercase())
    );
    s += &format!(
        "\t\tDirect I/O, {}{}\n",
        on(info.direct_io || t.dio),
        if t.dio && !info.direct_io && info.planned_ops != 0 && info.pid != 0 {
            " (requested; see notes)"
        } else {
            ""
        }
    );
    s += &format!("\t\tPreallocation, {}\n", t.preallocate);
    s += &format!("\t\tQueue Depth, {}\n", t.queuedepth);
    s += &format!(
        "\t\tOrdering, {}\n",
        format!("{:?}", t.ordering).to_lowercase()
    );
    s += &format!(
        "\t\tI/O engine, {}\n",
        format!("{:?}", t.engine).to_lowercase()
    );
    let ts = &t.timestamps;
    s += &format!(
        "\t\tTimestamping, {}\n",
        if ts.enabled {
            format!(
                "enabled{}{}",
                if ts.detailed { " for DETAILED" } else { "" },
                if ts.summary || !ts.detailed {
                    " SUMMARY"
                } else {
                    ""
                }
            )
        } else {
            "disabled".into()
        }
    );
    s += &format!("\t\tDelete file, {}\n", on(t.deletefile));
    s += &e2e_part(t);
    s
}

/// The end-to-end lines of a target (none for a local target).
fn e2e_part(t: &TargetOpts) -> String {
    use iolab_xdd::e2e::opts::Role;
    let Some(role) = t.e2e.role() else {
        return String::new();
    };
    let side = match role {
        Role::Source => "source",
        Role::Destination => "destination",
    };
    let mut s = format!(
        "\t\tEnd-to-end, {side}, destinations, {}\n",
        t.e2e.describe_destinations().join(" ")
    );
    let r = &t.restart;
    if r.any() {
        s += &format!(
            "\t\tRestart, {}{}\n",
            match (role, r.monitored()) {
                (Role::Destination, true) =>
                    format!("file {} every {} s", r.file_for(&t.path), r.frequency_s()),
                _ => "follows the destination".into(),
            },
            r.offset
                .map(|o| format!(", offset {o}"))
                .unwrap_or_default()
        );
    }
    s
}

/// The full preamble, as the text report prints it.
pub fn render(c: &Config, h: &HostInfo, start_wall_ns: u64, infos: &[TargetInfo]) -> String {
    render_as(Form::Text, c, h, start_wall_ns, infos)
}

/// The full preamble at the head of the `-csvout` file: the same lines, a
/// value holding a comma or a quote quoted.
pub fn render_csv(c: &Config, h: &HostInfo, start_wall_ns: u64, infos: &[TargetInfo]) -> String {
    render_as(Form::Csv, c, h, start_wall_ns, infos)
}

fn render_as(
    f: Form,
    c: &Config,
    h: &HostInfo,
    start_wall_ns: u64,
    infos: &[TargetInfo],
) -> String {
    let mut s = run_part(f, c, h, start_wall_ns);
    for (i, (t, info)) in c.targets.iter().zip(infos).enumerate() {
        s += &target_part(f, i, t, info);
    }
    s
}
