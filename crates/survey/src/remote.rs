//! Object-survey targets on other hosts (`host:/path`, the kit's
//! `oss2:lustre-OST0004`). Each step of the survey (make the work
//! directories, create the objects, run one test, destroy, remove) runs on
//! every host at once as `iolab survey obdfilter-agent STEP ...` through
//! the remote shell (`iolab_launch`: option, else $IOLAB_RSH, else ssh).
//! A test's agents start together with the local workers; each agent
//! samples its own targets and prints their results as JSON, which are
//! merged with the local ones. As in the kit, a remote test's time runs
//! from starting the remote command to its exit, so it includes the
//! remote shell's start-up.

use crate::object::{Shape, TargetResult};
use crate::sampler::TargetRates;
use crate::SurveyError;
use iolab_launch::{Remote, RemoteShell};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A target on another host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteTarget {
    /// The host, as the remote shell names it.
    pub host: String,
    /// The directory there.
    pub path: PathBuf,
}

impl RemoteTarget {
    /// `host:/path` is remote; a path starting with `/` or `.`, without
    /// a `:`, or a backend's URL (`s3://bucket`) is local (None).
    pub fn parse(s: &str) -> Option<RemoteTarget> {
        if s.starts_with('/') || s.starts_with('.') || s.contains("://") {
            return None;
        }
        let (host, path) = s.split_once(':')?;
        (!host.is_empty() && !path.is_empty()).then(|| RemoteTarget {
            host: host.into(),
            path: path.into(),
        })
    }
}

/// How a test agent's stdout marks a line of live figures (one
/// interval, as the live crate's report in JSON); its results are the
/// one line without it.
pub const LIVE_PREFIX: &str = "iolab-live ";

/// Hands on the live intervals of the remote targets' agents: `(host,
/// Some(line))` for each interval host `host` (its index among the
/// hosts) sent, `(host, None)` once its agent for the test has ended.
pub type LiveFeed<'a> = &'a (dyn Fn(usize, Option<&[u8]>) + Sync);

/// Longest a remote step may take before it is stopped.
const STEP_LIMIT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Longest a cleanup step may take.
const CLEANUP_LIMIT: Duration = Duration::from_secs(300);

/// The other hosts of a survey and their targets.
pub struct Hosts {
    shell: Option<RemoteShell>,
    iolab: String,
    work: String,
    groups: Vec<(String, Vec<PathBuf>)>,
    /// The run's token: a step's wait (not a cleanup's) ends with it.
    cancel: iolab_core::CancelToken,
}

/// A test started on every host.
pub struct Pending {
    started: Instant,
    runs: Vec<Result<Remote, String>>,
}

impl Hosts {
    /// The hosts of the `remote` targets (none: every step does nothing),
    /// reached through `rsh` (or the default remote shell) running the
    /// `iolab` program at `remote_iolab`; the survey's files live in
    /// `work` under each target.
    pub fn new(
        remote: &[RemoteTarget],
        rsh: Option<&str>,
        remote_iolab: &str,
        work: &str,
        cancel: &iolab_core::CancelToken,
    ) -> Result<Hosts, SurveyError> {
        let mut groups: Vec<(String, Vec<PathBuf>)> = Vec::new();
        for t in remote {
            match groups.iter_mut().find(|g| g.0 == t.host) {
                Some(g) => g.1.push(t.path.clone()),
                None => groups.push((t.host.clone(), vec![t.path.clone()])),
            }
        }
        let shell = if groups.is_empty() {
            None
        } else {
            Some(RemoteShell::resolve(rsh)?)
        };
        Ok(Hosts {
            shell,
            iolab: remote_iolab.to_string(),
            work: work.to_string(),
            groups,
            cancel: cancel.clone(),
        })
    }

