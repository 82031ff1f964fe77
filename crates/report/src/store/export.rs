//! `iolab results export`: a run as its JSON envelope or its figures as
//! CSV; a series as JSON (points, repeats, spreads) or CSV (one row per
//! point and figure: the mean over repeats and its spread).

use iolab_store::{RunRecord, Series};
use serde_json::json;

/// Quotes a CSV field when it needs it.
fn field(s: &str) -> String {
    match s.contains([',', '"', '\n']) {
        true => format!("\"{}\"", s.replace('"', "\"\"")),
        false => s.to_string(),
    }
}

/// A run's envelope, as the tool wrote it.
pub fn run_json(r: &RunRecord) -> String {
    r.envelope.to_json()
}

/// A run's figures: one row per figure.
pub fn run_csv(r: &RunRecord) -> String {
    let mut out = String::from("run,tool,scope,phase,metric,unit,value,n,std_dev,min,max\n");
    for f in &r.figures {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            r.row.id,
            field(&r.row.tool),
            field(&f.scope),
            field(&f.phase),
            field(&f.metric),
            field(&f.unit),
            f.stat.mean,
            f.stat.n,
            f.stat.std_dev,
            f.stat.min,
            f.stat.max
        ));
    }
    out
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
    let mut out =
        String::from("series,point,line,x,phase,metric,unit,repeats,mean,std_dev,min,max\n");
    for p in &s.points {
        for (ph, m, u) in s.measures() {
            let Some(sp) = p.spread(&ph, &m) else {
                continue;
            };
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                field(&s.info.label),
                field(&p.key),
                field(&p.line),
                p.x,
                field(&ph),
                field(&m),
                field(&u),
                sp.n,
                sp.mean,
                sp.std_dev,
                sp.min,
                sp.max
            ));
        }
    }
    out
}
