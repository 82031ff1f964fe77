//! The report page: one self-contained HTML file (no script, no
//! network, no file beside it needed): the charts as inline SVG, the
//! table of figures (each point's mean over its repeats and their
//! spread), each series' plan, and the facts of every run (host, kernel,
//! file systems, command line, times, outcome).

use super::chart::Chart;
use crate::store::{num, seconds, when};
use iolab_store::{RunRecord, Series};

/// A chart and its drawings.
pub struct Drawn<'a> {
    /// The chart.
    pub chart: &'a Chart,
    /// Its SVG text (inlined).
    pub svg: &'a str,
    /// The names of its SVG and PNG files beside the page.
    pub files: (String, String),
}

/// The page's generator mark: `iolab report` rewrites a directory only
/// when its index.html carries it.
pub const GENERATOR: &str = "iolab report";

/// The name of the page's `<meta>` that lists the files the report wrote
/// beside it ([`manifest`]).
pub const MANIFEST: &str = "iolab-report-files";

/// The digest a report records of each file it writes: SHA-256, in hex.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `name` is a name a report gives a file beside its page (a
/// chart stem's letters, digits, `-`, `_`, then `.svg`, `.png`, `.csv`):
/// no path, nothing hidden.
fn file_name_ok(name: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    !name.starts_with('.') && !name.is_empty() && name.chars().all(plain)
}

/// The `<meta>` line, for the page's head, that lists the files written
/// beside the page, each `NAME:SHA256`: what the next report into the
/// directory may replace or remove, and only while each is as written.
/// It is written by iolab alone (the text of plans, labels and command
/// lines is escaped, so it cannot make a `<meta>`).
pub fn manifest(files: &[(String, String)]) -> String {
    let list: Vec<String> = files
        .iter()
        .map(|(name, digest)| format!("{}:{}", esc(name), esc(digest)))
        .collect();
    format!(
        "<meta name=\"{MANIFEST}\" content=\"{}\">\n",
        list.join(" ")
    )
}

/// The files an earlier page lists ([`manifest`]) with their digests;
/// None for a page without the list (an older iolab's) or with one that
/// does not read as iolab writes it (then nothing of it is trusted).
pub fn manifest_of(page: &str) -> Option<Vec<(String, String)>> {
    let head = &page[..page.find("</head>")?];
    let start = format!("<meta name=\"{MANIFEST}\" content=\"");
    let mut found = head.match_indices(&start);
    let (at, _) = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let rest = &head[at + start.len()..];
    let content = &rest[..rest.find("\">")?];
    let mut files = Vec::new();
    for item in content.split(' ').filter(|i| !i.is_empty()) {
        let (name, hex) = item.split_once(':')?;
        let hex_ok = hex.len() == 64 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'));
        if !file_name_ok(name) || !hex_ok {
            return None;
        }
        files.push((name.to_string(), hex.to_string()));
    }
    Some(files)
}

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1400px}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
figure{display:inline-block;margin:0 1em 1em 0;border:1px solid #ddd;padding:.5em}\
figure svg{max-width:100%;height:auto}figcaption{font-size:.85em;color:#555}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f2f2f2}\
pre{background:#f6f6f6;padding:.7em;overflow-x:auto;font-size:.85em}";

/// The whole page. `runs` are the facts shown (every run of the series);
/// `files`, the files written beside it with their digests ([`manifest`]).
pub fn render(
    series: &[Series],
    drawn: &[Drawn],
    runs: &[RunRecord],
    files: &[(String, String)],
    generated_unix_ns: u64,
) -> String {
    let labels: Vec<String> = series.iter().map(|s| esc(&s.info.label)).collect();
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"{GENERATOR}\">\n{}<title>iolab report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        manifest(files),
        labels.join(", ")
    );
    h.push_str(&format!(
        "<h1>iolab report: {}</h1>\n<p>Generated {} by iolab {}. Each point is the mean of its completed repeats; error bars span the smallest to the largest repeat.</p>\n",
        labels.join(" vs "),
        esc(&when(generated_unix_ns)),
        env!("CARGO_PKG_VERSION")
    ));
    h.push_str(&summary(series));
    h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    for d in drawn {
        h.push_str(&figure(d));
    }
    h.push_str("<h2 id=\"figures\">Figures</h2>\n");
    h.push_str(&figures(series));
    h.push_str("<h2 id=\"runs\">Runs</h2>\n");
    for s in series {
        h.push_str(&format!(
            "<h3>{}</h3>\n<pre>{}</pre>\n",
            esc(&s.info.label),
            esc(&s.info.plan)
        ));
        h.push_str(&facts(s, runs));
    }
    h.push_str("</body>\n</html>\n");
    h
}

fn summary(series: &[Series]) -> String {
    let mut t = String::from("<table>\n<tr><th>series</th><th>tool</th><th>points</th><th>runs</th><th>created</th></tr>\n");
    for s in series {
        let i = &s.info;
        t.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
            esc(&i.label),
            esc(&i.tool),
            i.points,
            i.runs,
            esc(&when(i.created_unix_ns))
        ));
    }
    t + "</table>\n"
}

