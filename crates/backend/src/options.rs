//! Backend options, namespaced by backend as IOR spells them
//! (`--posix.odirect`): parsed and checked in this one place, so that
//! every engine accepts the same options with the same errors.

use crate::{Backend, Capabilities, Dir, DirEntry, FsStat, Handle, OpenOptions, Stat};
use std::ffi::CStr;
use std::io;

/// What one known option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// On when named; `=0`/`=1` also accepted.
    Flag,
    /// A value after `=`, checked by the backend that takes it.
    Text,
}

/// Every option a backend understands: (backend, key, kind, help).
const KNOWN: &[(&str, &str, Kind, &str)] = &[
    (
        "posix",
        "odirect",
        Kind::Flag,
        "open files with O_DIRECT (bypass the page cache)",
    ),
    (
        "s3",
        "endpoint",
        Kind::Text,
        "=URL the S3 service (else $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, AWS)",
    ),
    (
        "s3",
        "region",
        Kind::Text,
        "=NAME signing region (else $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1)",
    ),
    (
        "s3",
        "bucket",
        Kind::Text,
        "=NAME an existing bucket to work in (else a bucket per run)",
    ),
    (
        "s3",
        "access-key",
        Kind::Text,
        "=ID access key id (else $AWS_ACCESS_KEY_ID)",
    ),
    (
        "s3",
        "secret-key-file",
        Kind::Text,
        "=PATH file holding the secret key (else $AWS_SECRET_ACCESS_KEY)",
    ),
    (
        "s3",
        "path-style",
        Kind::Flag,
        "=0|1 path-style URLs (default 1 with an endpoint given, else virtual-host)",
    ),
    (
        "s3",
        "timeout",
        Kind::Text,
        "=SECONDS bound on each request (default 30)",
    ),
    (
        "s3",
        "signing",
        Kind::Text,
        "=header|query where object requests carry their SigV4 signature (default header)",
    ),
];

/// A bad backend option; the message names it and lists what exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OptionError(pub String);

/// Checked backend options: (backend, key, value) triples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendOptions {
    entries: Vec<(String, String, String)>,
}

impl BackendOptions {
    /// True if flag `backend.key` is on.
    pub fn flag(&self, backend: &str, key: &str) -> bool {
        self.entries
            .iter()
            .rev()
            .find(|(b, k, _)| b == backend && k == key)
            .is_some_and(|(_, _, v)| v != "0")
    }

    /// The value of `backend.key`, the last one given wins.
    pub fn value(&self, backend: &str, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(b, k, _)| b == backend && k == key)
            .map(|(_, _, v)| v.as_str())
    }

    /// The backends these options are for, each once.
    pub fn backends(&self) -> impl Iterator<Item = &str> {
        let mut seen: Vec<&str> = Vec::new();
        for (b, _, _) in &self.entries {
            if !seen.contains(&b.as_str()) {
                seen.push(b);
            }
        }
        seen.into_iter()
    }

    /// No option given.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The options of `backend` alone (a run whose targets sit on several
    /// backends gives each its own).
    pub fn only(&self, backend: &str) -> BackendOptions {
        BackendOptions {
            entries: (self.entries.iter())
                .filter(|(b, _, _)| b == backend)
                .cloned()
                .collect(),
        }
    }
}

/// Splits the namespaced backend options (`--posix.odirect`,
/// `--s3.endpoint=URL`: a double-dash word whose name has a dot) off a
/// command line, `--` stripped; the rest is the tool's own line. Every
/// legacy front end (mdtest, xdd) reads them the same way.
pub fn split_args(argv: &[std::ffi::OsString]) -> (Vec<String>, Vec<std::ffi::OsString>) {
    let mut backend = Vec::new();
    let mut rest = Vec::new();
    for a in argv {
        match backend_option(a) {
            Some(n) => backend.push(n.to_string()),
            None => rest.push(a.clone()),
        }
    }
    (backend, rest)
}

/// Where [`split_args`] finds each word: the backend options, each as
/// `--BACKEND.KEY` (its value left off) with the index of its word, and
/// the indexes of the tool's own words. For a caller that asks which
/// word of a command line set what (`iolab sweep`).
pub fn split_args_at(argv: &[std::ffi::OsString]) -> (Vec<(usize, String)>, Vec<usize>) {
    let mut backend = Vec::new();
    let mut own = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        match backend_option(a) {
            Some(n) => backend.push((i, format!("--{}", n.split('=').next().unwrap_or(n)))),
            None => own.push(i),
        }
    }
    (backend, own)
}

/// The backend option a word of a command line is (`posix.odirect=1`
/// for `--posix.odirect=1`), as [`split_args`] takes it off; None for
/// a word of the tool's own.
pub fn backend_option(word: &std::ffi::OsStr) -> Option<&str> {
    let name = word.to_str().and_then(|s| s.strip_prefix("--"));
    name.filter(|n| n.split('=').next().unwrap_or("").contains('.'))
}

