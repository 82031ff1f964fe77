//! Sizes and counts as users type them: `4k`, `1m`, `2g` (powers of two,
//! as mdtest and XDD read them).

use thiserror::Error;

/// Appends the decimal digits of `v` to `buf` without allocating or
/// formatting: for names built per operation in hot loops (mdtest's
/// items, md-workbench's objects, survey mds's files).
#[inline]
pub fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// A number or size that could not be read.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum UnitError {
    /// The text is not a number with an optional k/m/g/t suffix.
    #[error("'{0}' is not a number (a whole number, optionally with a k, m, g or t suffix)")]
    NotANumber(String),
    /// The value does not fit in 64 bits.
    #[error("'{0}' is too large")]
    Overflow(String),
}

/// Parses a whole number with an optional binary suffix: `k`=2^10,
/// `m`=2^20, `g`=2^30, `t`=2^40 (case-insensitive, optional trailing `b`
/// or `ib`, so `4KiB` and `4kb` read as 4096).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, shift) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 10),
        Some('m') => (&body[..body.len() - 1], 20),
        Some('g') => (&body[..body.len() - 1], 30),
        Some('t') => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UnitError::NotANumber(text.to_string()));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| UnitError::Overflow(text.to_string()))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| UnitError::Overflow(text.to_string()))
}

/// Parses a signed whole number with an optional binary suffix.
pub fn parse_signed(text: &str) -> Result<i64, UnitError> {
    let t = text.trim();
    let (neg, rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let v = parse_size(rest).map_err(|_| UnitError::NotANumber(text.to_string()))?;
    let v = i64::try_from(v).map_err(|_| UnitError::Overflow(text.to_string()))?;
    Ok(if neg { -v } else { v })
}

/// Formats a byte count with a binary unit, as mdtest prints file system
/// sizes (`28.8 GiB`).
pub fn human_binary(bytes: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// Formats a count with a binary unit without the `B`, as mdtest prints
/// inode counts (`1.8 Mi`).
pub fn human_count(n: f64) -> String {
    const UNITS: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let mut v = n;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_binary() {
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("10").unwrap(), 10);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
    }

    #[test]
    fn junk_is_rejected() {
        for bad in ["", "k", "-1", "1.5", "abc", "4kk", "1x"] {
            assert!(parse_size(bad).is_err(), "{bad} accepted");
        }
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(UnitError::Overflow(_))
        ));
        assert!(matches!(
            parse_size("17179869184g"),
            Err(UnitError::Overflow(_))
        ));
    }

    #[test]
    fn signed_values() {
        assert_eq!(parse_signed("-4k").unwrap(), -4096);
        assert_eq!(parse_signed("7").unwrap(), 7);
        assert!(parse_signed("--1").is_err());
    }

    #[test]
    fn human_units() {
        assert_eq!(human_binary(28.8 * 1024.0 * 1024.0 * 1024.0), "28.8 GiB");
        assert_eq!(human_count(1.8 * 1024.0 * 1024.0), "1.8 Mi");
        assert_eq!(human_binary(10.0), "10.0 B");
    }
}
