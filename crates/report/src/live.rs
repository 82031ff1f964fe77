//! Charts of a live stream (`iolab report --live FILE`): each phase's
//! rate and 99th latency percentile over the run's time, from the
//! aggregate rows, one line per phase; SVG and PNG through
//! [`crate::canvas`], as the series charts.

use iolab_live::Row;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Which figure a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Operations per second.
    Rate,
    /// 99th latency percentile, in µs.
    P99,
}

impl Figure {
    /// The file-name stem (`live-rate`, `live-p99`).
    pub fn stem(self) -> &'static str {
        match self {
            Figure::Rate => "live-rate",
            Figure::P99 => "live-p99",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Figure::Rate => "operations per second",
            Figure::P99 => "p99 latency (µs)",
        }
    }

    fn of(self, r: &Row) -> Option<f64> {
        match self {
            Figure::Rate => Some(r.ops_per_sec),
            Figure::P99 => r.latency.map(|l| l.p99_ns as f64 / 1e3),
        }
    }
}

/// One chart: a line of (seconds, value) per phase.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeChart {
    /// What it shows.
    pub figure: Figure,
    /// The tool and run id, for the title.
    pub title: String,
    /// Per phase, its points in time order.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// The rate and p99 charts of `rows` (the aggregate ones; per-host rows
/// are left out).
pub fn charts(title: &str, rows: &[Row]) -> Vec<TimeChart> {
    [Figure::Rate, Figure::P99]
        .into_iter()
        .map(|figure| {
            let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            for r in rows.iter().filter(|r| r.is_aggregate()) {
                let Some(v) = figure.of(r) else { continue };
                match lines.iter_mut().find(|(p, _)| *p == r.phase) {
                    Some((_, pts)) => pts.push((r.t, v)),
                    None => lines.push((r.phase.clone(), vec![(r.t, v)])),
                }
            }
            TimeChart {
                figure,
                title: title.to_string(),
                lines,
            }
        })
        .collect()
}

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (900, 500);

/// The chart as SVG text (without labels when there is no font).
pub fn svg(c: &TimeChart, text: bool) -> Result<String, crate::canvas::ChartError> {
    crate::canvas::svg(SIZE, |root| draw(root, c, text))
}

/// The chart as PNG bytes.
pub fn png(c: &TimeChart, text: bool) -> Result<Vec<u8>, crate::canvas::ChartError> {
    crate::canvas::png(SIZE, |root| draw(root, c, text))
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    c: &TimeChart,
    text: bool,
) -> Result<(), crate::canvas::ChartError>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| crate::canvas::ChartError::Draw(x.to_string());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let pts = c.lines.iter().flat_map(|(_, p)| p);
    let tmax = pts.clone().map(|p| p.0).fold(0.0, f64::max).max(0.1);
    let ymax = pts.map(|p| p.1).fold(0.0, f64::max);
    let ytop = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let mut b = ChartBuilder::on(&root);
    b.margin(20);
    if text {
        b.caption(
            format!("{} — {}", c.title, c.figure.label()),
            ("sans-serif", 20),
        );
        b.x_label_area_size(45).y_label_area_size(80);
    }
    let mut chart = b
        .build_cartesian_2d(0f64..tmax, 0f64..ytop)
        .map_err(|x| e(&x))?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("seconds since the start")
            .y_desc(c.figure.label())
            .y_label_formatter(&|v| crate::ticks::si(*v));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|x| e(&x))?;
    for (i, (phase, points)) in c.lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let drawn = chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?;
        if text {
            drawn.label(phase.as_str()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 4), (x + 16, y + 4)], color.filled())
            });
        }
    }
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, phase: &str, ops: u64, p99: Option<u64>) -> Row {
        Row {
            t,
            interval_s: 1.0,
            phase: phase.into(),
            host: None,
            rank: None,
            ops,
            bytes: 0,
            errors: 0,
            ops_total: 0,
            bytes_total: 0,
            errors_total: 0,
            ops_per_sec: ops as f64,
            bytes_per_sec: 0.0,
            latency: p99.map(|p| iolab_live::Latency {
                p99_ns: p,
                ..Default::default()
            }),
            missing: Vec::new(),
            last: false,
        }
    }

    #[test]
    fn one_line_per_phase_and_figure() {
        let mut rows = vec![
            row(1.0, "a", 10, Some(2000)),
            row(1.0, "b", 5, None),
            row(2.0, "a", 12, Some(3000)),
        ];
        rows.push(Row {
            rank: Some(1),
            ..row(2.0, "a", 6, Some(1))
        });
        let c = charts("mdtest", &rows);
        assert_eq!(
            c[0].lines,
            vec![
                ("a".to_string(), vec![(1.0, 10.0), (2.0, 12.0)]),
                ("b".to_string(), vec![(1.0, 5.0)])
            ]
        );
        assert_eq!(
            c[1].lines,
            vec![("a".to_string(), vec![(1.0, 2.0), (2.0, 3.0)])]
        );
        assert!(svg(&c[0], false).unwrap().starts_with("<svg"));
        assert!(png(&c[1], false).unwrap().starts_with(b"\x89PNG"));
    }
}
