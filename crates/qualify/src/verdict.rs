//! From measured curves to the verdict: each figure's limit (its best
//! point, and where its curve ended), its efficiency against the layer
//! below, the plan's expectations, and per layer pass or fail. Pure:
//! the measured points come in as data (from the store, or a test).

use crate::curves::{Curves, FigureSpec};
use crate::expr::{Evaluated, Expectation};
use crate::knee::Stop;
use crate::layer::Layer;
use crate::plan::Plan;
use crate::units::{self, Base};
use iolab_results::Spread;
use serde::Serialize;

/// One measured point of a curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredPoint {
    /// Its key (`tasks=4`, `nodes=2 tasks=4`).
    pub key: String,
    /// Its line (the axes off x: `nodes=2`, or empty).
    pub line: String,
    /// Its x.
    pub x: f64,
    /// The client nodes it ran on.
    pub nodes: u32,
    /// Each (phase, metric): the spread over its completed repeats.
    pub figures: Vec<(String, String, Spread)>,
    /// Repeats that completed.
    pub completed: u32,
    /// Repeats that failed.
    pub failed: u32,
    /// Its runs completed but moved nothing (every figure 0): no result.
    pub empty: bool,
}

/// How one line of a curve ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineEnd {
    /// The line.
    pub line: String,
    /// Why it ended.
    pub stop: Stop,
    /// The key of the point the stop names (flattened at, failed at),
    /// or of the cap.
    pub key: String,
}

/// A curve as measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    /// Its points, in the order measured.
    pub points: Vec<MeasuredPoint>,
    /// How each line ended.
    pub ends: Vec<LineEnd>,
}

/// A figure against the one of the layer below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    /// The figure below.
    pub against: String,
    /// This figure over that one (per client node where they differ).
    pub ratio: f64,
}

/// This qualification's limit against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Against {
    /// The baseline's limit.
    pub base: Spread,
    /// This one's mean as a percentage of the baseline's.
    pub percent: f64,
    /// The two differ by more than their spread: no repeat of one came
    /// within the range of the other's repeats (never with a single
    /// repeat on either side: no spread to judge by).
    pub flagged: bool,
}

/// A figure's limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    /// Its name.
    pub name: String,
    /// Its layer.
    pub layer: Layer,
    /// Its unit (canonical for its kind).
    pub unit: &'static str,
    /// The best point's repeats, in that unit.
    pub value: Spread,
    /// The best point's key.
    pub at: String,
    /// The client nodes of the best point.
    pub nodes: u32,
    /// How the best point's line ended (`flat after tasks=2`).
    pub end: String,
    /// Against the layer below.
    pub efficiency: Vec<Efficiency>,
    /// Against the baseline, when given.
    pub baseline: Option<Against>,
}

/// An expectation and what it gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    /// As written.
    pub text: String,
    /// Its sides and whether it holds, or why it could not be judged.
    pub result: Result<Evaluated, String>,
}

/// A layer's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerResult {
    /// The layer.
    pub layer: Layer,
    /// Its figures' limits.
    pub limits: Vec<Limit>,
    /// Figures no point gave.
    pub missing: Vec<String>,
    /// Repeats that failed.
    pub failed_repeats: u32,
    /// Points whose runs completed but moved nothing (`curve point`).
    pub empty: Vec<String>,
    /// Its expectations.
    pub expectations: Vec<Checked>,
}

impl LayerResult {
    /// Whether it passed: every run completed, every figure measured,
    /// every expectation held.
    pub fn passed(&self) -> bool {
        self.failure().is_none()
    }

    /// Why it failed, naming the figure: None when it passed.
    pub fn failure(&self) -> Option<String> {
        for c in &self.expectations {
            match &c.result {
                Err(e) => return Some(format!("{}: cannot be judged: {e}", c.text)),
                Ok(v) if !v.holds => {
                    return Some(format!(
                        "{} does not hold ({} against {})",
                        c.text,
                        num(v.left),
                        num(v.right)
                    ))
                }
                Ok(_) => {}
            }
        }
        if let Some(p) = self.empty.first() {
            return Some(format!("{p}: its runs completed but moved nothing (shorter than the tool's start-up? lengthen them, e.g. network.duration_s)"));
        }
        if let Some(m) = self.missing.first() {
            return Some(format!(
                "{m}: no point gave a result (every run failed, or moved nothing)"
            ));
        }
        (self.failed_repeats > 0)
            .then(|| format!("{} runs failed (rerun to retry them)", self.failed_repeats))
    }
}

