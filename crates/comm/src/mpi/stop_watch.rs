//! A stop on one rank reaches every rank during a phase, not only at the
//! next collective.
//!
//! Ctrl-C reaches the ranks on `mpirun`'s host at once, but a rank on
//! another host (under an `orted` started through the remote shell)
//! hears of it from its daemon only several `odls_base_sigkill_timeout`s
//! later, long after the ranks on `mpirun`'s host were killed. So each
//! rank runs a watcher thread that, every [`TICK`], takes the MPI lock
//! for a moment and
//! - when this process's stop flag ([`iolab_core::stop`]) is up and no
//!   peer has said so already, sends an empty message to every other
//!   rank, once;
//! - when such a message has come, raises the stop flag, as a Ctrl-C
//!   here would have.
//!
//! The engines' loops only read the flag; they never touch MPI. The
//! messages travel on a duplicate of the world communicator, so they can
//! never match the traffic of a collective. Everything after is as for a
//! local Ctrl-C: the tasks stop at their next item, the ranks agree at
//! the end of the phase and clean up.
//!
//! The watcher also keeps the ranks' ring of beats ([`super::peers`]):
//! every [`BEAT_TICKS`] it sends an empty beat to the next rank, and as
//! it ends (just before `MPI_Finalize`) a word that it left; what it
//! hears from the rank before it is recorded for the waits of
//! collectives.