fn figure(d: &Drawn) -> String {
    // plotters writes a bare <svg> element: it inlines as it is.
    format!(
        "<figure id=\"{}\">\n{}\n<figcaption>{} against {}; files: {}, {}</figcaption>\n</figure>\n",
        esc(&d.chart.stem()),
        d.svg.trim(),
        esc(&d.chart.y_label()),
        esc(&d.chart.x_label),
        esc(&d.files.0),
        esc(&d.files.1)
    )
}

fn cells(tag: &str, v: &[String]) -> String {
    let mut s = String::from("<tr>");
    for c in v {
        s.push_str(&format!(
            "<{tag}>{c}</{}>",
            tag.split(' ').next().unwrap_or(tag)
        ));
    }
    s + "</tr>\n"
}

fn figures(series: &[Series]) -> String {
    let head: Vec<String> = [
        "series", "point", "x", "phase", "metric", "unit", "repeats", "mean", "std dev", "min",
        "max",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut t = String::from("<table>\n") + &cells("th", &head);
    for s in series {
        let measures = s.measures();
        for p in &s.points {
            for (ph, m, u) in &measures {
                let Some(sp) = p.spread(ph, m) else { continue };
                let text = [
                    esc(&s.info.label),
                    esc(&p.key),
                    num(p.x),
                    esc(ph),
                    esc(m),
                    esc(u),
                ];
                let nums = [
                    sp.n.to_string(),
                    num(sp.mean),
                    num(sp.std_dev),
                    num(sp.min),
                    num(sp.max),
                ];
                let mut row = String::from("<tr>");
                text.iter()
                    .for_each(|c| row.push_str(&format!("<td>{c}</td>")));
                nums.iter()
                    .for_each(|c| row.push_str(&format!("<td class=\"n\">{c}</td>")));
                t.push_str(&(row + "</tr>\n"));
            }
        }
    }
    t + "</table>\n"
}

/// The facts of each run of a series.
fn facts(s: &Series, runs: &[RunRecord]) -> String {
    let head: Vec<String> = [
        "run",
        "point",
        "repeat",
        "outcome",
        "started",
        "seconds",
        "host",
        "file systems",
        "command line",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut t = String::from("<table>\n") + &cells("th", &head);
    for p in &s.points {
        for pr in &p.runs {
            let Some(r) = runs.iter().find(|r| r.row.id == pr.run_id) else {
                continue;
            };
            let e = &r.envelope;
            let host = &e.environment.host;
            let fs: Vec<String> = e
                .environment
                .filesystems
                .iter()
                .map(|f| {
                    format!(
                        "{} ({} on {}, {})",
                        f.path, f.fs_type, f.mount_point, f.source
                    )
                })
                .collect();
            let row = [
                r.row.id.to_string(),
                esc(&p.key),
                pr.repeat.to_string(),
                esc(&e.outcome.to_string()),
                esc(&when(e.started_unix_ns)),
                format!("{:.2}", seconds(e.started_unix_ns, e.finished_unix_ns)),
                esc(&format!(
                    "{}: {}, {}, {} CPUs, {} MiB",
                    host.hostname,
                    host.kernel,
                    host.arch,
                    host.cpus,
                    host.memory_bytes >> 20
                )),
                esc(&fs.join("; ")),
                format!("<code>{}</code>", esc(&e.command_line)),
            ];
            t.push_str(&cells("td", &row));
        }
    }
    t + "</table>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    /// The list of files is read back as written, and only from the
    /// head: a file named in a plan, a label or a command line (escaped
    /// text in the body) was taken for one of the report's and removed.
    #[test]
    fn the_files_a_page_lists_are_read_from_its_head_only() {
        let files = vec![
            ("file_create-rate.svg".to_string(), digest(b"<svg/>")),
            ("figures.csv".to_string(), digest(b"a,b\n")),
        ];
        let page = |head: &str, body: &str| {
            format!("<html><head>\n{head}</head><body>{body}</body></html>")
        };
        assert_eq!(
            manifest_of(&page(&manifest(&files), "")),
            Some(files.clone())
        );
        let forged = esc(&manifest(&[("summary.svg".into(), digest(b"x"))]));
        assert_eq!(manifest_of(&page("", &forged)), None);
        assert_eq!(manifest_of(&page("", "<p>files: summary.svg</p>")), None);
        // Twice, or a name with a path: not as iolab writes it.
        let twice = format!("{}{}", manifest(&files), manifest(&files));
        assert_eq!(manifest_of(&page(&twice, "")), None);
        let climbs = manifest(&[("../x.svg".into(), digest(b""))]);
        assert_eq!(manifest_of(&page(&climbs, "")), None);
        assert_eq!(manifest_of(&page(&manifest(&[]), "")), Some(Vec::new()));
    }
}
