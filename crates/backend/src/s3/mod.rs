//! The S3 backend (feature `s3`): object stores spoken to over HTTP.
//!
//! Paths are `s3://bucket/key`, or plain paths (`/run1/x`) taken as keys
//! in the run's bucket (`--s3.bucket`, or a bucket made for the run). A
//! directory is a prefix: `mkdir a/b` puts an empty marker object
//! `a/b/`, `rmdir` deletes it, `stat` finds an object `a/b`, a marker
//! `a/b/`, or any object under `a/b/`; `list` is a delimited listing.
//! Files are objects: written whole (one PUT, sent by the write itself
//! when the opener gave the whole length, else at close; or a multipart
//! upload for more than one part), read with ranged GETs, removed with
//! DELETE. Exclusive creates send `If-None-Match: *` (on the PUT, or on
//! the CompleteMultipartUpload). No request goes
//! to a bucket that was not named: the run's own bucket is made only
//! when a plain path needs it. docs/s3.md has the whole mapping and
//! what differs from POSIX.
//!
//! ```no_run
//! use iolab_backend::{parse_options, with_options, OpenOptions};
//! let o = parse_options(&["s3.endpoint=http://127.0.0.1:8333", "s3.bucket=runs"]).unwrap();
//! let be = with_options("s3", &o).unwrap();
//! be.init().unwrap();
//! let h = be.open(c"/demo/object", OpenOptions::create_new()).unwrap();
//! be.write_at(&h, b"hello", 0).unwrap();
//! be.close(h).unwrap(); // the PUT
//! assert_eq!(be.stat(c"/demo/object").unwrap().size, 5);
//! be.unlink(c"/demo/object").unwrap();
//! ```

mod client;
mod config;
mod endpoint;
mod objects;
mod resolver;
mod sigv4;

pub use client::stored_nothing;
pub use config::{
    check_bucket, check_key, BadBucketName, BadKey, S3Config, Signing, MAX_KEY_BYTES,
};
pub use endpoint::{Endpoint, Got, Listed, Page};

use crate::options::{BackendOptions, OptionError};
use crate::{Backend, Capabilities, DirEntry, Handle, OpenOptions, Stat};
use client::Client;
use objects::Open;
use rusty_s3::Bucket;
use std::cell::Cell;
use std::ffi::CStr;
use std::io::{self, ErrorKind};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

/// The S3 backend.
pub struct S3 {
    inner: Result<Inner, String>,
}

struct Inner {
    client: Client,
    /// The bucket plain paths name.
    bucket: String,
    /// The bucket is this run's own (made at the first write, removed
    /// at the end when empty).
    own: bool,
    made: AtomicBool,
    making: Mutex<()>,
    /// Numbers handed out as handles' raw values.
    next_handle: AtomicI64,
    notes: Mutex<Vec<String>>,
}

thread_local! {
    /// This thread's last `stat` found a directory marker: try that first
    /// next time (a directory stat phase then costs one HEAD an item).
    static DIR_FIRST: Cell<bool> = const { Cell::new(false) };
}

impl S3 {
    /// The backend configured by the AWS environment variables only; a
    /// bad setting there is reported by `init` and every call.
    pub fn from_env() -> Self {
        let env = |n: &str| std::env::var(n).ok();
        match S3Config::resolve(&BackendOptions::default(), &env) {
            Ok(cfg) => S3::new(cfg),
            Err(e) => S3 { inner: Err(e.0) },
        }
    }

    /// The backend configured by `--s3.*` options, then the environment.
    pub fn from_options(opts: &BackendOptions) -> Result<Self, OptionError> {
        let env = |n: &str| std::env::var(n).ok();
        let cfg = S3Config::resolve(opts, &env)?;
        if cfg.bucket.is_none() && launched_ranks() > 1 {
            return Err(OptionError(
                "--s3.bucket: give the bucket for a run of several MPI ranks (each rank would make a bucket of its own)".into(),
            ));
        }
        Ok(S3::new(cfg))
    }

