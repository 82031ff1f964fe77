//! The S3 backend's settings: `--s3.<key>` options first, then the usual
//! AWS environment variables, then defaults. Everything is checked here,
//! before any request, so a bad value is a usage error naming its option.

use crate::options::{BackendOptions, OptionError};
use std::time::Duration;

/// Checked settings of one S3 backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The service's base URL (`http://127.0.0.1:8333`).
    pub endpoint: String,
    /// Region used in the signature.
    pub region: String,
    /// The bucket to work in; `None` makes a bucket per run.
    pub bucket: Option<String>,
    /// Access key id.
    pub access_key: Option<String>,
    /// Secret access key (never printed).
    pub secret_key: Option<String>,
    /// Session token of temporary credentials.
    pub session_token: Option<String>,
    /// Path-style URLs (`endpoint/bucket/key`) instead of virtual-host
    /// ones (`bucket.endpoint/key`).
    pub path_style: bool,
    /// Bound on each request.
    pub timeout: Duration,
    /// Where object requests carry their signature.
    pub signing: Signing,
}

/// Where a request's SigV4 signature goes (`--s3.signing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Signing {
    /// The `Authorization` header (the day's key derived once), as the
    /// AWS SDKs and minio-go sign; the default (docs/s3.md has the
    /// measurement).
    #[default]
    Header,
    /// A presigned URL (rusty-s3): the signature in the query string.
    Query,
}

/// Default bound on one request.
pub const DEFAULT_TIMEOUT_S: u64 = 30;

fn bad(msg: String) -> OptionError {
    OptionError(msg)
}

