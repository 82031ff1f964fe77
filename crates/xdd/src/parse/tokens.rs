//! The `-outputformat` tokens of section 8.2: one enum for the parser (which
//! rejects an unknown token with exit 2) and for the report crate (which
//! maps every variant to a column with an exhaustive match, so a token can
//! never parse and then be dropped).
//!
//! ```
//! use iolab_xdd::tokens::Token;
//! let t: Token = "+bytestransfered".parse().unwrap();
//! assert_eq!(t, Token::BytesXfered);
//! assert_eq!(t.to_string(), "BYTESXFERED");
//! assert!("BOGUS".parse::<Token>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;

/// A result column XDD 7.0 defines (the end-to-end ones included), plus
/// iolab's latency percentiles and CPU cost.
#[allow(missing_docs)] // each variant is named after its XDD token
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Token {
    What,
    Pass,
    Target,
    Queue,
    BytesXfered,
    BytesRead,
    BytesWritten,
    Ops,
    ReadOps,
    WriteOps,
    Bandwidth,
    ReadBandwidth,
    WriteBandwidth,
    Iops,
    ReadIops,
    WriteIops,
    Latency,
    ElapsedTime1stOp,
    ElapsedTimePass,
    OverheadTime,
    PatternFillTime,
    BufferFlushTime,
    CpuTime,
    PercentCpu,
    UserTime,
    SystemTime,
    PercentUser,
    PercentSystem,
    OpType,
    XferSizeBytes,
    XferSizeBlocks,
    XferSizeKbytes,
    XferSizeMbytes,
    Delim,
    LatP50,
    LatP90,
    LatP99,
    LatP999,
    LatMax,
    CpuUsPerOp,
    E2eIoTime,
    E2eSrTime,
    E2ePercentSrTime,
    E2eLagTime,
    E2ePercentLagTime,
    E2eFirstReadTime,
    E2eLastWriteTime,
}

/// Every accepted spelling (upper case, no `+`) and its token; the first
/// spelling of a token is its canonical name ([`Token`]'s `Display`).
pub const SPELLINGS: &[(&str, Token)] = &[
    ("WHAT", Token::What),
    ("PASS", Token::Pass),
    ("TARGET", Token::Target),
    ("QUEUE", Token::Queue),
    ("BYTESXFERED", Token::BytesXfered),
    ("BYTESTRANSFERED", Token::BytesXfered),
    ("BYTESREAD", Token::BytesRead),
    ("BYTESWRITTEN", Token::BytesWritten),
    ("OPS", Token::Ops),
    ("READOPS", Token::ReadOps),
    ("WRITEOPS", Token::WriteOps),
    ("BANDWIDTH", Token::Bandwidth),
    ("READBANDWIDTH", Token::ReadBandwidth),
    ("WRITEBANDWIDTH", Token::WriteBandwidth),
    ("IOPS", Token::Iops),
    ("READIOPS", Token::ReadIops),
    ("WRITEIOPS", Token::WriteIops),
    ("LATENCY", Token::Latency),
    ("ELAPSEDTIME1STOP", Token::ElapsedTime1stOp),
    ("ELAPSEDTIMEPASS", Token::ElapsedTimePass),
    ("OVERHEADTIME", Token::OverheadTime),
    ("PATTERNFILLTIME", Token::PatternFillTime),
    ("BUFFERFLUSHTIME", Token::BufferFlushTime),
    ("CPUTIME", Token::CpuTime),
    ("PERCENTCPU", Token::PercentCpu),
    ("PERCENTCPUTIME", Token::PercentCpu),
    ("USERTIME", Token::UserTime),
    ("USER", Token::UserTime),
    ("USRTIME", Token::UserTime),
    ("SYSTEMTIME", Token::SystemTime),
    ("SYSTEM", Token::SystemTime),
    ("SYSTIME", Token::SystemTime),
    ("PERCENTUSER", Token::PercentUser),
    ("PERCENTUSERTIME", Token::PercentUser),
    ("PERCENTUSR", Token::PercentUser),
    ("PERCENTSYSTEM", Token::PercentSystem),
    ("PERCENTSYSTEMTIME", Token::PercentSystem),
    ("PERCENTSYS", Token::PercentSystem),
    ("OPTYPE", Token::OpType),
    ("XFERSIZEBYTES", Token::XferSizeBytes),
    ("XFERSIZEBLOCKS", Token::XferSizeBlocks),
    ("XFERSIZEKBYTES", Token::XferSizeKbytes),
    ("XFERSIZEMBYTES", Token::XferSizeMbytes),
    ("DELIM", Token::Delim),
    ("LATP50", Token::LatP50),
    ("LATP90", Token::LatP90),
    ("LATP99", Token::LatP99),
    ("LATP999", Token::LatP999),
    ("LATMAX", Token::LatMax),
    ("CPUUSPEROP", Token::CpuUsPerOp),
    ("E2EIOTIME", Token::E2eIoTime),
    ("E2ESRTIME", Token::E2eSrTime),
    ("E2EPERCENTSRTIME", Token::E2ePercentSrTime),
    ("E2ELAGTIME", Token::E2eLagTime),
    ("E2EPERCENTLAGTIME", Token::E2ePercentLagTime),
    ("E2EFIRSTREADTIME", Token::E2eFirstReadTime),
    ("E2ELASTWRITETIME", Token::E2eLastWriteTime),
];

