//! A test's parameters checked as IOR checks them (`ValidateTests`), and
//! the APIs iolab runs: each [`Test`] is a [`Params`] that passed, with
//! its API resolved. Everything here is decided before anything is
//! created.

use crate::params::{Globals, Params};
use serde::Serialize;

/// A test that cannot run, and why (bad usage: exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn bad<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// The I/O interfaces iolab ior runs (`-a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// POSIX calls through the POSIX backend.
    Posix,
    /// The file mapped into memory, transfers copied in and out (the
    /// POSIX backend's descriptor, mmap(2), msync(2) for fsync).
    Mmap,
    /// IOR's DUMMY: iolab's null backend, which keeps nothing.
    Dummy,
    /// An object store through the S3 backend.
    S3,
}

/// IOR's other APIs, refused by name.
const NOT_OFFERED: &[&str] = &[
    "MPIIO", "HDF5", "NCMPI", "DFS", "DAOS", "HDFS", "IME", "RADOS", "CEPHFS", "GFARM", "PMDK",
    "AIO", "CHFS", "FINCHFS", "LIBNFS", "S3-LIBS3", "S3-4C", "S3_EMC", "MMAP-IO",
];

impl Api {
    /// `-a`'s value, case-insensitive.
    pub fn parse(name: &str) -> Result<Api, ConfigError> {
        let up = name.to_ascii_uppercase();
        match up.as_str() {
            "POSIX" => Ok(Api::Posix),
            "MMAP" => Ok(Api::Mmap),
            "DUMMY" => Ok(Api::Dummy),
            "S3" => Ok(Api::S3),
            _ if NOT_OFFERED.contains(&up.as_str()) => bad(format!(
                "-a {name}: IOR's {up} API is not offered by iolab ior; its APIs are POSIX, MMAP, DUMMY and S3"
            )),
            _ => bad(format!(
                "-a {name}: unknown API; iolab ior runs POSIX, MMAP, DUMMY and S3"
            )),
        }
    }

    /// The backend it runs on.
    pub fn backend(self) -> &'static str {
        match self {
            Api::Posix | Api::Mmap => "posix",
            Api::Dummy => "null",
            Api::S3 => "s3",
        }
    }

    /// The name IOR prints (`POSIX`).
    pub fn name(self) -> &'static str {
        match self {
            Api::Posix => "POSIX",
            Api::Mmap => "MMAP",
            Api::Dummy => "DUMMY",
            Api::S3 => "S3",
        }
    }
}

/// One validated test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Test {
    /// Its parameters, with IOR's implied ones filled in (`-w -r` when
    /// neither was asked for).
    pub params: Params,
    /// The API.
    pub api: Api,
}

/// What a whole invocation runs: its tests and its globals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The tests, in order.
    pub tests: Vec<Test>,
    /// Outputs, tasks per process.
    pub globals: Globals,
}

/// IOR's access size: blocks and transfers are whole 8-byte words.
pub const WORD: u64 = 8;

/// Checks one test's parameters, IOR's rules first, then iolab's.
pub fn validate(mut p: Params) -> Result<Test, ConfigError> {
    let api = Api::parse(&p.api)?;
    if !(p.write || p.read || p.check_write || p.check_read) {
        p.write = true;
        p.read = true;
    }
    check_stonewall(&p)?;
    check_sizes(&p)?;
    check_order(&p)?;
    if p.check_read && !p.write && p.signature == 0 {
        return bad("-R: reading back data this test does not write needs its signature: give the writer's -G");
    }
    if p.test_file.is_empty() {
        return bad("-o: the test file name is empty");
    }
    if p.unique_dir && !p.file_per_proc {
        // IOR ignores -u without -F too; kept as it is.
    }
    Ok(Test { params: p, api })
}

fn check_stonewall(p: &Params) -> Result<(), ConfigError> {
    if p.status_file.is_some() && !p.keep {
        return bad("-O stoneWallingStatusFile: only sensible when the write and the read are separate runs; give -k");
    }
    if p.status_file.is_some() && !p.wearout && p.write {
        return bad("-O stoneWallingStatusFile: a write test records its count only with -O stoneWallingWearOut=1");
    }
    if p.deadline_s == 0 && p.wearout {
        return bad("-O stoneWallingWearOut: only sensible with a stonewall deadline (-D)");
    }
    Ok(())
}

fn check_sizes(p: &Params) -> Result<(), ConfigError> {
    if p.transfer_bytes == 0 {
        return bad("-t 0: the test would never complete; give a transfer size");
    }
    if !p.transfer_bytes.is_multiple_of(WORD) {
        return bad(format!(
            "-t {}: the transfer size must be a multiple of {WORD} bytes, as in IOR",
            p.transfer_bytes
        ));
    }
    if !p.block_bytes.is_multiple_of(WORD) {
        return bad(format!(
            "-b {}: the block size must be a multiple of {WORD} bytes, as in IOR",
            p.block_bytes
        ));
    }
    if p.block_bytes < p.transfer_bytes {
        return bad(format!(
            "-b {}: the block size must not be smaller than the transfer size ({})",
            p.block_bytes, p.transfer_bytes
        ));
    }
    if !p.block_bytes.is_multiple_of(p.transfer_bytes) {
        return bad(format!(
            "-b {}: the block size must be a multiple of the transfer size ({})",
            p.block_bytes, p.transfer_bytes
        ));
    }
    if p.transfer_bytes > usize::MAX as u64 / 4 {
        return bad(format!(
            "-t {}: too large for this machine",
            p.transfer_bytes
        ));
    }
    check_prefill(p)
}

