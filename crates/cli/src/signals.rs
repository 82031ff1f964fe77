//! Ctrl-C and SIGTERM: the first one cancels the run's root token (the
//! runner's, which raises iolab_core::stop with it, the flag the engines
//! still read), so every engine stops and cleans up; a second of the same kind (Ctrl-C twice,
//! SIGTERM twice) ends the process at once. Kinds are counted apart
//! because under mpirun a rank gets the terminal's Ctrl-C at once (see
//! [`relay`]) and mpirun's own SIGTERM later: that SIGTERM must not cut
//! short the cleanup the Ctrl-C started (mpirun's SIGKILL ends it).

mod relay;

use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::Duration;

/// A first SIGINT, a first SIGTERM has come. Kept apart from the stop
/// request itself, which other things raise too (a closed standard input
/// that carried a key, a failed engine): only a second *signal* of one
/// kind ends the process at once.
static SIGNALLED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

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

/// Writes the last words, if any; async-signal-safe (an atomic load and
/// one write(2)).
fn say_last_words() {
    let ptr = LAST_WORDS.load(Ordering::SeqCst);
    // SAFETY: a non-null pointer comes from `set_last_words`, which leaks
    // the vector, so it stays valid and unchanged for the whole process.
    if let Some(words) = unsafe { ptr.as_ref() } {
        // SAFETY: writing `len` initialised bytes to stderr.
        unsafe { libc::write(2, words.as_ptr().cast(), words.len()) };
    }
}

/// Installs the handlers, which cancel `root`, then (for a rank Open MPI started) the relay
/// that brings the terminal's Ctrl-C to it at once ([`relay`]). Failure to
/// install is not fatal: the run simply cannot be interrupted cleanly,
/// which we say on stderr.
pub fn install(root: &'static iolab_core::CancelToken) {
    for (kind, sig) in [SIGINT, SIGTERM].into_iter().enumerate() {
        // SAFETY: the handler only loads and stores atomics (cancelling a
        // token is atomic stores), calls write(2) and _exit, all
        // async-signal-safe.
        let r = unsafe {
            signal_hook::low_level::register(sig, move || {
                if SIGNALLED[kind].swap(true, Ordering::SeqCst) {
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
