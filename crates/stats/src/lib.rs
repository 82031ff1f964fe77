//! `iolab stats`: the Lustre I/O kit's stats-collect as a library.
//!
//! A collector samples system statistics (CPU, memory, disks, network,
//! statfs) and, where present, Lustre's (service, brw, target, client,
//! mballoc, jbd) at the kit's `*_INTERVAL`s: 0 = at start and stop only,
//! n = every n seconds. It runs detached on each node ([`cluster`],
//! [`node`]) or in a thread of a benchmark ([`Session`]); [`analyse`]
//! turns the samples into one table per statistic and node with counters
//! as deltas and rates per interval. Nothing here prints.
//!
//! ```
//! use iolab_stats::{analyse, config, Session};
//! let cfg = config::load("local,0").unwrap();
//! let session = Session::start(cfg.spec.clone(), "here").unwrap();
//! // ... the measured work runs here ...
//! let samples = session.stop().unwrap();
//! let tables = analyse::tables(&samples);
//! let disk = tables.iter().find(|t| t.stat == config::Stat::Disk).unwrap();
//! assert!(disk.header.contains(&"write_bytes_per_s".to_string()));
//! ```

pub mod analyse;
pub mod archive;
pub mod cluster;
pub mod collect;
pub mod config;
pub mod linux;
pub mod lustre;
pub mod node;
pub mod sample;
pub mod shell;

pub use config::{Config, ConfigError, Spec, Stat};
pub use sample::{NodeSamples, Row, Sample, Series};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// A collector running in a thread of this process: what a benchmark
/// starts around its run with `--stats local,1s`.
pub struct Session {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<std::io::Result<NodeSamples>>,
}

impl Session {
    /// Starts sampling `spec` on this node, recorded under `node`'s name;
    /// returns once the start samples are taken, so work begun after it
    /// is inside the first interval.
    pub fn start(spec: Spec, node: &str) -> std::io::Result<Session> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let node = node.to_string();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iolab-stats".into())
            .spawn(move || {
                let reader = collect::Reader::new(spec);
                let mut mem = collect::Memory::new(&node);
                let done = || flag.load(Ordering::Relaxed);
                let r = collect::run(&reader, &mut mem, &done, &mut || {
                    let _ = tx.send(());
                });
                r.map(|_| mem.samples)
            })?;
        // The sender is dropped without a send when the start samples fail.
        if rx.recv().is_err() {
            return match thread.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(std::io::Error::other("the stats collector ended at start")),
            };
        }
        Ok(Session { stop, thread })
    }

    /// Takes the stop samples and returns everything recorded.
    pub fn stop(self) -> std::io::Result<NodeSamples> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| std::io::Error::other("the stats collector panicked"))?
    }
}

/// What a run collected on every node, as a benchmark stores it beside
/// its own results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Collected {
    /// Each node's samples.
    pub nodes: Vec<NodeSamples>,
    /// Nodes that gave nothing, with why.
    pub failed: Vec<String>,
    /// Each node's tables (rates per interval), ready for a report.
    pub tables: Vec<analyse::Table>,
}