fn check_prefill(p: &Params) -> Result<(), ConfigError> {
    let pre = p.random_prefill_bytes;
    if pre == 0 {
        return Ok(());
    }
    if p.random_offset == 0 {
        return bad("--randomPrefill: only with random offsets (-z)");
    }
    if !p.block_bytes.is_multiple_of(pre) || !pre.is_multiple_of(WORD) {
        return bad(format!(
            "--randomPrefill={pre}: must divide the block size ({}) in whole words",
            p.block_bytes
        ));
    }
    Ok(())
}

fn check_order(p: &Params) -> Result<(), ConfigError> {
    if p.random_offset == 1 && p.block_bytes == p.transfer_bytes {
        return bad("-z: offsets are shuffled within a block, and a block of one transfer has one order; give a block larger than the transfer size");
    }
    if p.random_offset > 1 && (p.write || p.check_write) {
        return bad("-z -z: random blocks of the file as it is on storage; only for read tests (-r without -w or -W)");
    }
    if p.reorder > 0 && p.reorder_random > 0 {
        return bad("-C and -Z: constant and random task reordering; choose one");
    }
    if p.random_offset > 0 && !p.file_per_proc && (p.reorder > 0 || p.reorder_random > 0) {
        return bad("-z with -C or -Z on a shared file: random offsets and task reordering; choose one (or use -F)");
    }
    if p.random_offset == 1 && p.check_read && p.random_seed == -1 {
        return bad(
            "-z -R: the read must find the offsets the write used; give --random-offset-seed",
        );
    }
    Ok(())
}

impl Config {
    /// The tests of a command line (and of its script, when `-f` gave
    /// one), validated.
    pub fn new(tests: Vec<Params>, globals: Globals) -> Result<Config, ConfigError> {
        let tests = tests
            .into_iter()
            .map(|p| {
                let id = p.id;
                validate(p).map_err(|e| match id {
                    0 => e,
                    _ => ConfigError(format!("test {id}: {}", e.0)),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Config { tests, globals })
    }

    /// Checks what depends on the task count: sizes that must fit in 64
    /// bits, and buffers and `-M`'s memory that must fit in memory.
    pub fn check_tasks(&self, tasks: u64, per_process: u64) -> Result<(), ConfigError> {
        let limit = iolab_core::env::memory_limit();
        for t in &self.tests {
            let p = &t.params;
            crate::hog::check(p, per_process, limit).map_err(|e| match p.id {
                0 => ConfigError(e.to_string()),
                id => ConfigError(format!("test {id}: {e}")),
            })?;
            let n = p.num_tasks.unwrap_or(tasks).min(tasks);
            let agg = p
                .block_bytes
                .checked_mul(p.segments)
                .and_then(|v| v.checked_mul(n));
            if agg.is_none() {
                return bad(format!(
                    "-b {} -s {}: the {n} tasks' files would exceed 2^64 bytes",
                    p.block_bytes, p.segments
                ));
            }
            let memory = iolab_core::env::host_info().memory_bytes;
            let need = crate::data::buffer_bytes(p).saturating_mul(per_process);
            if memory > 0 && need > memory / 2 {
                return bad(format!(
                    "-t {}: {per_process} tasks' buffers need {need} bytes, more than half of this machine's {memory} bytes of memory",
                    p.transfer_bytes
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse_os;

    fn check(line: &str) -> Result<Test, ConfigError> {
        let raw = parse_os(&iolab_opts::words(line)).unwrap();
        validate(raw.params)
    }

    #[test]
    fn ior_s_rules() {
        for (line, needle) in [
            ("-b 100k -t 64k", "multiple of the transfer size"),
            ("-b 12", "multiple of 8"),
            ("-t 12 -b 24", "multiple of 8"),
            ("-t 0", "never complete"),
            ("-b 64k -t 128k", "smaller"),
            ("-O stoneWallingWearOut=1", "-D"),
            ("-O stoneWallingStatusFile=x", "-k"),
            ("-k -O stoneWallingStatusFile=x", "stoneWallingWearOut"),
            ("-C -Z", "choose one"),
            ("-z -C", "choose one"),
            ("-r -R", "-G"),
            ("-z -w -r -R -G 1", "--random-offset-seed"),
            ("-z -z", "read tests"),
            ("-z -b 64k -t 64k", "larger"),
            ("--randomPrefill=64k", "-z"),
            ("-z --randomPrefill=48k", "divide"),
            ("-a MPIIO", "MPIIO"),
            ("-a hdf5", "HDF5"),
            ("-a bogus", "unknown API"),
        ] {
            let e = check(line).unwrap_err().0;
            assert!(e.contains(needle), "{line}: {e}");
        }
    }

    #[test]
    fn implied_and_accepted() {
        let t = check("").unwrap();
        assert!(t.params.write && t.params.read && t.api == Api::Posix);
        let t = check("-r").unwrap();
        assert!(t.params.read && !t.params.write);
        for line in [
            "-k -D 1 -O stoneWallingWearOut=1 -O stoneWallingStatusFile=x",
            "-z -F -C",
            "-r -z -z",
            "-a dummy -u",
            "-z -R -w --random-offset-seed=3",
            "-z --randomPrefill=64k",
        ] {
            assert!(check(line).is_ok(), "{line}");
        }
        assert_eq!(check("-a mmap").unwrap().api.backend(), "posix");
    }
}
