//! From a plan to its curves: each curve is one sweep of one tool (a
//! series in the results store, its plan a valid `iolab sweep` plan),
//! its x doubling from 1 to the plan's cap, and the named figures it
//! gives. The runs themselves are the tools' own, as `iolab sweep` runs
//! them.

pub use crate::knee::doubling;
use crate::layer::Layer;
use crate::nettest::{network_test, BULK};
use crate::plan::Plan;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What a figure measures, and so its canonical unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// Bytes per second, canonically GiB/s (2^30 bytes per second).
    Bandwidth,
    /// Operations (RPCs, files) per second.
    Rate,
}

impl Kind {
    /// The canonical unit.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Bandwidth => "GiB/s",
            Kind::Rate => "ops/s",
        }
    }
}

/// A named figure one curve gives: a tool's figure, scaled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureSpec {
    /// `layer.figure`, as expectations name it.
    pub name: String,
    /// Its layer.
    pub layer: Layer,
    /// The curve (index into [`Curves::curves`]).
    pub curve: usize,
    /// The tool's phase (`brw write`, `file_create`).
    pub phase: String,
    /// The tool's metric (`bandwidth`, `rpc_rate`, `rate`).
    pub metric: String,
    /// What it measures.
    pub kind: Kind,
    /// The tool's figure times this is the figure in its canonical unit
    /// (lst's MiB/s per client node x clients / 1024 = GiB/s in all).
    pub scale: f64,
    /// Bytes each operation moves, when fixed (brw, xdd requests): a
    /// rate converts to a bandwidth and back.
    pub bytes_per_op: Option<f64>,
}

/// A name standing for the best of several figures (`data.write`, the
/// better of file per task and shared).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alias {
    /// Its name.
    pub name: String,
    /// The figures it is the best of.
    pub of: Vec<String>,
}

/// One curve: a sweep of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Its layer.
    pub layer: Layer,
    /// The series' label in the store (`network brw write 1m`).
    pub label: String,
    /// The sweep plan (TOML), every point up to the cap.
    pub sweep: String,
    /// For a data read curve: the write curve whose point leaves the
    /// files it reads.
    pub reads_after: Option<usize>,
    /// The client nodes each point runs on, when fixed (the network
    /// layer's clients, xdd's one node); else the point's `nodes` axis.
    pub nodes: Option<u32>,
}

/// Every curve of a plan and the figures they give.
#[derive(Debug, Clone, PartialEq)]
pub struct Curves {
    /// The curves, bottom-up.
    pub curves: Vec<Curve>,
    /// The figures.
    pub figures: Vec<FigureSpec>,
    /// The best-of names.
    pub aliases: Vec<Alias>,
}

/// A sweep plan's text, written through the TOML serialiser so that
/// every path and word is quoted as TOML wants.
#[derive(Serialize)]
struct SweepToml {
    label: String,
    tool: &'static str,
    args: Vec<String>,
    repeats: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    launcher: Option<String>,
    /// sync(2) before each repeat: the layers that write to storage, so
    /// that no point pays for the writeback of the one before it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    sync: bool,
    x: Vec<&'static str>,
    x_label: &'static str,
    description: String,
    axes: Vec<AxisToml>,
    #[serde(skip_serializing_if = "Option::is_none")]
    split: Option<SplitToml>,
}

#[derive(Serialize)]
struct AxisToml {
    name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    option: Option<&'static str>,
    values: Vec<toml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<Vec<String>>,
}

#[derive(Serialize)]
struct SplitToml {
    option: &'static str,
    total: u64,
    over: Vec<&'static str>,
}

