//! `iolab results export`: a run as its JSON envelope or its figures as
//! CSV; a series as JSON (points, repeats, spreads) or CSV (one row per
//! point and figure: the mean over repeats and its spread).

use iolab_store::{RunRecord, Series};
use serde_json::json;

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

/// A run's envelope, as the tool wrote it.
pub fn run_json(r: &RunRecord) -> String {
    r.envelope.to_json()
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
