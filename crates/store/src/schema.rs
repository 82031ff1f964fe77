//! The store's schema and its migrations.
//!
//! The schema version is SQLite's `user_version`; `application_id` marks
//! the file as an iolab store, so a database that is not one is never
//! written to. [`MIGRATIONS`] is append-only: entry `i` takes a store
//! from version `i` to `i + 1`, and opening a store runs, in one
//! transaction, every step it has not had yet. A store newer than this
//! build is refused, never guessed at. docs/sweeps.md documents every
//! table and column.

use crate::StoreError;
use rusqlite::{Connection, TransactionBehavior};

/// `PRAGMA application_id` of an iolab store ("iolb").
pub const APPLICATION_ID: i32 = 0x696f_6c62;

/// Version 1: runs and their figures, series, points.
const V1: &str = "
CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL UNIQUE,
    tool TEXT NOT NULL,
    plan TEXT NOT NULL,
    plan_key TEXT NOT NULL,
    x_label TEXT NOT NULL,
    created_unix_ns INTEGER NOT NULL
);
CREATE TABLE points (
    id INTEGER PRIMARY KEY,
    series_id INTEGER NOT NULL REFERENCES series(id),
    idx INTEGER NOT NULL,
    key TEXT NOT NULL,
    line TEXT NOT NULL,
    x REAL NOT NULL,
    axes TEXT NOT NULL,
    UNIQUE (series_id, key)
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    point_id INTEGER REFERENCES points(id),
    repeat INTEGER,
    recorded_unix_ns INTEGER NOT NULL,
    schema TEXT NOT NULL,
    envelope INTEGER NOT NULL,
    tool TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    compatible_with TEXT,
    command_line TEXT NOT NULL,
    hostname TEXT NOT NULL,
    started_unix_ns INTEGER NOT NULL,
    finished_unix_ns INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    outcome_json TEXT NOT NULL,
    config_json TEXT NOT NULL,
    environment_json TEXT NOT NULL,
    notes_json TEXT NOT NULL,
    stats_json TEXT,
    payload_json TEXT NOT NULL
);
CREATE INDEX runs_point ON runs (point_id, repeat);
CREATE TABLE figures (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    phase TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    scope TEXT NOT NULL,
    value REAL NOT NULL,
    n INTEGER NOT NULL,
    std_dev REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL
);
CREATE INDEX figures_run ON figures (run_id);
";

/// Version 2: a run's payload may be kept in parts (a long run's
/// document is written into the store as it is rendered, never whole in
/// memory): `runs.payload_json` is then '' and the payload is the
/// concatenation of its parts' bytes (UTF-8 JSON) in `seq` order.
const V2: &str = "
CREATE TABLE payload_parts (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    part BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
";

/// Every migration, oldest first.
pub const MIGRATIONS: &[&str] = &[V1, V2];

/// The oldest schema this build still reads as it is: a reading command
/// opens a store of any version from this one to [`VERSION`] without
/// migrating it (a version 1 store has no payload parts).
pub const READABLE_FROM: u32 = 1;

/// The schema version this build writes.
pub const VERSION: u32 = MIGRATIONS.len() as u32;

/// What a database says about itself before anything is written to it.
fn identity(conn: &Connection) -> Result<(i32, u32, i64), rusqlite::Error> {
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    Ok((app, version, tables))
}

/// Refuses a database that is not an (empty or iolab) store, or whose
/// schema is newer than `latest`.
fn check(conn: &Connection, path: &str, latest: u32) -> Result<u32, StoreError> {
    let (app, version, tables) = identity(conn).map_err(|e| not_a_store(path, e))?;
    if app != APPLICATION_ID && (version != 0 || tables != 0) {
        return Err(StoreError::NotAStore(path.to_string()));
    }
    if version > latest {
        return Err(StoreError::Newer {
            path: path.to_string(),
            found: version,
            supported: latest,
        });
    }
    Ok(version)
}

/// What a reading command needs: an iolab store from `oldest` to
/// `latest` (an older one is migrated by the next command that records
/// into it); its version.
pub fn check_readable(
    conn: &Connection,
    path: &str,
    oldest: u32,
    latest: u32,
) -> Result<u32, StoreError> {
    let (app, version, _) = identity(conn).map_err(|e| not_a_store(path, e))?;
    if app != APPLICATION_ID || version == 0 {
        return Err(StoreError::NotAStore(path.to_string()));
    }
    if version > latest {
        return Err(StoreError::Newer {
            path: path.to_string(),
            found: version,
            supported: latest,
        });
    }
    if version < oldest {
        return Err(StoreError::Older {
            path: path.to_string(),
            found: version,
            supported: latest,
        });
    }
    Ok(version)
}

fn not_a_store(path: &str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotAStore(path.to_string()),
        _ => StoreError::Sqlite(e),
    }
}

/// Brings `conn` to the last of `migrations`, checking first that it is
/// an iolab store (or empty) and not newer than this build. Two processes
/// opening a new store at once are serialised by the immediate
/// transaction; the second finds the work done.
pub fn migrate(conn: &mut Connection, path: &str, migrations: &[&str]) -> Result<(), StoreError> {
    let latest = migrations.len() as u32;
    // One read transaction, so that the three facts come from one
    // snapshot: read one by one, a store another process is creating
    // this moment could look half made (tables, but no application id).
    {
        let snapshot = conn.transaction()?;
        check(&snapshot, path, latest)?;
    }
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version = check(&tx, path, latest)?;
    if version == latest {
        return Ok(());
    }
    for sql in &migrations[version as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", latest)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("iolab-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn a_later_migration_keeps_what_the_first_wrote() {
        let p = temp("migrate");
        let ps = p.display().to_string();
        let mut c = Connection::open(&p).unwrap();
        migrate(&mut c, &ps, MIGRATIONS).unwrap();
        c.execute(
            "INSERT INTO series (label, tool, plan, plan_key, x_label, created_unix_ns) VALUES ('a', 'mdtest', '', '', 'x', 1)",
            [],
        )
        .unwrap();
        let v3 = "ALTER TABLE series ADD COLUMN note TEXT NOT NULL DEFAULT 'none';";
        migrate(&mut c, &ps, &[V1, V2, v3]).unwrap();
        let (label, note): (String, String) = c
            .query_row("SELECT label, note FROM series", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((label.as_str(), note.as_str()), ("a", "none"));
        let v: u32 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 3);
        // This build (two migrations) refuses the newer store.
        let e = migrate(&mut c, &ps, MIGRATIONS).unwrap_err();
        assert!(matches!(e, StoreError::Newer { found: 3, .. }), "{e}");
        drop(c);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn another_database_is_not_touched() {
        let p = temp("foreign");
        let ps = p.display().to_string();
        let mut c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE mine (x INTEGER);").unwrap();
        let e = migrate(&mut c, &ps, MIGRATIONS).unwrap_err();
        assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
        let mode: String = c
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_ne!(mode.to_lowercase(), "wal", "left as it was");
        drop(c);
        std::fs::write(&p, b"plain text, not a database at all.............................................................................")
            .unwrap();
        let mut c = Connection::open(&p).unwrap();
        let e = migrate(&mut c, &ps, MIGRATIONS).unwrap_err();
        assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
        let _ = std::fs::remove_file(&p);
    }
}
