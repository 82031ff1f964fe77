//! iolab's JSON document of a run (`--json`): the results envelope
//! (schema `iolab.ior/1`) around the tests' figures.

use std::io::{self, Write};

/// The document's type: the envelope around the validated tests and
/// the run's payload.
pub type IorDocument = iolab_results::Envelope<iolab_ior::Config, iolab_ior::IorPayload>;

/// Pretty-printed JSON into `w`, newline-terminated.
pub fn write(doc: &IorDocument, w: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, doc)?;
    w.write_all(b"\n")
}
