//! The results store: every run of every iolab tool in one SQLite file.
//!
//! A run is recorded from its results envelope (`iolab_results`): the
//! envelope's fields in columns (command line, tool and version, host,
//! start and end, outcome, config, environment, notes, `--stats`
//! samples, payload) and its headline figures ([`figures`]) in a table
//! of their own. A sweep adds a *series* (its label and plan) and its
//! *points* (the axes' values of each); each repeat is a run attributed
//! to a point. The schema is versioned with migrations ([`schema`]);
//! the file is opened in WAL mode with a busy timeout, so several
//! processes can record at once (each record is one immediate
//! transaction). A long run's payload goes in as it is rendered or read
//! ([`Store::record_streamed`], [`Store::record_file`]) and out the same
//! way ([`Store::write_payload`]), in parts, never whole in memory.
//!
//! It lives in its own crate rather than in `iolab-results` so that the
//! engines, which all depend on the envelope, do not link SQLite.
//!
//! ```
//! use iolab_store::Store;
//! let dir = std::env::temp_dir().join(format!("iolab-store-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let mut store = Store::open(&dir.join("r.sqlite")).unwrap();
//! let doc = iolab_results::parse_any(r#"{"schema": "iolab.mdtest/2", "envelope": 1,
//!   "tool": {"name": "mdtest", "version": "0.1.0", "compatible_with": null},
//!   "command_line": "iolab mdtest -n 10", "started_unix_ns": 1, "finished_unix_ns": 2,
//!   "config": {}, "environment": {"host": {"hostname": "h", "kernel": "", "arch": "",
//!   "cpus": 1, "memory_bytes": 0}, "filesystems": []}, "outcome": {"status": "completed"},
//!   "notes": [], "payload": {"tests": [{"tasks": 1, "iterations": [{}],
//!   "summary": [{"phase": "file_create", "rate": {"mean": 10.0, "min": 10.0, "max": 10.0, "std_dev": 0.0}}]}]}}"#).unwrap();
//! let id = store.record(&doc, None).unwrap();
//! let run = store.run(id).unwrap();
//! assert_eq!(run.figures[0].phase, "file_create");
//! assert_eq!(run.envelope.command_line, "iolab mdtest -n 10");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

pub mod compare;
pub mod figures;
mod file;
mod query;
mod record;
pub mod schema;

pub use figures::Figure;
pub use iolab_results::Spread;
pub use query::{Point, PointRun, RunRecord, RunRow, Series, SeriesRow};
pub use record::{Attribution, NewPoint, NewSeries, Recorded, PART_BYTES};

use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Whether a run that ended this way (its `outcome` column) gave
/// results: it completed, or reached the time limit the user set.
pub fn counts(outcome: &str) -> bool {
    matches!(outcome, "completed" | "time_limit")
}

