//! One S3 endpoint and bucket spoken to request by request, for
//! benchmarks that time each HTTP request themselves (`iolab s3bench`):
//! plain PUT, GET (whole or ranged) with the moment its answer began,
//! HEAD, DELETE, one page of a listing, and the three requests of a
//! multipart upload. The file-system mapping of [`super::S3`] (markers,
//! exclusive creates, the run's own bucket) is not used here: keys are
//! sent as given.
//!
//! ```no_run
//! use iolab_backend::s3::{Endpoint, S3Config};
//! // The endpoint and keys from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID...
//! let opts = iolab_backend::parse_options::<&str>(&[]).unwrap();
//! let cfg = S3Config::resolve(&opts, &|v| std::env::var(v).ok()).unwrap();
//! let e = Endpoint::new(&cfg, "bench").unwrap();
//! e.put("run/0/1", b"hello").unwrap();
//! let mut scratch = vec![0u8; 64 << 10];
//! let got = e.get("run/0/1", None, &mut scratch).unwrap();
//! assert_eq!(got.bytes, 5);
//! ```

use super::client::{
    body_error, drain, read_text, skip, status_error, Client, Loc, Method, RangeHeader,
    LIST_BODY_BYTES,
};
use super::config::S3Config;
use rusty_s3::actions::{GetObject, ListObjectsV2, S3Action};
use rusty_s3::Bucket;
use std::io::{self, ErrorKind, Read};
use std::sync::Arc;
use std::time::Instant;

/// A connection pool to one endpoint, signing for one bucket.
pub struct Endpoint {
    client: Client,
    bucket: Arc<Bucket>,
}

/// What a GET read.
#[derive(Debug, Clone, Copy)]
pub struct Got {
    /// Bytes of the body.
    pub bytes: u64,
    /// When the answer's status line and headers had arrived (the first
    /// byte of the answer, as far as a client can see it).
    pub first_byte: Instant,
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
}

/// One page of a listing.
#[derive(Debug, Clone)]
pub struct Page {
    /// The objects of the page, in key order.
    pub objects: Vec<Listed>,
    /// The token that asks for the next page, if there is one.
    pub next: Option<String>,
    /// When the answer's headers had arrived.
    pub first_byte: Instant,
}

impl Endpoint {
    /// A client of `cfg.endpoint` for `bucket` (checked as a name, not
    /// asked for). Makes no request.
    pub fn new(cfg: &S3Config, bucket: &str) -> io::Result<Self> {
        // A path or query in the endpoint would put requests outside the
        // bucket: refused as the backend's own options refuse it.
        super::config::check_endpoint(&cfg.endpoint)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let client = Client::new(cfg);
        let bucket = client.bucket(bucket)?;
        Ok(Endpoint { client, bucket })
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        self.client.endpoint()
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        self.bucket.name()
    }

    /// Requests sent (retries included).
    pub fn requests(&self) -> u64 {
        self.client.requests()
    }

    /// Requests sent again after a 5xx or a broken connection.
    pub fn retries(&self) -> u64 {
        self.client.retries()
    }

    /// HEAD of the bucket: whether it exists.
    pub fn bucket_exists(&self) -> io::Result<bool> {
        self.client.head_bucket(&self.bucket)
    }

    /// PUT of a whole object (replacing one of the same key).
    pub fn put(&self, key: &str, body: &[u8]) -> io::Result<()> {
        self.client.put_object(&self.bucket, key, body, false)
    }

    /// HEAD of an object: its size, or `None` when there is none.
    pub fn head(&self, key: &str) -> io::Result<Option<u64>> {
        self.client.head_object(&self.bucket, key)
    }

    /// DELETE of an object.
    pub fn delete(&self, key: &str) -> io::Result<()> {
        self.client.delete_object(&self.bucket, key)
    }

