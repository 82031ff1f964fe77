//! `iolab report`: charts of series (SVG, PNG) and the self-contained
//! HTML page around them.

pub mod chart;
pub mod html;
