//! Why a plan's test, figure, expectation or host list cannot be used;
//! each names what it refuses. The plan reader puts the key in front.

use std::path::PathBuf;

/// A refused part of a plan, or an expectation that cannot be judged.
#[derive(Debug, thiserror::Error)]
pub enum QualifyError {
    /// A network test that does not read.
    #[error("'{test}': {why}")]
    Test {
        /// As written.
        test: String,
        /// What is wrong and what to write.
        why: String,
    },
    /// A network test whose size does not parse.
    #[error("'{test}': {source}")]
    TestSize {
        /// As written.
        test: String,
        /// Why the size does not parse.
        source: iolab_core::units::UnitError,
    },
    /// A figure name this plan does not measure, or cannot convert.
    #[error("{name}: {why}")]
    Figure {
        /// The name as written.
        name: String,
        /// What is wrong and what may be written instead.
        why: String,
    },
    /// An expectation that does not parse, names an unknown figure or
    /// sits under the wrong layer.
    #[error("{key}: {why}")]
    Expect {
        /// The plan key (`data.expect`).
        key: String,
        /// What is wrong.
        why: String,
    },
    /// An expectation divides by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// A figure the caller's lookup could not give; its message.
    #[error("{0}")]
    Lookup(String),
    /// A host name the tools cannot pass on.
    #[error("{0:?} is not a host name (letters, digits, '-', '_', '.', ':', '@', brackets)")]
    HostName(String),
    /// The hostfile cannot be read.
    #[error("hosts.hostfile: cannot read {}: {source}", path.display())]
    Hostfile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: iolab_core::input::InputError,
    },
    /// The hostfile names no host.
    #[error("hosts.hostfile: {} names no host", path.display())]
    NoHosts {
        /// The file.
        path: PathBuf,
    },
    /// `hosts.slurm` outside an allocation.
    #[error(
        "hosts.slurm: SLURM_JOB_NODELIST is not set: run inside an allocation (salloc, sbatch)"
    )]
    NoAllocation,
    /// scontrol could not be run.
    #[error("hosts.slurm: cannot run scontrol: {0}")]
    Scontrol(#[source] std::io::Error),
    /// scontrol failed.
    #[error("hosts.slurm: scontrol show hostnames {list}: {stderr}")]
    ScontrolFailed {
        /// The node list.
        list: String,
        /// What scontrol said.
        stderr: String,
    },
    /// The allocation names no node.
    #[error("hosts.slurm: {0} names no node")]
    NoNodes(String),
}
