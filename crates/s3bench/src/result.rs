//! The run's result: plain data for the formatters and the envelope.

use crate::analysis::OpReport;
use crate::config::Bench;
use iolab_core::Outcome;
use serde::{Deserialize, Serialize};

/// Everything a run measured and did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The benchmark.
    pub bench: Bench,
    /// The endpoints, in `--host` order.
    pub hosts: Vec<String>,
    /// The bucket.
    pub bucket: String,
    /// Every key the run made starts with this (`--prefix` included).
    pub run_prefix: String,
    /// Processes (MPI ranks; 1 without MPI).
    pub ranks: usize,
    /// Workers over all ranks.
    pub workers: usize,
    /// The seed of the run's random choices (`--seed` repeats them).
    pub seed: u64,
    /// Objects uploaded (or listed) before the timed phase.
    pub prepare: PhaseReport,
    /// Length of the timed phase, seconds: from the start every worker
    /// waited for to the end of the last request.
    pub timed_s: f64,
    /// Why the timed phase ended.
    pub ended: Ended,
    /// Figures per op type.
    pub ops: Vec<OpReport>,
    /// Objects deleted after the timed phase.
    pub cleanup: PhaseReport,
    /// What the run left in the bucket.
    pub left: Left,
    /// HTTP requests of the timed phase, by method (the counts the
    /// server sees; retries not included).
    pub requests_timed: Requests,
    /// HTTP requests outside the timed phase (prepare, cleanup, the
    /// checks), by method.
    pub requests_other: Requests,
    /// Requests sent again after a 5xx or a broken connection.
    pub retries: u64,
    /// Mixed's draws passed over because the worker had no object of
    /// its own left to read or delete.
    pub skipped: u64,
    /// `--list-existing`'s listed objects passed over: their keys have a
    /// `.` or `..` segment or more than 1024 bytes, so no request can
    /// name them unchanged.
    #[serde(default)]
    pub unaddressable: u64,
    /// How the run ended.
    pub outcome: Outcome,
    /// Notes for the reader.
    pub notes: Vec<String>,
}

/// A phase outside the timed one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Objects uploaded, listed or deleted.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Requests that failed.
    pub errors: u64,
    /// How long it took, seconds.
    pub elapsed_s: f64,
}

impl PhaseReport {
    /// Adds another worker's counts (the longest time wins).
    pub fn merge(&mut self, o: &PhaseReport) {
        self.objects += o.objects;
        self.bytes += o.bytes;
        self.errors += o.errors;
        self.elapsed_s = self.elapsed_s.max(o.elapsed_s);
    }
}

/// What the run left in the bucket, as it counted it and as a LIST of
/// its prefix found it afterwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Left {
    /// Objects the run made and did not delete.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Objects a LIST of the run's prefix found after the run.
    pub listed_objects: Option<u64>,
    /// Their bytes.
    pub listed_bytes: Option<u64>,
}

impl Left {
    /// True when the LIST agrees with the count (or was not made).
    pub fn agrees(&self) -> bool {
        self.listed_objects.is_none_or(|n| n == self.objects)
            && self.listed_bytes.is_none_or(|b| b == self.bytes)
    }
}

/// HTTP requests by method (a LIST is a GET of the bucket; the two
/// POSTs of a multipart upload are create and complete).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requests {
    /// GETs of objects.
    pub get: u64,
    /// PUTs (objects and parts).
    pub put: u64,
    /// HEADs (objects and the bucket).
    pub head: u64,
    /// DELETEs (objects and aborted uploads).
    pub delete: u64,
    /// POSTs (multipart create and complete).
    pub post: u64,
    /// LIST pages.
    pub list: u64,
}

impl Requests {
    /// Adds another count.
    pub fn merge(&mut self, o: &Requests) {
        self.get += o.get;
        self.put += o.put;
        self.head += o.head;
        self.delete += o.delete;
        self.post += o.post;
        self.list += o.list;
    }

    /// All of them.
    pub fn total(&self) -> u64 {
        self.get + self.put + self.head + self.delete + self.post + self.list
    }
}

/// Why the timed phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Ended {
    /// `--duration` ran out.
    Duration,
    /// `--autoterm` found the rate steady for `steady_s` seconds.
    AutoTerm {
        /// How long the rate had been steady.
        steady_s: f64,
    },
    /// The objects to delete ran out (delete).
    OutOfObjects,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The service stopped answering, or the preparation failed.
    Failed,
    /// The timed phase did not start (the preparation failed).
    NotRun,
}

impl Ended {
    /// The more telling of two workers' reasons.
    pub fn worst(self, o: Ended) -> Ended {
        let rank = |e: &Ended| match e {
            Ended::Duration => 0,
            Ended::OutOfObjects => 1,
            Ended::AutoTerm { .. } => 2,
            Ended::NotRun => 3,
            Ended::Failed => 4,
            // A Ctrl-C on one worker is the whole run's.
            Ended::Interrupted => 5,
        };
        if rank(&o) > rank(&self) {
            o
        } else {
            self
        }
    }
}
