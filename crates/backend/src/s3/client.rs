//! S3 requests over HTTP: rusty-s3 signs (presigned SigV4 URLs) and
//! ureq sends, over one pool of kept-alive connections shared by every
//! thread. Object requests signed in headers (the default) build their
//! URL and signature in buffers each thread keeps between requests. Every failure becomes an `io::Error` that names the request,
//! the object and the HTTP status with S3's error code; a request that
//! meets a 5xx or a broken connection is retried with backoff, and each
//! retry is counted.

use super::config::{S3Config, Signing};
use super::sigv4::{date_text, AmzDate, HeaderSigner};
use rusty_s3::actions::{
    AbortMultipartUpload, CompleteMultipartUpload, CreateBucket, CreateMultipartUpload,
    DeleteBucket, DeleteObject, GetObject, HeadBucket, HeadObject, ListObjectsV2,
    ListObjectsV2Response, PutObject, S3Action, UploadPart,
};
use rusty_s3::{Bucket, Credentials, UrlStyle};
use std::cell::Cell;
use std::io::{self, ErrorKind, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use ureq::http::Response;
use ureq::Body;

/// An HTTP method, as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Head,
    Get,
    Put,
    Post,
    Delete,
}

impl Method {
    pub(super) fn name(self) -> &'static str {
        match self {
            Method::Head => "HEAD",
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// The connection pool, the credentials and the buckets met so far.
pub struct Client {
    agent: ureq::Agent,
    creds: Option<Credentials>,
    /// Signs object requests in headers (`--s3.signing=header`).
    signer: Option<HeaderSigner>,
    endpoint: String,
    style: UrlStyle,
    region: String,
    timeout: Duration,
    buckets: RwLock<Vec<Arc<Bucket>>>,
    retries: AtomicU64,
    requests: AtomicU64,
    /// A request found the service gone (no answer within the timeout,
    /// or no connection after the retries): later requests fail at once
    /// instead of each waiting out its own timeout.
    unreachable: AtomicBool,
    /// Whether the service honours `If-None-Match: *` on PUT
    /// (`UNKNOWN`, `HONOURED`, `IGNORED`).
    conditional: AtomicU8,
    /// The same on CompleteMultipartUpload (`IGNORED`: refused there).
    conditional_complete: AtomicU8,
}

/// Conditional writes not tried yet.
const UNKNOWN: u8 = 0;
/// The service refuses a conditional PUT over an object (412).
const HONOURED: u8 = 1;
/// The service replaces the object anyway, or refuses the header.
const IGNORED: u8 = 2;

/// Times a failed request is sent again (5xx, reset, refused).
pub const RETRIES: u32 = 3;
/// Wait before the first retry; doubled before each next one (0.05 s,
/// 0.1 s, 0.2 s: 0.35 s in all).
pub const BACKOFF: Duration = Duration::from_millis(50);

/// How long a signed URL stays valid past its request's timeout.
const SIGN_SLACK: Duration = Duration::from_secs(60);
/// Bytes of an error answer kept for its message.
const ERROR_BODY_BYTES: u64 = 64 * 1024;
/// Largest listing answer read (1000 keys of 1 KiB each, and margin).
pub(super) const LIST_BODY_BYTES: u64 = 16 * 1024 * 1024;

impl Client {
    /// A client for `cfg`. Makes no request.
    pub fn new(cfg: &S3Config) -> Self {
        let connect = cfg.timeout.min(Duration::from_secs(10));
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A redirect is answered back as it is, never followed: the
            // host it names would answer for the object (docs/s3.md,
            // Errors), and ureq would follow GETs and HEADs silently.
            .max_redirects(0)
            .timeout_global(Some(cfg.timeout))
            .timeout_connect(Some(connect))
            // Every task thread keeps its connection between requests;
            // a server's idle close is met before it is likely.
            .max_idle_connections(1024)
            .max_idle_connections_per_host(1024)
            .max_idle_age(Duration::from_secs(5))
            .no_delay(true)
            .build();
        let creds = match (&cfg.access_key, &cfg.secret_key) {
            (Some(k), Some(s)) => Some(match &cfg.session_token {
                Some(t) => Credentials::new_with_token(k, s, t),
                None => Credentials::new(k, s),
            }),
            _ => None,
        };
        let signer = match (&cfg.access_key, &cfg.secret_key, cfg.signing) {
            (Some(k), Some(s), Signing::Header) => Some(HeaderSigner::new(
                k,
                s,
                cfg.session_token.as_deref(),
                &cfg.region,
            )),
            _ => None,
        };
        Client {
            signer,
            // One lookup per run, no thread per request (see resolver).
            agent: ureq::Agent::with_parts(
                config,
                ureq::unversioned::transport::DefaultConnector::default(),
                super::resolver::OnceResolver::default(),
            ),
            creds,
            endpoint: cfg.endpoint.clone(),
            style: if cfg.path_style {
                UrlStyle::Path
            } else {
                UrlStyle::VirtualHost
            },
            region: cfg.region.clone(),
            timeout: cfg.timeout,
            buckets: RwLock::new(Vec::new()),
            retries: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            conditional: AtomicU8::new(UNKNOWN),
            conditional_complete: AtomicU8::new(UNKNOWN),
            unreachable: AtomicBool::new(false),
        }
    }

    /// Requests sent again (after a 5xx or a broken connection).
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Requests sent (retries included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// False once the service showed that it ignores `If-None-Match: *`
    /// (see [`Client::probe_conditional`]); true before.
    pub fn conditional_writes(&self) -> bool {
        self.conditional.load(Ordering::Relaxed) != IGNORED
    }

    /// False once the service refused `If-None-Match: *` on a
    /// CompleteMultipartUpload (objects written in several parts were
    /// then completed without it); true before.
    pub fn conditional_completes(&self) -> bool {
        self.conditional_complete.load(Ordering::Relaxed) != IGNORED
    }

    /// Finds out once whether the service honours conditional PUTs, by
    /// sending `key` (an empty object this run has just made) again
    /// with `If-None-Match: *`: a 412 says yes; a success (the object
    /// replaced by the same empty one) or a refusal of the header says
    /// no, and later creates go without it.
    pub fn probe_conditional(&self, b: &Bucket, key: &str) -> io::Result<()> {
        if self.conditional.load(Ordering::Relaxed) != UNKNOWN {
            return Ok(());
        }
        let state = match self.put_object(b, key, &[], true) {
            Err(e) if e.kind() == ErrorKind::AlreadyExists => HONOURED,
            Ok(()) => IGNORED,
            Err(e) if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::Other) => IGNORED,
            Err(e) => return Err(e),
        };
        self.conditional.store(state, Ordering::Relaxed);
        Ok(())
    }

    /// The endpoint URL, for messages.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// True when requests will be signed.
    pub fn signed(&self) -> bool {
        self.creds.is_some()
    }

    /// The bucket named `name` (built once, then shared).
    pub fn bucket(&self, name: &str) -> io::Result<Arc<Bucket>> {
        let known = self.buckets.read().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = known.iter().find(|b| b.name() == name) {
            return Ok(b.clone());
        }
        drop(known);
        super::config::check_bucket(name)
            .map_err(|e| io::Error::new(ErrorKind::InvalidInput, format!("s3://{name}: {e}")))?;
        let url = self.endpoint.parse().map_err(|e| {
            io::Error::new(
                ErrorKind::InvalidInput,
                format!("S3 endpoint {}: {e}", self.endpoint),
            )
        })?;
        let b = Bucket::new(url, self.style, name.to_string(), self.region.clone())
            .map_err(|e| io::Error::new(ErrorKind::InvalidInput, format!("bucket {name}: {e}")))?;
        let b = Arc::new(b);
        let mut known = self.buckets.write().unwrap_or_else(|p| p.into_inner());
        known.push(b.clone());
        Ok(b)
    }

    pub(super) fn expiry(&self) -> Duration {
        self.timeout + SIGN_SLACK
    }

    pub(super) fn creds(&self) -> Option<&Credentials> {
        self.creds.as_ref()
    }

    fn need_creds(&self, what: &str) -> io::Result<&Credentials> {
        self.creds.as_ref().ok_or_else(|| {
            io::Error::new(
                ErrorKind::PermissionDenied,
                format!("S3 {what}: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --s3.access-key and --s3.secret-key-file)"),
            )
        })
    }

    /// Sends one request; answers of any status come back, but a 5xx
    /// (SlowDown included) or a connection reset, refused or closed
    /// before any answer is sent again, up to [`RETRIES`] times with
    /// backoff ([`BACKOFF`], doubling), each retry counted. A timeout is
    /// not retried: a server that does not answer ends the run within
    /// one `--s3.timeout`. `attempt` signs and sends: it is called for
    /// each try, because a signature holds its time and a retry can
    /// come long after the first try (each try may wait a whole
    /// timeout), past its URL's expiry or a service's allowed skew.
    fn send(
        &self,
        m: Method,
        loc: &Loc,
        mut attempt: impl FnMut() -> Result<Response<Body>, ureq::Error>,
    ) -> io::Result<Response<Body>> {
        if let Err(e) = super::config::check_key(loc.key) {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                Refusal {
                    status: None,
                    message: format!("S3 {} {loc}: {e}", m.name()),
                },
            ));
        }
        if self.unreachable.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                ErrorKind::NotConnected,
                format!(
                    "S3 {} {loc}: not sent: the service at {} stopped answering earlier in this run; what the run made in s3://{}/ may remain there",
                    m.name(),
                    self.endpoint,
                    loc.bucket
                ),
            ));
        }
        let mut n = 0;
        loop {
            self.requests.fetch_add(1, Ordering::Relaxed);
            let last = n == RETRIES;
            match attempt() {
                Ok(mut r) if !last && retryable_status(r.status().as_u16()) => drain(&mut r),
                Ok(r) => return Ok(r),
                Err(ureq::Error::Io(e)) if !last && retryable_io(&e) => {}
                Err(ureq::Error::ConnectionFailed) if !last => {}
                Err(e) => {
                    let e = self.transport_error(m, loc, e);
                    if gone(&e) {
                        self.unreachable.store(true, Ordering::Relaxed);
                    }
                    return Err(e);
                }
            }
            self.retries.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(BACKOFF * (1 << n));
            n += 1;
        }
    }

    /// Sends a request whose URL `sign` presigns (again for each try).
    fn send_presigned<U: AsRef<str>>(
        &self,
        m: Method,
        sign: impl Fn() -> U,
        headers: &[(&str, &str)],
        body: &[u8],
        loc: &Loc,
    ) -> io::Result<Response<Body>> {
        self.send(m, loc, || self.send_once(m, sign().as_ref(), headers, body))
    }

    fn send_once(
        &self,
        m: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response<Body>, ureq::Error> {
        macro_rules! with_headers {
            ($b:expr) => {{
                let mut b = $b;
                for (k, v) in headers {
                    b = b.header(*k, *v);
                }
                b
            }};
        }
        let a = &self.agent;
        match m {
            Method::Head => with_headers!(a.head(url)).call(),
            Method::Get => with_headers!(a.get(url)).call(),
            Method::Delete => with_headers!(a.delete(url)).call(),
            Method::Put => with_headers!(a.put(url)).send(body),
            Method::Post => with_headers!(a.post(url)).send(body),
        }
    }

    fn transport_error(&self, m: Method, loc: &Loc, e: ureq::Error) -> io::Error {
        let (kind, why) = match &e {
            ureq::Error::Timeout(t) => (
                ErrorKind::TimedOut,
                format!("no answer within {:?} ({t}; --s3.timeout)", self.timeout),
            ),
            ureq::Error::Io(io) => (io.kind(), format!("{}: {io}", self.endpoint)),
            ureq::Error::HostNotFound => (
                ErrorKind::NotFound,
                format!("{}: host not found", self.endpoint),
            ),
            ureq::Error::ConnectionFailed => (
                ErrorKind::ConnectionRefused,
                format!("{}: cannot connect", self.endpoint),
            ),
            other => (ErrorKind::Other, format!("{}: {other}", self.endpoint)),
        };
        io::Error::new(kind, format!("S3 {} {loc}: {why}", m.name()))
    }

    /// Sends and turns any status but 2xx into an error.
    pub(super) fn ok<U: AsRef<str>>(
        &self,
        m: Method,
        sign: impl Fn() -> U,
        headers: &[(&str, &str)],
        body: &[u8],
        loc: &Loc,
    ) -> io::Result<Response<Body>> {
        let r = self.send_presigned(m, sign, headers, body, loc)?;
        success(m, loc, r)
    }

    /// Sends request `m` on object `key` with `extra` headers: its URL
    /// and, when signing in headers, its signature, built for each try
    /// in this thread's buffers; else the URL `presign` makes.
    pub(super) fn send_object(
        &self,
        m: Method,
        b: &Bucket,
        key: &str,
        presign: impl Fn() -> String,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Response<Body>> {
        let mut r = SCRATCH.take();
        let out = self.send(m, &Loc::new(b, key), || {
            self.sign_object(m, b, key, &presign, &mut r);
            self.send_signed(m, &r, extra, body)
        });
        SCRATCH.set(r);
        out
    }

    /// Builds `r` for request `m` on object `key`, signed now.
    fn sign_object(
        &self,
        m: Method,
        b: &Bucket,
        key: &str,
        presign: impl Fn() -> String,
        r: &mut ObjectRequest,
    ) {
        match &self.signer {
            None => {
                r.url = presign();
                r.signed = false;
            }
            Some(s) => {
                object_url(b, key, &mut r.url);
                let (host, path) = host_and_path(&r.url);
                r.amz_date = s.sign(m.name(), host, path, &mut r.authorization);
                r.signed = true;
            }
        }
    }

    /// Sends one try of an object request: `extra` headers plus the
    /// signature's.
    fn send_signed(
        &self,
        m: Method,
        r: &ObjectRequest,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response<Body>, ureq::Error> {
        if !r.signed {
            return self.send_once(m, &r.url, extra, body);
        }
        let mut h: [(&str, &str); 6] = [("", ""); 6];
        let n = extra.len().min(2);
        h[..n].copy_from_slice(&extra[..n]);
        h[n] = ("x-amz-date", date_text(&r.amz_date));
        h[n + 1] = ("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
        h[n + 2] = ("authorization", &r.authorization);
        let mut len = n + 3;
        if let Some(t) = self.signer.as_ref().and_then(HeaderSigner::token) {
            h[len] = ("x-amz-security-token", t);
            len += 1;
        }
        self.send_once(m, &r.url, &h[..len], body)
    }

    /// HEAD of an object: its size, or `None` when there is none.
    pub fn head_object(&self, b: &Bucket, key: &str) -> io::Result<Option<u64>> {
        Ok(self.head_meta(b, key)?.map(|(size, _)| size))
    }

    /// HEAD of an object: its size and its Last-Modified time (Unix
    /// nanoseconds, 0 when not given), or `None` when there is none.
    pub fn head_meta(&self, b: &Bucket, key: &str) -> io::Result<Option<(u64, u64)>> {
        let loc = Loc::new(b, key);
        let presign = || {
            HeadObject::new(b, self.creds(), key)
                .sign(self.expiry())
                .into()
        };
        let mut r = self.send_object(Method::Head, b, key, presign, &[], &[])?;
        if r.status().as_u16() == 404 {
            return Ok(None);
        }
        if !r.status().is_success() {
            return Err(status_error(Method::Head, &loc, r));
        }
        let size = r
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mtime_ns = r
            .headers()
            .get("last-modified")
            .and_then(|v| v.to_str().ok())
            .map_or(0, http_date_ns);
        drain(&mut r);
        Ok(Some((size, mtime_ns)))
    }

    /// PUT of a whole object; `exclusive` sends `If-None-Match: *`, so
    /// an object already there is an `AlreadyExists` error (HTTP 412),
    /// never replaced.
    pub fn put_object(
        &self,
        b: &Bucket,
        key: &str,
        body: &[u8],
        exclusive: bool,
    ) -> io::Result<()> {
        let loc = Loc::new(b, key);
        // A type given, as S3 clients give one (minio-go, the AWS SDKs):
        // SeaweedFS otherwise sniffs the body to choose one, and whether
        // to compress it.
        const TYPE: (&str, &str) = ("content-type", "application/octet-stream");
        let headers: &[(&str, &str)] = match exclusive && self.conditional_writes() {
            true => &[TYPE, ("if-none-match", "*")],
            false => &[TYPE],
        };
        let presign = || {
            PutObject::new(b, self.creds(), key)
                .sign(self.expiry())
                .into()
        };
        let r = self.send_object(Method::Put, b, key, presign, headers, body)?;
        let mut r = success(Method::Put, &loc, r)?;
        drain(&mut r);
        Ok(())
    }

    /// GET of `buf.len()` bytes from `offset` (a ranged GET); returns the
    /// bytes read, 0 at or past the end of the object.
    pub fn get_range(
        &self,
        b: &Bucket,
        key: &str,
        offset: u64,
        buf: &mut [u8],
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let loc = Loc::new(b, key);
        let mut range = RangeHeader::default();
        let range = range.of(offset, offset + buf.len() as u64 - 1);
        let presign = || {
            GetObject::new(b, self.creds(), key)
                .sign(self.expiry())
                .into()
        };
        let mut r = self.send_object(Method::Get, b, key, presign, &[("range", range)], &[])?;
        match r.status().as_u16() {
            416 => {
                drain(&mut r);
                return Ok(0);
            }
            206 => {}
            // A service that ignores ranges sends the whole object.
            200 => skip(&mut r, offset, &loc)?,
            _ => return Err(status_error(Method::Get, &loc, r)),
        }
        let mut reader = r.body_mut().as_reader();
        let mut n = 0;
        while n < buf.len() {
            match reader.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(body_error(Method::Get, &loc, e)),
            }
        }
        drop(reader);
        drain(&mut r);
        Ok(n)
    }

    /// DELETE of an object (S3 answers the same whether it existed or not).
    pub fn delete_object(&self, b: &Bucket, key: &str) -> io::Result<()> {
        let loc = Loc::new(b, key);
        let presign = || {
            DeleteObject::new(b, self.creds(), key)
                .sign(self.expiry())
                .into()
        };
        let r = self.send_object(Method::Delete, b, key, presign, &[], &[])?;
        let mut r = success(Method::Delete, &loc, r)?;
        drain(&mut r);
        Ok(())
    }

    /// One page of a listing under `prefix`, grouped at `/` when
    /// `delimited`.
    pub fn list(
        &self,
        b: &Bucket,
        prefix: &str,
        delimited: bool,
        max_keys: usize,
        token: Option<&str>,
    ) -> io::Result<ListObjectsV2Response> {
        let mut a = ListObjectsV2::new(b, self.creds());
        a.with_prefix(prefix);
        if delimited {
            a.with_delimiter("/");
        }
        a.with_max_keys(max_keys);
        if let Some(t) = token {
            a.with_continuation_token(t);
        }
        let url = || a.sign(self.expiry());
        let loc = Loc::new(b, prefix);
        let mut r = self.ok(Method::Get, url, &[], &[], &loc)?;
        let text = read_text(&mut r, LIST_BODY_BYTES, Method::Get, &loc)?;
        ListObjectsV2::parse_response(&text).map_err(|e| {
            io::Error::new(
                ErrorKind::InvalidData,
                format!("S3 list {loc}: cannot read the answer: {e}"),
            )
        })
    }

    /// Starts a multipart upload; returns its id.
    pub fn create_upload(&self, b: &Bucket, key: &str) -> io::Result<String> {
        let url = || CreateMultipartUpload::new(b, self.creds(), key).sign(self.expiry());
        let loc = Loc::new(b, key);
        let mut r = self.ok(Method::Post, url, &[], &[], &loc)?;
        let text = read_text(&mut r, ERROR_BODY_BYTES, Method::Post, &loc)?;
        CreateMultipartUpload::parse_response(&text)
            .map(|r| r.upload_id().to_string())
            .map_err(|e| {
                io::Error::new(
                    ErrorKind::InvalidData,
                    format!("S3 create upload {loc}: cannot read the answer: {e}"),
                )
            })
    }

    /// Uploads part `part` (from 1); returns its ETag.
    pub fn upload_part(
        &self,
        b: &Bucket,
        key: &str,
        upload: &str,
        part: u16,
        body: &[u8],
    ) -> io::Result<String> {
        let url = || UploadPart::new(b, self.creds(), key, part, upload).sign(self.expiry());
        let loc = Loc::new(b, key);
        let mut r = self.ok(Method::Put, url, &[], body, &loc)?;
        let etag = r
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        drain(&mut r);
        etag.ok_or_else(|| {
            io::Error::new(
                ErrorKind::InvalidData,
                format!("S3 PUT {loc} part {part}: the answer has no ETag"),
            )
        })
    }

    /// Completes an upload from its parts' ETags, in part order;
    /// `exclusive` sends `If-None-Match: *`, so that an object already
    /// there is an `AlreadyExists` error (HTTP 412), never replaced. A
    /// service that refuses the header on this request (501, or 400
    /// naming it) gets the request again without it, and the run's notes
    /// say so ([`Client::conditional_completes`]).
    pub fn complete_upload(
        &self,
        b: &Bucket,
        key: &str,
        upload: &str,
        etags: &[String],
        exclusive: bool,
    ) -> io::Result<()> {
        let action = || {
            CompleteMultipartUpload::new(
                b,
                self.creds(),
                key,
                upload,
                etags.iter().map(String::as_str),
            )
        };
        let url = || action().sign(self.expiry());
        let body = action().body();
        let loc = Loc::new(b, key);
        let conditional = exclusive
            && self.conditional_writes()
            && self.conditional_complete.load(Ordering::Relaxed) != IGNORED;
        let headers: &[(&str, &str)] = match conditional {
            true => &[("if-none-match", "*")],
            false => &[],
        };
        let r = self.send_presigned(Method::Post, url, headers, body.as_bytes(), &loc)?;
        let mut r = match success(Method::Post, &loc, r) {
            Err(e) if conditional && refuses_condition(&e) => {
                self.conditional_complete.store(IGNORED, Ordering::Relaxed);
                return self.complete_upload(b, key, upload, etags, false);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{e} (the object exists: this create is exclusive, If-None-Match: *, and never replaces it)"),
                ))
            }
            r => r?,
        };
        if conditional {
            self.conditional_complete.store(HONOURED, Ordering::Relaxed);
        }
        // S3 may answer 200 and put the error in the body.
        let text = read_text(&mut r, ERROR_BODY_BYTES, Method::Post, &loc)?;
        if text.contains("<Error>") {
            return Err(io::Error::other(format!(
                "S3 POST {loc} (complete upload): {}",
                error_detail(&text)
            )));
        }
        Ok(())
    }

    /// Abandons an upload (its parts are dropped).
    pub fn abort_upload(&self, b: &Bucket, key: &str, upload: &str) -> io::Result<()> {
        let url = || AbortMultipartUpload::new(b, self.creds(), key, upload).sign(self.expiry());
        let loc = Loc::new(b, key);
        let mut r = self.ok(Method::Delete, url, &[], &[], &loc)?;
        drain(&mut r);
        Ok(())
    }

    /// HEAD of a bucket: false when it does not exist.
    pub fn head_bucket(&self, b: &Bucket) -> io::Result<bool> {
        let url = || HeadBucket::new(b, self.creds()).sign(self.expiry());
        let loc = Loc::new(b, "");
        let mut r = self.send_presigned(Method::Head, url, &[], &[], &loc)?;
        match r.status().as_u16() {
            404 => Ok(false),
            s if (200..300).contains(&s) => {
                drain(&mut r);
                Ok(true)
            }
            _ => Err(status_error(Method::Head, &loc, r)),
        }
    }

    /// Creates a bucket.
    pub fn create_bucket(&self, b: &Bucket) -> io::Result<()> {
        let a = CreateBucket::new(b, self.need_creds("create bucket")?);
        let url = || a.sign(self.expiry());
        let body = a.body();
        let loc = Loc::new(b, "");
        let mut r = self.ok(Method::Put, url, &[], body.as_bytes(), &loc)?;
        drain(&mut r);
        Ok(())
    }

    /// Deletes an (empty) bucket.
    pub fn delete_bucket(&self, b: &Bucket) -> io::Result<()> {
        let creds = self.need_creds("delete bucket")?;
        let url = || DeleteBucket::new(b, creds).sign(self.expiry());
        let loc = Loc::new(b, "");
        let mut r = self.ok(Method::Delete, url, &[], &[], &loc)?;
        drain(&mut r);
        Ok(())
    }
}

