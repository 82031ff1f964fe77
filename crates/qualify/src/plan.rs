//! The qualification plan: a TOML file whose every key is optional,
//! read strictly (an unknown key or section is an error, so a typo is
//! not a silently ignored expectation), then filled with the defaults
//! for this machine or cluster ([`fill`]). The filled plan is written to
//! `DIR/plan.toml` before anything runs: a rerun reads it back and
//! carries on with exactly the same runs. docs/qualify.md lists every
//! key.
//!
//! ```toml
//! label = "before upgrade"
//! repeats = 3                 # runs per point
//! knee = 0.1                  # a point gaining less than 10 % ends its curve
//! dir = "/mnt/lustre"         # where data and metadata runs make their files
//!
//! [hosts]
//! clients = ["c1", "c2"]      # or hostfile = "hosts", or slurm = true
//! servers = ["s1"]
//!
//! [network]
//! expect = ["network.brw_write_gib_s >= 10"]
//!
//! [data]
//! expect = ["data.write >= 0.8 * network.brw_write"]
//! ```

use crate::hosts;
use crate::layer::{self, Layer};
use crate::machine::Machine;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A plan that cannot run; the message names the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError(msg.into()))
}

/// The plan as written: every key optional, none unknown.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    label: Option<String>,
    repeats: Option<u32>,
    knee: Option<f64>,
    dir: Option<PathBuf>,
    token: Option<String>,
    layers: Option<Vec<String>>,
    hosts: Option<RawHosts>,
    network: Option<RawNetwork>,
    devices: Option<RawDevices>,
    data: Option<RawData>,
    metadata: Option<RawMetadata>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHosts {
    clients: Option<Vec<String>>,
    hostfile: Option<PathBuf>,
    slurm: Option<bool>,
    servers: Option<Vec<String>>,
    rsh: Option<String>,
    launcher: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    tests: Option<Vec<String>>,
    from: Option<Vec<String>>,
    to: Option<Vec<String>>,
    concurrency: Option<u32>,
    duration_s: Option<f64>,
    port: Option<u16>,
    expect: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevices {
    survey: Option<String>,
    targets: Option<Vec<String>>,
    size_mb: Option<u64>,
    threads: Option<u32>,
    force: Option<bool>,
    expect: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawData {
    tool: Option<String>,
    modes: Option<Vec<String>>,
    tasks: Option<u32>,
    size_mb: Option<u64>,
    passes: Option<u32>,
    request_kib: Option<u32>,
    direct: Option<bool>,
    expect: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetadata {
    modes: Option<Vec<String>>,
    tasks: Option<u32>,
    nodes: Option<u32>,
    files: Option<u64>,
    expect: Option<Vec<String>>,
}

/// A filled, checked plan: what runs, every default written out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The qualification's name (report titles).
    pub label: String,
    /// Runs per point.
    pub repeats: u32,
    /// A point that gains less than this fraction over the one before
    /// ends its curve.
    pub knee: f64,
    /// Where the data and metadata runs make their files (inside a
    /// directory of their own, [`Plan::work_dir`]).
    pub dir: PathBuf,
    /// Names this qualification's own directory under `dir`.
    pub token: String,
    /// The layers measured, bottom-up.
    pub layers: Vec<Layer>,
    /// Where the tools run.
    pub hosts: Hosts,
    /// The network layer.
    pub network: Network,
    /// The devices layer, when the plan names devices or objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Devices>,
    /// The data layer.
    pub data: Data,
    /// The metadata layer.
    pub metadata: Metadata,
}

/// Where the tools run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hosts {
    /// The client nodes (none: this machine alone).
    pub clients: Vec<String>,
    /// The server nodes (lst's server group).
    pub servers: Vec<String>,
    /// The remote shell for lst's agents and the surveys' far sides
    /// (`local`: every agent on this machine).
    pub rsh: String,
    /// How N ranks are started, one per node, with `{nodes}` and
    /// `{iolab}` (empty: no launcher, this machine alone).
    pub launcher: String,
}

/// The network layer: lst from the clients to the servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Network {
    /// The tests: `ping`, `brw read SIZE`, `brw write SIZE`.
    pub tests: Vec<String>,
    /// lst's client group (its node forms).
    pub from: Vec<String>,
    /// lst's server group.
    pub to: Vec<String>,
    /// The most RPCs in flight per client (the curve doubles up to it).
    pub concurrency: u32,
    /// Seconds each run issues RPCs.
    pub duration_s: f64,
    /// The agents' port on hosts named without one.
    pub port: u16,
    /// Expectations.
    pub expect: Vec<String>,
}