/// Parses `backend.key[=value]` strings (the `--` already stripped), as
/// `posix.odirect` or `posix.odirect=1`. Unknown backends or keys and bad
/// values are errors that name the option and list the known ones.
pub fn parse_options<S: AsRef<str>>(items: &[S]) -> Result<BackendOptions, OptionError> {
    let mut out = BackendOptions::default();
    for item in items {
        let item = item.as_ref();
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (item, None),
        };
        let Some((backend, key)) = name.split_once('.') else {
            return Err(unknown(item));
        };
        let Some(&(_, _, kind, _)) = KNOWN.iter().find(|(b, k, _, _)| *b == backend && *k == key)
        else {
            return Err(unknown(item));
        };
        let value = match (kind, value) {
            (Kind::Flag, None) => "1".to_string(),
            (Kind::Flag, Some(v @ ("0" | "1"))) => v.to_string(),
            (Kind::Flag, Some(v)) => {
                return Err(OptionError(format!(
                    "--{name}={v}: a flag takes no value, or 0 or 1"
                )))
            }
            (Kind::Text, Some(v)) if !v.is_empty() => v.to_string(),
            (Kind::Text, _) => {
                return Err(OptionError(format!(
                    "--{name} needs a value: --{name}=VALUE"
                )))
            }
        };
        out.entries.push((backend.into(), key.into(), value));
    }
    Ok(out)
}

/// Every backend option, one per line, for a tool's help screen
/// (`  --posix.odirect   open files with O_DIRECT ...`).
pub fn help() -> String {
    KNOWN
        .iter()
        .map(|(b, k, kind, h)| {
            let (arg, text) = match (kind, h.strip_prefix('=')) {
                (Kind::Text, Some(rest)) => rest.split_once(' ').unwrap_or((rest, "")),
                (_, Some(rest)) => rest.split_once(' ').unwrap_or(("", rest)),
                (_, None) => ("", *h),
            };
            let name = match arg {
                "" => format!("--{b}.{k}"),
                a => format!("--{b}.{k}={a}"),
            };
            format!("  {name:<24} {text}\n")
        })
        .collect()
}

fn unknown(item: &str) -> OptionError {
    // The option's name only: its value may be a secret given the wrong
    // way (`--s3.secret-key=...`), which the message must not repeat.
    let item = item.split_once('=').map_or(item, |(name, _)| name);
    // Name the options of the backend asked for, or all when it is unknown.
    let backend = item.split('.').next().unwrap_or("");
    let same = KNOWN.iter().any(|(b, _, _, _)| *b == backend);
    let known: Vec<String> = KNOWN
        .iter()
        .filter(|(b, _, _, _)| !same || *b == backend)
        .map(|(b, k, _, h)| format!("--{b}.{k} ({})", h.trim_start_matches('=')))
        .collect();
    OptionError(format!(
        "unknown backend option --{item}: known options are {}",
        known.join(", ")
    ))
}

/// A backend with options applied on top of it: today, O_DIRECT on every
/// open. Everything else goes straight to the inner backend.
pub(crate) struct Tuned {
    pub(crate) inner: Box<dyn Backend>,
    pub(crate) direct: bool,
}

