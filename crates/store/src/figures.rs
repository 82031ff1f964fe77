//! A run's headline figures: what the store indexes, charts draw and
//! comparisons weigh. Every tool states them in its envelope
//! (`Envelope::figures`; the binary's runner records them as stated, io500
//! and every survey case included) and the store takes those as they are:
//! no current document's payload is read for them. This module is for old
//! documents only, those without figures (written before tools stated
//! them, and imported from such an iolab): one function per tool reads
//! the payload as its JSON schema documents it (README's mdtest schema,
//! docs/xdd.md, docs/lst.md, docs/surveys.md, docs/io500.md); the full
//! payload stays in the store for everything else.
//!
//! | tool | phase | metric (unit) | value | spread (n, min, max, std dev) over |
//! | --- | --- | --- | --- | --- |
//! | mdtest | each summary phase (`file_create`...) | `rate` (ops/s) | mean over iterations | iterations |
//! | xdd | `read`, `write` | `bandwidth` (MB/s, 10^6 B/s), `iops` (ops/s) | the run's combined figures | passes (one target) |
//! | lst | `ping`, `brw read`, `brw write` | `rpc_rate` (RPC/s per client node), `bandwidth` (MiB/s per client node, brw) | the point's mean | repeats |
//! | io500 | each of the 12 scored phases (`ior-easy-write`...) | `score` (GiB/s or kIOPS) | the phase's score | - |
//! | survey | each test | `bandwidth` (MB/s) or `rate` (ops/s) | the line's figure | - |
//!
//! A run with several inner points (mdtest's `-f/-l/-s`, lst's sweeps, a
//! survey's thread counts) gives each point's figures a `scope`
//! (`tasks=4`); a run with one inner point has the empty scope, which is
//! what a sweep's charts use.

use crate::Spread;
use iolab_core::stats::Summary;
use serde_json::Value;

pub use iolab_results::Figure;

/// The figures of a document from `tool` with this payload and config.
pub fn extract(tool: &str, config: &Value, payload: &Value) -> Vec<Figure> {
    match tool {
        "mdtest" => mdtest(payload),
        "xdd" => xdd(payload),
        "lst" => lst(config, payload),
        t if t.starts_with("survey") => survey(payload),
        "io500" => io500(payload),
        _ => Vec::new(),
    }
}

fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn figure(phase: &str, metric: &str, unit: &str, scope: &str, s: &Summary) -> Figure {
    Figure {
        phase: phase.to_string(),
        metric: metric.to_string(),
        unit: unit.to_string(),
        scope: scope.to_string(),
        stat: Spread::from(s),
    }
}

/// mdtest: each test's summary rates (mean and std dev over iterations).
fn mdtest(payload: &Value) -> Vec<Figure> {
    let tests = list(payload, "tests");
    let mut out = Vec::new();
    for t in &tests {
        let scope = match tests.len() {
            1 => String::new(),
            _ => format!(
                "tasks={}",
                t.get("tasks").and_then(Value::as_u64).unwrap_or(0)
            ),
        };
        // Tests of many iterations keep the first ones only: the count
        // is then given apart.
        let n = t
            .get("iterations_count")
            .and_then(Value::as_u64)
            .unwrap_or(list(t, "iterations").len() as u64)
            .clamp(1, u64::from(u32::MAX)) as u32;
        for s in list(t, "summary") {
            let (Some(phase), Some(mean)) = (
                s.get("phase").and_then(Value::as_str),
                f64_at(&s, &["rate", "mean"]),
            ) else {
                continue;
            };
            let at = |k: &str| f64_at(&s, &["rate", k]).unwrap_or(mean);
            out.push(Figure {
                phase: phase.to_string(),
                metric: "rate".into(),
                unit: "ops/s".into(),
                scope: scope.clone(),
                stat: Spread {
                    n,
                    mean,
                    min: at("min"),
                    max: at("max"),
                    std_dev: f64_at(&s, &["rate", "std_dev"]).unwrap_or(0.0),
                },
            });
        }
    }
    out
}

/// io500: the 12 scored phases, each its score in its own unit.
fn io500(payload: &Value) -> Vec<Figure> {
    let mut out = Vec::new();
    for p in list(payload, "phases") {
        let (Some(name), Some(score), Some(unit)) = (
            p.get("name").and_then(Value::as_str),
            p.get("score").and_then(Value::as_f64),
            p.get("unit").and_then(Value::as_str),
        ) else {
            continue;
        };
        let mut s = Summary::default();
        s.add(score);
        out.push(figure(name, "score", unit, "", &s));
    }
    out
}

