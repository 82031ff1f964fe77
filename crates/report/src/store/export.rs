//! `iolab results export`: a run as its JSON envelope or its figures as
//! CSV; a series as JSON (points, repeats, spreads) or CSV (one row per
//! point and figure: the mean over repeats and its spread).

use super::pretty::Pretty;
use iolab_store::{RunRecord, Series};
use serde_json::json;
use std::io::{self, Write};

/// Rows as CSV text, each value quoted when it holds a comma, a quote
/// or a newline (the csv crate, RFC 4180).
fn csv_text(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing into memory cannot fail; a row that somehow did is left out
    // rather than the whole export.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(&r);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A run's envelope as the tool wrote it, pretty, into `w`: `r`'s
/// fields, then the payload that `payload` writes (compact, as the store
/// keeps it, e.g. `Store::write_payload`), re-indented as it streams
/// through ([`Pretty`]): a long run's payload is never whole in memory.
pub fn write_run_json(
    r: &RunRecord,
    w: &mut dyn Write,
    payload: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut head = r.envelope.clone();
    head.payload = serde_json::Value::Null;
    let text = head.to_json();
    // The payload is the envelope's last field: its value is spliced in.
    let Some(fields) = text.strip_suffix("null\n}\n") else {
        return Err(io::Error::other(format!(
            "run {}: its envelope could not be written",
            r.row.id
        )));
    };
    w.write_all(fields.as_bytes())?;
    let mut pretty = Pretty::new(&mut *w, 1);
    payload(&mut pretty)?;
    pretty.finish()?;
    w.write_all(b"\n}\n")
}

/// A run's figures: one row per figure.
pub fn run_csv(r: &RunRecord) -> String {
    let header = [
        "run", "tool", "scope", "phase", "metric", "unit", "value", "n", "std_dev", "min", "max",
    ];
    let rows = r
        .figures
        .iter()
        .map(|f| {
            vec![
                r.row.id.to_string(),
                r.row.tool.clone(),
                f.scope.clone(),
                f.phase.clone(),
                f.metric.clone(),
                f.unit.clone(),
                f.stat.mean.to_string(),
                f.stat.n.to_string(),
                f.stat.std_dev.to_string(),
                f.stat.min.to_string(),
                f.stat.max.to_string(),
            ]
        })
        .collect();
    csv_text(&header, rows)
}

/// A series: its rows, each point's axes, repeats and spreads.
pub fn series_json(s: &Series) -> String {
    let measures = s.measures();
    let points: Vec<_> = s
        .points
        .iter()
        .map(|p| {
            let figures: Vec<_> = measures
                .iter()
                .filter_map(|(ph, m, u)| {
                    p.spread(ph, m)
                        .map(|sp| json!({"phase": ph, "metric": m, "unit": u, "spread": sp}))
                })
                .collect();
            json!({"key": p.key, "line": p.line, "x": p.x, "axes": p.axes,
                   "figures": figures, "runs": p.runs})
        })
        .collect();
    let doc = json!({"series": s.info, "points": points});
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// A series as CSV: one row per point and figure.
pub fn series_csv(s: &Series) -> String {
    let header = [
        "series", "point", "line", "x", "phase", "metric", "unit", "repeats", "mean", "std_dev",
        "min", "max",
    ];
    let mut rows = Vec::new();
    for p in &s.points {
        for (ph, m, u) in s.measures() {
            let Some(sp) = p.spread(&ph, &m) else {
                continue;
            };
            rows.push(vec![
                s.info.label.clone(),
                p.key.clone(),
                p.line.clone(),
                p.x.to_string(),
                ph,
                m,
                u,
                sp.n.to_string(),
                sp.mean.to_string(),
                sp.std_dev.to_string(),
                sp.min.to_string(),
                sp.max.to_string(),
            ]);
        }
    }
    csv_text(&header, rows)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn values_with_commas_and_quotes_are_quoted_not_rewritten() {
        let text = csv_text(
            &["a", "b"],
            vec![
                vec!["x,y".into(), "say \"hi\"".into()],
                vec!["1".into(), "2".into()],
            ],
        );
        assert_eq!(text, "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n1,2\n");
    }
}