/// How long a writer waits for another process's transaction to end.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// SQLite's "database is locked" (or a table of it).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no.
    #[error("store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A JSON column could not be read or written.
    #[error("store: {0}")]
    Json(#[from] serde_json::Error),
    /// A run's payload could not be rendered into the store, or a
    /// stored one written out.
    #[error("store: run payload: {0}")]
    Payload(std::io::Error),
    /// The file is a database (or file) that iolab did not make.
    #[error("{0} is not an iolab results store (left untouched)")]
    NotAStore(String),
    /// A newer iolab wrote the store.
    #[error(
        "{path} has schema version {found}; this iolab reads up to {supported}: use a newer iolab"
    )]
    Newer {
        /// The store.
        path: String,
        /// Its schema version.
        found: u32,
        /// The newest this build knows.
        supported: u32,
    },
    /// An older store, which a reading command does not migrate.
    #[error(
        "{path} has schema version {found}; this iolab reads {supported}: record a run into it (iolab results import) to migrate it"
    )]
    Older {
        /// The store.
        path: String,
        /// Its schema version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A store on a read-only file system whose write-ahead log holds
    /// runs not yet in the database file, and no `-shm` file to read it
    /// through: reading the file alone would miss them.
    #[error("{path} is on a read-only file system and its write-ahead log {wal} holds runs not yet in it, which SQLite cannot read there: copy both files to a writable place and read the copy")]
    UnreadableWal {
        /// The store.
        path: String,
        /// Its `-wal` file.
        wal: String,
    },
    /// SQLite finds the file damaged (its quick_check fails): refused,
    /// and left as it is, before anything reads or writes it.
    #[error("{path} is damaged ({why}); it was left as it is: restore it from a copy, or give another store")]
    Damaged {
        /// The store.
        path: String,
        /// What SQLite's quick_check said.
        why: String,
    },
    /// The path is a FIFO, a device or a directory: never opened (a
    /// FIFO's open would wait for a writer without end).
    #[error("{0} is not a regular file (a FIFO, a device or a directory); give the path of a results store, or of one to create")]
    NotAFile(String),
    /// A symbolic link at the store's path (to a store or to nothing):
    /// never followed, so that one planted there (in a shared directory,
    /// at the default `./iolab.sqlite`) cannot have a store made, or
    /// written, where it points.
    #[error("{0} is a symbolic link, which is never followed to a results store (one planted at its name would have a store made or written where it points); give the store's own path")]
    Link(String),
    /// An empty path (SQLite would take it for a private temporary
    /// database and the run would be recorded nowhere).
    #[error("an empty name; give the path of a results store")]
    NoPath,
    /// A store this process may not write: its mode or owner, an
    /// immutable flag, a read-only mount. Found before the run (SQLite
    /// would open it read-only without a word, and the run's record fail
    /// once it had ended).
    #[error("{path} cannot be written ({why}); give a store this user may write: a file of a mode that lets it, not immutable, on a file system mounted read-write")]
    Unwritable {
        /// The store.
        path: String,
        /// Why (the system's error).
        why: String,
    },
    /// A store file with other names (hard links, a bind mount of the
    /// file): SQLite keeps a write-ahead log per name, so runs recorded
    /// through two names would corrupt it. Refused to writers.
    #[error("{path} has other names ({how}): SQLite keeps a write-ahead log beside each name, so runs recorded through two names would corrupt the store; record into a store of one name (a copy, not a link; a bind mount of its directory, not of the file)")]
    OtherNames {
        /// The store.
        path: String,
        /// What the other names are.
        how: String,
    },
    /// A claim ([`Store::claim`]) could not be asked for: the file system
    /// takes no lock on the file.
    #[error("{path}: cannot lock a byte of it to claim a series ({err}); keep the store on a file system that takes file locks")]
    Claim {
        /// The store.
        path: String,
        /// The system's error.
        err: std::io::Error,
    },
    /// No store at the path, and none can be made there.
    #[error("{path} cannot be created ({why}); give a path in an existing directory this user may write")]
    Uncreatable {
        /// The store.
        path: String,
        /// Why (the system's error).
        why: String,
    },
    /// No store at the path (reading commands do not create one).
    #[error("no results store at {0} (give --store PATH, or record runs with --store first)")]
    Missing(String),
    /// No run or series of that name.
    #[error("{0}")]
    NotFound(String),
    /// A series label already used by another plan.
    #[error("series '{label}' is already in the store with a different plan; give this plan another label (or use another store)")]
    PlanMismatch {
        /// The label.
        label: String,
    },
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: String,
    /// Its schema version (a reading command reads older ones as they are).
    version: u32,
    /// For a store read `immutable`, the lock that keeps writers off it
    /// until the connection above is closed (fields drop in order).
    _quiet: Option<std::fs::File>,
    /// For a store opened to record into, its file as opened to prove it
    /// writable, which holds the store's claims ([`Store::claim`]).
    /// Closed after the connection (fields drop in order): closing a
    /// descriptor of the file drops every POSIX lock this process holds
    /// on it, SQLite's included.
    file: Option<std::fs::File>,
}