use super::lock::serialized;
use mpi::ffi;
use std::os::raw::{c_int, c_void};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the watcher looks: after this (and the message's transit)
/// at most, a rank hears of a stop elsewhere. Each look is one
/// `MPI_Iprobe` and an atomic load.
const TICK: Duration = Duration::from_millis(20);

/// How long, at the end of the run, the watcher waits for its stop
/// messages to leave (a zero-byte message leaves at once unless its rank
/// is gone).
const FLUSH: Duration = Duration::from_millis(500);

/// The stop messages' tag.
const STOP_TAG: c_int = 1;

/// The tag of a beat: the sender is alive (sent to the next rank only).
const BEAT_TAG: c_int = 2;

/// The tag of the word that the sender is finalising MPI (likewise).
const LEFT_TAG: c_int = 3;

/// Ticks between two beats: about a second.
const BEAT_TICKS: u64 = 50;

/// What a stop message points at: it carries no byte, but MPI wants a
/// valid address.
static NOTHING: u8 = 0;

/// The running watcher; dropping it stops the thread, which frees its
/// communicator. Drop it before MPI is finalised.
pub(super) struct StopWatch {
    quit: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// The stop communicator's handle, moved to the watcher thread.
struct StopComm(ffi::MPI_Comm);

// SAFETY: an MPI communicator handle is a plain value that any thread may
// use under MPI_THREAD_SERIALIZED; the watcher uses it only while it
// holds the process-wide MPI lock.
unsafe impl Send for StopComm {}

impl StopWatch {
    /// Duplicates `world` for the stop messages and starts the watcher.
    /// Collective (`MPI_Comm_dup`): every rank calls it at the same
    /// point. Call with the MPI lock held. `None` if MPI or the system
    /// refused: the run then goes on as before, stopping remote ranks
    /// only at the next collective.
    pub(super) fn start(world: ffi::MPI_Comm) -> Option<StopWatch> {
        let comm = duplicate(world)?;
        let (quit, quit_rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("iolab-mpi-stop".into())
            .spawn(move || watch(comm, quit_rx));
        match spawned {
            Ok(thread) => Some(StopWatch {
                quit: Some(quit),
                thread: Some(thread),
            }),
            // The communicator went with the closure, unused; MPI frees
            // what is left of it at finalisation.
            Err(_) => None,
        }
    }
}

impl Drop for StopWatch {
    fn drop(&mut self) {
        // Closing the channel wakes the watcher at once.
        drop(self.quit.take());
        if let Some(thread) = self.thread.take() {
            // A watcher that panicked has nothing left to do; the run's
            // outcome is already decided.
            let _ = thread.join();
        }
    }
}

/// `MPI_Comm_dup` of `world`, set to return errors rather than abort the
/// job: a stop message to a rank that has already ended must not kill
/// the others.
fn duplicate(world: ffi::MPI_Comm) -> Option<StopComm> {
    let mut comm = world;
    // SAFETY: `world` is a valid communicator and `comm` a place for the
    // new handle; the caller holds the MPI lock.
    if unsafe { ffi::MPI_Comm_dup(world, &mut comm) } != ffi::MPI_SUCCESS as c_int {
        return None;
    }
    // SAFETY: `comm` is the communicator just made; RSMPI_ERRORS_RETURN
    // is a predefined handler, read-only after MPI_Init.
    unsafe { ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN) };
    Some(StopComm(comm))
}

/// The watcher thread: looks every [`TICK`] until told to quit.
fn watch(comm: StopComm, quit: mpsc::Receiver<()>) {
    let mut w = Watcher::new(comm);
    loop {
        w.tick();
        match quit.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    w.finish();
}

/// The watcher's state: its communicator, its messages still on their
/// way, whether this rank's stop is known to every rank, and the ring.
struct Watcher {
    comm: ffi::MPI_Comm,
    rank: c_int,
    size: c_int,
    sends: Vec<ffi::MPI_Request>,
    told: bool,
    /// Ticks so far: the clock of the beats.
    ticks: u64,
    /// The tick at which the predecessor was last heard, once it was.
    heard: Option<u64>,
    /// Ticks of silence after which the predecessor is taken for gone.
    silence: u64,
}

impl Watcher {
    fn new(comm: StopComm) -> Self {
        let StopComm(comm) = comm;
        let (mut rank, mut size) = (0, 1);
        let _mpi = serialized();
        // SAFETY: a valid communicator and places for the answers.
        unsafe {
            ffi::MPI_Comm_rank(comm, &mut rank);
            ffi::MPI_Comm_size(comm, &mut size);
        }
        super::peers::set_ranks(rank as usize, ((rank + size - 1) % size.max(1)) as usize);
        let silence = super::peers::timeout().as_millis() / TICK.as_millis();
        Watcher {
            comm,
            rank,
            size,
            sends: Vec::new(),
            told: false,
            ticks: 0,
            heard: None,
            silence: silence as u64,
        }
    }

    /// The next rank of the ring, and the one before.
    fn ring(&self) -> (c_int, c_int) {
        (
            (self.rank + 1) % self.size,
            (self.rank + self.size - 1) % self.size,
        )
    }

    /// Sends an empty message under `tag` to `peer`, without waiting.
    /// Call with the MPI lock held.
    fn send_empty(&mut self, peer: c_int, tag: c_int) {
        // SAFETY: RSMPI_REQUEST_NULL is a predefined handle.
        let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: zero bytes from a static address, to a rank of
        // `comm`; the caller holds the MPI lock.
        let rc = unsafe {
            ffi::MPI_Isend(
                (&NOTHING as *const u8).cast::<c_void>(),
                0,
                ffi::RSMPI_UINT8_T,
                peer,
                tag,
                self.comm,
                &mut req,
            )
        };
        // A send MPI refused (its rank gone) has nothing to wait for.
        if rc == ffi::MPI_SUCCESS as c_int {
            self.sends.push(req);
        }
    }

    /// The ring's part of a tick, lock held: beats out, what the
    /// predecessor said in, and its silence measured.
    fn beat(&mut self) {
        if self.size < 2 {
            return;
        }
        self.ticks += 1;
        let (next, before) = self.ring();
        // The first at once, so that a peer is heard from its start.
        if self.ticks % BEAT_TICKS == 1 {
            self.send_empty(next, BEAT_TAG);
        }
        if self.take_empty(before, BEAT_TAG) > 0 {
            self.heard = Some(self.ticks);
        }
        if self.take_empty(before, LEFT_TAG) > 0 {
            super::peers::left();
        }
        let quiet = self.heard.map_or(0, |t| self.ticks - t);
        let secs = match quiet > self.silence {
            true => (quiet * TICK.as_millis() as u64 / 1000).max(1),
            false => 0,
        };
        super::peers::silent_for(secs);
    }

    /// Receives the empty messages under `tag` from `peer` that have
    /// come (a few at most: one a second); how many. Lock held.
    fn take_empty(&mut self, peer: c_int, tag: c_int) -> usize {
        let mut n = 0;
        while n < 64 {
            let mut flag: c_int = 0;
            // SAFETY: all-zero is a valid MPI_Status (plain integers).
            let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: a valid communicator, rank, tag and out-places;
            // the caller holds the MPI lock.
            let rc = unsafe { ffi::MPI_Iprobe(peer, tag, self.comm, &mut flag, &mut status) };
            if rc != ffi::MPI_SUCCESS as c_int || flag == 0 {
                break;
            }
            let mut byte = 0u8;
            // SAFETY: receives the probed empty message (only this
            // thread receives on `comm`) into a one-byte buffer.
            unsafe {
                ffi::MPI_Recv(
                    (&mut byte as *mut u8).cast::<c_void>(),
                    1,
                    ffi::RSMPI_UINT8_T,
                    peer,
                    tag,
                    self.comm,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            n += 1;
        }
        n
    }

    /// One look, under the MPI lock. The watch reads and raises the
    /// process-wide stop flag itself, not a run's token: it is made with
    /// the world, before any run, and it carries a stop between
    /// processes, whose root tokens are tied to that flag both ways.
    fn tick(&mut self) {
        let _mpi = serialized();
        if self.receive_stops() {
            // Whoever sent it sent it to every rank.
            self.told = true;
            iolab_core::stop::request();
        }
        if !self.told && iolab_core::stop::requested() {
            self.told = true;
            self.announce();
        }
        self.beat();
        self.sends.retain_mut(|r| !completed(r));
    }

    /// Receives every stop message that has come; true if there was one.
    /// Bounded by the number of ranks: each sends at most one.
    fn receive_stops(&mut self) -> bool {
        let mut got = false;
        for _ in 0..self.size {
            let mut flag: c_int = 0;
            // SAFETY: all-zero is a valid MPI_Status (plain integers).
            let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: a valid communicator, tag and out-places; the
            // caller holds the MPI lock.
            let rc = unsafe {
                ffi::MPI_Iprobe(
                    ffi::RSMPI_ANY_SOURCE,
                    STOP_TAG,
                    self.comm,
                    &mut flag,
                    &mut status,
                )
            };
            if rc != ffi::MPI_SUCCESS as c_int || flag == 0 {
                break;
            }
            let mut byte = 0u8;
            // SAFETY: receives the probed zero-byte message (from the
            // probed source: only this thread receives on `comm`) into a
            // one-byte buffer.
            unsafe {
                ffi::MPI_Recv(
                    (&mut byte as *mut u8).cast::<c_void>(),
                    1,
                    ffi::RSMPI_UINT8_T,
                    status.MPI_SOURCE,
                    STOP_TAG,
                    self.comm,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            got = true;
        }
        got
    }

    /// Sends the stop to every other rank, without waiting for any.
    fn announce(&mut self) {
        let me = self.rank;
        for peer in (0..self.size).filter(|&p| p != me) {
            self.send_empty(peer, STOP_TAG);
        }
    }

    /// At the end of the run: tells the next rank that this one leaves
    /// (it finalises MPI next), lets the messages leave (for at most
    /// [`FLUSH`]), takes in any that came, and frees the communicator.
    fn finish(mut self) {
        if self.size > 1 {
            let _mpi = serialized();
            let (next, _) = self.ring();
            self.send_empty(next, LEFT_TAG);
        }
        let until = Instant::now() + FLUSH;
        loop {
            {
                let _mpi = serialized();
                self.receive_stops();
                self.sends.retain_mut(|r| !completed(r));
            }
            if self.sends.is_empty() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Sends still pending (their rank ended) are left to
        // MPI_Finalize: Open MPI cannot cancel a send, and waiting for
        // one could last for ever. Freeing the communicator is deferred
        // by MPI until they are done.
        let _mpi = serialized();
        // SAFETY: the communicator this watcher made, freed once, here.
        unsafe { ffi::MPI_Comm_free(&mut self.comm) };
    }
}

/// True once the send `req` is done (or failed: nothing more to wait
/// for). Call with the MPI lock held.
fn completed(req: &mut ffi::MPI_Request) -> bool {
    let mut flag: c_int = 0;
    // SAFETY: `req` is a request from MPI_Isend not yet completed; MPI
    // sets it to MPI_REQUEST_NULL when it completes.
    let rc = unsafe { ffi::MPI_Test(req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
    rc != ffi::MPI_SUCCESS as c_int || flag != 0
}