/// A number as the verdicts print it: 4 significant digits.
pub fn num(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 || a == 0.0 => format!("{v:.0}"),
        a if a >= 100.0 => format!("{v:.1}"),
        a if a >= 10.0 => format!("{v:.2}"),
        a if a >= 1.0 => format!("{v:.3}"),
        _ => format!("{v:.4}"),
    }
}

/// The whole verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The plan's label.
    pub label: String,
    /// Each layer, bottom-up.
    pub layers: Vec<LayerResult>,
}

impl Verdict {
    /// The first layer that failed and why.
    pub fn failed(&self) -> Option<(Layer, String)> {
        self.layers
            .iter()
            .find_map(|l| l.failure().map(|f| (l.layer, f)))
    }

    /// Every limit, bottom-up.
    pub fn limits(&self) -> impl Iterator<Item = &Limit> {
        self.layers.iter().flat_map(|l| &l.limits)
    }

    /// The limit named `name`.
    pub fn limit(&self, name: &str) -> Option<&Limit> {
        self.limits().find(|l| l.name == name)
    }
}

fn scaled(s: &Spread, k: f64) -> Spread {
    Spread {
        n: s.n,
        mean: s.mean * k,
        min: s.min * k,
        max: s.max * k,
        std_dev: s.std_dev * k,
    }
}

/// The limit of figure `f` on its curve, if any point measured it.
fn limit(f: &FigureSpec, m: &Measured) -> Option<Limit> {
    let best = m
        .points
        .iter()
        .filter_map(|p| {
            p.figures
                .iter()
                .find(|(ph, me, _)| *ph == f.phase && *me == f.metric)
                .map(|(_, _, s)| (p, s))
        })
        .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))?;
    let (p, s) = best;
    let end = m
        .ends
        .iter()
        .find(|e| e.line == p.line)
        .map(|e| match e.stop {
            Stop::Flattened { .. } => format!("flat after {}", e.key),
            Stop::Cap => format!("cap {}", e.key),
            Stop::Failed { .. } => format!("failed at {}", e.key),
        });
    Some(Limit {
        name: f.name.clone(),
        layer: f.layer,
        unit: f.kind.unit(),
        value: scaled(s, f.scale),
        at: p.key.clone(),
        nodes: p.nodes,
        end: end.unwrap_or_else(|| "not finished".into()),
        efficiency: Vec::new(),
        baseline: None,
    })
}

/// The figures below `name` it is judged against, and whether per
/// client node: data against the network's brw and the devices, metadata
/// against the network's ping.
fn below(name: &str) -> Vec<(String, bool)> {
    let Some((layer, fig)) = name.split_once('.') else {
        return Vec::new();
    };
    let op = fig.split('_').next().unwrap_or("");
    match layer {
        "data" => vec![
            (format!("network.brw_{op}"), true),
            (format!("devices.{op}"), false),
        ],
        "metadata" => vec![("network.ping".to_string(), true)],
        _ => Vec::new(),
    }
}

/// The value of a name (figure or best-of alias, without suffix) in its
/// canonical unit, from the limits found.
fn base_value(curves: &Curves, limits: &[Limit], name: &str) -> Option<Base> {
    let of = |n: &str| -> Option<(f64, &FigureSpec, &Limit)> {
        let spec = curves.figure(n)?;
        let l = limits.iter().find(|l| l.name == n)?;
        Some((l.value.mean, spec, l))
    };
    let (value, spec, _) = match curves.aliases.iter().find(|a| a.name == name) {
        Some(a) => {
            a.of.iter()
                .filter_map(|n| of(n))
                .max_by(|x, y| x.0.total_cmp(&y.0))?
        }
        None => of(name)?,
    };
    Some(Base {
        value,
        kind: spec.kind,
        bytes_per_op: spec.bytes_per_op,
    })
}

/// The limit a name stands for (an alias: its best member).
fn limit_of<'a>(curves: &Curves, limits: &'a [Limit], name: &str) -> Option<&'a Limit> {
    let members: Vec<&str> = match curves.aliases.iter().find(|a| a.name == name) {
        Some(a) => a.of.iter().map(String::as_str).collect(),
        None => vec![name],
    };
    limits
        .iter()
        .filter(|l| members.contains(&l.name.as_str()))
        .max_by(|a, b| a.value.mean.total_cmp(&b.value.mean))
}

