//! The validated configuration of a run: what the command line said,
//! checked (every number against what it can be), before anything is
//! sent. Credentials are not here: they stay with the endpoints.

use crate::error::ConfigError;
use crate::sizes::Sizes;
pub use crate::sizes::MAX_OBJECT;
use serde::{Deserialize, Serialize};

/// The benchmarks, by warp's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bench {
    /// GET of objects uploaded first (or listed with `--list-existing`).
    Get,
    /// PUT of new objects.
    Put,
    /// HEAD of objects uploaded first.
    Stat,
    /// DELETE of objects uploaded first, until none is left.
    Delete,
    /// LIST (one page a request) of the objects uploaded first.
    List,
    /// GET, HEAD, PUT, DELETE and LIST by ratio over a pool of objects.
    Mixed,
    /// Whole objects uploaded in parts: create, parts, complete.
    Multipart,
}

impl Bench {
    /// Every benchmark, by name.
    pub const ALL: [Bench; 7] = [
        Bench::Get,
        Bench::Put,
        Bench::Stat,
        Bench::Delete,
        Bench::List,
        Bench::Mixed,
        Bench::Multipart,
    ];

    /// Its name, as typed.
    pub fn name(self) -> &'static str {
        match self {
            Bench::Get => "get",
            Bench::Put => "put",
            Bench::Stat => "stat",
            Bench::Delete => "delete",
            Bench::List => "list",
            Bench::Mixed => "mixed",
            Bench::Multipart => "multipart",
        }
    }

    /// Whether objects are uploaded (or listed) before the timed phase.
    pub fn prepares(self) -> bool {
        !matches!(self, Bench::Put | Bench::Multipart)
    }
}

/// The operation types a run records, one histogram set each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Op {
    /// GET of an object.
    Get,
    /// PUT of an object.
    Put,
    /// HEAD of an object.
    Stat,
    /// DELETE of an object.
    Delete,
    /// One page of a listing.
    List,
    /// A whole multipart upload (create, parts, complete).
    Multipart,
    /// CreateMultipartUpload.
    MpCreate,
    /// UploadPart.
    MpPart,
    /// CompleteMultipartUpload.
    MpComplete,
}

/// How many [`Op`]s there are (the recorder's arrays).
pub const OPS: usize = 9;

impl Op {
    /// Every op, in report order.
    pub const ALL: [Op; OPS] = [
        Op::Get,
        Op::Stat,
        Op::Put,
        Op::Delete,
        Op::List,
        Op::Multipart,
        Op::MpCreate,
        Op::MpPart,
        Op::MpComplete,
    ];

    /// Its index in the recorder's arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The phase name of its figures (`get`, `multipart.part`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Put => "put",
            Op::Stat => "stat",
            Op::Delete => "delete",
            Op::List => "list",
            Op::Multipart => "multipart",
            Op::MpCreate => "multipart.create",
            Op::MpPart => "multipart.part",
            Op::MpComplete => "multipart.complete",
        }
    }

    /// The op of index `i`.
    pub fn of_index(i: usize) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.index() == i)
    }
}

/// `--get-distrib` and the others: relative weights of mixed's ops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distrib {
    /// GET.
    pub get: f64,
    /// HEAD.
    pub stat: f64,
    /// PUT.
    pub put: f64,
    /// DELETE.
    pub delete: f64,
    /// LIST.
    pub list: f64,
}

impl Default for Distrib {
    /// warp's defaults (45, 30, 15, 10), and no LIST.
    fn default() -> Self {
        Distrib {
            get: 45.0,
            stat: 30.0,
            put: 15.0,
            delete: 10.0,
            list: 0.0,
        }
    }
}

impl Distrib {
    /// The weights with their ops, in report order.
    pub fn weights(&self) -> [(Op, f64); 5] {
        [
            (Op::Get, self.get),
            (Op::Stat, self.stat),
            (Op::Put, self.put),
            (Op::Delete, self.delete),
            (Op::List, self.list),
        ]
    }
}