impl S3Config {
    /// Settings from options, then `env` (a variable lookup, so tests
    /// need not touch the process environment).
    pub fn resolve(
        opts: &BackendOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, OptionError> {
        let var = |n: &str| env(n).filter(|v| !v.trim().is_empty());
        let opt = |k: &str| opts.value("s3", k).map(str::to_string);
        let region = opt("region")
            .or_else(|| var("AWS_REGION"))
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let given = opt("endpoint")
            .map(|v| (v, "--s3.endpoint"))
            .or_else(|| var("AWS_ENDPOINT_URL_S3").map(|v| (v, "AWS_ENDPOINT_URL_S3")))
            .or_else(|| var("AWS_ENDPOINT_URL").map(|v| (v, "AWS_ENDPOINT_URL")));
        let path_style = match opts.value("s3", "path-style") {
            Some(v) => v != "0",
            // A service of one's own is usually addressed by path; AWS
            // prefers virtual hosts.
            None => given.is_some(),
        };
        let (endpoint, source) =
            given.unwrap_or_else(|| (format!("https://s3.{region}.amazonaws.com"), "--s3.region"));
        check_endpoint(&endpoint).map_err(|e| bad(format!("{source}={endpoint}: {e}")))?;
        let bucket = opt("bucket");
        if let Some(b) = &bucket {
            check_bucket(b).map_err(|e| bad(format!("--s3.bucket={b}: {e}")))?;
        }
        let secret_key = match opt("secret-key-file") {
            Some(f) => Some(read_secret(&f)?),
            None => var("AWS_SECRET_ACCESS_KEY"),
        };
        Ok(S3Config {
            endpoint,
            region,
            bucket,
            access_key: opt("access-key").or_else(|| var("AWS_ACCESS_KEY_ID")),
            secret_key,
            session_token: var("AWS_SESSION_TOKEN"),
            path_style,
            timeout: timeout(opts)?,
            signing: signing(opts)?,
        })
    }

    /// True when both halves of the credentials are there.
    pub fn has_credentials(&self) -> bool {
        self.access_key.is_some() && self.secret_key.is_some()
    }
}

/// An endpoint is a scheme, a host and a port, nothing else: a path
/// would be taken by path-style URLs as a bucket (`http://h:8333/bbb`
/// with `s3://aaa/obj` would write to bucket `bbb`), so it is refused.
pub(crate) fn check_endpoint(e: &str) -> Result<(), String> {
    let scheme_ok = e.starts_with("http://") || e.starts_with("https://");
    let rest = e.split_once("://").map_or("", |(_, r)| r);
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if !scheme_ok || authority.is_empty() {
        return Err("give a URL such as http://127.0.0.1:8333 or https://s3.example.org".into());
    }
    if let Some(i) = authority.find(['/', '?', '#', '@']) {
        return Err(format!(
            "an endpoint is a scheme, a host and a port (http://HOST:PORT); `{}` is not part of one: name the bucket in the target (s3://BUCKET/KEY) or with --s3.bucket",
            &authority[i..]
        ));
    }
    Ok(())
}

fn timeout(opts: &BackendOptions) -> Result<Duration, OptionError> {
    let Some(v) = opts.value("s3", "timeout") else {
        return Ok(Duration::from_secs(DEFAULT_TIMEOUT_S));
    };
    match v.parse::<f64>() {
        Ok(s) if (0.1..=3600.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(bad(format!(
            "--s3.timeout={v}: give seconds between 0.1 and 3600"
        ))),
    }
}

fn signing(opts: &BackendOptions) -> Result<Signing, OptionError> {
    match opts.value("s3", "signing") {
        None | Some("header") => Ok(Signing::Header),
        Some("query") => Ok(Signing::Query),
        Some(v) => Err(bad(format!(
            "--s3.signing={v}: give header (the Authorization header) or query (presigned URLs)"
        ))),
    }
}

/// The secret in `path`, refused when group or others may read it, as
/// every secret file of iolab ([`iolab_core::trust::read_secret`]).
fn read_secret(path: &str) -> Result<String, OptionError> {
    let bytes = iolab_core::trust::read_secret(std::path::Path::new(path))
        .map_err(|e| bad(format!("--s3.secret-key-file={path}: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| bad(format!("--s3.secret-key-file={path}: not UTF-8 text")))?;
    let key = text.trim();
    if key.is_empty() {
        return Err(bad(format!(
            "--s3.secret-key-file={path}: the file is empty"
        )));
    }
    Ok(key.to_string())
}

/// A bucket name that S3 does not take, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a valid bucket name: {0} (S3's rules: 3 to 63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit, no '..', not an IP address, no prefix xn--, sthree- or amzn-s3-demo-, no suffix -s3alias, --ol-s3, .mrap, --x-s3 or --table-s3)")]
pub struct BadBucketName(pub &'static str);

/// Prefixes AWS reserves (punycode, S3 Access Points, its examples).
const RESERVED_PREFIXES: [&str; 3] = ["xn--", "sthree-", "amzn-s3-demo-"];
/// Suffixes AWS reserves (access point aliases, Object Lambda,
/// Multi-Region Access Points, directory and table buckets).
const RESERVED_SUFFIXES: [&str; 5] = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];

/// Checks a bucket name against S3's naming rules (AWS's general
/// purpose buckets; other services take a subset of what they allow):
/// 3 to 63 lower-case letters, digits, dots and dashes, starting and
/// ending with a letter or digit, no two dots together, not in the
/// form of an IPv4 address, none of the reserved prefixes and suffixes.
pub fn check_bucket(b: &str) -> Result<(), BadBucketName> {
    let chars_ok = b
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-');
    let ends_ok = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let bad = |why| Err(BadBucketName(why));
    if !(3..=63).contains(&b.len()) {
        return bad("3 to 63 characters");
    }
    if !chars_ok {
        return bad("a character other than a-z, 0-9, '.', '-'");
    }
    if !ends_ok(b.bytes().next()) || !ends_ok(b.bytes().last()) {
        return bad("it must start and end with a letter or digit");
    }
    if b.contains("..") {
        return bad("two dots together");
    }
    if b.parse::<std::net::Ipv4Addr>().is_ok() {
        return bad("in the form of an IP address");
    }
    if RESERVED_PREFIXES.iter().any(|p| b.starts_with(p)) {
        return bad("a prefix S3 reserves");
    }
    if RESERVED_SUFFIXES.iter().any(|x| b.ends_with(x)) {
        return bad("a suffix S3 reserves");
    }
    Ok(())
}

/// S3's longest key, in bytes (UTF-8).
pub const MAX_KEY_BYTES: usize = 1024;

/// A key that is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadKey {
    /// A `.` or `..` between slashes: an HTTP stack (the client's URL
    /// parser, a proxy, the service) may resolve it as a path segment,
    /// and `b/../other/k` is then object `k` of bucket `other`.
    #[error("a key with a `{0}` segment is not sent: it may be resolved as a path and land in another bucket or object (give a key without `.` or `..` between slashes)")]
    DotSegment(&'static str),
    /// Longer than [`MAX_KEY_BYTES`].
    #[error("a key of {0} bytes: S3 keys are at most 1024 bytes")]
    TooLong(usize),
}

/// Checks a key (or a key prefix) before it is sent: no `.` or `..`
/// segment, at most [`MAX_KEY_BYTES`] bytes.
pub fn check_key(key: &str) -> Result<(), BadKey> {
    if key.len() > MAX_KEY_BYTES {
        return Err(BadKey::TooLong(key.len()));
    }
    match key.split('/').find(|s| *s == "." || *s == "..") {
        Some(".") => Err(BadKey::DotSegment(".")),
        Some(_) => Err(BadKey::DotSegment("..")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_options;

    #[test]
    fn keys_with_dot_segments_or_over_1024_bytes_are_refused() {
        for ok in ["", "a", "a/b/", "a..b/.c/d.", "...", &"k".repeat(1024)] {
            assert_eq!(check_key(ok), Ok(()), "{ok}");
        }
        for (no, why) in [
            ("..", BadKey::DotSegment("..")),
            ("../other/obj", BadKey::DotSegment("..")),
            ("x/../../other/f", BadKey::DotSegment("..")),
            ("a/./b", BadKey::DotSegment(".")),
            ("a/.", BadKey::DotSegment(".")),
            ("../", BadKey::DotSegment("..")),
        ] {
            assert_eq!(check_key(no), Err(why), "{no}");
        }
        assert_eq!(check_key(&"k".repeat(1025)), Err(BadKey::TooLong(1025)));
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn options_win_over_the_environment() {
        let o = parse_options(&["s3.endpoint=http://127.0.0.1:9000", "s3.bucket=runs"]).unwrap();
        let vars = [
            ("AWS_ENDPOINT_URL", "http://elsewhere:1"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "k"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ];
        let c = S3Config::resolve(&o, &env(Box::leak(Box::new(vars)))).unwrap();
        assert_eq!(c.endpoint, "http://127.0.0.1:9000");
        assert_eq!(c.region, "eu-west-1");
        assert_eq!(c.bucket.as_deref(), Some("runs"));
        assert!(c.path_style && c.has_credentials());
        assert_eq!(c.timeout, Duration::from_secs(DEFAULT_TIMEOUT_S));
    }

    #[test]
    fn aws_defaults_use_virtual_hosts() {
        let c = S3Config::resolve(&BackendOptions::default(), &env(&[])).unwrap();
        assert_eq!(c.endpoint, "https://s3.us-east-1.amazonaws.com");
        assert!(!c.path_style && !c.has_credentials() && c.bucket.is_none());
    }

    #[test]
    fn bad_values_name_their_option() {
        for (arg, opt) in [
            ("s3.endpoint=ftp://x", "--s3.endpoint"),
            ("s3.endpoint=http://", "--s3.endpoint"),
            ("s3.endpoint=http://h:8333/bbb", "--s3.endpoint"),
            ("s3.endpoint=http://h:8333?x=1", "--s3.endpoint"),
            ("s3.endpoint=http://u@h:8333", "--s3.endpoint"),
            ("s3.bucket=No_Such", "--s3.bucket"),
            ("s3.timeout=0", "--s3.timeout"),
            ("s3.timeout=abc", "--s3.timeout"),
            ("s3.signing=both", "--s3.signing"),
            (
                "s3.secret-key-file=/nonexistent/iolab",
                "--s3.secret-key-file",
            ),
        ] {
            let o = parse_options(&[arg]).unwrap();
            let e = S3Config::resolve(&o, &env(&[])).unwrap_err().0;
            assert!(e.contains(opt), "{arg}: {e}");
        }
        assert!(parse_options(&["s3.bucket"])
            .unwrap_err()
            .0
            .contains("value"));
    }

    #[test]
    fn bucket_names() {
        for ok in ["abc", "iolab-run-1", "a.b.c"] {
            assert!(check_bucket(ok).is_ok(), "{ok}");
        }
        for no in ["ab", "Abc", "-abc", "abc-", "a_b", &"x".repeat(64)] {
            assert!(check_bucket(no).is_err(), "{no}");
        }
        // AWS's further rules.
        for (no, why) in [
            ("a..b", "two dots"),
            ("192.168.1.1", "IP address"),
            ("xn--abc", "prefix"),
            ("sthree-abc", "prefix"),
            ("amzn-s3-demo-bucket", "prefix"),
            ("abc-s3alias", "suffix"),
            ("abc--ol-s3", "suffix"),
            ("abc.mrap", "suffix"),
            ("abc--x-s3", "suffix"),
            ("abc--table-s3", "suffix"),
        ] {
            let e = check_bucket(no).unwrap_err().to_string();
            assert!(e.contains(why), "{no}: {e}");
        }
        for ok in ["192.168.1.1a", "a.b-c.d", "xn-abc", "s3alias"] {
            assert!(check_bucket(ok).is_ok(), "{ok}");
        }
    }
}
