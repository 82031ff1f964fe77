//! Why a test, host list or option given to lst cannot be used.

/// A test, host list or option that cannot be used (bad usage: the
/// caller exits 2). Each names the word or option it refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    /// The word or option named in `what` cannot be used, for `why`.
    #[error("{what}: {why}")]
    Invalid {
        /// The word or option, as written (`--distribute "3"`).
        what: String,
        /// What is wrong and what to write instead.
        why: String,
    },
    /// A size that does not parse.
    #[error("{what}: {source}")]
    Size {
        /// The option and value (`brw size=4q`).
        what: String,
        /// Why it does not parse.
        source: iolab_core::units::UnitError,
    },
    /// A word that must be given is absent; the message says which.
    #[error("{0}")]
    Missing(&'static str),
    /// A test word given parameters it does not take.
    #[error("{test} takes no parameters, got {got:?}")]
    Extra {
        /// The test (`ping`).
        test: &'static str,
        /// What followed it.
        got: String,
    },
    /// Two words of one group name one agent.
    #[error("{first} and {second} are the same agent ({addr}): a host appears once in a group")]
    SameAgent {
        /// The first word.
        first: String,
        /// The second word.
        second: String,
        /// The address both reach.
        addr: String,
    },
    /// A group of no hosts or of too many.
    #[error("a group has 1 to {max} hosts, not {got}")]
    GroupSize {
        /// The hosts given.
        got: usize,
        /// The most a group takes.
        max: usize,
    },
}

impl InputError {
    /// `what: why`.
    pub fn invalid(what: impl Into<String>, why: impl Into<String>) -> InputError {
        InputError::Invalid {
            what: what.into(),
            why: why.into(),
        }
    }
}