/// `--autoterm`: stop once the rate has been steady.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoTerm {
    /// `--autoterm.dur`: the least time the rate must have been steady.
    pub min_stable_s: f64,
    /// `--autoterm.pct`: how far (percent of their mean) the last
    /// samples may be from one another.
    pub pct: f64,
}

/// A checked run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The benchmark.
    pub bench: Bench,
    /// The endpoints' URLs (`http://host:port`), one or more.
    pub hosts: Vec<String>,
    /// The bucket (it must exist).
    pub bucket: String,
    /// `--prefix`: what every key of the run starts with (empty, or
    /// ending in `/`).
    pub prefix: String,
    /// Object sizes.
    pub sizes: Sizes,
    /// Objects uploaded before the timed phase (over all workers); with
    /// `--list-existing`, the most objects listed (0: all).
    pub objects: u64,
    /// Workers over the whole run (all ranks).
    pub concurrent: usize,
    /// Longest time of the timed phase.
    pub duration_s: f64,
    /// Stop early once the rate is steady.
    pub autoterm: Option<AutoTerm>,
    /// Leave the run's objects in the bucket.
    pub noclear: bool,
    /// Read objects already in the bucket (under `--prefix`) instead of
    /// uploading them.
    pub list_existing: bool,
    /// Requests per second over the whole run, if limited.
    pub rps_limit: Option<f64>,
    /// GETs of a random range of each object.
    pub range: bool,
    /// Mixed's ratios.
    pub distrib: Distrib,
    /// Keys asked for per LIST request.
    pub max_keys: u32,
    /// Parts per object (multipart).
    pub parts: u32,
    /// Bytes per part (multipart).
    pub part_size: u64,
    /// Length of the time segments of the analysis.
    pub segment_s: f64,
    /// Seed of every random choice (sizes, keys picked, ranges).
    pub seed: u64,
}

/// Most workers per run.
pub const MAX_CONCURRENT: usize = 4096;
/// Most objects prepared.
pub const MAX_OBJECTS: u64 = 100_000_000;
/// Longest timed phase (a week).
pub const MAX_DURATION_S: f64 = 7.0 * 86_400.0;
/// S3's most parts per upload.
pub const MAX_PARTS: u32 = 10_000;
/// S3's least part (all but the last).
pub const MIN_PART: u64 = 5 << 20;

impl Config {
    /// Checks every value against what it may be and against the
    /// others; `ranks` is the number of processes the run spans.
    pub fn validate(&self, ranks: usize) -> Result<(), ConfigError> {
        let bad = |opt: &str, why: String| Err(ConfigError::new(opt, why));
        if self.hosts.is_empty() {
            return bad("--host", "give at least one endpoint".into());
        }
        if !(1..=MAX_CONCURRENT).contains(&self.concurrent) {
            return bad(
                "--concurrent",
                format!("{}: give 1 to {MAX_CONCURRENT}", self.concurrent),
            );
        }
        if !self.concurrent.is_multiple_of(ranks) {
            return bad(
                "--concurrent",
                format!(
                    "{} workers cannot be shared evenly by {ranks} ranks: give a multiple of {ranks}",
                    self.concurrent
                ),
            );
        }
        if !(self.duration_s > 0.0 && self.duration_s <= MAX_DURATION_S) {
            return bad(
                "--duration",
                format!("{} s: give more than 0 and at most a week", self.duration_s),
            );
        }
        if !(self.segment_s >= 0.01 && self.segment_s <= self.duration_s.max(0.01)) {
            return bad(
                "--analyze.dur",
                format!(
                    "{} s: give at least 0.01 s and at most --duration",
                    self.segment_s
                ),
            );
        }
        self.validate_counts()?;
        self.validate_prefix()?;
        self.validate_modes(ranks)?;
        self.sizes
            .validate()
            .map_err(|why| ConfigError::new("--obj.size", why.to_string()))
    }

