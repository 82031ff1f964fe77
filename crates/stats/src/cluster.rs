//! The kit's gather_stats_everywhere: start a collector on every node of
//! the config (through the remote shell, or directly when no node list is
//! given), and at stop gather what each recorded into one tarball. A node
//! that cannot be reached is reported; the others go on.

use crate::archive;
use crate::config::Config;
use crate::node;
use iolab_launch::{Remote, RemoteShell};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one node's start or stop may take through the remote shell.
const REMOTE_TIMEOUT: Duration = Duration::from_secs(60);

/// What happened on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeResult {
    /// The node.
    pub node: String,
    /// None when it worked; else what went wrong there.
    pub error: Option<String>,
}

/// A start or stop across the nodes.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// One entry per node, in config order.
    pub nodes: Vec<NodeResult>,
    /// The tarball written (stop only).
    pub tarball: Option<PathBuf>,
    /// Nodes where the remote shell refused to start iolab (`NODE:
    /// Slurm's reason`): a bad node list or allocation, not a failure.
    pub refused: Vec<String>,
    /// The start was cut short by the stop request (Ctrl-C, SIGTERM):
    /// the step being started was stopped at once and the nodes after it
    /// were not tried. An interruption, not a failure of those nodes.
    pub interrupted: bool,
}

impl Report {
    /// The nodes that failed, with why.
    pub fn failed(&self) -> Vec<(String, String)> {
        self.nodes
            .iter()
            .filter_map(|n| n.error.clone().map(|e| (n.node.clone(), e)))
            .collect()
    }
}