impl Store {
    /// Opens the store at `path` to record into it, creating it (and
    /// migrating it to this build's schema) as needed. A file that is
    /// not an iolab store, or one a newer iolab wrote, is refused and
    /// left as it is; so are an empty path, a symbolic link at the path
    /// (never followed), a store this process may not write (found now,
    /// not when a run is recorded) and a store file of other names (hard
    /// links, a bind mount of the file), with nothing made beside them.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let name = path.display().to_string();
        let head = file::head(path);
        match head {
            _ if path.as_os_str().is_empty() => return Err(StoreError::NoPath),
            file::Head::Link => return Err(StoreError::Link(name)),
            file::Head::NotAFile => return Err(StoreError::NotAFile(name)),
            // SQLite takes a file shorter than its header (one byte of
            // the user's notes) for an empty database and would write a
            // store over it.
            file::Head::Other => return Err(StoreError::NotAStore(name)),
            // Another program's database: refused before SQLite opens it
            // (and makes its -wal and -shm). 0 is a new store's, or one
            // whose id is still in its write-ahead log.
            file::Head::Database(id) if id != 0 && id != schema::APPLICATION_ID as u32 => {
                return Err(StoreError::NotAStore(name))
            }
            _ => {}
        }
        let (file, created) = file::open_writable(path).map_err(|e| {
            let why = e.to_string();
            match (e.raw_os_error(), head) {
                // A link planted since the head was read.
                (Some(libc::ELOOP), _) => StoreError::Link(name.clone()),
                (_, file::Head::Missing) => StoreError::Uncreatable {
                    path: name.clone(),
                    why,
                },
                _ => StoreError::Unwritable {
                    path: name.clone(),
                    why,
                },
            }
        })?;
        if let Some(how) = file::other_names(&file) {
            return Err(StoreError::OtherNames { path: name, how });
        }
        Store::create_or_migrate(path, name, file).inspect_err(|e| {
            // A store this call began and could not finish (a full disk:
            // a 4 KiB file, its -wal and -shm) is not a store: complete
            // or absent. Not after "busy": another process is making it.
            let busy = matches!(e, StoreError::Sqlite(s) if is_busy(s));
            if created && !busy {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.as_os_str().to_owned();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
        })
    }

