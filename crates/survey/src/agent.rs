//! The object survey's agent: one step of the survey on this host's
//! targets, run by the coordinating survey through the remote shell
//! (`iolab survey obdfilter-agent STEP ...`). A step returns what the
//! agent prints (a JSON line for `test` and `echo`); the binary only
//! parses the step and prints.

use crate::obdfilter::{self as o, Shape};
use iolab_backend::Backend;
use std::path::PathBuf;

/// One step as the coordinator asked for it.
#[derive(Debug, Clone)]
pub struct Step {
    /// setup, create, test, destroy, teardown or echo.
    pub step: String,
    /// The work directory's name in each target.
    pub work: String,
    /// Objects per target.
    pub nobj: u64,
    /// The test (`test`).
    pub name: String,
    /// The test's shape (`test`).
    pub shape: Shape,
    /// Sampling interval of a test, ms.
    pub interval_ms: u64,
    /// The port an echo agent listens on (`echo`).
    pub port: u16,
    /// This host's target directories.
    pub dirs: Vec<PathBuf>,
}

/// Runs `step` through backend `b`; returns the line to print, if any.
/// A test records its records on `live` (the agent's live figures).
pub fn run(
    s: &Step,
    b: &dyn Backend,
    live: Option<&iolab_core::live::Board>,
) -> Result<Option<String>, crate::SurveyError> {
    let work_dirs: Vec<PathBuf> = s.dirs.iter().map(|d| d.join(&s.work)).collect();
    match s.step.as_str() {
        "setup" => o::setup_dirs(b, &s.dirs, &s.work).map(|_| None),
        "create" => o::create_in(b, &work_dirs, s.nobj).map(|_| None),
        "destroy" => {
            o::destroy_in(b, &work_dirs, s.nobj);
            Ok(None)
        }
        "teardown" => {
            o::teardown_dirs(b, &work_dirs);
            Ok(None)
        }
        "test" => {
            let shape = Shape {
                per_obj: s.shape.per_obj.max(1),
                ..s.shape
            };
            let objects = o::objects_in(&work_dirs, s.nobj);
            // An agent runs outside any session: its process's root
            // token (the stop flag, raised by SIGTERM) stops it, and so
            // does its standard input closing: the survey that started
            // it, which holds the other end, is gone.
            iolab_net::key::on_stdin_close(iolab_core::stop::request);
            let cancel = iolab_core::CancelToken::process();
            let results = o::run_test(b, &objects, &s.name, shape, s.interval_ms, (&cancel, live));
            Ok(Some(serde_json::to_string(&results)?))
        }
        "echo" => echo(s.port, b, work_dirs.first()).map(Some),
        other => Err(crate::SurveyError::Step(other.to_string())),
    }
}

/// The echo agent of the network cases: serves until stopped, then
/// returns what it moved (JSON); for netdisk it keeps its objects in
/// `store_dir` (made first, removed at the end).
fn echo(
    port: u16,
    b: &dyn Backend,
    store_dir: Option<&PathBuf>,
) -> Result<String, crate::SurveyError> {
    use crate::echo;
    // SAFETY: prctl with PR_SET_PDEATHSIG touches no memory; it makes the
    // kernel send SIGTERM (a clean stop) when the process that started the
    // agent (the remote shell, or the survey itself) dies, even by kill -9.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } == 1 {
        return Err(crate::SurveyError::Orphan);
    }
    // The survey hands its key over on standard input (never the
    // command line), whose closing then stops the agent: no peer is
    // served that has not proved it.
    let key = iolab_net::SharedKey::from_stdin()?;
    let store = store_dir.map(|d| echo::Store {
        backend: b,
        dir: d.clone(),
    });
    if let Some(s) = &store {
        s.make()?;
    }
    let served = echo::serve(port, &key, store.as_ref());
    if let Some(s) = &store {
        s.remove();
    }
    let totals = served?;
    Ok(serde_json::to_string(&totals)?)
}