impl SweepToml {
    fn text(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

fn ints(v: &[u32]) -> Vec<toml::Value> {
    v.iter().map(|&n| toml::Value::Integer(n as i64)).collect()
}

/// Every curve of `plan` and its figures.
pub fn curves(plan: &Plan) -> Curves {
    let mut c = Curves {
        curves: Vec::new(),
        figures: Vec::new(),
        aliases: Vec::new(),
    };
    for &l in &plan.layers {
        match l {
            Layer::Network => network(plan, &mut c),
            Layer::Devices => devices(plan, &mut c),
            Layer::Data => data(plan, &mut c),
            Layer::Metadata => metadata(plan, &mut c),
        }
    }
    c
}

impl Curves {
    fn add(&mut self, curve: Curve) -> usize {
        self.curves.push(curve);
        self.curves.len() - 1
    }

    /// Every name an expectation may use, without unit suffixes.
    pub fn names(&self) -> Vec<&str> {
        self.figures
            .iter()
            .map(|f| f.name.as_str())
            .chain(self.aliases.iter().map(|a| a.name.as_str()))
            .collect()
    }

    /// The figure named `name`.
    pub fn figure(&self, name: &str) -> Option<&FigureSpec> {
        self.figures.iter().find(|f| f.name == name)
    }

    /// The figures of curve `i`.
    pub fn of_curve(&self, i: usize) -> impl Iterator<Item = &FigureSpec> {
        self.figures.iter().filter(move |f| f.curve == i)
    }
}

fn network(plan: &Plan, c: &mut Curves) {
    let n = &plan.network;
    let clients = n.from.len() as f64;
    let mut largest: Vec<(String, u64, String)> = Vec::new();
    for t in n.tests.iter().filter_map(|t| network_test(t).ok()) {
        let mut args = vec!["run".to_string()];
        args.extend(t.words.iter().cloned());
        args.extend([
            "--from".into(),
            n.from.join(","),
            "--to".into(),
            n.to.join(","),
        ]);
        args.extend(["--duration".into(), n.duration_s.to_string()]);
        args.extend([
            "--rsh".into(),
            plan.hosts.rsh.clone(),
            "--port".into(),
            n.port.to_string(),
        ]);
        let label = format!("network {}", t.label);
        let sweep = SweepToml {
            label: label.clone(),
            tool: "lst",
            args,
            repeats: plan.repeats,
            launcher: None,
            sync: false,
            x: vec!["concurrency"],
            x_label: "RPCs in flight per client",
            description: format!(
                "iolab qualify '{}': network layer, lst {} from {} client(s) to {} server(s)",
                plan.label,
                t.label,
                n.from.len(),
                n.to.len()
            ),
            axes: vec![AxisToml {
                name: "concurrency",
                option: Some("--concurrency"),
                values: ints(&doubling(n.concurrency)),
                labels: None,
            }],
            split: None,
        };
        let curve = c.add(Curve {
            layer: Layer::Network,
            label,
            sweep: sweep.text(),
            reads_after: None,
            nodes: Some(n.from.len() as u32),
        });
        let bulk = t.size.is_some_and(|s| s >= BULK);
        c.figures.push(FigureSpec {
            name: format!("network.{}", t.name),
            layer: Layer::Network,
            curve,
            phase: t.phase.clone(),
            metric: if bulk { "bandwidth" } else { "rpc_rate" }.into(),
            kind: if bulk { Kind::Bandwidth } else { Kind::Rate },
            scale: if bulk { clients / 1024.0 } else { clients },
            bytes_per_op: t.size.map(|s| s as f64),
        });
        if let Some(size) = t.size {
            match largest.iter_mut().find(|(p, _, _)| *p == t.phase) {
                Some(l) if l.1 < size => *l = (t.phase.clone(), size, t.name.clone()),
                Some(_) => {}
                None => largest.push((t.phase.clone(), size, t.name.clone())),
            }
        }
    }
    // `network.brw_write`: the largest brw write tested (1m by default).
    for (phase, _, name) in largest {
        c.aliases.push(Alias {
            name: format!("network.{}", phase.replace(' ', "_")),
            of: vec![format!("network.{name}")],
        });
    }
}

fn devices(plan: &Plan, c: &mut Curves) {
    let Some(d) = &plan.devices else { return };
    let work = plan.work_dir();
    let mut args = vec![d.survey.clone()];
    args.extend(d.targets.iter().cloned());
    args.extend(["--size".into(), d.size_mb.to_string()]);
    let tests: &[&str] = match d.survey.as_str() {
        "disk" => {
            args.extend(["--crglo", "1", "--crghi", "1"].map(String::from));
            args.extend(["--max-queue".into(), d.threads.max(16).to_string()]);
            if d.force {
                args.push("--force".into());
            }
            &["write", "read"]
        }
        _ => {
            args.extend(["--nobjlo", "1", "--nobjhi", "1"].map(String::from));
            &["write", "rewrite", "read"]
        }
    };
    if plan.hosts.rsh != crate::plan::LOCAL_RSH {
        args.extend(["--rsh".into(), plan.hosts.rsh.clone()]);
    }
    args.extend(["--rslt".into(), path(&work.join("survey.{point}.{repeat}"))]);
    let threads = doubling(d.threads);
    let values = threads
        .iter()
        .map(|t| {
            toml::Value::Array(
                ["--thrlo", &t.to_string(), "--thrhi", &t.to_string()]
                    .iter()
                    .map(|w| toml::Value::String(w.to_string()))
                    .collect(),
            )
        })
        .collect();
    let label = format!("devices {}", d.survey);
    let sweep = SweepToml {
        label: label.clone(),
        tool: "survey",
        args,
        repeats: plan.repeats,
        launcher: None,
        sync: true,
        x: vec!["threads"],
        x_label: "threads per target",
        description: format!(
            "iolab qualify '{}': devices layer, survey {} of {} target(s)",
            plan.label,
            d.survey,
            d.targets.len()
        ),
        axes: vec![AxisToml {
            name: "threads",
            option: None,
            values,
            labels: Some(threads.iter().map(u32::to_string).collect()),
        }],
        split: None,
    };
    let curve = c.add(Curve {
        layer: Layer::Devices,
        label,
        sweep: sweep.text(),
        reads_after: None,
        nodes: Some(1),
    });
    for t in tests {
        // The kit's MB is 2^20 bytes.
        c.figures.push(FigureSpec {
            name: format!("devices.{t}"),
            layer: Layer::Devices,
            curve,
            phase: t.to_string(),
            metric: "bandwidth".into(),
            kind: Kind::Bandwidth,
            scale: 1.0 / 1024.0,
            bytes_per_op: None,
        });
    }
}

/// A path as a word of a command line.
fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Whether `name`, an entry of the plan's files directory
/// ([`Plan::work_dir`]), is one its tools make there: the survey's
/// `survey.P.R*` results, xdd's `xdd.shared` and `xdd.fpp.I`, mdtest's
/// `mdtest.MODE.P.R.TOKEN` directories ([`metadata_dirs`]), for the
/// layers and modes the plan measures.
/// Only these are removed when the qualification is complete: anything
/// else in the directory was put there by someone else.
pub fn made_by_tools(plan: &Plan, name: &str) -> bool {
    let numbered = |rest: &str, tail: bool| {
        let mut parts = rest.splitn(3, '.');
        let two = [parts.next(), parts.next()];
        let digits = two
            .iter()
            .all(|p| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())));
        digits && (tail || parts.next().is_none())
    };
    let devices = plan.runs(Layer::Devices)
        && name
            .strip_prefix("survey.")
            .is_some_and(|r| numbered(r, true));
    let d = &plan.data;
    let data = plan.runs(Layer::Data)
        && ((name == "xdd.shared" && d.modes.iter().any(|m| m == "shared"))
            || (d.modes.iter().any(|m| m == "file-per-task")
                && name
                    .strip_prefix("xdd.fpp.")
                    .and_then(|i| i.parse::<u32>().ok())
                    .is_some_and(|i| i < d.tasks && name == format!("xdd.fpp.{i}"))));
    let metadata = plan.runs(Layer::Metadata)
        && plan.metadata.modes.iter().any(|m| {
            name.strip_prefix(&format!("mdtest.{m}."))
                .and_then(|r| r.strip_suffix(&format!(".{}", plan.token)))
                .is_some_and(|r| numbered(r, false))
        });
    devices || data || metadata
}

