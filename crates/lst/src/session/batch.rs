//! A running batch: every test of the batch at once, one job per client
//! agent, on a thread of its own that holds those agents' control
//! connections until the jobs end (their `--loop` count) or `stop`
//! halts them, and then hands the connections back with the totals.

use super::slot::Slot;
use super::{BatchTotals, TestDef};
use crate::console::{self, Node};
use crate::proto::{Answer, ClientJob, Command};
use crate::result::ClientStats;
use crate::spec::{Limit, MAX_DURATION_S};
use iolab_net::{Cancel, Conn, NetError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What a client's thread hands back: the agent's address, its
/// connection, and how its job ended. Agents are named by address, not
/// by their slot's position, which changes when a group's nodes leave
/// the session while the batch runs.
type Ended = (String, Conn, Result<ClientStats, JobFailed>);

/// A client's job that failed: why, and its counts by then when its
/// agent could still say them (none when the agent itself is gone).
type JobFailed = Box<(String, Option<ClientStats>)>;

/// A batch that runs.
pub(crate) struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Ended>>,
    /// Each client's job: (test index, agent address, whether it runs).
    jobs: Vec<(usize, String, Arc<AtomicBool>)>,
}

impl Running {
    /// Whether the job of the client at `addr` for test `test` still
    /// runs.
    pub(crate) fn client_runs(&self, test: usize, addr: &str) -> bool {
        self.jobs
            .iter()
            .any(|(t, a, on)| *t == test && a == addr && on.load(Ordering::Relaxed))
    }

    /// Whether every job has ended.
    pub(crate) fn finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Halts the jobs still running and returns the connections and the
    /// totals of the run.
    pub(crate) fn stop(self) -> (Vec<(String, Conn)>, BatchTotals) {
        self.stop.store(true, Ordering::Relaxed);
        let mut t = BatchTotals::default();
        // A panicked batch thread is the batch's failure, never an empty
        // run that looks finished (its connections are lost with it).
        let ended = match self.handle.join() {
            Ok(ended) => ended,
            Err(_) => {
                t.failure = Some("the batch's thread panicked".into());
                Vec::new()
            }
        };
        let mut conns = Vec::new();
        for (i, c, r) in ended {
            conns.push((i, c));
            let counts = match r {
                Ok(s) => Some(s),
                Err(f) => {
                    let (e, partial) = *f;
                    t.failure.get_or_insert(e);
                    partial
                }
            };
            if let Some(s) = counts {
                t.rpcs += s.rpcs;
                // RPCs lost when a job failed are failed RPCs too.
                t.errors += s.errors + s.lost;
                t.tx_bytes += s.tx_bytes;
                t.rx_bytes += s.rx_bytes;
            }
        }
        (conns, t)
    }
}

/// Plans every client's job of `tests`, takes their connections and
/// starts them. A node may be the client of one test only (one job per
/// agent at a time), and none may be busy in another batch.
pub(crate) fn start(
    slots: &mut [Slot],
    groups: &BTreeMap<String, Vec<Node>>,
    tests: &[TestDef],
) -> Result<Running, String> {
    let jobs = plan(slots, groups, tests)?;
    // Every connection is checked before any is taken: one dropped on
    // the way would end that agent's session.
    if let Some((_, i, _)) = jobs.iter().find(|(_, i, _)| slots[*i].ctl.is_none()) {
        return Err(format!(
            "node {} is busy in another running batch",
            slots[*i].node.name
        ));
    }
    let mut taken = Vec::new();
    let mut flags = Vec::new();
    for (t, i, job) in jobs {
        if let Some(c) = slots[i].ctl.take() {
            let on = Arc::new(AtomicBool::new(true));
            let addr = slots[i].node.addr.clone();
            flags.push((t, addr.clone(), Arc::clone(&on)));
            taken.push((addr, slots[i].node.name.clone(), c, job, on));
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || {
        std::thread::scope(|s| {
            let hs: Vec<_> = taken
                .into_iter()
                .map(|(addr, name, mut c, job, on)| {
                    let flag = &flag;
                    s.spawn(move || {
                        let r = run_job(&mut c, job, flag).map(|mut st| {
                            st.node = name.clone();
                            st
                        });
                        on.store(false, Ordering::Relaxed);
                        (
                            addr,
                            c,
                            r.map_err(|f| Box::new((format!("node {name}: {}", f.0), f.1))),
                        )
                    })
                })
                .collect();
            hs.into_iter().filter_map(|h| h.join().ok()).collect()
        })
    });
    Ok(Running {
        stop,
        handle,
        jobs: flags,
    })
}

/// Every client's job: (test index, slot index, job).
fn plan(
    slots: &[Slot],
    groups: &BTreeMap<String, Vec<Node>>,
    tests: &[TestDef],
) -> Result<Vec<(usize, usize, ClientJob)>, String> {
    let slot_of = |n: &Node| {
        slots
            .iter()
            .position(|s| s.node.addr == n.addr)
            .ok_or_else(|| format!("node {}: not in this session", n.name))
    };
    let mut jobs: Vec<(usize, usize, ClientJob)> = Vec::new();
    for (ti, t) in tests.iter().enumerate() {
        let group = |g: &str| groups.get(g).ok_or_else(|| format!("no group {g:?}"));
        let (from, to) = (group(&t.from)?, group(&t.to)?);
        // A group may have shrunk (update_group) since the test was added.
        let map = t
            .distribute
            .map(from.len(), to.len())
            .map_err(|e| e.to_string())?;
        for (c, servers) in from.iter().zip(map) {
            let i = slot_of(c)?;
            if jobs.iter().any(|(_, j, _)| *j == i) {
                return Err(format!(
                    "node {} is a client in two tests of the batch: iolab's agents run one job at a time, so put those tests in different batches",
                    c.name
                ));
            }
            let job = ClientJob {
                test: t.test,
                servers: servers.iter().map(|&s| to[s].addr.clone()).collect(),
                concurrency: t.concurrency,
                limit: t
                    .loop_count
                    .map_or(Limit::DurationS(MAX_DURATION_S), Limit::Count),
                rpc_timeout_s: t.rpc_timeout_s,
            };
            job.validate().map_err(|e| e.to_string())?;
            jobs.push((ti, i, job));
        }
    }
    Ok(jobs)
}

/// Runs one client's job until it ends or `stop` is set; then asks the
/// agent to halt it and takes its answer. A failed job comes with its
/// counts when the agent said them.
fn run_job(c: &mut Conn, job: ClientJob, stop: &AtomicBool) -> Result<ClientStats, JobFailed> {
    c.idle_timeout = console::run_timeout(job.limit);
    let lost = |e: NetError| Box::new((e.to_string(), None));
    console::send(c, &Command::Start(job), Cancel::process()).map_err(lost)?;
    let answer = match console::recv(c, Cancel::with(stop)) {
        Err(NetError::Cancelled) => {
            console::send(c, &Command::Halt, Cancel::process()).map_err(lost)?;
            c.idle_timeout = console::RESULT_GRACE;
            console::recv(c, Cancel::process()).map_err(lost)?
        }
        r => r.map_err(lost)?,
    };
    match answer {
        Answer::Done(s) => Ok(s),
        Answer::Failed { message, partial } => Err(Box::new((message, partial))),
        _ => Err(Box::new((
            "answered Start with something else".into(),
            None,
        ))),
    }
}
