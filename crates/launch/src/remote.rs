//! A command running on another host through a remote shell: its output
//! collected in the background, waits bounded in time, and the whole
//! process group stopped when it is dropped, so a failed test or an
//! interrupted run never leaves an agent behind. A killed parent (kill
//! -9, where no drop runs) takes the agent with it: the kernel sends it
//! SIGTERM (`PR_SET_PDEATHSIG`), on which iolab stops and cleans up as on
//! Ctrl-C and ssh ends, and its standard input, when it has one from us,
//! closes, which ssh carries to the far side.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an srun agent's task has, after SIGTERM from Slurm, to clean
/// up and end before the agent is killed.
pub const STEP_GRACE: Duration = Duration::from_secs(30);

/// How long a command stopped with SIGTERM has to end (removing a
/// partial file, saying what it leaves) before SIGKILL; the wait ends
/// as soon as it has gone.
pub const TERM_GRACE: Duration = Duration::from_secs(5);

/// Output of a remote command, collected as it comes.
type Collected = (Arc<Mutex<Vec<u8>>>, Option<JoinHandle<()>>);

/// A remote command in flight.
#[derive(Debug)]
pub struct Remote {
    /// The name of the Slurm step the agent (srun) makes, if it is srun.
    pub(crate) slurm_step: Option<String>,
    child: Child,
    /// Held open while the command runs: its closing tells the far side
    /// that whoever started it is gone.
    stdin: Option<ChildStdin>,
    stdout: Collected,
    stderr: Collected,
    done: Option<ExitStatus>,
}

/// What a finished remote command left.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Exit status of the agent (which ssh and ip netns exec pass through).
    pub status: ExitStatus,
    /// Everything it wrote to standard output.
    pub stdout: Vec<u8>,
    /// Everything it wrote to standard error.
    pub stderr: Vec<u8>,
}

/// Why a wait ended without an exit.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The deadline passed; the command was stopped.
    #[error("the remote command did not finish within {0:?}; it was stopped")]
    Timeout(Duration),
    /// The stop request (Ctrl-C) ended the wait; the command was stopped.
    #[error("stopped by request; the remote command was stopped")]
    Cancelled,
    /// waitpid failed.
    #[error("cannot wait for the remote command: {0}")]
    Io(#[from] std::io::Error),
}

fn drain<R: Read + Send + 'static>(r: Option<R>) -> Collected {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let b = buf.clone();
    let h = r.map(|mut r| {
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                b.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(&chunk[..n]);
            }
        })
    });
    (buf, h)
}

/// Joins a collector and hands its bytes over.
fn take(c: &mut Collected) -> Vec<u8> {
    if let Some(h) = c.1.take() {
        let _ = h.join();
    }
    std::mem::take(&mut *c.0.lock().unwrap_or_else(PoisonError::into_inner))
}

impl Remote {
    /// Starts `argv` (agent, host, command) in a new process group with
    /// both outputs captured, killed when this process dies. With
    /// `input`, standard input is a pipe that gets `input` and stays
    /// open; without, it is closed.
    ///
    /// The child is started from the calling thread, and
    /// `PR_SET_PDEATHSIG` fires when that thread ends: call it from the
    /// thread that outlives the command (the run's own thread).
    pub(crate) fn spawn(argv: &[OsString], input: Option<&[u8]>) -> std::io::Result<Remote> {
        Self::spawn_with(argv, input, &[])
    }