/// Every directory the metadata layer's points run mdtest in (its
/// `-d`), for each point up to its curve's cap and each repeat. qualify
/// makes them all before the first layer runs, in its files' directory
/// marked a top directory ([`crate::caveat::spread`]), and mdtest leaves
/// a `-d` it did not make: an ext2/3/4 then puts each in the emptiest
/// block group it finds (the fewest directories), each one made there
/// counting against its group for the next, so that no point's creates
/// walk past the inodes another point of the run just freed (an ext4
/// without a journal keeps them from reuse for minutes). The run's
/// token in each name keeps a second qualification within minutes from
/// hashing to the groups the first one freed.
pub fn metadata_dirs(plan: &Plan) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for c in curves(plan).curves {
        if c.layer != Layer::Metadata {
            continue;
        }
        // Made here from a valid plan: a parse error is a bug, and the
        // runs would report it; no directory is made for it.
        let Ok(sweep) = iolab_sweep::plan::Plan::parse(&c.sweep) else {
            continue;
        };
        for p in sweep.points() {
            for r in 1..=sweep.repeats {
                let Ok(args) = sweep.tool_args(&p, r) else {
                    continue;
                };
                let d = args.iter().position(|a| a == "-d");
                if let Some(d) = d.and_then(|i| args.get(i + 1)) {
                    dirs.push(PathBuf::from(d));
                }
            }
        }
    }
    dirs
}

