//! Text a user gives that iolab prints back or puts on a command line
//! (a series' label, a key): the characters a terminal does not show as
//! themselves, which listings escape and names may not hold.
//!
//! ```
//! use iolab_core::text::unprintable;
//! assert!(unprintable('\n') && unprintable('\u{0}') && unprintable('\u{202e}'));
//! assert!(!unprintable('a') && !unprintable('é') && !unprintable(' '));
//! ```

/// Whether `c` is a control character (C0, DEL, C1: an escape sequence,
/// a line break, a NUL) or a bidirectional override that reorders what
/// is shown around it.
pub fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}
