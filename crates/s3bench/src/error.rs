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
