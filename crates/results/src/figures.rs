//! A run's headline figures, as the engine that measured them states
//! them in its envelope (`Envelope::figures`): what the store indexes,
//! charts draw and comparisons weigh.

use iolab_core::stats::Summary;
use serde::{Deserialize, Serialize};

/// One figure of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The phase or test (`file_create`, `write`).
    pub phase: String,
    /// What is measured (`rate`, `bandwidth`, `iops`).
    pub metric: String,
    /// Its unit (`ops/s`, `MB/s`).
    pub unit: String,
    /// Which inner point of the run (`tasks=4`), empty for the run itself.
    pub scope: String,
    /// The figure (`stat.mean`) and its spread over the iterations,
    /// passes or repeats it is the mean of.
    pub stat: Spread,
}

impl Figure {
    /// Whether a larger value is better (rates) or worse (times).
    pub fn higher_is_better(unit: &str) -> bool {
        !matches!(unit, "s" | "ms" | "us" | "ns")
    }
}

/// Mean, extremes and sample standard deviation of a few values: the
/// repeats of a sweep point, or the iterations behind a run's figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// How many values.
    pub n: u32,
    /// Their mean.
    pub mean: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// Sample standard deviation (n - 1); 0 for one value.
    pub std_dev: f64,
}

impl Spread {
    /// One value, no spread.
    pub fn one(v: f64) -> Spread {
        Spread {
            n: 1,
            mean: v,
            min: v,
            max: v,
            std_dev: 0.0,
        }
    }

    /// The spread of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        (!values.is_empty()).then(|| Spread::from(&Summary::of(values)))
    }
}

impl From<&Summary> for Spread {
    fn from(s: &Summary) -> Spread {
        Spread {
            n: s.count as u32,
            mean: s.mean,
            min: s.min,
            max: s.max,
            std_dev: s.sample_std_dev(),
        }
    }
}