/// Why nothing could be done at all.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The remote shell specification is unusable.
    #[error(transparent)]
    Rsh(#[from] iolab_launch::LaunchError),
    /// The tarball could not be written.
    #[error("cannot write the profile tarball {path}: {source}")]
    Tarball {
        /// Where.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The tarball's place cannot take it: checked before any collector
    /// is stopped (exit 2).
    #[error("cannot write the profile tarball {path}: {source}; nothing was stopped")]
    Destination {
        /// Where.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// No node gave anything back.
    #[error("no node could be stopped: {0}")]
    Nothing(String),
}

/// How the nodes are reached: this process, or a remote shell.
pub struct Plan<'a> {
    cfg: &'a Config,
    rsh: Option<RemoteShell>,
    exe: PathBuf,
    /// Ends the waits on the nodes' remote shells (not the stops'):
    /// the caller's token, or the process's root (its stop flag).
    cancel: iolab_core::CancelToken,
}

impl<'a> Plan<'a> {
    /// Resolves the remote shell (option, else config's RSH, else
    /// IOLAB_RSH, else ssh) when the config lists nodes. `exe` is the
    /// iolab binary to run on the nodes unless the config names one.
    pub fn new(
        cfg: &'a Config,
        rsh_option: Option<&str>,
        exe: &Path,
    ) -> Result<Plan<'a>, ClusterError> {
        let rsh = if cfg.is_local() {
            None
        } else {
            Some(RemoteShell::resolve(rsh_option.or(cfg.rsh.as_deref()))?)
        };
        let exe = cfg.iolab.clone().unwrap_or_else(|| exe.to_path_buf());
        Ok(Plan {
            cfg,
            rsh,
            exe,
            cancel: iolab_core::CancelToken::process(),
        })
    }

    /// Its waits end when `token` (the run's) is cancelled.
    pub fn with_cancel(mut self, token: &iolab_core::CancelToken) -> Self {
        self.cancel = token.clone();
        self
    }

    /// The node names: the lists, or this host.
    pub fn nodes(&self) -> Vec<String> {
        if self.cfg.is_local() {
            vec![iolab_core::env::hostname()]
        } else {
            self.cfg.nodes()
        }
    }

    /// Starts a collector on every node; each result says how it went.
    /// Through a remote shell that ends what its command started (srun),
    /// each collector's command stays running, and is left running when
    /// this process ends (`iolab stats start`); [`Plan::start_steps`]
    /// keeps them instead.
    pub fn start(&self) -> Report {
        let unsafe_bases = self.preflight();
        if !unsafe_bases.is_empty() {
            return self.refused_report(unsafe_bases);
        }
        let (report, steps) = self.start_steps(false);
        for s in steps {
            // The step holds the collector; `stats stop` ends both.
            std::mem::forget(s);
        }
        report
    }

    /// [`Plan::start`], also giving the commands that hold the collectors
    /// (none unless the remote shell ends what its command started): keep
    /// them until [`Plan::stop`], then [`wait_steps`].
    ///
    /// `tethered` (`stats run`): every collector is held, whatever the
    /// remote shell, and ends when this process does, kill -9 included:
    /// its step watches the standard input this process holds open, and
    /// stops the collector once it closes.
    pub fn start_steps(&self, tethered: bool) -> (Report, Vec<Remote>) {
        // As a plain word: JSON quoted for a shell reached `start-node`
        // with its quotes through an agent that execs the words (`--rsh
        // "ip netns exec"` without `exec:`).
        let spec =
            iolab_launch::plain_word(&serde_json::to_string(&self.cfg.spec).unwrap_or_default());
        if let Some(rsh) = self
            .rsh
            .as_ref()
            .filter(|r| tethered || r.ends_what_it_started())
        {
            return self.hold_steps(rsh, &spec, tethered);
        }
        let results = self.each(|node, dir| match &self.rsh {
            None => node::detach(&self.exe, dir, &self.cfg.spec)
                .map(|_| Vec::new())
                .map_err(|e| e.to_string()),
            Some(rsh) => {
                let d = dir.display().to_string();
                let words = ["start-node", "--dir", &d, "--spec", &spec];
                remote(rsh, node, &self.command(&words), &|| {
                    self.cancel.is_cancelled()
                })
            }
        });
        (self.start_report(results), Vec::new())
    }

    /// Starts each node's collector in a step held in the foreground
    /// for the run, one node after the other from this thread: a child
    /// gets SIGTERM when the thread that started it ends
    /// (`PR_SET_PDEATHSIG`), so steps started by [`Cluster::each`]'s
    /// worker threads would be stopped, collector and all, as soon as
    /// their thread returned.
    fn hold_steps(&self, rsh: &RemoteShell, spec: &str, tethered: bool) -> (Report, Vec<Remote>) {
        let mut steps = Vec::new();
        let mut results = Vec::new();
        for n in self.nodes() {
            if self.cancel.is_cancelled() {
                // Cut short: this node and those after it are not tried.
                results.push((n, Err(NOT_TRIED.to_string())));
                continue;
            }
            let d = node::run_dir(&self.cfg.tmp, &n).display().to_string();
            let mut words = vec!["start-node", "--dir", &d, "--spec", spec, "--foreground"];
            if tethered {
                words.push("--tethered");
            }
            let cmd = self.command(&words);
            let r = match held(rsh, &n, &cmd, tethered, &self.cancel) {
                Ok(step) => {
                    steps.push(step);
                    Ok(Vec::new())
                }
                Err(Unheld::Interrupted) => Err(NOT_TRIED.to_string()),
                Err(Unheld::Failed(why)) => Err(why),
            };
            results.push((n, r));
        }
        let mut report = self.start_report(results);
        report.refused = report
            .failed()
            .iter()
            .filter_map(|(n, e)| rsh.refusal(e.as_bytes()).map(|why| format!("{n}: {why}")))
            .collect();
        (report, steps)
    }

    /// The nodes whose TMP/iolab-stats is a link or not this user's own,
    /// or whose run directory holds what no collector wrote
    /// ([`node::check_dir`]; `NODE: why`, naming the path), checked on
    /// every node before any
    /// collector starts: one such node refuses the whole start, as bad
    /// usage. A node that cannot be reached is left to the start, which
    /// reports it as that node's failure.
    pub fn preflight(&self) -> Vec<(String, String)> {
        let results = self.each(|node, dir| match &self.rsh {
            None => node::check_dir(dir)
                .map(|()| Vec::new())
                .map_err(|e| e.to_string()),
            Some(rsh) => {
                let d = dir.display().to_string();
                let cmd = self.command(&["check-node", "--dir", &d]);
                remote_check(rsh, node, &cmd, &self.cancel)
            }
        });
        results
            .into_iter()
            .filter_map(|(n, r)| r.err().map(|e| (n, e)))
            .collect()
    }

    /// The report of a start refused by [`Plan::preflight`]: every node
    /// not started, the unsafe ones named.
    fn refused_report(&self, unsafe_bases: Vec<(String, String)>) -> Report {
        let why = |n: &str| {
            let bad = unsafe_bases.iter().find(|(u, _)| u == n);
            Some(
                bad.map_or("not started: another node's TMP is unsafe".into(), |b| {
                    b.1.clone()
                }),
            )
        };
        Report {
            nodes: self
                .nodes()
                .into_iter()
                .map(|n| NodeResult {
                    error: why(&n),
                    node: n,
                })
                .collect(),
            tarball: None,
            refused: unsafe_bases
                .iter()
                .map(|(n, e)| format!("{n}: {e}"))
                .collect(),
            interrupted: false,
        }
    }

    fn start_report(&self, results: Vec<(String, Result<Vec<u8>, String>)>) -> Report {
        Report {
            nodes: results
                .into_iter()
                .map(|(n, r)| NodeResult {
                    node: n,
                    error: r.err(),
                })
                .collect(),
            tarball: None,
            refused: Vec::new(),
            interrupted: self.cancel.is_cancelled(),
        }
    }

    /// Stops every node's collector and writes one tarball at `tgz`
    /// holding each node's record under `STEM/NODE/`.
    /// The destination is checked first, so a bad one stops nothing; a
    /// node's run directory is removed only once the tarball holding its
    /// record is written, so a tarball that cannot be written loses
    /// nothing (the records stay in each node's TMP for another stop).
    pub fn stop(&self, tgz: &Path) -> Result<Report, ClusterError> {
        check_destination(tgz)?;
        let results = self.each(|node, dir| match &self.rsh {
            None => node::halt(dir).map_err(|e| e.to_string()),
            Some(rsh) => {
                let cmd = self.command(&["halt", "--dir", &dir.display().to_string()]);
                // Not cut short by Ctrl-C: after an interrupted `run` the
                // collectors must still be stopped. The wait is bounded,
                // and a second Ctrl-C ends the process.
                remote(rsh, node, &cmd, &|| false)
            }
        });
        let mut parts = Vec::new();
        let mut report = Report {
            nodes: Vec::new(),
            tarball: None,
            refused: Vec::new(),
            interrupted: false,
        };
        for (n, r) in results {
            let files = r.and_then(|tar| {
                archive::untar(&tar).map_err(|e| format!("unreadable record: {e}"))
            });
            match files {
                Ok(f) => {
                    let error = died(&f);
                    parts.push((n.clone(), f));
                    report.nodes.push(NodeResult { node: n, error });
                }
                Err(e) => report.nodes.push(NodeResult {
                    node: n,
                    error: Some(e),
                }),
            }
        }
        if parts.is_empty() {
            let why = report
                .failed()
                .iter()
                .map(|(n, e)| format!("{n}: {e}"))
                .collect::<Vec<_>>();
            return Err(ClusterError::Nothing(why.join("; ")));
        }
        write_tarball(tgz, &parts, &report.failed())?;
        report.tarball = Some(tgz.to_path_buf());
        let gathered: Vec<&String> = parts.iter().map(|(n, _)| n).collect();
        // The records are safe in the tarball: the run directories go.
        self.each(|node, dir| {
            if !gathered.iter().any(|g| g.as_str() == node) {
                return Ok(Vec::new());
            }
            match &self.rsh {
                None => node::forget(dir)
                    .map(|()| Vec::new())
                    .map_err(|e| e.to_string()),
                Some(rsh) => {
                    let cmd = self.command(&["forget", "--dir", &dir.display().to_string()]);
                    remote(rsh, node, &cmd, &|| false)
                }
            }
        });
        Ok(report)
    }

    /// `iolab stats WORDS...` as the nodes run it.
    fn command(&self, words: &[&str]) -> Vec<String> {
        let mut cmd = vec![self.exe.display().to_string(), "stats".to_string()];
        cmd.extend(words.iter().map(|w| w.to_string()));
        cmd
    }

    /// Runs `f` for every node at once (a slow node does not hold up the
    /// others), results in node order.
    fn each<F>(&self, f: F) -> Vec<(String, Result<Vec<u8>, String>)>
    where
        F: Fn(&str, &Path) -> Result<Vec<u8>, String> + Sync,
    {
        let nodes = self.nodes();
        std::thread::scope(|s| {
            let handles: Vec<_> = nodes
                .iter()
                .map(|n| {
                    let dir = node::run_dir(&self.cfg.tmp, n);
                    let f = &f;
                    s.spawn(move || f(n, &dir))
                })
                .collect();
            nodes
                .iter()
                .zip(handles)
                .map(|(n, h)| {
                    let r = h
                        .join()
                        .unwrap_or_else(|_| Err("the node's thread panicked".into()));
                    (n.clone(), r)
                })
                .collect()
        })
    }
}

