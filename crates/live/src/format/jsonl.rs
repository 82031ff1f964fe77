//! JSON Lines: the header object on the first line, then one row object
//! per line per interval and phase.

use crate::row::{Header, Record, Row};

/// The first line.
pub fn header(h: &Header) -> Vec<u8> {
    line(h)
}

/// The lines of one interval's rows.
pub fn rows(rows: &[Row]) -> Vec<u8> {
    rows.iter().flat_map(line).collect()
}

fn line<T: serde::Serialize>(v: &T) -> Vec<u8> {
    // Plain data of numbers and strings: serialising cannot fail.
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Reads one line back (a header has `schema`, a row has `phase`).
pub fn parse(line: &str) -> Result<Record, serde_json::Error> {
    let v: serde_json::Value = serde_json::from_str(line)?;
    if v.get("schema").is_some() {
        serde_json::from_value(v).map(Record::Header)
    } else {
        serde_json::from_value(v).map(Record::Row)
    }
}