/// An object request: its URL and, signed in headers, its date and
/// `authorization` value. One per thread, reused ([`SCRATCH`]).
#[derive(Default)]
pub(super) struct ObjectRequest {
    url: String,
    signed: bool,
    amz_date: AmzDate,
    authorization: String,
}

thread_local! {
    /// This thread's request buffers, kept between requests so that a
    /// request builds its URL and signature without allocating.
    static SCRATCH: Cell<ObjectRequest> = const {
        Cell::new(ObjectRequest {
            url: String::new(),
            signed: false,
            amz_date: [0; 16],
            authorization: String::new(),
        })
    };
}

/// Writes the URL of object `key` in `b` into `out`: the bucket's base
/// URL (path or virtual-host style, ending in `/`), then the key with
/// every byte but SigV4's unreserved ones and `/` percent-encoded, as
/// the signature's canonical URI needs it. The base URL was parsed once,
/// when the bucket was met.
fn object_url(b: &Bucket, key: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.clear();
    out.push_str(b.base_url().as_str());
    for &c in key.as_bytes() {
        if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(c));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 15)]));
        }
    }
}

/// The host (with its port, as the Host header carries it) and the path
/// of a URL made by [`object_url`].
fn host_and_path(url: &str) -> (&str, &str) {
    let from = url.find("://").map_or(0, |i| i + 3);
    let to = url[from..].find('/').map_or(url.len(), |i| from + i);
    (&url[from..to], &url[to..])
}

