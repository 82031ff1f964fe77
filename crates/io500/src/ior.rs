//! The data phases (ior-easy, ior-hard, ior-rnd4K-easy-read) as the io500
//! app runs them: IOR tests with the app's options, run by iolab's IOR
//! engine (`iolab-ior`), the project's one IOR. A write is stonewalled
//! with IO500's wear-out (`-D S -O stoneWallingWearOut=1`: each task
//! stops at the wall, then every task writes on to the count the
//! furthest one reached); a read reads that many transfers
//! (`-O stoneWallingWearOutIterations`, which the app passes through its
//! status file). Two of the app's options are left out, as iolab io500
//! always left them out: `-g`'s barriers between open, transfers and
//! close (on a loaded machine each costs a wake-up of every task inside
//! the timed span) and `-R`'s check of every byte read (one more pass
//! over the data: a third more CPU per byte read from a page cache).
//! [`IorSpec::command`] is the `iolab ior` command line that runs the
//! same test.

use crate::config::{Config, HARD_TRANSFER};
use crate::phase::{Layout, Phase};
use iolab_backend::Backend;
use iolab_comm::Comm;
use iolab_core::Failure;
use iolab_ior::params::Params;
use iolab_ior::results::AccessResult;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which IOR pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// ior-easy: `block_bytes` per task in `transfer_bytes` transfers.
    Easy {
        /// Bytes per transfer.
        transfer_bytes: u64,
        /// Bytes per task.
        block_bytes: u64,
        /// A file per task (else one shared file, a block per task).
        file_per_proc: bool,
        /// A directory per task for its file.
        unique_dir: bool,
    },
    /// ior-hard: one shared file; segment s of task t at
    /// `(s * tasks + t) * 47008`.
    Hard {
        /// Segments per task.
        segments: u64,
    },
}

/// One data phase to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorSpec {
    /// The phase's directory (`<datadir>/ior-easy`).
    pub dir: PathBuf,
    /// The access pattern.
    pub pattern: Pattern,
    /// Stonewall of the write phase, seconds (0: none).
    pub stonewall_s: u64,
    /// Seed of the written data (IOR's -G).
    pub seed: u64,
    /// The API (`posix`, `s3`).
    pub api: String,
}

/// What a data phase did, over all tasks (every task gets the same).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IorResult {
    /// Bytes moved by all tasks, as the backend returned them.
    pub bytes: u64,
    /// Transfers each task made (after the wear-out, the same for all).
    pub transfers_per_task: u64,
    /// Bytes per transfer.
    pub transfer_bytes: u64,
    /// Latest close end minus earliest open start, seconds (IOR's time).
    pub elapsed_s: f64,
    /// The size of the phase's files (those written, or those read) as
    /// the backend's stat reports them once every task closed its file.
    pub file_bytes: u64,
    /// Whether the stonewall ended the phase early: it fired in a task
    /// and the tasks made fewer transfers than the phase asks for. A
    /// read of the write's count has no stonewall.
    pub stonewall_hit: bool,
    /// Fewest transfers a task had made when it stopped at the wall (a
    /// write's or a random read's; every transfer when the wall did not
    /// stop it). None for a read of the write's count, which has no wall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_at_wall: Option<u64>,
    /// Transfers a read's check found wrong.
    #[serde(default)]
    pub errors: u64,
    /// Where the first wrong byte is (`offset X of FILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// The error of a task that failed, if any.
    pub failure: Option<Failure>,
    /// A stop was requested (Ctrl-C) during the phase.
    pub interrupted: bool,
}

/// ior-rnd4K-easy-read's transfer size.
pub const RND_TRANSFER: u64 = 4096;
/// Most random reads a task makes (the app's `-s 10000000`).
pub const RND_MAX_TRANSFERS: u64 = 10_000_000;

/// The phase's access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The stonewalled write.
    Write,
    /// The read of `n` transfers per task, checked.
    Read(u64),
    /// ior-rnd4K-easy-read: random 4 KiB reads of ior-easy's files,
    /// stonewalled with the wear-out.
    Random,
}

impl IorSpec {
    /// The file's name (before IOR's `-F` suffix).
    fn file(&self) -> PathBuf {
        match self.pattern {
            Pattern::Easy { .. } => self.dir.join("ior_file_easy"),
            Pattern::Hard { .. } => self.dir.join("file"),
        }
    }

