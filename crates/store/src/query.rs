//! Reading: runs (a listing, or one run with its envelope and figures)
//! and series (their points, each point's repeats and figures).

use crate::{Figure, Spread, Store, StoreError};
use iolab_results::{Envelope, Environment, Tool};
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;
use serde_json::Value;

/// One line of the run listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// The run's id in the store.
    pub id: i64,
    /// The tool (`mdtest`).
    pub tool: String,
    /// iolab's version that ran it.
    pub tool_version: String,
    /// The command line.
    pub command_line: String,
    /// The host (rank 0's under MPI).
    pub hostname: String,
    /// Start, Unix nanoseconds.
    pub started_unix_ns: u64,
    /// End, Unix nanoseconds.
    pub finished_unix_ns: u64,
    /// How it ended (`completed`, `error`, ...).
    pub outcome: String,
    /// The series it belongs to, if a sweep ran it.
    pub series: Option<String>,
    /// Its point in that series.
    pub point: Option<String>,
    /// Its repeat number at that point.
    pub repeat: Option<u32>,
    /// Whether `--stats` samples were recorded with it.
    pub has_stats: bool,
}

/// One run in full.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// The listing's fields.
    pub row: RunRow,
    /// When it was recorded, Unix nanoseconds.
    pub recorded_unix_ns: u64,
    /// The results envelope as the tool wrote it, but for its payload
    /// (`null` here: a long run's is large; [`Store::write_payload`]
    /// writes it out).
    pub envelope: Envelope<Value, Value>,
    /// Its headline figures.
    pub figures: Vec<Figure>,
}

/// One line of the series listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    /// Its id.
    pub id: i64,
    /// Its label.
    pub label: String,
    /// The tool swept.
    pub tool: String,
    /// The plan as written.
    pub plan: String,
    /// The chart's x-axis label.
    pub x_label: String,
    /// Created, Unix nanoseconds.
    pub created_unix_ns: u64,
    /// Points in the plan.
    pub points: u32,
    /// Runs recorded (every repeat, failed ones included).
    pub runs: u32,
}

/// A series with its points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The listing's fields.
    pub info: SeriesRow,
    /// Its points in plan order.
    pub points: Vec<Point>,
}

/// One point of a series and its recorded repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// Its id.
    pub id: i64,
    /// Order in the plan.
    pub idx: u32,
    /// Its axes' values as text.
    pub key: String,
    /// The values of the axes off the x axis ('' when none).
    pub line: String,
    /// Its x.
    pub x: f64,
    /// Every axis' value.
    pub axes: Value,
    /// Its repeats, in order.
    pub runs: Vec<PointRun>,
}

/// One repeat of a point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointRun {
    /// The run's id.
    pub run_id: i64,
    /// Repeat number (from 1).
    pub repeat: u32,
    /// How it ended.
    pub outcome: String,
    /// Its figures, each of the run's inner points (scope `tasks=2`)
    /// named `PHASE SCOPE` with the empty scope ([`point_figure`]).
    pub figures: Vec<Figure>,
}

/// (phase, metric, unit) in first-seen order.
pub type Measure = (String, String, String);

fn push_measures(out: &mut Vec<Measure>, figs: &[Figure]) {
    for f in figs.iter().filter(|f| f.scope.is_empty()) {
        let m = (f.phase.clone(), f.metric.clone(), f.unit.clone());
        if !out.contains(&m) {
            out.push(m);
        }
    }
}

/// A figure of a sweep's repeat as a figure of its point: a run with
/// inner points (mdtest's `-f/-l` task counts, an lst run's clients and
/// concurrencies, a survey's thread counts) states one figure per inner
/// point, scoped (`tasks=2`); each is a figure of the point of its own,
/// `file_create tasks=2`, spread over the repeats, charted and compared
/// as any other. (The point's figures were the empty-scope ones only: a
/// series of such runs showed "no completed repeat" beside its runs.)
fn point_figure(mut f: Figure) -> Figure {
    if !f.scope.is_empty() {
        f.phase = format!("{} {}", f.phase, f.scope);
        f.scope.clear();
    }
    f
}

impl Point {
    /// The spread over the completed repeats of one figure (see
    /// [`PointRun::figures`]); `None` when no repeat has it.
    pub fn spread(&self, phase: &str, metric: &str) -> Option<Spread> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| crate::counts(&r.outcome))
            .flat_map(|r| &r.figures)
            .filter(|f| f.scope.is_empty() && f.phase == phase && f.metric == metric)
            .map(|f| f.stat.mean)
            .collect();
        Spread::of(&values)
    }

    /// Repeats that gave results ([`crate::counts`]).
    pub fn completed(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| crate::counts(&r.outcome))
            .count()
    }
}