/// The figure-name form of a data mode.
fn data_short(mode: &str) -> &str {
    match mode {
        "file-per-task" => "fpp",
        m => m,
    }
}

fn data(plan: &Plan, c: &mut Curves) {
    let d = &plan.data;
    for op in ["write", "read"] {
        let mut members = Vec::new();
        for mode in &d.modes {
            let label = format!("data {op} {mode}");
            let reads_after = (op == "read")
                .then(|| {
                    c.curves
                        .iter()
                        .position(|k| k.label == format!("data write {mode}"))
                })
                .flatten();
            let curve = c.add(Curve {
                layer: Layer::Data,
                sweep: data_sweep(plan, op, mode, &label).text(),
                label,
                reads_after,
                nodes: Some(1),
            });
            let name = format!("data.{op}_{}", data_short(mode));
            members.push(name.clone());
            // xdd's MB is 10^6 bytes.
            c.figures.push(FigureSpec {
                name,
                layer: Layer::Data,
                curve,
                phase: op.into(),
                metric: "bandwidth".into(),
                kind: Kind::Bandwidth,
                scale: 1e6 / (1u64 << 30) as f64,
                bytes_per_op: Some(d.request_kib as f64 * 1024.0),
            });
        }
        c.aliases.push(Alias {
            name: format!("data.{op}"),
            of: members,
        });
    }
}

