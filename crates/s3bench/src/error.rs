//! The engine's typed errors.

use thiserror::Error;

/// A value that cannot be used, naming its option.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{option}: {why}")]
pub struct ConfigError {
    /// The option (`--objects`).
    pub option: String,
    /// What is wrong and what to give instead.
    pub why: String,
}

impl ConfigError {
    /// The error of `option`.
    pub fn new(option: &str, why: String) -> Self {
        ConfigError {
            option: option.to_string(),
            why,
        }
    }
}

/// Most endpoints a host list may expand to.
pub const MAX_HOSTS: usize = 1024;

/// A value warp's options cannot take; each names the value it refuses
/// (the caller puts the option in front).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A required value is absent or empty; the message says what to give.
    #[error("{0}")]
    Missing(&'static str),
    /// A value that does not read; `why` says what it should be.
    #[error("'{value}': {why}")]
    Invalid {
        /// The value, or the part of it at fault.
        value: String,
        /// What is wrong and what to write.
        why: String,
    },
    /// Not a duration at all.
    #[error("'{value}' is not a duration{hint}")]
    NotADuration {
        /// The value.
        value: String,
        /// The forms to write, when the value looked like none.
        hint: &'static str,
    },
    /// A size that does not parse.
    #[error(transparent)]
    Size(#[from] iolab_core::units::UnitError),
    /// An object size out of S3's bounds.
    #[error("{size}: {why}")]
    Bounds {
        /// The size in bytes.
        size: u64,
        /// The bounds.
        why: &'static str,
    },
    /// Size buckets that do not rise.
    #[error("bucket {0}: sizes must rise from bucket to bucket, up to 5GiB")]
    Bucket(u64),
    /// A host list past [`MAX_HOSTS`].
    #[error("more than {} endpoints", MAX_HOSTS)]
    TooManyHosts,
}
