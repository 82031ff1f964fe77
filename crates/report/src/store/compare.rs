//! `iolab results compare A B`: per point and figure, A and B with their
//! spreads, the ratio B/A, and the verdict.

use super::{clean, num, table};
use iolab_store::compare::{Comparison, Verdict};

/// The comparison as text.
pub fn render(c: &Comparison) -> String {
    let mut rows = vec![[
        "point", "phase", "metric", "A mean", "A sd", "B mean", "B sd", "B/A", "verdict",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for r in &c.rows {
        rows.push(vec![
            if r.point.is_empty() {
                "-".into()
            } else {
                r.point.clone()
            },
            r.phase.clone(),
            format!("{} ({})", r.metric, r.unit),
            num(r.a.mean),
            num(r.a.std_dev),
            num(r.b.mean),
            num(r.b.std_dev),
            if r.ratio.is_finite() {
                format!("{:.3}", r.ratio)
            } else {
                "-".into()
            },
            r.verdict.word().to_string(),
        ]);
    }
    let mut out = format!("A: {}\nB: {}\n\n", clean(&c.a), clean(&c.b));
    out.push_str(&table(&rows));
    for (side, keys) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !keys.is_empty() {
            out.push_str(&format!("\nonly in {side}:\n"));
            for k in keys {
                out.push_str(&format!("  {}\n", clean(k)));
            }
        }
    }
    out.push_str(&format!(
        "\n{} improvements, {} regressions, {} within spread, {} without spread, {} only in A, {} only in B (a difference counts when it is larger than sd A + sd B)\n",
        c.count(Verdict::Improvement),
        c.count(Verdict::Regression),
        c.count(Verdict::WithinSpread),
        c.count(Verdict::NoSpread),
        c.only_a.len(),
        c.only_b.len()
    ));
    out
}
