//! The full-screen view (`--live-view`): per phase the rate and latency
//! percentiles of the last interval, rows per host or rank, and a
//! sparkline of each phase's rate. [`draw`] only paints a ratatui frame
//! from the interval's rows; the binary owns the terminal.

use crate::row::Row;
use crate::session::Frame as LiveFrame;
use crate::status::{duration, si};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph, Row as TRow, Sparkline, Table};
use ratatui::Frame;

/// Paints one interval of `tool`'s run.
pub fn draw(f: &mut Frame, tool: &str, live: &LiveFrame<'_>) {
    let agg: Vec<&Row> = live.rows.iter().filter(|r| r.is_aggregate()).collect();
    let per: Vec<&Row> = live.rows.iter().filter(|r| !r.is_aggregate()).collect();
    // The rate history of the phases of this interval (at most four; the
    // others have ended).
    let shown: Vec<&(String, Vec<f64>)> = live
        .history
        .iter()
        .filter(|(p, _)| {
            agg.iter()
                .any(|r| r.phase == *p && (r.ops > 0 || live.last))
        })
        .take(4)
        .collect();
    let sparks = shown.len() as u16;
    let [top, phases, lines, hosts] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(agg.len() as u16 + 3),
        Constraint::Length(sparks * 4),
        Constraint::Min(0),
    ])
    .areas(f.area());
    let state = if live.last { "ended" } else { "running" };
    let title = format!("{tool}: {:.1} s, {state}   (Ctrl-C stops the run)", live.t);
    f.render_widget(
        Paragraph::new(title).style(Style::new().add_modifier(Modifier::BOLD)),
        top,
    );
    f.render_widget(table("phases", &agg, false), phases);
    if !per.is_empty() {
        f.render_widget(table("per host / rank", &per, true), hosts);
    }
    let areas = Layout::vertical(vec![Constraint::Length(4); sparks as usize]).split(lines);
    for ((phase, h), area) in shown.into_iter().zip(areas.iter()) {
        let data: Vec<u64> = h.iter().map(|v| *v as u64).collect();
        let now = h.last().copied().unwrap_or(0.0);
        let title = format!("{phase} ops/s (now {})", si(now));
        let s = Sparkline::default()
            .block(Block::default().borders(Borders::TOP).title(title))
            .data(&data);
        f.render_widget(s, *area);
    }
}

fn table<'a>(title: &'a str, rows: &[&Row], who: bool) -> Table<'a> {
    let mut head = vec![
        "phase", "ops/s", "B/s", "p50", "p90", "p99", "p99.9", "max", "ops", "errors",
    ];
    if who {
        head.insert(0, "host/rank");
    }
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let l = r.latency.unwrap_or_default();
            let lat = |v: u64| {
                if r.latency.is_some() {
                    duration(v)
                } else {
                    "-".into()
                }
            };
            let mut cells = vec![
                r.phase.clone(),
                si(r.ops_per_sec),
                si(r.bytes_per_sec),
                lat(l.p50_ns),
                lat(l.p90_ns),
                lat(l.p99_ns),
                lat(l.p999_ns),
                lat(l.max_ns),
                r.ops_total.to_string(),
                r.errors_total.to_string(),
            ];
            if who {
                let name = match (&r.host, r.rank) {
                    (Some(h), Some(k)) => format!("{h}/{k}"),
                    (Some(h), None) => h.clone(),
                    (None, Some(k)) => k.to_string(),
                    (None, None) => String::new(),
                };
                cells.insert(0, name);
            }
            cells
        })
        .collect();
    // The names' columns as wide as their longest cell (a host:port, a
    // phase such as mdtest-easy-write), within bounds; figures take 9.
    let fit = |col: usize, lo: usize, hi: usize| {
        let w = body
            .iter()
            .map(|c| c[col].chars().count() + 2)
            .max()
            .unwrap_or(lo);
        Constraint::Length(w.clamp(lo, hi) as u16)
    };
    let mut widths = vec![Constraint::Length(9); head.len()];
    widths[usize::from(who)] = fit(usize::from(who), 9, 20);
    if who {
        widths[0] = fit(0, 11, 40);
    }
    Table::new(body.into_iter().map(TRow::new), widths)
        .header(TRow::new(head).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::ALL).title(title))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::{row, Source};
    use crate::sample::Part;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    #[test]
    fn shows_phases_rates_and_percentiles() {
        let mut h = iolab_core::stats::Histogram::new();
        for v in 1..=100 {
            h.record(v * 1000);
        }
        let part = Part {
            phase: "file_create".into(),
            ops: 5000,
            bytes: 0,
            errors: 0,
            ops_total: 12000,
            bytes_total: 0,
            errors_total: 0,
            max_total_ns: 100_000,
            latency: h.to_wire(),
        };
        let rows = vec![row(&part, &Source::aggregate(), 2.0, 1.0, false)];
        let history = vec![("file_create".to_string(), vec![4000.0, 5000.0])];
        let frame = LiveFrame {
            t: 2.0,
            rows: &rows,
            history: &history,
            last: false,
        };
        let mut term = Terminal::new(TestBackend::new(120, 16)).unwrap();
        term.draw(|f| draw(f, "mdtest", &frame)).unwrap();
        let text: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("file_create"), "{text}");
        assert!(text.contains("5.00k"), "{text}");
        assert!(
            text.contains("99.") || text.contains("98."),
            "the p99 near 99 µs: {text}"
        );
    }

    #[test]
    fn a_host_s_whole_name_is_shown() {
        let part = Part {
            ops: 10,
            ops_total: 10,
            ..Part::empty("read")
        };
        let src = Source {
            host: Some("n-0042.cluster.example:7819".into()),
            rank: Some(3),
        };
        let rows = vec![
            row(&part, &Source::aggregate(), 1.0, 1.0, false),
            row(&part, &src, 1.0, 1.0, false),
        ];
        let frame = LiveFrame {
            t: 1.0,
            rows: &rows,
            history: &[],
            last: false,
        };
        let mut term = Terminal::new(TestBackend::new(140, 16)).unwrap();
        term.draw(|f| draw(f, "lst", &frame)).unwrap();
        let text: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("n-0042.cluster.example:7819/3"), "{text}");
    }
}
