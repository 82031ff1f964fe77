//! Stopping a repeat whose launcher is srun so that its ranks clean up.
//!
//! srun answers SIGTERM (and a second SIGINT) by killing the step's
//! tasks at once: an interrupted mdtest would leave every file it made.
//! `scancel --signal=TERM JOB.STEP` instead delivers SIGTERM to the
//! tasks themselves, which stop and remove what they made, as they do
//! under mpirun. The step is found from the ranks: each child of the
//! sweep gets a mark of its own in its environment ([`MARK_ENV`]), srun
//! passes the environment on to the tasks, and a task on this node names
//! its step in `SLURM_JOB_ID` and `SLURM_STEP_ID`.

use std::path::Path;

/// The environment variable that marks a sweep's child and its tasks.
pub const MARK_ENV: &str = "IOLAB_SWEEP_CHILD";

/// True when the command is run by srun.
pub fn is_srun(argv: &[String]) -> bool {
    argv.first()
        .and_then(|p| Path::new(p).file_name())
        .is_some_and(|n| n == "srun")
}

/// The step (`JOB.STEP`) of a task on this node whose environment holds
/// `MARK_ENV=mark`, or None when no such task runs here (not started
/// yet, on other nodes only, or started with `--export=NONE`). `srun` is
/// the launcher's pid: its own environment has the mark too, and inside
/// a batch script the batch step's ids, which must not be signalled.
pub fn find_step(mark: &str, srun: u32) -> Option<String> {
    let want = format!("{MARK_ENV}={mark}");
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == srun.to_string() {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if let Some(step) = step_of(&env, &want) {
            return Some(step);
        }
    }
    None
}

/// `JOB.STEP` from an environment block (NUL-separated) that holds `want`.
fn step_of(env: &[u8], want: &str) -> Option<String> {
    let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
    if !vars.contains(&want.as_bytes()) {
        return None;
    }
    let get = |k: &str| {
        vars.iter().find_map(|v| {
            let v = std::str::from_utf8(v).ok()?;
            v.strip_prefix(k)?.strip_prefix('=').map(str::to_string)
        })
    };
    // Only a task has a rank.
    get("SLURM_PROCID")?;
    Some(format!(
        "{}.{}",
        get("SLURM_JOB_ID")?,
        get("SLURM_STEP_ID")?
    ))
}

/// `scancel --signal=TERM STEP`; true when scancel accepted it.
pub fn terminate_step(step: &str) -> bool {
    iolab_launch::run_bounded(
        "scancel",
        &["--signal=TERM", step],
        iolab_launch::SLURM_TIMEOUT,
    )
    .is_ok_and(|f| f.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_comes_from_a_marked_environment_only() {
        let env =
            b"A=1\0IOLAB_SWEEP_CHILD=7-2\0SLURM_JOB_ID=5001\0SLURM_STEP_ID=3\0SLURM_PROCID=1\0";
        assert_eq!(
            step_of(env, "IOLAB_SWEEP_CHILD=7-2").as_deref(),
            Some("5001.3")
        );
        assert_eq!(step_of(env, "IOLAB_SWEEP_CHILD=7-20"), None);
        assert_eq!(
            step_of(b"IOLAB_SWEEP_CHILD=1\0", "IOLAB_SWEEP_CHILD=1"),
            None
        );
        let srun_itself = b"IOLAB_SWEEP_CHILD=1\0SLURM_JOB_ID=9\0SLURM_STEP_ID=4294967291\0";
        assert_eq!(step_of(srun_itself, "IOLAB_SWEEP_CHILD=1"), None);
        assert!(is_srun(&["/usr/bin/srun".into(), "-n".into()]));
        assert!(!is_srun(&["mpirun".into()]));
    }
}