    /// The backend for checked settings. Makes no request.
    pub fn new(cfg: S3Config) -> Self {
        let (bucket, own) = match &cfg.bucket {
            Some(b) => (b.clone(), false),
            None => (run_bucket_name(), true),
        };
        S3 {
            inner: Ok(Inner {
                client: Client::new(&cfg),
                bucket,
                own,
                made: AtomicBool::new(false),
                making: Mutex::new(()),
                next_handle: AtomicI64::new(1),
                notes: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Creates bucket `name` (for test fixtures and scripts that set up a
    /// service; the engines never create a bucket but the run's own).
    pub fn create_bucket(&self, name: &str) -> io::Result<()> {
        let i = self.inner()?;
        let b = i.client.bucket(name)?;
        i.client.create_bucket(&b)
    }

    /// Every key in `bucket` under `prefix`, flat (for test fixtures and
    /// scripts that check what a run left).
    pub fn keys(&self, bucket: &str, prefix: &str) -> io::Result<Vec<String>> {
        let i = self.inner()?;
        let b = i.client.bucket(bucket)?;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..100_000 {
            let page = i.client.list(&b, prefix, false, 1000, token.as_deref())?;
            out.extend(page.contents.into_iter().map(|c| c.key));
            token = page.next_continuation_token;
            if token.is_none() {
                return Ok(out);
            }
        }
        Err(io::Error::other(format!(
            "s3://{bucket}/{prefix}: the listing did not end after 100 million keys"
        )))
    }

    /// Every object in `bucket` under `prefix`, flat, with its size and
    /// LastModified (Unix ns), for test fixtures and scripts that check
    /// what a run left or made.
    pub fn objects(&self, bucket: &str, prefix: &str) -> io::Result<Vec<(String, u64, u64)>> {
        let i = self.inner()?;
        let b = i.client.bucket(bucket)?;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..100_000 {
            let page = i.client.list(&b, prefix, false, 1000, token.as_deref())?;
            out.extend(page.contents.into_iter().map(|c| {
                let t = c.last_modified.as_deref().map_or(0, client::rfc3339_ns);
                (c.key, c.size.unwrap_or(0), t)
            }));
            token = page.next_continuation_token;
            if token.is_none() {
                return Ok(out);
            }
        }
        Err(io::Error::other(format!(
            "s3://{bucket}/{prefix}: the listing did not end after 100 million keys"
        )))
    }

    /// The bucket plain paths name (given, or this run's own).
    pub fn bucket(&self) -> Option<&str> {
        self.inner.as_ref().ok().map(|i| i.bucket.as_str())
    }

    fn inner(&self) -> io::Result<&Inner> {
        self.inner
            .as_ref()
            .map_err(|e| io::Error::new(ErrorKind::InvalidInput, format!("the S3 settings: {e}")))
    }
}

/// Ranks of an MPI launch this process is part of (1 when none).
fn launched_ranks() -> u64 {
    // As comm's launcher_world_size reads them (srun --mpi=pmix sets none
    // of MPI's own), and MPICH's count of this node's ranks last.
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "SLURM_STEP_NUM_TASKS",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
    .unwrap_or(1)
}

/// `iolab-<seconds>-<pid>`: unique on this host for the run, and a
/// valid bucket name.
fn run_bucket_name() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("iolab-{secs}-{}", std::process::id())
}

/// An `s3://` path without a bucket (`s3:///key`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}: an s3:// path names a bucket: s3://BUCKET/KEY")]
pub struct NoBucket(pub String);

/// Splits a path into (bucket, key): `s3://bucket/key`, or a plain path
/// whose key is the path without leading `/` or `./` (`.` and `/` are the
/// bucket itself). Keys never end with `/`.
pub fn split_path(path: &str) -> Result<(Option<&str>, &str), NoBucket> {
    let (bucket, rest) = match path.strip_prefix("s3:/") {
        Some(r) => {
            // `s3://b/k`, or `s3:/b/k` as a PathBuf spells it.
            let r = r.strip_prefix('/').unwrap_or(r);
            let (b, k) = r.split_once('/').unwrap_or((r, ""));
            if b.is_empty() {
                return Err(NoBucket(path.to_string()));
            }
            (Some(b), k)
        }
        None => (None, path),
    };
    let mut key = rest;
    loop {
        let k = key.trim_start_matches('/');
        let k = k.strip_prefix("./").unwrap_or(k);
        if k == key {
            break;
        }
        key = k;
    }
    let key = key.trim_end_matches('/');
    Ok((bucket, if key == "." { "" } else { key }))
}

/// A bucket that is not there: `NotFound` (a usage error to the tools:
/// nothing was started), with the command that makes it.
fn missing_bucket(name: &str, endpoint: &str, given_by: &str) -> io::Error {
    let how = match given_by {
        "--s3.bucket" => format!("--s3.bucket={name}"),
        _ => format!("s3://{name}"),
    };
    io::Error::new(
        ErrorKind::NotFound,
        format!(
            "{how}: the bucket does not exist at {endpoint}; iolab works only in buckets that exist (or, with neither --s3.bucket nor an s3:// path, in one it makes for the run); make it first, for example: aws --endpoint-url {endpoint} s3 mb s3://{name}"
        ),
    )
}

/// The open object a handle of this backend carries.
fn open_object(h: &Handle) -> io::Result<&Open> {
    h.state::<Open>().ok_or_else(bad_handle)
}

/// A handle this backend did not open (or one already closed).
fn bad_handle() -> io::Error {
    io::Error::from_raw_os_error(libc::EBADF)
}

fn not_found(b: &Bucket, key: &str) -> io::Error {
    io::Error::new(
        ErrorKind::NotFound,
        format!("s3://{}/{key}: no such object or prefix", b.name()),
    )
}

/// `key/`, the key of `key`'s directory marker, made in `buf` once.
fn marker_of<'b>(key: &str, buf: &'b mut String) -> &'b str {
    if buf.is_empty() {
        buf.reserve_exact(key.len() + 1);
        buf.push_str(key);
        buf.push('/');
    }
    buf
}

fn dir_stat() -> Stat {
    Stat {
        is_dir: true,
        ..Stat::default()
    }
}

impl Inner {
    /// The bucket and key of `path`.
    fn locate<'p>(&self, path: &'p CStr) -> io::Result<(Arc<Bucket>, &'p str)> {
        let (bucket, key) = self.split(path)?;
        let name = bucket.unwrap_or(&self.bucket);
        Ok((self.client.bucket(name)?, key))
    }

    /// The bucket `path` names, if any, and its key. A bucket other than
    /// the `--s3.bucket` given is refused: which of the two the user
    /// meant is not for iolab to guess.
    fn split<'p>(&self, path: &'p CStr) -> io::Result<(Option<&'p str>, &'p str)> {
        let text = path.to_str().map_err(|_| {
            io::Error::new(
                ErrorKind::InvalidInput,
                format!("{}: S3 keys must be UTF-8", path.to_string_lossy()),
            )
        })?;
        let (bucket, key) =
            split_path(text).map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))?;
        match bucket {
            Some(b) if !self.own && b != self.bucket => Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{text}: the path names bucket {b}, and --s3.bucket={} another: give one of them (the bucket in the path, or --s3.bucket with a plain path)",
                    self.bucket
                ),
            )),
            _ => Ok((bucket, key)),
        }
    }

    /// [`Backend::check_path`]: the bucket's name and the key, nothing sent.
    fn check_path(&self, path: &CStr) -> io::Result<()> {
        let text = path.to_string_lossy();
        let bad = |e: String| io::Error::new(ErrorKind::InvalidInput, format!("{text}: {e}"));
        // The name first: a bad one is the more useful message.
        if let Ok((Some(b), _)) = split_path(&text) {
            check_bucket(b).map_err(|e| bad(format!("bucket {b}: {e}")))?;
        }
        let (_, key) = self.split(path)?;
        check_key(key).map_err(|e| bad(e.to_string()))
    }

    /// True for this run's own bucket before it is made: nothing is in it.
    fn unmade(&self, b: &Bucket) -> bool {
        self.own && !self.made.load(Ordering::Acquire) && b.name() == self.bucket
    }

    /// Makes this run's own bucket before its first object.
    fn ensure_bucket(&self, b: &Bucket) -> io::Result<()> {
        if !self.unmade(b) {
            return Ok(());
        }
        if !self.client.signed() {
            return Err(io::Error::new(
                ErrorKind::PermissionDenied,
                "S3: no credentials to make the run's bucket: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --s3.access-key and --s3.secret-key-file), or give a bucket (--s3.bucket, or s3://BUCKET/ paths)",
            ));
        }
        let _once = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if !self.made.load(Ordering::Acquire) {
            self.client.create_bucket(b)?;
            self.made.store(true, Ordering::Release);
        }
        Ok(())
    }

    fn stat_key(&self, b: &Bucket, key: &str) -> io::Result<Stat> {
        if key.is_empty() {
            return self.stat_bucket(b);
        }
        if self.unmade(b) {
            return Err(not_found(b, key));
        }
        // The marker's key is made only when it is asked for: a file
        // stat phase's HEADs allocate nothing here.
        let mut marker = String::new();
        let dir_first = DIR_FIRST.with(Cell::get);
        for as_dir in [dir_first, !dir_first] {
            let probe = match as_dir {
                true => marker_of(key, &mut marker),
                false => key,
            };
            if let Some((size, mtime_ns)) = self.client.head_meta(b, probe)? {
                DIR_FIRST.with(|c| c.set(as_dir));
                return Ok(match as_dir {
                    true => dir_stat(),
                    false => Stat {
                        size,
                        is_file: true,
                        mtime_ns,
                        ..Stat::default()
                    },
                });
            }
        }
        // A prefix with objects under it and no marker is a directory too.
        let page = self
            .client
            .list(b, marker_of(key, &mut marker), false, 1, None)?;
        if page.contents.is_empty() {
            return Err(not_found(b, key));
        }
        Ok(dir_stat())
    }

    fn stat_bucket(&self, b: &Bucket) -> io::Result<Stat> {
        if self.unmade(b) || self.client.head_bucket(b)? {
            return Ok(dir_stat());
        }
        Err(missing_bucket(b.name(), self.client.endpoint(), "s3://"))
    }

    fn list_dir(&self, b: &Bucket, key: &str) -> io::Result<Vec<DirEntry>> {
        let prefix = if key.is_empty() {
            String::new()
        } else {
            format!("{key}/")
        };
        let mut out = Vec::new();
        if self.unmade(b) {
            return Ok(out);
        }
        let mut token: Option<String> = None;
        // A listing pages by 1000; 10 million entries is past any test tree.
        for _ in 0..10_000 {
            let page = self.client.list(b, &prefix, true, 1000, token.as_deref())?;
            for c in &page.contents {
                if let Some(name) = c.key.strip_prefix(&prefix).filter(|n| !n.is_empty()) {
                    out.push(DirEntry {
                        name: name.as_bytes().to_vec(),
                        is_dir: false,
                    });
                }
            }
            for p in &page.common_prefixes {
                if let Some(name) = p.prefix.strip_prefix(&prefix) {
                    out.push(DirEntry {
                        name: name.trim_end_matches('/').as_bytes().to_vec(),
                        is_dir: true,
                    });
                }
            }
            token = page.next_continuation_token;
            if token.is_none() {
                return Ok(out);
            }
        }
        Err(io::Error::other(format!(
            "s3://{}/{prefix}: the listing did not end after 10 million entries",
            b.name()
        )))
    }

    /// The entries of directory `key` whose names start with `prefix`,
    /// from a delimited listing of `key/prefix`: objects with their size
    /// and LastModified, prefixes as directories; the directory's own
    /// marker is left out.
    fn list_prefix(
        &self,
        b: &Bucket,
        key: &str,
        prefix: &str,
        each: &mut dyn FnMut(&DirEntry, Option<&Stat>) -> bool,
    ) -> io::Result<()> {
        let dir = match key.is_empty() {
            true => String::new(),
            false => format!("{key}/"),
        };
        if self.unmade(b) {
            return Ok(());
        }
        let full = format!("{dir}{prefix}");
        let mut entry = DirEntry {
            name: Vec::new(),
            is_dir: false,
        };
        let mut token: Option<String> = None;
        for _ in 0..10_000 {
            let page = self.client.list(b, &full, true, 1000, token.as_deref())?;
            for c in &page.contents {
                let Some(name) = c.key.strip_prefix(&dir).filter(|n| !n.is_empty()) else {
                    continue;
                };
                let st = Stat {
                    size: c.size.unwrap_or(0),
                    is_file: true,
                    mtime_ns: c.last_modified.as_deref().map_or(0, client::rfc3339_ns),
                    ..Stat::default()
                };
                entry.name.clear();
                entry.name.extend_from_slice(name.as_bytes());
                entry.is_dir = false;
                if !each(&entry, Some(&st)) {
                    return Ok(());
                }
            }
            for p in &page.common_prefixes {
                if let Some(name) = p.prefix.strip_prefix(&dir) {
                    entry.name.clear();
                    entry
                        .name
                        .extend_from_slice(name.trim_end_matches('/').as_bytes());
                    entry.is_dir = true;
                    if !each(&entry, None) {
                        return Ok(());
                    }
                }
            }
            token = page.next_continuation_token;
            if token.is_none() {
                return Ok(());
            }
        }
        Err(io::Error::other(format!(
            "s3://{}/{full}: the listing did not end after 10 million entries",
            b.name()
        )))
    }

    /// Removes this run's own bucket when nothing is left in it.
    fn remove_own_bucket(&self) -> io::Result<()> {
        if !self.own || !self.made.load(Ordering::Acquire) {
            return Ok(());
        }
        let b = self.client.bucket(&self.bucket)?;
        let left = self.client.list(&b, "", false, 1000, None)?;
        if !left.contents.is_empty() {
            let more = if left.next_continuation_token.is_some() {
                " or more"
            } else {
                ""
            };
            self.note(format!(
                "S3: this run's bucket s3://{} still holds {}{more} objects; it was left in place",
                self.bucket,
                left.contents.len()
            ));
            return Ok(());
        }
        self.client.delete_bucket(&b)?;
        self.made.store(false, Ordering::Release);
        self.note(format!(
            "S3: the run worked in bucket s3://{}, made for it and removed at the end",
            self.bucket
        ));
        Ok(())
    }

    fn note(&self, n: String) {
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).push(n);
    }
}