    /// GET of an object, whole or bytes `first..=last` of it; the body
    /// is read through `scratch` (any length but 0) and dropped. A
    /// service that ignores the range sends the whole object: the bytes
    /// before `first` are skipped and those after `last` not counted.
    pub fn get(&self, key: &str, range: Option<(u64, u64)>, scratch: &mut [u8]) -> io::Result<Got> {
        let b = &*self.bucket;
        let loc = Loc::new(b, key);
        let mut header = RangeHeader::default();
        let value = range.map(|(first, last)| header.of(first, last));
        let extra: &[(&str, &str)] = match &value {
            Some(v) => &[("range", v)],
            None => &[],
        };
        let presign = || {
            GetObject::new(b, self.client.creds(), key)
                .sign(self.client.expiry())
                .into()
        };
        let mut r = self
            .client
            .send_object(Method::Get, b, key, presign, extra, &[])?;
        let first_byte = Instant::now();
        let want = match (r.status().as_u16(), range) {
            (206, Some((first, last))) => last - first + 1,
            (200, Some((first, last))) => {
                skip(&mut r, first, &loc)?;
                last - first + 1
            }
            (200, None) => u64::MAX,
            _ => return Err(status_error(Method::Get, &loc, r)),
        };
        let bytes = read_into(&mut r, scratch, want, &loc)?;
        drain(&mut r);
        Ok(Got { bytes, first_byte })
    }

    /// One page of the keys under `prefix` (no delimiter), at most
    /// `max_keys`, from `token` on.
    pub fn list(&self, prefix: &str, max_keys: usize, token: Option<&str>) -> io::Result<Page> {
        let b = &*self.bucket;
        let mut a = ListObjectsV2::new(b, self.client.creds());
        a.with_prefix(prefix);
        a.with_max_keys(max_keys);
        if let Some(t) = token {
            a.with_continuation_token(t);
        }
        let url = || a.sign(self.client.expiry());
        let loc = Loc::new(b, prefix);
        let mut r = self.client.ok(Method::Get, url, &[], &[], &loc)?;
        let first_byte = Instant::now();
        let text = read_text(&mut r, LIST_BODY_BYTES, Method::Get, &loc)?;
        let page = ListObjectsV2::parse_response(&text).map_err(|e| {
            io::Error::new(
                ErrorKind::InvalidData,
                format!("S3 list {loc}: cannot read the answer: {e}"),
            )
        })?;
        Ok(Page {
            objects: page
                .contents
                .into_iter()
                .map(|c| Listed {
                    key: c.key,
                    size: c.size.unwrap_or(0),
                })
                .collect(),
            next: page.next_continuation_token,
            first_byte,
        })
    }

    /// Starts a multipart upload of `key`; returns its id.
    pub fn create_upload(&self, key: &str) -> io::Result<String> {
        self.client.create_upload(&self.bucket, key)
    }

    /// Uploads part `part` (from 1) of an upload; returns its ETag.
    pub fn upload_part(
        &self,
        key: &str,
        upload: &str,
        part: u16,
        body: &[u8],
    ) -> io::Result<String> {
        self.client
            .upload_part(&self.bucket, key, upload, part, body)
    }

    /// Completes an upload from its parts' ETags, in part order (the
    /// object of the same key, if any, is replaced).
    pub fn complete_upload(&self, key: &str, upload: &str, etags: &[String]) -> io::Result<()> {
        self.client
            .complete_upload(&self.bucket, key, upload, etags, false)
    }

    /// Abandons an upload (its parts are dropped).
    pub fn abort_upload(&self, key: &str, upload: &str) -> io::Result<()> {
        self.client.abort_upload(&self.bucket, key, upload)
    }
}

/// Reads up to `want` bytes of the body through `scratch`; returns how
/// many came.
fn read_into(
    r: &mut ureq::http::Response<ureq::Body>,
    scratch: &mut [u8],
    want: u64,
    loc: &Loc,
) -> io::Result<u64> {
    if scratch.is_empty() {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            "GET: no buffer to read into",
        ));
    }
    let mut reader = r.body_mut().as_reader();
    let mut got = 0u64;
    while got < want {
        let room = scratch
            .len()
            .min(usize::try_from(want - got).unwrap_or(usize::MAX));
        match reader.read(&mut scratch[..room]) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(body_error(Method::Get, loc, e)),
        }
    }
    Ok(got)
}