fn efficiencies(curves: &Curves, limits: &mut [Limit]) {
    let all = limits.to_vec();
    for l in limits.iter_mut() {
        for (against, per_node) in below(&l.name) {
            let Some(b) = limit_of(curves, &all, &against) else {
                continue;
            };
            let spec_kind = curves.figure(&b.name).map(|f| f.kind);
            let same = curves.figure(&l.name).map(|f| f.kind) == spec_kind;
            if !same || b.value.mean <= 0.0 {
                continue;
            }
            let scale = if per_node {
                l.nodes as f64 / b.nodes.max(1) as f64
            } else {
                1.0
            };
            l.efficiency.push(Efficiency {
                against,
                ratio: l.value.mean / (b.value.mean * scale),
            });
        }
    }
}

/// The verdict on what was measured: `measured[i]` is curve i's (absent
/// for a curve not run).
pub fn judge(plan: &Plan, curves: &Curves, measured: &[Option<Measured>]) -> Verdict {
    let mut limits: Vec<Limit> = curves
        .figures
        .iter()
        .filter_map(|f| measured.get(f.curve)?.as_ref().and_then(|m| limit(f, m)))
        .collect();
    efficiencies(curves, &mut limits);
    let lookup = |n: &str| -> Result<f64, String> {
        units::resolve(n, &|b| base_value(curves, &limits, b))
            .map(|(v, _)| v)
            .map_err(|e| e.to_string())
    };
    let layers = plan
        .layers
        .iter()
        .map(|&layer| {
            let failed_repeats = curves
                .curves
                .iter()
                .enumerate()
                .filter(|(_, c)| c.layer == layer)
                .filter_map(|(i, _)| measured.get(i)?.as_ref())
                .flat_map(|m| &m.points)
                .map(|p| p.failed)
                .sum();
            let empty = curves
                .curves
                .iter()
                .enumerate()
                .filter(|(_, c)| c.layer == layer)
                .filter_map(|(i, c)| Some((c, measured.get(i)?.as_ref()?)))
                .flat_map(|(c, m)| {
                    m.points
                        .iter()
                        .filter(|p| p.empty)
                        .map(move |p| format!("{} {}", c.label, p.key))
                })
                .collect();
            LayerResult {
                layer,
                empty,
                limits: limits
                    .iter()
                    .filter(|l| l.layer == layer)
                    .cloned()
                    .collect(),
                missing: curves
                    .figures
                    .iter()
                    .filter(|f| f.layer == layer && !limits.iter().any(|l| l.name == f.name))
                    .map(|f| f.name.clone())
                    .collect(),
                failed_repeats,
                expectations: expectations(plan, layer)
                    .iter()
                    .map(|text| Checked {
                        text: text.clone(),
                        result: Expectation::parse(text)
                            .map_err(|e| e.to_string())
                            .and_then(|e| e.eval(&lookup).map_err(|e| e.to_string())),
                    })
                    .collect(),
            }
        })
        .collect();
    Verdict {
        label: plan.label.clone(),
        layers,
    }
}

/// The expectations the plan lists under `layer`.
pub fn expectations(plan: &Plan, layer: Layer) -> Vec<String> {
    match layer {
        Layer::Network => plan.network.expect.clone(),
        Layer::Devices => plan
            .devices
            .as_ref()
            .map(|d| d.expect.clone())
            .unwrap_or_default(),
        Layer::Data => plan.data.expect.clone(),
        Layer::Metadata => plan.metadata.expect.clone(),
    }
}

/// Checks every expectation before anything runs: it parses, each name
/// is a figure this plan measures (with or without a unit suffix), and
/// it names a figure of the layer it is listed under.
pub fn check_expectations(plan: &Plan, curves: &Curves) -> Result<(), crate::QualifyError> {
    let known = |n: &str| -> Option<Base> {
        let spec = curves.figure(n).or_else(|| {
            let a = curves.aliases.iter().find(|a| a.name == n)?;
            curves.figure(a.of.first()?)
        })?;
        Some(Base {
            value: 1.0,
            kind: spec.kind,
            bytes_per_op: spec.bytes_per_op,
        })
    };
    for &layer in &plan.layers {
        for text in expectations(plan, layer) {
            let key = format!("{layer}.expect");
            let bad = |why: String| crate::QualifyError::Expect {
                key: key.clone(),
                why,
            };
            let e = Expectation::parse(&text).map_err(|e| bad(e.to_string()))?;
            for n in e.names() {
                units::resolve(n, &known).map_err(|m| {
                    bad(format!(
                        "'{text}': {m} (this plan measures: {})",
                        curves.names().join(", ")
                    ))
                })?;
            }
            if !e
                .names()
                .iter()
                .any(|n| n.starts_with(&format!("{layer}.")))
            {
                return Err(bad(format!(
                    "'{text}' names no {layer} figure: list it under the layer it judges"
                )));
            }
        }
    }
    for l in crate::layer::ALL.iter().filter(|l| !plan.runs(**l)) {
        if !expectations(plan, *l).is_empty() {
            return Err(crate::QualifyError::Expect {
                key: format!("{l}.expect"),
                why: format!("the {l} layer is not measured (layers = ...), so its expectations cannot be judged"),
            });
        }
    }
    Ok(())
}

