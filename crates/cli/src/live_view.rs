//! The live figures on the terminal, drawn on the sampler's thread:
//! the one-line status (on stderr, from the third second on, so short
//! runs stay as they were) and the full-screen view (`--live-view`,
//! ratatui on stderr's alternate screen). Only the leader draws, only on
//! a terminal, never under CI (see `live::start`).

use iolab_live::{Frame, Observer};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::ExecutableCommand;
use ratatui::Terminal;
use std::io::{BufWriter, Write};

/// Seconds before the status line shows: a run shorter than this
/// prints nothing more than it used to.
const QUIET_FOR_S: f64 = 3.0;

/// The one-line status: rates and p99 per phase, rewritten in place.
pub fn status_line() -> Observer {
    Box::new(|f: &Frame<'_>| {
        if f.t < QUIET_FOR_S || f.last {
            return;
        }
        let mut line = iolab_live::status::line(f.t, f.rows);
        let width = terminal_width();
        if line.chars().count() > width {
            line = line.chars().take(width.saturating_sub(1)).collect();
        }
        let mut screen = crate::output::screen();
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r{line}\x1b[K");
        let _ = e.flush();
        *screen = crate::output::Screen::Status;
    })
}

/// Clears the status line once the run ended.
pub fn clear_status() {
    let mut screen = crate::output::screen();
    if matches!(*screen, crate::output::Screen::Status) {
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[K");
        let _ = e.flush();
        *screen = crate::output::Screen::Plain;
    }
}

fn terminal_width() -> usize {
    ratatui::crossterm::terminal::size().map_or(100, |(w, _)| usize::from(w))
}

/// The full-screen view: entered at the first interval, left at the
/// final flush (the closing lines then print on the normal screen).
pub fn full_screen(tool: &str) -> Observer {
    let tool = tool.to_string();
    // Buffered: ratatui writes a screen as many small pieces, and a
    // write each to a terminal (tmux, ssh) stalled the sampler for
    // seconds; the frame goes out at once when ratatui flushes it.
    let mut term: Option<Terminal<CrosstermBackend<BufWriter<std::io::Stderr>>>> = None;
    Box::new(move |f: &Frame<'_>| {
        if f.last {
            if term.take().is_some() {
                let _ = std::io::stderr().execute(LeaveAlternateScreen);
            }
            // The tool's lines, held while the view was up, print now on
            // the normal screen, as if the view had never been.
            crate::output::screen().release();
            return;
        }
        if term.is_none() {
            let mut screen = crate::output::screen();
            let _ = std::io::stderr().execute(EnterAlternateScreen);
            let out = BufWriter::with_capacity(64 << 10, std::io::stderr());
            term = Terminal::new(CrosstermBackend::new(out)).ok();
            *screen = crate::output::Screen::Full(String::new());
        }
        if let Some(t) = term.as_mut() {
            let _ = t.draw(|fr| iolab_live::view::draw(fr, &tool, f));
        }
    })
}
