//! Ctrl-C and SIGTERM: the first one asks every engine to stop and clean
//! up (iolab_core::stop); a second one ends the process at once.

use signal_hook::consts::{SIGINT, SIGTERM};

/// Installs the handlers. Failure to install is not fatal: the run simply
/// cannot be interrupted cleanly, which we say on stderr.
pub fn install() {
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: the handler only loads and stores an atomic and calls
        // _exit, all async-signal-safe.
        let r = unsafe {
            signal_hook::low_level::register(sig, || {
                if iolab_core::stop::requested() {
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
}