    fn create_or_migrate(
        path: &Path,
        name: String,
        file: std::fs::File,
    ) -> Result<Store, StoreError> {
        use rusqlite::{OpenFlags, MAIN_DB};
        // The file is there (open_writable made it): no CREATE, and no
        // URI, so that a name beginning `file:` is the file of that name.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags)?;
        // SQLite falls back to reading alone when it may not write (the
        // file was proved writable a moment ago: this is a race with the
        // user's own hands). Refused before anything is read, which would
        // make the -wal and -shm.
        if conn.is_readonly(MAIN_DB)? {
            return Err(StoreError::Unwritable {
                path: name,
                why: "SQLite opens it read-only".into(),
            });
        }
        conn.busy_timeout(BUSY_TIMEOUT)?;
        check_intact(&conn, &name)?;
        // Turning a new file into a WAL store takes a lock that SQLite
        // does not wait for with the busy timeout: a second process
        // creating the same store that moment is told "locked" at once.
        // It waits here instead, as long as a writer would.
        let until = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match schema::migrate(&mut conn, &name, schema::MIGRATIONS) {
                Err(StoreError::Sqlite(e)) if is_busy(&e) && std::time::Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                r => break r?,
            }
        }
        conn.pragma_update(None, "foreign_keys", true)?;
        Ok(Store {
            conn,
            path: name,
            version: schema::VERSION,
            _quiet: None,
            file: Some(file),
        })
    }

    /// Claims `key` (a sweep's series) on this store for as long as the
    /// store stays open in this process: true when claimed (or claimed
    /// already by this store), false when another process holds the
    /// claim (or another [`Store`] of this one). The claim is a lock on
    /// the store file itself, so a process that reached it by another
    /// path (its directory under another name) meets it too, and the
    /// kernel drops it when the process ends, however it ends (kill -9
    /// included). Only a store opened to record into ([`Store::open`])
    /// claims.
    pub fn claim(&self, key: &str) -> Result<bool, StoreError> {
        match &self.file {
            Some(f) => file::claim(f, key).map_err(|err| StoreError::Claim {
                path: self.path.clone(),
                err,
            }),
            None => Err(StoreError::Unwritable {
                path: self.path.clone(),
                why: "opened for reading".into(),
            }),
        }
    }

    /// Opens a store that must exist already, read-only (the reading
    /// commands): nothing is created, migrated or written, so a file that
    /// is not a store (empty, one byte, another database) is refused and
    /// stays byte-identical. A store of an older schema that this build
    /// still reads ([`schema::READABLE_FROM`]) is read as it is.
    ///
    /// What the file is comes first, from its header, without SQLite:
    /// a symbolic link at the path is refused unfollowed (as by
    /// [`Store::open`]), a FIFO or a directory is never opened, another
    /// program's database never handed to SQLite. A store no connection has open (no `-wal`
    /// beside it) is read `immutable`, the database file alone, which
    /// creates no `-wal` and `-shm` (SQLite makes both for any other
    /// reader of a WAL database, read-only ones included), under a lock
    /// that holds off a writer until it is read ([`file::quiet`]): such a
    /// writer waits, within its busy timeout. A store in use is read
    /// through the files its connections keep. On a file system mounted
    /// read-only, where SQLite cannot make the `-shm` a `-wal` left there
    /// is read through, an empty `-wal` is passed over and a non-empty
    /// one is refused ([`StoreError::UnreadableWal`]).
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        let name = path.display().to_string();
        let id = match file::head(path) {
            _ if path.as_os_str().is_empty() => return Err(StoreError::NoPath),
            file::Head::Link => return Err(StoreError::Link(name)),
            file::Head::Missing => return Err(StoreError::Missing(name)),
            file::Head::NotAFile => return Err(StoreError::NotAFile(name)),
            file::Head::Database(id) => id,
            file::Head::Empty | file::Head::Other => return Err(StoreError::NotAStore(name)),
        };
        let wal = file::wal_of(path);
        let in_wal = std::fs::symlink_metadata(&wal).is_ok();
        // A new store's id may be in its write-ahead log still.
        if id != schema::APPLICATION_ID as u32 && !(id == 0 && in_wal) {
            return Err(StoreError::NotAStore(name));
        }
        let quiet = match in_wal {
            true => file::Quiet::InUse,
            false => file::quiet(path, BUSY_TIMEOUT),
        };
        match quiet {
            file::Quiet::Held(lock) => Store::open_read_only(path, &name, true, Some(lock)),
            file::Quiet::Unwritable => Store::open_read_only(path, &name, true, None),
            file::Quiet::InUse => match Store::open_read_only(path, &name, false, None) {
                Err(StoreError::Sqlite(e))
                    if cannot_open(&e) && iolab_core::env::read_only_fs(path) =>
                {
                    if wal.metadata().is_ok_and(|m| m.len() > 0) {
                        return Err(StoreError::UnreadableWal {
                            path: name,
                            wal: wal.display().to_string(),
                        });
                    }
                    Store::open_read_only(path, &name, true, None)
                }
                r => r,
            },
        }
    }

    /// Opens `path` read-only (`immutable`: the file alone, as on
    /// read-only media) and checks it is a store this build reads.
    fn open_read_only(
        path: &Path,
        name: &str,
        immutable: bool,
        quiet: Option<std::fs::File>,
    ) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let mut flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match immutable {
            false => Connection::open_with_flags(path, flags)?,
            true => {
                flags |= OpenFlags::SQLITE_OPEN_URI;
                Connection::open_with_flags(immutable_uri(path), flags)?
            }
        };
        conn.busy_timeout(BUSY_TIMEOUT)?;
        check_intact(&conn, name)?;
        let version = schema::check_readable(&conn, name, schema::READABLE_FROM, schema::VERSION)?;
        Ok(Store {
            conn,
            path: name.to_string(),
            version,
            _quiet: quiet,
            file: None,
        })
    }

    /// The path it was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// SQLite's quick_check of the file (every page and index walked, in
