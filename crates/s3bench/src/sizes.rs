//! Object sizes: fixed (`--obj.size 4KiB`), random up to a largest
//! size as warp draws them (`--obj.randsize`), or weighted buckets
//! (`--obj.size 4096:10740,8192:1685`). A size is a pure function of a
//! 64-bit random value, so an object's size follows from the run's seed
//! and the object's number alone, on every rank, without being stored.

use crate::error::ValueError;
use iolab_core::random::{below, mix};
use serde::{Deserialize, Serialize};

/// Largest object (S3's limit for one PUT).
pub const MAX_OBJECT: u64 = 5 << 30;

/// How object sizes are chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sizes {
    /// Every object this size.
    Fixed(u64),
    /// warp's `--obj.randsize`: log2-distributed up to `max` (see
    /// [`random_size`]).
    Random {
        /// The largest size (`--obj.size`).
        max: u64,
    },
    /// Weighted buckets, each drawn uniformly above the one before it.
    Buckets(Vec<Bucket>),
}

/// One weighted bucket: sizes above the previous bucket's `upto` (0 for
/// the first), up to and including this `upto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// The largest size of the bucket.
    pub upto: u64,
    /// Its weight.
    pub weight: u64,
}

impl Sizes {
    /// The size drawn by the uniform 64-bit value `x`.
    pub fn pick(&self, x: u64) -> u64 {
        match self {
            Sizes::Fixed(n) => *n,
            Sizes::Random { max } => random_size(unit(x), *max),
            Sizes::Buckets(b) => bucket_size(b, x),
        }
    }

    /// The largest size it can draw.
    pub fn max(&self) -> u64 {
        match self {
            Sizes::Fixed(n) => *n,
            Sizes::Random { max } => *max,
            Sizes::Buckets(b) => b.iter().map(|b| b.upto).max().unwrap_or(0),
        }
    }

    /// Checks the sizes (the error is for `--obj.size`).
    pub fn validate(&self) -> Result<(), ValueError> {
        let max = MAX_OBJECT;
        match self {
            Sizes::Fixed(n) if !(1..=max).contains(n) => Err(ValueError::Bounds {
                size: *n,
                why: "give 1 byte to 5GiB (S3's largest PUT)",
            }),
            Sizes::Random { max: m } if !(256..=max).contains(m) => Err(ValueError::Bounds {
                size: *m,
                why: "with --obj.randsize give 256 bytes to 5GiB (as warp)",
            }),
            Sizes::Buckets(b) => check_buckets(b),
            _ => Ok(()),
        }
    }
}

fn check_buckets(b: &[Bucket]) -> Result<(), ValueError> {
    if b.is_empty() || b.len() > 1000 {
        return Err(ValueError::Missing("give 1 to 1000 SIZE:WEIGHT buckets"));
    }
    let mut last = 0;
    for k in b {
        if k.upto <= last || k.upto > MAX_OBJECT {
            return Err(ValueError::Bucket(k.upto));
        }
        last = k.upto;
    }
    if b.iter().map(|k| k.weight).sum::<u64>() == 0 {
        return Err(ValueError::Missing("the buckets' weights add up to 0"));
    }
    Ok(())
}

/// A uniform value in `[0, 1)` from 64 random bits (the top 53).
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// warp's random size for a uniform `u` in `[0, 1)` and largest size
/// `max`: with `L = log2(max - 1)` and `L0 = max(7, L - 8)`, let
/// `x = u (L - L0)`; the size is `1 + 2^(L0 + x)` when `x > 1`, else
/// `1 + u 2^(L0 + 1)`. So each doubling of size from `2^(L0+1)` to
/// about `max` holds the same number of objects, `1/(L - L0)` of them,
/// and the last `1/(L - L0)` are spread evenly over the smallest sizes.
/// Below 10 bytes the size is uniform in `1..=max`.
pub fn random_size(u: f64, max: u64) -> u64 {
    if max < 10 {
        return 1 + (u * max as f64) as u64;
    }
    let l = ((max - 1) as f64).log2();
    let l0 = (l - 8.0).max(7.0);
    let x = u * (l - l0);
    let size = if x > 1.0 {
        1.0 + (l0 + x).exp2()
    } else {
        1.0 + u * (l0 + 1.0).exp2()
    };
    (size as u64).clamp(1, max)
}

fn bucket_size(b: &[Bucket], x: u64) -> u64 {
    let total: u64 = b.iter().map(|k| k.weight).sum();
    // x chooses the bucket, a mix of it the size inside.
    let mut at = below(x, total.max(1));
    let mut low = 0;
    for k in b {
        if at < k.weight {
            let span = k.upto - low;
            return low + 1 + below(mix(x), span);
        }
        at -= k.weight;
        low = k.upto;
    }
    b.last().map_or(1, |k| k.upto)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::random::splitmix_nth;

    #[test]
    fn random_sizes_fall_evenly_into_doublings() {
        let max = 1u64 << 20;
        let n = 80_000;
        // L = log2(2^20 - 1) is just under 20, so L0 = 12 and 8 classes:
        // the 7 doublings from 8 KiB up, and the smallest sizes.
        let mut per = [0u32; 8];
        for i in 0..n {
            let s = Sizes::Random { max }.pick(splitmix_nth(9, i));
            assert!((1..=max).contains(&s));
            let class = match s {
                0..=8192 => 0,
                _ => (63 - (s - 1).leading_zeros()) as usize - 12,
            };
            per[class] += 1;
        }
        for (c, k) in per.iter().enumerate() {
            let share = f64::from(*k) / n as f64;
            assert!((share - 0.125).abs() < 0.01, "class {c}: {share}");
        }
        // warp: the mean is about 0.179 of the largest size.
        let mean: f64 = (0..n)
            .map(|i| Sizes::Random { max }.pick(splitmix_nth(3, i)) as f64)
            .sum::<f64>()
            / n as f64;
        assert!((mean / max as f64 - 0.179).abs() < 0.01, "{mean}");
    }

    #[test]
    fn buckets_follow_their_weights() {
        let b = vec![
            Bucket {
                upto: 4096,
                weight: 3,
            },
            Bucket {
                upto: 8192,
                weight: 1,
            },
        ];
        let s = Sizes::Buckets(b);
        assert!(s.validate().is_ok());
        let n = 40_000;
        let small = (0..n)
            .map(|i| s.pick(splitmix_nth(5, i)))
            .inspect(|v| assert!((1..=8192).contains(v)))
            .filter(|v| *v <= 4096)
            .count();
        assert!((small as f64 / n as f64 - 0.75).abs() < 0.01, "{small}");
        assert!(Sizes::Buckets(vec![]).validate().is_err());
        let falling = Sizes::Buckets(vec![
            Bucket { upto: 8, weight: 1 },
            Bucket { upto: 4, weight: 1 },
        ]);
        assert!(falling.validate().is_err());
        assert!(Sizes::Random { max: 100 }.validate().is_err());
    }
}