/// Why collection could not be attached or finished.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// Bad configuration (exit 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Nodes or the tarball.
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
    /// Reading or writing samples.
    #[error("stats: {0}")]
    Io(#[from] std::io::Error),
    /// A profile tarball with a member that would land outside (exit 2).
    #[error("stats: {0}")]
    Archive(#[from] archive::ArchiveError),
    /// The remote shell refused to start iolab on a node (srun made no
    /// step: an unknown node, no such allocation); bad usage, nothing
    /// is left collecting.
    #[error("the remote shell refused: {0}")]
    Refused(String),
    /// A node's TMP/iolab-stats is a link, another user's, or open to
    /// others (`NODE: why`, naming the path): bad usage, found before
    /// any collector started.
    #[error("{0}")]
    UnsafeTmp(String),
    /// The collector did not start on these nodes (`NODE: why`, joined
    /// by `; `); those that did start were stopped again, so nothing is
    /// left collecting. What [`attach_every`] returns where
    /// [`attach_config`] would go on without those nodes, and what
    /// [`Attached::finish`] returns when no node's collector started.
    #[error("the collector did not start on {0}")]
    NotStarted(String),
    /// The stop request (Ctrl-C, SIGTERM) came while the collectors were
    /// starting: the start was cut short and those that did start were
    /// stopped again. An interruption (exit 130), no node's failure.
    #[error("interrupted while the collectors were starting; those that did start were stopped")]
    Interrupted,
    /// Something other than this user's own directory stands where the
    /// CSV files go (a link, a file, another user's directory, one
    /// others may write): bad usage, found before anything is written.
    #[error("the CSV directory {}: {why}", path.display())]
    CsvDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        why: iolab_core::trust::Distrust,
    },
    /// A file where an analysis writes one (a node's table, the CSV
    /// tarball) that no analysis wrote: bad usage, found before anything
    /// is written. iolab writes over nothing it did not make.
    #[error("{}: {why}, and the analysis writes a file by that name: move it away, or give another directory", path.display())]
    NotOurs {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
}

/// Collection attached to a benchmark's run: in this process when the
/// configuration has no node list, else a collector per node.
pub enum Attached {
    /// A thread of this process.
    Local(Session),
    /// Detached collectors on the config's nodes.
    Nodes {
        /// The configuration.
        cfg: Box<Config>,
        /// Remote shell option.
        rsh: Option<String>,
        /// The iolab binary.
        exe: PathBuf,
        /// Nodes whose start failed.
        start_failed: Vec<String>,
        /// The remote commands that hold the collectors (srun steps).
        steps: Vec<iolab_launch::Remote>,
    },
}

/// The `--stats ARG` hook: `ARG` is `local`, `local,Ns`, a TOML file or
/// a config.sh. Call before the benchmark's first timed operation, then
/// [`Attached::finish`] after its last. `exe` is the running iolab binary.
pub fn attach(arg: &str, rsh: Option<&str>, exe: &Path) -> Result<Attached, StatsError> {
    let cfg = config::load(arg)?;
    attach_config(cfg, rsh, exe)
}

/// [`attach`] for an already loaded configuration.
pub fn attach_config(cfg: Config, rsh: Option<&str>, exe: &Path) -> Result<Attached, StatsError> {
    if cfg.is_local() {
        let node = iolab_core::env::hostname();
        return Ok(Attached::Local(Session::start(cfg.spec.clone(), &node)?));
    }
    let plan = cluster::Plan::new(&cfg, rsh, exe)?;
    let unsafe_bases = plan.preflight();
    if !unsafe_bases.is_empty() {
        let why: Vec<String> = unsafe_bases
            .iter()
            .map(|(n, e)| format!("{n}: {e}"))
            .collect();
        return Err(StatsError::UnsafeTmp(why.join("; ")));
    }
    // Tethered: the collectors end with this process, kill -9 included.
    let (report, steps) = plan.start_steps(true);
    if report.interrupted {
        abandon(&plan, steps);
        return Err(StatsError::Interrupted);
    }
    if !report.refused.is_empty() {
        abandon(&plan, steps);
        return Err(StatsError::Refused(report.refused.join("; ")));
    }
    let start_failed = report
        .failed()
        .into_iter()
        .map(|(n, e)| format!("{n}: {e}"))
        .collect();
    Ok(Attached::Nodes {
        cfg: Box::new(cfg),
        rsh: rsh.map(str::to_string),
        exe: exe.to_path_buf(),
        start_failed,
        steps,
    })
}

/// [`attach_config`] for a caller that must not run unmonitored
/// (`iolab stats run` without `--keep-going`): when the collector of any
/// node did not start, those that did are stopped again (their records
/// dropped) and the nodes are named in [`StatsError::NotStarted`], so
/// the caller can refuse to start its command.
pub fn attach_every(cfg: Config, rsh: Option<&str>, exe: &Path) -> Result<Attached, StatsError> {
    let attached = attach_config(cfg, rsh, exe)?;
    let Attached::Nodes {
        cfg,
        rsh,
        exe,
        start_failed,
        steps,
    } = attached
    else {
        return Ok(attached);
    };
    if start_failed.is_empty() {
        return Ok(Attached::Nodes {
            cfg,
            rsh,
            exe,
            start_failed,
            steps,
        });
    }
    let plan = cluster::Plan::new(&cfg, rsh.as_deref(), &exe)?;
    abandon(&plan, steps);
    Err(StatsError::NotStarted(start_failed.join("; ")))
}

/// Stops the collectors that did start, through a tarball of our own
/// that is then removed: nothing runs on, nothing is written for the
/// user.
fn abandon(plan: &cluster::Plan<'_>, steps: Vec<iolab_launch::Remote>) {
    let tmp = std::env::temp_dir().join(format!("iolab-stats-{}.tgz", std::process::id()));
    let _ = plan.stop(&tmp);
    cluster::wait_steps(steps);
    let _ = std::fs::remove_file(&tmp);
}

impl Attached {
    /// The nodes whose collector did not start (`NODE: why`).
    pub fn start_failed(&self) -> &[String] {
        match self {
            Attached::Local(_) => &[],
            Attached::Nodes { start_failed, .. } => start_failed,
        }
    }

    /// Stops collecting; when `tgz` is given the kit's profile tarball is
    /// written there too.
    pub fn finish(self, tgz: Option<&Path>) -> Result<Collected, StatsError> {
        let (nodes, failed) = match self {
            Attached::Local(s) => {
                let ns = s.stop()?;
                if let Some(path) = tgz {
                    let files = archive::node_files(&ns).into_iter().collect();
                    cluster::write_tarball(path, &[(ns.node.clone(), files)], &[])?;
                }
                (vec![ns], Vec::new())
            }
            Attached::Nodes {
                cfg,
                rsh,
                exe,
                start_failed,
                steps,
            } => {
                let plan = cluster::Plan::new(&cfg, rsh.as_deref(), &exe)?;
                let keep = tgz.map(Path::to_path_buf);
                let path = keep.clone().unwrap_or_else(|| {
                    std::env::temp_dir().join(format!("iolab-stats-{}.tgz", std::process::id()))
                });
                let report = plan.stop(&path);
                cluster::wait_steps(steps);
                let report = match report {
                    // No node gave a record because none started: that
                    // is what went wrong, not the stop.
                    Err(cluster::ClusterError::Nothing(_))
                        if start_failed.len() == plan.nodes().len() =>
                    {
                        return Err(StatsError::NotStarted(start_failed.join("; ")));
                    }
                    r => r?,
                };
                let (nodes, _) = archive::read_tgz(&path)?;
                if keep.is_none() {
                    let _ = std::fs::remove_file(&path);
                }
                // A node whose start failed usually fails its stop too;
                // the start's reason is the one that explains it.
                let stopped_badly: Vec<String> = report
                    .failed()
                    .into_iter()
                    .filter(|(n, _)| {
                        !start_failed
                            .iter()
                            .any(|f| f.starts_with(&format!("{n}: ")))
                    })
                    .map(|(n, e)| format!("{n}: {e}"))
                    .collect();
                let mut all = start_failed;
                all.extend(stopped_badly);
                (nodes, all)
            }
        };
        let tables = nodes.iter().flat_map(analyse::tables).collect();
        Ok(Collected {
            nodes,
            failed,
            tables,
        })
    }
}

/// What `analyse` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// The CSV files, one per statistic and node.
    pub csv_files: Vec<PathBuf>,
    /// The CSV tarball.
    pub tarball: PathBuf,
    /// Statistics absent on a node (`node: stat: why`) and node notes.
    pub notes: Vec<String>,
}