/// A `Range` header's value, written on the stack.
pub(super) struct RangeHeader {
    buf: [u8; 48],
}

impl Default for RangeHeader {
    fn default() -> Self {
        RangeHeader { buf: [0; 48] }
    }
}

impl RangeHeader {
    /// `bytes=FIRST-LAST`.
    pub(super) fn of(&mut self, first: u64, last: u64) -> &str {
        use std::io::Write as _;
        let mut w = &mut self.buf[..];
        // 6 + 20 + 1 + 20 bytes at most: always fits.
        let _ = write!(w, "bytes={first}-{last}");
        let n = 48 - w.len();
        std::str::from_utf8(&self.buf[..n]).unwrap_or("")
    }
}

/// An object's name in messages: `s3://bucket/key`.
pub(super) struct Loc<'a> {
    bucket: &'a str,
    key: &'a str,
}

impl<'a> Loc<'a> {
    pub(super) fn new(b: &'a Bucket, key: &'a str) -> Self {
        Loc {
            bucket: b.name(),
            key,
        }
    }
}

impl std::fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// A connection reset, refused or closed before any answer (a server
/// restarting, a kept-alive connection closed while idle).
fn retryable_io(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::ConnectionRefused
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
    )
}

/// An error that says the service is gone: no answer in time, or no
/// connection (after the retries).
fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::TimedOut
            | ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
    )
}

