//! Charts of series as the seed's scaling charts: one chart per phase
//! and metric, the figure against the plan's x (client threads), one
//! line per series (and per value of the axes off the x axis), each
//! point the mean of its completed repeats with an error bar from the
//! smallest to the largest repeat. SVG and PNG through plotters.

use iolab_store::{Series, Spread};
use plotters::coord::Shift;
use plotters::prelude::*;

/// One point of a line.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePoint {
    /// Its x.
    pub x: f64,
    /// Its repeats.
    pub spread: Spread,
}

/// One line: a series, or one line of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its legend.
    pub name: String,
    /// Its points, by x.
    pub points: Vec<LinePoint>,
}

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The phase (`file_create`).
    pub phase: String,
    /// The metric (`rate`).
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// The x axis' label.
    pub x_label: String,
    /// Its lines.
    pub lines: Vec<Line>,
}

impl Chart {
    /// A file-name stem: `file_create-rate`.
    pub fn stem(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        format!("{}-{}", clean(&self.phase), clean(&self.metric))
    }

    /// The title.
    pub fn title(&self) -> String {
        format!("{} {}", self.phase, self.metric)
    }

    /// The y axis' label.
    pub fn y_label(&self) -> String {
        format!("{} ({})", self.metric, self.unit)
    }
}

/// The legend of a line: the series' label and the values of its axes
/// off the x axis.
fn line_name(label: &str, line: &str) -> String {
    match line.is_empty() {
        true => label.to_string(),
        false => format!("{label} {line}"),
    }
}

/// Every chart of these series: one per (phase, metric) any of them has.
pub fn charts(series: &[Series]) -> Vec<Chart> {
    let mut measures: Vec<(String, String, String)> = Vec::new();
    for m in series.iter().flat_map(Series::measures) {
        if !measures.contains(&m) {
            measures.push(m);
        }
    }
    let labels: Vec<&str> = series.iter().map(|s| s.info.x_label.as_str()).collect();
    let x_label = match labels.windows(2).all(|w| w[0] == w[1]) {
        true => labels.first().copied().unwrap_or("x").to_string(),
        false => labels.join(" / "),
    };
    measures
        .into_iter()
        .map(|(phase, metric, unit)| Chart {
            lines: lines(series, &phase, &metric),
            phase,
            metric,
            unit,
            x_label: x_label.clone(),
        })
        .collect()
}

fn lines(series: &[Series], phase: &str, metric: &str) -> Vec<Line> {
    let mut out = Vec::new();
    for s in series {
        for line in s.lines() {
            let mut points: Vec<LinePoint> = s
                .points
                .iter()
                .filter(|p| p.line == line)
                .filter_map(|p| {
                    p.spread(phase, metric)
                        .map(|spread| LinePoint { x: p.x, spread })
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            if !points.is_empty() {
                out.push(Line {
                    name: line_name(&s.info.label, &line),
                    points,
                });
            }
        }
    }
    out
}

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (900, 560);

/// The chart as SVG text. Without a font (`text` false) it has no labels.
pub fn svg(c: &Chart, text: bool) -> Result<String, String> {
    crate::canvas::svg(SIZE, |root| draw(root, c, text))
}

/// The chart as PNG bytes.
pub fn png(c: &Chart, text: bool) -> Result<Vec<u8>, String> {
    crate::canvas::png(SIZE, |root| draw(root, c, text))
}

/// An x tick: whole numbers only (the axes count tasks, ranks, sizes).
fn tick(v: &f64) -> String {
    match v.fract() == 0.0 {
        true => format!("{}", *v as i64),
        false => String::new(),
    }
}

/// (x range, y top) with some room around the points.
fn ranges(c: &Chart) -> (std::ops::Range<f64>, f64) {
    let pts = c.lines.iter().flat_map(|l| &l.points);
    let xmin = pts.clone().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let xmax = pts.clone().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
    let (xmin, xmax) = match xmin.is_finite() {
        true => (xmin, xmax),
        false => (0.0, 1.0),
    };
    let pad = ((xmax - xmin) * 0.05).max(0.5);
    let ytop = pts
        .map(|p| p.spread.max.max(p.spread.mean))
        .fold(0.0, f64::max);
    (
        xmin - pad..xmax + pad,
        if ytop > 0.0 { ytop * 1.1 } else { 1.0 },
    )
}

/// Draws the chart on any backend.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    c: &Chart,
    text: bool,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (xr, ytop) = ranges(c);
    let cap = (xr.end - xr.start) * 0.006;
    let mut b = ChartBuilder::on(&root);
    b.margin(20);
    if text {
        b.caption(c.title(), ("sans-serif", 22));
        b.x_label_area_size(45).y_label_area_size(80);
    }
    let mut chart = b.build_cartesian_2d(xr, 0f64..ytop).map_err(|x| e(&x))?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc(c.x_label.as_str())
            .y_desc(c.y_label())
            .x_label_formatter(&tick)
            .y_label_formatter(&|v| crate::store::num(*v));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|x| e(&x))?;
    for (i, line) in c.lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let means: Vec<(f64, f64)> = line.points.iter().map(|p| (p.x, p.spread.mean)).collect();
        let drawn = chart
            .draw_series(LineSeries::new(means.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?;
        if text {
            drawn.label(line.name.as_str()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 4), (x + 16, y + 4)], color.filled())
            });
        }
        chart
            .draw_series(means.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|x| e(&x))?;
        let bars = line.points.iter().flat_map(|p| {
            let (x, lo, hi) = (p.x, p.spread.min, p.spread.max);
            [
                PathElement::new(vec![(x, lo), (x, hi)], color.stroke_width(1)),
                PathElement::new(vec![(x - cap, lo), (x + cap, lo)], color.stroke_width(1)),
                PathElement::new(vec![(x - cap, hi), (x + cap, hi)], color.stroke_width(1)),
            ]
        });
        chart.draw_series(bars).map_err(|x| e(&x))?;
    }
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
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

    fn chart() -> Chart {
        let pt = |x: f64, v: f64| LinePoint {
            x,
            spread: Spread::of(&[v - 1.0, v, v + 1.0]).unwrap(),
        };
        Chart {
            phase: "file_create".into(),
            metric: "rate".into(),
            unit: "ops/s".into(),
            x_label: "client threads".into(),
            lines: vec![
                Line {
                    name: "a".into(),
                    points: vec![pt(1.0, 10.0), pt(2.0, 20.0)],
                },
                Line {
                    name: "b".into(),
                    points: vec![pt(1.0, 5.0), pt(2.0, 8.0)],
                },
            ],
        }
    }

    #[test]
    fn charts_render_without_a_font() {
        let c = chart();
        assert_eq!(c.stem(), "file_create-rate");
        let s = svg(&c, false).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..40]);
        let p = png(&c, false).unwrap();
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        let (xr, top) = ranges(&c);
        assert!(xr.start < 1.0 && xr.end > 2.0 && top > 21.0);
    }
}
