//! The JSON document of a run: the results envelope (schema
//! `iolab.mdtest/2`) around mdtest's payload.

use iolab_mdtest::results::MdtestDocument;

/// Pretty-printed JSON of the whole run, newline-terminated.
pub fn render(doc: &MdtestDocument) -> Vec<u8> {
    doc.to_json().into_bytes()
}
