//! The options every run takes, declared once: `--json`, `--csv`,
//! `--stats` and `--store` (and whatever a later option adds, such as
//! live figures), in [`DECLARED`]. A clap tool flattens
//! [`RunOptions<TAKES>`] into its arguments, `TAKES` naming which of
//! them it has (a bit each: [`JSON`], [`CSV`], [`STATS`], [`STORE`]);
//! its help, completions and man page then list them with the same
//! words, and the runner reads them as [`Given`]. The legacy tools
//! (mdtest, xdd), whose command lines are option tables, fill a
//! [`Given`] from their tables' fields.
//!
//! Adding an option every run takes is one row in [`DECLARED`], one
//! field in [`Given`] (read in [`RunOptions::from_arg_matches_mut`])
//! and its bit in [`EVERY`].

use clap::{Arg, ArgMatches, Command};
use std::path::PathBuf;

/// `--json PATH`: the results envelope.
pub const JSON: u8 = 1;
/// `--csv PATH`: the tool's rows as CSV.
pub const CSV: u8 = 1 << 1;
/// `--stats CONFIG`: system statistics collected during the run.
pub const STATS: u8 = 1 << 2;
/// `--store PATH`: the run recorded in the results store.
pub const STORE: u8 = 1 << 3;
/// Every run option: what a tool that makes a run of its own takes.
pub const EVERY: u8 = JSON | CSV | STATS | STORE;

/// What the user gave of the run options: what the runner acts on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Given {
    /// `--json`: where the results envelope goes.
    pub json: Option<PathBuf>,
    /// `--csv`: where the tool's CSV goes.
    pub csv: Option<PathBuf>,
    /// `--stats`: the statistics configuration (config.sh, TOML or `local[,Ns]`).
    pub stats: Option<String>,
    /// `--store`: the results store the run is recorded in.
    pub store: Option<PathBuf>,
}

/// One run option as the command lines show it.
pub struct Declared {
    /// Its bit in `TAKES`.
    pub bit: u8,
    /// The long name (and clap id).
    pub long: &'static str,
    /// The value's name in the help.
    pub value: &'static str,
    /// The help line.
    pub help: &'static str,
}

/// Every run option, in the order the help lists them.
pub static DECLARED: &[Declared] = &[
    Declared {
        bit: JSON,
        long: "json",
        value: "PATH",
        help: "Also write the results as JSON (an iolab results envelope)",
    },
    Declared {
        bit: CSV,
        long: "csv",
        value: "PATH",
        help: "Also write the results as CSV rows",
    },
    Declared {
        bit: STATS,
        long: "stats",
        value: "CONFIG",
        help: "Collect CPU, memory, disk and network statistics during the run (config.sh, config.toml or local[,Ns], as `iolab stats`) into --json",
    },
    Declared {
        bit: STORE,
        long: "store",
        value: "PATH",
        help: "Record the run in the results store at this path (see `iolab results`)",
    },
];

/// The run options a clap tool takes: those of [`DECLARED`] whose bit
/// is in `TAKES`, read into a [`Given`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions<const TAKES: u8>(pub Given);

impl<const TAKES: u8> std::ops::Deref for RunOptions<TAKES> {
    type Target = Given;
    fn deref(&self) -> &Given {
        &self.0
    }
}

impl<const TAKES: u8> clap::FromArgMatches for RunOptions<TAKES> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut m.clone())
    }

    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        let mut path = |bit: u8, id: &str| match TAKES & bit {
            0 => None,
            _ => m.remove_one::<PathBuf>(id),
        };
        let (json, csv, store) = (path(JSON, "json"), path(CSV, "csv"), path(STORE, "store"));
        let stats = match TAKES & STATS {
            0 => None,
            _ => m.remove_one::<String>("stats"),
        };
        Ok(RunOptions(Given {
            json,
            csv,
            stats,
            store,
        }))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<const TAKES: u8> clap::Args for RunOptions<TAKES> {
    fn augment_args(cmd: Command) -> Command {
        DECLARED
            .iter()
            .filter(|d| TAKES & d.bit != 0)
            .fold(cmd, |cmd, d| {
                let arg = Arg::new(d.long)
                    .long(d.long)
                    .value_name(d.value)
                    .help(d.help);
                cmd.arg(match d.bit {
                    STATS => arg.value_parser(clap::value_parser!(String)),
                    _ => arg.value_parser(clap::value_parser!(PathBuf)),
                })
            })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Every {
        #[command(flatten)]
        run: RunOptions<EVERY>,
    }

    #[derive(Parser)]
    struct JsonOnly {
        #[command(flatten)]
        run: RunOptions<JSON>,
    }

    #[test]
    fn a_tool_reads_the_options_it_takes_and_refuses_the_others() {
        let e = Every::try_parse_from([
            "t", "--json", "a.json", "--csv", "b.csv", "--stats", "local", "--store", "s.db",
        ])
        .unwrap();
        assert_eq!(e.run.json.as_deref(), Some("a.json".as_ref()));
        assert_eq!(e.run.csv.as_deref(), Some("b.csv".as_ref()));
        assert_eq!(e.run.stats.as_deref(), Some("local"));
        assert_eq!(e.run.store.as_deref(), Some("s.db".as_ref()));
        let j = JsonOnly::try_parse_from(["t", "--json=x"]).unwrap();
        assert_eq!(
            j.run.0,
            Given {
                json: Some("x".into()),
                ..Given::default()
            }
        );
        let e = JsonOnly::try_parse_from(["t", "--csv", "x"]).err().unwrap();
        assert!(e.to_string().contains("--csv"), "{e}");
    }

    #[test]
    fn every_declared_option_has_its_own_bit() {
        let all = DECLARED.iter().fold(0, |acc, d| {
            assert_eq!(acc & d.bit, 0, "{}", d.long);
            acc | d.bit
        });
        assert_eq!(all, EVERY);
    }
}