/// Why a node's record is not a whole run's: its collector died before
/// the stop (its samples end there), or None.
fn died(files: &BTreeMap<String, Vec<u8>>) -> Option<String> {
    let notes = files.get(archive::NOTES_FILE)?;
    String::from_utf8_lossy(notes)
        .contains(node::NOT_RUNNING_NOTE)
        .then(|| "the collector died before the stop: its samples end where it died".to_string())
}

/// What a node's start cut short by the stop request says (the node is
/// not at fault).
const NOT_TRIED: &str = "not started: interrupted";

/// Why [`held`] gives no running step.
enum Unheld {
    /// The stop request came first; the step was stopped at once.
    Interrupted,
    /// The remote shell's complaint: the command ended, or never wrote
    /// its first line in time.
    Failed(String),
}

/// Starts `cmd` on `node` and returns it still running once it has
/// written its first line (the collector's start samples are on disk),
/// or why not: the remote shell's complaint if it ends first, or the
/// stop request (Ctrl-C), which stops the step at once rather than
/// waiting for a step nothing will end.
fn held(
    rsh: &RemoteShell,
    node: &str,
    cmd: &[String],
    tethered: bool,
    cancel: &iolab_core::CancelToken,
) -> Result<Remote, Unheld> {
    // Tethered: standard input is a pipe this process holds open until
    // the step is stopped, or until this process ends.
    let mut r = match tethered {
        true => rsh.spawn_with_stdin(node, cmd, &[], b""),
        false => rsh.spawn(node, cmd, &[]),
    }
    .map_err(|e| Unheld::Failed(e.to_string()))?;
    let until = std::time::Instant::now() + REMOTE_TIMEOUT;
    loop {
        if r.stdout_so_far().contains(&b'\n') {
            return Ok(r);
        }
        if cancel.is_cancelled() && !r.has_exited() {
            r.stop();
            return Err(Unheld::Interrupted);
        }
        if r.has_exited() || std::time::Instant::now() >= until {
            let done = r
                .wait(Duration::from_secs(5), || false)
                .map_err(|e| Unheld::Failed(e.to_string()))?;
            return Err(Unheld::Failed(complaint(rsh, node, &done)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded) for the commands that held the collectors to end
/// after [`Plan::stop`], so that none is left; the rest are stopped.
pub fn wait_steps(steps: Vec<Remote>) {
    for s in steps {
        let _ = s.wait(Duration::from_secs(10), || false);
    }
}

fn complaint(rsh: &RemoteShell, node: &str, done: &iolab_launch::Finished) -> String {
    let err = String::from_utf8_lossy(&done.stderr).trim().to_string();
    format!(
        "through `{} {node}`: {} ({})",
        rsh.agent.join(" "),
        if err.is_empty() { "no message" } else { &err },
        done.status
    )
}

/// Runs `cmd` on `node`; its standard output on success, else the
/// remote shell's complaint.
fn remote(
    rsh: &RemoteShell,
    node: &str,
    cmd: &[String],
    cancelled: &dyn Fn() -> bool,
) -> Result<Vec<u8>, String> {
    let r = rsh.spawn(node, cmd, &[]).map_err(|e| e.to_string())?;
    let done = r
        .wait(REMOTE_TIMEOUT, cancelled)
        .map_err(|e| e.to_string())?;
    if done.status.success() {
        Ok(done.stdout)
    } else {
        Err(complaint(rsh, node, &done))
    }
}

/// Runs the node-side check `cmd` on `node`: Err with the node's message
/// only when the check itself refused (exit 2: an unsafe TMP/iolab-stats);
/// a node that cannot be reached or run passes here and fails at start.
fn remote_check(
    rsh: &RemoteShell,
    node: &str,
    cmd: &[String],
    cancel: &iolab_core::CancelToken,
) -> Result<Vec<u8>, String> {
    let Ok(r) = rsh.spawn(node, cmd, &[]) else {
        return Ok(Vec::new());
    };
    match r.wait(REMOTE_TIMEOUT, || cancel.is_cancelled()) {
        Ok(done) if done.status.code() == Some(NODE_CHECK_REFUSED) => {
            Err(String::from_utf8_lossy(&done.stderr).trim().to_string())
        }
        _ => Ok(Vec::new()),
    }
}

/// The exit status of `iolab stats check-node` for an unsafe
/// TMP/iolab-stats (iolab's usage status).
pub const NODE_CHECK_REFUSED: i32 = 2;

/// Writes the tarball, its top directory named after the file.
pub fn write_tarball(
    tgz: &Path,
    parts: &[(String, BTreeMap<String, Vec<u8>>)],
    failed: &[(String, String)],
) -> Result<(), ClusterError> {
    let top = tarball_stem(tgz);
    archive::write_tgz(tgz, &top, parts, failed).map_err(|source| ClusterError::Tarball {
        path: tgz.display().to_string(),
        source,
    })
}

/// Checks that the tarball can be made at `tgz` (its directory exists
/// and takes a new file) without leaving anything there. The probe is a
/// fresh hidden name made with O_EXCL ([`iolab_output::check_file`]):
/// nothing at a name someone else may have chosen (a planted
/// `NAME.tgz.part` link) is opened, created or followed.
pub fn check_destination(tgz: &Path) -> Result<(), ClusterError> {
    iolab_output::check_file("--tarball", tgz).map_err(|e| ClusterError::Destination {
        path: tgz.display().to_string(),
        source: std::io::Error::other(e.why),
    })
}

/// `log_name` for `/x/log_name.tgz` (or `.tar.gz`).
pub fn tarball_stem(tgz: &Path) -> String {
    let name = tgz
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stats".into());
    name.trim_end_matches(".tgz")
        .trim_end_matches(".tar.gz")
        .to_string()
}
