//! JSON: the results envelope with schema `iolab.s3bench/1`; the checked
//! configuration as its configuration, the report as its payload, the
//! per-op figures as its headline figures.

use iolab_results::{Envelope, Environment};
use iolab_s3bench::{Config, Report};

/// The payload schema.
pub const SCHEMA: &str = "iolab.s3bench/1";

/// The document of a run started at `started_unix_ns` and finished now.
pub fn envelope<'a>(
    cfg: &'a Config,
    report: &'a Report,
    command_line: &str,
    started_unix_ns: u64,
) -> Envelope<&'a Config, &'a Report> {
    let env = Environment {
        host: iolab_core::env::host_info(),
        filesystems: vec![],
    };
    let mut doc = Envelope::new(
        SCHEMA,
        "s3bench",
        command_line,
        cfg,
        env,
        report.outcome.clone(),
        report,
    );
    doc.tool.compatible_with = Some("MinIO warp".into());
    doc.started_unix_ns = started_unix_ns;
    doc.finished_unix_ns = iolab_core::clock::wall_ns();
    doc.notes = report.notes.clone();
    doc.figures = iolab_s3bench::figures::of(report);
    doc
}

/// The document as text.
pub fn render(cfg: &Config, report: &Report, command_line: &str, started_unix_ns: u64) -> String {
    envelope(cfg, report, command_line, started_unix_ns).to_json()
}
