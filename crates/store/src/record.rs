//! Writing: a run (from its envelope), a series and its points. Each
//! write is one immediate transaction, so a reader never sees a run
//! without its figures and two writers wait for each other (busy
//! timeout) instead of failing.

use crate::{figures, Store, StoreError};
use iolab_results::Envelope;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde_json::Value;

/// Where a run belongs in a sweep: the point and the repeat number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribution {
    /// The point's id ([`Store::point`]).
    pub point_id: i64,
    /// 1-based repeat number.
    pub repeat: u32,
}

/// A sweep's series as it is created.
#[derive(Debug, Clone)]
pub struct NewSeries<'a> {
    /// Its label (unique in the store).
    pub label: &'a str,
    /// The tool it runs.
    pub tool: &'a str,
    /// The plan as the user wrote it (kept for the report).
    pub plan: &'a str,
    /// What identifies the measurement (tool, options, axes): a rerun
    /// resumes only a series with the same key.
    pub plan_key: &'a str,
    /// The x axis' label for charts.
    pub x_label: &'a str,
}

/// One point of a series.
#[derive(Debug, Clone)]
pub struct NewPoint<'a> {
    /// Order in the plan.
    pub idx: u32,
    /// Its axes' values as text (`ranks=2 tasks=4 dir=shared`), unique in
    /// the series.
    pub key: &'a str,
    /// The values of the axes that are not on the chart's x axis: points
    /// with the same line are one line of a chart.
    pub line: &'a str,
    /// Its position on the chart's x axis.
    pub x: f64,
    /// Every axis' value, as a JSON object.
    pub axes: &'a Value,
}

fn now_ns() -> i64 {
    iolab_core::clock::wall_ns() as i64
}