/// The tarball of the CSV directory `out`: `out` with `.tgz` added to
/// its name (`run.v1` gives `run.v1.tgz`; a suffix is never replaced).
pub fn csv_tarball(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".tgz");
    PathBuf::from(name)
}

/// Checks where the CSV files will go, before anything is collected or
/// written: nothing there yet, or a directory of this user's that no one
/// else may write. A link at `out` is refused, not followed (the files
/// would land where it leads), and so is another user's directory (in a
/// shared directory anyone may have made it first). A file of a name the
/// analysis writes (`out/NODE/STAT.csv`, `out.tgz`) must be one an
/// earlier analysis wrote ([`earlier_tables`], [`earlier_tarball`]).
pub fn check_csv_dir(out: &Path) -> Result<(), StatsError> {
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(StatsError::Io(e)),
        Ok(m) => {
            iolab_core::trust::own_dir(&m).map_err(|why| StatsError::CsvDir {
                path: out.to_path_buf(),
                why,
            })?;
            earlier_tables(out)?;
        }
    }
    earlier_tarball(&csv_tarball(out))
}

/// Ok when every file in a node folder of `out` that bears a table's name
/// (`STAT.csv`) begins with the header every table has ([`analyse::LEAD`]):
/// an earlier analysis's, which this one may replace.
fn earlier_tables(out: &Path) -> Result<(), StatsError> {
    let lead = analyse::LEAD.join(",");
    for node in std::fs::read_dir(out)?.flatten() {
        if !node.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for stat in Stat::ALL {
            let path = node.path().join(format!("{}.csv", stat.name()));
            let not_ours = |why: String| StatsError::NotOurs {
                path: path.clone(),
                why,
            };
            match iolab_output::earlier_head(&path).map_err(|e| not_ours(e.to_string()))? {
                Some(head) if !head.starts_with(lead.as_bytes()) => {
                    return Err(not_ours("is not a table iolab stats wrote".into()));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Ok when nothing is at `tgz`, or an earlier analysis's CSV tarball: a
/// gzip'd tar whose every member is `STEM/NODE/STAT.csv` (STEM the
/// tarball's name without `.tgz`), as [`analyse_tarball`] writes it.
fn earlier_tarball(tgz: &Path) -> Result<(), StatsError> {
    let not_ours = |why: String| StatsError::NotOurs {
        path: tgz.to_path_buf(),
        why,
    };
    if iolab_output::earlier_head(tgz)
        .map_err(|e| not_ours(e.to_string()))?
        .is_none()
    {
        return Ok(());
    }
    let top = cluster::tarball_stem(tgz);
    let tables: Vec<String> = Stat::ALL
        .iter()
        .map(|s| format!("{}.csv", s.name()))
        .collect();
    let ours = |name: &[u8]| {
        let name = String::from_utf8_lossy(name);
        let parts: Vec<&str> = name.split('/').collect();
        matches!(parts.as_slice(), [t, node, file]
            if *t == top && !node.is_empty() && tables.iter().any(|n| n == file))
    };
    let walk = || -> std::io::Result<bool> {
        let gz = flate2::read::GzDecoder::new(std::fs::File::open(tgz)?);
        let mut tar = tar::Archive::new(gz);
        for e in tar.entries()? {
            if !ours(&e?.path_bytes()) {
                return Ok(false);
            }
        }
        Ok(true)
    };
    match walk() {
        Ok(true) => Ok(()),
        // A file that is no gzip'd tar at all is no more ours than one
        // of other members.
        _ => Err(not_ours("is not a CSV tarball iolab stats wrote".into())),
    }
}

/// Makes the CSV directory `out` (its parents as needed) and checks that
/// what stands there now is this user's own ([`check_csv_dir`]), also
/// when it was there already or appeared meanwhile.
fn make_csv_dir(out: &Path) -> Result<(), StatsError> {
    check_csv_dir(out)?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::create_dir(out) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
        _ => {}
    }
    check_csv_dir(out)
}

/// The kit's analyse step: reads a profile tarball and writes
/// `OUT/NODE/STAT.csv` for each statistic and node, plus `OUT.tgz`
/// holding them ([`csv_tarball`]).
pub fn analyse_tarball(tgz: &Path, out: &Path) -> Result<Analysis, StatsError> {
    let (nodes, failed) = archive::read_tgz(tgz)?;
    make_csv_dir(out)?;
    let mut notes: Vec<String> = failed.iter().map(|f| format!("failed node {f}")).collect();
    let mut csv_files = Vec::new();
    let mut parts = Vec::new();
    let mut no_lustre = NoLustre::default();
    for ns in &nodes {
        let dir = out.join(&ns.node);
        // A link planted where a node's folder goes is not followed.
        if dir
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(StatsError::Io(std::io::Error::other(format!(
                "{} is a symbolic link; not followed",
                dir.display()
            ))));
        }
        std::fs::create_dir_all(&dir)?;
        let mut files = std::collections::BTreeMap::new();
        for t in analyse::tables(ns) {
            let path = dir.join(t.file_name());
            let text = t.to_csv();
            // Whole or absent, as every output iolab writes.
            iolab_output::write_atomically(&path, text.as_bytes())?;
            files.insert(t.file_name(), text.into_bytes());
            csv_files.push(path);
        }
        parts.push((ns.node.clone(), files));
        let mut missing = Vec::new();
        for (stat, s) in &ns.stats {
            match s {
                Series::Absent(why)
                    if why.starts_with(&format!("no {} statistics on this node", stat.name())) =>
                {
                    missing.push((stat.name(), why.as_str()));
                }
                Series::Absent(why) => notes.push(format!("{}: {}: {why}", ns.node, stat.name())),
                _ => {}
            }
        }
        no_lustre.add(&ns.node, &missing);
        notes.extend(ns.notes.iter().map(|n| format!("{}: {n}", ns.node)));
    }
    notes.extend(no_lustre.notes());
    let tarball = csv_tarball(out);
    cluster::write_tarball(&tarball, &parts, &[])?;
    Ok(Analysis {
        csv_files,
        tarball,
        notes,
    })
}

/// Lustre statistics that a node does not have, gathered so that a
/// cluster without Lustre gets one note, not one per statistic and node.
#[derive(Default)]
struct NoLustre {
    /// (statistics, where they were looked for) -> the nodes.
    groups: std::collections::BTreeMap<(String, String), Vec<String>>,
}

impl NoLustre {
    /// `missing`: (statistic, "no X statistics on this node (looked in P)").
    fn add(&mut self, node: &str, missing: &[(&str, &str)]) {
        if missing.is_empty() {
            return;
        }
        let names: Vec<&str> = missing.iter().map(|(n, _)| *n).collect();
        let places = missing[0]
            .1
            .split_once("(looked in ")
            .map(|(_, p)| p.trim_end_matches(')').to_string())
            .unwrap_or_default();
        self.groups
            .entry((names.join(", "), places))
            .or_default()
            .push(node.to_string());
    }

    fn notes(&self) -> Vec<String> {
        self.groups
            .iter()
            .map(|((stats, places), nodes)| {
                format!(
                    "no Lustre statistics on {} ({stats} not collected; looked in {places})",
                    nodes.join(", ")
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_without_lustre_make_one_note() {
        let mut n = NoLustre::default();
        let why = |s: &str| {
            format!("no {s} statistics on this node (looked in /proc/fs/lustre, /sys/fs/lustre)")
        };
        let (a, b) = (why("service"), why("brw"));
        for node in ["n1", "n2", "n3"] {
            n.add(node, &[("service", &a), ("brw", &b)]);
        }
        assert_eq!(
            n.notes(),
            ["no Lustre statistics on n1, n2, n3 (service, brw not collected; looked in /proc/fs/lustre, /sys/fs/lustre)"]
        );
    }

    #[test]
    fn a_local_attachment_returns_tables_and_writes_the_tarball() {
        let dir = std::env::temp_dir().join(format!("iolab-attach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tgz = dir.join("a.tgz");
        let attached = attach("local,0", None, Path::new("/bin/false")).unwrap();
        assert!(matches!(attached, Attached::Local(_)));
        let c = attached.finish(Some(&tgz)).unwrap();
        assert_eq!(c.nodes.len(), 1);
        assert!(c.failed.is_empty());
        assert!(c
            .tables
            .iter()
            .any(|t| t.stat == Stat::Cpu && !t.rows.is_empty()));
        let (nodes, _) = archive::read_tgz(&tgz).unwrap();
        assert_eq!(nodes, c.nodes);
        let json = serde_json::to_string(&c).unwrap();
        let back: Collected = serde_json::from_str(&json).unwrap();
        assert_eq!(back.tables, c.tables);
        assert!(matches!(
            attach("local,-2", None, Path::new("x")),
            Err(StatsError::Config(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
