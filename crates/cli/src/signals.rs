//! Ctrl-C and SIGTERM: the first one asks every engine to stop and clean
//! up (iolab_core::stop); a second one ends the process at once.

mod relay;

use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// A first signal has come. Kept apart from the stop request itself,
/// which other things raise too (a closed standard input that carried a
/// key, a failed engine): only a second *signal* ends the process at once.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

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

/// Installs the handlers, then (for a rank Open MPI started) the relay
/// that brings the terminal's Ctrl-C to it at once ([`relay`]). Failure to
/// install is not fatal: the run simply cannot be interrupted cleanly,
/// which we say on stderr.
pub fn install() {
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: the handler only loads and stores atomics, calls write(2)
        // and _exit, all async-signal-safe.
        let r = unsafe {
            signal_hook::low_level::register(sig, || {
                if SIGNALLED.swap(true, Ordering::SeqCst) {
                    say_last_words();
                    signal_hook::low_level::exit(crate::exit::INTERRUPTED as i32);
                }
                iolab_core::stop::request();
            })
        };
        if r.is_err() {
            eprintln!(
                "iolab: warning: cannot install the signal handler; Ctrl-C will not clean up"
            );
        }
    }
    relay::start();
}
