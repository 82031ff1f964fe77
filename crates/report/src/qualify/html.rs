//! The qualification's page, one self-contained HTML file (inline SVG,
//! no script, nothing beside it): the verdict per layer, the chain of
//! limits bottom-up with each one's efficiency against the layer below,
//! each layer's curves (the `iolab report` charts of its series), and
//! the plan that ran.

use super::{baseline_text, below_text, limit_text};
use crate::series::html::esc;
use crate::store::when;
use iolab_qualify::layer::Layer;
use iolab_qualify::verdict::Verdict;

/// The page's generator mark.
pub const GENERATOR: &str = "iolab qualify";

/// A layer's charts: each one's title and SVG text.
pub struct LayerCharts {
    /// The layer.
    pub layer: Layer,
    /// (caption, SVG) of each chart.
    pub charts: Vec<(String, String)>,
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1400px}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
figure{display:inline-block;margin:0 1em 1em 0;border:1px solid #ddd;padding:.5em;width:calc(50% - 3em);min-width:600px}\
figure svg{max-width:100%;height:auto}figcaption{font-size:.85em;color:#555}\
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}\
th{background:#f2f2f2}.pass{color:#176117;font-weight:bold}.fail{color:#a31515;font-weight:bold}\
pre{background:#f6f6f6;padding:.7em;overflow-x:auto;font-size:.85em}";

/// The whole page.
pub fn render(
    v: &Verdict,
    charts: &[LayerCharts],
    plan_toml: &str,
    baseline: Option<&str>,
    generated_unix_ns: u64,
) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"{GENERATOR}\">\n<title>iolab qualify: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&v.label)
    );
    h.push_str(&format!(
        "<h1>iolab qualify: {}</h1>\n<p>Generated {} by iolab {}. Each curve grows (x doubling) until a point gains less than the plan's fraction; a limit is the best point's mean over its repeats (± their standard deviation).{}</p>\n",
        esc(&v.label),
        esc(&when(generated_unix_ns)),
        env!("CARGO_PKG_VERSION"),
        baseline.map(|b| format!(" Baseline: {}.", esc(b))).unwrap_or_default()
    ));
    h.push_str(&verdicts(v));
    h.push_str("<h2 id=\"chain\">Chain of limits</h2>\n");
    h.push_str(&chain(v, baseline.is_some()));
    for lc in charts {
        h.push_str(&format!("<h2 id=\"{0}\">{0}</h2>\n", lc.layer));
        for (caption, svg) in &lc.charts {
            h.push_str(&format!(
                "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                svg.trim(),
                esc(caption)
            ));
        }
    }
    h.push_str(&format!(
        "<h2 id=\"plan\">Plan</h2>\n<pre>{}</pre>\n</body>\n</html>\n",
        esc(plan_toml)
    ));
    h
}

fn verdicts(v: &Verdict) -> String {
    let mut t = String::from("<table>\n<tr><th>layer</th><th>verdict</th><th>why</th></tr>\n");
    for l in &v.layers {
        let (class, word, why) = match l.failure() {
            None if l.expectations.is_empty() => (
                "pass",
                "pass",
                "every run completed, every figure measured (no expectation)".to_string(),
            ),
            None => (
                "pass",
                "pass",
                format!(
                    "every run completed; {} expectation(s) held",
                    l.expectations.len()
                ),
            ),
            Some(w) => ("fail", "FAIL", w),
        };
        t.push_str(&format!(
            "<tr><td><a href=\"#{0}\">{0}</a></td><td class=\"{class}\">{word}</td><td>{1}</td></tr>\n",
            l.layer,
            esc(&why)
        ));
    }
    t + "</table>\n"
}

fn chain(v: &Verdict, baseline: bool) -> String {
    let mut t = String::from("<table>\n<tr><th>layer</th><th>figure</th><th>limit</th><th>at</th><th>curve</th><th>vs layer below</th>");
    if baseline {
        t.push_str("<th>baseline</th>");
    }
    t.push_str("</tr>\n");
    for l in v.limits() {
        t.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            l.layer,
            esc(&l.name),
            esc(&limit_text(l)),
            esc(&l.at),
            esc(&l.end),
            esc(&below_text(l))
        ));
        if baseline {
            t.push_str(&format!("<td>{}</td>", esc(&baseline_text(l))));
        }
        t.push_str("</tr>\n");
    }
    t + "</table>\n"
}