    fn validate_counts(&self) -> Result<(), ConfigError> {
        let bad = |opt: &str, why: String| Err(ConfigError::new(opt, why));
        if self.objects > MAX_OBJECTS {
            return bad(
                "--objects",
                format!("{}: at most {MAX_OBJECTS}", self.objects),
            );
        }
        let needs_pool = self.bench.prepares() && !self.list_existing;
        if needs_pool && self.objects < self.concurrent as u64 {
            return bad(
                "--objects",
                format!(
                    "{} objects for {} workers: give at least one object per worker",
                    self.objects, self.concurrent
                ),
            );
        }
        if let Some(r) = self.rps_limit {
            if !(r > 0.0 && r <= 1e7) {
                return bad(
                    "--rps-limit",
                    format!("{r}: give more than 0 and at most 10000000"),
                );
            }
        }
        if !(1..=1000).contains(&self.max_keys) {
            return bad("--max-keys", format!("{}: give 1 to 1000", self.max_keys));
        }
        if self.bench == Bench::Multipart {
            if !(1..=MAX_PARTS).contains(&self.parts) {
                return bad("--parts", format!("{}: give 1 to {MAX_PARTS}", self.parts));
            }
            if !(MIN_PART..=MAX_OBJECT).contains(&self.part_size) {
                return bad(
                    "--part.size",
                    format!("{}: give 5MiB to 5GiB (S3's limits)", self.part_size),
                );
            }
        }
        Ok(())
    }

    /// `--prefix` as every key of the run starts with it: no `.` or `..`
    /// segment (a path resolved on the way could leave the bucket), and
    /// room for the run's own part of a key within S3's 1024 bytes.
    fn validate_prefix(&self) -> Result<(), ConfigError> {
        use iolab_backend::s3::{check_key, MAX_KEY_BYTES};
        let bad = |why: String| Err(ConfigError::new("--prefix", why));
        if let Err(e) = check_key(&self.prefix) {
            return bad(format!("{:?}: {e}", self.prefix));
        }
        let longest = self.prefix.len() + self.longest_own_key();
        if longest > MAX_KEY_BYTES {
            return bad(format!(
                "the run's keys would be up to {longest} bytes ({} of the prefix and up to {} of the run's own names); S3 keys are at most {MAX_KEY_BYTES}: give a shorter prefix",
                self.prefix.len(),
                self.longest_own_key()
            ));
        }
        Ok(())
    }

    /// The longest a key is after `--prefix`:
    /// `iolab-s3bench.SECONDS-PID-NONCE/WORKER/NUMBER` with ten digits of
    /// seconds and of a process id, four of the nonce, the worker's
    /// digits and twenty for the number (a count of objects made).
    pub fn longest_own_key(&self) -> usize {
        let digits = |n: usize| n.max(1).ilog10() as usize + 1;
        "iolab-s3bench.".len() + 10 + 1 + 10 + 1 + 4 + 1 + digits(self.concurrent) + 1 + 20
    }

    fn validate_modes(&self, ranks: usize) -> Result<(), ConfigError> {
        let bad = |opt: &str, why: &str| Err(ConfigError::new(opt, why.to_string()));
        if self.autoterm.is_some() && ranks > 1 {
            return bad(
                "--autoterm",
                "a run of several ranks cannot stop early by itself (as warp's distributed runs): give --duration only",
            );
        }
        if let Some(a) = self.autoterm {
            if !(a.min_stable_s > 0.0 && a.min_stable_s < self.duration_s) {
                return bad(
                    "--autoterm.dur",
                    "give more than 0 and less than --duration",
                );
            }
            if !(a.pct > 0.0 && a.pct <= 100.0) {
                return bad("--autoterm.pct", "give more than 0 and at most 100");
            }
        }
        if self.list_existing && self.bench == Bench::Delete {
            return bad(
                "--list-existing",
                "iolab never deletes objects it did not make: delete runs on objects it uploads first",
            );
        }
        if self.list_existing && !matches!(self.bench, Bench::Get | Bench::Stat | Bench::Mixed) {
            return bad("--list-existing", "applies to get, stat and mixed");
        }
        if self.bench == Bench::Mixed {
            let w = self.distrib.weights();
            if w.iter().any(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
                return bad(
                    "--get-distrib",
                    "every distribution is a number of 0 or more",
                );
            }
            if w.iter().map(|(_, v)| v).sum::<f64>() <= 0.0 {
                return bad("--get-distrib", "give at least one distribution above 0");
            }
            if self.distrib.delete > self.distrib.put {
                return bad(
                    "--delete-distrib",
                    "must not be above --put-distrib (the pool of objects would run out), as in warp",
                );
            }
        }
        Ok(())
    }