/// A refusal of the `If-None-Match` header itself: 501 Not Implemented,
/// or a 400 whose message names the header or says it is not
/// implemented (not EntityTooSmall, InvalidPart and the like).
fn refuses_condition(e: &io::Error) -> bool {
    let m = e.to_string();
    m.contains("HTTP 501")
        || (m.contains("HTTP 400")
            && (m.contains("NotImplemented") || m.to_ascii_lowercase().contains("if-none-match")))
}

/// The server's own failures (500, 502, 503 SlowDown, 504) may pass;
/// 501 Not Implemented will not.
fn retryable_status(status: u16) -> bool {
    (500..600).contains(&status) && status != 501
}

/// The answer when its status is 2xx, else the error it tells.
pub(super) fn success(m: Method, loc: &Loc, r: Response<Body>) -> io::Result<Response<Body>> {
    if r.status().is_success() {
        Ok(r)
    } else {
        Err(status_error(m, loc, r))
    }
}

/// Reads what is left of an answer so its connection can be reused.
pub(super) fn drain(r: &mut Response<Body>) {
    let mut reader = r.body_mut().as_reader();
    let _ = io::copy(&mut reader.by_ref().take(1 << 20), &mut io::sink());
}

pub(super) fn skip(r: &mut Response<Body>, n: u64, loc: &Loc) -> io::Result<()> {
    let mut reader = r.body_mut().as_reader();
    let got = io::copy(&mut reader.by_ref().take(n), &mut io::sink())
        .map_err(|e| body_error(Method::Get, loc, e))?;
    if got < n {
        return Err(io::Error::new(
            ErrorKind::UnexpectedEof,
            format!("S3 GET {loc}: the object ended at byte {got}, before offset {n}"),
        ));
    }
    Ok(())
}

