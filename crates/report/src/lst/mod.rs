//! `iolab lst`'s formats: lst stat's text layout, CSV rows per sweep
//! point and group, and the JSON envelope. Pure functions from the
//! console's [`iolab_lst::Report`] to text.

pub mod csv;
pub mod json;
pub mod session;
pub mod stat;
pub mod text;
