//! SigV4 in headers (`Authorization`), for the requests of the item
//! loops (HEAD, GET, PUT, DELETE of an object: no query string). A
//! presigned URL (rusty-s3) derives the signing key again for every
//! request (four HMACs) and gives the server a longer URL to parse; here
//! the day's key is derived once, its HMAC state keyed once, and a
//! request costs one SHA-256 and one HMAC, as in the AWS SDKs and
//! minio-go. The canonical request and the string to sign are fed to the
//! hashes piece by piece and the date and hex digits written into stack
//! arrays: signing allocates nothing but the header value it returns.
//! The payload is not signed (`UNSIGNED-PAYLOAD`), as with presigned
//! URLs.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::sync::RwLock;
use std::time::{SystemTime, UNIX_EPOCH};

const UNSIGNED: &str = "UNSIGNED-PAYLOAD";

/// Signs requests with one set of credentials for one region.
pub struct HeaderSigner {
    key: String,
    secret: String,
    token: Option<String>,
    region: String,
    /// `host;x-amz-content-sha256;x-amz-date[;x-amz-security-token]`.
    signed_headers: &'static str,
    /// The day's key, derived at the first request of each day.
    day: RwLock<DayKey>,
}

/// What is fixed for a day: the scope's date and the keyed HMAC state.
#[derive(Clone)]
struct DayKey {
    /// Days since the epoch (`u64::MAX`: none yet).
    days: u64,
    /// The day's signing key, for tests.
    #[cfg(test)]
    key: [u8; 32],
    /// HMAC-SHA256 keyed with the signing key, cloned per request.
    mac: Option<Hmac<Sha256>>,
}

/// An `x-amz-date` value: `YYYYMMDDTHHMMSSZ`.
pub type AmzDate = [u8; 16];

/// The text of an [`AmzDate`].
pub fn date_text(d: &AmzDate) -> &str {
    // Written from ASCII digits, 'T' and 'Z' only.
    std::str::from_utf8(d).unwrap_or("")
}

impl HeaderSigner {
    /// A signer for these credentials.
    pub fn new(key: &str, secret: &str, token: Option<&str>, region: &str) -> Self {
        let token = token.filter(|t| !t.is_empty()).map(str::to_string);
        HeaderSigner {
            key: key.into(),
            secret: secret.into(),
            signed_headers: match token {
                Some(_) => "host;x-amz-content-sha256;x-amz-date;x-amz-security-token",
                None => "host;x-amz-content-sha256;x-amz-date",
            },
            token,
            region: region.into(),
            day: RwLock::new(DayKey {
                days: u64::MAX,
                #[cfg(test)]
                key: [0; 32],
                mac: None,
            }),
        }
    }

    /// The session token to send as `x-amz-security-token`, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Signs `method` on `host` (as the Host header carries it) and
    /// `path` (percent-encoded as sent), without a query string: writes
    /// the `authorization` header's value into `auth` (cleared first, so
    /// a caller can keep one buffer) and returns the `x-amz-date`.
    pub fn sign(&self, method: &str, host: &str, path: &str, auth: &mut String) -> AmzDate {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.sign_at(secs, method, host, path, auth)
    }

    fn sign_at(
        &self,
        secs: u64,
        method: &str,
        host: &str,
        path: &str,
        authorization: &mut String,
    ) -> AmzDate {
        let amz_date = amz_date(secs);
        let date = std::str::from_utf8(&amz_date).unwrap_or("");
        let day = &date[..8];
        let mut c = Sha256::new();
        for part in [
            method,
            "\n",
            path,
            "\n\nhost:",
            host,
            "\nx-amz-content-sha256:",
        ] {
            c.update(part);
        }
        for part in [UNSIGNED, "\nx-amz-date:", date, "\n"] {
            c.update(part);
        }
        if let Some(t) = &self.token {
            for part in ["x-amz-security-token:", t, "\n"] {
                c.update(part);
            }
        }
        for part in ["\n", self.signed_headers, "\n", UNSIGNED] {
            c.update(part);
        }
        let canonical_hash = hex(&c.finalize());
        let mut mac = self.day_mac(secs / 86_400, day);
        for part in ["AWS4-HMAC-SHA256\n", date, "\n", day, "/", &self.region] {
            mac.update(part.as_bytes());
        }
        mac.update(b"/s3/aws4_request\n");
        mac.update(&canonical_hash);
        let signature = hex(&mac.finalize().into_bytes());
        authorization.clear();
        for part in [
            "AWS4-HMAC-SHA256 Credential=",
            &self.key,
            "/",
            day,
            "/",
            &self.region,
            "/s3/aws4_request, SignedHeaders=",
            self.signed_headers,
            ", Signature=",
            std::str::from_utf8(&signature).unwrap_or(""),
        ] {
            authorization.push_str(part);
        }
        amz_date
    }