/// xdd: combined read and write bandwidth and IOPS; with one target, the
/// spread over its passes.
fn xdd(payload: &Value) -> Vec<Figure> {
    let Some(c) = payload.get("combined") else {
        return Vec::new();
    };
    let passes = list(payload, "passes");
    let per_pass = |key: &str| -> Spread {
        let one_target = passes.iter().all(|p| list(p, "targets").len() == 1);
        let values: Vec<f64> = match one_target && !passes.is_empty() {
            true => passes
                .iter()
                .filter_map(|p| f64_at(&list(p, "targets")[0], &["figures", key]))
                .collect(),
            false => Vec::new(),
        };
        let total = f64_at(c, &[key]).unwrap_or(0.0);
        let mut s = Spread::from(&Summary::of(&values));
        if s.n == 0 {
            s = Spread::one(total);
        }
        s.mean = total;
        s
    };
    let mut out = Vec::new();
    for op in ["read", "write"] {
        if f64_at(c, &[&format!("{op}_ops")]).unwrap_or(0.0) <= 0.0 {
            continue;
        }
        for (metric, unit, key) in [
            ("bandwidth", "MB/s", format!("{op}_bandwidth_mb_per_s")),
            ("iops", "ops/s", format!("{op}_iops")),
        ] {
            out.push(Figure {
                phase: op.to_string(),
                metric: metric.to_string(),
                unit: unit.to_string(),
                scope: String::new(),
                stat: per_pass(&key),
            });
        }
    }
    out
}

/// lst: the test's name as lst prints it.
fn lst_phase(config: &Value) -> String {
    let t = config.get("test").cloned().unwrap_or(Value::Null);
    match t.get("test").and_then(Value::as_str) {
        Some("brw") => format!("brw {}", t.get("op").and_then(Value::as_str).unwrap_or("?")),
        Some(name) => name.to_string(),
        None => "lst".to_string(),
    }
}

/// lst: per point, the client group's RPC rate (and bandwidth for brw),
/// spread over the point's repeats.
fn lst(config: &Value, payload: &Value) -> Vec<Figure> {
    let phase = lst_phase(config);
    let points = payload.as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for p in &points {
        let scope = match points.len() {
            1 => String::new(),
            _ => format!(
                "clients={},concurrency={}",
                p.get("clients").and_then(Value::as_u64).unwrap_or(0),
                p.get("concurrency").and_then(Value::as_u64).unwrap_or(0)
            ),
        };
        let runs = list(p, "runs");
        let of = |path: &[&str]| {
            let v: Vec<f64> = runs.iter().filter_map(|r| f64_at(r, path)).collect();
            Summary::of(&v)
        };
        out.push(figure(
            &phase,
            "rpc_rate",
            "RPC/s",
            &scope,
            &of(&["clients", "r_rpc_per_s", "avg"]),
        ));
        let bw_key = match phase.as_str() {
            "brw read" => Some("r_mib_per_s"),
            "brw write" => Some("w_mib_per_s"),
            _ => None,
        };
        if let Some(k) = bw_key {
            out.push(figure(
                &phase,
                "bandwidth",
                "MiB/s",
                &scope,
                &of(&["clients", k, "avg"]),
            ));
        }
    }
    out
}

/// The first figure of a survey test object: (metric, unit, value).
fn survey_value(o: &serde_json::Map<String, Value>) -> Option<(&'static str, &'static str, f64)> {
    if let Some(v) = o.get("mb_per_s").and_then(Value::as_f64) {
        return Some(("bandwidth", "MB/s", v));
    }
    o.get("ops_per_sec")
        .and_then(Value::as_f64)
        .map(|v| ("rate", "ops/s", v))
}