    /// IOR's parameters of the access, as the io500 app passes them.
    pub fn params(&self, access: Access) -> Params {
        let mut p = Params {
            api: self.api.to_ascii_uppercase(),
            test_file: self.file().into_os_string(),
            signature: self.seed as u32,
            keep: true,
            fsync: true,
            reorder: 1,
            task_per_node_offset: 1,
            ..Params::default()
        };
        match self.pattern {
            Pattern::Easy {
                transfer_bytes,
                block_bytes,
                file_per_proc,
                unique_dir,
            } => {
                p.transfer_bytes = transfer_bytes;
                p.block_bytes = block_bytes;
                p.file_per_proc = file_per_proc;
                p.unique_dir = unique_dir;
            }
            Pattern::Hard { segments } => {
                p.transfer_bytes = HARD_TRANSFER;
                p.block_bytes = HARD_TRANSFER;
                p.segments = segments;
            }
        }
        match access {
            Access::Write => {
                p.write = true;
                p.deadline_s = self.stonewall_s;
                p.wearout = self.stonewall_s > 0;
            }
            Access::Read(n) => {
                p.read = true;
                p.wearout_iterations = n;
            }
            Access::Random => {
                p.read = true;
                p.deadline_s = self.stonewall_s;
                p.wearout = self.stonewall_s > 0;
                p.random_offset = 2;
                p.transfer_bytes = RND_TRANSFER;
                p.block_bytes = RND_TRANSFER;
                p.segments = RND_MAX_TRANSFERS;
                p.reorder = u32::from(p.file_per_proc);
                p.task_per_node_offset = 2;
            }
        }
        p
    }

    /// The `iolab ior` command line of the access (runnable as printed,
    /// with `--tasks` per process).
    pub fn command(&self, access: Access, tasks_per_process: u64) -> String {
        let p = self.params(access);
        let mut a = vec![
            format!("iolab ior -a {}", p.api),
            format!("-G {}", p.signature),
            "-k -e".into(),
            format!("-o {}", shell_word(&p.test_file.to_string_lossy())),
        ];
        if p.reorder > 0 {
            a.push(format!("-C -Q {}", p.task_per_node_offset));
        }
        a.push(format!("-t {} -b {}", p.transfer_bytes, p.block_bytes));
        if p.segments != 1 {
            a.push(format!("-s {}", p.segments));
        }
        for (on, flag) in [(p.file_per_proc, "-F"), (p.unique_dir, "-u")] {
            if on {
                a.push(flag.into());
            }
        }
        match access {
            Access::Write => a.push(format!(
                "-w -D {} -O stoneWallingWearOut={}",
                p.deadline_s,
                u8::from(p.wearout)
            )),
            Access::Read(n) => a.push(format!("-r -O stoneWallingWearOutIterations={n}")),
            Access::Random => a.push(format!(
                "-r -D {} -z -z -O stoneWallingWearOut={}",
                p.deadline_s,
                u8::from(p.wearout)
            )),
        }
        if p.deadline_s == 0 {
            // Without a wall there is no wear-out to ask for.
            a = a
                .into_iter()
                .map(|w| w.replace(" -D 0 -O stoneWallingWearOut=0", ""))
                .collect();
        }
        a.push(format!("--tasks {tasks_per_process}"));
        a.join(" ")
    }
}

/// The spec of an ior phase of `cfg` (ior-easy's for its write, read
/// and random read, ior-hard's for the others), with the app's seeds.
pub fn spec(cfg: &Config, l: &Layout, p: Phase) -> IorSpec {
    let e = &cfg.ior_easy;
    let (dir, pattern, seed) = match p {
        Phase::IorEasyWrite | Phase::IorEasyRead | Phase::IorRnd4kEasyRead => (
            "ior-easy",
            Pattern::Easy {
                transfer_bytes: e.transfer_bytes,
                block_bytes: e.block_bytes,
                file_per_proc: e.file_per_proc,
                unique_dir: e.unique_dir,
            },
            271,
        ),
        _ => (
            "ior-hard",
            Pattern::Hard {
                segments: cfg.ior_hard_segments,
            },
            27,
        ),
    };
    IorSpec {
        dir: l.path(dir),
        pattern,
        stonewall_s: cfg.stonewall_s,
        seed,
        api: cfg.api(p).to_string(),
    }
}

