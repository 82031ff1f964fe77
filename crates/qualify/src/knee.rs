//! Where a curve stops growing. A curve's points are measured in order
//! (x doubling); after each, the curve goes on only if that point
//! gained at least the plan's fraction over the one before, in at least
//! one of the figures it watches (mdtest's create, stat and remove; a
//! survey's write and read). So nobody has to guess the range: a curve
//! ends one point after its knee, or at its cap.
//!
//! ```
//! use iolab_qualify::knee::{next, Next, Stop};
//! // 100, 190 (+90 %), 200 (+5 %): flat after the second point.
//! let seen = [Some(vec![100.0]), Some(vec![190.0]), Some(vec![200.0])];
//! assert_eq!(next(&seen, 5, 0.1), Next::Done(Stop::Flattened { at: 1 }));
//! assert_eq!(next(&seen[..2], 5, 0.1), Next::Run(2));
//! ```

use serde::Serialize;

/// 1, 2, 4, ... up to `cap`, and `cap` itself.
pub fn doubling(cap: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut x = 1u32;
    while x < cap {
        v.push(x);
        x = x.saturating_mul(2);
    }
    v.push(cap.max(1));
    v
}

/// Why a curve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "stop", rename_all = "snake_case")]
pub enum Stop {
    /// The point after `at` gained less than the fraction: the curve
    /// flattened at point `at`.
    Flattened {
        /// The last point that gained.
        at: usize,
    },
    /// Every point up to the cap was measured, each still gaining.
    Cap,
    /// Point `at` gave no result (every repeat failed): the curve ends
    /// there.
    Failed {
        /// The point.
        at: usize,
    },
}

/// What to do next on a curve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Measure point `i` (the points before it are measured).
    Run(usize),
    /// The curve is complete.
    Done(Stop),
}

/// Whether `cur` gained at least `fraction` over `prev` in any figure.
pub fn gained(prev: &[f64], cur: &[f64], fraction: f64) -> bool {
    prev.iter()
        .zip(cur)
        .any(|(p, c)| *c > *p * (1.0 + fraction) || (*p <= 0.0 && *c > 0.0))
}

/// The next step of a curve of `len` points, given the points measured
/// so far, in order: each the figures watched (their means over the
/// completed repeats), or None when the point gave no result.
pub fn next(seen: &[Option<Vec<f64>>], len: usize, fraction: f64) -> Next {
    for (i, s) in seen.iter().enumerate() {
        let Some(cur) = s else {
            return Next::Done(Stop::Failed { at: i });
        };
        if i > 0 {
            if let Some(prev) = &seen[i - 1] {
                if !gained(prev, cur, fraction) {
                    return Next::Done(Stop::Flattened { at: i - 1 });
                }
            }
        }
    }
    match seen.len() < len {
        true => Next::Run(seen.len()),
        false => Next::Done(Stop::Cap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[f64]) -> Vec<Option<Vec<f64>>> {
        x.iter().map(|&x| Some(vec![x])).collect()
    }

    #[test]
    fn a_curve_grows_until_a_point_gains_too_little() {
        assert_eq!(next(&[], 4, 0.1), Next::Run(0));
        assert_eq!(next(&v(&[1.0]), 4, 0.1), Next::Run(1));
        assert_eq!(
            next(&v(&[1.0, 2.0, 2.05]), 4, 0.1),
            Next::Done(Stop::Flattened { at: 1 })
        );
        // A drop is flat too.
        assert_eq!(
            next(&v(&[1.0, 0.5]), 4, 0.1),
            Next::Done(Stop::Flattened { at: 0 })
        );
        assert_eq!(
            next(&v(&[1.0, 2.0, 4.0, 8.0]), 4, 0.1),
            Next::Done(Stop::Cap)
        );
        assert_eq!(next(&v(&[1.0]), 1, 0.1), Next::Done(Stop::Cap));
    }

    #[test]
    fn any_watched_figure_still_growing_keeps_the_curve_going() {
        let seen = [Some(vec![10.0, 100.0]), Some(vec![10.0, 150.0])];
        assert_eq!(next(&seen, 3, 0.1), Next::Run(2));
        let flat = [Some(vec![10.0, 100.0]), Some(vec![10.5, 105.0])];
        assert_eq!(next(&flat, 3, 0.1), Next::Done(Stop::Flattened { at: 0 }));
    }

    #[test]
    fn a_point_without_result_ends_the_curve() {
        let seen = [Some(vec![1.0]), None];
        assert_eq!(next(&seen, 3, 0.1), Next::Done(Stop::Failed { at: 1 }));
        assert_eq!(next(&[None], 3, 0.1), Next::Done(Stop::Failed { at: 0 }));
    }

    #[test]
    fn growth_from_zero_counts() {
        assert!(gained(&[0.0], &[1.0], 0.1));
        assert!(!gained(&[0.0], &[0.0], 0.1));
    }
}