/// The devices layer: a survey of the targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Devices {
    /// `obdfilter` (objects in directories) or `disk` (raw devices).
    pub survey: String,
    /// The survey's targets.
    pub targets: Vec<String>,
    /// MiB per target per test.
    pub size_mb: u64,
    /// The most threads per target.
    pub threads: u32,
    /// `disk` only: write devices that are mounted or hold a signature
    /// (the survey's `--force`); their data is destroyed. Never implied:
    /// the plan must say `force = true`.
    pub force: bool,
    /// Expectations.
    pub expect: Vec<String>,
}

/// The data layer: sequential write then read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Data {
    /// The tool (`xdd`).
    pub tool: String,
    /// `file-per-task` and/or `shared`.
    pub modes: Vec<String>,
    /// The most tasks.
    pub tasks: u32,
    /// MiB written (and read) per point, over all tasks.
    pub size_mb: u64,
    /// Passes over those MiB in one run (xdd's `-passes`).
    pub passes: u32,
    /// KiB per request.
    pub request_kib: u32,
    /// O_DIRECT.
    pub direct: bool,
    /// Expectations.
    pub expect: Vec<String>,
}

/// The metadata layer: mdtest's file create, stat and remove.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metadata {
    /// `private` (a directory per task) and/or `shared`.
    pub modes: Vec<String>,
    /// The most tasks per node.
    pub tasks: u32,
    /// The most nodes.
    pub nodes: u32,
    /// Files per point, over all tasks.
    pub files: u64,
    /// Expectations.
    pub expect: Vec<String>,
}

/// Data modes, as the plan names them.
pub const DATA_MODES: [&str; 2] = ["file-per-task", "shared"];
/// Metadata modes.
pub const METADATA_MODES: [&str; 2] = ["private", "shared"];
/// The network tests of seed 003 and the I/O kit, in order.
pub const NETWORK_TESTS: [&str; 5] = [
    "ping",
    "brw read 4k",
    "brw write 4k",
    "brw read 1m",
    "brw write 1m",
];

/// Most runs per point.
pub const MAX_REPEATS: u32 = 100;
/// Most tasks, nodes or threads a curve may reach.
pub const MAX_WIDTH: u32 = 4096;
/// lst's most RPCs in flight per client.
pub const MAX_CONCURRENCY: u32 = 1024;

impl Plan {
    /// Reads a plan's text (TOML) strictly.
    pub fn read(text: &str) -> Result<RawPlan, PlanError> {
        toml::from_str(text).map_err(|e| PlanError(e.to_string().trim_end().to_string()))
    }

    /// The plan as `DIR/plan.toml` holds it: the sections of the layers
    /// it does not measure left out, so that the file, given as a plan,
    /// passes [`check_sections`].
    pub fn to_toml(&self) -> String {
        let runs = |l: Layer| self.runs(l);
        let written = Written {
            label: &self.label,
            repeats: self.repeats,
            knee: self.knee,
            dir: &self.dir,
            token: &self.token,
            layers: &self.layers,
            hosts: &self.hosts,
            network: runs(Layer::Network).then_some(&self.network),
            devices: self.devices.as_ref().filter(|_| runs(Layer::Devices)),
            data: runs(Layer::Data).then_some(&self.data),
            metadata: runs(Layer::Metadata).then_some(&self.metadata),
        };
        let body = toml::to_string(&written).unwrap_or_else(|e| format!("# cannot write: {e}\n"));
        format!(
            "# iolab qualify: the plan that ran, every default filled in (docs/qualify.md)\n{body}"
        )
    }

    /// The directory this qualification's files go in: a directory of
    /// its own inside `dir`, made by iolab and removed when done.
    pub fn work_dir(&self) -> PathBuf {
        self.dir.join(format!("iolab-qualify.{}", self.token))
    }

    /// Whether the layer is measured.
    pub fn runs(&self, l: Layer) -> bool {
        self.layers.contains(&l)
    }

    /// Whether the tools run on this machine alone.
    pub fn local(&self) -> bool {
        self.hosts.clients.is_empty()
    }
}