impl Backend for Tuned {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn mkdir(&self, path: &CStr, mode: u32) -> io::Result<()> {
        self.inner.mkdir(path, mode)
    }
    fn rmdir(&self, path: &CStr) -> io::Result<()> {
        self.inner.rmdir(path)
    }
    fn open(&self, path: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        let direct = opts.direct || self.direct;
        self.inner.open(path, OpenOptions { direct, ..opts })
    }
    fn close(&self, h: Handle) -> io::Result<()> {
        self.inner.close(h)
    }
    fn write_at(&self, h: &Handle, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.inner.write_at(h, buf, offset)
    }
    fn read_at(&self, h: &Handle, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(h, buf, offset)
    }
    fn fsync(&self, h: &Handle) -> io::Result<()> {
        self.inner.fsync(h)
    }
    fn fdatasync(&self, h: &Handle) -> io::Result<()> {
        self.inner.fdatasync(h)
    }
    fn stat(&self, path: &CStr) -> io::Result<Stat> {
        self.inner.stat(path)
    }
    fn fstat(&self, h: &Handle) -> io::Result<Stat> {
        self.inner.fstat(h)
    }
    fn unlink(&self, path: &CStr) -> io::Result<()> {
        self.inner.unlink(path)
    }
    fn rename(&self, from: &CStr, to: &CStr) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn mknod(&self, path: &CStr) -> io::Result<()> {
        self.inner.mknod(path)
    }
    fn mknod_file(&self, path: &CStr) -> io::Result<()> {
        self.inner.mknod_file(path)
    }
    fn exists(&self, path: &CStr) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn list(&self, path: &CStr) -> io::Result<Vec<DirEntry>> {
        self.inner.list(path)
    }
    fn list_each(&self, path: &CStr, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        self.inner.list_each(path, each)
    }
    fn open_dir(&self, path: &CStr) -> io::Result<Dir> {
        self.inner.open_dir(path)
    }
    fn open_dir_at(&self, dir: &Dir, rel: &CStr) -> io::Result<Dir> {
        self.inner.open_dir_at(dir, rel)
    }
    fn mkdir_at(&self, dir: &Dir, name: &CStr, mode: u32) -> io::Result<()> {
        self.inner.mkdir_at(dir, name, mode)
    }
    fn stat_at(&self, dir: &Dir, name: &CStr) -> io::Result<Stat> {
        self.inner.stat_at(dir, name)
    }
    fn open_at(&self, dir: &Dir, name: &CStr, opts: OpenOptions) -> io::Result<Handle> {
        let direct = opts.direct || self.direct;
        self.inner
            .open_at(dir, name, OpenOptions { direct, ..opts })
    }
    fn unlink_at(&self, dir: &Dir, name: &CStr) -> io::Result<()> {
        self.inner.unlink_at(dir, name)
    }
    fn rmdir_at(&self, dir: &Dir, name: &CStr) -> io::Result<()> {
        self.inner.rmdir_at(dir, name)
    }
    fn list_at(&self, dir: &Dir, each: &mut dyn FnMut(&DirEntry) -> bool) -> io::Result<()> {
        self.inner.list_at(dir, each)
    }
    fn list_stat_each(
        &self,
        path: &CStr,
        prefix: &[u8],
        each: &mut dyn FnMut(&DirEntry, Option<&Stat>) -> bool,
    ) -> io::Result<()> {
        self.inner.list_stat_each(path, prefix, each)
    }
    fn mtime_granularity_ns(&self) -> u64 {
        self.inner.mtime_granularity_ns()
    }
    fn statfs(&self, path: &CStr) -> io::Result<FsStat> {
        self.inner.statfs(path)
    }
    fn can_write(&self, path: &CStr) -> io::Result<bool> {
        self.inner.can_write(path)
    }
    fn init(&self) -> io::Result<()> {
        self.inner.init()
    }
    fn finalize(&self) -> io::Result<()> {
        self.inner.finalize()
    }
    fn preallocate(&self, h: &Handle, offset: u64, len: u64) -> io::Result<()> {
        self.inner.preallocate(h, offset, len)
    }
    fn sync_all(&self) {
        self.inner.sync_all()
    }
    fn device_geometry(&self, path: &CStr) -> io::Result<crate::DeviceGeometry> {
        self.inner.device_geometry(path)
    }
    fn device_in_use(&self, path: &CStr, rdev: u64) -> Option<String> {
        self.inner.device_in_use(path, rdev)
    }
    fn device_in_use_at(
        &self,
        path: &CStr,
        rdev: u64,
        writes: &crate::safety::Writes,
    ) -> Option<String> {
        self.inner.device_in_use_at(path, rdev, writes)
    }
    fn file_in_use(&self, path: &CStr) -> Option<String> {
        self.inner.file_in_use(path)
    }
    fn claim_device(&self, path: &CStr) -> io::Result<crate::safety::DeviceClaim> {
        self.inner.claim_device(path)
    }
    fn setxattr(&self, path: &CStr, name: &CStr, value: &[u8]) -> io::Result<()> {
        self.inner.setxattr(path, name, value)
    }
    fn raw_fd(&self, h: &Handle) -> Option<i32> {
        self.inner.raw_fd(h)
    }
    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_options_parse_and_unknown_ones_are_named() {
        let o = parse_options(&["posix.odirect"]).unwrap();
        assert!(o.flag("posix", "odirect"));
        assert_eq!(o.backends().collect::<Vec<_>>(), vec!["posix"]);
        assert!(!parse_options(&["posix.odirect=0"])
            .unwrap()
            .flag("posix", "odirect"));
        for bad in ["posix.fast", "s3.bucket", "odirect", "posix.odirect=yes"] {
            let e = parse_options(&[bad]).unwrap_err().0;
            assert!(e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
        }
        assert!(parse_options(&["posix.fast"])
            .unwrap_err()
            .0
            .contains("--posix.odirect"));
        // A secret given the wrong way is not repeated in the message.
        let e = parse_options(&["s3.secret-key=hunter2"]).unwrap_err().0;
        assert!(
            e.contains("--s3.secret-key") && !e.contains("hunter2"),
            "{e}"
        );
    }

    #[test]
    fn options_for_another_backend_are_refused() {
        let o = BackendOptions {
            entries: vec![("s3".into(), "bucket".into(), "b".into())],
        };
        let e = crate::with_options("posix", &o).err().unwrap().0;
        assert!(e.contains("--s3"), "{e}");
        let b = crate::with_options("posix", &parse_options(&["posix.odirect"]).unwrap()).unwrap();
        assert_eq!(b.name(), "posix");
    }
}
