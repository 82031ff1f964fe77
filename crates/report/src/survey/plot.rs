//! `iolab survey plot`: from a parsed summary, the CSV and gnuplot input
//! the kit's plot-obdfilter/plot-sgpdd produce (one data file and one
//! script per record size and test), and the chart itself as SVG and PNG:
//! bandwidth (or operations) against threads, log-scale threads, one
//! series per region, object or directory count.

use super::parse::{Kind, Summary};
use plotters::coord::Shift;
use plotters::prelude::*;

/// One chart: one record size and one test, a series per count.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Record size, KB (0 for the metadata survey).
    pub rsz_kb: u64,
    /// The test (`write`, `create`...).
    pub test: String,
    /// (count, [(threads, figure)]) sorted by count then threads.
    pub series: Vec<(u64, Vec<(u64, f64)>)>,
}

impl Chart {
    /// The file-name stem: `-<rsz>-<test>` (`-<test>` for mds).
    pub fn stem(&self) -> String {
        if self.rsz_kb == 0 {
            format!("-{}", self.test)
        } else {
            format!("-{}-{}", self.rsz_kb, self.test)
        }
    }
}

/// The charts of a summary, in the order their record size and test first
/// appear; figures that failed are left out.
pub fn charts(s: &Summary) -> Vec<Chart> {
    let mut out: Vec<Chart> = Vec::new();
    for r in &s.rows {
        for (test, v) in &r.values {
            let Some(v) = v else { continue };
            let i = match out
                .iter()
                .position(|c| c.rsz_kb == r.rsz_kb && &c.test == test)
            {
                Some(i) => i,
                None => {
                    out.push(Chart {
                        rsz_kb: r.rsz_kb,
                        test: test.clone(),
                        series: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let c = &mut out[i];
            match c.series.iter_mut().find(|x| x.0 == r.series) {
                Some(x) => x.1.push((r.thr, *v)),
                None => c.series.push((r.series, vec![(r.thr, *v)])),
            }
        }
    }
    for c in &mut out {
        c.series.sort_by_key(|x| x.0);
        for x in &mut c.series {
            x.1.sort_by_key(|p| p.0);
        }
    }
    out
}

/// Every figure as CSV: one row per line and test (a test name with a
/// comma or a quote is quoted).
pub fn csv(s: &Summary) -> String {
    let mut out = crate::csvw::CsvText::new();
    let unit = s.kind.unit().replace('/', "_per_");
    out.record(["rsz_kb", s.kind.series_name(), "thr", "test", &unit]);
    for r in &s.rows {
        for (test, v) in &r.values {
            let v = v.map(|x| format!("{x:.2}")).unwrap_or_default();
            out.record([
                r.rsz_kb.to_string(),
                r.series.to_string(),
                r.thr.to_string(),
                test.to_string(),
                v,
            ]);
        }
    }
    out.finish()
}

/// The gnuplot data file: threads down, one column per count, `-` where
/// a count has no figure at that thread count.
pub fn dat(kind: Kind, c: &Chart) -> String {
    let mut threads: Vec<u64> = c
        .series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let mut out = format!("{:<8}", "thr");
    for (k, _) in &c.series {
        out.push_str(&format!(" {:<12}", format!("{}{k}", kind.series_name())));
    }
    out.push('\n');
    for t in threads {
        out.push_str(&format!("{t:<8}"));
        for (_, pts) in &c.series {
            match pts.iter().find(|p| p.0 == t) {
                Some(p) => out.push_str(&format!(" {:<12.2}", p.1)),
                None => out.push_str(&format!(" {:<12}", "-")),
            }
        }
        out.push('\n');
    }
    out
}

/// A gnuplot script drawing `dat_file` into `png_file`.
pub fn gnuplot(kind: Kind, c: &Chart, title: &str, dat_file: &str, png_file: &str) -> String {
    let mut s = format!(
        "set title \"{}\\n{}\"\nset xlabel \"Threads\"\nset ylabel \"{}\"\nset logscale x\nset grid\nset key top left\n\
         set datafile missing \"-\"\nset yrange [0:]\nset terminal png\nset output \"{png_file}\"\n",
        title.replace('"', "'"),
        subtitle(c),
        kind.unit()
    );
    let plots: Vec<String> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, (k, _))| {
            format!(
                "\"{dat_file}\" using 1:{} title \"{}-{}{k}\" with linespoints",
                i + 2,
                c.test,
                kind.series_name()
            )
        })
        .collect();
    s.push_str(&format!("plot {}\n", plots.join(", \\\n     ")));
    s
}

/// An x-axis label: the thread count at whole powers of two, else nothing.
fn thread_label(v: &f64) -> String {
    let r = v.round();
    if (v - r).abs() < 1e-6 && r >= 0.0 {
        format!("{}", 2f64.powf(r) as u64)
    } else {
        String::new()
    }
}

/// The survey's words from a summary's first line (after the date).
fn survey_name(title: &str) -> String {
    let words: Vec<&str> = title.split_whitespace().collect();
    let start = words.iter().position(|w| w.contains("survey")).unwrap_or(0);
    words[start..].join(" ")
}

fn subtitle(c: &Chart) -> String {
    if c.rsz_kb == 0 {
        c.test.clone()
    } else {
        format!("{}, rsz {} KB", c.test, c.rsz_kb)
    }
}

/// Registers the font charts write their text with; false when the bytes
/// are not a font. Without one, charts are drawn without text.
pub fn use_font(bytes: &'static [u8]) -> bool {
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
}

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (800, 600);

/// The chart as SVG text.
pub fn svg(
    kind: Kind,
    c: &Chart,
    title: &str,
    text: bool,
) -> Result<String, crate::canvas::ChartError> {
    crate::canvas::svg(SIZE, |root| draw(root, kind, c, title, text))
}

/// The chart as PNG bytes.
pub fn png(
    kind: Kind,
    c: &Chart,
    title: &str,
    text: bool,
) -> Result<Vec<u8>, crate::canvas::ChartError> {
    crate::canvas::png(SIZE, |root| draw(root, kind, c, title, text))
}

/// Draws the chart on any backend; `text` false leaves out every label
/// (no font to draw them with).
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    kind: Kind,
    c: &Chart,
    title: &str,
    text: bool,
) -> Result<(), crate::canvas::ChartError>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| crate::canvas::ChartError::Draw(x.to_string());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let pts = c.series.iter().flat_map(|s| s.1.iter());
    // Threads double from point to point: the x axis is log2(threads),
    // labelled with the thread counts, with room on either side.
    let log2 = |t: u64| (t.max(1) as f64).log2();
    let xmin = log2(pts.clone().map(|p| p.0).min().unwrap_or(1)) - 0.3;
    let xmax = log2(pts.clone().map(|p| p.0).max().unwrap_or(1)) + 0.3;
    let mut ymax = 1.0f64;
    for p in pts {
        ymax = ymax.max(crate::canvas::drawable("y", p.1)?);
    }
    let ymax = ymax * 1.1;
    let mut b = ChartBuilder::on(&root);
    b.margin(20);
    if text {
        b.caption(
            format!("{}: {}", survey_name(title), subtitle(c)),
            ("sans-serif", 18),
        );
        b.x_label_area_size(40).y_label_area_size(70);
    }
    let mut chart = b
        .build_cartesian_2d(xmin..xmax, 0f64..ymax)
        .map_err(|x| e(&x))?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("Threads")
            .y_desc(kind.unit())
            .x_labels(40)
            .x_label_formatter(&thread_label);
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(|x| e(&x))?;
    for (i, (k, points)) in c.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let line: Vec<(f64, f64)> = points.iter().map(|p| (log2(p.0), p.1)).collect();
        let s = chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?;
        if text {
            s.label(format!("{}-{}{k}", c.test, kind.series_name()))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 4), (x + 16, y + 4)], color.filled())
                });
        }
        chart
            .draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|x| e(&x))?;
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
    use crate::survey::parse::parse;

    const TEXT: &str = "title\n\
        ost  1 sz 16384K rsz  256 obj    1 thr    1 write  100.00 [ 1.00, 2.00] read  200.00 [ 1.00, 2.00] \n\
        ost  1 sz 16384K rsz  256 obj    1 thr    2 write  150.00 [ 1.00, 2.00] read  250.00 [ 1.00, 2.00] \n\
        ost  1 sz 16384K rsz  256 obj    2 thr    2 write  160.00 [ 1.00, 2.00] read             ERROR \n";

    #[test]
    fn charts_have_a_series_per_object_count() {
        let s = parse(TEXT).unwrap();
        let c = charts(&s);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].test.as_str(), c[0].series.len()), ("write", 2));
        assert_eq!(c[1].series.len(), 1, "the failed read is left out");
        let d = dat(s.kind, &c[0]);
        assert_eq!(
            d.lines()
                .next()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["thr", "obj1", "obj2"]
        );
        assert_eq!(
            d.lines()
                .nth(1)
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["1", "100.00", "-"]
        );
        let g = gnuplot(s.kind, &c[0], "t", "x.dat", "x.png");
        assert!(g.contains("using 1:3 title \"write-obj2\""), "{g}");
        assert_eq!(csv(&s).lines().count(), 1 + 6);
    }

    #[test]
    fn charts_render_without_a_font() {
        let s = parse(TEXT).unwrap();
        let c = charts(&s);
        let svg = svg(s.kind, &c[0], "t", false).unwrap();
        assert!(svg.starts_with("<svg"));
        let png = png(s.kind, &c[0], "t", false).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
