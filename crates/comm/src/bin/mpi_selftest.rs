//! Checks iolab's MPI transport under a real launcher:
//!
//! ```text
//! mpirun -n 3 mpi_selftest [threads-per-rank]
//! mpirun -n 2 mpi_selftest 2 panic
//! mpirun -n 3 mpi_selftest 1 stop
//! mpirun -n 2 mpi_selftest 1 leave
//! mpirun -n 2 -x IOLAB_MPI_PEER_TIMEOUT=3 mpi_selftest 1 silent
//! ```
//!
//! With `panic`, the last task panics while the others go on to
//! collectives it never joins: the job must end (MPI_Abort), not hang.
//! With `stop`, rank 0 raises its stop flag (as Ctrl-C does) and waits in
//! a collective; every other rank must see its own flag go up without
//! calling MPI itself (the stop watcher of `iolab_comm::mpi`).
//! With `leave`, every rank but 0 finalises MPI at once while rank 0
//! waits in a collective; with `silent`, they stop themselves (SIGSTOP):
//! rank 0 must find its peer gone and end the job, not wait for ever.
//!
//! Runs ranks x threads tasks through `run_team`, `run_subset` and
//! `Transport::split`, and exits 0 if every check passed on every rank, 1
//! otherwise (each rank prints its failures), 2 if MPI would not start.
//! A built binary, not an example, so that the integration test gets its
//! path from Cargo (`CARGO_BIN_EXE_mpi_selftest`).

// A test program run by tests/mpi.rs: a failed check panics, and the
// panic is what the test sees.
#![allow(clippy::unwrap_used)]

use iolab_comm::{
    connect, launched_under_mpi, run_subset, run_team, Comm, CommExt, CommMode, Transport,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Failures seen by one task or rank, as messages.
type Failures = Vec<String>;

fn check(failures: &mut Failures, ok: bool, what: impl FnOnce() -> String) {
    if !ok {
        failures.push(what());
    }
}

fn main() {
    let threads = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 2,
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("usage: mpi_selftest [threads-per-rank >= 1]");
            std::process::exit(2);
        }
    };
    // The way the iolab binary starts MPI.
    let connection = connect(CommMode::Mpi).unwrap_or_else(|e| {
        eprintln!("mpi_selftest: {e}");
        std::process::exit(2)
    });
    let code = match std::env::args().nth(2).as_deref() {
        Some("leave") => leave_early(connection),
        Some("silent") => fall_silent(connection),
        Some("panic") => panic_on_one_task(connection.transport(), threads),
        Some("stop") => check_stop(&*connection.transport()),
        _ => run_checks(connection.transport(), threads),
    };
    // exit() skips destructors, and dropping the connection finalises MPI.
    drop(connection);
    std::process::exit(code);
}

/// Ranks other than 0 finalise MPI without joining the collective rank
/// 0 waits in. Rank 0 returning from it is a failure.
fn leave_early(connection: iolab_comm::World) -> ! {
    let world = connection.transport();
    if world.rank() != 0 {
        drop(world);
        drop(connection);
        std::process::exit(0);
    }
    let _ = world.all_gather(b"alone");
    eprintln!("mpi_selftest: a collective completed without the ranks that left");
    std::process::exit(3);
}

/// Ranks other than 0 stop (SIGSTOP: alive, but silent) while rank 0
/// waits in a collective. Rank 0 returning from it is a failure.
fn fall_silent(connection: iolab_comm::World) -> ! {
    let world = connection.transport();
    if world.rank() != 0 {
        // Heard first: only a peer heard from can fall silent.
        std::thread::sleep(Duration::from_secs(2));
        let me = std::process::id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-STOP", &me])
            .status();
        std::process::exit(0);
    }
    let _ = world.all_gather(b"alone");
    eprintln!("mpi_selftest: a collective completed without the ranks that stopped");
    std::process::exit(3);
}

/// The last task panics; the others wait in collectives that can only end
/// by the job being aborted. Returning from here is a failure.
fn panic_on_one_task(world: Arc<dyn Transport>, threads: usize) -> ! {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_team(world, threads, |c| {
            c.barrier();
            if c.task() + 1 == c.tasks() {
                panic!("mpi_selftest: injected panic in task {}", c.task());
            }
            for _ in 0..1000 {
                c.barrier();
                c.sum_u64(1);
            }
        })
    }));
    eprintln!("mpi_selftest: the job was not aborted after a task panicked");
    std::process::exit(3);
}