pub(super) fn body_error(m: Method, loc: &Loc, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("S3 {} {loc}: reading the answer: {e}", m.name()),
    )
}

pub(super) fn read_text(
    r: &mut Response<Body>,
    limit: u64,
    m: Method,
    loc: &Loc,
) -> io::Result<String> {
    r.body_mut()
        .with_config()
        .limit(limit)
        .read_to_string()
        .map_err(|e| io::Error::other(format!("S3 {} {loc}: reading the answer: {e}", m.name())))
}

/// The error for an answer whose status is not 2xx: the status, S3's
/// error code and message, the request and the object.
pub(super) fn status_error(m: Method, loc: &Loc, mut r: Response<Body>) -> io::Error {
    let status = r.status();
    let detail = match m {
        Method::Head => String::new(),
        _ => {
            let text = read_text(&mut r, ERROR_BODY_BYTES, m, loc).unwrap_or_default();
            error_detail(&text)
        }
    };
    let kind = match status.as_u16() {
        404 => ErrorKind::NotFound,
        401 | 403 => ErrorKind::PermissionDenied,
        409 | 412 => ErrorKind::AlreadyExists,
        400 | 416 => ErrorKind::InvalidInput,
        408 | 504 => ErrorKind::TimedOut,
        _ => ErrorKind::Other,
    };
    let reason = status.canonical_reason().unwrap_or("");
    let sep = if detail.is_empty() { "" } else { ": " };
    let redirect = match status.is_redirection() {
        true => {
            let to = r
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("no Location");
            format!(" (a redirect to {to}: not followed, iolab sends requests to the endpoint it was given only)")
        }
        false => String::new(),
    };
    let message = format!(
        "S3 {} {loc}: HTTP {} {reason}{sep}{detail}{redirect}",
        m.name(),
        status.as_u16()
    );
    io::Error::new(
        kind,
        Refusal {
            status: Some(status.as_u16()),
            message,
        },
    )
}

