//! `iolab results list`: the series, then every run.

use super::{seconds, table, when};
use iolab_store::{RunRow, SeriesRow};

/// The listing as text.
pub fn render(series: &[SeriesRow], runs: &[RunRow]) -> String {
    let mut out = String::new();
    if !series.is_empty() {
        let mut rows = vec![vec![
            "series".to_string(),
            "tool".into(),
            "points".into(),
            "runs".into(),
            "created".into(),
        ]];
        for s in series {
            rows.push(vec![
                s.label.clone(),
                s.tool.clone(),
                s.points.to_string(),
                s.runs.to_string(),
                when(s.created_unix_ns),
            ]);
        }
        out.push_str(&table(&rows));
        out.push('\n');
    }
    let mut rows = vec![vec![
        "id".to_string(),
        "started".into(),
        "seconds".into(),
        "tool".into(),
        "outcome".into(),
        "host".into(),
        "series / point / repeat".into(),
        "command line".into(),
    ]];
    for r in runs {
        let at = match (&r.series, &r.point, r.repeat) {
            (Some(s), Some(p), Some(n)) => format!("{s} / {p} / {n}"),
            _ => "-".into(),
        };
        rows.push(vec![
            r.id.to_string(),
            when(r.started_unix_ns),
            format!("{:.1}", seconds(r.started_unix_ns, r.finished_unix_ns)),
            r.tool.clone(),
            r.outcome.clone(),
            r.hostname.clone(),
            at,
            r.command_line.clone(),
        ]);
    }
    if runs.is_empty() {
        out.push_str("no runs recorded\n");
    } else {
        out.push_str(&table(&rows));
    }
    out
}
