//! `iolab results show`: one run in full (facts, figures), or one series
//! (its plan and, per point, each figure's mean, spread and repeats).

use super::{clean, num, seconds, table, when};
use iolab_store::{Figure, RunRecord, Series};

/// A run: its facts, then its figures.
pub fn run(r: &RunRecord) -> String {
    let e = &r.envelope;
    let h = &e.environment.host;
    let mut facts = vec![
        ("run", r.row.id.to_string()),
        (
            "tool",
            format!(
                "{} (iolab {}, schema {})",
                e.tool.name, e.tool.version, e.schema
            ),
        ),
        ("command line", e.command_line.clone()),
        (
            "host",
            format!(
                "{} ({}, {}, {} CPUs, {} MiB)",
                h.hostname,
                h.kernel,
                h.arch,
                h.cpus,
                h.memory_bytes >> 20
            ),
        ),
        ("started", when(e.started_unix_ns)),
        (
            "finished",
            format!(
                "{} ({:.2} s)",
                when(e.finished_unix_ns),
                seconds(e.started_unix_ns, e.finished_unix_ns)
            ),
        ),
        ("outcome", e.outcome.to_string()),
    ];
    for f in &e.environment.filesystems {
        facts.push((
            "file system",
            format!(
                "{} on {} ({}, {})",
                f.path, f.mount_point, f.fs_type, f.source
            ),
        ));
    }
    if let (Some(s), Some(p), Some(n)) = (&r.row.series, &r.row.point, r.row.repeat) {
        facts.push(("series", format!("{s}, point {p}, repeat {n}")));
    }
    for n in &e.notes {
        facts.push(("note", n.clone()));
    }
    if let Some(s) = &e.stats {
        facts.push((
            "--stats",
            format!(
                "{} bytes of samples (results export {} --json)",
                s.to_string().len(),
                r.row.id
            ),
        ));
    }
    let mut out = String::new();
    for (k, v) in facts {
        out.push_str(&format!("{k:<13} {}\n", clean(&v)));
    }
    out.push('\n');
    out.push_str(&figures(&r.figures));
    out
}

/// A run's figures as a table.
pub fn figures(figs: &[Figure]) -> String {
    if figs.is_empty() {
        return "no figures\n".to_string();
    }
    let mut rows = vec![head(&[
        "scope", "phase", "metric", "unit", "value", "n", "std dev", "min", "max",
    ])];
    for f in figs {
        rows.push(vec![
            f.scope.clone(),
            f.phase.clone(),
            f.metric.clone(),
            f.unit.clone(),
            num(f.stat.mean),
            f.stat.n.to_string(),
            num(f.stat.std_dev),
            num(f.stat.min),
            num(f.stat.max),
        ]);
    }
    table(&rows)
}

fn head(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

/// A series: its plan, then per point and figure the mean over the
/// completed repeats with its spread.
pub fn series(s: &Series) -> String {
    let i = &s.info;
    let mut out = format!(
        "series {} ({}, {} points, {} runs, created {})\n\n",
        clean(&i.label),
        clean(&i.tool),
        i.points,
        i.runs,
        when(i.created_unix_ns)
    );
    out.push_str(&points(s));
    out.push_str("\nplan:\n");
    for l in i.plan.lines() {
        out.push_str(&format!("  {}\n", clean(l)));
    }
    out
}

/// The points table of a series (also what a sweep prints at its end).
pub fn points(s: &Series) -> String {
    let mut rows = vec![head(&[
        "point",
        &s.info.x_label,
        "phase",
        "metric",
        "mean",
        "std dev",
        "min",
        "max",
        "repeats",
        "runs",
    ])];
    let measures = s.measures();
    for p in &s.points {
        let runs: Vec<String> = p
            .runs
            .iter()
            .map(|r| match iolab_store::counts(&r.outcome) {
                true => r.run_id.to_string(),
                false => format!("{}({})", r.run_id, r.outcome),
            })
            .collect();
        let mut first = true;
        for (phase, metric, unit) in &measures {
            let Some(sp) = p.spread(phase, metric) else {
                continue;
            };
            rows.push(vec![
                if first { p.key.clone() } else { String::new() },
                if first { x(p.x) } else { String::new() },
                phase.clone(),
                format!("{metric} ({unit})"),
                num(sp.mean),
                num(sp.std_dev),
                num(sp.min),
                num(sp.max),
                sp.n.to_string(),
                if first { runs.join(",") } else { String::new() },
            ]);
            first = false;
        }
        if first {
            rows.push(vec![
                p.key.clone(),
                x(p.x),
                "-".into(),
                "(no completed repeat)".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "0".into(),
                runs.join(","),
            ]);
        }
    }
    table(&rows)
}

/// An x value: whole numbers as such.
fn x(v: f64) -> String {
    match v.fract() == 0.0 && v.abs() < 1e15 {
        true => format!("{}", v as i64),
        false => num(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_store::{Point, SeriesRow};

    /// A point whose every repeat failed shows its x as the other rows
    /// do: 2, not 2.00.
    #[test]
    fn a_failed_points_whole_x_is_printed_whole() {
        let s = Series {
            info: SeriesRow {
                id: 1,
                label: "l".into(),
                tool: "mdtest".into(),
                plan: String::new(),
                x_label: "ranks".into(),
                created_unix_ns: 0,
                points: 1,
                runs: 0,
            },
            points: vec![Point {
                id: 1,
                idx: 0,
                key: "ranks=2".into(),
                line: String::new(),
                x: 2.0,
                axes: serde_json::Value::Null,
                runs: Vec::new(),
            }],
        };
        let t = points(&s);
        let row = t.lines().find(|l| l.contains("ranks=2")).unwrap();
        assert!(row.contains(" 2 ") && !row.contains("2.00"), "{t}");
    }
}