/// The access an ior phase makes: its read knows the write's count
/// only once the write ran (`N` before).
pub fn access_of(p: Phase, transfers: Option<u64>) -> Access {
    match (p, transfers) {
        (Phase::IorEasyWrite | Phase::IorHardWrite, _) => Access::Write,
        (Phase::IorRnd4kEasyRead, _) => Access::Random,
        (_, n) => Access::Read(n.unwrap_or(0)),
    }
}

/// Runs one access on this task (every task of `comm` calls it); every
/// task returns the same result. Its transfers are recorded on `live`
/// (`--live`) under the phase's IO500 name.
pub fn run(
    comm: &dyn Comm,
    be: &dyn Backend,
    spec: &IorSpec,
    access: Access,
    cancel: &iolab_core::CancelToken,
    live: iolab_ior::ctx::Live<'_>,
) -> IorResult {
    let failed = |f: Failure| IorResult {
        failure: Some(f),
        ..IorResult::default()
    };
    let params = spec.params(access);
    let test = match iolab_ior::config::validate(params.clone()) {
        Ok(t) => t,
        Err(e) => return failed(Failure::other("ior", e.0)),
    };
    let r = match iolab_ior::run::test(comm, be, &test, cancel, live) {
        Ok(r) => r,
        Err(e) => return failed(Failure::other("ior", e.to_string())),
    };
    let it = r.iterations.first();
    let a: Option<&AccessResult> = match access {
        Access::Write => it.and_then(|i| i.write.as_ref()),
        _ => it.and_then(|i| i.read.as_ref()),
    };
    let a = a.cloned().unwrap_or_default();
    let (failure, interrupted) = match r.outcome {
        // Differences a check found make the run invalid, as in the app
        // ("Errors occurred during phase in IOR"), not a failure.
        iolab_core::Outcome::Error(f) if f.op == "check" => (None, false),
        iolab_core::Outcome::Error(f) => (Some(f), false),
        iolab_core::Outcome::Interrupted => (None, true),
        _ => (None, false),
    };
    IorResult {
        bytes: a.bytes,
        transfers_per_task: a.pairs_accessed,
        transfer_bytes: a.transfer_bytes,
        elapsed_s: a.total_s,
        file_bytes: a.file_bytes,
        stonewall_hit: stopped_early(&params, &a),
        min_at_wall: match access {
            Access::Read(_) => None,
            _ => Some(a.stonewall.map_or(a.pairs_accessed, |w| w.min_transfers)),
        },
        errors: a.errors,
        first_error: a
            .first_error
            .as_ref()
            .map(|e| format!("offset {} of {}", e.offset, e.path)),
        failure,
        interrupted,
    }
}

/// Whether the access's stonewall (`-D`) stopped it before the
/// transfers it asks for. IOR's own flag is also set by a read that
/// stops at the write's count (`stoneWallingWearOutIterations`), which
/// is no stonewall, and by a wall that passes as the last transfer ends.
fn stopped_early(p: &Params, a: &AccessResult) -> bool {
    let asked = p.block_bytes / p.transfer_bytes.max(1) * p.segments;
    p.deadline_s > 0 && a.deadline_hit && a.pairs_accessed < asked
}

