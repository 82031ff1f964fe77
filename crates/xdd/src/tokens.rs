//! The `-outputformat` tokens of section 8.2. The report crate maps each to
//! a column; this list lets the parser reject an unknown token up front.

/// Every token XDD 7.0 defines except the end-to-end ones, with synonyms.
pub const TOKENS: &[&str] = &[
    "WHAT",
    "PASS",
    "TARGET",
    "QUEUE",
    "BYTESTRANSFERED",
    "BYTESXFERED",
    "BYTESREAD",
    "BYTESWRITTEN",
    "OPS",
    "READOPS",
    "WRITEOPS",
    "BANDWIDTH",
    "READBANDWIDTH",
    "WRITEBANDWIDTH",
    "IOPS",
    "READIOPS",
    "WRITEIOPS",
    "LATENCY",
    "ELAPSEDTIME1STOP",
    "ELAPSEDTIMEPASS",
    "OVERHEADTIME",
    "PATTERNFILLTIME",
    "BUFFERFLUSHTIME",
    "CPUTIME",
    "PERCENTCPUTIME",
    "PERCENTCPU",
    "USERTIME",
    "USER",
    "USRTIME",
    "SYSTEMTIME",
    "SYSTEM",
    "SYSTIME",
    "PERCENTUSER",
    "PERCENTUSERTIME",
    "PERCENTUSR",
    "PERCENTSYSTEM",
    "PERCENTSYSTEMTIME",
    "PERCENTSYS",
    "OPTYPE",
    "XFERSIZEBYTES",
    "XFERSIZEBLOCKS",
    "XFERSIZEKBYTES",
    "XFERSIZEMBYTES",
    "DELIM",
    // iolab additions: latency percentiles and CPU per operation.
    "LATP50",
    "LATP90",
    "LATP99",
    "LATP999",
    "LATMAX",
    "CPUUSPEROP",
];

/// True when `token` (upper case, no `+`) is a known column.
pub fn is_known(token: &str) -> bool {
    TOKENS.contains(&token)
}