    /// The ops the run times, in report order.
    pub fn ops(&self) -> Vec<Op> {
        match self.bench {
            Bench::Get => vec![Op::Get],
            Bench::Put => vec![Op::Put],
            Bench::Stat => vec![Op::Stat],
            Bench::Delete => vec![Op::Delete],
            Bench::List => vec![Op::List],
            Bench::Mixed => self
                .distrib
                .weights()
                .into_iter()
                .filter(|(_, w)| *w > 0.0)
                .map(|(o, _)| o)
                .collect(),
            Bench::Multipart => vec![Op::Multipart, Op::MpCreate, Op::MpPart, Op::MpComplete],
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample(bench: Bench) -> Config {
        Config {
            bench,
            hosts: vec!["http://127.0.0.1:9000".into()],
            bucket: "b".into(),
            prefix: String::new(),
            sizes: Sizes::Fixed(4096),
            objects: 100,
            concurrent: 4,
            duration_s: 10.0,
            autoterm: None,
            noclear: false,
            list_existing: false,
            rps_limit: None,
            range: false,
            distrib: Distrib::default(),
            max_keys: 100,
            parts: 2,
            part_size: 5 << 20,
            segment_s: 1.0,
            seed: 1,
        }
    }

    #[test]
    fn bad_values_name_their_option() {
        type Change = Box<dyn Fn(&mut Config)>;
        let cases: Vec<(Change, usize, &str)> = vec![
            (Box::new(|c| c.concurrent = 0), 1, "--concurrent"),
            (Box::new(|c| c.concurrent = 3), 2, "--concurrent"),
            (Box::new(|c| c.duration_s = 0.0), 1, "--duration"),
            (Box::new(|c| c.objects = 2), 1, "--objects"),
            (Box::new(|c| c.rps_limit = Some(0.0)), 1, "--rps-limit"),
            (Box::new(|c| c.max_keys = 0), 1, "--max-keys"),
            (
                Box::new(|c| {
                    c.autoterm = Some(AutoTerm {
                        min_stable_s: 2.0,
                        pct: 7.5,
                    })
                }),
                2,
                "--autoterm",
            ),
            (
                Box::new(|c| {
                    c.bench = Bench::Delete;
                    c.list_existing = true
                }),
                1,
                "--list-existing",
            ),
            (
                Box::new(|c| {
                    c.bench = Bench::Mixed;
                    c.distrib.delete = 50.0
                }),
                1,
                "--delete-distrib",
            ),
            (
                Box::new(|c| {
                    c.bench = Bench::Multipart;
                    c.part_size = 1024
                }),
                1,
                "--part.size",
            ),
            (Box::new(|c| c.sizes = Sizes::Fixed(0)), 1, "--obj.size"),
        ];
        for (change, ranks, opt) in cases {
            let mut c = sample(Bench::Get);
            assert!(c.validate(1).is_ok());
            change(&mut c);
            let e = c.validate(ranks).unwrap_err();
            assert_eq!(e.option, opt, "{e}");
        }
    }

    #[test]
    fn mixed_times_the_ops_it_was_given() {
        let mut c = sample(Bench::Mixed);
        c.distrib.list = 10.0;
        c.distrib.stat = 0.0;
        assert_eq!(c.ops(), vec![Op::Get, Op::Put, Op::Delete, Op::List]);
        assert!(Op::ALL.iter().all(|o| Op::of_index(o.index()) == Some(*o)));
    }
}
