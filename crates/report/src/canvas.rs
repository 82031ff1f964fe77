//! The two image formats every chart is written in: SVG text and PNG
//! bytes, from one drawing function that works on any plotters backend.
//! PNG bytes come from the pure-Rust png crate (plotters' own encoder
//! would pull in the image crate).

use plotters::coord::Shift;
use plotters::prelude::*;

/// Why a chart could not be drawn or encoded.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// plotters refused a drawing step; its error type depends on the
    /// backend (SVG or bitmap), so it is kept as its message.
    #[error("{0}")]
    Draw(String),
    /// The PNG encoder failed.
    #[error(transparent)]
    Png(#[from] png::EncodingError),
    /// A figure or axis value no chart can draw (not finite, or so large
    /// that the axis' room above it is not): plotters would look for tick
    /// marks on it without end.
    #[error("{what} {value:e} is not a number a chart can draw (at most {MAX_DRAWN:e})")]
    Range {
        /// Which value (`y`, `x`).
        what: &'static str,
        /// The value.
        value: f64,
    },
}

/// The largest value drawn (a chart's top is 1.1 times its highest).
pub const MAX_DRAWN: f64 = 1e300;

/// `v` when a chart can draw it: finite and at most [`MAX_DRAWN`] in size.
pub fn drawable(what: &'static str, v: f64) -> Result<f64, ChartError> {
    match v.is_finite() && v.abs() <= MAX_DRAWN {
        true => Ok(v),
        false => Err(ChartError::Range { what, value: v }),
    }
}

/// Draws with `draw` on an SVG canvas of `size` pixels; the SVG text.
pub fn svg(
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<SVGBackend, Shift>) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let mut out = String::new();
    draw(SVGBackend::with_string(&mut out, size).into_drawing_area())?;
    Ok(out)
}

/// Draws with `draw` on an RGB bitmap of `size` pixels; the PNG bytes.
pub fn png(
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<BitMapBackend, Shift>) -> Result<(), ChartError>,
) -> Result<Vec<u8>, ChartError> {
    let (w, h) = size;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    draw(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area())?;
    let mut bytes = Vec::new();
    let mut enc = png::Encoder::new(&mut bytes, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header()?;
    writer.write_image_data(&rgb)?;
    writer.finish()?;
    Ok(bytes)
}
