//! Open objects: what an open object needs (bucket, key, the upload
//! being assembled) travels in its [`Handle`](crate::Handle)'s state.
//!
//! Writes: a write of the whole object (its length given at open,
//! `OpenOptions::whole_len`) is one PUT sent at once, inside the
//! caller's timed write. Otherwise the part at offset 0 is kept until a
//! second part comes: an object written in one piece (mdtest's files)
//! is then one PUT at close; a larger one (xdd's targets) becomes a
//! multipart upload whose part n holds the bytes at `(n - 1) *
//! part_len`, completed at close. An exclusive create is exclusive
//! either way: its PUT, or its CompleteMultipartUpload, carries
//! `If-None-Match: *`.

use super::client::Client;
use rusty_s3::Bucket;
use std::io::{self, ErrorKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// S3 allows part numbers 1 to 10000.
const MAX_PARTS: u64 = 10_000;

/// One open object.
pub struct Open {
    /// Its bucket.
    pub bucket: Arc<Bucket>,
    /// Its key.
    pub key: String,
    /// Opened for writing.
    pub write: bool,
    /// Opened with create: an object is made at close even if nothing
    /// was written.
    pub create: bool,
    /// Created exclusively: its first PUT must not replace an object
    /// (`If-None-Match: *`).
    pub exclusive: bool,
    /// The object's whole length when it is written in one request: that
    /// write is sent as it comes (see `OpenOptions::whole_len`).
    pub whole_len: Option<u64>,
    /// Some bytes were read (or the object was checked) through it.
    read: AtomicBool,
    upload: Mutex<Upload>,
}

/// A write being assembled.
#[derive(Default)]
struct Upload {
    /// The part at offset 0, held until a second part comes.
    first: Option<Vec<u8>>,
    /// Bytes per part (the length of the first write seen).
    part_len: u64,
    /// The multipart upload, once there is more than one part.
    id: Option<String>,
    /// ETag of part n at index n - 1.
    etags: Vec<Option<String>>,
    /// A write failed: close abandons the upload.
    failed: bool,
    /// The object was stored whole through this handle: later PUTs
    /// replace the handle's own object, never someone else's.
    stored: bool,
    /// An exclusive create found an object of this name (HTTP 412): the
    /// object is someone else's; close says so.
    refused: bool,
}

impl Open {
    /// A handle's state for `key` in `bucket`.
    pub fn new(bucket: Arc<Bucket>, key: String, opts: crate::OpenOptions) -> Self {
        Open {
            bucket,
            key,
            write: opts.write,
            create: opts.create,
            exclusive: opts.create && opts.exclusive,
            whole_len: opts.whole_len.filter(|_| opts.write),
            read: AtomicBool::new(false),
            upload: Mutex::new(Upload::default()),
        }
    }

    fn upload(&self) -> MutexGuard<'_, Upload> {
        self.upload.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn loc(&self) -> String {
        format!("s3://{}/{}", self.bucket.name(), self.key)
    }

    /// Writes `buf` at `offset` (see the module's notes).
    pub fn write_at(&self, c: &Client, buf: &[u8], offset: u64) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let r = self.write_part(c, buf, offset);
        if let Err(e) = &r {
            let mut up = self.upload();
            up.failed = true;
            up.refused |= self.exclusive && e.kind() == ErrorKind::AlreadyExists;
        }
        r.map(|()| buf.len())
    }

    fn write_part(&self, c: &Client, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut up = self.upload();
        if up.id.is_none() && offset == 0 && self.whole_len == Some(buf.len() as u64) {
            // The whole object: sent now, inside the caller's timed write.
            up.first = None;
            let exclusive = self.exclusive && !up.stored;
            c.put_object(&self.bucket, &self.key, buf, exclusive)?;
            up.stored = true;
            return Ok(());
        }
        if up.id.is_none() && offset == 0 {
            let first = up.first.get_or_insert_with(Vec::new);
            first.clear();
            first.extend_from_slice(buf);
            up.part_len = buf.len() as u64;
            return Ok(());
        }
        if up.id.is_none() {
            // Once per object; the others wait for the id.
            up.id = Some(c.create_upload(&self.bucket, &self.key)?);
            if up.part_len == 0 {
                up.part_len = buf.len() as u64;
            }
        }
        let part = self.part_number(up.part_len, buf.len() as u64, offset)?;
        let first = up.first.take();
        let id = up.id.clone().unwrap_or_default();
        drop(up);
        if let Some(f) = first {
            let tag = c.upload_part(&self.bucket, &self.key, &id, 1, &f)?;
            self.record(1, tag);
        }
        let tag = c.upload_part(&self.bucket, &self.key, &id, part, buf)?;
        self.record(part, tag);
        Ok(())
    }

    /// Part n holds the bytes at (n - 1) * part_len: a write must start
    /// there and fit in it.
    fn part_number(&self, part_len: u64, len: u64, offset: u64) -> io::Result<u16> {
        let part = offset / part_len + 1;
        if !offset.is_multiple_of(part_len) || len > part_len || part > MAX_PARTS {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{}: S3 objects are written in whole parts of {part_len} bytes (at most {MAX_PARTS}): a write of {len} bytes at offset {offset} is not one",
                    self.loc()
                ),
            ));
        }
        Ok(part as u16)
    }

    fn record(&self, part: u16, etag: String) {
        let mut up = self.upload();
        let i = part as usize - 1;
        if up.etags.len() <= i {
            up.etags.resize(i + 1, None);
        }
        up.etags[i] = Some(etag);
    }

    /// Reads from `offset` with a ranged GET.
    pub fn read_at(&self, c: &Client, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if self.write {
            let up = self.upload();
            if up.first.is_some() || up.id.is_some() {
                return Err(io::Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "{}: an S3 object cannot be read before its upload is complete (at close)",
                        self.loc()
                    ),
                ));
            }
        }
        self.read.store(true, Ordering::Relaxed);
        c.get_range(&self.bucket, &self.key, offset, buf)
    }

    /// Finishes the object: one PUT, or the multipart upload completed.
    /// A handle opened for reading through which nothing was read checks
    /// that the object is there (HEAD), as opening a file would. An
    /// exclusive create that found the object already there is an
    /// `AlreadyExists` error here too (also when its write said so
    /// first), so that the caller never takes the object for its own.
    pub fn close(&self, c: &Client) -> io::Result<()> {
        if !self.write {
            if self.read.load(Ordering::Relaxed) {
                return Ok(());
            }
            return match c.head_object(&self.bucket, &self.key)? {
                Some(_) => Ok(()),
                None => Err(io::Error::new(
                    ErrorKind::NotFound,
                    format!("{}: no such object", self.loc()),
                )),
            };
        }
        let mut up = std::mem::take(&mut *self.upload());
        let refused = up.refused;
        match (up.id.take(), up.first.take()) {
            (Some(id), _) if up.failed => {
                let _ = c.abort_upload(&self.bucket, &self.key, &id);
                self.refused_error(refused)
            }
            (Some(id), _) => self.complete(c, &id, up.etags, self.exclusive && !up.stored),
            (None, Some(first)) if !up.failed => {
                let exclusive = self.exclusive && !up.stored;
                c.put_object(&self.bucket, &self.key, &first, exclusive)
            }
            (None, None) if self.create && !up.failed && !up.stored => {
                c.put_object(&self.bucket, &self.key, &[], self.exclusive)
            }
            _ => self.refused_error(refused),
        }
    }

    fn refused_error(&self, refused: bool) -> io::Result<()> {
        match refused {
            true => Err(io::Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "{}: an object of this name was already there (HTTP 412 to If-None-Match: *): this create was exclusive and did not replace it",
                    self.loc()
                ),
            )),
            false => Ok(()),
        }
    }

    /// Completes upload `id`; `exclusive`: never over an object already
    /// there (`If-None-Match: *`).
    fn complete(
        &self,
        c: &Client,
        id: &str,
        etags: Vec<Option<String>>,
        exclusive: bool,
    ) -> io::Result<()> {
        let n = etags.len();
        let parts: Option<Vec<String>> = etags.into_iter().collect();
        let Some(parts) = parts else {
            let _ = c.abort_upload(&self.bucket, &self.key, id);
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{}: parts missing below part {n}: an S3 object must be written without holes; the upload was abandoned",
                    self.loc()
                ),
            ));
        };
        let r = c.complete_upload(&self.bucket, &self.key, id, &parts, exclusive);
        if r.is_err() {
            let _ = c.abort_upload(&self.bucket, &self.key, id);
        }
        r.map_err(|e| match e.to_string().contains("EntityTooSmall") {
            true => io::Error::new(
                e.kind(),
                format!("{e} (every part but the last must be at least 5 MiB: write in larger requests)"),
            ),
            false => e,
        })
    }
}
