//! The analysis as warp prints it: per op type, its requests and rates,
//! object sizes, request latency and time to first byte, the fastest,
//! median and slowest time segment, and the same per endpoint; then
//! what the run deleted and left.

use iolab_core::stats::Percentiles;
use iolab_core::units::human_binary;
use iolab_s3bench::analysis::{HostReport, OpReport, Segments};
use iolab_s3bench::result::Ended;
use iolab_s3bench::Report;
use std::fmt::Write;

const RULE: &str = "----------------------------------------";

/// The text of a run.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    head(&mut s, r);
    for o in &r.ops {
        let _ = writeln!(s, "{RULE}");
        op(&mut s, o, r.workers);
    }
    let _ = writeln!(s, "{RULE}");
    tail(&mut s, r);
    s
}

fn head(s: &mut String, r: &Report) {
    let hosts = match r.hosts.len() {
        1 => r.hosts[0].clone(),
        n => format!("{n} hosts"),
    };
    let _ = writeln!(
        s,
        "iolab s3bench {}: {} workers on {} rank{}, {hosts}, bucket {}, keys under {}",
        r.bench.name(),
        r.workers,
        r.ranks,
        if r.ranks == 1 { "" } else { "s" },
        r.bucket,
        r.run_prefix
    );
    if r.prepare.objects > 0 {
        let _ = writeln!(
            s,
            "Prepared {} objects ({}) in {:.2} s.",
            r.prepare.objects,
            human_binary(r.prepare.bytes as f64),
            r.prepare.elapsed_s
        );
    }
    let why = match r.ended {
        Ended::Duration => "--duration reached".to_string(),
        Ended::AutoTerm { steady_s } => {
            format!("stopped early by --autoterm: steady for {steady_s:.1} s")
        }
        Ended::OutOfObjects => "no object left to delete".to_string(),
        Ended::Interrupted => "interrupted".to_string(),
        Ended::Failed => "stopped by a failure".to_string(),
        Ended::NotRun => "not run: the preparation failed".to_string(),
    };
    let _ = writeln!(s, "Timed phase: {:.2} s ({why}).", r.timed_s);
}

fn op(s: &mut String, o: &OpReport, workers: usize) {
    // Only mixed shares its requests among op types.
    let share = match o.share_pct {
        p if p > 0.0 && p < 99.95 => format!(" ({p:.1}% of requests)"),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "Operation: {}{share}. Concurrency: {workers}.",
        o.name.to_uppercase()
    );
    let _ = writeln!(
        s,
        " * Requests: {} ({} errors), {:.2} requests/s; {}{:.2} obj/s",
        o.requests,
        o.errors,
        o.requests_per_s,
        bandwidth(o.bytes > 0, o.bytes_per_s),
        o.objects_per_s
    );
    if let Some(z) = &o.sizes {
        let _ = match z.min == z.max {
            true => writeln!(s, " * Size: {}", human_binary(z.min as f64)),
            false => writeln!(
                s,
                " * Sizes: {} to {}, average {}",
                human_binary(z.min as f64),
                human_binary(z.max as f64),
                human_binary(z.mean)
            ),
        };
    }
    let _ = writeln!(s, " * Latency: {}", latency(&o.latency));
    let _ = writeln!(s, " * TTFB: {}", latency(&o.ttfb));
    if let Some(g) = &o.segments {
        segments(s, g, " * ", "   - ");
    }
    if o.hosts.len() > 1 {
        let _ = writeln!(s, " * By host:");
        for h in &o.hosts {
            host(s, h);
        }
    }
    if let Some(e) = &o.first_error {
        let _ = writeln!(s, " * First error: {e}");
    }
}

fn host(s: &mut String, h: &HostReport) {
    let _ = writeln!(
        s,
        "   - {}: {} requests ({} errors), {:.2} requests/s{}",
        h.host,
        h.requests,
        h.errors,
        h.requests_per_s,
        match h.bytes {
            0 => String::new(),
            _ => format!(", {}/s", human_binary(h.bytes_per_s)),
        }
    );
    let _ = writeln!(s, "       Latency: {}", latency(&h.latency));
    let _ = writeln!(s, "       TTFB: {}", latency(&h.ttfb));
    if let Some(g) = &h.segments {
        segments(s, g, "       ", "         ");
    }
}

fn segments(s: &mut String, g: &Segments, lead: &str, item: &str) {
    let _ = writeln!(
        s,
        "{lead}Throughput, split into {} x {}:",
        g.count,
        secs(g.segment_s)
    );
    for (name, p) in [
        ("Fastest", g.fastest),
        ("50% Median", g.median),
        ("Slowest", g.slowest),
    ] {
        let _ = writeln!(
            s,
            "{item}{name}: {}{:.2} obj/s, {:.2} requests/s (starting {} in)",
            bandwidth(g.by_bytes, p.bytes_per_s),
            p.objects_per_s,
            p.requests_per_s,
            secs(p.start_s)
        );
    }
}

/// `avg 2.10ms, p50 1.90ms, p90 3.00ms, p99 5.10ms, fastest 0.80ms, slowest 12.0ms`.
fn latency(p: &Percentiles) -> String {
    if p.count == 0 {
        return "none".to_string();
    }
    format!(
        "avg {}, p50 {}, p90 {}, p99 {}, fastest {}, slowest {}",
        dur(p.mean_ns),
        dur(p.p50_ns as f64),
        dur(p.p90_ns as f64),
        dur(p.p99_ns as f64),
        dur(p.min_ns as f64),
        dur(p.max_ns as f64)
    )
}

/// `12.0 MiB/s, ` for an op that moves bytes, nothing for one that
/// does not.
fn bandwidth(moves: bool, bytes_per_s: f64) -> String {
    match moves {
        true => format!("{}/s, ", human_binary(bytes_per_s)),
        false => String::new(),
    }
}

/// A time in the unit that reads best.
fn dur(ns: f64) -> String {
    if ns < 1e6 {
        format!("{:.0}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

fn secs(s: f64) -> String {
    match s.fract() == 0.0 {
        true => format!("{s:.0}s"),
        false => format!("{s:.2}s"),
    }
}

fn tail(s: &mut String, r: &Report) {
    if r.cleanup.objects > 0 || r.cleanup.errors > 0 {
        let _ = writeln!(
            s,
            "Cleanup: {} objects ({}) deleted in {:.2} s{}.",
            r.cleanup.objects,
            human_binary(r.cleanup.bytes as f64),
            r.cleanup.elapsed_s,
            match r.cleanup.errors {
                0 => String::new(),
                n => format!(", {n} could not be"),
            }
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "Note: {n}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_in_their_unit() {
        assert_eq!(dur(523_000.0), "523us");
        assert_eq!(dur(2_104_000.0), "2.10ms");
        assert_eq!(dur(1.5e9), "1.50s");
        assert_eq!(secs(1.0), "1s");
        assert_eq!(latency(&Percentiles::default()), "none");
    }
}
