//! Values as warp users type them: Go durations (`1m30s`), sizes with
//! binary units (`10MiB`, `1KB` = 1024), size buckets
//! (`4096:10740,8192:1685`), and host lists with warp's ranges
//! (`s3-{1...4}:9000`). Each parser returns a message for the option's
//! error.

pub use crate::error::ValueError;
use crate::sizes::{Bucket, Sizes};
use iolab_core::units::parse_size;

fn invalid(value: &str, why: impl Into<String>) -> ValueError {
    ValueError::Invalid {
        value: value.to_string(),
        why: why.into(),
    }
}

pub use crate::error::MAX_HOSTS;

/// A Go duration: a sequence of numbers with units `h`, `m`, `s`, `ms`,
/// `us`, `ns` (`5m`, `1m30s`, `1.5s`, `250ms`); a bare number is seconds.
pub fn duration_s(text: &str) -> Result<f64, ValueError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ValueError::Missing(
            "give a duration (5m, 1m30s, 10s, 500ms)",
        ));
    }
    if let Ok(v) = t.parse::<f64>() {
        return finite(v, text);
    }
    let mut total = 0.0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| invalid(text, "a number needs a unit (h, m, s, ms)"))?;
        let (num, tail) = rest.split_at(digits);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let v: f64 = num.parse().map_err(|_| ValueError::NotADuration {
            value: text.to_string(),
            hint: " (5m, 1m30s, 10s, 500ms)",
        })?;
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => {
                return Err(invalid(
                    text,
                    format!("unknown unit '{unit}' (h, m, s, ms)"),
                ))
            }
        };
        total += v * scale;
        rest = next;
    }
    finite(total, text)
}

fn finite(v: f64, text: &str) -> Result<f64, ValueError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ValueError::NotADuration {
            value: text.to_string(),
            hint: "",
        })
    }
}

/// `--obj.size`: one size (`10MiB`), or buckets `SIZE:WEIGHT,...`;
/// `random` makes one size the largest of warp's random sizes.
pub fn obj_size(text: &str, random: bool) -> Result<Sizes, ValueError> {
    if !text.contains(':') {
        let n = parse_size(text)?;
        return Ok(match random {
            true => Sizes::Random { max: n },
            false => Sizes::Fixed(n),
        });
    }
    if random {
        // Each bucket's sizes are drawn already: the flag would change
        // nothing, so it is refused rather than ignored.
        return Err(invalid(
            text,
            "--obj.randsize takes one size (the largest); weighted buckets SIZE:WEIGHT draw their sizes already",
        ));
    }
    let mut buckets = Vec::new();
    for part in text.split(',') {
        let (size, weight) = part
            .split_once(':')
            .ok_or_else(|| invalid(part, "give SIZE:WEIGHT"))?;
        buckets.push(Bucket {
            upto: parse_size(size)?,
            weight: weight
                .trim()
                .parse()
                .map_err(|_| invalid(part, "the weight is a whole number"))?,
        });
    }
    Ok(Sizes::Buckets(buckets))
}

/// `--host`: endpoints separated by commas, each `HOST:PORT` or a URL
/// (`http://HOST:PORT`); `{A...B}` in a name expands to the numbers A
/// to B, as in warp. A name without a scheme gets `https://` with
/// `tls`, else `http://`.
pub fn hosts(text: &str, tls: bool) -> Result<Vec<String>, ValueError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        for h in expand(item)? {
            let url = match h.contains("://") {
                true => h.trim_end_matches('/').to_string(),
                false if tls => format!("https://{h}"),
                false => format!("http://{h}"),
            };
            if !out.contains(&url) {
                out.push(url);
            }
            if out.len() > MAX_HOSTS {
                return Err(ValueError::TooManyHosts);
            }
        }
    }
    if out.is_empty() {
        return Err(ValueError::Missing(
            "give at least one endpoint (HOST:PORT)",
        ));
    }
    Ok(out)
}

/// `a{1...3}b` -> `a1b`, `a2b`, `a3b` (every range of the name, left to
/// right).
fn expand(item: &str) -> Result<Vec<String>, ValueError> {
    let Some(open) = item.find('{') else {
        return Ok(vec![item.to_string()]);
    };
    let close = item[open..]
        .find('}')
        .map(|i| open + i)
        .ok_or_else(|| invalid(item, "a '{' without its '}'"))?;
    let (lo, hi) = item[open + 1..close]
        .split_once("...")
        .ok_or_else(|| invalid(item, "a range is {FIRST...LAST}"))?;
    let width = lo.len();
    let (lo, hi): (u64, u64) = match (lo.parse(), hi.parse()) {
        (Ok(a), Ok(b)) if a <= b && b - a < MAX_HOSTS as u64 => (a, b),
        _ => {
            return Err(invalid(
                item,
                format!("a range is {{FIRST...LAST}}, rising, at most {MAX_HOSTS}"),
            ))
        }
    };
    let mut out = Vec::new();
    for n in lo..=hi {
        // `{01...10}` keeps its zeros, as warp's ellipses.
        let name = format!("{}{n:0width$}{}", &item[..open], &item[close + 1..]);
        out.extend(expand(&name)?);
        if out.len() > MAX_HOSTS {
            return Err(invalid(item, format!("more than {MAX_HOSTS} endpoints")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(duration_s("5m").unwrap(), 300.0);
        assert_eq!(duration_s("1m30s").unwrap(), 90.0);
        assert_eq!(duration_s("250ms").unwrap(), 0.25);
        assert_eq!(duration_s("1.5s").unwrap(), 1.5);
        assert_eq!(duration_s("6").unwrap(), 6.0);
        assert_eq!(duration_s("1h").unwrap(), 3600.0);
        for bad in ["", "5x", "m", "-1s", "1s2"] {
            assert!(duration_s(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_buckets() {
        assert_eq!(obj_size("10MiB", false).unwrap(), Sizes::Fixed(10 << 20));
        assert_eq!(obj_size("1KB", false).unwrap(), Sizes::Fixed(1024));
        assert_eq!(
            obj_size("1MiB", true).unwrap(),
            Sizes::Random { max: 1 << 20 }
        );
        let b = obj_size("4096:10740,8192:1685", false).unwrap();
        assert_eq!(
            b,
            Sizes::Buckets(vec![
                Bucket {
                    upto: 4096,
                    weight: 10740
                },
                Bucket {
                    upto: 8192,
                    weight: 1685
                }
            ])
        );
        assert!(obj_size("4096:x", false).is_err());
        assert!(obj_size("ten", false).is_err());
        // --obj.randsize would change nothing in weighted buckets.
        assert!(obj_size("4096:1,8192:1", true).is_err());
    }

    #[test]
    fn host_lists_expand() {
        assert_eq!(
            hosts("a:9000,b:9000", false).unwrap(),
            vec!["http://a:9000", "http://b:9000"]
        );
        assert_eq!(
            hosts("s3-{1...3}:9000", true).unwrap(),
            vec![
                "https://s3-1:9000",
                "https://s3-2:9000",
                "https://s3-3:9000"
            ]
        );
        assert_eq!(hosts("h{08...10}", false).unwrap()[0], "http://h08");
        assert_eq!(hosts("http://x:1/", false).unwrap(), vec!["http://x:1"]);
        for bad in ["", "a{1...}", "a{3...1}", "a{1..3}", "a{1...5000}"] {
            assert!(hosts(bad, false).is_err(), "{bad}");
        }
    }
}
