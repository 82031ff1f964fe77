//! IOR 4's JSON document (`-O summaryFormat=JSON`): `Version`, `Began`,
//! `Command line`, `Machine`, `tests` (each with its `Parameters`,
//! `Options` and `Results`), `summary` and `Finished`, with IOR's keys in
//! IOR's order. Unlike IOR's, it is valid JSON throughout (IOR writes a
//! test's file system figures after a stray comma), and numbers keep four
//! decimals as IOR prints them.

use iolab_ior::results::{AccessResult, OpSummary, TestResult};
use iolab_ior::IorPayload;

/// A JSON value whose objects keep their keys in order.
enum V {
    S(String),
    I(i64),
    F(f64),
    O(Vec<(&'static str, V)>),
    A(Vec<V>),
}

fn s(x: impl Into<String>) -> V {
    V::S(x.into())
}

fn i(x: impl TryInto<i64>) -> V {
    V::I(x.try_into().unwrap_or(i64::MAX))
}

/// IOR prints `%.4f`.
fn f(x: f64) -> V {
    V::F(if x.is_finite() {
        (x * 1e4).round() / 1e4
    } else {
        0.0
    })
}

fn write(v: &V, depth: usize, out: &mut String) {
    let pad = |d: usize| "  ".repeat(d);
    match v {
        V::S(t) => out.push_str(&serde_json::to_string(t).unwrap_or_default()),
        V::I(n) => out.push_str(&n.to_string()),
        V::F(x) => out.push_str(&serde_json::to_string(x).unwrap_or_default()),
        V::O(fields) => {
            out.push_str("{\n");
            for (k, (key, val)) in fields.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push_str(": ");
                write(val, depth + 1, out);
                out.push_str(if k + 1 < fields.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push('}');
        }
        V::A(items) => {
            out.push_str("[\n");
            for (k, val) in items.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                write(val, depth + 1, out);
                out.push_str(if k + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push(']');
        }
    }
}

/// The document of a run.
pub fn render(p: &IorPayload, version: &str, command: &str) -> String {
    let doc = V::O(vec![
        ("Version", s(version)),
        ("Began", s(&p.began)),
        ("Command line", s(command)),
        ("Machine", s(&p.machine)),
        ("tests", V::A(p.tests.iter().map(test).collect())),
        (
            "summary",
            V::A(
                p.tests
                    .iter()
                    .flat_map(|t| t.summary.iter().map(move |o| summary(t, o)))
                    .collect(),
            ),
        ),
        ("Finished", s(&p.finished)),
    ]);
    let mut out = String::new();
    write(&doc, 0, &mut out);
    out.push('\n');
    out
}

fn test(t: &TestResult) -> V {
    let mut fields = vec![
        ("TestID", i(t.test.params.id)),
        ("StartTime", s(&t.started)),
        ("Path", s(&t.path)),
    ];
    if let Some(fs) = &t.fs {
        let used = |free: u64, total: u64| match total {
            0 => 0.0,
            _ => (1.0 - free as f64 / total as f64) * 100.0,
        };
        let gib = fs.total_bytes as f64 / (1u64 << 30) as f64;
        let cap = match gib > 1024.0 {
            true => format!("{:.1} TiB", gib / 1024.0),
            false => format!("{gib:.1} GiB"),
        };
        fields.push(("Capacity", s(cap)));
        fields.push((
            "Used Capacity",
            s(format!("{:.1}%", used(fs.free_bytes, fs.total_bytes))),
        ));
        fields.push((
            "Inodes",
            s(format!("{:.1} Mi", fs.inodes as f64 / (1u64 << 20) as f64)),
        ));
        fields.push((
            "Used Inodes",
            s(format!("{:.1}%", used(fs.inodes_free, fs.inodes))),
        ));
    }
    fields.push(("Parameters", parameters(t)));
    fields.push(("Options", options(t)));
    // An access the stop request or a failed call cut short is no
    // measurement: no result.
    fields.push(("Results", V::A(t.measured().map(result).collect())));
    V::O(fields)
}

fn parameters(t: &TestResult) -> V {
    let p = &t.test.params;
    let b = |x: bool| i(u8::from(x));
    V::O(vec![
        ("testID", i(p.id)),
        ("refnum", i(p.ref_num)),
        ("api", s(t.test.api.name())),
        ("platform", s(p.platform.clone().unwrap_or_default())),
        ("testFileName", s(p.test_file.to_string_lossy())),
        ("deadlineForStonewall", i(p.deadline_s)),
        ("stoneWallingWearOut", b(p.wearout)),
        ("maxTimeDuration", i(p.max_time_min)),
        ("outlierThreshold", i(p.outlier_threshold_s)),
        ("options", s("(null)")),
        ("dryRun", i(0)),
        ("nodes", i(t.geometry.nodes)),
        (
            "memoryPerTask",
            i(match p.hog {
                iolab_ior::params::Hog::PerTask(n) => n,
                _ => 0,
            }),
        ),
        (
            "memoryPerNode",
            i(match p.hog {
                iolab_ior::params::Hog::PerNode(n) => n,
                _ => 0,
            }),
        ),
        ("tasksPerNode", i(t.geometry.tasks_on_node0)),
        ("repetitions", i(p.repetitions)),
        ("multiFile", b(p.multi_file)),
        ("interTestDelay", i(p.inter_test_delay_s)),
        ("fsync", b(p.fsync)),
        ("fsyncperwrite", b(p.fsync_per_write)),
        ("useExistingTestFile", b(p.use_existing)),
        ("uniqueDir", b(p.unique_dir)),
        ("singleXferAttempt", b(p.single_xfer_attempt)),
        ("readFile", b(p.read)),
        ("writeFile", b(p.write)),
        ("filePerProc", b(p.file_per_proc)),
        ("reorderTasks", i(p.reorder)),
        ("reorderTasksRandom", i(p.reorder_random)),
        ("reorderTasksRandomSeed", i(p.reorder_seed)),
        ("randomOffset", i(p.random_offset)),
        ("checkWrite", b(p.check_write)),
        ("checkRead", b(p.check_read)),
        ("dataPacketType", i(packet_number(p.packet))),
        ("keepFile", b(p.keep)),
        ("keepFileWithError", b(p.keep_with_error)),
        ("warningAsErrors", b(p.warning_as_errors)),
        ("verbose", i(p.verbose)),
        ("data packet type", s(p.packet.letter().to_string())),
        ("setTimeStampSignature/incompressibleSeed", i(p.signature)),
        ("collective", i(0)),
        ("segmentCount", i(p.segments)),
        ("transferSize", i(p.transfer_bytes)),
        ("blockSize", i(p.block_bytes)),
    ])
}

/// IOR's number for a packet type (its enum's order); iolab's unique
/// data is 4, past IOR's.
fn packet_number(p: iolab_ior::params::Packet) -> i64 {
    use iolab_ior::params::Packet;
    match p {
        Packet::Timestamp => 0,
        Packet::Offset => 1,
        Packet::Incompressible => 2,
        Packet::Random => 3,
        Packet::Unique => 4,
    }
}

fn options(t: &TestResult) -> V {
    // IOR writes the numbers of `Options:` as numbers, the rest as text.
    let numeric = [
        "segments",
        "task offset",
        "reorder random seed",
        "nodes",
        "tasks",
        "clients per node",
        "repetitions",
        "verbose",
        "stonewallingTime",
        "stoneWallingWearOut",
    ];
    V::O(
        super::text::option_lines(t)
            .into_iter()
            .map(|(k, v)| match (numeric.contains(&k), v.parse::<i64>()) {
                (true, Ok(n)) => (k, V::I(n)),
                _ => (k, s(v)),
            })
            .collect(),
    )
}

fn result(r: &AccessResult) -> V {
    let mib = 1048576.0;
    V::O(vec![
        ("access", s(r.access.map_or("", |a| a.name()))),
        ("bwMiB", f(r.bw_bytes_per_s / mib)),
        ("blockKiB", f(r.block_bytes as f64 / 1024.0)),
        ("xferKiB", f(r.transfer_bytes as f64 / 1024.0)),
        ("iops", f(r.iops)),
        ("latency", f(r.latency_s)),
        ("openTime", f(r.open_s)),
        ("wrRdTime", f(r.rdwr_s)),
        ("closeTime", f(r.close_s)),
        ("totalTime", f(r.total_s)),
    ])
}

fn summary(t: &TestResult, o: &OpSummary) -> V {
    let p = &t.test.params;
    let mib = 1048576.0;
    let mut fields = vec![
        ("operation", s(o.access.map_or("", |a| a.name()))),
        ("API", s(t.test.api.name())),
        ("TestID", i(p.id)),
        ("ReferenceNumber", i(p.ref_num)),
        ("segmentCount", i(p.segments)),
        ("blockSize", i(p.block_bytes)),
        ("transferSize", i(p.transfer_bytes)),
        ("numTasks", i(t.geometry.tasks)),
        ("tasksPerNode", i(t.geometry.tasks_on_node0)),
        ("repetitions", i(p.repetitions)),
        ("filePerProc", i(u8::from(p.file_per_proc))),
        ("reorderTasks", i(p.reorder)),
        ("taskPerNodeOffset", i(p.task_per_node_offset)),
        ("reorderTasksRandom", i(p.reorder_random)),
        ("reorderTasksRandomSeed", i(p.reorder_seed)),
        ("bwMaxMIB", f(o.bw_max / mib)),
        ("bwMinMIB", f(o.bw_min / mib)),
        ("bwMeanMIB", f(o.bw_mean / mib)),
        ("bwStdMIB", f(o.bw_sd / mib)),
        ("OPsMax", f(o.ops_max)),
        ("OPsMin", f(o.ops_min)),
        ("OPsMean", f(o.ops_mean)),
        ("OPsSD", f(o.ops_sd)),
        ("MeanTime", f(o.mean_time_s)),
    ];
    if let (Some(time), Some(rate)) = (o.stonewall_time_s, o.stonewall_bytes_per_s) {
        fields.push(("StoneWallTime", f(time)));
        fields.push(("StoneWallbwMeanMIB", f(rate / mib)));
    }
    fields.push(("xsizeMiB", f(o.agg_bytes as f64 / mib)));
    V::O(fields)
}