/// A request the service answered with a status that is not 2xx, or
/// one refused before it was sent (`status` None): carried inside the
/// `io::Error`, so that a caller can tell an answer from a lost request.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Refusal {
    status: Option<u16>,
    message: String,
}

/// True when `e` says that the request stored nothing: it was refused
/// before it was sent, or the service answered it with a 3xx (a
/// redirect, not followed) or a 4xx. A request without an answer (a
/// timeout, a broken connection) or answered 5xx may have been stored.
pub fn stored_nothing(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|i| i.downcast_ref::<Refusal>())
        .is_some_and(|r| r.status.is_none_or(|s| (300..500).contains(&s)))
}

/// `Code: Message` from an S3 error document, or a short excerpt.
fn error_detail(body: &str) -> String {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let from = body.find(&open)? + open.len();
        let to = body[from..].find(&close)? + from;
        Some(body[from..to].trim().to_string())
    };
    match (tag("Code"), tag("Message")) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c,
        _ => body
            .chars()
            .take(200)
            .collect::<String>()
            .trim()
            .to_string(),
    }
}

/// An HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, HEAD's Last-Modified)
/// as Unix nanoseconds; 0 when it cannot be read.
pub fn http_date_ns(text: &str) -> u64 {
    jiff::fmt::rfc2822::parse(text.trim())
        .ok()
        .and_then(|z| u64::try_from(z.timestamp().as_nanosecond()).ok())
        .unwrap_or(0)
}

