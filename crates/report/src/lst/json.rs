//! JSON: the results envelope with schema `iolab.lst/1`; the validated
//! plan as its configuration and the points as its payload.

use iolab_lst::{Plan, Report};
use iolab_results::{Envelope, Environment};

/// The payload schema.
pub const SCHEMA: &str = "iolab.lst/1";

/// The document, started at `started_unix_ns`. While the run goes on
/// (`finished` false) the end time stays 0, as the envelope defines.
pub fn render(
    plan: &Plan,
    report: &Report,
    command_line: &str,
    (started_unix_ns, finished): (u64, bool),
    stats: Option<&serde_json::Value>,
) -> String {
    let env = Environment {
        host: iolab_core::env::host_info(),
        filesystems: vec![],
    };
    let mut doc = Envelope::new(
        SCHEMA,
        "lst",
        command_line,
        plan,
        env,
        report.outcome.clone(),
        &report.points,
    );
    doc.tool.compatible_with = Some("LNet selftest (lst)".into());
    doc.started_unix_ns = started_unix_ns;
    doc.stats = stats.cloned();
    doc.finished_unix_ns = if finished {
        iolab_core::clock::wall_ns()
    } else {
        0
    };
    doc.to_json()
}
