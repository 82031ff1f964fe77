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

/// The most read from a font file (kept for the process's life): the
/// largest TrueType collections (CJK) are some tens of MiB.
const MAX_FONT_BYTES: u64 = 64 << 20;

/// Loads and registers `given` (or the first usable of [`FONTS`]); false
/// when none of [`FONTS`] is usable, and charts are then drawn without
/// text. A font the user named that cannot be used is an error (`--font
/// FILE: ...`), said before anything is made, not a chart without text.
pub fn load(given: Option<&PathBuf>) -> Result<bool, String> {
    let usable = |p: &PathBuf| {
        iolab_core::input::read_bytes(p, MAX_FONT_BYTES)
            .map(|bytes| iolab_report::survey::plot::use_font(Box::leak(bytes.into_boxed_slice())))
    };
    match given {
        Some(p) => match usable(p) {
            Ok(true) => Ok(true),
            Ok(false) => Err(format!("--font {}: not a TrueType font", p.display())),
            Err(e) => Err(format!("--font {}: {e}", p.display())),
        },
        None => Ok(FONTS
            .iter()
            .map(PathBuf::from)
            .any(|p| usable(&p).unwrap_or(false))),
    }
}

/// What is said when no font is found (charts then have no labels).
pub fn none_found(prog: &str) -> String {
    format!("{prog}: no usable font (give --font FILE.ttf); charts are drawn without labels")
}