/// An RFC 3339 time (`2015-10-21T07:28:00.000Z`, LIST's LastModified)
/// as Unix nanoseconds; 0 when it cannot be read.
pub fn rfc3339_ns(text: &str) -> u64 {
    text.trim()
        .parse::<jiff::Timestamp>()
        .ok()
        .and_then(|t| u64::try_from(t.as_nanosecond()).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_documents_give_code_and_message() {
        let body = "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
        assert_eq!(
            error_detail(body),
            "NoSuchBucket: The specified bucket does not exist"
        );
        assert_eq!(error_detail("plain"), "plain");
        assert!(retryable_io(&io::Error::from(ErrorKind::ConnectionReset)));
        assert!(!retryable_io(&io::Error::from(ErrorKind::TimedOut)));
        assert!(retryable_status(503) && !retryable_status(501) && !retryable_status(404));
    }

    /// A one-shot service on loopback: it answers its first request 503
    /// just after the next second begins, every later one 200, and
    /// gives back the `x-amz-date` each request carried (header or
    /// query), with the dates of `tries` requests at most.
    fn flaky_service(tries: usize) -> (String, std::thread::JoinHandle<Vec<String>>) {
        use std::io::Write;
        use std::net::TcpListener;
        use std::time::{Instant, SystemTime, UNIX_EPOCH};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", l.local_addr().unwrap());
        l.set_nonblocking(true).unwrap();
        let served = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut dates = Vec::new();
            while dates.len() < tries && Instant::now() < deadline {
                let Ok((mut c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8];
                while !head.ends_with(b"\r\n\r\n") && c.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                // The header's value, or the query's (the signed-header
                // list names it too, without a value).
                let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                let at = ["x-amz-date: ", "x-amz-date="]
                    .iter()
                    .find_map(|k| text.find(k).map(|i| i + k.len()))
                    .expect("a signed request");
                dates.push(text[at..at + 16].to_string());
                let status = if dates.len() == 1 {
                    let ms = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap()
                        .subsec_millis();
                    std::thread::sleep(Duration::from_millis(u64::from(1050 - ms)));
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                };
                let answer =
                    format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                c.write_all(answer.as_bytes()).unwrap();
            }
            dates
        });
        (endpoint, served)
    }

    fn client(endpoint: &str, signing: Signing) -> Client {
        Client::new(&S3Config {
            endpoint: endpoint.to_string(),
            region: "us-east-1".to_string(),
            bucket: None,
            access_key: Some("key".to_string()),
            secret_key: Some("secret".to_string()),
            session_token: None,
            path_style: true,
            timeout: Duration::from_secs(5),
            signing,
        })
    }

    /// A retry may come a whole timeout after the try before it (in a
    /// suite run, a PUT's first three tries took 90 s, and the fourth was
    /// refused as "Request has expired"), so each try is signed when it
    /// is sent.
    #[test]
    fn every_try_is_signed_when_it_is_sent() {
        for (signing, bucket_request) in [
            (Signing::Header, false),
            (Signing::Query, false),
            (Signing::Query, true),
        ] {
            let (endpoint, served) = flaky_service(2);
            let c = client(&endpoint, signing);
            let b = c.bucket("bkt").unwrap();
            if bucket_request {
                assert!(c.head_bucket(&b).unwrap());
            } else {
                assert_eq!(c.head_object(&b, "k").unwrap(), Some(0));
            }
            let dates = served.join().unwrap();
            let what = format!("{signing:?}, bucket request {bucket_request}");
            assert_eq!((c.requests(), c.retries()), (2, 1), "{what}");
            assert_eq!(dates.len(), 2, "{what}");
            assert!(dates[1] > dates[0], "{what}: {dates:?}");
        }
    }

    /// A service on loopback that answers every request `307` to the
    /// same path on another listener, and that listener's count of
    /// connections (a redirect followed would connect there).
    fn redirecting_service() -> (String, std::net::TcpListener) {
        use std::io::Write;
        use std::net::TcpListener;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
        elsewhere.set_nonblocking(true).unwrap();
        let to = elsewhere.local_addr().unwrap();
        let endpoint = format!("http://{}", l.local_addr().unwrap());
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(mut c) = c else { return };
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8];
                while !head.ends_with(b"\r\n\r\n") && c.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                let len: u64 = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let _ = io::copy(&mut (&mut c).take(len), &mut io::sink());
                let path = text.split(' ').nth(1).unwrap_or("/").to_string();
                let answer = format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{to}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                let _ = c.write_all(answer.as_bytes());
            }
        });
        (endpoint, elsewhere)
    }

    /// ureq follows a GET's or HEAD's redirect unless told not to: the
    /// other host's answer would count as the object's. Every redirect is
    /// an error naming the request, the object and where it pointed.
    #[test]
    fn a_redirect_is_an_error_never_followed() {
        let (endpoint, elsewhere) = redirecting_service();
        for signing in [Signing::Header, Signing::Query] {
            let c = client(&endpoint, signing);
            let b = c.bucket("bkt").unwrap();
            let mut buf = [0u8; 8];
            let errors = [
                ("HEAD", c.head_object(&b, "k").map(|_| ()).unwrap_err()),
                (
                    "GET",
                    c.get_range(&b, "k", 0, &mut buf).map(|_| ()).unwrap_err(),
                ),
                ("PUT", c.put_object(&b, "k", b"data", false).unwrap_err()),
                ("DELETE", c.delete_object(&b, "k").unwrap_err()),
                ("HEAD", c.head_bucket(&b).map(|_| ()).unwrap_err()),
            ];
            for (m, e) in errors {
                let e = e.to_string();
                assert!(e.starts_with(&format!("S3 {m} s3://bkt/")), "{e}");
                assert!(e.contains("HTTP 307") && e.contains("not followed"), "{e}");
                assert!(
                    e.contains(&format!("{}", elsewhere.local_addr().unwrap())),
                    "{e}"
                );
            }
            assert_eq!(c.retries(), 0);
        }
        assert!(elsewhere.accept().is_err(), "a redirect was followed");
    }

    /// A key that climbs out of its bucket or is longer than S3 takes is
    /// never sent; such a request stored nothing, as one answered 4xx.
    #[test]
    fn bad_keys_are_not_sent_and_stored_nothing() {
        let (endpoint, elsewhere) = redirecting_service();
        let c = client(&endpoint, Signing::Header);
        let b = c.bucket("bkt").unwrap();
        let long = "k".repeat(1025);
        for key in ["../other/obj", "x/./y", long.as_str()] {
            let e = c.put_object(&b, key, b"x", false).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().starts_with("S3 PUT s3://bkt/"), "{e}");
            assert!(stored_nothing(&e), "{e}");
        }
        assert_eq!(c.requests(), 0, "a bad key was sent");
        // An answer of the service that is no success (here a redirect,
        // not followed) stored nothing; a request without an answer may
        // have been stored.
        let e = c.put_object(&b, "k", b"x", false).unwrap_err();
        assert!(stored_nothing(&e), "{e}");
        assert!(!stored_nothing(&io::Error::from(ErrorKind::TimedOut)));
        drop(elsewhere);
    }

    #[test]
    fn s3_times_read_as_unix_nanoseconds() {
        assert_eq!(
            http_date_ns("Wed, 21 Oct 2015 07:28:00 GMT"),
            1_445_412_480_000_000_000
        );
        assert_eq!(
            rfc3339_ns("2015-10-21T07:28:00.000Z"),
            1_445_412_480_000_000_000
        );
        assert_eq!(
            rfc3339_ns("2015-10-21T07:28:00.5Z"),
            1_445_412_480_500_000_000
        );
        assert_eq!(http_date_ns("yesterday"), 0);
    }
}