/// [`Plan`] as written to `DIR/plan.toml`, in its order.
#[derive(Serialize)]
struct Written<'a> {
    label: &'a str,
    repeats: u32,
    knee: f64,
    dir: &'a PathBuf,
    token: &'a str,
    layers: &'a [Layer],
    hosts: &'a Hosts,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<&'a Network>,
    #[serde(skip_serializing_if = "Option::is_none")]
    devices: Option<&'a Devices>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Data>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
}

/// Refuses a layer's section in a plan whose `layers` leaves that
/// layer out: its keys and expectations would be silently ignored.
/// Checked on the plan given, not on a `DIR/plan.toml` read back (one
/// written before sections were left out holds every section).
pub fn check_sections(raw: &RawPlan) -> Result<(), PlanError> {
    let Some(named) = &raw.layers else {
        return Ok(());
    };
    let given = [
        ("network", raw.network.is_some()),
        ("devices", raw.devices.is_some()),
        ("data", raw.data.is_some()),
        ("metadata", raw.metadata.is_some()),
    ];
    for (section, present) in given {
        if present && !named.iter().any(|n| n == section) {
            return err(format!(
                "[{section}]: the layer is not in layers ({}), so nothing of the section would be used: add '{section}' to layers, or remove the section",
                named.join(", ")
            ));
        }
    }
    Ok(())
}

/// Fills `raw` with the defaults for `m`. `previous` is the plan the
/// output directory holds already, whose run-time choices (token,
/// loopback ports) a rerun keeps, so that it resumes the same runs.
pub fn fill(raw: RawPlan, m: &Machine, previous: Option<&Plan>) -> Result<Plan, PlanError> {
    let hosts = fill_hosts(raw.hosts.unwrap_or_default(), m)?;
    let local = hosts.clients.is_empty();
    let layers = layers(raw.layers, raw.devices.is_some())?;
    let needs_dir = layers.contains(&Layer::Data) || layers.contains(&Layer::Metadata);
    let dir = match (raw.dir, local) {
        (Some(d), _) => absolute("dir", d)?,
        (None, true) => m.tmp.clone(),
        (None, false) if needs_dir => return err("dir: name a directory on the file system under test that every client sees (data and metadata runs make their files there)"),
        (None, false) => m.tmp.clone(),
    };
    let token = match raw.token.or(previous.map(|p| p.token.clone())) {
        Some(t)
            if t.len() <= 32 && !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            t
        }
        Some(t) => return err(format!("token: {t:?}: 1 to 32 letters and digits")),
        None => m.token.clone(),
    };
    let network = fill_network(raw.network.unwrap_or_default(), &hosts, m, previous)?;
    let plan = Plan {
        label: label(raw.label)?,
        repeats: in_range("repeats", raw.repeats.unwrap_or(3), 1, MAX_REPEATS)?,
        knee: knee(raw.knee)?,
        dir,
        token,
        devices: raw.devices.map(|d| fill_devices(d, local)).transpose()?,
        data: fill_data(raw.data.unwrap_or_default(), local, m)?,
        metadata: fill_metadata(raw.metadata.unwrap_or_default(), &hosts, m)?,
        network,
        layers,
        hosts,
    };
    if plan.runs(Layer::Network) && (plan.network.from.is_empty() || plan.network.to.is_empty()) {
        return err("network: lst needs a client and a server group: give hosts.servers (or network.from and network.to)");
    }
    Ok(plan)
}

fn label(l: Option<String>) -> Result<String, PlanError> {
    let l = l.unwrap_or_else(|| "qualify".to_string());
    if l.trim().is_empty() || l.len() > 200 || l.chars().any(char::is_control) {
        return err(format!(
            "label: {l:?}: 1 to 200 characters, no control characters"
        ));
    }
    Ok(l)
}

fn knee(k: Option<f64>) -> Result<f64, PlanError> {
    match k.unwrap_or(0.1) {
        k if k > 0.0 && k <= 1.0 => Ok(k),
        k => err(format!("knee: {k} is not a fraction in (0, 1]: a point that gains less than this over the one before ends its curve (0.1: 10 %)")),
    }
}

