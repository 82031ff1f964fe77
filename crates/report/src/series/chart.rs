//! Charts of series as the seed's scaling charts: one chart per phase
//! and metric, the figure against the plan's x (client threads), one
//! line per series (and per value of the axes off the x axis), each
//! point the mean of its completed repeats with an error bar from the
//! smallest to the largest repeat. SVG and PNG through plotters.

use crate::ticks::{si, XScale};
use iolab_store::{Series, Spread};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
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
pub fn svg(c: &Chart, text: bool) -> Result<String, crate::canvas::ChartError> {
    crate::canvas::svg(SIZE, |root| draw(root, c, text))
}

/// The chart as PNG bytes.
pub fn png(c: &Chart, text: bool) -> Result<Vec<u8>, crate::canvas::ChartError> {
    crate::canvas::png(SIZE, |root| draw(root, c, text))
}

/// Text sizes as plotters takes them (its SVG writes 1/1.24 of each as
/// the font size). The report shows charts two to a row, about 700 px
/// wide for these 900: tick labels and the legend come out near 14 px
/// there, the axis titles 15, the title 19.
pub const FONT_TICKS: u32 = 22;
/// The axis titles.
pub const FONT_AXES: u32 = 24;
/// The legend.
pub const FONT_LEGEND: u32 = 22;
/// The title.
pub const FONT_TITLE: u32 = 30;

/// Every x value of the chart's points.
fn xs(c: &Chart) -> Vec<f64> {
    c.lines
        .iter()
        .flat_map(|l| &l.points)
        .map(|p| p.x)
        .collect()
}

/// The top of the y axis, with some room above the highest bar; a value
/// no chart can draw (not finite, too large) is an error.
fn ytop(c: &Chart) -> Result<f64, crate::canvas::ChartError> {
    let mut top = 0.0f64;
    for p in c.lines.iter().flat_map(|l| &l.points) {
        for v in [p.spread.max, p.spread.mean, p.spread.min] {
            top = top.max(crate::canvas::drawable("y", v)?);
        }
    }
    Ok(if top > 0.0 { top * 1.1 } else { 1.0 })
}

/// The plotting area inside [`SIZE`], in pixels (less the margins, the
/// label areas and the title): what the legend's size is measured in.
const PLOT_PX: (f64, f64) = (750.0, 410.0);

/// Where the legend goes: of the four corners of the plot, the one whose
/// legend box covers the fewest samples of the lines, the points and
/// their error bars (upper left when several are free). A legend over the
/// data is the first thing that makes a chart hard to read.
fn legend_corner(
    c: &Chart,
    scale: XScale,
    xr: &std::ops::Range<f64>,
    ytop: f64,
) -> SeriesLabelPosition {
    let longest = c
        .lines
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(0);
    // Text of size s is about 0.55 s wide per character, plus the swatch.
    let w = (longest as f64 * 0.55 * f64::from(FONT_LEGEND) + 60.0) / PLOT_PX.0;
    let h = (c.lines.len() as f64 * 1.25 * f64::from(FONT_LEGEND) + 20.0) / PLOT_PX.1;
    let fx = |x: f64| (scale.place(x) - xr.start) / (xr.end - xr.start);
    let fy = |y: f64| y / ytop;
    let mut samples = Vec::new();
    for l in &c.lines {
        for (i, p) in l.points.iter().enumerate() {
            for k in 0..=8 {
                let t = f64::from(k) / 8.0;
                let bar = p.spread.min + t * (p.spread.max - p.spread.min);
                samples.push((fx(p.x), fy(bar)));
                if let Some(q) = l.points.get(i + 1) {
                    let (x0, x1) = (fx(p.x), fx(q.x));
                    let y = p.spread.mean + t * (q.spread.mean - p.spread.mean);
                    samples.push((x0 + t * (x1 - x0), fy(y)));
                }
            }
        }
    }
    let covered = |left: bool, top: bool| {
        samples
            .iter()
            .filter(|(x, y)| {
                let in_x = if left { *x <= w } else { *x >= 1.0 - w };
                let in_y = if top { *y >= 1.0 - h } else { *y <= h };
                in_x && in_y
            })
            .count()
    };
    [
        (SeriesLabelPosition::UpperLeft, true, true),
        (SeriesLabelPosition::UpperRight, false, true),
        (SeriesLabelPosition::LowerRight, false, false),
        (SeriesLabelPosition::LowerLeft, true, false),
    ]
    .into_iter()
    .min_by_key(|(_, left, top)| covered(*left, *top))
    .map_or(SeriesLabelPosition::UpperLeft, |c| c.0)
}