/// Each limit against the baseline's limit of the same name.
pub fn against_baseline(now: &mut Verdict, base: &Verdict) {
    for l in now.layers.iter_mut().flat_map(|l| l.limits.iter_mut()) {
        if let Some(b) = base.limit(&l.name) {
            if b.value.mean > 0.0 {
                // One repeat on a side has no spread to judge by.
                let spread = l.value.n > 1 && b.value.n > 1;
                let flagged = spread && (l.value.min > b.value.max || l.value.max < b.value.min);
                l.baseline = Some(Against {
                    base: b.value,
                    percent: 100.0 * l.value.mean / b.value.mean,
                    flagged,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curves::curves;
    use crate::plan::{fill, Plan};

    fn plan(text: &str) -> Plan {
        let m = crate::machine::Machine::sample(2);
        fill(Plan::read(text).unwrap(), &m, None).unwrap()
    }

    fn spread(v: &[f64]) -> Spread {
        Spread::of(v).unwrap()
    }

    fn point(key: &str, x: f64, figs: &[(&str, &str, &[f64])]) -> MeasuredPoint {
        MeasuredPoint {
            key: key.into(),
            line: String::new(),
            x,
            nodes: 1,
            figures: figs
                .iter()
                .map(|(p, m, v)| (p.to_string(), m.to_string(), spread(v)))
                .collect(),
            completed: 3,
            failed: 0,
            empty: false,
        }
    }

    /// Network: brw write 1m only (1024 MiB/s at best = 1 GiB/s); data:
    /// write file-per-task only (at best 805.3 MB/s = 0.75 GiB/s).
    fn measured(c: &Curves) -> Vec<Option<Measured>> {
        let net = Measured {
            points: vec![
                point(
                    "concurrency=1",
                    1.0,
                    &[("brw write", "bandwidth", &[500.0, 510.0, 520.0])],
                ),
                point(
                    "concurrency=2",
                    2.0,
                    &[("brw write", "bandwidth", &[1000.0, 1024.0, 1048.0])],
                ),
                point(
                    "concurrency=4",
                    4.0,
                    &[("brw write", "bandwidth", &[1020.0, 1030.0, 1040.0])],
                ),
            ],
            ends: vec![LineEnd {
                line: String::new(),
                stop: Stop::Flattened { at: 1 },
                key: "concurrency=2".into(),
            }],
        };
        let data = Measured {
            points: vec![point(
                "tasks=1",
                1.0,
                &[("write", "bandwidth", &[805.306368, 805.306368])],
            )],
            ends: vec![LineEnd {
                line: String::new(),
                stop: Stop::Cap,
                key: "tasks=1".into(),
            }],
        };
        c.curves
            .iter()
            .map(|k| match k.label.as_str() {
                "network brw write 1m" => Some(net.clone()),
                "data write file-per-task" => Some(data.clone()),
                _ => None,
            })
            .collect()
    }

    const PLAN: &str = "layers = [\"network\", \"data\"]\n[network]\ntests = [\"brw write 1m\"]\n[data]\nmodes = [\"file-per-task\"]\n";

    #[test]
    fn limits_are_best_points_with_their_end() {
        let p = plan(PLAN);
        let c = curves(&p);
        let v = judge(&p, &c, &measured(&c));
        let net = v.limit("network.brw_write_1m").unwrap();
        assert_eq!(net.at, "concurrency=4");
        assert!((net.value.mean - 1030.0 / 1024.0).abs() < 1e-9);
        assert_eq!(net.end, "flat after concurrency=2");
        let data = v.limit("data.write_fpp").unwrap();
        assert!((data.value.mean - 0.75).abs() < 1e-6, "{}", data.value.mean);
        assert_eq!(data.efficiency[0].against, "network.brw_write");
        assert!((data.efficiency[0].ratio - 0.75 / (1030.0 / 1024.0)).abs() < 1e-6);
        // data read was not measured: missing, so the layer fails.
        assert_eq!(v.layers[1].missing, ["data.read_fpp"]);
        assert_eq!(v.failed().unwrap().0, Layer::Data);
        assert!(v.layers[0].passed());
    }

    #[test]
    fn expectations_judge_absolute_and_relative_figures() {
        let text = format!("{PLAN}expect = [\"data.write >= 0.8 * network.brw_write\"]\n").replace(
            "[network]\n",
            "[network]\nexpect = [\"network.brw_write_mib_s >= 1000\"]\n",
        );
        let p = plan(&text);
        let c = curves(&p);
        check_expectations(&p, &c).unwrap();
        let v = judge(&p, &c, &measured(&c));
        assert!(v.layers[0].passed());
        let fail = v.layers[1].failure().unwrap();
        assert!(
            fail.starts_with(
                "data.write >= 0.8 * network.brw_write does not hold (0.7500 against 0.8047)"
            ),
            "{fail}"
        );
    }

    #[test]
    fn expectations_are_checked_before_anything_runs() {
        let check = |e: &str| {
            let p = plan(&format!("{PLAN}expect = [\"{e}\"]"));
            check_expectations(&p, &curves(&p))
        };
        assert!(check("data.write_gib_s >= 1").is_ok());
        assert!(check("data.wrote >= 1")
            .unwrap_err()
            .to_string()
            .contains("data.wrote: no such figure"));
        assert!(check("data.write >=")
            .unwrap_err()
            .to_string()
            .contains("at character"));
        assert!(check("network.brw_write >= 1")
            .unwrap_err()
            .to_string()
            .contains("names no data figure"));
        assert!(check("data.write >= metadata.create")
            .unwrap_err()
            .to_string()
            .contains("no such figure"));
        let p = plan("layers = [\"network\"]\n[data]\nexpect = [\"data.write >= 1\"]");
        assert!(check_expectations(&p, &curves(&p))
            .unwrap_err()
            .to_string()
            .contains("not measured"));
    }

    #[test]
    fn the_baseline_flags_only_differences_beyond_the_spread() {
        let p = plan(PLAN);
        let c = curves(&p);
        let base = judge(&p, &c, &measured(&c));
        let mut same = base.clone();
        against_baseline(&mut same, &base);
        let b = same
            .limit("network.brw_write_1m")
            .unwrap()
            .baseline
            .clone()
            .unwrap();
        assert!((b.percent - 100.0).abs() < 1e-9 && !b.flagged);
        let mut m = measured(&c);
        if let Some(Some(net)) = m.iter_mut().find(|x| x.is_some()) {
            net.points[2].figures[0].2 = spread(&[2000.0, 2100.0, 2200.0]);
        }
        let mut faster = judge(&p, &c, &m);
        against_baseline(&mut faster, &base);
        let b = faster
            .limit("network.brw_write_1m")
            .unwrap()
            .baseline
            .clone()
            .unwrap();
        assert!(
            b.flagged && (b.percent - 2100.0 / 10.3).abs() < 1e-6,
            "{b:?}"
        );
        // data.write_fpp has 2 repeats in both; one repeat has no spread.
        let mut one = measured(&c);
        if let Some(Some(net)) = one.iter_mut().find(|x| x.is_some()) {
            net.points[2].figures[0].2 = spread(&[2000.0]);
        }
        let mut single = judge(&p, &c, &one);
        against_baseline(&mut single, &base);
        assert!(
            !single
                .limit("network.brw_write_1m")
                .unwrap()
                .baseline
                .clone()
                .unwrap()
                .flagged
        );
    }

    #[test]
    fn a_point_that_moved_nothing_fails_its_layer() {
        let p = plan(PLAN);
        let c = curves(&p);
        let mut m = measured(&c);
        if let Some(Some(net)) = m.iter_mut().find(|x| x.is_some()) {
            net.points[2].empty = true;
            net.points[2].figures.clear();
        }
        let v = judge(&p, &c, &m);
        let why = v.layers[0].failure().unwrap();
        assert!(
            why.starts_with(
                "network brw write 1m concurrency=4: its runs completed but moved nothing"
            ),
            "{why}"
        );
    }
}
