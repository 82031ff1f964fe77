//! The Lustre I/O kit's surveys, for any Linux block device and file
//! system: `disk` (sgpdd-survey), `obdfilter` (object survey on target
//! directories), `ost` (ost-survey, one file per target to find the slow
//! one) and `mds` (mds-survey, metadata operations). Each engine takes a
//! validated configuration, calls an observer after every survey point and
//! returns plain result structs; nothing here prints. The kit's lines and
//! files are written by `iolab_report::survey`.
//!
//! The sweeps double as the kit's shell loops do:
//!
//! ```
//! assert_eq!(iolab_survey::doubling(1, 8), vec![1, 2, 4, 8]);
//! assert_eq!(iolab_survey::doubling(3, 16), vec![3, 6, 12]);
//! ```

pub mod agent;
pub mod disk;
pub mod echo;
mod error;
mod io;
pub mod lustre;
pub mod mds;
pub mod mds_plan;
pub mod obdfilter;
pub mod object;
pub mod ost;
pub mod remote;
pub mod sampler;

pub use error::SurveyError;
use serde::{Deserialize, Serialize};

/// One MB as the kit's figures count it (awk divides KB by 1024): 2^20 bytes.
pub const MB: f64 = 1_048_576.0;

/// The kit's sweep `for ((x = lo; x <= hi; x *= 2))`: lo, 2 lo, 4 lo, ...
/// up to hi. Empty when lo is 0 (which validation refuses anyway).
pub fn doubling(lo: u64, hi: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut x = lo;
    while x > 0 && x <= hi {
        out.push(x);
        x = match x.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    out
}

/// A parameter the survey cannot run with: which one and why. The CLI
/// turns it into exit status 2 before anything is created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {message}")]
pub struct ParamError {
    /// The parameter as the kit names it (`thrlo`, `tests_str`, `size`...).
    pub option: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl ParamError {
    /// An error about `option`.
    pub fn new(option: &str, message: impl Into<String>) -> Self {
        Self {
            option: option.to_string(),
            message: message.into(),
        }
    }
}

/// Checks a `lo..hi` pair of doubling parameters: both at least 1, lo not
/// above hi, hi not above `max`.
pub fn check_range(
    lo_name: &str,
    lo: u64,
    hi_name: &str,
    hi: u64,
    max: u64,
) -> Result<(), ParamError> {
    if lo == 0 {
        return Err(ParamError::new(lo_name, "must be at least 1"));
    }
    if lo > hi {
        return Err(ParamError::new(
            lo_name,
            format!("{lo_name} ({lo}) is above {hi_name} ({hi}); lower it or raise {hi_name}"),
        ));
    }
    if hi > max {
        return Err(ParamError::new(
            hi_name,
            format!("{hi} is above the limit {max}"),
        ));
    }
    Ok(())
}

/// The first line of every summary: when, which survey, on what, from
/// which host (the kit's `$(date) sgpdd-survey on DEVS from HOST`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Local time in `date`'s default format.
    pub date: String,
    /// The host name.
    pub host: String,
}

impl Header {
    /// The header for a run starting now.
    pub fn now() -> Self {
        Self {
            date: date_now(),
            host: iolab_core::env::hostname(),
        }
    }
}

/// The current local time as `date` prints it (`%a %b %e %H:%M:%S %Z %Y`).
pub fn date_now() -> String {
    strftime("%a %b %e %H:%M:%S %Z %Y")
}

/// The local time formatted with `fmt` (a strftime(3) pattern, local
/// zone as `date` finds it).
pub fn strftime(fmt: &str) -> String {
    iolab_core::clock::format_local(iolab_core::clock::wall_ns() / 1_000_000_000, fmt)
}

/// Total memory in KB (`MemTotal` of /proc/meminfo), as the kit's ENOMEM
/// check reads it; None when it cannot be read.
pub fn mem_total_kb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_matches_the_shell_loop() {
        assert_eq!(doubling(1, 1), vec![1]);
        assert_eq!(doubling(4, 32), vec![4, 8, 16, 32]);
        assert_eq!(doubling(5, 4), Vec::<u64>::new());
        assert_eq!(doubling(0, 4), Vec::<u64>::new());
    }

    #[test]
    fn ranges_name_the_parameter() {
        let e = check_range("thrlo", 4, "thrhi", 2, 64).unwrap_err();
        assert_eq!(e.option, "thrlo");
        assert!(check_range("thrlo", 1, "thrhi", 128, 64).is_err());
        assert!(check_range("thrlo", 1, "thrhi", 2, 64).is_ok());
    }

    #[test]
    fn date_looks_like_dates() {
        let d = date_now();
        assert!(d.split_whitespace().count() >= 5, "{d}");
    }
}
