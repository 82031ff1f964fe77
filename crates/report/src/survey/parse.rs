//! Reading a survey summary back (for `iolab survey plot`, and for sites'
//! own scripts through the library): which survey wrote it, and for each
//! line its record size, series (regions, objects or directories),
//! threads and each test's figure (None for ENOMEM/FAILED/ERROR/SHORT).

use serde::{Deserialize, Serialize};

/// Which survey a summary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `total_size ... crg ... thr ...` lines (sgpdd-survey).
    Disk,
    /// `ost ... obj ... thr ...` lines (obdfilter-survey).
    Obdfilter,
    /// `mdt ... dir ... thr ...` lines (mds-survey).
    Mds,
}

impl Kind {
    /// What one series counts (`crg`, `obj`, `dir`).
    pub fn series_name(self) -> &'static str {
        match self {
            Kind::Disk => "crg",
            Kind::Obdfilter => "obj",
            Kind::Mds => "dir",
        }
    }

    /// The unit of the figures.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Mds => "ops/s",
            _ => "MB/s",
        }
    }

    fn tests(self) -> &'static [&'static str] {
        match self {
            Kind::Disk => &["write", "read"],
            Kind::Obdfilter => iolab_survey::obdfilter::TEST_NAMES,
            Kind::Mds => iolab_survey::mds::TEST_NAMES,
        }
    }

    /// Tokens of the fixed parameter part of a line.
    fn prefix_tokens(self) -> usize {
        match self {
            Kind::Obdfilter => 10,
            _ => 8,
        }
    }
}

/// One summary line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Record size in KB (0 for the metadata survey).
    pub rsz_kb: u64,
    /// Regions, objects or directories.
    pub series: u64,
    /// Threads.
    pub thr: u64,
    /// Each test's figure, in line order.
    pub values: Vec<(String, Option<f64>)>,
}

/// A parsed summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Which survey.
    pub kind: Kind,
    /// The first line (date, survey, host).
    pub title: String,
    /// Every data line with figures.
    pub rows: Vec<Row>,
}

/// Why a summary could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::error::Error for ParseError {}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn kind_of(first: &str) -> Option<Kind> {
    match first {
        "total_size" => Some(Kind::Disk),
        "ost" => Some(Kind::Obdfilter),
        "mdt" => Some(Kind::Mds),
        _ => None,
    }
}

fn number(tok: &str) -> Option<u64> {
    tok.trim_end_matches('K').parse().ok()
}

/// The lines of a summary with the kit's `\` continuations joined (the
/// guide prints its sgpdd line over two), each with its 1-based number.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (n, line) in text.lines().enumerate() {
        let (body, continues) = match line.trim_end().strip_suffix('\\') {
            Some(b) => (b, true),
            None => (line, false),
        };
        match out.last_mut() {
            Some((_, prev)) if open => {
                prev.push(' ');
                prev.push_str(body.trim_start());
            }
            _ => out.push((n + 1, body.to_string())),
        }
        open = continues;
    }
    out
}

/// The order of the unnamed figures of a guide-layout disk line: the
/// header's `actions: ...`, else the kit's default `write read`.
fn disk_actions(title: &str) -> Vec<String> {
    match title.split_once("actions:") {
        Some((_, list)) => list.split_whitespace().map(String::from).collect(),
        None => vec!["write".into(), "read".into()],
    }
}

/// Parses a `.summary` written by any of the surveys, or the kit's own
/// result files (their lines, with or without a header line).
pub fn parse(text: &str) -> Result<Summary, ParseError> {
    let lines = logical_lines(text);
    let first_is_data = lines
        .first()
        .and_then(|(_, l)| l.split_whitespace().next())
        .and_then(kind_of)
        .is_some();
    let title = match lines.first() {
        Some((_, l)) if !first_is_data => l.clone(),
        _ => String::new(),
    };
    let actions = disk_actions(&title);
    let mut kind = None;
    let mut rows = Vec::new();
    for (n, line) in &lines {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(k) = toks.first().and_then(|t| kind_of(t)) else {
            continue;
        };
        if kind.is_some_and(|x| x != k) {
            return Err(ParseError(format!(
                "line {n}: a {k:?} line in a {kind:?} summary"
            )));
        }
        kind = Some(k);
        if let Some(row) =
            row(k, &toks, &actions).map_err(|e| ParseError(format!("line {n}: {e}")))?
        {
            rows.push(row);
        }
    }
    let kind =
        kind.ok_or_else(|| ParseError("no survey lines (total_size/ost/mdt) found".into()))?;
    Ok(Summary { kind, title, rows })
}