/// Every spelling the parser accepts (kept for callers that list them).
pub const TOKENS: [&str; SPELLINGS.len()] = {
    let mut v = [""; SPELLINGS.len()];
    let mut i = 0;
    while i < SPELLINGS.len() {
        v[i] = SPELLINGS[i].0;
        i += 1;
    }
    v
};

impl Token {
    /// XDD 7.0's default columns (guide 8.2 and its sample output): what
    /// `-csvout` and `-combinedout` write unless `-outputformat` is given.
    pub const XDD_DEFAULT: &'static [Token] = &[
        Token::What,
        Token::Pass,
        Token::Target,
        Token::Queue,
        Token::BytesXfered,
        Token::Ops,
        Token::ElapsedTimePass,
        Token::Bandwidth,
        Token::Iops,
        Token::Latency,
        Token::PercentCpu,
        Token::OpType,
        Token::XferSizeBytes,
    ];

    /// iolab's latency percentiles and CPU cost, which the text table
    /// shows after XDD's defaults.
    pub const IOLAB_EXTRA: &'static [Token] = &[
        Token::LatP50,
        Token::LatP90,
        Token::LatP99,
        Token::LatP999,
        Token::LatMax,
        Token::CpuUsPerOp,
    ];

    /// The canonical spelling (upper case, no `+`).
    pub fn name(self) -> &'static str {
        SPELLINGS
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(s, _)| s)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A word that names no `-outputformat` token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format token +{0} (see -help outputformat)")]
pub struct UnknownToken(pub String);

impl FromStr for Token {
    type Err = UnknownToken;

    /// Any spelling in [`SPELLINGS`], in any case, with or without `+`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().trim_start_matches('+').to_ascii_uppercase();
        SPELLINGS
            .iter()
            .find(|(name, _)| *name == up)
            .map(|(_, t)| *t)
            .ok_or(UnknownToken(up))
    }
}

/// True when `token` (upper case, no `+`) is a known column.
pub fn is_known(token: &str) -> bool {
    token.parse::<Token>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_round_trips_to_its_canonical_name() {
        for (s, t) in SPELLINGS {
            let parsed: Token = s.parse().unwrap();
            assert_eq!(parsed, *t, "{s}");
            assert_eq!(parsed.to_string().parse::<Token>().unwrap(), *t);
        }
        assert_eq!(
            "percentcputime".parse::<Token>().unwrap().to_string(),
            "PERCENTCPU"
        );
    }

    #[test]
    fn unknown_tokens_are_errors() {
        let e = "+NOPE".parse::<Token>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown format token +NOPE (see -help outputformat)"
        );
        assert!(is_known("E2ESRTIME"));
        assert!(is_known("BYTESTRANSFERED"));
    }
}