    /// The HMAC state keyed with the signing key of `days` (derived and
    /// keyed once a day; a clone per request).
    fn day_mac(&self, days: u64, yyyymmdd: &str) -> Hmac<Sha256> {
        {
            let d = self.day.read().unwrap_or_else(|p| p.into_inner());
            if let (true, Some(m)) = (d.days == days, &d.mac) {
                return m.clone();
            }
        }
        let k = hmac(
            format!("AWS4{}", self.secret).as_bytes(),
            yyyymmdd.as_bytes(),
        );
        let k = hmac(&k, self.region.as_bytes());
        let k = hmac(&k, b"s3");
        let key = hmac(&k, b"aws4_request");
        let mac = keyed(&key);
        let mut d = self.day.write().unwrap_or_else(|p| p.into_inner());
        *d = DayKey {
            days,
            #[cfg(test)]
            key,
            mac: Some(mac.clone()),
        };
        mac
    }
}

/// HMAC-SHA256 keyed with `key`.
fn keyed(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length: new_from_slice cannot fail.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable_key(),
    }
}

#[cold]
fn unreachable_key() -> Hmac<Sha256> {
    // Not reached (see keyed); a fixed key keeps the signature wrong, so
    // the server refuses the request rather than anything panicking.
    <Hmac<Sha256> as hmac::digest::KeyInit>::new(&Default::default())
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = keyed(key);
    m.update(data);
    m.finalize().into_bytes().into()
}

/// Lower-case hex digits of a 32-byte digest.
fn hex(bytes: &[u8]) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (i, b) in bytes.iter().take(32).enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 15)];
    }
    out
}

/// `YYYYMMDDTHHMMSSZ` of `secs` since the epoch (UTC).
fn amz_date(secs: u64) -> [u8; 16] {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let mut out = *b"00000000T000000Z";
    let mut put = |at: usize, width: usize, mut v: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y.clamp(0, 9999) as u64);
    put(4, 2, u64::from(m));
    put(6, 2, u64::from(d));
    put(9, 2, rem / 3600);
    put(11, 2, rem / 60 % 60);
    put(13, 2, rem % 60);
    out
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

    fn text(b: &[u8]) -> &str {
        std::str::from_utf8(b).unwrap()
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(text(&amz_date(0)), "19700101T000000Z");
        assert_eq!(text(&amz_date(1_369_353_600)), "20130524T000000Z");
        assert_eq!(text(&amz_date(951_782_400 + 3661)), "20000229T010101Z");
    }

    /// SigV4 written out as AWS documents it, one string at a time.
    fn reference(s: &HeaderSigner, amz_date: &str, method: &str, host: &str, path: &str) -> String {
        let day = &amz_date[..8];
        let token_line = match &s.token {
            Some(t) => format!("x-amz-security-token:{t}\n"),
            None => String::new(),
        };
        let sh = s.signed_headers;
        let canonical = format!("{method}\n{path}\n\nhost:{host}\nx-amz-content-sha256:{UNSIGNED}\nx-amz-date:{amz_date}\n{token_line}\n{sh}\n{UNSIGNED}");
        let scope = format!("{day}/{}/s3/aws4_request", s.region);
        let digest = hex(&Sha256::digest(canonical.as_bytes()));
        let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", text(&digest));
        let k = hmac(format!("AWS4{}", s.secret).as_bytes(), day.as_bytes());
        let k = hmac(
            &hmac(&hmac(&k, s.region.as_bytes()), b"s3"),
            b"aws4_request",
        );
        let sig = hex(&hmac(&k, to_sign.as_bytes()));
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={sh}, Signature={}",
            s.key,
            text(&sig)
        )
    }

    /// The signing key of AWS's documented example (its secret, day and
    /// region), as Python's hmac computes it too; the signatures equal
    /// the ones of SigV4 written out string by string, with and without
    /// a session token, across a change of day.
    #[test]
    fn the_signing_key_and_signatures_follow_sigv4() {
        let s = HeaderSigner::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
            "us-east-1",
        );
        let mut a = String::new();
        s.sign_at(1_369_353_600, "HEAD", "h:1", "/b/k", &mut a);
        assert_eq!(
            text(&hex(&s.day.read().unwrap().key)),
            "dbb893acc010964918f1fd433add87c70e8b0db6be30c1fbeafefa5ec6ba8378"
        );
        assert!(a.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="), "{a}");
        let t = HeaderSigner::new("AK", "secret", Some("tok"), "eu-west-3");
        for (signer, secs) in [
            (&s, 1_369_353_600),
            (&s, 1_369_353_600 + 86_400 + 5),
            (&t, 1_700_000_000),
        ] {
            for (m, path) in [
                ("HEAD", "/b/k"),
                ("PUT", "/bkt/a%20b/c.1"),
                ("DELETE", "/x/"),
            ] {
                // The buffer is reused: what was in it must not matter.
                let date = signer.sign_at(secs, m, "127.0.0.1:8333", path, &mut a);
                let want = reference(signer, date_text(&date), m, "127.0.0.1:8333", path);
                assert_eq!(a, want);
            }
        }
    }
}
