//! A backend for unit tests: POSIX underneath, with capabilities taken
//! away and a panic on the n-th file creation, to show that the engine
//! plans around what a backend lacks and survives a task that dies.

use iolab_backend::{Backend, Capabilities, Handle, OpenOptions, Posix, Stat};
use std::ffi::CStr;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct Faulty {
    pub(crate) caps: Capabilities,
    /// Panic on this many-th create (0: never).
    pub(crate) panic_at: u64,
    creates: AtomicU64,
}

impl Faulty {
    pub(crate) fn new(caps: Capabilities, panic_at: u64) -> Self {
        Faulty {
            caps,
            panic_at,
            creates: AtomicU64::new(0),
        }
    }
}

impl Backend for Faulty {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn capabilities(&self) -> Capabilities {
        self.caps
    }
    fn mkdir(&self, path: &CStr, mode: u32) -> io::Result<()> {
        Posix.mkdir(path, mode)
    }
    fn rmdir(&self, path: &CStr) -> io::Result<()> {
        Posix.rmdir(path)
    }
    fn open(&self, path: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        if opts.create && self.creates.fetch_add(1, Ordering::SeqCst) + 1 == self.panic_at {
            panic!("injected fault at {}", path.to_string_lossy());
        }
        Posix.open(path, opts)
    }
    fn close(&self, h: Handle) -> io::Result<()> {
        Posix.close(h)
    }
    fn write_at(&self, h: &Handle, buf: &[u8], offset: u64) -> io::Result<usize> {
        Posix.write_at(h, buf, offset)
    }
    fn read_at(&self, h: &Handle, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        Posix.read_at(h, buf, offset)
    }
    fn fsync(&self, h: &Handle) -> io::Result<()> {
        Posix.fsync(h)
    }
    fn fdatasync(&self, h: &Handle) -> io::Result<()> {
        Posix.fdatasync(h)
    }
    fn stat(&self, path: &CStr) -> io::Result<Stat> {
        Posix.stat(path)
    }
    fn fstat(&self, h: &Handle) -> io::Result<Stat> {
        Posix.fstat(h)
    }
    fn unlink(&self, path: &CStr) -> io::Result<()> {
        Posix.unlink(path)
    }
    fn rename(&self, from: &CStr, to: &CStr) -> io::Result<()> {
        Posix.rename(from, to)
    }
    fn mknod(&self, path: &CStr) -> io::Result<()> {
        Posix.mknod(path)
    }
    fn list(&self, path: &CStr) -> io::Result<Vec<iolab_backend::DirEntry>> {
        Posix.list(path)
    }
    fn preallocate(&self, h: &Handle, offset: u64, len: u64) -> io::Result<()> {
        Posix.preallocate(h, offset, len)
    }
    fn sync_all(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{args, preflight, Config, Engine, Plan, Progress, Quiet};
    use iolab_core::Outcome;

    fn config(line: &str) -> (Config, Plan) {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        let cfg = Config::from_raw(&args::parse(&words).unwrap()).unwrap();
        let plan = Plan::new(&cfg).unwrap();
        (cfg, plan)
    }

    fn full() -> Capabilities {
        Posix.capabilities()
    }

    #[test]
    fn missing_capabilities_are_refused_when_the_run_is_planned() {
        let (cfg, plan) = config("-n 4 -U -D -d /nonexistent-iolab");
        let be = Faulty::new(
            Capabilities {
                rename: false,
                ..full()
            },
            0,
        );
        let e = preflight(&cfg, &plan, &be, &iolab_core::CancelToken::new())
            .unwrap_err()
            .0;
        assert!(e.contains("-U") && e.contains("rename"), "{e}");
        let (cfg, plan) = config("-n 4 -k -F -d /nonexistent-iolab");
        let be = Faulty::new(
            Capabilities {
                mknod: false,
                ..full()
            },
            0,
        );
        assert!(preflight(&cfg, &plan, &be, &iolab_core::CancelToken::new())
            .unwrap_err()
            .0
            .contains("-k"));
        let be = Faulty::new(
            Capabilities {
                directories: false,
                ..full()
            },
            0,
        );
        assert!(preflight(&cfg, &plan, &be, &iolab_core::CancelToken::new()).is_err());
    }

    /// Cancels the run's token once the create phase is done: a Ctrl-C
    /// that lands after the last operation, as the phase ends.
    struct StopAfterCreate(iolab_core::CancelToken);

    impl crate::engine::Observer for StopAfterCreate {
        fn phase_done(&self, _iteration: u64, r: &crate::results::PhaseResult) {
            if r.phase == crate::results::Phase::FileCreate {
                self.0.cancel();
            }
        }
    }

    /// A stop that comes after the last operation (`-C`: once the
    /// create phase ended) interrupts the run as one a phase saw does:
    /// every task ends interrupted and what the run made is removed. It
    /// ended completed, its files left, though "stopping" was said.
    #[test]
    fn a_stop_after_the_last_operation_interrupts_and_removes_what_was_made() {
        let dir = std::env::temp_dir().join(format!("iolab-late-stop-{}", std::process::id()));
        let (cfg, plan) = config(&format!("-C -F -n 20 -d {}", dir.display()));
        let cancel = iolab_core::CancelToken::new();
        let stop = StopAfterCreate(cancel.clone());
        let progress = Progress::new(2);
        let engine = Engine::new(&cfg, plan, &Posix, &stop, &progress, None).with_cancel(&cancel);
        let out = iolab_comm::run_local(2, |c| engine.run(c));
        let removed = !dir.exists();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(removed, "what the run made is removed");
        for r in &out {
            match r {
                Err(u) => assert_eq!(u.outcome, Outcome::Interrupted),
                Ok(_) => panic!("a task ended completed after the stop"),
            }
        }
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn a_task_that_panics_ends_the_run_with_an_error_and_nothing_left() {
        let dir = std::env::temp_dir().join(format!("iolab-panic-{}", std::process::id()));
        let (cfg, plan) = config(&format!("-F -n 200 -d {}", dir.display()));
        let be = Faulty::new(full(), 150);
        let progress = Progress::new(3);
        let engine = Engine::new(&cfg, plan, &be, &Quiet, &progress, None);
        let out = iolab_comm::run_local(3, |c| engine.run(c));
        let errors: Vec<_> = out
            .iter()
            .filter_map(|r| match r {
                Err(u) => Some(&u.outcome),
                Ok(_) => None,
            })
            .collect();
        assert_eq!(errors.len(), 3, "every task stops");
        assert!(errors.iter().any(|o| matches!(o, Outcome::Error(f)
            if f.op == "task" && f.message.contains("injected fault"))));
        assert!(!dir.exists(), "the tree is removed");
    }
}
