//! The results store's listings, one run or series shown in full, a
//! comparison, and exports (`iolab results`).

pub mod compare;
pub mod export;
pub mod list;
pub mod pretty;
pub mod show;

/// A figure for a table: whole numbers from 100 up, else 3 significant
/// digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let a = v.abs();
    match a {
        _ if a >= 100.0 => format!("{v:.0}"),
        _ if a >= 10.0 => format!("{v:.1}"),
        _ if a >= 1.0 => format!("{v:.2}"),
        _ if a == 0.0 => "0".to_string(),
        _ => format!("{v:.3}"),
    }
}

/// Local date and time of a Unix nanosecond timestamp.
pub fn when(unix_ns: u64) -> String {
    match unix_ns {
        0 => "-".to_string(),
        t => iolab_core::clock::format_local(t / 1_000_000_000, "%Y-%m-%d %H:%M:%S"),
    }
}

/// Seconds between two timestamps.
pub fn seconds(start_ns: u64, end_ns: u64) -> f64 {
    end_ns.saturating_sub(start_ns) as f64 / 1e9
}

/// `text` safe to print on a terminal, on one line: control characters
/// (C0, DEL, C1: an escape sequence, a line break, a backspace) and the
/// bidirectional overrides that reorder what is shown come out as
/// escapes (`\n`, `\t`, `\r`, `\u{1b}`), so that a label or command
/// line in the store can neither send codes to the terminal nor break
/// a table. Every listing of `iolab results` prints through it.
pub fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = iolab_core::text::unprintable;
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.into()
}

/// Rows of cells as left-aligned columns, two spaces apart; every cell
/// [`clean`]ed first.
pub fn table(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c).into_owned()).collect())
        .collect();
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{s:<w$}", w = width[i]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_tables() {
        assert_eq!(num(12345.678), "12346");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(0.01234), "0.012");
        assert_eq!(num(f64::NAN), "-");
        let t = table(&[
            vec!["a".into(), "bb".into()],
            vec!["ccc".into(), "d".into()],
        ]);
        assert_eq!(t, "a    bb\nccc  d\n");
    }

    #[test]
    fn control_characters_are_escaped_in_cells() {
        assert_eq!(clean("plain é"), "plain é");
        assert_eq!(
            clean("a\u{1b}[31mred\nb\tc\r\u{7f}\u{9b}\u{202e}"),
            "a\\u{1b}[31mred\\nb\\tc\\r\\u{7f}\\u{9b}\\u{202e}"
        );
        let t = table(&[
            vec!["id".into(), "label".into()],
            vec!["1".into(), "x\ny\u{1b}]0;pwned\u{7}".into()],
        ]);
        assert_eq!(t.lines().count(), 2, "{t}");
        assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t}");
    }
}