/// One line's row, or None when it has no test figures (ENOMEM, Too much
/// buffer space, a short line). A key whose value is not a number
/// (`thr 2O`), or a figure that is not a finite number (`inf`, `NaN`),
/// is an error naming it: a line is never dropped in silence.
fn row(k: Kind, t: &[&str], actions: &[String]) -> Result<Option<Row>, String> {
    let get = |key: &str| -> Result<Option<u64>, String> {
        match t.iter().position(|x| *x == key).map(|i| t.get(i + 1)) {
            None | Some(None) => Ok(None),
            Some(Some(v)) => number(v)
                .map(Some)
                .ok_or_else(|| format!("{key} {v}: not a whole number")),
        }
    };
    let keys = match k {
        Kind::Disk => [get("rsz")?, get("crg")?, get("thr")?],
        Kind::Obdfilter => [get("rsz")?, get("obj")?, get("thr")?],
        Kind::Mds => [Some(0), get("dir")?, get("thr")?],
    };
    let [Some(rsz_kb), Some(series), Some(thr)] = keys else {
        return Ok(None);
    };
    let Some(rest) = t.get(k.prefix_tokens()..) else {
        return Ok(None);
    };
    let named = rest.iter().any(|tok| k.tests().contains(tok));
    let values = if k == Kind::Disk && !named {
        unnamed_disk_figures(rest, actions)
    } else {
        if let Some(other) = unknown_test(k, rest) {
            return Err(format!(
                "`{other}` is not a test of this survey (its tests: {}); a figure is never dropped in silence",
                k.tests().join(", ")
            ));
        }
        let mut values = Vec::new();
        for (i, tok) in rest.iter().enumerate() {
            if k.tests().contains(tok) {
                let v = rest.get(i + 1).and_then(|x| x.parse::<f64>().ok());
                values.push((tok.to_string(), v));
            }
        }
        values
    };
    let drawable = |x: f64| crate::canvas::drawable("y", x).is_ok();
    if let Some((name, Some(v))) = values.iter().find(|(_, v)| v.is_some_and(|x| !drawable(x))) {
        return Err(format!(
            "{name} {v}: not a finite number a chart can draw (at most {:e})",
            crate::canvas::MAX_DRAWN
        ));
    }
    Ok((!values.is_empty()).then_some(Row {
        rsz_kb,
        series,
        thr,
        values,
    }))
}

/// A word in a line's figures that names a test the survey does not
/// have: a word followed by a number, other than a test's own, the
/// brackets of a test's range and sgpdd's `MB/s N x SLOWEST = TOTAL`.
fn unknown_test<'a>(k: Kind, rest: &[&'a str]) -> Option<&'a str> {
    let number = |t: &str| t.parse::<f64>().is_ok();
    let ours = |t: &str| {
        k.tests().contains(&t)
            || matches!(t, "x" | "=" | "MB/s")
            || t.starts_with('[')
            || t.ends_with(']')
    };
    rest.windows(2)
        .find(|w| !number(w[0]) && !ours(w[0]) && number(w[1]))
        .map(|w| w[0])
}

