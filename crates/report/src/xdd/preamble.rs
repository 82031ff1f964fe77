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

fn sizes(label: &str, blocks: u64, bs: u64) -> String {
    let b = blocks as f64 * bs as f64;
    format!(
        "\t\t{label}, {blocks}, blocks, {}, bytes, {:.3} KBytes, {:.3} MBytes, {:.3} GBytes, {:.6} TBytes\n",
        blocks * bs, b / 1024.0, b / 1048576.0, b / 1073741824.0, b / 1099511627776.0
    )
}

/// The run-wide part and the system part.
fn run_part(c: &Config, h: &HostInfo, start_wall_ns: u64) -> String {
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
    s += &format!("ID for this run, '{id}'\n");
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
    s += &format!(
        "Output file name, {}\n",
        g.output.as_deref().unwrap_or("stdout")
    );
    s += &format!(
        "CSV output file name, {}\n",
        g.csvout.as_deref().unwrap_or("")
    );
    s += &format!(
        "Error output file name, {}\n",
        g.errout.as_deref().unwrap_or("stderr")
    );
    s += &format!("Pass synchronization barriers, {}\n", on(!g.nobarrier));
    s += &format!(
        "Number of Targets, {}\nNumber of I/O Threads, {qthreads}\n",
        c.targets.len()
    );
    s += &format!("Computer Name, {}, User Name, {user}\n", h.hostname);
    s += &format!(
        "OS release and version, {}\nMachine hardware type, {}\n",
        h.kernel, h.arch
    );
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
fn target_part(i: usize, t: &TargetOpts, info: &TargetInfo) -> String {
    let rp = t.read_percent();
    let mut s = format!("\tTarget[{i}] Q[0], {}\n", info.path);
    s += &format!(
        "\t\tTarget directory, \"{}\"\n",
        if t.targetdir.is_empty() {
            "./"
        } else {
            &t.targetdir
        }
    );
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
    s += &format!(
        "\t\tSeek pattern, {}\n",
        format!("{:?}", t.seek.pattern).to_lowercase()
    );
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

/// The full preamble.
pub fn render(c: &Config, h: &HostInfo, start_wall_ns: u64, infos: &[TargetInfo]) -> String {
    let mut s = run_part(c, h, start_wall_ns);
    for (i, (t, info)) in c.targets.iter().zip(infos).enumerate() {
        s += &target_part(i, t, info);
    }
    s
}
