//! The terminal's tables: every limit (layer, figure, limit, the point
//! where it was found, how its curve ended, against the layer below, and
//! the baseline %), then each layer's expectations and verdict.

use super::{baseline_text, below_text, limit_text};
use crate::store::table;
use iolab_qualify::verdict::{num, Verdict};

/// Both tables, and a last line naming the first failed layer.
pub fn render(v: &Verdict, baseline: bool) -> String {
    let mut head = vec!["layer", "figure", "limit", "at", "curve", "vs layer below"];
    if baseline {
        head.push("baseline");
    }
    let mut rows = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    for l in &v.layers {
        for (i, lim) in l.limits.iter().enumerate() {
            let short = lim
                .name
                .split_once('.')
                .map_or(lim.name.as_str(), |(_, f)| f);
            let mut r = vec![
                if i == 0 {
                    l.layer.to_string()
                } else {
                    String::new()
                },
                short.to_string(),
                limit_text(lim),
                lim.at.clone(),
                lim.end.clone(),
                below_text(lim),
            ];
            if baseline {
                r.push(baseline_text(lim));
            }
            rows.push(r);
        }
        for (i, m) in l.missing.iter().enumerate() {
            // A layer with no limit at all is named on its first row.
            let first = i == 0 && l.limits.is_empty();
            rows.push(vec![
                if first {
                    l.layer.to_string()
                } else {
                    String::new()
                },
                m.split_once('.').map_or(m.as_str(), |(_, f)| f).to_string(),
                "no result".into(),
            ]);
        }
    }
    let mut out = table(&rows);
    out.push('\n');
    out.push_str(&verdicts(v));
    out
}

/// Each layer's verdict and expectations.
pub fn verdicts(v: &Verdict) -> String {
    let mut rows = vec![["layer", "verdict", "expectation", "judged"]
        .map(String::from)
        .to_vec()];
    for l in &v.layers {
        let verdict = match l.passed() {
            true => "pass".to_string(),
            false => "FAIL".to_string(),
        };
        if l.expectations.is_empty() {
            rows.push(vec![
                l.layer.to_string(),
                verdict.clone(),
                "(none)".into(),
                String::new(),
            ]);
        }
        for (i, c) in l.expectations.iter().enumerate() {
            let judged = match &c.result {
                Ok(e) => format!(
                    "{} vs {}: {}",
                    num(e.left),
                    num(e.right),
                    if e.holds { "holds" } else { "fails" }
                ),
                Err(e) => format!("cannot judge: {e}"),
            };
            rows.push(vec![
                if i == 0 {
                    l.layer.to_string()
                } else {
                    String::new()
                },
                if i == 0 {
                    verdict.clone()
                } else {
                    String::new()
                },
                c.text.clone(),
                judged,
            ]);
        }
    }
    let mut out = table(&rows);
    if let Some((layer, why)) = v.failed() {
        out.push_str(&format!("\nlayer {layer} failed: {why}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use iolab_qualify::layer::Layer;
    use iolab_qualify::verdict::{LayerResult, Verdict};

    /// A layer that gave no result names itself on its `no result` row.
    #[test]
    fn a_layer_with_no_result_is_named() {
        let v = Verdict {
            label: "x".into(),
            layers: vec![LayerResult {
                layer: Layer::Metadata,
                limits: vec![],
                missing: vec!["metadata.create".into(), "metadata.stat".into()],
                failed_repeats: 0,
                empty: vec![],
                expectations: vec![],
            }],
        };
        let out = super::render(&v, false);
        let rows: Vec<&str> = out.lines().filter(|l| l.contains("no result")).collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert!(rows[0].trim_start().starts_with("metadata"), "{out}");
        assert!(!rows[1].trim_start().starts_with("metadata "), "{out}");
    }
}
