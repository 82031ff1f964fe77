//! Why an IOR option, directive or layout cannot be used: each names the
//! option or value it refuses, for the cli's exit-2 message.

/// A value, directive or backend that IOR's options cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IorError {
    /// A number or size that does not parse.
    #[error(transparent)]
    Number(#[from] iolab_core::units::UnitError),
    /// A value that parses but is out of range or malformed; the
    /// message quotes it.
    #[error("'{value}' {why}")]
    Value {
        /// The value as given.
        value: String,
        /// What is wrong (`does not fit in 32 bits`).
        why: &'static str,
    },
    /// `-M`'s share of memory outside 1% to 99%.
    #[error("'{0}': a share of memory is 1% to 99%")]
    Share(String),
    /// `-l`'s packet type.
    #[error("unknown packet type {0:?}: offset, incompressible, timestamp or random (o, i, t, r)")]
    Packet(String),
    /// Text that is not `KEY=VALUE`.
    #[error("'{0}': a directive is KEY=VALUE")]
    NotADirective(String),
    /// An empty directive in a comma-separated list.
    #[error("'{0}': an empty directive")]
    EmptyDirective(String),
    /// A value followed by more text: IOR's value ends at the first
    /// blank and drops the rest unread (a second directive after a
    /// space, a file name with a space), which iolab refuses.
    #[error("{key}={value}: '{rest}' follows the value; a value ends at a blank, and directives on one line are separated by commas")]
    Trailing {
        /// The directive as written.
        key: String,
        /// Its value, up to the first blank.
        value: String,
        /// What follows it.
        rest: String,
    },
    /// A directive iolab does not know.
    #[error("unrecognized parameter \"{0}\"")]
    Unknown(String),
    /// A directive whose value is refused.
    #[error("{key}={value}: {why}")]
    Directive {
        /// The directive as written.
        key: String,
        /// Its value.
        value: String,
        /// Why it is refused.
        why: String,
    },
    /// A backend that can neither write at any offset nor store objects.
    #[error("the backend can neither write a file at any offset nor store objects")]
    Layout,
    /// `-Z -Q N` that no task offset satisfies.
    #[error("-Z -Q {offset}: no task offset of at least {least} among {tasks} tasks")]
    NoOffset {
        /// `-Q`.
        offset: u64,
        /// The least offset asked for.
        least: u64,
        /// The tasks.
        tasks: u64,
    },
}
