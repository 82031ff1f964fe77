//! The stream's formats, one file each, pure functions from rows to
//! bytes: [`jsonl`] and [`csv`] append lines interval by interval,
//! [`openmetrics`] renders the whole current state, which the session
//! writes over the file atomically each interval.

pub mod csv;
pub mod jsonl;
pub mod openmetrics;

use std::str::FromStr;

/// `--live-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One JSON object per line per interval and phase (the default).
    #[default]
    Jsonl,
    /// The same fields as CSV, one header line.
    Csv,
    /// A node_exporter textfile-collector file, replaced each interval.
    OpenMetrics,
}

/// A `--live-format` word that names no format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--live-format {0}: unknown format (give jsonl, csv or openmetrics)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, UnknownFormat> {
        match s {
            "jsonl" => Ok(Format::Jsonl),
            "csv" => Ok(Format::Csv),
            "openmetrics" => Ok(Format::OpenMetrics),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}
