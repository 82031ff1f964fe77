//! Formatters: pure functions from an engine's result structs to bytes.
//! One module per engine, one file per format inside it; nothing here
//! measures or touches storage.

pub mod canvas;
pub mod csvw;
pub mod io500;
pub mod ior;
pub mod live;
pub mod lst;
pub mod mdtest;
pub mod qualify;
pub mod s3bench;
pub mod series;
pub mod store;
pub mod survey;
pub mod ticks;
pub mod xdd;

/// Whether `page` is an HTML page `generator` wrote (its `<meta
/// name="generator">` mark, as `series::html::GENERATOR` or
/// `qualify::html::GENERATOR` put it): the one test before a page, or the
/// files it names, may be replaced.
pub fn written_by(page: &str, generator: &str) -> bool {
    page.contains(&format!(
        "<meta name=\"generator\" content=\"{generator}\">"
    ))
}