/// Every `{test, mb_per_s | ops_per_sec}` object under `v`.
fn survey_tests(v: &Value, out: &mut Vec<(String, &'static str, &'static str, f64)>) {
    match v {
        Value::Object(o) => {
            let test = o.get("test").and_then(Value::as_str);
            if let (Some(t), Some((m, u, x))) = (test, survey_value(o)) {
                out.push((t.to_string(), m, u, x));
                return;
            }
            o.values().for_each(|c| survey_tests(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| survey_tests(c, out)),
        _ => {}
    }
}

/// surveys: each line's tests; the scope names the line's counts.
fn survey(payload: &Value) -> Vec<Figure> {
    let points = list(payload, "points");
    let mut out = Vec::new();
    for p in &points {
        let scope = match (points.len(), p.as_object()) {
            (1, _) | (_, None) => String::new(),
            (_, Some(o)) => o
                .iter()
                .filter_map(|(k, v)| v.as_u64().map(|n| format!("{k}={n}")))
                .collect::<Vec<_>>()
                .join(","),
        };
        let mut tests = Vec::new();
        survey_tests(p, &mut tests);
        for (test, metric, unit, v) in tests {
            out.push(figure(&test, metric, unit, &scope, &Summary::of(&[v])));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mdtest_summary_rates_with_their_iteration_spread() {
        let p = json!({"tests": [{"tasks": 2, "iterations": [{}, {}],
            "summary": [{"phase": "file_create", "rate": {"mean": 100.0, "std_dev": 5.0}},
                        {"phase": "file_stat", "rate": {"mean": 300.0, "std_dev": 0.0}}]}]});
        let f = extract("mdtest", &Value::Null, &p);
        assert_eq!(f.len(), 2);
        assert_eq!(
            (
                f[0].phase.as_str(),
                f[0].stat.mean,
                f[0].stat.n,
                f[0].stat.std_dev
            ),
            ("file_create", 100.0, 2, 5.0)
        );
        assert_eq!(f[0].scope, "");
        let two = json!({"tests": [p["tests"][0].clone(), {"tasks": 4, "summary": [{"phase": "file_create", "rate": {"mean": 1.0}}]}]});
        let f = extract("mdtest", &Value::Null, &two);
        assert_eq!(f[0].scope, "tasks=2");
        assert_eq!(f[2].scope, "tasks=4");
    }

    #[test]
    fn xdd_reads_the_combined_figures_of_each_direction() {
        let p = json!({"combined": {"write_ops": 10, "read_ops": 0,
                "write_bandwidth_mb_per_s": 50.0, "write_iops": 400.0},
            "passes": [{"targets": [{"figures": {"write_bandwidth_mb_per_s": 40.0}}]},
                       {"targets": [{"figures": {"write_bandwidth_mb_per_s": 60.0}}]}]});
        let f = extract("xdd", &Value::Null, &p);
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].phase.as_str(), f[0].metric.as_str()),
            ("write", "bandwidth")
        );
        assert_eq!((f[0].stat.mean, f[0].stat.n), (50.0, 2));
        assert_eq!((f[0].stat.min, f[0].stat.max), (40.0, 60.0));
        assert!((f[0].stat.std_dev - 200f64.sqrt()).abs() < 1e-9);
        assert_eq!(f[1].metric, "iops");
    }

    #[test]
    fn lst_and_survey_figures() {
        let cfg = json!({"test": {"test": "brw", "op": "write", "size": 4096}});
        let pt = |c| {
            json!({"clients": c, "concurrency": 1, "runs": [
            {"clients": {"r_rpc_per_s": {"avg": 10.0}, "w_mib_per_s": {"avg": 2.0}}},
            {"clients": {"r_rpc_per_s": {"avg": 20.0}, "w_mib_per_s": {"avg": 4.0}}}]})
        };
        let f = extract("lst", &cfg, &json!([pt(1)]));
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].phase.as_str(), f[0].stat.mean, f[0].stat.n),
            ("brw write", 15.0, 2)
        );
        assert_eq!((f[1].metric.as_str(), f[1].stat.mean), ("bandwidth", 3.0));
        let f = extract("lst", &cfg, &json!([pt(1), pt(2)]));
        assert_eq!(f[2].scope, "clients=2,concurrency=1");
        let s = json!({"points": [{"thr": 1, "tests": [{"test": "create", "ops_per_sec": 5.0}]},
                                  {"thr": 2, "tests": [{"test": "create", "ops_per_sec": 9.0}]}]});
        let f = extract("survey mds", &Value::Null, &s);
        assert_eq!(f.len(), 2);
        assert_eq!((f[1].scope.as_str(), f[1].stat.mean), ("thr=2", 9.0));
    }
}
