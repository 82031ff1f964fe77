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
//! says so. What one side has and the other lacks (a point, a figure, a
//! point none of whose repeats completed) is listed, not left out: A's
//! missing in B is what a check for regressions must fail on.

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
    /// What only A has: points, figures of a point (`KEY: PHASE METRIC`),
    /// and points with no completed repeat in B.
    pub only_a: Vec<String>,
    /// What only B has, the same way.
    pub only_b: Vec<String>,
}

impl Comparison {
    /// How many rows have this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// Whether B falls short of A: a regression, or a point or figure of
    /// A that B lacks (B failed it, or measured it no more).
    pub fn regressed(&self) -> bool {
        self.count(Verdict::Regression) > 0 || !self.only_a.is_empty()
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

/// Two series, point by point (points matched by key), over every
/// figure either measured.
pub fn series(a: &Series, b: &Series) -> Comparison {
    let mut c = Comparison {
        a: a.info.label.clone(),
        b: b.info.label.clone(),
        rows: Vec::new(),
        only_a: Vec::new(),
        only_b: Vec::new(),
    };
    let mut measures = a.measures();
    for m in b.measures() {
        if !measures.contains(&m) {
            measures.push(m);
        }
    }
    for pa in &a.points {
        let Some(pb) = b.points.iter().find(|p| p.key == pa.key) else {
            c.only_a.push(pa.key.clone());
            continue;
        };
        let (mut in_a, mut in_b) = (Vec::new(), Vec::new());
        for (phase, metric, unit) in &measures {
            match (pa.spread(phase, metric), pb.spread(phase, metric)) {
                (Some(sa), Some(sb)) => c.rows.push(row(&pa.key, phase, metric, unit, sa, sb)),
                (Some(_), None) => in_a.push(format!("{phase} {metric}")),
                (None, Some(_)) => in_b.push(format!("{phase} {metric}")),
                (None, None) => {}
            }
        }
        c.only_a.extend(lacking(&pa.key, in_a, pb.completed(), "B"));
        c.only_b.extend(lacking(&pa.key, in_b, pa.completed(), "A"));
    }
    c.only_b.extend(
        b.points
            .iter()
            .filter(|p| !a.points.iter().any(|q| q.key == p.key))
            .map(|p| p.key.clone()),
    );
    c
}

/// What point `key` of one side has that the other lacks: its figures
/// `figs`, or, when the other side has no completed repeat of the point,
/// the point as a whole.
fn lacking(key: &str, figs: Vec<String>, other_completed: usize, other: &str) -> Option<String> {
    match (figs.is_empty(), other_completed) {
        (true, _) => None,
        (false, 0) => Some(format!("{key} (no completed repeat in {other})")),
        (false, _) => Some(format!("{key}: {}", figs.join(", "))),
    }
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
        assert!(c.regressed(), "a figure of A is missing in B");
    }

    fn point(key: &str, runs: &[(&str, &[(&str, f64)])]) -> crate::Point {
        crate::Point {
            id: 0,
            idx: 0,
            key: key.into(),
            line: String::new(),
            x: 1.0,
            axes: serde_json::Value::Null,
            runs: runs
                .iter()
                .enumerate()
                .map(|(i, (outcome, figs))| crate::PointRun {
                    run_id: i as i64,
                    repeat: i as u32 + 1,
                    outcome: outcome.to_string(),
                    figures: figs
                        .iter()
                        .map(|(phase, v)| Figure {
                            phase: phase.to_string(),
                            metric: "rate".into(),
                            unit: "ops/s".into(),
                            scope: String::new(),
                            stat: s(&[*v]),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    fn named(label: &str, points: Vec<crate::Point>) -> Series {
        Series {
            info: crate::SeriesRow {
                id: 0,
                label: label.into(),
                tool: "mdtest".into(),
                plan: String::new(),
                x_label: "x".into(),
                created_unix_ns: 0,
                points: points.len() as u32,
                runs: 0,
            },
            points,
        }
    }

    /// A point B failed, and a phase B lacks, vanished from the table:
    /// "3 improvements, 0 regressions" and exit 0 under
    /// --fail-on-regression, even with every repeat of B failed.
    #[test]
    fn what_one_series_lacks_is_listed_and_counts_against_b() {
        let good: &[(&str, f64)] = &[("create", 100.0), ("stat", 50.0)];
        let a = named(
            "a",
            vec![
                point("t=1", &[("completed", good), ("completed", good)]),
                point("t=2", &[("completed", good), ("completed", good)]),
            ],
        );
        let b = named(
            "b",
            vec![
                point(
                    "t=1",
                    &[("completed", &[("create", 100.0), ("remove", 9.0)])],
                ),
                point("t=2", &[("error", &[]), ("error", &[])]),
            ],
        );
        let c = series(&a, &b);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(
            c.only_a,
            ["t=1: stat rate", "t=2 (no completed repeat in B)"]
        );
        assert_eq!(c.only_b, ["t=1: remove rate"]);
        assert_eq!(c.count(Verdict::Regression), 0);
        assert!(c.regressed());
        // B as good as A everywhere, and more: no regression.
        let c = series(&a, &a);
        assert!(c.only_a.is_empty() && !c.regressed(), "{c:?}");
    }
}
