//! Writing: a run (from its envelope), a series and its points. Each
//! write is one immediate transaction, so a reader never sees a run
//! without its figures and two writers wait for each other (busy
//! timeout) instead of failing.

use crate::{figures, Store, StoreError};
use iolab_results::Envelope;
use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;
use std::io::Write;

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

/// What recording a document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// A new run, with its id.
    New(i64),
    /// The same run was in the store already, as this id: nothing was
    /// recorded ([`Store::import_file`]).
    Already(i64),
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
        self.record_once(doc, at, false).map(Recorded::id)
    }

    /// [`Store::record`]; with `once`, nothing when the same run is in
    /// the store already (checked in the transaction that records it, so
    /// two processes importing one file at once record it once).
    fn record_once(
        &mut self,
        doc: &Envelope<Value, Value>,
        at: Option<Attribution>,
        once: bool,
    ) -> Result<Recorded, StoreError> {
        // The engine's own figures; a payload is read only for a
        // document that has none (written before figures were stated).
        let figs = match doc.figures.is_empty() {
            true => figures::extract(&doc.tool.name, &doc.config, &doc.payload),
            false => doc.figures.clone(),
        };
        let tx = match self.begin(doc, once, at)? {
            Ok(tx) => tx,
            Err(id) => return Ok(Recorded::Already(id)),
        };
        let id = insert_run(&tx, doc, &doc.payload.to_string(), at)?;
        insert_figures(&tx, id, &figs)?;
        tx.commit()?;
        Ok(Recorded::New(id))
    }

    /// The immediate transaction a run is recorded in; with `once`, the
    /// id of the same run instead when the store has it already.
    ///
    /// A repeat of a sweep's point (`at`) whose counted run is in the
    /// store already gives that run's id too: two sweeps of one plan on
    /// one store each found the repeat missing when they started, and
    /// the later would count it twice in the point's spread.
    fn begin(
        &mut self,
        head: &Envelope<Value, Value>,
        once: bool,
        at: Option<Attribution>,
    ) -> Result<Result<Transaction<'_>, i64>, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if once {
            if let Some(id) = same_run(&tx, head)? {
                return Ok(Err(id));
            }
        }
        if let Some(a) = at {
            if let Some(id) = counted_repeat(&tx, a)? {
                return Ok(Err(id));
            }
        }
        Ok(Ok(tx))
    }

    /// Records one run whose payload `fill` writes as it renders it (a
    /// long run's document is never whole in memory): the bytes go into
    /// the store in parts of [`PART_BYTES`] as they come. `head`'s
    /// payload is not read, and its figures are the ones recorded (none
    /// are read from a payload). Still one transaction: a `fill` that
    /// fails records nothing.
    pub fn record_streamed(
        &mut self,
        head: &Envelope<Value, Value>,
        at: Option<Attribution>,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<i64, StoreError> {
        self.record_streamed_once(head, at, false, fill)
            .map(Recorded::id)
    }

    /// [`Store::record_streamed`], once as [`Store::record_once`].
    fn record_streamed_once(
        &mut self,
        head: &Envelope<Value, Value>,
        at: Option<Attribution>,
        once: bool,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<Recorded, StoreError> {
        let tx = match self.begin(head, once, at)? {
            Ok(tx) => tx,
            Err(id) => return Ok(Recorded::Already(id)),
        };
        // '' is no JSON document: it marks a payload kept in parts.
        let id = insert_run(&tx, head, "", at)?;
        let mut parts = Parts {
            tx: &tx,
            run_id: id,
            seq: 0,
            buf: Vec::with_capacity(PART_BYTES),
            error: None,
        };
        let filled = fill(&mut parts).and_then(|()| parts.flush());
        if let Some(e) = parts.error.take() {
            return Err(StoreError::Sqlite(e));
        }
        filled.map_err(StoreError::Payload)?;
        insert_figures(&tx, id, &head.figures)?;
        tx.commit()?;
        Ok(Recorded::New(id))
    }

    /// Records the run whose document is the file at `path`, `head`
    /// being its envelope's fields as read from it
    /// ([`iolab_results::stream::read_head`], which checks the whole
    /// document): its payload is copied from the file into the store as
    /// it is read ([`Store::record_streamed`]), never whole in memory. A
    /// document that states no figures (from an iolab that did not) is
    /// read whole, for the store to find them in its payload.
    ///
    /// With `at`, a repeat whose counted run is in the store already
    /// (another sweep recorded it meanwhile) is not recorded again:
    /// [`Recorded::Already`] with that run's id.
    pub fn record_file(
        &mut self,
        path: &std::path::Path,
        head: &Envelope<Value, Value>,
        at: Option<Attribution>,
    ) -> Result<Recorded, StoreError> {
        self.record_file_once(path, head, at, false)
    }

    /// `iolab results import`: records the document file at `path` as
    /// [`Store::record_file`] does, unless the same run is in the store
    /// already. The same run is the same tool, host, command line, start
    /// and end (to the nanosecond), which no two runs share: a document
    /// imported twice, or exported from one store and imported back,
    /// is one run, whatever its formatting.
    pub fn import_file(
        &mut self,
        path: &std::path::Path,
        head: &Envelope<Value, Value>,
    ) -> Result<Recorded, StoreError> {
        self.record_file_once(path, head, None, true)
    }

    fn record_file_once(
        &mut self,
        path: &std::path::Path,
        head: &Envelope<Value, Value>,
        at: Option<Attribution>,
        once: bool,
    ) -> Result<Recorded, StoreError> {
        let open = || std::fs::File::open(path).map_err(StoreError::Payload);
        if head.figures.is_empty() {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut open()?, &mut text).map_err(StoreError::Payload)?;
            let doc = iolab_results::parse_any(&text)
                .map_err(|e| StoreError::Payload(std::io::Error::other(e.to_string())))?;
            return self.record_once(&doc, at, once);
        }
        let file = open()?;
        self.record_streamed_once(
            head,
            at,
            once,
            |w| match iolab_results::stream::copy_payload(file, w)? {
                true => Ok(()),
                false => Err(std::io::Error::other(format!(
                    "{}: no payload field",
                    path.display()
                ))),
            },
        )
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

    /// The mean wall time in seconds of the runs of a point that gave
    /// results ([`crate::counts`]), None without any: what a resumed
    /// sweep's estimate is made of.
    pub fn mean_run_seconds(&self, point_id: i64) -> Result<Option<f64>, StoreError> {
        Ok(self.conn.query_row(
            "SELECT avg(finished_unix_ns - started_unix_ns) / 1e9 FROM runs
             WHERE point_id = ?1 AND outcome IN ('completed', 'time_limit')",
            [point_id],
            |r| r.get(0),
        )?)
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

/// How many bytes of a streamed payload go in one row of
/// `payload_parts`: a document of 100 MB is 400 rows, and the part
/// being filled is all of it held in memory.
pub const PART_BYTES: usize = 256 << 10;

impl Recorded {
    /// The run's id, new or not.
    pub fn id(self) -> i64 {
        match self {
            Recorded::New(id) | Recorded::Already(id) => id,
        }
    }
}

/// The counted run ([`crate::counts`]) recorded for repeat `a.repeat` of
/// point `a.point_id`, if any.
fn counted_repeat(tx: &Transaction, a: Attribution) -> Result<Option<i64>, StoreError> {
    Ok(tx
        .query_row(
            "SELECT id FROM runs WHERE point_id = ?1 AND repeat = ?2
             AND outcome IN ('completed', 'time_limit') ORDER BY id LIMIT 1",
            params![a.point_id, a.repeat],
            |r| r.get(0),
        )
        .optional()?)
}

/// The run in the store that is `doc`'s run, if any (see
/// [`Store::import_file`]).
fn same_run(tx: &Transaction, doc: &Envelope<Value, Value>) -> Result<Option<i64>, StoreError> {
    Ok(tx
        .query_row(
            "SELECT id FROM runs WHERE started_unix_ns = ?1 AND finished_unix_ns = ?2
             AND hostname = ?3 AND tool = ?4 AND command_line = ?5 ORDER BY id LIMIT 1",
            params![
                doc.started_unix_ns as i64,
                doc.finished_unix_ns as i64,
                doc.environment.host.hostname,
                doc.tool.name,
                doc.command_line
            ],
            |r| r.get(0),
        )
        .optional()?)
}

/// Inserts the row of `runs` for `doc`, with `payload` as its payload
/// column; its id.
fn insert_run(
    tx: &Transaction,
    doc: &Envelope<Value, Value>,
    payload: &str,
    at: Option<Attribution>,
) -> Result<i64, StoreError> {
    let outcome = serde_json::to_value(&doc.outcome)?;
    let status = outcome
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let stats = doc.stats.as_ref().map(serde_json::to_string).transpose()?;
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
            payload,
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

fn insert_figures(tx: &Transaction, id: i64, figs: &[figures::Figure]) -> Result<(), StoreError> {
    let mut st = tx.prepare_cached(
        "INSERT INTO figures (run_id, phase, metric, unit, scope, value, n, std_dev, min, max)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for f in figs {
        st.execute(params![
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
        ])?;
    }
    Ok(())
}

/// A streamed payload on its way into `payload_parts`: bytes collect
/// up to [`PART_BYTES`], then go in as one row.
struct Parts<'t> {
    tx: &'t Transaction<'t>,
    run_id: i64,
    seq: i64,
    buf: Vec<u8>,
    /// The first insert that failed (the writer's caller is told an I/O
    /// error; the record returns this one).
    error: Option<rusqlite::Error>,
}

impl Parts<'_> {
    fn insert(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self
            .tx
            .prepare_cached("INSERT INTO payload_parts (run_id, seq, part) VALUES (?1, ?2, ?3)")
            .and_then(|mut st| st.execute(params![self.run_id, self.seq, &self.buf[..]]));
        match r {
            Ok(_) => {
                self.seq += 1;
                self.buf.clear();
                Ok(())
            }
            Err(e) => {
                let io = std::io::Error::other(e.to_string());
                self.error.get_or_insert(e);
                Err(io)
            }
        }
    }
}

impl Write for Parts<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = bytes.len().min(PART_BYTES - self.buf.len());
        self.buf.extend_from_slice(&bytes[..n]);
        if self.buf.len() == PART_BYTES {
            self.insert()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.insert()
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

    fn streamed_head() -> Envelope<Value, Value> {
        let mut head = Envelope::new(
            "iolab.xdd/2",
            "xdd",
            "iolab xdd -passes 3",
            serde_json::json!({"passes": 3}),
            iolab_results::Environment::default(),
            Outcome::Completed,
            Value::Null,
        );
        head.figures = vec![Figure {
            phase: "write".into(),
            metric: "bandwidth".into(),
            unit: "MB/s".into(),
            scope: String::new(),
            stat: iolab_results::Spread::one(7.0),
        }];
        head
    }

    /// A payload written in pieces (here three parts and a bit, in
    /// writes that straddle the parts' ends) is read back byte for byte,
    /// with the envelope's fields and figures.
    #[test]
    fn a_streamed_payload_is_kept_in_parts_and_read_back_whole() {
        let dir = std::env::temp_dir().join(format!("iolab-store-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut st = Store::open(&dir.join("s.sqlite")).unwrap();
        let pass = br#"{"pass":1,"figures":{"ops":12345,"bytes":4096}},"#;
        let n = 3 * PART_BYTES / pass.len() + 7;
        let mut want = b"{\"passes\":[".to_vec();
        for _ in 0..n {
            want.extend_from_slice(pass);
        }
        want.extend_from_slice(b"{}]}");
        let id = st
            .record_streamed(&streamed_head(), None, |w| {
                for chunk in want.chunks(4093) {
                    w.write_all(chunk)?;
                }
                Ok(())
            })
            .unwrap();
        let parts: i64 = st
            .conn
            .query_row(
                "SELECT count(*) FROM payload_parts WHERE run_id = ?1",
                [id],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(parts, 4);
        let mut got = Vec::new();
        st.write_payload(id, &mut got).unwrap();
        assert!(got == want, "{} bytes back of {}", got.len(), want.len());
        let run = st.run(id).unwrap();
        assert_eq!(run.envelope.command_line, "iolab xdd -passes 3");
        assert_eq!(run.envelope.config["passes"], 3);
        assert_eq!(run.figures, streamed_head().figures);
        drop(st);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A payload that cannot be rendered to its end records nothing: no
    /// run, no part, no figure (complete or absent).
    #[test]
    fn a_streamed_payload_that_fails_records_nothing() {
        let dir = std::env::temp_dir().join(format!("iolab-store-fail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut st = Store::open(&dir.join("s.sqlite")).unwrap();
        let e = st
            .record_streamed(&streamed_head(), None, |w| {
                w.write_all(&vec![b' '; PART_BYTES + 10])?;
                Err(std::io::Error::other("the pass log could not be read"))
            })
            .unwrap_err();
        assert!(matches!(e, StoreError::Payload(_)), "{e}");
        for table in ["runs", "payload_parts", "figures"] {
            let n: i64 = st
                .conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 0, "{table}");
        }
        drop(st);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A version 1 store (no payload parts) is read as it is by a reading
    /// command, left byte-identical, and migrated by the next record.
    #[test]
    fn a_version_one_store_is_read_without_migrating_then_migrated_by_a_record() {
        let dir = std::env::temp_dir().join(format!("iolab-store-v1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sqlite");
        {
            let mut c = rusqlite::Connection::open(&path).unwrap();
            crate::schema::migrate(&mut c, "s", &crate::schema::MIGRATIONS[..1]).unwrap();
            let mut st = Store {
                conn: c,
                path: "s".into(),
                version: 1,
                _quiet: None,
                file: None,
            };
            let mut doc = streamed_head();
            doc.payload = serde_json::json!({"passes": [{"pass": 1}]});
            st.record(&doc, None).unwrap();
            st.conn
                .pragma_update(None, "journal_mode", "DELETE")
                .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let st = Store::open_existing(&path).unwrap();
        let mut got = Vec::new();
        st.write_payload(1, &mut got).unwrap();
        assert_eq!(got, br#"{"passes":[{"pass":1}]}"#);
        assert_eq!(st.run(1).unwrap().figures.len(), 1);
        drop(st);
        assert!(std::fs::read(&path).unwrap() == before, "left as it was");
        let mut st = Store::open(&path).unwrap();
        let v: u32 = st
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, crate::schema::VERSION);
        let id = st
            .record_streamed(&streamed_head(), None, |w| w.write_all(b"{}"))
            .unwrap();
        let mut got = Vec::new();
        st.write_payload(id, &mut got).unwrap();
        assert_eq!(got, b"{}");
        drop(st);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A document file is recorded from the file: its payload copied in
    /// parts when it states its figures, read whole (for the figures)
    /// when it does not; either way the stored payload is the file's.
    #[test]
    fn a_document_file_is_recorded_with_its_payload() {
        let dir = std::env::temp_dir().join(format!("iolab-store-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut st = Store::open(&dir.join("s.sqlite")).unwrap();
        let mut doc = streamed_head();
        doc.payload = serde_json::json!({"passes": [{"pass": 1, "note": "a \"payload\": 1"}]});
        for (name, figures) in [("stated.json", doc.figures.clone()), ("none.json", vec![])] {
            let mut d = doc.clone();
            d.figures = figures;
            let path = dir.join(name);
            std::fs::write(&path, d.to_json()).unwrap();
            let head =
                iolab_results::stream::read_head(std::fs::File::open(&path).unwrap()).unwrap();
            let id = st.record_file(&path, &head, None).unwrap().id();
            let mut got = Vec::new();
            st.write_payload(id, &mut got).unwrap();
            let got: Value = serde_json::from_slice(&got).unwrap();
            assert_eq!(got, doc.payload, "{name}");
            let parts: i64 = st
                .conn
                .query_row(
                    "SELECT count(*) FROM payload_parts WHERE run_id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(parts > 0, name == "stated.json", "{name}");
        }
        drop(st);
        std::fs::remove_dir_all(&dir).unwrap();
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
        // A second sweep of the plan recording repeat 1 again (both found
        // it missing when they started): not counted twice.
        let again = iolab_results::parse_any(
            &Envelope::new(
                "iolab.xdd/2",
                "xdd",
                "x",
                Value::Null,
                env.clone(),
                Outcome::Completed,
                Value::Null,
            )
            .to_json(),
        )
        .unwrap();
        let twice = st.record_once(
            &again,
            Some(Attribution {
                point_id: pid,
                repeat: 1,
            }),
            false,
        );
        assert!(matches!(twice, Ok(Recorded::Already(_))), "{twice:?}");
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
