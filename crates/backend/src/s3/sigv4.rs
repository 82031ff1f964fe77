//! SigV4 in headers (`Authorization`), for the requests of the item
//! loops (HEAD, GET, PUT, DELETE of an object: no query string). A
//! presigned URL (rusty-s3) derives the signing key again for every
//! request (four HMACs) and gives the server a longer URL to parse; here
//! the day's key is derived once and a request costs one SHA-256 and one
//! HMAC, as in the AWS SDKs and minio-go. The payload is not signed
//! (`UNSIGNED-PAYLOAD`), as with presigned URLs.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

const UNSIGNED: &str = "UNSIGNED-PAYLOAD";

/// Signs requests with one set of credentials for one region.
pub struct HeaderSigner {
    key: String,
    secret: String,
    token: Option<String>,
    region: String,
    /// (days since the epoch, that day's signing key).
    day_key: Mutex<(u64, [u8; 32])>,
}

/// The headers a signed request carries.
pub struct Signed {
    /// `x-amz-date`: `YYYYMMDDTHHMMSSZ`.
    pub amz_date: String,
    /// `authorization`.
    pub authorization: String,
}

impl HeaderSigner {
    /// A signer for these credentials.
    pub fn new(key: &str, secret: &str, token: Option<&str>, region: &str) -> Self {
        HeaderSigner {
            key: key.into(),
            secret: secret.into(),
            token: token.filter(|t| !t.is_empty()).map(str::to_string),
            region: region.into(),
            day_key: Mutex::new((u64::MAX, [0; 32])),
        }
    }

    /// The session token to send as `x-amz-security-token`, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Signs `method` on `host` (as the Host header carries it) and
    /// `path` (percent-encoded as sent), without a query string.
    pub fn sign(&self, method: &str, host: &str, path: &str) -> Signed {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.sign_at(secs, method, host, path)
    }

    fn sign_at(&self, secs: u64, method: &str, host: &str, path: &str) -> Signed {
        let amz_date = amz_date(secs);
        let day = &amz_date[..8];
        let (signed_headers, token_line) = match &self.token {
            Some(t) => (
                "host;x-amz-content-sha256;x-amz-date;x-amz-security-token",
                format!("x-amz-security-token:{t}\n"),
            ),
            None => ("host;x-amz-content-sha256;x-amz-date", String::new()),
        };
        let canonical = format!(
            "{method}\n{path}\n\nhost:{host}\nx-amz-content-sha256:{UNSIGNED}\nx-amz-date:{amz_date}\n{token_line}\n{signed_headers}\n{UNSIGNED}"
        );
        let scope = format!("{day}/{}/s3/aws4_request", self.region);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex(&Sha256::digest(canonical.as_bytes()))
        );
        let key = self.day_key(secs / 86_400, day);
        let signature = hex(&hmac(&key, to_sign.as_bytes()));
        Signed {
            authorization: format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
                self.key
            ),
            amz_date,
        }
    }

    /// The signing key of `day` (derived once a day).
    fn day_key(&self, days: u64, yyyymmdd: &str) -> [u8; 32] {
        let mut cached = self.day_key.lock().unwrap_or_else(|p| p.into_inner());
        if cached.0 != days {
            let k = hmac(
                format!("AWS4{}", self.secret).as_bytes(),
                yyyymmdd.as_bytes(),
            );
            let k = hmac(&k, self.region.as_bytes());
            let k = hmac(&k, b"s3");
            *cached = (days, hmac(&k, b"aws4_request"));
        }
        cached.1
    }
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length: new_from_slice cannot fail.
    let mut m = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    m.update(data);
    m.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `YYYYMMDDTHHMMSSZ` of `secs` since the epoch (UTC).
fn amz_date(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(amz_date(0), "19700101T000000Z");
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(amz_date(951_782_400 + 3661), "20000229T010101Z");
    }

    /// The signing key of AWS's documented example (its secret, day and
    /// region), as Python's hmac computes it too.
    #[test]
    fn the_signing_key_follows_sigv4() {
        let s = HeaderSigner::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
            "us-east-1",
        );
        let k = s.day_key(15_849, "20130524");
        assert_eq!(
            hex(&k),
            "dbb893acc010964918f1fd433add87c70e8b0db6be30c1fbeafefa5ec6ba8378"
        );
        let a = s
            .sign_at(1_369_353_600, "HEAD", "h:1", "/b/k")
            .authorization;
        assert!(a.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="), "{a}");
    }
}