/// The guide's sgpdd line names no action: each action is either
/// `BW MB/s N x SLOWEST = PRODUCT MB/s` or `FAILED`, in `actions` order.
fn unnamed_disk_figures(rest: &[&str], actions: &[String]) -> Vec<(String, Option<f64>)> {
    let mut values = Vec::new();
    let mut i = 0;
    while i < rest.len() && values.len() < actions.len() {
        let name = actions[values.len()].clone();
        if rest[i] == "FAILED" {
            values.push((name, None));
            i += 1;
        } else if let (Ok(v), Some(&"MB/s")) = (rest[i].parse::<f64>(), rest.get(i + 1)) {
            values.push((name, Some(v)));
            // BW MB/s N x SLOWEST = PRODUCT MB/s
            i += 8;
        } else {
            i += 1;
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kits_lines_parse() {
        let text = "Fri Sep 25 11:14:03 EDT 2015 Obdfilter-survey for case=disk from h\n\
            ost 10 sz 167772160K rsz 1024K obj   10 thr   10 write 10982.73 [ 601.97,2912.91] rewrite 15696.54 [1160.92,3450.85] read 12358.60 [ 938.96,2634.87] \n\
            ost  8 sz 67108864K rsz 1024 obj    8 thr    8 write  613.54             ERROR \n";
        let s = parse(text).unwrap();
        assert_eq!(s.kind, Kind::Obdfilter);
        assert_eq!(s.rows.len(), 2);
        assert_eq!(
            (s.rows[0].rsz_kb, s.rows[0].series, s.rows[0].thr),
            (1024, 10, 10)
        );
        assert_eq!(s.rows[0].values[1], ("rewrite".to_string(), Some(15696.54)));
        assert_eq!(s.rows[1].values, vec![("write".to_string(), Some(613.54))]);
    }

    #[test]
    fn disk_and_mds_lines_parse_and_failures_are_none() {
        let bad = parse("ost 1 sz 1K rsz 1024K obj 1 thr 2O write 300.0 [1,2]\n").unwrap_err();
        assert!(bad.0.contains("line 1: thr 2O"), "{bad}");
        let bad = parse("ost 1 sz 1K rsz 1024K obj 1 thr 1 write inf [1,2]\n").unwrap_err();
        assert!(bad.0.contains("not a finite number"), "{bad}");
        let bad = parse("ost 1 sz 1K rsz ../../x obj 1 thr 1 write 3 [1,2]\n").unwrap_err();
        assert!(bad.0.contains("rsz ../../x"), "{bad}");
        let d = parse("h\ntotal_size  8192K rsz  256 crg     2 thr     4 write FAILED read  180.45 MB/s     2 x  90.00 =  180.00 MB/s \ntotal_size 8192K rsz 256 crg 4 thr 4 ENOMEM\n").unwrap();
        assert_eq!(d.kind, Kind::Disk);
        assert_eq!(d.rows.len(), 1);
        assert_eq!(
            d.rows[0].values,
            vec![("write".into(), None), ("read".into(), Some(180.45))]
        );
        let m = parse("h\nmdt 1 file  100000 dir    4 thr    4 create 5652.05 [ 999.01,46940.48] destroy             ERROR \n").unwrap();
        assert_eq!((m.kind, m.rows[0].series), (Kind::Mds, 4));
        assert_eq!(m.rows[0].values[1], ("destroy".into(), None));
        assert!(parse("just a title\n").is_err());
    }

    #[test]
    fn a_test_the_survey_does_not_have_is_an_error_not_dropped() {
        let bad = parse("h\nmdt 1 file 100 dir 1 thr 1 create 5652.05 [ 999.01,46940.48] bogus 1.0 [1.0,1.0] destroy 5797.79 [   0.00,52951.55]\n").unwrap_err();
        assert!(bad.0.contains("line 2: `bogus` is not a test"), "{bad}");
        let bad = parse("ost 1 sz 1K rsz 1024K obj 1 thr 1 write 3 [1,2] ../../../tmp/x 4 [1,2]\n")
            .unwrap_err();
        assert!(bad.0.contains("`../../../tmp/x`"), "{bad}");
    }

    #[test]
    fn the_guides_sgpdd_line_parses_without_a_header() {
        // As seed 002 prints it: over two lines, no header, no names.
        let d = parse("total_size 8388608K rsz 1024 thr 1 crg 1 180.45 MB/s 1 x 180.50 \\\n        = 180.50 MB/s\n").unwrap();
        assert_eq!((d.kind, d.title.as_str()), (Kind::Disk, ""));
        assert_eq!(
            (d.rows[0].rsz_kb, d.rows[0].series, d.rows[0].thr),
            (1024, 1, 1)
        );
        assert_eq!(d.rows[0].values, vec![("write".into(), Some(180.45))]);
        let two = parse("h actions: read write\ntotal_size 16K rsz 4 thr 2 crg 1 FAILED 9.50 MB/s 1 x 9.00 = 9.00 MB/s\n").unwrap();
        assert_eq!(
            two.rows[0].values,
            vec![("read".into(), None), ("write".into(), Some(9.5))]
        );
    }
}
