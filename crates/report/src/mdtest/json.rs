//! The JSON document of a run: the results envelope (schema
//! `iolab.mdtest/2`) around mdtest's payload.

use iolab_mdtest::results::MdtestDocument;
use std::io::{self, Write};

/// Pretty-printed JSON of the whole run, newline-terminated.
pub fn render(doc: &MdtestDocument) -> Vec<u8> {
    doc.to_json().into_bytes()
}

/// [`render`] into `w` as it is serialised (the same bytes, never whole
/// in memory).
pub fn write(doc: &MdtestDocument, w: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, doc)?;
    w.write_all(b"\n")
}