/// time linear in its size): a store SQLite finds damaged is refused
/// before a run is recorded into it (one was, and could not be read back)
/// or a figure is read from it. A file that is no database at all is
/// left to the schema check, which says it is not a store.
fn check_intact(conn: &Connection, name: &str) -> Result<(), StoreError> {
    let said: Result<Vec<String>, rusqlite::Error> = conn
        .prepare("PRAGMA quick_check")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
    let damaged = |why: String| StoreError::Damaged {
        path: name.to_string(),
        why,
    };
    match said {
        Ok(rows) if rows.iter().all(|r| r == "ok") => Ok(()),
        Ok(rows) => Err(damaged(
            rows.into_iter().take(3).collect::<Vec<_>>().join("; "),
        )),
        Err(e) if not_a_database(&e) => Ok(()),
        Err(e) if is_busy(&e) || cannot_open(&e) => Err(e.into()),
        Err(e) => Err(damaged(e.to_string())),
    }
}

/// SQLite's "file is not a database".
fn not_a_database(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase)
}

/// SQLite's "unable to open database file".
fn cannot_open(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen)
}

/// `file:PATH?immutable=1`, the path's bytes other than unreserved ones
/// and `/` percent-encoded (SQLite's URI filenames decode `%XX`; a `?`
/// or `#` in a name would otherwise end the path).
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_uris_encode_what_would_end_the_path() {
        assert_eq!(
            immutable_uri(Path::new("/mnt/r o/a?b#c%.sqlite")),
            "file:/mnt/r%20o/a%3Fb%23c%25.sqlite?immutable=1"
        );
    }

    /// A store whose pages SQLite finds damaged is refused by writers and
    /// readers alike and left byte for byte as it was: a run was once
    /// recorded into one (exit 0) and could not be read back.
    #[test]
    fn a_damaged_store_is_refused_and_left_as_it_is() {
        let dir = std::env::temp_dir().join(format!("iolab-store-damaged-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sqlite");
        drop(Store::open(&path).unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() >= 2 * 4096, "{}", bytes.len());
        // Page 2's b-tree header (a table's root): its type byte and counts.
        for b in &mut bytes[4096..4108] {
            *b ^= 0x5a;
        }
        std::fs::write(&path, &bytes).unwrap();
        let writer = Store::open(&path).err();
        let reader = Store::open_existing(&path).err();
        let left = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for e in [writer, reader] {
            assert!(matches!(e, Some(StoreError::Damaged { .. })), "{e:?}");
        }
        assert!(left == bytes, "the damaged store was changed");
    }

    #[test]
    fn a_file_shorter_than_a_database_header_is_not_a_new_store() {
        let dir = std::env::temp_dir().join(format!("iolab-store-short-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let notes = dir.join("notes.db");
        std::fs::write(&notes, b"x").unwrap();
        let e = Store::open(&notes).err().unwrap();
        assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
        assert_eq!(std::fs::read(&notes).unwrap(), b"x");
        // An empty file, or none, becomes a store; a store opens again.
        let empty = dir.join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        drop(Store::open(&empty).unwrap());
        drop(Store::open(&empty).unwrap());
        drop(Store::open(&dir.join("new.db")).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The files in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Reading a store SQLite made `-wal` and `-shm` for, beside a store
    /// cleanly closed and beside another program's WAL database (which
    /// was refused as not a store, "left untouched").
    #[test]
    fn reading_creates_no_file_beside_a_store_or_another_database() {
        let dir =
            std::env::temp_dir().join(format!("iolab-store-quiet-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = dir.join("s.sqlite");
        drop(Store::open(&store).unwrap());
        let foreign = dir.join("foreign.db");
        let c = Connection::open(&foreign).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch("CREATE TABLE t (a);").unwrap();
        drop(c);
        let before = listing(&dir);
        let read = Store::open_existing(&store).map(|s| s.series_list().map(|l| l.len()));
        let other = Store::open_existing(&foreign).err();
        let after = listing(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(before, ["foreign.db", "s.sqlite"]);
        assert_eq!(read.unwrap().unwrap(), 0);
        assert!(matches!(other, Some(StoreError::NotAStore(_))), "{other:?}");
        assert_eq!(after, before);
    }

    /// A FIFO as the store was opened, which waits for a writer: the run
    /// hung, deaf to one SIGTERM. A directory is no store either.
    #[test]
    fn a_fifo_or_a_directory_is_refused_unopened() {
        let dir = std::env::temp_dir().join(format!("iolab-store-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.sqlite");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let errors = [
            Store::open(&fifo).err(),
            Store::open_existing(&fifo).err(),
            Store::open(&dir).err(),
            Store::open_existing(&dir).err(),
        ];
        std::fs::remove_dir_all(&dir).unwrap();
        for e in errors {
            assert!(matches!(e, Some(StoreError::NotAFile(_))), "{e:?}");
        }
    }

    /// A link at the store's path was followed: one to nothing had a
    /// store created where it pointed. Refused by writers and readers,
    /// nothing made; so is an empty path (SQLite's temporary database).
    #[test]
    fn a_link_or_an_empty_path_is_refused_and_nothing_made() {
        let dir = std::env::temp_dir().join(format!("iolab-store-link-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("target")).unwrap();
        let real = dir.join("real.sqlite");
        drop(Store::open(&real).unwrap());
        let (dangling, to_store) = (dir.join("l1.sqlite"), dir.join("l2.sqlite"));
        std::os::unix::fs::symlink(dir.join("target/victim.sqlite"), &dangling).unwrap();
        std::os::unix::fs::symlink(&real, &to_store).unwrap();
        let errors = [
            Store::open(&dangling).err(),
            Store::open_existing(&dangling).err(),
            Store::open(&to_store).err(),
            Store::open_existing(&to_store).err(),
        ];
        let empty = [
            Store::open(Path::new("")).err(),
            Store::open_existing(Path::new("")).err(),
        ];
        let made = listing(&dir.join("target"));
        std::fs::remove_dir_all(&dir).unwrap();
        for e in errors {
            assert!(matches!(e, Some(StoreError::Link(_))), "{e:?}");
        }
        for e in empty {
            assert!(matches!(e, Some(StoreError::NoPath)), "{e:?}");
        }
        assert!(made.is_empty(), "{made:?}");
    }

    /// A claim is the store file's, held by its open store until that is
    /// closed; a store file with another name (a hard link), which the
    /// claim would meet but SQLite's write-ahead log would not, is
    /// refused to writers.
    #[test]
    fn a_claim_holds_until_its_store_is_closed() {
        let dir = std::env::temp_dir().join(format!("iolab-store-claim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (path, hard) = (dir.join("s.sqlite"), dir.join("h.sqlite"));
        let first = Store::open(&path).unwrap();
        std::fs::hard_link(&path, &hard).unwrap();
        let linked = [Store::open(&hard).err(), Store::open(&path).err()];
        std::fs::remove_file(&hard).unwrap();
        let second = Store::open(&dir.join(".").join("s.sqlite")).unwrap();
        let claims = [
            first.claim("a").unwrap(),
            first.claim("a").unwrap(),
            second.claim("a").unwrap(),
            second.claim("b").unwrap(),
        ];
        drop(first);
        let after = second.claim("a").unwrap();
        let reader = Store::open_existing(&path).unwrap().claim("c").is_err();
        drop(second);
        std::fs::remove_dir_all(&dir).unwrap();
        for e in linked {
            assert!(matches!(e, Some(StoreError::OtherNames { .. })), "{e:?}");
        }
        assert_eq!(claims, [true, true, false, true]);
        assert!(after, "the claim went with its store");
        assert!(reader, "a store opened for reading claims nothing");
    }

    #[test]
    fn figures_read_back_from_json_are_the_ones_written() {
        // Without serde_json's float_roundtrip these came back one unit
        // off in the last place (an imported run's std_dev and iops.min).
        for text in ["27319.937129785154", "362223.06801308604"] {
            let v: f64 = serde_json::from_str(text).unwrap();
            assert_eq!(v, text.parse::<f64>().unwrap(), "{text}");
            assert_eq!(serde_json::to_string(&v).unwrap(), text);
        }
    }

    #[test]
    fn spread_of_three_repeats() {
        let s = Spread::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.min, s.max, s.std_dev),
            (3, 2.0, 1.0, 3.0, 1.0)
        );
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[4.0]).unwrap().std_dev, 0.0);
    }
}
