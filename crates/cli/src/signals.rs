//! Ctrl-C, SIGTERM and a hangup (SIGHUP: the terminal closed, unless
//! the process was started ignoring it, as under nohup): the first one
//! cancels the run's root token (the runner's, which raises
//! iolab_core::stop with it, the flag the engines still read), so every
//! engine stops and cleans up; a second of the same kind (Ctrl-C twice,
//! SIGTERM twice) ends the process at once. Kinds are counted apart
//! because under mpirun a rank gets the terminal's Ctrl-C at once (see
//! [`relay`]) and mpirun's own SIGTERM later: that SIGTERM must not cut
//! short the cleanup the Ctrl-C started (mpirun's SIGKILL ends it).
//!
//! Under Slurm, a task's SIGTERM comes from its slurmstepd, which may
//! send it more than once for one stop: one `scancel --signal=TERM` of
//! a step on a loaded machine reached each task twice, 14 ms apart,
//! from two threads of the stepd, and the repeat ended the ranks before
//! they removed their files. So there a repeat only cancels; Slurm's own
//! SIGKILL, `KillWait` seconds after the first, is the stop at once.
//!
//! The signal a parent's death sends (`iolab_launch::end_with_parent`) is
//! a stop request, never a second signal: the kernel sends it once more
//! each time a thread of the dying parent exits and hands the child on,
//! each time from the parent's pid, and a child that took the repeat for
//! a second SIGTERM would end without removing what it made. So a
//! signal of that kind from that parent only cancels ([`counts`]).

mod relay;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};
use std::time::Duration;

/// A first SIGINT, SIGTERM, SIGHUP has come. Kept apart from the stop
/// request itself, which other things raise too (a closed standard input
/// that carried a key, a failed engine): only a second *signal* of one
/// kind ends the process at once.
static SIGNALLED: [AtomicBool; 3] = [
    AtomicBool::new(false),
    AtomicBool::new(false),
    AtomicBool::new(false),
];

/// Whether a signal that stops a run (SIGINT, SIGTERM, SIGHUP) has come,
/// other than a parent's death signal: a run that ends after one is
/// interrupted, even when it had done all its work before (see
/// `runner::Session::finish_document`).
pub fn signalled() -> bool {
    SIGNALLED.iter().any(|s| s.load(Ordering::SeqCst))
}

/// The parent whose death signals this process, and the signal
/// (`iolab_launch::parent_death`), read once at install; 0 when none.
static PARENT: [AtomicI32; 2] = [AtomicI32::new(0), AtomicI32::new(0)];

/// Whether signal `sig`, sent by `sender` (`si_pid`) with `code`
/// (`si_code`), counts towards the two that end the process at once.
/// Not when it is the death signal of `parent` (pid, signal) and comes
/// from that parent as a user signal: the kernel repeats it as the dying
/// parent's threads exit, and each repeat must leave the cleanup the
/// first one started to finish. Async-signal-safe (plain comparisons).
fn counts(sig: i32, code: i32, sender: libc::pid_t, parent: Option<(libc::pid_t, i32)>) -> bool {
    match parent {
        Some((pid, death)) => !(sig == death && code == libc::SI_USER && sender == pid),
        None => true,
    }
}

/// The slurmstepd that started this process (its parent), read once at
/// install; 0 when the parent is not one.
static STEPD: AtomicI32 = AtomicI32::new(0);

/// Whether signal `sig`, sent by `sender` with `code`, is Slurm's stop
/// request from `stepd` (the task's slurmstepd, 0 for none), which may
/// come more than once and so never ends the process at once.
/// Async-signal-safe (plain comparisons).
fn from_stepd(sig: i32, code: i32, sender: libc::pid_t, stepd: libc::pid_t) -> bool {
    stepd != 0 && sig == SIGTERM && code == libc::SI_USER && sender == stepd
}

/// [`from_stepd`] for a delivered signal, against the recorded stepd.
fn from_stepd_delivered(sig: i32, info: &libc::siginfo_t) -> bool {
    // SAFETY: si_pid is set for the SI_USER signals it is compared for;
    // for other codes its value is unused (`from_stepd` checks the code).
    let sender = unsafe { info.si_pid() };
    from_stepd(sig, info.si_code, sender, STEPD.load(Ordering::SeqCst))
}

/// The parent's pid when it is a slurmstepd (Slurm started this task).
fn stepd_parent() -> Option<libc::pid_t> {
    // SAFETY: a plain query.
    let ppid = unsafe { libc::getppid() };
    let comm = std::fs::read_to_string(format!("/proc/{ppid}/comm")).ok()?;
    (comm.trim_end() == "slurmstepd").then_some(ppid)
}

/// [`counts`] for a delivered signal, against the recorded parent.
fn counts_delivered(sig: i32, info: &libc::siginfo_t) -> bool {
    let pid = PARENT[0].load(Ordering::SeqCst);
    let parent = (pid != 0).then(|| (pid, PARENT[1].load(Ordering::SeqCst)));
    // SAFETY: si_pid is set for the SI_USER signals it is compared for;
    // for other codes its value is unused (`counts` checks the code).
    let sender = unsafe { info.si_pid() };
    counts(sig, info.si_code, sender, parent)
}