    fn spawn_all(&self, step: &str, extra: &[String]) -> Vec<Result<Remote, String>> {
        let Some(shell) = &self.shell else {
            return Vec::new();
        };
        self.groups
            .iter()
            .map(|(host, dirs)| {
                let mut cmd: Vec<String> = [
                    self.iolab.as_str(),
                    "survey",
                    "obdfilter-agent",
                    step,
                    "--work",
                    &self.work,
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                cmd.extend(extra.iter().cloned());
                cmd.push("--".into());
                cmd.extend(dirs.iter().map(|d| d.display().to_string()));
                // Standard input stays open while the step runs: a test
                // step ends once it closes (this survey is gone, kill -9
                // included), as the remote shell alone would not end it.
                shell
                    .spawn_with_stdin(host, &cmd, &[], b"")
                    .map_err(|e| format!("{host}: {e}"))
            })
            .collect()
    }

    fn wait(
        &self,
        r: Result<Remote, String>,
        limit: Duration,
        cleanup: bool,
    ) -> Result<String, String> {
        let cancelled = || !cleanup && self.cancel.is_cancelled();
        let f = r?.wait(limit, cancelled).map_err(|e| e.to_string())?;
        let out = String::from_utf8_lossy(&f.stdout).into_owned();
        if f.status.success() {
            Ok(out)
        } else {
            Err(String::from_utf8_lossy(&f.stderr).trim().to_string())
        }
    }

    fn run_all(&self, step: &str, extra: &[String], cleanup: bool) -> Result<(), SurveyError> {
        let limit = if cleanup { CLEANUP_LIMIT } else { STEP_LIMIT };
        let errors: Vec<(String, String)> = self
            .spawn_all(step, extra)
            .into_iter()
            .zip(&self.groups)
            .filter_map(|(r, g)| self.wait(r, limit, cleanup).err().map(|e| (g.0.clone(), e)))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SurveyError::Remote(errors))
        }
    }

    /// Makes the work directories on every host; on failure removes them.
    pub fn setup(&self) -> Result<(), SurveyError> {
        self.run_all("setup", &[], false)
            .inspect_err(|_| self.teardown())
    }

    /// Removes the work directories.
    pub fn teardown(&self) {
        let _ = self.run_all("teardown", &[], true);
    }

    /// Creates `nobj` objects per remote target.
    pub fn create(&self, nobj: u64) -> Result<(), SurveyError> {
        self.run_all("create", &["--nobj".into(), nobj.to_string()], false)
    }

    /// Destroys them.
    pub fn destroy(&self, nobj: u64) {
        let _ = self.run_all("destroy", &["--nobj".into(), nobj.to_string()], true);
    }

    /// Starts test `name` on every host; with `live_ms`, each agent
    /// also prints its live figures every `live_ms` ms.
    pub fn start_test(
        &self,
        name: &str,
        nobj: u64,
        s: Shape,
        (interval_ms, live_ms): (u64, Option<u64>),
    ) -> Pending {
        let mut extra: Vec<String> = [
            ("--name", name.to_string()),
            ("--nobj", nobj.to_string()),
            ("--rsz-bytes", s.rsz_bytes.to_string()),
            ("--count", s.count.to_string()),
            ("--thr", s.thr.to_string()),
            ("--per-obj", s.per_obj.to_string()),
            ("--interval-ms", interval_ms.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v])
        .collect();
        if let Some(ms) = live_ms {
            extra.extend(["--live-ms".to_string(), ms.to_string()]);
        }
        Pending {
            started: Instant::now(),
            runs: self.spawn_all("test", &extra),
        }
    }

    /// Waits for every host's test; returns their targets' results (named
    /// `host:path`; a host that failed gets an error on each target) and
    /// the wall time until the last one ended. The live lines not yet
    /// handed on (past `seen`, see [`Pending::hand_on`]) go to `live`,
    /// then each host's end.
    pub fn finish_test(
        &self,
        p: Pending,
        (live, mut seen): (Option<LiveFeed<'_>>, Vec<usize>),
    ) -> (Vec<TargetResult>, f64) {
        let mut out = Vec::new();
        seen.resize(p.runs.len(), 0);
        for (i, (r, (host, dirs))) in p.runs.into_iter().zip(&self.groups).enumerate() {
            let text = self.wait(r, STEP_LIMIT, false);
            if let Some(f) = live {
                if let Ok(t) = &text {
                    live_lines(t.as_bytes(), &mut seen[i], &|l| f(i, Some(l)));
                }
                f(i, None);
            }
            let parsed = text.and_then(|text| {
                let result = text.lines().rfind(|l| !l.starts_with(LIVE_PREFIX));
                serde_json::from_str::<Vec<TargetResult>>(result.unwrap_or_default())
                    .map_err(|e| format!("agent output: {e}"))
            });
            match parsed {
                Ok(list) => out.extend(list.into_iter().map(|mut t| {
                    t.target = format!("{host}:{}", t.target);
                    t
                })),
                Err(e) => out.extend(dirs.iter().map(|d| TargetResult {
                    target: format!("{host}:{}", d.display()),
                    rates: TargetRates {
                        amount: 0,
                        elapsed_s: 0.0,
                        samples: vec![],
                    },
                    direct: false,
                    error: Some(e.clone()),
                })),
            }
        }
        (out, p.started.elapsed().as_secs_f64())
    }
}