    fn spawn_with(
        argv: &[OsString],
        input: Option<&[u8]>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> std::io::Result<Remote> {
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        let mut cmd = Command::new(prog);
        cmd.args(args)
            .envs(env.iter().copied())
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SIGTERM, not SIGKILL: an iolab child then stops as on Ctrl-C,
        // removing or recording what it leaves (mpirun and ssh end
        // their children the same way).
        crate::end_with_parent(&mut cmd, libc::SIGTERM);
        let mut child = cmd.spawn()?;
        let mut stdin = child.stdin.take();
        if let (Some(w), Some(bytes)) = (stdin.as_mut(), input) {
            // A command that exits before reading is seen by its status.
            let _ = w.write_all(bytes).and_then(|()| w.flush());
        }
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        Ok(Remote {
            slurm_step: None,
            child,
            stdin,
            stdout,
            stderr,
            done: None,
        })
    }

    /// Starts a local command the same way (its own process group, output
    /// collected as it comes, stopped on drop, killed with this process):
    /// the local side of a tool whose far side runs through the remote
    /// shell (xddcp's source). `input` as for [`Remote::spawn`].
    pub fn spawn_local(argv: &[OsString], input: Option<&[u8]>) -> std::io::Result<Remote> {
        Self::spawn(argv, input)
    }

    /// [`Remote::spawn_local`] with `env` added to the command's
    /// environment.
    pub fn spawn_local_env(
        argv: &[OsString],
        input: Option<&[u8]>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> std::io::Result<Remote> {
        Self::spawn_with(argv, input, env)
    }

    /// Closes the command's standard input (the far side sees its
    /// starter gone and ends).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Has Slurm send SIGTERM to the task of this agent's step; true when
    /// the step was found and scancel took the request.
    fn terminate_step(&self) -> bool {
        let Some(name) = &self.slurm_step else {
            return false;
        };
        let Ok(o) =
            crate::run_bounded("squeue", &["-h", "-s", "-o", "%i %j"], crate::SLURM_TIMEOUT)
        else {
            return false;
        };
        let text = String::from_utf8_lossy(&o.stdout);
        let Some(id) = text.lines().find_map(|l| {
            let (id, n) = l.trim().split_once(' ')?;
            (n.trim() == name).then_some(id.to_string())
        }) else {
            return false;
        };
        crate::run_bounded("scancel", &["--signal=TERM", &id], crate::SLURM_TIMEOUT)
            .is_ok_and(|f| f.status.success())
    }

    /// Asks the command to end (SIGTERM to its group) without waiting, so
    /// that it can clean up and report; [`Remote::wait`] then collects it.
    pub fn terminate(&mut self) {
        if self.has_exited() {
            return;
        }
        if self.terminate_step() {
            return;
        }
        // SAFETY: kill has no memory effects; a negative pid names our
        // child's own process group, created by process_group(0).
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGTERM) };
    }

    /// What the command has written to standard output so far (for a
    /// caller that waits for a line while the command goes on running).
    pub fn stdout_so_far(&self) -> Vec<u8> {
        self.stdout
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the command has written to standard error so far (for a
    /// caller that waits for a line, such as "listening on").
    pub fn stderr_so_far(&self) -> Vec<u8> {
        self.stderr
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The exit status, once the command has exited (does not block).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.has_exited();
        self.done
    }

    /// The agent's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True once the command has exited (does not block).
    pub fn has_exited(&mut self) -> bool {
        if self.done.is_none() {
            self.done = self.child.try_wait().ok().flatten();
        }
        self.done.is_some()
    }

    /// Waits until the command exits, `timeout` passes, or `cancelled`
    /// says stop (the caller passes its stop flag); on timeout or cancel
    /// the process group is stopped first.
    pub fn wait(
        mut self,
        timeout: Duration,
        cancelled: impl Fn() -> bool,
    ) -> Result<Finished, WaitError> {
        let until = Instant::now() + timeout;
        while !self.has_exited() {
            if cancelled() {
                self.stop();
                return Err(WaitError::Cancelled);
            }
            if Instant::now() >= until {
                self.stop();
                return Err(WaitError::Timeout(timeout));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = self
            .done
            .take()
            .ok_or_else(|| WaitError::Io(std::io::Error::other("child status vanished")))?;
        Ok(Finished {
            status,
            stdout: take(&mut self.stdout),
            stderr: take(&mut self.stderr),
        })
    }

    /// Stops the agent and what it started locally: SIGTERM to the group,
    /// then SIGKILL if it has not gone within [`TERM_GRACE`]. (ssh forwards the
    /// hang-up to the far side when its connection drops.) An srun agent
    /// would kill its task at once: its step's task gets SIGTERM from
    /// Slurm instead (`scancel --signal=TERM`), and [`STEP_GRACE`] to
    /// clean up and end.
    pub fn stop(&mut self) {
        // Standard input closes last, once the group has gone: a command
        // that takes its closing as a stop request then has one reason to
        // stop, not two racing (the signal and the closing).
        self.stop_group();
        self.close_stdin();
    }

    fn stop_group(&mut self) {
        if self.has_exited() {
            return;
        }
        if self.terminate_step() {
            let until = Instant::now() + STEP_GRACE;
            while !self.has_exited() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.has_exited() {
                return;
            }
        }
        let pg = self.child.id() as libc::pid_t;
        // SAFETY: kill has no memory effects; a negative pid names our
        // child's own process group, created by process_group(0).
        unsafe { libc::kill(-pg, libc::SIGTERM) };
        let until = Instant::now() + TERM_GRACE;
        while !self.has_exited() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !self.has_exited() {
            // SAFETY: as above.
            unsafe { libc::kill(-pg, libc::SIGKILL) };
            self.done = self.child.wait().ok();
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.stop();
    }
}