impl Backend for S3 {
    fn name(&self) -> &'static str {
        "s3"
    }

    /// Directories are prefixes with marker objects; there is no rename,
    /// mknod, preallocation or O_DIRECT, and no local file system.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            directories: true,
            // Each write of an object is one part of its multipart upload.
            min_part_bytes: 5 << 20,
            whole_object_writes: true,
            // LastModified (LIST) and Last-Modified (HEAD), whole seconds.
            mtime: true,
            ..Capabilities::default()
        }
    }

    fn mkdir(&self, path: &CStr, _mode: u32) -> io::Result<()> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        if key.is_empty() {
            if i.unmade(&b) {
                return i.ensure_bucket(&b);
            }
            return Err(io::Error::new(
                ErrorKind::AlreadyExists,
                format!("s3://{}: the bucket exists", b.name()),
            ));
        }
        i.ensure_bucket(&b)?;
        let marker = format!("{key}/");
        i.client.put_object(&b, &marker, &[], false)?;
        i.client.probe_conditional(&b, &marker)
    }

    fn rmdir(&self, path: &CStr) -> io::Result<()> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        if key.is_empty() {
            if i.own && b.name() == i.bucket {
                // Removed at finalize, when empty.
                return Ok(());
            }
            return Err(io::Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "s3://{}: iolab never removes a bucket it did not make",
                    b.name()
                ),
            ));
        }
        if i.unmade(&b) {
            return Err(not_found(&b, key));
        }
        i.client.delete_object(&b, &format!("{key}/"))
    }

    fn open(&self, path: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        if key.is_empty() {
            return Err(io::Error::new(
                ErrorKind::IsADirectory,
                format!("s3://{}: a bucket is not an object", b.name()),
            ));
        }
        if opts.write {
            i.ensure_bucket(&b)?;
        } else if i.unmade(&b) {
            return Err(not_found(&b, key));
        }
        let o = Open::new(b, key.to_string(), opts);
        let raw = i.next_handle.fetch_add(1, Ordering::Relaxed);
        Ok(Handle::with_state(raw, Box::new(o)))
    }

    fn close(&self, h: Handle) -> io::Result<()> {
        let i = self.inner()?;
        h.into_state::<Open>()
            .ok_or_else(bad_handle)?
            .close(&i.client)
    }

    fn write_at(&self, h: &Handle, buf: &[u8], offset: u64) -> io::Result<usize> {
        let i = self.inner()?;
        let o = open_object(h)?;
        if !o.write {
            return Err(bad_handle());
        }
        o.write_at(&i.client, buf, offset)
    }

    fn read_at(&self, h: &Handle, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let i = self.inner()?;
        open_object(h)?.read_at(&i.client, buf, offset)
    }

    /// An object is durable once its PUT (at close) is answered: nothing
    /// to flush before.
    fn fsync(&self, h: &Handle) -> io::Result<()> {
        open_object(h).map(|_| ())
    }

    fn fdatasync(&self, h: &Handle) -> io::Result<()> {
        self.fsync(h)
    }

    fn stat(&self, path: &CStr) -> io::Result<Stat> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        i.stat_key(&b, key)
    }

    fn fstat(&self, h: &Handle) -> io::Result<Stat> {
        let i = self.inner()?;
        let o = open_object(h)?;
        match i.client.head_object(&o.bucket, &o.key)? {
            Some(size) => Ok(Stat {
                size,
                is_file: true,
                ..Stat::default()
            }),
            None => Err(not_found(&o.bucket, &o.key)),
        }
    }

    /// DELETE: S3 does not say whether the object was there.
    fn unlink(&self, path: &CStr) -> io::Result<()> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        if key.is_empty() || i.unmade(&b) {
            return Err(not_found(&b, key));
        }
        i.client.delete_object(&b, key)
    }

    fn rename(&self, _from: &CStr, _to: &CStr) -> io::Result<()> {
        Err(crate::unsupported("s3", "rename"))
    }

    fn mknod(&self, _path: &CStr) -> io::Result<()> {
        Err(crate::unsupported("s3", "mknod"))
    }

    fn list(&self, path: &CStr) -> io::Result<Vec<DirEntry>> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        i.list_dir(&b, key)
    }

    /// One delimited LIST of `path/prefix` (paged): each object with the
    /// Size and LastModified the listing returns, no HEAD per object.
    fn list_stat_each(
        &self,
        path: &CStr,
        prefix: &[u8],
        each: &mut dyn FnMut(&DirEntry, Option<&Stat>) -> bool,
    ) -> io::Result<()> {
        let i = self.inner()?;
        let (b, key) = i.locate(path)?;
        let prefix = std::str::from_utf8(prefix)
            .map_err(|_| io::Error::new(ErrorKind::InvalidInput, "S3 keys must be UTF-8"))?;
        i.list_prefix(&b, key, prefix, each)
    }

    /// S3 keeps modification times in whole seconds.
    fn mtime_granularity_ns(&self) -> u64 {
        1_000_000_000
    }

    fn check_path(&self, path: &CStr) -> io::Result<()> {
        self.inner()?.check_path(path)
    }

    /// Checks the bucket given with `--s3.bucket` (HEAD): a missing one
    /// is `NotFound` naming the command that makes it. Without
    /// `--s3.bucket` nothing is sent: the run's own bucket is made only
    /// when a plain path needs it, and a target that names its bucket
    /// never touches another.
    fn init(&self) -> io::Result<()> {
        let i = self.inner()?;
        if i.own {
            return Ok(());
        }
        let b = i.client.bucket(&i.bucket)?;
        let exists = i.client.head_bucket(&b).map_err(|e| {
            let why = match e.kind() {
                ErrorKind::PermissionDenied => "the service refused the credentials",
                _ => "the service did not answer",
            };
            io::Error::new(
                e.kind(),
                format!("{why} ({e}); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY and the endpoint (--s3.endpoint or AWS_ENDPOINT_URL)"),
            )
        })?;
        if !exists {
            return Err(missing_bucket(
                &i.bucket,
                i.client.endpoint(),
                "--s3.bucket",
            ));
        }
        Ok(())
    }

    fn finalize(&self) -> io::Result<()> {
        self.inner()?.remove_own_bucket()
    }

    fn preallocate(&self, _h: &Handle, _offset: u64, _len: u64) -> io::Result<()> {
        Err(crate::unsupported("s3", "preallocation"))
    }

    fn sync_all(&self) {}

    fn notes(&self) -> Vec<String> {
        let Ok(i) = self.inner() else {
            return Vec::new();
        };
        let mut out = i.notes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if !i.client.conditional_writes() {
            out.push("S3: the service ignores If-None-Match: * (conditional writes): creates could not be made exclusive, and an object of the same name would have been replaced".into());
        } else if !i.client.conditional_completes() {
            out.push("S3: the service refused If-None-Match: * on CompleteMultipartUpload: objects written in several parts could not be created exclusively, and an object of the same name would have been replaced".into());
        }
        let retries = i.client.retries();
        if retries > 0 {
            out.push(format!(
                "S3: {retries} of {} requests were retries: the service answered 5xx (SlowDown included) or a connection broke before any answer; the counts above are of requests the service confirmed",
                i.client.requests()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_bucket_and_key() {
        fn ok(p: &str) -> (Option<&str>, &str) {
            split_path(p).unwrap()
        }
        assert_eq!(ok("s3://b/k/x"), (Some("b"), "k/x"));
        assert_eq!(ok("s3://b"), (Some("b"), ""));
        assert_eq!(ok("s3://b/"), (Some("b"), ""));
        // A PathBuf collapses the double slash.
        assert_eq!(ok("s3:/b/dir/"), (Some("b"), "dir"));
        assert_eq!(ok("/run1/test-dir.0-0"), (None, "run1/test-dir.0-0"));
        assert_eq!(ok("./a"), (None, "a"));
        assert_eq!(ok("."), (None, ""));
        assert_eq!(ok("/"), (None, ""));
        assert!(split_path("s3:///k").is_err());
    }

    #[test]
    fn run_buckets_have_valid_names() {
        assert!(check_bucket(&run_bucket_name()).is_ok());
    }

    #[test]
    fn a_bad_environment_fails_every_call_with_its_reason() {
        let be = S3 {
            inner: Err("--s3.endpoint=ftp://x: give a URL".into()),
        };
        let e = be.init().unwrap_err().to_string();
        assert!(e.contains("--s3.endpoint"), "{e}");
        assert!(be.stat(c"/x").is_err());
        assert!(!be.capabilities().rename);
    }
}