impl Series {
    /// Every (phase, metric, unit) any point measured.
    pub fn measures(&self) -> Vec<Measure> {
        let mut out = Vec::new();
        for r in self.points.iter().flat_map(|p| &p.runs) {
            push_measures(&mut out, &r.figures);
        }
        out
    }

    /// The distinct lines, in plan order.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.points {
            if !out.contains(&p.line) {
                out.push(p.line.clone());
            }
        }
        out
    }
}

const RUN_COLUMNS: &str =
    "r.id, r.tool, r.tool_version, r.command_line, r.hostname, r.started_unix_ns,
    r.finished_unix_ns, r.outcome, s.label, p.key, r.repeat, r.stats_json IS NOT NULL
    FROM runs r LEFT JOIN points p ON r.point_id = p.id LEFT JOIN series s ON p.series_id = s.id";

fn run_row(r: &Row) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        tool: r.get(1)?,
        tool_version: r.get(2)?,
        command_line: r.get(3)?,
        hostname: r.get(4)?,
        started_unix_ns: r.get::<_, i64>(5)? as u64,
        finished_unix_ns: r.get::<_, i64>(6)? as u64,
        outcome: r.get(7)?,
        series: r.get(8)?,
        point: r.get(9)?,
        repeat: r.get(10)?,
        has_stats: r.get(11)?,
    })
}

fn figure_row(r: &Row) -> rusqlite::Result<Figure> {
    Ok(Figure {
        phase: r.get(0)?,
        metric: r.get(1)?,
        unit: r.get(2)?,
        scope: r.get(3)?,
        stat: Spread {
            mean: r.get(4)?,
            n: r.get(5)?,
            std_dev: r.get(6)?,
            min: r.get(7)?,
            max: r.get(8)?,
        },
    })
}

fn series_row(r: &Row) -> rusqlite::Result<SeriesRow> {
    Ok(SeriesRow {
        id: r.get(0)?,
        label: r.get(1)?,
        tool: r.get(2)?,
        plan: r.get(3)?,
        x_label: r.get(4)?,
        created_unix_ns: r.get::<_, i64>(5)? as u64,
        points: r.get(6)?,
        runs: r.get(7)?,
    })
}

const SERIES_COLUMNS: &str = "s.id, s.label, s.tool, s.plan, s.x_label, s.created_unix_ns,
    (SELECT count(*) FROM points p WHERE p.series_id = s.id),
    (SELECT count(*) FROM runs r JOIN points p ON r.point_id = p.id WHERE p.series_id = s.id)
    FROM series s";

impl Store {
    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(&format!("SELECT {RUN_COLUMNS} ORDER BY r.id"))?;
        let rows = st.query_map([], run_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A run's figures, in the order they were recorded.
    pub fn figures(&self, run_id: i64) -> Result<Vec<Figure>, StoreError> {
        let mut st = self.conn.prepare_cached(
            "SELECT phase, metric, unit, scope, value, n, std_dev, min, max FROM figures
             WHERE run_id = ?1 ORDER BY rowid",
        )?;
        let rows = st.query_map([run_id], figure_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One run: its envelope rebuilt from the columns as the tool wrote
    /// it, all but the payload ([`Store::write_payload`]), and its figures.
    pub fn run(&self, id: i64) -> Result<RunRecord, StoreError> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} WHERE r.id = ?1"),
                [id],
                run_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound(format!("no run {id} in {}", self.path)))?;
        let (recorded, envelope) = self.conn.query_row(
            "SELECT recorded_unix_ns, schema, envelope, compatible_with, outcome_json, config_json,
                environment_json, notes_json, stats_json FROM runs WHERE id = ?1",
            [id],
            |r| {
                let texts: Vec<Option<String>> =
                    (4..9).map(|i| r.get(i)).collect::<Result<_, _>>()?;
                Ok((
                    r.get::<_, i64>(0)?,
                    (
                        r.get::<_, String>(1)?,
                        r.get::<_, u32>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        texts,
                    ),
                ))
            },
        )?;
        let mut envelope = rebuild(&row, envelope)?;
        let figures = self.figures(id)?;
        // The envelope states its figures (a document written before they
        // were stated gets the ones the store read from its payload).
        envelope.figures = figures.clone();
        Ok(RunRecord {
            figures,
            row,
            recorded_unix_ns: recorded as u64,
            envelope,
        })
    }