impl Store {
    /// Records one run and its figures; returns its id.
    pub fn record(
        &mut self,
        doc: &Envelope<Value, Value>,
        at: Option<Attribution>,
    ) -> Result<i64, StoreError> {
        // The engine's own figures; a payload is read only for a
        // document that has none (written before figures were stated).
        let figs = match doc.figures.is_empty() {
            true => figures::extract(&doc.tool.name, &doc.config, &doc.payload),
            false => doc.figures.clone(),
        };
        let outcome = serde_json::to_value(&doc.outcome)?;
        let status = outcome
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let stats = doc.stats.as_ref().map(serde_json::to_string).transpose()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (point_id, repeat, recorded_unix_ns, schema, envelope, tool, tool_version,
                compatible_with, command_line, hostname, started_unix_ns, finished_unix_ns, outcome,
                outcome_json, config_json, environment_json, notes_json, stats_json, payload_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
            params![
                at.map(|a| a.point_id),
                at.map(|a| a.repeat),
                now_ns(),
                doc.schema,
                doc.envelope,
                doc.tool.name,
                doc.tool.version,
                doc.tool.compatible_with,
                doc.command_line,
                doc.environment.host.hostname,
                doc.started_unix_ns as i64,
                doc.finished_unix_ns as i64,
                status,
                outcome.to_string(),
                doc.config.to_string(),
                serde_json::to_string(&doc.environment)?,
                serde_json::to_string(&doc.notes)?,
                stats,
                doc.payload.to_string(),
            ],
        )?;
        let id = tx.last_insert_rowid();
        for f in &figs {
            tx.execute(
                "INSERT INTO figures (run_id, phase, metric, unit, scope, value, n, std_dev, min, max)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    id,
                    f.phase,
                    f.metric,
                    f.unit,
                    f.scope,
                    f.stat.mean,
                    f.stat.n,
                    f.stat.std_dev,
                    f.stat.min,
                    f.stat.max
                ],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// The series `s.label`, created if new. An existing series is
    /// resumed only when its plan key is the same.
    pub fn series_for(&mut self, s: &NewSeries) -> Result<i64, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found: Option<(i64, String)> = tx
            .query_row(
                "SELECT id, plan_key FROM series WHERE label = ?1",
                [s.label],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let id = match found {
            Some((id, key)) if key == s.plan_key => id,
            Some(_) => {
                return Err(StoreError::PlanMismatch {
                    label: s.label.to_string(),
                })
            }
            None => {
                tx.execute(
                    "INSERT INTO series (label, tool, plan, plan_key, x_label, created_unix_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![s.label, s.tool, s.plan, s.plan_key, s.x_label, now_ns()],
                )?;
                tx.last_insert_rowid()
            }
        };
        tx.commit()?;
        Ok(id)
    }

    /// The point `p` of series `series`, created if new; its id.
    pub fn point(&mut self, series: i64, p: &NewPoint) -> Result<i64, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR IGNORE INTO points (series_id, idx, key, line, x, axes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![series, p.idx, p.key, p.line, p.x, p.axes.to_string()],
        )?;
        let id = tx.query_row(
            "SELECT id FROM points WHERE series_id = ?1 AND key = ?2",
            params![series, p.key],
            |r| r.get(0),
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// The repeats of a point that gave results ([`crate::counts`]): what
    /// a resumed sweep skips.
    pub fn completed_repeats(&self, point_id: i64) -> Result<Vec<u32>, StoreError> {
        let mut st = self.conn.prepare(
            "SELECT DISTINCT repeat FROM runs WHERE point_id = ?1 AND outcome IN ('completed', 'time_limit') ORDER BY repeat",
        )?;
        let rows = st.query_map([point_id], |r| r.get(0))?;
        Ok(rows.collect::<Result<Vec<u32>, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Figure;
    use iolab_core::Outcome;

    /// The store takes the figures an engine states in its envelope and
    /// reads no payload for them.
    #[test]
    fn figures_stated_in_the_envelope_are_the_ones_recorded() {
        let dir = std::env::temp_dir().join(format!("iolab-store-fig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut st = Store::open(&dir.join("s.sqlite")).unwrap();
        let mut doc = Envelope::new(
            "iolab.any/1",
            "a tool the store has no payload reader for",
            "x",
            Value::Null,
            iolab_results::Environment::default(),
            Outcome::Completed,
            Value::Null,
        );
        doc.figures = vec![Figure {
            phase: "copy".into(),
            metric: "bandwidth".into(),
            unit: "MB/s".into(),
            scope: String::new(),
            stat: iolab_results::Spread::one(42.0),
        }];
        let parsed = iolab_results::parse_any(&doc.to_json()).unwrap();
        let id = st.record(&parsed, None).unwrap();
        assert_eq!(st.figures(id).unwrap(), doc.figures);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn series_resume_by_plan_key_and_repeats_count_when_they_gave_results() {
        let dir = std::env::temp_dir().join(format!("iolab-store-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut st = Store::open(&dir.join("s.sqlite")).unwrap();
        let new = |key| NewSeries {
            label: "a",
            tool: "xdd",
            plan: "",
            plan_key: key,
            x_label: "x",
        };
        let id = st.series_for(&new("k1")).unwrap();
        assert_eq!(st.series_for(&new("k1")).unwrap(), id);
        assert!(matches!(
            st.series_for(&new("k2")),
            Err(StoreError::PlanMismatch { .. })
        ));
        let axes = serde_json::json!({"n": 1});
        let p = NewPoint {
            idx: 0,
            key: "n=1",
            line: "",
            x: 1.0,
            axes: &axes,
        };
        let pid = st.point(id, &p).unwrap();
        assert_eq!(st.point(id, &p).unwrap(), pid);
        let env = iolab_results::Environment::default();
        for (repeat, outcome) in [
            (1, Outcome::Completed),
            (2, Outcome::TimeLimit { limit_s: 1.0 }),
            (3, Outcome::Interrupted),
        ] {
            let doc = Envelope::new(
                "iolab.xdd/2",
                "xdd",
                "x",
                Value::Null,
                env.clone(),
                outcome,
                Value::Null,
            );
            let doc = iolab_results::parse_any(&doc.to_json()).unwrap();
            st.record(
                &doc,
                Some(Attribution {
                    point_id: pid,
                    repeat,
                }),
            )
            .unwrap();
        }
        assert_eq!(st.completed_repeats(pid).unwrap(), [1, 2]);
        let s = st.series("a").unwrap();
        assert_eq!(
            (
                s.points.len(),
                s.points[0].runs.len(),
                s.points[0].completed()
            ),
            (1, 3, 2)
        );
        drop(st);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
