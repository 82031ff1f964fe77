//! One row of an option table: names, how values are taken, help, the
//! function that reads the values into the tool's raw configuration, and
//! an example with the check it must satisfy.

use crate::cursor::Cursor;
use crate::error::OptError;

/// Reads one option's values into the raw configuration `R`. The scope
/// is the target number of XDD's `-opt target N ...` form; None otherwise
/// (always None in getopt style).
pub type Apply<R> = fn(&mut Cursor, &mut R, Option<usize>) -> Result<(), OptError>;

/// How an option takes its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// The apply function reads as many words as it needs (XDD style;
    /// in getopt style the same as [`Arity::Value`]).
    Words,
    /// No value.
    Flag,
    /// One value: attached (`-n10`, `-n=10`, `--json=x`) or the next word,
    /// even one that starts with a dash (a path such as `-d -x`).
    Value,
    /// One value, like [`Arity::Value`], except that when the next word
    /// looks like an option the option is ignored with a warning: mdtest
    /// 1.9.3 read `-n -N 1` as `-n 0` (atoi of "-N"), so such command
    /// lines keep their meaning.
    Number,
    /// An optional value that must be attached (`-R7`); never the next word.
    Attached,
}

/// What an entry's example must do.
pub enum Check<C: 'static> {
    /// Parse (and validate) and satisfy the predicate.
    Ok(fn(&C) -> bool),
    /// Fail with a message containing this text, naming the option.
    Err(&'static str),
    /// Stop parsing with an action (help, version).
    Action,
}

impl<C> Clone for Check<C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Check<C> {}

/// What running an example gave: a configuration, or an action.
pub enum Example<C> {
    /// The command line parsed into this configuration.
    Run(C),
    /// The command line asked for help or the version.
    Action,
}

/// One command-line option of a tool whose raw configuration is `R` and
/// whose parsed configuration (the thing examples are checked against)
/// is `C`.
pub struct Entry<R: 'static, C: 'static> {
    /// Name without dashes: XDD's option name, or a getopt long option
    /// (empty when the option has only a letter).
    pub name: &'static str,
    /// Getopt letter, if any.
    pub short: Option<char>,
    /// Other names (short forms, historical names).
    pub aliases: &'static [&'static str],
    /// How values are taken.
    pub arity: Arity,
    /// Accepts `target N` after the name (XDD style only).
    pub scoped: bool,
    /// Synopsis of the values (`<bytes>`, `N`, `[SEED]`).
    pub args: &'static str,
    /// One-line explanation.
    pub help: &'static str,
    /// Reads the values.
    pub apply: Apply<R>,
    /// Example arguments.
    pub example: &'static str,
    /// What the example must do.
    pub check: Check<C>,
}

/// One option a command line gives, as the parser read it: the index of
/// the word it starts at (a letter of a group such as `-FCu` is at the
/// group's word) and the option as its entry names it ([`Entry::label`]:
/// `-n` whether written `-n 4`, `-n4`, `-n=4` or `--items 4`; an XDD
/// option given for one target is `-op target 1`). A caller that built the
/// command line from parts (`iolab sweep`) finds from it which part set
/// what, and so an option two parts set, the later silently overriding
/// the earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// Index of the word it starts at.
    pub word: usize,
    /// The option, the same for every spelling of it.
    pub option: String,
}

/// An entry's example that did not give what its check expects (the
/// test that runs every table's examples reports it).
#[derive(Debug, thiserror::Error)]
pub enum ExampleError {
    /// It parsed, into the wrong config.
    #[error("{option}: example `{example}` parsed wrongly")]
    Parsed {
        /// The option (`-n`).
        option: String,
        /// Its example.
        example: &'static str,
    },
    /// It failed as expected, but the message lacks the expected text
    /// or the option's name.
    #[error("{option}: error `{error}` lacks `{text}` or the option name")]
    Lacks {
        /// The option.
        option: String,
        /// The error it gave.
        error: OptError,
        /// What the message should hold.
        text: &'static str,
    },
    /// It failed where it should have run.
    #[error("{option}: example `{example}` failed: {error}")]
    Failed {
        /// The option.
        option: String,
        /// Its example.
        example: &'static str,
        /// The error.
        error: OptError,
    },
    /// It gave an action where a run was expected, or the other way.
    #[error("{option}: example `{example}` gave the wrong kind of result")]
    Kind {
        /// The option.
        option: String,
        /// Its example.
        example: &'static str,
    },
}

impl<R, C> Entry<R, C> {
    /// How the option is written in help and messages: its letter (`-n`),
    /// else one dash for an XDD-style entry (arity [`Arity::Words`]:
    /// `-reqsize`), else two for a getopt long option (`--tasks`).
    pub fn label(&self) -> String {
        match self.short {
            Some(c) => format!("-{c}"),
            None if self.arity == Arity::Words => format!("-{}", self.name),
            None => format!("--{}", self.name),
        }
    }

    /// Checks what running the example gave against [`Entry::check`];
    /// the error says what went wrong, for the test that runs them all.
    pub fn verify(&self, got: Result<Example<C>, OptError>) -> Result<(), ExampleError> {
        let option = self.label();
        let example = self.example;
        match (self.check, got) {
            (Check::Ok(f), Ok(Example::Run(c))) if f(&c) => Ok(()),
            (Check::Ok(_), Ok(Example::Run(_))) => Err(ExampleError::Parsed { option, example }),
            (Check::Err(text), Err(error)) => {
                let named = error.option == self.name
                    || self.short.is_some_and(|c| error.option == c.to_string());
                if error.to_string().contains(text) && named {
                    Ok(())
                } else {
                    Err(ExampleError::Lacks {
                        option,
                        error,
                        text,
                    })
                }
            }
            (Check::Action, Ok(Example::Action)) => Ok(()),
            (_, Err(error)) => Err(ExampleError::Failed {
                option,
                example,
                error,
            }),
            (_, Ok(_)) => Err(ExampleError::Kind { option, example }),
        }
    }
}

/// Checks that no two entries share a name, letter or alias
/// (case-insensitive for names); returns the first clash.
pub fn duplicate<R, C>(table: &[Entry<R, C>]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for e in table {
        let names = std::iter::once(e.name)
            .filter(|n| !n.is_empty())
            .chain(e.aliases.iter().copied())
            .map(str::to_ascii_lowercase)
            .chain(e.short.map(|c| format!("short:{c}")));
        for n in names {
            if !seen.insert(n.clone()) {
                return Some(n);
            }
        }
    }
    None
}
