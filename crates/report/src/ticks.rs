//! What the charts' axes say, as pure functions: tick labels a reader
//! takes in at a glance (`700k`, `2.5M`: the unit is in the axis title)
//! and the x axis' scale. Thread, rank and size counts that double from
//! point to point go on a log2 axis, as seed 003's charts space them: 1,
//! 2 and 4 threads equally apart, no empty tick for 3.
//!
//! ```
//! use iolab_report::ticks::{si, XScale};
//! assert_eq!(si(2_500_000.0), "2.5M");
//! let x = XScale::for_values(&[1.0, 2.0, 4.0]);
//! assert_eq!(x, XScale::Log2);
//! assert_eq!(x.ticks(&[1.0, 2.0, 4.0]).iter().map(|&u| x.label(u)).collect::<Vec<_>>(), ["1", "2", "4"]);
//! ```

/// A number in at most 3 significant digits with an SI prefix (`k`,
/// `M`, `G`, `T`, `P`) from 1000 up: `700000` is `700k`, `2500000` is
/// `2.5M`, `1234` is `1.23k`; below 1000 the number itself (`950`,
/// `12.5`, `0.25`), and `0` for zero.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let mut a = v.abs();
    if a < 0.001 {
        return format!("{v:.1e}");
    }
    const PREFIXES: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    let mut p = 0;
    while a >= 1000.0 && p + 1 < PREFIXES.len() {
        a /= 1000.0;
        p += 1;
    }
    // Rounding to 3 digits can carry into the next prefix (999.9k is 1M).
    let mut text = three_digits(a);
    if text == "1000" && p + 1 < PREFIXES.len() {
        p += 1;
        text = "1".into();
    }
    format!("{sign}{text}{}", PREFIXES[p])
}

/// `a` (0.001 <= a < 1000) in 3 significant digits, trailing zeros and
/// point dropped.
fn three_digits(a: f64) -> String {
    let decimals = match a {
        _ if a >= 100.0 => 0,
        _ if a >= 10.0 => 1,
        _ if a >= 1.0 => 2,
        _ => 3,
    };
    let s = format!("{a:.decimals$}");
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    }
}

/// How the x axis places its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    /// As they are.
    Linear,
    /// By their base-2 logarithm: every value a power of two (threads,
    /// ranks, sizes doubling from point to point).
    Log2,
}

/// At most this many ticks, one per value, before ticks are spaced out.
const MAX_VALUE_TICKS: usize = 12;

impl XScale {
    /// Log2 when there are at least three distinct values and every one
    /// is a power of two (1 included); else linear.
    pub fn for_values(xs: &[f64]) -> XScale {
        let mut d = distinct(xs);
        d.retain(|x| x.is_finite());
        let pow2 = |x: &f64| *x >= 1.0 && x.fract() == 0.0 && (*x as u64).is_power_of_two();
        match d.len() >= 3 && d.len() == distinct(xs).len() && d.iter().all(pow2) {
            true => XScale::Log2,
            false => XScale::Linear,
        }
    }

    /// Where `x` goes on the chart's axis.
    pub fn place(self, x: f64) -> f64 {
        match self {
            XScale::Linear => x,
            XScale::Log2 => x.log2(),
        }
    }

    /// The value at axis position `u` (the inverse of [`XScale::place`]).
    pub fn value(self, u: f64) -> f64 {
        match self {
            XScale::Linear => u,
            XScale::Log2 => u.exp2(),
        }
    }

