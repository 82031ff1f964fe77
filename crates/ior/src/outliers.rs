//! `-j N`: IOR's outlier warnings, for every task whose start, end or
//! step times lie more than N seconds from the tasks' mean.

use crate::ctx::Ctx;
use crate::reduce::{
    TaskFigures, CLOSE_START, CLOSE_STOP, OPEN_START, OPEN_STOP, RDWR_START, RDWR_STOP,
};
use crate::results::AccessResult;

/// The warnings of one access (empty without `-j`).
pub fn warnings(ctx: &Ctx, all: &[TaskFigures], r: &AccessResult) -> Vec<String> {
    let limit = ctx.test.params.outlier_threshold_s as f64;
    if limit <= 0.0 || all.is_empty() {
        return Vec::new();
    }
    let base = all.iter().map(|f| f.timers[OPEN_START]).min().unwrap_or(0);
    let s = |ns: u64| ns.saturating_sub(base) as f64 / 1e9;
    let d =
        |f: &TaskFigures, a: usize, b: usize| f.timers[b].saturating_sub(f.timers[a]) as f64 / 1e9;
    let what = r.access.map_or("", |a| a.name());
    let series: [(&str, Vec<f64>); 5] = [
        (
            "start time",
            all.iter().map(|f| s(f.timers[OPEN_START])).collect(),
        ),
        (
            "elapsed create time",
            all.iter().map(|f| d(f, OPEN_START, OPEN_STOP)).collect(),
        ),
        (
            "elapsed transfer time",
            all.iter().map(|f| d(f, RDWR_START, RDWR_STOP)).collect(),
        ),
        (
            "elapsed close time",
            all.iter().map(|f| d(f, CLOSE_START, CLOSE_STOP)).collect(),
        ),
        (
            "end time",
            all.iter().map(|f| s(f.timers[CLOSE_STOP])).collect(),
        ),
    ];
    let mut out = Vec::new();
    for (name, v) in series {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        for (task, x) in v.iter().enumerate() {
            if (x - mean).abs() > limit {
                let host = ctx.hosts.get(task).map_or("unknown", String::as_str);
                out.push(format!(
                    "for {host}, task {task}, {what} {name} is {x:.6} (mean={mean:.6}, stddev={sd:.6})"
                ));
            }
        }
    }
    out
}