impl Pending {
    /// True once every host's agent has exited (or never started).
    pub fn all_exited(&mut self) -> bool {
        self.runs
            .iter_mut()
            .all(|r| r.as_mut().map_or(true, Remote::has_exited))
    }

    /// Hands on the live lines every agent has printed since `seen` (a
    /// byte offset per host, kept by the caller); a line still being
    /// written waits for the next call.
    pub fn hand_on(&self, seen: &mut Vec<usize>, live: LiveFeed<'_>) {
        seen.resize(self.runs.len(), 0);
        for (i, r) in self.runs.iter().enumerate() {
            if let Ok(r) = r {
                live_lines(&r.stdout_so_far(), &mut seen[i], &|l| live(i, Some(l)));
            }
        }
    }
}

/// The whole lines of `out` past `*seen` that carry [`LIVE_PREFIX`],
/// without it, to `f`; `*seen` moves past the last whole line.
fn live_lines(out: &[u8], seen: &mut usize, f: &dyn Fn(&[u8])) {
    let Some(new) = out.get(*seen..) else { return };
    let Some(end) = new.iter().rposition(|b| *b == b'\n') else {
        return;
    };
    for line in new[..end].split(|b| *b == b'\n') {
        if let Some(l) = line.strip_prefix(LIVE_PREFIX.as_bytes()) {
            f(l);
        }
    }
    *seen += end + 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_prefixed_targets_are_remote() {
        assert_eq!(
            RemoteTarget::parse("oss2:/mnt/ost4"),
            Some(RemoteTarget {
                host: "oss2".into(),
                path: "/mnt/ost4".into()
            })
        );
        assert_eq!(RemoteTarget::parse("/mnt/a:b"), None);
        assert_eq!(RemoteTarget::parse("./x"), None);
        assert_eq!(RemoteTarget::parse("plain"), None);
        assert_eq!(RemoteTarget::parse("s3://bucket/dir"), None);
    }

    #[test]
    fn live_lines_are_handed_on_once_and_only_whole() {
        let got = std::cell::RefCell::new(Vec::new());
        let f = |l: &[u8]| {
            got.borrow_mut()
                .push(String::from_utf8_lossy(l).into_owned())
        };
        let mut seen = 0;
        let mut out = b"iolab-live {\"a\":1}\n[results]\niolab-live {\"b\"".to_vec();
        live_lines(&out, &mut seen, &f);
        assert_eq!(*got.borrow(), ["{\"a\":1}"]);
        out.extend_from_slice(b":2}\n");
        live_lines(&out, &mut seen, &f);
        live_lines(&out, &mut seen, &f);
        assert_eq!(*got.borrow(), ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(seen, out.len());
    }
}