/// `w` as a shell word (quoted when it holds a space or a shell
/// character), so that a printed command line runs as printed.
pub fn shell_word(w: &str) -> String {
    shlex::try_quote(w).map_or_else(|_| w.to_string(), |q| q.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> iolab_core::tmp::PrivateDir {
        iolab_core::tmp::PrivateDir::new(&format!("iolab-io500-ior-{name}")).unwrap()
    }

    fn spec(dir: &std::path::Path, pattern: Pattern, stonewall_s: u64) -> IorSpec {
        IorSpec {
            dir: dir.to_path_buf(),
            pattern,
            stonewall_s,
            seed: 27,
            api: "posix".into(),
        }
    }

    #[test]
    fn ior_hard_interleaves_47008_byte_transfers_and_reads_them_back() {
        let dir = scratch("hard");
        let be = iolab_backend::by_name("posix").unwrap();
        let s = spec(dir.path(), Pattern::Hard { segments: 4 }, 0);
        let w = iolab_comm::run_local(3, |c| {
            run(
                c,
                &*be,
                &s,
                Access::Write,
                &iolab_core::CancelToken::new(),
                Default::default(),
            )
        });
        assert!(
            w.iter()
                .all(|r| r.bytes == 3 * 4 * HARD_TRANSFER && r.failure.is_none()),
            "{w:?}"
        );
        assert_eq!(w[0].file_bytes, w[0].bytes);
        assert_eq!(
            std::fs::metadata(dir.path().join("file")).unwrap().len(),
            w[0].bytes
        );
        let r = iolab_comm::run_local(3, |c| {
            run(
                c,
                &*be,
                &s,
                Access::Read(4),
                &iolab_core::CancelToken::new(),
                Default::default(),
            )
        });
        assert!(
            r.iter()
                .all(|r| r.bytes == w[0].bytes && r.failure.is_none() && r.errors == 0),
            "{r:?}"
        );
        // The read's figures: the file it read, and no stonewall.
        assert!(
            r.iter()
                .all(|r| r.file_bytes == w[0].file_bytes && !r.stonewall_hit),
            "{r:?}"
        );
        // What the phase runs, checked (-R) by iolab ior itself, finds a
        // byte changed on storage.
        let f = dir.path().join("file");
        let mut data = std::fs::read(&f).unwrap();
        data[100_000] ^= 1;
        std::fs::write(&f, &data).unwrap();
        let mut p = s.params(Access::Read(4));
        p.check_read = true;
        let t = iolab_ior::config::validate(p).unwrap();
        let out = iolab_comm::run_local(3, |c| {
            iolab_ior::run::test(
                c,
                &*be,
                &t,
                &iolab_core::CancelToken::new(),
                Default::default(),
            )
            .unwrap()
        });
        let e = out[0].iterations[0].read.as_ref().unwrap();
        assert_eq!(
            (e.errors, e.first_error.as_ref().map(|x| x.offset)),
            (1, Some(100_000))
        );
        assert!(s
            .command(Access::Read(4), 3)
            .contains(" -r -O stoneWallingWearOutIterations=4 "));
    }

    #[test]
    fn the_stonewall_levels_the_counts_and_random_reads_stay_in_the_files() {
        let null = iolab_backend::by_name("null").unwrap();
        let easy = Pattern::Easy {
            transfer_bytes: 4096,
            block_bytes: 4096 << 30,
            file_per_proc: true,
            unique_dir: false,
        };
        let dir = scratch("easy");
        let s = spec(dir.path(), easy, 1);
        let w = iolab_comm::run_local(2, |c| {
            run(
                c,
                &*null,
                &s,
                Access::Write,
                &iolab_core::CancelToken::new(),
                Default::default(),
            )
        });
        assert!(w[0].stonewall_hit && Some(w[0].transfers_per_task) >= w[0].min_at_wall);
        assert!(w[0].transfers_per_task < 1 << 30, "stopped at the wall");
        assert_eq!(w[0].bytes, 2 * w[0].transfers_per_task * 4096);
        let be = iolab_backend::by_name("posix").unwrap();
        let small = Pattern::Easy {
            transfer_bytes: 16384,
            block_bytes: 65536,
            file_per_proc: true,
            unique_dir: true,
        };
        let s = spec(dir.path(), small, 1);
        let w = iolab_comm::run_local(2, |c| {
            run(
                c,
                &*be,
                &s,
                Access::Write,
                &iolab_core::CancelToken::new(),
                Default::default(),
            )
        });
        assert_eq!((w[0].transfers_per_task, w[0].file_bytes), (4, 131072));
        assert!(dir.path().join("1/ior_file_easy.00000001").exists());
        let r = iolab_comm::run_local(2, |c| {
            run(
                c,
                &*be,
                &s,
                Access::Random,
                &iolab_core::CancelToken::new(),
                Default::default(),
            )
        });
        assert!(r[0].failure.is_none(), "{:?}", r[0].failure);
        assert_eq!(r[0].bytes, 2 * r[0].transfers_per_task * RND_TRANSFER);
        assert!(s
            .command(Access::Random, 2)
            .starts_with("iolab ior -a POSIX -G 27 -k -e -o "));
    }
}