/// What to print when a second signal ends the process at once: prepared
/// in advance, because a signal handler may only write(2) bytes. One
/// atomic pointer, so the handler never sees half of an update.
static LAST_WORDS: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());

/// Sets the message a second Ctrl-C prints before the process ends (what
/// the run may leave on disk). Leaked on purpose: the handler may read it
/// at any moment until the process ends.
pub fn set_last_words(message: String) {
    let words: &'static mut Vec<u8> = Box::leak(Box::new(message.into_bytes()));
    LAST_WORDS.store(words, Ordering::SeqCst);
}

/// What follows the last words whatever tool set them: a command that
/// runs tools in turn (the demo) says where all they made is.
static CLOSING_WORDS: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());

/// Sets the words printed after the last words (see [`CLOSING_WORDS`]);
/// leaked as [`set_last_words`]'s are.
pub fn set_closing_words(message: String) {
    let words: &'static mut Vec<u8> = Box::leak(Box::new(message.into_bytes()));
    CLOSING_WORDS.store(words, Ordering::SeqCst);
}

/// Writes the last words and the closing words, if any;
/// async-signal-safe (atomic loads and write(2)).
fn say_last_words() {
    for words in [&LAST_WORDS, &CLOSING_WORDS] {
        let ptr = words.load(Ordering::SeqCst);
        // SAFETY: a non-null pointer comes from `set_last_words` or
        // `set_closing_words`, which leak the vector, so it stays valid
        // and unchanged for the whole process.
        if let Some(words) = unsafe { ptr.as_ref() } {
            // SAFETY: writing `len` initialised bytes to stderr.
            unsafe { libc::write(2, words.as_ptr().cast(), words.len()) };
        }
    }
}

/// Installs the handlers, which cancel `root`, then (for a rank Open MPI started) the relay
/// that brings the terminal's Ctrl-C to it at once ([`relay`]). Failure to
/// install is not fatal: the run simply cannot be interrupted cleanly,
/// which we say on stderr.
pub fn install(root: &'static iolab_core::CancelToken) {
    if let Some((pid, sig)) = iolab_launch::parent_death() {
        PARENT[1].store(sig, Ordering::SeqCst);
        PARENT[0].store(pid, Ordering::SeqCst);
    }
    if let Some(pid) = stepd_parent() {
        STEPD.store(pid, Ordering::SeqCst);
    }
    for (kind, sig) in [SIGINT, SIGTERM, SIGHUP].into_iter().enumerate() {
        // nohup's promise: a hangup ignored at start stays ignored.
        if sig == SIGHUP && ignored(sig) {
            continue;
        }
        // SAFETY: the handler only loads and stores atomics (cancelling a
        // token is atomic stores), reads the siginfo it is given, calls
        // unlink(2), write(2) and _exit, all async-signal-safe.
        let r = unsafe {
            signal_hook_registry::register_sigaction(sig, move |info| {
                let again =
                    counts_delivered(sig, info) && SIGNALLED[kind].swap(true, Ordering::SeqCst);
                if again && !from_stepd_delivered(sig, info) {
                    // Outputs complete or absent: no half-written temporary.
                    iolab_output::remove_pending();
                    say_last_words();
                    signal_hook::low_level::exit(crate::exit::INTERRUPTED as i32);
                }
                root.cancel();
            })
        };
        if r.is_err() {
            iolab_core::say!(
                "iolab: warning: cannot install the signal handler; Ctrl-C will not clean up"
            );
        }
    }
    relay::start();
}