    /// The axis' range for these values, with room on either side.
    pub fn range(self, xs: &[f64]) -> std::ops::Range<f64> {
        let us: Vec<f64> = xs.iter().map(|&x| self.place(x)).collect();
        let lo = us.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = us.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            return 0.0..1.0;
        }
        let pad = match self {
            XScale::Log2 => 0.3,
            XScale::Linear => ((hi - lo) * 0.05).max(0.5),
        };
        lo - pad..hi + pad
    }

    /// The tick positions (axis units): one at each value when they are
    /// few whole numbers (or log2), else about 10 round steps across.
    pub fn ticks(self, xs: &[f64]) -> Vec<f64> {
        let d = distinct(xs);
        let whole = d.iter().all(|x| x.fract() == 0.0);
        if self == XScale::Log2 || (whole && d.len() <= MAX_VALUE_TICKS) {
            return d.iter().map(|&x| self.place(x)).collect();
        }
        let lo = d.first().copied().unwrap_or(0.0);
        let hi = d.last().copied().unwrap_or(1.0);
        round_steps(lo, hi)
    }

    /// The label of the tick at axis position `u`: a power of two from
    /// 1024 up in binary prefixes (`4Ki`, `1Mi`: sizes), else [`si`].
    pub fn label(self, u: f64) -> String {
        let v = self.value(u);
        let r = v.round();
        if self == XScale::Log2 && r >= 1024.0 {
            let mut n = r;
            let mut p = 0;
            while n >= 1024.0 && p < 4 {
                n /= 1024.0;
                p += 1;
            }
            return format!("{}{}", si(n), ["", "Ki", "Mi", "Gi", "Ti"][p]);
        }
        match self {
            XScale::Log2 => si(r),
            XScale::Linear => si(v),
        }
    }
}

/// The distinct values, sorted.
fn distinct(xs: &[f64]) -> Vec<f64> {
    let mut d: Vec<f64> = xs.to_vec();
    d.sort_by(f64::total_cmp);
    d.dedup();
    d
}

/// Multiples of 1, 2 or 5 x 10^k from `lo` to `hi`, at most about 10.
fn round_steps(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 10.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 10.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_ticks_read_at_a_glance() {
        for (v, want) in [
            (0.0, "0"),
            (700_000.0, "700k"),
            (2_500_000.0, "2.5M"),
            (1_234.0, "1.23k"),
            (1_000.0, "1k"),
            (999_999.0, "1M"),
            (999.0, "999"),
            (950.0, "950"),
            (12.5, "12.5"),
            (0.25, "0.25"),
            (3.0e9, "3G"),
            (-1_500.0, "-1.5k"),
            (f64::NAN, "-"),
        ] {
            assert_eq!(si(v), want, "{v}");
        }
    }

    #[test]
    fn doubling_values_get_a_log2_axis_with_a_tick_at_each() {
        let x = XScale::for_values(&[1.0, 2.0, 4.0, 2.0, 1.0]);
        assert_eq!(x, XScale::Log2);
        let t = x.ticks(&[1.0, 2.0, 4.0]);
        assert_eq!(t, [0.0, 1.0, 2.0]);
        // Equally apart: 4 is as far from 2 as 2 from 1.
        assert_eq!(t[2] - t[1], t[1] - t[0]);
        assert_eq!(
            t.iter().map(|&u| x.label(u)).collect::<Vec<_>>(),
            ["1", "2", "4"]
        );
        let sizes = [4096.0, 65536.0, 1_048_576.0];
        let x = XScale::for_values(&sizes);
        assert_eq!(x, XScale::Log2);
        let labels: Vec<String> = x.ticks(&sizes).iter().map(|&u| x.label(u)).collect();
        assert_eq!(labels, ["4Ki", "64Ki", "1Mi"]);
    }

    #[test]
    fn other_values_stay_linear() {
        for xs in [
            &[1.0, 2.0, 3.0][..],
            &[1.0, 2.0],
            &[2.0, 6.0, 8.0],
            &[0.5, 1.0, 2.0],
            &[0.0, 1.0, 2.0, 4.0],
        ] {
            assert_eq!(XScale::for_values(xs), XScale::Linear, "{xs:?}");
        }
        let x = XScale::Linear;
        assert_eq!(x.ticks(&[1.0, 2.0, 3.0, 6.0]), [1.0, 2.0, 3.0, 6.0]);
        let many: Vec<f64> = (1..=64).map(f64::from).collect();
        let t = x.ticks(&many);
        assert!(t.len() <= 11 && t.contains(&10.0), "{t:?}");
        assert_eq!(x.label(2_000_000.0), "2M");
    }
}
