//! Comparing two runs or two series, figure by figure.
//!
//! Figures are matched by point (a series' point key; a run's figure
//! scope), phase and metric. For each pair the ratio is B's mean over
//! A's. The difference counts only when it is larger than the spread of
//! the values behind the means: |mean B - mean A| > sd A + sd B (sample
//! standard deviations of the repeats, or of a run's iterations or
//! passes). Then it is an improvement or a regression depending on
//! whether the unit is better high (rates) or low (times). With a single
//! value on both sides there is no spread to judge by, and the verdict
//! says so.

use crate::{Figure, Series, Spread};
use serde::Serialize;

/// What a difference means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better by more than the spread.
    Improvement,
    /// B is worse by more than the spread.
    Regression,
    /// The difference is within the spread.
    WithinSpread,
    /// One value on each side: no spread to judge by.
    NoSpread,
}

impl Verdict {
    /// The word the report prints.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::WithinSpread => "within spread",
            Verdict::NoSpread => "no spread (1 value each)",
        }
    }
}

/// One matched figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The point (key or scope; '' for a run's own figure).
    pub point: String,
    /// Phase.
    pub phase: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// A's values.
    pub a: Spread,
    /// B's values.
    pub b: Spread,
    /// B's mean / A's mean (NaN when A's mean is 0).
    pub ratio: f64,
    /// Whether the difference counts.
    pub verdict: Verdict,
}

/// A comparison of B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// A's name (run id or series label).
    pub a: String,
    /// B's name.
    pub b: String,
    /// Matched figures.
    pub rows: Vec<Row>,
    /// Points only A has.
    pub only_a: Vec<String>,
    /// Points only B has.
    pub only_b: Vec<String>,
}

impl Comparison {
    /// How many rows have this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }
}

/// The verdict for A -> B.
pub fn verdict(a: &Spread, b: &Spread, higher_is_better: bool) -> Verdict {
    if a.n < 2 && b.n < 2 {
        return Verdict::NoSpread;
    }
    let diff = b.mean - a.mean;
    if diff.abs() <= a.std_dev + b.std_dev {
        return Verdict::WithinSpread;
    }
    match (diff > 0.0) == higher_is_better {
        true => Verdict::Improvement,
        false => Verdict::Regression,
    }
}

fn row(point: &str, phase: &str, metric: &str, unit: &str, a: Spread, b: Spread) -> Row {
    Row {
        point: point.to_string(),
        phase: phase.to_string(),
        metric: metric.to_string(),
        unit: unit.to_string(),
        ratio: if a.mean != 0.0 {
            b.mean / a.mean
        } else {
            f64::NAN
        },
        verdict: verdict(&a, &b, Figure::higher_is_better(unit)),
        a,
        b,
    }
}

/// Two series, point by point (points matched by key).
pub fn series(a: &Series, b: &Series) -> Comparison {
    let mut c = Comparison {
        a: a.info.label.clone(),
        b: b.info.label.clone(),
        rows: Vec::new(),
        only_a: Vec::new(),
        only_b: Vec::new(),
    };
    let measures = a.measures();
    for pa in &a.points {
        let Some(pb) = b.points.iter().find(|p| p.key == pa.key) else {
            c.only_a.push(pa.key.clone());
            continue;
        };
        for (phase, metric, unit) in &measures {
            if let (Some(sa), Some(sb)) = (pa.spread(phase, metric), pb.spread(phase, metric)) {
                c.rows.push(row(&pa.key, phase, metric, unit, sa, sb));
            }
        }
    }
    c.only_b = b
        .points
        .iter()
        .filter(|p| !a.points.iter().any(|q| q.key == p.key))
        .map(|p| p.key.clone())
        .collect();
    c
}

/// Two runs, figure by figure (matched by scope, phase and metric).
pub fn runs(a_name: &str, a: &[Figure], b_name: &str, b: &[Figure]) -> Comparison {
    let same =
        |x: &Figure, y: &Figure| x.scope == y.scope && x.phase == y.phase && x.metric == y.metric;
    let mut c = Comparison {
        a: a_name.to_string(),
        b: b_name.to_string(),
        rows: Vec::new(),
        only_a: Vec::new(),
        only_b: Vec::new(),
    };
    for fa in a {
        match b.iter().find(|fb| same(fa, fb)) {
            Some(fb) => c.rows.push(row(
                &fa.scope, &fa.phase, &fa.metric, &fa.unit, fa.stat, fb.stat,
            )),
            None => c.only_a.push(
                format!("{} {} {}", fa.scope, fa.phase, fa.metric)
                    .trim()
                    .to_string(),
            ),
        }
    }
    c.only_b = b
        .iter()
        .filter(|fb| !a.iter().any(|fa| same(fa, fb)))
        .map(|f| {
            format!("{} {} {}", f.scope, f.phase, f.metric)
                .trim()
                .to_string()
        })
        .collect();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(values: &[f64]) -> Spread {
        Spread::of(values).unwrap()
    }

    #[test]
    fn verdicts_weigh_the_difference_against_the_spread() {
        let a = s(&[100.0, 102.0, 98.0]);
        assert_eq!(
            verdict(&a, &s(&[150.0, 151.0, 149.0]), true),
            Verdict::Improvement
        );
        assert_eq!(
            verdict(&a, &s(&[50.0, 51.0, 49.0]), true),
            Verdict::Regression
        );
        assert_eq!(
            verdict(&a, &s(&[101.0, 103.0, 99.0]), true),
            Verdict::WithinSpread
        );
        // Times: lower is better.
        assert_eq!(
            verdict(&a, &s(&[50.0, 51.0, 49.0]), false),
            Verdict::Improvement
        );
        assert_eq!(verdict(&s(&[1.0]), &s(&[2.0]), true), Verdict::NoSpread);
    }

    #[test]
    fn runs_match_figures_by_scope_phase_and_metric() {
        let f = |phase: &str, v: f64| Figure {
            phase: phase.into(),
            metric: "rate".into(),
            unit: "ops/s".into(),
            scope: String::new(),
            stat: Spread {
                n: 3,
                mean: v,
                min: v - 1.0,
                max: v + 1.0,
                std_dev: 1.0,
            },
        };
        let c = runs(
            "1",
            &[f("file_create", 100.0), f("file_stat", 10.0)],
            "2",
            &[f("file_create", 200.0)],
        );
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].ratio, 2.0);
        assert_eq!(c.rows[0].verdict, Verdict::Improvement);
        assert_eq!(c.only_a, ["file_stat rate"]);
    }
}