/// Rank 0 raises its stop flag and waits in a collective at once; every
/// other rank waits (at most [`STOP_WAIT`], calling no MPI) for its own
/// flag to go up, then joins the collective. Exit code 0 if every rank
/// saw the stop.
fn check_stop(world: &dyn Transport) -> i32 {
    const STOP_WAIT: Duration = Duration::from_secs(10);
    if world.rank() == 0 {
        iolab_core::stop::request();
    }
    let start = Instant::now();
    while !iolab_core::stop::requested() && start.elapsed() < STOP_WAIT {
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = iolab_core::stop::requested();
    if !seen {
        eprintln!(
            "mpi_selftest: rank {}: FAIL: no stop within {STOP_WAIT:?}",
            world.rank()
        );
    }
    let all = world.all_gather(&[seen as u8]);
    if all.iter().any(|b| b != &[1]) {
        return 1;
    }
    if world.rank() == 0 {
        println!("mpi_selftest: the stop reached {} ranks", world.size());
    }
    0
}

/// Runs every check and agrees on the outcome; returns the exit code.
fn run_checks(world: Arc<dyn Transport>, threads: usize) -> i32 {
    let mut failures = Failures::new();
    check(&mut failures, world.kind() == "mpi", || {
        format!("transport is {}, not mpi", world.kind())
    });
    // A singleton (no mpirun) is a valid MPI run but not a launch.
    check(
        &mut failures,
        launched_under_mpi() || world.size() == 1,
        || "launched_under_mpi() missed this launcher's environment".to_string(),
    );
    failures.extend(check_team(world.clone(), threads));
    // The leader need not be the main thread (MPI_THREAD_SERIALIZED).
    failures.extend(std::thread::scope(|s| {
        s.spawn(|| check_barrier(world.clone(), threads))
            .join()
            .unwrap()
    }));
    failures.extend(check_split(&*world));
    failures.extend(check_subsets(world.clone(), threads));
    failures.extend(check_uneven_subsets(world.clone()));
    for f in &failures {
        eprintln!("mpi_selftest: rank {}: FAIL: {f}", world.rank());
    }
    let bad = world.all_gather(&[!failures.is_empty() as u8]);
    if bad.iter().any(|b| b == &[1]) {
        return 1;
    }
    if world.rank() == 0 {
        println!(
            "mpi_selftest: {} ranks x {threads} threads: ok",
            world.size()
        );
    }
    0
}

/// Task ids, task count and every collective over ranks x threads.
fn check_team(world: Arc<dyn Transport>, threads: usize) -> Failures {
    let (rank, tasks) = (world.rank(), world.size() * threads);
    let out = run_team(world, threads, |c| (c.task(), collectives(c, tasks)));
    let mut failures = Failures::new();
    for (local, (task, task_failures)) in out.into_iter().enumerate() {
        let want = rank * threads + local;
        check(&mut failures, task == want, || {
            format!("thread {local} has task id {task}, want {want}")
        });
        failures.extend(task_failures);
    }
    failures
}

/// One task's checks of all_gather, the reductions and broadcast, in a
/// team of `tasks` tasks.
fn collectives(c: &dyn Comm, tasks: usize) -> Failures {
    let (me, mut f) = (c.task(), Failures::new());
    check(&mut f, c.tasks() == tasks, || {
        format!("tasks() = {}, want {tasks}", c.tasks())
    });
    check(&mut f, (1..=tasks).contains(&c.nodes()), || {
        format!("nodes() = {}", c.nodes())
    });
    f.extend(check_gathers(c));
    let n = c.tasks() as u64;
    let sum = c.sum_u64(me as u64 + 1);
    check(&mut f, sum == n * (n + 1) / 2, || format!("sum = {sum}"));
    let max = c.max_u64(me as u64);
    check(&mut f, max == n - 1, || format!("max = {max}"));
    let min = c.min_u64(me as u64 + 5);
    check(&mut f, min == 5, || format!("min = {min}"));
    let root = c.tasks() - 1;
    let got = c.broadcast(root, format!("root {me}").as_bytes());
    check(&mut f, got == format!("root {root}").as_bytes(), || {
        format!("broadcast gave {:?}", String::from_utf8_lossy(&got))
    });
    let any = (c.any(me == root), c.any(false));
    check(&mut f, any == (true, false), || format!("any = {any:?}"));
    f
}

/// Variable-length contributions (some empty), several rounds, in order.
fn check_gathers(c: &dyn Comm) -> Failures {
    let payload =
        |task: usize, round: usize| vec![(task + round) as u8; (task * 7 + round * 3) % 13];
    let mut f = Failures::new();
    for round in 0..5 {
        let all = c.all_gather(&payload(c.task(), round));
        let ok =
            all.len() == c.tasks() && all.iter().enumerate().all(|(t, b)| b == &payload(t, round));
        check(&mut f, ok, || {
            format!("all_gather round {round} out of order or wrong: {all:?}")
        });
    }
    f
}

/// A barrier holds every task until the last one arrives, across ranks.
fn check_barrier(world: Arc<dyn Transport>, threads: usize) -> Failures {
    const SLEEP: Duration = Duration::from_millis(300);
    let out = run_team(world, threads, |c| {
        c.barrier();
        let start = Instant::now();
        if c.task() == c.tasks() - 1 {
            std::thread::sleep(SLEEP);
        }
        c.barrier();
        (c.task(), start.elapsed())
    });
    let mut f = Failures::new();
    for (task, waited) in out {
        // Half the sleep: tasks leave the first barrier with some skew.
        check(&mut f, waited >= SLEEP / 2, || {
            format!("task {task} left the barrier after {waited:?}, before the last task arrived")
        });
    }
    f
}

/// `Transport::split` by parity, and with odd ranks left out.
fn check_split(world: &dyn Transport) -> Failures {
    let (rank, size) = (world.rank(), world.size());
    let mut f = Failures::new();
    let sub = world
        .split(Some((rank % 2) as u32))
        .expect("split with a color");
    let peers: Vec<usize> = (rank % 2..size).step_by(2).collect();
    check(
        &mut f,
        sub.size() == peers.len() && sub.rank() == rank / 2,
        || format!("parity split: rank {} of {}", sub.rank(), sub.size()),
    );
    let got: Vec<u8> = sub.all_gather(&[rank as u8]).concat();
    let want: Vec<u8> = peers.iter().map(|&r| r as u8).collect();
    check(&mut f, got == want, || {
        format!("parity split gathered {got:?}, want {want:?}")
    });
    let evens = world.split((rank % 2 == 0).then_some(7));
    check(&mut f, evens.is_some() == (rank % 2 == 0), || {
        "split(None) must leave the rank out".to_string()
    });
    f
}

/// `run_subset` on every prefix of tasks, and one past the end.
fn check_subsets(world: Arc<dyn Transport>, threads: usize) -> Failures {
    let (rank, tasks) = (world.rank(), world.size() * threads);
    let mut f = Failures::new();
    for active in 1..=tasks + 1 {
        let out = run_subset(world.clone(), threads, active, |c| {
            (c.task(), collectives(c, active.min(tasks)))
        });
        let want: Vec<usize> = (rank * threads..(rank + 1) * threads)
            .filter(|&t| t < active)
            .collect();
        let got: Vec<usize> = out.iter().map(|o| o.0).collect();
        check(&mut f, got == want, || {
            format!("first {active} tasks: ran {got:?} here, want {want:?}")
        });
        f.extend(out.into_iter().flat_map(|o| o.1));
    }
    f
}

/// Ranks offering different thread counts (1, 2, 1, 2, ...) still number
/// their tasks contiguously.
fn check_uneven_subsets(world: Arc<dyn Transport>) -> Failures {
    let threads_of = |r: usize| r % 2 + 1;
    let (rank, size) = (world.rank(), world.size());
    let first: usize = (0..rank).map(threads_of).sum();
    let tasks: usize = (0..size).map(threads_of).sum();
    let mut f = Failures::new();
    for active in 1..=tasks {
        let out = run_subset(world.clone(), threads_of(rank), active, |c| {
            (c.task(), c.tasks(), c.gather_u64(c.task() as u64))
        });
        let want: Vec<usize> = (first..first + threads_of(rank))
            .filter(|&t| t < active)
            .collect();
        let ids: Vec<usize> = out.iter().map(|o| o.0).collect();
        let all: Vec<u64> = (0..active as u64).collect();
        let ok = ids == want && out.iter().all(|o| o.1 == active && o.2 == all);
        check(&mut f, ok, || {
            format!("uneven, first {active} tasks: ran {ids:?}, want {want:?}")
        });
    }
    f
}