/// xdd's sequential `op` in `mode`: one shared file with a QThread per
/// task (`-queuedepth`), or a file per task (`-targets N f0..fN-1`, the
/// size split over them), the same total at every point.
fn data_sweep(plan: &Plan, op: &str, mode: &str, label: &str) -> SweepToml {
    let d = &plan.data;
    let work = plan.work_dir();
    let tasks = doubling(d.tasks);
    let mut args: Vec<String> = ["-op", op, "-blocksize", "1024", "-reqsize"]
        .map(String::from)
        .to_vec();
    args.push(d.request_kib.to_string());
    if d.direct {
        args.push("-dio".into());
    }
    if d.passes > 1 {
        args.extend(["-passes".into(), d.passes.to_string()]);
    }
    let (axis, split) = match mode {
        "shared" => {
            args.extend([
                "-targets".into(),
                "1".into(),
                path(&work.join("xdd.shared")),
            ]);
            args.extend(["-mbytes".into(), d.size_mb.to_string()]);
            let axis = AxisToml {
                name: "tasks",
                option: Some("-queuedepth"),
                values: ints(&tasks),
                labels: None,
            };
            (axis, None)
        }
        _ => {
            let values = tasks
                .iter()
                .map(|&t| {
                    let mut w = vec!["-targets".to_string(), t.to_string()];
                    w.extend((0..t).map(|i| path(&work.join(format!("xdd.fpp.{i}")))));
                    toml::Value::Array(w.into_iter().map(toml::Value::String).collect())
                })
                .collect();
            let axis = AxisToml {
                name: "tasks",
                option: None,
                values,
                labels: Some(tasks.iter().map(u32::to_string).collect()),
            };
            let split = SplitToml {
                option: "-mbytes",
                total: d.size_mb,
                over: vec!["tasks"],
            };
            (axis, Some(split))
        }
    };
    SweepToml {
        label: label.to_string(),
        tool: "xdd",
        args,
        repeats: plan.repeats,
        launcher: None,
        sync: true,
        x: vec!["tasks"],
        x_label: "tasks",
        description: format!(
            "iolab qualify '{}': data layer, xdd sequential {op}, {mode}, {} MiB per point, {} pass(es)",
            plan.label, d.size_mb, d.passes
        ),
        axes: vec![axis],
        split,
    }
}

/// mdtest's phases and the figures' names for them.
const MD_PHASES: [(&str, &str); 3] = [
    ("file_create", "create"),
    ("file_stat", "stat"),
    ("file_remove", "remove"),
];