/// The x axis: positions as [`XScale::place`] gives them, ticks where
/// [`XScale::ticks`] puts them (plotters' own key points would tick a
/// log2 axis at 1.5 or 2.5 doublings).
struct XAxis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for XAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // The ticks are the bold lines; no light lines between them.
        match hint.weight().allow_light_points() {
            true => Vec::new(),
            false => self.ticks.clone(),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// Draws the chart on any backend: the x axis by [`XScale`] (log2 for
/// doubling counts), y from 0 with SI tick labels, the unit in the
/// axis title.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    c: &Chart,
    text: bool,
) -> Result<(), crate::canvas::ChartError>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| crate::canvas::ChartError::Draw(x.to_string());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let xs = xs(c);
    for &x in &xs {
        crate::canvas::drawable("x", x)?;
    }
    let top = ytop(c)?;
    let scale = XScale::for_values(&xs);
    let xr = scale.range(&xs);
    let corner = legend_corner(c, scale, &xr, top);
    let cap = (xr.end - xr.start) * 0.006;
    let mut b = ChartBuilder::on(&root);
    b.margin(20);
    if text {
        b.caption(c.title(), ("sans-serif", FONT_TITLE));
        b.x_label_area_size(70).y_label_area_size(110);
    }
    let xr = XAxis {
        inner: xr.into(),
        ticks: scale.ticks(&xs),
    };
    let mut chart = b.build_cartesian_2d(xr, 0f64..top).map_err(|x| e(&x))?;
    let mut mesh = chart.configure_mesh();
    let tick_label = |u: &f64| scale.label(*u);
    if text {
        mesh.x_desc(c.x_label.as_str())
            .y_desc(c.y_label())
            .label_style(("sans-serif", FONT_TICKS))
            .axis_desc_style(("sans-serif", FONT_AXES))
            .y_labels(8)
            .x_label_formatter(&tick_label)
            .y_label_formatter(&|v| si(*v));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|x| e(&x))?;
    for (i, line) in c.lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let at = |p: &LinePoint| scale.place(p.x);
        let means: Vec<(f64, f64)> = line.points.iter().map(|p| (at(p), p.spread.mean)).collect();
        let drawn = chart
            .draw_series(LineSeries::new(means.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?;
        if text {
            drawn.label(line.name.as_str()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 20, y + 6)], color.filled())
            });
        }
        chart
            .draw_series(means.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(|x| e(&x))?;
        let bars = line.points.iter().flat_map(|p| {
            let (x, lo, hi) = (at(p), p.spread.min, p.spread.max);
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
            .position(corner)
            .label_font(("sans-serif", FONT_LEGEND))
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

    /// A font for the text, as `iolab report` finds one; None (a skip,
    /// or a failure under CI) without one.
    fn font() -> Option<()> {
        let found = [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        ]
        .iter()
        .find_map(|p| std::fs::read(p).ok());
        match found {
            Some(b) => crate::survey::plot::use_font(Box::leak(b.into_boxed_slice())).then_some(()),
            None if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") => {
                panic!("no font for the charts (scripts/install-deps.sh installs DejaVu)")
            }
            None => None,
        }
    }

    /// Each `<text>` of an SVG: (x, font size, text).
    fn texts(svg: &str) -> Vec<(f64, f64, String)> {
        let attr = |t: &str, name: &str| -> f64 {
            let k = format!(" {name}=\"");
            t.find(&k)
                .and_then(|i| t[i + k.len()..].split('"').next()?.parse().ok())
                .unwrap_or(f64::NAN)
        };
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let open = &t[..t.find('>')?];
                let body = &t[t.find('>')? + 1..t.find("</text>")?];
                Some((
                    attr(open, "x"),
                    attr(open, "font-size"),
                    body.trim().to_string(),
                ))
            })
            .collect()
    }

    /// The charts of `iolab report` on examples/threads-sweep.toml, as
    /// the issue saw them: threads 1, 2, 4 and rates in the millions.
    #[test]
    fn a_chart_reads_at_a_glance() {
        if font().is_none() {
            return;
        }
        let pt = |x: f64, v: f64| LinePoint {
            x,
            spread: Spread::of(&[v * 0.9, v, v * 1.1]).unwrap(),
        };
        let c = Chart {
            phase: "file_stat".into(),
            metric: "rate".into(),
            unit: "ops/s".into(),
            x_label: "threads".into(),
            lines: vec![Line {
                name: "threads directory=private".into(),
                points: vec![
                    pt(1.0, 700_000.0),
                    pt(2.0, 1_400_000.0),
                    pt(4.0, 2_500_000.0),
                ],
            }],
        };
        let svg = svg(&c, true).unwrap();
        let t = texts(&svg);
        let words: Vec<&str> = t.iter().map(|x| x.2.as_str()).collect();
        // y ticks in SI, the unit in the axis title; no raw 700000.
        assert!(words.contains(&"rate (ops/s)"), "{words:?}");
        assert!(
            words.iter().any(|w| w.ends_with('M') && w.len() <= 4),
            "{words:?}"
        );
        assert!(
            words.contains(&"500k") || words.contains(&"1M"),
            "{words:?}"
        );
        assert!(
            !words
                .iter()
                .any(|w| w.len() > 4 && w.chars().all(|c| c.is_ascii_digit())),
            "a raw number: {words:?}"
        );
        // x ticks at 1, 2 and 4 only, equally apart (log2).
        let xt: Vec<(f64, &str)> = t
            .iter()
            .filter(|x| ["1", "2", "3", "4"].contains(&x.2.as_str()))
            .map(|x| (x.0, x.2.as_str()))
            .collect();
        assert_eq!(
            xt.iter().map(|x| x.1).collect::<Vec<_>>(),
            ["1", "2", "4"],
            "{t:?}"
        );
        let (a, b) = (xt[1].0 - xt[0].0, xt[2].0 - xt[1].0);
        assert!((a - b).abs() <= 1.0 && a > 100.0, "{xt:?}");
        // Text readable where the report shows the chart: two to a row,
        // about 700 px wide, every text at least 13 px there.
        let shown = 700.0 / SIZE.0 as f64;
        for (_, size, word) in &t {
            assert!(
                size * shown >= 13.0,
                "{word}: {size} px is {} px shown",
                size * shown
            );
        }
    }

    /// The legend goes where it covers no data: upper left for lines
    /// that rise, elsewhere when the upper left is taken.
    #[test]
    fn the_legend_keeps_off_the_data() {
        let pt = |x: f64, v: f64| LinePoint {
            x,
            spread: Spread::of(&[v, v, v]).unwrap(),
        };
        let mut c = chart();
        c.lines = vec![Line {
            name: "rises".into(),
            points: vec![pt(1.0, 10.0), pt(2.0, 50.0), pt(4.0, 100.0)],
        }];
        let at = |c: &Chart| {
            let s = XScale::for_values(&xs(c));
            legend_corner(c, s, &s.range(&xs(c)), ytop(c).unwrap())
        };
        assert!(matches!(at(&c), SeriesLabelPosition::UpperLeft));
        c.lines[0].points = vec![pt(1.0, 100.0), pt(2.0, 50.0), pt(4.0, 10.0)];
        assert!(!matches!(at(&c), SeriesLabelPosition::UpperLeft));
        assert!(matches!(at(&c), SeriesLabelPosition::UpperRight));
    }

    #[test]
    fn charts_render_without_a_font() {
        let c = chart();
        assert_eq!(c.stem(), "file_create-rate");
        let s = svg(&c, false).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..40]);
        let p = png(&c, false).unwrap();
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        let xr = XScale::for_values(&xs(&c)).range(&xs(&c));
        assert!(xr.start < 1.0 && xr.end > 2.0 && ytop(&c).unwrap() > 21.0);
    }
}