    /// Writes run `id`'s payload to `w` as the tool wrote it (compact
    /// JSON), a part at a time: a payload recorded in parts
    /// ([`Store::record_streamed`]) is never whole in memory.
    pub fn write_payload(&self, id: i64, w: &mut dyn std::io::Write) -> Result<(), StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT payload_json FROM runs WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        let text =
            text.ok_or_else(|| StoreError::NotFound(format!("no run {id} in {}", self.path)))?;
        // A version 1 store has no parts (and no table for them).
        if !text.is_empty() || self.version < 2 {
            return w.write_all(text.as_bytes()).map_err(StoreError::Payload);
        }
        let mut st = self
            .conn
            .prepare("SELECT part FROM payload_parts WHERE run_id = ?1 ORDER BY seq")?;
        let mut rows = st.query([id])?;
        while let Some(row) = rows.next()? {
            let part = row.get_ref(0)?.as_blob().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, e.into())
            })?;
            w.write_all(part).map_err(StoreError::Payload)?;
        }
        Ok(())
    }

    /// Every series, oldest first.
    pub fn series_list(&self) -> Result<Vec<SeriesRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(&format!("SELECT {SERIES_COLUMNS} ORDER BY s.id"))?;
        let rows = st.query_map([], series_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The series labelled `label`, with every point and repeat.
    pub fn series(&self, label: &str) -> Result<Series, StoreError> {
        let info = self
            .conn
            .query_row(
                &format!("SELECT {SERIES_COLUMNS} WHERE s.label = ?1"),
                [label],
                series_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound(format!("no series '{label}' in {}", self.path)))?;
        let mut st = self.conn.prepare(
            "SELECT id, idx, key, line, x, axes FROM points WHERE series_id = ?1 ORDER BY idx, id",
        )?;
        let rows = st.query_map([info.id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, f64>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        let mut points = Vec::new();
        for row in rows {
            let (id, idx, key, line, x, axes) = row?;
            points.push(Point {
                id,
                idx,
                key,
                line,
                x,
                axes: serde_json::from_str(&axes)?,
                runs: self.point_runs(id)?,
            });
        }
        Ok(Series { info, points })
    }

    fn point_runs(&self, point_id: i64) -> Result<Vec<PointRun>, StoreError> {
        let mut st = self.conn.prepare_cached(
            "SELECT id, repeat, outcome FROM runs WHERE point_id = ?1 ORDER BY repeat, id",
        )?;
        let rows = st.query_map(params![point_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (run_id, repeat, outcome) = row?;
            out.push(PointRun {
                run_id,
                repeat,
                outcome,
                figures: self
                    .figures(run_id)?
                    .into_iter()
                    .map(point_figure)
                    .collect(),
            });
        }
        Ok(out)
    }
}

/// The columns of `runs` that hold the envelope: schema, envelope
/// version, compatible_with, then the JSON texts (outcome, config,
/// environment, notes, stats).
type EnvelopeColumns = (String, u32, Option<String>, Vec<Option<String>>);

fn rebuild(
    row: &RunRow,
    (schema, envelope, compat, texts): EnvelopeColumns,
) -> Result<Envelope<Value, Value>, StoreError> {
    let json = |i: usize| -> Result<Value, StoreError> {
        match &texts[i] {
            Some(t) => Ok(serde_json::from_str(t)?),
            None => Ok(Value::Null),
        }
    };
    let environment: Environment = serde_json::from_value(json(2)?)?;
    Ok(Envelope {
        schema,
        envelope,
        tool: Tool {
            name: row.tool.clone(),
            version: row.tool_version.clone(),
            compatible_with: compat,
        },
        command_line: row.command_line.clone(),
        // The store keeps no run id column (yet): a live stream is
        // matched to the document it came with.
        run_id: None,
        started_unix_ns: row.started_unix_ns,
        finished_unix_ns: row.finished_unix_ns,
        config: json(1)?,
        environment,
        outcome: serde_json::from_value(json(0)?)?,
        notes: serde_json::from_value(json(3)?)?,
        stats: texts[4].as_deref().map(serde_json::from_str).transpose()?,
        figures: Vec::new(),
        payload: Value::Null,
    })
}