/// Whether `sig` is ignored (SIG_IGN), as a parent such as nohup left it.
pub(crate) fn ignored(sig: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; sigaction
    // with a null new action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Names a tool's last words list, at most this many.
pub const LISTED: usize = 20;

/// Last words that list what a run may leave: `lead`, then the first
/// [`LISTED`] of `names`, a line each, then `(more)` when there are
/// more; nothing when `names` is empty. One layout for every tool.
pub fn listed(prog: &str, lead: &str, names: &[String], more: &str) -> String {
    if names.is_empty() {
        return String::new();
    }
    let mut s = format!("\n{prog}: {lead}\n");
    for n in names.iter().take(LISTED) {
        s.push_str(&format!("{prog}:   {n}\n"));
    }
    if names.len() > LISTED {
        s.push_str(&format!("{prog}:   ({more})\n"));
    }
    s
}

/// Waits while `running` (set false, with Release, when the run
/// returned); once `cancel` fires, runs `say` once: a run's word on
/// where what it made is, printed as the stop begins, for the process
/// may be killed before its cleanup ends (a rank under mpirun). A stop
/// whose cleanup ended between two looks is said all the same, as the
/// run returns: a small run's removal takes less than a look's 50 ms,
/// and the word was then missing. Nothing when the reader of standard
/// output left (`| head -1`): it wants no message, as after SIGPIPE,
/// and the run still cleans up.
pub fn when_stopped(cancel: &iolab_core::CancelToken, running: &AtomicBool, say: impl FnOnce()) {
    loop {
        // Read before the token: a run that returned because of a stop
        // had its token set by then.
        let ended = !running.load(Ordering::Acquire);
        if cancel.is_cancelled() {
            if !crate::output::stdout_closed() {
                say();
            }
            return;
        }
        if ended {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Open MPI's mpirun ends the ranks `odls_base_sigkill_timeout` seconds
/// (1 by default) after they get Ctrl-C (at once from the terminal,
/// through the relay of `signals`; as mpirun's SIGTERM when mpirun alone
/// was signalled): too soon for the removal of a large run. Says so, and
/// how to give more.
pub fn mpirun_grace_hint(prog: &str) -> Option<String> {
    std::env::var_os("OMPI_COMM_WORLD_SIZE")?;
    let secs: u64 = std::env::var("OMPI_MCA_odls_base_sigkill_timeout")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1);
    (secs < 30).then(|| {
        format!(
            "{prog}: mpirun ends the ranks {secs} s after they get the signal (Open MPI's odls_base_sigkill_timeout), which may cut the removal short; give them time with: mpirun --mca odls_base_sigkill_timeout 30 ...\n"
        )
    })
}

/// How long `MPI_Finalize` may take at the end of a run that did not
/// succeed.
const FINALIZE_WAIT: Duration = Duration::from_secs(5);

/// Call just before finalising MPI (dropping the world): for a run under
/// MPI that did not succeed (`code` is not 0: interrupted here or on
/// another rank, or failed), ends the process with `code` should the
/// finalisation not have returned within [`FINALIZE_WAIT`]. After Ctrl-C,
/// Open MPI's daemons (mpirun, orted) sleep through their kill sequence
/// (`odls_base_sigkill_timeout`, twice) without serving the finalisation of
/// ranks on more than one host, which after their cleanup would otherwise
/// wait for the SIGKILL at its end and never exit with their status.
/// Output is flushed at every print ([`crate::output`]), so none is lost.
pub fn bound_mpi_finalize(code: u8) {
    if code == 0 || !iolab_comm::launched_under_mpi() {
        return;
    }
    std::thread::spawn(move || {
        std::thread::sleep(FINALIZE_WAIT);
        // SAFETY: _exit ends the process at once, running no handler that
        // could wait on the MPI state the main thread is blocked in.
        unsafe { libc::_exit(code.into()) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repeats of a parent's death signal only cancel; a user's
    /// second SIGTERM (another sender), a second Ctrl-C (the kernel's)
    /// and any signal of a process without such a parent still count.
    #[test]
    fn a_parents_death_signal_never_counts_as_a_second_signal() {
        let parent = Some((4242, SIGTERM));
        assert!(!counts(SIGTERM, libc::SI_USER, 4242, parent));
        assert!(counts(SIGTERM, libc::SI_USER, 777, parent), "a user's kill");
        assert!(counts(SIGINT, libc::SI_USER, 4242, parent), "another kind");
        assert!(counts(SIGINT, libc::SI_KERNEL, 0, parent), "the terminal's");
        assert!(counts(SIGTERM, libc::SI_QUEUE, 4242, parent), "sigqueue");
        assert!(counts(SIGTERM, libc::SI_USER, 4242, None));
    }

    /// Slurm's SIGTERM from the task's slurmstepd never ends the
    /// process at once, however often it comes; another sender's
    /// SIGTERM, a SIGINT, or any signal where no slurmstepd started the
    /// process still may.
    #[test]
    fn a_slurmstepds_repeated_sigterm_only_cancels() {
        assert!(from_stepd(SIGTERM, libc::SI_USER, 900, 900));
        assert!(
            !from_stepd(SIGTERM, libc::SI_USER, 901, 900),
            "a user's kill"
        );
        assert!(!from_stepd(SIGINT, libc::SI_USER, 900, 900), "another kind");
        assert!(!from_stepd(SIGTERM, libc::SI_QUEUE, 900, 900), "sigqueue");
        assert!(!from_stepd(SIGTERM, libc::SI_USER, 0, 0), "no slurmstepd");
    }

    /// A stop is said when it came before the run returned, even when
    /// the run had returned (its cleanup done) by the first look, as a
    /// small s3bench run's did in a full test run; a run that ends
    /// unstopped says nothing.
    #[test]
    fn a_stop_is_said_even_when_the_run_ended_before_the_first_look() {
        let said = |stopped: bool, running: bool| {
            let cancel = iolab_core::CancelToken::new();
            if stopped {
                cancel.cancel();
            }
            let mut n = 0;
            when_stopped(&cancel, &AtomicBool::new(running), || n += 1);
            n
        };
        assert_eq!(said(true, false), 1, "stopped, run already over");
        assert_eq!(said(true, true), 1, "stopped while running");
        assert_eq!(said(false, false), 0, "ended unstopped");
    }
}