fn metadata(plan: &Plan, c: &mut Curves) {
    let m = &plan.metadata;
    let work = plan.work_dir();
    let launcher = (!plan.hosts.launcher.is_empty()).then(|| plan.hosts.launcher.clone());
    let mut members: Vec<Vec<String>> = vec![Vec::new(); MD_PHASES.len()];
    for mode in &m.modes {
        let mut args: Vec<String> = ["-F", "-C", "-T", "-r", "-d"].map(String::from).to_vec();
        // The token in each name: ext4's spreading picks a directory's
        // group from its name's hash (see metadata_dirs).
        args.push(path(&work.join(format!(
            "mdtest.{mode}.{{point}}.{{repeat}}.{}",
            plan.token
        ))));
        if mode == "private" {
            args.push("-u".into());
        }
        let mut axes = Vec::new();
        let mut over = vec!["tasks"];
        if launcher.is_some() {
            axes.push(AxisToml {
                name: "nodes",
                option: None,
                values: ints(&doubling(m.nodes)),
                labels: None,
            });
            over.insert(0, "nodes");
        }
        axes.push(AxisToml {
            name: "tasks",
            option: Some("--tasks"),
            values: ints(&doubling(m.tasks)),
            labels: None,
        });
        let label = format!("metadata {mode}");
        let sweep = SweepToml {
            label: label.clone(),
            tool: "mdtest",
            args,
            repeats: plan.repeats,
            launcher: launcher.clone(),
            sync: true,
            x: vec!["tasks"],
            x_label: "tasks per node",
            description: format!("iolab qualify '{}': metadata layer, mdtest files in {} directories, {} files per point", plan.label, if mode == "private" { "per-task" } else { "one shared" }, m.files),
            axes,
            split: Some(SplitToml { option: "-n", total: m.files, over }),
        };
        let curve = c.add(Curve {
            layer: Layer::Metadata,
            label,
            sweep: sweep.text(),
            reads_after: None,
            nodes: launcher.is_none().then_some(1),
        });
        for (i, (phase, short)) in MD_PHASES.iter().enumerate() {
            let name = format!("metadata.{short}_{mode}");
            members[i].push(name.clone());
            c.figures.push(FigureSpec {
                name,
                layer: Layer::Metadata,
                curve,
                phase: phase.to_string(),
                metric: "rate".into(),
                kind: Kind::Rate,
                scale: 1.0,
                bytes_per_op: None,
            });
        }
    }
    for (i, (_, short)) in MD_PHASES.iter().enumerate() {
        c.aliases.push(Alias {
            name: format!("metadata.{short}"),
            of: members[i].clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{fill, Plan};

    fn plan(text: &str) -> Plan {
        let m = crate::machine::Machine::sample(4);
        fill(Plan::read(text).unwrap(), &m, None).unwrap()
    }

    #[test]
    fn only_the_tools_own_names_are_theirs_to_remove() {
        let p = plan("[devices]\ntargets = [\"/mnt/ost0\"]\n[data]\ntasks = 2\n");
        for ours in [
            "survey.0.1",
            "survey.3.2.summary",
            "xdd.shared",
            "xdd.fpp.0",
            "xdd.fpp.1",
            "mdtest.private.0.1.t0",
            "mdtest.shared.12.3.t0",
        ] {
            assert!(made_by_tools(&p, ours), "{ours}");
        }
        for theirs in [
            "important.csv",
            "mysub",
            ".iolab-qualify-out",
            "xdd.fpp.2",
            "xdd.fpp.01",
            "xdd.shared2",
            "survey.x.1",
            "mdtest.private.0.t0",
            "mdtest.private.0.1",
            "mdtest.private.0.1.x",
            "mdtest.private.0.1.t1",
            "mdtest.other.0.1.t0",
        ] {
            assert!(!made_by_tools(&p, theirs), "{theirs}");
        }
        let net = plan("layers = [\"network\"]");
        assert!(!made_by_tools(&net, "xdd.shared"));
    }

    #[test]
    fn every_metadata_point_and_repeat_has_a_directory_of_its_own_to_make() {
        let p = plan("layers = [\"metadata\"]\n[metadata]\ntasks = 4\nfiles = 400");
        let dirs = metadata_dirs(&p);
        // Two modes, tasks 1, 2 and 4, three repeats.
        assert_eq!(dirs.len(), 2 * 3 * 3);
        let names: std::collections::BTreeSet<_> = dirs
            .iter()
            .map(|d| d.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names.len(), dirs.len(), "each name once");
        for d in &dirs {
            assert_eq!(d.parent(), Some(p.work_dir().as_path()));
            assert!(made_by_tools(&p, d.file_name().unwrap().to_str().unwrap()));
        }
        assert!(names.contains("mdtest.shared.2.3.t0"), "{names:?}");
        let c = curves(&p);
        let shared = c
            .curves
            .iter()
            .find(|c| c.label == "metadata shared")
            .unwrap();
        assert!(shared.sweep.contains("mdtest.shared.{point}.{repeat}.t0"));
        assert!(metadata_dirs(&plan("layers = [\"network\"]")).is_empty());
    }

    #[test]
    fn doubling_ends_at_the_cap() {
        assert_eq!(doubling(1), [1]);
        assert_eq!(doubling(2), [1, 2]);
        assert_eq!(doubling(6), [1, 2, 4, 6]);
        assert_eq!(doubling(8), [1, 2, 4, 8]);
    }

    /// The disk survey refuses a device in use unless forced; a plan
    /// forces it only by saying `force = true`, never by default.
    #[test]
    fn the_disk_survey_is_forced_only_when_the_plan_says_so() {
        let forced = |extra: &str| {
            let p = plan(&format!(
                "[devices]\nsurvey = \"disk\"\ntargets = [\"/dev/sdz\"]\n{extra}"
            ));
            let c = curves(&p);
            let k = c.curves.iter().find(|k| k.label == "devices disk").unwrap();
            k.sweep.contains("\"--force\"")
        };
        assert!(!forced(""));
        assert!(!forced("force = false"));
        assert!(forced("force = true"));
    }

    #[test]
    fn every_curve_is_a_valid_sweep_plan() {
        let p = plan("[devices]\ntargets = [\"/mnt/ost0\"]");
        let c = curves(&p);
        let labels: Vec<&str> = c.curves.iter().map(|k| k.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "network ping",
                "network brw read 4k",
                "network brw write 4k",
                "network brw read 1m",
                "network brw write 1m",
                "devices obdfilter",
                "data write file-per-task",
                "data write shared",
                "data read file-per-task",
                "data read shared",
                "metadata private",
                "metadata shared",
            ]
        );
        for k in &c.curves {
            let s = iolab_sweep::plan::Plan::parse(&k.sweep)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", k.label, k.sweep));
            assert_eq!(s.label, k.label);
            // The layers that write to storage flush it before each
            // repeat; the network's runs touch no storage.
            let writes = !k.label.starts_with("network");
            assert_eq!(s.sync, writes, "{}", k.label);
        }
        assert_eq!(c.curves[8].reads_after, Some(6));
        let fpp = iolab_sweep::plan::Plan::parse(&c.curves[6].sweep).unwrap();
        let pts = fpp.points();
        assert_eq!(pts.iter().map(|p| p.x).collect::<Vec<_>>(), [1.0, 2.0, 4.0]);
        let argv = fpp.command("iolab", &pts[1], 1, "j").unwrap().join(" ");
        assert!(argv.contains("-targets 2 /tmp/iolab-qualify.t0/xdd.fpp.0 /tmp/iolab-qualify.t0/xdd.fpp.1 -mbytes 64"), "{argv}");
        assert!(argv.contains(" -passes 4 "), "on one machine: {argv}");
        assert_eq!(c.figure("network.brw_write_4k").unwrap().kind, Kind::Rate);
        assert_eq!(
            c.figure("network.brw_write_1m").unwrap().kind,
            Kind::Bandwidth
        );
        assert!(c.names().contains(&"network.brw_write"));
        assert!(c.names().contains(&"metadata.create"));
        assert!(c.names().contains(&"devices.rewrite"));
    }

    /// The sweep plan of `plan`'s curve `label`.
    fn sweep(plan: &Plan, label: &str) -> iolab_sweep::plan::Plan {
        let c = curves(plan);
        let k = c.curves.iter().find(|k| k.label == label).unwrap();
        iolab_sweep::plan::Plan::parse(&k.sweep).unwrap()
    }

    #[test]
    fn data_passes_are_a_plan_key() {
        let args = |text: &str| {
            let s = sweep(&plan(text), "data write shared");
            s.command("iolab", &s.points()[0], 1, "j")
                .unwrap()
                .join(" ")
        };
        assert!(args("[data]\npasses = 7").contains(" -passes 7 "));
        assert!(!args("[data]\npasses = 1").contains("-passes"));
        let cluster = "dir = \"/mnt/fs\"\n[hosts]\nclients = [\"a\"]\nservers = [\"b\"]";
        assert!(!args(cluster).contains("-passes"), "one pass on a cluster");
    }

    #[test]
    fn metadata_sweeps_nodes_when_there_is_a_launcher() {
        let p = plan("dir = \"/mnt/fs\"\n[hosts]\nclients = [\"a\", \"b\"]\nservers = [\"b\"]");
        let s = sweep(&p, "metadata shared");
        let keys: Vec<String> = s.points().into_iter().map(|p| p.key).collect();
        assert_eq!(keys[0], "nodes=1 tasks=1");
        assert_eq!(keys.last().unwrap(), "nodes=2 tasks=4");
        let argv = s
            .command("iolab", &s.points()[5], 1, "j")
            .unwrap()
            .join(" ");
        assert!(
            argv.starts_with("mpirun --host a,b --map-by node -n 2 iolab mdtest"),
            "{argv}"
        );
        assert!(argv.contains("-n 32768"), "{argv}");
    }
}