fn absolute(key: &str, p: PathBuf) -> Result<PathBuf, PlanError> {
    match p.is_absolute() {
        true => Ok(p),
        false => err(format!(
            "{key}: {}: give an absolute path (the runs start elsewhere)",
            p.display()
        )),
    }
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<T, PlanError> {
    match v >= lo && v <= hi {
        true => Ok(v),
        false => err(format!("{key}: {v} is not in {lo}..{hi}")),
    }
}

/// The layers to measure, bottom-up whatever order they are listed in.
fn layers(named: Option<Vec<String>>, has_devices: bool) -> Result<Vec<Layer>, PlanError> {
    let Some(names) = named else {
        return Ok(layer::ALL
            .into_iter()
            .filter(|&l| l != Layer::Devices || has_devices)
            .collect());
    };
    let mut out = Vec::new();
    for n in &names {
        let l = Layer::parse(n).ok_or_else(|| {
            PlanError(format!(
                "layers: '{n}' is not a layer (network, devices, data, metadata)"
            ))
        })?;
        if out.contains(&l) {
            return err(format!("layers: '{n}' is named twice"));
        }
        if l == Layer::Devices && !has_devices {
            return err("layers: 'devices' needs a [devices] section naming the survey's targets");
        }
        out.push(l);
    }
    if out.is_empty() {
        return err("layers: name at least one layer");
    }
    out.sort();
    Ok(out)
}

fn fill_hosts(h: RawHosts, m: &Machine) -> Result<Hosts, PlanError> {
    let given = [
        h.clients.is_some(),
        h.hostfile.is_some(),
        h.slurm == Some(true),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return err("hosts: give the clients one way: clients, hostfile or slurm");
    }
    let clients = match (&h.clients, &h.hostfile, h.slurm) {
        (Some(c), _, _) => c.clone(),
        (_, Some(f), _) => hosts::read_hostfile(f).map_err(|e| PlanError(e.to_string()))?,
        (_, _, Some(true)) => hosts::slurm_nodes().map_err(|e| PlanError(e.to_string()))?,
        _ => Vec::new(),
    };
    for c in clients.iter().chain(h.servers.iter().flatten()) {
        hosts::check_name(c).map_err(|e| PlanError(format!("hosts: {e}")))?;
    }
    if clients.is_empty() && h.servers.as_ref().is_some_and(|s| !s.is_empty()) {
        return err(
            "hosts.servers: servers need clients: give hosts.clients (or hostfile, or slurm)",
        );
    }
    let rsh = match (&h.rsh, clients.is_empty()) {
        (Some(r), _) => r.clone(),
        (None, true) => LOCAL_RSH.to_string(),
        (None, false) => m.rsh.clone(),
    };
    let launcher = match h.launcher {
        Some(l) if l.trim().is_empty() => String::new(),
        Some(l) if !l.contains("{iolab}") || !l.contains("{nodes}") => {
            return err(format!("hosts.launcher: {l:?}: it must contain {{nodes}} (the ranks, one per node) and {{iolab}} (where the iolab binary goes)"));
        }
        Some(l) => l,
        None if clients.is_empty() => String::new(),
        None => hosts::default_launcher(
            &clients,
            h.hostfile.as_deref(),
            h.slurm == Some(true),
            h.rsh.as_deref(),
        ),
    };
    Ok(Hosts {
        servers: h.servers.unwrap_or_default(),
        clients,
        rsh,
        launcher,
    })
}

/// The remote shell that starts the "remote" agents on this machine
/// (`iolab_launch::LOCAL`).
pub const LOCAL_RSH: &str = "local";

fn fill_network(
    n: RawNetwork,
    hosts: &Hosts,
    m: &Machine,
    previous: Option<&Plan>,
) -> Result<Network, PlanError> {
    let local = hosts.clients.is_empty();
    let tests = n
        .tests
        .unwrap_or_else(|| NETWORK_TESTS.iter().map(|t| t.to_string()).collect());
    if tests.is_empty() {
        return err("network.tests: name at least one test (ping, brw read 4k, ...)");
    }
    for (i, t) in tests.iter().enumerate() {
        let name = crate::nettest::network_test(t)
            .map_err(|e| PlanError(format!("network.tests: {e}")))?;
        if tests[..i]
            .iter()
            .any(|o| crate::nettest::network_test(o).is_ok_and(|o| o.name == name.name))
        {
            return err(format!("network.tests: '{t}' is named twice"));
        }
    }
    // Agents on two loopback ports stand for a client and a server; a
    // rerun keeps the ports of the plan it resumes.
    let kept = previous
        .filter(|_| local)
        .map(|p| (p.network.from.clone(), p.network.to.clone()));
    let (from, to) = match (n.from, n.to, kept) {
        (Some(f), Some(t), _) => (f, t),
        (None, None, Some(k)) => k,
        (None, None, None) if local => (
            vec![format!("client@127.0.0.1:{}", m.ports.0)],
            vec![format!("server@127.0.0.1:{}", m.ports.1)],
        ),
        (f, t, _) => (
            f.unwrap_or_else(|| hosts.clients.clone()),
            t.unwrap_or_else(|| hosts.servers.clone()),
        ),
    };
    Ok(Network {
        tests,
        from,
        to,
        concurrency: in_range(
            "network.concurrency",
            n.concurrency.unwrap_or(if local { 8 } else { 64 }),
            1,
            MAX_CONCURRENCY,
        )?,
        duration_s: match n.duration_s.unwrap_or(if local { 1.0 } else { 2.0 }) {
            d if d > 0.0 && d <= 3600.0 => d,
            d => {
                return err(format!(
                    "network.duration_s: {d} is not a number of seconds in (0, 3600]"
                ))
            }
        },
        port: in_range("network.port", n.port.unwrap_or(7819), 1, u16::MAX)?,
        expect: n.expect.unwrap_or_default(),
    })
}

fn fill_devices(d: RawDevices, local: bool) -> Result<Devices, PlanError> {
    let survey = d.survey.unwrap_or_else(|| "obdfilter".to_string());
    if !["obdfilter", "disk"].contains(&survey.as_str()) {
        return err(format!("devices.survey: '{survey}': obdfilter (objects in directories) or disk (raw devices, overwritten)"));
    }
    let targets = d.targets.unwrap_or_default();
    if targets.is_empty() {
        return err("devices.targets: name the survey's targets (directories for obdfilter, devices for disk)");
    }
    let force = d.force.unwrap_or(false);
    if force && survey != "disk" {
        return err(format!(
            "devices.force: only the disk survey writes devices (survey is '{survey}'): remove the key"
        ));
    }
    let threads = d.threads.unwrap_or(16);
    Ok(Devices {
        force,
        size_mb: in_range(
            "devices.size_mb",
            d.size_mb.unwrap_or(if local { 256 } else { 16384 }),
            1,
            1 << 30,
        )?,
        threads: in_range("devices.threads", threads, 1, 1024)?,
        survey,
        targets,
        expect: d.expect.unwrap_or_default(),
    })
}

fn modes(
    key: &str,
    given: Option<Vec<String>>,
    known: [&str; 2],
) -> Result<Vec<String>, PlanError> {
    let modes = given.unwrap_or_else(|| known.iter().map(|s| s.to_string()).collect());
    if modes.is_empty() {
        return err(format!("{key}: name at least one of {}", known.join(", ")));
    }
    for (i, m) in modes.iter().enumerate() {
        if !known.contains(&m.as_str()) || modes[..i].contains(m) {
            return err(format!(
                "{key}: '{m}': each of {} at most once",
                known.join(", ")
            ));
        }
    }
    Ok(modes)
}

fn fill_data(d: RawData, local: bool, m: &Machine) -> Result<Data, PlanError> {
    let tool = d.tool.unwrap_or_else(|| "xdd".to_string());
    if tool != "xdd" {
        return err(format!("data.tool: '{tool}': only xdd for now"));
    }
    let tasks = in_range("data.tasks", d.tasks.unwrap_or(m.cores), 1, MAX_WIDTH)?;
    let size_mb = in_range(
        "data.size_mb",
        d.size_mb.unwrap_or(if local { 128 } else { 4096 }),
        1,
        1 << 30,
    )?;
    if size_mb < tasks as u64 {
        return err(format!(
            "data.size_mb: {size_mb} MiB cannot give each of {tasks} tasks a MiB; raise it"
        ));
    }
    let modes = modes("data.modes", d.modes, DATA_MODES)?;
    // A file per task gets its share in whole MiB (xdd's -mbytes).
    let size_mb = match modes.iter().any(|m| m == "file-per-task") {
        true => {
            let widths: Vec<u64> = crate::knee::doubling(tasks)
                .into_iter()
                .map(u64::from)
                .collect();
            let s = even("data.size_mb", size_mb, &widths, d.size_mb.is_some(), "MiB")?;
            in_range("data.size_mb", s, 1, 1 << 30)?
        }
        false => size_mb,
    };
    let request_kib = in_range(
        "data.request_kib",
        d.request_kib.unwrap_or(1024),
        4,
        1 << 20,
    )?;
    whole_requests(&modes, tasks, size_mb, request_kib)?;
    Ok(Data {
        tool,
        modes,
        tasks,
        size_mb,
        // A point's first repeat writes new files and the later ones
        // overwrite them; on one machine, where a point lasts tens of
        // milliseconds, that first repeat ran at about half the others'
        // rate. More passes in a run leave it a smaller share.
        passes: in_range(
            "data.passes",
            d.passes.unwrap_or(if local { 4 } else { 1 }),
            1,
            1000,
        )?,
        request_kib,
        direct: d.direct.unwrap_or(false),
        expect: d.expect.unwrap_or_default(),
    })
}

/// Refuses a request size that is not a whole part of what each xdd
/// target moves at every point (`size_mb` for the shared file, its
/// share, in whole MiB as the sweep splits it, for a file per task):
/// xdd would end each pass with a short request, so the bandwidth over
/// the request size (`data.*_iops`) would not be its operations.
fn whole_requests(
    modes: &[String],
    tasks: u32,
    size_mb: u64,
    request_kib: u32,
) -> Result<(), PlanError> {
    for mode in modes {
        let widths = match mode.as_str() {
            "shared" => vec![1],
            _ => crate::knee::doubling(tasks),
        };
        for t in widths {
            let mib = size_mb / t as u64;
            if !(mib * 1024).is_multiple_of(request_kib as u64) {
                return err(format!(
                    "data.request_kib: {request_kib} KiB is not a whole part of the {mib} MiB each target of xdd moves ({mode}, tasks={t}): its last request would be short, and data.*_iops (the bandwidth over the request size) would not be true; give a size that divides it, or change data.size_mb"
                ));
            }
        }
    }
    Ok(())
}

/// `total` as a tool takes it per task: it must divide evenly by the
/// tasks of every point (`widths`), so that each point moves the total
/// the plan names, every point of a curve the same, rather than the
/// tool's share rounded down. A default (`given` false) is raised to
/// the next total that does (plan.toml shows it); a total the plan
/// gives is refused, with the nearest that would do.
fn even(key: &str, total: u64, widths: &[u64], given: bool, unit: &str) -> Result<u64, PlanError> {
    let too_many = || {
        PlanError(format!(
            "{key}: the tasks of the points ({}) have no common multiple below 2^64",
            list(widths)
        ))
    };
    let step = widths
        .iter()
        .try_fold(1u64, |a, &w| lcm(a, w))
        .ok_or_else(too_many)?;
    if total.is_multiple_of(step) {
        return Ok(total);
    }
    let up = total
        .div_ceil(step)
        .checked_mul(step)
        .ok_or_else(too_many)?;
    if !given {
        return Ok(up);
    }
    let down = total / step * step;
    let nearest = match down {
        0 => up.to_string(),
        d => format!("{d} or {up}"),
    };
    err(format!(
        "{key}: {total} {unit} does not divide evenly by the tasks of every point ({}): each task's share would be rounded down, and the points would not move {total} {unit}; give a multiple of {step} ({nearest})",
        list(widths)
    ))
}

/// Least common multiple; None when it overflows.
fn lcm(a: u64, b: u64) -> Option<u64> {
    let gcd = |mut x: u64, mut y: u64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    (a / gcd(a, b).max(1)).checked_mul(b)
}

fn list(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

fn fill_metadata(d: RawMetadata, hosts: &Hosts, m: &Machine) -> Result<Metadata, PlanError> {
    let local = hosts.clients.is_empty();
    let most_nodes = hosts.clients.len().max(1) as u32;
    let nodes = d.nodes.unwrap_or(most_nodes);
    if nodes > most_nodes {
        return err(format!(
            "metadata.nodes: {nodes} nodes, but there are {most_nodes} clients"
        ));
    }
    if nodes > 1 && hosts.launcher.is_empty() {
        return err("metadata.nodes: several nodes need hosts.launcher (mpirun or srun)");
    }
    let tasks = in_range("metadata.tasks", d.tasks.unwrap_or(m.cores), 1, MAX_WIDTH)?;
    let nodes = in_range("metadata.nodes", nodes, 1, MAX_WIDTH)?;
    // On one machine 8000, not fewer: a stat phase of 2000 files there
    // lasted 2 ms, and a hiccup of the scheduler moved it by tens of %
    // (docs/qualify.md, "A limit and its tool run alone").
    let files = d.files.unwrap_or(if local { 8000 } else { 262_144 });
    if files < (tasks as u64) * (nodes as u64) || files > 1 << 40 {
        return err(format!(
            "metadata.files: {files} cannot give each of {} tasks a file; raise it",
            tasks * nodes
        ));
    }
    // mdtest's -n is files per task: nodes x tasks per node at a point.
    let mut widths: Vec<u64> = Vec::new();
    for n in crate::knee::doubling(nodes) {
        for t in crate::knee::doubling(tasks) {
            widths.push(u64::from(n) * u64::from(t));
        }
    }
    widths.sort_unstable();
    widths.dedup();
    let files = even("metadata.files", files, &widths, d.files.is_some(), "files")?;
    if files > 1 << 40 {
        return err(format!(
            "metadata.files: {files} (a multiple of every point's tasks) is more than {}; lower metadata.tasks or metadata.nodes",
            1u64 << 40
        ));
    }
    Ok(Metadata {
        modes: modes("metadata.modes", d.modes, METADATA_MODES)?,
        tasks,
        nodes,
        files,
        expect: d.expect.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn machine() -> Machine {
        Machine {
            cores: 2,
            tmp: PathBuf::from("/tmp"),
            ports: (20001, 20002),
            token: "abc123".into(),
            rsh: "ssh -o BatchMode=yes".into(),
        }
    }

    fn plan(text: &str) -> Result<Plan, PlanError> {
        fill(Plan::read(text)?, &machine(), None)
    }

    #[test]
    fn the_empty_plan_qualifies_this_machine() {
        let p = plan("").unwrap();
        assert_eq!(p.layers, [Layer::Network, Layer::Data, Layer::Metadata]);
        assert_eq!(p.network.from, ["client@127.0.0.1:20001"]);
        assert_eq!(p.network.to, ["server@127.0.0.1:20002"]);
        assert_eq!(p.hosts.rsh, "local");
        assert_eq!(
            (p.data.tasks, p.metadata.tasks, p.metadata.nodes),
            (2, 2, 1)
        );
        assert_eq!(p.work_dir(), PathBuf::from("/tmp/iolab-qualify.abc123"));
        assert_eq!(p.repeats, 3);
    }

    #[test]
    fn the_written_plan_reads_back_as_itself() {
        let p = plan("label = \"x\"\n[devices]\ntargets = [\"/mnt/ost0\"]\n[data]\nexpect = [\"data.write >= 1\"]").unwrap();
        let text = p.to_toml();
        let again = fill(
            Plan::read(&text).unwrap(),
            &Machine {
                ports: (1, 2),
                token: "zzz".into(),
                ..machine()
            },
            None,
        )
        .unwrap();
        assert_eq!(again, p, "{text}");
    }

    #[test]
    fn a_rerun_keeps_the_ports_and_token_it_resumes() {
        let first = plan("").unwrap();
        let m = Machine {
            ports: (3, 4),
            token: "other".into(),
            ..machine()
        };
        let again = fill(Plan::read("").unwrap(), &m, Some(&first)).unwrap();
        assert_eq!(again, first);
    }

    #[test]
    fn unknown_keys_and_sections_are_refused() {
        assert!(plan("repeat = 3")
            .unwrap_err()
            .0
            .contains("unknown field `repeat`"));
        assert!(plan("[netwerk]")
            .unwrap_err()
            .0
            .contains("unknown field `netwerk`"));
        assert!(plan("[data]\nthreads = 3")
            .unwrap_err()
            .0
            .contains("unknown field `threads`"));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (text, says) in [
            ("repeats = 0", "repeats: 0"),
            ("knee = 2.0", "knee: 2"),
            ("layers = [\"disk\"]", "'disk' is not a layer"),
            ("layers = [\"devices\"]", "[devices] section"),
            (
                "[devices]\ntargets = [\"/mnt/ost0\"]\nforce = true",
                "devices.force: only the disk survey",
            ),
            ("[data]\nmodes = [\"fpp\"]", "data.modes: 'fpp'"),
            ("[data]\ntool = \"ior\"", "data.tool"),
            ("[network]\ntests = [\"brw up 4k\"]", "network.tests"),
            ("[network]\ntests = [\"ping\", \"ping\"]", "twice"),
            (
                "[hosts]\nclients = [\"a\", \"b\"]\nservers = [\"s\"]",
                "dir: name a directory",
            ),
            ("dir = \"rel\"", "absolute"),
            ("[metadata]\nnodes = 2", "2 nodes, but there are 1"),
            ("[hosts]\nservers = [\"s\"]", "servers need clients"),
            ("[hosts]\nclients = [\"a\"]\nslurm = true", "one way"),
            (
                "[data]\ntasks = 1\nsize_mb = 1\nrequest_kib = 4096",
                "data.request_kib: 4096 KiB is not a whole part of the 1 MiB",
            ),
            (
                "[data]\nmodes = [\"file-per-task\"]\ntasks = 3\nsize_mb = 18\nrequest_kib = 2048",
                "9 MiB each target of xdd moves (file-per-task, tasks=2)",
            ),
        ] {
            let e = plan(text).unwrap_err().0;
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    /// A total that the tasks of a point do not divide would be rounded
    /// down per task (3 MiB over 2 tasks: 2 MiB moved): refused, with
    /// the nearest totals that divide; a default is raised to one.
    #[test]
    fn totals_split_over_tasks_divide_evenly_at_every_point() {
        for (text, says) in [
            (
                "[data]\nmodes = [\"file-per-task\"]\ntasks = 2\nsize_mb = 3",
                "data.size_mb: 3 MiB does not divide evenly by the tasks of every point (1, 2): each task's share would be rounded down, and the points would not move 3 MiB; give a multiple of 2 (2 or 4)",
            ),
            (
                "[data]\ntasks = 3\nsize_mb = 128",
                "give a multiple of 6 (126 or 132)",
            ),
            (
                "[metadata]\ntasks = 2\nfiles = 201",
                "metadata.files: 201 files does not divide evenly by the tasks of every point (1, 2)",
            ),
            (
                "dir = \"/mnt/fs\"\n[hosts]\nclients = [\"a\", \"b\", \"c\"]\nservers = [\"s\"]\n[metadata]\ntasks = 2\nfiles = 3001",
                "(1, 2, 3, 4, 6): each task's share would be rounded down, and the points would not move 3001 files; give a multiple of 12 (3000 or 3012)",
            ),
        ] {
            let e = plan(text).unwrap_err().0;
            assert!(e.contains(says), "{text}: {e}");
        }
        // One shared file is not split: any size does.
        assert_eq!(
            plan("[data]\nmodes = [\"shared\"]\ntasks = 2\nsize_mb = 3")
                .unwrap()
                .data
                .size_mb,
            3
        );
        let m = Machine {
            cores: 3,
            ..machine()
        };
        let p = fill(Plan::read("").unwrap(), &m, None).unwrap();
        assert_eq!((p.data.size_mb, p.metadata.files), (132, 8004));
        assert_eq!(plan("").unwrap().data.size_mb, 128);
    }

    #[test]
    fn a_section_of_a_layer_not_measured_is_refused() {
        let raw = |t: &str| Plan::read(t).unwrap();
        let e = check_sections(&raw("layers = [\"network\"]\n[data]\ntasks = 1")).unwrap_err();
        assert!(
            e.0.contains("[data]") && e.0.contains("layers (network)"),
            "{e}"
        );
        assert!(check_sections(&raw("layers = [\"data\"]\n[metadata]")).is_err());
        assert!(check_sections(&raw("layers = [\"data\"]\n[data]\ntasks = 1")).is_ok());
        assert!(check_sections(&raw("[data]\ntasks = 1")).is_ok());
        // The plan written for such a qualification passes the check.
        let p = plan("layers = [\"network\"]").unwrap();
        let written = p.to_toml();
        assert!(
            !written.contains("[data]") && written.contains("[network]"),
            "{written}"
        );
        check_sections(&raw(&written)).unwrap();
        assert_eq!(fill(raw(&written), &machine(), None).unwrap(), p);
    }

    #[test]
    fn a_cluster_plan_gets_a_launcher_and_its_servers() {
        let p = plan("dir = \"/mnt/fs\"\n[hosts]\nclients = [\"c1\", \"c2\"]\nservers = [\"s1\"]")
            .unwrap();
        assert_eq!(p.network.from, ["c1", "c2"]);
        assert_eq!(p.network.to, ["s1"]);
        assert_eq!(p.metadata.nodes, 2);
        assert!(
            p.hosts.launcher.contains("--host c1,c2"),
            "{}",
            p.hosts.launcher
        );
        assert_eq!(p.hosts.rsh, "ssh -o BatchMode=yes");
    }
}
