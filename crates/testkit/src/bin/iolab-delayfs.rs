//! `iolab-delayfs BACKING MOUNTPOINT DELAY_US`: mounts the delayed FUSE
//! passthrough of `iolab_testkit::delayfs` for the bench scripts, prints
//! `mounted` when it is ready and unmounts on SIGTERM, SIGINT, SIGHUP or
//! when its parent dies. Dev-only: not shipped with iolab.

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, backing, mountpoint, delay] = &args[..] else {
        eprintln!("usage: iolab-delayfs BACKING MOUNTPOINT DELAY_US");
        std::process::exit(2);
    };
    let Ok(us) = delay.parse::<u64>() else {
        eprintln!("iolab-delayfs: DELAY_US {delay}: not a number of microseconds");
        std::process::exit(2);
    };
    let signals = block_signals();
    // SAFETY: asks for SIGTERM when the parent (the bench script) dies.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    let fs = match iolab_testkit::delayfs::DelayFs::mount(
        backing.as_ref(),
        mountpoint.as_ref(),
        Duration::from_micros(us),
    ) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("iolab-delayfs: cannot mount {mountpoint}: {e}");
            std::process::exit(1);
        }
    };
    println!("mounted");
    let mut sig = 0;
    // SAFETY: `signals` is an initialised set; sigwait writes one int.
    unsafe { libc::sigwait(&signals, &mut sig) };
    eprintln!(
        "iolab-delayfs: {} requests served, at most {} at once",
        fs.requests(),
        fs.peak_in_flight()
    );
    drop(fs);
}

/// Blocks the stop signals in this thread (and so in the FUSE threads it
/// starts), to take them with sigwait.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it, and
    // pthread_sigmask reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}
