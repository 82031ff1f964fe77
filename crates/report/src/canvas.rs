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
