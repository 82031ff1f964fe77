//! The font charts write their text with (plotters draws text through
//! ab_glyph with a font file found at run time: no fontconfig/freetype).

use std::path::PathBuf;

/// Fonts looked for when none is given.
const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
];

/// Loads and registers `given` (or the first usable of [`FONTS`]); false
/// when none is usable, and charts are then drawn without text.
pub fn load(given: Option<&PathBuf>) -> bool {
    let candidates: Vec<PathBuf> = match given {
        Some(p) => vec![p.clone()],
        None => FONTS.iter().map(PathBuf::from).collect(),
    };
    candidates.iter().any(|p| {
        std::fs::read(p).is_ok_and(|bytes| {
            iolab_report::survey::plot::use_font(Box::leak(bytes.into_boxed_slice()))
        })
    })
}
