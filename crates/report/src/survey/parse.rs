//! Reading summaries back (filled in below).
