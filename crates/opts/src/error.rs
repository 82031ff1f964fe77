//! The one error type of every legacy command line: which option, and
//! what is wrong with it (and, where it helps, what to do).

use std::fmt;

/// A command line that cannot run. Displayed as `-name: message` (or
/// `--name: message` for a getopt long option; just the message when no
/// option is at fault, such as a stray word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptError {
    /// Option name without dashes (or a topic such as `target`); empty
    /// when no option is at fault.
    pub option: String,
    /// The option was named with two dashes (a getopt long option).
    pub long: bool,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
}

impl OptError {
    /// An error about option `option`, named with one dash.
    pub fn new(option: &str, message: impl Into<String>) -> Self {
        Self {
            option: option.to_string(),
            long: false,
            message: message.into(),
        }
    }

    /// An error about a getopt long option, named with two dashes.
    pub fn long(option: &str, message: impl Into<String>) -> Self {
        Self {
            long: true,
            ..Self::new(option, message)
        }
    }

    /// An error that no single option causes.
    pub fn general(message: impl Into<String>) -> Self {
        Self::new("", message)
    }

    /// How the option is written on the command line (`-n`, `--tasks`).
    pub fn flag(&self) -> String {
        let dashes = if self.long { "--" } else { "-" };
        format!("{dashes}{}", self.option)
    }
}

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.option.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.flag(), self.message)
        }
    }
}

impl std::error::Error for OptError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_option_with_its_dashes() {
        assert_eq!(OptError::new("reqsize", "bad").to_string(), "-reqsize: bad");
        assert_eq!(OptError::long("tasks", "bad").to_string(), "--tasks: bad");
        assert_eq!(OptError::general("stray").to_string(), "stray");
    }
}
