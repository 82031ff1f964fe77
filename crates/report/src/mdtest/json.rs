//! The JSON document of a run (schema `iolab.mdtest/1`).

use iolab_mdtest::results::RunReport;

/// Pretty-printed JSON of the whole run, newline-terminated.
pub fn render(r: &RunReport) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(r).unwrap_or_default();
    v.push(b'\n');
    v
}
